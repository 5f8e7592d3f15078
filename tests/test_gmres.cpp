// GMRES(m) (flexible, right-preconditioned) on the executor under test (CPU, or CUDA with
// HEPTANE_TEST_DEVICE=cuda): solutions against Eigen's SparseLU, the exactness of full GMRES
// (at most n iterations, and exactly n on the cyclic shift), iteration counts against
// BiCGStab and between restart lengths, a preconditioner that changes at every application,
// NaN, breakdown and stagnation, float vectors, the Solver interface through make_solver for
// all three methods, solve_system, and CPU/GPU agreement.
#include <boost/test/unit_test.hpp>

#include <Eigen/SparseLU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "core/error.hpp"
#include "formats/matrix.hpp"
#include "generators/hepta.hpp"
#include "solver/gmres/gmres.hpp"
#include "solver/krylov.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solve.hpp"
#include "solver/vector/vector_ops.hpp"
#include "tests/test_common.hpp"
#include "tests/test_systems.hpp"

using namespace heptane;

namespace heptane {
std::ostream& operator<<(std::ostream& os, Reason r)
{
    return os << to_string(r);
}
std::ostream& operator<<(std::ostream& os, SolverType s)
{
    return os << to_string(s);
}
}  // namespace heptane

namespace {

using test::dominance_margin;
using test::max_abs_diff;
using test::norm2;
using test::norm_inf;
using test::random_dd;
using test::residual;
using test::seven_point;
using test::square_coo;
using test::true_relres;

HeptaSpec reservoir_spec(index_t nc, unsigned seed = 7)
{
    HeptaSpec spec;
    spec.J = 12;
    spec.H = 10;
    spec.I = 6;
    spec.Nc = nc;
    spec.banded = false;
    spec.model = HeptaModel::reservoir;
    spec.difficulty = 1.0;
    spec.seed = seed;
    return spec;
}

std::vector<double> sparse_lu(const Coo<double>& a, const std::vector<double>& b)
{
    std::vector<Eigen::Triplet<double>> t;
    for (offset_t k = 0; k < a.nnz(); ++k) t.emplace_back(a.row[k], a.col[k], a.val[k]);
    Eigen::SparseMatrix<double> m(a.rows, a.cols);
    m.setFromTriplets(t.begin(), t.end());
    m.makeCompressed();
    Eigen::SparseLU<Eigen::SparseMatrix<double>> lu;
    lu.compute(m);
    BOOST_REQUIRE(lu.info() == Eigen::Success);
    const Eigen::VectorXd x =
        lu.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), Eigen::Index(b.size())));
    return std::vector<double>(x.data(), x.data() + x.size());
}

SolverOptions tight(double rtol = 1e-10, int max_it = 2000)
{
    SolverOptions o;
    o.rtol = rtol;
    o.max_it = max_it;
    return o;
}

struct Run {
    std::vector<double> x;
    Status st;
    std::string name;
};

/// One solve through make_solver: CSR operator, preconditioner pc (block size nc).
Run run(SolverType type, const Coo<double>& a, const std::vector<double>& b, PcType pc, index_t nc,
        SolverOptions o, int restart = 30,
        std::shared_ptr<const Executor> exec = test::test_executor(),
        const std::vector<double>& x0 = {})
{
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    std::shared_ptr<const Operator<double>> m =
        make_preconditioner<double>(pc, csr_from_coo(a), nc, exec);
    const Array<double> bd = Array<double>(b).to(exec);
    Array<double> xd = x0.empty() ? Array<double>(exec, b.size()) : Array<double>(x0).to(exec);
    o.nonzero_initial_guess = !x0.empty();
    SolverExtras ex;
    ex.restart = restart;
    const auto s = make_solver<double>(type, o, ex);
    s->set_operator(op);
    s->set_preconditioner(m);
    Run out;
    out.st = s->solve(bd, xd);
    out.x = xd.to_vector();
    out.name = s->name();
    BOOST_TEST_MESSAGE(out.name << " pc=" << to_string(pc) << " on " << exec->name() << ": "
                                << out.st.summary());
    return out;
}

