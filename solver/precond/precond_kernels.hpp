// Preconditioner kernels, declared once; precond_cpu.cpp (OpenMP) and precond.cu (CUDA)
// implement them side by side. VT = double and float. Blocks are Nc × Nc, row-major.
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
///     w_i = y_i − Σ_{j>i} U_ij z_j  (written over in),  z_i = D_i⁻¹ w_i
///                                                       in = y (overwritten), out = z
/// The lower solve may run in place (in == out); the upper solve needs out != in.
/// One launch per level on the GPU (one thread per block row); on the CPU the rows of a
/// level are shared among the OpenMP threads.
template <class VT>
void triangular_solve(const CpuExecutor& exec, const TriangularFactor<VT>& f, VT* in, VT* out);
template <class VT>
void triangular_solve(const CudaExecutor& exec, const TriangularFactor<VT>& f, VT* in, VT* out);

}  // namespace heptane::kernels
