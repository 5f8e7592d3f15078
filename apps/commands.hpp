// The heptane subcommands. Each takes the arguments after its name and returns the process
// exit status (0 success, 1 failure of the work, 2 usage error). Errors go to stderr.
#pragma once

namespace heptane::cli {

int cmd_gen(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_spmv(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_solve(int argc, char** argv);
int cmd_mlem(int argc, char** argv);
int cmd_lsqr(int argc, char** argv);
int cmd_pet(int argc, char** argv);

class Args;
/// heptane solve under mpirun (apps/mpi/cmd_solve_dist.cpp; builds with MPI only).
int cmd_solve_distributed(Args& args, bool json, bool monitor, bool quiet);
/// True when this process was started by mpirun/mpiexec/srun with more than one rank
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE or MPI_LOCALNRANKS above 1).
bool launched_by_mpirun();

}  // namespace heptane::cli
