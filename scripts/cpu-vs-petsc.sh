#!/usr/bin/env bash
# CPU, per iteration: PETSc's KSPBCGS against heptane's KSP hbcgs (the plugin, loaded at run time
# with -dll_append, -heptane_device cpu) in one invocation, on the same matrices (the reservoir
# example, examples/reservoir), with the same preconditioner, the same rtol and the same stopping
# test (PETSc right-preconditioned, -ksp_pc_side right: both stop on ||b - A x|| <= rtol ||b||).
#
#   scripts/cpu-vs-petsc.sh                                    # build/, 64x64x32, 1 core each
#   BUILD_DIR=/tmp/b GRID="-nx 32 -ny 32 -nz 16" REPEAT=1 scripts/cpu-vs-petsc.sh
#   PAR=2 scripts/cpu-vs-petsc.sh        # PETSc on 2 MPI ranks against heptane on 2 threads
#   PAR=2 HEPTANE_PAR=ranks scripts/cpu-vs-petsc.sh          # ... against heptane on 2 ranks
#
# Preconditioners (PETSc option = heptane option unless said):
#   none, jacobi, pbjacobi (point-block Jacobi over the Nc x Nc blocks; = jacobi for Nc = 1),
#   ilu: PETSc -pc_type ilu (ILU(0), natural order) vs heptane -pc_type ilu -heptane_ilu natural
#   (ILU(0) for Nc = 1, BILU(0) over the 3 x 3 blocks for Nc = 3; PETSc's ILU(0) of an AIJ
#   matrix is point ILU(0): the same fill, not the same factor, so iterations may differ).
#   With PAR > 1 PETSc's ilu becomes -pc_type bjacobi -sub_pc_type ilu (ILU(0) of each rank's
#   block): against heptane on threads (one global ILU(0)) compare per iteration only; heptane
#   on ranks (HEPTANE_PAR=ranks) does the same block Jacobi + ILU(0)/BILU(0) per rank.
#   PC:N (e.g. none:300) runs the first system only (-steps 1 -newton 1: the same matrix for
#   both) for exactly N iterations (-ksp_max_it N, DIVERGED_ITS is expected): for the
#   preconditioners that would need tens of thousands of iterations (the coupled system
#   unpreconditioned). jacobi is left out of the coupled list: its matrix has zero diagonal
#   entries, which PETSc's PCJACOBI replaces by 1 and heptane refuses. A run that fails is
#   marked in the table (its log says why) and the others go on.
#
# Timing. Each run solves one system (-system pressure|coupled: 3 implicit steps; the coupled
# system 2 Newton iterations each, 6 solves) with -log_view. "solve" is the example's own sum of
# KSPSolve wall times (setup included: operator build, ILU/BILU factorisation); "iter" is the
# KSPSolve event of -log_view, which in PETSc 3.18 starts after KSPSetUp/PCSetUp and so
# excludes the setup of both implementations (heptane builds its operator and preconditioner in
# KSPSetUp); "setup" = solve - iter of the same run (on several ranks iter is the slowest
# rank's and solve rank 0's, so setup can come out slightly negative). ms/it = iter /
# iterations (all solves summed). Each configuration runs REPEAT times, interleaved (PETSc,
# heptane, PETSc, ...); the minimum of each time is reported, and the table says when the
# iterations differ between repeats. "conv" counts the solves that converged. PETSc runs one
# thread per rank (OMP_NUM_THREADS=1), heptane PAR threads (1 by default).
#
# Environment (defaults in brackets):
#   BUILD_DIR     heptane build with the plugin (heptane_petsc) and the example (reservoir) [build]
#   GRID          grid of the example [-nx 64 -ny 64 -nz 32]
#   STEPS         steps and Newton iterations [-steps 3 -newton 2]
#   SYSTEMS       [pressure coupled]
#   PRESSURE_PCS  [none jacobi pbjacobi ilu]
#   COUPLED_PCS   [none:300 pbjacobi ilu]
#   RTOL          -ksp_rtol [1e-8];  MAX_IT -ksp_max_it [10000]
#   REPEAT        runs per configuration, minimum taken [3]
#   PAR           cores per implementation: PETSc MPI ranks, heptane OpenMP threads or ranks [1]
#   HEPTANE_PAR   threads: heptane on 1 rank with PAR OpenMP threads; ranks: on PAR MPI ranks
#                 with 1 thread each, like PETSc (the example splits its grid along z) [threads]
#   MPIEXEC       MPI launcher for PAR > 1 [mpirun]
#   LOG_DIR       every run's full output, summary.txt, the load (load.txt: uptime at start and
#                 end; loadavg.txt: after each run) [$OUT if set, else a new folder in /tmp]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
exe=$build/examples/reservoir
plugin=$(readlink -f "$build/lib/libheptane_petsc.so" 2>/dev/null || true)
grid=${GRID:--nx 64 -ny 64 -nz 32}
steps=${STEPS:--steps 3 -newton 2}
systems=${SYSTEMS:-pressure coupled}
pressure_pcs=${PRESSURE_PCS:-none jacobi pbjacobi ilu}
coupled_pcs=${COUPLED_PCS:-none:300 pbjacobi ilu}
rtol=${RTOL:-1e-8}
max_it=${MAX_IT:-10000}
repeat=${REPEAT:-3}
par=${PAR:-1}
heptane_par=${HEPTANE_PAR:-threads}
case $heptane_par in threads | ranks) ;; *) echo "cpu-vs-petsc: HEPTANE_PAR must be threads or ranks" >&2; exit 2 ;; esac
logdir=${LOG_DIR:-${OUT:-$(mktemp -d /tmp/cpu-vs-petsc.XXXXXX)}}
mkdir -p "$logdir"

