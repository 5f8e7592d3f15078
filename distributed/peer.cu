// CUDA IPC mailboxes, the peer halo exchange and the peer reduction (distributed/peer.hpp).
#include <cuda.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/cuda_common.hpp"
#include "distributed/peer.hpp"

namespace heptane::dist {

namespace {

constexpr int max_ranks = 64;
constexpr int max_sums = 8;

/// One device allocation per rank, mapped by every other rank of the node.
class Mailbox {
public:
    Mailbox(const Communicator& comm, int device, std::size_t bytes) : P_(comm.size())
    {
        HEPTANE_CUDA_CHECK(cudaSetDevice(device));
        HEPTANE_CUDA_CHECK(cudaMalloc(&mine_, bytes));
        HEPTANE_CUDA_CHECK(cudaMemset(mine_, 0, bytes));
        HEPTANE_CUDA_CHECK(cudaDeviceSynchronize());
        cudaIpcMemHandle_t h;
        HEPTANE_CUDA_CHECK(cudaIpcGetMemHandle(&h, mine_));
        std::vector<cudaIpcMemHandle_t> all(static_cast<std::size_t>(P_));
        MPI_Allgather(&h, sizeof(h), MPI_BYTE, all.data(), sizeof(h), MPI_BYTE, comm.comm());
        peers_.assign(std::size_t(P_), nullptr);
        for (int q = 0; q < P_; ++q) {
            if (q == comm.rank()) {
                peers_[q] = mine_;
                continue;
            }
            HEPTANE_CUDA_CHECK(cudaIpcOpenMemHandle(&peers_[q], all[std::size_t(q)],
                                                    cudaIpcMemLazyEnablePeerAccess));
        }
        MPI_Barrier(comm.comm());
        me_ = comm.rank();
        comm_ = comm.comm();
    }
    /// Collective: every rank unmaps the others' mailboxes before any frees its own (a freed
    /// and reused address must never still be mapped by a partner, whose writes would then
    /// land nowhere and whose flags would never arrive).
    ~Mailbox()
    {
        cudaDeviceSynchronize();  // no kernel of ours still writes into a partner
        for (int q = 0; q < P_; ++q)
            if (q != me_ && peers_[q]) cudaIpcCloseMemHandle(peers_[q]);
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Barrier(comm_);
        if (mine_) cudaFree(mine_);
    }
    Mailbox(const Mailbox&) = delete;
    Mailbox& operator=(const Mailbox&) = delete;
    char* mine() const { return static_cast<char*>(mine_); }
    char* of(int q) const { return static_cast<char*>(peers_[std::size_t(q)]); }

private:
    int P_ = 1, me_ = 0;
    MPI_Comm comm_ = MPI_COMM_NULL;
    void* mine_ = nullptr;
    std::vector<void*> peers_;
};

__device__ __forceinline__ unsigned load_flag(const unsigned* f)
{
    return *reinterpret_cast<const volatile unsigned*>(f);
}
__device__ __forceinline__ void store_flag(unsigned* f, unsigned v)
{
    *reinterpret_cast<volatile unsigned*>(f) = v;
}

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/// Spin until *flag >= seq. A partner that never comes (a rank that died, or a program whose
/// ranks do not call the exchanges in the same order) ends in a kernel trap after
/// `timeout_ns` (0: never), which the host sees as a launch failure, not a silent hang.
__device__ void wait_flag(const unsigned* flag, unsigned seq, unsigned long long timeout_ns,
                          const char* what, int me, int from)
{
    if (load_flag(flag) >= seq) return;
    const unsigned long long t0 = global_ns();
    while (load_flag(flag) < seq) {
        if (timeout_ns && global_ns() - t0 > timeout_ns) {
            printf(
                "heptane: %s on rank %d: nothing from rank %d for %.0f s (sequence %u, flag "
                "%u); aborting (HEPTANE_PEER_TIMEOUT sets the limit in seconds)\n",
                what, me, from, double(timeout_ns) * 1e-9, seq, load_flag(flag));
            __trap();
        }
    }
}

/// HEPTANE_PEER_TIMEOUT in seconds (default 120; 0 waits for ever).
unsigned long long peer_timeout_ns()
{
    const char* e = std::getenv("HEPTANE_PEER_TIMEOUT");
    double s = 120;
    if (e && *e) s = std::atof(e);
    return s > 0 ? static_cast<unsigned long long>(s * 1e9) : 0ull;
}

// ---- reduction -------------------------------------------------------------------------------
// Mailbox layout: slots[2][P][max_sums] doubles, then flags[P] (the last sequence number
// each rank has posted here), then this rank's own sequence counter (device-resident, so a
// CUDA graph that replays the kernel counts on).

struct ReduceArgs {
    double* slots[max_ranks];  // slots base of every rank's mailbox (mine included)
    unsigned* flags[max_ranks];
    unsigned* seq;  // my counter
    int P, me, count;
    unsigned long long timeout_ns;
};

__global__ void peer_reduce_kernel(ReduceArgs a, double* values)
{
    // one warp: lane k < count handles sum k
    const int k = threadIdx.x;
    const unsigned seq = load_flag(a.seq) + 1;
    const int par = seq & 1u;
    const double v = k < a.count ? values[k] : 0.0;
    if (k < a.count)
        for (int q = 0; q < a.P; ++q)
            a.slots[q][(par * a.P + a.me) * max_sums + k] = v;  // my slot in rank q's mailbox
    __syncwarp();
    __threadfence_system();
    __syncwarp();
    if (k == 0)
        for (int q = 0; q < a.P; ++q)
            if (q != a.me) store_flag(a.flags[q] + a.me, seq);
    // wait for every rank's post to my mailbox
    for (int q = k; q < a.P; q += 32)
        if (q != a.me) wait_flag(a.flags[a.me] + q, seq, a.timeout_ns, "peer reduction", a.me, q);
    __syncwarp();
    __threadfence();
    if (k < a.count) {
        double s = 0;
        const volatile double* mine = a.slots[a.me];
        for (int q = 0; q < a.P; ++q) s += mine[(par * a.P + q) * max_sums + k];
        values[k] = s;
    }
    __syncwarp();
    if (k == 0) store_flag(a.seq, seq);
}

class PeerReducer final : public Reducer {
public:
    PeerReducer(std::shared_ptr<const Communicator> comm, std::shared_ptr<const Executor> exec)
        : comm_(std::move(comm)), exec_(std::move(exec))
    {
        const int P = comm_->size();
        HEPTANE_ENSURE(P <= max_ranks, NotSupported,
                       "peer reduction: at most " << max_ranks << " ranks");
        const std::size_t slot_bytes = sizeof(double) * 2 * std::size_t(P) * max_sums;
        box_ = std::make_unique<Mailbox>(*comm_, static_cast<const CudaExecutor&>(*exec_).device(),
                                         slot_bytes + sizeof(unsigned) * (std::size_t(P) + 1));
        args_.P = P;
        args_.me = comm_->rank();
        args_.timeout_ns = peer_timeout_ns();
        for (int q = 0; q < P; ++q) {
            args_.slots[q] = reinterpret_cast<double*>(box_->of(q));
            args_.flags[q] = reinterpret_cast<unsigned*>(box_->of(q) + slot_bytes);
        }
        args_.seq = reinterpret_cast<unsigned*>(box_->mine() + slot_bytes) + P;
    }
    void sum(const Executor& exec, double* values, int count) const override
    {
        HEPTANE_ENSURE(count >= 0 && count <= max_sums, InputError,
                       "Reducer::sum: " << count << " values (at most " << max_sums << ")");
        ReduceArgs a = args_;
        a.count = count;
        peer_reduce_kernel<<<1, 32, 0, cuda::stream(static_cast<const CudaExecutor&>(exec))>>>(
            a, values);
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
    int size() const noexcept override { return comm_->size(); }
    bool graph_safe() const noexcept override { return true; }

private:
    std::shared_ptr<const Communicator> comm_;
    std::shared_ptr<const Executor> exec_;
    std::unique_ptr<Mailbox> box_;
    ReduceArgs args_{};
};

// ---- halo --------------------------------------------------------------------------------------
// Mailbox layout: first the flags -- arrive[P] (the last exchange each sender has pushed
// here), ack[P] (the last exchange each receiver of mine has copied out of its staging),
// the kernel's two block tickets, and this rank's sequence counter (device-resident, so a
// CUDA graph that replays the kernel counts on) -- padded to 256 bytes, then two staging
// buffers of halo_rows VT each, used alternately (exchange s lands in staging[s & 1]). The
// flags come first because their offset must be the same in every rank's mailbox: halo
// sizes differ (an end rank has one neighbour, a middle rank two).
//
// Exchange s is one kernel on the communication stream, beside the local product: it
// writes this rank's rows into each receiver's staging[s & 1] once that receiver has
// acknowledged exchange s - 2 (which used the same buffer), raises arrive = s there, waits
// for its own senders' arrive >= s, copies its staging[s & 1] into its halo buffer (the one
// halo() returns, at a fixed address for CUDA graphs) and acknowledges s to the senders. The
// acknowledgement a push waits for is two exchanges old: in a solver loop it has long
// arrived, so no exchange waits for a round trip between the GPUs. The executor's stream
// joins the kernel before the boundary rows. The kernel runs at the device's highest
// priority, also inside a CUDA graph (a node attribute), so that its few blocks start
// while the local product fills the device.

constexpr int max_pieces = 8;

template <class VT>
struct ExchangeArgs {
    // send pieces
    int ns;
    const VT* src[max_pieces];
    VT* dst[max_pieces];               // staging[0] + offset in the receiver's mailbox
    long long dst_stride[max_pieces];  // the receiver's halo rows (its staging[1] - staging[0])
    long long send_count[max_pieces];
    int to[max_pieces];
    unsigned* arrive[max_pieces];          // my arrive flag in the receiver's mailbox
    const unsigned* ack_mine[max_pieces];  // the receiver's ack flag in my mailbox
    // recv pieces
    int nr;
    const VT* staging;                                          // my staging[0]
    long long stride;                                           // my halo rows
    VT* halo;                                                   // my halo buffer
    long long recv_offset[max_pieces], recv_count[max_pieces];  // in the halo
    int from[max_pieces];
    const unsigned* arrive_from[max_pieces];  // each sender's arrive flag in my mailbox
    unsigned* ack_theirs[max_pieces];         // my ack flag in each sender's mailbox
    // mine
    unsigned* pushed_blocks;  // ticket: blocks done pushing
    unsigned* copied_blocks;  // ticket: blocks done copying
    unsigned* seq;            // exchanges done so far
    int me;
    unsigned long long timeout_ns;
};

/// Is this block the last of the grid to get here? (`ticket` wraps to 0 for the next use.)
__device__ __forceinline__ bool last_block_through(unsigned* ticket)
{
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) last = atomicInc(ticket, gridDim.x - 1) == gridDim.x - 1;
    __syncthreads();
    return last;
}

template <class VT>
__global__ void peer_exchange_kernel(ExchangeArgs<VT> a)
{
    const unsigned seq = load_flag(a.seq) + 1;
    const int par = seq & 1u;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long first = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    // push: the receivers' staging[par] is free once they acknowledged exchange seq - 2
    if (static_cast<int>(threadIdx.x) < a.ns && seq > 2)
        wait_flag(a.ack_mine[threadIdx.x], seq - 2, a.timeout_ns, "peer halo (acknowledgement)",
                  a.me, a.to[threadIdx.x]);
    __syncthreads();
    for (int p = 0; p < a.ns; ++p) {
        VT* dst = a.dst[p] + par * a.dst_stride[p];
        for (long long i = first; i < a.send_count[p]; i += stride) dst[i] = a.src[p][i];
    }
    __threadfence_system();
    if (last_block_through(a.pushed_blocks) && static_cast<int>(threadIdx.x) < a.ns) {
        __threadfence_system();
        store_flag(a.arrive[threadIdx.x], seq);  // every block has pushed its part
    }
    // receive: every block waits for every sender, then copies its share out of staging
    if (static_cast<int>(threadIdx.x) < a.nr)
        wait_flag(a.arrive_from[threadIdx.x], seq, a.timeout_ns, "peer halo", a.me,
                  a.from[threadIdx.x]);
    __syncthreads();
    __threadfence();
    const VT* src = a.staging + par * a.stride;
    for (int p = 0; p < a.nr; ++p) {
        const long long o = a.recv_offset[p];
        for (long long i = first; i < a.recv_count[p]; i += stride)
            a.halo[o + i] = __ldcg(src + o + i);  // L2, never a stale L1 line
    }
    __threadfence();  // the staging reads are done before the acknowledgement
    if (last_block_through(a.copied_blocks)) {
        if (static_cast<int>(threadIdx.x) < a.nr) store_flag(a.ack_theirs[threadIdx.x], seq);
        __syncthreads();
        if (threadIdx.x == 0) store_flag(a.seq, seq);
    }
}

template <class VT>
class PeerHalo final : public HaloExchange<VT> {
public:
    PeerHalo(const HaloPlan& plan, std::shared_ptr<const Communicator> comm,
             std::shared_ptr<const Executor> exec)
        : plan_(plan), comm_(std::move(comm)), exec_(std::move(exec))
    {
        const int P = comm_->size(), me = comm_->rank();
        HEPTANE_ENSURE(
            int(plan_.sends.size()) <= max_pieces && int(plan_.recvs.size()) <= max_pieces,
            NotSupported, "peer halo: more than " << max_pieces << " pieces");
        const auto& ce = static_cast<const CudaExecutor&>(*exec_);
        HEPTANE_CUDA_CHECK(cudaSetDevice(ce.device()));
        compute_ = cuda::stream(ce);
        int lo = 0;
        HEPTANE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &priority_));
        HEPTANE_CUDA_CHECK(
            cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking, priority_));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
        // flags: arrive[P], ack[P], two tickets, seq (the same offsets on every rank)
        const std::size_t flag_bytes =
            (sizeof(unsigned) * (2 * std::size_t(P) + 3) + 255) / 256 * 256;
        const long long rows = plan_.halo_rows();
        box_ = std::make_unique<Mailbox>(*comm_, ce.device(),
                                         flag_bytes + 2 * sizeof(VT) * std::size_t(rows));
        halo_ = Array<VT>(exec_, std::size_t(std::max<long long>(rows, 1)));
        auto flags = [&](int owner) { return reinterpret_cast<unsigned*>(box_->of(owner)); };
        auto staging_of = [&](int owner) {
            return reinterpret_cast<VT*>(box_->of(owner) + flag_bytes);
        };
        // where my pieces land in each receiver's staging, and its halo rows: the receivers
        // say (by tag)
        std::vector<MPI_Request> reqs;
        std::vector<std::array<long long, 2>> dst(plan_.sends.size());
        std::vector<std::array<long long, 2>> mine(plan_.recvs.size());
        for (std::size_t i = 0; i < plan_.recvs.size(); ++i) {
            mine[i] = {plan_.recvs[i].offset, rows};
            reqs.emplace_back();
            MPI_Isend(mine[i].data(), 2, MPI_LONG_LONG, plan_.recvs[i].peer,
                      100 + plan_.recvs[i].tag, comm_->comm(), &reqs.back());
        }
        for (std::size_t i = 0; i < plan_.sends.size(); ++i) {
            reqs.emplace_back();
            MPI_Irecv(dst[i].data(), 2, MPI_LONG_LONG, plan_.sends[i].peer,
                      100 + plan_.sends[i].tag, comm_->comm(), &reqs.back());
        }
        MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
        auto& a = args_;
        a.me = me;
        a.timeout_ns = peer_timeout_ns();
        long long most = 0;
        a.ns = int(plan_.sends.size());
        for (int i = 0; i < a.ns; ++i) {
            const auto& s = plan_.sends[std::size_t(i)];
            a.dst[i] = staging_of(s.peer) + dst[std::size_t(i)][0];
            a.dst_stride[i] = dst[std::size_t(i)][1];
            a.send_count[i] = s.count;
            a.to[i] = s.peer;
            a.arrive[i] = flags(s.peer) + me;
            a.ack_mine[i] = flags(me) + P + s.peer;
            most = std::max<long long>(most, s.count);
        }
        a.nr = int(plan_.recvs.size());
        a.staging = staging_of(me);
        a.stride = rows;
        a.halo = halo_.data();
        for (int i = 0; i < a.nr; ++i) {
            const auto& r = plan_.recvs[std::size_t(i)];
            a.recv_offset[i] = r.offset;
            a.recv_count[i] = r.count;
            a.from[i] = r.peer;
            a.arrive_from[i] = flags(me) + r.peer;
            a.ack_theirs[i] = flags(r.peer) + P + me;
            most = std::max<long long>(most, r.count);
        }
        a.pushed_blocks = flags(me) + 2 * P;
        a.copied_blocks = flags(me) + 2 * P + 1;
        a.seq = flags(me) + 2 * P + 2;
        blocks_ = std::max(1u, std::min<unsigned>(64, cuda::grid_for(most, 256)));
        MPI_Barrier(comm_->comm());
    }
    ~PeerHalo() override
    {
        cudaEventDestroy(ready_);
        cudaEventDestroy(done_);
        cudaStreamDestroy(comm_stream_);
    }
    void start(const VT* x) override
    {
        HEPTANE_CUDA_CHECK(cudaEventRecord(ready_, compute_));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready_, 0));
        ExchangeArgs<VT> a = args_;
        for (int i = 0; i < a.ns; ++i) a.src[i] = x + plan_.sends[std::size_t(i)].offset;
        // the priority as a launch attribute: a CUDA graph recorded from this stream keeps it
        // per node (BatchGraph instantiates with cudaGraphInstantiateFlagUseNodePriority)
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributePriority;
        attr[0].val.priority = priority_;
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(blocks_);
        cfg.blockDim = dim3(256);
        cfg.stream = comm_stream_;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        HEPTANE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, peer_exchange_kernel<VT>, a));
        HEPTANE_CUDA_CHECK(cudaEventRecord(done_, comm_stream_));
    }
    void finish() override
    {
        // the boundary rows wait for the halo; whatever comes next may overwrite x only after
        // it has been pushed (in a CUDA graph the join is an edge)
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0));
    }
    VT* halo() noexcept override { return halo_.data(); }
    HaloModel model() const noexcept override { return HaloModel::peer; }
    bool graph_safe() const noexcept override { return true; }

