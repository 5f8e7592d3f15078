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
    auto s = cuda::stream(dev);
    cudaEvent_t e0, e1;
    HEPTANE_CUDA_CHECK(cudaEventCreate(&e0));
    HEPTANE_CUDA_CHECK(cudaEventCreate(&e1));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(src, 1, bytes, s));
    std::vector<double> t;
    for (int r = 0; r < reps + 1; ++r) {
        HEPTANE_CUDA_CHECK(cudaEventRecord(e0, s));
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
        HEPTANE_CUDA_CHECK(cudaEventRecord(e1, s));
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        HEPTANE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) t.push_back(ms / 1e3);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    dev.free(src);
    dev.free(dst);
    return 2.0 * bytes / median(t) / 1e9;
#else
    HEPTANE_THROW(NotSupported, "no CUDA back end in this build");
#endif
}

}  // namespace heptane
