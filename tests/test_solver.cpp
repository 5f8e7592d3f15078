// BiCGStab and CG on the executor under test (CPU, or CUDA with HEPTANE_TEST_DEVICE=cuda):
// solutions against Eigen (SparseLU, BiCGSTAB, ConjugateGradient) with tolerances derived
// from the data, every stopping reason constructed on purpose, the misuse errors, CPU/GPU
// agreement, and the one-call solve_system.
#include <boost/test/unit_test.hpp>

#include <Eigen/IterativeLinearSolvers>
#include <Eigen/SparseLU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/matrix.hpp"
#include "generators/hepta.hpp"
#include "solver/bicgstab/bicgstab.hpp"
#include "solver/bicgstab/bicgstab_reference.hpp"
#include "solver/cg/cg.hpp"
#include "solver/gmres/gmres.hpp"
#include "solver/krylov_driver.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solve.hpp"
#include "solver/warm_up.hpp"
#include "tests/test_common.hpp"
#include "tests/test_systems.hpp"

using namespace heptane;

namespace heptane {
// Boost.Test prints the operands of a failed BOOST_TEST(a == b)
std::ostream& operator<<(std::ostream& os, Reason r)
{
    return os << to_string(r);
}
}  // namespace heptane

namespace {

using test::dominance_margin;
using test::max_abs_diff;
using test::norm2;
using test::norm_inf;
using test::random_dd;
using test::residual;
using test::residual_rounding;
using test::seven_point;
using test::square_coo;

const double nan_v = std::numeric_limits<double>::quiet_NaN();

Eigen::SparseMatrix<double> to_eigen(const Coo<double>& a)
{
    std::vector<Eigen::Triplet<double>> t;
    for (offset_t k = 0; k < a.nnz(); ++k) t.emplace_back(a.row[k], a.col[k], a.val[k]);
    Eigen::SparseMatrix<double> m(a.rows, a.cols);
    m.setFromTriplets(t.begin(), t.end());
    m.makeCompressed();
    return m;
}
Eigen::VectorXd to_eigen(const std::vector<double>& v)
{
    return Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size()));
}
std::vector<double> from_eigen(const Eigen::VectorXd& v)
{
    return std::vector<double>(v.data(), v.data() + v.size());
}

std::vector<double> sparse_lu(const Coo<double>& a, const std::vector<double>& b)
{
    Eigen::SparseLU<Eigen::SparseMatrix<double>> lu;
    lu.compute(to_eigen(a));
    BOOST_REQUIRE(lu.info() == Eigen::Success);
    return from_eigen(lu.solve(to_eigen(b)));
}

enum class Method { bicgstab, cg };

struct Run {
    std::vector<double> x;
    Status st;
};

Run run(Method method, const Coo<double>& a, const std::vector<double>& b, PcType pc, index_t nc,
        SolverOptions o, std::shared_ptr<const Executor> exec = test::test_executor(),
        const std::vector<double>& x0 = {}, BicgstabImpl impl = BicgstabImpl::fused)
{
    std::shared_ptr<const Operator<double>> op;
    if (impl == BicgstabImpl::reference)
        op = make_cusparse_csr_operator(csr_from_coo(a), exec);
    else
        op = make_matrix_operator<double, double>(a, Format::csr, exec);
    std::shared_ptr<const Operator<double>> m =
        make_preconditioner<double>(pc, csr_from_coo(a), nc, exec);
    const Array<double> bd = Array<double>(b).to(exec);
    Array<double> xd = x0.empty() ? Array<double>(exec, b.size()) : Array<double>(x0).to(exec);
    if (!x0.empty()) o.nonzero_initial_guess = true;
    Run out;
    if (method == Method::bicgstab) {
        Bicgstab<double> s(o, impl);
        s.set_operator(op);
        s.set_preconditioner(m);
        out.st = s.solve(bd, xd);
    } else {
        Cg<double> s(o);
        s.set_operator(op);
        s.set_preconditioner(m);
        out.st = s.solve(bd, xd);
    }
    out.x = xd.to_vector();
    BOOST_TEST_MESSAGE((method == Method::bicgstab ? "bicgstab" : "cg")
                       << " pc=" << to_string(pc) << " on " << exec->name() << ": "
                       << out.st.summary());
    return out;
}

/// One solve of `method` with operator a and preconditioner m on device arrays b and x.
Status solve_with(Method method, const Operator<double>& a, const Operator<double>& m,
                  const SolverOptions& o, const Array<double>& b, Array<double>& x)
{
    if (method == Method::bicgstab) {
        Bicgstab<double> s(o);
        s.set_operator(a);
        s.set_preconditioner(m);
        return s.solve(b, x);
    }
    Cg<double> s(o);
    s.set_operator(a);
    s.set_preconditioner(m);
    return s.solve(b, x);
}

SolverOptions tight(double rtol = 1e-10)
{
    SolverOptions o;
    o.rtol = rtol;
    o.max_it = 2000;
    return o;
}

/// The checks every converged run must pass: the reason, the recursive and the true
/// residual against rtol, the reported true residual against one recomputed on the host,
/// and ‖x − x_ref‖∞ within what the residual allows (bound_per_residual = ‖A⁻¹‖∞ bound).
void check_converged(const Run& r, const Coo<double>& a, const std::vector<double>& b,
                     const std::vector<double>& x_ref, double rtol, double inv_norm_bound)
{
    BOOST_TEST(r.st.converged(), r.st.summary());
    BOOST_TEST(r.st.relative_residual <= rtol);
    const auto res = residual(a, r.x, b);
    const double true_rel = norm2(res) / norm2(b);
    BOOST_TEST(true_rel <= 100 * rtol);
    BOOST_TEST(std::abs(r.st.true_relative_residual - true_rel) <= residual_rounding(a, r.x, b));
    BOOST_TEST(r.st.history.size() == std::size_t(r.st.iterations) + 1);
    // ‖x − x*‖∞ ≤ ‖A⁻¹‖∞ ‖b − A x‖∞, plus the reference's own error (same bound, its residual)
    const double bound = inv_norm_bound * (norm_inf(res) + norm_inf(residual(a, x_ref, b))) +
                         1e-13 * norm_inf(x_ref);
    BOOST_TEST(max_abs_diff(r.x, x_ref) <= 2 * bound);
}

}  // namespace

// ---- solutions -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(bicgstab_matches_sparselu_and_eigen_bicgstab_on_nonsymmetric_7_point)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    const auto x_lu = sparse_lu(a, b);
    const double inv_bound = 1.0 / dominance_margin(a);

    Eigen::BiCGSTAB<Eigen::SparseMatrix<double>> eig;
    eig.setTolerance(1e-10);
    eig.setMaxIterations(2000);
    const Eigen::SparseMatrix<double> ae = to_eigen(a);  // Eigen keeps a reference to it
    eig.compute(ae);
    const auto x_eig = from_eigen(eig.solve(to_eigen(b)));
    BOOST_TEST_MESSAGE("Eigen BiCGSTAB (diagonal pc): " << eig.iterations() << " iterations, error "
                                                        << eig.error());
    for (PcType pc : {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0}) {
        const Run r = run(Method::bicgstab, a, b, pc, 1, tight());
        check_converged(r, a, b, x_lu, 1e-10, inv_bound);
        check_converged(r, a, b, x_eig, 1e-10, inv_bound);
        // Eigen's BiCGSTAB with its diagonal preconditioner takes about as many iterations
        // as ours with Jacobi (Eigen restarts when (r̂, r) gets small, so not exactly)
        if (pc == PcType::jacobi) BOOST_TEST(r.st.iterations <= 2 * eig.iterations() + 5);
    }
}

BOOST_AUTO_TEST_CASE(bicgstab_matches_sparselu_on_random_nonsymmetric)
{
    const auto a = random_dd(400, 17, 0.1);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 4);
    const auto x_lu = sparse_lu(a, b);
    for (PcType pc : {PcType::none, PcType::ilu0, PcType::block_jacobi}) {
        const Run r = run(Method::bicgstab, a, b, pc, pc == PcType::block_jacobi ? 4 : 1, tight());
        check_converged(r, a, b, x_lu, 1e-10, 1.0 / dominance_margin(a));
    }
}

