#!/usr/bin/env bash
# The PETSc plugin across MPI ranks with one GPU per rank (issue #7, part 5), on the
# multi-GPU machine: build PETSc 3.18 (CPU, MPI) from .tools/ (as scripts/petsc-gpu.sh does),
# heptane with CUDA + MPI + the plugin and the reservoir example, then for P = 2 and 4 (up to
# the GPU count) run the example under mpirun twice -- with PETSc's bcgs and with heptane's
# hbcgs on the GPUs (-heptane_device gpu) -- and compare the numbers it prints
# (tests/plugin_compare.py: solution norms, sums, Newton residuals); then time hbcgs on
# 1, 2, 4 GPUs on a larger grid.
#
#   OUT=/some/dir bash scripts/plugin-multi-gpu.sh
#
# Environment [defaults]: PETSC_PREFIX [/tmp/petsc], PETSC_TARBALL [.tools/petsc-3.18.5.tar.xz],
#   BUILD_DIR [/tmp/build-heptane-petsc-mgpu], CHECK_GRID [-nx 32 -ny 24 -nz 16],
#   TIME_GRID [-nx 128 -ny 128 -nz 64], JOBS [nproc], RUN_TIMEOUT [300 s per run],
#   RUNS [all: build, compare and time | build: build only | compare: no timings],
#   PREBUILT [0; 1: BUILD_DIR already holds libheptane_petsc.so and the example, built against
#   PETSC_PREFIX -- what scripts/multi-gpu.sh --plugin does],
#   DEVICE [gpu | cpu: heptane's CPU back end on CPU ranks, built without CUDA -- to check the
#   script itself on a machine without GPUs], NPS [2 4: the rank counts, at most the GPU count].
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
prefix=${PETSC_PREFIX:-/tmp/petsc}
tarball=${PETSC_TARBALL:-$root/.tools/petsc-3.18.5.tar.xz}
build=${BUILD_DIR:-/tmp/build-heptane-petsc-mgpu}
out=${OUT:-/tmp/plugin-multi-gpu}
jobs=${JOBS:-$(nproc)}
tmo=${RUN_TIMEOUT:-300}
mkdir -p "$out"
log=$out/plugin-multi-gpu.txt
say() { echo "plugin-multi-gpu: $*" | tee -a "$log"; }
export NCCL_NVLS_ENABLE=0 CUDA_MODULE_LOADING=EAGER OMP_NUM_THREADS=1
device=${DEVICE:-gpu}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$device" = cpu ] && gpus=1024  # CPU ranks: no limit
say "$(date -u +%FT%TZ), device $device, $gpus GPUs"

if ! [ -f "$prefix/lib/pkgconfig/PETSc.pc" ] && ! [ -f "$prefix/lib/pkgconfig/petsc.pc" ]; then
  t0=$SECONDS
  work=$(mktemp -d /tmp/petsc-build.XXXXXX)
  PETSC_BUILD_DIR=$work bash "$root/scripts/petsc-build.sh" "$tarball" "$prefix" \
    >"$out/petsc-build.log" 2>&1 || { say "PETSc build FAILED"; tail -20 "$out/petsc-build.log"; exit 1; }
  rm -rf "$work"
  say "PETSc built in $((SECONDS - t0)) s"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
t0=$SECONDS
if [ "${PREBUILT:-0}" = 1 ]; then  # BUILD_DIR already has the plugin and the example (multi-gpu.sh --plugin)
  say "using the build in $build"
else
  cuda_args=(-DCMAKE_CUDA_ARCHITECTURES=90)
  [ "$device" = cpu ] && cuda_args=(-DHEPTANE_WITH_CUDA=OFF)
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPETSC_DIR="$prefix" "${cuda_args[@]}" \
    -DHEPTANE_BUILD_TESTS=OFF -DHEPTANE_BUILD_EXAMPLES=ON \
    >"$out/configure.log" 2>&1 || { say "configure FAILED"; tail -20 "$out/configure.log"; exit 1; }
  grep "heptane:" "$out/configure.log" | tee -a "$log"
  cmake --build "$build" --target heptane_petsc reservoir -j "$jobs" >"$out/build.log" 2>&1 ||
    { say "build FAILED"; grep -E "error" "$out/build.log" | head -20 | tee -a "$log"; exit 1; }
  say "heptane + plugin built in $((SECONDS - t0)) s"
