// The solver framework shared by every Krylov method of heptane: stopping options, the
// reason a solve stopped, the Status a solve returns (docs/design.md §2-§3), and Solver<VT>, the
// interface BiCGStab, CG and GMRES implement (make_solver in solver/krylov.hpp picks one by
// name).
//
// Misuse is an error; numerics are a status. A solve throws only for misuse (sizes or
// executors that do not fit, a solver used before set_operator) and for failed device calls
// (DeviceError). Breakdown, divergence, NaN, stagnation and running out of iterations come
// back as a Status with a Reason, never as an exception and never silently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "solver/reason.hpp"

namespace heptane {

/// One line of convergence history, as a monitor sees it.
struct IterationInfo {
    int iteration = 0;             ///< 0 = the initial residual
    double residual_norm = 0;      ///< recursive ‖r_i‖ (2-norm, unpreconditioned)
    double relative_residual = 0;  ///< ‖r_i‖ / ‖b‖
    /// Where the solve can give it, writes the iterate x_i of this iteration (x's n entries,
    /// in x's order, as doubles) into host memory `out`; callable during the call only. Set
    /// by GMRES always (x_i = x0 + Z y_i formed aside, x untouched) and by the fused loops
    /// (BiCGStab, CG) and the cuBLAS reference with SolverOptions::monitor_iterate or a
    /// stop_test (x itself, read after iteration i and before i + 1 is queued), and by the
    /// mixed refinement where its inner solve gives one (x + d_i); empty otherwise.
    std::function<void(double* out)> iterate;
};

/// Called once per iteration, in order, from the thread that called solve(). On a GPU the
/// host learns the residual only every check_every iterations, so the calls arrive in
/// batches of check_every, after the fact; the solve does not wait for the monitor.
using Monitor = std::function<void(const IterationInfo&)>;

/// What a caller's own stopping test (SolverOptions::stop_test) says of an iteration.
enum class Verdict { go_on, converged, diverged };

/// A caller's own stopping test, called once per iteration (iteration 0 = the initial
/// residual) right after the monitor, with the same IterationInfo; its verdict stops the solve
/// at that very iteration with Reason::converged_by_caller or diverged_by_caller. A PETSc
/// host's KSPSetConvergenceTest reaches heptane's KSPs this way.
using StopTest = std::function<Verdict(const IterationInfo&)>;

/// The Reason a verdict stops with (Reason::iterating for go_on).
inline Reason reason_of(Verdict v) noexcept
{
    return v == Verdict::converged  ? Reason::converged_by_caller
           : v == Verdict::diverged ? Reason::diverged_by_caller
                                    : Reason::iterating;
}

/// Which inputs of unpreconditioned BiCGStab's two products the products form themselves
/// (SolverOptions::fused_inputs; solver/bicgstab/bicgstab.cpp has the traffic):
///   none     p = r + β (p − ω v) and s = r − α v by vector kernels of their own: 5 kernels and
///            19 vector passes per iteration
///   s        s formed inside t = A s: 4 kernels, 18 passes
///   p_and_s  both; p's and v's buffers then alternate with s's and t's, so a recorded CUDA
///            graph must hold an even number of iterations (else s only): 3 kernels, 17 passes
///   automatic  p_and_s up to 2^19 rows, s above: on the H200 (docs/benchmarks.md, 2026-12-04,
///            thirty-fourth session) forming both was the fastest up to 524 K rows (3-10 %
///            per iteration ahead of none on the small thesis systems, where the launches it
///            saves weigh most) and up to 3 % slower than none from 786 K rows (forming each
///            neighbour's entry from three vectors costs the product more than the passes it
///            saves); s alone was never more than 0.6 % behind none and up to 2 % ahead
enum class FusedInputs { none, s, p_and_s, automatic };
/// "none", "s", "p_and_s", "automatic".
const char* to_string(FusedInputs f) noexcept;

/// Options of every Krylov solver. The names follow PETSc's (-ksp_rtol, -ksp_atol,
/// -ksp_max_it, -ksp_divtol, -ksp_initial_guess_nonzero, -ksp_monitor).
struct SolverOptions {
    /// Converged when the recursive residual ‖r‖ ≤ max(rtol·‖b‖, atol).
    double rtol = 1e-8;
    /// Absolute tolerance on ‖r‖ (same units as b). 0 = off.
    double atol = 0.0;
    /// Diverged when ‖r‖ > dtol·‖r0‖ (PETSc's divtol, same default).
    double dtol = 1e4;
    /// At most this many iterations; 0 only evaluates the initial residual.
    int max_it = 1000;
    /// GPU: the host reads the residual every check_every iterations (one pinned copy and
    /// one event, while the next batch is already queued); the device itself tests every
    /// iteration and freezes x and r once stopped, so the result and the iteration count do
    /// not depend on check_every, only up to 2·check_every wasted iterations at the end do.
    /// 0 (the default): automatic, 1 with a multigrid preconditioner (AMG, CPR: an
    /// iteration long enough that each read-back costs nothing, while batches of 8 ran 24
    /// iterations for 16 at 459 K cells on the H100), else 8.
    /// CPU: the residual is on the host anyway; every iteration is checked. Must be ≥ 0.
    int check_every = 0;
    /// Stagnation: stop with Reason::stagnation when the smallest ‖r‖ of the last
    /// stagnation_window iterations is not below (1 − stagnation_rtol) times the smallest
    /// before them. 0 = off (the default, like PETSc). Evaluated at the host checks; on a
    /// GPU the batch already queued behind the check still runs, so the reported iteration
    /// count can be up to check_every past the check that saw the stagnation.
    int stagnation_window = 0;
    double stagnation_rtol = 1e-3;
    /// Use x as given as the initial guess; otherwise x is overwritten with 0 first.
    bool nonzero_initial_guess = false;
    /// Keep ‖r_i‖ for every iteration in Status::history.
    bool record_history = true;
    /// Recompute ‖b − A x‖ at the end (one SpMV) and report it beside the recursive norm.
    bool compute_true_residual = true;
    /// Called per iteration (see Monitor). Empty = no monitor.
    Monitor monitor;
    /// The caller's own stopping test (see StopTest), beside heptane's (set rtol = atol = 0
    /// and dtol huge for the caller's alone; breakdowns, NaN and max_it still stop). Honoured
    /// by BiCGStab, CG and GMRES on every executor and by the mixed refinement. On a GPU a
    /// test makes the host read every iteration before the next is queued (check_every = 1,
    /// no step ahead), so the solve stops exactly where the test says -- as PETSc's own KSPs,
    /// at the price of one device-to-host wait per iteration. Empty = none.
    StopTest stop_test;
    /// The monitor (or the stop_test) will ask for the iterate (IterationInfo::iterate, e.g.
    /// for ‖b − A x_i‖): on a GPU the fused loops then read every iteration before the next is
    /// queued, as with a stop_test (check_every 1, no step ahead). GMRES needs no such mode.
    bool monitor_iterate = false;
    /// GPU: replay each batch of check_every iterations from a CUDA graph (recorded once per
    /// solve while the first batch runs) when the operator, the preconditioner and the
    /// reducer are graph-safe; same kernels, same results, far fewer launches. No effect on
    /// the CPU.
    bool cuda_graphs = true;
    /// Where the operator can (BDIA-GH on a GPU: Operator::apply_fused_dots), compute the dot
    /// products that follow a product inside the product, while its result is in registers:
    /// BiCGStab's (r̂, v) and (t, s), (t, t), (s, s), CG's (p, q). Saves 2-3 vector passes per
    /// iteration; the sums come in another order, so the iterates agree with the unfused
    /// ones to rounding. No effect where the operator cannot fuse.
    bool fused_dots = true;
    /// With fused_dots on one process: the product's last CTA also adds up its partial sums
    /// and takes the step's scalars (α, ω; solver/vector/dots_finish.hpp), so no reduction
    /// kernel follows the product. False: a reduction kernel of its own does that (as on
    /// several processes, where the sums are added over them first). The same sums in another
    /// order.
    bool fused_finish = true;
    /// With fused_dots, BiCGStab without a preconditioner on one process, where the operator
    /// forms inputs (Operator::forms_step_inputs: BDIA-GH on a GPU): which of the products'
    /// inputs the products form themselves from the step's vectors instead of a vector kernel
    /// before them (FusedInputs). Same arithmetic per entry.
    FusedInputs fused_inputs = FusedInputs::automatic;
};

/// Wall-clock times of one solve in milliseconds (host clock around synchronised regions).
struct SolveTimings {
    double setup_ms = 0;          ///< workspace, initial residual and norms
    double solve_ms = 0;          ///< the iterations, up to the last host check
    double per_iteration_ms = 0;  ///< solve_ms / iterations (0 when no iteration ran)
    double true_residual_ms = 0;  ///< the final ‖b − A x‖
};

/// What a solve returns. All norms are 2-norms of unpreconditioned residuals.
struct Status {
    Reason reason = Reason::iterating;
    int iterations = 0;                  ///< iterations completed (0: stopped at x0)
    double b_norm = 0;                   ///< ‖b‖
    double initial_residual_norm = 0;    ///< ‖b − A x0‖
    double residual_norm = 0;            ///< recursive ‖r_k‖ at the stop
    double relative_residual = 0;        ///< residual_norm / ‖b‖ (0 when b = 0)
    double true_residual_norm = -1;      ///< ‖b − A x‖ recomputed; −1 when not computed
    double true_relative_residual = -1;  ///< true_residual_norm / ‖b‖; −1 when not computed
    std::vector<double> history;         ///< ‖r_i‖, i = 0..iterations (record_history)
    SolveTimings timings;
    bool cuda_graph = false;  ///< some iterations were replayed from a CUDA graph
    /// some products computed the dot products after them (Operator::apply_fused_dots)
    bool fused_dots = false;
    /// which inputs the products formed (SolverOptions::fused_inputs; none where they did not)
    FusedInputs fused_inputs = FusedInputs::none;