/// The checks of every converged GMRES run: the reason, the estimate and the true residual
/// against rtol, the estimate against the true residual (right preconditioning: they are
/// the same quantity), the history, and ‖x − x_ref‖∞ within what the residual allows.
void check_converged(const Run& r, const Coo<double>& a, const std::vector<double>& b,
                     const std::vector<double>& x_ref, double rtol, double inv_norm_bound)
{
    BOOST_TEST(r.st.converged(), r.st.summary());
    BOOST_TEST(r.st.relative_residual <= rtol);
    const auto res = residual(a, r.x, b);
    const double rel = norm2(res) / norm2(b);
    BOOST_TEST(rel <= 2 * rtol, "true relres " << rel);
    BOOST_TEST(std::abs(r.st.true_relative_residual - rel) <= 1e-3 * rtol);
    BOOST_TEST(std::abs(r.st.relative_residual - rel) <= 0.5 * rtol,
               "estimate " << r.st.relative_residual << ", true " << rel);
    BOOST_TEST(r.st.history.size() == std::size_t(r.st.iterations) + 1);
    // GMRES never increases ‖r‖ (up to the rounding of the true residual at a restart)
    for (std::size_t k = 1; k < r.st.history.size(); ++k)
        BOOST_TEST(r.st.history[k] <= r.st.history[k - 1] + 1e-12 * r.st.history[0]);
    const double bound = inv_norm_bound * (norm_inf(res) + norm_inf(residual(a, x_ref, b))) +
                         1e-13 * norm_inf(x_ref);
    BOOST_TEST(max_abs_diff(r.x, x_ref) <= 2 * bound);
}

/// A preconditioner that is a different linear map at every application: application k
/// runs 1 + k mod 3 Jacobi sweeps on A z = x from z = 0 (so M⁻¹ alternates between three
/// polynomials in D⁻¹A). Optionally returns NaN from application `nan_from` on.
class VaryingJacobi : public Operator<double> {
public:
    VaryingJacobi(std::shared_ptr<const Operator<double>> a, const Coo<double>& coo,
                  int nan_from = -1)
        : a_(std::move(a)),
          d_(make_preconditioner<double>(PcType::jacobi, csr_from_coo(coo), 1, a_->executor())),
          ops_(a_->executor(), 0),
          t_(a_->executor(), std::size_t(a_->rows())),
          u_(a_->executor(), std::size_t(a_->rows())),
          z_(a_->executor(), std::size_t(a_->rows())),
          nan_from_(nan_from)
    {
    }
    index_t rows() const override { return a_->rows(); }
    index_t cols() const override { return a_->cols(); }
    std::shared_ptr<const Executor> executor() const override { return a_->executor(); }
    void apply(double alpha, const double* x, double beta, double* y) const override
    {
        const index_t n = rows();
        const int sweeps = 1 + calls_ % 3;
        double* z = z_.data();
        if (nan_from_ >= 0 && calls_ >= nan_from_) {
            ops_.fill(n, std::numeric_limits<double>::quiet_NaN(), z);
        } else {
            d_->apply(x, z);  // z = D⁻¹ x
            for (int s = 1; s < sweeps; ++s) {
                a_->apply(z, t_.data());                 // t = A z
                ops_.axpby(n, 1.0, x, -1.0, t_.data());  // t = x − A z
                d_->apply(t_.data(), u_.data());         // u = D⁻¹ t
                ops_.axpby(n, 1.0, u_.data(), 1.0, z);   // z += u
            }
        }
        ops_.axpby(n, alpha, z, beta, y);
        ++calls_;
    }
    void apply_transpose(double, const double*, double, double*) const override
    {
        HEPTANE_THROW(NotSupported, "VaryingJacobi: no transpose");
    }
    std::string describe() const override { return "varying jacobi"; }
    int calls() const { return calls_; }

private:
    std::shared_ptr<const Operator<double>> a_;
    std::shared_ptr<const Operator<double>> d_;
    mutable VectorOps<double> ops_;
    mutable Array<double> t_, u_, z_;
    int nan_from_;
    mutable int calls_ = 0;
};

}  // namespace

// ---- solutions -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(gmres_matches_sparselu_on_nonsymmetric_systems)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    const auto x_lu = sparse_lu(a, b);
    for (PcType pc : {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0}) {
        const Run r = run(SolverType::gmres, a, b, pc, 1, tight());
        BOOST_TEST(r.name == "gmres(30)");
        check_converged(r, a, b, x_lu, 1e-10, 1.0 / dominance_margin(a));
    }
    const auto c = random_dd(400, 17, 0.1);
    const auto bc = test::random_vector<double>(std::size_t(c.rows), 4);
    const auto xc = sparse_lu(c, bc);
    for (PcType pc : {PcType::none, PcType::ilu0})
        for (int m : {10, 40}) {
            const Run r = run(SolverType::gmres, c, bc, pc, 1, tight(), m);
            check_converged(r, c, bc, xc, 1e-10, 1.0 / dominance_margin(c));
        }
}

