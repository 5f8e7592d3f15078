#!/usr/bin/env bash
# heptane bench solve --solver gmres: on a tiny generated system it runs, labels its rows
# gmres(M), times whole cycles by default (4M steady-state iterations) and, given
# --copy-gbs, prints the floor of GMRES(M)'s traffic model (solver/gmres/gmres_traffic.hpp),
# which must agree with BiCGStab's floor of the same run through the matrix bytes they share;
# without a bandwidth on the CPU there is no floor; --help documents --solver and --restart;
# BiCGStab's --impl fused, fused-apart and fused-nodots each give a converged row per format;
# --impl with gmres, --restart with bicgstab, a bad --restart, --solver cg and an unknown --impl
# exit 2.
# No speed thresholds.
#   tests/cli_bench_solve_gmres.sh HEPTANE
# On the CPU by default; with HEPTANE_TEST_DEVICE=cuda on the GPU (exits 77, skipped, where
# there is no GPU).
set -euo pipefail
heptane=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_bench_solve_gmres: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
common=(--sizes 8x8x4x1 --formats "bdiagh,csr" --device "$device" --reps 1 --copy-gbs 20)

"$heptane" bench solve "${common[@]}" --solver gmres --restart 5 --csv "$dir/gmres.csv" \
  >"$dir/gmres.md"
cat "$dir/gmres.md"
cat "$dir/gmres.csv"
grep -q "^GMRES(5) on " "$dir/gmres.md"
grep -q "^floor per iteration: 1.2000 x matrix bytes + 24.6000 x 8N" "$dir/gmres.md"
# the main table (up to the first empty line) has a row per format; the phase table after it
# one each too, its phases (host csr .. true: columns 6-12) adding up to at most the 5-iteration
# total (column 5; what is left is bookkeeping)
main_rows() { awk '/^$/ { exit } { print }' "$1"; }
[ "$(main_rows "$dir/gmres.md" | grep -c '| gmres(5) |')" = 2 ]
awk -F'|' '/^5 it \+ setup, phases/ { p = 1; next }
           p && $4 ~ /gmres\(5\)/ { n++; s = 0; for (i = 6; i <= 12; i++) s += $i
                                     if (!($5 > 0) || s > $5 * 1.001 + 0.002) { print "phases: " $0; bad = 1 } }
           END { exit (bad || n != 2) }' "$dir/gmres.md"
[ "$(grep -c ',gmres(5),' "$dir/gmres.csv")" = 2 ]
# the CSV without its first column (the quoted system name has commas): n, nnz, format, impl,
# device, five_it_setup_ms, per_it_ms, floor_ms, tol_iterations, tol_seconds,
# tol_true_relres, tol_reason, five_it_per_it_ms, steady_its, then the phases
sed 's/^"[^"]*",//' "$dir/gmres.csv" >"$dir/gmres.cut"
# every row: a floor, a time per iteration, 20 steady-state iterations (4 cycles of 5), and
# the solve to tolerance converged
awk -F, 'NR > 1 { if (!($8 > 0) || !($7 > 0) || $14 != 20 || $12 != "\"converged_rtol\"") {
                    print "bad row: " $0; bad = 1 } }
         END { exit bad }' "$dir/gmres.cut"

# the same rows with BiCGStab (the default): floor 2 M + 15·8N, so M = (F·20e6 − 120 N) / 2
# and GMRES(5)'s floor must be (1.2 M + 24.6·8N) / 20e6 ms
"$heptane" bench solve "${common[@]}" --steady-its 5 --csv "$dir/bcgs.csv" >"$dir/bcgs.md"
cat "$dir/bcgs.md"
grep -q "^BiCGStab on " "$dir/bcgs.md"
[ "$(main_rows "$dir/bcgs.md" | grep -c '| fused |')" = 2 ]
sed 's/^"[^"]*",//' "$dir/bcgs.csv" >"$dir/bcgs.cut"
awk -F, 'FNR == 1 { f++; next }
         f == 1 { b[$3] = $8; n[$3] = $1 } f == 2 { g[$3] = $8 }
         END { for (k in b) {
                 mb = (b[k] * 20e6 - 120 * n[k]) / 2
                 want = (1.2 * mb + 24.6 * 8 * n[k]) / 20e6
                 d = g[k] - want; if (d < 0) d = -d
                 printf "%s: gmres floor %.6g ms, model %.6g ms\n", k, g[k], want
                 if (!(want > 0) || d > 1e-4 * want) bad = 1; c++ }
               exit (bad || c != 2) }' "$dir/bcgs.cut" "$dir/gmres.cut"

# BiCGStab's loops side by side: fused (the dot products in the products, the step finished
# by the product's last CTA on one GPU), fused-apart (the products' partial sums reduced by a
# kernel of their own), fused-inputs / fused-sinput / fused-noinputs (BiCGStab's p and s, s
# alone, neither formed inside the products), fused-nodots (no dot products in the products):
# a row each per format,
# each converged to tolerance, in iteration counts within one of each other (on the CPU nothing
# fuses: the same loop; on a GPU the sums come in another order)
impls="fused fused-apart fused-inputs fused-sinput fused-noinputs fused-nodots"
"$heptane" bench solve "${common[@]}" --steady-its 5 --impl "${impls// /,}" \
  --csv "$dir/impl.csv" >"$dir/impl.md"
cat "$dir/impl.md"
for impl in $impls; do
  [ "$(main_rows "$dir/impl.md" | grep -c "| $impl |")" = 2 ]
done
sed 's/^"[^"]*",//' "$dir/impl.csv" >"$dir/impl.cut"
awk -F, 'NR > 1 { if ($12 != "\"converged_rtol\"" || !($7 > 0)) { print "bad row: " $0; bad = 1 }
                  k = $3; if (!(k in lo) || $9 < lo[k]) lo[k] = $9; if ($9 > hi[k]) hi[k] = $9; n++ }
         END { for (k in lo) if (hi[k] - lo[k] > 1) { print k ": iterations " lo[k] "-" hi[k]; bad = 1 }
               exit (bad || n != 12) }' "$dir/impl.cut"
for impl in $impls; do grep -q -- "$impl" <("$heptane" bench solve --help); done

# no bandwidth on the CPU: no floor
if [ "$device" = cpu ]; then
  "$heptane" bench solve --sizes 8x8x4x1 --formats csr --device cpu --reps 1 --solver gmres \
    --restart 5 >"$dir/nofloor.md"
  cat "$dir/nofloor.md"
  grep -q "copy bandwidth not given" "$dir/nofloor.md"
  grep '| gmres(5) |' "$dir/nofloor.md" | grep -q '| - | - |'
fi

# --help documents the options
"$heptane" bench solve --help >"$dir/help.txt"
grep -q -- "--solver bicgstab|gmres" "$dir/help.txt"
grep -q -- "--restart M" "$dir/help.txt"
grep -q "k(M) = 2M + 13 + 8/M" "$dir/help.txt"

# usage errors: exit status 2
for bad in "--solver gmres --impl fused" "--restart 5" "--solver gmres --restart 0" \
  "--solver cg" "--impl fused-sideways"; do
  set +e
  # shellcheck disable=SC2086
  "$heptane" bench solve --sizes 4x4x4x1 --device "$device" $bad >/dev/null 2>"$dir/err.txt"
  rc=$?
  set -e
  if [ "$rc" != 2 ]; then
    echo "heptane bench solve $bad: exit $rc, expected 2"
    cat "$dir/err.txt"
    exit 1
  fi
done
echo "cli_bench_solve_gmres: ok"
