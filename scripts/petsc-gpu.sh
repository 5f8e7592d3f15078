#!/usr/bin/env bash
# The PETSc plugin on the GPU machine, end to end:
#   1. build PETSc 3.18 (CPU, MPI) from the tarball in .tools/ into $PETSC_PREFIX [/tmp/petsc]
#      (scripts/petsc-build.sh, ~90 s on 16 cores; skipped when it is already there);
#   2. configure heptane with that PETSc (PETSC_DIR and PKG_CONFIG_PATH) and the CUDA back end,
#      build the plugin (libheptane_petsc.so) and the reservoir example;
#   3. run the example at >= 10^6 cells (128 x 128 x 64 by default) with PETSc's bcgs on 16 MPI
#      ranks (CPU; -pc_type bjacobi, ILU(0) on each rank's block) and with heptane's hbcgs on
#      the GPU (-heptane_device gpu; -pc_type ilu, which is multi-colour ILU(0)/BILU(0) there,
#      and pbjacobi; HEPTANE_PCS="ilu:natural" adds the level-scheduled natural ILU(0)), and print both solve
#      times side by side (scripts/petsc-compare.sh). The plugin itself runs on one MPI rank.
# Logs (PETSc build, configure, build, every run, summary.txt) go to $OUT when it is set.
#
#   scripts/petsc-gpu.sh
#   DEVICE=cpu GRID="-nx 24 -ny 24 -nz 12" NP=2 scripts/petsc-gpu.sh    # the CPU path, small
#
# Environment [defaults]: PETSC_PREFIX [/tmp/petsc], PETSC_TARBALL [.tools/petsc-3.18.5.tar.xz],
#   BUILD_DIR [/tmp/build-heptane-petsc], GRID [-nx 128 -ny 128 -nz 64], STEPS [-steps 2 -newton 2],
#   NP [16] ranks for PETSc, PETSC_PCS [bjacobi], HEPTANE_PCS [pbjacobi ilu], DEVICE [gpu] (cpu:
#   heptane's CPU back end, built without CUDA), RTOL [1e-6: issue #4's tolerance], JOBS [nproc], HEPTANE_CMAKE_ARGS,
#   PREBUILT [0; 1: BUILD_DIR already has the plugin and the example, configure nothing].
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=${PETSC_PREFIX:-/tmp/petsc}
tarball=${PETSC_TARBALL:-$root/.tools/petsc-3.18.5.tar.xz}
build=${BUILD_DIR:-/tmp/build-heptane-petsc}
logdir=${OUT:-/tmp/petsc-gpu-logs}
grid=${GRID:--nx 128 -ny 128 -nz 64}
steps=${STEPS:--steps 2 -newton 2}
np=${NP:-16}
device=${DEVICE:-gpu}
jobs=${JOBS:-$(nproc)}
mkdir -p "$logdir"
say() { echo "petsc-gpu: $*" | tee -a "$logdir/petsc-gpu.log" >&2; }
fail() {
  say "FAILED: $1"
  [ -n "${2:-}" ] && tail -n 40 "$2" >&2
  exit 1
}

# ---- 1. PETSc -----------------------------------------------------------------------------
if [ -f "$prefix/lib/pkgconfig/PETSc.pc" ] || [ -f "$prefix/lib/pkgconfig/petsc.pc" ]; then
  say "PETSc found in $prefix"
else
  command -v mpicc >/dev/null || fail "no mpicc: PETSc needs an MPI (e.g. OpenMPI) and a C compiler"
  [ -f "$tarball" ] || fail "no PETSc tarball at $tarball"
  say "building PETSc from $tarball into $prefix (log: $logdir/petsc-build.log)"
  t0=$SECONDS
  work=$(mktemp -d /tmp/petsc-build.XXXXXX)
  PETSC_BUILD_DIR=$work bash "$root/scripts/petsc-build.sh" "$tarball" "$prefix" \
    >"$logdir/petsc-build.log" 2>&1 || fail "PETSc build" "$logdir/petsc-build.log"
  rm -rf "$work"
  say "PETSc built in $((SECONDS - t0)) s"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- 2. heptane, the plugin and the example ------------------------------------------------
cuda_args=()
if [ "$device" = cpu ]; then
  cuda_args=(-DHEPTANE_WITH_CUDA=OFF)
else
  command -v nvidia-smi >/dev/null && nvidia-smi -L | tee -a "$logdir/petsc-gpu.log" >&2 || true
fi
if [ "${PREBUILT:-0}" = 1 ]; then
  # a build of the caller's (scripts/one-gpu.sh) that has the plugin and the example
  [ -f "$build/lib/libheptane_petsc.so" ] && [ -x "$build/examples/reservoir" ] ||
    fail "PREBUILT=1 but $build has no lib/libheptane_petsc.so or examples/reservoir"
  say "using the build in $build (PREBUILT=1)"
else
  say "configuring heptane in $build with PETSC_DIR=$prefix"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPETSC_DIR="$prefix" \
    -DHEPTANE_BUILD_TESTS=OFF -DHEPTANE_BUILD_EXAMPLES=ON "${cuda_args[@]}" ${HEPTANE_CMAKE_ARGS:-} \
    >"$logdir/configure.log" 2>&1 || fail "configure" "$logdir/configure.log"
  grep "heptane:" "$logdir/configure.log" | tee -a "$logdir/petsc-gpu.log" >&2 || true
  grep -q "PETSc plugin ON" "$logdir/configure.log" || fail "the PETSc plugin is OFF (see $logdir/configure.log)"
  if [ "$device" != cpu ]; then
    grep -q "CUDA back end ON" "$logdir/configure.log" || fail "no CUDA back end (nvcc not found?); DEVICE=cpu runs the CPU path"
  fi
  say "building the plugin and the example (-j $jobs)"
  t0=$SECONDS
  cmake --build "$build" --target heptane_petsc reservoir -j "$jobs" >"$logdir/build.log" 2>&1 ||
    fail "build" "$logdir/build.log"
  say "built in $((SECONDS - t0)) s: $build/lib/libheptane_petsc.so, $build/examples/reservoir"
fi

# ---- 3. the runs -----------------------------------------------------------------------------
say "running: reservoir $grid $steps; PETSc bcgs on $np ranks vs heptane hbcgs on $device"
BUILD_DIR=$build EXAMPLE_ARGS="$grid $steps" RTOL=${RTOL:-1e-6} PETSC_NP=$np \
  PETSC_PCS="${PETSC_PCS:-bjacobi}" HEPTANE_PCS="${HEPTANE_PCS:-pbjacobi ilu}" \
  HEPTANE_OPTS="-heptane_device $device -ksp_view ${HEPTANE_OPTS:-}" VIA_ENV=${VIA_ENV:-0} \
  LOG_DIR="$logdir" bash "$root/scripts/petsc-compare.sh"
say "logs in $logdir"
