// One smoothed-aggregation AMG hierarchy over all the ranks (docs/design.md §4), instead of one
// per rank's diagonal block (block Jacobi over the ranks, whose iterations grow with the ranks).
//
// Every level is a row-split matrix as MPIAIJ keeps one (SplitRows: the rank's diagonal block,
// the couplings to other ranks' rows through a halo), and its rows stay on their rank:
//   aggregation   each rank aggregates its own diagonal block (amg_setup.hpp: strength of
//                 connection, Vaněk–Mandel–Brezina aggregates; aggregates never cross ranks,
//                 as in PETSc GAMG's default and hypre's local coarsening)
//   prolongation  P = (I − ω D_F⁻¹ A_F) T over whole rows: the couplings to other ranks are
//                 in it (counted strong; T of a halo column asked of its owner), ω = weight /
//                 ρ with Gershgorin's ρ over all ranks — so a rank's rows next to another
//                 rank interpolate from that rank's aggregates too (P = [p | po], po's columns
//                 other ranks' coarse rows)
//   Galerkin      A_c = Pᵀ A P with the couplings between ranks: A P row by row (the whole
//                 rows of P of the halo columns sent once by their owners), this rank's coarse
//                 rows from pᵀ (A P), the rows that po reaches summed here (poᵀ (A P)) and sent
//                 to their owners — A_c is again row-split, with a halo of its own
//   smoother      Chebyshev (the default; degree pre/post_sweeps, on [λ/ratio, λ] with
//                 Gershgorin's bound λ of D⁻¹A over whole rows), damped Jacobi or l1-Jacobi —
//                 every product through the distributed one (halo exchange, MPI_Isend/Irecv,
//                 the rank's diagonal block meanwhile): each level's smoothing sees the
//                 couplings between ranks, unlike block Jacobi over the ranks
//   transfers     restriction pᵀ r plus po's part sent to the owners (the reverse of the
//                 prolongation's exchange of the coarse values po reads)
//   coarsest      once the global rows are at most coarse_size (or coarsening stalls, or
//                 max_levels): gathered whole on every rank and inverted densely while
//                 amg::dense_coarse allows, else smoothed
// The V-cycle with the same pre- and post-smoother is symmetric for a symmetric A (CG).
// Everything lives on the host (OpenMP within a rank); on a GPU executor apply() stages r and z
// through host memory (one vector down and up per application). A values-only update with the
// same patterns keeps the aggregates, P, the patterns and the plans, and redoes the numeric
// part (the Galerkin products scatter into kept slots); another pattern: the whole setup.
//
//     DistAmg<double> m(comm, exec, rows, row_begin, nc, amg_options);   // collective
//     solver.set_preconditioner(m);
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/operator.hpp"
#include "distributed/coarse_space.hpp"
#include "solver/precond/amg/amg_options.hpp"

namespace heptane::dist {

/// A level of the hierarchy, whole over the ranks (the same on every rank).
struct DistAmgLevelInfo {
    long long rows = 0;                    ///< global
    long long nnz = 0;                     ///< global stored entries
    index_t rank_rows = 0, rank_halo = 0;  ///< this rank's rows and halo columns
};

/// Where a setup's time went on this rank (ms, all levels): strength of connection and
/// aggregation; the prolongator (its rows, R, the plans, the halo's rows of P); the Galerkin
/// products in all, and their parts: A P, Pᵀ (A P) and poᵀ (A P) (products), the rows sent to
/// their owners (exchange: MPI_Alltoall(v), waiting for the other ranks included), the next
/// level's patterns (a full setup) and the scatter into them (patterns).
struct DistAmgPhases {
    double aggregation = 0, prolongation = 0, galerkin = 0;
    double products = 0, exchange = 0, patterns = 0;
    /// The largest of each of aggregation, prolongation, products over the ranks, and the
    /// rank (the others wait for it in `exchange` and in the plans' exchanges).
    double slowest[3] = {0, 0, 0};
    int slowest_rank[3] = {0, 0, 0};
    /// The Galerkin products' multiply-adds on this rank, on the slowest rank of the products,
    /// and the most on any rank (with that rank): whether the slowest rank has more work or
    /// runs slower on the same.
    long long adds = 0, slowest_adds = 0, most_adds = 0;
    int most_adds_rank = 0;
};

template <class VT>
class DistAmg final : public Operator<VT> {
public:
    /// Collective over `comm`. rows: this rank's rows (a multiple of nc) of the square matrix,
    /// the rank's first row `row_begin` (contiguous ranges in rank order); exec: where the
    /// vectors of apply() live. Uses opts' strength_threshold, prolongation_weight,
    /// prolongation_max_entries (each row of P truncated to that many), coarse_size,
    /// max_levels, smoother (automatic → chebyshev; ilu0mc is refused), pre/post_sweeps,
    /// jacobi_weight, chebyshev_ratio. Throws InputError (the same on every rank) for a zero
    /// diagonal (naming the level and the global row), a singular coarsest level, a column
    /// outside the matrix, ranges that are not contiguous.
    DistAmg(MPI_Comm comm, std::shared_ptr<const Executor> exec, const SplitRows& rows,
            index_t row_begin, index_t nc, const AmgOptions& opts = {});
    ~DistAmg() override;

