#include "distributed/halo.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/error.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#include "distributed/peer.hpp"
#endif
#ifdef HEPTANE_HAVE_NCCL
#include <nccl.h>
#endif

namespace heptane::dist {

DirectPath best_path(const Executor& exec, const Communicator& comm)
{
    if (exec.is_cpu()) return DirectPath::host;
#ifdef HEPTANE_HAVE_CUDA
    if (peer_capable(exec, comm)) return DirectPath::peer;
#endif
    // NCCL when every rank of the node has a GPU of its own (it refuses two ranks on one)
    const bool own_gpu = comm.node_size() <= CudaExecutor::device_count();
    return built_with_nccl() && own_gpu ? DirectPath::nccl : DirectPath::staged;
}

namespace {

struct ModelName {
    HaloModel model;
    const char* name;
};
constexpr ModelName model_names[] = {
    {HaloModel::automatic, "auto"},
    {HaloModel::host, "host"},
    {HaloModel::pinned_async, "pinned-async"},
    {HaloModel::pinned_sync, "pinned-sync"},
    {HaloModel::pageable_async, "pageable-async"},
    {HaloModel::pageable_sync, "pageable-sync"},
    {HaloModel::nccl, "nccl"},
    {HaloModel::cuda_aware, "cuda-aware"},
    {HaloModel::peer, "peer"},
};

template <class VT>
MPI_Datatype mpi_type()
{
    return sizeof(VT) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT;
}

// ---- CPU: straight from and into host vectors ---------------------------------------------

template <class VT>
class HostHalo final : public HaloExchange<VT> {
public:
    HostHalo(const HaloPlan& plan, std::shared_ptr<const Communicator> comm)
        : plan_(plan), comm_(std::move(comm)), halo_(std::size_t(plan.halo_rows()))
    {
    }
    void start(const VT* x) override
    {
        reqs_.clear();
        for (const auto& p : plan_.recvs) {
            reqs_.emplace_back();
            MPI_Irecv(halo_.data() + p.offset, p.count, mpi_type<VT>(), p.peer, p.tag,
                      comm_->comm(), &reqs_.back());
        }
        for (const auto& p : plan_.sends) {
            reqs_.emplace_back();
            MPI_Isend(x + p.offset, p.count, mpi_type<VT>(), p.peer, p.tag, comm_->comm(),
                      &reqs_.back());
        }
    }
    void finish() override
    {
        MPI_Waitall(int(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
        reqs_.clear();
    }
    VT* halo() noexcept override { return halo_.data(); }
    HaloModel model() const noexcept override { return HaloModel::host; }

private:
    HaloPlan plan_;
    std::shared_ptr<const Communicator> comm_;
    std::vector<VT> halo_;
    std::vector<MPI_Request> reqs_;
};

#ifdef HEPTANE_HAVE_CUDA

/// Device halo buffer, a communication stream and events on the executor's device.
template <class VT>
class GpuHaloBase : public HaloExchange<VT> {
public:
    GpuHaloBase(const HaloPlan& plan, std::shared_ptr<const Communicator> comm,
                std::shared_ptr<const Executor> exec)
        : plan_(plan), comm_(std::move(comm)), exec_(std::move(exec))
    {
        HEPTANE_ENSURE(exec_->is_cuda(), InputError,
                       "halo exchange through a GPU model needs a CUDA executor");
        const auto& ce = static_cast<const CudaExecutor&>(*exec_);
        HEPTANE_CUDA_CHECK(cudaSetDevice(ce.device()));
        compute_ = cuda::stream(ce);
        HEPTANE_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&d2h_, cudaEventDisableTiming));
        if (plan_.halo_rows() > 0)
            halo_ = static_cast<VT*>(exec_->alloc(sizeof(VT) * std::size_t(plan_.halo_rows())));
    }
    ~GpuHaloBase() override
    {
        if (halo_) exec_->free(halo_);
        cudaEventDestroy(ready_);
        cudaEventDestroy(done_);
        cudaEventDestroy(d2h_);
        cudaStreamDestroy(comm_stream_);
    }
    VT* halo() noexcept override { return halo_; }

protected:
    HaloPlan plan_;
    std::shared_ptr<const Communicator> comm_;
    std::shared_ptr<const Executor> exec_;
    cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
    cudaEvent_t ready_ = nullptr, done_ = nullptr, d2h_ = nullptr;
    VT* halo_ = nullptr;
    std::vector<MPI_Request> reqs_;
};

/// The thesis's four: through host buffers, pinned or pageable, overlapped or not.
template <class VT>
class StagedHalo final : public GpuHaloBase<VT> {
    using B = GpuHaloBase<VT>;

public:
    StagedHalo(HaloModel model, const HaloPlan& plan, std::shared_ptr<const Communicator> comm,
               std::shared_ptr<const Executor> exec)
        : B(plan, std::move(comm), std::move(exec)), model_(model)
    {
        pinned_ = model == HaloModel::pinned_async || model == HaloModel::pinned_sync;
        async_ = model == HaloModel::pinned_async || model == HaloModel::pageable_async;
        const std::size_t ns = std::size_t(plan.send_rows()), nr = std::size_t(plan.halo_rows());
        if (pinned_) {
            if (ns) HEPTANE_CUDA_CHECK(cudaMallocHost(&send_, ns * sizeof(VT)));
            if (nr) HEPTANE_CUDA_CHECK(cudaMallocHost(&recv_, nr * sizeof(VT)));
        } else {
            send_vec_.resize(ns);
            recv_vec_.resize(nr);
            send_ = send_vec_.data();
            recv_ = recv_vec_.data();
        }
    }
    ~StagedHalo() override
    {
        if (pinned_) {
            cudaFreeHost(send_);
            cudaFreeHost(recv_);
        }
    }
    void start(const VT* x) override
    {
        if (!async_) {
            // synchronous: x is complete, copies and messages in turn, the halo is in place
            // before the local product is even queued
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(B::compute_));
            copy_out(x, B::compute_);
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(B::compute_));
            post_recvs();
            post_sends();
            MPI_Waitall(int(B::reqs_.size()), B::reqs_.data(), MPI_STATUSES_IGNORE);
            B::reqs_.clear();
            copy_in(B::compute_);
            return;
        }
        x_ = x;
        // the previous exchange's host -> device copy must have left recv_ before MPI
        // writes into it again
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(B::done_));
        HEPTANE_CUDA_CHECK(cudaEventRecord(B::ready_, B::compute_));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(B::comm_stream_, B::ready_, 0));
        post_recvs();
        if (pinned_) {  // queued now, runs beside the local product
            copy_out(x, B::comm_stream_);
            HEPTANE_CUDA_CHECK(cudaEventRecord(B::d2h_, B::comm_stream_));
        }
    }
    void finish() override
    {
        if (!async_) return;
        if (pinned_)
            HEPTANE_CUDA_CHECK(cudaEventSynchronize(B::d2h_));
        else {  // a pageable copy blocks the host: done here, after the local product is queued
            copy_out(x_, B::comm_stream_);
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(B::comm_stream_));
        }
        post_sends();
        MPI_Waitall(int(B::reqs_.size()), B::reqs_.data(), MPI_STATUSES_IGNORE);
        B::reqs_.clear();
        copy_in(B::comm_stream_);
        HEPTANE_CUDA_CHECK(cudaEventRecord(B::done_, B::comm_stream_));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(B::compute_, B::done_, 0));
    }
    HaloModel model() const noexcept override { return model_; }

