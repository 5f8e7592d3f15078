#!/usr/bin/env bash
# Where an AMG-preconditioned CG solve spends its GPU time, kernel by kernel (issue #17): builds
# heptane with CUDA (no PETSc) and profiles `heptane solve --pc amg --solver cg` on the
# channelized 459 K-cell system with Nsight Systems (kernel summary) when nsys is there, else
# Nsight Compute's per-kernel durations; then repeats the coupled (Nc = 3) and 8.4 M-cell
# bench precond runs with more repetitions (their best-of-2 totals varied by 2x between runs).
#
#   OUT=/some/dir bash scripts/profile-amg-gpu.sh
#
# Environment: BUILD_DIR [build-gpu], JOBS [nproc], CUDA_ARCH [90], GRID [128x128x28x1:channelized].
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-$PWD/profile-amg-out}
build=${BUILD_DIR:-build-gpu}
grid=${GRID:-128x128x28x1:channelized}
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out"
{
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DHEPTANE_WITH_PETSC=OFF -DHEPTANE_BUILD_TESTS=OFF -DHEPTANE_BUILD_EXAMPLES=OFF &&
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target heptane_cli
} >"$out/build.log" 2>&1 || { echo "build FAILED"; tail -30 "$out/build.log"; exit 1; }
h=$build/apps/heptane
solve=("$h" solve --generate "$grid" --pc amg --solver cg --rtol 1e-6 --device gpu)
"${solve[@]}" >"$out/solve.txt" 2>&1
echo "## solve (unprofiled)"; grep -iE "iterations|setup|solve|preconditioner|graph" "$out/solve.txt" | head -12
if command -v nsys >/dev/null; then
  nsys profile -t cuda -o "$out/amg" --force-overwrite true "${solve[@]}" >"$out/nsys.log" 2>&1
  nsys stats -r cuda_gpu_kern_sum,cuda_api_sum --format csv -o "$out/amg" "$out/amg.nsys-rep" >>"$out/nsys.log" 2>&1
  rm -f "$out/amg.nsys-rep" "$out/amg.sqlite"
  echo "## kernels (nsys: time %, total ns, instances, avg ns, name)"
  for f in "$out"/amg_cuda_gpu_kern_sum*.csv; do
    python3 - "$f" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[:25]:
    print(r.get("Time (%)"), r.get("Total Time (ns)"), r.get("Instances"), r.get("Avg (ns)"), r.get("Name", "")[:110])
PY
  done
else
  echo "## kernels (ncu: no nsys here)"
  ncu --metrics gpu__time_duration.sum --csv "${solve[@]}" >"$out/ncu.csv" 2>"$out/ncu.log"
  python3 - "$out/ncu.csv" <<'PY'
import csv, sys, collections
t, n = collections.Counter(), collections.Counter()
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum": continue
    k = r["Kernel Name"][:110]
    t[k] += float(r["Metric Value"].replace(",", "")) * (1000 if r.get("Metric Unit") == "usecond" else 1)
    n[k] += 1
tot = sum(t.values())
for k, v in t.most_common(25):
    print(f"{100*v/tot:5.1f}% {v/1e6:8.3f} ms {n[k]:6d} x {k}")
PY
fi
for spec in "coupled 128x128x64x3:reservoir bjacobi,cpr bicgstab 4" "pressure-8m 256x256x128x1:channelized jacobi,amg cg 3"; do
  read -r name gen pcs solver reps <<<"$spec"
  "$h" bench precond --generate "$gen" --pcs "$pcs" --solver "$solver" --device gpu --reps "$reps" \
    --json "$out/precond-$name.json" >"$out/precond-$name.md" 2>"$out/precond-$name.err"
  echo "## bench precond $name (best of $reps)"; grep -E "^\| grid" "$out/precond-$name.md" | cut -c1-200
done
