#!/usr/bin/env bash
# The CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer (CI runs this after the
# README's test command): a CPU-only build (no CUDA, no PETSc plugin: PETSc's own executables
# are not instrumented) in ${1:-build-asan}, every test of the `cpu` label, any report fails.
#
#   scripts/sanitize.sh [BUILD_DIR]
#
# ASan's leak check is off (OpenMPI's and OpenMP's runtimes keep allocations to the end);
# UBSan stops at the first report (-fno-sanitize-recover).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEPTANE_WITH_CUDA=OFF \
  -DHEPTANE_WITH_PETSC=OFF -DHEPTANE_BUILD_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "${JOBS:-$(nproc)}"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
ctest --test-dir "$build" -L cpu --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
echo "sanitizers: every cpu test ran under ASan + UBSan with no report"
