// CG written once against Operator::apply and the fused steps of
// solver/vector/vector_kernels.hpp.
//
//     start:  r = b − A x0;  z = M⁻¹ r;  p = z;  ρ = (r, z)
//     loop:   q  = A p                               SpMV        matrix + 2 passes
//             α  = ρ / (p, q)                        alpha       2 passes (fused: 0)
//             x += α p,  r −= α q,  (r, r) → tests   update_xr   6 passes
//             z  = M⁻¹ r                             precondition (skipped for M = I: z = r)
//             ρ' = (r, z),  β = ρ'/ρ                 beta        2 passes (M ≠ I only; for
//                                                                M = I, (r, r) gives ρ')
//             p  = z + β p                           update_p    3 passes
//
// Traffic per iteration without preconditioner: matrix bytes + 13 · n·sizeof(VT), or 11
// where the operator fuses (p, q) into the product (Operator::apply_fused_dots: p is the
// product's own x, so the sum costs no pass); with a preconditioner: + 1 application + 2
// passes. Launches: 3 (4 with M) + SpMV (+ M).
#include "solver/cg/cg.hpp"

#include "solver/krylov_driver.hpp"
#include "solver/precond/preconditioner.hpp"

namespace heptane {

template <class VT>
struct Cg<VT>::Workspace {
    Workspace(std::shared_ptr<const Executor> e, index_t n_, int max_it_, bool precond_,
              const Reducer* reducer_)
        : exec(e),
          n(n_),
          max_it(max_it_),
          precond(precond_),
          reducer(reducer_),
          ops(e, max_it_, reducer_),
          r(e, n_),
          z(e, precond_ ? n_ : 0),
          p(e, n_),
          q(e, n_)
    {
    }
    bool fits(const std::shared_ptr<const Executor>& e, index_t n_, int max_it_, bool precond_,
              const Reducer* reducer_) const
    {
        return e.get() == exec.get() && n_ == n && max_it_ == max_it && precond_ == precond &&
               reducer_ == reducer;
    }
    std::shared_ptr<const Executor> exec;
    index_t n;
    int max_it;
    bool precond;
    const Reducer* reducer;
    VectorOps<VT> ops;
    detail::CheckMirrors mirrors;
    BatchGraph graph;
    Array<VT> r, z, p, q;
    Array<double> partials;  // a fused product's partial sums (Operator::apply_fused_dots)
};

template <class VT>
Cg<VT>::Cg(SolverOptions options) : SolverBase<VT>(std::move(options))
{
}
template <class VT>
Cg<VT>::~Cg() = default;
template <class VT>
Cg<VT>::Cg(Cg&&) noexcept = default;
template <class VT>
Cg<VT>& Cg<VT>::operator=(Cg&&) noexcept = default;

template <class VT>
Status Cg<VT>::solve(const Array<VT>& b_arr, Array<VT>& x_arr)
{
    detail::check_operands("Cg", a_.get(), m_.get(), b_arr, x_arr);
    detail::check_options(opts_);

    detail::Stopwatch setup_clock;
    const Operator<VT>& A = *a_;
    const bool identity = is_identity_preconditioner(m_.get());
    const index_t n = A.rows();
    if (!ws_ || !ws_->fits(A.executor(), n, opts_.max_it, !identity, A.reducer()))
        ws_ = std::make_unique<Workspace>(A.executor(), n, opts_.max_it, !identity, A.reducer());
    Workspace& w = *ws_;
    VectorOps<VT>& ops = w.ops;
    const VT* b = b_arr.data();
    VT* x = x_arr.data();
    VT *r = w.r.data(), *p = w.p.data(), *q = w.q.data();
    VT* z = identity ? r : w.z.data();

    if (opts_.nonzero_initial_guess) {
        A.apply(x, r);
        ops.axpby(n, VT(1), b, VT(-1), r);  // r = b − A x0
    } else {
        ops.fill(n, VT(0), x);
        ops.copy(n, b, r);
    }
    ops.cg_init(n, b, r, detail::stop_params(opts_));  // ‖b‖, ‖r0‖, tests at iteration 0
    if (!identity) m_->apply(r, z);                    // z = M⁻¹ r
    ops.cg_start(n, r, z, p);                          // p = z, ρ = (r, z)
    detail::FusedDots fused(A, opts_.fused_dots, w.partials);
    const bool graphs = detail::graphs_allowed(opts_, A, identity ? nullptr : m_.get());
    detail::KrylovDriver<VT> driver(
        ops, w.mirrors, opts_, detail::effective_check_every(opts_, identity ? nullptr : m_.get()),
        graphs ? &w.graph : nullptr);
    const bool stopped = driver.start();
    if (stopped && driver.initial_state().bnorm == 0.0) ops.fill(n, VT(0), x);
    Status st;
    st.timings.setup_ms = setup_clock.ms();

    detail::Stopwatch solve_clock;
    if (!stopped) {
        driver.run([&] {
            // q = A p, α = ρ/(p, q)
            fused.apply(
                A, p, q, p, 1,
                [&](index_t parts, const double* sums) { ops.cg_alpha_partials(parts, sums); },
                [&] { ops.cg_alpha(n, p, q); });
            ops.cg_update_xr(n, p, q, x, r, identity);  // x += αp, r −= αq, ‖r‖
            if (!identity) {
                m_->apply(r, z);       // z = M⁻¹ r
                ops.cg_beta(n, r, z);  // β = (r, z)/ρ
            }
            ops.cg_update_p(n, z, p);  // p = z + βp
        });
    }
    driver.finish(st);
    st.cuda_graph = driver.used_graph();
    st.fused_dots = fused.used();
    st.timings.solve_ms = solve_clock.ms();
    st.timings.per_iteration_ms = st.iterations > 0 ? st.timings.solve_ms / st.iterations : 0.0;

    if (opts_.compute_true_residual) {
        detail::Stopwatch clock;
        A.apply(x, q);
        ops.axpby(n, VT(1), b, VT(-1), q);
        st.true_residual_norm = ops.norm2(n, q);
        st.true_relative_residual =
            st.b_norm > 0 ? st.true_residual_norm / st.b_norm : st.true_residual_norm;
        st.timings.true_residual_ms = clock.ms();
    }
    return st;
}

template class Cg<double>;
template class Cg<float>;

}  // namespace heptane
