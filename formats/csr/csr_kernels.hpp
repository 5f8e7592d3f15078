// SpMV kernels for Csr, declared once; csr_cpu.cpp (OpenMP) and csr.cu (CUDA) implement
// them side by side. Instantiated for (MT, VT) = (double, double), (float, float) and
// (float, double) (mixed: fp32 values, fp64 vectors and accumulation).
#pragma once

#include "core/executor.hpp"
#include "core/types.hpp"
#include "formats/csr/csr.hpp"

namespace heptane::kernels {

/// CUDA CSR kernel choice. automatic picks from the row-length statistics: scalar (one
/// thread per row) for very short rows, vector (a group of 2..32 lanes per row, the group
/// size from the mean row length), merge-path for very unequal rows.
enum class CsrKernel { automatic, scalar, vector, merge };

/// y = alpha * op(A) * x + beta * y, op(A) = A or A^T. x and y live in the executor's memory
/// (length cols and rows of op(A)). When beta == 0, y is only written, never read (it may hold
/// NaN). Throws DimensionMismatch if A is not on this executor.
template <class MT, class VT>
void spmv(const CpuExecutor& exec, const Csr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y);
template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Csr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y,
          CsrKernel kernel = CsrKernel::automatic);

}  // namespace heptane::kernels
