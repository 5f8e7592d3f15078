#include "distributed/gathered_rows.hpp"

#include <mpi.h>

#include <type_traits>

#include "core/error.hpp"

namespace heptane::dist {

template <class VT>
GatheredRowsOperator<VT>::GatheredRowsOperator(std::shared_ptr<const Communicator> comm,
                                               RowPartition part,
                                               std::shared_ptr<const Operator<VT>> rows,
                                               ReduceModel reduce)
    : comm_(std::move(comm)), part_(std::move(part)), rows_(std::move(rows))
{
    HEPTANE_ENSURE(rows_ != nullptr, InputError, "GatheredRowsOperator: no operator");
    HEPTANE_ENSURE(part_.size() == comm_->size(), DimensionMismatch,
                   "GatheredRowsOperator: a partition into " << part_.size() << " parts for "
                                                             << comm_->size() << " ranks");
    const int r = comm_->rank();
    n_ = part_.rows(r);
    HEPTANE_ENSURE(rows_->rows() == n_ && rows_->cols() == part_.global_rows(), DimensionMismatch,
                   "GatheredRowsOperator: rank " << r << " holds a " << rows_->rows() << " x "
                                                 << rows_->cols() << " operator; its rows are "
                                                 << n_ << " of " << part_.global_rows()
                                                 << " columns");
    for (int p = 0; p < part_.size(); ++p) {
        counts_.push_back(int(part_.rows(p)));
        displs_.push_back(int(part_.begin(p)));
    }
    whole_host_.resize(std::size_t(part_.global_rows()));
    whole_ = Array<VT>(rows_->executor(), std::size_t(part_.global_rows()));
    reducer_ = make_reducer(reduce, comm_, rows_->executor());
}

template <class VT>
void GatheredRowsOperator<VT>::apply(VT alpha, const VT* x, VT beta, VT* y) const
{
    const Executor& exec = *rows_->executor();
    const Executor& host = *cpu_executor();
    const MPI_Datatype type = std::is_same_v<VT, double> ? MPI_DOUBLE : MPI_FLOAT;
    VT* w = whole_host_.data();
    copy_bytes(exec, x, host, w + part_.begin(comm_->rank()), std::size_t(n_) * sizeof(VT));
    const int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, w, counts_.data(),
                                  displs_.data(), type, comm_->comm());
    HEPTANE_ENSURE(rc == MPI_SUCCESS, DeviceError,
                   "MPI_Allgatherv of " << part_.global_rows() << " values failed");
    copy_bytes(host, w, exec, whole_.data(), whole_host_.size() * sizeof(VT));
    rows_->apply(alpha, whole_.data(), beta, y);
}

template <class VT>
void GatheredRowsOperator<VT>::apply_transpose(VT, const VT*, VT, VT*) const
{
    HEPTANE_THROW(NotSupported, "GatheredRowsOperator: A^T x over the ranks is not there");
}

template <class VT>
std::string GatheredRowsOperator<VT>::describe() const
{
    return rows_->describe() + "; rows " + std::to_string(part_.begin(comm_->rank())) + ".." +
           std::to_string(part_.end(comm_->rank())) + " of " + std::to_string(part_.global_rows()) +
           " on rank " + std::to_string(comm_->rank()) + " of " + std::to_string(comm_->size()) +
           " (x gathered through host memory at every product)";
}

template class GatheredRowsOperator<double>;
template class GatheredRowsOperator<float>;

}  // namespace heptane::dist
