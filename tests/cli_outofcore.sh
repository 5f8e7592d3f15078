#!/usr/bin/env bash
# --out-of-core on spmv, mlem, lsqr and solve, and chunk files (.hoc) for mlem, lsqr and solve:
# the same answers as in core (MLEM's log-likelihoods, LSQR's x, solve's iterations and x,
# spmv's check against the CPU CSR product), with chunks far smaller than the matrix; on a GPU also with --device-memory so
# small that most chunks stream, and auto choosing out of core under it. Bad values exit 2.
#   tests/cli_outofcore.sh HEPTANE
# On the CPU by default; with HEPTANE_TEST_DEVICE=cuda on the GPU (exits 77, skipped, where
# there is no GPU).
set -euo pipefail
heptane=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
device=cpu
if [ "${HEPTANE_TEST_DEVICE:-cpu}" = cuda ]; then
  if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "cli_outofcore: no GPU here (HEPTANE_TEST_DEVICE=cuda): skipped"
    exit 77
  fi
  device=gpu
fi
# the largest relative difference between two Matrix Market vectors (a, b)
vdiff() {
  awk 'FNR == 1 { f++ } /^%/ { next } NF != 1 { next } f == 1 { a[n1++] = $1; next }
       { b[n2++] = $1 }
       END { if (n1 != n2 || n1 == 0) { print "sizes differ"; exit 1 }
             m = 0; s = 0
             for (i = 0; i < n1; i++) { d = a[i] - b[i]; if (d < 0) d = -d; if (d > m) m = d
                                        v = b[i] < 0 ? -b[i] : b[i]; if (v > s) s = v }
             printf "%.3e\n", m / (s > 0 ? s : 1) }' "$1" "$2"
}
below() { awk -v r="$1" -v t="$2" 'BEGIN { exit (r != "" && r + 0 <= t + 0) ? 0 : 1 }'; }

"$heptane" pet --detectors 96 --image 40 -o "$dir/A.mtx" --counts "$dir/g.mtx" >/dev/null
ooc=(--out-of-core on --chunk-bytes 4k)
modes=("in" "ooc")
if [ "$device" = gpu ]; then modes+=("budget"); fi
for mode in "${modes[@]}"; do
  case $mode in
    in) extra=(--out-of-core off) ;;
    ooc) extra=("${ooc[@]}") ;;
    budget) extra=(--out-of-core auto --device-memory 600k --chunk-bytes 4k) ;;
  esac
  "$heptane" mlem "$dir/A.mtx" "$dir/g.mtx" --iters 6 --device "$device" "${extra[@]}" \
    -o "$dir/f_$mode.mtx" --json >"$dir/mlem_$mode.json"
  "$heptane" lsqr "$dir/A.mtx" "$dir/g.mtx" --iter-lim 6 --device "$device" "${extra[@]}" \
    -o "$dir/x_$mode.mtx" --json >"$dir/lsqr_$mode.json" || true  # istop 7: exit 1
  grep -q '"itn": 6' "$dir/lsqr_$mode.json"
done
for mode in "${modes[@]:1}"; do
  grep -q '"operator": "out-of-core csr' "$dir/mlem_$mode.json"
  grep -q '"operator": "out-of-core csr' "$dir/lsqr_$mode.json"
  e=$(vdiff "$dir/f_$mode.mtx" "$dir/f_in.mtx")
  echo "mlem $mode: f differs from in core by $e"
  below "$e" 1e-10
  # LSQR amplifies rounding (on a GPU the atomic scatters of A^T x sum in any order: 30
  # iterations differed by 2e-2 between in core and out of core on the H100): 6 iterations
  e=$(vdiff "$dir/x_$mode.mtx" "$dir/x_in.mtx")
  echo "lsqr $mode: x differs from in core by $e"
  below "$e" 1e-7
