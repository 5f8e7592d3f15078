#include "core/bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/array.hpp"
#include "core/error.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif

namespace heptane {

namespace {
double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
#ifdef HEPTANE_HAVE_CUDA
/// Seconds of reps + 1 copies on the executor's stream, timed with events; the first (a
/// warm-up) dropped.
std::vector<double> time_copies(const CudaExecutor& dev, void* dst, const void* src,
                                std::size_t bytes, cudaMemcpyKind kind, int reps)
{
    auto s = cuda::stream(dev);
    cudaEvent_t e0, e1;
    HEPTANE_CUDA_CHECK(cudaEventCreate(&e0));
    HEPTANE_CUDA_CHECK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int r = 0; r < reps + 1; ++r) {
        HEPTANE_CUDA_CHECK(cudaEventRecord(e0, s));
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
        HEPTANE_CUDA_CHECK(cudaEventRecord(e1, s));
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        HEPTANE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) t.push_back(ms / 1e3);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return t;
}
#endif
}  // namespace

double measure_copy_bandwidth(const Executor& exec, std::size_t bytes, int reps)
{
    if (exec.is_cpu()) {
        if (bytes == 0) bytes = std::size_t(512) << 20;
        const std::size_t n = bytes / sizeof(double);
        std::vector<double> a(n), b(n);
#pragma omp parallel for
        for (std::size_t i = 0; i < n; ++i) a[i] = double(i);  // first touch by the same threads
#pragma omp parallel for
        for (std::size_t i = 0; i < n; ++i) b[i] = 0;
        std::vector<double> t;
        for (int r = 0; r < reps + 1; ++r) {
            auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for
            for (std::size_t i = 0; i < n; ++i) b[i] = a[i];
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r > 0) t.push_back(s);  // the first pass is a warm-up
        }
        HEPTANE_ENSURE(b[n - 1] == double(n - 1), Error, "copy check failed");
        return 2.0 * n * sizeof(double) / median(t) / 1e9;
    }
#ifdef HEPTANE_HAVE_CUDA
    const auto& dev = static_cast<const CudaExecutor&>(exec);
    if (bytes == 0) bytes = std::size_t(1) << 30;
    void* src = dev.alloc(bytes);
    void* dst = dev.alloc(bytes);
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(src, 1, bytes, cuda::stream(dev)));
    const double t = median(time_copies(dev, dst, src, bytes, cudaMemcpyDeviceToDevice, reps));
    dev.free(src);
    dev.free(dst);
    return 2.0 * bytes / t / 1e9;
#else
    HEPTANE_THROW(NotSupported, "no CUDA back end in this build");
#endif
}

double measure_h2d_bandwidth(const Executor& exec, std::size_t bytes, int reps)
{
    if (exec.is_cpu()) return 0;
#ifdef HEPTANE_HAVE_CUDA
    const auto& dev = static_cast<const CudaExecutor&>(exec);
    HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
    if (bytes == 0) bytes = std::size_t(256) << 20;
    void* host = nullptr;
    HEPTANE_CUDA_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
    std::memset(host, 1, bytes);
    void* dst = dev.alloc(bytes);
    const double t = median(time_copies(dev, dst, host, bytes, cudaMemcpyHostToDevice, reps));
    dev.free(dst);
    cudaFreeHost(host);
    return double(bytes) / t / 1e9;
#else
    (void)bytes;
    (void)reps;
    HEPTANE_THROW(NotSupported, "no CUDA back end in this build");
#endif
}

}  // namespace heptane
