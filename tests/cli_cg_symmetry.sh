#!/usr/bin/env bash
# heptane solve --solver cg checks that A is symmetric before it iterates: a matrix with one
# mirrored pair that differs (or an entry whose mirror is missing) stops with exit 1 and that
# pair named (1-based, as in the file); a difference within the relative 1e-8 passes; the
# symmetric matrix converges; --no-symmetry-check runs CG anyway; the other solvers are not
# checked; heptane info reports the same pair. The matrices are written here with their pairs known. With MPIEXEC (and its flags):
# the same on 2 ranks (the file read by every rank; and --generate, whose Nc = 3 model is not
# symmetric and Nc = 1 model is, checked over the ranks together).
#   tests/cli_cg_symmetry.sh HEPTANE [MPIEXEC MPI flags...]
set -uo pipefail
heptane=$1
shift
mpi=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
# a 6 x 6 tridiagonal matrix (4 on the diagonal, -1 beside it) with a(3,4) = $1, a(4,3) = $2
# and, when $3 is given, a(1,6) = $3 without its mirror
tridiag() {
  local extra=0
  [ -n "${3:-}" ] && extra=1
  {
    echo "%%MatrixMarket matrix coordinate real general"
    echo "6 6 $((16 + extra))"
    for i in 1 2 3 4 5 6; do
      echo "$i $i 4"
      if [ "$i" -lt 6 ]; then
        if [ "$i" = 3 ]; then echo "3 4 $1"; echo "4 3 $2"; else echo "$i $((i + 1)) -1"; echo "$((i + 1)) $i -1"; fi
      fi
    done
    [ "$extra" = 1 ] && echo "1 6 $3"
  } >"$4"
}
tridiag -1 -1 "" "$dir/sym.mtx"
tridiag -1 -1.000000000001 "" "$dir/near.mtx"
tridiag -1 -2 "" "$dir/pair.mtx"
tridiag -1 -1 0.001 "$dir/missing.mtx"

run() {  # expected status, expected text on stderr (or ""), then the command
  local want=$1 text=$2
  shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL: $*: exit $rc, expected $want; stderr: $(head -c 400 "$dir/err")"
    fail=1
  elif [ -n "$text" ] && ! grep -qF -- "$text" "$dir/err"; then
    echo "FAIL: $*: stderr lacks '$text': $(head -c 400 "$dir/err")"
    fail=1
  else
    echo "ok: exit $rc: $*"
  fi
}
h=("$heptane" solve --device cpu --quiet --rtol 1e-10)
run 0 "" "${h[@]}" "$dir/sym.mtx" --solver cg
grep -q "reason converged_rtol" "$dir/out" || { echo "FAIL: the symmetric matrix did not converge"; fail=1; }
run 0 "" "${h[@]}" "$dir/near.mtx" --solver cg
run 1 "A is not symmetric: a(3, 4) = -1 but a(4, 3) = -2 (relative difference 0.5 > 1e-08)" \
  "${h[@]}" "$dir/pair.mtx" --solver cg
run 1 "A is not symmetric: a(1, 6) = 0.001 but a(6, 1) = 0 (relative difference 1 > 1e-08)" \
  "${h[@]}" "$dir/missing.mtx" --solver cg
run 1 "use --solver bicgstab or gmres" "${h[@]}" "$dir/pair.mtx" --solver cg --pc amg --json
[ -s "$dir/out" ] && { echo "FAIL: --json printed a result for a solve that never ran"; fail=1; }
run 0 "" "${h[@]}" "$dir/pair.mtx" --solver cg --no-symmetry-check
run 0 "" "${h[@]}" "$dir/pair.mtx" --solver bicgstab
run 0 "" "${h[@]}" "$dir/pair.mtx" --solver gmres
run 1 "A is not symmetric" "${h[@]}" --generate 6x5x4x3 --solver cg
run 0 "" "${h[@]}" --generate 6x5x4x1 --solver cg
# heptane info names the same pair (text and JSON), and says yes for the symmetric one
"$heptane" info "$dir/pair.mtx" --quiet >"$dir/info.txt"
grep -qF "symmetric   no: a(3, 4) = -1 but a(4, 3) = -2 (relative difference 0.5)" "$dir/info.txt" ||
  { echo "FAIL: info: $(grep symmetric "$dir/info.txt")"; fail=1; }
"$heptane" info "$dir/pair.mtx" --json >"$dir/info.json"
grep -qF '"symmetric": false, "symmetry_worst": {"row": 3, "col": 4, "aij": -1, "aji": -2, "relative_difference": 0.5}' "$dir/info.json" ||
  { echo "FAIL: info --json: $(cat "$dir/info.json")"; fail=1; }
"$heptane" info "$dir/near.mtx" --json | grep -qF '"symmetric": true, "symmetry_worst": null' ||
  { echo "FAIL: info --json on the matrix symmetric within 1e-8"; fail=1; }
"$heptane" info "$dir/sym.mtx" --quiet | grep -q "^symmetric   yes" || { echo "FAIL: info on the symmetric matrix"; fail=1; }
if [ "${#mpi[@]}" -gt 0 ]; then
  m=("${mpi[0]}" -np 2 "${mpi[@]:1}" "$heptane" solve --device cpu --quiet --rtol 1e-10)
  run 1 "A is not symmetric: a(3, 4) = -1 but a(4, 3) = -2" "${m[@]}" "$dir/pair.mtx" --solver cg
  run 0 "" "${m[@]}" "$dir/sym.mtx" --solver cg
  run 0 "" "${m[@]}" "$dir/pair.mtx" --solver cg --no-symmetry-check
  run 1 "A is not symmetric" "${m[@]}" --generate 6x5x4x3 --solver cg
  run 0 "" "${m[@]}" --generate 6x5x4x1 --solver cg
  run 0 "" "${m[@]}" --generate 6x5x4x3 --solver bicgstab
fi
exit $fail
