// Iterative refinement of a mixed-precision solve against the fp64 matrix (solve_system,
// the PETSc plugin): the fp32-valued solver finds corrections, the residual is the fp64
// matrix's, so the result meets rtol like a double solve.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "core/operator.hpp"
#include "solver/solver.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

/// Mixed precision with iterative refinement: a solver over the fp32-valued matrix (fp64
/// vectors: any Solver<double> -- Bicgstab, Cg, Gmres, what make_solver returns -- or
/// anything else with options() and solve(b, x) -> Status, such as the PETSc plugin's
/// correction adapter) solves
/// for corrections, A d = r, of the residual r = b − A x taken with the fp64 matrix (same
/// executor), x += d, until ‖r‖ ≤ max(o.rtol ‖b‖, o.atol) -- what a double solve stops on. A
/// correction is asked for a reduction of at most 1e-6: fp32 values (unit roundoff 6e-8)
/// leave the true residual about that far behind the recursive one, so iterations beyond it
/// would be spent on the rounding of A. Stops with Reason::stagnation when a correction does
/// not halve ‖r‖ (the floor of the fp32 values for this system), with the inner solve's
/// reason when that fails, with diverged_max_it after o.max_it iterations in all. The Status
/// counts every inner iteration; its residuals (and true residuals) are the fp64 matrix's;
/// its history chains the inner histories. o.monitor and o.stop_test see the iterations
/// numbered across the corrections (a stop_test verdict ends the refinement with it), and
/// their IterationInfo::iterate, where the inner solve gives one, is x + d_i. The residual
/// and correction vectors are kept for the next solve of the same size on the same executor (a
/// Newton loop allocates them once).
class MixedRefinement {
public:
    /// Solve A x = b; s.options() is overwritten. corrections(): the inner solves run.
    /// `S`: Solver<double> (virtual calls) or any type with the same options()/solve().
    template <class S>
    Status solve(S& s, const Operator<double>& a64, const Array<double>& b, Array<double>& x,
                 const SolverOptions& o)
    {
        const auto exec = a64.executor();
        const index_t n = a64.rows();
        if (!ops_ || ops_->exec() != exec || r_.size() != std::size_t(n) ||
            reducer_ != a64.reducer()) {
            // several ranks: the norms summed over them as the fp64 operator's products are
            reducer_ = a64.reducer();
            ops_ = std::make_unique<VectorOps<double>>(exec, 0, reducer_);
            r_ = Array<double>(exec, std::size_t(n));
            d_ = Array<double>(exec, std::size_t(n));
        }
        VectorOps<double>& ops = *ops_;
        double* r = r_.data();
        Status total;
        const auto t0 = std::chrono::steady_clock::now();
        total.b_norm = ops.norm2(n, b.data());
        const double tol = std::max(o.rtol * total.b_norm, o.atol);
        if (o.nonzero_initial_guess) {
            a64.apply(x.data(), r);                // r = A x
            ops.axpby(n, 1.0, b.data(), -1.0, r);  // r = b − A x
        } else {
            ops.fill(n, 0.0, x.data());
            ops.copy(n, b.data(), r);
        }
        double rnorm = ops.norm2(n, r);
        total.initial_residual_norm = rnorm;
        total.history.push_back(rnorm);
        int its = 0;
        corrections_ = 0;
        while (true) {
            if (!(rnorm > tol)) {
                total.reason = rnorm < o.atol ? Reason::converged_atol : Reason::converged_rtol;
                if (!std::isfinite(rnorm)) total.reason = Reason::diverged_nan;
                break;
            }
            if (its >= o.max_it) {
                total.reason = Reason::diverged_max_it;
                break;
            }
            // the inner iterate is a correction d_i: x_i = x + d_i
            auto with_x = [&](const IterationInfo& info) -> std::function<void(double*)> {
                if (!info.iterate) return nullptr;
                return [&, inner = info.iterate](double* out) {
                    inner(out);
                    xh_.resize(std::size_t(n));
                    copy_bytes(*exec, x.data(), *cpu_executor(), xh_.data(),
                               sizeof(double) * std::size_t(n));
                    for (index_t i = 0; i < n; ++i) out[i] += xh_[std::size_t(i)];
                };
            };
            SolverOptions io = o;
            io.rtol = std::max(tol / rnorm, 1e-6);
            io.atol = 0;
            io.max_it = o.max_it - its;
            io.nonzero_initial_guess = false;
            io.compute_true_residual = false;
            if (o.monitor) {
                io.monitor = [&, offset = its](const IterationInfo& info) {
                    if (info.iteration == 0 && offset > 0) return;  // reported by the last one
                    IterationInfo j = info;
                    j.iteration += offset;
                    j.relative_residual = total.b_norm > 0 ? info.residual_norm / total.b_norm : 0;
                    j.iterate = with_x(info);
                    o.monitor(j);
                };
            }
            if (o.stop_test) {  // the caller's test sees the iterations as the monitor does
                io.stop_test = [&, offset = its](const IterationInfo& info) {
                    if (info.iteration == 0 && offset > 0) return Verdict::go_on;  // seen before
                    IterationInfo j = info;
                    j.iteration += offset;
                    j.relative_residual = total.b_norm > 0 ? info.residual_norm / total.b_norm : 0;
                    j.iterate = with_x(info);
                    return o.stop_test(j);
                };
            }
            s.options() = io;
            const Status st = s.solve(r_, d_);
            its += st.iterations;
            if (st.history.size() > 1)
                total.history.insert(total.history.end(), st.history.begin() + 1, st.history.end());
            total.cuda_graph = total.cuda_graph || st.cuda_graph;
            total.fused_dots = total.fused_dots || st.fused_dots;
            total.timings.setup_ms += st.timings.setup_ms;
            ops.axpby(n, 1.0, d_.data(), 1.0, x.data());  // x += d
            a64.apply(x.data(), r);
            ops.axpby(n, 1.0, b.data(), -1.0, r);  // r = b − A x, fp64 matrix
            const double before = rnorm;
            rnorm = ops.norm2(n, r);
            ++corrections_;
            if (!st.converged() || st.reason == Reason::converged_by_caller) {
                total.reason = st.reason;
                break;
            }
            if (rnorm > tol && !(rnorm < 0.5 * before)) {
                total.reason = Reason::stagnation;
                break;
            }
        }
        total.iterations = its;
        total.residual_norm = rnorm;
        total.relative_residual = total.b_norm > 0 ? rnorm / total.b_norm : 0;
        total.true_residual_norm = rnorm;
        total.true_relative_residual = total.relative_residual;
        total.timings.solve_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count() -
            total.timings.setup_ms;
        total.timings.per_iteration_ms = its > 0 ? total.timings.solve_ms / its : 0;
        if (!o.record_history) total.history.clear();
        return total;
    }
    /// The corrections the last solve ran (0: x0 met the tolerance already).
    int corrections() const noexcept { return corrections_; }

private:
    std::unique_ptr<VectorOps<double>> ops_;
    const Reducer* reducer_ = nullptr;  // ops_'s (a64's)
    Array<double> r_, d_;
    std::vector<double> xh_;  // x on the host for IterationInfo::iterate
    int corrections_ = 0;
};

}  // namespace heptane
