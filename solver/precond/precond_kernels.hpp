// Preconditioner kernels, declared once; precond_cpu.cpp (OpenMP) and precond.cu (CUDA)
// implement them side by side (the values-only refresh kernels at the end: precond_cpu.cpp
// and precond_refresh.cu). VT = double and float. Blocks are Nc × Nc, row-major.
#pragma once

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// z_i = d_i r_i                                   (Jacobi; d = 1 / diag(A))
/// Traffic: 3 passes.
template <class VT>
void diag_scale(const CpuExecutor& exec, index_t n, const VT* d, const VT* r, VT* z);
template <class VT>
void diag_scale(const CudaExecutor& exec, index_t n, const VT* d, const VT* r, VT* z);

/// z_c = B_c r_c for each block row c, B_c = binv[c·nc² …] (block-Jacobi; B_c = A_cc⁻¹).
/// Traffic: nc·n values of B + 2 passes. z must not alias r.
template <class VT>
void block_diag_apply(const CpuExecutor& exec, index_t nblocks, index_t nc, const VT* binv,
                      const VT* r, VT* z);
template <class VT>
void block_diag_apply(const CudaExecutor& exec, index_t nblocks, index_t nc, const VT* binv,
                      const VT* r, VT* z);

/// A block-triangular factor in block-CSR form with its level schedule: the block rows of
/// level l are level_rows[level_ptr[l] … level_ptr[l+1]) and depend only on rows of
/// earlier levels. Device arrays live in the executor's memory; level_ptr is on the host
/// (it sizes the launches).
template <class VT>
struct TriangularFactor {
    index_t block_rows = 0;
    index_t nc = 1;
    const offset_t* row_ptr = nullptr;  ///< block_rows + 1
    const index_t* col = nullptr;       ///< block column of each stored block
    const VT* val = nullptr;            ///< nc² values per stored block
    const VT* diag_inv = nullptr;       ///< upper factor: D_i⁻¹ per block row; lower: nullptr
    const index_t* level_rows = nullptr;
    const index_t* level_ptr = nullptr;  ///< host memory, levels + 1 entries
    index_t levels = 0;
};

/// Lower (diag_inv == nullptr, unit diagonal blocks, strictly lower blocks stored):
///     y_i = r_i − Σ_{j<i} L_ij y_j                      in = r, out = y
/// Upper (strictly upper blocks stored, D_i⁻¹ in diag_inv):
///     w_i = y_i − Σ_{j>i} U_ij z_j,  z_i = D_i⁻¹ w_i        in = y (may be overwritten
///                                                       with w), out = z
/// The lower solve may run in place (in == out); with in != out it does not write in.
/// The upper solve needs out != in.
/// On the GPU: one launch per level (one thread per block row, w written over in). On the
/// CPU: one thread in the natural row order (L ascending, U descending; precond_cpu.cpp says
/// why not the levels), w kept in registers. Same arithmetic per row either way.
template <class VT>
void triangular_solve(const CpuExecutor& exec, const TriangularFactor<VT>& f, VT* in, VT* out);
template <class VT>
void triangular_solve(const CudaExecutor& exec, const TriangularFactor<VT>& f, VT* in, VT* out);

/// One triangle of a multi-colour ILU(0)/BILU(0) (the factors of A' = P A Pᵀ) in a
/// per-colour block-ELL layout that makes one thread per scalar row read coalesced. For
/// colour c with rows_c = color_ptr[c+1] − color_ptr[c] block rows, s = local block row ·
/// nc + a the local scalar row, rows_cs = rows_c · nc, and slot k < width[c]:
///     block column  col[col_off[c] + k·rows_c + local block row]   (−1: padding)
///     value (a, b)  val[val_off[c] + (k·nc + b)·rows_cs + s]
/// diag_inv (upper only) holds D_i⁻¹ of the colour at diag_inv[color_ptr[c]·nc² +
/// b·rows_cs + s]. Host arrays (metadata, sizes launches) and device arrays (the rest) as
/// marked.
template <class VT>
struct ColorTriangle {
    const index_t* width = nullptr;     ///< host, colors entries
    const offset_t* col_off = nullptr;  ///< host
    const offset_t* val_off = nullptr;  ///< host
    const index_t* col = nullptr;       ///< device
    const VT* val = nullptr;            ///< device
};
template <class VT>
struct MulticolorFactor {
    index_t block_rows = 0;
    index_t nc = 1;
    index_t colors = 0;
    const index_t* color_ptr = nullptr;  ///< host, colors + 1
    const index_t* perm = nullptr;       ///< device, perm[new block row] = old block row
    ColorTriangle<VT> lower, upper;
    const VT* diag_inv = nullptr;  ///< device
};

