#!/usr/bin/env bash
# heptane solve --pc amg | cpr, heptane info --verbose and heptane bench precond, end to end:
# AMG-preconditioned CG on the channelized pressure converges in far fewer iterations than
# Jacobi with the true residual met and the error against x_true small; the --amg-* options
# reach the hierarchy; CPR solves a coupled system; info --verbose prints the levels (text and
# JSON); bench precond writes a CSV row per preconditioner; bad options exit 2.
#   tests/cli_amg.sh HEPTANE
# With HEPTANE_TEST_DEVICE=cuda on the GPU (exit 77, skipped, without one).
set -euo pipefail
heptane=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_amg: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
json_num() { sed -n "s/.*\"$2\": \([-0-9.e+]*\).*/\1/p" "$1"; }
gen=24x24x12x1:channelized
"$heptane" solve --generate $gen --device $device --solver cg --pc amg --rtol 1e-8 --json \
  >"$dir/amg.json"
"$heptane" solve --generate $gen --device $device --solver cg --pc jacobi --rtol 1e-8 \
  --max-it 5000 --json >"$dir/jacobi.json"
cat "$dir/amg.json"
grep -q '"converged": true' "$dir/amg.json"
grep -q '"converged": true' "$dir/jacobi.json"
its_amg=$(json_num "$dir/amg.json" iterations)
its_jac=$(json_num "$dir/jacobi.json" iterations)
relres=$(json_num "$dir/amg.json" true_relres)
err=$(json_num "$dir/amg.json" error_vs_xtrue)
echo "amg $its_amg iterations, jacobi $its_jac, true relres $relres, error $err"
awk -v a="$its_amg" -v j="$its_jac" 'BEGIN { exit (a >= 1 && a <= 25 && 5 * a <= j) ? 0 : 1 }'
awk -v r="$relres" 'BEGIN { exit (r + 0 >= 0 && r + 0 <= 1.01e-8) ? 0 : 1 }'
awk -v e="$err" 'BEGIN { exit (e + 0 >= 0 && e + 0 <= 1e-5) ? 0 : 1 }'
grep -q '"preconditioner": "amg (smoothed aggregation' "$dir/amg.json"
# options reach the hierarchy: a W-cycle with l1-Jacobi and a larger coarsest level
"$heptane" solve --generate $gen --device $device --solver cg --pc amg --amg-cycle w \
  --amg-smoother l1jacobi --amg-coarse-size 1000 --amg-sweeps 3 --json >"$dir/opts.json"
grep -q '"converged": true' "$dir/opts.json"
grep -q 'l1jacobi(3,3), W-cycle' "$dir/opts.json"
# the coarse levels in one launch (--amg-tail-rows): said in the description, still converged
"$heptane" solve --generate $gen --device $device --solver cg --pc amg --amg-tail-rows 100000 \
  --rtol 1e-8 --json >"$dir/tail.json"
grep -q '"converged": true' "$dir/tail.json"
grep -q 'levels 1-[0-9]* (at most 100000 rows) in one launch' "$dir/tail.json"
! grep -q 'in one launch' "$dir/opts.json"
# box aggregation with plain prolongation: every level a box of the grid below, 7-point
"$heptane" solve --generate $gen --device $device --solver cg --pc amg --amg-aggregation box \
  --amg-p-weight 0 --rtol 1e-8 --json >"$dir/box.json"
grep -q '"converged": true' "$dir/box.json"
grep -q '"preconditioner": "amg (plain aggregation' "$dir/box.json"
grep -q 'aggregates box, grids 24x24x12/' "$dir/box.json"
relres=$(json_num "$dir/box.json" true_relres)
awk -v r="$relres" 'BEGIN { exit (r + 0 >= 0 && r + 0 <= 1.01e-8) ? 0 : 1 }'
if "$heptane" solve --generate $gen --pc amg --amg-aggregation boxes >/dev/null 2>"$dir/bad.txt"; then
  exit 1
fi
grep -q "choices: mis, box" "$dir/bad.txt"
# CPR on a coupled system
"$heptane" solve --generate 16x12x8x3:channelized --device $device --pc cpr --rtol 1e-8 --json \
  >"$dir/cpr.json"
grep -q '"converged": true' "$dir/cpr.json"
grep -q '"preconditioner": "cpr (quasi-IMPES' "$dir/cpr.json"
# info --verbose: the hierarchy, as text and JSON
"$heptane" info --generate $gen --verbose --quiet >"$dir/info.txt"
grep -q "^AMG hierarchy" "$dir/info.txt"
grep -q "operator complexity" "$dir/info.txt"
"$heptane" info --generate $gen --verbose --json >"$dir/info.json"
/usr/bin/python3 - "$dir/info.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lv = d["amg"]["levels"]
assert len(lv) >= 2 and lv[0]["rows"] == 24 * 24 * 12, lv
assert all(lv[i]["rows"] > lv[i + 1]["rows"] for i in range(len(lv) - 1)), lv
oc = sum(l["nnz"] for l in lv) / lv[0]["nnz"]
assert abs(oc - d["amg"]["operator_complexity"]) < 1e-4, (oc, d["amg"])
PY
# bench precond: one CSV row per preconditioner, all converged
"$heptane" bench precond --generate 16x16x8x1:channelized --pcs jacobi,amg --solver cg \
  --device $device --csv "$dir/bench.csv" >"$dir/bench.md"
cat "$dir/bench.md"
[ "$(grep -c ',cg,' "$dir/bench.csv")" = 2 ]
! grep -q ',0,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*$' "$dir/bench.csv"
# bad input: usage errors exit 2
for bad in "--amg-smoother sor" "--amg-cycle x" "--amg-sweeps 0" "--amg-threshold -1" \
  "--cpr-second foo" "--amg-tail-rows -1"; do
  set +e
  # shellcheck disable=SC2086
  "$heptane" solve --generate 8x8x4x1 --device $device --pc amg $bad >/dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "solve --pc amg $bad: exit $rc, expected 2"; exit 1; }
done
echo "cli_amg: all checks passed"
