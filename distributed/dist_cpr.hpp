// CPR over the ranks: the two-stage preconditioner of cpr.hpp whose pressure stage is one AMG
// hierarchy over all ranks (dist::DistAmg) instead of an AMG of each rank's pressure block.
//
//   weights      quasi-IMPES per cell, w_I = D_I⁻ᵀ e_p (each rank its own cells: the diagonal
//                blocks are the rank's), as cpr_pressure_matrix makes them
//   pressure     A_p[I, J] = Σ_c w_I[c] A[(I, c), (J, p)] over whole rows: the rank's diagonal
//                block's part (cpr_pressure_matrix) and the couplings to other ranks' cells,
//                again a row-split matrix (one row per cell), solved by one V-cycle of the
//                AMG over the ranks (on the host)
//   second stage M₂ of the rank's diagonal block (block ILU(0) on the CPU, block Jacobi on a
//                GPU, or as CprOptions say), on the executor
//   z = E x_p + M₂ (r − A E x_p),  x_p = AMG(Wᵀ r)
// so the couplings between ranks are in the pressure stage (where the long-range ones are),
// and the second stage is block Jacobi over the ranks, as CPR per rank. One product with the
// distributed A per application; r goes to the host and E x_p back (the pressure stage).
//
//     DistCpr<double> m(comm, a_op, rows, row_begin, nc, cpr_options);   // collective
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "distributed/coarse_space.hpp"
#include "solver/precond/amg/amg_options.hpp"

namespace heptane::dist {

template <class VT>
class DistAmg;

template <class VT>
class DistCpr final : public Operator<VT> {
public:
    /// Collective. `a`: the distributed operator of these rows (vectors: this rank's rows on
    /// its executor); rows: this rank's rows as MPIAIJ splits them, a multiple of nc ≥ 2
    /// (row_begin too). Throws InputError (the same on every rank) for a pressure index ≥ nc
    /// and what the AMG over the ranks and M₂'s setup throw.
    DistCpr(MPI_Comm comm, std::shared_ptr<const Operator<VT>> a, const SplitRows& rows,
            index_t row_begin, index_t nc, const CprOptions& opts = {});
    ~DistCpr() override;

    /// New values, same sizes (collective): weights, A_p and M₂ again; A_p's AMG keeps its
    /// aggregates and P and redoes its numeric part (DistAmg::update_values) when A_p's
    /// pattern is the same. The last preconditioner stays whole when any of it throws.
    void update_values(const SplitRows& rows);

    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return a_->executor(); }
    using Operator<VT>::apply;
    void apply(VT alpha, const VT* r, VT beta, VT* z) const override;
    /// NotSupported (CPR is not symmetric).
    void apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const override;
    std::string describe() const override;

    const DistAmg<double>& pressure_amg() const noexcept { return *amg_; }

private:
    void setup(const SplitRows& rows);

    MPI_Comm comm_ = MPI_COMM_NULL;
    std::shared_ptr<const Operator<VT>> a_;
    index_t n_ = 0, nc_ = 2, p_ = 0, row_begin_ = 0;
    CprOptions opts_;
    std::vector<double> w_;  ///< nc weights per cell
    std::shared_ptr<DistAmg<double>> amg_;
    std::shared_ptr<const Operator<VT>> m2_;
    std::string second_;
    double setup_ms_ = 0;
    mutable std::vector<double> hr_, rp_, xp_, he_;
    mutable std::vector<VT> stage_;
    mutable Array<VT> e_, t_;
};

}  // namespace heptane::dist