BOOST_AUTO_TEST_CASE(cg_matches_eigen_on_the_laplacian)
{
    const index_t nx = 10, ny = 9, nz = 8;
    const auto a = seven_point(nx, ny, nz, 0.0, 0.0, true);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 5);
    const auto x_lu = sparse_lu(a, b);
    // λ_min of the Dirichlet Laplacian: Σ_d 2(1 − cos(π/(n_d + 1))); ‖A⁻¹‖₂ = 1/λ_min and
    // ‖·‖∞ ≤ ‖·‖₂, so ‖x − x*‖∞ ≤ ‖b − A x‖₂ / λ_min.
    const double pi = std::acos(-1.0);
    double lmin = 0;
    for (index_t m : {nx, ny, nz}) lmin += 2 * (1 - std::cos(pi / (m + 1)));

    Eigen::ConjugateGradient<Eigen::SparseMatrix<double>, Eigen::Lower | Eigen::Upper,
                             Eigen::IdentityPreconditioner>
        eig;
    eig.setTolerance(1e-10);
    const Eigen::SparseMatrix<double> ae = to_eigen(a);  // Eigen keeps a reference to it
    eig.compute(ae);
    const auto x_eig = from_eigen(eig.solve(to_eigen(b)));
    for (PcType pc : {PcType::none, PcType::jacobi, PcType::block_jacobi}) {
        const Run r = run(Method::cg, a, b, pc, 1, tight());
        BOOST_TEST(r.st.converged(), r.st.summary());
        BOOST_TEST(r.st.relative_residual <= 1e-10);
        const auto res = residual(a, r.x, b);
        BOOST_TEST(norm2(res) / norm2(b) <= 1e-9);
        BOOST_TEST(max_abs_diff(r.x, x_lu) <= 2 * norm2(res) / lmin + 1e-13);
        BOOST_TEST(max_abs_diff(x_eig, x_lu) <= 2 * norm2(residual(a, x_eig, b)) / lmin + 1e-13);
        // same Krylov space (the diagonal is constant), same stopping rule as Eigen's
        BOOST_TEST(std::abs(r.st.iterations - int(eig.iterations())) <= 1,
                   "ours " << r.st.iterations << ", Eigen " << eig.iterations());
    }
}

BOOST_AUTO_TEST_CASE(every_preconditioner_reduces_iterations)
{
    // a reservoir-like GH system: layered permeability, Nc = 3, poorly scaled rows
    HeptaSpec spec;
    spec.J = 12;
    spec.H = 10;
    spec.I = 6;
    spec.Nc = 3;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    spec.difficulty = 1.0;
    spec.seed = 7;
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    SolverOptions o = tight(1e-8);
    o.max_it = 5000;
    const Run none = run(Method::bicgstab, a, b, PcType::none, 3, o);
    BOOST_TEST(none.st.converged(), none.st.summary());
    for (PcType pc : {PcType::jacobi, PcType::block_jacobi, PcType::ilu0, PcType::ilu0_mc}) {
        const Run r = run(Method::bicgstab, a, b, pc, 3, o);
        BOOST_TEST(r.st.converged(), r.st.summary());
        BOOST_TEST(r.st.iterations < none.st.iterations,
                   to_string(pc) << ": " << r.st.iterations << " vs none " << none.st.iterations);
        BOOST_TEST(r.st.true_relative_residual <= 1e-7);
    }

    // CG on the SPD pressure system (Nc = 1)
    spec.Nc = 1;
    const auto p = generate_hepta_coo<double>(spec);
    const auto bp = make_rhs(spec, p).b;
    const Run cg_none = run(Method::cg, p, bp, PcType::none, 1, o);
    BOOST_TEST(cg_none.st.converged(), cg_none.st.summary());
    for (PcType pc : {PcType::jacobi, PcType::block_jacobi}) {
        const Run r = run(Method::cg, p, bp, pc, 1, o);
        BOOST_TEST(r.st.converged(), r.st.summary());
        BOOST_TEST(r.st.iterations < cg_none.st.iterations, to_string(pc) << ": " << r.st.iterations
                                                                          << " vs none "
                                                                          << cg_none.st.iterations);
    }
}

// ---- stopping reasons ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(breakdown_rv_on_a_zero_matrix_and_a_rotation)
{
    // A = 0: v = A p = 0, (r̂, v) = 0
    const auto zero = square_coo(4, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 0, 0, 0});
    const Run z = run(Method::bicgstab, zero, {1, 2, 3, 4}, PcType::none, 1, tight());
    BOOST_TEST(z.st.reason == Reason::breakdown_rv, z.st.summary());
    BOOST_TEST(z.st.iterations == 0);
    BOOST_TEST(z.x == std::vector<double>(4, 0.0), boost::test_tools::per_element());
    // a 90° rotation: (r, A r) = 0 for every r
    const auto rot = square_coo(2, {0, 1}, {1, 0}, {1.0, -1.0});
    const Run r = run(Method::bicgstab, rot, {1, 2}, PcType::none, 1, tight());
    BOOST_TEST(r.st.reason == Reason::breakdown_rv, r.st.summary());
    BOOST_TEST(r.st.iterations == 0);
    BOOST_TEST(std::string(to_string(r.st.reason)) == "breakdown_rv");
}

