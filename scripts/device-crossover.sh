#!/usr/bin/env bash
# Where the GPU starts to win (issue #20: `--device auto` by a measured model): `heptane solve`
# with its defaults on the CPU and on the GPU, one process each, on generated reservoir systems
# of growing size (Nc = 1 and 3) and on the real matrices of the data folder. Prints and writes
# a CSV: system, rows, nnz, device, converged, iterations, setup and solve seconds (heptane's
# own), total (heptane's) and the process's wall seconds (CUDA start-up included).
#
#   H=build-gpu/apps/heptane DATA=.data OUT=/tmp/x bash scripts/device-crossover.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
h=${H:-build-gpu/apps/heptane}
data=${DATA:-.data}
out=${OUT:-$PWD}
csv=$out/device-crossover.csv
echo "system,rows,nnz,device,converged,iterations,setup_s,solve_s,total_s,wall_s" >"$csv"
run() {  # label, then heptane solve arguments
  local label=$1
  shift
  for dev in cpu gpu; do
    local t0 t1 j
    t0=$(date +%s%N)
    j=$("$h" solve "$@" --device "$dev" --json --quiet 2>/dev/null | tail -1)
    t1=$(date +%s%N)
    python3 - "$label" "$dev" "$(((t1 - t0) / 1000))" "$j" >>"$csv" <<'PY'
import json, sys
label, dev, us, j = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    d = json.loads(j)
except ValueError:
    print(f"{label},,,{dev},error,,,,,{us / 1e6:.4f}"); sys.exit()
print(f"{label},{d['rows']},{d['nnz']},{dev},{str(d['converged']).lower()},{d['iterations']},"
      f"{d['setup_seconds']:.4f},{d['solve_seconds']:.4f},{d['total_seconds']:.4f},{us / 1e6:.4f}")
PY
  done
}
for n in 8 16 24 32 48 64 96 128; do run "gen-${n}^3" --generate "${n}x${n}x${n}"; done
for n in 8 16 32 64; do run "gen-${n}^3x3" --generate "${n}x${n}x${n}x3"; done
for f in "$data"/*.mtx; do
  case "$f" in *rhs*) continue ;; esac
  read -r m n _ < <(grep -v '^%' "$f" | head -1)
  [ "$m" = "$n" ] || continue  # least-squares systems: not for solve
  b=${f%.mtx}
  rhs=()
  for r in "${b}_rhs1.mtx" "${b%_1}_rhs.mtx"; do [ -f "$r" ] && rhs=(-b "$r") && break; done
  case "$f" in *matr33*) rhs=(-b "$data/opm_rhs3.mtx") ;; esac
  run "$(basename "$b")" "$f" "${rhs[@]}"
done
column -s, -t "$csv"
