// The scalars of a Krylov iteration and the stopping logic, shared by the host and the
// device. On a GPU the KrylovState lives in device memory: the reduction kernels finish by
// computing alpha, beta, omega and the stopping tests themselves (the "finalize" functions
// below, run by the last block of the reduction), so the host never waits inside an
// iteration. On the CPU the same functions run on a host KrylovState. The reference
// BiCGStab (cuBLAS, host scalars) also uses them, so all three paths stop by the same rules.
//
// Every step kernel first reads `stop`; once a test has stopped the iteration, the kernels
// queued after it do nothing, so x and r stay frozen at the iterate that stopped (only the
// SpMVs and preconditioner applications already queued still run, into scratch vectors).
#pragma once

#include <cmath>

#include "core/types.hpp"
#include "solver/reason.hpp"

namespace heptane {

/// Stopping parameters handed to the init kernel (by value).
struct StopParams {
    double rtol = 0;
    double atol = 0;
    double dtol = 0;
    int max_it = 0;
};

/// Scalars of one solve. Plain data: copied to pinned host memory at the host checks.
struct KrylovState {
    // method scalars (double even when the vectors are float)
    double rho = 0;      ///< BiCGStab (r̂, r_i); CG (r_i, z_i)
    double rho_old = 0;  ///< BiCGStab ρ_{i-1}
    double alpha = 0;
    double beta = 0;
    double omega = 0;
    // norms and thresholds
    double rnorm = 0;   ///< recursive ‖r_i‖
    double bnorm = 0;   ///< ‖b‖
    double r0norm = 0;  ///< ‖r_0‖
    double tol = 0;     ///< max(rtol·‖b‖, atol)
    double atol = 0;
    double div_limit = 0;              ///< dtol·‖r_0‖
    double scratch[4] = {0, 0, 0, 0};  ///< results of plain dot/norm2 reductions
    double sums[4] = {0, 0, 0, 0};     ///< distributed: local sums, then the global ones
    int iter = 0;                      ///< completed iterations
    int max_it = 0;
    int stop = 0;             ///< 1 once a test has stopped the iteration
    int reason = 0;           ///< a Reason
    int pending = 0;          ///< Reason to report after this iteration's x, r update
    int half = 0;             ///< BiCGStab: ‖s‖ met the tolerance, ω = 0 this iteration
    unsigned int ticket = 0;  ///< CUDA reductions: blocks done (reset by the last block)
    int pad_ = 0;
};

namespace krylov {

HEPTANE_HD inline bool finite(double v)
{
    return v - v == 0.0;
}  // false for NaN and Inf

HEPTANE_HD inline void stop_with(KrylovState& s, Reason r)
{
    s.stop = 1;
    s.reason = static_cast<int>(r);
}

/// After ‖b‖² and ‖r_0‖²: thresholds, initial scalars, and the tests at iteration 0.
HEPTANE_HD inline void init_finalize(KrylovState& s, double bb, double rr, StopParams p,
                                     double* hist)
{
    s.bnorm = sqrt(bb);
    s.r0norm = s.rnorm = sqrt(rr);
    s.tol = fmax(p.rtol * s.bnorm, p.atol);
    s.atol = p.atol;
    s.div_limit = p.dtol * s.r0norm;
    s.max_it = p.max_it;
    s.iter = 0;
    s.rho = rr;
    s.rho_old = s.alpha = s.omega = 1.0;
    s.beta = 0.0;
    s.stop = s.pending = s.half = 0;
    s.reason = static_cast<int>(Reason::iterating);
    hist[0] = s.rnorm;
    if (!finite(bb) || !finite(rr))
        stop_with(s, Reason::diverged_nan);
    else if (s.bnorm == 0.0)
        stop_with(s, Reason::converged_atol);  // the host returns x = 0
    else if (s.rnorm <= s.tol)
        stop_with(s, s.rnorm < s.atol ? Reason::converged_atol : Reason::converged_rtol);
    else if (s.max_it <= 0)
        stop_with(s, Reason::diverged_max_it);
}

/// After the x, r update of an iteration: count it, record ‖r‖, run the common tests.
/// Returns true when the iteration stopped.
HEPTANE_HD inline bool residual_finalize(KrylovState& s, double rr, double* hist)
{
    s.iter += 1;
    s.rnorm = sqrt(rr);
    hist[s.iter] = s.rnorm;
    if (!finite(rr))
        stop_with(s, Reason::diverged_nan);
    else if (s.rnorm <= s.tol || s.half)
        stop_with(s, s.rnorm < s.atol ? Reason::converged_atol : Reason::converged_rtol);
    else if (s.pending)
        stop_with(s, static_cast<Reason>(s.pending));
    else if (s.rnorm > s.div_limit)
        stop_with(s, Reason::diverged_dtol);
    if (s.stop) return true;
    return false;
}

/// The max_it test comes last, after the method's own tests of the same iteration.
HEPTANE_HD inline void max_it_finalize(KrylovState& s)
{
    if (!s.stop && s.iter >= s.max_it) stop_with(s, Reason::diverged_max_it);
}

// ---- BiCGStab --------------------------------------------------------------------------

/// α = ρ / (r̂, v)
HEPTANE_HD inline void bicgstab_alpha_finalize(KrylovState& s, double rv)
{
    if (!finite(rv))
        stop_with(s, Reason::diverged_nan);
    else if (rv == 0.0)
        stop_with(s, Reason::breakdown_rv);
    else {
        s.alpha = s.rho / rv;
        if (!finite(s.alpha)) stop_with(s, Reason::diverged_nan);
    }
}

/// ‖s‖ ≤ tol: the half step x + α p̂ already solves the system; ω = 0 finishes it.
HEPTANE_HD inline void bicgstab_s_finalize(KrylovState& s, double ss)
{
    if (!finite(ss))
        stop_with(s, Reason::diverged_nan);
    else if (sqrt(ss) <= s.tol)
        s.half = 1;
}

/// ω = (t, s) / (t, t); ω = 0 is a breakdown reported after the update x += α p̂, r = s.
HEPTANE_HD inline void bicgstab_omega_finalize(KrylovState& s, double ts, double tt)
{
    if (s.half) {
        s.omega = 0.0;
    } else if (!finite(ts) || !finite(tt)) {
        stop_with(s, Reason::diverged_nan);
    } else if (tt == 0.0) {
        s.omega = 0.0;
        s.pending = static_cast<int>(Reason::breakdown_omega);
    } else {
        s.omega = ts / tt;
        if (s.omega == 0.0) s.pending = static_cast<int>(Reason::breakdown_omega);
    }
}

/// The fused loop's one reduction point for both: (t, s), (t, t) and (s, s) summed together
/// (s is read there anyway), then the half-step test on ‖s‖ and ω. Distributed, that is one
/// all-reduce fewer per iteration than a separate (s, s) after s = r − α v; the only cost is
/// that the iteration which converges at the half step has also computed ŝ and t.
HEPTANE_HD inline void bicgstab_s_omega_finalize(KrylovState& s, double ts, double tt, double ss)
{
    bicgstab_s_finalize(s, ss);
    if (!s.stop) bicgstab_omega_finalize(s, ts, tt);
}

/// After x += α p̂ + ω ŝ, r = s − ω t with (r̂, r) and (r, r):
/// β = (ρ_new / ρ)(α / ω), ρ_old = ρ, ρ = ρ_new.
HEPTANE_HD inline void bicgstab_xr_finalize(KrylovState& s, double rhat_r, double rr, double* hist)
{
    if (residual_finalize(s, rr, hist)) return;
    if (!finite(rhat_r))
        stop_with(s, Reason::diverged_nan);
    else if (rhat_r == 0.0)
        stop_with(s, Reason::breakdown_rho);
    else {
        s.beta = (rhat_r / s.rho) * (s.alpha / s.omega);
        s.rho_old = s.rho;
        s.rho = rhat_r;
        if (!finite(s.beta)) stop_with(s, Reason::diverged_nan);
    }
    max_it_finalize(s);
}

// ---- CG ----------------------------------------------------------------------------------

/// Whether (r, z) can serve as CG's ρ: finite and positive; else the solve stops (NaN, an
/// indefinite preconditioner, or ρ = 0).
HEPTANE_HD inline bool cg_rz_usable(KrylovState& s, double rz)
{
    if (!finite(rz))
        stop_with(s, Reason::diverged_nan);
    else if (rz < 0.0)
        stop_with(s, Reason::diverged_indefinite);
    else if (rz == 0.0)
        stop_with(s, Reason::breakdown_rho);
    else
        return true;
    return false;
}

/// ρ = (r, z) at the start (z = M⁻¹ r).
HEPTANE_HD inline void cg_rho_finalize(KrylovState& s, double rz)
{
    if (cg_rz_usable(s, rz)) s.rho = rz;
}

/// α = ρ / (p, A p)
HEPTANE_HD inline void cg_alpha_finalize(KrylovState& s, double pq)
{
    if (!finite(pq))
        stop_with(s, Reason::diverged_nan);
    else if (pq <= 0.0)
        stop_with(s, Reason::diverged_indefinite);
    else
        s.alpha = s.rho / pq;
}

/// After x += α p, r −= α q with (r, r). Without a preconditioner z = r, so ρ_new = (r, r)
/// and β = ρ_new / ρ are known here already.
HEPTANE_HD inline void cg_xr_finalize(KrylovState& s, double rr, bool identity_pc, double* hist)
{
    if (residual_finalize(s, rr, hist)) return;
    if (identity_pc) {
        s.beta = rr / s.rho;
        s.rho = rr;
    }
    max_it_finalize(s);
}

/// With a preconditioner: ρ_new = (r, z), β = ρ_new / ρ.
HEPTANE_HD inline void cg_beta_finalize(KrylovState& s, double rz)
{
    if (cg_rz_usable(s, rz)) {
        s.beta = rz / s.rho;
        s.rho = rz;
    }
}

}  // namespace krylov
}  // namespace heptane
