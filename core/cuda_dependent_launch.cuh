// Programmatic dependent launch (compute capability 9.0 and later) for the kernels of the
// Krylov loops: a kernel launched through cuda::launch_dependent may be scheduled -- its launch
// processed, its CTAs placed on SMs as they free up -- while the kernel before it on the stream
// is still finishing, instead of after it has drained. The kernel must call
// wait_for_prior_kernels() before it touches memory: that waits until every kernel before it
// on the stream has completed and its writes are visible, so the kernels keep the stream's
// order exactly; what overlaps is the launch and the CTA dispatch, a few microseconds per
// kernel boundary that matter when an iteration is five kernels of 10-30 us each. Kernels call
// allow_dependents() once they have waited, letting the next kernel be scheduled in turn.
// Launched normally (an older GPU, HEPTANE_PDL=0, or a launch site that does not use this),
// both calls do nothing. Inside a CUDA graph capture the launches become programmatic edges.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <utility>

#include "core/cuda_common.hpp"

namespace heptane::cuda {

/// Whether launch_dependent launches on `exec`'s device as programmatic dependents: compute
/// capability 9.0 or later, unless the environment sets HEPTANE_PDL=0 (read once).
inline bool dependent_launch(const CudaExecutor& exec)
{
    static const bool off = [] {
        const char* e = std::getenv("HEPTANE_PDL");
        return e && e[0] == '0';
    }();
    if (off) return false;
    constexpr int max_devices = 64;
    static std::atomic<int> major[max_devices] = {};  // 0: not asked yet, -1: unknown
    const int d = exec.device();
    if (d < 0 || d >= max_devices) return false;
    int m = major[d].load(std::memory_order_relaxed);
    if (m == 0) {
        if (cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess) {
            (void)cudaGetLastError();
            m = -1;
        }
        major[d].store(m, std::memory_order_relaxed);
    }
    return m >= 9;
}

/// kernel<<<grid, block, 0, stream(exec)>>>(args...), as a programmatic dependent of the
/// kernel before it where dependent_launch(exec). The kernel must call
/// wait_for_prior_kernels() before it reads or writes memory.
template <class... Params, class... Args>
void launch_dependent(const CudaExecutor& exec, void (*kernel)(Params...), dim3 grid, dim3 block,
                      Args&&... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream(exec);
    cudaLaunchAttribute attr[1] = {};
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = dependent_launch(exec) ? 1 : 0;
    HEPTANE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace heptane::cuda

namespace heptane::kernels::cuda_detail {

/// First thing in a kernel launched by cuda::launch_dependent: wait until the kernels before it
/// on the stream have completed and their writes are visible (at once when launched normally).
__device__ __forceinline__ void wait_for_prior_kernels()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Let the next kernel on the stream, if it is a programmatic dependent, be scheduled now.
__device__ __forceinline__ void allow_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

}  // namespace heptane::kernels::cuda_detail
