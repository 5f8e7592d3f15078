#include <boost/test/unit_test.hpp>

#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "formats/coo/coo_kernels.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "generators/hepta.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

BOOST_AUTO_TEST_CASE(canonicalize_sorts_and_sums_duplicates)
{
    Coo<double> a;
    a.rows = 3;
    a.cols = 4;
    a.row = std::vector<index_t>{2, 0, 2, 0, 1};
    a.col = std::vector<index_t>{1, 3, 1, 0, 2};
    a.val = std::vector<double>{1.0, 2.0, 4.0, 3.0, 5.0};
    canonicalize(a);
    BOOST_TEST(is_canonical(a));
    BOOST_TEST(a.row.host() == (std::vector<index_t>{0, 0, 1, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(a.col.host() == (std::vector<index_t>{0, 3, 2, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(a.val.host() == (std::vector<double>{3.0, 2.0, 5.0, 5.0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(canonicalize_duplicate_policy_error_names_the_entry)
{
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{1, 1};
    a.col = std::vector<index_t>{0, 0};
    a.val = std::vector<double>{1.0, 2.0};
    BOOST_CHECK_EXCEPTION(canonicalize(a, DuplicatePolicy::error), InputError,
                          [](const InputError& e) {
                              return std::string(e.what()).find("(2, 1)") != std::string::npos;
                          });
}

BOOST_AUTO_TEST_CASE(canonicalize_keep_last)
{
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{1, 0, 1};
    a.col = std::vector<index_t>{0, 0, 0};
    a.val = std::vector<double>{1.0, 7.0, 2.0};
    canonicalize(a, DuplicatePolicy::keep_last);
    BOOST_TEST(a.val.host() == (std::vector<double>{7.0, 2.0}), boost::test_tools::per_element());
}

// Every path of canonicalize (a permutation sort up to 2048 entries, a counting sort, serial up
// to 2^15 and with OpenMP above) against a std::map reference: random entries with many duplicates,
// in random order, already sorted, and sorted with a duplicate; every policy, the summed values bit
// for bit (the same order of additions: input order) and the error naming the lowest duplicate.
BOOST_AUTO_TEST_CASE(canonicalize_matches_a_map_reference_on_every_path)
{
    std::mt19937_64 rng(7);
    for (const offset_t nnz : {offset_t(1000), offset_t(5000), offset_t(100000)}) {
        // shape 0: random, ~20 entries a row; 1: sorted, distinct; 2: sorted, one duplicate;
        // 3: random, ~200 entries a row (rows past the insertion sort's length)
        for (int shape = 0; shape < 4; ++shape) {
            const index_t rows = index_t(nnz / (shape == 3 ? 200 : 20)), cols = 97;
            Coo<double> in;
            in.rows = rows;
            in.cols = cols;
            std::vector<index_t> r(static_cast<std::size_t>(nnz)), c(r.size());
            std::vector<double> v(r.size());
            for (std::size_t k = 0; k < r.size(); ++k) {
                if (shape == 0 || shape == 3) {
                    r[k] = index_t(rng() % std::uint64_t(rows));
                    c[k] = index_t(rng() % std::uint64_t(cols));
                } else {  // sorted, distinct (shape 2: one duplicate in the middle)
                    r[k] = index_t(k / std::size_t(cols));
                    c[k] = index_t(k % std::size_t(cols));
                }
                v[k] = double(rng() % 1000) / 7.0 - 50.0;
            }
            in.rows = std::max<index_t>(rows, r.back() + 1);
            if (shape == 2) c[r.size() / 2] = c[r.size() / 2 - 1];
            in.row = r;
            in.col = c;
            in.val = v;
            std::map<std::pair<index_t, index_t>, std::pair<double, double>> ref;  // sum, last
            for (std::size_t k = 0; k < r.size(); ++k) {
                auto [it, fresh] = ref.try_emplace({r[k], c[k]}, v[k], v[k]);
                if (!fresh) {
                    it->second.first += v[k];
                    it->second.second = v[k];
                }
            }
            const bool dups = ref.size() < r.size();
            for (const auto policy :
                 {DuplicatePolicy::sum, DuplicatePolicy::keep_last, DuplicatePolicy::error}) {
                Coo<double> a = in;
                if (policy == DuplicatePolicy::error && dups) {
                    std::pair<index_t, index_t> first{-1, -1};
                    std::map<std::pair<index_t, index_t>, int> count;
                    for (std::size_t k = 0; k < r.size(); ++k) ++count[{r[k], c[k]}];
                    for (const auto& [rc, n] : count)
                        if (n > 1) {
                            first = rc;
                            break;
                        }
                    const std::string want = "(" + std::to_string(first.first + 1) + ", " +
                                             std::to_string(first.second + 1) + ")";
                    BOOST_CHECK_EXCEPTION(
                        canonicalize(a, policy), InputError, [&](const InputError& e) {
                            return std::string(e.what()).find(want) != std::string::npos;
                        });
                    continue;
                }
                canonicalize(a, policy);
                BOOST_TEST_REQUIRE(a.nnz() == offset_t(ref.size()));
                std::size_t k = 0, bad = 0;
                for (const auto& [rc, sv] : ref) {
                    const double want = policy == DuplicatePolicy::sum ? sv.first : sv.second;
                    bad += a.row[k] != rc.first || a.col[k] != rc.second || a.val[k] != want;
                    ++k;
                }
                BOOST_TEST(bad == 0u, "nnz " << nnz << " shape " << shape << " policy "
                                             << int(policy) << ": " << bad << " entries differ");
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(canonicalize_rejects_out_of_range_index)
{
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{0, 2};
    a.col = std::vector<index_t>{0, 0};
    a.val = std::vector<double>{1.0, 2.0};
    BOOST_CHECK_THROW(canonicalize(a), InputError);
}

BOOST_AUTO_TEST_CASE(csr_round_trip_and_transpose)
{
    auto a = test::random_coo<double>(300, 200, 0, 12, 7);
    auto csr = csr_from_coo(a);
    auto back = to_coo(csr);
    BOOST_TEST(back.row.host() == a.row.host(), boost::test_tools::per_element());
    BOOST_TEST(back.col.host() == a.col.host(), boost::test_tools::per_element());
    BOOST_TEST(back.val.host() == a.val.host(), boost::test_tools::per_element());
    auto tt = transpose(transpose(csr));
    BOOST_TEST(tt.col_idx.host() == csr.col_idx.host(), boost::test_tools::per_element());
    BOOST_TEST(tt.values.host() == csr.values.host(), boost::test_tools::per_element());
}

// check_symmetry (the plugin's hcg guard) on a CSR view: a symmetric generated pressure
// matrix passes; one entry changed, or its mirror missing, is reported as that pair (the
// worst, the first in row order among equals) with any thread count; a rectangular view is
// refused.
BOOST_AUTO_TEST_CASE(csr_row_pointers_match_a_count_and_every_break_of_order_is_named)
{
    // csr_from_coo checks canonical order and fills the row pointers in one pass: on random
    // canonical matrices (empty rows at the start, inside and at the end; small and past the
    // parallel threshold) the pointers equal a count of each row's entries; with the order
    // broken at one or two places (a row going back, a repeated or decreasing column, an index
    // outside the matrix) the InputError names the lowest broken entry, for both overloads.
    auto throws_input_error_mentioning = [](auto&& fn, const std::string& text) {
        try {
            fn();
        } catch (const InputError& e) {
            return std::string(e.what()).find(text) != std::string::npos;
        }
        return false;
    };
    std::mt19937 rng(11);
    for (const index_t rows : {7, 3000, 40000}) {
        const index_t cols = rows + 5;
        Coo<double> a;
        a.rows = rows;
        a.cols = cols;
        std::vector<index_t> r, c;
        for (index_t i = 0; i < rows; ++i) {
            if (i < 2 || i == rows / 2 || i + 2 >= rows) continue;  // empty rows
            // a few entries a row (about 4), at random ascending columns
            for (index_t j = index_t(rng() % 7); j < cols;
                 j += 1 + index_t(rng() % (cols / 4 + 1))) {
                r.push_back(i);
                c.push_back(j);
            }
        }
        a.row = r;
        a.col = c;
        a.val = std::vector<double>(r.size(), 1.0);
        std::vector<offset_t> count(std::size_t(rows) + 1, 0);
        for (index_t i : r) ++count[std::size_t(i) + 1];
        for (std::size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
        BOOST_TEST_CONTEXT(rows << " rows")
        {
            BOOST_TEST(csr_from_coo(a).row_ptr.host() == count, boost::test_tools::per_element());
            Coo<double> moved = a;
            BOOST_TEST(csr_from_coo(std::move(moved)).row_ptr.host() == count,
                       boost::test_tools::per_element());
        }
        const offset_t nnz = a.nnz();
        const offset_t late = nnz - 1, early = std::max<offset_t>(1, nnz / 3);
        BOOST_REQUIRE(early < late);
        struct Break {
            const char* what;
            std::function<void(Coo<double>&, offset_t)> apply;
        };
        const std::vector<Break> breaks{
            {"row goes back", [](Coo<double>& m, offset_t k) { m.row[k] = m.row[k - 1] - 1; }},
            {"entry repeated",
             [](Coo<double>& m, offset_t k) {
                 m.row[k] = m.row[k - 1];
                 m.col[k] = m.col[k - 1];
             }},
            {"row outside", [rows](Coo<double>& m, offset_t k) { m.row[k] = rows; }},
            {"negative column", [](Coo<double>& m, offset_t k) { m.col[k] = -1; }},
        };
        for (const auto& b : breaks)
            for (const bool both : {false, true}) {
                Coo<double> m = a;
                b.apply(m, late);
                if (both) b.apply(m, early);
                const offset_t first = both ? early : late;
                // the message names the lowest broken entry ("entry K at")
                const std::string want = "entry " + std::to_string(first) + " at";
                BOOST_TEST_CONTEXT(rows << " rows, " << b.what << (both ? " twice" : ""))
                {
                    BOOST_TEST(throws_input_error_mentioning([&] { csr_from_coo(m); }, want));
                    Coo<double> moved = m;
                    BOOST_TEST(throws_input_error_mentioning(
                        [&] { csr_from_coo(std::move(moved)); }, want));
                }
            }
    }
}

BOOST_AUTO_TEST_CASE(check_symmetry_finds_the_worst_pair)
{
    HeptaSpec s;
    s.J = 12;
    s.H = 9;
    s.I = 7;
    s.Nc = 1;
    s.model = HeptaModel::channelized;
    const Coo<double> a = generate_hepta_coo<double>(s);
    std::vector<index_t> ptr(std::size_t(a.rows) + 1, 0);
    for (offset_t k = 0; k < a.nnz(); ++k) ++ptr[std::size_t(a.row[k]) + 1];
    for (index_t r = 0; r < a.rows; ++r) ptr[std::size_t(r) + 1] += ptr[std::size_t(r)];
    std::vector<index_t> col = a.col.host();
    std::vector<double> val = a.val.host();
    CsrView v{a.rows, ptr.data(), col.data(), val.data()};
    BOOST_TEST(check_symmetry(v, 1e-12).symmetric);
    // a(5, 6) changed by 1 %, a(40, 41) by 3 %: the second is the worst
    auto at = [&](index_t i, index_t j) -> double& {
        for (index_t k = ptr[std::size_t(i)]; k < ptr[std::size_t(i) + 1]; ++k)
            if (col[std::size_t(k)] == j) return val[std::size_t(k)];
        throw std::runtime_error("no entry");
    };
    const double a56 = at(5, 6), a4041 = at(40, 41);
    at(5, 6) = a56 * 1.01;
    at(40, 41) = a4041 * 1.03;
    for (int threads : {1, 2, 3}) {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        const SymmetryCheck c = check_symmetry(v, 1e-8);
        BOOST_TEST(!c.symmetric);
        BOOST_TEST(c.i == 40);
        BOOST_TEST(c.j == 41);
        BOOST_TEST(c.aij == a4041 * 1.03);
        BOOST_TEST(c.aji == at(41, 40));
        BOOST_TEST(c.worst == 0.03 / 1.03, boost::test_tools::tolerance(1e-12));
    }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
    // within the tolerance: symmetric
    BOOST_TEST(check_symmetry(v, 0.05).symmetric);
    // a rectangular view
    CsrView r = v;
    r.cols = a.rows + 1;
    BOOST_CHECK_THROW(check_symmetry(r, 1e-8), DimensionMismatch);
}
