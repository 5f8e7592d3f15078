// Timing of executor work for the benchmarks: median and minimum over repetitions.
#pragma once

#include <functional>

#include "core/executor.hpp"

namespace heptane {

struct TimeStats {
    double med = 0;  ///< median seconds
    double min = 0;  ///< minimum seconds
};

/// Median and minimum seconds of f() over `reps` runs after `warmups` runs: CUDA events on the
/// executor's stream on a GPU (f must queue its work there), the host clock on the CPU.
/// Throws InputError when reps < 1.
TimeStats time_on(const Executor& exec, const std::function<void()>& f, int reps, int warmups = 2);

}  // namespace heptane
