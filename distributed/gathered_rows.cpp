#include "distributed/gathered_rows.hpp"

#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "core/error.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif
#ifdef HEPTANE_HAVE_NCCL
#include <nccl.h>
#endif

namespace heptane::dist {

GatherModel parse_gather_model(const std::string& name)
{
    std::string n = name;
    for (auto& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (n == "auto") return GatherModel::automatic;
    if (n == "host") return GatherModel::host;
    if (n == "nccl") return GatherModel::nccl;
    HEPTANE_THROW(InputError, "unknown gather model '" << name << "' (choices: auto, host, nccl)");
}

const char* to_string(GatherModel m) noexcept
{
    switch (m) {
        case GatherModel::automatic:
            return "auto";
        case GatherModel::host:
            return "host";
        case GatherModel::nccl:
            return "nccl";
    }
    return "?";
}

GatherModel resolve_gather_model(GatherModel m, const Executor& exec, const Communicator& comm)
{
    if (m != GatherModel::automatic) return m;
    // NCCL refuses two ranks on one device: every rank of every node needs a GPU of its own
    int ok = exec.is_cuda() && built_with_nccl() && comm.node_size() <= CudaExecutor::device_count()
                 ? 1
                 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm.comm());
    return ok ? GatherModel::nccl : GatherModel::host;
}

namespace detail {

template <class VT>
MPI_Datatype mpi_type()
{
    return std::is_same_v<VT, double> ? MPI_DOUBLE : MPI_FLOAT;
}

#ifdef HEPTANE_HAVE_NCCL
template <class VT>
ncclDataType_t nccl_type()
{
    return std::is_same_v<VT, double> ? ncclDouble : ncclFloat;
}
void nccl_check(ncclResult_t r, const char* what)
{
    HEPTANE_ENSURE(r == ncclSuccess, DeviceError, what << ": " << ncclGetErrorString(r));
}
#endif

}  // namespace detail

// ---- RankRowsOperator ---------------------------------------------------------------------

template <class VT>
RankRowsOperator<VT>::RankRowsOperator(std::shared_ptr<const Communicator> c, RowPartition p,
                                       std::shared_ptr<const Operator<VT>> r, GatherModel m,
                                       std::optional<ReduceModel> reduce, bool square,
                                       std::size_t host_values, const char* who)
    : comm_(std::move(c)), part_(std::move(p)), rows_(std::move(r))
{
    HEPTANE_ENSURE(rows_ != nullptr, InputError, who << ": no operator");
    HEPTANE_ENSURE(
        part_.size() == comm_->size(), DimensionMismatch,
        who << ": a partition into " << part_.size() << " parts for " << comm_->size() << " ranks");
    const int k = comm_->rank();
    HEPTANE_ENSURE(
        rows_->rows() == part_.rows(k) && (!square || rows_->cols() == part_.global_rows()),
        DimensionMismatch,
        who << ": rank " << k << " holds a " << rows_->rows() << " x " << rows_->cols()
            << " operator; its rows are " << part_.rows(k) << " of " << part_.global_rows()
            << (square ? ", over every column" : ""));
    const Executor& exec = *rows_->executor();
    model_ = resolve_gather_model(m, exec, *comm_);
    if (model_ == GatherModel::nccl) {
        HEPTANE_ENSURE(exec.is_cuda(), NotSupported,
                       who << ": the nccl model is for GPU vectors; on the CPU use host");
#ifdef HEPTANE_HAVE_NCCL
        nccl_ = comm_->nccl(static_cast<const CudaExecutor&>(exec).device());
#else
        HEPTANE_THROW(NotSupported, who << ": model 'nccl': this build has no NCCL");
#endif
    } else if (exec.is_cuda() && host_values > 0) {
#ifdef HEPTANE_HAVE_CUDA
        HEPTANE_CUDA_CHECK(cudaSetDevice(static_cast<const CudaExecutor&>(exec).device()));
        HEPTANE_CUDA_CHECK(cudaMallocHost(&host_, sizeof(VT) * host_values));
        page_locked_ = true;
#endif
    } else {
        host_storage_.resize(host_values);
        host_ = host_storage_.data();
    }
    reducer_ = make_reducer(
        reduce ? *reduce
               : (model_ == GatherModel::nccl ? ReduceModel::automatic : ReduceModel::mpi),
        comm_, rows_->executor());
}

template <class VT>
RankRowsOperator<VT>::~RankRowsOperator()
{
#ifdef HEPTANE_HAVE_CUDA
    if (page_locked_) cudaFreeHost(host_);
#endif
}

template <class VT>
std::string RankRowsOperator<VT>::where() const
{
    const int k = comm_->rank();
    return "rows " + std::to_string(part_.begin(k)) + ".." + std::to_string(part_.end(k)) + " of " +
           std::to_string(part_.global_rows()) + " on rank " + std::to_string(k) + " of " +
           std::to_string(comm_->size());
}

// ---- GatheredRowsOperator -----------------------------------------------------------------

template <class VT>
GatheredRowsOperator<VT>::GatheredRowsOperator(std::shared_ptr<const Communicator> comm,
                                               RowPartition part,
                                               std::shared_ptr<const Operator<VT>> rows,
                                               ReduceModel reduce, GatherModel gather)
    : RankRowsOperator<VT>(std::move(comm), part, std::move(rows), gather, reduce, true,
                           std::size_t(part.global_rows()), "GatheredRowsOperator")
{
    for (int p = 0; p < this->part_.size(); ++p) {
        counts_.push_back(int(this->part_.rows(p)));
        displs_.push_back(int(this->part_.begin(p)));
    }
    whole_ = Array<VT>(this->rows_->executor(), std::size_t(this->part_.global_rows()));
}

template <class VT>
void GatheredRowsOperator<VT>::apply(VT alpha, const VT* x, VT beta, VT* y) const
{
    const Executor& exec = *this->rows_->executor();
    VT* w = whole_.data();
    if (this->model_ == GatherModel::nccl) {
#ifdef HEPTANE_HAVE_NCCL
        // an all-gather of unequal parts: each rank broadcasts its rows into every rank's x,
        // queued on the executor's stream behind the kernels that wrote x
        const cudaStream_t s = cuda::stream(static_cast<const CudaExecutor&>(exec));
        const auto nc = static_cast<ncclComm_t>(this->nccl_);
        detail::nccl_check(ncclGroupStart(), "NCCL gather of x");
        for (int p = 0; p < this->part_.size(); ++p) {
            VT* dst = w + displs_[std::size_t(p)];
            detail::nccl_check(ncclBroadcast(p == this->comm_->rank() ? x : dst, dst,
                                             std::size_t(counts_[std::size_t(p)]),
                                             detail::nccl_type<VT>(), p, nc, s),
                               "NCCL gather of x");
        }
        detail::nccl_check(ncclGroupEnd(), "NCCL gather of x");
        this->rows_->apply(alpha, w, beta, y);
        return;
#endif
    }
    const Executor& host = *cpu_executor();
    const std::size_t n = std::size_t(this->part_.global_rows());
    copy_bytes(exec, x, host, this->host_ + this->part_.begin(this->comm_->rank()),
               std::size_t(rows()) * sizeof(VT));
    const int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, this->host_, counts_.data(),
                                  displs_.data(), detail::mpi_type<VT>(), this->comm_->comm());
    HEPTANE_ENSURE(rc == MPI_SUCCESS, DeviceError, "MPI_Allgatherv of " << n << " values failed");
    copy_bytes(host, this->host_, exec, w, n * sizeof(VT));
    this->rows_->apply(alpha, w, beta, y);
}

