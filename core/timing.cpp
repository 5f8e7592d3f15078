#include "core/timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif

namespace heptane {

TimeStats time_on(const Executor& exec, const std::function<void()>& f, int reps, int warmups)
{
    HEPTANE_ENSURE(reps >= 1, InputError, "time_on needs at least one repetition, got " << reps);
    for (int i = 0; i < warmups; ++i) f();
    std::vector<double> t;
#ifdef HEPTANE_HAVE_CUDA
    if (exec.is_cuda()) {
        const auto s = cuda::stream(static_cast<const CudaExecutor&>(exec));
        cudaEvent_t e0, e1;
        HEPTANE_CUDA_CHECK(cudaEventCreate(&e0));
        HEPTANE_CUDA_CHECK(cudaEventCreate(&e1));
        for (int i = 0; i < reps; ++i) {
            HEPTANE_CUDA_CHECK(cudaEventRecord(e0, s));
            f();
            HEPTANE_CUDA_CHECK(cudaEventRecord(e1, s));
            HEPTANE_CUDA_CHECK(cudaEventSynchronize(e1));
            float ms = 0;
            HEPTANE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 1e-3);
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
#endif
    if (exec.is_cpu()) {
        for (int i = 0; i < reps; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            f();
            t.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
    }
    HEPTANE_ENSURE(!t.empty(), NotSupported, "time_on: no timer for " << exec.name());
    std::sort(t.begin(), t.end());
    return {t[t.size() / 2], t.front()};
}

}  // namespace heptane
