// Host helpers of the preconditioner setups (internal): the Nc × Nc block pattern of a
// scalar CSR matrix and the inversion of dense blocks with partial pivoting.
#pragma once

#include <string>
#include <vector>

#include "formats/csr/csr.hpp"

namespace heptane::detail {

/// Block CSR on the host in double: block row I holds the blocks (I, col[k]) for
/// k in [ptr[I], ptr[I+1]), sorted by column, each nc² values row-major. Every block row
/// has its diagonal block (zeros where A has none), at diag[I].
struct BlockCsrHost {
    index_t nb = 0;  ///< block rows
    index_t nc = 1;
    std::vector<offset_t> ptr;
    std::vector<index_t> col;
    std::vector<double> val;
    std::vector<offset_t> diag;
};

/// The block pattern of host CSR `a` (square, rows divisible by nc: InputError otherwise,
/// naming the sizes). `who` prefixes the messages.
BlockCsrHost block_csr_from_csr(const Csr<double>& a, index_t nc, const char* who);

/// Outcome of a block inversion: ok, or the 0-based pivot step that failed and its value.
struct PivotFailure {
    bool singular = false;
    index_t step = 0;
    double pivot = 0;
    double threshold = 0;
};

/// inv = a⁻¹ for the nc × nc row-major block `a`, Gauss-Jordan with partial pivoting.
/// A pivot with |pivot| ≤ nc·ε·max|a_ij| (or an all-zero block) counts as singular.
PivotFailure invert_block(const double* a, double* inv, index_t nc);

/// "block 17 (rows 51..53): pivot 2 of 3 is 0 (|pivot| <= 6.7e-16 = nc·eps·max|a_ij|)"
std::string describe_pivot_failure(index_t block_row, index_t nc, const PivotFailure& f);

/// The block rows of a triangular factor grouped into levels: rows of level l depend only on
/// rows of earlier levels (lower: on their stored columns j < i; upper: j > i).
struct LevelSchedule {
    std::vector<index_t> ptr;   ///< levels + 1
    std::vector<index_t> rows;  ///< block rows, level by level, ascending within a level
    index_t levels() const { return ptr.empty() ? 0 : index_t(ptr.size() - 1); }
};
LevelSchedule level_schedule(const BlockCsrHost& factor, bool lower);

/// ILU(0) over Nc × Nc blocks (BILU(0); ILU(0) for Nc = 1): L U ≈ A with the block pattern
/// of A, L unit block-lower, U block-upper. Returned as the strictly lower blocks of L, the
/// strictly upper blocks of U, and D_i⁻¹ = U_ii⁻¹. Throws InputError naming the block row
/// and the pivot when a pivot block is singular.
struct Ilu0Factors {
    BlockCsrHost lower;
    BlockCsrHost upper;
    std::vector<double> diag_inv;
};
Ilu0Factors ilu0_factorize(const BlockCsrHost& a);

/// Multi-colouring of the block graph of A (the pattern of A + Aᵀ): two colours when the
/// graph is bipartite (breadth-first, the lowest row of each component red), otherwise
/// greedy: block rows in natural order, each takes the smallest colour none of its
/// neighbours has. On a 7-point grid (grid variant) this is the red-black 2-colouring; the
/// banded variant with an even J or H is not bipartite (its wrap-around couplings close odd
/// cycles) and gets 3–4 colours.
/// perm lists the block rows colour by colour (perm[new] = old, natural order inside a
/// colour); colour k holds the new rows [color_ptr[k], color_ptr[k+1]).
struct MulticolorOrdering {
    index_t colors = 0;
    std::vector<index_t> color;      ///< colour of each block row (original numbering)
    std::vector<index_t> perm;       ///< perm[new] = old
    std::vector<index_t> color_ptr;  ///< colors + 1
};
MulticolorOrdering multicolor_ordering(const BlockCsrHost& a);

/// A' = P A Pᵀ: block row i of A' is block row perm[i] of A, columns renumbered through the
/// inverse of perm and sorted; diag set.
BlockCsrHost permute_symmetric(const BlockCsrHost& a, const std::vector<index_t>& perm);

}  // namespace heptane::detail
