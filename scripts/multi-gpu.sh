#!/usr/bin/env bash
# Many-GPU check and benchmarks (issue #7), on a machine with 2 or more GPUs (the H200 x2 / x4
# of the device tool): build with CUDA and MPI, run the distributed tests on the GPUs
# (1, 2, 3 and 4 ranks; more ranks than GPUs share a device and take the host-staged path),
# then heptane bench comm and heptane bench scale (strong scaling over 1, 2, ... GPUs, and weak
# scaling), and heptane solve under mpirun.
#
#   OUT=/some/dir bash scripts/multi-gpu.sh [--skip-build] [--no-tests] [--no-bench] [--plugin]
#
# --plugin: first build PETSc 3.18 (CPU, MPI) from .tools/ into PETSC_PREFIX [/tmp/petsc] (carry
# .tools; ~90 s), build heptane once with it (the CLI, the tests, libheptane_petsc.so and the
# reservoir example), and at the end run scripts/plugin-multi-gpu.sh on that build (the plugin
# across 2 and 4 GPUs against PETSc's bcgs, and timings) into $OUT/plugin.
#
# Environment: BUILD_DIR (build-gpu), JOBS (16), CUDA_ARCH (90), NPS (rank counts of the
# scaling runs; default 1 2 4 up to the GPU count), SCALE_SPECS (global systems of the strong
# scaling runs), WEAK_SPECS (per-rank systems of the weak scaling runs), COMM_SIZES,
# SCALE_ITERS (50), MPIRUN (mpirun), TEST_TIMEOUT (120 s per test), RUN_TIMEOUT (240 s per
# mpirun; a bench scale run that fails with the auto models is repeated with nccl). NCCL_NVLS_ENABLE=0 is set (NVLink multicast stays off).
# Output in $OUT: summary.txt, logs.tar.gz, comm.md, comm-npP.csv, scale.md, scale.csv,
# nographs.csv (the 1M system with every kernel launched), weak.csv.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-$(pwd)/multi-gpu-out}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-16}
arch=${CUDA_ARCH:-90}
export NCCL_NVLS_ENABLE=0
# kernels that wait on other GPUs need eager module loading (distributed/peer.hpp)
export CUDA_MODULE_LOADING=EAGER
# a peer kernel that waits longer than this for a partner traps (an error, not a hang)
export HEPTANE_PEER_TIMEOUT=${HEPTANE_PEER_TIMEOUT:-30}
export PATH=/usr/local/cuda/bin:$PATH
skip_build=0 tests=1 bench=1 plugin=0
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) skip_build=1 ;;
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --plugin) plugin=1 ;;
    *) echo "multi-gpu: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out/logs"
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
status=0
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
note "multi-gpu $(date -u +%FT%TZ) on $(hostname): $gpus GPUs"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$summary"
nvidia-smi topo -m >"$out/logs/topo.txt" 2>&1
mpirun=${MPIRUN:-mpirun}
mflags=()
if "$mpirun" --version 2>&1 | grep -q "Open MPI"; then
  mflags=(--allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x CUDA_MODULE_LOADING -x HEPTANE_PEER_TIMEOUT)
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / (gpus > 0 ? gpus : 1) ))}

petsc_prefix=${PETSC_PREFIX:-/tmp/petsc}
petsc_args=(-DHEPTANE_WITH_PETSC=OFF -DHEPTANE_BUILD_EXAMPLES=OFF)
plugin_targets=()
if [ "$plugin" = 1 ]; then
  if ! [ -f "$petsc_prefix/lib/pkgconfig/PETSc.pc" ] && ! [ -f "$petsc_prefix/lib/pkgconfig/petsc.pc" ]; then
    t0=$(date +%s)
    work=$(mktemp -d /tmp/petsc-build.XXXXXX)
    PETSC_BUILD_DIR=$work bash scripts/petsc-build.sh .tools/petsc-3.18.5.tar.xz \
      "$petsc_prefix" >"$out/logs/petsc-build.log" 2>&1 ||
      { note "PETSc build FAILED"; tail -20 "$out/logs/petsc-build.log"; exit 1; }
    rm -rf "$work"
    note "PETSc built in $(($(date +%s) - t0)) s"
  fi
  export PKG_CONFIG_PATH="$petsc_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$petsc_prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  petsc_args=(-DPETSC_DIR="$petsc_prefix" -DHEPTANE_BUILD_EXAMPLES=ON)
  plugin_targets=(heptane_petsc reservoir)
fi

if [ "$skip_build" = 0 ]; then
  t0=$(date +%s)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    "${petsc_args[@]}" >"$out/logs/configure.log" 2>&1 ||
    { note "configure FAILED"; tail -30 "$out/logs/configure.log"; exit 1; }
  grep -E "heptane: (MPI|NCCL|CUDA|PETSc)" "$out/logs/configure.log" | tee -a "$summary"
  cmake --build "$build" -j "$jobs" --target heptane_cli test_distributed test_solver_kernels \
    test_solver "${plugin_targets[@]}" >"$out/logs/build.log" 2>&1 ||
    { note "build FAILED"; grep -E "error" "$out/logs/build.log" | head -40; exit 1; }
  note "configure + build: $(($(date +%s) - t0)) s"
fi
heptane=$build/apps/heptane

