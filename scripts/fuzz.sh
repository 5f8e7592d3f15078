#!/usr/bin/env bash
# Build the fuzz targets (clang, libFuzzer + AddressSanitizer + UBSan) and run each of them
# for a bounded time:
#   fuzz_matrix_market    the Matrix Market reader on arbitrary bytes
#   fuzz_petsc_binary     the PETSc binary reader on arbitrary bytes
#   fuzz_detect_convert   structure detection and every storage format (round trip, products)
#                         on small matrices decoded from the input
#   fuzz_cli_args         the command-line parsing of `heptane` (apps/) on arbitrary arguments
#
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS]        defaults: build-fuzz in the repository, 60
#
# SECONDS is per target (the default run takes about 4 minutes after the build; the first
# build also compiles the library, which fuzz_cli_args links). Seeds come from tests/fuzz/corpus,
# tests/fuzz/corpus_petsc, tests/fuzz/corpus_detect and tests/fuzz/corpus_args (left
# untouched); inputs the fuzzers find go to BUILD_DIR/fuzz-corpus (the reader),
# BUILD_DIR/fuzz-corpus-petsc, BUILD_DIR/fuzz-corpus-detect and BUILD_DIR/fuzz-corpus-args, so a
# second run continues where the first stopped. A crash, a
# sanitizer report or a failed check (the reader: serial and parallel parse disagree; detect:
# a format changed the matrix, refused a valid one or computed a wrong product; args: the
# parser disagrees with its grammar or lets an exception other than a usage error escape)
# writes a file under BUILD_DIR/fuzz-artifacts (crash-* for the reader, fuzz_detect_convert-*
# and fuzz_cli_args-* for the others); every target still runs, then the script fails.
# Reproduce with the target and the file, e.g.
#   BUILD_DIR/tests/fuzz/fuzz_matrix_market BUILD_DIR/fuzz-artifacts/crash-...
#   BUILD_DIR/tests/fuzz/fuzz_detect_convert BUILD_DIR/fuzz-artifacts/fuzz_detect_convert-crash-...
#   BUILD_DIR/tests/fuzz/fuzz_cli_args BUILD_DIR/fuzz-artifacts/fuzz_cli_args-crash-...
# (fuzz_detect_convert prints the failing matrix in Matrix Market form; FUZZ_VERBOSE=1 also
# prints what detection found.)
# Extra libFuzzer flags: FUZZ_FLAGS="-jobs=2 -workers=2" scripts/fuzz.sh ...
# Only some targets: FUZZ_TARGETS="fuzz_cli_args fuzz_detect_convert" scripts/fuzz.sh ...
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$repo/build-fuzz}")
seconds=${2:-60}
cxx=${CXX_FUZZ:-clang++}
targets=${FUZZ_TARGETS:-fuzz_matrix_market fuzz_petsc_binary fuzz_detect_convert fuzz_cli_args}

cmake -S "$repo" -B "$build" -DHEPTANE_FUZZ=ON -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEPTANE_WITH_CUDA=OFF -DHEPTANE_BUILD_TESTS=OFF \
  -DHEPTANE_BUILD_EXAMPLES=OFF >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target $targets

mkdir -p "$build/fuzz-artifacts"
failed=()
for target in $targets; do
  # per target: corpus directory (found inputs), seeds, artifact prefix, libFuzzer options
  case $target in
    fuzz_matrix_market)
      corpus=$build/fuzz-corpus seeds=$repo/tests/fuzz/corpus
      prefix=$build/fuzz-artifacts/
      opts=(-max_len=4096 -dict="$repo/tests/fuzz/matrix_market.dict") ;;
    fuzz_petsc_binary)
      corpus=$build/fuzz-corpus-petsc seeds=$repo/tests/fuzz/corpus_petsc
      prefix=$build/fuzz-artifacts/$target-
      opts=(-max_len=4096) ;;
    fuzz_detect_convert)
      corpus=$build/fuzz-corpus-detect seeds=$repo/tests/fuzz/corpus_detect
      prefix=$build/fuzz-artifacts/$target-
      opts=(-max_len=4096) ;;
    fuzz_cli_args)
      corpus=$build/fuzz-corpus-args seeds=$repo/tests/fuzz/corpus_args
      prefix=$build/fuzz-artifacts/$target-
      opts=(-max_len=512 -dict="$repo/tests/fuzz/cli_args.dict") ;;
    *)
      echo "fuzz.sh: unknown target $target" >&2; exit 2 ;;
  esac
  mkdir -p "$corpus"
  echo "=== $target: $seconds s" >&2
  # shellcheck disable=SC2086
  if ! "$build/tests/fuzz/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${opts[@]}" \
    -artifact_prefix="$prefix" -print_final_stats=1 ${FUZZ_FLAGS:-} \
    "$corpus" "$seeds"; then
    failed+=("$target")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]} (inputs under $build/fuzz-artifacts)" >&2
  exit 1
fi
echo "fuzz.sh: $targets: no crash in $seconds s each" >&2
