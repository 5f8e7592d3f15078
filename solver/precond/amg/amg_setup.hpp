// The host part of the smoothed-aggregation setup (internal; namespace heptane::amg): the
// CPU reference of every step, used by AmgPreconditioner on every executor.
//
//   strength    which couplings are strong (|a_ij| > θ sqrt(|a_ii a_jj|), block norms for
//               Nc > 1) and the node graph of the strong ones
//   aggregate   Vaněk, Mandel & Brezina's (1996) aggregates, found in parallel as Bell, Dalton
//               & Olson (2012) do (CUSP; AMGX and Kokkos-Kernels likewise): the roots are a
//               maximal distance-2 independent set of the strong graph (Luby-style rounds with
//               hashed priorities, synchronous, so the CPU and the CUDA setup give the same
//               set); (1) each root with its strong neighbours is an aggregate (their
//               neighbourhoods are disjoint), (2) every other node, at distance 2 from a root,
//               joins the aggregate of its most strongly coupled aggregated neighbour; a node
//               without strong neighbours belongs to no aggregate (the smoother alone treats
//               it)
//   prolongator T (one 1 per row: node i's aggregate, the same unknown of the cell — the
//               near null space is the constant per unknown), smoothed with the filtered
//               matrix: P = (I − ω D_F⁻¹ A_F) T
//   galerkin    A_c = R A P, R = Pᵀ, row by row without forming A P (OpenMP)
//   dense_inverse  the coarsest level's inverse (Gauss-Jordan, partial pivoting)
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "formats/csr/csr.hpp"
#include "solver/precond/amg/amg_options.hpp"

namespace heptane::amg {

/// The strong couplings of A: keep[k] for every stored entry (same node, or a strong pair
/// of nodes; the diagonal always), and the node graph (cells of Nc unknowns) of the strong
/// pairs, without the diagonal, with the strength |a_IJ| / sqrt(|a_II a_JJ|) as weight.
struct Strength {
    index_t nodes = 0;
    std::vector<offset_t> ptr;
    std::vector<index_t> adj;
    std::vector<float> weight;
    std::vector<char> keep;
};
Strength strength(const Csr<double>& a, index_t nc, double theta);

// ---- the parallel aggregation's rules, shared by the CPU (amg_setup.cpp) and CUDA
// (amg_device.cu) setups so that both find the same aggregates ----------------------------
#ifdef __CUDACC__
#define HEPTANE_AMG_HD __host__ __device__
#else
#define HEPTANE_AMG_HD
#endif
constexpr std::uint8_t mis_out = 0, mis_undecided = 1, mis_root = 2;

/// A node's priority in the distance-2 independent set: a hash of its index (a fixed order
/// that looks random, so a round decides a fair share of the nodes).
HEPTANE_AMG_HD inline std::uint32_t mis_hash(std::uint32_t i)
{
    i ^= i >> 16;
    i *= 0x7feb352dU;
    i ^= i >> 15;
    i *= 0x846ca68bU;
    i ^= i >> 16;
    return i;
}
/// (state, hash, index) packed so that the larger key wins: roots above undecided above out.
HEPTANE_AMG_HD inline std::uint64_t mis_key(std::uint8_t state, index_t i)
{
    return (std::uint64_t(state) << 62) | (std::uint64_t(mis_hash(std::uint32_t(i)) >> 2) << 32) |
           std::uint64_t(std::uint32_t(i));
}
/// An undecided node's next state from the largest key within distance 2 (`m2`): a root
/// when that is its own, out when it is a root's, undecided otherwise.
HEPTANE_AMG_HD inline std::uint8_t mis_next_state(std::uint64_t m2, std::uint64_t own)
{
    if (m2 == own) return mis_root;
    return (m2 >> 62) == mis_root ? mis_out : mis_undecided;
}
/// The aggregate of node i's most strongly coupled neighbour that has one (the first in
/// the row on ties), −1 when none has.
HEPTANE_AMG_HD inline index_t strongest_aggregated(const offset_t* ptr, const index_t* adj,
                                                   const float* weight, index_t i,
                                                   const index_t* id)
{
    float best = -1;
    index_t out = -1;
    for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) {
        const index_t g = id[adj[k]];
        if (g >= 0 && weight[k] > best) {
            best = weight[k];
            out = g;
        }
    }
    return out;
}

