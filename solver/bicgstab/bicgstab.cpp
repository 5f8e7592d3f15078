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
// Forming the inputs in the products (SolverOptions::fused_inputs; no preconditioner, one
// process, BDIA-GH on a GPU): p = r + β(p − ωv) inside v = A p (it reads r, p, v and writes p,
// v, reads r̂: 6 passes for update_p's 4 + 3) and s = r − αv inside t = A s (reads r, v,
// writes s, t: 4 for 3 + 2): 17 passes and 3 kernels per iteration with both (p_and_s), 18
// and 4 with s alone.
// Launches per iteration: 5 vector kernels (3 reductions whose last block computes the
// scalars: α; ‖s‖ with ω; ρ with ‖r‖ -- and 2 element-wise; fused, the α and ω ones only
// reduce the partials, and on one process (SolverOptions::fused_finish) the products' last
// CTAs do that, so 3 vector kernels remain) + 2 SpMV (+ 2 preconditioner applications); the
// host is not involved until the check. Distributed, each of the 3 reduction points is one
// all-reduce.
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

namespace {
/// SolverOptions::fused_inputs resolved for one solve: none with a preconditioner or where the
/// products cannot form inputs (FusedDots::forms_inputs: fused dots, one process, BDIA-GH on a
/// GPU); automatic by the rows; p_and_s only where a recorded graph holds an even number of
/// iterations (detail::replay_batch), else s.
template <class VT>
FusedInputs formed_inputs(const SolverOptions& o, const Operator<VT>& a, const Operator<VT>* m,
                          const detail::FusedDots& fused)
{
    if (m || !fused.forms_inputs()) return FusedInputs::none;
    FusedInputs f = o.fused_inputs;
    if (f == FusedInputs::automatic)
        f = a.rows() <= (index_t(1) << 19) ? FusedInputs::p_and_s : FusedInputs::s;
    if (f == FusedInputs::p_and_s && detail::replay_batch(o, a, m) % 2 != 0) f = FusedInputs::s;
    return f;
}
}  // namespace