private:
    void copy_out(const VT* x, cudaStream_t s)
    {
        std::size_t pos = 0;
        for (const auto& p : B::plan_.sends) {
            HEPTANE_CUDA_CHECK(cudaMemcpyAsync(send_ + pos, x + p.offset, sizeof(VT) * p.count,
                                               cudaMemcpyDeviceToHost, s));
            pos += std::size_t(p.count);
        }
    }
    void copy_in(cudaStream_t s)
    {
        if (B::plan_.halo_rows() > 0)
            HEPTANE_CUDA_CHECK(cudaMemcpyAsync(B::halo_, recv_,
                                               sizeof(VT) * std::size_t(B::plan_.halo_rows()),
                                               cudaMemcpyHostToDevice, s));
    }
    void post_recvs()
    {
        for (const auto& p : B::plan_.recvs) {
            B::reqs_.emplace_back();
            MPI_Irecv(recv_ + p.offset, p.count, mpi_type<VT>(), p.peer, p.tag, B::comm_->comm(),
                      &B::reqs_.back());
        }
    }
    void post_sends()
    {
        std::size_t pos = 0;
        for (const auto& p : B::plan_.sends) {
            B::reqs_.emplace_back();
            MPI_Isend(send_ + pos, p.count, mpi_type<VT>(), p.peer, p.tag, B::comm_->comm(),
                      &B::reqs_.back());
            pos += std::size_t(p.count);
        }
    }

    HaloModel model_;
    bool pinned_ = true, async_ = true;
    VT* send_ = nullptr;
    VT* recv_ = nullptr;
    std::vector<VT> send_vec_, recv_vec_;
    const VT* x_ = nullptr;
};

