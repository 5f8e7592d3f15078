#!/usr/bin/env bash
# PETSc 3.25.4 with CUDA against the plugin, in one device call (issue #18; the H100 of the
# device tool: carry .tools). Builds PETSc 3.25.4 with its CUDA back end from
# .tools/petsc-3.25.4.tar.xz, heptane with CUDA + the plugin + the reservoir example against it
# (the heptane library compiles while PETSc builds), runs `ctest -L plugin`, then measures PETSc's
# own GPU path (aijcusparse matrices, CUDA vectors) against the plugin on the same GPU, one MPI
# rank each:
#   - examples/reservoir (GRID, rtol RTOL), pressure and coupled systems: PETSc's bcgs with
#     jacobi, pbjacobi (coupled only: on the pressure system, Nc = 1, it is jacobi) and gamg
#     against the plugin's hbcgs with pbjacobi and hamg, and hcpr on the coupled system;
#   - PETSc's src/ksp/ksp/tutorials/ex45 (3-D Laplacian, EX45_N^3 grid), built from the tarball
#     against the install: bcgs + jacobi and bcgs + gamg on aijcusparse against the plugin's
#     hbcgs + jacobi and hbcgs + hamg (-dll_append);
#   - LOADED_GRIDS: the channelized pressure systems written by `heptane gen -o A.petsc` and
#     loaded by examples/petsc_solve (MatLoad; -solves 3, each from a new KSP: setup + solve):
#     PETSc 3.25's cg + gamg and cg + jacobi on aijcusparse, the plugin's hcg + hamg, `heptane
#     solve A.petsc --pc amg` (the CLI, same GPU) and, when .tools/petsc-3.18.5.tar.xz is there
#     (PETSC318=1), PETSc 3.18's cg + gamg on NP318 [16] CPU ranks (built in the background);
#   - COUPLED_VARIANTS, PRESSURE_VARIANTS: more plugin runs on the coupled / pressure system
#     (name:options;name:options...; leading VAR=value words set the run's environment).
# PETSc's runs use -ksp_pc_side right, so that both stop on ||b - A x|| <= rtol ||b|| (docs/petsc.md),
# and -dm_mat_type aijcusparse -dm_vec_type cuda: both programs make their matrix and vectors with
# DMCreateMatrix/DMCreateGlobalVector, which read the -dm_ options, not -mat_type/-vec_type. The
# plugin's runs keep PETSc's aij matrices on the host; heptane copies them to its GPU.
# Written without a GPU at hand: its CPU path was checked against a CPU build of 3.25.4 (below).
# Every run has -log_view; the summary has iterations, the KSPSolve, KSPSetUp and PCSetUp events
# (total time over the run's solves) and the run's wall time; the logs go to $OUT/logs.tar.gz.
#
#   OUT=/some/dir bash scripts/petsc325-gpu.sh
#
# Environment [defaults]: BUILD_DIR [build-petsc325-gpu], PETSC_PREFIX [/tmp/petsc325] (an
#   install there with lib/pkgconfig/PETSc.pc is used as it is), PETSC_CUDA [1], BUDGET [540]
#   (seconds for the whole script; each step gets what is left, runs that do not fit are
#   SKIPPED), GRID [-nx 128 -ny 128 -nz 64], STEPS [-steps 2 -newton 2], RTOL [1e-6], EX45_N
#   [128], MAX_IT [3000], RUN_CAP [60] (seconds per run at most), RUN_TESTS [1], CTEST_CAP [150],
#   COUPLED_HAMG [0] (1: hbcgs + hamg on the coupled system too), HEPTANE_DEVICE [gpu],
#   PETSC_GPU_OPTS [-dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0],
#   CMAKE_EXTRA [], JOBS [nproc], LOADED_GRIDS ["128x128x64 256x256x128"; "" for none],
#   PETSC318 [1 when its tarball is in .tools], NP318 [16], RESERVOIR [1], COUPLED [1] (0: the
#   reservoir's pressure system alone), EX45 [1],
#   LOADED_RUNS ["petsc318 petsc-gamg petsc-jacobi plugin cli-amg cli-jacobi": which runs],
#   COUPLED_VARIANTS [], PRESSURE_VARIANTS [] (the same on the pressure system), PLUGIN_DEVICE_VECS [1] (1: the plugin's jacobi/pbjacobi runs once more with
#   PETSC_GPU_OPTS, i.e. aijcusparse matrices and CUDA vectors, which heptane takes on the GPU
#   where they are: "-cudavecs-" in the run's name). (A CPU check of the script:
#   PETSC_PREFIX=<CPU install> PETSC_CUDA=0 HEPTANE_DEVICE=cpu PETSC_GPU_OPTS="-dm_mat_type aij"
#   CMAKE_EXTRA=-DHEPTANE_WITH_CUDA=OFF GRID=... EX45_N=...)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
t_start=$(date +%s)
budget=${BUDGET:-540}
out=${OUT:-$root/petsc325-gpu-out}
build=${BUILD_DIR:-build-petsc325-gpu}
prefix=${PETSC_PREFIX:-/tmp/petsc325}
grid=${GRID:--nx 128 -ny 128 -nz 64}
steps=${STEPS:--steps 2 -newton 2}
rtol=${RTOL:-1e-6}
ex45_n=${EX45_N:-128}
max_it=${MAX_IT:-3000}
run_cap=${RUN_CAP:-60}
device=${HEPTANE_DEVICE:-gpu}
gpu_opts=${PETSC_GPU_OPTS:--dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0}
device_vecs=${PLUGIN_DEVICE_VECS:-1}
jobs=${JOBS:-$(nproc)}
tarball=$root/.tools/petsc-3.25.4.tar.xz
loaded_grids=${LOADED_GRIDS-128x128x64 256x256x128}
loaded_runs=" ${LOADED_RUNS:-petsc318 petsc-gamg petsc-jacobi plugin cli-amg cli-jacobi} "
want() { [[ "$loaded_runs" == *" $1 "* ]]; }
tarball318=$root/.tools/petsc-3.18.5.tar.xz
petsc318=${PETSC318:-$([ -f "$tarball318" ] && echo 1 || echo 0)}
prefix318=${PETSC318_PREFIX:-/tmp/petsc318}
np318=${NP318:-16}
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out/logs"
logs=$out/logs
summary=$out/summary.txt
: >"$summary"
status=0
note() { echo "$*" | tee -a "$summary"; }
failed() { note "FAILED: $*"; status=1; }
elapsed() { echo $(($(date +%s) - t_start)); }
left() { echo $((budget - $(elapsed))); }
petscrc_made=0
finish() {
  [ "$petscrc_made" = 1 ] && rm -f "$HOME/.petscrc"
  note "status $status ($(elapsed) s in all)"
  tar czf "$out/logs.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$logs"
  exit "$status"
}
# at most min(cap, what is left - reserve) seconds; 0 when that is under 10 s
allow() { # cap reserve
  local l=$(($(left) - $2))
  [ "$l" -gt "$1" ] && l=$1
  [ "$l" -lt 10 ] && l=0
  echo "$l"
}

