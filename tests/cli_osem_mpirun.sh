#!/usr/bin/env bash
# heptane mlem --subsets S under mpirun (OSEM over the ranks): each rank cuts its own rows into
# S groups of its chunks and subset s is every rank's group s. The image must equal an
# independent NumPy OSEM (tests/osem_reference.py) over the subsets the JSON reports, for a
# chunk file and a Matrix Market file on 2 and 3 ranks; more subsets than a rank has chunks
# is a usage error on every rank.
#   tests/cli_osem_mpirun.sh HEPTANE MPIEXEC [MPI flags...]
# On CPU ranks by default; with HEPTANE_TEST_DEVICE=cuda on the GPU: exits 77, skipped, where
# there is no GPU, and where no python3 has numpy (no reference).
set -euo pipefail
heptane=$1
mpiexec=$2
shift 2
flags=("$@")
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_osem_mpirun: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
py=""  # an interpreter with numpy: the system's (apt python3-numpy), else the first on PATH
for p in /usr/bin/python3 python3; do
  if "$p" -c "import numpy" 2>/dev/null; then
    py=$p
    break
  fi
done
if [ -z "$py" ]; then
  echo "cli_osem_mpirun: no python3 with numpy here (the reference): skipped"
  exit 77
fi
# shellcheck source=lib/compare_vectors.sh
. "$here/lib/compare_vectors.sh"
"$heptane" pet --rings 2 --detectors 64 --image 24 --slices 4 -o "$dir/A.mtx" --counts "$dir/g.mtx" >/dev/null
"$heptane" pet --rings 2 --detectors 64 --image 24 --slices 4 -o "$dir/A.hoc" --chunk-bytes 16k --quiet >/dev/null
for np in 2 3; do
  for a in A.hoc A.mtx; do
    for s in 2 3; do
      "$mpiexec" -np "$np" "${flags[@]}" "$heptane" mlem "$dir/$a" "$dir/g.mtx" --iters 4 \
        --subsets "$s" --device "$device" --chunk-bytes 16k -o "$dir/f.mtx" --json >"$dir/r.json"
      grep -q "\"subsets\": $s" "$dir/r.json"
      grep -q "\"ranks\": $np" "$dir/r.json"
      layout=$(sed -n 's/.* subsets of every rank.s rows (\([0-9.,| ]*\)), block 0.*/\1/p' "$dir/r.json")
      [ -n "$layout" ] || { echo "no subset layout in the JSON:"; cat "$dir/r.json"; exit 1; }
      [ "$(echo "$layout" | tr '|' '\n' | wc -l)" -eq "$s" ] || { echo "layout $layout: not $s subsets"; exit 1; }
      ll=$(sed -n 's/.*"loglik": \[[^]]*, \([-0-9.e+]*\)\].*/\1/p' "$dir/r.json")
      ref=$("$py" "$here/osem_reference.py" "$dir/A.mtx" "$dir/g.mtx" 4 "$layout" "$dir/fref.mtx")
      echo "OSEM $a, $s subsets on $np ranks ($layout): L $ll, reference ${ref#loglik }"
      compare "$dir/f.mtx" "$dir/fref.mtx" 1e-10
      awk -v a="$ll" -v b="${ref#loglik }" 'BEGIN { d = a - b; if (d < 0) d = -d; exit d <= 1e-10 * (b < 0 ? -b : b) ? 0 : 1 }' ||
        { echo "log-likelihood $ll vs the reference's ${ref#loglik }"; exit 1; }
    done
  done
done
# more subsets than a rank's chunks: a usage error (exit 2) naming --subsets, no rank left waiting
set +e
"$mpiexec" -np 2 "${flags[@]}" "$heptane" mlem "$dir/A.hoc" "$dir/g.mtx" --iters 2 --subsets 40 \
  --device "$device" >/dev/null 2>"$dir/err.txt"
rc=$?
set -e
cat "$dir/err.txt"
[ "$rc" -ne 0 ] || { echo "--subsets 40 on 2 ranks of 24 chunks: exit 0, expected a usage error"; exit 1; }
grep -q -- "--subsets 40" "$dir/err.txt"
echo "cli_osem_mpirun: all checks passed on $device"
