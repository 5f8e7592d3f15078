// Host helpers of the preconditioner setups (internal): the Nc × Nc block pattern of a
// scalar CSR matrix and the inversion of dense blocks with partial pivoting.
//
// Each setup is split into a symbolic part, which depends on the nonzero pattern only and is
// done once (block_pattern, ilu0_symbolic, multicolor_ordering, permute_pattern,
// level_schedule), and a numeric part, which a values-only update redoes (block_fill,
// block_fill_factors, ilu0_numeric): Preconditioner::update_values.
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
/// naming the sizes). `who` prefixes the messages. block_pattern + block_fill.
BlockCsrHost block_csr_from_csr(const Csr<double>& a, index_t nc, const char* who);

/// The symbolic part of block_csr_from_csr: the block structure (val empty) and where each
/// entry of the scalar CSR goes in its values, so that new values on the same pattern are
/// placed without searching.
struct BlockPattern {
    BlockCsrHost blocks;            ///< nb, nc, ptr, col, diag; val empty
    index_t rows = 0;               ///< of the scalar matrix
    std::vector<offset_t> row_ptr;  ///< of the scalar matrix, rows + 1
    /// Entry k of scalar row r (block row I = r / nc, column c, in block q of row I) adds to
    /// value ptr[I]·nc² + slot[k], slot[k] = (q − ptr[I])·nc² + (r mod nc)·nc + c mod nc.
    /// Empty when every block is dense: scalar row I·nc + a holds exactly the columns
    /// col[q]·nc + b of its blocks q (the diagonal one included), b = 0 … nc − 1, in that
    /// order (no duplicates; for Nc = 1: every diagonal entry stored). Then the entries of a
    /// row are its blocks' rows one after the other.
    std::vector<index_t> slot;
    /// Every block dense (no slot map); not slot.empty(), which a matrix with no stored
    /// entries also has (its rows are no dense blocks: each block row has its diagonal block).
    bool all_dense = false;
    bool dense() const noexcept { return all_dense; }
};
/// Throws as block_csr_from_csr.
BlockPattern block_pattern(const Csr<double>& a, index_t nc, const char* who);
/// val[0 … blocks·nc²) = the values of host CSR `a` in p's block layout (sums of the entries
/// of a block; zeros where A has none). Throws InputError, naming the first row that differs,
/// when `a` does not have the nonzero pattern (row pointers and column indices) p was made
/// from; val is then partly written.
void block_fill(const BlockPattern& p, const Csr<double>& a, double* val, const char* who);

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
/// and the pivot when a pivot block is singular. ilu0_symbolic + ilu0_numeric.
struct Ilu0Factors {
    BlockCsrHost lower;
    BlockCsrHost upper;
    std::vector<double> diag_inv;
};
Ilu0Factors ilu0_factorize(const BlockCsrHost& a);

/// The symbolic part of ILU(0) on a block structure `a` (ptr, col, diag, columns ascending;
/// the diagonal block present in every row). The factorisation works on three arrays in
/// the factors' layouts: L (the strictly lower blocks, lower.ptr numbering), U (the strictly
/// upper blocks, upper.ptr numbering) and D (the diagonal block of each row), nc² values
/// per block. For each lower block L_ik (number l), the updates A_ij −= L_ik U_kj it makes
/// (the blocks U_kj whose column row i also holds), in the order of the IKJ elimination:
/// source U block upd_src[e], target upd_dst[e] for e in [upd_ptr[l], upd_ptr[l + 1]); a
/// target t is L block t (t < nl), U block t − nl (t < nl + nu) or D of row t − nl − nu.
struct Ilu0Symbolic {
    BlockCsrHost lower;  ///< strictly lower blocks: nb, nc, ptr, col (val, diag empty)
    BlockCsrHost upper;  ///< strictly upper blocks
    std::vector<offset_t> upd_ptr, upd_src, upd_dst;
    offset_t nl() const noexcept { return lower.ptr.empty() ? 0 : lower.ptr.back(); }
    offset_t nu() const noexcept { return upper.ptr.empty() ? 0 : upper.ptr.back(); }
};
Ilu0Symbolic ilu0_symbolic(const BlockCsrHost& a);

/// The values of host CSR `a` (the pattern p was made from: checked as by block_fill) in
/// the factor layout of s: L, U, D as above. s = ilu0_symbolic(p.blocks); or, with
/// block_map, the factorisation of another block structure (P A Pᵀ) whose blocks are p's
/// blocks moved: block q of p.blocks goes to the factor block block_map[q], a target code
/// as upd_dst's (ilu0_block_map).
void block_fill_factors(const BlockPattern& p, const Ilu0Symbolic& s, const Csr<double>& a,
                        double* lower, double* upper, double* diag, const char* who,
                        const std::vector<offset_t>* block_map = nullptr);

/// block_map of block_fill_factors for P A Pᵀ: `permuted` = permute_pattern(a, perm, src),
/// s = ilu0_symbolic(permuted); the result has a's number of blocks.
std::vector<offset_t> ilu0_block_map(const BlockCsrHost& permuted, const Ilu0Symbolic& s,
                                     const std::vector<offset_t>& src);

/// The numeric part, in place: L, U, D hold A's blocks on entry; on exit L the multipliers
/// L_ik, U the blocks U_ij (j > i) and D the pivot blocks U_ii, and dinv (nb·nc²) their
/// inverses D_i⁻¹. Row groups: when `groups` is given (groups + 1 entries into the rows,
/// e.g. the colours of a multi-colour ordering), the rows of one group do not couple and are
/// factorised in parallel, group after group; otherwise one thread in natural order. The
/// same operations in the same order either way, so the same bits. Throws as
/// ilu0_factorize (the lowest failing row; the arrays partly written).
void ilu0_numeric(const Ilu0Symbolic& s, double* lower, double* upper, double* diag, double* dinv,
                  const std::vector<index_t>* groups = nullptr);

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

/// The structure of P A Pᵀ alone (val empty), and src[q'] = the block of `a` that block q'
/// of the result comes from (to move values: val'[q'] = val[src[q']]).
BlockCsrHost permute_pattern(const BlockCsrHost& a, const std::vector<index_t>& perm,
                             std::vector<offset_t>& src);

}  // namespace heptane::detail
