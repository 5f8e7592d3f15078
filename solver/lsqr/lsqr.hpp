// LSQR (Paige & Saunders 1982, ACM TOMS 8(1)): min ‖A x − b‖² + damp²‖x − x0‖² for a
// rectangular m x n operator, written once against Operator::apply / apply_transpose and the
// vector kernels of solver/vector (docs/design.md §3). It follows SciPy's
// scipy.sparse.linalg.lsqr step by step — the same bidiagonalisation, the same plane
// rotations (SciPy's _sym_ortho), the same estimates of ‖r‖, ‖Aᵀr‖, ‖A‖, cond(A), ‖x‖ and the
// same stopping tests in the same order — so istop, the iteration count and x agree with
// SciPy up to rounding. SciPy's optional `var` (diagonal of (AᵀA + damp²I)⁻¹) is not computed.
//
//     Lsqr<double> s;
//     s.options().atol = s.options().btol = 1e-8;
//     s.set_operator(A);                 // any Operator with a transpose, any executor
//     LsqrStatus st = s.solve(b, x);     // st.istop, st.itn, st.r1norm, ...
//
// Rows split over processes: an operator with a reducer() (dist::RowBlockOperator: each
// process streams its own rows of A and A^T u arrives summed over them) runs unchanged -- b
// and u hold the process's rows, x, v and w are the same on every process, and the norms of b
// and u are summed through the reducer.
//
// Misuse (no operator, b or x of the wrong length or in another executor's memory, b and x
// one array, negative tolerances) throws InputError / DimensionMismatch; an operator without
// a transpose throws NotSupported from its apply_transpose. Why the iteration stopped is the
// status (istop), never an exception.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/operator.hpp"

namespace heptane {

/// LSQR's parameters, named and defaulted as SciPy's lsqr(A, b, damp, atol, btol, conlim,
/// iter_lim, x0).
struct LsqrOptions {
    /// Damping: minimise ‖A x − b‖² + damp²‖x − x0‖² (0: plain least squares).
    double damp = 0.0;
    /// Stop (istop 2) when ‖Aᵀr‖ ≤ atol·‖A‖·‖r‖; with btol, istop 1 when
    /// ‖r‖ ≤ btol·‖b‖ + atol·‖A‖·‖x‖. Relative accuracies of A and b; 0 = machine precision.
    double atol = 1e-6;
    double btol = 1e-6;
    /// Stop (istop 3) when the estimate of cond(Ā) exceeds conlim (0 = no limit: 1/eps).
    double conlim = 1e8;
    /// At most this many iterations (istop 7); < 0: 2·cols, SciPy's default.
    int iter_lim = -1;
    /// Start from x as given (SciPy's x0); otherwise x is overwritten with 0 first.
    bool nonzero_initial_guess = false;
    /// Keep r2norm of every iteration in LsqrStatus::history (index 0: the initial ‖r‖).
    bool record_history = true;
};

/// Wall-clock times of one solve in milliseconds (host clock, synchronised regions).
struct LsqrTimings {
    double setup_ms = 0;          ///< workspace, ‖b‖, the first u and v
    double solve_ms = 0;          ///< the iterations
    double per_iteration_ms = 0;  ///< solve_ms / itn (0 when no iteration ran)
};

/// What LSQR returns: SciPy's (istop, itn, r1norm, r2norm, anorm, acond, arnorm, xnorm).
struct LsqrStatus {
    /// 0: x = 0 is the exact solution (b = 0 or Aᵀb = 0); 1: A x − b small enough (atol,
    /// btol); 2: least-squares solution good enough (atol); 3: cond(Ā) > conlim; 4, 5, 6: as
    /// 1, 2, 3 at machine precision; 7: iteration limit reached.
    int istop = 0;
    int itn = 0;        ///< iterations done
    double r1norm = 0;  ///< ‖b − A x‖ (estimate; negative if its cancellation went below 0)
    double r2norm = 0;  ///< sqrt(‖b − A x‖² + damp²‖x − x0‖²) (estimate)
    double anorm = 0;   ///< Frobenius norm of Ā = [A; damp I] (estimate)
    double acond = 0;   ///< condition number of Ā (estimate)
    double arnorm = 0;  ///< ‖Āᵀ r̄‖ (estimate)
    double xnorm = 0;   ///< ‖x‖ (estimate)
    double bnorm = 0;   ///< ‖b‖
    std::vector<double> history;  ///< r2norm per iteration (record_history), index 0 = start
    LsqrTimings timings;

    /// SciPy's message for istop, e.g. "The least-squares solution is good enough, given atol".
    const char* meaning() const noexcept;
    /// One line, e.g. "istop 2 (...) after 57 iterations: r1norm 1.2e-03, arnorm 3.4e-11".
    std::string summary() const;
};

/// SciPy's message for an istop code (0..7); "unknown" otherwise.
const char* lsqr_istop_meaning(int istop) noexcept;

template <class VT>
class Lsqr {
public:
    explicit Lsqr(LsqrOptions options = {});
    ~Lsqr();
    Lsqr(Lsqr&&) noexcept;
    Lsqr& operator=(Lsqr&&) noexcept;

    void set_operator(std::shared_ptr<const Operator<VT>> a);
    /// Not owned: must outlive the solves.
    void set_operator(const Operator<VT>& a);

    LsqrOptions& options() noexcept { return opts_; }
    const LsqrOptions& options() const noexcept { return opts_; }

    /// Solve min ‖A x − b‖ (+ damping). b has rows() entries, x cols(), both in the memory of
    /// the operator's executor; x is the initial guess with nonzero_initial_guess, otherwise
    /// overwritten. Returns after the result is in x.
    LsqrStatus solve(const Array<VT>& b, Array<VT>& x);

    struct Workspace;

private:
    LsqrOptions opts_;
    std::shared_ptr<const Operator<VT>> a_;
    std::unique_ptr<Workspace> ws_;
};

extern template class Lsqr<double>;
extern template class Lsqr<float>;

}  // namespace heptane
