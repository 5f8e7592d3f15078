// BiCGStab written once against Operator::apply and the fused steps of
// solver/vector/vector_kernels.hpp; the executor decides where it runs.
//
// One iteration (right preconditioning, M⁻¹ applied to the search directions):
//
//     p  = r + β (p − ω v)                 update_p      4 passes
//     p̂  = M⁻¹ p                           precondition  (skipped for M = I: p̂ = p)
//     v  = A p̂                             SpMV          matrix + 2 passes
//     α  = ρ / (r̂, v)                      alpha         2 passes   (fused: +1 in the SpMV)
//     s  = r − α v                         update_s      3 passes
//     ŝ  = M⁻¹ s                           precondition  (skipped for M = I)
//     t  = A ŝ                             SpMV          matrix + 2 passes
//     (s, s): ‖s‖ ≤ tol → ω = 0 (half step) omega        2 passes   (fused: 0, or +1 with M ≠ I)
//     ω  = (t, s) / (t, t)                 (one reduction of the three sums)
//     x += α p̂ + ω ŝ,  r = s − ω t,        update_xr     7 passes (8 with M ≠ I)
//     (r̂, r), (r, r) → ρ, β, tests
//
// Traffic per iteration without preconditioner: 2 × matrix bytes + 22 · n·sizeof(VT), or
// 19 where the operator fuses the dot products into the product (Operator::apply_fused_dots,
// SolverOptions::fused_dots: BDIA-GH on a GPU): the alpha and omega steps then add up the
// product's per-CTA partial sums instead of reading v, r̂, t and s again (t = A s reads s as
// its own x: no pass at all). BENCHMARKS.md counts ≈ 25 passes for one kernel per vector
// operation and 15–17 when fused into the SpMVs. With a preconditioner: + 2 applications,
// + 1 pass.
// Launches per iteration: 5 vector kernels (3 reductions whose last block computes the
// scalars: α; ‖s‖ with ω; ρ with ‖r‖ -- and 2 element-wise; fused, the α and ω ones only
// reduce the partials) + 2 SpMV (+ 2 preconditioner applications); the host is not involved
// until the check. Distributed, each of the 3 reduction points is one all-reduce.
#include "solver/bicgstab/bicgstab.hpp"

#include "solver/bicgstab/bicgstab_reference.hpp"
#include "solver/krylov_driver.hpp"
#include "solver/precond/preconditioner.hpp"

