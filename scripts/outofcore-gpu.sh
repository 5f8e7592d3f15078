#!/usr/bin/env bash
# Issue #19 on one GPU in one or two device calls: build heptane with CUDA (no PETSc), run the
# out-of-core tests on the GPU (test_outofcore_gpu, cli_outofcore_gpu, and the MLEM/LSQR GPU
# tests the operator must not break), compute-sanitizer (memcheck, racecheck, synccheck) on
# test_outofcore_gpu, then the benchmarks:
#   spmv   heptane bench spmv --out-of-core: A x and A^T x per resident fraction against the
#          floor (streamed / pinned H2D + resident / device copy), fp64 and fp32 values
#   mlem8  heptane bench mlem --out-of-core on a 20-40 GB system with --device-memory 8G,
#          compared with MLEM with every chunk resident
#   mlem80 the same on a system larger than the GPU's memory (fp32 values), compared with
#          MLEM on the CPU over the same chunks
#
#   OUT=/some/dir STAGES="build tests sanitize spmv" bash scripts/outofcore-gpu.sh
#
# Environment: BUILD_DIR [build-gpu], JOBS [nproc], CUDA_ARCH [90], STAGES [build tests
#   sanitize spmv mlem8 mlem80], SPMV_ARGS, MLEM8_ARGS, MLEM80_ARGS (PET options and more).
# Output in $OUT: summary.txt, spmv.md/json, mlem8.md/json, mlem80.md/json, logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
out=${OUT:-$root/outofcore-gpu-out}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
arch=${CUDA_ARCH:-90}
stages=" ${STAGES:-build tests sanitize spmv mlem8 mlem80} "
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out/logs"
logs=$out/logs
summary=$out/summary.txt
touch "$summary"
note() { echo "$*" | tee -a "$summary"; }
has() { [[ "$stages" == *" $1 "* ]]; }
status=0
note "outofcore-gpu $(date -u +%FT%TZ) on $(hostname), tree $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes'), stages:$stages"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"
free -g | head -2 | tee -a "$summary"

if has build; then
  t0=$(date +%s)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    >"$logs/configure.log" 2>&1 || { note "configure FAILED"; tail -30 "$logs/configure.log"; exit 1; }
  cmake --build "$build" -j "$jobs" --target heptane_cli test_outofcore test_mlem test_lsqr \
    >"$logs/build.log" 2>&1 ||
    { note "build FAILED"; grep -E "error" "$logs/build.log" | head -40 | tee -a "$summary"; exit 1; }
  note "configure + build: $(($(date +%s) - t0)) s (-j $jobs)"
fi
heptane=$build/apps/heptane

if has tests; then
  t0=$(date +%s)
  (cd "$build" && ctest -L gpu -R "outofcore|test_mlem_gpu|test_lsqr_gpu" --output-on-failure \
    --timeout 300 -j 3) >"$logs/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|Skipped" "$logs/ctest.log" | tee -a "$summary"
  note "tests: $(($(date +%s) - t0)) s"
fi

if has sanitize; then
  t0=$(date +%s)
  for tool in memcheck racecheck synccheck; do
    # the pipeline's cases (buffers reused across products queued back to back, fp32 values);
    # every case under racecheck takes too long
    HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 3 \
      "$build/tests/test_outofcore" \
      --run_test=outofcore/products_queued_back_to_back_reuse_the_buffers_safely,fp32_and_mixed_values \
      >"$logs/sanitize-$tool.log" 2>&1
    rc=$?
    note "compute-sanitizer $tool test_outofcore: rc $rc, $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$logs/sanitize-$tool.log" | tail -1)"
    [ "$rc" = 0 ] || status=1
  done
  note "sanitize: $(($(date +%s) - t0)) s"
fi

bench() {  # name, bench args...
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  local rc=0
  "$heptane" bench "$@" --json "$out/$name.json" >"$out/$name.md" 2>"$logs/$name.err" || rc=$?
  [ "$rc" = 0 ] || status=1
  note "bench $name ($*): rc $rc, $(($(date +%s) - t0)) s"
  cat "$out/$name.md" | tee -a "$summary"
  tail -5 "$logs/$name.err" | tee -a "$summary"
}
# shellcheck disable=SC2086
has spmv && bench spmv spmv --out-of-core ${SPMV_ARGS:---rings 8 --precision double,mixed --reps 5}
# shellcheck disable=SC2086
has mlem8 && bench mlem8 mlem --out-of-core ${MLEM8_ARGS:---rings 16 --precision mixed --device-memory 8G --iters 5 --reference resident}
# shellcheck disable=SC2086
has mlem80 && bench mlem80 mlem --out-of-core ${MLEM80_ARGS:---rings 26 --precision mixed --iters 3 --reference cpu}
tar czf "$out/logs.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$logs"
exit $status
