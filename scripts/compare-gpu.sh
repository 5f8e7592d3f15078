#!/usr/bin/env bash
# Before and after a change that must not change behaviour or speed (a refactoring): build the
# tree before it (a `git archive` tarball, e.g. in .tools/, carried) and the tree as it is
# (kept when ${BUILD_DIR:-build-gpu} is already built, e.g. by scripts/one-gpu.sh in the call
# before), then run the same benchmarks with both binaries in one run, alternating, so the
# figures compare on one machine.
#
#   OUT=/some/dir OLD=.tools/old-COMMIT.tgz bash scripts/compare-gpu.sh
#
# Environment: SPMV_ARGS [--sizes thesis --formats bdia,csr,ell,hyb --precision double
#   --no-transpose --reps 20], SOLVE_ARGS [--sizes thesis --formats bdiagh,csr --impl fused
#   --reps 3], ROUNDS [2]. Output in $OUT: summary.txt, csv.tar.gz (spmv-{old,new}-N.csv,
#   solve-{old,new}-N.csv), logs.tar.gz (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-$PWD/compare-gpu-out}
old=${OLD:?OLD=tarball of the tree before the change}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
rounds=${ROUNDS:-2}
spmv_args=${SPMV_ARGS:---sizes thesis --formats bdia,csr,ell,hyb --precision double --no-transpose --reps 20}
solve_args=${SOLVE_ARGS:---sizes thesis --formats bdiagh,csr --impl fused --reps 3}
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out/logs" "$out/csv"
logs=$out/logs
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
note "compare-gpu $(date -u +%FT%TZ), before: $old"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"

src=/tmp/compare-old-src
rm -rf "$src" && mkdir -p "$src" && tar xzf "$old" -C "$src" || { note "cannot unpack $old"; exit 1; }
t0=$(date +%s)
cmake -S "$src" -B /tmp/compare-old-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DHEPTANE_WITH_PETSC=OFF -DHEPTANE_BUILD_TESTS=OFF -DHEPTANE_BUILD_EXAMPLES=OFF \
  >"$logs/old-configure.log" 2>&1 &&
  cmake --build /tmp/compare-old-build -j "$jobs" --target heptane_cli >"$logs/old-build.log" 2>&1 ||
  { note "old build FAILED"; tail -20 "$logs/old-build.log" | tee -a "$summary"; exit 1; }
if ! [ -x "$build/apps/heptane" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DHEPTANE_WITH_PETSC=OFF >"$logs/new-configure.log" 2>&1 &&
    cmake --build "$build" -j "$jobs" --target heptane_cli >"$logs/new-build.log" 2>&1 ||
    { note "new build FAILED"; tail -20 "$logs/new-build.log" | tee -a "$summary"; exit 1; }
fi
note "builds: $(($(date +%s) - t0)) s"
declare -A bin=([old]=/tmp/compare-old-build/apps/heptane [new]=$build/apps/heptane)
status=0
for r in $(seq 1 "$rounds"); do
  for w in old new; do
    t0=$(date +%s)
    # shellcheck disable=SC2086
    "${bin[$w]}" bench spmv $spmv_args --csv "$out/csv/spmv-$w-$r.csv" >"$logs/spmv-$w-$r.txt" 2>&1 ||
      { note "bench spmv ($w, round $r) FAILED"; status=1; }
    # shellcheck disable=SC2086
    "${bin[$w]}" bench solve $solve_args --device gpu --csv "$out/csv/solve-$w-$r.csv" \
      >"$logs/solve-$w-$r.txt" 2>&1 || { note "bench solve ($w, round $r) FAILED"; status=1; }
    note "round $r $w: $(($(date +%s) - t0)) s"
  done
done
tar czf "$out/logs.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$logs"
tar czf "$out/csv.tar.gz" -C "$out" csv 2>/dev/null && rm -rf "$out/csv"
note "status $status"
exit "$status"
