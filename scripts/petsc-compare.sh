#!/usr/bin/env bash
# Run the reservoir example (examples/reservoir, a PETSc-only host) with PETSc's own BiCGStab
# and with heptane's, loaded at run time (-dll_append libheptane_petsc.so -ksp_type hbcgs, and
# once more through PETSC_OPTIONS), and print iterations, solve times and solution norms side by
# side. Every run's full output is kept in the log folder.
#
#   scripts/petsc-compare.sh                       # build/ , 48x48x24, 1 rank, ILU everywhere
#   BUILD_DIR=/tmp/b EXAMPLE_ARGS="-nx 64 -ny 64 -nz 32" scripts/petsc-compare.sh
#
# Environment (defaults in brackets):
#   BUILD_DIR     heptane build with the plugin and the example [build]
#   EXAMPLE_ARGS  grid and steps of the example [-nx 48 -ny 48 -nz 24 -steps 3 -newton 2]
#   RTOL          -ksp_rtol of every run [1e-8]
#   PETSC_NP      MPI ranks of the PETSc runs [1]
#   PETSC_PCS     PETSc preconditioners, one run each [ilu on 1 rank, bjacobi on more]
#   HEPTANE_PCS   heptane preconditioners, one run each: -pc_type none|jacobi|pbjacobi|ilu, and
#                 ilu:natural / ilu:multicolor for -pc_type ilu -heptane_ilu natural|multicolor;
#                 suffixes: +mixed / +single add -heptane_precision mixed|single, +nofold
#                 adds -heptane_fold 0 (e.g. pbjacobi+mixed, pbjacobi+nofold) [ilu]
#   HEPTANE_OPTS  more options for the heptane runs, e.g. "-heptane_device gpu" []
#   VIA_ENV       1: repeat the first heptane run with the options in PETSC_OPTIONS [1]
#   MPIEXEC       MPI launcher for PETSC_NP > 1 [mpirun]
#   LOG_DIR       where the logs go [$OUT if set, else a new folder under /tmp]
# PETSc runs use right preconditioning, so both stop on ||b - A x|| <= rtol ||b||. The heptane
# runs here are on one MPI rank (its multi-rank path: docs/petsc.md, "Several MPI ranks"); the
# PETSc runs on several ranks let PETSc split the grid in every direction (-z_split_only 0: the
# example's default split along z only is what heptane's distributed operator needs).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
exe=$build/examples/reservoir
plugin=$(readlink -f "$build/lib/libheptane_petsc.so" 2>/dev/null || true)
args=${EXAMPLE_ARGS:--nx 48 -ny 48 -nz 24 -steps 3 -newton 2}
rtol=${RTOL:-1e-8}
np=${PETSC_NP:-1}
if [ "$np" -gt 1 ]; then petsc_pcs=${PETSC_PCS:-bjacobi}; else petsc_pcs=${PETSC_PCS:-ilu}; fi
heptane_pcs=${HEPTANE_PCS:-ilu}
heptane_opts=${HEPTANE_OPTS:-}
via_env=${VIA_ENV:-1}
logdir=${LOG_DIR:-${OUT:-$(mktemp -d /tmp/petsc-compare.XXXXXX)}}
mkdir -p "$logdir"

[ -x "$exe" ] || { echo "petsc-compare: $exe not found (configure with PETSc and build the 'reservoir' target)" >&2; exit 1; }
[ -f "$plugin" ] || { echo "petsc-compare: $build/lib/libheptane_petsc.so not found (build the 'heptane_petsc' target)" >&2; exit 1; }

launcher=()
if [ "$np" -gt 1 ]; then
  launcher=("${MPIEXEC:-mpirun}" -np "$np")
  if "${MPIEXEC:-mpirun}" --version 2>&1 | grep -q "Open MPI"; then
    launcher+=(--oversubscribe --allow-run-as-root)
  fi
fi

