// GMRES(m): restarted, right-preconditioned, flexible GMRES (Saad 1993, FGMRES), beside
// BiCGStab and CG (docs/design.md §3) for nonsymmetric systems where BiCGStab's irregular
// convergence or breakdowns hurt, and for preconditioners that change from one application
// to the next (a multigrid cycle, an inner Krylov solve).
//
//     Gmres<double> s(opts, 30);    // restart m = 30
//     s.set_operator(A);
//     s.set_preconditioner(P);      // optional; may vary between applications
//     Status st = s.solve(b, x);
//
// Each cycle builds an Arnoldi basis V_{j+1} of A M⁻¹ from r = b − A x and keeps the
// preconditioned vectors Z_j = M⁻¹ V_j, so x = x0 + Z_j y is right whatever M did at each
// application. Orthogonalisation is classical Gram-Schmidt with one re-orthogonalisation
// (CGS2) in block kernels: h = V_j^T w (j + 1 dot products in one pass over w, one
// reduction; over the processes of a distributed operator, one Reducer call per 8 sums)
// and w −= V_j h (one pass). The Hessenberg least-squares problem is solved on the host in
// double with Givens rotations; its residual |g_{j+1}| is the unpreconditioned ‖b − A x_j‖
// (right preconditioning), which is what rtol, atol and dtol test, every iteration, as for
// BiCGStab and CG. The host reads the Hessenberg column once per iteration (one wait for the
// executor per iteration: no batching, no CUDA graphs). max_it counts the inner iterations of
// all cycles; at a restart the residual is recomputed (b − A x) and tested again.
//
// Memory: V is one Array of (m + 1)·n values, Z one of m·n (none without a preconditioner).
//
// Stops (Status::reason): converged_rtol/atol, diverged_max_it, diverged_dtol, stagnation
// (SolverOptions::stagnation_window), diverged_nan (a NaN or Inf in A M⁻¹ v or ‖b‖: x is the
// iterate of the iterations before it), breakdown_rho when the Arnoldi process ends
// (h_{j+1,j} = 0 to working precision: the Krylov space is invariant) without meeting the
// tolerance, i.e. A M⁻¹ is singular on it. An invariant space that does meet the tolerance
// (the "lucky" breakdown) is simply convergence.
//
// Errors (thrown): as for Bicgstab (solver/bicgstab/bicgstab.hpp), and InputError for a
// restart < 1.
#pragma once

#include "solver/solver.hpp"  // SolverBase, Array, Operator, Status

namespace heptane {

template <class VT>
class Gmres : public SolverBase<VT> {
public:
    /// `restart`: m, the basis vectors of one cycle (≥ 1; InputError otherwise).
    explicit Gmres(SolverOptions options = {}, int restart = 30);
    ~Gmres() override;
    Gmres(Gmres&&) noexcept;
    Gmres& operator=(Gmres&&) noexcept;

    int restart() const noexcept { return restart_; }
    /// InputError for m < 1.
    void set_restart(int m);

    /// Solve A x = b; x as for Bicgstab::solve. The preconditioner need not be the same linear
    /// map at every application (flexible GMRES).
    Status solve(const Array<VT>& b, Array<VT>& x) override;
    void prepare() override;

    /// "gmres(m)", e.g. "gmres(30)".
    std::string name() const override;

private:
    using SolverBase<VT>::opts_, SolverBase<VT>::a_, SolverBase<VT>::m_;
    struct Workspace;  // solver/krylov_driver.hpp's WorkspaceKey decides when it is rebuilt
    int restart_ = 30;
    std::unique_ptr<Workspace> ws_;
};

extern template class Gmres<double>;
extern template class Gmres<float>;

}  // namespace heptane
