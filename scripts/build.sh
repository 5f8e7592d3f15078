#!/usr/bin/env bash
# Configure and build heptane in ${BUILD_DIR:-build}. CUDA is used when nvcc is found
# (/usr/local/cuda/bin/nvcc included), architecture ${CUDA_ARCH:-90}.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  ${HEPTANE_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
grep -E "heptane:" "$build.configure.log" || true
cmake --build "$build" -j "$jobs"
