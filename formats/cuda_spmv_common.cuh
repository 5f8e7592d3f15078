// Device helpers shared by the CUDA SpMV kernels of every format (formats/<fmt>/<fmt>.cu):
// operand checks, y = beta*y, read-only and streaming loads, atomics, instantiation lists.
// Include only from .cu files (HEPTANE_HAVE_CUDA builds).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_common.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels::cuda_detail {

/// The matrix of a CUDA product must live on a CUDA device, the executor's one. Throws
/// DimensionMismatch (the kernel declarations promise it) naming both sides.
inline void ensure_on_device(const CudaExecutor& exec, const Executor& where, const char* fmt)
{
    HEPTANE_ENSURE(where.is_cuda(), DimensionMismatch,
                   fmt << " matrix is on " << where.name() << ", not on " << exec.name());
    HEPTANE_ENSURE(static_cast<const CudaExecutor&>(where).device() == exec.device(),
                   DimensionMismatch,
                   fmt << " matrix is on " << where.name() << ", not on " << exec.name());
}

/// Kernels are queued on the executor's stream; make its device current (cheap when it is).
inline void make_current(const CudaExecutor& exec)
{
    int cur = -1;
    HEPTANE_CUDA_CHECK(cudaGetDevice(&cur));
    if (cur != exec.device()) HEPTANE_CUDA_CHECK(cudaSetDevice(exec.device()));
}

/// Read-only load through the non-coherent (texture) path: x and index arrays.
template <class T>
__device__ __forceinline__ T ldg(const T* p)
{
    return __ldg(p);
}
/// Streaming load (evict-first): matrix values that are read exactly once, so that they do
/// not push the re-used vector x out of L1/L2.
template <class T>
__device__ __forceinline__ T ldcs(const T* p)
{
    return __ldcs(p);
}

/// y <- alpha*sum + beta*y, never reading y when beta == 0 (it may hold NaN).
template <class VT>
__device__ __forceinline__ void store_result(VT* y, long long i, VT alpha, VT sum, VT beta)
{
    y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
}

template <class VT>
__global__ void scale_kernel(long long n, VT beta, VT* __restrict__ y)
{
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += stride)
        y[i] = beta == VT(0) ? VT(0) : beta * y[i];
}

/// y = beta*y on the executor's stream (y = 0 when beta == 0, without reading y). A no-op
/// for beta == 1. Used before the atomic scatters (A^T x of CSR/COO/ELL/BSR, COO A x).
template <class VT>
void scale(const CudaExecutor& exec, long long n, VT beta, VT* y)
{
    if (n <= 0 || beta == VT(1)) return;
    const int block = 256;
    long long grid = (n + block - 1) / block;
    const long long cap = 32LL * exec.multiprocessors();  // grid-stride beyond that
    if (grid > cap) grid = cap;
    scale_kernel<VT><<<static_cast<unsigned>(grid), block, 0, cuda::stream(exec)>>>(n, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

/// Sum over the `width` lanes of an aligned lane group (width a power of two <= 32); every
/// lane of the group gets the total.
template <int width, class T>
__device__ __forceinline__ T group_sum(T v)
{
#pragma unroll
    for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o, width);
    return v;
}

}  // namespace heptane::kernels::cuda_detail

/// The three (MT, VT) pairs every SpMV is instantiated for.
#define HEPTANE_FOR_EACH_SPMV_TYPES(M) \
    M(double, double)                  \
    M(float, float)                    \
    M(float, double)