fi
[ "${RUNS:-all}" = build ] && exit 0
plugin=$build/lib/libheptane_petsc.so
exe=$build/examples/reservoir
[ -f "$plugin" ] || plugin=$(find "$build" -name libheptane_petsc.so | head -1)
[ -x "$exe" ] || exe=$(find "$build" -name reservoir -type f -perm -u+x | head -1)
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x CUDA_MODULE_LOADING
  -x OMP_NUM_THREADS -x LD_LIBRARY_PATH)
status=0

# ---- answers: heptane on P GPUs against PETSc's bcgs on the same P ranks ---------------------
check_grid=${CHECK_GRID:--nx 32 -ny 24 -nz 16}
where=cuda:
[ "$device" = cpu ] && where="on cpu"
for np in ${NPS:-2 4}; do
  [ "$np" -le "$gpus" ] || continue
  # shellcheck disable=SC2086
  if timeout "$tmo" python3 "$root/tests/plugin_compare.py" --plugin "$plugin" \
    --mpiexec "${mpi[*]} -np $np" --ref "-ksp_type bcgs -ksp_pc_side right" \
    --heptane "-ksp_type hbcgs -heptane_device $device -ksp_view" \
    --expect "$np MPI rank" --expect "coupled: ksp hbcgs" --expect "$where" --reject DIVERGED \
    -- "$exe" $check_grid -steps 2 -newton 2 -ksp_rtol 1e-10 >"$out/compare-np$np.log" 2>&1; then
    say "np=$np: hbcgs ($device) on $np ranks matches PETSc bcgs on $np ranks (tests/plugin_compare.py passed)"
  else
    say "np=$np: compare FAILED"; tail -30 "$out/compare-np$np.log" | tee -a "$log"; status=1
  fi
done

# ---- time: hbcgs on 1, 2, 4 GPUs, bcgs on 16 CPU ranks ----------------------------------------
[ "${RUNS:-all}" = compare ] && { say "exit $status"; exit $status; }
time_grid=${TIME_GRID:--nx 128 -ny 128 -nz 64}
# What a run of the example costs: the sum of the solve times it prints (KSPSetUp + KSPSolve
# of each linear solve, wall clock, rank 0: what the simulator waits for), then -log_view's
# KSPSetUp and KSPSolve (max over ranks). heptane builds its operator and preconditioner in
# KSPSetUp, so KSPSolve alone leaves out its setup.
times_of() {
  awk '/ solve [0-9.e+-]+ s$/ { t += $(NF - 1); n++ }
       /^KSPSetUp / { su = $4 } /^KSPSolve / { so = $4 }
       END { printf "%d solves, %.3f s (setup included); KSPSetUp %s s, KSPSolve %s s", n, t, su, so }' "$1"
}
for np in 1 ${NPS:-2 4}; do
  [ "$np" -le "$gpus" ] || continue
  # shellcheck disable=SC2086
  timeout "$tmo" "${mpi[@]}" -np "$np" "$exe" $time_grid -steps 1 -newton 2 -ksp_rtol 1e-6 \
    -dll_append "$plugin" -ksp_type hbcgs -pc_type pbjacobi -heptane_device "$device" -log_view \
    >"$out/time-hbcgs-$device-np$np.log" 2>&1 || { say "hbcgs np=$np FAILED"; status=1; }
  say "hbcgs pbjacobi ($device) on $np rank(s): $(times_of "$out/time-hbcgs-$device-np$np.log")"
done
# shellcheck disable=SC2086
timeout "$tmo" "${mpi[@]}" -np 16 "$exe" $time_grid -steps 1 -newton 2 -ksp_rtol 1e-6 -z_split_only 0 \
  -ksp_type bcgs -pc_type bjacobi -log_view >"$out/time-bcgs-cpu-np16.log" 2>&1 || say "bcgs np=16 FAILED"
say "PETSc bcgs bjacobi/ILU(0) on 16 CPU ranks: $(times_of "$out/time-bcgs-cpu-np16.log")"
say "exit $status"
exit $status
