// MLEM and OSEM (solver/mlem): against a plain dense reference in long double written here,
// the log-likelihood's monotonicity on a PET system, OSEM with one subset against MLEM,
// positivity, unseen voxels and empty rows, input errors, precisions and Aᵀ strategies. Runs
// on the executor under test (HEPTANE_TEST_DEVICE=cuda: the GPU, and then also device vs
// CPU).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "formats/matrix.hpp"
#include "generators/pet.hpp"
#include "solver/mlem/mlem.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

/// A non-negative 60 x 40 system with an empty row (5), a column no row touches (7), zero
/// counts on some rows and counts on the empty row.
struct Small {
    Coo<double> a;
    std::vector<double> g;
};

Small small_system()
{
    const index_t m = 60, n = 40;
    Coo<double> r = test::random_coo<double>(m, n, 2, 9, 17);
    std::vector<index_t> row, col;
    std::vector<double> val;
    for (offset_t k = 0; k < r.nnz(); ++k) {
        if (r.row[k] == 5 || r.col[k] == 7) continue;
        row.push_back(r.row[k]);
        col.push_back(r.col[k]);
        val.push_back(std::abs(r.val[k]) + 0.05);
    }
    Small s{Coo<double>{m, n, Array<index_t>(row), Array<index_t>(col), Array<double>(val)}, {}};
    const auto u = test::random_vector<double>(std::size_t(m), 3);
    for (index_t i = 0; i < m; ++i) s.g.push_back(i % 7 == 3 ? 0.0 : std::floor(20 * (u[i] + 1)));
    s.g[5] = 4;  // counts on a row that sees no voxel
    return s;
}

/// Plain MLEM / OSEM in long double on the dense matrix: the definition, step by step.
struct Reference {
    std::vector<long double> f;
    std::vector<long double> loglik;  // L(f^k), k = 0..iters
};

Reference dense_reference(const Coo<double>& a, const std::vector<double>& g, int iters,
                          const std::vector<index_t>& bounds)
{
    const index_t m = a.rows, n = a.cols;
    const int S = int(bounds.size()) - 1;
    std::vector<long double> A(std::size_t(m) * n, 0.0L);
    for (offset_t k = 0; k < a.nnz(); ++k) A[std::size_t(a.row[k]) * n + a.col[k]] = a.val[k];
    std::vector<std::vector<long double>> norm_s(S, std::vector<long double>(n, 0.0L));
    std::vector<long double> norm(n, 0.0L);
    for (int s = 0; s < S; ++s)
        for (index_t i = bounds[s]; i < bounds[s + 1]; ++i)
            for (index_t j = 0; j < n; ++j) {
                norm_s[s][j] += A[std::size_t(i) * n + j];
                norm[j] += A[std::size_t(i) * n + j];
            }
    long double sum_g = 0, sum_norm = 0;
    for (double v : g) sum_g += v;
    for (long double v : norm) sum_norm += v;
    Reference r;
    r.f.assign(n, 0.0L);
    for (index_t j = 0; j < n; ++j) r.f[j] = norm[j] > 0 ? sum_g / sum_norm : 0.0L;
    auto project = [&](index_t i) {
        long double q = 0;
        for (index_t j = 0; j < n; ++j) q += A[std::size_t(i) * n + j] * r.f[j];
        return q;
    };
    auto loglik = [&] {
        long double l = 0;
        for (index_t i = 0; i < m; ++i) {
            const long double q = project(i);
            if (q > 0) l += (g[i] > 0 ? g[i] * std::log(q) : 0.0L) - q;
        }
        return l;
    };
    r.loglik.push_back(loglik());
    for (int k = 0; k < iters; ++k) {
        for (int s = 0; s < S; ++s) {
            std::vector<long double> c(m, 0.0L), b(n, 0.0L);
            for (index_t i = bounds[s]; i < bounds[s + 1]; ++i) {
                const long double q = project(i);
                c[i] = q > 0 ? g[i] / q : 0.0L;  // 0/0 = 0, empty rows give 0
            }
            for (index_t i = bounds[s]; i < bounds[s + 1]; ++i)
                for (index_t j = 0; j < n; ++j) b[j] += A[std::size_t(i) * n + j] * c[i];
            for (index_t j = 0; j < n; ++j)
                if (norm_s[s][j] > 0) r.f[j] = r.f[j] * b[j] / norm_s[s][j];
        }
        r.loglik.push_back(loglik());
    }
    return r;
}

