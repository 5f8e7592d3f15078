#!/usr/bin/env bash
# heptane solve (and spmv, lsqr, mlem) --device auto (the default) weighs the devices by the
# matrix's size
# (apps/common.hpp's auto_gpu_min_entries): a tiny system is solved on the CPU even where a
# GPU is visible, and the choice is printed (stderr) and in the JSON (device_choice). With
# HEPTANE_TEST_DEVICE=cuda (a GPU needed, else exit 77, skipped) a system above the model's
# threshold (128^3 cells, 14.6 M entries) goes to the GPU; without, it is not run.
#   tests/cli_device_auto.sh HEPTANE
set -euo pipefail
heptane=$1
gpu=0
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_device_auto: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  gpu=1
fi
field() {  # JSON key of the last line of stdin
  /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"
}
out=$("$heptane" solve --generate 8x8x8 --json --quiet)
echo "$out"
dev=$(echo "$out" | field device)
why=$(echo "$out" | field device_choice)
case "$dev" in cpu*) ;; *) echo "FAIL: a 512-row system went to '$dev'"; exit 1 ;; esac
case "$why" in "auto: the CPU ("*) ;; *) echo "FAIL: device_choice '$why'"; exit 1 ;; esac
# the human-readable run says so on stderr
err=$("$heptane" solve --generate 8x8x8 2>&1 >/dev/null)
grep -q "^device auto: the CPU (" <<<"$err" || { echo "FAIL: no 'device auto:' line on stderr"; exit 1; }
# a named device is taken as named: no choice reported
out=$("$heptane" solve --generate 8x8x8 --device cpu --json --quiet)
[ "$(echo "$out" | field device_choice)" = None ] || { echo "FAIL: --device cpu reported a choice"; exit 1; }
# spmv, lsqr and mlem weigh the devices the same way: a small PET system stays on the CPU
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$heptane" pet --rings 1 --detectors 32 --image 8 -o "$tmp/A.mtx" --counts "$tmp/g.mtx" >/dev/null 2>&1
for cmd in "spmv $tmp/A.mtx" "lsqr $tmp/A.mtx $tmp/g.mtx --iter-lim 3" "mlem $tmp/A.mtx $tmp/g.mtx --iters 2"; do
  # shellcheck disable=SC2086
  err=$("$heptane" $cmd 2>&1 >/dev/null || true)  # lsqr exits 1 at its iteration limit
  grep -q "^device auto: the CPU (" <<<"$err" || { echo "FAIL: heptane $cmd: no 'device auto: the CPU' line"; echo "$err"; exit 1; }
done
out=$("$heptane" lsqr "$tmp/A.mtx" "$tmp/g.mtx" --iter-lim 3 --json || true)
case "$(echo "$out" | field device)" in cpu*) ;; *) echo "FAIL: lsqr of a small system went to a GPU"; exit 1 ;; esac
if [ "$gpu" = 1 ]; then
  out=$("$heptane" solve --generate 128x128x128 --max-it 3 --json --quiet || true)
  echo "$out"
  case "$(echo "$out" | field device)" in cuda*) ;; *) echo "FAIL: 14.6 M entries stayed on the CPU"; exit 1 ;; esac
  case "$(echo "$out" | field device_choice)" in "auto: the GPU ("*) ;; *) echo "FAIL: device_choice"; exit 1 ;; esac
fi
echo "cli_device_auto: passed"
