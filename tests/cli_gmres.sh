#!/usr/bin/env bash
# heptane solve --solver gmres: a generated system converges with --restart 20 and the JSON
# report says so (solver "gmres(20)", "restart": 20, the true residual); the answer matches
# BiCGStab's; --help documents the option; a bad --restart is a usage error (exit 2).
#   tests/cli_gmres.sh HEPTANE
# On the CPU by default; with HEPTANE_TEST_DEVICE=cuda on the GPU (exits 77, skipped, where
# there is no GPU).
set -euo pipefail
heptane=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_gmres: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
common=(--generate 16x16x8x1 --device "$device" --rtol 1e-9)

"$heptane" solve "${common[@]}" --solver gmres --restart 20 --json -o "$dir/x_gmres.mtx" \
  >"$dir/gmres.json"
cat "$dir/gmres.json"
grep -q '"converged": true' "$dir/gmres.json"
grep -q '"solver": "gmres(20)"' "$dir/gmres.json"
grep -q '"restart": 20' "$dir/gmres.json"
relres=$(sed -n 's/.*"true_relres": \([-0-9.e+]*\).*/\1/p' "$dir/gmres.json")
awk -v r="$relres" 'BEGIN { exit (r != "" && r + 0 >= 0 && r + 0 <= 2e-9) ? 0 : 1 }' || {
  echo "true relres '$relres' above 2e-9"
  exit 1
}
# the text report, and the default restart
"$heptane" solve "${common[@]}" --solver fgmres --quiet >"$dir/gmres.txt"
cat "$dir/gmres.txt"
grep -q "gmres(30)" "$dir/gmres.txt"
# the same answer as BiCGStab
"$heptane" solve "${common[@]}" --json -o "$dir/x_bcgs.mtx" >"$dir/bcgs.json"
grep -q '"restart": null' "$dir/bcgs.json"
awk 'FNR == 1 { f++ } /^%/ || NF != 1 { next }
     f == 1 { a[n1++] = $1 } f == 2 { b[n2++] = $1 }
     END { if (n1 != n2 || n1 == 0) { print "length " n1 " vs " n2; exit 1 }
           d = 0; m = 0
           for (i = 0; i < n1; i++) { e = a[i] - b[i]; if (e < 0) e = -e; if (e > d) d = e
                                      v = b[i]; if (v < 0) v = -v; if (v > m) m = v }
           r = d / m; print "gmres vs bicgstab: max rel diff " r; exit (r <= 1e-6 ? 0 : 1) }' \
  "$dir/x_gmres.mtx" "$dir/x_bcgs.mtx"
# --help tells about gmres and --restart
"$heptane" solve --help >"$dir/help.txt"
grep -q -- "--restart M" "$dir/help.txt"
grep -q "| gmres" "$dir/help.txt"
# usage errors: exit status 2
for bad in "--solver gmres --restart 0" "--solver cg --restart 5"; do
  set +e
  # shellcheck disable=SC2086
  "$heptane" solve "${common[@]}" $bad --quiet >/dev/null 2>"$dir/err.txt"
  rc=$?
  set -e
  if [ "$rc" != 2 ]; then
    echo "heptane solve $bad: exit $rc, expected 2"
    cat "$dir/err.txt"
    exit 1
  fi
  grep -q -- "--restart" "$dir/err.txt"
done
echo "cli_gmres: ok"