BOOST_AUTO_TEST_CASE(full_gmres_is_exact_in_at_most_n_iterations)
{
    // The cyclic shift A e_i = e_{i+1}, b = e_1: K_k = span(e_1..e_k) and A K_k ⊥ b for
    // k < n, so GMRES makes no progress for n − 1 iterations and is exact at iteration n
    // (x = A⁻¹ e_1 = e_n), whatever m ≥ n.
    const index_t n = 40;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < n; ++i) {
        r.push_back((i + 1) % n);
        c.push_back(i);
        v.push_back(1.0);
    }
    const auto shift = square_coo(n, r, c, v);
    std::vector<double> b(std::size_t(n), 0.0), x_exact(std::size_t(n), 0.0);
    b[0] = 1.0;
    x_exact[std::size_t(n - 1)] = 1.0;
    for (int m : {40, 64}) {
        const Run g = run(SolverType::gmres, shift, b, PcType::none, 1, tight(1e-12), m);
        BOOST_TEST(g.st.converged(), g.st.summary());
        BOOST_TEST(g.st.iterations == n);
        for (int k = 0; k < n; ++k) BOOST_TEST(g.st.history[std::size_t(k)] == 1.0);
        BOOST_TEST(max_abs_diff(g.x, x_exact) <= 1e-13);
    }
    // one short of n: GMRES(39) restarts from the same residual and never gets anywhere
    const Run short_m = run(SolverType::gmres, shift, b, PcType::none, 1, tight(1e-12, 200), 39);
    BOOST_TEST(short_m.st.reason == Reason::diverged_max_it, short_m.st.summary());

    // a random nonsymmetric system, m ≥ n: at most n iterations to rtol 1e-12
    const auto a = random_dd(60, 5, 0.01);
    const auto ba = test::random_vector<double>(60, 6);
    const Run full = run(SolverType::gmres, a, ba, PcType::none, 1, tight(1e-12), 60);
    BOOST_TEST(full.st.converged(), full.st.summary());
    BOOST_TEST(full.st.iterations <= 60);
    BOOST_TEST(true_relres(a, full.x, ba) <= 1e-11);

    // A with 3 distinct eigenvalues (diagonal): the minimal polynomial has degree 3, so the
    // Krylov space is invariant after 3 steps (the "lucky" breakdown): converged in 3
    std::vector<index_t> d;
    std::vector<double> dv;
    for (index_t i = 0; i < 50; ++i) {
        d.push_back(i);
        dv.push_back(i % 3 == 0 ? 1.0 : i % 3 == 1 ? 2.0 : 5.0);
    }
    const auto diag3 = square_coo(50, d, d, dv);
    const auto bd = test::random_vector<double>(50, 8);
    const Run three = run(SolverType::gmres, diag3, bd, PcType::none, 1, tight(1e-13), 30);
    BOOST_TEST(three.st.converged(), three.st.summary());
    BOOST_TEST(three.st.iterations == 3);
    BOOST_TEST(true_relres(diag3, three.x, bd) <= 1e-13);
}

