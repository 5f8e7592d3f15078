// SpMV kernels for Bdia, declared once; bdia_cpu.cpp (OpenMP) and bdia.cu (CUDA) implement
// them side by side. Instantiated for (MT, VT) = (double, double), (float, float) and
// (float, double) (mixed: fp32 values, fp64 vectors and accumulation).
#pragma once

#include "core/error.hpp"
#include "core/executor.hpp"
#include "core/types.hpp"
#include "formats/bdia/bdia.hpp"

namespace heptane::kernels {

/// CUDA BDIA kernel choice: `thesis` is the plain kernel of the source thesis (offsets in
/// shared memory, one thread per row), kept as the baseline; `optimized` is the one aimed at
/// the bandwidth floor; automatic = optimized.
enum class BdiaKernel { automatic, thesis, optimized };

/// y = alpha * op(A) * x + beta * y, op(A) = A or A^T. x and y live in the executor's memory
/// (length cols and rows of op(A)). When beta == 0, y is only written, never read (it may hold
/// NaN). Throws DimensionMismatch if A is not on this executor.
template <class MT, class VT>
void spmv(const CpuExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y);
template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y,
          BdiaKernel kernel = BdiaKernel::automatic);

/// out = A B with B block diagonal, its blocks b × b (b divides Nc) given as nblocks · b²
/// values, row-major: binv[P·b² + i·b + j] = B_P(i, j), P < cols / b. Each stored block of A
/// has its columns mixed within the b-blocks:
///     out(r, c) = sum_i A(r, (c/b)·b + i) · B_{c/b}(i, c mod b)
/// in double, rounded to MT. `out` has A's shape (rows, cols, block size, block offsets, data
/// of the same size, on the same executor); every slot of it is written (0 where the column
/// lies outside the matrix). A right block-Jacobi preconditioner folded into the operator
/// (Â = A M⁻¹, B = M⁻¹) makes BiCGStab's preconditioned product one product of Â: its rows
/// and residuals are those of the right-preconditioned method. Traffic: A read once, out
/// written once, binv ~once. Throws DimensionMismatch for shapes that do not fit, InputError
/// when b does not divide Nc.
///
/// `unit_main`: B's blocks are the inverses of A's main blocks (b = Nc), so A's main block
/// diagonal times B is the identity: it is written as exactly I (1 where A_ii B_i rounds to
/// 1 ± an ulp at Nc = 1; for Nc > 1 the difference is A_ii's conditioning times the rounding,
/// which the caller must judge) and `out.unit_main_block` is set, so the tuned CUDA product
/// skips those loads (Bdia::unit_main_block). Otherwise the flag is cleared. InputError when
/// b ≠ Nc or A has no block diagonal at offset 0.
/// The shape checks of bdia_right_scale (both executors).
template <class MT>
void check_right_scale(const Bdia<MT>& a, index_t b, const Bdia<MT>& out, bool unit_main)
{
    HEPTANE_ENSURE(
        b >= 1 && a.block_size % b == 0, InputError,
        "BDIA right scaling: blocks of " << b << " do not divide the block size " << a.block_size);
    HEPTANE_ENSURE(!unit_main || (b == a.block_size && a.main_block_diagonal() >= 0), InputError,
                   "BDIA right scaling with the identity on the main blocks: needs blocks of the "
                   "block size ("
                       << b << " vs " << a.block_size << ") and a block diagonal at offset 0");
    HEPTANE_ENSURE(a.data.size() == std::size_t(a.slots()) && out.rows == a.rows &&
                       out.cols == a.cols && out.block_size == a.block_size &&
                       out.block_offsets == a.block_offsets && out.data.size() == a.data.size(),
                   DimensionMismatch, "BDIA right scaling: the output has another shape");
}

template <class MT, class VT>
void bdia_right_scale(const CpuExecutor& exec, const Bdia<MT>& a, index_t b, const VT* binv,
                      Bdia<MT>& out, bool unit_main = false);
template <class MT, class VT>
void bdia_right_scale(const CudaExecutor& exec, const Bdia<MT>& a, index_t b, const VT* binv,
                      Bdia<MT>& out, bool unit_main = false);

}  // namespace heptane::kernels
