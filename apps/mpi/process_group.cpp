// heptane mlem under mpirun: MPI, the rank's executor and the sum over the ranks that
// Mlem::set_process_sum takes (commands.hpp).
#include <mpi.h>

#include "apps/commands.hpp"
#include "apps/mpi/mpi_common.hpp"
#include "core/error.hpp"

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
    g.session = std::move(s);
    return g;
}

}  // namespace heptane::cli
