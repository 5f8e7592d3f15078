#!/usr/bin/env bash
# GPU check, run on a machine with a CUDA device (the H100 of BENCHMARKS.md): configure and
# build with CUDA (sm_90), run the GPU tests and the CPU tests, compute-sanitizer memcheck
# and racecheck on the GPU test programs (a quick subset), then `heptane bench spmv`.
#
#   OUT=/some/dir bash scripts/gpu-check.sh [--skip-build] [--no-cpu-tests] [--no-sanitizer]
#                                           [--bench "ARGS"] [--no-bench] [--large]
#
#   --bench ARGS   arguments of the benchmark (default: --sizes thesis)
#   --large        also the H100-sized systems (--sizes large, fp64 and mixed, A x only)
#
# Everything lands in $OUT (default ./gpu-check-out): summary.txt, logs.tar.gz (configure,
# build, ctest and sanitizer logs), bench.md (the benchmark's tables and log), bench.csv,
# bench.json, and with --large bench_large.csv / bench_large.json. At most 8 files, so that
# a device machine's file limits are met.
#
# Environment: BUILD_DIR (default build-gpu), JOBS (default 16), CUDA_ARCH (default 90),
# SANITIZER_TIMEOUT (seconds per program and tool, default 120: a run cut short is reported
# as incomplete, not as clean), SANITIZE_PROGRAMS (names of the GPU test programs to run
# under compute-sanitizer, default all), BENCH_TIMEOUT (seconds per benchmark run, default
# none; rows finished before it are kept), BOOST_INCLUDE (a folder with the Boost headers, for machines
# without libboost-test-dev; ./.deps/boost/include is used when present and the system has
# no Boost).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-$root/gpu-check-out}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-16}
arch=${CUDA_ARCH:-90}
skip_build=0
sanitizer=1
cpu_tests=1
bench=1
large=0
san_timeout=${SANITIZER_TIMEOUT:-120}
bench_args="--sizes thesis --csv $out/bench.csv --json $out/bench.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) skip_build=1 ;;
    --no-sanitizer) sanitizer=0 ;;
    --no-cpu-tests) cpu_tests=0 ;;
    --no-bench) bench=0 ;;
    --large) large=1 ;;
    --bench) shift; bench_args="$1 --csv $out/bench.csv --json $out/bench.json" ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out" "$out/logs"
logs=$out/logs
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
status=0

note "gpu-check $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
  --format=csv,noheader 2>&1 | tee -a "$summary"
export PATH=/usr/local/cuda/bin:$PATH

extra=()
boost=${BOOST_INCLUDE:-}
if [ -z "$boost" ] && [ ! -f /usr/include/boost/test/included/unit_test.hpp ] &&
  [ -d "$root/.deps/boost/include" ]; then
  boost=$root/.deps/boost/include
fi
[ -n "$boost" ] && extra+=("-DCMAKE_CXX_FLAGS=-isystem $boost")

if [ "$skip_build" = 0 ]; then
  t0=$(date +%s)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DHEPTANE_WITH_PETSC=OFF -DHEPTANE_BUILD_EXAMPLES=OFF "${extra[@]}" >"$logs/configure.log" 2>&1 ||
    { note "configure FAILED (logs/configure.log)"; tail -30 "$logs/configure.log"; status=1; }
  cmake --build "$build" -j "$jobs" >"$logs/build.log" 2>&1 ||
    { note "build FAILED (logs/build.log)"; grep -E "error|Error" "$logs/build.log" | head -40; status=1; }
  note "configure + build: $(($(date +%s) - t0)) s (-j $jobs)"
fi

# the benchmark driver: `heptane bench spmv` when the CLI is there, else a two-line main
# linked against the library (apps/bench_spmv.cpp defines heptane::cli::bench_spmv)
bench_cmd=()
if [ -x "$build/apps/heptane" ] && "$build/apps/heptane" bench spmv --help >/dev/null 2>&1; then
  bench_cmd=("$build/apps/heptane" bench spmv)
elif [ -f "$build/libheptane.a" ]; then
  cat >"$build/bench_spmv_main.cpp" <<'CPP'
