// CUDA-side helpers: typed access to an executor's handles and the one checking macro
// family every CUDA/cuBLAS/cuSPARSE call goes through (STYLE.md). Include only from
// sources compiled when HEPTANE_HAVE_CUDA is set.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include "core/error.hpp"
#include "core/executor.hpp"

namespace heptane::cuda {

inline cudaStream_t stream(const CudaExecutor& e)
{
    return static_cast<cudaStream_t>(e.stream_handle());
}
inline cublasHandle_t cublas(const CudaExecutor& e)
{
    return static_cast<cublasHandle_t>(e.cublas_handle());
}
inline cusparseHandle_t cusparse(const CudaExecutor& e)
{
    return static_cast<cusparseHandle_t>(e.cusparse_handle());
}

const char* cublas_status_string(cublasStatus_t s) noexcept;

/// Grid size for a 1-D launch of n work items with `block` threads each.
inline unsigned grid_for(long long n, int block)
{
    long long g = (n + block - 1) / block;
    return static_cast<unsigned>(g < 1 ? 1 : g);
}

/// One value from device memory to the host: queued on the executor's stream, which is then
/// synchronised (so everything queued before it is done too).
template <class T>
T read_back(const CudaExecutor& e, const T* p);

}  // namespace heptane::cuda

#define HEPTANE_CUDA_CHECK(call)                                                                  \
    do {                                                                                          \
        cudaError_t heptane_err_ = (call);                                                        \
        if (heptane_err_ != cudaSuccess)                                                          \
            HEPTANE_THROW(DeviceError, #call << " failed: " << cudaGetErrorString(heptane_err_)); \
    } while (0)

/// After every kernel launch: catches bad launch configurations at once.
#define HEPTANE_CUDA_LAUNCH_CHECK() HEPTANE_CUDA_CHECK(cudaGetLastError())

#define HEPTANE_CUBLAS_CHECK(call)                                                                 \
    do {                                                                                           \
        cublasStatus_t heptane_st_ = (call);                                                       \
        if (heptane_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
            HEPTANE_THROW(DeviceError, #call                                                       \
                                           << " failed: "                                          \
                                           << ::heptane::cuda::cublas_status_string(heptane_st_)); \
    } while (0)

#define HEPTANE_CUSPARSE_CHECK(call)                                                    \
    do {                                                                                \
        cusparseStatus_t heptane_st_ = (call);                                          \
        if (heptane_st_ != CUSPARSE_STATUS_SUCCESS)                                     \
            HEPTANE_THROW(DeviceError,                                                  \
                          #call << " failed: " << cusparseGetErrorString(heptane_st_)); \
    } while (0)

template <class T>
T heptane::cuda::read_back(const CudaExecutor& e, const T* p)
{
    T x{};
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(&x, p, sizeof(T), cudaMemcpyDeviceToHost, stream(e)));
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(stream(e)));
    return x;
}
