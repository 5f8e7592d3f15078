// The solver's building blocks on the executor under test (CPU, or CUDA with
// HEPTANE_TEST_DEVICE=cuda): vector kernels and fused steps against plain host loops in
// long double, the stopping rules, and the preconditioner applications.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <numeric>

#include "solver/precond/preconditioner.hpp"
#include "solver/vector/vector_ops.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

const double nan_v = std::numeric_limits<double>::quiet_NaN();

template <class T>
Array<T> on_exec(const std::vector<T>& v)
{
    return Array<T>(v).to(test::test_executor());
}

void write_state(VectorOps<double>& ops, const KrylovState& s)
{
    copy_bytes(*cpu_executor(), &s, *ops.exec(), ops.context().state, sizeof s);
}

/// Σ x_i y_i in long double, and Σ |x_i y_i| for the rounding bound.
std::pair<long double, long double> ref_dot(const std::vector<double>& x,
                                            const std::vector<double>& y)
{
    long double s = 0, a = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        s += (long double)x[i] * y[i];
        a += std::abs((long double)x[i] * y[i]);
    }
    return {s, a};
}

/// Rounding bound of a double-accumulated sum of n products: n·eps·Σ|terms| (loose: any
/// summation order).
double sum_tol(std::size_t n, long double abs_sum)
{
    return double(n + 1) * std::numeric_limits<double>::epsilon() * double(abs_sum) + 1e-300;
}

/// CSR from dense row-major (host), entries with |a| > 0 stored, plus explicit diagonal.
Csr<double> csr_from_dense(index_t n, const std::vector<double>& d)
{
    Coo<double> a;
    a.rows = a.cols = n;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j)
            if (d[std::size_t(i) * n + j] != 0.0 || i == j) {
                r.push_back(i);
                c.push_back(j);
                v.push_back(d[std::size_t(i) * n + j]);
            }
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<double>(std::move(v));
    return csr_from_coo(a);
}

std::vector<double> dense_matvec(index_t n, const std::vector<double>& d,
                                 const std::vector<double>& x)
{
    std::vector<double> y(std::size_t(n), 0.0);
    for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j)
            y[std::size_t(i)] += d[std::size_t(i) * n + j] * x[std::size_t(j)];
    return y;
}

/// Block tridiagonal (Nc × Nc blocks, nb block rows), diagonally dominant: ILU(0) over
/// blocks has no fill there, so BILU(0) is the exact block LU.
std::vector<double> block_tridiagonal(index_t nb, index_t nc, unsigned seed)
{
    const index_t n = nb * nc;
    std::vector<double> d(std::size_t(n) * n, 0.0);
    auto rnd = test::random_vector<double>(std::size_t(n) * n, seed);
    for (index_t i = 0; i < n; ++i) {
        const index_t bi = i / nc;
        double rowsum = 0;
        for (index_t j = 0; j < n; ++j) {
            const index_t bj = j / nc;
            if (i != j && std::abs(bi - bj) <= 1) {
                d[std::size_t(i) * n + j] = rnd[std::size_t(i) * n + j];
                rowsum += std::abs(rnd[std::size_t(i) * n + j]);
            }
        }
        d[std::size_t(i) * n + i] = rowsum + 1.0 + std::abs(rnd[std::size_t(i) * n + i]);
    }
    return d;
}

}  // namespace

