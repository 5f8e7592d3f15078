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
struct Cg<VT>::Workspace : detail::FusedWorkspace<VT> {
    explicit Workspace(const detail::WorkspaceKey& k)
        : detail::FusedWorkspace<VT>(k),
          r(k.exec, k.n),
          z(k.exec, k.precond ? k.n : 0),
          p(k.exec, k.n),
          q(k.exec, k.n)
    {
    }
    Array<VT> r, z, p, q;
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
void Cg<VT>::prepare()
{
    HEPTANE_ENSURE(a_, InputError, "Cg::prepare: no operator (call set_operator first)");
    detail::prepare_fused(*a_, m_, opts_, ws_);
}

template <class VT>
Status Cg<VT>::solve(const Array<VT>& b_arr, Array<VT>& x_arr)
{
    detail::check_operands("Cg", a_.get(), m_.get(), b_arr, x_arr);
    detail::check_options(opts_);

    const detail::Stopwatch setup_clock;
    detail::FusedFrame<VT, Workspace> frame(*a_, m_, opts_, ws_);
    auto& [A, M, n, w, ops] = frame;
    const VT* b = b_arr.data();
    VT *x = x_arr.data(), *r = w.r.data(), *p = w.p.data(), *q = w.q.data();
    VT* z = M ? w.z.data() : r;

    detail::initial_residual(A, ops, opts_, b, x, r);  // r = b − A x0
    ops.cg_init(n, b, r, detail::stop_params(opts_));  // ‖b‖, ‖r0‖, tests at iteration 0
    if (M) M->apply(r, z);                             // z = M⁻¹ r
    ops.cg_start(n, r, z, p);                          // p = z, ρ = (r, z)
    detail::FusedDots fused(A, opts_, w.partials, ops.context());
    Status st = detail::run_fused_loop(
        A, M, ops, w.mirrors, w.graph, opts_, fused, x, setup_clock,
        [&, &A = A, M = M, n = n, &ops = ops] {  // C++17: bindings by init-capture
            // q = A p, α = ρ/(p, q)
            fused.apply(
                A, p, q, p, 1, DotsFinish::cg_alpha,
                [&](index_t parts, const double* sums) { ops.cg_alpha_partials(parts, sums); },
                [&] { ops.cg_alpha(n, p, q); });
            ops.cg_update_xr(n, p, q, x, r, M == nullptr);  // x += αp, r −= αq, ‖r‖
            if (M) {
                M->apply(r, z);        // z = M⁻¹ r
                ops.cg_beta(n, r, z);  // β = (r, z)/ρ
            }
            ops.cg_update_p(n, z, p);  // p = z + βp
        });
    detail::true_residual(A, ops, opts_, b, x, q, st);
    return st;
}

template class Cg<double>;
template class Cg<float>;

}  // namespace heptane
