#!/usr/bin/env bash
# Matrix Market reading, side by side on the same files (issue #22): heptane's reader, the
# file's bytes alone (as `cat FILE > /dev/null`), Eigen's loadMarket (`heptane bench mmread`)
# and SciPy's scipy.io.mmread (apt's /usr/bin/python3), best of --reps each. Prints a
# markdown table; the page cache is warm after the first read of each file (this is a
# reading-speed comparison, not a cold-disk one).
#
#   bash scripts/mmread-compare.sh [--reps N] [--no-eigen] FILE...
#
# Environment: HEPTANE [build/apps/heptane], PYTHON [/usr/bin/python3].
set -uo pipefail
heptane=${HEPTANE:-build/apps/heptane}
python=${PYTHON:-/usr/bin/python3}
reps=3 eigen=()
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift ;;
    --no-eigen) eigen=(--no-eigen) ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) files+=("$1") ;;
  esac
  shift
done
[ ${#files[@]} -gt 0 ] || { echo "mmread-compare: no FILE given" >&2; exit 2; }
echo "| file | MB | entries | bytes alone MB/s | heptane MB/s | Eigen MB/s | SciPy MB/s | heptane / Eigen | heptane / SciPy |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
status=0
for f in "${files[@]}"; do
  j=$("$heptane" bench mmread "$f" --reps "$reps" "${eigen[@]}" --json) || { echo "heptane failed on $f" >&2; status=1; continue; }
  s=$("$python" - "$f" "$reps" <<'PY'
import sys, time
import scipy.io
path, reps = sys.argv[1], int(sys.argv[2])
best = None
for _ in range(reps):
    t = time.perf_counter()
    scipy.io.mmread(path)
    t = time.perf_counter() - t
    best = t if best is None else min(best, t)
print(best)
PY
) || { echo "SciPy failed on $f" >&2; s=""; status=1; }
  "$python" - "$j" "${s:-nan}" "$(basename "$f")" <<'PY'
import json, math, sys
j, scipy_s, name = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
mb = j["bytes"] / 1e6
hep = j["heptane_mb_per_s"]
eig = j["eigen_mb_per_s"]
sci = mb / scipy_s if scipy_s == scipy_s and scipy_s > 0 else None
fmt = lambda v: "-" if v is None else f"{v:.0f}"
ratio = lambda a, b: "-" if not b else f"{a / b:.1f}x"
print(f"| {name} | {mb:.1f} | {j['nnz']} | {j['read_mb_per_s']:.0f} | {hep:.0f} | {fmt(eig)} | {fmt(sci)} | {ratio(hep, eig)} | {ratio(hep, sci)} |")
PY
done
exit "$status"
