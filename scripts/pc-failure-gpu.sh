#!/usr/bin/env bash
# The plugin's PETSc conventions for preconditioners that meet a singular matrix, on GPU ranks,
# in one device call (carry .tools: PETSc 3.18's tarball and shared/data):
#   - heptane's KSP (hbcgs) with ilu, pbjacobi, bjacobi, hamg: KSP_DIVERGED_PC_FAILED ("PC failed
#     due to FACTOR_NUMERIC_ZEROPIVOT"), as PETSc's bcgs with bjacobi/pbjacobi;
#   - PETSc's bcgs with hamg/hcpr as its PC: the same stop (Inf from PCApply);
#   - hbcgs with jacobi: the zero diagonal taken as 1 (PETSc's -pc_jacobi_fixdiagonal): it
#     converges, true residual as PETSc's bcgs + jacobi (the device fill before the inversion
#     kernel, BlockDiagPc::numeric_on_executor);
# each on 1 and 2 ranks sharing the GPU, two solves (the second a values-only refresh where the
# PC keeps one: a725a30's MPI_LAND path), on examples/petsc_solve with tests/zero_pivot.petsc
# (a 6 x 6 matrix with a stored zero diagonal in row 1). Then every GPU test with the time left.
#
#   OUT=/some/dir bash scripts/pc-failure-gpu.sh
#
# Environment: BUILD_DIR [build-gpu], CUDA_ARCH [90], PETSC_PREFIX [/tmp/petsc], BUDGET [560 s].
# Output in $OUT: summary.txt (one line per case) and logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
# shellcheck source=scripts/gpu-common.sh
. "$root/scripts/gpu-common.sh" || exit 1
out=${OUT:-$root/pc-failure-out}
build=${BUILD_DIR:-build-gpu}
prefix=${PETSC_PREFIX:-/tmp/petsc}
budget=${BUDGET:-560}
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
export PATH=/usr/local/cuda/bin:$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpu_init
note "pc-failure-gpu $(date -u +%FT%TZ) tree $(git rev-parse --short HEAD 2>/dev/null) + $(git status --short 2>/dev/null | grep -vc '^??') changed files"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary"
gpu_petsc PETSc
gpu_cmake finish "$(nproc)" "heptane: (MPI|NCCL|CUDA|PETSc)" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DPETSC_DIR="$prefix" -DHEPTANE_BUILD_EXAMPLES=ON -DHEPTANE_TEST_DATA_DIR="$root/.tools/data"
note "built at $(el) s"
mpi=$(command -v mpiexec)
H=$build/apps/heptane PS=$build/examples/petsc_solve P=$build/lib/libheptane_petsc.so
zp=/tmp/zero_pivot.petsc
printf '%%%%MatrixMarket matrix coordinate real general\n6 6 14\n1 1 0\n1 2 1\n2 1 1\n2 2 4\n2 3 -1\n3 2 -1\n3 3 4\n3 4 -1\n4 3 -1\n4 4 4\n4 5 -1\n5 5 4\n5 6 -1\n6 6 4\n' > /tmp/zero_pivot.mtx
$H convert /tmp/zero_pivot.mtx -o $zp > /dev/null || note "convert failed"
for np in 1 2; do
  for kp in hbcgs:ilu hbcgs:pbjacobi hbcgs:bjacobi hbcgs:hamg bcgs:hcpr bcgs:hamg hbcgs:jacobi bcgs:jacobi; do
    ksp=${kp%%:*} pc=${kp##*:} log="$logs/np$np-$ksp-$pc.log"
    HEPTANE_TEST_SHARE_GPU=1 timeout -s KILL 40 "$mpi" -n $np --oversubscribe --allow-run-as-root $PS -f $zp \
      -dll_append $P -ksp_type "$ksp" -pc_type "$pc" -heptane_device gpu -ksp_rtol 1e-10 -ksp_converged_reason \
      -solves 2 -ksp_view > "$log" 2>&1
    note "np$np $ksp+$pc: rc $? | $(grep -oE 'loaded: solve [0-9] its [0-9]+ residual \S+ \S+ .*true relres \S+' "$log" | sed 's/ setup.*true/ true/' | tr '\n' ' ')| $(grep -m1 -o 'PC failed due to [A-Z_]*' "$log") $(grep -m1 -oE 'heptane preconditioner: [^(]*(\(a zero diagonal[^)]*\))?' "$log" | cut -c1-90) $(grep -m1 -oE 'on cuda:[0-9]' "$log")"
  done
done
note "cases done at $(el) s"
left=$((budget - $(el)))
(cd "$build" && timeout -s KILL $left ctest -L gpu --output-on-failure --timeout 200 -j 6) > "$logs/ctest-gpu.log" 2>&1 || status=1
note "gpu ctest rc $? at $(el) s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$logs/ctest-gpu.log" | tee -a "$summary"
finish "$status"
