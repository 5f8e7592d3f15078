// BiCGStab, right-preconditioned (van der Vorst 1992; docs/design.md §3), the reservoir workhorse.
//
//     Bicgstab<double> s(opts);
//     s.set_operator(A);            // any Operator<double>: a format, a distributed operator
//     s.set_preconditioner(P);      // optional: make_preconditioner(...), any Operator
//     Status st = s.solve(b, x);    // b, x: Array<double> in the operator's executor memory
//
// It solves A x = b through A M⁻¹ u = b, x = M⁻¹ u, so the residual it tests is the true,
// unpreconditioned b − A x (rtol is relative to ‖b‖, independent of M).
//
// Errors (misuse, thrown): no operator set, a non-square operator, b, x or M of the wrong
// size (DimensionMismatch), an operator and a preconditioner on different executors, or
// b, x not in the operator's memory (DimensionMismatch), options out of range (InputError),
// the reference implementation on the CPU or for float (NotSupported), a failed CUDA call
// (DeviceError). Everything numerical is the returned Status (solver/solver.hpp).
#pragma once

#include "solver/solver.hpp"  // SolverBase, Array, Operator, Status

namespace heptane {

/// Which BiCGStab loop runs.
///   fused:     the heptane loop: fused vector steps, scalars on the device, the host reads
///              the residual every check_every iterations (CPU and CUDA).
///   reference: the thesis-style loop: one cuBLAS call per vector operation (cublasDdot,
///              Daxpy, Dscal, Dcopy, Dnrm2) with every scalar returned to the host, SpMV
///              through the operator (give it make_cusparse_csr_operator for the cuSPARSE
///              generic SpMV the thesis used). CUDA and double only; a baseline to measure
///              the fused loop against (solver/bicgstab/bicgstab_reference.hpp).
enum class BicgstabImpl { fused, reference };

const char* to_string(BicgstabImpl impl) noexcept;
/// "fused" or "reference"; throws InputError naming the choices.
BicgstabImpl parse_bicgstab_impl(const std::string& name);

template <class VT>
class Bicgstab : public SolverBase<VT> {
public:
    explicit Bicgstab(SolverOptions options = {}, BicgstabImpl impl = BicgstabImpl::fused);
    ~Bicgstab() override;
    Bicgstab(Bicgstab&&) noexcept;
    Bicgstab& operator=(Bicgstab&&) noexcept;

    BicgstabImpl implementation() const noexcept { return impl_; }

    /// Solve A x = b. x is the initial guess when options().nonzero_initial_guess, otherwise
    /// it is overwritten with 0 first; on return it holds the last iterate (the one the
    /// Status describes, also when the solve did not converge). b is not modified.
    Status solve(const Array<VT>& b, Array<VT>& x) override;
    void prepare() override;

    /// "bicgstab (fused)" or "bicgstab (reference)".
    std::string name() const override;

private:
    using SolverBase<VT>::opts_, SolverBase<VT>::a_, SolverBase<VT>::m_;
    struct Workspace;  // solver/krylov_driver.hpp's WorkspaceKey decides when it is rebuilt
    BicgstabImpl impl_;
    std::unique_ptr<Workspace> ws_;
};

extern template class Bicgstab<double>;
extern template class Bicgstab<float>;

}  // namespace heptane