note "petsc325-gpu $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') (working tree: $(git status --porcelain 2>/dev/null | wc -l) changed files)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$summary"
command -v nvcc >/dev/null && nvcc --version | tail -1 | tee -a "$summary"
mpirun --version 2>/dev/null | head -1 | tee -a "$summary"
[ -f "$tarball" ] || { failed "$tarball not found (carry .tools)"; finish; }

# ---- 1. the heptane library (background) while PETSc builds ---------------------------------
read -ra cmake_extra <<<"${CMAKE_EXTRA:-}"
cmake_args=(-S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}"
  -DPETSC_DIR="$prefix" -DHEPTANE_BUILD_EXAMPLES=ON -DHEPTANE_BUILD_TESTS=ON "${cmake_extra[@]}")
(cmake "${cmake_args[@]}" && cmake --build "$build" -j "$jobs" --target heptane) >"$logs/lib-build.log" 2>&1 &
lib_pid=$!

# PETSc 3.18.5 on the CPU (background), for the loaded systems' 16-rank reference
p318_pid=""
if [ "$petsc318" = 1 ] && [ -n "$loaded_grids" ]; then
  if [ -f "$prefix318/lib/pkgconfig/PETSc.pc" ]; then
    note "PETSc 3.18: using the install in $prefix318"
  else
    (PETSC_BUILD_DIR=$(mktemp -d /tmp/petsc318-build.XXXXXX) timeout -k 10 400 \
      bash scripts/petsc-build.sh "$tarball318" "$prefix318") >"$logs/petsc318-build.log" 2>&1 &
    p318_pid=$!
  fi
