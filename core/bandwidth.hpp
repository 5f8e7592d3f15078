// The copy bandwidth every benchmark prints its results against (BENCHMARKS.md): a large
// copy within the executor's memory, bytes read plus bytes written, median of several.
#pragma once

#include <cstddef>

#include "core/executor.hpp"

namespace heptane {

/// GB/s (1e9 bytes/s) of a copy of `bytes` bytes (default 1 GiB on a device, 512 MiB on the
/// host) counting read + written bytes. CUDA: cudaMemcpyAsync device-to-device timed with
/// events on the executor's stream; CPU: an OpenMP-parallel copy over all threads.
double measure_copy_bandwidth(const Executor& exec, std::size_t bytes = 0, int reps = 10);

/// GB/s of a copy from page-locked host memory to the device (the floor of an out-of-core
/// product): `bytes` (default 256 MiB) in one cudaMemcpyAsync on the executor's stream, timed
/// with events, median of `reps`. 0 on the CPU (nothing crosses a bus).
double measure_h2d_bandwidth(const Executor& exec, std::size_t bytes = 0, int reps = 5);

}  // namespace heptane
