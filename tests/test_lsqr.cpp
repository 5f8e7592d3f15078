// LSQR (solver/lsqr) on small systems against Eigen's dense least-squares solutions:
// overdetermined, damped, consistent, underdetermined (minimum norm), x0; SciPy's special
// cases (b = 0, iter_lim = 0); its norm estimates; misuse; precisions and Aᵀ strategies. Runs
// on the executor under test (and then also device vs CPU). The comparison with SciPy itself
// on real matrices is test_lsqr_scipy.
#include <boost/test/unit_test.hpp>

#include <Eigen/Dense>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "formats/matrix.hpp"
#include "solver/lsqr/lsqr.hpp"
#include "solver/mlem/mlem.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

Eigen::MatrixXd dense(const Coo<double>& a)
{
    Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.rows, a.cols);
    for (offset_t k = 0; k < a.nnz(); ++k) d(a.row[k], a.col[k]) += a.val[k];
    return d;
}

Eigen::VectorXd vec(const std::vector<double>& v)
{
    return Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size()));
}

double rel(const std::vector<double>& x, const Eigen::VectorXd& ref)
{
    return (vec(x) - ref).norm() / std::max(ref.norm(), 1e-300);
}

template <class VT = double>
std::vector<double> run(const Coo<double>& a, const std::vector<double>& b, LsqrOptions o,
                        LsqrStatus* st, std::shared_ptr<const Executor> exec = nullptr,
                        const std::vector<double>* x0 = nullptr,
                        TransposeMode tm = TransposeMode::scatter)
{
    if (!exec) exec = test::test_executor();
    FormatOptions fo;
    fo.transpose = tm;
    auto op = make_matrix_operator<VT, VT>(a, Format::csr, exec, fo);
    Lsqr<VT> s(o);
    s.options().nonzero_initial_guess = x0 != nullptr;
    s.set_operator(*op);
    Array<VT> bd = Array<VT>(std::vector<VT>(b.begin(), b.end())).to(exec);
    std::vector<VT> xv(std::size_t(a.cols), VT(0));
    if (x0) xv.assign(x0->begin(), x0->end());
    Array<VT> xd = Array<VT>(xv).to(exec);
    *st = s.solve(bd, xd);
    const auto x = xd.to_vector();
    return std::vector<double>(x.begin(), x.end());
}

LsqrOptions tight()
{
    LsqrOptions o;
    o.atol = o.btol = 1e-12;
    o.iter_lim = 1000;
    return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lsqr_overdetermined_matches_dense_least_squares)
{
    const Coo<double> a = test::random_coo<double>(80, 30, 3, 10, 5);
    const auto b = test::random_vector<double>(80, 6);
    LsqrStatus st;
    const auto x = run(a, b, tight(), &st);
    const Eigen::MatrixXd A = dense(a);
    const Eigen::VectorXd ref = A.colPivHouseholderQr().solve(vec(b));
    BOOST_TEST_MESSAGE(st.summary());
    BOOST_TEST((st.istop == 1 || st.istop == 2 || st.istop == 4 || st.istop == 5));
    BOOST_TEST(rel(x, ref) <= 1e-9);
    // the estimates: r1norm = ‖b − A x‖, arnorm = ‖Aᵀ r‖ (small), xnorm = ‖x‖
    const Eigen::VectorXd r = vec(b) - A * vec(x);
    BOOST_TEST(std::abs(st.r1norm - r.norm()) <= 1e-8 * r.norm());
    BOOST_TEST(std::abs(st.xnorm - vec(x).norm()) <= 1e-8 * vec(x).norm());
    BOOST_TEST(st.arnorm <= 1e-9 * st.anorm * st.r1norm);
    BOOST_TEST(std::abs(st.bnorm - vec(b).norm()) <= 1e-14 * vec(b).norm());
    BOOST_TEST(st.history.size() == std::size_t(st.itn) + 1);
    // anorm estimates the Frobenius norm from below
    BOOST_TEST(st.anorm <= A.norm() * (1 + 1e-12));
    BOOST_TEST(st.anorm >= 0.5 * A.norm());
}

BOOST_AUTO_TEST_CASE(lsqr_damped_matches_the_stacked_system)
{
    const Coo<double> a = test::random_coo<double>(50, 40, 2, 6, 8);
    const auto b = test::random_vector<double>(50, 9);
    for (double damp : {0.1, 1.0, 10.0}) {
        LsqrOptions o = tight();
        o.damp = damp;
        LsqrStatus st;
        const auto x = run(a, b, o, &st);
        // min ‖A x − b‖² + damp²‖x‖²  =  min ‖[A; damp I] x − [b; 0]‖²
        Eigen::MatrixXd S(a.rows + a.cols, a.cols);
        S << dense(a), damp * Eigen::MatrixXd::Identity(a.cols, a.cols);
        Eigen::VectorXd rhs = Eigen::VectorXd::Zero(a.rows + a.cols);
        rhs.head(a.rows) = vec(b);
        const Eigen::VectorXd ref = S.colPivHouseholderQr().solve(rhs);
        BOOST_TEST(rel(x, ref) <= 1e-9, "damp " << damp << ": " << rel(x, ref));
        const double r1 = (vec(b) - dense(a) * vec(x)).norm();
        const double r2 = std::sqrt(r1 * r1 + damp * damp * vec(x).squaredNorm());
        BOOST_TEST(std::abs(st.r2norm - r2) <= 1e-8 * r2);
        BOOST_TEST(std::abs(st.r1norm - r1) <= 1e-6 * r2);  // r1 from r2² − damp²‖x‖²
    }
}