/// MPI on device pointers (CUDA-aware MPI).
template <class VT>
class CudaAwareHalo final : public GpuHaloBase<VT> {
    using B = GpuHaloBase<VT>;

public:
    using B::B;
    void start(const VT* x) override
    {
        x_ = x;
        HEPTANE_CUDA_CHECK(cudaEventRecord(B::ready_, B::compute_));
        for (const auto& p : B::plan_.recvs) {
            B::reqs_.emplace_back();
            MPI_Irecv(B::halo_ + p.offset, p.count, mpi_type<VT>(), p.peer, p.tag, B::comm_->comm(),
                      &B::reqs_.back());
        }
    }
    void finish() override
    {
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(B::ready_));
        for (const auto& p : B::plan_.sends) {
            B::reqs_.emplace_back();
            MPI_Isend(x_ + p.offset, p.count, mpi_type<VT>(), p.peer, p.tag, B::comm_->comm(),
                      &B::reqs_.back());
        }
        MPI_Waitall(int(B::reqs_.size()), B::reqs_.data(), MPI_STATUSES_IGNORE);
        B::reqs_.clear();
    }
    HaloModel model() const noexcept override { return HaloModel::cuda_aware; }

private:
    const VT* x_ = nullptr;
};

#ifdef HEPTANE_HAVE_NCCL
/// Device to device with NCCL point-to-point calls on the communication stream.
template <class VT>
class NcclHalo final : public GpuHaloBase<VT> {
    using B = GpuHaloBase<VT>;

public:
    NcclHalo(const HaloPlan& plan, std::shared_ptr<const Communicator> comm,
             std::shared_ptr<const Executor> exec)
        : B(plan, comm, exec)
    {
        nccl_ = static_cast<ncclComm_t>(
            comm->nccl(static_cast<const CudaExecutor&>(*B::exec_).device()));
    }
    void start(const VT* x) override
    {
        const ncclDataType_t t = sizeof(VT) == sizeof(double) ? ncclDouble : ncclFloat;
        HEPTANE_CUDA_CHECK(cudaEventRecord(B::ready_, B::compute_));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(B::comm_stream_, B::ready_, 0));
        check(ncclGroupStart());
        for (const auto& p : B::plan_.recvs)
            check(ncclRecv(B::halo_ + p.offset, std::size_t(p.count), t, p.peer, nccl_,
                           B::comm_stream_));
        for (const auto& p : B::plan_.sends)
            check(ncclSend(x + p.offset, std::size_t(p.count), t, p.peer, nccl_, B::comm_stream_));
        check(ncclGroupEnd());
        HEPTANE_CUDA_CHECK(cudaEventRecord(B::done_, B::comm_stream_));
    }
    void finish() override { HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(B::compute_, B::done_, 0)); }
    HaloModel model() const noexcept override { return HaloModel::nccl; }
    bool graph_safe() const noexcept override { return true; }

private:
    static void check(ncclResult_t r)
    {
        HEPTANE_ENSURE(r == ncclSuccess, DeviceError,
                       "NCCL halo exchange: " << ncclGetErrorString(r));
    }
    ncclComm_t nccl_ = nullptr;
};
#endif  // HEPTANE_HAVE_NCCL

#endif  // HEPTANE_HAVE_CUDA

}  // namespace

HaloModel parse_halo_model(const std::string& name)
{
    std::string n = name;
    for (auto& c : n) c = c == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& m : model_names)
        if (n == m.name) return m.model;
    HEPTANE_THROW(InputError, "unknown halo exchange model '"
                                  << name
                                  << "' (choices: auto, host, pinned-async, pinned-sync, "
                                     "pageable-async, pageable-sync, nccl, cuda-aware, peer)");
}

const char* to_string(HaloModel m) noexcept
{
    for (const auto& x : model_names)
        if (x.model == m) return x.name;
    return "?";
}

HaloModel resolve_halo_model(HaloModel m, const Executor& exec, const Communicator& comm)
{
    if (m != HaloModel::automatic) return m;
    switch (best_path(exec, comm)) {
        case DirectPath::host:
            return HaloModel::host;
        case DirectPath::peer:
            return HaloModel::peer;
        case DirectPath::nccl:
            return HaloModel::nccl;
        case DirectPath::staged:
            break;
    }
    return HaloModel::pinned_async;
}

index_t HaloPlan::send_rows() const noexcept
{
    index_t n = 0;
    for (const auto& p : sends) n += p.count;
    return n;
}