fi

# ---- 2. PETSc 3.25.4 with CUDA -----------------------------------------------------------
if [ -f "$prefix/lib/pkgconfig/PETSc.pc" ] || [ -f "$prefix/lib/pkgconfig/petsc.pc" ]; then
  note "PETSc: using the install in $prefix"
else
  t0=$(date +%s)
  work=$(mktemp -d /tmp/petsc325-build.XXXXXX)
  lim=$(allow 400 120)
  if [ "$lim" = 0 ] || ! CUDA=${PETSC_CUDA:-1} PETSC_BUILD_DIR=$work timeout -k 10 "$lim" \
    bash scripts/petsc-build.sh "$tarball" "$prefix" >"$logs/petsc-build.log" 2>&1; then
    failed "PETSc 3.25.4 build (limit ${lim} s, $(($(date +%s) - t0)) s)"
    grep -E "error|Error|ERROR" "$logs/petsc-build.log" | head -20 | tee -a "$summary"
    tail -5 "$logs/petsc-build.log" | tee -a "$summary"
    wait "$lib_pid"
    finish
  fi
  rm -rf "$work"
  note "PETSc 3.25.4 (CUDA=${PETSC_CUDA:-1}) built in $(($(date +%s) - t0)) s"
fi
grep -hE "^#define PETSC_HAVE_CUDA |^#define PETSC_VERSION_(MINOR|SUBMINOR) " "$prefix"/include/petscconf.h "$prefix"/include/petscversion.h 2>/dev/null | tr '\n' ' ' | tee -a "$summary"
echo | tee -a "$summary"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# OpenMPI here is not GPU-aware: PETSc aborts once it sets up the GPU unless told so. Every
# PETSc run below gets -use_gpu_aware_mpi 0 on its command line; ~/.petscrc gives it to the
# plugin tests too (their PETSC_OPTIONS belong to the tests), removed at the end
if [ ! -e "$HOME/.petscrc" ]; then
  echo "-use_gpu_aware_mpi 0" >"$HOME/.petscrc" && petscrc_made=1
fi

# ---- 3. ex45 from the tarball (small; while the library may still compile) -------------------
ex45=$out/ex45
ex45_dir=$(mktemp -d /tmp/ex45.XXXXXX)
read -ra petsc_flags <<<"$(pkg-config --cflags --libs PETSc 2>>"$logs/ex45-build.log")"
if tar xf "$tarball" -C "$ex45_dir" petsc-3.25.4/src/ksp/ksp/tutorials/ex45.c 2>>"$logs/ex45-build.log" &&
  mpicc -O2 -o "$ex45" "$ex45_dir/petsc-3.25.4/src/ksp/ksp/tutorials/ex45.c" "${petsc_flags[@]}" \
    -Wl,-rpath,"$prefix/lib" >>"$logs/ex45-build.log" 2>&1; then
  note "ex45 built"
else
  failed "ex45 build"; tail -10 "$logs/ex45-build.log" | tee -a "$summary"; ex45=""
fi
rm -rf "$ex45_dir"

# ---- 4. heptane + plugin + example against PETSc 3.25 -----------------------------------------
t0=$(date +%s)
wait "$lib_pid" || { failed "heptane library build (before PETSc was there)"; grep -E "error" "$logs/lib-build.log" | head -20 | tee -a "$summary"; finish; }
lim=$(allow 300 60)
if [ "$lim" = 0 ] || ! timeout -k 10 "$lim" cmake "${cmake_args[@]}" >"$logs/configure.log" 2>&1; then
  failed "configure against PETSc 3.25 (limit ${lim} s)"; tail -30 "$logs/configure.log" | tee -a "$summary"; finish
