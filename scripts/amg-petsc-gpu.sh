#!/usr/bin/env bash
# Multigrid against PETSc in one device call (the H100 of the device tool): build PETSc 3.18
# (CPU, MPI) from .tools/ (carry .tools), heptane with CUDA, the plugin and the reservoir
# example; run the GPU tests of AMG/CPR/GMRES and the plugin's multigrid tests; then the
# reservoir example at 128 x 128 x 64 (rtol 1e-6): the pressure system with PETSc's bcgs + gamg
# and + bjacobi/ILU(0) on 16 ranks against hbcgs + hamg and + pbjacobi on the GPU, and the
# coupled system with PETSc's bcgs + bjacobi against hbcgs + hcpr and + pbjacobi.
#
#   OUT=/some/dir bash scripts/amg-petsc-gpu.sh
#
# Environment: BUILD_DIR [build-gpu], PETSC_PREFIX [/tmp/petsc], GRID [-nx 128 -ny 128 -nz 64],
#   STEPS [-steps 2 -newton 2], NP [16], TESTS_REGEX [amg|cpr|gmres], PRESSURE_PETSC_PCS
#   [bjacobi gamg], PRESSURE_HEPTANE_PCS [pbjacobi hamg], COUPLED_PETSC_PCS [bjacobi],
#   COUPLED_HEPTANE_PCS [pbjacobi hcpr], COUPLED_EXTRA (options of one more hcpr run, e.g.
#   "-heptane_cpr_second bjacobi"), BENCH_ARGS (heptane bench precond's systems and PCs).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
# shellcheck source=scripts/gpu-common.sh
. "$root/scripts/gpu-common.sh" || exit 1
out=${OUT:-$root/amg-petsc-out}
build=${BUILD_DIR:-build-gpu}
prefix=${PETSC_PREFIX:-/tmp/petsc}
grid=${GRID:--nx 128 -ny 128 -nz 64}
steps=${STEPS:--steps 2 -newton 2}
np=${NP:-16}
export PATH=/usr/local/cuda/bin:$PATH
gpu_init
note "amg-petsc-gpu $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"
gpu_petsc "PETSc 3.18.5"
t0=$(date +%s)
gpu_cmake finish "$(nproc)" "heptane: (MPI|CUDA|PETSc)" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DPETSC_DIR="$prefix" -DHEPTANE_BUILD_EXAMPLES=ON
note "configure + build: $(($(date +%s) - t0)) s"
gpu_ctest "gpu|plugin" "${TESTS_REGEX:-amg|cpr|gmres}" 6
compare() {  # name system petsc_pcs heptane_pcs [more heptane options]
  local t=$(date +%s)
  BUILD_DIR=$build EXAMPLE_ARGS="$grid $steps -system $2" RTOL=1e-6 PETSC_NP=$np PETSC_PCS="$3" \
    HEPTANE_PCS="$4" HEPTANE_OPTS="-heptane_device gpu -ksp_view ${5:-}" VIA_ENV=0 LOG_DIR="$logs/$1" \
    bash scripts/petsc-compare.sh >"$logs/$1.out" 2>&1 || status=1
  note "## $1 ($(($(date +%s) - t)) s)"
  cat "$logs/$1/summary.txt" 2>/dev/null | tee -a "$summary"
  for f in "$logs/$1"/heptane-*.log; do
    [ -f "$f" ] || continue
    echo "# $(basename "$f")" >>"$summary"
    grep -E "heptane last setup|heptane preconditioner: amg|heptane preconditioner: cpr|solve [0-9.]+ s " "$f" |
      head -12 | cut -c1-500 >>"$summary"
  done
}
compare pressure pressure "${PRESSURE_PETSC_PCS:-bjacobi gamg}" "${PRESSURE_HEPTANE_PCS:-pbjacobi hamg}"
compare coupled coupled "${COUPLED_PETSC_PCS:-bjacobi}" "${COUPLED_HEPTANE_PCS:-pbjacobi hcpr}"
[ -n "${COUPLED_EXTRA:-}" ] && compare coupled-extra coupled "" "hcpr" "$COUPLED_EXTRA"
t=$(date +%s)
# shellcheck disable=SC2086
"$build/apps/heptane" bench precond ${BENCH_ARGS:---generate 128x128x64x1:channelized --pcs jacobi,amg --solver cg} \
  --device gpu --reps 2 --csv "$out/precond.csv" >"$out/precond.md" 2>"$logs/precond.err" || status=1
note "## bench precond ($(($(date +%s) - t)) s)"
cut -c1-600 "$out/precond.md" | tee -a "$summary"
note "status $status"
finish "$status"