HaloPlan make_halo_plan(const RowPartition& part, int rank, index_t w_lo, index_t w_hi)
{
    HEPTANE_ENSURE(rank >= 0 && rank < part.size(), InputError,
                   "halo plan: rank " << rank << " of a " << part.size() << "-way partition");
    const index_t N = part.global_rows();
    auto lower_of = [&](int p) {
        return part.begin(p) - std::max<index_t>(0, part.begin(p) - w_lo);
    };
    auto upper_of = [&](int p) { return std::min<index_t>(N, part.end(p) + w_hi) - part.end(p); };
    HaloPlan plan;
    const index_t b = part.begin(rank), e = part.end(rank);
    plan.lower = lower_of(rank);
    plan.upper = upper_of(rank);
    for (int q = 0; q < part.size(); ++q) {
        if (q == rank) continue;
        const index_t bq = part.begin(q), eq = part.end(q);
        // what q owns of my lower halo [b - L, b), then of my upper halo [e, e + U)
        index_t lo = std::max(bq, b - plan.lower), hi = std::min(eq, b);
        if (lo < hi) plan.recvs.push_back({q, lo - (b - plan.lower), hi - lo, 1});
        lo = std::max(bq, e);
        hi = std::min(eq, e + plan.upper);
        if (lo < hi) plan.recvs.push_back({q, plan.lower + (lo - e), hi - lo, 2});
        // what I own of q's lower halo, then of q's upper halo
        lo = std::max(b, bq - lower_of(q));
        hi = std::min(e, bq);
        if (lo < hi) plan.sends.push_back({q, lo - b, hi - lo, 1});
        lo = std::max(b, eq);
        hi = std::min(e, eq + upper_of(q));
        if (lo < hi) plan.sends.push_back({q, lo - b, hi - lo, 2});
    }
    return plan;
}

template <class VT>
// `exec` by value: the GPU models keep it (a CPU-only build only reads it).
std::unique_ptr<HaloExchange<VT>> make_halo_exchange(
    HaloModel model, const HaloPlan& plan, std::shared_ptr<const Communicator> comm,
    // NOLINTNEXTLINE(performance-unnecessary-value-param)
    std::shared_ptr<const Executor> exec)
{
    model = resolve_halo_model(model, *exec, *comm);
    if (model == HaloModel::host) {
        HEPTANE_ENSURE(exec->is_cpu(), InputError,
                       "halo model 'host' is for CPU vectors; on a GPU use pinned-async, "
                       "pinned-sync, pageable-async, pageable-sync, nccl or cuda-aware");
        return std::make_unique<HostHalo<VT>>(plan, std::move(comm));
    }
    HEPTANE_ENSURE(
        exec->is_cuda(), InputError,
        "halo model '" << to_string(model) << "' is for GPU vectors; on the CPU use host");
#ifdef HEPTANE_HAVE_CUDA
    switch (model) {
        case HaloModel::pinned_async:
        case HaloModel::pinned_sync:
        case HaloModel::pageable_async:
        case HaloModel::pageable_sync:
            return std::make_unique<StagedHalo<VT>>(model, plan, std::move(comm), std::move(exec));
        case HaloModel::cuda_aware:
            HEPTANE_ENSURE(Communicator::cuda_aware(), NotSupported,
                           "halo model 'cuda-aware': this MPI library does not report CUDA "
                           "support (MPIX_Query_cuda_support); use nccl or pinned-async");
            return std::make_unique<CudaAwareHalo<VT>>(plan, std::move(comm), std::move(exec));
        case HaloModel::peer:
            return make_peer_halo<VT>(plan, std::move(comm), std::move(exec));
        case HaloModel::nccl:
#ifdef HEPTANE_HAVE_NCCL
            return std::make_unique<NcclHalo<VT>>(plan, std::move(comm), std::move(exec));
#else
            HEPTANE_THROW(NotSupported, "halo model 'nccl': this build of heptane has no NCCL");
#endif
        default:
            break;
    }
#endif
    HEPTANE_THROW(NotSupported,
                  "halo model '" << to_string(model) << "' is not available in this build");
}

template std::unique_ptr<HaloExchange<double>> make_halo_exchange<double>(
    HaloModel, const HaloPlan&, std::shared_ptr<const Communicator>,
    std::shared_ptr<const Executor>);
template std::unique_ptr<HaloExchange<float>> make_halo_exchange<float>(
    HaloModel, const HaloPlan&, std::shared_ptr<const Communicator>,
    std::shared_ptr<const Executor>);

}  // namespace heptane::dist
