#!/usr/bin/env bash
# heptane mlem, lsqr and solve A.hoc under mpirun: each rank streams its own rows out of core
# (a group of a chunk file's chunks, or for mlem and lsqr a block of a Matrix Market file's
# rows); mlem sums the back projections over the ranks, lsqr A^T u and the row norms, solve
# gathers x at every product and sums the dot products. The image and LSQR's x on 2 and 3
# ranks must equal the one-process results and solve's iterations and x the one-process
# solve's; the JSON must name the ranks (OSEM under mpirun: cli_osem_mpirun.sh).
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
# lsqr: A^T u and the row norms summed over the ranks; 6 iterations (LSQR amplifies rounding,
# see cli_outofcore.sh) against one process in core
"$heptane" lsqr "$dir/A.mtx" "$dir/g.mtx" --iter-lim 6 --device cpu --out-of-core off \
  -o "$dir/l1.mtx" --json >"$dir/l1.json" || true  # istop 7: exit 1
grep -q '"itn": 6' "$dir/l1.json"
for np in 2 3; do
  for a in A.hoc A.mtx; do
    "$mpiexec" -np "$np" "${flags[@]}" "$heptane" lsqr "$dir/$a" "$dir/g.mtx" --iter-lim 6 \
      --device "$device" --chunk-bytes 16k -o "$dir/l_$np.mtx" --json >"$dir/lr_$np.json" || true
    cat "$dir/lr_$np.json"
    grep -q '"itn": 6' "$dir/lr_$np.json"
    grep -q "\"ranks\": $np" "$dir/lr_$np.json"
    grep -q "on rank 0 of $np (A^T u summed" "$dir/lr_$np.json"
    echo "lsqr $a on $np ranks against one process:"
    compare "$dir/l_$np.mtx" "$dir/l1.mtx" 1e-7
  done
done
# solve from a chunk file (BDIA-GH and CSR chunks) on 2 and 3 ranks against one process
"$heptane" gen --grid 10x8x9 --nc 3 --model reservoir -o "$dir/H.mtx" >/dev/null 2>&1
"$heptane" convert "$dir/H.mtx" -o "$dir/Hb.hoc" --chunk-bytes 16k --quiet >/dev/null
"$heptane" convert "$dir/H.mtx" -o "$dir/Hc.hoc" --chunk-bytes 16k --chunk-format csr --quiet >/dev/null
its() { sed -n 's/.*"iterations": \([0-9]*\).*/\1/p' "$1"; }
for h in Hb Hc; do
  for run in "--pc jacobi --solver bicgstab" "--pc bjacobi --solver gmres" "--pc jacobi --solver cg"; do
    # shellcheck disable=SC2086
    "$heptane" solve "$dir/$h.hoc" $run --rtol 1e-10 --device "$device" --json -o "$dir/x1.mtx" \
      >"$dir/s1.json"
    grep -q '"converged": true' "$dir/s1.json"
    for np in 2 3; do
      # shellcheck disable=SC2086
      "$mpiexec" -np "$np" "${flags[@]}" "$heptane" solve "$dir/$h.hoc" $run --rtol 1e-10 \
        --device "$device" --host-memory 40k --json -o "$dir/x_$np.mtx" >"$dir/s_$np.json"
      cat "$dir/s_$np.json"
      grep -q '"converged": true' "$dir/s_$np.json"
      grep -q "on rank 0 of $np" "$dir/s_$np.json"
      a=$(its "$dir/s1.json")
      b=$(its "$dir/s_$np.json")
      echo "solve $h.hoc $run: $b iterations on $np ranks, $a on one"
      awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit d <= 1 ? 0 : 1 }'
      compare "$dir/x_$np.mtx" "$dir/x1.mtx" 1e-8
    done
  done
done
# the gather models: host named, auto (nccl where each rank has a GPU of its own and the build
# has NCCL, else host) -- both the one-process answer; usage errors for what does not apply
"$heptane" solve "$dir/Hb.hoc" --pc jacobi --rtol 1e-10 --device "$device" --json -o "$dir/x1.mtx" \
  >"$dir/s1.json"
for gather in host auto; do
  "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/Hb.hoc" --pc jacobi --rtol 1e-10 \
    --device "$device" --gather "$gather" --reduce auto --json -o "$dir/x_g.mtx" >"$dir/s_g.json"
  grep -o '"operator": "[^"]*"' "$dir/s_g.json"
  grep -q '"converged": true' "$dir/s_g.json"
  if [ "$gather" = host ] || [ "$device" = cpu ]; then
    grep -q 'x gathered through host memory' "$dir/s_g.json"
  fi
  echo "solve Hb.hoc --gather $gather on 2 ranks against one process:"
  compare "$dir/x_g.mtx" "$dir/x1.mtx" 1e-8
done
usage() {  # expected exit status 2 and a message naming the option
  local opt=$1
  shift
  set +e
  "$@" >/dev/null 2>"$dir/err.txt"
  local rc=$?
  set -e
  cat "$dir/err.txt"
  [ "$rc" -eq 2 ] || { echo "$*: exit $rc, expected 2 (usage)"; exit 1; }
  grep -q -- "$opt" "$dir/err.txt"
}
usage --gather "$heptane" solve "$dir/Hb.hoc" --gather host --device "$device"
# --device-memory is per rank, less the vectors the rank holds: its rows of 8 and 2 whole
# (x gathered, one to spare), not 10 of the whole length. Hb: 2160 rows; 10 vectors of them
# are 172,800 bytes, a rank of 2 holds 8 x 1080 + 2 x 2160 (103,680): 150,000 is too little
# for one process and enough for each of 2 ranks.
usage --device-memory "$heptane" solve "$dir/Hb.hoc" --pc jacobi --device "$device" \
  --device-memory 150000
if [ "$device" = cpu ]; then  # on a GPU 150,000 bytes leave no room for a stream buffer
  "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/Hb.hoc" --pc jacobi --rtol 1e-10 \
    --device cpu --device-memory 150000 --json -o "$dir/x_b.mtx" >"$dir/s_b.json"
  grep -q '"converged": true' "$dir/s_b.json"
  compare "$dir/x_b.mtx" "$dir/x1.mtx" 1e-8
fi
usage --gather "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/Hb.hoc" --gather device \
  --device "$device"
usage --halo "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/Hb.hoc" --halo nccl \
  --device "$device"
usage --reduce "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/Hb.hoc" --reduce sum \
  --device "$device"
if [ "$device" = cpu ]; then  # the device-to-device gather needs GPUs
  set +e
  "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "$dir/Hb.hoc" --gather nccl --device cpu \
    >/dev/null 2>"$dir/err.txt"
  rc=$?
  set -e
  cat "$dir/err.txt"
  [ "$rc" -ne 0 ] || { echo "--gather nccl on CPU ranks: exit 0, expected a failure"; exit 1; }
  grep -q "the nccl model is for GPU vectors" "$dir/err.txt"
fi
echo "cli_mlem_mpirun: all checks passed on $device"
