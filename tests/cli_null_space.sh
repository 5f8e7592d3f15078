#!/usr/bin/env bash
# heptane solve --null-space constant on a pure-Neumann Laplacian (A 1 = 0, singular): AMG's
# coarsest level by a generalized inverse, the constant removed from the solution's correction
# -- the answer has zero mean from a zero initial guess and keeps the initial guess's constant
# from --x0 --, the true residual met, the JSON key null_space_removed a number; a matrix whose
# rows do not sum to zero is refused (exit 1, the row named), a bad value exits 2. Under
# MPIEXEC (when given) the same on 2 ranks, with one AMG per rank, one over the ranks (the default
# on CPU ranks) and with the global coarse correction (--coarse: its singular A_c by a
# generalized inverse, or by AMG).
#   tests/cli_null_space.sh HEPTANE [MPIEXEC [MPI flags...]]
set -euo pipefail
heptane=$1
mpiexec=${2:-}
shift $(($# >= 2 ? 2 : 1))
flags=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# 10 x 10 x 10 cells, 7-point, every diagonal entry the number of the cell's neighbours
awk 'BEGIN { m = 10; n = m * m * m; c = 0
  for (z = 0; z < m; z++) for (y = 0; y < m; y++) for (x = 0; x < m; x++) {
    i = x + m * (y + m * z) + 1; d = 0
    if (x > 0) { r[++c] = i; k[c] = i - 1; v[c] = -1; d++ }
    if (x < m - 1) { r[++c] = i; k[c] = i + 1; v[c] = -1; d++ }
    if (y > 0) { r[++c] = i; k[c] = i - m; v[c] = -1; d++ }
    if (y < m - 1) { r[++c] = i; k[c] = i + m; v[c] = -1; d++ }
    if (z > 0) { r[++c] = i; k[c] = i - m * m; v[c] = -1; d++ }
    if (z < m - 1) { r[++c] = i; k[c] = i + m * m; v[c] = -1; d++ }
    r[++c] = i; k[c] = i; v[c] = d }
  print "%%MatrixMarket matrix coordinate real general"; print n, n, c
  for (q = 1; q <= c; q++) print r[q], k[q], v[q]
  # b with zero mean (consistent: A is symmetric, its transpose null space the constants)
  s = 0; for (i = 1; i <= n; i++) { b[i] = sin(0.37 * i) + 0.01 * (i % 7); s += b[i] }
  print "%%MatrixMarket matrix array real general" > "'"$dir"'/b.mtx"
  print n, 1 > "'"$dir"'/b.mtx"
  for (i = 1; i <= n; i++) printf "%.17g\n", b[i] - s / n > "'"$dir"'/b.mtx"
  print "%%MatrixMarket matrix array real general" > "'"$dir"'/x0.mtx"
  print n, 1 > "'"$dir"'/x0.mtx"
  for (i = 1; i <= n; i++) printf "%.17g\n", 5 + 0.1 * sin(i) > "'"$dir"'/x0.mtx" }' >"$dir/A.mtx"
json_num() { sed -n "s/.*\"$2\": \([-0-9.e+]*\).*/\1/p" "$1"; }
# the mean of a Matrix Market array vector, and its largest magnitude
mean_of() { awk '/^%/ { next } !size { size = 1; next } { s += $1; n++; if ($1 > m) m = $1; if (-$1 > m) m = -$1 }
  END { printf "%.6e %.6e\n", s / n, m }' "$1"; }
check() {  # check NAME JSON X WANT_MEAN: converged, true residual, the mean of x
  grep -q '"converged": true' "$2" || { cat "$2"; echo "$1: not converged"; exit 1; }
  local relres removed
  relres=$(json_num "$2" true_relres)
  removed=$(json_num "$2" null_space_removed)
  read -r mean big < <(mean_of "$3")
  echo "$1: true relres $relres, constant removed $removed, mean of x $mean (max |x| $big)"
  awk -v r="$relres" 'BEGIN { exit (r + 0 >= 0 && r + 0 <= 1.01e-9) ? 0 : 1 }'
  [ -n "$removed" ] || { echo "$1: null_space_removed is not a number"; exit 1; }
  awk -v m="$mean" -v w="$4" -v b="$big" 'BEGIN { d = m - w; if (d < 0) d = -d; exit (d <= 1e-9 * b) ? 0 : 1 }'
}
for pc in amg jacobi; do
  "$heptane" solve "$dir/A.mtx" -b "$dir/b.mtx" --device cpu --solver cg --pc "$pc" \
    --rtol 1e-9 --null-space constant -o "$dir/x_$pc.mtx" --json >"$dir/$pc.json"
  check "cg + $pc" "$dir/$pc.json" "$dir/x_$pc.mtx" 0
done
grep -q 'generalized inverse, rank' "$dir/amg.json" ||
  { cat "$dir/amg.json"; echo "amg: the generalized inverse is not in the report"; exit 1; }
# from --x0 (mean 5 + 0.1 mean(sin)): the answer keeps its constant
want=$(mean_of "$dir/x0.mtx" | cut -d' ' -f1)
"$heptane" solve "$dir/A.mtx" -b "$dir/b.mtx" --x0 "$dir/x0.mtx" --device cpu --solver gmres \
  --pc amg --rtol 1e-9 --null-space constant -o "$dir/x_x0.mtx" --json >"$dir/x0.json"
check "gmres + amg from --x0" "$dir/x0.json" "$dir/x_x0.mtx" "$want"
# the text report says it
"$heptane" solve "$dir/A.mtx" -b "$dir/b.mtx" --device cpu --solver cg --pc amg \
  --null-space constant --quiet | grep -q "null space: the constant removed from the solution's correction"
# not singular: refused with the row named; a bad value: usage (exit 2)
set +e
"$heptane" solve --generate 6x6x6x1 --device cpu --null-space constant >"$dir/bad.out" 2>&1
rc=$?
"$heptane" solve "$dir/A.mtx" --null-space linear >"$dir/usage.out" 2>&1
rc2=$?
set -e
cat "$dir/bad.out" "$dir/usage.out"
[ "$rc" = 1 ] && grep -q "row 1 sums to" "$dir/bad.out"
[ "$rc2" = 2 ] && grep -q "the choices are none and constant" "$dir/usage.out"
if [ -n "$mpiexec" ]; then
  for how in "--pc amg --amg-per-rank" "--pc amg" "--pc jacobi --coarse" "--pc amg --coarse --coarse-solve amg"; do
    # shellcheck disable=SC2086
    "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/A.mtx" -b "$dir/b.mtx" --device cpu \
      --solver cg $how --rtol 1e-9 --null-space constant -o "$dir/x_np2.mtx" --json >"$dir/np2.json"
    check "2 ranks, cg $how" "$dir/np2.json" "$dir/x_np2.mtx" 0
    # the global coarse correction: its singular A_c by a generalized inverse (dense) or AMG's
    case "$how" in
    *"--coarse-solve amg"*) grep -q 'global coarse correction' "$dir/np2.json" ;;
    *--coarse*) grep -q 'a generalized inverse (null space declared: rank' "$dir/np2.json" ||
      { cat "$dir/np2.json"; echo "coarse: the generalized inverse is not in the report"; exit 1; } ;;
    esac
  done
fi
echo "cli_null_space: OK"