BOOST_AUTO_TEST_CASE(full_gmres_needs_at_most_twice_the_bicgstab_iterations)
{
    // BiCGStab's iterate k lies in a Krylov space of dimension 2k (two products per
    // iteration) where full GMRES minimises the residual, so full GMRES needs at most about
    // twice as many iterations (one product each)
    for (index_t nc : {1, 3}) {
        const HeptaSpec spec = reservoir_spec(nc);
        const auto a = generate_hepta_coo<double>(spec);
        const auto b = make_rhs(spec, a).b;
        for (PcType pc : {PcType::none, PcType::ilu0}) {
            const SolverOptions o = tight(1e-8, 5000);
            const Run bcg = run(SolverType::bicgstab, a, b, pc, nc, o);
            const Run g = run(SolverType::gmres, a, b, pc, nc, o, 1000);
            BOOST_TEST_CONTEXT("Nc=" << nc << " pc=" << to_string(pc))
            {
                BOOST_TEST(bcg.st.converged(), bcg.st.summary());
                BOOST_TEST(g.st.converged(), g.st.summary());
                BOOST_TEST(g.name == "gmres(1000)");
                BOOST_TEST(g.st.iterations < 1000);  // no restart: full GMRES
                BOOST_TEST(g.st.iterations <= 2 * bcg.st.iterations,
                           "gmres " << g.st.iterations << ", bicgstab " << bcg.st.iterations);
                BOOST_TEST(true_relres(a, g.x, b) <= 2e-8);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_shorter_restart_takes_more_iterations)
{
    const HeptaSpec spec = reservoir_spec(1);
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    const SolverOptions o = tight(1e-8, 10000);
    const Run m5 = run(SolverType::gmres, a, b, PcType::jacobi, 1, o, 5);
    const Run m50 = run(SolverType::gmres, a, b, PcType::jacobi, 1, o, 50);
    BOOST_TEST(m5.name == "gmres(5)");
    BOOST_TEST(m50.name == "gmres(50)");
    BOOST_TEST(m5.st.converged(), m5.st.summary());
    BOOST_TEST(m50.st.converged(), m50.st.summary());
    BOOST_TEST(m5.st.iterations > m50.st.iterations,
               "m=5: " << m5.st.iterations << ", m=50: " << m50.st.iterations);
    BOOST_TEST(true_relres(a, m5.x, b) <= 2e-8);
    BOOST_TEST(true_relres(a, m50.x, b) <= 2e-8);
    // within its first cycle GMRES(5) is GMRES(50): the same residuals
    for (std::size_t k = 0; k <= 5; ++k)
        BOOST_TEST(m5.st.history[k] == m50.st.history[k], boost::test_tools::tolerance(1e-10));
}

BOOST_AUTO_TEST_CASE(a_preconditioner_that_changes_every_application_is_fine)
{
    // flexible GMRES keeps z_j = M_j⁻¹ v_j, so x = x0 + Z y holds whatever each M_j was
    auto exec = test::test_executor();
    const auto a = seven_point(10, 9, 8, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 11);
    const auto x_lu = sparse_lu(a, b);
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    const Array<double> bd = Array<double>(b).to(exec);
    for (int m : {8, 30}) {
        auto pc = std::make_shared<VaryingJacobi>(op, a);
        Gmres<double> s(tight(), m);
        s.set_operator(op);
        s.set_preconditioner(pc);
        Array<double> xd(exec, b.size());
        Run r;
        r.st = s.solve(bd, xd);
        r.x = xd.to_vector();
        BOOST_TEST_MESSAGE("gmres(" << m << ") varying jacobi: " << r.st.summary() << ", "
                                    << pc->calls() << " applications");
        BOOST_TEST(pc->calls() == r.st.iterations);  // one application per iteration
        BOOST_TEST(pc->calls() >= 3);                // so all three maps were used
        check_converged(r, a, b, x_lu, 1e-10, 1.0 / dominance_margin(a));
        // and it helps: fewer iterations than without a preconditioner
        const Run none = run(SolverType::gmres, a, b, PcType::none, 1, tight(), m);
        BOOST_TEST(r.st.iterations < none.st.iterations);
    }
}

// ---- stopping reasons ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(nan_stops_with_diverged_nan_and_keeps_the_last_good_iterate)
{
    auto exec = test::test_executor();
    const auto a = seven_point(6, 5, 4, 0.3, 0.1);
    auto b = test::random_vector<double>(std::size_t(a.rows), 2);
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    // a preconditioner that returns NaN from its third application on
    auto pc = std::make_shared<VaryingJacobi>(op, a, 2);
    Gmres<double> s(tight());
    s.set_operator(op);
    s.set_preconditioner(pc);
    const Array<double> bd = Array<double>(b).to(exec);
    Array<double> xd(exec, b.size());
    const Status st = s.solve(bd, xd);
    BOOST_TEST(st.reason == Reason::diverged_nan, st.summary());
    BOOST_TEST(st.iterations == 2);
    BOOST_TEST(st.history.size() == 3u);
    const auto x = xd.to_vector();
    BOOST_TEST(std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); }));
    // x is the iterate of the two good iterations: its residual is the one reported
    BOOST_TEST(std::abs(norm2(residual(a, x, b)) - st.residual_norm) <= 1e-10 * norm2(b));
    BOOST_TEST(st.residual_norm < st.initial_residual_norm);

    // NaN in b: at iteration 0
    b[5] = std::numeric_limits<double>::quiet_NaN();
    const Run r = run(SolverType::gmres, a, b, PcType::ilu0, 1, tight());
    BOOST_TEST(r.st.reason == Reason::diverged_nan, r.st.summary());
    BOOST_TEST(r.st.iterations == 0);
}

