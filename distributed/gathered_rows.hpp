// Operators for a matrix whose rows are split over MPI ranks where each rank's rows are an
// Operator of their own over every column -- e.g. an out-of-core operator over the rank's
// chunks of a chunk file (formats/outofcore), each rank streaming its own rows.
//
// GatheredRowsOperator (square; BiCGStab, CG, GMRES):
//     x_local (this rank's rows of x)  --gathered-->  x whole on every rank
//     y_local = alpha * A_rows x + beta * y_local     the rank's own operator
// RowBlockOperator (rectangular; LSQR, MLEM): x whole on every rank, y split, A^T u summed.
//
// The exchange (GatherModel):
//   host  device -> host, MPI_Allgatherv / MPI_Allreduce, host -> device (page-locked): the
//         host waits for it at every product
//   nccl  ncclBroadcast per rank in a group (the gather) or ncclAllReduce (the sum), device to
//         device (NVLink within a node), on the executor's stream: the host never waits (a GPU
//         of its own per rank; a build with NCCL)
// so a product moves one vector's bytes per rank besides what the rank's operator moves
// itself (for a streamed matrix the chunk bytes, far more). reducer() sums the solvers' dot
// products over the ranks. For a hepta grid in memory, DistributedBdia (a halo, not the whole
// vector) is the operator to use.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "distributed/communicator.hpp"
#include "distributed/reducers.hpp"

namespace heptane::dist {

enum class GatherModel { automatic, host, nccl };
/// "auto", "host", "nccl". InputError naming the choices.
GatherModel parse_gather_model(const std::string& name);
const char* to_string(GatherModel m) noexcept;
/// auto: nccl when the build has NCCL, the executor is a GPU and every rank of every node has
/// a GPU of its own (NCCL refuses two ranks on one device), else host. Collective (the ranks
/// agree). host on the CPU.
GatherModel resolve_gather_model(GatherModel m, const Executor& exec, const Communicator& comm);

/// What the two row-split operators below share: the communicator, the partition, this rank's
/// operator, the reducer, the exchange model (resolved collectively; its NCCL communicator)
/// and the host buffer of the host exchange (page-locked on GPUs). Construction checks the
/// shapes (`square`: rows over every column of a square matrix) and is collective.
template <class VT>
class RankRowsOperator : public Operator<VT> {
public:
    ~RankRowsOperator() override;
    RankRowsOperator(const RankRowsOperator&) = delete;
    RankRowsOperator& operator=(const RankRowsOperator&) = delete;

    std::shared_ptr<const Executor> executor() const override { return rows_->executor(); }
    const Reducer* reducer() const override { return reducer_.get(); }
    /// With the host exchange every product waits for the host; with nccl as the rank's
    /// operator is.
    bool host_paced() const override { return model_ == GatherModel::host || rows_->host_paced(); }
    /// The exchange in use (auto resolved).
    GatherModel exchange_model() const noexcept { return model_; }

    using Operator<VT>::apply;

protected:
    /// `reduce`: the reducer's model; none: as the exchange (device to device, auto, with
    /// nccl; mpi with host).
    RankRowsOperator(std::shared_ptr<const Communicator> comm, RowPartition part,
                     std::shared_ptr<const Operator<VT>> rows, GatherModel model,
                     std::optional<ReduceModel> reduce, bool square, std::size_t host_values,
                     const char* who);
    /// "rows 0..4096 of 8192 on rank 0 of 2"
    std::string where() const;

    std::shared_ptr<const Communicator> comm_;
    RowPartition part_;
    std::shared_ptr<const Operator<VT>> rows_;
    std::unique_ptr<Reducer> reducer_;
    GatherModel model_ = GatherModel::host;
    void* nccl_ = nullptr;  ///< ncclComm_t of the nccl model
    VT* host_ = nullptr;    ///< host_values values: page-locked on GPUs, else host_storage_'s
    bool page_locked_ = false;
    std::vector<VT> host_storage_;
};

template <class VT>
class GatheredRowsOperator final : public RankRowsOperator<VT> {
public:
    /// `rows`: this rank's rows [part.begin(rank), part.end(rank)) of the part.global_rows()
    /// square matrix, every column, on its executor. Every rank calls this together. Throws
    /// DimensionMismatch when `rows` does not have the partition's shape, NotSupported for
    /// GatherModel::nccl without NCCL or on the CPU.
    GatheredRowsOperator(std::shared_ptr<const Communicator> comm, RowPartition part,
                         std::shared_ptr<const Operator<VT>> rows,
                         ReduceModel reduce = ReduceModel::mpi,
                         GatherModel gather = GatherModel::automatic);

    index_t rows() const override { return this->rows_->rows(); }
    index_t cols() const override { return this->rows_->rows(); }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override;
    /// NotSupported (the gathered A^T x is not there).
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override;
    std::string describe() const override;

    using Operator<VT>::apply;

private:
    std::vector<int> counts_, displs_;
    mutable Array<VT> whole_;  ///< x whole on the executor
};

/// This rank's rows [part.begin(rank), part.end(rank)) of an m x n operator (m =
/// part.global_rows()), the column vectors (length n) the same on every rank -- LSQR and MLEM
/// with each rank streaming its own rows of a chunk file:
///   A x    this rank's rows of y, no exchange
///   A^T u  the sum over the ranks of A_p^T u_p, on every rank (host: device -> host,
///          MPI_Allreduce, host -> device, page-locked; nccl: ncclAllReduce in place on the
///          executor's stream)
/// reducer() sums the dot products of row vectors (length rows(), split as y is) over the
/// ranks; those of column vectors are the same on every rank and need none. Not for the
/// square Krylov solvers, whose x is split as y is (GatheredRowsOperator is theirs).
template <class VT>
class RowBlockOperator final : public RankRowsOperator<VT> {
public:
    /// Every rank calls this together. DimensionMismatch when `rows` does not have the
    /// partition's rows; NotSupported for GatherModel::nccl without NCCL or on the CPU.
    RowBlockOperator(std::shared_ptr<const Communicator> comm, RowPartition part,
                     std::shared_ptr<const Operator<VT>> rows,
                     GatherModel exchange = GatherModel::automatic);

    index_t rows() const override { return this->rows_->rows(); }
    index_t cols() const override { return this->rows_->cols(); }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override;
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override;
    std::string describe() const override;

    using Operator<VT>::apply;
};

}  // namespace heptane::dist