BOOST_AUTO_TEST_CASE(lsqr_consistent_and_underdetermined_systems)
{
    // square, consistent: b = A x_true, istop 1 (Ax − b small), x = x_true
    const Coo<double> a = test::random_coo<double>(40, 40, 3, 6, 11);
    std::vector<index_t> row(a.row.host()), col(a.col.host());
    std::vector<double> val(a.val.host());
    for (index_t i = 0; i < 40; ++i) {  // + 8 I: diagonally dominant, well conditioned
        row.push_back(i);
        col.push_back(i);
        val.push_back(8.0);
    }
    Coo<double> sq{40, 40, Array<index_t>(row), Array<index_t>(col), Array<double>(val)};
    canonicalize(sq);
    const auto x_true = test::random_vector<double>(40, 12);
    const Eigen::VectorXd bb = dense(sq) * vec(x_true);
    const std::vector<double> b(bb.data(), bb.data() + bb.size());
    LsqrStatus st;
    auto x = run(sq, b, tight(), &st);
    BOOST_TEST(st.istop == 1);
    BOOST_TEST(rel(x, vec(x_true)) <= 1e-10);
    // the same from a nonzero start
    const auto x0 = test::random_vector<double>(40, 13);
    LsqrStatus st0;
    x = run(sq, b, tight(), &st0, nullptr, &x0);
    BOOST_TEST(rel(x, vec(x_true)) <= 1e-10);

    // underdetermined: from x0 = 0 LSQR gives the minimum-norm solution
    const Coo<double> w = test::random_coo<double>(20, 50, 4, 8, 14);
    const auto bw = test::random_vector<double>(20, 15);
    x = run(w, bw, tight(), &st);
    const Eigen::VectorXd ref = dense(w).completeOrthogonalDecomposition().solve(vec(bw));
    BOOST_TEST(rel(x, ref) <= 1e-9);
}

BOOST_AUTO_TEST_CASE(lsqr_special_cases_as_scipy)
{
    const Coo<double> a = test::random_coo<double>(30, 20, 2, 5, 21);
    // b = 0: x = 0 is exact, istop 0, no iteration
    LsqrStatus st;
    auto x = run(a, std::vector<double>(30, 0.0), tight(), &st);
    BOOST_TEST(st.istop == 0);
    BOOST_TEST(st.itn == 0);
    for (double v : x) BOOST_TEST_REQUIRE(v == 0.0);
    // iter_lim = 0: SciPy returns istop 0 and x0 without iterating
    LsqrOptions o;
    o.iter_lim = 0;
    x = run(a, test::random_vector<double>(30, 22), o, &st);
    BOOST_TEST(st.istop == 0);
    BOOST_TEST(st.itn == 0);
    // iter_lim reached: istop 7
    o.iter_lim = 3;
    o.atol = o.btol = 0;
    run(a, test::random_vector<double>(30, 22), o, &st);
    BOOST_TEST(st.istop == 7);
    BOOST_TEST(st.itn == 3);
    // the default iteration limit is 2·cols
    o = LsqrOptions{};
    o.atol = o.btol = 0;
    o.conlim = 0;
    run(a, test::random_vector<double>(30, 22), o, &st);
    BOOST_TEST(st.itn <= 40);
    BOOST_TEST(std::string(lsqr_istop_meaning(2)) ==
               "The least-squares solution is good enough, given atol");
}

BOOST_AUTO_TEST_CASE(lsqr_rejects_misuse)
{
    const Coo<double> a = test::random_coo<double>(30, 20, 2, 5, 31);
    const auto exec = test::test_executor();
    auto op = make_matrix_operator<double, double>(a, Format::csr, exec);
    Lsqr<double> s;
    Array<double> b(exec, 30), x(exec, 20), bad(exec, 20);
    BOOST_CHECK_THROW(s.solve(b, x), InputError);  // no operator
    s.set_operator(*op);
    BOOST_CHECK_THROW(s.solve(bad, x), DimensionMismatch);
    BOOST_CHECK_THROW(s.solve(b, b), DimensionMismatch);
    s.options().atol = -1;
    BOOST_CHECK_THROW(s.solve(b, x), InputError);
}

BOOST_AUTO_TEST_CASE(lsqr_precisions_and_transpose_strategies_agree)
{
    const Coo<double> a = test::random_coo<double>(90, 40, 3, 8, 41);
    const auto b = test::random_vector<double>(90, 42);
    LsqrStatus s1, s2, s3;
    const auto x1 = run(a, b, tight(), &s1);
    const auto x2 = run(a, b, tight(), &s2, nullptr, nullptr, TransposeMode::stored);
    BOOST_TEST(test::rel_max_diff(x2, x1) <= 1e-10);
    BOOST_TEST(std::abs(s1.itn - s2.itn) <= 1);
    LsqrOptions o;  // single precision: SciPy's default tolerances
    const auto x3 = run<float>(a, b, o, &s3);
    BOOST_TEST(test::rel_max_diff(x3, x1) <= 1e-3);
}

BOOST_AUTO_TEST_CASE(lsqr_device_matches_cpu)
{
    if (!test::testing_on_gpu()) return;  // the CPU run is the reference
    const Coo<double> a = test::random_coo<double>(3000, 1200, 2, 12, 51);
    const auto b = test::random_vector<double>(3000, 52);
    for (auto tm : {TransposeMode::scatter, TransposeMode::stored}) {
        LsqrOptions o;
        o.atol = o.btol = 1e-10;
        LsqrStatus sd, sc;
        const auto xd = run(a, b, o, &sd, test::test_executor(), nullptr, tm);
        const auto xc = run(a, b, o, &sc, cpu_executor(), nullptr, tm);
        BOOST_TEST(sd.istop == sc.istop);
        BOOST_TEST(std::abs(sd.itn - sc.itn) <= 2);
        BOOST_TEST(test::rel_max_diff(xd, xc) <= 1e-8);
    }
}