/// The multi-colour sweep's order (both executors): the lower factor colour by colour, then
/// the upper one in reverse; step(lower, t, c, p0, rows) for colour c of triangle t, whose
/// block rows are [p0, p0 + rows) in the permuted order.
template <class VT, class Step>
void for_each_color(const MulticolorFactor<VT>& f, Step&& step)
{
    for (int pass = 0; pass < 2; ++pass) {
        const bool lower = pass == 0;
        const ColorTriangle<VT>& t = lower ? f.lower : f.upper;
        for (index_t k = 0; k < f.colors; ++k) {
            const index_t c = lower ? k : f.colors - 1 - k;
            const index_t p0 = f.color_ptr[c];
            step(lower, t, c, p0, index_t(f.color_ptr[c + 1] - p0));
        }
    }
}

/// z = Pᵀ (L'U')⁻¹ P r with y (n values, permuted order) as scratch:
///   lower, colours 0 … C−1:  y_i = r_perm(i) − Σ_j L'_ij y_j      (j in earlier colours)
///   upper, colours C−1 … 0:  z'_i = D_i⁻¹ (y_i − Σ_j U'_ij z'_j)  (j in later colours),
///                            written over y_i and scattered to z_perm(i)
/// The gather of P r is fused into the lower kernels and the scatter of Pᵀ into the upper
/// ones: 2·C launches on the GPU (one thread per scalar row), one parallel loop per colour
/// on the CPU. r and z must not alias; y aliases neither.
/// Traffic per apply: the factors once, about 5 vector passes plus the reads of y and z' at
/// the neighbour columns.
template <class VT>
void multicolor_solve(const CpuExecutor& exec, const MulticolorFactor<VT>& f, const VT* r, VT* y,
                      VT* z);
template <class VT>
void multicolor_solve(const CudaExecutor& exec, const MulticolorFactor<VT>& f, const VT* r, VT* y,
                      VT* z);

// ---- values-only refresh: CSR values, already where the kernels run, into other layouts ----
// IT (the maps' entries) = std::int32_t or std::int64_t: 32-bit where the positions fit.

/// Numeric part of Jacobi (nc = 1) and block Jacobi. For each block c < nblocks, with
/// map_c = map + c·nc² (entry s = a·nc + b of the block: the position in `values` of CSR entry
/// (c·nc + a, c·nc + b), −1 where the CSR has none):
///     B_c[s] = 0 + values[map_c[s]]      (0 where map_c[s] < 0)
///     inv[c·nc² …] = VT(B_c⁻¹)           Gauss-Jordan with partial pivoting: the operations
///                                        of block_kernels.hpp on both sides, so the same bits
/// Returns the lowest block whose pivot failed (its inv values are then unspecified, the
/// others are written), or −1. `flag`: one index_t of executor memory, scratch for the CUDA
/// one (atomicMin of the failing blocks; the call waits for it: one 4-byte read); unused on
/// the CPU (may be null). CUDA: nc <= 8 (NotSupported beyond: the block lives in registers).
/// Traffic: the map, the nc² values each block points at, inv: about nc²·(sizeof(IT) + 8 +
/// sizeof(VT)) bytes per block.
template <class IT, class VT>
index_t block_diag_invert(const CpuExecutor& exec, index_t nblocks, index_t nc, const IT* map,
                          const double* values, VT* inv, index_t* flag);
template <class IT, class VT>
index_t block_diag_invert(const CudaExecutor& exec, index_t nblocks, index_t nc, const IT* map,
                          const double* values, VT* inv, index_t* flag);

/// Symbolic part of Jacobi (nc = 1) and block Jacobi from a CSR pattern in the executor's
/// memory: for the nblocks·nc rows of (row_ptr, col) (32- or 64-bit row pointers, columns sorted
/// within each row), map[c·nc² + a·nc + b] = the position k of entry (c·nc + a, c·nc + b),
/// −1 where the pattern has none (the gather map of block_diag_invert). Columns outside
/// [0, nblocks·nc) are ignored. Returns the number of entries that repeat the column of the
/// entry before them in their row (map then names one of the copies: a caller that finds any
/// must sum them, which this map cannot say, so it takes its host path). map: nblocks·nc²
/// entries of executor memory. Traffic: the pattern once, the map once.
template <class RP, class IT>
offset_t block_diag_map(const CpuExecutor& exec, index_t nblocks, index_t nc, const RP* row_ptr,
                        const index_t* col, IT* map);
template <class RP, class IT>
offset_t block_diag_map(const CudaExecutor& exec, index_t nblocks, index_t nc, const RP* row_ptr,
                        const index_t* col, IT* map);
/// X(RP, IT): the row-pointer and map index types block_diag_map is instantiated for.
#define HEPTANE_BLOCK_DIAG_MAP_TYPES(X) \
    X(index_t, std::int32_t)            \
    X(index_t, std::int64_t) X(offset_t, std::int32_t) X(offset_t, std::int64_t)

/// out[i] = in[i] for i ≤ n: 32-bit CSR row pointers widened to 64 bits (a Csr<double> made
/// from a borrowed pattern view), in the executor's memory. Traffic: 12 bytes per row.
void widen_row_ptr(const CpuExecutor& exec, index_t n, const index_t* in, offset_t* out);
void widen_row_ptr(const CudaExecutor& exec, index_t n, const index_t* in, offset_t* out);

}  // namespace heptane::kernels