done
# OSEM out of core: subsets are groups of chunks (test_outofcore compares them with in-core
# blocks of the same rows); here: it runs, reports its subsets, and prints every iteration
"$heptane" mlem "$dir/A.mtx" "$dir/g.mtx" --iters 3 --subsets 3 --device "$device" "${ooc[@]}" \
  -o "$dir/f_osem.mtx" >"$dir/osem.txt" 2>"$dir/osem.err"
cat "$dir/osem.txt" "$dir/osem.err"
grep -q "3 row blocks, block 0: out-of-core csr" "$dir/osem.txt"
grep -q "OSEM iteration 3 of 3" "$dir/osem.err"
if [ "$device" = gpu ]; then
  # the 600 kB budget (the matrix: 1.1 MB) leaves about half of the matrix streaming
  "$heptane" spmv "$dir/A.mtx" --device gpu --device-memory 600k --chunk-bytes 4k --json \
    >"$dir/spmv_budget.json"
  cat "$dir/spmv_budget.json"
  grep -q '"check_passed": true' "$dir/spmv_budget.json"
  grep -q '"streamed_bytes": [1-9]' "$dir/spmv_budget.json"
fi
# spmv, both directions, checked against the CPU's CSR product by the command itself
for t in "" --transpose; do
  "$heptane" spmv "$dir/A.mtx" --device "$device" "${ooc[@]}" $t --json --reps 2 >"$dir/spmv.json"
  cat "$dir/spmv.json"
  grep -q '"check_passed": true' "$dir/spmv.json"
  grep -q '"out_of_core": {"chunks": [1-9][0-9]' "$dir/spmv.json"
done
# solve out of core (chunks: CHUNKS, csr or bdia-gh) against in core, the same (Jacobi)
# preconditioner: converged, iterations within one, x within 1e-7
same_solve() {
  local tag=$1 chunks=$2
  shift 2
  "$heptane" solve "$@" --rtol 1e-9 --pc jacobi --out-of-core off --json -o "$dir/${tag}_in.mtx" \
    >"$dir/${tag}_in.json"
  "$heptane" solve "$@" --rtol 1e-9 --pc jacobi "${ooc[@]}" --json -o "$dir/${tag}_ooc.mtx" \
    >"$dir/${tag}_ooc.json"
  cat "$dir/${tag}_ooc.json"
  grep -q '"converged": true' "$dir/${tag}_ooc.json"
  grep -q "out-of-core $chunks" "$dir/${tag}_ooc.json"
  local its_in its_ooc e
  its_in=$(sed -n 's/.*"iterations": \([0-9]*\).*/\1/p' "$dir/${tag}_in.json")
  its_ooc=$(sed -n 's/.*"iterations": \([0-9]*\).*/\1/p' "$dir/${tag}_ooc.json")
  echo "solve, $chunks chunks: $its_in iterations in core, $its_ooc out of core"
  awk -v a="$its_in" -v b="$its_ooc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit d <= 1 ? 0 : 1 }'
  e=$(vdiff "$dir/${tag}_ooc.mtx" "$dir/${tag}_in.mtx")
  below "$e" 1e-7
}
same_solve s csr --generate 20x20x10x1 --device "$device" --format csr
# BDIA-GH chunks of a hepta matrix (--format auto): spmv checked against the CPU's CSR product
# (A x and A^T x), solve as above
gen3=(--generate 12x10x8x3 --device "$device")
for tr in "" "--transpose"; do
  # shellcheck disable=SC2086
  "$heptane" spmv "${gen3[@]}" "${ooc[@]}" $tr --json >"$dir/spmv_bdia.json"
  grep -q '"check_passed": true' "$dir/spmv_bdia.json"
  grep -q '"operator": "out-of-core bdia-gh' "$dir/spmv_bdia.json"