    /// New values, same sizes (collective). With the same patterns on every rank (a Newton
    /// step): the aggregates, P and every level's pattern and exchange plans are kept and the
    /// numeric part is redone (Galerkin products on the kept patterns, smoother data, the
    /// coarsest inverse), as PETSc GAMG's reuse of the interpolation and heptane's AMG per
    /// rank do; with another pattern anywhere, the whole setup again. Either way the last
    /// hierarchy is kept whole when it throws.
    void update_values(const SplitRows& rows);

    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    using Operator<VT>::apply;
    /// z = alpha B r + beta z, B one V-cycle from zero (collective).
    void apply(VT alpha, const VT* r, VT beta, VT* z) const override;
    /// The V-cycle's transpose is itself for a symmetric A; NotSupported otherwise is not
    /// checked: the same cycle.
    void apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const override;
    std::string describe() const override;

    const std::vector<DistAmgLevelInfo>& levels() const noexcept { return info_; }
    /// Σ nnz(level) / nnz(fine).
    double operator_complexity() const noexcept;
    double setup_ms() const noexcept { return setup_ms_; }
    /// Values-only updates on the kept P so far, and the last one's time.
    int refreshes() const noexcept { return refreshes_; }
    const DistAmgPhases& phases() const noexcept { return phases_; }
    /// The last values-only update's Galerkin parts (products, exchange, patterns = scatter).
    const DistAmgPhases& refresh_phases() const noexcept { return refresh_phases_; }
    double refresh_ms() const noexcept { return refresh_ms_; }
    /// Level l's rows of this rank as triplets in global indices (tests: against Pᵀ A P of
    /// the whole matrix), and the prolongator from level l to l + 1 likewise (global fine
    /// row, global coarse column).
    void level_triplets(int l, std::vector<long long>& i, std::vector<long long>& j,
                        std::vector<double>& v) const;
    void prolongator_triplets(int l, std::vector<long long>& i, std::vector<long long>& j,
                              std::vector<double>& v) const;

    struct Level;  // distributed/dist_amg.cpp

private:
    void setup(const SplitRows& rows, index_t row_begin);
    bool refresh(const SplitRows& rows);  ///< false: another pattern (nothing changed)
    void cycle(std::size_t l, const double* b, double* x) const;

    MPI_Comm comm_ = MPI_COMM_NULL;
    std::shared_ptr<const Executor> exec_;
    index_t n_ = 0, nc_ = 1, row_begin_ = 0;
    AmgOptions opts_;
    std::vector<std::unique_ptr<Level>> levels_;
    std::vector<DistAmgLevelInfo> info_;
    bool dense_ = false;          ///< the coarsest level inverted densely (else smoothed)
    std::vector<double> inv_;     ///< its inverse, row-major, on every rank
    std::vector<int> cnt_, dsp_;  ///< the coarsest level's rows per rank (Allgatherv)
    double setup_ms_ = 0, refresh_ms_ = 0;
    int refreshes_ = 0;
    DistAmgPhases phases_, refresh_phases_;
    mutable std::vector<double> hr_, hz_, whole_;
    mutable std::vector<VT> stage_;
};

}  // namespace heptane::dist
