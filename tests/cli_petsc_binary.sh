#!/usr/bin/env bash
# PETSc binary files between heptane and a real PETSc (label plugin: needs PETSc):
#   1. `heptane gen -o A.petsc --rhs b.petsc` -> PETSc's MatLoad/VecLoad (examples/petsc_solve)
#      read them and its CG + GAMG converges on them;
#   2. PETSc writes the loaded system back (-ksp_view_mat binary -ksp_view_rhs binary, one file
#      "binaryoutput", as a simulator dumps its system): its bytes are heptane's, object for object;
#   3. `heptane solve binaryoutput` reads PETSc's file, takes b from the vector after the matrix
#      and its x agrees with PETSc's to the tolerance, as does heptane's from the Matrix Market
#      copy of the same system;
#   4. bad files: a truncated one and a PETSc file of the wrong kind are refused with exit 1.
#   cli_petsc_binary.sh HEPTANE PETSC_SOLVE [--petsc-int64]
# (--petsc-int64: PETSc was built with 64-bit indices; heptane gen writes its files so)
set -euo pipefail
h=$1
ps=$2
int64=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

# shellcheck disable=SC2086
"$h" gen --grid 20x14x6 --model channelized -o A.petsc --rhs b.petsc --quiet $int64
"$h" gen --grid 20x14x6 --model channelized -o A.mtx --rhs b.mtx --quiet
sa=$(stat -c %s A.petsc)
# 1 + 2: PETSc reads heptane's files, solves, writes them back
out=$("$ps" -f A.petsc -rhs b.petsc -ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg \
  -ksp_rtol 1e-10 -ksp_view_mat binary -ksp_view_rhs binary)
echo "$out"
# the entry count of the Matrix Market copy (its size line)
nnz=$(awk '!/^%/ {print $3; exit}' A.mtx)
grep -q "loaded: A.petsc: 1680 x 1680, $nnz nonzeros" <<<"$out" || fail "PETSc did not load the $nnz entries heptane wrote"
grep -Eq "^loaded: solve 1 its [0-9]+ residual \S+ CONVERGED_RTOL" <<<"$out" || fail "PETSc CG + GAMG did not converge"
relres=$(sed -n 's/^loaded: solve 1 .*true relres \(\S*\)$/\1/p' <<<"$out")
python3 -c "import sys; sys.exit(0 if float('$relres') <= 1e-9 else 1)" || fail "PETSc's true relres $relres > 1e-9"
xp=$(sed -n 's/.*|x|_2 = \(\S*\)$/\1/p' <<<"$out")
[ -f binaryoutput ] || fail "PETSc wrote no binaryoutput"
cmp <(head -c "$sa" binaryoutput) A.petsc || fail "PETSc's matrix bytes differ from heptane's"
cmp <(tail -c +"$((sa + 1))" binaryoutput) b.petsc || fail "PETSc's vector bytes differ from heptane's"
# 3: heptane reads PETSc's file (b from the vector after the matrix)
out=$("$h" solve binaryoutput --solver cg --pc amg --rtol 1e-10 --device cpu -o x.mtx 2>&1)
echo "$out"
grep -q "PETSc binary, with a vector" <<<"$out" || fail "heptane did not see the vector after the matrix"
grep -q "result    CONVERGED" <<<"$out" || fail "heptane solve of PETSc's file did not converge"
"$h" solve A.mtx -b b.mtx --solver cg --pc amg --rtol 1e-10 --device cpu -o x2.mtx --quiet >/dev/null
cmp x.mtx x2.mtx || fail "x from PETSc's binary file differs from x from the Matrix Market copy"
xh=$(python3 -c "
import math
v=[float(l) for l in [l for l in open('x.mtx') if l.strip() and not l.startswith('%')][1:]]
print(math.sqrt(sum(t*t for t in v)))")
python3 -c "import sys; d=abs($xh-$xp)/abs($xp); print('|x| heptane', $xh, 'PETSc', $xp, 'rel diff', d); sys.exit(0 if d < 1e-8 else 1)" ||
  fail "heptane's and PETSc's solutions differ"
# 4: bad files, exit 1 with a message that says where
refused() { # FILE WHAT PATTERN: heptane solve FILE exits 1 with PATTERN in its message
  local msg rc
  set +e
  msg=$("$h" solve "$1" --device cpu 2>&1)
  rc=$?
  set -e
  echo "$msg" | tail -1
  [ "$rc" = 1 ] || fail "$2: exit $rc, not 1"
  grep -q "$3" <<<"$msg" || fail "$2: no '$3' in the message"
}
head -c 100 A.petsc >trunc.petsc
refused trunc.petsc "a truncated PETSc file" "truncated"
refused b.petsc "a vector file as the matrix" "no matrix"
echo "cli_petsc_binary: ok"
