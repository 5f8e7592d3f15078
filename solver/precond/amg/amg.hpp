// Algebraic multigrid (smoothed aggregation) as a heptane Preconditioner: z = one cycle of
// the hierarchy applied to r, from a zero initial guess.
//
//     AmgOptions o;                                  // amg_options.hpp: θ, smoother, cycle…
//     auto m = make_amg<double>(csr, nc, exec, o);   // or make_preconditioner(PcType::amg…)
//     Cg<double> s; s.set_operator(A); s.set_preconditioner(std::move(m));
//
// Setup: strength of connection, aggregation, the smoothed prolongator P, R = Pᵀ and the
// Galerkin products A_{l+1} = R A_l P — on the device for a GPU executor and Nc = 1
// (amg_device.hpp: the same aggregates and P as the CPU, R A P by cuSPARSE's SpGEMM), else on
// the host (amg_setup.hpp, OpenMP, the CPU reference); AmgOptions::setup chooses. The levels
// are CSR on the executor in the solver's precision (the finest level can be the caller's
// operator, e.g. BDIA-GH), with each level's smoother data (D⁻¹ and, for Chebyshev, a bound
// on λ_max(D⁻¹A): Gershgorin's by default, or power and Lanczos steps through the level's
// product on the executor, AmgOptions::power_iterations) and the coarsest level's dense
// inverse. The cycle runs entirely on the executor: products through the SpMV core,
// smoothing steps and the coarse solve as kernels (amg_kernels.hpp), no host
// synchronisation (graph-safe on a GPU).
//
// update_values(A') keeps the aggregates, P and R (PETSc GAMG's reuse of the interpolation)
// and redoes the Galerkin products (where the hierarchy was built: on the device with
// cuSPARSE's SpGEMM reuse), the smoother data and the coarse inverse.
//
// Errors (InputError): a matrix that is not square or whose size Nc does not divide, a zero
// diagonal entry on any level (named with its level and 1-based row), a singular coarsest
// level.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "solver/precond/amg/amg_options.hpp"
#include "solver/precond/preconditioner.hpp"

namespace heptane {

/// One level of a hierarchy as `heptane info --verbose` and -ksp_view print it.
struct AmgLevelInfo {
    index_t rows = 0;
    offset_t nnz = 0;
    double lambda_max = 0;  ///< the bound or estimate of λ_max(D⁻¹A) (Chebyshev); 0 on the coarsest
};

struct AmgInfo {
    std::vector<AmgLevelInfo> levels;
    /// Σ nnz(A_l) / nnz(A_0) and Σ rows(A_l) / rows(A_0).
    double operator_complexity = 0;
    double grid_complexity = 0;
    /// How the coarsest level is treated: "dense LU" (at most coarse_size rows, or above it
    /// while the inverse is cheap: amg::dense_coarse), else, coarsening having stalled,
    /// "ILU(0) sweeps (coarsening stalled)" for a non-symmetric A or "smoothed (coarsening
    /// stalled)" (the level's smoother, keeping the cycle symmetric) for a symmetric one.
    std::string coarse_solve;
    /// How the levels were coarsened: "mis", "box, grids 128x128x64/64x64x32/…", or why box
    /// aggregation was asked for and mis used.
    std::string aggregation = "mis";
    /// Where the hierarchy was built: "host" or "device" (AmgOptions::setup).
    std::string setup_on = "host";
    double hierarchy_ms = 0;            ///< strength, aggregation, P and R, Galerkin products
    double phase_ms[4] = {0, 0, 0, 0};  ///< the same four phases one by one
    double device_ms = 0;  ///< levels in the solver's precision, smoother data, coarse inverse
    double lambda_ms = 0;  ///< of device_ms: the λ_max estimates (Chebyshev)
    /// Values-only refreshes (update_values) so far, and the last one's Galerkin products
    /// (where the hierarchy lives) and executor part (values, smoother data, coarse inverse);
    /// the fields above stay the first setup's.
    int refreshes = 0;
    double refresh_hierarchy_ms = 0;
    double refresh_device_ms = 0;
    /// Multi-line table: level, rows, nnz, nnz/row, λ_max; complexities.
    std::string table() const;
};

template <class VT>
class AmgPreconditioner final : public Preconditioner<VT> {
public:
    /// `fine`: an operator for A itself on `exec` (the solver's), used for the finest
    /// level's products instead of a CSR copy; null: AMG keeps its own. `a_on_exec`: A's
    /// CSR already in exec's memory (a copy the caller made): a hierarchy built on the device
    /// starts from it instead of uploading `a` again (`a` is still read on the host for the
    /// pattern and symmetry checks).
    AmgPreconditioner(const Csr<double>& a, index_t nc, std::shared_ptr<const Executor> exec,
                      const AmgOptions& opts, std::shared_ptr<const Operator<VT>> fine = nullptr,
                      const Csr<double>* a_on_exec = nullptr);
    ~AmgPreconditioner() override;
    PcType type() const noexcept override { return PcType::amg; }
    /// Same pattern, new values: see the header comment. A `fine` operator given at setup
    /// must be updated by the caller.
    void update_values(const Csr<double>& a) override;
    /// A's new values alone, nnz doubles in the executor's memory in the CSR order of the
    /// matrix set up from (the caller guarantees its pattern): where the hierarchy lives on
    /// the device, the Galerkin products, the levels and the smoother data are redone there,
    /// nothing crosses the bus. False (nothing changed) for a hierarchy built on the host.
    bool update_values_device(const double* values, offset_t nnz) override;
    bool graph_safe() const override;
    const AmgInfo& info() const noexcept;
    const AmgOptions& options() const noexcept;

    struct Impl;

protected:
    void solve(const VT* r, VT* z) const override;
    bool symmetric_apply() const noexcept override;
    std::string details() const override;

private:
    // the numeric part again from A (where the hierarchy wants it), or from its values alone
    // on the device (device_values, A then being the kept A_0 whose values they replace)
    void refresh(const Csr<double>& a, const double* device_values,
                 std::chrono::steady_clock::time_point t_start);
    std::unique_ptr<Impl> impl_;
};

extern template class AmgPreconditioner<double>;
extern template class AmgPreconditioner<float>;

/// The hierarchy of `a` as the setup would build it, without an executor (for `heptane
/// info --verbose`): sizes and complexities; lambda_max is not estimated (0).
AmgInfo amg_hierarchy(const Csr<double>& a, index_t nc, const AmgOptions& opts);

}  // namespace heptane
