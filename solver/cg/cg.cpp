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
    explicit Workspace(const detail::WorkspaceKey& k)
        : key(k),
          ops(k.exec, k.extent, k.reducer),
          r(k.exec, k.n),
          z(k.exec, k.precond ? k.n : 0),
          p(k.exec, k.n),
          q(k.exec, k.n)
    {
    }
    detail::WorkspaceKey key;  // max_it as the extent (the history's length)
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

    const detail::Stopwatch setup_clock;
    const Operator<VT>& A = *a_;
    const Operator<VT>* M = is_identity_preconditioner(m_.get()) ? nullptr : m_.get();
    const index_t n = A.rows();
    const detail::WorkspaceKey key{A.executor(), n, opts_.max_it, M != nullptr, A.reducer()};
    if (!ws_ || !(ws_->key == key)) ws_ = std::make_unique<Workspace>(key);
    Workspace& w = *ws_;
    VectorOps<VT>& ops = w.ops;
    const VT* b = b_arr.data();
    VT* x = x_arr.data();
    VT *r = w.r.data(), *p = w.p.data(), *q = w.q.data();
    VT* z = M ? w.z.data() : r;

    detail::initial_residual(A, ops, opts_, b, x, r);  // r = b − A x0
    ops.cg_init(n, b, r, detail::stop_params(opts_));  // ‖b‖, ‖r0‖, tests at iteration 0
    if (M) M->apply(r, z);                             // z = M⁻¹ r
    ops.cg_start(n, r, z, p);                          // p = z, ρ = (r, z)
    detail::FusedDots fused(A, opts_.fused_dots, w.partials);
    Status st =
        detail::run_fused_loop(A, M, ops, w.mirrors, w.graph, opts_, fused, x, setup_clock, [&] {
            // q = A p, α = ρ/(p, q)
            fused.apply(
                A, p, q, p, 1,
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