BOOST_AUTO_TEST_CASE(plain_vector_kernels_match_host_loops)
{
    for (index_t n : {0, 1, 257, 100003}) {
        VectorOps<double> ops(test::test_executor(), 1);
        const auto xh = test::random_vector<double>(std::size_t(n), 1);
        const auto yh = test::random_vector<double>(std::size_t(n), 2);
        auto x = on_exec(xh);
        auto y = on_exec(yh);

        ops.fill(n, 2.5, y.data());
        for (double v : y.to_vector()) BOOST_TEST(v == 2.5);
        ops.copy(n, x.data(), y.data());
        BOOST_TEST(y.to_vector() == xh, boost::test_tools::per_element());

        // beta == 0: y is only written, so NaN in y must not leak (Kokkos' check)
        auto yn = on_exec(std::vector<double>(std::size_t(n), nan_v));
        ops.axpby(n, -3.0, x.data(), 0.0, yn.data());
        const auto ynh = yn.to_vector();
        for (index_t i = 0; i < n; ++i)
            BOOST_TEST(ynh[std::size_t(i)] == -3.0 * xh[std::size_t(i)]);

        auto y2 = on_exec(yh);
        ops.axpby(n, 0.5, x.data(), -2.0, y2.data());
        const auto y2h = y2.to_vector();
        for (index_t i = 0; i < n; ++i)
            BOOST_TEST(std::abs(y2h[std::size_t(i)] -
                                (0.5 * xh[std::size_t(i)] - 2.0 * yh[std::size_t(i)])) <= 1e-15);

        const auto [d, da] = ref_dot(xh, yh);
        auto y3 = on_exec(yh);
        BOOST_TEST(std::abs(ops.dot(n, x.data(), y3.data()) - double(d)) <=
                   sum_tol(std::size_t(n), da));
        const auto [nn, na] = ref_dot(xh, xh);
        BOOST_TEST(std::abs(ops.norm2(n, x.data()) - std::sqrt(double(nn))) <=
                   sum_tol(std::size_t(n), na) / (std::sqrt(double(nn)) + 1e-300) + 1e-300);
    }
}