[ -x "$exe" ] || { echo "cpu-vs-petsc: $exe not found (configure with PETSc and build the 'reservoir' target)" >&2; exit 1; }
[ -f "$plugin" ] || { echo "cpu-vs-petsc: $build/lib/libheptane_petsc.so not found (build the 'heptane_petsc' target)" >&2; exit 1; }

launcher=()
if [ "$par" -gt 1 ]; then
  launcher=("${MPIEXEC:-mpirun}" -np "$par")
  if "${MPIEXEC:-mpirun}" --version 2>&1 | grep -q "Open MPI"; then
    launcher+=(--bind-to core --allow-run-as-root)
  fi
fi
# one core per PETSc rank; heptane gets PAR OpenMP threads
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

results=$logdir/results.txt # name its solve iter conv/solves, one line per run
: >"$results"
# run NAME THREADS COMMAND...: output to $logdir/NAME.rREP.log, one line to $results
run() {
  local name=$1 threads=$2 log
  shift 2
  log=$logdir/$name.r$rep.log
  printf 'OMP_NUM_THREADS=%s %s\n' "$threads" "$(printf '%q ' "$@")" >"$log"
  echo "cpu-vs-petsc: $name (run $rep of $repeat)" >&2
  if ! OMP_NUM_THREADS=$threads "$@" >>"$log" 2>&1; then
    echo "cpu-vs-petsc: $name FAILED (log: $log):" >&2
    grep -m2 -E 'ERROR: [A-Za-z]' "$log" >&2 || tail -n 5 "$log" >&2
    echo "$name 0 0 0 failed" >>"$results"
    return 0
  fi
  echo "$name $(cut -d' ' -f1-3 /proc/loadavg)" >>"$logdir/loadavg.txt"
  awk -v n="$name" '
    /^(pressure|coupled): ksp / { its = $6; t = $10 }
    /^KSPSolve / { ev = $4 }
    /Linear solve converged/ { c++ } /Linear solve (did not converge|diverged)/ { d++ }
    END { printf "%s %d %s %s %d/%d\n", n, its, t, ev, c, c + d }' "$log" >>"$results"
}

