// Halo exchange of a row-split BDIA-GH operator (docs/design.md §4). Rows are split in contiguous
// ranges, so what a process needs from the others is x on the rows within reach of its
// block offsets: w_lo = max(0, -d_min)*Nc rows below its range and w_hi = max(0, d_max)*Nc
// above (one z-plane of J*H*Nc for a GH grid), and what it sends are contiguous pieces of
// its own x: nothing is packed. A range smaller than the reach takes pieces from several
// ranks; the plan handles any contiguous ranges.
//
// Models (run-time choice, `--halo`):
//   host            CPU vectors: MPI_Isend/Irecv straight from and into host memory.
//   pinned-async    GPU (default where no device-direct path applies): x pieces copied to
//                   page-locked buffers on a communication stream while the local product
//                   runs, MPI_Isend/Irecv, copied back; the boundary rows wait only for that.
//   pinned-sync     the same without overlap: the exchange finishes before the local product.
//   pageable-async  as pinned-async through ordinary (pageable) host buffers.
//   pageable-sync   as pinned-sync through pageable buffers.
//   nccl            device to device, ncclSend/ncclRecv on the communication stream, no host
//                   involvement (over NVLink inside a node, the network across nodes).
//   cuda-aware      MPI_Isend/Irecv on device pointers (an MPI built with CUDA support).
//   peer            device to device inside a node through CUDA IPC: a kernel writes the rows
//                   straight into the neighbour's halo buffer over NVLink and raises a flag
//                   there (distributed/peer.hpp); no host on the path.
// The first four are the thesis's four; "auto" picks host on the CPU; on GPUs peer when every
// rank has its own GPU of one node, with peer access between every pair and eager module
// loading (peer.hpp), else nccl when the build has NCCL and every rank has its own GPU, else
// pinned-async.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "distributed/communicator.hpp"

namespace heptane::dist {

/// The fastest way between the ranks' vectors that is available, behind the "auto" halo and
/// reduction models: host (CPU vectors), peer (two GPUs of one node with peer access: CUDA
/// IPC), nccl (every rank its own GPU, a build with NCCL), staged (through host memory, e.g.
/// ranks sharing a GPU). Collective on GPUs.
enum class DirectPath { host, peer, nccl, staged };
DirectPath best_path(const Executor& exec, const Communicator& comm);

enum class HaloModel {
    automatic,
    host,
    pinned_async,
    pinned_sync,
    pageable_async,
    pageable_sync,
    nccl,
    cuda_aware,
    peer
};
/// "auto", "host", "pinned-async", "pinned-sync", "pageable-async", "pageable-sync", "nccl",
/// "cuda-aware", "peer" (underscores also accepted). InputError naming the choices.
HaloModel parse_halo_model(const std::string& name);
const char* to_string(HaloModel m) noexcept;
/// The model "auto" means for `exec` on `comm` (collective on GPUs: it asks every rank).
HaloModel resolve_halo_model(HaloModel m, const Executor& exec, const Communicator& comm);

/// Who sends what to whom. Local rows are [0, n); the halo buffer holds the L rows below
/// the range ([begin - L, begin) globally) then the U rows above ([end, end + U)).
struct HaloPlan {
    struct Piece {
        int peer = 0;        ///< the other rank
        index_t offset = 0;  ///< send: first local row; recv: position in the halo buffer
        index_t count = 0;   ///< rows
        int tag = 0;         ///< 1: fills the receiver's lower halo, 2: its upper halo
    };
    index_t lower = 0;  ///< L
    index_t upper = 0;  ///< U
    std::vector<Piece> sends, recvs;
    index_t halo_rows() const noexcept { return lower + upper; }
    index_t send_rows() const noexcept;
};
/// The plan of rank `rank` for reach w_lo below and w_hi above each range.
HaloPlan make_halo_plan(const RowPartition& part, int rank, index_t w_lo, index_t w_hi);

/// One exchange at a time: start(x) queues or posts it, finish() returns when the halo
/// buffer holds x's halo (for a GPU: in the order of the executor's stream).
template <class VT>
class HaloExchange {
public:
    virtual ~HaloExchange() = default;
    virtual void start(const VT* x) = 0;
    virtual void finish() = 0;
    /// The halo buffer (executor memory): L lower rows then U upper rows.
    virtual VT* halo() noexcept = 0;
    virtual HaloModel model() const noexcept = 0;
    /// Whether start() + finish() may be recorded into a CUDA graph (Operator::graph_safe):
    /// the device-direct models (nccl, peer) are; the host-staged ones wait on the host.
    virtual bool graph_safe() const noexcept { return false; }
};

template <class VT>
std::unique_ptr<HaloExchange<VT>> make_halo_exchange(HaloModel model, const HaloPlan& plan,
                                                     std::shared_ptr<const Communicator> comm,
                                                     std::shared_ptr<const Executor> exec);

}  // namespace heptane::dist
