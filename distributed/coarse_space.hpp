// A global coarse correction for a preconditioner that each rank builds from its own rows
// (AMG, ILU or block Jacobi of the rank's diagonal block: block Jacobi over the ranks, which
// leaves out every coupling between ranks, so its iterations grow with the number of ranks).
//
// Coarse space: each rank groups its block rows into aggregates of its diagonal block, either
// grown breadth-first over its graph (`bfs`: about `aggregates` of them, compact whatever the
// numbering, blind to the values) or (`strength`) AMG's aggregates of its strong couplings
// (amg_setup.hpp's strength and aggregation, θ = amg.strength_threshold), aggregated again
// level by level (unsmoothed Galerkin products of the block) down to the level whose count is
// nearest `aggregates` — aggregates that follow the strong couplings, so that a layered,
// anisotropic field's layers are not lumped together; where that stalls more than twice above
// the count (a coupled system's block strengths can), breadth-first after all, as describe()
// says — and the coarse space is piecewise constant on them, one coarse unknown per aggregate and
// component: P's column (I, c) is 1 on component c of every cell of aggregate I. The coarse matrix
// A_c = Pᵀ A P sums A's entries by (row aggregate, column aggregate) and components, with the
// couplings between ranks (the aggregate of every off-rank column is asked of its owner once
// per pattern); every rank assembles it whole (MPI_Allgatherv of each rank's coarse rows, kept
// sparse: its pattern is gathered once per setup, its values at every update) and solves with
// it on the host:
//   dense  LU with partial pivoting (exact), while the coarse matrix is small (≤ 1024 unknowns
//          by default: its LU costs m³/3 and each solve m², every rank the same);
//   amg    heptane's AMG (amg.hpp) of the coarse matrix on the host, applied as `cycles` steps
//          of the stationary iteration z += B (r_c − A_c z) from z = 0 (a fixed linear map, as
//          BiCGStab and CG need; symmetric when the cycle is), for the many aggregates per
//          rank that a coarse space close to the fine grid needs (tens of thousands of
//          unknowns: the dense LU's cost grows as m³, the cycle's as nnz(A_c)).
// This is Nicolaides' / "two-level Schwarz" coarse space with more than one vector per rank;
// with many small aggregates and AMG on the coarse matrix it is the first level of a
// multigrid hierarchy over the ranks whose further levels are replicated on every rank.
//
// Application (z = M⁻¹ r, M_loc the ranks' own preconditioner, Q = P A_c⁻¹ Pᵀ):
//   nonsymmetric (BiCGStab, GMRES):  z1 = Q r;  z = z1 + M_loc (r − A z1)        (A-DEF2)
//   symmetric (CG):                  z2 as z above;  z = z2 + Q (r − A z2)
// one (two) products with the distributed A, one application of M_loc, and per Q one
// MPI_Allgatherv of the coarse residual's entries of each rank and the coarse solve on every
// rank. On a GPU the restriction and prolongation run on the host (r goes down and
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
#include "solver/precond/amg/amg_options.hpp"

namespace heptane {
template <class VT>
class AmgPreconditioner;
}  // namespace heptane

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
    /// How the aggregates are made (the header comment).
    enum class Aggregation { bfs, strength };
    Aggregation aggregation = Aggregation::bfs;
    /// How every rank solves with the coarse matrix (the header comment): automatic = dense
    /// up to `dense_limit` unknowns, else amg.
    enum class Solve { automatic, dense, amg };
    Solve solve = Solve::automatic;
    index_t dense_limit = 1024;
    /// amg: steps of the stationary iteration with one AMG cycle each (≥ 1), and the AMG's
    /// options (its Nc is the fine matrix's).
    int cycles = 2;
    AmgOptions amg;
    /// The caller declared the constants (per component) a null space of A (a pure-Neumann
    /// pressure: A 1 = 0), so A_c = Pᵀ A P is singular too: the dense solve is then a
    /// generalized inverse (amg::generalized_inverse, symmetric positive semidefinite for a
    /// symmetric A_c) and the AMG solve's coarsest level one (AmgOptions::singular), instead of
    /// the InputError of a singular coarse matrix.
    bool singular = false;
};
/// "bfs", "strength"; InputError naming the choices.
CoarseOptions::Aggregation parse_coarse_aggregation(const std::string& name);
const char* to_string(CoarseOptions::Aggregation a) noexcept;
/// "auto", "dense", "amg"; InputError naming the choices.
CoarseOptions::Solve parse_coarse_solve(const std::string& name);
const char* to_string(CoarseOptions::Solve s) noexcept;

