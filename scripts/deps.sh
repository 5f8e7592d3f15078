#!/usr/bin/env bash
# Install what heptane needs to build and test on Debian/Ubuntu (only the missing packages).
# The CUDA toolkit is not installed here: the build uses /usr/local/cuda when it exists and
# builds the CPU back end alone otherwise.
set -euo pipefail
pkgs=(cmake g++ make libeigen3-dev libboost-test-dev libomp-dev python3 python3-scipy
  petsc-dev libopenmpi-dev openmpi-bin pkg-config)
if [ "${HEPTANE_DEPS_EXTRA:-}" != "" ]; then
  # shellcheck disable=SC2206
  pkgs+=(${HEPTANE_DEPS_EXTRA})
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