done
same_solve s3 bdia-gh "${gen3[@]}"
# chunk files (.hoc): pet and convert write the same file; mlem and lsqr from it (every block
# read from the file at every product, about half, all in memory) give in core's answers;
# convert reads it back entry for entry
"$heptane" pet --detectors 96 --image 40 -o "$dir/P.hoc" --chunk-bytes 16k --quiet >/dev/null
"$heptane" convert "$dir/A.mtx" -o "$dir/C.hoc" --chunk-bytes 16k --quiet >/dev/null
cmp "$dir/P.hoc" "$dir/C.hoc"
"$heptane" convert "$dir/P.hoc" -o "$dir/back.mtx" --quiet >/dev/null
cmp <(grep -v '^%' "$dir/A.mtx") <(grep -v '^%' "$dir/back.mtx")
for hm in 0 500k 1G; do
  hoc=(--device "$device" --host-memory "$hm")
  if [ "$device" = gpu ]; then hoc+=(--device-memory 700k); fi
  "$heptane" mlem "$dir/P.hoc" "$dir/g.mtx" --iters 6 "${hoc[@]}" -o "$dir/f_hoc.mtx" --json \
    >"$dir/mlem_hoc.json"
  if [ "$hm" = 0 ]; then grep -q 'read from .*P.hoc at every product' "$dir/mlem_hoc.json"; fi
  e=$(vdiff "$dir/f_hoc.mtx" "$dir/f_in.mtx")
  echo "mlem from the chunk file, --host-memory $hm: f differs from in core by $e"
  below "$e" 1e-10
  "$heptane" lsqr "$dir/P.hoc" "$dir/g.mtx" --iter-lim 6 "${hoc[@]}" -o "$dir/x_hoc.mtx" \
    --json >"$dir/lsqr_hoc.json" || true
  e=$(vdiff "$dir/x_hoc.mtx" "$dir/x_in.mtx")
  echo "lsqr from the chunk file, --host-memory $hm: x differs from in core by $e"
  below "$e" 1e-7
done
"$heptane" convert "$dir/A.mtx" -o "$dir/S.hoc" --precision single --chunk-bytes 64k --quiet >/dev/null
"$heptane" mlem "$dir/S.hoc" "$dir/g.mtx" --iters 2 --device "$device" --json | grep -q '"precision": "mixed"'
set +e
"$heptane" mlem "$dir/S.hoc" "$dir/g.mtx" --iters 2 --precision double >/dev/null 2>"$dir/err.txt"
rc=$?
head -c 100 "$dir/A.mtx" > "$dir/T.hoc"
"$heptane" mlem "$dir/T.hoc" "$dir/g.mtx" --iters 2 >/dev/null 2>>"$dir/err.txt"
rc2=$?
set -e
cat "$dir/err.txt"
[ "$rc" = 2 ] || { echo "mlem fp32 file with --precision double: exit $rc, expected 2"; exit 1; }
[ "$rc2" = 1 ] || { echo "mlem on a damaged chunk file: exit $rc2, expected 1"; exit 1; }
# spmv from a chunk file: checked by the command against fp64 sums of the file's entries, and
# y against the in-core product of the Matrix Market file (A x and A^T x; the blocks from the
# file or host memory; BDIA-GH chunks of fp64 and fp32 values below)
for t in "" --transpose; do
  "$heptane" spmv "$dir/A.mtx" --device "$device" --out-of-core off $t --reps 1 -o "$dir/y_in.mtx" \
    >/dev/null
  for hm in 0 64k 1G; do
    hoc=(--device "$device" --host-memory "$hm")
    if [ "$device" = gpu ]; then hoc+=(--device-memory 700k); fi
    "$heptane" spmv "$dir/P.hoc" "${hoc[@]}" $t --reps 2 --json -o "$dir/y_hoc.mtx" >"$dir/spmv_hoc.json"
    cat "$dir/spmv_hoc.json"
    grep -q '"check_passed": true' "$dir/spmv_hoc.json"
    grep -q '"check": "fp64 sums on the CPU of the chunk file' "$dir/spmv_hoc.json"
    if [ "$hm" = 0 ]; then grep -q '"file_chunks": [1-9]' "$dir/spmv_hoc.json"; fi
    if [ "$device" = gpu ]; then grep -q '"streamed_bytes": [1-9]' "$dir/spmv_hoc.json"; fi
    e=$(vdiff "$dir/y_hoc.mtx" "$dir/y_in.mtx")
    echo "spmv P.hoc $t --host-memory $hm: y differs from in core by $e"
    below "$e" 1e-13
  done