fi
grep -E "heptane: (MPI|CUDA|PETSc)" "$logs/configure.log" | tee -a "$summary"
grep -q "heptane: PETSc plugin ON" "$logs/configure.log" || { failed "the plugin is not configured (PETSc not found in $prefix)"; finish; }
lim=$(allow 300 60)
if [ "$lim" = 0 ] || ! timeout -k 10 "$lim" cmake --build "$build" -j "$jobs" --target heptane_petsc reservoir plugin_host petsc_solve heptane_cli >"$logs/build.log" 2>&1; then
  failed "build of heptane_petsc reservoir plugin_host petsc_solve heptane_cli (limit ${lim} s)"
  grep -E "error|warning" "$logs/build.log" | head -40 | tee -a "$summary"
  finish
fi
note "warnings in the plugin's build: $(grep -c "plugin/.*warning" "$logs/build.log")"
note "heptane + plugin build: $(($(date +%s) - t0)) s after PETSc ($(elapsed) s so far)"
plugin=$(readlink -f "$build/lib/libheptane_petsc.so")
reservoir=$build/examples/reservoir

# ---- 5. ctest -L plugin ---------------------------------------------------------------------
if [ "${RUN_TESTS:-1}" = 1 ]; then
  t0=$(date +%s)
  lim=$(allow "${CTEST_CAP:-150}" 120)
  if [ "$lim" = 0 ]; then
    failed "ctest -L plugin SKIPPED (time budget)"
  else
    (cd "$build" && OMP_NUM_THREADS=2 timeout -k 10 "$lim" ctest -L plugin --output-on-failure --timeout 120 -j "$((jobs / 2 > 1 ? jobs / 2 : 1))") >"$logs/ctest.log" 2>&1
    rc=$?
    grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*Skipped|Not Run" "$logs/ctest.log" | tee -a "$summary"
    [ "$rc" = 124 ] && failed "ctest -L plugin TIMED OUT after $lim s ($(grep -c " Passed " "$logs/ctest.log") passed before)"
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && failed "ctest -L plugin (rc $rc)"
    note "ctest -L plugin: $(($(date +%s) - t0)) s"
  fi
fi