template <class VT>
class CoarseSpace final : public Operator<VT> {
public:
    /// Collective over `comm`. `a`: the distributed operator of these rows (its apply is
    /// collective; its vectors are this rank's rows on its executor); `local`: the rank's own
    /// preconditioner on the same executor. rows.diag.rows must be a multiple of nc and equal
    /// a->rows(). Throws InputError (the same on every rank) when the coarse matrix is
    /// singular (e.g. a matrix without any Dirichlet-like term, whose constants are in its
    /// kernel; the AMG solve reports it as its coarsest level's) and no null space is declared
    /// (CoarseOptions::singular), when the sizes do not fit,
    /// or when an off-rank column lies outside the matrix.
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
    /// The solve chosen (dense or amg).
    CoarseOptions::Solve solve_kind() const noexcept { return solve_; }
    /// A_c as assembled at the last setup or update, whole on every rank (CSR on the host).
    const Csr<double>& coarse_csr() const noexcept { return acs_; }
    /// The same row-major (coarse_size()² values; for tests of small ones).
    std::vector<double> coarse_matrix() const;
    /// The aggregate (0-based on this rank) of each of this rank's block rows.
    const std::vector<index_t>& aggregate_of() const noexcept { return agg_; }
    /// The first coarse unknown of this rank (its unknowns are consecutive).
    index_t coarse_begin() const noexcept { return c_begin_; }
    double setup_ms() const noexcept { return setup_ms_; }

private:
    /// This rank's coarse rows' pattern and every fine entry's place in it, and the whole
    /// pattern on every rank (collective; once per setup).
    void pattern(const SplitRows& rows, const std::vector<int>& agg_displs);
    void assemble(const SplitRows& rows);
    void factor_dense();
    /// zc = A_c⁻¹ rc (dense) or the AMG iteration's approximation.
    void coarse_solve(const std::vector<double>& rc, std::vector<double>& zc) const;
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
    CoarseOptions::Solve solve_ = CoarseOptions::Solve::dense;
    CoarseOptions::Aggregation aggregation_ = CoarseOptions::Aggregation::bfs;
    bool strength_stalled_ = false;  ///< strength asked, stalled far above the count: bfs
    int cycles_ = 2;
    AmgOptions amg_opts_;
    // this rank's coarse rows (pattern, local rows, global columns) and each fine entry's slot
    std::vector<offset_t> lrp_;
    std::vector<index_t> lci_;
    std::vector<offset_t> slot_d_, slot_o_;
    std::vector<int> vcounts_, vdispls_;  ///< coarse entries per rank (Allgatherv)
    Csr<double> acs_;                     ///< A_c, whole (host)
    std::vector<double> lu_;              ///< dense: its LU factors (row-major, unit L)
    bool singular_ = false;               ///< CoarseOptions::singular
    std::vector<double> ginv_;            ///< dense, singular: a generalized inverse (row-major)
    index_t rank_ = 0;                    ///< dense, singular: the coarse matrix's rank
    std::vector<index_t> piv_;
    std::shared_ptr<const AmgPreconditioner<double>> amg_;  ///< amg: A_c's AMG (host)
    double setup_ms_ = 0;
    // scratch
    mutable std::vector<double> hr_, hz_, rc_, zc_, cres_, cz_;
    mutable std::vector<VT> stage_;  ///< a GPU's vectors on their way to and from the host
    mutable Array<VT> t_, z1_;
};

}  // namespace heptane::dist
