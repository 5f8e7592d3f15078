// A BDIA-GH operator whose rows are split over MPI ranks (docs/design.md §4). Each rank holds
// its rows as a local Bdia (columns relative to its first row; the couplings to other
// ranks' rows kept in the same data, outside the local columns) and computes
//
//     y = alpha * A_local x + beta * y          all local rows, the unchanged SpMV kernel
//                                               (slots whose column is not local read 0)
//     y[boundary rows] += alpha * A_coupling * halo      the rows within reach of the
//                                               neighbours, once the halo has arrived
//
// with the halo exchange started before the local product and finished after it, so the
// exchange overlaps the bulk of the work. It is an Operator<VT> on local vectors: the
// solvers do not change; reducer() makes their dot products global.
#pragma once

#include <memory>
#include <string>

#include "core/operator.hpp"
#include "distributed/communicator.hpp"
#include "distributed/halo.hpp"
#include "distributed/reducers.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bdia/bdia_kernels.hpp"

namespace heptane::dist {

struct DistOptions {
    HaloModel halo = HaloModel::automatic;
    ReduceModel reduce = ReduceModel::automatic;
    kernels::BdiaKernel kernel = kernels::BdiaKernel::automatic;
};

/// MT: matrix values, VT: vectors (double/double, float/float, float/double).
template <class MT, class VT>
class DistributedBdia final : public Operator<VT> {
public:
    /// `local`: this rank's rows [part.begin(rank), part.end(rank)) as generate_hepta_bdia_rows
    /// or bdia_rows give them (host or `exec` memory); every rank calls this together.
    /// Throws InputError when the local block does not match the partition or a range does
    /// not start on a block.
    DistributedBdia(std::shared_ptr<const Communicator> comm, RowPartition part, Bdia<MT> local,
                    std::shared_ptr<const Executor> exec, DistOptions opts = {});
    ~DistributedBdia() override;

    index_t rows() const override { return local_.rows; }
    index_t cols() const override { return local_.rows; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override;
    /// NotSupported (the distributed A^T x is not there yet).
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override;
    std::string describe() const override;
    const Reducer* reducer() const override { return reducer_.get(); }
    /// On a GPU with a device-direct halo (peer, nccl) and reduction (peer, nccl), or on
    /// one rank.
    bool graph_safe() const override;

    using Operator<VT>::apply;
    /// New values for the same structure (rows, block size, block offsets): values.data
    /// replaces the local block's data (copied to the executor; the pattern is kept). For a
    /// Newton loop that changes the values every step: no new halo buffers, no IPC, no
    /// communication. InputError when the structure differs.
    void update_values(const Bdia<MT>& values);
    /// The local block's values (local().data, in the executor's memory), writable: for a
    /// caller that puts new values for the same structure there itself, e.g. a scatter kernel
    /// queued on the executor's stream (the PETSc plugin's Newton step), instead of
    /// update_values' copy of a whole block. Work queued on that stream follows the products
    /// queued before it; the structure (block offsets, pattern) must stay as it is.
    MT* local_values() noexcept { return local_.data.data(); }
    /// y = A_local x only (no halo): for the time breakdown of `heptane bench scale`.
    void apply_local(const VT* x, VT* y) const;
    /// One halo exchange of x, nothing else: for the same breakdown.
    void exchange(const VT* x) const;

    const Bdia<MT>& local() const noexcept { return local_; }
    const RowPartition& partition() const noexcept { return part_; }
    const Communicator& communicator() const noexcept { return *comm_; }
    index_t row_begin() const { return part_.begin(comm_->rank()); }
    const HaloPlan& plan() const noexcept { return plan_; }
    /// "peer", "nccl", ... or "none" on one rank (no exchange, no reductions).
    std::string exchange_name() const;
    std::string reduction_name() const;

private:
    void apply_local_scaled(VT alpha, const VT* x, VT beta, VT* y) const;

    std::shared_ptr<const Communicator> comm_;
    RowPartition part_;
    std::shared_ptr<const Executor> exec_;
    DistOptions opts_;
    Bdia<MT> local_;
    HaloPlan plan_;
    std::unique_ptr<HaloExchange<VT>> halo_;
    std::unique_ptr<Reducer> reducer_;
    ReduceModel reduce_model_ = ReduceModel::mpi;
};

/// Rows [row_begin, row_end) of a whole (host) BDIA matrix as a local block for
/// DistributedBdia (what each rank does with a matrix it has read whole).
template <class T>
Bdia<T> bdia_rows(const Bdia<T>& a, index_t row_begin, index_t row_end);

}  // namespace heptane::dist
