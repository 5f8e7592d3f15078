#!/usr/bin/env bash
# heptane solve under mpirun: the answer on 2 ranks (whole planes) and on 3 ranks (an uneven
# split in cells) must match the one-process answer, and the JSON report must say so; from a
# nonzero --x0 (the answer itself: next to no iterations) and in --precision mixed and single.
#   tests/cli_distributed.sh HEPTANE MPIEXEC [MPI flags...]
# On CPU ranks by default; with HEPTANE_TEST_DEVICE=cuda on GPUs, one per rank: it exits 77,
# skipped, where there are fewer than 3 GPUs (ranks sharing a GPU would not run the multi-GPU
# halo and reduction models it is meant to test) unless HEPTANE_TEST_SHARE_GPU=1 (then the
# ranks share what there is: the host-staged models).
set -euo pipefail
heptane=$1
mpiexec=$2
shift 2
flags=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
spec=16x12x9x2:reservoir
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
  if [ "${gpus:-0}" -lt 3 ] && ! { [ "${HEPTANE_TEST_SHARE_GPU:-0}" = 1 ] && [ "${gpus:-0}" -ge 1 ]; }; then
    echo "cli_distributed: ${gpus:-0} GPU(s) here, 3 needed (one per rank; HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
common=(--generate "$spec" --rtol 1e-11 --max-it 2000 --pc bjacobi --device "$device")

"$heptane" solve "${common[@]}" -o "$dir/x1.mtx" --json >"$dir/one.json"
grep -q '"converged": true' "$dir/one.json"

# shellcheck source=lib/compare_vectors.sh
. "$(dirname "$0")/lib/compare_vectors.sh"

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
# a generated grid with fewer z-planes than ranks: block-aligned ranges instead of whole planes
# (before 2026-12-05 an error, "2 z-planes cannot be split over 3 ranks")
thin=(--generate 6x5x2x2 --rtol 1e-11 --max-it 2000 --pc bjacobi --device "$device")
"$heptane" solve "${thin[@]}" -o "$dir/thin1.mtx" >/dev/null
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve "${thin[@]}" -o "$dir/thin3.mtx" --json \
  >"$dir/thin.json"
cat "$dir/thin.json"
grep -q '"converged": true' "$dir/thin.json"
grep -q '"partition": "0:\[0,40) 1:\[40,80) 2:\[80,120)"' "$dir/thin.json"
compare "$dir/thin3.mtx" "$dir/thin1.mtx"
# fewer blocks than ranks: a clear error that says how many ranks can run it (it said "z-planes"
# with --split cells too)
set +e
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve --generate 2x1x1 --device "$device" \
  >"$dir/tiny.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "2 blocks of 1 row cannot be split over 3 ranks .*run on at most 2 ranks" \
  "$dir/tiny.out" || { cat "$dir/tiny.out"; echo "2 cells on 3 ranks: exit $rc"; exit 1; }
json_int() {  # the integer value of key $1 in the JSON object in file $2
  sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$2"
}
# --coarse (the global coarse correction around each rank's block Jacobi) on 3 ranks: the same
# answer, named in the report, in no more iterations than without it
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve "${common[@]}" --split cells --coarse \
  --coarse-aggregates 8 -o "$dir/xc.mtx" --json >"$dir/coarse.json"
cat "$dir/coarse.json"
grep -q '"converged": true' "$dir/coarse.json"
grep -q 'global coarse correction ([0-9]* coarse unknowns: [0-9]* aggregates on this rank x Nc 2' "$dir/coarse.json"
compare "$dir/xc.mtx" "$dir/x1.mtx"
with=$(json_int iterations "$dir/coarse.json")
without=$(json_int iterations "$dir/np3.json")
if [ -z "$with" ] || [ -z "$without" ] || [ "$with" -gt "$without" ]; then
  echo "--coarse: '$with' iterations on 3 ranks, '$without' without it"
  exit 1
fi
echo "--coarse on 3 ranks: $with iterations, $without without"
# the AMG coarse solve with strength aggregates: the same answer, named in the report
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve "${common[@]}" --split cells --coarse \
  --coarse-aggregates 8 --coarse-solve amg --coarse-cycles 3 --coarse-aggregation strength \
  -o "$dir/xa.mtx" --json >"$dir/coarse_amg.json"
