// The heptane subcommands. Each takes the arguments after its name and returns the process
// exit status (0 success, 1 failure of the work, 2 usage error). Errors go to stderr.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/operator.hpp"

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
/// The processes of heptane mlem (and solve A.hoc) under mpirun (apps/mpi/process_group.cpp; builds
/// with MPI only): this rank, their number, this rank's executor (--device auto|cpu|gpu: the GPU of
/// its node-local rank) and an in-place sum of host doubles over the ranks (MPI_Allreduce).
/// MPI is finalised when the last copy goes.
struct ProcessGroup {
    int rank = 0;
    int size = 1;
    std::shared_ptr<const Executor> exec;
    std::function<void(double*, int)> sum;
    /// heptane solve A.hoc under mpirun: the operator of the whole square matrix from this
    /// rank's rows over every column, x gathered over the ranks at every product and the dot
    /// products summed (dist::GatheredRowsOperator); `starts`: every rank's first row, then
    /// the row count; `gather` (auto|host|nccl) and `reduce` (auto|mpi|nccl|peer) the models.
    template <class VT>
    using GatherRows = std::function<std::shared_ptr<const Operator<VT>>(
        std::shared_ptr<const Operator<VT>>, const std::vector<index_t>& starts,
        const std::string& gather, const std::string& reduce)>;
    GatherRows<double> gather_rows;
    GatherRows<float> gather_rows_fp32;
    /// heptane lsqr A.hoc under mpirun: this rank's rows of the m x n operator, x the same on
    /// every rank, A^T u summed over the ranks and the row vectors' norms too
    /// (dist::RowBlockOperator; the sum device to device with NCCL where it can run).
    template <class VT>
    using RowBlock = std::function<std::shared_ptr<const Operator<VT>>(
        std::shared_ptr<const Operator<VT>>, const std::vector<index_t>& starts)>;
    RowBlock<double> row_block;
    RowBlock<float> row_block_fp32;
    std::shared_ptr<void> session;
};
ProcessGroup mpi_process_group(const std::string& device);
/// True when this process was started by mpirun/mpiexec/srun with more than one rank
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE or MPI_LOCALNRANKS above 1).
bool launched_by_mpirun();

}  // namespace heptane::cli