    bool converged() const noexcept { return is_converged(reason); }
    /// One line, e.g. "converged_rtol in 42 iterations: ‖r‖/‖b‖ = 8.1e-09 (true 8.3e-09)".
    std::string summary() const;
};

/// A Krylov solver of A x = b on vectors of type VT: Bicgstab, Cg and Gmres implement it, so
/// code that only sets the operator, the preconditioner and the options (solve_system, the
/// mixed-precision refinement, the distributed CLI) is written once for all of them.
///
///     std::unique_ptr<Solver<double>> s = make_solver<double>(SolverType::gmres, opts);
///     s->set_operator(A);
///     s->set_preconditioner(P);     // optional
///     Status st = s->solve(b, x);   // b, x in the operator's executor memory
///
/// Every solver stops on the unpreconditioned residual ‖b − A x‖ (rtol relative to ‖b‖),
/// with the options and Reasons above; errors as documented for each solver.
template <class VT>
class Solver {
public:
    virtual ~Solver() = default;

    /// The system matrix (shared ownership).
    virtual void set_operator(std::shared_ptr<const Operator<VT>> a) = 0;
    /// The system matrix, not owned: it must outlive the solves.
    virtual void set_operator(const Operator<VT>& a) = 0;
    /// The preconditioner M (applied as M⁻¹ through M.apply); nullptr = none. Must live on
    /// the operator's executor.
    virtual void set_preconditioner(std::shared_ptr<const Operator<VT>> m) = 0;
    /// The preconditioner, not owned: it must outlive the solves.
    virtual void set_preconditioner(const Operator<VT>& m) = 0;