BOOST_AUTO_TEST_CASE(bicgstab_steps_match_host_math)
{
    const index_t n = 50001;
    VectorOps<double> ops(test::test_executor(), 10);
    const auto bh = test::random_vector<double>(std::size_t(n), 11);
    const auto rh = test::random_vector<double>(std::size_t(n), 12);
    auto b = on_exec(bh), r = on_exec(rh);
    auto r_hat = on_exec(std::vector<double>(std::size_t(n), nan_v));
    auto p = on_exec(std::vector<double>(std::size_t(n), nan_v));
    auto v = on_exec(std::vector<double>(std::size_t(n), nan_v));

    ops.bicgstab_init(n, b.data(), r.data(), r_hat.data(), p.data(), v.data(),
                      StopParams{1e-6, 0.0, 1e4, 10});
    KrylovState st = ops.read_state();
    BOOST_TEST(r_hat.to_vector() == rh, boost::test_tools::per_element());
    for (double q : p.to_vector()) BOOST_TEST(q == 0.0);
    for (double q : v.to_vector()) BOOST_TEST(q == 0.0);
    const auto [bb, bba] = ref_dot(bh, bh);
    const auto [rr, rra] = ref_dot(rh, rh);
    BOOST_TEST(std::abs(st.bnorm - std::sqrt(double(bb))) <= 1e-12 * std::sqrt(double(bb)));
    BOOST_TEST(std::abs(st.rho - double(rr)) <= sum_tol(std::size_t(n), rra));
    BOOST_TEST(st.tol == 1e-6 * st.bnorm);
    BOOST_TEST(st.stop == 0);
    BOOST_TEST(st.iter == 0);

    // give the state known scalars and run each step against the host formula
    st.beta = 0.75;
    st.omega = -1.25;
    st.rho = 3.0;
    write_state(ops, st);
    const auto ph = test::random_vector<double>(std::size_t(n), 13);
    const auto vh = test::random_vector<double>(std::size_t(n), 14);
    p = on_exec(ph);
    v = on_exec(vh);
    ops.bicgstab_update_p(n, r.data(), v.data(), p.data());  // p = r + β(p − ωv)
    auto pn = p.to_vector();
    for (index_t i = 0; i < n; i += 97) {
        const double ref =
            rh[std::size_t(i)] + 0.75 * (ph[std::size_t(i)] + 1.25 * vh[std::size_t(i)]);
        BOOST_TEST(std::abs(pn[std::size_t(i)] - ref) <= 1e-15 * 8);
    }

    ops.bicgstab_alpha(n, r_hat.data(), v.data());  // α = ρ/(r̂, v)
    st = ops.read_state();
    const auto [rv, rva] = ref_dot(rh, vh);
    BOOST_TEST(std::abs(st.alpha - 3.0 / double(rv)) <= 3.0 / std::abs(double(rv)) *
                                                            sum_tol(std::size_t(n), rva) /
                                                            std::abs(double(rv)) * 4);

    auto s = on_exec(std::vector<double>(std::size_t(n), nan_v));
    ops.bicgstab_update_s(n, r.data(), v.data(), s.data());  // s = r − αv
    const auto sh = s.to_vector();
    for (index_t i = 0; i < n; i += 97)
        BOOST_TEST(
            std::abs(sh[std::size_t(i)] - (rh[std::size_t(i)] - st.alpha * vh[std::size_t(i)])) <=
            1e-14 * (1 + std::abs(st.alpha)));
    BOOST_TEST(ops.read_state().half == 0);

    const auto th = test::random_vector<double>(std::size_t(n), 15);
    auto t = on_exec(th);
    ops.bicgstab_omega(n, t.data(), s.data());  // ω = (t,s)/(t,t)
    st = ops.read_state();
    const auto [ts, tsa] = ref_dot(th, sh);
    const auto [tt, tta] = ref_dot(th, th);
    BOOST_TEST(std::abs(st.omega - double(ts / tt)) <= 1e-10 * std::abs(double(ts / tt)));

    // x += α p̂ + ω ŝ; r = s − ω t; (r̂, r), (r, r)
    const auto xh = test::random_vector<double>(std::size_t(n), 16);
    const auto shat = test::random_vector<double>(std::size_t(n), 17);
    auto x = on_exec(xh), s_hat = on_exec(shat);
    auto r2 = on_exec(std::vector<double>(std::size_t(n), nan_v));
    const KrylovState before = ops.read_state();
    ops.bicgstab_update_xr(n, p.data(), s_hat.data(), s.data(), t.data(), r_hat.data(), x.data(),
                           r2.data());
    st = ops.read_state();
    const auto xn = x.to_vector(), rn = r2.to_vector();
    std::vector<double> r_ref(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) {
        const std::size_t k = std::size_t(i);
        r_ref[k] = sh[k] - before.omega * th[k];
        BOOST_TEST(std::abs(rn[k] - r_ref[k]) <= 1e-14 * (1 + std::abs(before.omega)));
        if (i % 97 == 0) {
            const double xr = xh[k] + before.alpha * pn[k] + before.omega * shat[k];
            BOOST_TEST(std::abs(xn[k] - xr) <=
                       1e-14 * (1 + std::abs(before.alpha) + std::abs(before.omega)));
        }
    }
    const auto [rhr, rhra] = ref_dot(rh, rn);
    const auto [rr2, rr2a] = ref_dot(rn, rn);
    BOOST_TEST(st.iter == 1);
    BOOST_TEST(std::abs(st.rnorm - std::sqrt(double(rr2))) <= 1e-12 * std::sqrt(double(rr2)));
    BOOST_TEST(std::abs(st.rho - double(rhr)) <= sum_tol(std::size_t(n), rhra));
    BOOST_TEST(std::abs(st.beta - (double(rhr) / before.rho) * (before.alpha / before.omega)) <=
               1e-10 * std::abs(st.beta));
    BOOST_TEST(st.rho_old == before.rho);
    double h1 = 0;
    copy_bytes(*ops.exec(), ops.history_address() + 1, *cpu_executor(), &h1, sizeof h1);
    BOOST_TEST(h1 == st.rnorm);
}