namespace heptane {

const char* to_string(BicgstabImpl impl) noexcept
{
    switch (impl) {
        case BicgstabImpl::fused:
            return "fused";
        case BicgstabImpl::reference:
            return "reference";
    }
    return "?";
}

BicgstabImpl parse_bicgstab_impl(const std::string& name)
{
    if (name == "fused") return BicgstabImpl::fused;
    if (name == "reference" || name == "thesis") return BicgstabImpl::reference;
    HEPTANE_THROW(InputError,
                  "unknown BiCGStab implementation '" << name << "' (choices: fused, reference)");
}

template <class VT>
struct Bicgstab<VT>::Workspace {
    Workspace(std::shared_ptr<const Executor> e, index_t n_, int max_it_, bool precond_,
              const Reducer* reducer_)
        : exec(e),
          n(n_),
          max_it(max_it_),
          precond(precond_),
          reducer(reducer_),
          ops(e, max_it_, reducer_),
          r(e, n_),
          r_hat(e, n_),
          p(e, n_),
          v(e, n_),
          s(e, n_),
          t(e, n_),
          p_hat(e, precond_ ? n_ : 0),
          s_hat(e, precond_ ? n_ : 0)
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
    Array<VT> r, r_hat, p, v, s, t, p_hat, s_hat;
    Array<double> partials;  // a fused product's partial sums (Operator::apply_fused_dots)
};

template <class VT>
Bicgstab<VT>::Bicgstab(SolverOptions options, BicgstabImpl impl)
    : SolverBase<VT>(std::move(options)), impl_(impl)
{
}
template <class VT>
Bicgstab<VT>::~Bicgstab() = default;
template <class VT>
Bicgstab<VT>::Bicgstab(Bicgstab&&) noexcept = default;
template <class VT>
Bicgstab<VT>& Bicgstab<VT>::operator=(Bicgstab&&) noexcept = default;

template <class VT>
std::string Bicgstab<VT>::name() const
{
    return std::string("bicgstab (") + to_string(impl_) + ")";
}

template <class VT>
Status Bicgstab<VT>::solve(const Array<VT>& b_arr, Array<VT>& x_arr)
{
    detail::check_operands("Bicgstab", a_.get(), m_.get(), b_arr, x_arr);
    detail::check_options(opts_);
    if (impl_ == BicgstabImpl::reference) {
        HEPTANE_ENSURE(!a_->reducer(), NotSupported,
                       "the reference BiCGStab (cuBLAS dots) runs on one process; use "
                       "BicgstabImpl::fused with a distributed operator");
        if constexpr (std::is_same_v<VT, double>) {
            return detail::bicgstab_reference_solve(*a_, m_.get(), b_arr, x_arr, opts_);
        } else {
            HEPTANE_THROW(NotSupported,
                          "the reference BiCGStab (cuBLAS Ddot/Daxpy) is double only; use "
                          "BicgstabImpl::fused for float");
        }
    }

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
    VT *r = w.r.data(), *r_hat = w.r_hat.data(), *p = w.p.data(), *v = w.v.data();
    VT *s = w.s.data(), *t = w.t.data();
    VT* p_hat = identity ? p : w.p_hat.data();
    VT* s_hat = identity ? s : w.s_hat.data();

    // r = b − A x0 (x0 = 0 unless the guess is nonzero)
    if (opts_.nonzero_initial_guess) {
        A.apply(x, r);
        ops.axpby(n, VT(1), b, VT(-1), r);
    } else {
        ops.fill(n, VT(0), x);
        ops.copy(n, b, r);
    }
    // r̂ = r, p = v = 0, ‖b‖, ‖r0‖, ρ = (r̂, r) = ‖r0‖²
    ops.bicgstab_init(n, b, r, r_hat, p, v, detail::stop_params(opts_));
    detail::FusedDots fused(A, opts_.fused_dots, w.partials);
    const bool graphs = detail::graphs_allowed(opts_, A, identity ? nullptr : m_.get());
    detail::KrylovDriver<VT> driver(
        ops, w.mirrors, opts_, detail::effective_check_every(opts_, identity ? nullptr : m_.get()),
        graphs ? &w.graph : nullptr);
    const bool stopped = driver.start();
    if (stopped && driver.initial_state().bnorm == 0.0) ops.fill(n, VT(0), x);  // b = 0: x = 0
    Status st;
    st.timings.setup_ms = setup_clock.ms();

    detail::Stopwatch solve_clock;
    if (!stopped) {
        driver.run([&] {
            ops.bicgstab_update_p(n, r, v, p);   // p = r + β(p − ωv)
            if (!identity) m_->apply(p, p_hat);  // p̂ = M⁻¹ p
            // v = A p̂, α = ρ/(r̂, v)
            fused.apply(
                A, p_hat, v, r_hat, 1,
                [&](index_t parts, const double* sums) {
                    ops.bicgstab_alpha_partials(parts, sums);
                },
                [&] { ops.bicgstab_alpha(n, r_hat, v); });
            ops.bicgstab_update_s(n, r, v, s);   // s = r − αv
            if (!identity) m_->apply(s, s_hat);  // ŝ = M⁻¹ s
            // t = A ŝ with (t, s), (t, t), (s, s) → half-step test, ω = (t,s)/(t,t)
            fused.apply(
                A, s_hat, t, s, 3,
                [&](index_t parts, const double* sums) {
                    ops.bicgstab_omega_partials(parts, sums);
                },
                [&] { ops.bicgstab_omega(n, t, s); });
            ops.bicgstab_update_xr(n, p_hat, s_hat, s, t, r_hat, x, r);  // x, r, ρ, β
        });
    }
    driver.finish(st);
    st.cuda_graph = driver.used_graph();
    st.fused_dots = fused.used();
    st.timings.solve_ms = solve_clock.ms();
    st.timings.per_iteration_ms = st.iterations > 0 ? st.timings.solve_ms / st.iterations : 0.0;

    if (opts_.compute_true_residual) {
        detail::Stopwatch clock;
        A.apply(x, t);                      // t = A x
        ops.axpby(n, VT(1), b, VT(-1), t);  // t = b − A x
        st.true_residual_norm = ops.norm2(n, t);
        st.true_relative_residual =
            st.b_norm > 0 ? st.true_residual_norm / st.b_norm : st.true_residual_norm;
        st.timings.true_residual_ms = clock.ms();
    }
    return st;
}

template class Bicgstab<double>;
template class Bicgstab<float>;

}  // namespace heptane