template <class VT>
std::vector<double> run_mlem(const Coo<double>& a, const std::vector<double>& g, int iters,
                             int subsets, std::shared_ptr<const Executor> exec,
                             MlemStatus* status = nullptr,
                             TransposeMode tm = TransposeMode::scatter, Format fmt = Format::csr)
{
    FormatOptions fo;
    fo.transpose = tm;
    MlemOptions mo;
    mo.iterations = iters;
    Mlem<VT> em(mo);
    if (subsets == 0)
        em.set_operator(
            std::shared_ptr<const Operator<VT>>(make_matrix_operator<VT, VT>(a, fmt, exec, fo)));
    else
        em.set_subsets(make_row_block_operators<VT, VT>(a, subsets, fmt, exec, fo));
    Array<VT> gd = Array<VT>(std::vector<VT>(g.begin(), g.end())).to(exec);
    Array<VT> fd(exec, std::size_t(a.cols));
    const MlemStatus st = em.solve(gd, fd);
    if (status) *status = st;
    const auto f = fd.to_vector();
    return std::vector<double>(f.begin(), f.end());
}

double rel_ld(const std::vector<double>& x, const std::vector<long double>& ref)
{
    long double num = 0, den = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        num = std::max(num, std::abs((long double)x[i] - ref[i]));
        den = std::max(den, std::abs(ref[i]));
    }
    return double(num / den);
}

}  // namespace

BOOST_AUTO_TEST_CASE(mlem_matches_dense_reference_after_50_iterations)
{
    const Small s = small_system();
    const Reference ref = dense_reference(s.a, s.g, 50, {0, s.a.rows});
    for (auto tm : {TransposeMode::scatter, TransposeMode::stored}) {
        for (auto fmt : {Format::csr, Format::coo, Format::ell}) {
            MlemStatus st;
            const auto f = run_mlem<double>(s.a, s.g, 50, 0, test::test_executor(), &st, tm, fmt);
            const double d = rel_ld(f, ref.f);
            BOOST_TEST_MESSAGE(to_string(fmt) << " " << describe_transpose(fmt, tm)
                                              << ": max|f - f_ref|/max|f_ref| = " << d);
            BOOST_TEST(d <= 1e-10);
            BOOST_TEST_REQUIRE(st.loglik.size() == 51u);
            for (int k = 0; k <= 50; ++k)
                BOOST_TEST(std::abs(st.loglik[k] - double(ref.loglik[k])) <=
                               1e-10 * std::abs(double(ref.loglik[k])),
                           "L(f^" << k << ") " << st.loglik[k] << " vs " << double(ref.loglik[k]));
            BOOST_TEST(st.unseen_voxels == 1);
            BOOST_TEST(f[7] == 0.0);  // the voxel no row sees stays 0
            for (double v : f) BOOST_TEST_REQUIRE(v >= 0.0);
        }
    }
}

BOOST_AUTO_TEST_CASE(osem_matches_dense_reference)
{
    const Small s = small_system();
    for (int S : {2, 3, 7}) {
        const auto bounds = row_block_bounds(s.a, S);
        const Reference ref = dense_reference(s.a, s.g, 20, bounds);
        MlemStatus st;
        const auto f = run_mlem<double>(s.a, s.g, 20, S, test::test_executor(), &st);
        BOOST_TEST(rel_ld(f, ref.f) <= 1e-10, S << " subsets: " << rel_ld(f, ref.f));
        BOOST_TEST(st.subsets == S);
        for (int k = 0; k <= 20; ++k)
            BOOST_TEST(std::abs(st.loglik[k] - double(ref.loglik[k])) <=
                       1e-10 * std::abs(double(ref.loglik[k])));
    }
}