done
set +e
"$heptane" spmv "$dir/P.hoc" --format csr >/dev/null 2>"$dir/err.txt"
rc3=$?
set -e
cat "$dir/err.txt"
[ "$rc3" = 2 ] || { echo "spmv P.hoc --format csr: exit $rc3, expected 2"; exit 1; }
grep -q -- "--format: a chunk file's chunks are its format" "$dir/err.txt"
# info describes a chunk file from its table
"$heptane" info "$dir/P.hoc" --json >"$dir/info.json"
cat "$dir/info.json"
rows=$(awk '!/^%/ { print $1; exit }' "$dir/A.mtx")
grep -q "\"chunk_file\": true, \"rows\": $rows," "$dir/info.json"
grep -q '"values": "fp64", "chunk_format": "csr"' "$dir/info.json"
# solve from a chunk file (CSR and BDIA-GH chunks; every block from the file, about half, all
# in memory): in core's iterations (within one) and x (1e-7) with the same preconditioner
"$heptane" gen --grid 12x10x8 --nc 3 --model reservoir -o "$dir/H.mtx" >/dev/null 2>&1
"$heptane" convert "$dir/H.mtx" -o "$dir/Hb.hoc" --chunk-bytes 16k --quiet >/dev/null
"$heptane" convert "$dir/H.mtx" -o "$dir/Hc.hoc" --chunk-bytes 16k --chunk-format csr --quiet >/dev/null
for pc in jacobi bjacobi; do
  for solver in bicgstab gmres; do
    run=(--pc "$pc" --solver "$solver" --rtol 1e-9 --device "$device" --json)
    "$heptane" solve "$dir/H.mtx" "${run[@]}" --out-of-core off -o "$dir/xh_in.mtx" >"$dir/h_in.json"
    grep -q '"converged": true' "$dir/h_in.json"
    its_in=$(sed -n 's/.*"iterations": \([0-9]*\).*/\1/p' "$dir/h_in.json")
    for f in Hb Hc; do
      for hm in 0 40k 1G; do
        extra=(--host-memory "$hm")
        # on a GPU a budget that leaves most chunks streaming (GMRES(30) keeps 71 vectors)
        if [ "$device" = gpu ]; then
          if [ "$solver" = gmres ]; then extra+=(--device-memory 2M); else extra+=(--device-memory 300k); fi
        fi
        "$heptane" solve "$dir/$f.hoc" "${run[@]}" "${extra[@]}" -o "$dir/xh.mtx" >"$dir/h.json"
        grep -q '"converged": true' "$dir/h.json"
        grep -q '"operator": "out-of-core' "$dir/h.json"
        if [ "$hm" = 0 ]; then grep -q "read from .*$f.hoc at every product" "$dir/h.json"; fi
        if [ "$device" = gpu ]; then grep -q "[1-9][0-9.]* [kMG]*B streamed per product" "$dir/h.json"; fi
        its=$(sed -n 's/.*"iterations": \([0-9]*\).*/\1/p' "$dir/h.json")
        e=$(vdiff "$dir/xh.mtx" "$dir/xh_in.mtx")
        echo "solve $f.hoc --pc $pc --solver $solver --host-memory $hm: $its iterations ($its_in in core), x differs by $e"
        awk -v a="$its_in" -v b="$its" 'BEGIN { d = a - b; if (d < 0) d = -d; exit d <= 1 ? 0 : 1 }'
        below "$e" 1e-7
      done
    done
  done