    virtual SolverOptions& options() noexcept = 0;
    virtual const SolverOptions& options() const noexcept = 0;

    /// Solve A x = b. x is the initial guess when options().nonzero_initial_guess, otherwise
    /// it is overwritten with 0 first; on return it holds the last iterate (the one the
    /// Status describes). b is not modified.
    virtual Status solve(const Array<VT>& b, Array<VT>& x) = 0;

    /// Make now what the next solve would allocate at its start for the operator, the
    /// preconditioner and the options set now (its vectors, the partial sums of fused
    /// products, the pinned slots its checks read back): a host that sets up before it solves
    /// (PETSc's KSPSetUp) pays for them there, not in the first solve. Optional: solve() makes
    /// whatever is missing; a later solve with the same executor, rows, max_it (GMRES: restart)
    /// and preconditioner presence uses what this made. Needs the operator set.
    virtual void prepare() = 0;

    /// The method, e.g. "bicgstab (fused)", "cg", "gmres(30)".
    virtual std::string name() const = 0;

protected:
    Solver() = default;
    Solver(const Solver&) = default;
    Solver(Solver&&) noexcept = default;
    Solver& operator=(const Solver&) = default;
    Solver& operator=(Solver&&) noexcept = default;
};

/// What every Krylov solver of this folder keeps the same way: its options, the operator and
/// the preconditioner (shared, or borrowed: a no-op deleter), set through the Solver
/// interface. Bicgstab, Cg and Gmres derive from it and add their method.
template <class VT>
class SolverBase : public Solver<VT> {
public:
    void set_operator(std::shared_ptr<const Operator<VT>> a) override { a_ = std::move(a); }
    void set_operator(const Operator<VT>& a) override { a_ = borrowed(a); }
    void set_preconditioner(std::shared_ptr<const Operator<VT>> m) override { m_ = std::move(m); }
    void set_preconditioner(const Operator<VT>& m) override { m_ = borrowed(m); }
    SolverOptions& options() noexcept override { return opts_; }
    const SolverOptions& options() const noexcept override { return opts_; }

protected:
    explicit SolverBase(SolverOptions options) : opts_(std::move(options)) {}
    static std::shared_ptr<const Operator<VT>> borrowed(const Operator<VT>& a)
    {
        return std::shared_ptr<const Operator<VT>>(&a, [](const Operator<VT>*) {});
    }
    SolverOptions opts_;
    std::shared_ptr<const Operator<VT>> a_;
    std::shared_ptr<const Operator<VT>> m_;
};

}  // namespace heptane