BOOST_AUTO_TEST_CASE(osem_with_one_subset_equals_mlem)
{
    // stored transpose: on the CPU every kernel is deterministic, so the two paths (one
    // operator, one row block) agree bit for bit; a GPU SpMV kernel may order its sums by
    // timing, so there they agree to rounding
    const Small s = small_system();
    MlemStatus a, b;
    const auto f1 =
        run_mlem<double>(s.a, s.g, 30, 0, test::test_executor(), &a, TransposeMode::stored);
    const auto f2 =
        run_mlem<double>(s.a, s.g, 30, 1, test::test_executor(), &b, TransposeMode::stored);
    BOOST_TEST_REQUIRE(a.loglik.size() == b.loglik.size());
    if (!test::testing_on_gpu()) {
        BOOST_TEST(f1 == f2);
        BOOST_TEST(a.loglik == b.loglik);
    } else {
        BOOST_TEST(test::rel_max_diff(f2, f1) <= 1e-13);
        for (std::size_t k = 0; k < a.loglik.size(); ++k)
            BOOST_TEST(std::abs(a.loglik[k] - b.loglik[k]) <= 1e-13 * std::abs(a.loglik[k]));
    }
}

BOOST_AUTO_TEST_CASE(mlem_loglik_never_decreases_on_a_pet_system)
{
    PetSpec two_d;
    two_d.detectors = 96;
    two_d.image = 32;
    PetSpec three_d;
    three_d.rings = 3;
    three_d.detectors = 48;
    three_d.image = 12;
    three_d.slices = 6;
    for (const PetSpec& spec : {two_d, three_d}) {
        const PetSystem sys = make_pet_system(spec);
        MlemStatus st;
        const auto f = run_mlem<double>(sys.a, sys.counts, 100, 0, test::test_executor(), &st);
        BOOST_TEST_REQUIRE(st.loglik.size() == 101u);
        int decreases = 0;
        for (int k = 0; k < 100; ++k)
            if (st.loglik[k + 1] < st.loglik[k] - 1e-13 * std::abs(st.loglik[k])) ++decreases;
        BOOST_TEST(decreases == 0, describe(spec) << ": L decreased " << decreases << " times");
        BOOST_TEST(st.loglik[100] > st.loglik[0]);
        BOOST_TEST_MESSAGE(describe(spec) << ": L " << st.loglik[0] << " -> " << st.loglik[100]);
        for (double v : f) BOOST_TEST_REQUIRE(v >= 0.0);
        // OSEM is not monotone, but 4 subsets x 10 iterations get near 40 MLEM iterations
        MlemStatus os;
        run_mlem<double>(sys.a, sys.counts, 10, 4, test::test_executor(), &os);
        BOOST_TEST(os.loglik[10] > st.loglik[10]);
    }
}

BOOST_AUTO_TEST_CASE(mlem_zero_iterations_gives_the_flat_start)
{
    const Small s = small_system();
    MlemStatus st;
    const auto f = run_mlem<double>(s.a, s.g, 0, 0, test::test_executor(), &st);
    double sum_g = 0, sum_a = 0;
    for (double v : s.g) sum_g += v;
    for (double v : s.a.val.host()) sum_a += v;
    BOOST_TEST(std::abs(st.initial_value - sum_g / sum_a) <= 1e-14 * sum_g / sum_a);
    for (index_t j = 0; j < s.a.cols; ++j) BOOST_TEST(f[j] == (j == 7 ? 0.0 : st.initial_value));
    BOOST_TEST(st.loglik.size() == 1u);
    BOOST_TEST(st.counts == sum_g);
}

