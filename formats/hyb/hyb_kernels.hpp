// SpMV kernels for Hyb, declared once; hyb_cpu.cpp (OpenMP) and hyb.cu (CUDA) implement
// them side by side. Instantiated for (MT, VT) = (double, double), (float, float) and
// (float, double) (mixed: fp32 values, fp64 vectors and accumulation).
#pragma once

#include "core/executor.hpp"
#include "core/types.hpp"
#include "formats/hyb/hyb.hpp"

namespace heptane::kernels {

/// y = alpha * op(A) * x + beta * y, op(A) = A or A^T. x and y live in the executor's memory
/// (length cols and rows of op(A)). When beta == 0, y is only written, never read (it may hold
/// NaN). Throws DimensionMismatch if A is not on this executor.
template <class MT, class VT>
void spmv(const CpuExecutor& exec, const Hyb<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y);
template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Hyb<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y);

}  // namespace heptane::kernels
