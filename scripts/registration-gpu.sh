#!/usr/bin/env bash
# One device call (scripts/registration-gpu.sh; `OUT=$OUT bash scripts/registration-gpu.sh`,
# carry .tools/petsc-3.18.5.tar.xz and .tools/data): PETSc 3.18.5 and heptane (CUDA, the plugin,
# examples/reservoir) built there; the registration's tests first (test_pinned_upload_gpu,
# test_sched_probe, test_cuda_spmv_gpu, the plugin's AIJ/BAIJ registration and hcpr GPU tests);
# then the coupled example (128 x 128 x 64, Nc 3, 4 solves): -heptane_register_after 1 (the
# build marks PETSc's array, the first solve registers it, the first refresh reads it) against
# the default 2, hcpr's defaults and the box pressure stage, and runs that copy at every refresh
# (-heptane_register_after 0) with HEPTANE_UPLOAD_SCHEDSTAT=1 (who ran while a host copy ran);
# the plugin's other GPU tests with the time left. CAP (seconds, default 560) bounds the script;
# $OUT/summary.txt and $OUT/logs.tar.gz hold the results.
# PLAN=team (s54) runs instead, after the same build and tests (test_worker_pool and the pool
# variant of test_pinned_upload added): the copies at every refresh (-heptane_register_after 0,
# HEPTANE_UPLOAD_SCHEDSTAT=1) on the OpenMP team (the default) and on the upload's pool
# (HEPTANE_UPLOAD_TEAM=pool), quiet and beside HOG busy-loop processes (one more thread wanting
# a CPU than the machine has, as the slow runs had), with OpenBLAS on one thread
# (OPENBLAS_NUM_THREADS=1: its threads spin yielding after PETSc's vector operations), then
# hcpr's defaults the same ways.
# shellcheck disable=SC2086  # the PETSc options ($hcpr, $box, ...) are words on purpose
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh || exit 1
out=${OUT:-/tmp/out}
build="build-gpu"
prefix=/tmp/petsc
export out  # read by gpu-common.sh's helpers
export PATH=/usr/local/cuda/bin:$PATH
gpu_init
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cap=${CAP:-560}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | tee -a "$summary"
note "tree $(git log --oneline -1 | cut -c1-60); status: $(git status --short | wc -l) changed; nproc $(nproc); affinity $(taskset -pc $$ 2>/dev/null | sed 's/.*: //')"
cfg=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DPETSC_DIR="$prefix" -DHEPTANE_BUILD_EXAMPLES=ON -DHEPTANE_TEST_DATA_DIR="$root/.tools/data")
(cmake -S . -B $build "${cfg[@]}" > "$logs/cfg1.log" 2>&1 && cmake --build $build -j 11 --target heptane heptane_cli > "$logs/lib.log" 2>&1) &
lib=$!
if ! [ -f "$prefix/lib/pkgconfig/PETSc.pc" ]; then
  (PETSC_BUILD_DIR=$(mktemp -d) JOBS=5 bash scripts/petsc-build.sh .tools/petsc-3.18.5.tar.xz $prefix > "$logs/petsc-build.log" 2>&1) || { note "PETSc build failed"; tail -5 "$logs/petsc-build.log"; }