done
"$heptane" solve "$dir/Hb.hoc" --device "$device" --json >"$dir/hb.json"
grep -q '"format": "bdiagh"' "$dir/hb.json"
"$heptane" info "$dir/Hb.hoc" --json >"$dir/info.json"
grep -q '"chunk_format": "bdiagh", "block_size": 3' "$dir/info.json"
"$heptane" convert "$dir/H.mtx" -o "$dir/Hs.hoc" --precision single --quiet >/dev/null
"$heptane" spmv "$dir/H.mtx" --device "$device" --out-of-core off --reps 1 -o "$dir/y_in.mtx" >/dev/null
for f in Hb Hs; do
  for p in "" --precision\ single; do
    if [ "$f" = Hb ] && [ -n "$p" ]; then continue; fi
    # shellcheck disable=SC2086
    "$heptane" spmv "$dir/$f.hoc" --device "$device" $p --reps 2 --json -o "$dir/y_hoc.mtx" \
      >"$dir/spmv_hoc.json"
    cat "$dir/spmv_hoc.json"
    grep -q '"check_passed": true' "$dir/spmv_hoc.json"
    grep -q '"format": "bdiagh"' "$dir/spmv_hoc.json"
    e=$(vdiff "$dir/y_hoc.mtx" "$dir/y_in.mtx")
    echo "spmv $f.hoc $p: y differs from in core by $e"
    if [ "$f" = Hb ]; then below "$e" 1e-13; else below "$e" 1e-6; fi
  done
done
"$heptane" solve "$dir/Hs.hoc" --device "$device" --rtol 1e-6 --json >"$dir/hs.json"
grep -q '"converged": true' "$dir/hs.json"
grep -q '"precision": "mixed"' "$dir/hs.json"
for bad in "--pc amg" "--precision double" "--format csr" "--out-of-core off" "--chunk-bytes 1M"; do
  set +e
  # shellcheck disable=SC2086
  "$heptane" solve "$dir/Hs.hoc" --device "$device" $bad >/dev/null 2>"$dir/err.txt"
  rc=$?
  set -e
  cat "$dir/err.txt"
  [ "$rc" = 2 ] || { echo "solve Hs.hoc $bad: exit $rc, expected 2"; exit 1; }
done
set +e
"$heptane" solve "$dir/P.hoc" --device "$device" >/dev/null 2>"$dir/err.txt"
rc=$?
"$heptane" solve "$dir/H.mtx" --host-memory 1G >/dev/null 2>>"$dir/err.txt"
rc4=$?
set -e
cat "$dir/err.txt"
[ "$rc" = 2 ] || { echo "solve on a rectangular chunk file: exit $rc, expected 2"; exit 1; }
[ "$rc4" = 2 ] || { echo "solve A.mtx --host-memory: exit $rc4, expected 2"; exit 1; }
grep -q "square" "$dir/err.txt"
# --help tells of it
"$heptane" mlem --help >"$dir/help.txt"  # not piped into grep -q: SIGPIPE under pipefail
grep -q -- "--host-memory" "$dir/help.txt"
grep -q -- "--out-of-core" "$dir/help.txt"
"$heptane" solve --help >"$dir/help.txt"
grep -q -- "A.hoc" "$dir/help.txt"
grep -q -- "--host-memory" "$dir/help.txt"
"$heptane" lsqr --help >"$dir/help.txt"
grep -q -- "--device-memory" "$dir/help.txt"
grep -q -- "--host-memory" "$dir/help.txt"
# bad values: usage errors
for bad in "--out-of-core maybe" "--device-memory 12Q" "--chunk-bytes 100" "--device-memory -3"; do
  set +e
  # shellcheck disable=SC2086
  "$heptane" spmv "$dir/A.mtx" --device "$device" $bad >/dev/null 2>"$dir/err.txt"
  rc=$?
  set -e
  cat "$dir/err.txt"
  [ "$rc" = 2 ] || { echo "spmv $bad: exit $rc, expected 2"; exit 1; }
done
echo "cli_outofcore: all checks passed on $device"
