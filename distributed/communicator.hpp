// The processes of a distributed solve (docs/design.md §4): one MPI rank per GPU, ranks of one
// node bound to its GPUs by node-local rank, and the contiguous row ranges they own.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::dist {

/// A duplicate of an MPI communicator (heptane's messages never mix with the caller's), with
/// the node-local rank for binding ranks to GPUs. MPI must be initialised by the caller.
/// Construction sets CUDA_MODULE_LOADING=EAGER in the environment unless it is set (the
/// device-direct models need eager loading, see distributed/peer.hpp): make the
/// Communicator before the first CUDA call of the process, or set it yourself. It also sets
/// NCCL_CUMEM_ENABLE=0 unless set (NCCL's buffers through cudaIpc: its cuMem path was 26x
/// slower on the 2 x H200 machine, docs/benchmarks.md).
class Communicator {
public:
    explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD);
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    MPI_Comm comm() const noexcept { return comm_; }
    int rank() const noexcept { return rank_; }
    int size() const noexcept { return size_; }
    /// Rank among the processes of this node, and how many there are.
    int node_rank() const noexcept { return node_rank_; }
    int node_size() const noexcept { return node_size_; }
    /// The GPU of this rank: node_rank mod (visible devices); -1 without a device.
    int local_device() const noexcept;
    /// Whether the MPI library says it accepts device pointers (Open MPI's
    /// MPIX_Query_cuda_support); false when it cannot tell.
    static bool cuda_aware() noexcept;

    /// NCCL communicator over the same ranks on `device` (created on first use; all ranks
    /// must call it together). Opaque ncclComm_t. Throws NotSupported without NCCL.
    void* nccl(int device) const;

private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1, node_rank_ = 0, node_size_ = 1;
    mutable void* nccl_ = nullptr;
    mutable int nccl_device_ = -1;
};

/// Whether this build has NCCL.
bool built_with_nccl() noexcept;

/// Contiguous row ranges: process p owns rows [starts[p], starts[p+1]).
struct RowPartition {
    std::vector<index_t> starts;  ///< size() + 1 entries, starts[0] = 0, ascending

    int size() const noexcept { return int(starts.size()) - 1; }
    index_t global_rows() const noexcept { return starts.back(); }
    index_t begin(int p) const { return starts.at(std::size_t(p)); }
    index_t end(int p) const { return starts.at(std::size_t(p) + 1); }
    index_t rows(int p) const { return end(p) - begin(p); }
    /// "0:[0,4096) 1:[4096,8192)"
    std::string describe() const;
};

/// `planes` planes of `plane_rows` rows each (a GH grid: I planes of J*H*Nc rows), split
/// into `parts` ranges of whole planes, as even as possible (the first planes % parts ranges
/// get one more). InputError when there are fewer planes than parts.
RowPartition partition_planes(index_t planes, index_t plane_rows, int parts);
/// `rows` split into `parts` ranges of whole blocks of `block` rows, as even as possible.
RowPartition partition_rows(index_t rows, index_t block, int parts);
/// Every rank gives its local row count (e.g. PETSc's ownership range); collective.
RowPartition partition_from_local(const Communicator& comm, index_t local_rows);

}  // namespace heptane::dist
