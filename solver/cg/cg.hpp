// Preconditioned conjugate gradients for symmetric positive definite systems (docs/design.md §3),
// the pressure-equation solver.
//
//     Cg<double> s(opts);
//     s.set_operator(A);
//     s.set_preconditioner(P);      // optional; must be SPD too (jacobi, block_jacobi; not
//                                   // ilu0, which is not symmetric)
//     Status st = s.solve(b, x);
//
// The tested residual is the recursive unpreconditioned r = b − A x (rtol relative to ‖b‖).
// A matrix or preconditioner found not to be SPD ((p, Ap) ≤ 0 or (r, M⁻¹r) < 0) stops the
// solve with Reason::diverged_indefinite. Errors as for Bicgstab (solver/bicgstab/bicgstab.hpp).
#pragma once

#include "solver/solver.hpp"  // SolverBase, Array, Operator, Status

namespace heptane {

template <class VT>
class Cg : public SolverBase<VT> {
public:
    explicit Cg(SolverOptions options = {});
    ~Cg() override;
    Cg(Cg&&) noexcept;
    Cg& operator=(Cg&&) noexcept;

    /// Solve A x = b; x as for Bicgstab::solve.
    Status solve(const Array<VT>& b, Array<VT>& x) override;
    void prepare() override;

    /// "cg".
    std::string name() const override { return "cg"; }

private:
    using SolverBase<VT>::opts_, SolverBase<VT>::a_, SolverBase<VT>::m_;
    struct Workspace;  // solver/krylov_driver.hpp's WorkspaceKey decides when it is rebuilt
    std::unique_ptr<Workspace> ws_;
};

extern template class Cg<double>;
extern template class Cg<float>;

}  // namespace heptane