template <class VT>
struct Bicgstab<VT>::Workspace : detail::FusedWorkspace<VT> {
    explicit Workspace(const detail::WorkspaceKey& k)
        : detail::FusedWorkspace<VT>(k),
          stride((std::size_t(k.n) + 31) / 32 * 32),
          hot(k.exec, 4 * stride),
          s(k.exec, k.n),
          t(k.exec, k.n),
          p_hat(k.exec, k.precond ? k.n : 0),
          s_hat(k.exec, k.precond ? k.n : 0)
    {
    }
    /// p, r, v and r̂ side by side (each slice 256-byte aligned): the vectors an iteration
    /// touches most (p 4 times, r and v 3, r̂ 2), so that one L2 window can hold the first
    /// k of them (hot_l2_vectors).
    std::size_t stride;
    Array<VT> hot;
    Array<VT> s, t, p_hat, s_hat;
    VT* p() { return hot.data(); }
    VT* r() { return hot.data() + stride; }
    VT* v() { return hot.data() + 2 * stride; }
    VT* r_hat() { return hot.data() + 3 * stride; }
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
void Bicgstab<VT>::prepare()
{
    HEPTANE_ENSURE(a_, InputError, "Bicgstab::prepare: no operator (call set_operator first)");
    if (impl_ == BicgstabImpl::fused) detail::prepare_fused(*a_, m_, opts_, ws_);
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

    const detail::Stopwatch setup_clock;
    detail::FusedFrame<VT, Workspace> frame(*a_, m_, opts_, ws_);
    auto& [A, M, n, w, ops] = frame;
    const VT* b = b_arr.data();
    VT *x = x_arr.data(), *r = w.r(), *r_hat = w.r_hat(), *p = w.p();
    VT *v = w.v(), *s = w.s.data(), *t = w.t.data();
    // the first hot_l2_vectors() of p, r, v, r̂ kept in the L2 cache for the solve (CUDA)
    const detail::L2Window l2(*ops.exec(), w.hot.data(),
                              detail::hot_l2_vectors() * w.stride * sizeof(VT));
    VT* p_hat = M ? w.p_hat.data() : p;
    VT* s_hat = M ? w.s_hat.data() : s;

    detail::initial_residual(A, ops, opts_, b, x, r);  // r = b − A x0
    // r̂ = r, p = v = 0, ‖b‖, ‖r0‖, ρ = (r̂, r) = ‖r0‖²
    ops.bicgstab_init(n, b, r, r_hat, p, v, detail::stop_params(opts_));
    detail::FusedDots fused(A, opts_, w.partials, ops.context());
    const FusedInputs form = formed_inputs(opts_, A, M, fused);
    // t = A s with s = r − αv formed in the product from v (M = I), s written to s_out;
    // (t, s), (t, t), (s, s) → half-step test, ω = (t,s)/(t,t) (both forming loops)
    const auto product_forming_s = [&fused, &ops = ops, r](const auto& op, const VT* v_in,
                                                           VT* s_out, VT* t_out) {
        fused.apply_step(
            op, StepInput<VT>{StepInput<VT>::bicgstab_s, nullptr, r, nullptr, v_in, s_out}, t_out,
            static_cast<const VT*>(nullptr), 3, DotsFinish::bicgstab_s_omega,
            [&](index_t parts, const double* sums) { ops.bicgstab_omega_partials(parts, sums); });
    };
    if (form == FusedInputs::p_and_s) {
        // The products form both their inputs (SolverOptions::fused_inputs): 3 kernels per
        // iteration. p and s share two buffers, v and t two more: the product that forms
        // p_new from p_old and v_old writes p_new and v_new into the other two, and s and t
        // then go where p_old and v_old were. The roles swap every iteration, so a recorded
        // graph must hold an even number of iterations (replay_batch).
        VT* pb[2] = {p, s};
        VT* vb[2] = {v, t};
        int cur = 0;
        Status st = detail::run_fused_loop(
            A, M, ops, w.mirrors, w.graph, opts_, fused, x, setup_clock,
            [&, &A = A, n = n, &ops = ops] {  // C++17: bindings by init-capture
                VT *p_old = pb[cur], *p_new = pb[cur ^ 1], *v_old = vb[cur], *v_new = vb[cur ^ 1];
                // v = A p with p = r + β(p − ωv) formed in the product; α = ρ/(r̂, v)
                fused.apply_step(
                    A, StepInput<VT>{StepInput<VT>::bicgstab_p, nullptr, r, p_old, v_old, p_new},
                    v_new, r_hat, 1, DotsFinish::bicgstab_alpha,
                    [&](index_t parts, const double* sums) {
                        ops.bicgstab_alpha_partials(parts, sums);
                    });
                // t = A s with s = r − αv formed in the product, into p's and v's old buffers
                VT *s_new = p_old, *t_new = v_old;
                product_forming_s(A, v_new, s_new, t_new);
                ops.bicgstab_update_xr(n, p_new, s_new, s_new, t_new, r_hat, x, r);  // x, r, ρ, β
                cur ^= 1;
            });
        st.fused_inputs = form;
        detail::true_residual(A, ops, opts_, b, x, t, st);
        return st;
    }
    Status st = detail::run_fused_loop(
        A, M, ops, w.mirrors, w.graph, opts_, fused, x, setup_clock,
        [&, &A = A, M = M, n = n, &ops = ops] {  // C++17: bindings by init-capture
            ops.bicgstab_update_p(n, r, v, p);   // p = r + β(p − ωv)
            if (M) M->apply(p, p_hat);           // p̂ = M⁻¹ p
            // v = A p̂, α = ρ/(r̂, v)
            fused.apply(
                A, p_hat, v, r_hat, 1, DotsFinish::bicgstab_alpha,
                [&](index_t parts, const double* sums) {
                    ops.bicgstab_alpha_partials(parts, sums);
                },
                [&] { ops.bicgstab_alpha(n, r_hat, v); });
            if (form == FusedInputs::s) {
                product_forming_s(A, v, s, t);  // t = A s, s = r − αv formed in it; ω
            } else {
                ops.bicgstab_update_s(n, r, v, s);  // s = r − αv
                if (M) M->apply(s, s_hat);          // ŝ = M⁻¹ s
                // t = A ŝ with (t, s), (t, t), (s, s) → half-step test, ω = (t,s)/(t,t)
                fused.apply(
                    A, s_hat, t, s, 3, DotsFinish::bicgstab_s_omega,
                    [&](index_t parts, const double* sums) {
                        ops.bicgstab_omega_partials(parts, sums);
                    },
                    [&] { ops.bicgstab_omega(n, t, s); });
            }
            ops.bicgstab_update_xr(n, p_hat, s_hat, s, t, r_hat, x, r);  // x, r, ρ, β
        });
    st.fused_inputs = form;
    detail::true_residual(A, ops, opts_, b, x, t, st);
    return st;
}

template class Bicgstab<double>;
template class Bicgstab<float>;

}  // namespace heptane