BOOST_AUTO_TEST_CASE(breakdown_lucky_and_not)
{
    // A = 2 I: A v_0 = 2 v_0, the space is invariant after one step and exact: converged
    const auto two = square_coo(3, {0, 1, 2}, {0, 1, 2}, {2.0, 2.0, 2.0});
    const Run lucky = run(SolverType::gmres, two, {2, -4, 6}, PcType::none, 1, tight());
    BOOST_TEST(lucky.st.converged(), lucky.st.summary());
    BOOST_TEST(lucky.st.iterations == 1);
    BOOST_TEST(max_abs_diff(lucky.x, {1.0, -2.0, 3.0}) <= 1e-15);
    // A = 0: A v_0 = 0, no direction and no progress: breakdown, x = 0
    const auto zero = square_coo(4, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 0, 0, 0});
    const Run z = run(SolverType::gmres, zero, {1, 2, 3, 4}, PcType::none, 1, tight());
    BOOST_TEST(z.st.reason == Reason::breakdown_rho, z.st.summary());
    BOOST_TEST(z.st.iterations == 1);
    BOOST_TEST(z.x == std::vector<double>(4, 0.0), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_callers_stop_test_stops_gmres_at_its_own_iteration)
{
    // SolverOptions::stop_test: GMRES's host loop sees each iteration before it keeps the
    // step queued ahead, so the verdict stops it there, across restarts, with x of that
    // iteration (the estimate is x's true residual)
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 6);
    for (int m : {5, 30}) {
        const Run full = run(SolverType::gmres, a, b, PcType::jacobi, 1, tight(1e-12), m);
        BOOST_REQUIRE(full.st.converged());
        const auto& h = full.st.history;
        std::size_t k = 0;
        while (k < h.size() && !(h[k] < 1e-5 * h[0])) ++k;
        BOOST_REQUIRE(k > 2 && k + 1 < h.size());
        SolverOptions o = tight(0.0);
        std::vector<int> seen;
        o.stop_test = [&](const IterationInfo& i) {
            seen.push_back(i.iteration);
            return i.residual_norm < 1e-5 * h[0] ? Verdict::converged : Verdict::go_on;
        };
        const Run r = run(SolverType::gmres, a, b, PcType::jacobi, 1, o, m);
        BOOST_TEST(r.st.reason == Reason::converged_by_caller, r.st.summary());
        BOOST_TEST(r.st.iterations == int(k));
        BOOST_TEST(int(seen.size()) == int(k) + 1);
        BOOST_TEST(seen.back() == int(k));
        BOOST_TEST(std::abs(r.st.true_relative_residual - true_relres(a, r.x, b)) <=
                   1e-10 * true_relres(a, r.x, b));
        BOOST_TEST(true_relres(a, r.x, b) < 1e-5 * h[0] / norm2(b) * 1.0001);
        // diverged at 4, and at 0 (x0 = 0 kept)
        for (int at : {4, 0}) {
            SolverOptions d = tight(0.0);
            d.stop_test = [at](const IterationInfo& i) {
                return i.iteration == at ? Verdict::diverged : Verdict::go_on;
            };
            const Run dr = run(SolverType::gmres, a, b, PcType::jacobi, 1, d, m);
            BOOST_TEST(dr.st.reason == Reason::diverged_by_caller, dr.st.summary());
            BOOST_TEST(dr.st.iterations == at);
            if (at == 0) BOOST_TEST(norm_inf(dr.x) == 0.0);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_monitor_reads_each_iterate_across_restarts)
{
    // IterationInfo::iterate: GMRES forms x_i = x + Z y_i aside at any iteration, across its
    // restarts, with no mode to ask for it; x_i is the x max_it = i leaves, and the answer and
    // the iterations do not change
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 6);
    const auto x0 = test::random_vector<double>(std::size_t(a.rows), 7);
    const int m = 4;
    const Run plain =
        run(SolverType::gmres, a, b, PcType::jacobi, 1, tight(), m, test::test_executor(), x0);
    BOOST_REQUIRE(plain.st.converged());
    BOOST_REQUIRE(plain.st.iterations > 9);
    std::map<int, std::vector<double>> got;
    SolverOptions o = tight();
    o.monitor = [&](const IterationInfo& i) {
        BOOST_REQUIRE(bool(i.iterate));
        std::vector<double> xi(std::size_t(a.rows));
        i.iterate(xi.data());
        BOOST_TEST(std::abs(norm2(residual(a, xi, b)) - i.residual_norm) <= 1e-8 * norm2(b));
        got[i.iteration] = xi;
    };
    const Run r = run(SolverType::gmres, a, b, PcType::jacobi, 1, o, m, test::test_executor(), x0);
    BOOST_TEST(r.st.iterations == plain.st.iterations);
    BOOST_TEST(max_abs_diff(r.x, plain.x) <= 1e-12 * norm_inf(plain.x));
    BOOST_TEST(max_abs_diff(got[0], x0) == 0.0);
    for (int k : {3, 4, 6, 9}) {  // inside a cycle, at its end, after a restart
        SolverOptions q = tight();
        q.max_it = k;
        const Run ref =
            run(SolverType::gmres, a, b, PcType::jacobi, 1, q, m, test::test_executor(), x0);
        BOOST_TEST(max_abs_diff(got[k], ref.x) <= 1e-12 * norm_inf(ref.x), "iteration " << k);
    }
}

