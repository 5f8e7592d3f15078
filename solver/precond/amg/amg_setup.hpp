// The host part of the smoothed-aggregation setup (internal; namespace heptane::amg): the
// CPU reference of every step, used by AmgPreconditioner on every executor.
//
//   strength    which couplings are strong (|a_ij| > θ sqrt(|a_ii a_jj|), block norms for
//               Nc > 1) and the node graph of the strong ones
//   aggregate   the three phases of Vaněk, Mandel & Brezina (1996): (1) a node whose strong
//               neighbours are all free forms an aggregate with them, (2) a free node joins
//               the phase-1 aggregate it is most strongly coupled to, (3) the rest form
//               aggregates with their free strong neighbours; a node without strong
//               neighbours belongs to no aggregate (the smoother alone treats it)
//   prolongator T (one 1 per row: node i's aggregate, the same unknown of the cell — the
//               near null space is the constant per unknown), smoothed with the filtered
//               matrix: P = (I − ω D_F⁻¹ A_F) T
//   galerkin    A_c = R A P, R = Pᵀ, row by row without forming A P (OpenMP)
//   dense_inverse  the coarsest level's inverse (Gauss-Jordan, partial pivoting)
#pragma once

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

struct Aggregates {
    index_t count = 0;
    std::vector<index_t> of_node;  ///< aggregate of each node, −1: none
};
Aggregates aggregate(const Strength& s);

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
/// when it is singular.
std::vector<double> dense_inverse(const Csr<double>& a, int level);

/// 1 / a_ii (jacobi, chebyshev) or 1 / (|a_ii| + Σ_{j≠i} |a_ij|) (l1) per row. Throws
/// InputError naming the level and the row (1-based) when a_ii = 0 (or the l1 sum is 0).
std::vector<double> inverse_diagonal(const Csr<double>& a, bool l1, int level);

}  // namespace heptane::amg