BOOST_AUTO_TEST_CASE(mlem_single_precision_is_close_to_double)
{
    const Small s = small_system();
    const auto fd = run_mlem<double>(s.a, s.g, 20, 0, test::test_executor());
    const auto fs = run_mlem<float>(s.a, s.g, 20, 0, test::test_executor());
    BOOST_TEST(test::rel_max_diff(fs, fd) <= 1e-4);
}

BOOST_AUTO_TEST_CASE(mlem_rejects_misuse)
{
    const Small s = small_system();
    const auto exec = test::test_executor();
    auto op = std::shared_ptr<const Operator<double>>(
        make_matrix_operator<double, double>(s.a, Format::csr, exec));
    Mlem<double> em;
    Array<double> f(exec, std::size_t(s.a.cols));
    Array<double> g = Array<double>(s.g).to(exec);
    BOOST_CHECK_THROW(em.solve(g, f), InputError);  // no operator
    em.set_operator(op);
    std::vector<double> neg = s.g;
    neg[3] = -1;
    Array<double> gneg = Array<double>(neg).to(exec);
    BOOST_CHECK_THROW(em.solve(gneg, f), InputError);
    Array<double> gshort(exec, std::size_t(s.a.rows - 1));
    BOOST_CHECK_THROW(em.solve(gshort, f), DimensionMismatch);
    Coo<double> an = s.a;  // a negative column: every entry of column col[0] is -1
    for (offset_t k = 0; k < an.nnz(); ++k)
        if (an.col[k] == an.col[0]) an.val.host()[k] = -1.0;
    Mlem<double> em2;
    em2.set_operator(std::shared_ptr<const Operator<double>>(
        make_matrix_operator<double, double>(an, Format::csr, exec)));
    BOOST_CHECK_THROW(em2.solve(g, f), InputError);
    BOOST_CHECK_THROW(row_block_bounds(s.a, 0), InputError);
    BOOST_CHECK_THROW(row_block_bounds(s.a, s.a.rows + 1), InputError);
}

BOOST_AUTO_TEST_CASE(row_blocks_balance_the_entries)
{
    const PetSystem sys = make_pet_system(PetSpec{});
    for (int S : {1, 2, 5, 16}) {
        const auto b = row_block_bounds(sys.a, S);
        BOOST_TEST_REQUIRE(b.size() == std::size_t(S) + 1);
        BOOST_TEST(b.front() == 0);
        BOOST_TEST(b.back() == sys.a.rows);
        const auto len = row_lengths(sys.a);
        const double avg = double(sys.a.nnz()) / S;
        offset_t longest_row = *std::max_element(len.begin(), len.end());
        for (int s = 0; s < S; ++s) {
            BOOST_TEST_REQUIRE(b[s] < b[s + 1]);
            offset_t nnz = 0;
            for (index_t i = b[s]; i < b[s + 1]; ++i) nnz += len[i];
            BOOST_TEST(std::abs(double(nnz) - avg) <= double(longest_row) + 1);
        }
    }
}

BOOST_AUTO_TEST_CASE(mlem_device_matches_cpu)
{
    if (!test::testing_on_gpu()) return;  // the CPU run is the reference
    PetSpec spec;
    spec.detectors = 96;
    spec.image = 32;
    const PetSystem sys = make_pet_system(spec);
    for (int S : {0, 4}) {
        for (auto tm : {TransposeMode::scatter, TransposeMode::stored}) {
            MlemStatus sd, sc;
            const auto fd =
                run_mlem<double>(sys.a, sys.counts, 30, S, test::test_executor(), &sd, tm);
            const auto fc = run_mlem<double>(sys.a, sys.counts, 30, S, cpu_executor(), &sc, tm);
            BOOST_TEST(test::rel_max_diff(fd, fc) <= 1e-11);
            for (std::size_t k = 0; k < sd.loglik.size(); ++k)
                BOOST_TEST(std::abs(sd.loglik[k] - sc.loglik[k]) <= 1e-11 * std::abs(sc.loglik[k]));
        }
    }
}