BOOST_AUTO_TEST_CASE(max_it_atol_stagnation_and_initial_guesses)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    // max_it counts the iterations of all cycles; the monitor sees each of them
    for (int m : {3, 30}) {
        SolverOptions o = tight(1e-14);
        o.max_it = 7;
        std::vector<int> seen;
        o.monitor = [&](const IterationInfo& i) { seen.push_back(i.iteration); };
        const Run r = run(SolverType::gmres, a, b, PcType::jacobi, 1, o, m);
        BOOST_TEST(r.st.reason == Reason::diverged_max_it, r.st.summary());
        BOOST_TEST(r.st.iterations == 7);
        BOOST_TEST(r.st.history.size() == 8u);
        BOOST_TEST(seen == (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}),
                   boost::test_tools::per_element());
        // the estimate is the true residual of the x returned
        BOOST_TEST(std::abs(r.st.residual_norm - r.st.true_residual_norm) <=
                   1e-10 * r.st.residual_norm);
    }
    SolverOptions o = tight();
    o.max_it = 0;
    BOOST_TEST(run(SolverType::gmres, a, b, PcType::none, 1, o).st.reason ==
               Reason::diverged_max_it);
    // atol
    o = tight(0.0);
    o.atol = 1e-3 * norm2(b);
    const Run at = run(SolverType::gmres, a, b, PcType::none, 1, o);
    BOOST_TEST(at.st.reason == Reason::converged_atol, at.st.summary());
    BOOST_TEST(at.st.residual_norm < o.atol);
    // stagnation: GMRES(1) on a rotation never moves ((r, A r) = 0 for every r)
    const auto rot = square_coo(2, {0, 1}, {1, 0}, {1.0, -1.0});
    o = tight();
    o.stagnation_window = 5;
    const Run st = run(SolverType::gmres, rot, {1, 2}, PcType::none, 1, o, 1);
    BOOST_TEST(st.st.reason == Reason::stagnation, st.st.summary());
    BOOST_TEST(st.st.iterations == 5);
    // ... while GMRES(2) is exact in 2
    const Run rot2 = run(SolverType::gmres, rot, {1, 2}, PcType::none, 1, tight(), 2);
    BOOST_TEST(rot2.st.converged(), rot2.st.summary());
    BOOST_TEST(rot2.st.iterations == 2);
    // b = 0: x = 0 whatever x0
    const std::vector<double> zero_b(b.size(), 0.0);
    const Run zb = run(SolverType::gmres, a, zero_b, PcType::none, 1, tight(), 30,
                       test::test_executor(), std::vector<double>(b.size(), 3.0));
    BOOST_TEST(zb.st.reason == Reason::converged_atol);
    BOOST_TEST(zb.x == zero_b, boost::test_tools::per_element());
    // a good initial guess: fewer iterations, ‖r0‖ = ‖b − A x0‖
    const auto x_lu = sparse_lu(a, b);
    auto x0 = x_lu;
    const auto noise = test::random_vector<double>(x0.size(), 9);
    for (std::size_t i = 0; i < x0.size(); ++i) x0[i] += 1e-4 * noise[i];
    const Run cold = run(SolverType::gmres, a, b, PcType::ilu0, 1, tight());
    const Run warm =
        run(SolverType::gmres, a, b, PcType::ilu0, 1, tight(), 30, test::test_executor(), x0);
    BOOST_TEST(warm.st.converged());
    BOOST_TEST(warm.st.iterations < cold.st.iterations);
    const double r0 = norm2(residual(a, x0, b));
    BOOST_TEST(std::abs(warm.st.initial_residual_norm - r0) <= 1e-10 * r0);
    // the exact answer as x0: converged at iteration 0
    const Run exact =
        run(SolverType::gmres, a, b, PcType::ilu0, 1, tight(1e-6), 30, test::test_executor(), x_lu);
    BOOST_TEST(exact.st.converged());
    BOOST_TEST(exact.st.iterations == 0);
}

// ---- precisions, the interface, misuse ----------------------------------------------------

BOOST_AUTO_TEST_CASE(float_vectors_converge_to_single_precision_tolerances)
{
    const auto a = seven_point(9, 8, 7, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 3);
    auto exec = test::test_executor();
    std::shared_ptr<const Operator<float>> op =
        make_matrix_operator<float, float>(a, Format::csr, exec);
    const Array<float> bd = Array<float>(std::vector<float>(b.begin(), b.end())).to(exec);
    for (int m : {10, 30}) {
        Gmres<float> s(tight(1e-5), m);
        s.set_operator(op);
        s.set_preconditioner(make_preconditioner<float>(PcType::ilu0, csr_from_coo(a), 1, exec));
        Array<float> xd(exec, b.size());
        const Status st = s.solve(bd, xd);
        BOOST_TEST(st.converged(), st.summary());
        const auto xf = xd.to_vector();
        const std::vector<double> x(xf.begin(), xf.end());
        BOOST_TEST(true_relres(a, x, b) <= 1e-4);
    }
}

