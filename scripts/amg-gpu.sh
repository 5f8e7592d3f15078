#!/usr/bin/env bash
# Multigrid on one GPU in one device call: build heptane with CUDA (no PETSc), run the GPU
# tests of the solver layer (AMG/CPR, GMRES, the solvers), then `heptane bench precond` on
# the issue's systems: the channelized pressure at 1 M and 8 M cells, the reservoir pressure
# at 1 M (also with the hierarchy built on the host: --amg-setup host), the channelized model
# at 460 K cells, the coupled reservoir system (Nc = 3) at 1 M, on the GPU and on all CPU
# cores. SANITIZE=1 (default) also runs test_amg's setup cases under compute-sanitizer.
#
#   OUT=/some/dir bash scripts/amg-gpu.sh [--no-tests] [--quick]
#
# Environment: BUILD_DIR [build-gpu], JOBS [nproc], CUDA_ARCH [90].
# Output in $OUT: summary.txt, precond-*.md/.csv/.json, logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh || exit 1
out=${OUT:-$PWD/amg-gpu-out}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
export PATH=/usr/local/cuda/bin:$PATH
tests=1 quick=0
for a in "$@"; do
  case "$a" in
    --no-tests) tests=0 ;;
    --quick) quick=1 ;;
    *) echo "amg-gpu: unknown option $a" >&2; exit 2 ;;
  esac
done
gpu_init
note "amg-gpu $(date -u +%FT%TZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"
t0=$(date +%s)
gpu_cmake keep "$jobs" "" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DHEPTANE_WITH_PETSC=OFF
note "configure + build: $(($(date +%s) - t0)) s"
if [ "$tests" = 1 ]; then
  gpu_ctest gpu "${TESTS_REGEX:-amg|gmres|solver|precond}" 4
  if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    # the device AMG setup's kernels and cuSPARSE calls under memcheck
    HEPTANE_TEST_DEVICE=cuda timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$build/tests/test_amg" --run_test=amg_setup >"$logs/memcheck-amg.log" 2>&1 || status=1
    note "memcheck test_amg/amg_setup: $(grep -E "ERROR SUMMARY|No errors|failure" "$logs/memcheck-amg.log" | head -3 | tr '\n' ' ')"
  fi
fi
bench() {  # name, then bench precond arguments
  gpu_bench_precond "$@"
  grep -E "^\| [^ ]" "$out/precond-$1.md" | grep -v "^| system" | cut -c1-200 | tee -a "$summary"
}
if [ "$quick" = 1 ]; then
  bench quick --generate 64x64x32x1:channelized --pcs jacobi,amg --solver cg --device gpu
else
  bench pressure-gpu --generate 128x128x64x1:channelized,128x128x64x1:reservoir \
    --pcs jacobi,ilu0-mc,amg --solver cg --device gpu --reps 2
  bench pressure-bcgs-gpu --generate 128x128x64x1:channelized --pcs jacobi,ilu0-mc,amg \
    --solver bicgstab --device gpu --reps 2
  bench pressure-host-setup-gpu --generate 128x128x64x1:channelized,128x128x64x1:reservoir \
    --pcs amg --solver cg --device gpu --amg-setup host
  bench hetero-460k-gpu --generate 128x128x28x1:channelized --pcs jacobi,amg --solver cg \
    --device gpu --reps 2
  bench pressure-8m-gpu --generate 256x256x128x1:channelized --pcs jacobi,amg --solver cg \
    --device gpu
  bench coupled-gpu --generate 128x128x64x3:reservoir,128x128x64x3:channelized \
    --pcs ilu0-mc,cpr --solver bicgstab --device gpu --reps 2
  bench pressure-cpu --generate 128x128x64x1:channelized --pcs jacobi,amg --solver cg \
    --device cpu
fi
note "status $status"
finish "$status"
