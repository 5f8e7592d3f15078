// MLEM (Shepp & Vardi 1982) and OSEM (Hudson & Larkin 1994) for emission tomography
// (docs/design.md §3): the maximum-likelihood image f ≥ 0 of Poisson counts g ~ Poisson(A f),
// A the m x n system matrix (rows: lines of response, columns: voxels, a_ij ≥ 0).
//
//     norm_j = Σ_i a_ij                          sensitivity, Aᵀ·1, computed once
//     f⁰_j   = Σg / Σnorm  (0 where norm_j = 0)  so that Σ A f⁰ = Σ g
//     per iteration:  q = A f                    forward projection
//                     c = g / q   (0 where q_i = 0: 0/0 = 0, empty rows)   correlation
//                     b = Aᵀ c                   back projection
//                     f = f · b / norm           update (a voxel with norm_j = 0 stays 0)
//     L(f) = Σ_i (g_i log (Af)_i − (Af)_i)       Poisson log-likelihood (up to Σ log g_i!)
//
// OSEM: the rows are split into S blocks (ordered subsets); one iteration runs the four steps
// above once per block, with that block's rows and its own sensitivity norm_s = A_sᵀ·1 (a
// voxel the block does not see keeps its value). S = 1 is MLEM, operation for operation.
//
// Positivity: with a_ij ≥ 0 and g ≥ 0 every step is a product or quotient of non-negative
// numbers, so f stays ≥ 0; negative counts or a negative column sum are refused (InputError).
//
// The log-likelihood: terms with g_i = 0 contribute −(Af)_i; a row with (Af)_i = 0 (an empty
// row, or one that sees only zero voxels, which the multiplicative update never changes)
// contributes nothing, so log 0 is never taken and the sum stays comparable between
// iterations. MLEM never decreases L (tests/test_mlem.cpp checks it); OSEM need not be
// monotone.
//
//     Mlem<double> em;
//     em.options().iterations = 50;
//     em.set_operator(A);                  // or em.set_subsets(make_row_block_operators(...))
//     MlemStatus st = em.solve(g, f);      // f: the image; st.loglik: L per iteration
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "formats/matrix.hpp"

namespace heptane {

struct MlemOptions {
    /// Full iterations (for OSEM: passes over all S subsets). 0 only evaluates f⁰.
    int iterations = 10;
    /// Record L(f^k) for k = 0..iterations. MLEM gets it almost free (fused into the
    /// correlation, plus one forward projection at the end); OSEM (S > 1) pays one more
    /// forward projection of all rows per iteration.
    bool compute_loglik = true;
    /// Start from f as given (must be ≥ 0); otherwise f is overwritten with f⁰.
    bool nonzero_initial_guess = false;
    /// When set, called with (k, iterations) once iteration k (for OSEM: the pass over every
    /// subset) is done on the device: the host waits for every iteration (for progress on long
    /// runs, e.g. out of core).
    std::function<void(int, int)> progress;
};

struct MlemTimings {
    double setup_ms = 0;          ///< sensitivities (first solve only), input checks, f⁰
    double solve_ms = 0;          ///< the iterations, log-likelihood included
    double per_iteration_ms = 0;  ///< solve_ms / iterations
};

struct MlemStatus {
    int iterations = 0;          ///< iterations done
    int subsets = 1;             ///< S (1: MLEM)
    double counts = 0;           ///< Σ g
    double sensitivity_sum = 0;  ///< Σ_j norm_j = Σ_ij a_ij
    double initial_value = 0;    ///< f⁰ = Σg / Σnorm (when not given)
    index_t unseen_voxels = 0;   ///< voxels with norm_j = 0 (no row sees them; f_j = 0)
    /// L(f^k), k = 0..iterations: loglik[0] for the initial image, loglik[k] after
    /// iteration k (compute_loglik; empty otherwise).
    std::vector<double> loglik;
    MlemTimings timings;
};

template <class VT>
class Mlem {
public:
    explicit Mlem(MlemOptions options = {});
    ~Mlem();
    Mlem(Mlem&&) noexcept;
    Mlem& operator=(Mlem&&) noexcept;

