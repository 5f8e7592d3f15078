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
/// Plain box aggregation's Galerkin product A_c = Tᵀ A T without a sparse matrix product: entry
/// (I, J) of A_c is the sum of a_ij over the cells i of box I and j of box J, and as every
/// coupling of a stencil at most one cell wide joins a box to itself or to one of its 26
/// neighbours, A_c's row I has at most 27 entries, at the offsets of the boxes (its stencil:
/// 7 for a 7-point A) — formed row by row, a thread per coarse row on the device, in one pass
/// over A. Where a coupling reaches further (not a grid stencil), the general product instead.
///
/// An offset between boxes is coded (dz + 1)·9 + (dy + 1)·3 + (dx + 1) ∈ [0, 27), 13 the box
/// itself; a pattern is a 27-bit mask of the codes present, box_wide set when some coupling is
/// wider. Codes in increasing order are columns in increasing order (natural order).
constexpr std::uint32_t box_wide = 1u << 27;
constexpr int box_self = 13;
struct BoxMap {
    index_t nx, ny, nz;  // the fine grid
    index_t sx, sy, sz;  // the steps
    index_t cx, cy, cz;  // the coarse grid
    HEPTANE_AMG_HD static index_t coarse(index_t x, index_t s, index_t c)
    {
        return x / s < c ? x / s : c - 1;
    }
    /// The code of the coupling of fine cells i and j, −1 when their boxes are not neighbours.
    HEPTANE_AMG_HD int code(index_t i, index_t j) const
    {
        const index_t dx = coarse(j % nx, sx, cx) - coarse(i % nx, sx, cx);
        const index_t dy = coarse((j / nx) % ny, sy, cy) - coarse((i / nx) % ny, sy, cy);
        const index_t dz = coarse(j / (nx * ny), sz, cz) - coarse(i / (nx * ny), sz, cz);
        if (dx < -1 || dx > 1 || dy < -1 || dy > 1 || dz < -1 || dz > 1) return -1;
        return int((dz + 1) * 9 + (dy + 1) * 3 + (dx + 1));
    }
    /// The code of coarse column J in coarse row I (neighbours by construction of the pattern).
    HEPTANE_AMG_HD int coarse_code(index_t row, index_t col) const
    {
        const index_t dx = col % cx - row % cx;
        const index_t dy = (col / cx) % cy - (row / cx) % cy;
        const index_t dz = col / (cx * cy) - row / (cx * cy);
        return int((dz + 1) * 9 + (dy + 1) * 3 + (dx + 1));
    }
    /// Coarse row I's column for a code of the mask, −1 when that neighbour is off the grid.
    HEPTANE_AMG_HD index_t column(index_t row, int code) const
    {
        const index_t x = row % cx + code % 3 - 1, y = (row / cx) % cy + (code / 3) % 3 - 1,
                      z = row / (cx * cy) + code / 9 - 1;
        if (x < 0 || x >= cx || y < 0 || y >= cy || z < 0 || z >= cz) return -1;
        return x + cx * (y + cy * z);
    }
    /// The first and one-past-last fine cell of box b along an axis (the last box keeps an
    /// odd last cell).
    HEPTANE_AMG_HD static index_t first(index_t b, index_t s) { return b * s; }
    HEPTANE_AMG_HD static index_t last(index_t b, index_t s, index_t c, index_t n)
    {
        return b == c - 1 ? n : (b + 1) * s;
    }
    /// Coarse row I's values: every entry of the box's fine rows summed into its code's slot of
    /// acc (27 values, zeroed here); the same order on the CPU and the device (the same sums,
    /// bit for bit). Returns false when a coupling is not between neighbouring boxes.
    HEPTANE_AMG_HD bool sum_row(index_t row, const offset_t* rp, const index_t* ci, const double* v,
                                double* acc) const
    {
        for (int q = 0; q < 27; ++q) acc[q] = 0;
        const index_t bx = row % cx, by = (row / cx) % cy, bz = row / (cx * cy);
        bool ok = true;
        for (index_t z = first(bz, sz); z < last(bz, sz, cz, nz); ++z)
            for (index_t y = first(by, sy); y < last(by, sy, cy, ny); ++y)
                for (index_t x = first(bx, sx); x < last(bx, sx, cx, nx); ++x) {
                    const index_t i = x + nx * (y + ny * z);
                    for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
                        const int q = code(i, ci[k]);
                        if (q < 0)
                            ok = false;
                        else
                            acc[q] += v[k];
                    }
                }
        return ok;
    }
};
inline BoxMap box_map(const Grid& g, const Grid& step)
{
    const Grid c = box_coarse_grid(g, step);
    return BoxMap{g[0], g[1], g[2], step[0], step[1], step[2], c[0], c[1], c[2]};
}
/// The codes of A's couplings on grid g with boxes of `step` (box_self always; box_wide when
/// some coupling is not between neighbouring boxes). OpenMP.
std::uint32_t box_stencil(const Csr<double>& a, const BoxMap& m);
/// A_c = Tᵀ A T for a mask of box_stencil without box_wide: rows sorted, every code of the mask
/// whose neighbour is on the coarse grid stored (an explicit zero where no coupling gave it).
Csr<double> box_galerkin(const Csr<double>& a, const BoxMap& m, std::uint32_t mask);
/// The numeric part alone, into c's pattern (box_galerkin's for a's pattern). Throws InputError
/// when a coupling falls outside it.
void box_galerkin_numeric(const Csr<double>& a, const BoxMap& m, Csr<double>& c);

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
