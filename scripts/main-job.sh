#!/usr/bin/env bash
# The README's main job: install dependencies, build, generate a general-hepta reservoir
# system and solve it with BiCGStab — on the GPU when there is one, on the CPU otherwise.
# Override the system with GRID=JxHxIxNc (default 64x64x64x3: 786,432 unknowns).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
heptane=${BUILD_DIR:-build}/apps/heptane
grid=${GRID:-64x64x64x3}
echo
echo "== heptane info --generate ${grid}:reservoir"
"$heptane" info --generate "${grid}:reservoir"
echo
echo "== heptane solve --generate ${grid}:reservoir --device auto"
"$heptane" solve --generate "${grid}:reservoir" --device auto --rtol 1e-8