// The x/r update on every element, with its arrays 16-byte aligned (CUDA: two elements a
// thread through 16-byte loads) and one element off (the element-at-a-time form), an odd and
// an even length, ω ≠ 0 and ω = 0 (x += α p̂ only, r = s): each x and r against the host
// formula, the two sums against long-double references.
BOOST_AUTO_TEST_CASE(bicgstab_update_xr_matches_the_host_on_every_element)
{
    for (const index_t n : {index_t(1), index_t(2), index_t(4097), index_t(70000)})
        for (const int off : {0, 1})
            for (const double omega : {-1.25, 0.0}) {
                BOOST_TEST_CONTEXT("n " << n << ", offset " << off << ", omega " << omega)
                {
                    const std::size_t m = std::size_t(n + off);
                    VectorOps<double> ops(test::test_executor(), 10);
                    KrylovState st;
                    st.alpha = 0.625;
                    st.omega = omega;
                    st.rho = 3.0;
                    st.bnorm = 1.0;
                    st.div_limit = 1e300;  // no stop on the residual: ρ is taken
                    st.max_it = 100;
                    write_state(ops, st);
                    const auto ph = test::random_vector<double>(m, 31),
                               shh = test::random_vector<double>(m, 32);
                    const auto sh = test::random_vector<double>(m, 33),
                               th = test::random_vector<double>(m, 34);
                    const auto rh = test::random_vector<double>(m, 35),
                               xh = test::random_vector<double>(m, 36);
                    auto p = on_exec(ph), s_hat = on_exec(shh), s = on_exec(sh), t = on_exec(th);
                    auto r_hat = on_exec(rh), x = on_exec(xh);
                    auto r = on_exec(std::vector<double>(m, nan_v));
                    ops.bicgstab_update_xr(n, p.data() + off, s_hat.data() + off, s.data() + off,
                                           t.data() + off, r_hat.data() + off, x.data() + off,
                                           r.data() + off);
                    const auto after = ops.read_state();
                    const auto xn = x.to_vector(), rn = r.to_vector();
                    std::vector<double> rr(static_cast<std::size_t>(n)),
                        rhv(static_cast<std::size_t>(n));
                    bool x_ok = true, r_ok = true;
                    for (std::size_t i = std::size_t(off); i < m; ++i) {
                        const double xr = omega != 0.0 ? xh[i] + 0.625 * ph[i] + omega * shh[i]
                                                       : xh[i] + 0.625 * ph[i];
                        const double r_ref = omega != 0.0 ? sh[i] - omega * th[i] : sh[i];
                        x_ok = x_ok && std::abs(xn[i] - xr) <= 1e-14 * (2 + std::abs(omega));
                        r_ok = r_ok && std::abs(rn[i] - r_ref) <= 1e-14 * (1 + std::abs(omega));
                        rr[i - std::size_t(off)] = rn[i];
                        rhv[i - std::size_t(off)] = rh[i];
                    }
                    BOOST_TEST(x_ok);
                    BOOST_TEST(r_ok);
                    if (off) BOOST_TEST(xn[0] == xh[0]);  // outside the range: untouched
                    const auto [rhr, rhra] = ref_dot(rhv, rr);
                    const auto [r2, r2a] = ref_dot(rr, rr);
                    BOOST_TEST(std::abs(after.rho - double(rhr)) <= sum_tol(std::size_t(n), rhra));
                    BOOST_TEST(std::abs(after.rnorm - std::sqrt(double(r2))) <=
                               1e-12 * std::sqrt(double(r2)) + 1e-300);
                }
            }
}

// p = r + β (p − ω v) on every element: pairs of elements on the GPU where every array is
// 16-byte aligned (offset 0), one at a time where it is not (offset 1), an odd last element.
BOOST_AUTO_TEST_CASE(bicgstab_update_p_matches_the_host_on_every_element)
{
    for (const index_t n : {index_t(1), index_t(2), index_t(4097), index_t(70000)})
        for (const int off : {0, 1}) {
            BOOST_TEST_CONTEXT("n " << n << ", offset " << off)
            {
                const std::size_t m = std::size_t(n + off);
                VectorOps<double> ops(test::test_executor(), 10);
                KrylovState st;
                st.beta = 0.75;
                st.omega = -1.25;
                write_state(ops, st);
                const auto rh = test::random_vector<double>(m, 41),
                           vh = test::random_vector<double>(m, 42),
                           ph = test::random_vector<double>(m, 43);
                auto r = on_exec(rh), v = on_exec(vh), p = on_exec(ph);
                ops.bicgstab_update_p(n, r.data() + off, v.data() + off, p.data() + off);
                const auto pn = p.to_vector();
                bool ok = true;
                for (std::size_t i = std::size_t(off); i < m; ++i) {
                    const double want = rh[i] + 0.75 * (ph[i] + 1.25 * vh[i]);
                    ok = ok && std::abs(pn[i] - want) <= 1e-14 * 4;
                }
                BOOST_TEST(ok);
                if (off) BOOST_TEST(pn[0] == ph[0]);  // outside the range: untouched
            }
        }
}