BOOST_AUTO_TEST_CASE(make_solver_builds_all_three_behind_one_interface)
{
    BOOST_TEST(parse_solver("gmres") == SolverType::gmres);
    BOOST_TEST(parse_solver("fgmres") == SolverType::gmres);
    BOOST_TEST(parse_solver("bcgs") == SolverType::bicgstab);
    BOOST_TEST(parse_solver("cg") == SolverType::cg);
    BOOST_CHECK_THROW(parse_solver("minres"), InputError);
    BOOST_TEST(std::string(to_string(SolverType::gmres)) == "gmres");

    auto exec = test::test_executor();
    const auto spd = seven_point(8, 7, 6, 0.0, 0.1);  // symmetric, diagonally dominant
    const auto b = test::random_vector<double>(std::size_t(spd.rows), 21);
    const auto x_lu = sparse_lu(spd, b);
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(spd, Format::csr, exec);
    const auto pc = make_preconditioner<double>(PcType::jacobi, csr_from_coo(spd), 1, exec);
    const Array<double> bd = Array<double>(b).to(exec);
    SolverExtras ex;
    ex.restart = 12;
    const std::pair<SolverType, const char*> all[] = {{SolverType::bicgstab, "bicgstab (fused)"},
                                                      {SolverType::cg, "cg"},
                                                      {SolverType::gmres, "gmres(12)"}};
    for (const auto& [type, name] : all) {
        std::unique_ptr<Solver<double>> s = make_solver<double>(type, tight(), ex);
        BOOST_TEST(s->name() == name);
        s->set_operator(*op);  // the reference overloads
        s->set_preconditioner(*pc);
        Array<double> xd(exec, b.size());
        const Status st = s->solve(bd, xd);
        BOOST_TEST(st.converged(), name << ": " << st.summary());
        BOOST_TEST(max_abs_diff(xd.to_vector(), x_lu) <= 1e-8 * norm_inf(x_lu));
        // options() through the interface
        s->options().max_it = 2;
        s->set_preconditioner(nullptr);
        Array<double> x2(exec, b.size());
        BOOST_TEST(s->solve(bd, x2).reason == Reason::diverged_max_it);
    }
    // float through the interface
    std::shared_ptr<const Operator<float>> opf =
        make_matrix_operator<float, float>(spd, Format::csr, exec);
    const Array<float> bf = Array<float>(std::vector<float>(b.begin(), b.end())).to(exec);
    for (SolverType type : {SolverType::bicgstab, SolverType::cg, SolverType::gmres}) {
        auto s = make_solver<float>(type, tight(1e-5));
        s->set_operator(opf);
        Array<float> xf(exec, b.size());
        BOOST_TEST(s->solve(bf, xf).converged(), to_string(type));
    }
    // the reference BiCGStab through the extras
    SolverExtras ref;
    ref.bicgstab_impl = BicgstabImpl::reference;
    BOOST_TEST(make_solver<double>(SolverType::bicgstab, {}, ref)->name() ==
               "bicgstab (reference)");
    ex.restart = 0;
    BOOST_CHECK_THROW(make_solver<double>(SolverType::gmres, {}, ex), InputError);
}

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
    Gmres<double> none;
    BOOST_CHECK_THROW(none.solve(b, x), InputError);
    BOOST_CHECK_THROW(Gmres<double>(SolverOptions{}, 0), InputError);
    BOOST_CHECK_THROW(none.set_restart(-1), InputError);
    Gmres<double> s;
    s.set_operator(op);
    BOOST_CHECK_THROW(s.solve(b, short_x), DimensionMismatch);
    BOOST_CHECK_THROW(s.solve(b, b), InputError);
    s.options().rtol = -1;
    BOOST_CHECK_THROW(s.solve(b, x), InputError);
    s.options().rtol = 1e-8;
    s.set_restart(4);
    BOOST_TEST(s.restart() == 4);
    BOOST_TEST(s.name() == "gmres(4)");
    BOOST_TEST(s.solve(b, x).converged());
    // the workspace follows a new restart length and size
    s.set_restart(9);
    BOOST_TEST(s.solve(b, x).converged());
    if (test::testing_on_gpu()) {
        const Array<double> b_host(std::vector<double>(n, 1.0));
        BOOST_CHECK_THROW(s.solve(b_host, x), DimensionMismatch);
    }
}

// ---- solve_system and devices ----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(solve_system_with_gmres)
{
    const HeptaSpec spec = reservoir_spec(2, 5);
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    const std::string device = test::testing_on_gpu() ? "cuda" : "cpu";
    for (Precision p : {Precision::double_, Precision::mixed}) {
        SolveConfig cfg;
        cfg.device = device;
        cfg.solver = SolverType::gmres;
        cfg.restart = 25;
        cfg.precision = p;
        cfg.format = Format::bdia;
        cfg.format_options.block_size = 2;
        cfg.options.rtol = 1e-10;
        const SolveResult res = solve_system(a, b, cfg);
        BOOST_TEST_MESSAGE(to_string(p) << " " << res.solver << " / " << res.preconditioner << ": "
                                        << res.status.summary());
        BOOST_TEST(res.status.converged(), res.status.summary());
        BOOST_TEST(true_relres(a, res.x, b) <= 2e-10);
        BOOST_TEST(res.solver.rfind("gmres(25)", 0) == 0u, res.solver);
        BOOST_TEST((res.corrections > 0) == (p == Precision::mixed), res.solver);
        // the default preconditioner is BiCGStab's (CPR for Nc = 2 on a GPU)
        BOOST_TEST(res.preconditioner.rfind(device == "cpu" ? "ilu0 Nc=2" : "cpr", 0) == 0u,
                   res.preconditioner);
    }
}

