#!/usr/bin/env bash
# Build and install PETSc from a source tarball (the GPU machine has MPI and compilers but no
# PETSc): the steps of the tool library's petsc-from-source.sh `build` (configure, make, make
# install, with the same options), which stops with status 141 on these tarballs (its
# `tar tf | head -1` under pipefail: tar dies of SIGPIPE). Tarballs: .tools/petsc-3.18.5.tar.xz
# (the tool's `prepare`, CPU only) and .tools/petsc-3.25.4.tar.xz (CUDA=1 for its CUDA back end).
#
#   scripts/petsc-build.sh TARBALL PREFIX            # CPU
#   CUDA=1 scripts/petsc-build.sh TARBALL PREFIX     # with CUDA (CUDA_ARCH [90])
#
# Environment: PETSC_BUILD_DIR (where to unpack; a new temporary folder otherwise), CUDA [0],
# CUDA_ARCH [90], JOBS [nproc].
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 TARBALL PREFIX" >&2; exit 2; }
tarball=$(readlink -f "$1")
prefix=$2
work=${PETSC_BUILD_DIR:-$(mktemp -d)}
[ -f "$tarball" ] || { echo "petsc-build: no tarball at $1" >&2; exit 1; }
tar xf "$tarball" -C "$work"
top=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'petsc*' | head -n 1)
[ -n "$top" ] || { echo "petsc-build: no petsc-* folder in $1" >&2; exit 1; }
cd "$top"
cuda=(--with-cuda=0)
[ "${CUDA:-0}" = 1 ] && cuda=(--with-cuda=1 --with-cuda-arch="${CUDA_ARCH:-90}" CUDAOPTFLAGS=-O3)
python3 ./configure PETSC_ARCH=arch --prefix="$prefix" --with-cc=mpicc --with-cxx=mpicxx --with-fc=0 \
  --with-debugging=0 COPTFLAGS=-O3 CXXOPTFLAGS=-O3 "${cuda[@]}" --with-shared-libraries=1 --with-x=0 \
  --with-mpiexec="mpiexec --allow-run-as-root --oversubscribe"
make PETSC_DIR="$PWD" PETSC_ARCH=arch -j"${JOBS:-$(nproc)}" all
make PETSC_DIR="$PWD" PETSC_ARCH=arch install
echo "PETSc installed in $prefix (pkg-config: $prefix/lib/pkgconfig)"
