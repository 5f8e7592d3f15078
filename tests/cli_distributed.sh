#!/usr/bin/env bash
# heptane solve under mpirun: the answer on 2 ranks (whole planes) and on 3 ranks (an uneven
# split in cells) must match the one-process answer, and the JSON report must say so.
#   tests/cli_distributed.sh HEPTANE MPIEXEC [MPI flags...]
set -euo pipefail
heptane=$1
mpiexec=$2
shift 2
flags=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
spec=16x12x9x2:reservoir
common=(--generate "$spec" --rtol 1e-11 --max-it 2000 --pc bjacobi --device cpu)

"$heptane" solve "${common[@]}" -o "$dir/x1.mtx" --json >"$dir/one.json"
grep -q '"converged": true' "$dir/one.json"

compare() {  # max |a - b| / max |b| over two Matrix Market vectors
  awk 'FNR == 1 { f++ } /^%/ || NF != 1 { next }
       f == 1 { a[n1++] = $1 } f == 2 { b[n2++] = $1 }
       END { if (n1 != n2 || n1 == 0) { print "length " n1 " vs " n2; exit 1 }
             d = 0; m = 0
             for (i = 0; i < n1; i++) { e = a[i] - b[i]; if (e < 0) e = -e; if (e > d) d = e
                                        v = b[i]; if (v < 0) v = -v; if (v > m) m = v }
             r = d / m; print "max rel diff " r; exit (r <= 1e-8 ? 0 : 1) }' "$1" "$2"
}

for np in 2 3; do
  split=planes
  [ "$np" = 3 ] && split=cells
  "$mpiexec" -np "$np" "${flags[@]}" "$heptane" solve "${common[@]}" --split "$split" \
    -o "$dir/x$np.mtx" --json >"$dir/np$np.json"
  cat "$dir/np$np.json"
  grep -q '"converged": true' "$dir/np$np.json"
  grep -q "\"ranks\": $np" "$dir/np$np.json"
  compare "$dir/x$np.mtx" "$dir/x1.mtx"
done
# bad input is a clear error, not a hang: a halo model for GPUs on CPU ranks
if "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --halo nccl \
  >"$dir/bad.out" 2>&1; then
  echo "expected a failure for --halo nccl on CPU ranks"
  exit 1
fi
grep -q "nccl" "$dir/bad.out"
# a matrix that is not general-hepta (9 diagonals) is refused with the reason
awk 'BEGIN { n = 20; c = 0
  for (i = 1; i <= n; i++) for (d = -4; d <= 4; d++) if (i + d >= 1 && i + d <= n) c++
  print "%%MatrixMarket matrix coordinate real general"; print n, n, c
  for (i = 1; i <= n; i++) for (d = -4; d <= 4; d++) if (i + d >= 1 && i + d <= n)
    print i, i + d, (d == 0 ? 10 : -1) }' >"$dir/band9.mtx"
if "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/band9.mtx" --device cpu \
  >"$dir/band9.out" 2>&1; then
  echo "expected a failure for a matrix that is not general-hepta"
  exit 1
fi
grep -q "is not a general-hepta matrix" "$dir/band9.out"
echo "cli_distributed: OK"
