#!/usr/bin/env bash
# Build the Matrix Market fuzz target (clang, libFuzzer + AddressSanitizer + UBSan) and run it
# for a bounded time.
#
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS]        defaults: build-fuzz in the repository, 60
#
# Seeds come from tests/fuzz/corpus (left untouched); inputs the fuzzer finds go to
# BUILD_DIR/fuzz-corpus, so a second run continues where the first stopped. A crash, a
# sanitizer report or a disagreement between the serial and the parallel parse writes
# BUILD_DIR/fuzz-artifacts/crash-* and makes the script fail; reproduce it with
#   BUILD_DIR/tests/fuzz/fuzz_matrix_market BUILD_DIR/fuzz-artifacts/crash-...
# Extra libFuzzer flags: FUZZ_FLAGS="-jobs=2 -workers=2" scripts/fuzz.sh ...
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$repo/build-fuzz}")
seconds=${2:-60}
cxx=${CXX_FUZZ:-clang++}

cmake -S "$repo" -B "$build" -DHEPTANE_FUZZ=ON -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEPTANE_WITH_CUDA=OFF -DHEPTANE_BUILD_TESTS=OFF \
  -DHEPTANE_BUILD_EXAMPLES=OFF >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target fuzz_matrix_market

mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
# shellcheck disable=SC2086
"$build/tests/fuzz/fuzz_matrix_market" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -dict="$repo/tests/fuzz/matrix_market.dict" \
  -artifact_prefix="$build/fuzz-artifacts/" -print_final_stats=1 ${FUZZ_FLAGS:-} \
  "$build/fuzz-corpus" "$repo/tests/fuzz/corpus"
