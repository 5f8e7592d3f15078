#!/usr/bin/env bash
# Style checks run by CI: clang-format (no diff allowed) on every C++/CUDA source, and
# clang-tidy (.clang-tidy) on the host sources of the library and the CLI, using the
# compile_commands.json of a CPU-only build in ${TIDY_BUILD_DIR:-build-tidy}.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
echo "clang-format: ${#files[@]} files"
clang-format --dry-run -Werror "${files[@]}"
tidy_build=${TIDY_BUILD_DIR:-build-tidy}
cmake -S . -B "$tidy_build" -DHEPTANE_WITH_CUDA=OFF -DHEPTANE_BUILD_TESTS=OFF \
  -DHEPTANE_BUILD_EXAMPLES=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
mapfile -t tidy_files < <(git ls-files 'core/*.cpp' 'formats/*.cpp' 'generators/*.cpp' \
  'solver/*.cpp' 'distributed/*.cpp' 'apps/*.cpp' | grep -v cuda_executor.cpp)
echo "clang-tidy: ${#tidy_files[@]} files"
printf '%s\n' "${tidy_files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$tidy_build" --quiet
echo "style checks passed"