grep -q '"converged": true' "$dir/coarse_amg.json"
grep -q 'aggregates on this rank x Nc 2 ([a-z: ]*strength[a-z ]*), [0-9]* entries; AMG (3 cycles' "$dir/coarse_amg.json" ||
  { cat "$dir/coarse_amg.json"; echo "--coarse-solve amg: not in the report"; exit 1; }
compare "$dir/xa.mtx" "$dir/x1.mtx"
# --amg-global: one AMG hierarchy over the 3 ranks (uneven split in cells): the same answer,
# named in the report with P's truncation (--amg-p-max); with another --pc a usage error
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve --generate "$spec" --rtol 1e-11 --max-it 2000 \
  --device "$device" --split cells --pc amg --amg-global --amg-p-max 3 -o "$dir/xg.mtx" --json >"$dir/amg_global.json"
grep -q '"converged": true' "$dir/amg_global.json"
grep -q 'AMG over 3 ranks ([0-9]* levels, rows [0-9 ]*, operator complexity [0-9.]*; P at most 3 entries a row' "$dir/amg_global.json" ||
  { cat "$dir/amg_global.json"; echo "--amg-global --amg-p-max 3: not in the report"; exit 1; }
compare "$dir/xg.mtx" "$dir/x1.mtx"
# --pc cpr --amg-global: CPR whose pressure stage is the AMG over the ranks (Nc = 2 here)
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve --generate "$spec" --rtol 1e-11 --max-it 2000 \
  --device "$device" --split cells --pc cpr --amg-global -o "$dir/xc.mtx" --json >"$dir/cpr_global.json"
grep -q '"converged": true' "$dir/cpr_global.json"
grep -q 'CPR over the ranks (quasi-IMPES weights, pressure index 0 of Nc 2. pressure: AMG over 3 ranks' "$dir/cpr_global.json" ||
  { cat "$dir/cpr_global.json"; echo "--pc cpr --amg-global: not in the report"; exit 1; }
compare "$dir/xc.mtx" "$dir/x1.mtx"
# --pc amg on a scalar system: one hierarchy over the ranks by default on CPU ranks (one per rank
# on GPU ranks), as the plugin does; --amg-per-rank asks for one per rank; the report says which
# and why (before 2026-12-05 one per rank unless --amg-global: orsirr_1 on 4 ranks broke down
# after 419 iterations where the AMG over the ranks converges in 70)
for how in "" "--amg-per-rank"; do
  # shellcheck disable=SC2086
  "$mpiexec" -np 3 "${flags[@]}" "$heptane" solve --generate 10x9x8 --rtol 1e-10 --pc amg \
    --device "$device" $how -o "$dir/xd.mtx" --json >"$dir/amg_default.json"
  grep -q '"converged": true' "$dir/amg_default.json"
  want=false why="--amg-per-rank"
  [ -z "$how" ] && [ "$device" = cpu ] && want=true why="the default for a scalar system on CPU ranks"
  [ -z "$how" ] && [ "$device" != cpu ] && why="GPU ranks: one per rank"
  grep -q "\"amg_over_ranks\": $want, \"amg_over_ranks_why\": \"$why" "$dir/amg_default.json" ||
    { cat "$dir/amg_default.json"; echo "--pc amg $how: amg_over_ranks not $want ($why)"; exit 1; }
  "$heptane" solve --generate 10x9x8 --rtol 1e-10 --pc amg -o "$dir/xd1.mtx" >/dev/null
  compare "$dir/xd.mtx" "$dir/xd1.mtx"
done
set +e
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --amg-per-rank >"$dir/apr.out" 2>&1
rc=$?
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --pc amg --amg-per-rank \
  --amg-global >"$dir/both.out" 2>&1
rc2=$?
set -e
[ "$rc" = 2 ] && grep -q "amg-per-rank applies with --pc amg or cpr only" "$dir/apr.out" ||
  { cat "$dir/apr.out"; echo "--amg-per-rank with --pc bjacobi: exit $rc"; exit 1; }
[ "$rc2" = 2 ] && grep -q "give one of them" "$dir/both.out" ||
  { cat "$dir/both.out"; echo "--amg-per-rank --amg-global: exit $rc2"; exit 1; }
