// A global coarse correction for a preconditioner that each rank builds from its own rows
// (AMG, ILU or block Jacobi of the rank's diagonal block: block Jacobi over the ranks, which
// leaves out every coupling between ranks, so its iterations grow with the number of ranks).
//
// Coarse space: each rank groups its block rows into aggregates grown breadth-first over its
// diagonal block's graph (about `aggregates` of them, compact whatever the numbering), and the
// coarse space is piecewise constant on them, one coarse unknown per aggregate and component:
// P's column (I, c) is 1 on component c of every cell of aggregate I. The coarse matrix
// A_c = Pᵀ A P sums A's entries by (row aggregate, column aggregate) and components, with the
// couplings between ranks (the aggregate of every off-rank column is asked of its owner once
// per pattern); every rank assembles it whole (MPI_Allgatherv of each rank's coarse rows) and
// factors it (dense LU with partial pivoting, on the host: it is small). This is
// Nicolaides' / "two-level Schwarz" coarse space with more than one vector per rank.
//
// Application (z = M⁻¹ r, M_loc the ranks' own preconditioner, Q = P A_c⁻¹ Pᵀ):
//   nonsymmetric (BiCGStab, GMRES):  z1 = Q r;  z = z1 + M_loc (r − A z1)        (A-DEF2)
//   symmetric (CG):                  z2 as z above;  z = z2 + Q (r − A z2)
// one (two) products with the distributed A, one application of M_loc, and per Q one
// MPI_Allgatherv of the coarse residual's entries of each rank and a dense triangular solve
// on every rank. On a GPU the restriction and prolongation run on the host (r goes down and
// the coarse correction up: two vectors of this rank's rows per Q); A and M_loc stay there.
//
//     CoarseSpace<double> q(comm, a_op, m_loc, rows, nc, opts);   // collective
//     solver.set_preconditioner(q);
//     q.update_values(new_rows);     // same pattern, new values: A_c again (collective)
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "formats/csr/csr.hpp"

namespace heptane::dist {

/// This rank's rows of the global matrix as MPIAIJ keeps them: the diagonal block (columns
/// numbered from the rank's first row) and the others, whose column j is the global column
/// off_cols[j] (off_cols null: off's columns are global ones). Borrowed. off may be empty
/// (rows 0 or no entries).
struct SplitRows {
    CsrView diag;
    CsrView off;
    const index_t* off_cols = nullptr;
};

struct CoarseOptions {
    /// Aggregates per rank (the coarse space has ranks × aggregates × Nc unknowns at most);
    /// 0: min(64, 512 / (ranks × Nc)), at least 1.
    index_t aggregates = 0;
    /// The symmetric form (for CG): a second coarse correction after M_loc.
    bool symmetric = false;
};

template <class VT>
class CoarseSpace final : public Operator<VT> {
public:
    /// Collective over `comm`. `a`: the distributed operator of these rows (its apply is
    /// collective; its vectors are this rank's rows on its executor); `local`: the rank's own
    /// preconditioner on the same executor. rows.diag.rows must be a multiple of nc and equal
    /// a->rows(). Throws InputError (the same on every rank) when the coarse matrix is
    /// singular (e.g. a matrix without any Dirichlet-like term, whose constants are in its
    /// kernel), when the sizes do not fit, or when an off-rank column lies outside the matrix.
    CoarseSpace(MPI_Comm comm, std::shared_ptr<const Operator<VT>> a,
                std::shared_ptr<const Operator<VT>> local, const SplitRows& rows, index_t nc,
                const CoarseOptions& opt = {});
    ~CoarseSpace() override;

    /// New values on the pattern of the setup: A_c again and its factors (collective; throws
    /// as the constructor, and then keeps the coarse matrix and factors it had).
    void update_values(const SplitRows& rows);
    /// A new preconditioner of the rank's own rows (after it was rebuilt).
    void set_local(std::shared_ptr<const Operator<VT>> local) { local_ = std::move(local); }

    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return a_->executor(); }
    using Operator<VT>::apply;  // z = M⁻¹ r
    /// z = alpha M⁻¹ r + beta z (collective).
    void apply(VT alpha, const VT* r, VT beta, VT* z) const override;
    void apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const override;
    std::string describe() const override;

    index_t coarse_size() const noexcept { return nc_total_; }
    index_t local_aggregates() const noexcept { return aggs_; }
    /// A_c row-major (coarse_size()² values), as assembled at the last setup or update (for
    /// tests).
    const std::vector<double>& coarse_matrix() const noexcept { return ac_; }
    /// The aggregate (0-based on this rank) of each of this rank's block rows.
    const std::vector<index_t>& aggregate_of() const noexcept { return agg_; }
    /// The first coarse unknown of this rank (its unknowns are consecutive).
    index_t coarse_begin() const noexcept { return c_begin_; }
    double setup_ms() const noexcept { return setup_ms_; }

private:
    void assemble(const SplitRows& rows);
    /// The coarse unknown of row i of this rank.
    index_t coarse_of(index_t i) const noexcept
    {
        return c_begin_ + agg_[std::size_t(i / nc_)] * nc_ + i % nc_;
    }
    /// y (host, n_) = Q r (r host, n_); collective.
    void coarse_correct(const double* r, double* y) const;

    MPI_Comm comm_ = MPI_COMM_NULL;
    std::shared_ptr<const Operator<VT>> a_, local_;
    index_t n_ = 0, nc_ = 1, aggs_ = 0, nc_total_ = 0, c_begin_ = 0;
    bool symmetric_ = false;
    int ranks_ = 1;
    std::vector<index_t> agg_;          ///< block row -> local aggregate
    std::vector<index_t> off_global_;   ///< the off-rank columns (global), ascending
    std::vector<index_t> off_ref_;      ///< off entry -> its column in off_global_
    std::vector<index_t> off_agg_;      ///< off column -> global aggregate of its block
    std::vector<int> counts_, displs_;  ///< coarse unknowns per rank (Allgatherv)
    std::vector<double> ac_;            ///< A_c, row-major
    std::vector<double> lu_;            ///< its LU factors (row-major, unit L)
    std::vector<index_t> piv_;
    double setup_ms_ = 0;
    // scratch
    mutable std::vector<double> hr_, hz_, rc_, zc_;
    mutable std::vector<VT> stage_;  ///< a GPU's vectors on their way to and from the host
    mutable Array<VT> t_, z1_;
};

}  // namespace heptane::dist
