// Why a solve stopped. Kept apart from solver.hpp so that CUDA sources can include it
// without the standard-library weight of the options and status types.
#pragma once

namespace heptane {

/// Why a solve stopped, after PETSc's KSPConvergedReason. The numeric values are stored in
/// device memory by the fused kernels; do not reorder.
enum class Reason {
    iterating = 0,        ///< not stopped (never returned by solve())
    converged_rtol,       ///< ‖r‖ ≤ rtol·‖b‖
    converged_atol,       ///< ‖r‖ < atol (also: b = 0, where x = 0 is returned)
    diverged_max_it,      ///< max_it iterations done without meeting the tolerance
    diverged_dtol,        ///< ‖r‖ > dtol·‖r0‖
    diverged_nan,         ///< a residual norm or a scalar of the method became NaN or Inf
    breakdown_rho,        ///< ρ became 0: BiCGStab (r̂, r) = 0, CG (r, M⁻¹r) = 0, with r ≠ 0
    breakdown_omega,      ///< BiCGStab: ω = (t,s)/(t,t) became 0 (or t = As = 0 with s ≠ 0)
    breakdown_rv,         ///< BiCGStab: (r̂, v) = 0, so α = ρ/(r̂, v) is undefined
    diverged_indefinite,  ///< CG: (p, Ap) ≤ 0 or (r, M⁻¹r) < 0: A or M is not SPD
    stagnation,           ///< ‖r‖ stopped decreasing (SolverOptions::stagnation_window)
    /// The recursive residual met the tolerance, but the true ‖b − A x‖ with the matrix as
    /// given (fp64) does not: a solve with fp32 matrix values (single precision, or mixed
    /// without refinement) whose rounding of A sits above rtol (solve_system)
    diverged_true_residual,
    /// The caller's own test (SolverOptions::stop_test) said converged: e.g. a PETSc host's
    /// KSPSetConvergenceTest through the plugin
    converged_by_caller,
    /// The caller's own test (SolverOptions::stop_test) said stop without convergence
    diverged_by_caller,
};

/// The enumerator's name, e.g. "converged_rtol".
const char* to_string(Reason r) noexcept;

/// True for converged_rtol, converged_atol and converged_by_caller.
inline bool is_converged(Reason r) noexcept
{
    return r == Reason::converged_rtol || r == Reason::converged_atol ||
           r == Reason::converged_by_caller;
}

}  // namespace heptane