private:
    HaloPlan plan_;
    std::shared_ptr<const Communicator> comm_;
    std::shared_ptr<const Executor> exec_;
    cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
    cudaEvent_t ready_ = nullptr, done_ = nullptr;
    int priority_ = 0;
    std::unique_ptr<Mailbox> box_;
    ExchangeArgs<VT> args_{};
    unsigned blocks_ = 1;
    Array<VT> halo_;
};

/// Whether this process loads its CUDA modules eagerly. With lazy loading (the default since
/// CUDA 12.2) the first launch of a kernel can wait for the kernels already running on the
/// device; a peer kernel spinning on a partner that is itself stuck in such a load never
/// ends (the CUDA programming guide's lazy-loading hazard for kernels that wait on each
/// other).
bool eager_module_loading()
{
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
        cudaGetLastError();
        const char* e = std::getenv("CUDA_MODULE_LOADING");
        return e && std::string(e) == "EAGER";
    }
    CUmoduleLoadingMode mode = CU_MODULE_LAZY_LOADING;
    if (reinterpret_cast<CUresult (*)(CUmoduleLoadingMode*)>(fn)(&mode) != CUDA_SUCCESS)
        return false;
    return mode == CU_MODULE_EAGER_LOADING;
}

}  // namespace

bool peer_capable(const Executor& exec, const Communicator& comm)
{
    int ok = exec.is_cuda() && comm.size() > 1 && comm.node_size() == comm.size() &&
             comm.size() <= CudaExecutor::device_count() && comm.size() <= max_ranks &&
             eager_module_loading();
    // every pair of devices must reach each other (every rank takes part in the gather)
    const int dev = ok ? static_cast<const CudaExecutor&>(exec).device() : -1;
    std::vector<int> devs(static_cast<std::size_t>(comm.size()));
    MPI_Allgather(&dev, 1, MPI_INT, devs.data(), 1, MPI_INT, comm.comm());
    for (int d : devs) {
        if (!ok || d == dev) continue;
        int can = 0;
        cudaDeviceCanAccessPeer(&can, dev, d);
        ok = ok && can && d >= 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm.comm());
    return ok != 0;
}