BOOST_AUTO_TEST_CASE(step_kernels_do_nothing_once_stopped)
{
    const index_t n = 1000;
    VectorOps<double> ops(test::test_executor(), 10);
    KrylovState st;
    st.stop = 1;
    st.reason = static_cast<int>(Reason::breakdown_rv);
    st.alpha = st.beta = st.omega = st.rho = 1.0;
    st.iter = 4;
    write_state(ops, st);
    const auto a = test::random_vector<double>(std::size_t(n), 1);
    const auto c = test::random_vector<double>(std::size_t(n), 2);
    auto p = on_exec(a), v = on_exec(c), x = on_exec(a), r = on_exec(c);
    ops.bicgstab_update_p(n, r.data(), v.data(), p.data());
    ops.bicgstab_alpha(n, r.data(), v.data());
    ops.bicgstab_update_s(n, r.data(), v.data(), v.data());
    ops.bicgstab_omega(n, r.data(), v.data());
    ops.bicgstab_update_xr(n, p.data(), p.data(), v.data(), v.data(), r.data(), x.data(), r.data());
    ops.cg_alpha(n, p.data(), v.data());
    ops.cg_update_xr(n, p.data(), v.data(), x.data(), r.data(), true);
    ops.cg_update_p(n, r.data(), p.data());
    BOOST_TEST(p.to_vector() == a, boost::test_tools::per_element());
    BOOST_TEST(v.to_vector() == c, boost::test_tools::per_element());
    BOOST_TEST(x.to_vector() == a, boost::test_tools::per_element());
    BOOST_TEST(r.to_vector() == c, boost::test_tools::per_element());
    const KrylovState after = ops.read_state();
    BOOST_TEST(after.iter == 4);
    BOOST_TEST(after.reason == static_cast<int>(Reason::breakdown_rv));
    // request_stop keeps the first reason
    ops.request_stop(Reason::stagnation);
    BOOST_TEST(ops.read_state().reason == static_cast<int>(Reason::breakdown_rv));
}

