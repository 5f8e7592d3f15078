// The benchmark programs behind `heptane bench <what>` (apps/cmd_bench.cpp dispatches).
// Each takes the arguments after its name and returns the process exit status (0 success,
// 1 a failed check or failed work, 2 usage error through UsageError). Benchmarks check every
// result against the CPU reference before timing it (BENCHMARKS.md).
#pragma once

namespace heptane::cli {

/// heptane bench spmv: y = A x and A^T x per format, kernel and precision on one CUDA device,
/// next to the device's copy bandwidth and cuSPARSE (apps/bench_spmv.cpp; --help for the
/// options). Needs a build with the CUDA back end.
int bench_spmv(int argc, char** argv);

/// heptane bench solve: BiCGStab or GMRES(m) per iteration, against its floor, and to
/// tolerance (apps/bench_solve.cpp).
int bench_solve(int argc, char** argv);

/// heptane bench precond: time to solution per preconditioner (setup, iterations, solve)
/// on generated or given systems (apps/bench_precond.cpp). CPU or CUDA.
int bench_precond(int argc, char** argv);
/// heptane bench setup: the BDIA-GH operator's setup stage by stage next to one product
/// (apps/bench_setup.cpp). CPU or CUDA.
int bench_setup(int argc, char** argv);

/// heptane bench mlem: MLEM/OSEM per iteration and the forward/back projections against their
/// floors, per format and A^T strategy (apps/bench_mlem.cpp). CPU or CUDA.
int bench_mlem(int argc, char** argv);

/// heptane bench spmv --out-of-core / bench mlem --out-of-core: products and MLEM with the
/// matrix streamed from host memory (apps/bench_outofcore.cpp). Needs a GPU.
int bench_out_of_core(int argc, char** argv, bool mlem);

/// heptane bench lsqr: LSQR per iteration against its floor (apps/bench_lsqr.cpp).
int bench_lsqr(int argc, char** argv);

/// heptane bench comm / scale, under mpirun (apps/mpi/bench_dist.cpp; builds with MPI only).
int bench_comm(int argc, char** argv);
int bench_scale(int argc, char** argv);

}  // namespace heptane::cli