set +e
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --amg-global >"$dir/ag.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "amg-global applies with --pc amg or cpr only" "$dir/ag.out" ||
  { cat "$dir/ag.out"; echo "--amg-global with --pc bjacobi: exit $rc"; exit 1; }
# its options without --coarse are a usage error (exit 2)
set +e
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --coarse-solve amg >"$dir/cs.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "apply with --coarse only" "$dir/cs.out" ||
  { cat "$dir/cs.out"; echo "--coarse-solve without --coarse: exit $rc"; exit 1; }
# --coarse on one process is a usage error (exit 2), not ignored
set +e
"$heptane" solve "${common[@]}" --coarse >"$dir/coarse1.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "applies under mpirun only" "$dir/coarse1.out" ||
  { cat "$dir/coarse1.out"; echo "--coarse on one process: exit $rc"; exit 1; }
# from a nonzero initial guess: the one-process answer as x0 is already (nearly) converged
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --x0 "$dir/x1.mtx" \
  -o "$dir/x0run.mtx" --json >"$dir/x0.json"
cat "$dir/x0.json"
grep -q '"converged": true' "$dir/x0.json"
its=$(json_int iterations "$dir/x0.json")
if [ -z "$its" ] || [ "$its" -gt 2 ]; then
  echo "from x0 = the answer: '$its' iterations, expected at most 2"
  exit 1
fi
compare "$dir/x0run.mtx" "$dir/x1.mtx"
# --precision mixed (fp32 values, fp64 vectors) is refined against the fp64 matrix as on one
# process, so at rtol 1e-11 its answer is the fp64 one; single (rtol 1e-5): the fp32 matrix is
# a perturbation of the fp64 one, so the answer matches it loosely
for prec in mixed single; do
  rtol=1e-11 tol=1e-8
  [ "$prec" = single ] && rtol=1e-5 tol=1e-4
  "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --rtol "$rtol" \
    --precision "$prec" -o "$dir/x_$prec.mtx" --json >"$dir/$prec.json"
  cat "$dir/$prec.json"
  grep -q '"converged": true' "$dir/$prec.json"
  grep -q "\"precision\": \"$prec\"" "$dir/$prec.json"
  compare "$dir/x_$prec.mtx" "$dir/x1.mtx" "$tol"
done
grep -q '"solver": "[^"]*fp64 iterative refinement ([1-9][0-9]* correction' "$dir/mixed.json"
# with --no-refine, the same fp32 matrix on one process and on the ranks gives the same answer,
# and both report the true residual against the fp64 matrix: at rtol 1e-11 the rounding of the
# fp32 values keeps it above rtol, so the runs say diverged_true_residual and exit 1 (before
# 2026-12-05 the ranks reported the rounded matrix's residual and "converged")
"$heptane" solve "${common[@]}" --precision mixed --no-refine -o "$dir/x1_mixed.mtx" --json \
  >"$dir/one_mixed.json" || true
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --precision mixed --no-refine \
  -o "$dir/x_mixed_nr.mtx" --json >"$dir/ranks_mixed.json" 2>/dev/null || true
cat "$dir/one_mixed.json" "$dir/ranks_mixed.json"
for f in one_mixed ranks_mixed; do
  grep -q '"reason": "diverged_true_residual"' "$dir/$f.json"
done
compare "$dir/x_mixed_nr.mtx" "$dir/x1_mixed.mtx"
# bad input is a clear error, not a hang: an x0 of the wrong length
awk '/^%/ { print; next } !size { print $1 - 1, $2; size = $1; next }
     ++k < size { print }' "$dir/x1.mtx" >"$dir/short.mtx"
if "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --x0 "$dir/short.mtx" \
  >"$dir/short.out" 2>&1; then
  echo "expected a failure for an x0 of the wrong length"
  exit 1
fi
cat "$dir/short.out"
grep -q "x0 .* has [0-9]* entries, A has [0-9]* rows" "$dir/short.out"
# a halo model for GPUs on CPU ranks
if "$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --device cpu --halo nccl \
  >"$dir/bad.out" 2>&1; then
  echo "expected a failure for --halo nccl on CPU ranks"
  exit 1
