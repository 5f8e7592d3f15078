#include "distributed/communicator.hpp"

#include <cstdlib>
#include <sstream>

#include "core/error.hpp"
#include "core/executor.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#ifdef HEPTANE_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace heptane::dist {

Communicator::Communicator(MPI_Comm comm)
{
    // Kernels that wait on other GPUs (peer halo and reduction, NCCL) need every kernel
    // loaded up front: with lazy loading a first launch may wait for a kernel that waits
    // for another rank (distributed/peer.hpp). Takes effect when CUDA is not yet
    // initialised in this process; a value the user set is kept.
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    // NCCL's buffers between the ranks' GPUs through cudaIpc rather than its cuMem (VMM)
    // allocations: on the 2 x H200 machine (2026-11-29, NCCL 2.28.3) a 10.6 M-row solve whose
    // x is gathered with NCCL at every product ran 67 ms an iteration through the cuMem path
    // against 2.6 ms with NCCL_CUMEM_ENABLE=0. Read when NCCL makes its communicator; a value the
    // user set is kept (heptane uses no NCCL feature that needs cuMem, e.g. NVLink multicast).
    setenv("NCCL_CUMEM_ENABLE", "0", 0);
    int init = 0;
    MPI_Initialized(&init);
    HEPTANE_ENSURE(init, InputError, "heptane::dist::Communicator: MPI is not initialised");
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank_);
    MPI_Comm_size(node, &node_size_);
    MPI_Comm_free(&node);
}

Communicator::~Communicator()
{
#ifdef HEPTANE_HAVE_NCCL
    if (nccl_) ncclCommDestroy(static_cast<ncclComm_t>(nccl_));
#endif
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int Communicator::local_device() const noexcept
{
    const int n = CudaExecutor::device_count();
    return n > 0 ? node_rank_ % n : -1;
}

bool Communicator::cuda_aware() noexcept
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
}

void* Communicator::nccl(int device) const
{
#ifdef HEPTANE_HAVE_NCCL
    if (nccl_) {
        HEPTANE_ENSURE(
            device == nccl_device_, InputError,
            "NCCL communicator already made on device " << nccl_device_ << ", not " << device);
        return nccl_;
    }
    ncclUniqueId id;
    if (rank_ == 0) {
        const ncclResult_t r = ncclGetUniqueId(&id);
        HEPTANE_ENSURE(r == ncclSuccess, DeviceError,
                       "ncclGetUniqueId failed: " << ncclGetErrorString(r));
    }
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm_);
    cudaSetDevice(device);
    ncclComm_t c = nullptr;
    const ncclResult_t r = ncclCommInitRank(&c, size_, id, rank_);
    HEPTANE_ENSURE(r == ncclSuccess, DeviceError,
                   "ncclCommInitRank failed on rank " << rank_ << ": " << ncclGetErrorString(r));
    nccl_ = c;
    nccl_device_ = device;
    return nccl_;
#else
    (void)device;
    HEPTANE_THROW(NotSupported, "this build of heptane has no NCCL");
#endif
}

bool built_with_nccl() noexcept
{
#ifdef HEPTANE_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

std::string RowPartition::describe() const
{
    std::ostringstream o;
    for (int p = 0; p < size(); ++p)
        o << (p ? " " : "") << p << ":[" << begin(p) << "," << end(p) << ")";
    return o.str();
}

RowPartition partition_planes(index_t planes, index_t plane_rows, int parts)
{
    HEPTANE_ENSURE(parts >= 1, InputError, "partition: " << parts << " parts");
    HEPTANE_ENSURE(planes >= parts, InputError,
                   "partition: " << planes << " z-planes cannot be split over " << parts
                                 << " ranks (each rank needs at least one whole plane)");
    RowPartition p;
    p.starts.resize(std::size_t(parts) + 1, 0);
    const index_t base = planes / parts, extra = planes % parts;
    for (int k = 0; k < parts; ++k)
        p.starts[k + 1] = p.starts[k] + (base + (k < extra ? 1 : 0)) * plane_rows;
    return p;
}

RowPartition partition_rows(index_t rows, index_t block, int parts)
{
    HEPTANE_ENSURE(block >= 1 && rows % block == 0, InputError,
                   "partition: block " << block << " does not divide " << rows << " rows");
    HEPTANE_ENSURE(parts >= 1 && rows / block >= parts, InputError,
                   "partition: " << rows / block << " blocks of " << block << " row"
                                 << (block > 1 ? "s" : "") << " cannot be split over " << parts
                                 << " ranks (each rank needs at least one block): run on at most "
                                 << rows / block << " ranks");
    return partition_planes(rows / block, block, parts);
}

RowPartition partition_from_local(const Communicator& comm, index_t local_rows)
{
    HEPTANE_ENSURE(local_rows >= 0, InputError, "partition: negative local size " << local_rows);
    std::vector<index_t> counts(std::size_t(comm.size()));
    static_assert(sizeof(index_t) == sizeof(int), "index_t is MPI_INT");
    MPI_Allgather(&local_rows, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.comm());
    RowPartition p;
    p.starts.assign(std::size_t(comm.size()) + 1, 0);
    for (int k = 0; k < comm.size(); ++k) p.starts[k + 1] = p.starts[k] + counts[k];
    return p;
}

}  // namespace heptane::dist