    /// MLEM with the whole system matrix.
    void set_operator(std::shared_ptr<const Operator<VT>> a);
    /// Not owned: must outlive the solves.
    void set_operator(const Operator<VT>& a);
    /// OSEM: consecutive row blocks of A, in row order (block s holds the rows after those of
    /// blocks 0..s-1), all with the same columns and on one executor. Throws InputError when
    /// empty, DimensionMismatch when the columns differ.
    void set_subsets(std::vector<std::shared_ptr<const Operator<VT>>> blocks);
    /// Rows split over processes: every process sets the operator of its own rows (for OSEM
    /// its S blocks: subset s is the union of every process's block s; every process the same
    /// S), all with the same columns, and solves with g of those rows and f of all columns;
    /// `sum` adds n host doubles over every process in place (e.g. MPI_Allreduce), collective.
    /// The sensitivity, each back projection, Σg, the checks' counts and the log-likelihoods
    /// are summed through it (a back projection goes through host memory); f comes out the
    /// same on every process. Null: one process. An operator with a reducer() is taken as
    /// one whose A^T x arrives summed over the processes (dist::RowBlockOperator, device to
    /// device with NCCL where it can): its back projections skip `sum`, the host scalars
    /// still take it.
    void set_process_sum(std::function<void(double*, int)> sum);

    MlemOptions& options() noexcept { return opts_; }
    const MlemOptions& options() const noexcept { return opts_; }

    /// Reconstruct f (cols entries) from counts g (rows entries), both in the memory of the
    /// operators' executor. The sensitivities are computed at the first solve after
    /// set_operator/set_subsets and kept. Throws InputError for negative or NaN counts, a
    /// negative column sum of A or a negative initial guess, DimensionMismatch for sizes.
    MlemStatus solve(const Array<VT>& g, Array<VT>& f);

    struct Workspace;

private:
    MlemOptions opts_;
    std::vector<std::shared_ptr<const Operator<VT>>> blocks_;
    std::function<void(double*, int)> psum_;
    std::unique_ptr<Workspace> ws_;
};

extern template class Mlem<double>;
extern template class Mlem<float>;

/// Row boundaries of S consecutive blocks of about equal nnz: S + 1 values, 0 first and
/// a.rows last, each block at least one row. Throws InputError unless 1 ≤ S ≤ a.rows.
std::vector<index_t> row_block_bounds(const Coo<double>& a, int subsets);

/// The OSEM sub-operators: the rows of canonical host COO `a` split by row_block_bounds, each
/// block built once in format `f` on `exec` (make_matrix_operator<MT, VT>). Throws what
/// row_block_bounds and make_matrix_operator throw.
template <class MT, class VT>
std::vector<std::shared_ptr<const Operator<VT>>> make_row_block_operators(
    const Coo<double>& a, int subsets, Format f, std::shared_ptr<const Executor> exec,
    const FormatOptions& opt = {});

/// The Aᵀ strategies of `heptane mlem`, `heptane lsqr` and their benchmarks, onto
/// FormatOptions::transpose:
///   "native"  → TransposeMode::scatter: the format's own Aᵀ kernel — a gather for BDIA-GH
///              (block offset d becomes −d) and DIA (clipped gathers), an atomic scatter for
///              CSR, COO, ELL, HYB and BSR (so for CSR, native = scatter);
///   "scatter" → TransposeMode::scatter as well (the same kernels; named for what CSR does);
///   "stored"  → TransposeMode::stored: a CSR copy of Aᵀ built once at setup, applied as a
///              row gather (no atomics; twice the matrix memory). BDIA-GH ignores it.
/// Throws InputError naming the choices.
TransposeMode parse_transpose_strategy(const std::string& name);
/// What Aᵀ x does for format f under mode t: "gather", "atomic scatter" or "stored CSR".
const char* describe_transpose(Format f, TransposeMode t);

}  // namespace heptane
