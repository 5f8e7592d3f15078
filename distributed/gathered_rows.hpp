// An operator for a square matrix whose rows are split over MPI ranks where each rank's rows
// are an Operator of their own over every column -- e.g. an out-of-core operator over the
// rank's chunks of a chunk file (formats/outofcore), each rank streaming its own rows:
//
//     x_local (this rank's rows of x)  --device->host, MPI_Allgatherv, host->device-->  x whole
//     y_local = alpha * A_rows x + beta * y_local          the rank's own operator
//
// so a product moves one vector's bytes per rank besides what the rank's operator moves
// itself (for a streamed matrix the chunk bytes, far more). reducer() sums the solvers' dot
// products over the ranks. It is an Operator<VT> on local vectors: BiCGStab, CG and GMRES
// run on it unchanged. For a hepta grid in memory, DistributedBdia (a halo, not the whole
// vector) is the operator to use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "distributed/communicator.hpp"
#include "distributed/reducers.hpp"

namespace heptane::dist {

template <class VT>
class GatheredRowsOperator final : public Operator<VT> {
public:
    /// `rows`: this rank's rows [part.begin(rank), part.end(rank)) of the part.global_rows()
    /// square matrix, every column, on its executor. Every rank calls this together. Throws
    /// DimensionMismatch when `rows` does not have the partition's shape.
    GatheredRowsOperator(std::shared_ptr<const Communicator> comm, RowPartition part,
                         std::shared_ptr<const Operator<VT>> rows,
                         ReduceModel reduce = ReduceModel::mpi);

    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return rows_->executor(); }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override;
    /// NotSupported (the gathered A^T x is not there).
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override;
    std::string describe() const override;
    const Reducer* reducer() const override { return reducer_.get(); }
    /// True: every product waits for x on the host and exchanges it there.
    bool host_paced() const override { return true; }

    using Operator<VT>::apply;

private:
    std::shared_ptr<const Communicator> comm_;
    RowPartition part_;
    std::shared_ptr<const Operator<VT>> rows_;
    std::unique_ptr<Reducer> reducer_;
    index_t n_ = 0;
    std::vector<int> counts_, displs_;
    mutable std::vector<VT> whole_host_;  ///< x whole on the host
    mutable Array<VT> whole_;             ///< x whole on the executor
};

}  // namespace heptane::dist
