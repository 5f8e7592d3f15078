// Flexible GMRES(m) written once against Operator::apply, the block kernels of
// solver/gmres/gmres_kernels.hpp and the vector kernels (solver/vector/vector_ops.hpp).
//
//     cycle:  r = b − A x,  β = ‖r‖,  v_0 = r / β,  g = β e_1
//     step j: z_j = M⁻¹ v_j                          preconditioner (skipped for M = I)
//             w   = A z_j                            SpMV
//             h   = V_j^T w, ‖w‖²;  w −= V_j h       multi-dot, multi-axpy     CGS, pass 1
//             h' = V_j^T w;  w −= V_j h', ‖w‖²       multi-dot, multi-axpy     CGS, pass 2
//             v_{j+1} = w / h_{j+1,j}                scale, h_{j+1,j} = ‖w‖ read on the device
//             H[:, j] = h + h' read back (pinned); on a GPU step j + 1 is queued first
//             Givens rotations on the host: |g_{j+1}| = ‖b − A x_j‖, the tests
//     end:    R y = g (back substitution on the host),  x += Z_j y   multi-axpy
//
// Traffic of step j (k = j + 1 basis vectors): one product (matrix bytes, z_j read, w
// written) and 4k + 6 further vector passes, plus one preconditioner application and, for
// j < m − 1, 2 passes of the scaling; per cycle the update x += Z y (m + 2 passes), v_0's
// scaling and the restart. The whole count, per iteration: solver/gmres/gmres_traffic.hpp.
#include "solver/gmres/gmres.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "solver/gmres/gmres_kernels.hpp"
#include "solver/krylov_driver.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

namespace {

/// values[0..count) (executor memory) summed over the processes of a distributed operator,
/// in calls of at most 8 values (Reducer::sum's limit); nothing on one process.
void global_sum(const Reducer* reducer, const Executor& exec, double* values, int count)
{
    if (!reducer) return;
    for (int k = 0; k < count; k += 8) reducer->sum(exec, values + k, std::min(8, count - k));
}

}  // namespace

template <class VT>
struct Gmres<VT>::Workspace {
    explicit Workspace(const detail::WorkspaceKey& k)
        : key(k),
          ops(k.exec, 0, k.reducer),
          V(k.exec, std::size_t(k.extent + 1) * std::size_t(k.n)),
          Z(k.exec, k.precond ? std::size_t(k.extent) * std::size_t(k.n) : 0),
          sums(k.exec, 2 * std::size_t(k.extent + 2)),
          y(k.exec, std::size_t(k.extent)),
          scratch(k.exec, dispatch_executor(*k.exec,
                                            [&](const auto& ex) {
                                                return kernels::gmres_scratch_size(ex, k.n,
                                                                                   k.extent + 2);
                                            })),
          H(std::size_t(k.extent + 1) * std::size_t(k.extent)),
          cs(std::size_t(k.extent)),
          sn(std::size_t(k.extent)),
          g(std::size_t(k.extent + 1)),
          yh(std::size_t(k.extent)),
          mirror{
              std::make_unique<HostMirror>(k.exec, sizeof(double) * 2 * std::size_t(k.extent + 2)),
              std::make_unique<HostMirror>(k.exec, sizeof(double) * 2 * std::size_t(k.extent + 2))}
    {
    }
    detail::WorkspaceKey key;  // the restart m as the extent
    VectorOps<VT> ops;
    Array<VT> V;            // the Krylov basis v_0 .. v_m, column j at j·n
    Array<VT> Z;            // z_j = M⁻¹ v_j, j < m (empty without a preconditioner)
    Array<double> sums;     // pass 1: h[0..j], (w, w) at j + 1; pass 2 from m + 2 on
    Array<double> y;        // the least-squares solution, for x += Z y
    Array<VT> xi;           // x0 + Z y_i for IterationInfo::iterate (made on first use)
    Array<double> scratch;  // reduction partials of the block kernels
    // host: the rotated Hessenberg (R, column-major, leading dimension m + 1), the Givens
    // rotations, the rotated right-hand side g, y
    std::vector<double> H, cs, sn, g, yh;
    // the sums of step j read back into mirror[j % 2] (pinned on a GPU), so that step j + 1
    // can be queued before the host reads step j's
    std::unique_ptr<HostMirror> mirror[2];
};

template <class VT>
Gmres<VT>::Gmres(SolverOptions options, int restart) : SolverBase<VT>(std::move(options))
{
    set_restart(restart);
}
template <class VT>
Gmres<VT>::~Gmres() = default;
template <class VT>
Gmres<VT>::Gmres(Gmres&&) noexcept = default;
template <class VT>
Gmres<VT>& Gmres<VT>::operator=(Gmres&&) noexcept = default;