BOOST_AUTO_TEST_CASE(cg_steps_match_host_math)
{
    const index_t n = 4099;
    VectorOps<double> ops(test::test_executor(), 10);
    const auto bh = test::random_vector<double>(std::size_t(n), 21);
    const auto rh = test::random_vector<double>(std::size_t(n), 22);
    const auto zh = test::random_vector<double>(std::size_t(n), 23);
    auto b = on_exec(bh), r = on_exec(rh), z = on_exec(zh);
    auto p = on_exec(std::vector<double>(std::size_t(n), nan_v));
    ops.cg_init(n, b.data(), r.data(), StopParams{1e-8, 0, 1e4, 10});
    // (r, z) of random vectors may be negative: use z = r for the start
    ops.cg_start(n, r.data(), r.data(), p.data());
    KrylovState st = ops.read_state();
    BOOST_TEST(p.to_vector() == rh, boost::test_tools::per_element());
    const auto [rr, rra] = ref_dot(rh, rh);
    BOOST_TEST(std::abs(st.rho - double(rr)) <= sum_tol(std::size_t(n), rra));

    const auto qh = test::random_vector<double>(std::size_t(n), 24);
    auto q = on_exec(qh);
    // (p, q) of random vectors: force a positive value by q = p + small
    std::vector<double> q2(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i)
        q2[std::size_t(i)] = rh[std::size_t(i)] + 0.1 * qh[std::size_t(i)];
    q = on_exec(q2);
    ops.cg_alpha(n, p.data(), q.data());
    st = ops.read_state();
    const auto [pq, pqa] = ref_dot(rh, q2);
    BOOST_TEST(std::abs(st.alpha - double(rr / pq)) <= 1e-12 * std::abs(double(rr / pq)));

    auto x = on_exec(zh);
    const KrylovState before = st;
    ops.cg_update_xr(n, p.data(), q.data(), x.data(), r.data(), true);
    st = ops.read_state();
    const auto xn = x.to_vector(), rn = r.to_vector();
    for (index_t i = 0; i < n; ++i) {
        const std::size_t k = std::size_t(i);
        BOOST_TEST(std::abs(xn[k] - (zh[k] + before.alpha * rh[k])) <=
                   1e-14 * (1 + std::abs(before.alpha)));
        BOOST_TEST(std::abs(rn[k] - (rh[k] - before.alpha * q2[k])) <=
                   1e-14 * (1 + std::abs(before.alpha)));
    }
    const auto [rr2, rr2a] = ref_dot(rn, rn);
    BOOST_TEST(st.iter == 1);
    BOOST_TEST(std::abs(st.rho - double(rr2)) <= sum_tol(std::size_t(n), rr2a));  // identity pc
    BOOST_TEST(std::abs(st.beta - double(rr2) / before.rho) <= 1e-12 * st.beta);

    // with a preconditioner: β = (r, z)/ρ, then p = z + βp
    const KrylovState b2 = st;
    std::vector<double> zz(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) zz[std::size_t(i)] = 2.0 * rn[std::size_t(i)];
    z = on_exec(zz);
    ops.cg_beta(n, r.data(), z.data());
    st = ops.read_state();
    BOOST_TEST(std::abs(st.beta - 2.0 * double(rr2) / b2.rho) <= 1e-12 * st.beta);
    const auto pold = p.to_vector();
    ops.cg_update_p(n, z.data(), p.data());
    const auto pn = p.to_vector();
    for (index_t i = 0; i < n; i += 13)
        BOOST_TEST(
            std::abs(pn[std::size_t(i)] - (zz[std::size_t(i)] + st.beta * pold[std::size_t(i)])) <=
            1e-14 * (1 + st.beta) * 4);
}