if [ "$tests" = 1 ]; then
  (cd "$build" && ctest -R "distributed|cli_solve_mpirun|^test_solver(_kernels)?(_gpu)?$" --output-on-failure \
    --timeout "${TEST_TIMEOUT:-120}") >"$out/logs/ctest.log" 2>&1 || status=1
  grep -E "tests passed|Passed|Failed|Skipped" "$out/logs/ctest.log" | tee -a "$summary"
  sed 's/\x1b\[[0-9;]*m//g' "$out/logs/ctest.log" | grep -E "error:|what\(\)|terminate" | sort | uniq -c |
    head -20 | tee -a "$summary"
fi

if [ "$bench" = 1 ]; then
  nps=${NPS:-}
  if [ -z "$nps" ]; then
    nps=1
    for p in 2 4 8; do [ "$p" -le "$gpus" ] && nps="$nps $p"; done
  fi
  : >"$out/comm.md"
  for np in $nps; do
    [ "$np" -gt 1 ] || continue
    note "bench comm on $np ranks"
    timeout "${RUN_TIMEOUT:-240}" "$mpirun" -np "$np" "${mflags[@]}" "$heptane" bench comm \
      --sizes "${COMM_SIZES:-8,1K,8K,64K,256K,1M,4M,16M,64M}" --csv "$out/comm-np$np.csv" \
      >>"$out/comm.md" 2>>"$out/logs/comm.err" || { note "bench comm np=$np FAILED"; tail "$out/logs/comm.err"; status=1; }
  done
  tee -a "$summary" <"$out/comm.md"
  specs=${SCALE_SPECS:-100x100x100x1:reservoir 256x256x256x1:reservoir 256x256x512x1:reservoir 128x128x128x8:reservoir 256x256x1024x1:reservoir}
  : >"$out/scale.md"
  for np in $nps; do
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-240}" "$mpirun" -np "$np" "${mflags[@]}" "$heptane" bench scale $specs \
      --iters "${SCALE_ITERS:-50}" --csv "$out/scale.csv" >>"$out/scale.md" 2>>"$out/logs/scale.err" ||
      { note "bench scale np=$np FAILED (auto models); again with nccl"; tail "$out/logs/scale.err"; status=1
        # shellcheck disable=SC2086
        timeout "${RUN_TIMEOUT:-240}" "$mpirun" -np "$np" "${mflags[@]}" "$heptane" bench scale $specs \
          --iters "${SCALE_ITERS:-50}" --halo nccl --reduce nccl --csv "$out/scale.csv" \
          >>"$out/scale.md" 2>>"$out/logs/scale.err"; }
  done
  # the smallest system without CUDA graphs: what replaying the batches saves
  for np in $nps; do
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-240}" "$mpirun" -np "$np" "${mflags[@]}" "$heptane" bench scale \
      ${NOGRAPH_SPECS:-100x100x100x1:reservoir} --iters "${SCALE_ITERS:-50}" --no-graphs \
      --csv "$out/nographs.csv" >>"$out/scale.md" 2>>"$out/logs/scale.err" ||
      { note "bench scale --no-graphs np=$np FAILED"; status=1; }
  done
  wspecs=${WEAK_SPECS:-128x128x256x1:reservoir 64x64x128x8:reservoir}
  for np in $nps; do
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-240}" "$mpirun" -np "$np" "${mflags[@]}" "$heptane" bench scale --weak $wspecs \
      --iters "${SCALE_ITERS:-50}" --csv "$out/weak.csv" >>"$out/scale.md" 2>>"$out/logs/scale.err" ||
      { note "bench scale --weak np=$np FAILED"; tail "$out/logs/scale.err"; status=1; }
  done
  cat "$out/scale.md" >>"$summary"
  # strong-scaling efficiency: T(1) / (P T(P)) per system
  for f in scale nographs weak; do
    [ -f "$out/$f.csv" ] || continue
    awk -F, -v kind="$f" 'NR > 1 { t[$1, $4] = $7; if (!seen[$1]++) order[++n] = $1; if ($4 > maxp) maxp = $4 }
      END { printf "\n%s scaling: efficiency = T(1) / (P T(P))%s\n", kind, kind == "weak" ? " with P times the rows (T(1)/T(P))" : ""
            for (i = 1; i <= n; i++) { s = order[i]; line = s
              for (p = 1; p <= maxp; p *= 2) if ((s, p) in t && (s, 1) in t)
                line = line sprintf("  P=%d %.4f ms (%.1f %%)", p, t[s, p],
                                    100 * t[s, 1] / ((kind == "weak" ? 1 : p) * t[s, p]))
              print line } }' "$out/$f.csv" | tee -a "$summary"
  done
  # the main job across the GPUs
  timeout "${RUN_TIMEOUT:-240}" "$mpirun" -np "$gpus" "${mflags[@]}" "$heptane" solve --generate 128x128x64x3:reservoir \
    --rtol 1e-6 --json >"$out/logs/solve-np$gpus.json" 2>"$out/logs/solve.err" || status=1
  tee -a "$summary" <"$out/logs/solve-np$gpus.json"
fi
if [ "$plugin" = 1 ]; then
  PREBUILT=1 BUILD_DIR=$build PETSC_PREFIX=$petsc_prefix OUT=$out/plugin \
    RUN_TIMEOUT=${RUN_TIMEOUT:-240} bash scripts/plugin-multi-gpu.sh >/dev/null 2>&1 || status=1
  cat "$out/plugin/plugin-multi-gpu.txt" >>"$summary"
  cp "$out/plugin/"*.log "$out/logs/" 2>/dev/null
  rm -rf "$out/plugin"
fi
tar czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$out/logs"
note "multi-gpu: exit $status"
exit $status