namespace {
// A counted and, as asked, graph-safe or not view of an operator: GMRES steps one ahead of
// the host only where A and M are graph-safe (on a GPU)
class Steered final : public Operator<double> {
public:
    Steered(std::shared_ptr<const Operator<double>> inner, bool graph_safe)
        : inner_(std::move(inner)), graph_safe_(graph_safe)
    {
    }
    index_t rows() const override { return inner_->rows(); }
    index_t cols() const override { return inner_->cols(); }
    std::shared_ptr<const Executor> executor() const override { return inner_->executor(); }
    void apply(double alpha, const double* x, double beta, double* y) const override
    {
        ++calls_;
        inner_->apply(alpha, x, beta, y);
    }
    void apply_transpose(double alpha, const double* x, double beta, double* y) const override
    {
        inner_->apply_transpose(alpha, x, beta, y);
    }
    std::string describe() const override { return "steered " + inner_->describe(); }
    bool graph_safe() const override { return graph_safe_ && inner_->graph_safe(); }
    int calls() const { return calls_; }

private:
    std::shared_ptr<const Operator<double>> inner_;
    bool graph_safe_;
    mutable int calls_ = 0;
};
}  // namespace

BOOST_AUTO_TEST_CASE(stepping_ahead_of_the_host_changes_no_iterate)
{
    // On a GPU (M heptane's or graph-safe), step j + 1 is queued before the host reads step j:
    // the same iterations, residual history and x, bit for bit, as one step at a time, and at
    // most one product and one preconditioner application more (the step after the last,
    // dropped). On the CPU both runs are one step at a time: the same counts.
    auto exec = test::test_executor();
    const auto a = seven_point(12, 10, 9, 0.4, 0.05);
    const auto b = test::random_vector<double>(std::size_t(a.rows), 4);
    std::shared_ptr<const Operator<double>> op =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    std::shared_ptr<const Operator<double>> pc =
        make_preconditioner<double>(PcType::jacobi, csr_from_coo(a), 1, exec);
    const Array<double> bd = Array<double>(b).to(exec);
    for (const int m : {8, 30}) {
        Status st[2];
        std::vector<double> x[2];
        int products[2], applies[2];
        for (int ahead = 0; ahead < 2; ++ahead) {
            auto A = std::make_shared<Steered>(op, ahead == 1);
            auto M = std::make_shared<Steered>(pc, ahead == 1);
            Gmres<double> s(tight(1e-9), m);
            s.set_operator(A);
            s.set_preconditioner(M);
            Array<double> xd(exec, b.size());
            st[ahead] = s.solve(bd, xd);
            x[ahead] = xd.to_vector();
            products[ahead] = A->calls();
            applies[ahead] = M->calls();
        }
        BOOST_TEST_CONTEXT("m = " << m)
        {
            BOOST_TEST(st[0].converged(), st[0].summary());
            BOOST_TEST(st[0].iterations % m != 0);  // it stops inside a cycle
            BOOST_TEST(st[1].iterations == st[0].iterations);
            BOOST_TEST(st[1].history == st[0].history, boost::test_tools::per_element());
            BOOST_TEST(x[1] == x[0], boost::test_tools::per_element());
            BOOST_TEST(applies[0] == st[0].iterations);
            const int extra = exec->is_cuda() ? 1 : 0;
            BOOST_TEST(applies[1] == applies[0] + extra);
            BOOST_TEST(products[1] == products[0] + extra);
        }
    }
}

BOOST_AUTO_TEST_CASE(cpu_and_device_agree)
{
    // On the GPU run this compares the device with the CPU; on the CPU run both sides are
    // the CPU (a determinism check).
    const HeptaSpec spec = reservoir_spec(3, 3);
    const auto a = generate_hepta_coo<double>(spec);
    const auto b = make_rhs(spec, a).b;
    for (int m : {10, 40}) {
        const Run host =
            run(SolverType::gmres, a, b, PcType::block_jacobi, 3, tight(1e-9), m, cpu_executor());
        const Run dev = run(SolverType::gmres, a, b, PcType::block_jacobi, 3, tight(1e-9), m);
        BOOST_TEST(host.st.converged(), host.st.summary());
        BOOST_TEST(dev.st.converged(), dev.st.summary());
        BOOST_TEST(std::abs(host.st.iterations - dev.st.iterations) <= 1);
        BOOST_TEST(test::rel_max_diff(dev.x, host.x) <= 1e-7);
        const std::size_t early = std::min<std::size_t>(host.st.history.size(), 10);
        for (std::size_t k = 0; k < early; ++k)
            BOOST_TEST(dev.st.history[k] == host.st.history[k], boost::test_tools::tolerance(1e-9));
        if (!test::testing_on_gpu()) {
            BOOST_TEST(dev.st.iterations == host.st.iterations);
            BOOST_TEST(dev.x == host.x, boost::test_tools::per_element());
        }
    }
}