BOOST_AUTO_TEST_CASE(stopping_rules_in_order)
{
    double hist[8] = {};
    const StopParams p{1e-6, 1e-3, 10.0, 5};
    KrylovState s;
    krylov::init_finalize(s, 0.0, 0.0, p, hist);  // b = 0
    BOOST_TEST(s.reason == int(Reason::converged_atol));
    krylov::init_finalize(s, 4.0, nan_v, p, hist);
    BOOST_TEST(s.reason == int(Reason::diverged_nan));
    krylov::init_finalize(s, 1e8, 1e-5, p, hist);  // atol < ‖r0‖ = 3.2e-3 < tol = max(1e-2, 1e-3)
    BOOST_TEST(s.reason == int(Reason::converged_rtol));
    krylov::init_finalize(s, 1.0, 1e-8, p, hist);  // ‖r0‖ = 1e-4 < atol
    BOOST_TEST(s.reason == int(Reason::converged_atol));
    krylov::init_finalize(s, 1.0, 1.0, StopParams{1e-6, 0, 10, 0}, hist);
    BOOST_TEST(s.reason == int(Reason::diverged_max_it));

    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    BOOST_TEST(s.stop == 0);
    BOOST_TEST(hist[0] == 1.0);
    // breakdown_omega pending: reported after the update unless the residual converged
    krylov::bicgstab_omega_finalize(s, 0.0, 2.0);
    BOOST_TEST(s.omega == 0.0);
    BOOST_TEST(s.pending == int(Reason::breakdown_omega));
    KrylovState c = s;
    krylov::bicgstab_xr_finalize(c, 1.0, 1e-12, hist);
    BOOST_TEST(c.reason == int(Reason::converged_atol));
    krylov::bicgstab_xr_finalize(s, 1.0, 0.25, hist);
    BOOST_TEST(s.reason == int(Reason::breakdown_omega));
    BOOST_TEST(s.iter == 1);
    BOOST_TEST(hist[1] == 0.5);

    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_xr_finalize(s, 1.0, 400.0, hist);  // ‖r‖ = 20 > dtol·‖r0‖ = 10
    BOOST_TEST(s.reason == int(Reason::diverged_dtol));
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_xr_finalize(s, 0.0, 0.25, hist);  // (r̂, r) = 0
    BOOST_TEST(s.reason == int(Reason::breakdown_rho));
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_alpha_finalize(s, 0.0);
    BOOST_TEST(s.reason == int(Reason::breakdown_rv));
    // the half step: ‖s‖ ≤ tol gives ω = 0 and convergence after the update
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_s_finalize(s, 1e-14);
    BOOST_TEST(s.half == 1);
    krylov::bicgstab_omega_finalize(s, 5.0, 7.0);
    BOOST_TEST(s.omega == 0.0);
    krylov::bicgstab_xr_finalize(s, 1.0, 1e-14, hist);
    BOOST_TEST(is_converged(static_cast<Reason>(s.reason)));
    // the fused loop's one reduction point for both: (t, s), (t, t), (s, s)
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_s_omega_finalize(s, 5.0, 7.0, 1e-28);  // ‖s‖ ≤ tol: the half step
    BOOST_TEST(s.half == 1);
    BOOST_TEST(s.omega == 0.0);
    BOOST_TEST(!s.stop);
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_s_omega_finalize(s, 5.0, 8.0, 0.25);  // ω = (t, s) / (t, t)
    BOOST_TEST(s.half == 0);
    BOOST_TEST(s.omega == 0.625);
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::bicgstab_s_omega_finalize(s, 5.0, 8.0, std::nan(""));
    BOOST_TEST(s.reason == int(Reason::diverged_nan));
    // max_it comes last: iteration 5 of 5
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    s.omega = 1.0;
    for (int i = 0; i < 5; ++i) krylov::bicgstab_xr_finalize(s, 1.0, 0.81, hist);
    BOOST_TEST(s.reason == int(Reason::diverged_max_it));
    BOOST_TEST(s.iter == 5);
    // CG: indefinite
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::cg_alpha_finalize(s, -1.0);
    BOOST_TEST(s.reason == int(Reason::diverged_indefinite));
    krylov::init_finalize(s, 1.0, 1.0, p, hist);
    krylov::cg_rho_finalize(s, -1.0);
    BOOST_TEST(s.reason == int(Reason::diverged_indefinite));
}