fi
grep -q "nccl" "$dir/bad.out"
# a matrix that is not general-hepta (9 diagonals, and entries far off them, unsymmetric): the
# distributed CSR operator (on GPUs packed there, the halo staged through the host), the
# one-process answer on 2 and 3 ranks (3 in --precision mixed and, on CPU ranks, with
# --amg-global)
awk 'BEGIN { n = 300; c = 0
  for (i = 1; i <= n; i++) { for (d = -4; d <= 4; d++) if (i + d >= 1 && i + d <= n) c++
    if (i + 97 <= n) c++ }
  print "%%MatrixMarket matrix coordinate real general"; print n, n, c
  for (i = 1; i <= n; i++) { for (d = -4; d <= 4; d++) if (i + d >= 1 && i + d <= n)
    print i, i + d, (d == 0 ? 10 : -1 + 0.01 * d)
    if (i + 97 <= n) print i, i + 97, 0.5 } }' >"$dir/band9.mtx"
"$heptane" solve "$dir/band9.mtx" --rtol 1e-11 --pc bjacobi -o "$dir/b1.mtx" >"$dir/b1.out"
runs=("2 1e-8" "3 1e-6 --precision mixed")
[ "$device" = cpu ] && runs+=("3 1e-8 --pc amg --amg-global --solver gmres")
# mixed: fp32 values, so the answer of the rounded matrix under mpirun (--help), ~1e-8 off
for run in "${runs[@]}"; do
  read -r np tol extra <<<"$run"
  # shellcheck disable=SC2086
  "$mpiexec" -np "$np" "${flags[@]}" "$heptane" solve "$dir/band9.mtx" --device "$device" \
    --rtol 1e-11 --pc bjacobi $extra -o "$dir/bn.mtx" --json >"$dir/band9.json"
  cat "$dir/band9.json"
  grep -q '"converged": true' "$dir/band9.json"
  grep -q '"format": "csr", "operator": "csr rows \[0, [0-9]*) of 300 on rank 0/'"$np"'' "$dir/band9.json"
  if [ "$device" = gpu ]; then grep -q 'by staged, reductions by mpi, .* on cuda' "$dir/band9.json"; fi
  compare "$dir/bn.mtx" "$dir/b1.mtx" "$tol"
done
# asked for on a hepta grid's file: --format csr, the same answer as BDIA-GH's
"$heptane" gen --grid 16x12x9 --nc 2 --model reservoir -o "$dir/grid.mtx" >/dev/null
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve "$dir/grid.mtx" --device "$device" --rtol 1e-11 \
  --pc bjacobi --format csr -o "$dir/gc.mtx" --json >"$dir/gc.json"
grep -q '"format": "csr"' "$dir/gc.json"
"$heptane" solve "$dir/grid.mtx" --rtol 1e-11 --pc bjacobi -o "$dir/g1.mtx" >/dev/null
compare "$dir/gc.mtx" "$dir/g1.mtx"
# --generate with --format csr: the generated rows on the distributed CSR operator, the answer of
# the same grid's BDIA-GH rows
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve --generate 8x6x7x3:reservoir --device "$device" \
  --rtol 1e-11 --pc bjacobi --format csr -o "$dir/genc.mtx" --json >"$dir/genc.json"
cat "$dir/genc.json"
grep -q '"converged": true' "$dir/genc.json"
grep -q '"format": "csr", "operator": "csr rows \[0, [0-9]*) of 1008 on rank 0/3' "$dir/genc.json"
"$mpiexec" -np 3 "${flags[@]}" "$heptane" solve --generate 8x6x7x3:reservoir --device "$device" \
  --rtol 1e-11 --pc bjacobi -o "$dir/genb.mtx" --json >"$dir/genb.json"
grep -q '"format": "bdiagh"' "$dir/genb.json"
compare "$dir/genc.mtx" "$dir/genb.mtx"
# out of core is one process's: a usage error under mpirun
set +e
"$mpiexec" -np 2 "${flags[@]}" "$heptane" solve "${common[@]}" --out-of-core on >"$dir/ooc.out" 2>&1
rc=$?
set -e
cat "$dir/ooc.out"
[ "$rc" != 0 ] || { echo "expected --out-of-core under mpirun to be refused"; exit 1; }
grep -q "run on one process" "$dir/ooc.out"
echo "cli_distributed: OK ($device)"
