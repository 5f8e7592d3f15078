#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test with ctest.
# GPU tests (label gpu) run where a CUDA device is visible and are reported as skipped
# elsewhere. Tests on the real matrices need ../shared/data (or HEPTANE_DATA_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}"
