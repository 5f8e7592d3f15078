#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test with ctest.
# GPU tests (label gpu) run where a CUDA device is visible and are reported as skipped
# elsewhere. Tests on the real matrices need ../shared/data (or HEPTANE_DATA_DIR).
# After ctest: a summary that counts the skipped tests and names them, and fails when a group
# of tests whose prerequisite is installed here (PETSc: label plugin, MPI: label distributed,
# SciPy: tests named *scipy*) was not registered (scripts/ctest_summary.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
build=${BUILD_DIR:-build}
status=0
ctest --test-dir "$build" --output-on-failure -j "${JOBS:-$(nproc)}" \
  --output-junit "$PWD/$build/ctest-junit.xml" || status=$?
count() { ctest --test-dir "$build" -N "$@" | sed -n 's/^Total Tests: //p'; }
expect=()
if pkg-config --exists PETSc 2>/dev/null || pkg-config --exists petsc 2>/dev/null; then
  expect+=(--expect "plugin=$(count -L plugin)")
fi
command -v mpirun >/dev/null && expect+=(--expect "distributed=$(count -L distributed)")
/usr/bin/python3 -c "import scipy" 2>/dev/null && expect+=(--expect "scipy=$(count -R scipy)")
/usr/bin/python3 scripts/ctest_summary.py "$build/ctest-junit.xml" "${expect[@]}" || status=1
exit "$status"
