// GMRES(m)'s floor traffic model (solver/gmres/gmres_traffic.hpp) against a hand count of
// what solver/gmres/gmres.cpp and its kernels read and write, for m = 1 and m = 30, against
// its closed form k(m) = 2m + 13 + 8/m, and its product and preconditioner counts against
// the applications a real solve makes (an Operator that counts its calls).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <memory>

#include "formats/matrix.hpp"
#include "generators/hepta.hpp"
#include "solver/gmres/gmres.hpp"
#include "solver/gmres/gmres_traffic.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

/// An Operator that forwards to another and counts its applications.
class Counting : public Operator<double> {
public:
    explicit Counting(std::shared_ptr<const Operator<double>> inner) : inner_(std::move(inner)) {}
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
    std::string describe() const override { return "counting " + inner_->describe(); }
    long long calls() const { return calls_; }

private:
    std::shared_ptr<const Operator<double>> inner_;
    mutable long long calls_ = 0;
};

/// y = x / 2: a preconditioner that counts (through Counting) and changes nothing else.
class Half : public Operator<double> {
public:
    explicit Half(std::shared_ptr<const Executor> exec, index_t n) : exec_(std::move(exec)), n_(n)
    {
    }
    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    void apply(double alpha, const double* x, double beta, double* y) const override
    {
        for (index_t i = 0; i < n_; ++i)
            y[i] = 0.5 * alpha * x[i] + (beta == 0 ? 0.0 : beta * y[i]);
    }
    void apply_transpose(double alpha, const double* x, double beta, double* y) const override
    {
        apply(alpha, x, beta, y);
    }
    std::string describe() const override { return "half"; }

private:
    std::shared_ptr<const Executor> exec_;
    index_t n_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(gmres_traffic_of_m1_is_the_hand_count)
{
    // one cycle of GMRES(1), passes of n values:
    //   j = 0 (k = 1): product 2 (z_0 read, w written), multi-dot 1 + 1, multi-axpy 1 + 2,
    //                  multi-dot 1 + 1, multi-axpy 1 + 2 (with the norm): 12; no scaling
    //                  (the last inner iteration of a cycle never scales v_m)
    //   v_0 = r / β: 2; x += Z y: 1 + 2; restart: A x 2, r = b − r 3, ‖r‖ 1: 6
    const long long hand = 12 + 2 + 3 + 6;
    BOOST_TEST(hand == 23);
    BOOST_TEST(gmres_cycle_passes(1) == hand);
    BOOST_TEST(gmres_cycle_passes(1, gmres_cuda_dot_tile) == hand);
    const GmresTraffic t = gmres_traffic(1);
    BOOST_TEST(t.products == 2.0);  // the inner product and the restart's
    BOOST_TEST(t.precond_applies == 0.0);
    BOOST_TEST(t.vector_passes == 23.0);
    BOOST_TEST(gmres_traffic(1, true).precond_applies == 1.0);
    // bytes: n = 1000, 56 kB of matrix, 8-byte values, a preconditioner of 24 kB
    BOOST_TEST(t.bytes(56000, 1000) == 2 * 56000.0 + 23 * 8000.0);
    BOOST_TEST(gmres_traffic(1, true).bytes(56000, 1000, 8, 24000) ==
               2 * 56000.0 + 24000.0 + 23 * 8000.0);
    BOOST_TEST(t.bytes(56000, 1000, 4) == 2 * 56000.0 + 23 * 4000.0);
}

BOOST_AUTO_TEST_CASE(gmres_traffic_of_m30_is_the_hand_count)
{
    // inner iteration j (k = j + 1): product 2 + two multi-dots 2(k + 1) + two multi-axpys
    // 2(k + 2) = 4k + 8, and 2 of scaling for j < 29
    long long hand = 0;
    for (int k = 1; k <= 30; ++k) hand += 4 * k + 8;
    BOOST_TEST(hand == 4 * 465 + 8 * 30);  // Σk = 465
    hand += 2 * 29;                        // v_1 .. v_29 scaled
    hand += 2;                             // v_0 = r / β
    hand += 30 + 2;                        // x += Z_30 y
    hand += 2 + 3 + 1;                     // the restart
    BOOST_TEST(hand == 2198);
    BOOST_TEST(gmres_cycle_passes(30) == hand);
    BOOST_TEST(gmres_cycle_passes(30, 32) == hand);  // k ≤ 32: one tile of 32
    // CUDA's tile of 8: w read ⌈k/8⌉ times per multi-dot, two multi-dots per step
    long long extra8 = 0;
    for (int k = 1; k <= 30; ++k) extra8 += 2 * ((k + 7) / 8 - 1);
    BOOST_TEST(extra8 == 84);
    BOOST_TEST(gmres_cycle_passes(30, gmres_cuda_dot_tile) == hand + extra8);
    const GmresTraffic t = gmres_traffic(30);
    BOOST_TEST(t.products == 31.0 / 30.0, boost::test_tools::tolerance(1e-15));
    BOOST_TEST(t.vector_passes == 2198.0 / 30.0, boost::test_tools::tolerance(1e-15));
    BOOST_TEST(t.vector_passes == 73.0 + 4.0 / 15.0, boost::test_tools::tolerance(1e-14));
    // N = 2^20, Nc = 1, a 7-diagonal matrix of 8-byte values and no indices (56 N bytes)
    const double n = 1 << 20;
    BOOST_TEST(t.bytes(56 * n, n) == 31.0 / 30.0 * 56 * n + 2198.0 / 30.0 * 8 * n,
               boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(gmres_traffic_closed_form_and_cuda_tiles)
{
    for (int m = 1; m <= 200; ++m) {
        const long long closed = 2LL * m * m + 13LL * m + 8;
        BOOST_TEST(gmres_cycle_passes(m) == closed, "m = " << m);
        BOOST_TEST(gmres_traffic(m).vector_passes == 2.0 * m + 13 + 8.0 / m,
                   boost::test_tools::tolerance(1e-13));
        // CUDA: a multi-dot over k > tile columns reads w once per tile (twice per step)
        const int tile = gmres_cuda_dot_tile;
        long long extra = 0;
        for (int k = 1; k <= m; ++k) extra += 2 * ((k + tile - 1) / tile - 1);
        BOOST_TEST(gmres_cycle_passes(m, gmres_cuda_dot_tile) == closed + extra, "m = " << m);
    }
    BOOST_TEST(gmres_cycle_passes(33, 32) == gmres_cycle_passes(33) + 2);
    BOOST_TEST(gmres_multi_dot_w_passes(32, 32) == 1);
    BOOST_TEST(gmres_multi_dot_w_passes(33, 32) == 2);
    BOOST_TEST(gmres_multi_dot_w_passes(1000, 0) == 1);
}

BOOST_AUTO_TEST_CASE(gmres_traffic_products_and_preconditioner_counts_match_a_solve)
{
    // whole cycles with rtol = atol = 0: per cycle m inner products and a restart's, except
    // after the last cycle (the solve stops there); one preconditioner application per
    // iteration
    auto exec = cpu_executor();
    HeptaSpec spec;
    spec.J = 6;
    spec.H = 6;
    spec.I = 4;
    spec.Nc = 1;
    const auto a = generate_hepta_coo<double>(spec);
    auto inner = std::shared_ptr<const Operator<double>>(
        make_matrix_operator<double, double>(a, Format::csr, exec));
    const Array<double> b(std::vector<double>(std::size_t(a.rows), 1.0));
    for (int m : {1, 5, 30}) {
        for (bool pc : {false, true}) {
            const int cycles = 3;
            auto counted = std::make_shared<Counting>(inner);
            auto half = std::make_shared<Counting>(std::make_shared<Half>(exec, a.rows));
            SolverOptions opts;
            opts.rtol = 0;
            opts.atol = 0;
            opts.max_it = cycles * m;
            opts.compute_true_residual = false;
            Gmres<double> s(opts, m);
            s.set_operator(counted);
            if (pc) s.set_preconditioner(half);
            Array<double> x(exec, std::size_t(a.rows));
            const Status st = s.solve(b, x);
            BOOST_TEST_REQUIRE(st.iterations == cycles * m, st.summary());
            const GmresTraffic t = gmres_traffic(m, pc);
            BOOST_TEST(counted->calls() == std::llround(t.products * st.iterations) - 1,
                       "m = " << m << ", pc = " << pc);
            BOOST_TEST(half->calls() == std::llround(t.precond_applies * st.iterations),
                       "m = " << m << ", pc = " << pc);
        }
    }
}
