// Executor dispatch for the format kernels: spmv(exec, A, ...) calls the CPU or the CUDA
// implementation declared in formats/<fmt>/<fmt>_kernels.hpp (every registered format's,
// through formats/registry.hpp). A CPU-only build has no CUDA
// implementation to link, so the CUDA branch is compiled only with HEPTANE_HAVE_CUDA.
#pragma once

#include "core/error.hpp"
#include "core/executor.hpp"
#include "formats/registry.hpp"  // every format and its kernels' declarations

namespace heptane {

/// y = alpha * op(A) * x + beta * y on `exec` (A, x and y in its memory).
template <class Matrix, class VT>
void spmv(const Executor& exec, const Matrix& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    if (exec.is_cpu()) {
        kernels::spmv(static_cast<const CpuExecutor&>(exec), a, op, alpha, x, beta, y);
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    kernels::spmv(static_cast<const CudaExecutor&>(exec), a, op, alpha, x, beta, y);
#else
    HEPTANE_THROW(NotSupported, "CUDA SpMV requested in a build without CUDA");
#endif
}

}  // namespace heptane
