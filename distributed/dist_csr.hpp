// A general sparse operator whose rows are split over MPI ranks as PETSc's MPIAIJ splits them
// (docs/design.md §4): for a matrix that is no hepta grid's (or whose numbering over the ranks
// is not one), where DistributedBdia does not apply. Each rank holds
//
//     diag   its diagonal block, local columns                      CSR
//     off    its couplings to other ranks' rows, columns compressed  CSR over the halo
//            to the halo (the global columns it reads, ascending)
//
// and computes y = alpha (diag x + off x_halo) + beta y with the halo's messages in flight
// (MPI_Isend/Irecv of exactly the rows each neighbour reads, column_plan.hpp) while the
// diagonal block's product runs. An Operator<VT> on local vectors: the solvers do not change;
// reducer() makes their dot products global.
//
// On a GPU executor diag and off live on the device and the halo goes through the host: the
// rows the neighbours read packed on the device (one gather), down, MPI_Isend/Irecv, the
// received halo up; the diagonal block's product runs on the device while the messages are in
// flight, the off part's after them (ranks that share a GPU work too).
//
//     OwnedSplitRows s = split_coo_rows(a, r0, r1);      // or PETSc's two blocks as SplitRows
//     DistributedCsr<double, double> op(comm, s.view(), cpu_executor());   // collective
//     solver.set_operator(op);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/operator.hpp"
#include "distributed/coarse_space.hpp"  // SplitRows
#include "distributed/column_plan.hpp"
#include "distributed/communicator.hpp"
#include "distributed/reducers.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"

namespace heptane::dist {

/// SplitRows that own their arrays (off's columns global).
struct OwnedSplitRows {
    std::vector<index_t> dp{0}, dc, op{0}, oc;
    std::vector<double> dv, ov;
    SplitRows view() const;
};

/// Rows [r0, r1) of a whole host matrix (any order, duplicates summed) split as MPIAIJ
/// splits them: the diagonal block (columns in [r0, r1), numbered from r0) and the rest
/// (global columns); each row's columns ascending.
OwnedSplitRows split_coo_rows(const Coo<double>& a, index_t r0, index_t r1);

/// MT: matrix values, VT: vectors (double/double, float/float, float/double).
template <class MT, class VT>
class DistributedCsr final : public Operator<VT> {
public:
    /// rows: this rank's rows (off's column j is off_cols[j], or global when off_cols is
    /// null), copied (rounded to MT) to exec. Collective; throws InputError on every rank alike
    /// for a diagonal-block column outside the rank's rows or an off column outside the matrix
    /// or inside the rank's own rows.
    DistributedCsr(std::shared_ptr<const Communicator> comm, const SplitRows& rows,
                   std::shared_ptr<const Executor> exec);
    ~DistributedCsr() override;

    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    using Operator<VT>::apply;
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override;
    /// NotSupported (the distributed Aᵀx is not there yet).
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override;
    std::string describe() const override;
    const Reducer* reducer() const override { return reducer_.get(); }

    /// New values on the same pattern (rows and, per part, as many entries in the same
    /// order: a Newton step); InputError when the counts differ. Not collective.
    void update_values(const SplitRows& rows);

    const RowPartition& partition() const noexcept { return part_; }
    /// Global columns this rank reads from other ranks.
    index_t halo_size() const noexcept { return index_t(halo_.size()); }
    /// On several ranks "host" (MPI_Isend/Irecv of host vectors) or, on GPUs, "staged" (packed
    /// on the device, through host memory); "none" on one.
    std::string exchange_name() const
    {
        return comm_->size() == 1 ? "none" : exec_->is_cpu() ? "host" : "staged";
    }
    std::string reduction_name() const { return reducer_ ? "mpi" : "none"; }

private:
    std::shared_ptr<const Communicator> comm_;
    std::shared_ptr<const Executor> exec_;
    RowPartition part_;
    index_t n_ = 0;
    Csr<MT> diag_, off_;
    std::vector<long long> halo_;
    ColumnPlan plan_;
    std::unique_ptr<Reducer> reducer_;
    mutable std::vector<VT> hx_, sbuf_;
    mutable std::vector<MPI_Request> req_;
    // GPU: the rows the neighbours read (plan_'s send_rows in order) and the packed values and
    // the halo on the device
    Array<index_t> send_rows_dev_;
    mutable Array<VT> sbuf_dev_, hx_dev_;

    void apply_staged(VT alpha, const VT* x, VT beta, VT* y) const;
};

extern template class DistributedCsr<double, double>;
extern template class DistributedCsr<float, float>;
extern template class DistributedCsr<float, double>;

}  // namespace heptane::dist