: >"$logdir/loadavg.txt"
echo "cpu-vs-petsc: start $(date -Is); $(uptime)" | tee "$logdir/load.txt" >&2
common=(-summary_only -ksp_converged_reason -log_view -ksp_rtol "$rtol")
pcs_of() { if [ "$1" = pressure ]; then echo "$pressure_pcs"; else echo "$coupled_pcs"; fi; }
for rep in $(seq 1 "$repeat"); do
  for sys in $systems; do
    for spec in $(pcs_of "$sys"); do
      pc=${spec%%:*}
      # shellcheck disable=SC2206
      gargs=($grid $steps -ksp_max_it "$max_it")
      # shellcheck disable=SC2206
      [ "$spec" != "$pc" ] && gargs=($grid -steps 1 -newton 1 -ksp_max_it "${spec#*:}")
      petsc_pc=(-pc_type "$pc")
      if [ "$pc" = ilu ] && [ "$par" -gt 1 ]; then petsc_pc=(-pc_type bjacobi -sub_pc_type ilu); fi
      heptane_pc=(-pc_type "$pc")
      [ "$pc" = ilu ] && heptane_pc+=(-heptane_ilu natural)
      run "$sys-$spec-petsc" 1 ${launcher[@]+"${launcher[@]}"} "$exe" "${gargs[@]}" -system "$sys" "${common[@]}" \
        -ksp_type bcgs -ksp_pc_side right "${petsc_pc[@]}"
      if [ "$heptane_par" = ranks ]; then
        run "$sys-$spec-heptane" 1 ${launcher[@]+"${launcher[@]}"} "$exe" "${gargs[@]}" -system "$sys" "${common[@]}" \
          -dll_append "$plugin" -ksp_type hbcgs -heptane_device cpu "${heptane_pc[@]}"
      else
        run "$sys-$spec-heptane" "$par" "$exe" "${gargs[@]}" -system "$sys" "${common[@]}" \
          -dll_append "$plugin" -ksp_type hbcgs -heptane_device cpu "${heptane_pc[@]}"
      fi
    done
  done
done
echo "cpu-vs-petsc: end $(date -Is); $(uptime)" | tee -a "$logdir/load.txt" >&2

petsc_name="PETSc bcgs" heptane_name="heptane hbcgs"
if [ "$par" -gt 1 ]; then
  petsc_name="PETSc bcgs np$par"
  if [ "$heptane_par" = ranks ]; then heptane_name="heptane hbcgs np$par"; else heptane_name="heptane hbcgs t$par"; fi
fi
if [ "$heptane_par" = ranks ]; then how="$par MPI rank(s)"; else how="1 rank, $par OpenMP thread(s)"; fi
{
  echo "reservoir $grid $steps, rtol $rtol, $par core(s) per implementation (PETSc: $par MPI rank(s); heptane: $how), minimum of $repeat run(s); logs in $logdir"
  sed 's/^/load: /' "$logdir/load.txt"
  awk '{ if (NR == 1 || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { if (NR) printf "load: 1-minute load average after each of the %d runs: %.2f to %.2f (loadavg.txt)\n", NR, lo, hi }' "$logdir/loadavg.txt"
  printf '%-9s %-9s %-18s %6s %7s %10s %10s %10s %9s %12s\n' system pc implementation iters conv "solve [s]" "setup [s]" "iter [s]" "ms/it" "PETSc/hept."
  for sys in $systems; do
    for pc in $(pcs_of "$sys"); do
      for impl in petsc heptane; do
        label=$petsc_name
        [ "$impl" = heptane ] && label=$heptane_name
        awk -v key="$sys-$pc-$impl" -v s="$sys" -v p="$pc" -v l="$label" -v impl="$impl" '
          $1 == key && $5 == "failed" { failed++; next }
          $1 == key { n++; if (n == 1 || $3 < t) t = $3; if (n == 1 || $4 < e) e = $4; if (n == 1 || $3 - $4 < su) su = $3 - $4
                      if (n == 1) { its = $2; conv = $5 } else if ($2 != its) bad = 1 }
          $1 == substr(key, 1, length(key) - length(impl)) "petsc" && $5 != "failed" { m++; if (m == 1 || $4 < pe) pe = $4; pits = $2 }
          END {
            if (!n) { if (failed) printf "%-9s %-9s %-18s  failed (see %s.r*.log)\n", s, p, l, key; exit }
            ms = its > 0 ? 1000 * e / its : 0
            pms = pits > 0 ? 1000 * pe / pits : 0
            r = impl == "heptane" && ms > 0 ? sprintf("%.2f", pms / ms) : ""
            printf "%-9s %-9s %-18s %6d %7s %10.3f %10.3f %10.3f %9.3f %12s%s\n", s, p, l, its, conv, t, su, e, ms, r, bad ? "  (iterations differ between runs!)" : "" }' "$results"
      done
    done
  done
  echo "(solve: the example's KSPSolve wall times summed, setup included; iter: the KSPSolve event of -log_view, setup excluded;"
  echo " setup: solve - iter, minimum over the runs; ms/it = iter / iters; PETSc/hept.: PETSc's ms/it over heptane's, > 1: heptane faster per iteration)"
} | tee "$logdir/summary.txt"
