// CUDA-side helpers: typed access to an executor's handles and the one checking macro
// family every CUDA/cuBLAS/cuSPARSE call goes through (STYLE.md). Include only from
// sources compiled when HEPTANE_HAVE_CUDA is set.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

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

/// Whether the paired forms (two entries a thread through 16-byte loads) of the Nc = 1 fused
/// BDIA-GH products and of BiCGStab's p update are taken for n rows where their arrays allow:
/// from 2^20 rows, unless the environment sets HEPTANE_PAIRS=0 (never) or 1 (at every size; read
/// once; for measuring one form against the other). Measured on the H100 (2026-12-06, BiCGStab
/// without a preconditioner, ms an iteration, off -> on): 1.05 M rows 0.1018 -> 0.1003, 2.1 M
/// 0.1999 -> 0.1965, 16.8 M 1.5768 -> 1.4535, but 32 K 0.0168 -> 0.0176, 262 K 0.0312 -> 0.0332,
/// 524 K 0.0522 -> 0.0547 (docs/benchmarks.md). The choice depends on n alone, so every product
/// of one solve takes the same form (bdia_dots.cuh, nc1_pairs: their sums' order).
inline bool paired_forms(long long n)
{
    static const int mode = [] {  // 0 never, 1 always, 2 from 2^20 rows
        const char* e = std::getenv("HEPTANE_PAIRS");
        if (e && e[0] == '0' && e[1] == '\0') return 0;
        if (e && e[0] == '1' && e[1] == '\0') return 1;
        return 2;
    }();
    return mode == 1 || (mode == 2 && n >= (1LL << 20));
}

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

/// Host-to-device copies queued on one stream, large pageable ones through the process's two
/// pinned staging buffers (held, with the pool's lock, for the object's life): the host threads
/// fill one buffer while the DMA engine empties the other, across every copy of the object, so
/// a sequence of copies runs at the pace of one long one. copy() returns once `src` may be
/// reused (not when the data has arrived: record an event on the stream for that); finish()
/// and the destructor wait for the stream.
class StagedUpload {
public:
    explicit StagedUpload(cudaStream_t stream);
    ~StagedUpload();
    StagedUpload(const StagedUpload&) = delete;
    StagedUpload& operator=(const StagedUpload&) = delete;
    void copy(void* dst, const void* src, std::size_t bytes);
    void finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// dst (device) = src (host, pageable or pinned) through a StagedUpload on `stream`; returns
/// when the data is on the device (copy_bytes' upload, on a stream of the caller's choice).
void upload(cudaStream_t stream, void* dst, const void* src, std::size_t bytes);

/// Page-locked, portable host memory of at least `bytes` from the process's cache of small
/// blocks (up to kPinnedCacheMax bytes, kept for reuse when released; larger ones are
/// allocated and freed each time). A solver's read-back slots come from here: cudaMallocHost
/// and cudaFreeHost cost about a millisecond together, and cudaFreeHost waits for the device.
void* pinned_acquire(std::size_t bytes);
/// Give back a block from pinned_acquire (of that size); nothing may still be copying into it.
void pinned_release(void* p, std::size_t bytes) noexcept;
constexpr std::size_t kPinnedCacheMax = std::size_t(1) << 20;

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