/// The largest coarsest level a dense inverse takes when coarsening stalls above coarse_size.
constexpr index_t dense_limit = 4000;
/// Above coarse_size a dense inverse must also be cheap next to the rest of the setup: n³ at
/// most dense_work_per_nnz · nnz(A_0), or n ≤ dense_free (2·512³ flops, well under 0.1 s).
constexpr double dense_work_per_nnz = 100;
constexpr index_t dense_free = 512;

/// Whether the coarsest level (n rows) is inverted densely. At or below coarse_size always
/// (the hierarchy's goal); above it (coarsening stalled, or max_levels reached) only while the
/// inverse (2n³ flops, n² entries read by every cycle) stays small next to the fine level:
/// n ≤ dense_limit and n³ ≤ max(dense_free³, dense_work_per_nnz · nnz(A_0)). Else the
/// coarsest level is smoothed. (A stalled 2304-row coupled block took 6.8 s a setup before.)
inline bool dense_coarse(index_t n, offset_t fine_nnz, index_t coarse_size)
{
    if (n <= coarse_size) return true;
    if (n > dense_limit) return false;
    const double cube = double(n) * double(n) * double(n);
    const double free = double(dense_free) * double(dense_free) * double(dense_free);
    return cube <= std::max(free, dense_work_per_nnz * double(fine_nnz));
}

struct Aggregates {
    index_t count = 0;
    std::vector<index_t> of_node;  ///< aggregate of each node, −1: none
};
Aggregates aggregate(const Strength& s);

// ---- box aggregation (AmgAggregation::box), rules shared by the CPU and CUDA setups ------
using Grid = std::array<index_t, 3>;

/// The coarse grid when direction d is grouped by step[d] (1 or 2): n_d / step_d boxes, an odd
/// last cell joining the box before it (at least one box).
inline Grid box_coarse_grid(const Grid& g, const Grid& step)
{
    Grid c{};
    for (int d = 0; d < 3; ++d)
        c[std::size_t(d)] = std::max<index_t>(1, g[std::size_t(d)] / step[std::size_t(d)]);
    return c;
}
/// Cell i's box (natural order on both grids, x fastest).
HEPTANE_AMG_HD inline index_t box_of(index_t i, index_t nx, index_t ny, index_t sx, index_t sy,
                                     index_t sz, index_t cx, index_t cy, index_t cz)
{
    const index_t x = i % nx, y = (i / nx) % ny, z = i / (nx * ny);
    const index_t bx = x / sx < cx ? x / sx : cx - 1;
    const index_t by = y / sy < cy ? y / sy : cy - 1;
    const index_t bz = z / sz < cz ? z / sz : cz - 1;
    return bx + cx * (by + cy * bz);
}
/// The axis (0, 1, 2) of the coupling of cells i and j on grid (nx, ny), −1 when they are not
/// neighbours along one axis.
HEPTANE_AMG_HD inline int grid_axis(index_t i, index_t j, index_t nx, index_t ny)
{
    const index_t xi = i % nx, yi = (i / nx) % ny, zi = i / (nx * ny);
    const index_t xj = j % nx, yj = (j / nx) % ny, zj = j / (nx * ny);
    const index_t dx = xj - xi, dy = yj - yi, dz = zj - zi;
    const index_t ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy, az = dz < 0 ? -dz : dz;
    if (ax + ay + az != 1) return -1;
    return ax ? 0 : ay ? 1 : 2;
}
/// The directions to halve from the mean strength of each axis' couplings (`mean`, 0 where
/// there are none): those of at least ratio × the strongest, among the axes with two or more
/// cells. All 1 (nothing to coarsen) when no axis qualifies.
inline Grid box_steps(const std::array<double, 3>& mean, const Grid& g, double ratio)
{
    double top = 0;
    for (int d = 0; d < 3; ++d)
        if (g[std::size_t(d)] > 1) top = std::max(top, mean[std::size_t(d)]);
    Grid step{1, 1, 1};
    for (int d = 0; d < 3; ++d)
        if (g[std::size_t(d)] > 1 && top > 0 && mean[std::size_t(d)] >= ratio * top)
            step[std::size_t(d)] = 2;
    return step;
}
/// Box aggregation coarsens on while a level has more than min(coarse_size, box_coarse_size)
/// rows: its coarse levels are 7-point and cost a few µs a cycle, where the coarsest level's
/// dense inverse costs n³ at every setup and values refresh (256 rows, a 128 x 128 x 64 grid's
/// 8 x 8 x 4 level: ~5 ms on the H200 machine's host, against ~0.1 ms for 32).
constexpr index_t box_coarse_size = 64;
inline index_t coarse_limit(const AmgOptions& o)
{
    return o.aggregation == AmgAggregation::box ? std::min(o.coarse_size, box_coarse_size)
                                                : o.coarse_size;
}
/// The mean strength |a_ij| / sqrt(|a_ii a_jj|) of A's couplings along each axis of grid g
/// (entries between cells that are not axis neighbours are not counted). OpenMP.
std::array<double, 3> axis_strength(const Csr<double>& a, const Grid& g);
/// Every cell of grid g in its box (box_of); count = the coarse grid's cells.
Aggregates box_aggregate(const Grid& g, const Grid& step);
/// The grid behind a's pattern (formats/detect: a 7-, 5- or 3-point stencil, Nc = 1, no
/// coupling across the box's faces), {0, 0, 0} when there is none.
Grid find_grid(const Csr<double>& a);