BOOST_AUTO_TEST_CASE(bicgstab_stops_at_the_half_step_when_s_vanishes)
{
    // A = 2 I: α = 1/2 makes s = r − α A r = 0, so ‖s‖ ≤ tol ends the first iteration at the
    // half step x = α p = b / 2 (ω = 0, no breakdown reported although t = A ŝ = 0 too)
    const auto a = square_coo(3, {0, 1, 2}, {0, 1, 2}, {2.0, 2.0, 2.0});
    const Run r = run(Method::bicgstab, a, {2, -4, 6}, PcType::none, 1, tight());
    BOOST_TEST(is_converged(r.st.reason), r.st.summary());
    BOOST_TEST(r.st.iterations == 1);
    BOOST_TEST(r.x == (std::vector<double>{1.0, -2.0, 3.0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(breakdown_omega_when_t_is_orthogonal_to_s)
{
    // A = [[1, 1], [1, 0]], b = e1: α = 1, s = (0, −1), t = A s = (−1, 0), (t, s) = 0 → ω = 0.
    // The half step x = α p = (1, 0) is kept, r = s.
    const auto a = square_coo(2, {0, 0, 1}, {0, 1, 0}, {1.0, 1.0, 1.0});
    const Run r = run(Method::bicgstab, a, {1, 0}, PcType::none, 1, tight());
    BOOST_TEST(r.st.reason == Reason::breakdown_omega, r.st.summary());
    BOOST_TEST(r.st.iterations == 1);
    BOOST_TEST(r.x == (std::vector<double>{1.0, 0.0}), boost::test_tools::per_element());
    BOOST_TEST(r.st.residual_norm == 1.0);
}

BOOST_AUTO_TEST_CASE(breakdown_rho_when_r_is_orthogonal_to_r_hat)
{
    // A = [[1,1,1],[1,2,1],[-1,0,2]], b = e1: s = (0,-1,1), t = (0,-1,2), ω = 3/5,
    // r1 = s − ω t has r1[0] = 0 exactly, so ρ1 = (e1, r1) = 0 while r1 ≠ 0.
    const auto a = square_coo(3, {0, 0, 0, 1, 1, 1, 2, 2}, {0, 1, 2, 0, 1, 2, 0, 2},
                              {1, 1, 1, 1, 2, 1, -1, 2});
    const Run r = run(Method::bicgstab, a, {1, 0, 0}, PcType::none, 1, tight());
    BOOST_TEST(r.st.reason == Reason::breakdown_rho, r.st.summary());
    BOOST_TEST(r.st.iterations == 1);
    BOOST_TEST(std::abs(r.st.residual_norm - std::sqrt(0.4 * 0.4 + 0.2 * 0.2)) <= 1e-15);
}

BOOST_AUTO_TEST_CASE(max_it_reports_diverged_max_it_with_the_right_count)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    for (Method m : {Method::bicgstab, Method::cg}) {
        for (int check : {1, 3}) {
            SolverOptions o = tight(1e-14);
            o.max_it = 5;
            o.check_every = check;
            std::vector<int> seen;
            o.monitor = [&](const IterationInfo& i) { seen.push_back(i.iteration); };
            const auto sym = seven_point(9, 8, 7, 0.0, 0.05);
            const Run r = run(m, m == Method::cg ? sym : a, b, PcType::jacobi, 1, o);
            BOOST_TEST(r.st.reason == Reason::diverged_max_it, r.st.summary());
            BOOST_TEST(r.st.iterations == 5);
            BOOST_TEST(r.st.history.size() == 6u);
            BOOST_TEST(seen == (std::vector<int>{0, 1, 2, 3, 4, 5}),
                       boost::test_tools::per_element());
            BOOST_TEST(r.st.true_residual_norm > 0);
        }
    }
    // max_it = 0 only evaluates the initial residual
    SolverOptions o = tight();
    o.max_it = 0;
    const Run r = run(Method::bicgstab, a, b, PcType::none, 1, o);
    BOOST_TEST(r.st.reason == Reason::diverged_max_it);
    BOOST_TEST(r.st.iterations == 0);
}

BOOST_AUTO_TEST_CASE(nan_in_b_is_diverged_nan)
{
    const auto a = seven_point(5, 4, 3, 0.2, 0.1);
    auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    b[17] = nan_v;
    for (Method m : {Method::bicgstab, Method::cg}) {
        const Run r = run(m, a, b, m == Method::cg ? PcType::jacobi : PcType::ilu0, 1, tight());
        BOOST_TEST(r.st.reason == Reason::diverged_nan, r.st.summary());
        BOOST_TEST(r.st.iterations == 0);
    }
}

BOOST_AUTO_TEST_CASE(dtol_stops_a_growing_residual)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    SolverOptions o = tight();
    o.dtol = 1e-3;  // any ‖r1‖ above 1e-3 ‖r0‖ counts as divergence
    const Run r = run(Method::bicgstab, a, b, PcType::none, 1, o);
    BOOST_TEST(r.st.reason == Reason::diverged_dtol, r.st.summary());
    BOOST_TEST(r.st.iterations == 1);
}

BOOST_AUTO_TEST_CASE(stagnation_is_detected)
{
    // A singular, inconsistent system: the last equation reads 0 = 1, so ‖r‖ ≥ 1 forever
    // while the other components converge; CG's residual flattens out at 1.
    const index_t n = 30;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < n; ++i) {
        r.push_back(i);
        c.push_back(i);
        v.push_back(i + 1 < n ? 1.0 + i : 0.0);
    }
    const auto a = square_coo(n, r, c, v);
    std::vector<double> b(std::size_t(n), 1.0);
    SolverOptions o = tight();
    o.stagnation_window = 10;
    o.check_every = 2;
    const Run s = run(Method::cg, a, b, PcType::none, 1, o);
    BOOST_TEST(s.st.reason == Reason::stagnation, s.st.summary());
    BOOST_TEST(s.st.iterations < o.max_it);
    BOOST_TEST(s.st.residual_norm >= 1.0 - 1e-12);
}

namespace {
/// The solvers that take a caller's stop test and give the iterate: the fused BiCGStab (on
/// `nonsym`), CG (on `spd`) and, on a GPU, the cuBLAS reference BiCGStab.
struct CallerCase {
    Method method;
    BicgstabImpl impl;
    const Coo<double>* a;
};
std::vector<CallerCase> caller_cases(const Coo<double>& spd, const Coo<double>& nonsym)
{
    std::vector<CallerCase> cases = {{Method::bicgstab, BicgstabImpl::fused, &nonsym},
                                     {Method::cg, BicgstabImpl::fused, &spd}};
    if (test::testing_on_gpu())
        cases.push_back({Method::bicgstab, BicgstabImpl::reference, &nonsym});
    return cases;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_callers_stop_test_stops_the_solve_at_its_own_iteration)
{
    // SolverOptions::stop_test (a PETSc host's KSPSetConvergenceTest through the plugin): its
    // verdict stops the solve exactly at the iteration it names -- whatever check_every, on
    // the GPU too (no batch queued behind the host's check) -- with the x of that iteration,
    // and it sees every iteration from 0 in order, after the monitor.
    const auto spd = seven_point(10, 9, 8, 0.0, 0.0, true);
    const auto nonsym = seven_point(9, 8, 7, 0.4, 0.05);
    for (const CallerCase& c : caller_cases(spd, nonsym)) {
        const auto& a = *c.a;
        const auto b = test::random_vector<double>(std::size_t(a.rows), 4);
        const PcType pc = PcType::jacobi;
        const Run full =
            run(c.method, a, b, pc, 1, tight(1e-12), test::test_executor(), {}, c.impl);
        BOOST_REQUIRE(full.st.converged());
        const auto& h = full.st.history;
        // the caller's test: ‖r‖ < 1e-5 ‖r0‖, which heptane's own (off) would not stop on
        std::size_t k = 0;
        while (k < h.size() && !(h[k] < 1e-5 * h[0])) ++k;
        BOOST_REQUIRE(k > 2 && k + 1 < h.size());
        for (int check_every : {0, 1, 8}) {
            SolverOptions o = tight(0.0);
            o.check_every = check_every;
            std::vector<int> seen, monitored;
            double r0 = -1;
            o.monitor = [&](const IterationInfo& i) { monitored.push_back(i.iteration); };
            o.stop_test = [&](const IterationInfo& i) {
                BOOST_TEST(monitored.size() == seen.size() + 1);  // the monitor first
                seen.push_back(i.iteration);
                if (i.iteration == 0) r0 = i.residual_norm;
                return i.residual_norm < 1e-5 * r0 ? Verdict::converged : Verdict::go_on;
            };
            const Run r = run(c.method, a, b, pc, 1, o, test::test_executor(), {}, c.impl);
            BOOST_TEST(r.st.reason == Reason::converged_by_caller, r.st.summary());
            BOOST_TEST(r.st.converged());
            BOOST_TEST(r.st.iterations == int(k), "check_every " << check_every);
            std::vector<int> expect(k + 1);
            for (std::size_t i = 0; i <= k; ++i) expect[i] = int(i);
            BOOST_TEST(seen == expect, boost::test_tools::per_element());
            BOOST_TEST(std::abs(r.st.residual_norm - h[k]) <= 1e-8 * h[k]);
            // the x of iteration k: what max_it = k leaves
            SolverOptions m = tight(0.0);
            m.max_it = int(k);
            const Run ref = run(c.method, a, b, pc, 1, m, test::test_executor(), {}, c.impl);
            BOOST_TEST(ref.st.reason == Reason::diverged_max_it);
            BOOST_TEST(max_abs_diff(r.x, ref.x) <= 1e-10 * norm_inf(ref.x));
            // its true residual is the x's
            const double tr = norm2(residual(a, r.x, b)) / norm2(b);
            BOOST_TEST(std::abs(r.st.true_relative_residual - tr) <= residual_rounding(a, r.x, b));
        }
        // a "diverged" verdict at iteration 3; one at iteration 0 leaves x0 (= 0)
        for (int at : {3, 0}) {
            SolverOptions o = tight(0.0);
            o.stop_test = [at](const IterationInfo& i) {
                return i.iteration == at ? Verdict::diverged : Verdict::go_on;
            };
            const Run r = run(c.method, a, b, pc, 1, o, test::test_executor(), {}, c.impl);
            BOOST_TEST(r.st.reason == Reason::diverged_by_caller, r.st.summary());
            BOOST_TEST(!r.st.converged());
            BOOST_TEST(r.st.iterations == at);
            if (at == 0) BOOST_TEST(norm_inf(r.x) == 0.0);
        }
        // heptane's own test, where it is on, stops first when it is met first
        SolverOptions o = tight(1e-2);
        o.stop_test = [](const IterationInfo&) { return Verdict::go_on; };
        const Run own = run(c.method, a, b, pc, 1, o, test::test_executor(), {}, c.impl);
        BOOST_TEST(own.st.reason == Reason::converged_rtol, own.st.summary());
    }
}

BOOST_AUTO_TEST_CASE(a_monitor_reads_each_iterate_with_monitor_iterate)
{
    // SolverOptions::monitor_iterate: IterationInfo::iterate gives x_i, the x of that very
    // iteration (what max_it = i leaves), on the GPU too; without it the fused loops give
    // none (their x may be iterations ahead on a GPU). The answer does not change.
    const auto spd = seven_point(10, 9, 8, 0.0, 0.0, true);
    const auto nonsym = seven_point(9, 8, 7, 0.4, 0.05);
    for (const CallerCase& c : caller_cases(spd, nonsym)) {
        const auto& a = *c.a;
        const auto b = test::random_vector<double>(std::size_t(a.rows), 8);
        const auto x0 = test::random_vector<double>(std::size_t(a.rows), 9);
        const Run plain =
            run(c.method, a, b, PcType::jacobi, 1, tight(), test::test_executor(), x0, c.impl);
        BOOST_REQUIRE(plain.st.converged());
        SolverOptions o = tight();
        o.monitor_iterate = true;
        std::map<int, std::vector<double>> got;
        int calls = 0;
        o.monitor = [&](const IterationInfo& i) {
            ++calls;
            BOOST_REQUIRE(bool(i.iterate));
            if (i.iteration != 0 && i.iteration != 2 && i.iteration != 5) return;
            std::vector<double> xi(std::size_t(a.rows));
            i.iterate(xi.data());
            // its true residual is the recursive one, up to the recursion's drift
            const double tr = norm2(residual(a, xi, b));
            BOOST_TEST(std::abs(tr - i.residual_norm) <= 1e-8 * norm2(b));
            got[i.iteration] = xi;
        };
        const Run r = run(c.method, a, b, PcType::jacobi, 1, o, test::test_executor(), x0, c.impl);
        BOOST_TEST(r.st.iterations == plain.st.iterations);
        BOOST_TEST(max_abs_diff(r.x, plain.x) <= 1e-12 * norm_inf(plain.x));
        BOOST_TEST(calls == r.st.iterations + 1);
        BOOST_REQUIRE(got.size() == 3u);
        BOOST_TEST(max_abs_diff(got[0], x0) == 0.0);
        for (int k : {2, 5}) {
            SolverOptions m = tight();
            m.max_it = k;
            const Run ref =
                run(c.method, a, b, PcType::jacobi, 1, m, test::test_executor(), x0, c.impl);
            BOOST_TEST(max_abs_diff(got[k], ref.x) <= 1e-12 * norm_inf(ref.x), "iteration " << k);
        }
        if (c.impl == BicgstabImpl::fused) {  // not asked for: none
            SolverOptions q = tight();
            bool any = false;
            q.monitor = [&](const IterationInfo& i) { any = any || bool(i.iterate); };
            run(c.method, a, b, PcType::jacobi, 1, q, test::test_executor(), x0, c.impl);
            BOOST_TEST(!any);
        }
    }
}

BOOST_AUTO_TEST_CASE(nonzero_initial_guess_is_honoured_and_ignored_when_not_asked)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    const auto x_lu = sparse_lu(a, b);
    const Run cold = run(Method::bicgstab, a, b, PcType::ilu0, 1, tight());
    // a guess near the solution: fewer iterations, and ‖r0‖ is ‖b − A x0‖
    auto x0 = x_lu;
    const auto noise = test::random_vector<double>(x0.size(), 9);
    for (std::size_t i = 0; i < x0.size(); ++i) x0[i] += 1e-4 * noise[i];
    const Run warm =
        run(Method::bicgstab, a, b, PcType::ilu0, 1, tight(), test::test_executor(), x0);
    BOOST_TEST(warm.st.converged());
    BOOST_TEST(warm.st.iterations < cold.st.iterations);
    const double r0 = norm2(residual(a, x0, b));
    BOOST_TEST(std::abs(warm.st.initial_residual_norm - r0) <= 1e-10 * r0);
    BOOST_TEST(std::abs(cold.st.initial_residual_norm - norm2(b)) <= 1e-12 * norm2(b));

    // without the flag, whatever x holds is ignored
    auto exec = test::test_executor();
    auto op = std::shared_ptr<const Operator<double>>(
        make_matrix_operator<double, double>(a, Format::csr, exec));
    Bicgstab<double> s(tight());
    s.set_operator(op);
    s.set_preconditioner(make_preconditioner<double>(PcType::ilu0, csr_from_coo(a), 1, exec));
    const Array<double> bd = Array<double>(b).to(exec);
    Array<double> garbage = Array<double>(std::vector<double>(b.size(), 1e30)).to(exec);
    const Status st = s.solve(bd, garbage);
    BOOST_TEST(st.iterations == cold.st.iterations);
    BOOST_TEST(garbage.to_vector() == cold.x, boost::test_tools::per_element());
}

namespace {

/// An operator that counts its products and says it is host-paced (or not) as told.
class CountingOperator final : public Operator<double> {
public:
    CountingOperator(std::shared_ptr<const Operator<double>> a, bool paced)
        : a_(std::move(a)), paced_(paced)
    {
    }
    index_t rows() const override { return a_->rows(); }
    index_t cols() const override { return a_->cols(); }
    std::shared_ptr<const Executor> executor() const override { return a_->executor(); }
    void apply(double alpha, const double* x, double beta, double* y) const override
    {
        ++products;
        a_->apply(alpha, x, beta, y);
    }
    void apply_transpose(double alpha, const double* x, double beta, double* y) const override
    {
        a_->apply_transpose(alpha, x, beta, y);
    }
    std::string describe() const override { return "counting " + a_->describe(); }
    bool host_paced() const override { return paced_; }
    mutable int products = 0;

private:
    std::shared_ptr<const Operator<double>> a_;
    bool paced_;
};

}  // namespace

// Solver::prepare makes what a solve would allocate at its start: a solve after it allocates
// nothing on the executor (Executor::allocations), a solve without it does, and the answers
// are the same bit for bit; a larger max_it (BiCGStab, CG: the history) or another restart
// (GMRES) makes the workspace again, as the solve would. Each solver, without a
// preconditioner and with Jacobi, on the test executor (the CPU, or the GPU under
// HEPTANE_TEST_DEVICE=cuda).
BOOST_AUTO_TEST_CASE(warm_up_runs_each_solver_and_leaves_the_executor_as_it_was)
{
    // the PETSc plugin's prewarm: tiny solves that load the device code (a GPU); every one must
    // converge, and a solve after them gives what it gave before, bit for bit
    auto exec = test::test_executor();
    const auto a = seven_point(11, 9, 8, 0.0, 0.0, true);
    std::vector<double> b(std::size_t(a.rows));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0 + double(i % 5);
    const std::shared_ptr<const Operator<double>> op(
        make_matrix_operator<double, double>(a, Format::bdia, exec));
    const std::shared_ptr<const Operator<double>> jacobi(
        make_preconditioner<double>(PcType::jacobi, csr_from_coo(a), 1, exec));
    const Array<double> bd = Array<double>(b).to(exec);
    const auto solve = [&] {
        Bicgstab<double> s;
        s.options().rtol = 1e-8;
        s.set_operator(op);
        s.set_preconditioner(jacobi);
        Array<double> x(exec, b.size());
        const Status st = s.solve(bd, x);
        BOOST_TEST(st.converged(), st.summary());
        return std::make_pair(st.iterations, x.to_vector());
    };
    const auto before = solve();
    const WarmUpReport rep =
        warm_up_krylov(exec, {SolverType::bicgstab, SolverType::cg, SolverType::gmres}, {1, 3});
    BOOST_TEST(rep.solves == 2 * (2 + 1 + 1));  // BiCGStab folded and not, CG, GMRES; Nc 1, 3
    BOOST_TEST(rep.ms > 0);
    const auto after = solve();
    BOOST_TEST(after.first == before.first);
    BOOST_TEST(after.second == before.second, boost::test_tools::per_element());
    BOOST_TEST(warm_up_krylov(exec, {}, {1}).solves == 0);
    BOOST_CHECK_THROW(warm_up_krylov(exec, {SolverType::cg}, {9}), InputError);
}

BOOST_AUTO_TEST_CASE(prepare_moves_a_solves_allocations_before_it)
{
    const auto a = seven_point(12, 10, 9, 0.0, 0.0, true);  // SPD: CG too
    std::vector<double> b(std::size_t(a.rows));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0 + double(i % 7);
    auto exec = test::test_executor();
    const std::shared_ptr<const Operator<double>> op(
        make_matrix_operator<double, double>(a, Format::csr, exec));
    const std::shared_ptr<const Operator<double>> jacobi(
        make_preconditioner<double>(PcType::jacobi, csr_from_coo(a), 1, exec));
    const Array<double> bd = Array<double>(b).to(exec);
    SolverOptions o;
    o.rtol = 1e-8;
    o.max_it = 500;
    const auto make = [&](int method) -> std::unique_ptr<Solver<double>> {
        if (method == 0) return std::make_unique<Bicgstab<double>>(o);
        if (method == 1) return std::make_unique<Cg<double>>(o);
        return std::make_unique<Gmres<double>>(o, 12);
    };
    for (int method = 0; method < 3; ++method) {
        for (const auto& m : {std::shared_ptr<const Operator<double>>(), jacobi}) {
            auto cold = make(method), warm = make(method);
            BOOST_TEST_CONTEXT(cold->name() << (m ? " + jacobi" : ""))
            {
                BOOST_CHECK_THROW(warm->prepare(), InputError);  // no operator yet
                for (auto* s : {cold.get(), warm.get()}) {
                    s->set_operator(op);
                    s->set_preconditioner(m);
                }
                Array<double> x_cold(exec, b.size()), x_warm(exec, b.size());
                std::uint64_t before = exec->allocations();
                const Status st_cold = cold->solve(bd, x_cold);
                BOOST_TEST(exec->allocations() > before);  // the solve made its workspace
                before = exec->allocations();
                warm->prepare();
                BOOST_TEST(exec->allocations() > before);
                before = exec->allocations();
                const Status st_warm = warm->solve(bd, x_warm);
                BOOST_TEST(exec->allocations() == before);  // nothing left to make
                BOOST_TEST(st_warm.converged(), st_warm.summary());
                BOOST_TEST(st_warm.iterations == st_cold.iterations);
                BOOST_TEST(x_warm.to_vector() == x_cold.to_vector(),
                           boost::test_tools::per_element());
                before = exec->allocations();
                warm->prepare();  // the same key: nothing new
                BOOST_TEST(exec->allocations() == before);
                // a workspace for another shape: made again by prepare, then a solve without
                // allocations and with the same answer
                if (auto* g = dynamic_cast<Gmres<double>*>(warm.get()))
                    g->set_restart(20);
                else
                    warm->options().max_it = 800;
                warm->prepare();
                BOOST_TEST(exec->allocations() > before);
                before = exec->allocations();
                const Status st_again = warm->solve(bd, x_warm);
                BOOST_TEST(exec->allocations() == before);
                BOOST_TEST(st_again.converged(), st_again.summary());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(host_paced_operators_get_no_products_past_the_stop)
{
    // an out-of-core product streams the matrix: iterations queued past the stop would cost
    // whole products. A host-paced operator gets the iterations' products, the initial and
    // the true residual's, and no more (on a GPU too, where checks otherwise run ahead).
    const auto a = seven_point(12, 10, 9, 0.0, 0.0, true);  // SPD: CG too
    std::vector<double> b(std::size_t(a.rows));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0 + double(i % 5);
    auto exec = test::test_executor();
    const std::shared_ptr<const Operator<double>> base(
        make_matrix_operator<double, double>(a, Format::csr, exec));
    const auto m = std::shared_ptr<const Preconditioner<double>>(
        make_preconditioner<double>(PcType::jacobi, csr_from_coo(a), 1, exec));
    const Array<double> bd = Array<double>(b).to(exec);
    SolverOptions o;
    o.rtol = 1e-8;
    for (int method = 0; method < 3; ++method) {
        auto op = std::make_shared<CountingOperator>(base, true);
        std::unique_ptr<Solver<double>> s;
        if (method == 0) s = std::make_unique<Bicgstab<double>>(o);
        if (method == 1) s = std::make_unique<Cg<double>>(o);
        if (method == 2) s = std::make_unique<Gmres<double>>(o, 10);
        s->set_operator(op);
        s->set_preconditioner(m);
        Array<double> x(exec, b.size());
        const Status st = s->solve(bd, x);
        BOOST_TEST(st.converged(), st.summary());
        BOOST_TEST(st.iterations > 8);
        // BiCGStab: 2 a step; CG 1; GMRES 1 a step and one residual a restart
        const int per = method == 0 ? 2 : 1;
        const int restarts = method == 2 ? st.iterations / 10 : 0;
        BOOST_TEST(op->products <= per * st.iterations + restarts + 2,
                   s->name() << ": " << op->products << " products for " << st.iterations
                             << " iterations");
    }
}

BOOST_AUTO_TEST_CASE(exact_initial_guess_converges_at_iteration_0)
{
    // integer matrix and solution: b = A x is exact in floating point, so r0 = 0
    const auto a = seven_point(6, 5, 4, 0.0, 0.0, true);
    std::vector<double> x(std::size_t(a.rows));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(int(i % 7) - 3);
    std::vector<double> b(x.size(), 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k)
        b[std::size_t(a.row[k])] += a.val[k] * x[std::size_t(a.col[k])];
    for (Method m : {Method::bicgstab, Method::cg}) {
        const Run r = run(m, a, b, PcType::jacobi, 1, tight(), test::test_executor(), x);
        BOOST_TEST(r.st.reason == Reason::converged_rtol, r.st.summary());
        BOOST_TEST(r.st.iterations == 0);
        BOOST_TEST(r.st.residual_norm == 0.0);
        BOOST_TEST(r.x == x, boost::test_tools::per_element());
        BOOST_TEST(r.st.history == std::vector<double>{0.0}, boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(zero_rhs_gives_zero_solution)
{
    const auto a = seven_point(5, 4, 3, 0.2, 0.1);
    const std::vector<double> b(std::size_t(a.rows), 0.0);
    const std::vector<double> x0(b.size(), 3.0);
    const Run r = run(Method::bicgstab, a, b, PcType::none, 1, tight(), test::test_executor(), x0);
    BOOST_TEST(r.st.reason == Reason::converged_atol, r.st.summary());
    BOOST_TEST(r.st.iterations == 0);
    BOOST_TEST(r.x == b, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(check_every_does_not_change_the_result)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    std::vector<Run> runs;
    for (int k : {1, 4, 7, 64}) {
        SolverOptions o = tight();
        o.check_every = k;
        runs.push_back(run(Method::bicgstab, a, b, PcType::ilu0, 1, o));
    }
    for (const Run& r : runs) {
        BOOST_TEST(r.st.iterations == runs[0].st.iterations);
        BOOST_TEST(r.x == runs[0].x, boost::test_tools::per_element());
        BOOST_TEST(r.st.history == runs[0].st.history, boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(float_vectors_converge_to_single_precision_tolerances)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    auto exec = test::test_executor();
    std::shared_ptr<const Operator<float>> op =
        make_matrix_operator<float, float>(a, Format::csr, exec);
    Bicgstab<float> s(tight(1e-5));
    s.set_operator(op);
    s.set_preconditioner(make_preconditioner<float>(PcType::ilu0, csr_from_coo(a), 1, exec));
    const Array<float> bd = Array<float>(std::vector<float>(b.begin(), b.end())).to(exec);
    Array<float> xd(exec, b.size());
    const Status st = s.solve(bd, xd);
    BOOST_TEST(st.converged(), st.summary());
    const auto xf = xd.to_vector();
    const std::vector<double> x(xf.begin(), xf.end());
    BOOST_TEST(norm2(residual(a, x, b)) / norm2(b) <= 1e-4);
}

// ---- the host checks' batch ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(check_every_is_automatic_by_default_and_never_changes_the_answer)
{
    // 0 (the default) reads the residual back after every iteration with a multigrid
    // preconditioner or a host-paced operator and every 8 otherwise; any batch gives the same
    // iterates and count
    auto exec = test::test_executor();
    const auto a = seven_point(12, 10, 8, 0.2, 0.1);
    const Csr<double> csr = csr_from_coo(a);
    std::shared_ptr<const Preconditioner<double>> amg =
        make_preconditioner<double>(PcType::amg, csr, 1, exec);
    std::shared_ptr<const Preconditioner<double>> jacobi =
        make_preconditioner<double>(PcType::jacobi, csr, 1, exec);
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    const CountingOperator paced(op, true);
    SolverOptions o;
    BOOST_TEST(o.check_every == 0);
    BOOST_TEST(detail::effective_check_every<double>(o, *op, amg.get()) == 1);
    BOOST_TEST(detail::effective_check_every<double>(o, *op, jacobi.get()) == 8);
    BOOST_TEST(detail::effective_check_every<double>(o, *op, nullptr) == 8);
    BOOST_TEST(detail::effective_check_every<double>(o, paced, jacobi.get()) == 1);
    o.check_every = 3;
    BOOST_TEST(detail::effective_check_every<double>(o, *op, amg.get()) == 3);
    BOOST_TEST(detail::effective_check_every<double>(o, paced, nullptr) == 3);
    const std::vector<double> bh = test::random_vector<double>(std::size_t(a.rows), 8);
    const Array<double> b = Array<double>(bh).to(exec);
    std::vector<double> first;
    int its = -1;
    for (int k : {0, 1, 8}) {
        Cg<double> cg(tight(1e-9));
        cg.options().check_every = k;
        cg.set_operator(op);
        cg.set_preconditioner(amg);
        Array<double> x(exec, bh.size());
        const Status st = cg.solve(b, x);
        BOOST_TEST(st.converged(), st.summary());
        if (its < 0) {
            its = st.iterations;
            first = x.to_vector();
        } else {
            BOOST_TEST(st.iterations == its);
            BOOST_TEST(x.to_vector() == first);  // the same iterates, bit for bit
        }
    }
}

// ---- misuse ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(misuse_throws)
{
    auto exec = test::test_executor();
    const auto a = seven_point(5, 4, 3, 0.2, 0.1);
    const std::size_t n = std::size_t(a.rows);
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    Array<double> b = Array<double>(std::vector<double>(n, 1.0)).to(exec);
    Array<double> x(exec, n);
    Array<double> short_x(exec, n - 1);

    Bicgstab<double> none;
    BOOST_CHECK_THROW(none.solve(b, x), InputError);  // no operator

    Bicgstab<double> s;
    s.set_operator(op);
    BOOST_CHECK_THROW(s.solve(b, short_x), DimensionMismatch);
    BOOST_CHECK_THROW(s.solve(short_x, x), DimensionMismatch);
    BOOST_CHECK_THROW(s.solve(b, b), InputError);
    const auto small = seven_point(3, 3, 3, 0.2, 0.1);
    s.set_preconditioner(make_preconditioner<double>(PcType::jacobi, csr_from_coo(small), 1, exec));
    BOOST_CHECK_THROW(s.solve(b, x), DimensionMismatch);
    s.set_preconditioner(nullptr);
    s.options().check_every = -1;
    BOOST_CHECK_THROW(s.solve(b, x), InputError);
    s.options().check_every = 4;
    s.options().rtol = -1;
    BOOST_CHECK_THROW(s.solve(b, x), InputError);
    s.options().rtol = 1e-8;
    BOOST_TEST(s.solve(b, x).converged());

    Cg<double> cg;
    BOOST_CHECK_THROW(cg.solve(b, x), InputError);
    cg.set_operator(op);
    BOOST_CHECK_THROW(cg.solve(b, short_x), DimensionMismatch);

    BOOST_CHECK_THROW(parse_bicgstab_impl("fast"), InputError);
    BOOST_CHECK_THROW(parse_solver("minres"), InputError);
    BOOST_CHECK_THROW(make_executor("tpu"), InputError);
    BOOST_CHECK_THROW(make_executor("cuda:x"), InputError);

    if (test::testing_on_gpu()) {
        // b on the host while the operator is on the device
        const Array<double> b_host(std::vector<double>(n, 1.0));
        BOOST_CHECK_THROW(s.solve(b_host, x), DimensionMismatch);
        // a preconditioner on another executor (the CPU)
        s.set_preconditioner(
            make_preconditioner<double>(PcType::jacobi, csr_from_coo(a), 1, cpu_executor()));
        BOOST_CHECK_THROW(s.solve(b, x), DimensionMismatch);
    } else {
        // the reference implementation is CUDA only
        Bicgstab<double> ref(SolverOptions{}, BicgstabImpl::reference);
        ref.set_operator(op);
        BOOST_CHECK_THROW(ref.solve(b, x), NotSupported);
        BOOST_CHECK_THROW(make_cusparse_csr_operator(csr_from_coo(a), exec), NotSupported);
    }
}

// ---- CPU and device --------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(cpu_and_device_agree)
{
    // On the GPU run this compares the device with the CPU in the same program; on the CPU
    // run both sides are the CPU (a determinism check).
    HeptaSpec spec;
    spec.J = 10;
    spec.H = 8;
    spec.I = 5;
    spec.Nc = 2;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    spec.seed = 3;
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    const auto x_lu = sparse_lu(a, b);
    for (PcType pc :
         {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0, PcType::ilu0_mc}) {
        const Run dev = run(Method::bicgstab, a, b, pc, 2, tight());
        const Run host = run(Method::bicgstab, a, b, pc, 2, tight(), cpu_executor());
        BOOST_TEST(dev.st.converged(), dev.st.summary());
        BOOST_TEST(host.st.converged(), host.st.summary());
        BOOST_TEST(std::abs(dev.st.iterations - host.st.iterations) <= 1);
        const double scale = norm_inf(x_lu);
        BOOST_TEST(max_abs_diff(dev.x, x_lu) <= 1e-6 * scale);
        BOOST_TEST(max_abs_diff(dev.x, host.x) <= 1e-6 * scale);
    }
    spec.Nc = 1;
    const auto p = generate_hepta_coo<double>(spec);
    const auto bp = make_rhs(spec, p).b;
    const Run dev = run(Method::cg, p, bp, PcType::jacobi, 1, tight());
    const Run host = run(Method::cg, p, bp, PcType::jacobi, 1, tight(), cpu_executor());
    BOOST_TEST(dev.st.converged(), dev.st.summary());
    BOOST_TEST(std::abs(dev.st.iterations - host.st.iterations) <= 1);
    BOOST_TEST(max_abs_diff(dev.x, host.x) <= 1e-6 * norm_inf(host.x));
}

BOOST_AUTO_TEST_CASE(reference_bicgstab_matches_fused_on_the_gpu)
{
    if (!test::testing_on_gpu()) {
        BOOST_TEST_MESSAGE(
            "the reference BiCGStab is CUDA only (NotSupported checked in misuse_throws)");
        return;
    }
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    const auto x_lu = sparse_lu(a, b);
    for (PcType pc : {PcType::none, PcType::ilu0}) {
        const Run fused = run(Method::bicgstab, a, b, pc, 1, tight());
        const Run ref = run(Method::bicgstab, a, b, pc, 1, tight(), test::test_executor(), {},
                            BicgstabImpl::reference);
        check_converged(ref, a, b, x_lu, 1e-10, 1.0 / dominance_margin(a));
        BOOST_TEST(std::abs(fused.st.iterations - ref.st.iterations) <= 1);
    }
    // the reference reports breakdowns the same way
    const auto rot = square_coo(2, {0, 1}, {1, 0}, {1.0, -1.0});
    const Run r = run(Method::bicgstab, rot, {1, 2}, PcType::none, 1, tight(),
                      test::test_executor(), {}, BicgstabImpl::reference);
    BOOST_TEST(r.st.reason == Reason::breakdown_rv);
}

BOOST_AUTO_TEST_CASE(cuda_graph_replay_matches_plain_launches)
{
    // Batches replayed from a CUDA graph run the same kernels in the same order as plain
    // launches: the same history, bit for bit, for every preconditioner; a CSR operator
    // (whose kernels may wait on the host) falls back to plain launches.
    if (!test::testing_on_gpu()) {
        BOOST_TEST_MESSAGE("CUDA graphs: GPU only (the CPU has no graphs to record)");
        return;
    }
    auto exec = test::test_executor();
    const auto nonsym = seven_point(9, 8, 7, 0.4, 0.05);
    const auto spd = seven_point(9, 8, 7, 0.0, 0.0, true);
    const auto b = test::random_vector<double>(std::size_t(nonsym.rows), 3);
    const Array<double> bd = Array<double>(b).to(exec);
    for (PcType pc :
         {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0, PcType::ilu0_mc}) {
        for (Method method : {Method::bicgstab, Method::cg}) {
            if (method == Method::cg && (pc == PcType::ilu0 || pc == PcType::ilu0_mc)) continue;
            const Coo<double>& a = method == Method::cg ? spd : nonsym;
            const auto bdia = make_matrix_operator<double, double>(a, Format::bdia, exec);
            BOOST_TEST(bdia->graph_safe());
            const auto m = make_preconditioner<double>(pc, csr_from_coo(a), 1, exec);
            Status st[2];
            std::vector<double> x[2];
            for (int graphs = 0; graphs < 2; ++graphs) {
                SolverOptions o = tight();
                o.check_every = 3;
                o.cuda_graphs = graphs == 1;
                Array<double> xd(exec, b.size());
                st[graphs] = solve_with(method, *bdia, *m, o, bd, xd);
                x[graphs] = xd.to_vector();
            }
            const std::string what =
                std::string(method == Method::cg ? "cg" : "bicgstab") + " pc=" + to_string(pc);
            BOOST_TEST(st[1].iterations > 6, what);  // at least one replayed batch
            BOOST_TEST(st[1].cuda_graph, what);
            BOOST_TEST(!st[0].cuda_graph, what);
            BOOST_TEST(st[1].iterations == st[0].iterations, what);
            BOOST_TEST(st[1].reason == st[0].reason, what);
            BOOST_TEST(st[1].history == st[0].history, boost::test_tools::per_element());
            BOOST_TEST(x[1] == x[0], boost::test_tools::per_element());
        }
    }
    // CSR: not graph-safe, plain launches
    const Run csr = run(Method::bicgstab, nonsym, b, PcType::jacobi, 1, tight());
    BOOST_TEST(!csr.st.cuda_graph);
}

BOOST_AUTO_TEST_CASE(fused_dots_follow_the_separate_reductions)
{
    // BDIA-GH on a GPU computes BiCGStab's (r̂, v) and (t, s), (t, t), (s, s), and CG's (p, q)
    // inside the products (Operator::apply_fused_dots); the sums come in another order, so
    // the loop follows the unfused one to rounding: the same iterations (give or take one),
    // residual histories and solutions agreeing to 1e-8. Status::fused_dots says which ran;
    // on the CPU nothing fuses and the runs are the same loop. Fused two ways: the products'
    // partial sums added up by a reduction kernel (fused_finish off), and by the product's
    // last CTA, which also takes α and ω (SolverOptions::fused_finish, the default); and
    // BiCGStab without a preconditioner with p and s formed inside the products
    // (SolverOptions::fused_inputs), whose buffers swap roles each iteration: only where a
    // recorded graph holds an even number of iterations.
    auto exec = test::test_executor();
    HeptaSpec spec;
    spec.J = 12;
    spec.H = 10;
    spec.I = 8;
    spec.Nc = 3;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    spec.seed = 5;
    const auto coupled = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, coupled).b;
    const auto spd = seven_point(12, 10, 8, 0.0, 0.0, true);
    const auto bs = test::random_vector<double>(std::size_t(spd.rows), 4);
    for (Method method : {Method::bicgstab, Method::cg})
        for (PcType pc : {PcType::none, PcType::block_jacobi, PcType::ilu0_mc}) {
            if (method == Method::cg && pc == PcType::ilu0_mc) continue;
            const Coo<double>& a = method == Method::cg ? spd : coupled;
            const std::vector<double>& rhs = method == Method::cg ? bs : b;
            const index_t nc = method == Method::cg ? 1 : 3;
            FormatOptions fo;
            fo.block_size = nc;
            const auto op = make_matrix_operator<double, double>(a, Format::bdia, exec, fo);
            const auto m = make_preconditioner<double>(pc, csr_from_coo(a), nc, exec);
            const Array<double> bd = Array<double>(rhs).to(exec);
            // 0: no fused dots; 1: reduced apart; 2: finished in the product (no inputs formed);
            // BiCGStab without a preconditioner on a GPU forms its inputs in the products:
            // 3 automatic (both, this system is small), 4 both, reduced apart, 5 both with
            // check_every 2 (graphs of an even batch); 6 both asked with check_every 3 (an odd
            // batch) and 7 with a monitor of the iterates (batches of 1) form s alone; 8 s
            const FusedInputs ask[] = {
                FusedInputs::none,      FusedInputs::none,    FusedInputs::none,
                FusedInputs::automatic, FusedInputs::p_and_s, FusedInputs::p_and_s,
                FusedInputs::p_and_s,   FusedInputs::p_and_s, FusedInputs::s};
            constexpr int runs = 9;
            Status st[runs];
            std::vector<double> x[runs];
            int monitored = 0;
            for (int fused = 0; fused < runs; ++fused) {
                SolverOptions o = tight();
                o.fused_dots = fused >= 1;
                o.fused_finish = fused != 1 && fused != 4;
                o.fused_inputs = ask[fused];
                if (fused == 5) o.check_every = 2;
                if (fused == 6) o.check_every = 3;
                if (fused == 7) {  // each iterate read: batches of 1
                    o.monitor = [&](const IterationInfo&) { ++monitored; };
                    o.monitor_iterate = true;
                }
                Array<double> xd(exec, rhs.size());
                st[fused] = solve_with(method, *op, *m, o, bd, xd);
                x[fused] = xd.to_vector();
            }
            BOOST_TEST(monitored == st[7].iterations + 1);
            const bool forms = exec->is_cuda() && method == Method::bicgstab && pc == PcType::none;
            for (int f = 1; f < runs; ++f)
                BOOST_TEST_CONTEXT((method == Method::cg ? "cg" : "bicgstab")
                                   << " pc=" << to_string(pc) << " on " << exec->name() << ", run "
                                   << f)
                {
                    BOOST_TEST(st[f].converged(), st[f].summary());
                    BOOST_TEST(st[0].converged(), st[0].summary());
                    BOOST_TEST(st[f].reason == st[0].reason);
                    BOOST_TEST(st[f].fused_dots == exec->is_cuda());
                    const FusedInputs formed = !forms             ? FusedInputs::none
                                               : f >= 3 && f <= 5 ? FusedInputs::p_and_s
                                               : f >= 6           ? FusedInputs::s
                                                                  : FusedInputs::none;
                    BOOST_TEST(int(st[f].fused_inputs) == int(formed));
                    BOOST_TEST(!st[0].fused_dots);
                    BOOST_TEST(std::abs(st[f].iterations - st[0].iterations) <= 1);
                    const std::size_t k = std::min<std::size_t>(8, st[0].history.size());
                    for (std::size_t i = 0; i < k; ++i)
                        BOOST_TEST(std::abs(st[f].history[i] - st[0].history[i]) <=
                                       1e-8 * st[0].history[0],
                                   "iteration " << i);
                    BOOST_TEST(max_abs_diff(x[f], x[0]) <= 1e-8 * norm_inf(x[0]));
                    BOOST_TEST(st[f].true_relative_residual <= 1e-9);
                }
            // the fused runs add the same partial sums in another order
            BOOST_TEST(std::abs(st[2].iterations - st[1].iterations) <= 1);
            BOOST_TEST(std::abs(st[3].iterations - st[2].iterations) <= 1);
        }
}

// ---- solve_system ---------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(mixed_precision_refines_to_the_fp64_true_residual)
{
    // fp32 matrix values leave the true residual (fp64 matrix) about 1e-7 behind the
    // recursive one; the fp64 refinement of solve_system brings it to rtol like a double
    // solve, in about as many iterations. Without it the true residual reported is the fp64
    // matrix's and stays above rtol.
    HeptaSpec spec;
    spec.J = 24;
    spec.H = 20;
    spec.I = 10;
    spec.Nc = 1;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    spec.seed = 9;
    const std::string device = test::testing_on_gpu() ? "cuda" : "cpu";
    for (index_t nc : {1, 3}) {
        spec.Nc = nc;
        const auto a = generate_hepta_coo<double>(spec);
        const auto b = make_rhs(spec, a).b;
        const double bn = norm2(b);
        SolveResult r[3];
        const Precision p[3] = {Precision::double_, Precision::mixed, Precision::mixed};
        for (int k = 0; k < 3; ++k) {
            SolveConfig cfg;
            cfg.device = device;
            cfg.format = Format::bdia;
            cfg.format_options.block_size = nc;
            cfg.block_size = nc;
            cfg.pc = PcType::block_jacobi;
            cfg.precision = p[k];
            cfg.refine = k == 1;
            cfg.options.rtol = 1e-10;
            r[k] = solve_system(a, b, cfg);
            BOOST_TEST_MESSAGE(to_string(p[k]) << (k == 2 ? " (no refinement)" : "") << ": "
                                               << r[k].solver << ", " << r[k].status.summary());
        }
        BOOST_TEST_CONTEXT("Nc=" << nc)
        {
            for (int k = 0; k < 2; ++k) {
                BOOST_TEST(r[k].status.converged(), r[k].status.summary());
                BOOST_TEST(norm2(residual(a, r[k].x, b)) / bn <= 1e-10);
            }
            // the reported true residual is the fp64 matrix's, with and without refinement
            for (int k = 1; k < 3; ++k)
                BOOST_TEST(std::abs(r[k].status.true_relative_residual -
                                    norm2(residual(a, r[k].x, b)) / bn) <=
                           1e-3 * r[k].status.true_relative_residual);
            BOOST_TEST(r[1].corrections >= 1);
            BOOST_TEST(r[2].corrections == 0);
            BOOST_TEST(r[1].status.iterations <= r[0].status.iterations * 11 / 10 + 1);
            BOOST_TEST(r[2].status.true_relative_residual > 1e-10);
        }
    }
}

BOOST_AUTO_TEST_CASE(solve_system_taking_the_matrix_over_solves_as_the_copying_one)
{
    // solve_system(Coo&&) builds the same operator and preconditioner from the matrix it
    // takes over: the same iterates (bit for bit on the CPU) for BDIA-GH, CSR and ELL, Jacobi
    // and AMG; it leaves the matrix empty
    HeptaSpec spec;
    spec.J = 16;
    spec.H = 12;
    spec.I = 8;
    spec.Nc = 1;
    spec.banded = false;
    spec.model = HeptaModel::channelized;
    const std::string device = test::testing_on_gpu() ? "cuda" : "cpu";
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    for (Format f : {Format::bdia, Format::csr, Format::ell})
        for (PcType pc : {PcType::jacobi, PcType::amg}) {
            SolveConfig cfg;
            cfg.device = device;
            cfg.solver = SolverType::cg;
            cfg.format = f;
            cfg.format_options.block_size = 1;
            cfg.block_size = 1;
            cfg.pc = pc;
            cfg.options.rtol = 1e-8;
            const SolveResult kept = solve_system(a, b, cfg);
            Coo<double> taken = a;
            const SolveResult moved = solve_system(std::move(taken), b, cfg);
            BOOST_TEST_CONTEXT(to_string(f) << ", " << to_string(pc))
            {
                BOOST_TEST(kept.status.converged(), kept.status.summary());
                if (device == "cpu") {  // the same arithmetic in the same order
                    BOOST_TEST(moved.status.iterations == kept.status.iterations);
                    BOOST_TEST(moved.x == kept.x);
                } else {  // GPU products that reduce with atomics may round differently
                    BOOST_TEST(std::abs(moved.status.iterations - kept.status.iterations) <= 1);
                    double d = 0, n = 0;
                    for (std::size_t i = 0; i < kept.x.size(); ++i) {
                        d = std::max(d, std::abs(moved.x[i] - kept.x[i]));
                        n = std::max(n, std::abs(kept.x[i]));
                    }
                    BOOST_TEST(d <= 1e-6 * n);
                }
                BOOST_TEST(norm2(residual(a, moved.x, b)) / norm2(b) <= 1e-8);
                BOOST_TEST(taken.nnz() == 0);
            }
        }
}

BOOST_AUTO_TEST_CASE(solve_system_in_every_precision_and_format)
{
    HeptaSpec spec;
    spec.J = 8;
    spec.H = 7;
    spec.I = 5;
    spec.Nc = 2;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    spec.seed = 5;
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    const std::string device = test::testing_on_gpu() ? "cuda" : "cpu";

    struct Case {
        Precision p;
        Format f;
        double rtol;
        double expect;  // true residual of the double matrix
    };
    for (const Case& c : {Case{Precision::double_, Format::csr, 1e-10, 1e-9},
                          Case{Precision::double_, Format::bdia, 1e-10, 1e-9},
                          Case{Precision::mixed, Format::csr, 1e-10, 1e-9},  // refined
                          Case{Precision::single, Format::bdia, 1e-5, 1e-4}}) {
        SolveConfig cfg;
        cfg.device = device;
        cfg.precision = c.p;
        cfg.format = c.f;
        cfg.format_options.block_size = 2;
        cfg.options.rtol = c.rtol;
        std::vector<SolveStage> stages;
        cfg.on_stage = [&](SolveStage s, double) { stages.push_back(s); };
        const SolveResult res = solve_system(a, b, cfg);
        BOOST_TEST_MESSAGE(to_string(c.p) << " " << res.format << " / " << res.preconditioner
                                          << ": " << res.status.summary());
        BOOST_TEST(res.status.converged(), res.status.summary());
        BOOST_TEST(norm2(residual(a, res.x, b)) / norm2(b) <= c.expect);
        // the default (solve.hpp): natural ILU(0) on the CPU, CPR on a GPU for Nc = 2, taken
        // without a fallback
        BOOST_TEST(res.preconditioner.rfind(device == "cpu" ? "ilu0 Nc=2" : "cpr", 0) == 0u,
                   res.preconditioner);
        BOOST_TEST(res.preconditioner.find("(the default on ") != std::string::npos,
                   res.preconditioner);
        BOOST_TEST(res.solver.rfind("bicgstab (fused)", 0) == 0u, res.solver);
        BOOST_TEST((res.corrections > 0) == (c.p == Precision::mixed), res.solver);
        BOOST_TEST(stages.size() == 5u);
        BOOST_TEST(res.timings.total_ms >= res.timings.solve_ms);
    }
    // CG: the default preconditioner is block-Jacobi on the CPU, AMG on a GPU
    spec.Nc = 1;
    const auto p = generate_hepta_coo<double>(spec);
    const auto bp = make_rhs(spec, p).b;
    SolveConfig cfg;
    cfg.device = device;
    cfg.solver = SolverType::cg;
    const SolveResult res = solve_system(p, bp, cfg);
    BOOST_TEST(res.status.converged(), res.status.summary());
    BOOST_TEST(res.preconditioner.rfind(device == "cpu" ? "bjacobi" : "amg", 0) == 0u,
               res.preconditioner);
    // an initial guess through the config
    cfg.x0 = res.x;
    const SolveResult again = solve_system(p, bp, cfg);
    BOOST_TEST(again.status.converged(), again.status.summary());
    BOOST_TEST(again.status.iterations < std::max(res.status.iterations / 2, 1));
    BOOST_CHECK_THROW(solve_system(p, std::vector<double>(3, 1.0), cfg), DimensionMismatch);
}

BOOST_AUTO_TEST_CASE(default_preconditioners_are_the_documented_chains)
{
    // solve.hpp: the CPU takes one (ILU(0), or block Jacobi for CG); CUDA tries multigrid
    // first and falls back to the ILU(0)s (block Jacobi for CG)
    using V = std::vector<PcType>;
    BOOST_TEST(
        (default_preconditioners(ExecKind::cpu, SolverType::bicgstab, 3) == V{PcType::ilu0}));
    BOOST_TEST((default_preconditioners(ExecKind::cpu, SolverType::gmres, 1) == V{PcType::ilu0}));
    BOOST_TEST(
        (default_preconditioners(ExecKind::cpu, SolverType::cg, 1) == V{PcType::block_jacobi}));
    BOOST_TEST((default_preconditioners(ExecKind::cuda, SolverType::bicgstab, 1) ==
                V{PcType::amg, PcType::ilu0_mc, PcType::ilu0}));
    BOOST_TEST((default_preconditioners(ExecKind::cuda, SolverType::gmres, 3) ==
                V{PcType::cpr, PcType::ilu0_mc, PcType::ilu0}));
    BOOST_TEST((default_preconditioners(ExecKind::cuda, SolverType::cg, 3) ==
                V{PcType::amg, PcType::block_jacobi}));
    // under mpirun each rank's diagonal block: the ILU(0)s, block Jacobi for CG
    BOOST_TEST((default_preconditioners(ExecKind::cuda, SolverType::bicgstab, 1, true) ==
                V{PcType::ilu0_mc, PcType::ilu0}));
    BOOST_TEST(
        (default_preconditioners(ExecKind::cpu, SolverType::gmres, 1, true) == V{PcType::ilu0}));
    BOOST_TEST((default_preconditioners(ExecKind::cuda, SolverType::cg, 1, true) ==
                V{PcType::block_jacobi}));
    // what ILU(0) means per device (the plugin's -pc_type ilu takes the same chain)
    BOOST_TEST((ilu_preconditioners(ExecKind::cuda) == V{PcType::ilu0_mc, PcType::ilu0}));
    BOOST_TEST((ilu_preconditioners(ExecKind::cpu) == V{PcType::ilu0}));
}

BOOST_AUTO_TEST_CASE(solve_system_runs_on_the_executor_it_is_given)
{
    // SolveConfig::executor: solve_system uses it (device is then ignored, even a bad name)
    // and gives the same answer as the executor it would make itself
    HeptaSpec spec;
    spec.J = 8;
    spec.H = 6;
    spec.I = 5;
    spec.Nc = 1;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    const auto exec = test::test_executor();
    SolveConfig cfg;
    cfg.pc = PcType::jacobi;
    cfg.options.rtol = 1e-10;
    cfg.device = exec->is_cuda() ? "cuda" : "cpu";
    const SolveResult made = solve_system(a, b, cfg);
    cfg.device = "no such device";
    BOOST_CHECK_THROW(solve_system(a, b, cfg), Error);
    cfg.executor = exec;
    const SolveResult given = solve_system(a, b, cfg);
    BOOST_TEST(given.device == exec->name());
    BOOST_TEST(given.status.converged(), given.status.summary());
    // GPU reductions with atomics may round differently from run to run
    BOOST_TEST(std::abs(given.status.iterations - made.status.iterations) <=
               (exec->is_cuda() ? 1 : 0));
    BOOST_TEST(norm2(residual(a, given.x, b)) / norm2(b) <= 1e-10);
}

BOOST_AUTO_TEST_CASE(device_model_weighs_ranks_sharing_a_gpu)
{
    // auto_gpu_min_entries with k MPI ranks sharing each GPU (solver/solve.hpp): the threshold
    // grows with k, is "never" where the shared GPU's time per entry reaches the CPU's, and
    // reproduces the decisions measured on the H200 machine (one GPU, 1 thread a rank,
    // reservoir pressure at 1 M cells = 7.3 M entries): 2 ranks on the GPU won (3.65 M a rank),
    // 4 and 16 ranks on the CPU won (1.83 M and 0.46 M a rank).
    const long long k1 = auto_gpu_min_entries(1), k2 = auto_gpu_min_entries(1, 2),
                    k4 = auto_gpu_min_entries(1, 4), k16 = auto_gpu_min_entries(1, 16);
    BOOST_TEST(auto_gpu_min_entries(1, 1) == k1);
    BOOST_TEST(k1 < k2);
    BOOST_TEST(k2 < k4);
    BOOST_TEST(k4 < k16);
    BOOST_TEST(k2 <= 3'650'000);
    BOOST_TEST(k4 > 1'830'000);
    BOOST_TEST(k16 > 460'000);
    BOOST_TEST(auto_gpu_min_entries(16, 8) == std::numeric_limits<long long>::max());
    BOOST_TEST(auto_gpu_min_entries(16, 1) < std::numeric_limits<long long>::max());
}
