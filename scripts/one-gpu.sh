#!/usr/bin/env bash
# One-GPU check of issue #4's work in one device call (the H100 of the device tool): build
# PETSc 3.18 (CPU, MPI) from .tools/ (carry .tools; ~90 s, skipped when PETSC_PREFIX has it),
# build heptane once with CUDA (sm_90), the PETSc plugin, the reservoir example and the tests,
# run every GPU test (ctest -L gpu) and the plugin tests, then optionally
# `heptane bench solve` (BiCGStab per iteration on the thesis systems) and the plugin against
# PETSc on all cores (scripts/petsc-gpu.sh on the same build).
#
#   OUT=/some/dir bash scripts/one-gpu.sh [--no-tests] [--bench-solve] [--petsc]
#
# Environment: BUILD_DIR [build-gpu], JOBS [nproc], CUDA_ARCH [90], PETSC_PREFIX [/tmp/petsc],
#   TESTS_REGEX (ctest -R on top of the labels; default all gpu and plugin tests),
#   BENCH_ARGS [--sizes thesis --formats bdiagh,csr --impl fused,reference --reps 3],
#   HEPTANE_PCS [pbjacobi pbjacobi+mixed] for the PETSc comparison (see petsc-compare.sh),
#   PETSC_REPEATS [1]: the whole comparison (PETSc and heptane) that many times.
# Output in $OUT (at most 8 files): summary.txt, logs.tar.gz, solve.md/solve.csv/solve.json
# (--bench-solve), petsc.txt (--petsc).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
# shellcheck source=scripts/gpu-common.sh
. "$root/scripts/gpu-common.sh" || exit 1
out=${OUT:-$root/one-gpu-out}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
arch=${CUDA_ARCH:-90}
prefix=${PETSC_PREFIX:-/tmp/petsc}
export PATH=/usr/local/cuda/bin:$PATH
tests=1 bench_solve=0 petsc=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-tests) tests=0 ;;
    --bench-solve) bench_solve=1 ;;
    --petsc) petsc=1 ;;
    *) echo "one-gpu: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
gpu_init
note "one-gpu $(date -u +%FT%TZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"

# ---- PETSc ---------------------------------------------------------------------------------
gpu_petsc PETSc

# ---- heptane: library, CLI, tests, plugin, example ------------------------------------------
t0=$(date +%s)
gpu_cmake finish "$jobs" "heptane: (MPI|NCCL|CUDA|PETSc)" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DPETSC_DIR="$prefix" -DHEPTANE_BUILD_EXAMPLES=ON
note "configure + build: $(($(date +%s) - t0)) s (-j $jobs)"

# ---- tests -----------------------------------------------------------------------------------
if [ "$tests" = 1 ]; then
  t0=$(date +%s)
  regex=${TESTS_REGEX:-.}
  (cd "$build" && ctest -L "gpu|plugin" -R "$regex" --output-on-failure --timeout "${TEST_TIMEOUT:-300}" -j 4) \
    >"$logs/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$logs/ctest.log" | tee -a "$summary"
  grep -cE "Passed" "$logs/ctest.log" | sed 's/^/passed lines: /' | tee -a "$summary"
  grep -E "Skipped" "$logs/ctest.log" | sed 's/^/  /' | tee -a "$summary"
  note "tests: $(($(date +%s) - t0)) s"
fi

# ---- BiCGStab per iteration ------------------------------------------------------------------
if [ "$bench_solve" = 1 ]; then
  t0=$(date +%s)
  # shellcheck disable=SC2086
  "$build/apps/heptane" bench solve ${BENCH_ARGS:---sizes thesis --formats bdiagh,csr --impl fused,reference --reps 3} \
    --device gpu --csv "$out/solve.csv" --json "$out/solve.json" >"$out/solve.md" 2>"$logs/bench-solve.err" || status=1
  note "bench solve: $(($(date +%s) - t0)) s"
  tail -n 14 "$out/solve.md" | tee -a "$summary"
fi

# ---- the plugin against PETSc on every core --------------------------------------------------
if [ "$petsc" = 1 ]; then
  : >"$out/petsc.txt"
  for rep in $(seq 1 "${PETSC_REPEATS:-1}"); do
    PREBUILT=1 BUILD_DIR=$build PETSC_PREFIX=$prefix OUT=$logs/petsc$rep \
      HEPTANE_PCS=${HEPTANE_PCS:-pbjacobi pbjacobi+mixed} bash scripts/petsc-gpu.sh >"$logs/petsc-gpu$rep.out" 2>&1 || status=1
    {
      echo "# comparison $rep of ${PETSC_REPEATS:-1}"
      cat "$logs/petsc$rep/summary.txt" 2>/dev/null
      echo "# where the heptane time goes (-ksp_view lines of each solve)"
      for f in "$logs/petsc$rep"/heptane-*.log; do
        [ -f "$f" ] || continue
        echo "## $(basename "$f")"
        grep -E "solve [0-9.]+ s |heptane last setup:|heptane device set-up|heptane last solve|the last upload" "$f" |
          sed -E 's/.*(the last upload: .*)/    \1/' | head -60
      done
    } >>"$out/petsc.txt"
    grep -E "^(pressure|coupled) " "$logs/petsc$rep/summary.txt" | tee -a "$summary"
  done
fi
note "status $status"
finish "$status"
