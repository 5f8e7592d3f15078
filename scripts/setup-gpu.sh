#!/usr/bin/env bash
# Setup on the GPU in one device call (issues #17 and #22): build heptane with CUDA (no PETSc),
# run the GPU tests of the formats and solver layers (with the data folder when .data/ holds
# a copy of ../shared/data), memcheck of the device BDIA-GH build, then `heptane bench precond`
# with the BDIA-GH operator built on the device (default) and on the host (--operator-build
# host) on the channelized 1 M / 8.4 M and reservoir 1 M pressure systems, and the thesis
# protocol of `heptane bench solve` (setup + 5 iterations against the cuSPARSE reference), and
# the coupled reservoir system (Nc = 3, 1 M cells) with block Jacobi, ILU(0) and CPR.
#
#   OUT=/some/dir bash scripts/setup-gpu.sh [--no-tests] [--no-solve]
#
# Environment: BUILD_DIR [build-gpu], JOBS [nproc], CUDA_ARCH [90], TESTS_REGEX, SETUP_ONLY=1
# (stop after bench setup), QUICK=1 (no bench setup, no host-build or thesis runs: the
# pressure systems and the coupled one with the operator built on the device only), SANITIZE=0
# (no compute-sanitizer runs), ESTIMATE=1 (with QUICK: AMG with the λ estimate too),
# COMPARE_MALLOC=1 (the pressure systems again with HEPTANE_CUDA_MALLOC=sync).
# Output in $OUT: summary.txt, setup.*, precond-*.md/.csv/.json, solve-thesis.*, logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh || exit 1
out=${OUT:-$PWD/setup-gpu-out}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
export PATH=/usr/local/cuda/bin:$PATH
tests=1 solve=1
for a in "$@"; do
  case "$a" in
    --no-tests) tests=0 ;;
    --no-solve) solve=0 ;;
    *) echo "setup-gpu: unknown option $a" >&2; exit 2 ;;
  esac
done
gpu_init
note "setup-gpu $(date -u +%FT%TZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"
data_args=()
[ -d .data ] && data_args=(-DHEPTANE_TEST_DATA_DIR="$PWD/.data")
t0=$(date +%s)
gpu_cmake keep "$jobs" "" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DHEPTANE_WITH_PETSC=OFF \
  "${data_args[@]}"
note "configure + build: $(($(date +%s) - t0)) s"
if [ "$tests" = 1 ]; then
  gpu_ctest gpu "${TESTS_REGEX:-formats|amg|gmres|solver|precond}" 4
  if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$build/tests/test_formats" --run_test=bdia_built_on_the_executor_round_trips_and_matches_the_host_build \
      >"$logs/memcheck-bdia-build.log" 2>&1 || status=1
    note "memcheck bdia build: $(grep -E "ERROR SUMMARY|No errors|failure" "$logs/memcheck-bdia-build.log" | head -3 | tr '\n' ' ')"
    HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 \
      "$build/tests/test_formats" --run_test=bdia_built_on_the_executor_round_trips_and_matches_the_host_build \
      >"$logs/racecheck-bdia-build.log" 2>&1 || status=1
    note "racecheck bdia build: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|No errors|failure" "$logs/racecheck-bdia-build.log" | head -3 | tr '\n' ' ')"
    HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool synccheck --error-exitcode 9 \
      "$build/tests/test_formats" --run_test=bdia_built_on_the_executor_round_trips_and_matches_the_host_build \
      >"$logs/synccheck-bdia-build.log" 2>&1 || status=1
    note "synccheck bdia build: $(grep -E "ERROR SUMMARY|No errors|failure" "$logs/synccheck-bdia-build.log" | head -3 | tr '\n' ' ')"
    # the executor's stream-ordered pool and the staged copies both ways
    HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$build/tests/test_cuda_spmv" --run_test='executor_memory*,staged_*' \
      >"$logs/memcheck-pool-staging.log" 2>&1 || status=1
    note "memcheck pool + staging: $(grep -E "ERROR SUMMARY|No errors|failure|rror:" "$logs/memcheck-pool-staging.log" | head -3 | tr '\n' ' ')"
    # CPR's setup kernels, the pattern fingerprint and Gershgorin's bound (racecheck leaves out
    # cuSPARSE's SpGEMM kernels, library code it reports hazards in)
    for tool in memcheck racecheck; do
      excl=()
      [ "$tool" = racecheck ] && excl=(--kernel-name-exclude kns=cusparse)
      HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool $tool "${excl[@]}" --error-exitcode 9 \
        "$build/tests/test_amg" --run_test='cpr/cpr_kernels*,cpr_set_up*:amg_cycle/chebyshev*' \
        >"$logs/$tool-cpr-setup.log" 2>&1 || status=1
      note "$tool cpr setup: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|No errors|failure|rror:" "$logs/$tool-cpr-setup.log" | head -3 | tr '\n' ' ')"
    done
  fi
