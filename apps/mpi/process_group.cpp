// heptane mlem and solve A.hoc under mpirun: MPI, the rank's executor, the sum over the ranks
// that Mlem::set_process_sum takes, the gathered-rows operator of solve and the row-block
// operator of lsqr (commands.hpp).
#include <mpi.h>

#include "apps/commands.hpp"
#include "apps/mpi/mpi_common.hpp"
#include "core/error.hpp"
#include "distributed/gathered_rows.hpp"

namespace heptane::cli {

namespace {
struct Session {
    MpiSession mpi;  // first in, last out
    dist::Communicator comm{MPI_COMM_WORLD};
};
}  // namespace

ProcessGroup mpi_process_group(const std::string& device)
{
    auto s = std::make_shared<Session>();
    ProcessGroup g;
    g.rank = s->comm.rank();
    g.size = s->comm.size();
    g.exec = rank_executor(device, s->comm);
    const MPI_Comm c = s->comm.comm();
    g.sum = [c](double* v, int n) {
        const int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, c);
        HEPTANE_ENSURE(rc == MPI_SUCCESS, DeviceError,
                       "MPI_Allreduce of " << n << " doubles failed");
    };
    const std::shared_ptr<const dist::Communicator> comm(s, &s->comm);
    g.gather_rows = [comm](std::shared_ptr<const Operator<double>> rows,
                           const std::vector<index_t>& starts, const std::string& gather,
                           const std::string& reduce) {
        return std::shared_ptr<const Operator<double>>(
            std::make_shared<dist::GatheredRowsOperator<double>>(
                comm, dist::RowPartition{starts}, std::move(rows), dist::parse_reduce_model(reduce),
                dist::parse_gather_model(gather)));
    };
    g.gather_rows_fp32 = [comm](std::shared_ptr<const Operator<float>> rows,
                                const std::vector<index_t>& starts, const std::string& gather,
                                const std::string& reduce) {
        return std::shared_ptr<const Operator<float>>(
            std::make_shared<dist::GatheredRowsOperator<float>>(
                comm, dist::RowPartition{starts}, std::move(rows), dist::parse_reduce_model(reduce),
                dist::parse_gather_model(gather)));
    };
    g.row_block = [comm](std::shared_ptr<const Operator<double>> rows,
                         const std::vector<index_t>& starts) {
        return std::shared_ptr<const Operator<double>>(
            std::make_shared<dist::RowBlockOperator<double>>(comm, dist::RowPartition{starts},
                                                             std::move(rows)));
    };
    g.row_block_fp32 = [comm](std::shared_ptr<const Operator<float>> rows,
                              const std::vector<index_t>& starts) {
        return std::shared_ptr<const Operator<float>>(
            std::make_shared<dist::RowBlockOperator<float>>(comm, dist::RowPartition{starts},
                                                            std::move(rows)));
    };
    g.session = std::move(s);
    return g;
}

}  // namespace heptane::cli