/// P (rows of A × count·nc) from the aggregates; weight = 0: the tentative T.
Csr<double> prolongator(const Csr<double>& a, index_t nc, const Strength& s, const Aggregates& agg,
                        double weight);

/// Pᵀ A P with R = Pᵀ given.
Csr<double> galerkin(const Csr<double>& r, const Csr<double>& a, const Csr<double>& p);
/// The numeric part alone: new values of R A P written into `c`, which holds the pattern an
/// earlier galerkin(r, a', p) returned for an `a'` with a's pattern (one pass, no
/// allocation). Throws InputError when a product falls outside c's pattern.
void galerkin_numeric(const Csr<double>& r, const Csr<double>& a, const Csr<double>& p,
                      Csr<double>& c);

/// A⁻¹ row-major (n² values) of a small host CSR matrix. Throws InputError naming the level
/// when it is singular — unless `singular` (AmgOptions::singular: the caller declared a null
/// space), where it returns generalized_inverse's G instead and `rank` (if given) its rank.
std::vector<double> dense_inverse(const Csr<double>& a, int level, bool singular = false,
                                  index_t* rank = nullptr);

/// A generalized inverse G (A G A = A) of a dense n × n row-major matrix that may be
/// singular: LU with complete pivoting, a diagonal pivot preferred unless an entry off the
/// diagonal is 10x larger, stops at the first pivot |u_kk| ≤ tol·max|a_ij| (the rest of
/// the matrix numerically zero: rank k); G holds the inverse of the k × k pivot block at its
/// columns' rows and its rows' columns, zero elsewhere — the unknowns not pivoted are pinned to
/// 0 and their equations, dependent on the others, dropped. For a consistent b, x = G b
/// solves A x = b. A symmetric positive semidefinite A (a pure-Neumann Galerkin operator)
/// pivots on its diagonal throughout, so G is symmetric positive semidefinite: a V-cycle with
/// it stays fit for CG. Full rank: G = A⁻¹. Returns the rank.
index_t generalized_inverse(const double* a, double* g, index_t n, double tol);

/// 1 / a_ii (jacobi, chebyshev) or 1 / (|a_ii| + Σ_{j≠i} |a_ij|) (l1) per row. Throws
/// InputError naming the level and the row (1-based) when a_ii = 0 (or the l1 sum is 0).
std::vector<double> inverse_diagonal(const Csr<double>& a, bool l1, int level);

}  // namespace heptane::amg