#include <cstdio>
#include <exception>
#include "apps/args.hpp"
#include "apps/bench.hpp"
int main(int argc, char** argv)
{
    try {
        return heptane::cli::bench_spmv(argc - 1, argv + 1);
    } catch (const heptane::cli::UsageError& e) {
        std::fprintf(stderr, "usage error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
CPP
  if g++ -O2 -std=c++17 -fopenmp -I. -I/usr/local/cuda/include -DHEPTANE_HAVE_CUDA=1 \
    "$build/bench_spmv_main.cpp" apps/bench_spmv.cpp apps/args.cpp "$build/libheptane.a" \
    -L/usr/local/cuda/lib64 -lcusparse -lcublas -lcudart -o "$build/bench_spmv" \
    >"$logs/bench_driver.log" 2>&1; then
    bench_cmd=("$build/bench_spmv")
  else
    note "bench driver build FAILED (logs/bench_driver.log)"
    status=1
  fi
fi

# tests: GPU (label gpu) and CPU
ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300 -j 2 >"$logs/ctest_gpu.log" 2>&1 ||
  status=1
note "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$logs/ctest_gpu.log" | tail -1)"
grep -E "^\s*[0-9]+/[0-9]+ Test" "$logs/ctest_gpu.log" | grep -v Passed | tee -a "$summary"
if [ "$cpu_tests" = 1 ]; then
  ctest --test-dir "$build" -LE gpu --output-on-failure -j "$jobs" >"$logs/ctest_cpu.log" 2>&1 ||
    status=1
  note "ctest (cpu): $(grep -E 'tests passed|tests failed' "$logs/ctest_cpu.log" | tail -1)"
  grep -E "^\s*[0-9]+/[0-9]+ Test" "$logs/ctest_cpu.log" | grep -v Passed | tee -a "$summary"
fi

# compute-sanitizer on the GPU test programs (a quick subset of each: see below)
if [ "$sanitizer" = 1 ] && command -v compute-sanitizer >/dev/null; then
  # every program registered with a _gpu test; test_cuda_spmv filtered to a representative
  # subset (memcheck slows kernels down 10-100x)
  mapfile -t progs < <(ctest --test-dir "$build" -L gpu -N -V 2>/dev/null |
    sed -n 's/^[0-9]*: Test command: //p' | awk '{print $1}' | sort -u)
  for p in "${progs[@]}"; do
    name=$(basename "$p")
    if [ -n "${SANITIZE_PROGRAMS:-}" ] && ! [[ " $SANITIZE_PROGRAMS " == *" $name "* ]]; then
      continue
    fi
    filter=()
    case "$name" in
      test_cuda_spmv) filter=(--run_test=csr_every_kernel_matches_cpu_reference,coo_ell_hyb_match_cpu_reference,bsr_every_block_size_matches_cpu_reference,bdia_general_offsets_and_rectangular_match_cpu_reference,cusparse_transpose_equals_host_transpose) ;;
    esac
    for tool in memcheck racecheck; do
      log="$logs/sanitizer_${tool}_${name}.log"
      HEPTANE_TEST_DEVICE=cuda timeout "$san_timeout" compute-sanitizer --tool "$tool" \
        --error-exitcode 99 "$p" "${filter[@]}" >"$log" 2>&1
      rc=$?
      summ=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
      if [ "$rc" = 124 ]; then
        # cut short: what ran is in the log; errors found so far are still errors
        errs=$(grep -c "^========= \(Invalid\|Race\|Error\)" "$log" || true)
        note "compute-sanitizer $tool $name: INCOMPLETE (${san_timeout} s), $errs errors so far"
        [ "$errs" != 0 ] && status=1
      else
        note "compute-sanitizer $tool $name: rc=$rc ${summ:-}"
        if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then status=1; fi
      fi
    done
  done
fi

# the benchmark (table + log in bench.md, rows in bench.csv and bench.json)
if [ "$bench" = 1 ] && [ ${#bench_cmd[@]} -gt 0 ]; then
  t0=$(date +%s)
  # shellcheck disable=SC2086
  { echo '```'; echo "${bench_cmd[*]} $bench_args"; echo '```'; } >"$out/bench.md"
  # shellcheck disable=SC2086
  timeout "${BENCH_TIMEOUT:-0}" "${bench_cmd[@]}" $bench_args >"$out/bench_table.md" \
    2>"$logs/bench_stderr.log" || status=1
  cat "$out/bench_table.md" >>"$out/bench.md"
  { echo; echo '```'; cat "$logs/bench_stderr.log"; echo '```'; } >>"$out/bench.md"
  rm -f "$out/bench_table.md"
  if [ "$large" = 1 ]; then
    large_args="--sizes large --precision double,mixed --no-transpose --reps 20"
    large_args+=" --csv $out/bench_large.csv --json $out/bench_large.json"
    { echo; echo '```'; echo "${bench_cmd[*]} $large_args"; echo '```'; } >>"$out/bench.md"
    # shellcheck disable=SC2086
    timeout "${BENCH_TIMEOUT:-0}" "${bench_cmd[@]}" $large_args >"$out/bench_table.md" \
      2>"$logs/bench_large_stderr.log" || status=1
    cat "$out/bench_table.md" >>"$out/bench.md"
    { echo; echo '```'; cat "$logs/bench_large_stderr.log"; echo '```'; } >>"$out/bench.md"
    rm -f "$out/bench_table.md"
  fi
  note "bench: $(($(date +%s) - t0)) s, $(grep -c FAILED "$out/bench.md" || true) FAILED rows"
fi

tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"
note "gpu-check status: $status"
exit $status