template <class VT>
void Gmres<VT>::set_restart(int m)
{
    HEPTANE_ENSURE(m >= 1, InputError, "Gmres: restart (" << m << ") must be >= 1");
    restart_ = m;
}

template <class VT>
std::string Gmres<VT>::name() const
{
    return "gmres(" + std::to_string(restart_) + ")";
}

template <class VT>
void Gmres<VT>::prepare()
{
    HEPTANE_ENSURE(a_, InputError, "Gmres::prepare: no operator (call set_operator first)");
    const Operator<VT>* M = detail::applied_preconditioner(m_);
    detail::workspace_for(ws_, detail::WorkspaceKey{a_->executor(), a_->rows(), restart_,
                                                    M != nullptr, a_->reducer()});
}

template <class VT>
Status Gmres<VT>::solve(const Array<VT>& b_arr, Array<VT>& x_arr)
{
    detail::check_operands("Gmres", a_.get(), m_.get(), b_arr, x_arr);
    detail::check_options(opts_);

    detail::Stopwatch setup_clock;
    const Operator<VT>& A = *a_;
    const Operator<VT>* M = detail::applied_preconditioner(m_);
    const index_t n = A.rows();
    const int m = restart_;
    const std::shared_ptr<const Executor> exec = A.executor();
    const Reducer* reducer = A.reducer();
    Workspace& w =
        detail::workspace_for(ws_, detail::WorkspaceKey{exec, n, m, M != nullptr, reducer});
    VectorOps<VT>& ops = w.ops;
    const std::size_t ld = std::size_t(n);
    const VT* b = b_arr.data();
    VT* x = x_arr.data();
    VT* V = w.V.data();
    VT* Z = M ? w.Z.data() : V;  // without M, z_j = v_j
    double* pass1 = w.sums.data();
    double* pass2 = pass1 + (m + 2);
    double* scratch = w.scratch.data();
    std::vector<double>&H = w.H, &cs = w.cs, &sn = w.sn, &g = w.g, &yh = w.yh;
    const std::size_t ldh = std::size_t(m) + 1;

    // out[0..k) = V_k^T v (+ (v, v) at out[k]), summed over the processes
    auto multi_dot = [&](int k, const VT* v, bool with_norm, double* out) {
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::gmres_multi_dot(e, n, k, V, v, with_norm, out, scratch);
        });
        global_sum(reducer, *exec, out, k + (with_norm ? 1 : 0));
    };
    // target += alpha · basis_k coef (and ‖target‖² at norm_out)
    auto multi_axpy = [&](int k, const VT* basis, const double* coef, double alpha, VT* target,
                          double* norm_out) {
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::gmres_multi_axpy(e, n, k, basis, coef, alpha, target, norm_out, scratch);
        });
        if (norm_out) global_sum(reducer, *exec, norm_out, 1);
    };

    detail::initial_residual(A, ops, opts_, b, x, V);  // r0 = b − A x0 in v_0
    const double bnorm = ops.norm2(n, b);
    double beta = ops.norm2(n, V);
    const double r0norm = beta;
    // the stopping rules of krylov::init_finalize / residual_finalize (krylov_state.hpp)
    const double tol = std::max(opts_.rtol * bnorm, opts_.atol);
    const double div_limit = opts_.dtol * r0norm;
    auto converged = [&](double rn) {
        return rn < opts_.atol ? Reason::converged_atol : Reason::converged_rtol;
    };
    std::vector<double> history, prefix_min;
    // what SolverOptions::stop_test said of the last iteration emitted (GMRES's host loop
    // sees every iteration before it decides on the next, so the stop is exact)
    Reason caller_stop = Reason::iterating;
    // y of R y = g over the cycle's first `cols` columns, into yh
    auto solve_y = [&](int cols) {
        for (int i = cols - 1; i >= 0; --i) {
            double s = g[std::size_t(i)];
            for (int l = i + 1; l < cols; ++l)
                s -= H[std::size_t(l) * ldh + std::size_t(i)] * yh[std::size_t(l)];
            yh[std::size_t(i)] = s / H[std::size_t(i) * ldh + std::size_t(i)];
        }
    };
    // IterationInfo::iterate: x_i = x + Z y_i over the cycle's `iterate_cols` columns so far,
    // formed aside (x itself changes only at the end of a cycle). Stream order puts it after
    // the step queued ahead, which writes none of the columns it reads.
    int iterate_cols = 0;
    auto iterate = [&](double* out) {
        const VT* src = x;
        if (iterate_cols > 0) {
            if (w.xi.size() != std::size_t(n)) w.xi = Array<VT>(exec, std::size_t(n));
            solve_y(iterate_cols);
            copy_bytes(*cpu_executor(), yh.data(), *exec, w.y.data(),
                       sizeof(double) * std::size_t(iterate_cols));
            ops.copy(n, x, w.xi.data());
            multi_axpy(iterate_cols, Z, w.y.data(), 1.0, w.xi.data(), nullptr);
            src = w.xi.data();
        }
        detail::iterate_to_host(*exec, src, n, out);
    };
    auto emit = [&](int i, double rn) {
        history.push_back(rn);
        prefix_min.push_back(prefix_min.empty() ? rn : std::min(prefix_min.back(), rn));
        if (!opts_.monitor && !opts_.stop_test) return;
        IterationInfo info;
        info.iteration = i;
        info.residual_norm = rn;
        info.relative_residual = bnorm > 0 ? rn / bnorm : 0.0;
        info.iterate = iterate;
        if (opts_.monitor) opts_.monitor(info);
        if (opts_.stop_test) caller_stop = reason_of(opts_.stop_test(info));
    };
    // as detail::KrylovDriver: min ‖r‖ of the last window not below (1 − rtol)·(min before)
    auto stagnated = [&] {
        const int win = opts_.stagnation_window;
        const int seen = int(history.size()) - 1;
        if (win <= 0 || seen < win) return false;
        double recent = history[std::size_t(seen)];
        for (int i = seen - win + 1; i <= seen; ++i)
            recent = std::min(recent, history[std::size_t(i)]);
        return !(recent < (1.0 - opts_.stagnation_rtol) * prefix_min[std::size_t(seen - win)]);
    };

    Reason reason = Reason::iterating;
    int it = 0;
    double rnorm = beta;
    emit(0, beta);
    if (!std::isfinite(bnorm) || !std::isfinite(beta)) {
        reason = Reason::diverged_nan;
    } else if (bnorm == 0.0) {
        reason = Reason::converged_atol;
        ops.fill(n, VT(0), x);  // b = 0: x = 0
    } else if (beta <= tol) {
        reason = converged(beta);
    } else if (caller_stop != Reason::iterating) {
        reason = caller_stop;
    } else if (opts_.max_it <= 0) {
        reason = Reason::diverged_max_it;
    }
    Status st;
    st.timings.setup_ms = setup_clock.ms();

    detail::Stopwatch solve_clock;
    // h_{j+1,j} at most this fraction of ‖A z_j‖: A z_j is in span(V_j) to working precision
    const double invariant_ratio = std::numeric_limits<VT>::epsilon();
    // On a GPU steps run one ahead of the host: step j + 1 is queued before the host waits for
    // step j's sums, so the device does not idle while the host rotates column j (the next
    // basis vector is scaled on the device, kernels::gmres_scale_next; stream order keeps
    // every operator correct, even one that copies to the host). Where column j ends the
    // solve or the cycle, step j + 1's work is dropped: one product and one preconditioner
    // application more than the iterations counted. One step at a time on the CPU, and for a
    // preconditioner of the caller's that is neither heptane's nor graph-safe (e.g. a host
    // callback: an application it could not overlap, and it may count them), and for a
    // host-paced A (out of core: a dropped step would cost a whole streamed product).
    const bool ahead = exec->is_cuda() && !A.host_paced() &&
                       (!M || M->graph_safe() || dynamic_cast<const Preconditioner<VT>*>(M));
    // queue step j: z_j, w = A z_j, CGS2 against v_0 .. v_j, the sums' read-back, v_{j+1}
    auto queue_step = [&](int j) {
        const int k = j + 1;
        VT* vj = V + std::size_t(j) * ld;
        VT* wv = V + std::size_t(k) * ld;
        VT* zj = Z + std::size_t(j) * ld;
        if (M) M->apply(vj, zj);  // z_j = M⁻¹ v_j
        A.apply(zj, wv);          // w = A z_j
        // CGS2: two classical Gram-Schmidt passes against v_0 .. v_j
        multi_dot(k, wv, true, pass1);
        multi_axpy(k, V, pass1, -1.0, wv, nullptr);
        multi_dot(k, wv, false, pass2);
        multi_axpy(k, V, pass2, -1.0, wv, pass2 + k);
        HostMirror& hm = *w.mirror[j % 2];
        hm.copy_async(pass1, 0, sizeof(double) * std::size_t(m + 2 + k + 1));
        hm.record();
        if (k < m)  // v_{j+1} = w / h_{j+1,j}
            dispatch_executor(*exec, [&](const auto& e) {
                kernels::gmres_scale_next(e, n, pass1 + k, pass2 + k, invariant_ratio, wv);
            });
    };
    while (reason == Reason::iterating) {
        ops.axpby(n, VT(1.0 / beta), V, VT(0), V);  // v_0 = r / β
        std::fill(g.begin(), g.end(), 0.0);
        g[0] = beta;
        int cols = 0;            // columns of this cycle in the least-squares solution
        bool end_cycle = false;  // an invariant space without convergence: restart
        for (int j = 0; j < m && reason == Reason::iterating && !end_cycle; ++j) {
            const int k = j + 1;
            if (j == 0 || !ahead) queue_step(j);
            if (ahead && k < m) queue_step(k);
            HostMirror& hm = *w.mirror[j % 2];
            hm.wait();
            const double* h1 = static_cast<const double*>(hm.data());
            const double* h2 = h1 + (m + 2);
            double* h = H.data() + std::size_t(j) * ldh;
            bool finite = std::isfinite(h1[k]) && std::isfinite(h2[k]);
            for (int i = 0; i < k; ++i) {
                h[i] = h1[i] + h2[i];
                finite = finite && std::isfinite(h[i]);
            }
            if (!finite) {  // x keeps the iterate of the columns before j
                reason = Reason::diverged_nan;
                break;
            }
            const double az_norm = std::sqrt(h1[k]);
            const double h_next = std::sqrt(std::max(h2[k], 0.0));
            h[k] = h_next;
            const bool invariant = !(h_next > invariant_ratio * az_norm);
            for (int i = 0; i < j; ++i) {  // the rotations so far
                const double t = cs[std::size_t(i)] * h[i] + sn[std::size_t(i)] * h[i + 1];
                h[i + 1] = -sn[std::size_t(i)] * h[i] + cs[std::size_t(i)] * h[i + 1];
                h[i] = t;
            }
            const double d = std::hypot(h[j], h[k]);
            double est;
            if (d == 0.0) {
                // A z_j = 0 within the space: column j adds nothing; solve without it
                cs[std::size_t(j)] = 1.0;
                sn[std::size_t(j)] = 0.0;
                cols = j;
                est = std::abs(g[std::size_t(j)]);
            } else {
                cs[std::size_t(j)] = h[j] / d;
                sn[std::size_t(j)] = h[k] / d;
                h[j] = d;
                h[k] = 0.0;
                g[std::size_t(k)] = -sn[std::size_t(j)] * g[std::size_t(j)];
                g[std::size_t(j)] = cs[std::size_t(j)] * g[std::size_t(j)];
                cols = k;
                est = std::abs(g[std::size_t(k)]);  // = ‖b − A x_j‖ (right preconditioning)
            }
            ++it;
            rnorm = est;
            iterate_cols = cols;
            emit(it, est);
            if (!std::isfinite(est)) {
                reason = Reason::diverged_nan;
            } else if (est <= tol) {
                reason = converged(est);
            } else if (invariant) {
                // no new direction: restart from the true residual if this cycle made
                // progress, else the method has broken down (A M⁻¹ singular on the space)
                if (cols > 0 && est < beta)
                    end_cycle = true;
                else
                    reason = Reason::breakdown_rho;
            } else if (est > div_limit) {
                reason = Reason::diverged_dtol;
            }
            if (reason == Reason::iterating && caller_stop != Reason::iterating)
                reason = caller_stop;  // the caller's test (heptane's own first at one iteration)
            if (reason == Reason::iterating && it >= opts_.max_it) reason = Reason::diverged_max_it;
            if (reason == Reason::iterating && stagnated()) reason = Reason::stagnation;
        }
        // x += Z y with R y = g
        iterate_cols = 0;  // x is x_i again once the cycle's columns are added
        if (cols > 0) {
            solve_y(cols);
            copy_bytes(*cpu_executor(), yh.data(), *exec, w.y.data(),
                       sizeof(double) * std::size_t(cols));
            multi_axpy(cols, Z, w.y.data(), 1.0, x, nullptr);
        }
        if (reason != Reason::iterating) break;
        // restart from the true residual
        A.apply(x, V);
        ops.axpby(n, VT(1), b, VT(-1), V);
        beta = ops.norm2(n, V);
        if (!std::isfinite(beta)) {
            reason = Reason::diverged_nan;
        } else if (beta <= tol) {
            reason = converged(beta);
            rnorm = beta;
        } else if (beta > div_limit) {
            reason = Reason::diverged_dtol;
            rnorm = beta;
        }
    }
    st.reason = reason;
    st.iterations = it;
    st.b_norm = bnorm;
    st.initial_residual_norm = r0norm;
    st.residual_norm = rnorm;
    st.relative_residual = bnorm > 0 ? rnorm / bnorm : 0.0;
    if (opts_.record_history) st.history = std::move(history);
    detail::set_solve_time(st, solve_clock);
    detail::true_residual(A, ops, opts_, b, x, V, st);
    return st;
}

template class Gmres<double>;
template class Gmres<float>;

}  // namespace heptane