fi
h=$build/apps/heptane
quick=${QUICK:-0}
t=$(date +%s)
[ "$quick" = 1 ] || "$h" bench setup --device gpu --reps 5 \
  --generate 128x128x64x1:channelized,256x256x128x1:channelized,64x64x64x3:reservoir,16x16x32x8,32x128x64x8 \
  --csv "$out/setup.csv" --json "$out/setup.json" >"$out/setup.md" 2>"$logs/setup.err" || status=1
note "## bench setup ($(($(date +%s) - t)) s)"
grep -E "^\| " "$out/setup.md" | tee -a "$summary"
[ "${SETUP_ONLY:-0}" = 1 ] && { tar czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"; note "status $status"; exit "$status"; }
bench() {  # name, then bench precond arguments
  gpu_bench_precond "$@"
  grep -E "^\| " "$out/precond-$1.md" | grep -v "^| system\|^|---" | cut -c1-600 | tee -a "$summary"
}
wheres="device host"
[ "$quick" = 1 ] && wheres=device
for where in $wheres; do
  bench "pressure-$where" --generate 128x128x64x1:channelized,128x128x64x1:reservoir,128x128x28x1:channelized \
    --pcs jacobi,amg --solver cg --device gpu --reps 3 --operator-build "$where"
done
if [ "${COMPARE_MALLOC:-0}" = 1 ]; then  # plain cudaMalloc/cudaFree instead of the pool
  export HEPTANE_CUDA_MALLOC=sync
  bench pressure-sync-malloc \
    --generate 128x128x64x1:channelized,128x128x64x1:reservoir,128x128x28x1:channelized \
    --pcs jacobi,amg --solver cg --device gpu --reps 3
  unset HEPTANE_CUDA_MALLOC
fi
if [ "$quick" = 1 ] && [ "${ESTIMATE:-0}" = 1 ]; then  # the λ estimate beside Gershgorin's bound
  bench pressure-estimate --generate 128x128x64x1:channelized,128x128x64x1:reservoir,128x128x28x1:channelized \
    --pcs amg --solver cg --device gpu --reps 3 --amg-lambda-its 10
  bench pressure-8m-estimate --generate 256x256x128x1:channelized --pcs amg --solver cg --device gpu \
    --reps 2 --amg-lambda-its 10
fi
for where in $wheres; do
  bench "pressure-8m-$where" --generate 256x256x128x1:channelized --pcs jacobi,amg --solver cg \
    --device gpu --reps 2 --operator-build "$where"
done
bench coupled --generate 128x128x64x3:reservoir --pcs bjacobi,ilu0-mc,cpr --solver bicgstab \
  --device gpu --reps 2
if [ "$solve" = 1 ] && [ "$quick" != 1 ]; then
  t=$(date +%s)
  timeout 240 "$h" bench solve --sizes thesis --formats bdiagh --impl fused,reference --device gpu --reps 3 \
    --csv "$out/solve-thesis.csv" --json "$out/solve-thesis.json" >"$out/solve-thesis.md" 2>"$logs/solve-thesis.err" || status=1
  note "## bench solve thesis ($(($(date +%s) - t)) s)"
  grep -E "^\| " "$out/solve-thesis.md" | cut -c1-300 | tee -a "$summary"
fi
tar czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"
note "status $status"
exit "$status"