summary=$logdir/summary.txt
: >"$summary"
names=()
# run NAME ENV... -- COMMAND...: the output to $logdir/NAME.log, the wall time appended
run() {
  local name=$1 log=$logdir/$1.log
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  { [ ${#envs[@]} -gt 0 ] && printf '%s ' "${envs[@]}"; printf '%q ' "$@"; echo; } >"$log"
  echo "petsc-compare: $name" >&2
  local t0 t1
  t0=$(date +%s.%N)
  if ! env ${envs[@]+"${envs[@]}"} "$@" >>"$log" 2>&1; then
    echo "petsc-compare: $name FAILED (log: $log)" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "wall %.3f\n", b - a }' >>"$log"
  names+=("$name")
}

# shellcheck disable=SC2086
for pc in $petsc_pcs; do
  run "petsc-bcgs-np$np-$pc" -- "${launcher[@]}" "$exe" $args -z_split_only 0 -ksp_type bcgs -ksp_pc_side right -pc_type "$pc" -ksp_rtol "$rtol"
done
first=1
# shellcheck disable=SC2086
for spec in $heptane_pcs; do
  base=${spec%%+*}
  pc=${base%%:*}
  pc_opts="-pc_type $pc"
  [ "$base" != "$pc" ] && pc_opts="$pc_opts -heptane_ilu ${base#*:}"
  name="heptane-hbcgs-${base/:/-}"
  mods=""
  [ "$spec" != "$base" ] && mods=${spec#*+}
  for mod in ${mods//+/ }; do
    case "$mod" in
      mixed | single) pc_opts="$pc_opts -heptane_precision $mod" ;;
      nofold) pc_opts="$pc_opts -heptane_fold 0" ;;
      *) echo "petsc-compare: unknown suffix +$mod in '$spec' (mixed, single, nofold)" >&2; exit 2 ;;
    esac
    name="$name-$mod"
  done
  run "$name" -- "$exe" $args -dll_append "$plugin" -ksp_type hbcgs $pc_opts -ksp_rtol "$rtol" $heptane_opts
  if [ "$first" = 1 ] && [ "$via_env" = 1 ]; then
    run "$name-PETSC_OPTIONS" "PETSC_OPTIONS=-dll_append $plugin -ksp_type hbcgs $pc_opts $heptane_opts" -- "$exe" $args -ksp_rtol "$rtol"
  fi
  first=0
done

# The final line of each system: "<system>: ksp T, S solves, I iterations, solve time X s; |x|_2 = N ..."
{
  echo "reservoir $args, rtol $rtol; logs in $logdir"
  printf '%-9s %-34s %7s %12s %10s %22s %10s %11s\n' system run iters "solve [s]" "vs first" "|x|_2" "rel.diff" "max relres"
  for sys in pressure coupled; do
    ref_t="" ref_n=""
    for name in "${names[@]}"; do
      line=$(grep -E "^$sys: ksp" "$logdir/$name.log" || true)
      [ -n "$line" ] || continue
      its=$(sed -E 's/.* ([0-9]+) iterations.*/\1/' <<<"$line")
      t=$(sed -E 's/.*solve time ([0-9.eE+-]+) s.*/\1/' <<<"$line")
      n=$(sed -E 's/.*\|[px]\|_2 = ([0-9.eE+-]+).*/\1/' <<<"$line")
      rr=$(sed -nE 's/.*max true relres ([0-9.eE+-]+).*/\1/p' <<<"$line")
      if [ -z "$ref_t" ]; then ref_t=$t ref_n=$n; fi
      awk -v s="$sys" -v r="$name" -v i="$its" -v t="$t" -v rt="$ref_t" -v n="$n" -v rn="$ref_n" -v rr="${rr:--}" 'BEGIN {
        d = n - rn; if (d < 0) d = -d; ar = rn < 0 ? -rn : rn
        printf "%-9s %-34s %7d %12.4f %9.2fx %22.13e %10.1e %11s\n", s, r, i, t, (t > 0 ? rt / t : 0), n, (ar > 0 ? d / ar : 0), rr }'
    done
  done
  echo "(vs first: the first run's solve time / this run's; solve time = sum of KSPSolve wall times, setup included;"
  echo " max relres: the largest true ||b - A x|| / ||b|| of the run's solves, PETSc's MatMult in double)"
} | tee "$summary"
