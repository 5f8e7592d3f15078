// OpenMP helpers of the CPU kernels and builders: the size below which a loop runs on one
// thread, and a parallel region's per-thread share of a range.
#pragma once

#include "core/types.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace heptane {

/// Loops over fewer items than this run on one thread: opening a parallel region costs more
/// than the work there.
constexpr offset_t kParallelMin = offset_t(1) << 15;

/// Inside a parallel region: the calling thread's contiguous share [begin, end) of n items,
/// n·t/nt up to n·(t + 1)/nt (outside one, or without OpenMP: all of them).
struct ThreadShare {
    offset_t begin;
    offset_t end;
};
inline ThreadShare thread_share(offset_t n) noexcept
{
#ifdef _OPENMP
    const offset_t t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const offset_t t = 0, nt = 1;
#endif
    return {n * t / nt, n * (t + 1) / nt};
}

}  // namespace heptane