fi
note "petsc at $(el) s"
wait $lib; note "lib rc=$? at $(el) s"; grep -E "error" "$logs/lib.log" | head -20 | tee -a "$summary"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmake -S . -B $build "${cfg[@]}" > "$logs/configure.log" 2>&1 || { note "configure FAILED"; tail -30 "$logs/configure.log"; finish 1; }
grep -E "heptane: (MPI|CUDA|PETSc)" "$logs/configure.log" | tee -a "$summary"
cmake --build $build -j 16 --target heptane_petsc reservoir petsc_solve plugin_host test_pinned_upload test_cuda_spmv test_sched_probe test_worker_pool > "$logs/build.log" 2>&1 || { note "build FAILED"; grep -E "error" "$logs/build.log" | head -40 | tee -a "$summary"; finish 1; }
note "built $(el) s"
(cd "$build" && ctest -R "^test_pinned_upload_gpu$|^test_pinned_upload_pool_gpu$|^test_worker_pool$|^test_cuda_spmv_gpu$|^test_sched_probe$|plugin_host_gpu_aij_values|plugin_host_gpu_baij|hcpr.*gpu|gpu.*hcpr" --output-on-failure --timeout 200 -j 4 > "$logs/ctest-first.log" 2>&1) || status=1
note "first tests: $(grep -E 'tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped|Not Run' "$logs/ctest-first.log" | tr '\n' ' ') $(el) s"
ex=$build/examples/reservoir; plugin=$(readlink -f "$build/lib/libheptane_petsc.so")
TIMEV=; [ -x /usr/bin/time ] && TIMEV="/usr/bin/time -o $logs/time.txt -f %e_s_%c_invol_%w_vol_%P_cpu"
steal() { awk '/^cpu /{print $2+$3+$4, $5, $9}' /proc/stat; }  # busy, idle, steal (jiffies)
run_ex() {  # name options...
  local name=$1; shift
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active --format=csv,noheader -lms 100 > "$logs/smi-$name.csv" 2>&1 &
  local smi=$! s0 hogs=() h; s0=$(steal)
  for ((h = 0; h < ${HOG:-0}; h++)); do sh -c 'while :; do :; done' & hogs+=($!); done
  $TIMEV timeout 60 "$ex" -nx 128 -ny 128 -nz 64 ${EXARGS:--steps 2 -newton 2} -system ${SYS:-coupled} -dll_append "$plugin" \
    -ksp_rtol 1e-6 -heptane_device gpu -ksp_view -log_view "$@" > "$logs/ex-$name.log" 2>&1
  local rc=$? s1; s1=$(steal)
  [ ${#hogs[@]} -gt 0 ] && { kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null; }
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  note "ex $name rc=$rc $(el) s: $(grep -o 'solve time [0-9.]* s' "$logs/ex-$name.log") | its $(grep -E 'solve [0-9.]+ s' "$logs/ex-$name.log" | sed 's/.*its *\([0-9]*\).*/\1/' | tr '\n' ' ')"
  note "   solves $(grep -o 'heptane last solve: [0-9.]* ms' "$logs/ex-$name.log" | sed 's/heptane last solve: //' | tr '\n' ' ') | refresh $(grep -o 'values refreshed in [0-9.]* ms' "$logs/ex-$name.log" | sed 's/values refreshed in //' | tr '\n' ' ') | KSPSetUp/KSPSolve $(grep -E '^KSPSetUp|^KSPSolve' "$logs/ex-$name.log" | awk '{print $1, $4}' | tr '\n' ' ')"
  note "   background: $(grep -o 'on a background thread since the solve before, [0-9.]* ms, of which this refresh waited [0-9.]* ms' "$logs/ex-$name.log" | tr '\n' '|') registered reads $(grep -c 'straight from PETSc' "$logs/ex-$name.log")"
  note "   copies: $(grep -o 'host copies into the pinned buffers [0-9.]* ms ([^)]*)' "$logs/ex-$name.log" | sed 's/host copies into the pinned buffers //' | tr '\n' '|' | cut -c1-600)"
  grep -o 'host copies into the pinned buffers [0-9.]* ms ([^;]*; [^;]*; HEPTANE_UPLOAD_SCHEDSTAT: .*the snapshots took [0-9.]* ms more)' "$logs/ex-$name.log" | sed 's/host copies into the pinned buffers /   sched: /' | tee -a "$summary"
  note "   cpr: $(grep -o 'setup [0-9.]* ms (A_p[^)]*)[^)]*)' "$logs/ex-$name.log" | tail -1)"
  note "   smi: $(awk -F', ' '{sm=$2+0; if(min==""||sm<min)min=sm; if(sm>max)max=sm; t=$5+0; if(t>tm)tm=t; r[$7]++} END{printf "sm %s-%s MHz, temp max %s C, reasons", min, max, tm; for(k in r) printf " %s:%d", k, r[k]}' "$logs/smi-$name.csv") | cpu busy/idle/steal $s0 -> $s1 | $( [ -n "$TIMEV" ] && cat $logs/time.txt) | load $(cut -d' ' -f1-3 /proc/loadavg)"
}
hcpr="-ksp_type hbcgs -pc_type hcpr"
box="-heptane_amg_aggregation box -heptane_amg_p_weight 0"
left() { echo $(( cap - $(el) )); }
maybe() { if [ "$(left)" -gt 25 ]; then run_ex "$@"; else note "no time for $1"; fi; }
sched() {  # the scheduler's account of every host copy: register_after 0 copies at every refresh
  export HEPTANE_UPLOAD_SCHEDSTAT=1
  maybe sched-reg0-r$1 $hcpr -heptane_register_after 0
  unset HEPTANE_UPLOAD_SCHEDSTAT
}
if [ "${PLAN:-registration}" = team ]; then
  team() {  # name team hog: the copies at every refresh, with their scheduler account
    export HEPTANE_UPLOAD_SCHEDSTAT=1 HEPTANE_UPLOAD_TEAM=$2  # openmp: the default
    HOG=$3 maybe "$1" $hcpr -heptane_register_after 0
    unset HEPTANE_UPLOAD_SCHEDSTAT HEPTANE_UPLOAD_TEAM
  }
  note "BLAS: $(ldconfig -p | grep -E 'libblas.so.3 |libopenblas' | head -3 | tr '\n' ' ') -> $(readlink -f /lib/x86_64-linux-gnu/libblas.so.3 2>&1)"
  team quiet-openmp-r1 openmp 0
  OPENBLAS_NUM_THREADS=1 team quiet-openmp-blas1-r1 openmp 0
  team quiet-pool-r1 pool 0
  OPENBLAS_NUM_THREADS=1 team quiet-pool-blas1-r1 pool 0
  team hog1-openmp-r1 openmp 1
  team hog1-pool-r1 pool 1
  OPENBLAS_NUM_THREADS=1 team hog1-pool-blas1-r1 pool 1
  maybe hcpr-openmp-r1 $hcpr
  OPENBLAS_NUM_THREADS=1 maybe hcpr-openmp-blas1-r1 $hcpr
  HEPTANE_UPLOAD_TEAM=pool OPENBLAS_NUM_THREADS=1 maybe hcpr-pool-blas1-r1 $hcpr
  maybe hcpr-openmp-r2 $hcpr
  OPENBLAS_NUM_THREADS=1 maybe hcpr-openmp-blas1-r2 $hcpr
  HEPTANE_UPLOAD_TEAM=pool OPENBLAS_NUM_THREADS=1 maybe hcpr-pool-blas1-r2 $hcpr
  note "team runs done $(el) s"
  PLAN_DONE=1
fi
[ -n "${PLAN_DONE:-}" ] || {
maybe hcpr-reg1-r1 $hcpr -heptane_register_after 1
maybe hcpr-reg2-r1 $hcpr
sched 1
maybe hcpr-reg1-r2 $hcpr -heptane_register_after 1
maybe hcpr-box-reg1-r1 $hcpr $box -heptane_register_after 1
maybe hcpr-reg2-r2 $hcpr
sched 2
maybe hcpr-reg1-r3 $hcpr -heptane_register_after 1
maybe hcpr-box-reg1-r2 $hcpr $box -heptane_register_after 1
sched 3
note "coupled examples done $(el) s"
}
left=$(( cap - $(el) ))
if [ "$left" -gt 60 ]; then
  (cd "$build" && timeout $(( left - 15 )) ctest -L gpu -R plugin -E "plugin_host_gpu_aij_values|plugin_host_gpu_baij|hcpr" --timeout 120 -j 4 > "$logs/ctest-plugin.log" 2>&1) || status=1
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped|Not Run" "$logs/ctest-plugin.log" | tee -a "$summary"
  note "plugin ctest done $(el) s"
fi
finish "$status"