std::unique_ptr<Reducer> make_peer_reducer(std::shared_ptr<const Communicator> comm,
                                           std::shared_ptr<const Executor> exec)
{
    HEPTANE_ENSURE(peer_capable(*exec, *comm), NotSupported,
                   "peer reduction: needs one GPU per rank, all ranks on one node, peer access "
                   "between every pair and eager module loading (CUDA_MODULE_LOADING=EAGER); "
                   "use nccl or mpi");
    return std::make_unique<PeerReducer>(std::move(comm), std::move(exec));
}

template <class VT>
std::unique_ptr<HaloExchange<VT>> make_peer_halo(const HaloPlan& plan,
                                                 std::shared_ptr<const Communicator> comm,
                                                 std::shared_ptr<const Executor> exec)
{
    HEPTANE_ENSURE(peer_capable(*exec, *comm), NotSupported,
                   "halo model 'peer': needs one GPU per rank, all ranks on one node, peer access "
                   "between every pair and eager module loading (CUDA_MODULE_LOADING=EAGER); "
                   "use nccl or pinned-async");
    return std::make_unique<PeerHalo<VT>>(plan, std::move(comm), std::move(exec));
}

template std::unique_ptr<HaloExchange<double>> make_peer_halo<double>(
    const HaloPlan&, std::shared_ptr<const Communicator>, std::shared_ptr<const Executor>);
template std::unique_ptr<HaloExchange<float>> make_peer_halo<float>(
    const HaloPlan&, std::shared_ptr<const Communicator>, std::shared_ptr<const Executor>);

}  // namespace heptane::dist