// ---- preconditioners ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(jacobi_divides_by_the_diagonal)
{
    const index_t n = 40;
    auto d = block_tridiagonal(n, 1, 5);
    auto m =
        make_preconditioner<double>(PcType::jacobi, csr_from_dense(n, d), 1, test::test_executor());
    const auto rh = test::random_vector<double>(std::size_t(n), 6);
    auto r = on_exec(rh);
    Array<double> z(test::test_executor(), std::size_t(n));
    m->apply(r.data(), z.data());
    const auto zh = z.to_vector();
    for (index_t i = 0; i < n; ++i)
        BOOST_TEST(std::abs(zh[std::size_t(i)] - rh[std::size_t(i)] / d[std::size_t(i) * n + i]) <=
                   1e-15 * std::abs(zh[std::size_t(i)]) + 1e-300);
    // alpha, beta: z = 2 M⁻¹ r − z
    const auto before = z.to_vector();
    m->apply(2.0, r.data(), -1.0, z.data());
    const auto z2 = z.to_vector();
    for (index_t i = 0; i < n; ++i)
        BOOST_TEST(std::abs(z2[std::size_t(i)] - before[std::size_t(i)]) <=
                   1e-15 * std::abs(before[std::size_t(i)]) + 1e-300);
    BOOST_TEST(m->describe().find("jacobi") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(block_jacobi_and_bilu0_are_exact_where_they_should_be)
{
    // block-Jacobi on a block-diagonal matrix and (B)ILU(0) on a block-tridiagonal one are
    // exact inverses: A z = r up to rounding.
    for (index_t nc : {1, 2, 3, 5}) {
        const index_t nb = 23, n = nb * nc;
        auto tri = block_tridiagonal(nb, nc, 100 + unsigned(nc));
        auto diag = tri;
        for (index_t i = 0; i < n; ++i)
            for (index_t j = 0; j < n; ++j)
                if (i / nc != j / nc) diag[std::size_t(i) * n + j] = 0.0;
        const auto rh = test::random_vector<double>(std::size_t(n), 7);
        auto r = on_exec(rh);
        for (auto [type, dense] :
             {std::pair{PcType::block_jacobi, &diag}, std::pair{PcType::ilu0, &tri}}) {
            auto m = make_preconditioner<double>(type, csr_from_dense(n, *dense), nc,
                                                 test::test_executor());
            BOOST_TEST(m->block_size() == nc);
            Array<double> z(test::test_executor(), std::size_t(n));
            m->apply(r.data(), z.data());
            const auto az = dense_matvec(n, *dense, z.to_vector());
            BOOST_TEST(test::rel_max_diff(az, rh) <= 1e-13,
                       "pc " << to_string(type) << " nc " << nc);
        }
    }
}

BOOST_AUTO_TEST_CASE(ilu0_float_factors_apply)
{
    const index_t nb = 30, nc = 2, n = nb * nc;
    auto tri = block_tridiagonal(nb, nc, 9);
    auto m =
        make_preconditioner<float>(PcType::ilu0, csr_from_dense(n, tri), nc, test::test_executor());
    const auto rh = test::random_vector<float>(std::size_t(n), 7);
    auto r = on_exec(rh);
    Array<float> z(test::test_executor(), std::size_t(n));
    m->apply(r.data(), z.data());
    const auto zf = z.to_vector();
    const auto az = dense_matvec(n, tri, std::vector<double>(zf.begin(), zf.end()));
    BOOST_TEST(test::rel_max_diff(az, rh) <= 1e-5);
}

BOOST_AUTO_TEST_CASE(singular_blocks_are_input_errors_naming_the_block)
{
    // Nc = 2, block row 3 = [[1, 2], [2, 4]] is singular
    const index_t nb = 6, nc = 2, n = nb * nc;
    std::vector<double> d(std::size_t(n) * n, 0.0);
    for (index_t i = 0; i < n; ++i) d[std::size_t(i) * n + i] = 4.0;
    d[6 * n + 6] = 1.0;
    d[6 * n + 7] = 2.0;
    d[7 * n + 6] = 2.0;
    d[7 * n + 7] = 4.0;
    const auto a = csr_from_dense(n, d);
    auto names_block_3 = [](const InputError& e) {
        const std::string w = e.what();
        BOOST_TEST_MESSAGE(w);
        return w.find("block row 4") != std::string::npos &&  // 1-based: the file's rows
               w.find("rows 7..8") != std::string::npos &&
               w.find("pivot 2 of 2") != std::string::npos;
    };
    BOOST_CHECK_EXCEPTION(
        make_preconditioner<double>(PcType::block_jacobi, a, nc, test::test_executor()), InputError,
        names_block_3);
    BOOST_CHECK_EXCEPTION(make_preconditioner<double>(PcType::ilu0, a, nc, test::test_executor()),
                          InputError, names_block_3);
    // Jacobi: a zero diagonal entry names the row
    d[6 * n + 6] = 0.0;
    BOOST_CHECK_EXCEPTION(
        make_preconditioner<double>(PcType::jacobi, csr_from_dense(n, d), 1, test::test_executor()),
        InputError, [](const InputError& e) {
            return std::string(e.what()).find("row 7 is") != std::string::npos;  // 1-based
        });
    // a block size that does not divide n
    BOOST_CHECK_THROW(
        make_preconditioner<double>(PcType::block_jacobi, a, 5, test::test_executor()), InputError);
    BOOST_CHECK_THROW(parse_pc("amg7"), InputError);
    BOOST_TEST((parse_pc("amg") == PcType::amg));
    BOOST_TEST((parse_pc("bjacobi") == PcType::block_jacobi));
    BOOST_TEST((parse_pc("ilu0") == PcType::ilu0));
}