template <class VT>
void GatheredRowsOperator<VT>::apply_transpose(VT, const VT*, VT, VT*) const
{
    HEPTANE_THROW(NotSupported, "GatheredRowsOperator: A^T x over the ranks is not there");
}

template <class VT>
std::string GatheredRowsOperator<VT>::describe() const
{
    return this->rows_->describe() + "; " + this->where() +
           (this->model_ == GatherModel::nccl
                ? " (x gathered device to device with NCCL at every product)"
                : " (x gathered through host memory at every product)");
}

// ---- RowBlockOperator ---------------------------------------------------------------------

template <class VT>
RowBlockOperator<VT>::RowBlockOperator(std::shared_ptr<const Communicator> comm, RowPartition part,
                                       std::shared_ptr<const Operator<VT>> rows,
                                       GatherModel exchange)
    : RankRowsOperator<VT>(std::move(comm), std::move(part), rows, exchange, std::nullopt, false,
                           rows && rows->executor()->is_cuda() ? std::size_t(rows->cols()) : 0,
                           "RowBlockOperator")
{
}

template <class VT>
void RowBlockOperator<VT>::apply(VT alpha, const VT* x, VT beta, VT* y) const
{
    this->rows_->apply(alpha, x, beta, y);
}

template <class VT>
void RowBlockOperator<VT>::apply_transpose(VT alpha, const VT* u, VT beta, VT* y) const
{
    // y is the same on every rank: rank 0 keeps beta y, the others add only their A_p^T u_p
    this->rows_->apply_transpose(alpha, u, this->comm_->rank() == 0 ? beta : VT(0), y);
    const Executor& exec = *this->rows_->executor();
    const std::size_t n = std::size_t(cols());
    if (this->model_ == GatherModel::nccl) {
#ifdef HEPTANE_HAVE_NCCL
        detail::nccl_check(ncclAllReduce(y, y, n, detail::nccl_type<VT>(), ncclSum,
                                         static_cast<ncclComm_t>(this->nccl_),
                                         cuda::stream(static_cast<const CudaExecutor&>(exec))),
                           "NCCL sum of A^T u");
        return;
#endif
    }
    const Executor& host = *cpu_executor();
    VT* h = exec.is_cpu() ? y : this->host_;  // the CPU sums in place
    if (!exec.is_cpu()) copy_bytes(exec, y, host, h, n * sizeof(VT));
    const int rc = MPI_Allreduce(MPI_IN_PLACE, h, int(n), detail::mpi_type<VT>(), MPI_SUM,
                                 this->comm_->comm());
    HEPTANE_ENSURE(rc == MPI_SUCCESS, DeviceError,
                   "MPI_Allreduce of A^T u (" << n << " values) failed");
    if (!exec.is_cpu()) copy_bytes(host, h, exec, y, n * sizeof(VT));
}

template <class VT>
std::string RowBlockOperator<VT>::describe() const
{
    return this->rows_->describe() + "; " + this->where() +
           (this->model_ == GatherModel::nccl ? " (A^T u summed device to device with NCCL)"
                                              : " (A^T u summed through host memory)");
}

template class RankRowsOperator<double>;
template class RankRowsOperator<float>;
template class RowBlockOperator<double>;
template class RowBlockOperator<float>;
template class GatheredRowsOperator<double>;
template class GatheredRowsOperator<float>;

}  // namespace heptane::dist
