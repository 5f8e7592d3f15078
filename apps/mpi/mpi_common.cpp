#include "apps/mpi/mpi_common.hpp"

#include "apps/args.hpp"
#include "core/error.hpp"

namespace heptane::cli {

MpiSession::MpiSession()
{
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
        MPI_Init(nullptr, nullptr);
        owns_ = true;
    }
}

MpiSession::~MpiSession()
{
    if (owns_) MPI_Finalize();
}

std::shared_ptr<const Executor> rank_executor(const std::string& device,
                                              const dist::Communicator& comm)
{
    const int dev = comm.local_device();
    if (device == "cpu") return cpu_executor();
    if (device == "auto") {
        if (built_with_cuda() && dev >= 0) return CudaExecutor::create(dev);
        return cpu_executor();
    }
    if (device == "gpu" || device == "cuda") {
        HEPTANE_ENSURE(
            built_with_cuda() && dev >= 0, DeviceError,
            "rank " << comm.rank() << ": --device " << device << " but no CUDA device is visible");
        return CudaExecutor::create(dev);
    }
    throw UsageError(
        "--device must be auto, cpu or gpu under mpirun (each rank takes the GPU "
        "of its node-local rank), not '" +
        device + "'");
}

double max_over_ranks(double v, const dist::Communicator& comm)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm.comm());
    return v;
}

}  // namespace heptane::cli