# ---- 6. PETSc's GPU path against the plugin --------------------------------------------------
# run NAME CAP -- COMMAND...: log to $logs/NAME.log, one row in the table
table=$out/runs.txt
printf '%-30s %4s %6s %9s %9s %9s %9s %9s %8s  %s\n' run rc iters KSPSolve KSPSetUp PCSetUp "sum[s]" "example" "wall[s]" "check" >"$table"
ev() { awk -v e="$2" '$1 == e { printf "%.4f", $4; f = 1; exit } END { if (!f) printf "-" }' "$1"; }
run() {
  local name=$1 cap=$2 log=$logs/$1.log
  shift 3
  local lim
  lim=$(allow "$cap" 5)
  if [ "$lim" = 0 ]; then
    note "SKIPPED: $name (time budget, $(elapsed) s used)"
    printf '%-30s %4s\n' "$name" skipped >>"$table"
    return
  fi
  printf '%q ' "$@" >"$log"
  echo >>"$log"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -k 10 "$lim" "$@" >>"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  local wall its solve check
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  if grep -qE "^loaded: best time" "$log"; then # petsc_solve: the first solve's its, the best time
    its=$(sed -nE 's/^loaded: solve 1 its ([0-9]+) .*/\1/p' "$log" | head -1)
    solve=$(sed -nE 's/^loaded: best time ([0-9.eE+-]+) s.*/\1/p' "$log" | head -1)
    check="$(sed -nE 's/.*(\|x\|_2 = [0-9.eE+-]+).*/\1/p' "$log" | head -1), $(sed -nE 's/.*(worst true relres [0-9.eE+-]+).*/\1/p' "$log" | head -1)"
  elif grep -qE "^result    " "$log"; then # heptane solve: iterations, total time, true relres
    its=$(sed -nE 's/^result    .* ([0-9]+) iterations.*/\1/p' "$log" | head -1)
    solve=$(sed -nE 's/^time      .*total ([0-9.eE+-]+) s.*/\1/p' "$log" | head -1)
    check="$(sed -nE 's/^(result    .*)/\1/p' "$log" | head -1 | cut -c11-), $(sed -nE 's/.*(true [0-9.eE+-]+).*/\1/p' "$log" | head -1)"
  elif grep -qE "^(pressure|coupled): ksp" "$log"; then # reservoir: the system's final line
    its=$(sed -nE 's/^(pressure|coupled): ksp .* ([0-9]+) iterations.*/\2/p' "$log" | head -1)
    solve=$(sed -nE 's/.*solve time ([0-9.eE+-]+) s.*/\1/p' "$log" | head -1)
    check="$(sed -nE 's/.*(\|[px]\|_2 = [0-9.eE+-]+).*/\1/p' "$log" | head -1), $(sed -nE 's/.*(max true relres [0-9.eE+-]+).*/\1/p' "$log" | head -1)"
  else # ex45: -ksp_converged_reason and its residual line
    its=$(sed -nE 's/.*Linear solve .* iterations ([0-9]+).*/\1/p' "$log" | head -1)
    solve=-
    check="$(grep -m1 -oE "Linear solve (converged|did not converge) due to [A-Z_]+" "$log" | sed 's/Linear solve //'), $(grep -m1 -oE "Residual norm [0-9.eE+-]+" "$log")"
  fi
  local gpu="" t_solve t_ksetup t_psetup sum
  grep -qE "^MatCUSPARSCopyTo" "$log" && gpu=", aijcusparse used"
  t_solve=$(ev "$log" KSPSolve) t_ksetup=$(ev "$log" KSPSetUp) t_psetup=$(ev "$log" PCSetUp)
  sum=$(awk -v a="$t_solve" -v b="$t_ksetup" -v c="$t_psetup" 'BEGIN { if (a == "-") print "-"; else printf "%.4f", a + (b == "-" ? 0 : b) + (c == "-" ? 0 : c) }')
  printf '%-30s %4s %6s %9s %9s %9s %9s %9s %8s  %s\n' "$name" "$rc" "${its:--}" "$t_solve" "$t_ksetup" "$t_psetup" "$sum" \
    "${solve:--}" "$wall" "$check$gpu" >>"$table"
  if [ "$rc" = 124 ]; then failed "$name TIMED OUT after $lim s"
  elif [ "$rc" != 0 ]; then failed "$name (rc $rc)"; tail -15 "$log" | tee -a "$summary"
  elif grep -qE "DIVERGED|did not converge|result    NOT CONVERGED" "$log"; then note "NOT CONVERGED: $name ($(grep -m1 -oE "DIVERGED_[A-Z_]+" "$log"))"
  fi
}
note "## runs: reservoir $grid $steps, ex45 ${ex45_n}^3, rtol $rtol, max_it $max_it, 1 MPI rank each"
note "## PETSc: -ksp_type bcgs -ksp_pc_side right $gpu_opts; plugin: -dll_append, -heptane_device $device (aij matrices on the host, heptane's copy on its device)"
note "## KSPSolve/KSPSetUp/PCSetUp: -log_view, total over the run's solves [s] (KSPSolve leaves the setups out); sum: the three;"
note "## example: the reservoir example's own sum of KSPSolve wall times (setup included); wall: the whole run (grid, assembly, CUDA start included)"
common="-ksp_rtol $rtol -ksp_max_it $max_it -log_view"
petsc="-ksp_type bcgs -ksp_pc_side right $gpu_opts"
heptane="-dll_append $plugin -heptane_device $device -use_gpu_aware_mpi 0"
res() { echo "$reservoir $grid $steps -system $1"; }
# shellcheck disable=SC2086,SC2046
[ "${RESERVOIR:-1}" = 1 ] && {
  for pc in jacobi gamg; do run "pressure-petsc-bcgs-$pc" "$run_cap" -- $(res pressure) $petsc -pc_type $pc $common; done
  for pc in pbjacobi hamg; do run "pressure-plugin-hbcgs-$pc" "$run_cap" -- $(res pressure) $heptane -ksp_type hbcgs -pc_type $pc $common; done
  [ "$device_vecs" = 1 ] && run "pressure-plugin-cudavecs-hbcgs-pbjacobi" "$run_cap" -- $(res pressure) $heptane $gpu_opts -ksp_type hbcgs -pc_type pbjacobi -ksp_view $common
  if [ -n "$ex45" ] && [ "${EX45:-1}" = 1 ]; then
    ex="$ex45 -da_grid_x $ex45_n -da_grid_y $ex45_n -da_grid_z $ex45_n -ksp_converged_reason"
    for pc in jacobi gamg; do run "ex45-petsc-bcgs-$pc" "$run_cap" -- $ex $petsc -pc_type $pc $common; done
    for pc in jacobi hamg; do run "ex45-plugin-hbcgs-$pc" "$run_cap" -- $ex $heptane -ksp_type hbcgs -pc_type $pc $common; done
    [ "$device_vecs" = 1 ] && run "ex45-plugin-cudavecs-hbcgs-jacobi" "$run_cap" -- $ex $heptane $gpu_opts -ksp_type hbcgs -pc_type jacobi -ksp_view $common
  fi
  # the multigrid runs on the coupled system last: neither AMG is made for it (CPR is), they
  # may run to max_it; hamg there only with COUPLED_HAMG=1 (on the CPU at 16x16x8 it did not
  # converge and the second Newton step's AMG setup stopped on a zero diagonal of level 1)
  [ "${COUPLED:-1}" = 1 ] && {
    for pc in jacobi pbjacobi; do run "coupled-petsc-bcgs-$pc" "$run_cap" -- $(res coupled) $petsc -pc_type $pc $common; done
    for pc in pbjacobi hcpr; do run "coupled-plugin-hbcgs-$pc" "$run_cap" -- $(res coupled) $heptane -ksp_type hbcgs -pc_type $pc $common; done
    [ "$device_vecs" = 1 ] && run "coupled-plugin-cudavecs-hbcgs-pbjacobi" "$run_cap" -- $(res coupled) $heptane $gpu_opts -ksp_type hbcgs -pc_type pbjacobi -ksp_view $common
    run coupled-petsc-bcgs-gamg "$run_cap" -- $(res coupled) $petsc -pc_type gamg $common
    [ "${COUPLED_HAMG:-0}" = 1 ] && run coupled-plugin-hbcgs-hamg "$run_cap" -- $(res coupled) $heptane -ksp_type hbcgs -pc_type hamg $common
  }
}
# ---- 7. the channelized pressure systems from files (examples/petsc_solve) -------------------
if [ -n "$loaded_grids" ]; then
  ps325=$build/examples/petsc_solve
  hcli=$build/apps/heptane
  ps318=""
  if [ -n "$p318_pid" ]; then
    t0=$(date +%s)
    if wait "$p318_pid"; then note "PETSc 3.18.5 (CPU) built beside ($(($(date +%s) - t0)) s waited)"
    else failed "PETSc 3.18.5 build"; tail -5 "$logs/petsc318-build.log" | tee -a "$summary"; fi
  fi
  if [ "$petsc318" = 1 ] && [ -f "$prefix318/lib/pkgconfig/PETSc.pc" ]; then
    read -ra f318 <<<"$(PKG_CONFIG_PATH=$prefix318/lib/pkgconfig pkg-config --cflags --libs PETSc)"
    if mpicc -O2 -x c -o "$out/petsc_solve318" examples/petsc_solve/petsc_solve.c "${f318[@]}" \
      -Wl,-rpath,"$prefix318/lib" >"$logs/petsc_solve318-build.log" 2>&1; then
      ps318=$out/petsc_solve318
    else failed "petsc_solve against PETSc 3.18"; tail -10 "$logs/petsc_solve318-build.log" | tee -a "$summary"; fi
  fi
  data=$(mktemp -d /tmp/loaded.XXXXXX)
  mpi318=(mpirun -np "$np318" --oversubscribe --allow-run-as-root -x LD_LIBRARY_PATH="$prefix318/lib")
  note "## loaded systems: heptane gen --model channelized -o A.petsc --rhs b.petsc; examples/petsc_solve -solves 3 (each a new KSP: setup + solve; 'example' = the best of the 3), cg, rtol $rtol on the true residual"
  for g in $loaded_grids; do
    t0=$(date +%s)
    if ! "$hcli" gen --grid "$g" --model channelized -o "$data/A-$g.petsc" --rhs "$data/b-$g.petsc" --quiet \
      >"$logs/gen-$g.log" 2>&1; then failed "heptane gen $g"; continue; fi
    note "generated $g ($(du -h "$data/A-$g.petsc" | cut -f1)) in $(($(date +%s) - t0)) s"
    f="-f $data/A-$g.petsc -rhs $data/b-$g.petsc -solves 3 -ksp_rtol $rtol -ksp_max_it $max_it -ksp_type cg -ksp_norm_type unpreconditioned"
    # shellcheck disable=SC2086
    {
      [ -n "$ps318" ] && want petsc318 && run "loaded-$g-petsc318-np$np318-gamg" "$run_cap" -- env LD_LIBRARY_PATH="$prefix318/lib" "${mpi318[@]}" $ps318 $f -pc_type gamg
      want petsc-gamg && run "loaded-$g-petsc325-gpu-gamg" "$run_cap" -- $ps325 $f -pc_type gamg -mat_type aijcusparse -vec_type cuda -use_gpu_aware_mpi 0 -log_view
      want petsc-jacobi && run "loaded-$g-petsc325-gpu-jacobi" "$run_cap" -- $ps325 $f -pc_type jacobi -mat_type aijcusparse -vec_type cuda -use_gpu_aware_mpi 0
      want plugin && run "loaded-$g-plugin-hcg-hamg" "$run_cap" -- $ps325 $f -dll_append $plugin -heptane_device $device -ksp_type hcg -pc_type hamg -ksp_view -use_gpu_aware_mpi 0
      want cli-amg && run "loaded-$g-cli-cg-amg" "$run_cap" -- $hcli solve "$data/A-$g.petsc" -b "$data/b-$g.petsc" --solver cg --pc amg --device $device --rtol $rtol
      want cli-jacobi && run "loaded-$g-cli-cg-jacobi" "$run_cap" -- $hcli solve "$data/A-$g.petsc" -b "$data/b-$g.petsc" --solver cg --pc jacobi --device $device --rtol $rtol --max-it $max_it
    }
    rm -f "$data/A-$g.petsc" "$data/b-$g.petsc"
  done
  rm -rf "$data"
fi
# ---- 8. more plugin runs: COUPLED_VARIANTS / PRESSURE_VARIANTS="name:options;name:options"
# (options may start with VAR=value words: the run's environment, e.g. HEPTANE_PDL=0)
for system in coupled pressure; do
  if [ "$system" = coupled ]; then list=${COUPLED_VARIANTS:-}; else list=${PRESSURE_VARIANTS:-}; fi
  IFS=';' read -ra variants <<<"$list"
  for v in "${variants[@]}"; do
    [ -n "$v" ] || continue
    read -ra words <<<"${v#*:}"
    envs=()
    while [ "${#words[@]}" -gt 0 ] && [[ ${words[0]} == [A-Z]*=* ]]; do
      envs+=("${words[0]}")
      words=("${words[@]:1}")
    done
    # shellcheck disable=SC2086,SC2046
    run "$system-plugin-${v%%:*}" "$run_cap" -- env "${envs[@]}" $(res $system) $heptane "${words[@]}" $common
  done
done

note "## table (also in $out/runs.txt)"
tee -a "$summary" <"$table"
finish
