#!/usr/bin/env bash
# heptane mlem under mpirun: each rank streams its own rows out of core (a group of a chunk
# file's chunks, or a block of a Matrix Market file's rows) and the back projections are summed
# over the ranks; the image on 2 and 3 ranks must equal the one-process image, the JSON must
# name the ranks, and OSEM under mpirun is a usage error.
#   tests/cli_mlem_mpirun.sh HEPTANE MPIEXEC [MPI flags...]
# On CPU ranks by default; with HEPTANE_TEST_DEVICE=cuda on the GPU (ranks may share one; the
# sums go through host memory): exits 77, skipped, where there is no GPU.
set -euo pipefail
heptane=$1
mpiexec=$2
shift 2
flags=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_mlem_mpirun: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
# shellcheck source=lib/compare_vectors.sh
. "$(dirname "$0")/lib/compare_vectors.sh"
"$heptane" pet --rings 2 --detectors 64 --image 24 --slices 4 -o "$dir/A.mtx" --counts "$dir/g.mtx" >/dev/null
"$heptane" pet --rings 2 --detectors 64 --image 24 --slices 4 -o "$dir/A.hoc" --chunk-bytes 16k --quiet >/dev/null
"$heptane" mlem "$dir/A.mtx" "$dir/g.mtx" --iters 8 --device cpu --out-of-core off -o "$dir/f1.mtx" \
  --json >"$dir/one.json"
for np in 2 3; do
  for a in A.hoc A.mtx; do
    "$mpiexec" -np "$np" "${flags[@]}" "$heptane" mlem "$dir/$a" "$dir/g.mtx" --iters 8 \
      --device "$device" --chunk-bytes 16k -o "$dir/f_$np.mtx" --json >"$dir/r_$np.json"
    cat "$dir/r_$np.json"
    grep -q "\"ranks\": $np" "$dir/r_$np.json"
    grep -q "\"operator\": \"rank 0 of $np: rows 1\\.\\." "$dir/r_$np.json"
    echo "mlem $a on $np ranks against one process:"
    compare "$dir/f_$np.mtx" "$dir/f1.mtx" 1e-10
  done
done
set +e
"$mpiexec" -np 2 "${flags[@]}" "$heptane" mlem "$dir/A.hoc" "$dir/g.mtx" --iters 2 --subsets 2 \
  --device "$device" >/dev/null 2>"$dir/err.txt"
rc=$?
set -e
cat "$dir/err.txt"
[ "$rc" -ne 0 ] || { echo "OSEM under mpirun: exit 0, expected a usage error"; exit 1; }
grep -q "not built" "$dir/err.txt"
echo "cli_mlem_mpirun: all checks passed on $device"
