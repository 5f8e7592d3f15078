#include "distributed/reducers.hpp"

#include <cctype>

#include "core/error.hpp"
#include "distributed/halo.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#include "distributed/peer.hpp"
#endif
#ifdef HEPTANE_HAVE_NCCL
#include <nccl.h>
#endif

namespace heptane::dist {

namespace {

class MpiReducer final : public Reducer {
public:
    MpiReducer(std::shared_ptr<const Communicator> comm, std::shared_ptr<const Executor> exec)
        : comm_(std::move(comm)), exec_(std::move(exec))
    {
#ifdef HEPTANE_HAVE_CUDA
        if (exec_->is_cuda()) {
            HEPTANE_CUDA_CHECK(cudaSetDevice(static_cast<const CudaExecutor&>(*exec_).device()));
            HEPTANE_CUDA_CHECK(cudaMallocHost(&pinned_, sizeof(double) * capacity));
        }
#endif
    }
    ~MpiReducer() override
    {
#ifdef HEPTANE_HAVE_CUDA
        if (pinned_) cudaFreeHost(pinned_);
#endif
    }
    void sum(const Executor& exec, double* values, int count) const override
    {
        HEPTANE_ENSURE(count >= 0 && count <= capacity, InputError,
                       "Reducer::sum: " << count << " values (at most " << capacity << ")");
        if (exec.is_cpu()) {
            MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_->comm());
            return;
        }
#ifdef HEPTANE_HAVE_CUDA
        const cudaStream_t s = cuda::stream(static_cast<const CudaExecutor&>(exec));
        HEPTANE_CUDA_CHECK(
            cudaMemcpyAsync(pinned_, values, sizeof(double) * count, cudaMemcpyDeviceToHost, s));
        HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
        MPI_Allreduce(MPI_IN_PLACE, pinned_, count, MPI_DOUBLE, MPI_SUM, comm_->comm());
        HEPTANE_CUDA_CHECK(
            cudaMemcpyAsync(values, pinned_, sizeof(double) * count, cudaMemcpyHostToDevice, s));
#endif
    }
    int size() const noexcept override
    {
        return comm_->size();
    }

private:
    static constexpr int capacity = 8;
    std::shared_ptr<const Communicator> comm_;
    std::shared_ptr<const Executor> exec_;
    double* pinned_ = nullptr;
};

#ifdef HEPTANE_HAVE_NCCL
class NcclReducer final : public Reducer {
public:
    NcclReducer(std::shared_ptr<const Communicator> comm, std::shared_ptr<const Executor> exec)
        : comm_(std::move(comm)), exec_(std::move(exec))
    {
        HEPTANE_ENSURE(exec_->is_cuda(), InputError, "the nccl reduction needs a CUDA executor");
        nccl_ =
            static_cast<ncclComm_t>(comm_->nccl(static_cast<const CudaExecutor&>(*exec_).device()));
    }
    void sum(const Executor& exec, double* values, int count) const override
    {
        const cudaStream_t s = cuda::stream(static_cast<const CudaExecutor&>(exec));
        const ncclResult_t r =
            ncclAllReduce(values, values, std::size_t(count), ncclDouble, ncclSum, nccl_, s);
        HEPTANE_ENSURE(r == ncclSuccess, DeviceError, "ncclAllReduce: " << ncclGetErrorString(r));
    }
    int size() const noexcept override { return comm_->size(); }
    bool graph_safe() const noexcept override { return true; }

private:
    std::shared_ptr<const Communicator> comm_;
    std::shared_ptr<const Executor> exec_;
    ncclComm_t nccl_ = nullptr;
};
#endif

}  // namespace

ReduceModel parse_reduce_model(const std::string& name)
{
    std::string n = name;
    for (auto& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (n == "auto") return ReduceModel::automatic;
    if (n == "mpi") return ReduceModel::mpi;
    if (n == "nccl") return ReduceModel::nccl;
    if (n == "peer") return ReduceModel::peer;
    HEPTANE_THROW(InputError,
                  "unknown reduction model '" << name << "' (choices: auto, mpi, nccl, peer)");
}

const char* to_string(ReduceModel m) noexcept
{
    switch (m) {
        case ReduceModel::automatic:
            return "auto";
        case ReduceModel::mpi:
            return "mpi";
        case ReduceModel::nccl:
            return "nccl";
        case ReduceModel::peer:
            return "peer";
    }
    return "?";
}

ReduceModel resolve_reduce_model(ReduceModel m, const Executor& exec, const Communicator& comm)
{
    if (m != ReduceModel::automatic) return m;
    switch (best_path(exec, comm)) {
        case DirectPath::peer:
            return ReduceModel::peer;
        case DirectPath::nccl:
            return ReduceModel::nccl;
        case DirectPath::host:
        case DirectPath::staged:
            break;
    }
    return ReduceModel::mpi;
}

std::unique_ptr<Reducer> make_reducer(ReduceModel model, std::shared_ptr<const Communicator> comm,
                                      std::shared_ptr<const Executor> exec)
{
    model = resolve_reduce_model(model, *exec, *comm);
    if (model == ReduceModel::mpi)
        return std::make_unique<MpiReducer>(std::move(comm), std::move(exec));
    if (model == ReduceModel::peer) {
#ifdef HEPTANE_HAVE_CUDA
        return make_peer_reducer(std::move(comm), std::move(exec));
#else
        HEPTANE_THROW(NotSupported, "reduction model 'peer': this build of heptane has no CUDA");
#endif
    }
#ifdef HEPTANE_HAVE_NCCL
    HEPTANE_ENSURE(exec->is_cuda(), InputError,
                   "the nccl reduction is for GPU vectors; on the CPU use mpi");
    return std::make_unique<NcclReducer>(std::move(comm), std::move(exec));
#else
    HEPTANE_THROW(NotSupported, "reduction model 'nccl': this build of heptane has no NCCL");
#endif
}

}  // namespace heptane::dist
