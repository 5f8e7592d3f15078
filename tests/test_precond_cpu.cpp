// The CPU triangular solves of ILU(0)/BILU(0) (kernels::triangular_solve, precond_cpu.cpp:
// one thread, natural row order, block-size-specialised row kernels) against a plain host
// loop, for every block size (compile-time kernels for Nc = 1..4, the run-time one above),
// with 1 and 2 OpenMP threads (the same bits), the lower solve in place and out of place (the
// same bits; out of place leaves its input alone).
#include <boost/test/unit_test.hpp>

#include <omp.h>

#include <cstring>

#include "solver/precond/block_utils.hpp"
#include "solver/precond/precond_kernels.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

/// A triangular factor whose block row i couples to rows i ∓ 2w and i ∓ w and, unless i is
/// a multiple of 3, to its neighbour i ∓ 1 (lower: −, upper: +): the kernels take the
/// neighbour's result from registers when the factor has it. Entries scaled so that the
/// solves stay bounded (the chains are nb rows long).
detail::BlockCsrHost banded_factor(index_t nb, index_t nc, index_t w, bool lower, unsigned seed)
{
    detail::BlockCsrHost f;
    f.nb = nb;
    f.nc = nc;
    f.ptr.assign(std::size_t(nb) + 1, 0);
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    for (index_t i = 0; i < nb; ++i) {
        const index_t lower_cols[] = {i - 2 * w, i - w, i % 3 ? i - 1 : -1};
        const index_t upper_cols[] = {i % 3 ? i + 1 : nb, i + w, i + 2 * w};
        for (index_t j : lower ? lower_cols : upper_cols)
            if (j >= 0 && j < nb) f.col.push_back(j);
        f.ptr[std::size_t(i) + 1] = offset_t(f.col.size());
    }
    f.val = test::random_vector<double>(f.col.size() * nc2, seed);
    for (double& v : f.val) v *= 0.2 / double(nc);
    return f;
}

/// kernels::triangular_solve on the CPU executor with `threads` OpenMP threads. The lower
/// solve runs both in place and out of place: the same bits, and `in` left alone.
std::vector<double> solve_cpu(const detail::BlockCsrHost& f, const std::vector<double>* dinv,
                              bool lower, const std::vector<double>& rhs, int threads)
{
    const detail::LevelSchedule s = detail::level_schedule(f, lower);
    kernels::TriangularFactor<double> v;
    v.block_rows = f.nb;
    v.nc = f.nc;
    v.row_ptr = f.ptr.data();
    v.col = f.col.data();
    v.val = f.val.data();
    v.diag_inv = dinv ? dinv->data() : nullptr;
    v.level_rows = s.rows.data();
    v.level_ptr = s.ptr.data();
    v.levels = s.levels();
    std::vector<double> in = rhs, out(rhs.size(), 0.0), lower_in_place = rhs;
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    if (lower)
        kernels::triangular_solve(*cpu_executor(), v, lower_in_place.data(), lower_in_place.data());
    kernels::triangular_solve(*cpu_executor(), v, in.data(), out.data());
    omp_set_num_threads(before);
    if (lower) {
        BOOST_TEST(std::memcmp(lower_in_place.data(), out.data(), out.size() * sizeof(double)) ==
                   0);
        BOOST_TEST(std::memcmp(in.data(), rhs.data(), rhs.size() * sizeof(double)) == 0);
    }
    return out;
}

/// The same solve as a plain loop: lower ascending, upper descending.
std::vector<double> solve_ref(const detail::BlockCsrHost& f, const std::vector<double>* dinv,
                              bool lower, const std::vector<double>& rhs)
{
    const index_t nb = f.nb, nc = f.nc;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    std::vector<double> x(rhs.size(), 0.0), w(static_cast<std::size_t>(nc));
    for (index_t step = 0; step < nb; ++step) {
        const index_t i = lower ? step : nb - 1 - step;
        for (index_t a = 0; a < nc; ++a) w[std::size_t(a)] = rhs[std::size_t(i * nc + a)];
        for (offset_t k = f.ptr[std::size_t(i)]; k < f.ptr[std::size_t(i) + 1]; ++k)
            for (index_t a = 0; a < nc; ++a)
                for (index_t b = 0; b < nc; ++b)
                    w[std::size_t(a)] -= f.val[std::size_t(k) * nc2 + std::size_t(a * nc + b)] *
                                         x[std::size_t(f.col[std::size_t(k)] * nc + b)];
        for (index_t a = 0; a < nc; ++a) {
            double v = w[std::size_t(a)];
            if (dinv) {
                v = 0;
                for (index_t b = 0; b < nc; ++b)
                    v +=
                        (*dinv)[std::size_t(i) * nc2 + std::size_t(a * nc + b)] * w[std::size_t(b)];
            }
            x[std::size_t(i * nc + a)] = v;
        }
    }
    return x;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cpu_triangular_solves_match_a_host_loop_for_every_block_size)
{
    for (index_t nc : {1, 2, 3, 4, 5, 17}) {
        const index_t w = (4096 + nc - 1) / nc, nb = 4 * w;
        const std::size_t n = std::size_t(nb) * std::size_t(nc);
        const auto rhs = test::random_vector<double>(n, 11 + unsigned(nc));
        std::vector<double> dinv = test::random_vector<double>(std::size_t(nb) * nc * nc, 3);
        for (double& v : dinv) v *= 0.2 / double(nc);
        for (index_t i = 0; i < nb; ++i)  // D⁻¹ blocks near the identity
            for (index_t a = 0; a < nc; ++a) dinv[(std::size_t(i) * nc + a) * nc + a] += 1.0;
        for (const bool lower : {true, false}) {
            const auto f = banded_factor(nb, nc, w, lower, 5 + unsigned(nc));
            const std::vector<double>* d = lower ? nullptr : &dinv;
            const auto ref = solve_ref(f, d, lower, rhs);
            const auto one = solve_cpu(f, d, lower, rhs, 1);
            const auto two = solve_cpu(f, d, lower, rhs, 2);
            BOOST_TEST(test::rel_max_diff(one, ref) <= 1e-13,
                       "nc " << nc << (lower ? " lower" : " upper"));
            BOOST_TEST(std::memcmp(one.data(), two.data(), n * sizeof(double)) == 0,
                       "nc " << nc << (lower ? " lower" : " upper")
                             << ": 1 and 2 threads differ, max rel diff "
                             << test::rel_max_diff(two, one));
        }
    }
}
