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

#include <memory>
#include <string>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "solver/solver.hpp"

namespace heptane {

template <class VT>
class Cg : public Solver<VT> {
public:
    explicit Cg(SolverOptions options = {});
    ~Cg() override;
    Cg(Cg&&) noexcept;
    Cg& operator=(Cg&&) noexcept;

    void set_operator(std::shared_ptr<const Operator<VT>> a) override;
    /// Not owned: must outlive the solves.
    void set_operator(const Operator<VT>& a) override;
    /// nullptr = none. Must live on the operator's executor.
    void set_preconditioner(std::shared_ptr<const Operator<VT>> m) override;
    /// Not owned: must outlive the solves.
    void set_preconditioner(const Operator<VT>& m) override;

    SolverOptions& options() noexcept override { return opts_; }
    const SolverOptions& options() const noexcept override { return opts_; }

    /// Solve A x = b; x as for Bicgstab::solve.
    Status solve(const Array<VT>& b, Array<VT>& x) override;

    /// "cg".
    std::string name() const override { return "cg"; }

    struct Workspace;

private:
    SolverOptions opts_;
    std::shared_ptr<const Operator<VT>> a_;
    std::shared_ptr<const Operator<VT>> m_;
    std::unique_ptr<Workspace> ws_;
};

extern template class Cg<double>;
extern template class Cg<float>;

}  // namespace heptane
