// Formats: exact COO round trips, the layouts the headers promise, input errors, and every
// format's A x and A^T x (double, float, mixed; alpha, beta in {0, 1, -1, 0.5}) against the CSR
// CPU kernel and Eigen, on the executor under test (CPU, or CUDA as test_formats_gpu).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/bitset.hpp"
#include "formats/bdia/bdia_build.hpp"
#include "formats/bdia/bdia_slots.hpp"
#include "formats/matrix.hpp"
#include "formats/registry.hpp"
#include "solver/vector/dots_finish.hpp"
#include "solver/vector/vector_ops.hpp"
#include "tests/test_formats_common.hpp"

using namespace heptane;
using test::check_format;

namespace {

struct Named {
    std::string name;
    Coo<double> a;
};

Coo<double> from_triplets(index_t rows, index_t cols, std::vector<index_t> r,
                          std::vector<index_t> c, std::vector<double> v)
{
    Coo<double> a{rows, cols, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                  Array<double>(std::move(v))};
    canonicalize(a, DuplicatePolicy::error);
    return a;
}

// Every 7th value made an explicit zero: round trips must keep them as entries.
Coo<double> with_explicit_zeros(Coo<double> a)
{
    for (offset_t k = 0; k < a.nnz(); k += 7) a.val[k] = 0.0;
    return a;
}

// A hepta-like matrix (docs/design.md §1), written here so these tests do not depend on the
// generator: J x H x I cells, Nc unknowns each, dense Nc x Nc blocks (values in [-1, 1), about
// 5 % explicit zeros) on the block offsets {-JH, -J, -1, 0, 1, J, JH}. banded: cut only at the
// matrix bounds; grid: no block across a face of the box.
Coo<double> hepta(index_t J, index_t H, index_t I, index_t nc, bool banded, unsigned seed)
{
    const index_t G = J * H * I;
    const std::set<index_t> offsets{-J * H, -J, -1, 0, 1, J, J * H};
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> val(-1.0, 1.0), unit(0.0, 1.0);
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t cell = 0; cell < G; ++cell) {
        const index_t j = cell % J, h = (cell / J) % H;
        for (index_t a = 0; a < nc; ++a)
            for (index_t d : offsets) {
                const index_t nb = cell + d;
                if (nb < 0 || nb >= G) continue;
                if (!banded && ((d == -1 && j == 0) || (d == 1 && j == J - 1) ||
                                (d == -J && h == 0) || (d == J && h == H - 1)))
                    continue;
                for (index_t s = 0; s < nc; ++s) {
                    r.push_back(cell * nc + a);
                    c.push_back(nb * nc + s);
                    v.push_back(unit(gen) < 0.05 ? 0.0 : val(gen));
                }
            }
    }
    Coo<double> m{G * nc, G * nc, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                  Array<double>(std::move(v))};
    BOOST_REQUIRE(is_canonical(m));
    return m;
}

std::vector<index_t> hepta_offsets(index_t J, index_t H)
{
    return {-J * H, -J, -1, 0, 1, J, J * H};
}

// Every entry of the given diagonals (column - row) of a rows x cols matrix, values in [-1, 1).
Coo<double> banded(index_t rows, index_t cols, const std::vector<index_t>& offsets, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> val(-1.0, 1.0);
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < rows; ++i)
        for (index_t d : offsets)
            if (i + d >= 0 && i + d < cols) {
                r.push_back(i);
                c.push_back(i + d);
                v.push_back(val(gen));
            }
    return from_triplets(rows, cols, r, c, v);
}

// Random matrices: empty rows (rows of 0..k entries), a dense row, rectangular shapes, 1 x 1
// and 0 x 0. Sizes are multiples of 6 where possible so block sizes 1, 2, 3 divide them.
const std::vector<Named>& random_matrices()
{
    static const std::vector<Named> m = [] {
        std::vector<Named> out;
        out.push_back(
            {"random 120x120", with_explicit_zeros(test::random_coo<double>(120, 120, 0, 12, 11))});
        out.push_back({"random 48x96", test::random_coo<double>(48, 96, 0, 10, 12)});
        out.push_back(
            {"random 96x48", with_explicit_zeros(test::random_coo<double>(96, 48, 1, 6, 13))});
        {
            // row 5 dense, rows 7 and 8 empty
            auto b = test::random_coo<double>(66, 66, 0, 5, 14);
            std::vector<index_t> r, c;
            std::vector<double> v;
            for (offset_t k = 0; k < b.nnz(); ++k)
                if (b.row[k] != 5 && b.row[k] != 7 && b.row[k] != 8) {
                    r.push_back(b.row[k]);
                    c.push_back(b.col[k]);
                    v.push_back(b.val[k]);
                }
            for (index_t j = 0; j < 66; ++j) {
                r.push_back(5);
                c.push_back(j);
                v.push_back(0.01 * (j + 1));
            }
            out.push_back({"dense row 66x66", from_triplets(66, 66, r, c, v)});
        }
        // a few diagonals, rectangular: the row-blocked DIA/BDIA kernels, interior and
        // boundary rows (and a matrix too small to have interior rows)
        out.push_back({"banded 300x258", banded(300, 258, {-40, -1, 0, 1, 3, 40}, 15)});
        out.push_back({"banded 258x300", banded(258, 300, {-40, -1, 0, 1, 3, 40}, 16)});
        out.push_back({"banded 12x6 wide offsets", banded(12, 6, {-9, -3, 0, 2, 5}, 17)});
        out.push_back({"1x1", from_triplets(1, 1, {0}, {0}, {2.5})});
        out.push_back({"1x1 without entries", from_triplets(1, 1, {}, {}, {})});
        out.push_back({"0x0", from_triplets(0, 0, {}, {}, {})});
        return out;
    }();
    return m;
}

struct Hepta {
    std::string name;
    Coo<double> a;
    index_t nc;
    std::vector<index_t> offsets;
};

// Banded and grid hepta matrices for Nc = 1, 2, 3, 4, 8 (compile-time kernels), 16, and 5
// (the run-time block-size kernels).
const std::vector<Hepta>& hepta_matrices()
{
    static const std::vector<Hepta> m = [] {
        std::vector<Hepta> out;
        unsigned seed = 100;
        for (index_t nc : {1, 2, 3, 4, 5, 8, 16}) {
            const index_t J = nc == 16 ? 3 : 4, H = nc == 16 ? 2 : 3;
            const index_t I = nc == 16 ? 2 : 3;
            for (bool banded : {true, false}) {
                const std::string name = std::string(banded ? "banded" : "grid") + " hepta " +
                                         std::to_string(J) + "x" + std::to_string(H) + "x" +
                                         std::to_string(I) + " Nc=" + std::to_string(nc);
                out.push_back({name, hepta(J, H, I, nc, banded, seed++), nc, hepta_offsets(J, H)});
            }
        }
        return out;
    }();
    return m;
}

// Block sizes (up to 3) that divide a random matrix.
std::vector<index_t> dividing_blocks(const Coo<double>& a)
{
    std::vector<index_t> b;
    for (index_t s = 1; s <= 3; ++s)
        if (a.rows % s == 0 && a.cols % s == 0) b.push_back(s);
    return b;
}

template <class T, class Build>
void check_round_trip(const std::string& what, const Coo<T>& a, Build&& build)
{
    std::string why;
    const Coo<T> back = to_coo(build(a));
    BOOST_TEST(test::same_coo(a, back, why), what << ": " << why);
    BOOST_TEST(is_canonical(back), what << ": to_coo is not canonical");
}

// Round trip in double and float.
template <class Build>
void check_round_trip_both(const std::string& what, const Coo<double>& a, Build&& build)
{
    check_round_trip(what + " (double)", a, build);
    check_round_trip(what + " (float)", convert_values<float>(a), build);
}

template <class Fn>
bool throws_input_error_mentioning(Fn&& fn, const std::string& text)
{
    try {
        fn();
    } catch (const InputError& e) {
        if (std::string(e.what()).find(text) != std::string::npos) return true;
        BOOST_TEST_MESSAGE("InputError without '" << text << "': " << e.what());
        return false;
    }
    return false;
}

Coo<double> not_canonical()
{
    Coo<double> a{4, 4, Array<index_t>(std::vector<index_t>{1, 0}),
                  Array<index_t>(std::vector<index_t>{0, 0}),
                  Array<double>(std::vector<double>{1.0, 2.0})};
    return a;
}

}  // namespace

// ---------------------------------------------------------------------------------------- ELL

BOOST_AUTO_TEST_CASE(ell_round_trip_is_exact)
{
    for (const auto& m : random_matrices()) {
        check_round_trip_both("ELL " + m.name, m.a, [](const auto& a) { return ell_from_coo(a); });
        check_round_trip_both("ELL width+3 " + m.name, m.a, [](const auto& a) {
            const auto len = row_lengths(a);
            const offset_t w = len.empty() ? 0 : *std::max_element(len.begin(), len.end());
            return ell_from_coo(a, index_t(w + 3));
        });
    }
    for (const auto& m : hepta_matrices())
        check_round_trip_both("ELL " + m.name, m.a, [](const auto& a) { return ell_from_coo(a); });
}

BOOST_AUTO_TEST_CASE(ell_stores_slot_j_of_row_r_at_j_rows_plus_r_with_minus_one_padding)
{
    // [1 0 2]
    // [0 0 0]
    // [0 3 0]
    const auto a = from_triplets(3, 3, {0, 0, 2}, {0, 2, 1}, {1.0, 2.0, 3.0});
    const auto e = ell_from_coo(a);
    BOOST_TEST(e.width == 2);
    BOOST_TEST(e.col_idx.host() == (std::vector<index_t>{0, -1, 1, 2, -1, -1}),
               boost::test_tools::per_element());
    BOOST_TEST(e.values.host() == (std::vector<double>{1, 0, 3, 2, 0, 0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(ell_rejects_rows_longer_than_the_given_width)
{
    const auto a = test::random_coo<double>(20, 20, 5, 5, 3);
    BOOST_TEST(throws_input_error_mentioning([&] { ell_from_coo(a, 4); }, "width 4"));
    BOOST_TEST(throws_input_error_mentioning([&] { ell_from_coo(not_canonical()); }, "canonical"));
}

BOOST_AUTO_TEST_CASE(ell_spmv_matches_csr_and_eigen)
{
    for (const auto& m : random_matrices())
        check_format(
            "ELL " + m.name, m.a, [](const auto& a) { return ell_from_coo(a); }, Op::normal);
    for (const auto& m : hepta_matrices())
        check_format(
            "ELL " + m.name, m.a, [](const auto& a) { return ell_from_coo(a); }, Op::normal);
}

BOOST_AUTO_TEST_CASE(ell_transpose_matches_csr_and_eigen)
{
    for (const auto& m : random_matrices())
        check_format(
            "ELL " + m.name, m.a, [](const auto& a) { return ell_from_coo(a); }, Op::transpose);
    for (const auto& m : hepta_matrices())
        check_format(
            "ELL " + m.name, m.a, [](const auto& a) { return ell_from_coo(a); }, Op::transpose);
}

// ---------------------------------------------------------------------------------------- HYB

BOOST_AUTO_TEST_CASE(choose_hyb_width_follows_the_histogram_rule)
{
    auto lengths = [](std::vector<std::pair<offset_t, offset_t>> groups) {
        std::vector<offset_t> len;
        for (auto [count, l] : groups) len.insert(len.end(), std::size_t(count), l);
        return len;
    };
    // K = largest K with at least max(4096, rows/3) rows of K or more entries
    BOOST_TEST(choose_hyb_width(lengths({{10000, 5}, {100, 50}})) == 5);
    BOOST_TEST(choose_hyb_width(lengths({{4000, 10}, {8000, 3}})) == 3);   // 4000 < 4096
    BOOST_TEST(choose_hyb_width(lengths({{6000, 10}, {6000, 2}})) == 10);  // 6000 >= 12000/3
    BOOST_TEST(choose_hyb_width(lengths({{5000, 10}, {11000, 2}})) == 2);  // 5000 < 16000/3
    BOOST_TEST(choose_hyb_width(lengths({{3000, 9}})) == 0);               // too few rows
    BOOST_TEST(choose_hyb_width({}) == 0);
}

BOOST_AUTO_TEST_CASE(hyb_keeps_the_first_width_entries_of_each_row_in_ell)
{
    const auto a = test::random_coo<double>(50, 40, 0, 9, 21);
    const auto h = hyb_from_coo(a, 4);
    const auto len = row_lengths(a);
    offset_t tail = 0;
    for (offset_t l : len) tail += std::max<offset_t>(0, l - 4);
    BOOST_TEST(h.ell.width == 4);
    BOOST_TEST(h.coo.nnz() == tail);
    BOOST_TEST(is_canonical(h.coo));
    // the default width on a small matrix: fewer than 4096 rows, so all entries go to COO
    BOOST_TEST(hyb_from_coo(a).ell.width == 0);
    BOOST_TEST(hyb_from_coo(a).coo.nnz() == a.nnz());
}

BOOST_AUTO_TEST_CASE(hyb_round_trip_is_exact)
{
    for (index_t w : {-1, 0, 2, 5, 40}) {
        const std::string tag = "HYB width " + std::to_string(w) + " ";
        auto build = [w](const auto& a) { return hyb_from_coo(a, w); };
        for (const auto& m : random_matrices()) check_round_trip_both(tag + m.name, m.a, build);
        for (const auto& m : hepta_matrices()) check_round_trip_both(tag + m.name, m.a, build);
    }
}

BOOST_AUTO_TEST_CASE(hyb_spmv_matches_csr_and_eigen)
{
    for (index_t w : {-1, 3}) {
        auto build = [w](const auto& a) { return hyb_from_coo(a, w); };
        const std::string tag = "HYB width " + std::to_string(w) + " ";
        for (const auto& m : random_matrices()) check_format(tag + m.name, m.a, build, Op::normal);
        for (const auto& m : hepta_matrices()) check_format(tag + m.name, m.a, build, Op::normal);
    }
}

BOOST_AUTO_TEST_CASE(hyb_transpose_matches_csr_and_eigen)
{
    for (index_t w : {-1, 3}) {
        auto build = [w](const auto& a) { return hyb_from_coo(a, w); };
        const std::string tag = "HYB width " + std::to_string(w) + " ";
        for (const auto& m : random_matrices())
            check_format(tag + m.name, m.a, build, Op::transpose);
        for (const auto& m : hepta_matrices())
            check_format(tag + m.name, m.a, build, Op::transpose);
    }
}

// ---------------------------------------------------------------------------------------- DIA

BOOST_AUTO_TEST_CASE(dia_stores_a_r_r_plus_offset_at_d_rows_plus_r)
{
    // [1 2 0]
    // [0 3 0]     offsets -2, 0, 1
    // [4 0 5]
    const auto a = from_triplets(3, 3, {0, 0, 1, 2, 2}, {0, 1, 1, 0, 2}, {1, 2, 3, 4, 5});
    const auto d = dia_from_coo(a);
    BOOST_TEST(d.offsets.host() == (std::vector<index_t>{-2, 0, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(d.data.host() == (std::vector<double>{0, 0, 4, 1, 3, 5, 2, 0, 0}),
               boost::test_tools::per_element());
    // slot (offset 1, row 1) is inside the matrix but not an entry: padding, not in the pattern
    BOOST_TEST(!test_bit(d.pattern.data(), 2 * 3 + 1));
    BOOST_TEST(test_bit(d.pattern.data(), 2 * 3 + 0));
}

BOOST_AUTO_TEST_CASE(dia_round_trip_is_exact)
{
    auto build = [](const auto& a) { return dia_from_coo(a, 4096); };
    for (const auto& m : random_matrices()) check_round_trip_both("DIA " + m.name, m.a, build);
    for (const auto& m : hepta_matrices()) check_round_trip_both("DIA " + m.name, m.a, build);
}

BOOST_AUTO_TEST_CASE(dia_rejects_too_many_diagonals)
{
    const auto a = test::random_coo<double>(100, 100, 5, 10, 4);
    BOOST_TEST(throws_input_error_mentioning([&] { dia_from_coo(a, 5); }, "limit of 5"));
    BOOST_TEST(throws_input_error_mentioning([&] { dia_from_coo(not_canonical()); }, "canonical"));
}

BOOST_AUTO_TEST_CASE(dia_spmv_matches_csr_and_eigen)
{
    auto build = [](const auto& a) { return dia_from_coo(a, 4096); };
    for (const auto& m : random_matrices()) check_format("DIA " + m.name, m.a, build, Op::normal);
    for (const auto& m : hepta_matrices()) check_format("DIA " + m.name, m.a, build, Op::normal);
}

BOOST_AUTO_TEST_CASE(dia_transpose_gather_matches_csr_and_eigen)
{
    auto build = [](const auto& a) { return dia_from_coo(a, 4096); };
    for (const auto& m : random_matrices())
        check_format("DIA " + m.name, m.a, build, Op::transpose);
    for (const auto& m : hepta_matrices()) check_format("DIA " + m.name, m.a, build, Op::transpose);
}

// ---------------------------------------------------------------------------------------- BSR

BOOST_AUTO_TEST_CASE(bsr_stores_dense_row_major_blocks_and_marks_fill_in)
{
    // [1 2 | 0 0]
    // [0 3 | 0 0]
    // [0 0 | 0 4]
    // [0 0 | 5 0]
    const auto a = from_triplets(4, 4, {0, 0, 1, 2, 3}, {0, 1, 1, 3, 2}, {1, 2, 3, 4, 5});
    const auto b = bsr_from_coo(a, 2);
    BOOST_TEST(b.row_ptr.host() == (std::vector<offset_t>{0, 1, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(b.col_idx.host() == (std::vector<index_t>{0, 1}), boost::test_tools::per_element());
    BOOST_TEST(b.values.host() == (std::vector<double>{1, 2, 0, 3, 0, 4, 5, 0}),
               boost::test_tools::per_element());
    BOOST_TEST(!test_bit(b.pattern.data(), 2));  // the fill-in zero of block (0, 0)
    BOOST_TEST(test_bit(b.pattern.data(), 3));
}

BOOST_AUTO_TEST_CASE(bsr_round_trip_is_exact)
{
    for (const auto& m : random_matrices())
        for (index_t b : dividing_blocks(m.a))
            check_round_trip_both("BSR b=" + std::to_string(b) + " " + m.name, m.a,
                                  [b](const auto& a) { return bsr_from_coo(a, b); });
    for (const auto& m : hepta_matrices())
        for (index_t b : {index_t(1), m.nc})
            check_round_trip_both("BSR b=" + std::to_string(b) + " " + m.name, m.a,
                                  [b](const auto& a) { return bsr_from_coo(a, b); });
}

BOOST_AUTO_TEST_CASE(bsr_rejects_block_size_not_dividing_the_size)
{
    const auto a = test::random_coo<double>(10, 12, 1, 3, 5);
    BOOST_TEST(throws_input_error_mentioning([&] { bsr_from_coo(a, 4); }, "does not divide"));
    BOOST_TEST(throws_input_error_mentioning([&] { bsr_from_coo(a, 0); }, ">= 1"));
    BOOST_TEST(
        throws_input_error_mentioning([&] { bsr_from_coo(not_canonical(), 2); }, "canonical"));
}

BOOST_AUTO_TEST_CASE(bsr_spmv_matches_csr_and_eigen)
{
    for (const auto& m : random_matrices())
        for (index_t b : dividing_blocks(m.a))
            check_format(
                "BSR b=" + std::to_string(b) + " " + m.name, m.a,
                [b](const auto& a) { return bsr_from_coo(a, b); }, Op::normal);
    for (const auto& m : hepta_matrices())
        check_format(
            "BSR " + m.name, m.a, [&](const auto& a) { return bsr_from_coo(a, m.nc); }, Op::normal);
}

BOOST_AUTO_TEST_CASE(bsr_transpose_matches_csr_and_eigen)
{
    for (const auto& m : random_matrices())
        for (index_t b : dividing_blocks(m.a))
            check_format(
                "BSR b=" + std::to_string(b) + " " + m.name, m.a,
                [b](const auto& a) { return bsr_from_coo(a, b); }, Op::transpose);
    for (const auto& m : hepta_matrices())
        check_format(
            "BSR " + m.name, m.a, [&](const auto& a) { return bsr_from_coo(a, m.nc); },
            Op::transpose);
}

// --------------------------------------------------------------------------------------- BDIA

BOOST_AUTO_TEST_CASE(bdia_layout_matches_design)
{
    // Nc = 2, 3 block rows; blocks on block offsets -1, 0, +1 with entries 10*(r+1) + c.
    // docs/design.md §1: value(r, k = q*Nc + s) = data[k*N + r], column(r, k) = r - r%Nc + d_q*Nc +
    // s.
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < 6; ++i)
        for (index_t j = 0; j < 6; ++j)
            if (std::abs(j / 2 - i / 2) <= 1) {
                r.push_back(i);
                c.push_back(j);
                v.push_back(10.0 * (i + 1) + j);
            }
    const auto a = from_triplets(6, 6, r, c, v);
    const auto b = bdia_from_coo(a, 2);
    BOOST_TEST(b.block_offsets == (std::vector<index_t>{-1, 0, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(b.num_diagonals() == 6);
    const index_t N = 6;
    for (index_t k = 0; k < 6; ++k) {
        BOOST_TEST(b.offset(k) == b.block_offsets[k / 2] * 2 + k % 2);
        for (index_t row = 0; row < N; ++row) {
            const index_t col = row - row % 2 + b.offset(k);
            const bool valid = col >= 0 && col < N;
            const double expect = valid ? 10.0 * (row + 1) + col : 0.0;
            BOOST_TEST(b.data[std::size_t(k) * N + row] == expect, "k=" << k << " r=" << row);
            BOOST_TEST(test_bit(b.pattern.data(), std::size_t(k) * N + row) == valid);
        }
    }
}

BOOST_AUTO_TEST_CASE(bdia_round_trip_is_exact)
{
    for (const auto& m : random_matrices())
        for (index_t nc : dividing_blocks(m.a))
            check_round_trip_both("BDIA Nc=" + std::to_string(nc) + " " + m.name, m.a,
                                  [nc](const auto& a) { return bdia_from_coo(a, nc); });
    for (const auto& m : hepta_matrices()) {
        check_round_trip_both("BDIA " + m.name, m.a,
                              [&](const auto& a) { return bdia_from_coo(a, m.nc); });
        check_round_trip_both("BDIA given offsets " + m.name, m.a,
                              [&](const auto& a) { return bdia_from_coo(a, m.nc, m.offsets); });
        check_round_trip_both("BDIA Nc=1 " + m.name, m.a,
                              [&](const auto& a) { return bdia_from_coo(a, 1); });
    }
}

BOOST_AUTO_TEST_CASE(bdia_finds_the_block_offsets_of_the_pattern)
{
    const auto a = hepta(5, 4, 3, 2, true, 7);
    const auto b = bdia_from_coo(a, 2);
    BOOST_TEST(b.block_offsets == (std::vector<index_t>{-20, -5, -1, 0, 1, 5, 20}),
               boost::test_tools::per_element());
    // unsorted, repeated given offsets are accepted and stored ascending
    const auto g = bdia_from_coo(a, 2, {20, 0, -1, 1, -5, 5, -20, 0});
    BOOST_TEST(g.block_offsets == b.block_offsets, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bdia_rejects_entry_off_the_given_offsets)
{
    const auto a = hepta(4, 3, 3, 2, true, 8);
    BOOST_TEST(throws_input_error_mentioning(
        [&] {
            bdia_from_coo(a, 2, {-1, 0, 1});
        },
        "not among the given block offsets"));
    BOOST_TEST(throws_input_error_mentioning([&] { bdia_from_coo(a, 5); }, "does not divide"));
    BOOST_TEST(throws_input_error_mentioning([&] { bdia_from_coo(a, 0); }, ">= 1"));
    BOOST_TEST(
        throws_input_error_mentioning([&] { bdia_from_coo(not_canonical(), 1); }, "canonical"));
}

// A pattern on many block diagonals (here an anti-diagonal: every entry its own offset) is
// refused before BDIA-GH allocates its slots -- it took gigabytes and minutes for a random
// 20,000-row matrix with an explicit --format bdiagh -- while the same count of offsets on a
// small matrix (below 2^24 slots) is built as before.
BOOST_AUTO_TEST_CASE(bdia_refuses_a_pattern_on_too_many_block_diagonals)
{
    const auto exec = test::test_executor();
    const auto anti = [](index_t n) {
        std::vector<index_t> r, c;
        std::vector<double> v;
        for (index_t i = 0; i < n; ++i) {
            r.push_back(i);
            c.push_back(n - 1 - i);
            v.push_back(1.0 + i);
        }
        return Coo<double>{n, n, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                           Array<double>(std::move(v))};
    };
    const Coo<double> big = anti(5000);  // 5000 block diagonals: 2.5e7 slots for 5000 entries
    BOOST_TEST(
        throws_input_error_mentioning([&] { bdia_from_coo(big, 1); }, "5000 block diagonals"));
    BOOST_TEST(throws_input_error_mentioning([&] { bdia_from_coo(big, 1, {}, exec); },
                                             "use CSR, ELL or HYB"));
    BOOST_TEST(throws_input_error_mentioning([&] { bdia_from_csr(csr_from_coo(big), 1, {}, exec); },
                                             "5000 block diagonals"));
    // 2000 block diagonals of 2000 rows: 4 10^6 slots, within 2^24 -- built and exact
    const Coo<double> small = anti(2000);
    const Bdia<double> b = bdia_from_coo(small, 1);
    BOOST_TEST(b.num_diagonals() == 2000);
    const Coo<double> back = to_coo(b);
    BOOST_TEST(back.val.host() == small.val.host(), boost::test_tools::per_element());
}

// The other padded formats likewise: an arrow matrix (one full row) as ELL, a scattered
// pattern as DIA within its diagonal count, large blocks of a scattered pattern as BSR -- each
// an InputError naming what it would store, where the build allocated gigabytes -- and the
// same shapes small enough (below 2^24 slots) still built exactly.
BOOST_AUTO_TEST_CASE(padded_formats_refuse_mostly_padding_before_allocating)
{
    const auto arrow = [](index_t n) {  // row 0 full, then the diagonal
        std::vector<index_t> r, c;
        std::vector<double> v;
        for (index_t j = 0; j < n; ++j) {
            r.push_back(0);
            c.push_back(j);
            v.push_back(j == 0 ? 4.0 * n : 1.0);
        }
        for (index_t i = 1; i < n; ++i) {
            r.push_back(i);
            c.push_back(i);
            v.push_back(4.0);
        }
        return Coo<double>{n, n, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                           Array<double>(std::move(v))};
    };
    BOOST_TEST(throws_input_error_mentioning([&] { ell_from_coo(arrow(5000)); }, "use HYB"));
    BOOST_TEST(ell_from_coo(arrow(1000)).width == 1000);  // 10^6 slots: built
    // 901 diagonals of 40,000 rows, 2 entries a row
    std::vector<index_t> r, c;
    std::vector<double> v;
    const index_t n = 40000;
    for (index_t i = 0; i < n; ++i) {
        // offsets 0 and -1 ... -900 (901 diagonals: within DIA's count of 1024)
        const index_t cols[2] = {i, i >= 900 ? i - 1 - (i * 7919 + 13) % 900 : i};
        for (const index_t cc : {std::min(cols[0], cols[1]), std::max(cols[0], cols[1])}) {
            if (!r.empty() && r.back() == i && c.back() == cc) continue;
            r.push_back(i);
            c.push_back(cc);
            v.push_back(1.0);
        }
    }
    const Coo<double> scattered{n, n, Array<index_t>(std::vector<index_t>(r)),
                                Array<index_t>(std::vector<index_t>(c)),
                                Array<double>(std::vector<double>(v))};
    BOOST_TEST(throws_input_error_mentioning([&] { dia_from_coo(scattered); },
                                             "do not fill their diagonals"));
    BOOST_TEST(throws_input_error_mentioning([&] { bsr_from_coo(scattered, 200); },
                                             "do not form dense 200 x 200 blocks"));
    BOOST_TEST(bsr_from_coo(arrow(1000), 10).rows == 1000);  // 2 * 10^5 values: built
}

BOOST_AUTO_TEST_CASE(bdia_built_on_the_executor_round_trips_and_matches_the_host_build)
{
    // bdia_from_coo with an executor (on a GPU: the entries uploaded and placed by a kernel)
    // must give the host build's data and pattern bit for bit and round-trip to the input,
    // explicit zeros included, in double and float, offsets found or given.
    const auto exec = test::test_executor();
    auto check = [&](const std::string& what, const auto& a, index_t nc,
                     const std::vector<index_t>& given) {
        using T = std::decay_t<decltype(a.val.data()[0])>;
        const Bdia<T> host = bdia_from_coo(a, nc, given);
        const Bdia<T> dev = bdia_from_coo(a, nc, given, exec);
        BOOST_TEST(dev.exec()->name() == exec->name(), what);
        const Bdia<T> back = dev.to(cpu_executor());
        BOOST_TEST(back.block_offsets == host.block_offsets, what);
        BOOST_TEST(back.data.to_vector() == host.data.to_vector(), what << ": data differ");
        BOOST_TEST(back.pattern.to_vector() == host.pattern.to_vector(),
                   what << ": pattern differs");
        std::string why;
        BOOST_TEST(test::same_coo(a, to_coo(back), why), what << ": " << why);
    };
    for (const auto& m : hepta_matrices()) {
        const Coo<double> a = with_explicit_zeros(m.a);
        check(m.name + " (double)", a, m.nc, {});
        check(m.name + " given offsets (double)", a, m.nc, m.offsets);
        check(m.name + " (float)", convert_values<float>(a), m.nc, {});
    }
    for (const auto& m : random_matrices())
        for (index_t nc : dividing_blocks(m.a))  // some with more offsets than 64
            check("random Nc=" + std::to_string(nc) + " " + m.name, m.a, nc, {});
    // the same errors as the host build, before anything is uploaded
    const auto a = hepta(4, 3, 3, 2, true, 8);
    BOOST_TEST(throws_input_error_mentioning(
        [&] {
            bdia_from_coo(a, 2, {-1, 0, 1}, exec);
        },
        "not among the given block offsets"));
    BOOST_TEST(
        throws_input_error_mentioning([&] { bdia_from_coo(a, 5, {}, exec); }, "does not divide"));
    BOOST_TEST(throws_input_error_mentioning([&] { bdia_from_coo(not_canonical(), 1, {}, exec); },
                                             "canonical"));
    BOOST_TEST(bdia_block_offsets(a, 2) == (std::vector<index_t>{-12, -4, -1, 0, 1, 4, 12}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bdia_from_csr_matches_the_coo_build_with_or_without_the_executors_copy)
{
    // From CSR (rows in any column order), on the executor, with the matrix uploaded by the
    // call or read from a copy already there: the same data and pattern as bdia_from_coo on
    // the host; and the same errors.
    const auto exec = test::test_executor();
    for (const auto& m : hepta_matrices()) {
        const Coo<double> a = with_explicit_zeros(m.a);
        const Bdia<double> ref = bdia_from_coo(a, m.nc);
        Csr<double> csr = csr_from_coo(a);
        // reverse every third row's entries: placement must not need sorted columns
        for (index_t r = 0; r < csr.rows; r += 3) {
            const offset_t b = csr.row_ptr[std::size_t(r)], e = csr.row_ptr[std::size_t(r) + 1];
            std::reverse(csr.col_idx.data() + b, csr.col_idx.data() + e);
            std::reverse(csr.values.data() + b, csr.values.data() + e);
        }
        const Csr<double> copy = csr.to(exec);
        for (const Csr<double>* on : {static_cast<const Csr<double>*>(nullptr), &copy}) {
            for (bool given : {false, true}) {
                const Bdia<double> b =
                    bdia_from_csr(csr, m.nc, given ? m.offsets : std::vector<index_t>{}, exec, on);
                const Bdia<double> h = b.to(cpu_executor());
                BOOST_TEST_CONTEXT(m.name << (on ? ", executor's copy" : ", uploaded")
                                          << (given ? ", offsets given" : ""))
                {
                    BOOST_TEST(h.block_offsets == ref.block_offsets,
                               boost::test_tools::per_element());
                    BOOST_TEST(h.data.to_vector() == ref.data.to_vector());
                    BOOST_TEST(h.pattern.to_vector() == ref.pattern.to_vector());
                }
            }
        }
    }
    const auto a = hepta(4, 3, 3, 2, true, 8);
    const Csr<double> csr = csr_from_coo(a);
    BOOST_TEST(throws_input_error_mentioning(
        [&] {
            bdia_from_csr(csr, 2, {-1, 0, 1}, exec);
        },
        "not among the given block offsets"));
    Csr<double> broken = csr;
    broken.col_idx[5] = a.cols;  // a column outside the matrix
    BOOST_TEST(
        throws_input_error_mentioning([&] { bdia_from_csr(broken, 2, {}, exec); }, "outside the"));
    broken = csr;
    std::swap(broken.row_ptr[3], broken.row_ptr[4]);  // decreasing row pointers
    BOOST_TEST(throws_input_error_mentioning([&] { bdia_from_csr(broken, 2, {}, exec); },
                                             "decreasing row pointers"));
}

#ifdef HEPTANE_HAVE_CUDA
namespace {
// Boost.Test precondition: the case runs (and counts) only where the executor under test is
// a GPU; elsewhere Boost reports it skipped.
struct OnGpu {
    boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const
    {
        return test::testing_on_gpu();
    }
};
}  // namespace

BOOST_AUTO_TEST_CASE(streamed_placement_matches_the_host_placement_for_every_chunk_size,
                     *boost::unit_test::precondition(OnGpu{}))
{
    // The entries streamed up from host CSR in chunks of whole rows (from one entry a chunk
    // to all of them; rows longer than a chunk), each chunk placed while the next goes up:
    // the same data and pattern as the host placement, and the lowest bad entry reported
    // whichever chunk holds it.
    const auto exec = test::test_executor();
    const auto& cuda_exec = static_cast<const CudaExecutor&>(*exec);
    auto streamed = [&](const Csr<double>& csr, index_t nc, const std::vector<index_t>& offsets,
                        offset_t chunk, Bdia<double>& out) {
        const index_t nq = index_t(offsets.size());
        const std::size_t slots = std::size_t(nq) * std::size_t(nc) * std::size_t(csr.rows);
        Array<double> data(exec, slots);
        Array<std::uint64_t> pattern(exec, (slots + 63) / 64);
        const offset_t bad = kernels::bdia_place_entries_from_host(
            cuda_exec, csr.rows, csr.cols, nc, offsets.data(), nq, csr.row_ptr.data(),
            csr.col_idx.data(), csr.values.data(), data.data(), pattern.data(), chunk);
        out.data = data.to(cpu_executor());
        out.pattern = pattern.to(cpu_executor());
        return bad;
    };
    for (const auto& m : hepta_matrices()) {
        const Coo<double> a = with_explicit_zeros(m.a);
        const Bdia<double> ref = bdia_from_coo(a, m.nc);
        const Csr<double> csr = csr_from_coo(a);
        const offset_t nnz = csr.nnz();
        for (offset_t chunk :
             {offset_t(1), offset_t(5), offset_t(64), nnz / 3 + 1, nnz, nnz + 99}) {
            Bdia<double> got;
            const offset_t bad = streamed(csr, m.nc, ref.block_offsets, chunk, got);
            BOOST_TEST_CONTEXT(m.name << ", chunks of " << chunk << " entries")
            {
                BOOST_TEST(bad == offset_t(-1));
                BOOST_TEST(got.data.to_vector() == ref.data.to_vector());
                BOOST_TEST(got.pattern.to_vector() == ref.pattern.to_vector());
            }
        }
        // two entries moved off the offsets (if the matrix is wide enough), one near the end
        // and one in the first third: the lowest bad entry is reported, as the host placement
        // reports it, whichever chunk was placed first
        Csr<double> broken = csr;
        broken.col_idx[std::size_t(nnz / 4)] = csr.cols - 1;
        broken.col_idx[std::size_t(nnz - 2)] = 0;
        const index_t nq = index_t(ref.block_offsets.size());
        std::vector<double> hdata(std::size_t(nq) * std::size_t(m.nc) * std::size_t(csr.rows));
        std::vector<std::uint64_t> hpattern((hdata.size() + 63) / 64);
        const offset_t expected = kernels::bdia_place_entries(
            *cpu_executor(), csr.rows, csr.cols, m.nc, ref.block_offsets.data(), nq, nnz,
            broken.row_ptr.data(), broken.col_idx.data(), broken.values.data(), hdata.data(),
            hpattern.data());
        for (offset_t chunk : {offset_t(3), nnz / 2 + 1, nnz}) {
            Bdia<double> got;
            const offset_t bad = streamed(broken, m.nc, ref.block_offsets, chunk, got);
            BOOST_TEST_CONTEXT(m.name << ", bad entries, chunks of " << chunk)
            BOOST_TEST(bad == expected);
        }
    }
}
#endif

BOOST_AUTO_TEST_CASE(matrix_operator_from_csr_applies_as_the_one_from_coo)
{
    // make_matrix_operator from host CSR (with and without a copy on the executor) gives the
    // products of the one built from COO, for every format and precision
    const auto exec = test::test_executor();
    const auto a = hepta(5, 4, 3, 3, false, 21);
    const Csr<double> csr = csr_from_coo(a);
    const Csr<double> copy = csr.to(exec);
    std::vector<double> xh(std::size_t(a.cols));
    for (std::size_t i = 0; i < xh.size(); ++i) xh[i] = std::sin(0.37 * double(i)) + 0.5;
    const Array<double> x = Array<double>(std::vector<double>(xh)).to(exec);
    for (Format f : {Format::coo, Format::csr, Format::ell, Format::hyb, Format::dia, Format::bsr,
                     Format::bdia}) {
        FormatOptions opt;
        opt.block_size = 3;
        const auto ref = make_matrix_operator<double, double>(a, f, exec, opt);
        Array<double> y_ref(exec, std::size_t(a.rows));
        ref->apply(x.data(), y_ref.data());
        const std::vector<double> yr = y_ref.to_vector();
        for (const Csr<double>* on : {static_cast<const Csr<double>*>(nullptr), &copy}) {
            const auto op = make_matrix_operator<double, double>(csr, f, exec, opt, on);
            Array<double> y(exec, std::size_t(a.rows));
            op->apply(x.data(), y.data());
            const std::vector<double> yv = y.to_vector();
            double diff = 0, norm = 0;
            for (std::size_t i = 0; i < yv.size(); ++i) {
                diff = std::max(diff, std::abs(yv[i] - yr[i]));
                norm = std::max(norm, std::abs(yr[i]));
            }
            BOOST_TEST(diff <= 1e-14 * norm, to_string(f) << (on ? " (executor's copy)" : "")
                                                          << ": max difference " << diff);
        }
        const auto op32 = make_matrix_operator<float, double>(csr, f, exec, opt, &copy);
        BOOST_TEST(op32->rows() == a.rows, to_string(f) << " fp32 values");
    }
}

BOOST_AUTO_TEST_CASE(large_uploads_arrive_intact)
{
    // copy_bytes sends uploads of 8 MB or more from pageable memory through pinned staging
    // buffers of 16 MB in turn (on a GPU): sizes below, at and above the threshold, with a
    // last chunk that is not full, come back unchanged
    const auto exec = test::test_executor();
    for (std::size_t n : {std::size_t(1 << 20) - 1, std::size_t(1 << 20),
                          std::size_t(5 << 20) + 3}) {  // doubles: 8 MB - 8 B, 8 MB, 40 MB + 24 B
        std::vector<double> h(n);
        for (std::size_t i = 0; i < n; ++i) h[i] = double(i % 1000003) * 0.5 - double(i % 7);
        const Array<double> d = Array<double>(std::vector<double>(h)).to(exec);
        BOOST_TEST((d.to_vector() == h), n << " doubles came back changed");
    }
}

BOOST_AUTO_TEST_CASE(bdia_zeros_marks_every_valid_slot)
{
    // banded hepta: every slot with a column inside the matrix is an entry, so the pattern of
    // bdia_zeros must be exactly the hepta pattern, with value 0
    for (index_t nc : {1, 3}) {
        const auto a = hepta(4, 3, 3, nc, true, 9);
        const auto z = bdia_zeros<double>(a.rows, a.cols, nc, hepta_offsets(4, 3));
        const auto back = to_coo(z);
        BOOST_TEST(back.row.host() == a.row.host(), boost::test_tools::per_element());
        BOOST_TEST(back.col.host() == a.col.host(), boost::test_tools::per_element());
        BOOST_TEST(std::all_of(back.val.host().begin(), back.val.host().end(),
                               [](double x) { return x == 0.0; }));
    }
    // rectangular, and an offset with no valid slot
    const auto z = bdia_zeros<float>(6, 9, 3, {-2, 0, 2});
    const auto back = to_coo(z);
    BOOST_TEST(back.nnz() == 3 * 9);  // blocks (0,0), (1,1) and (0,2)
    // long diagonals (whole pattern words set in parallel), rows not a multiple of 64
    const index_t n = (index_t(1) << 21) + 5;
    const auto big = bdia_zeros<float>(n, n, 1, {-3, 0, 7});
    const std::uint64_t* bits = big.pattern.data();
    offset_t set = 0;
    for (std::size_t w = 0; w < big.pattern.size(); ++w) set += __builtin_popcountll(bits[w]);
    BOOST_TEST(set == offset_t(n - 3) + n + (n - 7));
    for (index_t q = 0; q < 3; ++q) {
        const index_t d = big.block_offsets[q];
        for (index_t r : {0, 1, 2, 3, n - 8, n - 7, n - 6, n - 1})
            BOOST_TEST(test_bit(bits, std::size_t(q) * n + r) == (r + d >= 0 && r + d < n),
                       "offset " << d << " row " << r);
    }
}

// BDIA with Nc = 1 on a random or re-blocked pattern has hundreds of block diagonals: a device
// back end may refuse those (NotSupported, reported); the hepta matrices in their own block
// size (D = 7) must always run.
BOOST_AUTO_TEST_CASE(bdia_spmv_matches_csr_and_eigen)
{
    for (const auto& m : hepta_matrices()) {
        check_format(
            "BDIA " + m.name, m.a, [&](const auto& a) { return bdia_from_coo(a, m.nc); },
            Op::normal);
        check_format(
            "BDIA Nc=1 " + m.name, m.a, [](const auto& a) { return bdia_from_coo(a, 1); },
            Op::normal, true);
    }
    for (const auto& m : random_matrices())
        for (index_t nc : dividing_blocks(m.a))
            check_format(
                "BDIA Nc=" + std::to_string(nc) + " " + m.name, m.a,
                [nc](const auto& a) { return bdia_from_coo(a, nc); }, Op::normal, true);
}

BOOST_AUTO_TEST_CASE(bdia_transpose_equals_csr_transpose)
{
    for (const auto& m : hepta_matrices()) {
        check_format(
            "BDIA " + m.name, m.a, [&](const auto& a) { return bdia_from_coo(a, m.nc); },
            Op::transpose);
        check_format(
            "BDIA Nc=1 " + m.name, m.a, [](const auto& a) { return bdia_from_coo(a, 1); },
            Op::transpose, true);
    }
    for (const auto& m : random_matrices())
        for (index_t nc : dividing_blocks(m.a))
            check_format(
                "BDIA Nc=" + std::to_string(nc) + " " + m.name, m.a,
                [nc](const auto& a) { return bdia_from_coo(a, nc); }, Op::transpose, true);
}

BOOST_AUTO_TEST_CASE(bdia_with_extra_offsets_and_no_offsets_computes_the_same)
{
    // extra (empty) block diagonals are padding only; a matrix without entries has D = 0
    const auto a = hepta(4, 3, 2, 3, false, 10);
    check_format(
        "BDIA extra offsets", a,
        [](const auto& m) {
            return bdia_from_coo(m, 3, {-12, -4, -3, -1, 0, 1, 2, 3, 4, 12});
        },
        Op::normal);
    const auto empty = from_triplets(12, 6, {}, {}, {});
    check_format(
        "BDIA no entries 12x6", empty, [](const auto& m) { return bdia_from_coo(m, 3); },
        Op::normal);
    check_format(
        "BDIA no entries 12x6", empty, [](const auto& m) { return bdia_from_coo(m, 3); },
        Op::transpose);
}

// A rank's block of a distributed grid matrix keeps the grid's block offsets, which can reach
// past its few rows (or it has none): every output is then a boundary row. Built directly
// (bdia_from_coo refuses such offsets), against the products written out by hand.
BOOST_AUTO_TEST_CASE(bdia_with_offsets_past_its_rows_computes_on_the_host)
{
    const std::vector<index_t> offsets = {-5, -2, 0, 1, 5};
    for (const index_t n : {0, 3}) {
        Bdia<double> b;
        b.rows = b.cols = n;
        b.block_offsets = offsets;
        std::vector<double> d(offsets.size() * std::size_t(n));
        for (std::size_t k = 0; k < d.size(); ++k) d[k] = 1.0 + 0.25 * double(k);
        b.data = Array<double>(d);
        const std::vector<double> x = {0.5, -1.0, 2.0}, y0 = {1.0, 2.0, 3.0};
        for (const Op op : {Op::normal, Op::transpose}) {
            std::vector<double> want(y0.begin(), y0.begin() + n), y = want;
            for (double& v : want) v *= 0.5;  // beta
            for (std::size_t q = 0; q < offsets.size(); ++q)
                for (index_t i = 0; i < n; ++i) {
                    const index_t j = i + offsets[q];
                    if (j < 0 || j >= n) continue;
                    const double a = d[q * std::size_t(n) + std::size_t(i)];  // A(i, j)
                    if (op == Op::normal)
                        want[std::size_t(i)] += 2.0 * a * x[std::size_t(j)];
                    else
                        want[std::size_t(j)] += 2.0 * a * x[std::size_t(i)];
                }
            kernels::spmv(*cpu_executor(), b, op, 2.0, x.data(), 0.5, y.data());
            BOOST_TEST(y == want, boost::test_tools::per_element());
        }
    }
}

// ---------------------------------------------------------------------- the Operator factory

BOOST_AUTO_TEST_CASE(parse_format_accepts_every_name_and_rejects_others)
{
    for (Format f : {Format::coo, Format::csr, Format::ell, Format::hyb, Format::dia, Format::bsr,
                     Format::bdia})
        BOOST_TEST(int(parse_format(to_string(f))) == int(f));
    BOOST_TEST(int(parse_format("bdia")) == int(Format::bdia));
    BOOST_TEST(int(parse_format("BDIAGH")) == int(Format::bdia));
    BOOST_TEST(throws_input_error_mentioning([] { parse_format("csc"); }, "bdiagh"));
}

namespace {

template <class MT, class VT>
void check_operator(const std::string& what, const Coo<double>& a64, Format f,
                    const FormatOptions& opt, bool device_may_refuse = false)
{
    const auto exec = test::test_executor();
    const auto op = make_matrix_operator<MT, VT>(a64, f, exec, opt);
    if (!test::device_accepts<VT>(
            what + " " + op->describe(), std::size_t(a64.cols), std::size_t(a64.rows),
            device_may_refuse, [&](VT al, const VT* x, VT be, VT* y) { op->apply(al, x, be, y); }))
        return;
    BOOST_TEST(op->rows() == a64.rows);
    BOOST_TEST(op->cols() == a64.cols);
    BOOST_TEST(op->executor() == exec);
    const std::string d = op->describe();
    BOOST_TEST(d.find(to_string(f)) == 0, d);
    BOOST_TEST(d.find(exec->name()) != std::string::npos, d);
    const Coo<MT> a = convert_values<MT>(a64);
    const Csr<MT> csr = csr_from_coo(a);
    const std::string name = what + " " + d;
    const test::Reference<MT, VT> normal(a, Op::normal, 5), transposed(a, Op::transpose, 6);
    unsigned seed = 7;
    for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {0.5, -1.0}, {-1.0, 1.0}}) {
        test::check_run(name, normal, csr, alpha, beta, seed++,
                        [&](VT al, const VT* x, VT be, VT* y) { op->apply(al, x, be, y); });
        test::check_run(
            name, transposed, csr, alpha, beta, seed++,
            [&](VT al, const VT* x, VT be, VT* y) { op->apply_transpose(al, x, be, y); });
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(matrix_operator_applies_every_format_in_every_precision)
{
    const auto h = hepta(4, 3, 3, 3, false, 31);
    const auto r = test::random_coo<double>(60, 42, 0, 8, 32);
    for (Format f : {Format::coo, Format::csr, Format::ell, Format::hyb, Format::dia, Format::bsr,
                     Format::bdia})
        for (TransposeMode t : {TransposeMode::scatter, TransposeMode::stored}) {
            FormatOptions opt;
            opt.transpose = t;
            check_operator<double, double>("hepta", h, f, opt);
            check_operator<float, float>("hepta", h, f, opt);
            check_operator<float, double>("hepta", h, f, opt);
            // BDIA of a random pattern: hundreds of block diagonals (see above)
            check_operator<double, double>("random", r, f, opt, f == Format::bdia);
            check_operator<float, double>("random", r, f, opt, f == Format::bdia);
        }
}

BOOST_AUTO_TEST_CASE(matrix_operator_detects_the_block_size_of_dense_blocks)
{
    const auto exec = test::test_executor();
    for (index_t nc : {1, 2, 3, 4, 8}) {
        const auto a = hepta(4, 3, 2, nc, true, 40 + nc);
        const auto bsr = make_matrix_operator<double, double>(a, Format::bsr, exec);
        BOOST_TEST(bsr->describe().find("b=" + std::to_string(nc) + " ") != std::string::npos,
                   bsr->describe());
        const auto bdia = make_matrix_operator<float, double>(a, Format::bdia, exec);
        BOOST_TEST(bdia->describe().find("Nc=" + std::to_string(nc) + " D=7 ") != std::string::npos,
                   bdia->describe());
        BOOST_TEST(bdia->describe().find("fp32 values/fp64 vectors") != std::string::npos);
    }
    // a random pattern has no dense blocks
    const auto r = test::random_coo<double>(48, 48, 1, 6, 41);
    const std::string d = make_matrix_operator<double, double>(r, Format::bsr, exec)->describe();
    BOOST_TEST(d.find("b=1 ") != std::string::npos, d);
    // an explicit block size that does not fit is an input error
    FormatOptions opt;
    opt.block_size = 5;
    BOOST_TEST(throws_input_error_mentioning(
        [&] { make_matrix_operator<double, double>(r, Format::bsr, exec, opt); },
        "does not divide"));
}

BOOST_AUTO_TEST_CASE(spmv_traffic_counts_the_floor_bytes)
{
    const auto a = hepta(4, 3, 3, 2, true, 50);
    const double N = a.rows, nnz = double(a.nnz());
    // BDIA-GH fp64: 8 * D*Nc*N values (+ 4 bytes per offset) + x + y
    const auto bdia = spmv_traffic(a, Format::bdia, {}, Precision::double_);
    BOOST_TEST(bdia.matrix_bytes == 8 * 7 * 2 * N + 4 * 7);
    BOOST_TEST(bdia.vector_bytes == 16 * N);
    // mixed: fp32 values, fp64 vectors
    const auto mixed = spmv_traffic(a, Format::bdia, {}, Precision::mixed);
    BOOST_TEST(mixed.matrix_bytes == 4 * 7 * 2 * N + 4 * 7);
    BOOST_TEST(mixed.vector_bytes == 16 * N);
    // CSR: values + 4-byte columns + 8-byte row pointers
    const auto csr = spmv_traffic(a, Format::csr, {}, Precision::single);
    BOOST_TEST(csr.matrix_bytes == 8 * nnz + 8 * (N + 1));
    BOOST_TEST(csr.vector_bytes == 8 * N);
    BOOST_TEST(csr.total() == csr.matrix_bytes + csr.vector_bytes);
    // banded hepta: BSR with b = Nc stores no padding
    const auto bsr = spmv_traffic(a, Format::bsr, {}, Precision::double_);
    BOOST_TEST(bsr.matrix_bytes == 8 * nnz + 4 * nnz / 4 + 8 * (N / 2 + 1));
}

// The conversions and kernels run serially below 2^15 items (a parallel region costs more
// there); these matrices are large enough for the parallel paths: row ranges widened to
// whole rows, pattern words shared between threads, chunks split over threads.
BOOST_AUTO_TEST_CASE(parallel_paths_match_on_larger_matrices)
{
    const auto h = hepta(16, 12, 10, 3, false, 60);  // N = 5760, ~110 K entries
    const auto r = test::random_coo<double>(5000, 4000, 0, 30, 61);
    BOOST_TEST_REQUIRE(h.nnz() > 65536);
    BOOST_TEST_REQUIRE(r.nnz() > 65536);
    for (Op op : {Op::normal, Op::transpose}) {
        for (const auto* m : {&h, &r}) {
            const std::string tag = m == &h ? " grid hepta 16x12x10 Nc=3" : " random 5000x4000";
            check_format(
                "ELL" + tag, *m, [](const auto& a) { return ell_from_coo(a); }, op, false,
                test::two_pairs());
            check_format(
                "HYB width 3" + tag, *m, [](const auto& a) { return hyb_from_coo(a, 3); }, op,
                false, test::two_pairs());
            check_format(
                "BSR b=1" + tag, *m, [](const auto& a) { return bsr_from_coo(a, 1); }, op, false,
                test::two_pairs());
        }
        check_format(
            "DIA grid hepta 16x12x10 Nc=3", h, [](const auto& a) { return dia_from_coo(a); }, op,
            false, test::two_pairs());
        check_format(
            "BSR grid hepta 16x12x10 Nc=3", h, [](const auto& a) { return bsr_from_coo(a, 3); },
            op);
        check_format(
            "BDIA grid hepta 16x12x10 Nc=3", h, [](const auto& a) { return bdia_from_coo(a, 3); },
            op);
        check_format(
            "BDIA Nc=1 grid hepta 16x12x10 Nc=3", h,
            [](const auto& a) { return bdia_from_coo(a, 1); }, op, true, test::two_pairs());
        check_format(
            "BSR b=2 random 5000x4000", r, [](const auto& a) { return bsr_from_coo(a, 2); }, op,
            false, test::two_pairs());
    }
    for (const auto* m : {&h, &r}) {
        check_round_trip_both("ELL large", *m, [](const auto& a) { return ell_from_coo(a); });
        check_round_trip_both("HYB large", *m, [](const auto& a) { return hyb_from_coo(a, 3); });
        check_round_trip_both("BSR large", *m, [](const auto& a) { return bsr_from_coo(a, 2); });
    }
    check_round_trip_both("DIA large", h, [](const auto& a) { return dia_from_coo(a); });
    check_round_trip_both("BSR large b=3", h, [](const auto& a) { return bsr_from_coo(a, 3); });
    check_round_trip_both("BDIA large", h, [](const auto& a) { return bdia_from_coo(a, 3); });
    check_round_trip_both("BDIA large Nc=1", h, [](const auto& a) { return bdia_from_coo(a, 1); });
    check_round_trip_both("BDIA large zeros", h, [](const auto& a) {
        return bdia_from_coo(a, 3, {-192, -16, -1, 0, 1, 16, 192});
    });
}

// The CSR -> BDIA-GH slot map (formats/bdia/bdia_slots.hpp) on the test executor, 32- and
// 64-bit: with the block offsets given in another order than bdia_from_coo's, each entry's slot
// is the formula's for that order, and mapped to bdia_from_coo's order it holds the entry's
// value there; an entry off the offsets is reported, not thrown.
BOOST_AUTO_TEST_CASE(bdia_slots_from_csr_put_each_entry_where_bdia_from_coo_does)
{
    const auto exec = test::test_executor();
    for (bool banded : {true, false})
        for (index_t nc : {1, 3}) {
            const Coo<double> coo = hepta(5, 4, 3, nc, banded, 17);
            const Csr<double> csr = csr_from_coo(coo);
            const Bdia<double> ref = bdia_from_coo(coo, nc, hepta_offsets(5, 4));
            const Array<double> ref_data = ref.data.to(cpu_executor());
            std::vector<index_t> offsets = hepta_offsets(5, 4);
            std::reverse(offsets.begin(), offsets.end());
            const index_t n = csr.rows, nq = index_t(offsets.size());
            const offset_t nnz = csr.nnz();
            std::vector<index_t> ptr(std::size_t(n) + 1);
            for (index_t r = 0; r <= n; ++r) ptr[std::size_t(r)] = index_t(csr.row_ptr.data()[r]);
            const std::vector<index_t> col(csr.col_idx.data(), csr.col_idx.data() + nnz);
            const Array<index_t> dptr = Array<index_t>(std::vector<index_t>(ptr)).to(exec);
            const Array<index_t> dcol = Array<index_t>(std::vector<index_t>(col)).to(exec);
            auto q_in = [](const std::vector<index_t>& offs, index_t d) {
                return offset_t(std::find(offs.begin(), offs.end(), d) - offs.begin());
            };
            auto check = [&](const std::vector<std::int64_t>& slots, const char* width) {
                offset_t wrong = 0;
                for (index_t r = 0; r < n; ++r)
                    for (offset_t k = ptr[std::size_t(r)]; k < ptr[std::size_t(r) + 1]; ++k) {
                        const index_t c = col[std::size_t(k)];
                        const index_t d = c / nc - r / nc;
                        const std::int64_t mine = (q_in(offsets, d) * nc + c % nc) * n + r;
                        const std::int64_t theirs =
                            (q_in(ref.block_offsets, d) * nc + c % nc) * n + r;
                        if (slots[std::size_t(k)] != mine ||
                            ref_data.data()[theirs] != csr.values.data()[k])
                            ++wrong;
                    }
                BOOST_TEST(wrong == 0, width << " slots, banded " << banded << ", Nc " << nc << ": "
                                             << wrong << " entries misplaced");
            };
            Array<std::int32_t> s32(exec, std::size_t(nnz));
            Array<std::int64_t> s64(exec, std::size_t(nnz));
            offset_t bad32 = 0, bad64 = 0;
            dispatch_executor(*exec, [&](const auto& e) {
                bad32 = kernels::bdia_slots_from_csr(e, n, nc, dptr.data(), dcol.data(),
                                                     offsets.data(), nq, s32.data());
                bad64 = kernels::bdia_slots_from_csr(e, n, nc, dptr.data(), dcol.data(),
                                                     offsets.data(), nq, s64.data());
            });
            BOOST_TEST(bad32 == -1);
            BOOST_TEST(bad64 == -1);
            const Array<std::int32_t> h32 = s32.to(cpu_executor());
            const Array<std::int64_t> h64 = s64.to(cpu_executor());
            check(std::vector<std::int64_t>(h32.data(), h32.data() + nnz), "32-bit");
            check(std::vector<std::int64_t>(h64.data(), h64.data() + nnz), "64-bit");
            // without the block offset +1, an entry on it is reported
            std::vector<index_t> fewer;
            for (index_t d : offsets)
                if (d != 1) fewer.push_back(d);
            offset_t bad = -1;
            dispatch_executor(*exec, [&](const auto& e) {
                bad = kernels::bdia_slots_from_csr(e, n, nc, dptr.data(), dcol.data(), fewer.data(),
                                                   index_t(fewer.size()), s32.data());
            });
            BOOST_REQUIRE(bad >= 0 && bad < nnz);
            const auto br =
                index_t(std::upper_bound(ptr.begin(), ptr.end(), index_t(bad)) - ptr.begin() - 1);
            BOOST_TEST(col[std::size_t(bad)] / nc - br / nc == 1);
        }
}

// The map-free CSR -> BDIA-GH copy (kernels::bdia_values_from_csr, CPU): every slot equals
// bdia_from_coo's from the same matrix (fp64 bit for bit, fp32 its rounding) and slots of no
// entry keep what they held, for a full stencil, for one with entries dropped from interior
// rows (those rows through their slots), and with the offsets in descending order (no row in
// slot order: no row in a run, every entry through its slot).
BOOST_AUTO_TEST_CASE(bdia_values_from_csr_puts_each_entry_where_bdia_from_coo_does)
{
    for (bool drop : {false, true})
        for (bool descending : {false, true})
            for (index_t nc : {1, 3}) {
                BOOST_TEST_CONTEXT("drop " << drop << " descending " << descending << " Nc " << nc)
                {
                    Coo<double> coo = hepta(9, 7, 5, nc, true, 29);
                    if (drop) {  // every 37th off-diagonal entry gone: a few interior rows short
                        std::vector<index_t> r, c;
                        std::vector<double> v;
                        for (offset_t k = 0; k < coo.nnz(); ++k) {
                            const std::size_t i = std::size_t(k);
                            if (coo.row[i] != coo.col[i] && k % 37 == 0) continue;
                            r.push_back(coo.row[i]);
                            c.push_back(coo.col[i]);
                            v.push_back(coo.val[i]);
                        }
                        coo =
                            Coo<double>{coo.rows, coo.cols, Array<index_t>(std::move(r)),
                                        Array<index_t>(std::move(c)), Array<double>(std::move(v))};
                    }
                    const Csr<double> csr = csr_from_coo(coo);
                    std::vector<index_t> offs = hepta_offsets(9, 7);
                    std::sort(offs.begin(), offs.end());
                    if (descending) std::reverse(offs.begin(), offs.end());
                    const Bdia<double> ref = bdia_from_coo(coo, nc, offs);  // ascending
                    const std::vector<double> asc = ref.data.to(cpu_executor()).to_vector();
                    const index_t n = csr.rows, nq = index_t(offs.size());
                    const offset_t nnz = csr.nnz();
                    std::vector<index_t> ptr(std::size_t(n) + 1);
                    for (index_t r = 0; r <= n; ++r)
                        ptr[std::size_t(r)] = index_t(csr.row_ptr.data()[r]);
                    const std::vector<index_t> col(csr.col_idx.data(), csr.col_idx.data() + nnz);
                    std::vector<offset_t> slot(static_cast<std::size_t>(nnz));
                    const CpuExecutor& cpu = *cpu_executor();
                    BOOST_REQUIRE(kernels::bdia_slots_from_csr(cpu, n, nc, ptr.data(), col.data(),
                                                               offs.data(), nq, slot.data()) == -1);
                    const kernels::BdiaCsrCopyPlan plan =
                        kernels::bdia_csr_copy_plan(n, nq * nc, ptr.data(), slot.data());
                    const offset_t full = plan.full_entries();
                    BOOST_TEST(full + offset_t(plan.other_slot.size()) == nnz);
                    if (descending)
                        BOOST_TEST(full == 0);  // no row in slot order
                    else
                        BOOST_TEST(full > nnz / 4, full << " of " << nnz << " entries in runs");
                    // expected: each entry at its slot (checked against bdia_from_coo in
                    // ascending order), a marker that must survive in slots of no entry
                    std::vector<double> expect(asc.size(), -7.0);
                    for (offset_t k = 0; k < nnz; ++k)
                        expect[std::size_t(slot[std::size_t(k)])] = csr.values[std::size_t(k)];
                    if (!descending)
                        for (std::size_t i = 0; i < asc.size(); ++i)
                            BOOST_TEST_REQUIRE(
                                (expect[i] == -7.0 ? asc[i] == 0.0 : expect[i] == asc[i]));
                    std::vector<double> d(expect.size(), -7.0);
                    std::vector<float> f(expect.size(), -7.0f);
                    kernels::bdia_values_from_csr(cpu, plan, csr.values.data(), d.data());
                    kernels::bdia_values_from_csr(cpu, plan, csr.values.data(), f.data());
                    offset_t wrong = 0;
                    for (std::size_t i = 0; i < expect.size(); ++i) {
                        if (d[i] != expect[i] || f[i] != float(expect[i])) ++wrong;
                    }
                    BOOST_TEST(wrong == 0, wrong << " of " << expect.size() << " slots wrong");
                }
            }
}

// BAIJ's blocks straight into BDIA-GH slots (kernels::bdia_values_from_blocks, CPU): with the
// block offsets in bdia_from_coo's order, every slot equals bdia_from_coo's from the same
// matrix (fp64 bit for bit, fp32 the rounding of it), slots of no block untouched; a block off
// the offsets is the lowest such, its values left out.
BOOST_AUTO_TEST_CASE(bdia_values_from_blocks_put_each_block_where_bdia_from_coo_does)
{
    for (bool banded : {true, false})
        for (index_t nc : {1, 2, 3}) {
            BOOST_TEST_CONTEXT("banded " << banded << " Nc " << nc)
            {
                const Coo<double> coo = hepta(6, 5, 4, nc, banded, 23);
                const Bdia<double> ref = bdia_from_coo(coo, nc, hepta_offsets(6, 5));
                const std::vector<double> expect = ref.data.to(cpu_executor()).to_vector();
                const test::BlockCsr b = test::block_csr_of(csr_from_coo(coo), nc);
                const std::vector<index_t>& offs = ref.block_offsets;
                std::vector<double> d(expect.size(), 0.0);
                std::vector<float> f(expect.size(), 0.0f);
                const CpuExecutor& cpu = *cpu_executor();
                BOOST_TEST(kernels::bdia_values_from_blocks(
                               cpu, b.block_rows, nc, b.block_ptr.data(), b.block_col.data(),
                               b.values.data(), offs.data(), index_t(offs.size()), d.data()) == -1);
                BOOST_TEST(kernels::bdia_values_from_blocks(
                               cpu, b.block_rows, nc, b.block_ptr.data(), b.block_col.data(),
                               b.values.data(), offs.data(), index_t(offs.size()), f.data()) == -1);
                BOOST_TEST(d == expect, boost::test_tools::per_element());
                std::vector<float> expect32(expect.begin(), expect.end());
                BOOST_TEST(f == expect32, boost::test_tools::per_element());
                // without the block offset +1: the first block on it is reported
                std::vector<index_t> fewer;
                for (index_t q : offs)
                    if (q != 1) fewer.push_back(q);
                std::vector<double> e(expect.size(), 0.0);
                const offset_t bad = kernels::bdia_values_from_blocks(
                    cpu, b.block_rows, nc, b.block_ptr.data(), b.block_col.data(), b.values.data(),
                    fewer.data(), index_t(fewer.size()), e.data());
                offset_t first = -1;
                for (index_t ib = 0; ib < b.block_rows && first < 0; ++ib)
                    for (index_t k = b.block_ptr[std::size_t(ib)];
                         k < b.block_ptr[std::size_t(ib) + 1] && first < 0; ++k)
                        if (b.block_col[std::size_t(k)] - ib == 1) first = k;
                BOOST_TEST_REQUIRE(first >= 0);
                BOOST_TEST(bad == first);
            }
        }
}

// One MPI rank's part (PETSc's MPIBAIJ: block rows [first, last), its diagonal blocks with
// local block columns and the others through col_map, their global block columns ascending):
// both parts through bdia_values_from_blocks (the others with col_map and first) give the
// rank's local block of bdia_from_coo's array -- its rows of every slot, bit for bit -- and a
// block of the other part off the offsets is reported as the first such.
BOOST_AUTO_TEST_CASE(bdia_values_from_blocks_of_one_rank_are_its_rows_of_the_whole)
{
    for (index_t nc : {1, 2, 3}) {
        const Coo<double> coo = hepta(6, 5, 4, nc, true, 29);
        const Bdia<double> ref = bdia_from_coo(coo, nc, hepta_offsets(6, 5));
        const std::vector<double> whole = ref.data.to(cpu_executor()).to_vector();
        const test::BlockCsr b = test::block_csr_of(csr_from_coo(coo), nc);
        const std::vector<index_t>& offs = ref.block_offsets;
        const index_t nb = b.block_rows, N = nb * nc;
        for (const auto [first, last] : {std::pair<index_t, index_t>{0, 40}, {40, 80}, {33, nb}}) {
            BOOST_TEST_CONTEXT("Nc " << nc << ", block rows [" << first << ", " << last << ")")
            {
                // the two parts, as MatMPIBAIJGetSeqBAIJ gives them
                test::BlockCsr d, o;
                d.block_rows = o.block_rows = last - first;
                d.block_ptr.assign(1, 0);
                o.block_ptr.assign(1, 0);
                std::set<index_t> others;
                for (index_t ib = first; ib < last; ++ib)
                    for (index_t k = b.block_ptr[std::size_t(ib)];
                         k < b.block_ptr[std::size_t(ib) + 1]; ++k)
                        if (b.block_col[std::size_t(k)] < first ||
                            b.block_col[std::size_t(k)] >= last)
                            others.insert(b.block_col[std::size_t(k)]);
                const std::vector<index_t> col_map(others.begin(), others.end());
                const std::size_t bb = std::size_t(nc) * std::size_t(nc);
                for (index_t ib = first; ib < last; ++ib) {
                    for (index_t k = b.block_ptr[std::size_t(ib)];
                         k < b.block_ptr[std::size_t(ib) + 1]; ++k) {
                        const index_t jb = b.block_col[std::size_t(k)];
                        const bool mine = jb >= first && jb < last;
                        test::BlockCsr& part = mine ? d : o;
                        part.block_col.push_back(
                            mine ? jb - first
                                 : index_t(std::lower_bound(col_map.begin(), col_map.end(), jb) -
                                           col_map.begin()));
                        part.values.insert(
                            part.values.end(),
                            b.values.begin() + std::ptrdiff_t(std::size_t(k) * bb),
                            b.values.begin() + std::ptrdiff_t(std::size_t(k + 1) * bb));
                    }
                    d.block_ptr.push_back(index_t(d.block_col.size()));
                    o.block_ptr.push_back(index_t(o.block_col.size()));
                }
                BOOST_TEST_REQUIRE(!o.block_col.empty());
                const index_t n = d.block_rows * nc;
                std::vector<double> expect(offs.size() * std::size_t(nc) * std::size_t(n));
                for (std::size_t k = 0; k < offs.size() * std::size_t(nc); ++k)
                    for (index_t r = 0; r < n; ++r)
                        expect[k * std::size_t(n) + std::size_t(r)] =
                            whole[k * std::size_t(N) + std::size_t(first * nc + r)];
                const CpuExecutor& cpu = *cpu_executor();
                const index_t nq = index_t(offs.size());
                std::vector<double> got(expect.size(), 0.0);
                BOOST_TEST(kernels::bdia_values_from_blocks(
                               cpu, d.block_rows, nc, d.block_ptr.data(), d.block_col.data(),
                               d.values.data(), offs.data(), nq, got.data()) == -1);
                BOOST_TEST(kernels::bdia_values_from_blocks(
                               cpu, o.block_rows, nc, o.block_ptr.data(), o.block_col.data(),
                               o.values.data(), offs.data(), nq, got.data(), col_map.data(),
                               first) == -1);
                BOOST_TEST(got == expect, boost::test_tools::per_element());
                // the other part without its lowest block offset: its first block there
                const index_t lowest = offs.front();
                std::vector<index_t> fewer(offs.begin() + 1, offs.end());
                offset_t want = -1;
                for (index_t ib = 0; ib < o.block_rows && want < 0; ++ib)
                    for (index_t k = o.block_ptr[std::size_t(ib)];
                         k < o.block_ptr[std::size_t(ib) + 1] && want < 0; ++k)
                        if (col_map[std::size_t(o.block_col[std::size_t(k)])] - (first + ib) ==
                            lowest)
                            want = k;
                if (want >= 0)
                    BOOST_TEST(kernels::bdia_values_from_blocks(
                                   cpu, o.block_rows, nc, o.block_ptr.data(), o.block_col.data(),
                                   o.values.data(), fewer.data(), nq - 1, got.data(),
                                   col_map.data(), first) == want);
            }
        }
    }
}

namespace {

// A KrylovState in the executor's memory, written from and read back to the host.
Array<double> state_on(const std::shared_ptr<const Executor>& exec, const KrylovState& s)
{
    Array<double> d(exec, sizeof(KrylovState) / sizeof(double));
    copy_bytes(*cpu_executor(), &s, *exec, d.data(), sizeof(KrylovState));
    return d;
}
KrylovState state_of(const Array<double>& d)
{
    KrylovState s;
    copy_bytes(*d.exec(), d.data(), *cpu_executor(), &s, sizeof(KrylovState));
    return s;
}

// apply_fused_dots with a DotsFinish (GPU): the product's last CTA adds the partial sums up
// and runs the step's finalize: α = ρ / (w, y) for BiCGStab and CG (count 1; CG stops as
// indefinite where (w, y) <= 0); with count 3, ω = (w, y) / (y, y) and the half-step test on
// ‖w‖ (w plays s, y plays t); the ticket is back at 0 (the next launch counts from it); a
// stopped state is left as it was; y is the plain product's. The reference: the sums in
// double from the same y (`want`), and the finalize rules run on the host on those.
template <class VT>
void check_fused_finish(const Operator<VT>& op, const VT* x, const VT* w, int count,
                        std::size_t cap, const double (&want)[3], const double (&scale)[3],
                        const std::vector<VT>& yr)
{
    const auto exec = op.executor();
    const std::size_t n = yr.size();
    Array<double> partials(exec, std::max<std::size_t>(cap, 1));
    const std::vector<int> kinds =
        count == 1 ? std::vector<int>{DotsFinish::bicgstab_alpha, DotsFinish::cg_alpha}
                   : std::vector<int>{DotsFinish::bicgstab_s_omega};
    for (int kind : kinds)
        for (double tol : {0.0, 2.0 * std::sqrt(want[2])})
            for (int stopped : {0, 1}) {
                if (count == 1 && tol > 0) continue;  // the tolerance plays no part in α
                BOOST_TEST_CONTEXT("finish kind " << kind << ", tol " << tol
                                                  << (stopped ? ", stopped" : ""))
                {
                    KrylovState s0;
                    s0.rho = 2.5;
                    s0.alpha = s0.omega = 7.0;
                    s0.tol = tol;
                    s0.stop = stopped;
                    Array<double> st = state_on(exec, s0);
                    DotsFinish f;
                    f.kind = kind;
                    f.state = reinterpret_cast<KrylovState*>(st.data());
                    Array<VT> y(exec, n);
                    const index_t parts =
                        op.apply_fused_dots(x, y.data(), w, count, partials.data(), cap, &f);
                    BOOST_TEST_REQUIRE(parts > 0);
                    BOOST_TEST(y.to_vector() == yr, boost::test_tools::per_element());
                    const KrylovState s = state_of(st);
                    KrylovState e = s0;  // the rules on the host, on the reference sums
                    DotsFinish fh = f;
                    fh.state = &e;
                    finish_dots(fh, want);
                    BOOST_TEST(s.ticket == 0u);
                    BOOST_TEST(s.stop == e.stop);
                    BOOST_TEST(s.reason == e.reason);
                    BOOST_TEST(s.half == e.half);
                    BOOST_TEST(s.pending == e.pending);
                    if (stopped) {
                        BOOST_TEST(s.alpha == 7.0);
                        BOOST_TEST(s.omega == 7.0);
                    }
                    // α and ω: quotients of the sums, to the sums' accuracy
                    const double rel = 1e-11 * scale[0] / std::abs(want[0]);
                    BOOST_TEST(std::abs(s.alpha - e.alpha) <= rel * std::abs(e.alpha),
                               s.alpha << " vs " << e.alpha);
                    BOOST_TEST(std::abs(s.omega - e.omega) <= rel * std::abs(e.omega),
                               s.omega << " vs " << e.omega);
                    if (count == 3 && !stopped) BOOST_TEST(e.half == (tol > 0 ? 1 : 0));
                }
            }
    // a finish of the wrong kind for the count is refused
    DotsFinish bad;
    bad.kind = count == 1 ? int(DotsFinish::bicgstab_s_omega) : int(DotsFinish::cg_alpha);
    Array<double> st = state_on(exec, KrylovState{});
    bad.state = reinterpret_cast<KrylovState*>(st.data());
    Array<VT> y(exec, n);
    BOOST_CHECK_THROW(op.apply_fused_dots(x, y.data(), w, count, partials.data(), cap, &bad),
                      InputError);
}

// The BDIA-GH operator of a64 in precision (MT, VT), block size nc, on exec.
template <class MT, class VT>
auto bdia_operator(const Coo<double>& a64, index_t nc, const std::shared_ptr<const Executor>& exec)
{
    FormatOptions opt;
    opt.block_size = nc;
    return make_matrix_operator<MT, VT>(a64, Format::bdia, exec, opt);
}

// Operator::apply_fused_dots of a BDIA-GH operator in precision (MT, VT), block size nc:
// on a GPU, y bit for bit the plain product's, and the partial sums add up to (w, y) and,
// with count 3, (y, y) and (w, w), computed here in double from the same y; w apart from x
// and w = x (no preconditioner). Elsewhere (the CPU) it declines: capacity 0, returns 0, y
// untouched. Partials and y are poisoned with NaN first, so an unwritten one shows.
template <class MT, class VT>
void check_fused_dots(const std::string& what, const Coo<double>& a64, index_t nc)
{
    const auto exec = test::test_executor();
    const auto op = bdia_operator<MT, VT>(a64, nc, exec);
    const std::size_t n = std::size_t(a64.rows);
    const std::vector<VT> xh = test::random_vector<VT>(n, 11), wh = test::random_vector<VT>(n, 12);
    const Array<VT> x = Array<VT>(std::vector<VT>(xh)).to(exec);
    const Array<VT> w = Array<VT>(std::vector<VT>(wh)).to(exec);
    const VT nan = std::numeric_limits<VT>::quiet_NaN();
    Array<VT> y_ref = Array<VT>(std::vector<VT>(n, nan)).to(exec);
    op->apply(x.data(), y_ref.data());
    const std::vector<VT> yr = y_ref.to_vector();
    for (int count : {1, 3})
        for (bool w_is_x : {true, false}) {
            BOOST_TEST_CONTEXT(what << " " << op->describe() << ", count " << count
                                    << (w_is_x ? ", w = x" : ", w apart"))
            {
                const std::size_t cap = op->fused_dots_capacity(count);
                Array<double> partials =
                    Array<double>(std::vector<double>(std::max<std::size_t>(cap, 1),
                                                      std::numeric_limits<double>::quiet_NaN()))
                        .to(exec);
                Array<VT> y = Array<VT>(std::vector<VT>(n, nan)).to(exec);
                const VT* wp = w_is_x ? x.data() : w.data();
                const index_t parts =
                    op->apply_fused_dots(x.data(), y.data(), wp, count, partials.data(), cap);
                const std::vector<VT> yh = y.to_vector();
                if (!exec->is_cuda()) {
                    BOOST_TEST(cap == 0u);
                    BOOST_TEST(parts == 0);
                    BOOST_TEST(std::all_of(yh.begin(), yh.end(), [](VT v) { return v != v; }));
                    continue;
                }
                BOOST_TEST_REQUIRE(parts > 0);
                BOOST_TEST(std::size_t(count) * std::size_t(parts) <= cap);
                BOOST_TEST(yh == yr, boost::test_tools::per_element());
                const std::vector<double> ph = partials.to_vector();
                const std::vector<VT>& wv = w_is_x ? xh : wh;
                double want[3] = {0, 0, 0}, scale[3] = {0, 0, 0};
                for (std::size_t i = 0; i < n; ++i) {
                    const double wi = wv[i], yi = yr[i];
                    want[0] += wi * yi;
                    want[1] += yi * yi;
                    want[2] += wi * wi;
                    scale[0] += std::abs(wi * yi);
                    scale[1] += yi * yi;
                    scale[2] += wi * wi;
                }
                for (int k = 0; k < count; ++k) {
                    double got = 0;
                    for (index_t b = 0; b < parts; ++b)
                        got += ph[std::size_t(k) * std::size_t(parts) + std::size_t(b)];
                    // the same products in double, added in another order
                    BOOST_TEST(std::abs(got - want[k]) <= 1e-12 * scale[k],
                               "sum " << k << ": " << got << " vs " << want[k]);
                }
                check_fused_finish(*op, x.data(), wp, count, cap, want, scale, yr);
            }
        }
}

// Operator::apply_step_dots (GPU: BDIA-GH forms a BiCGStab step's input in the product): z =
// r + β (a − ω b) (count 1, (w, y)) and z = r − α b (count 3, w = z: (z, y), (y, y), (z, z)),
// with the scalars from the state. The reference: z formed here in double from the same
// vectors and scalars, y = A z by the plain product of the z the kernel wrote, and the sums
// in double from those. A finish takes α from the sums as in check_fused_finish; a stopped
// state leaves y, z and the ticket alone; a kind that does not match the count and a z that
// aliases an operand are refused. Elsewhere (the CPU) forms_step_inputs is false and the call
// throws NotSupported.
template <class MT, class VT>
void check_step_dots(const std::string& what, const Coo<double>& a64, index_t nc)
{
    const auto exec = test::test_executor();
    const auto op = bdia_operator<MT, VT>(a64, nc, exec);
    const std::size_t n = std::size_t(a64.rows);
    const std::vector<VT> rh = test::random_vector<VT>(n, 31), ah = test::random_vector<VT>(n, 32),
                          bh = test::random_vector<VT>(n, 33), wh = test::random_vector<VT>(n, 34);
    const Array<VT> r = Array<VT>(std::vector<VT>(rh)).to(exec);
    const Array<VT> a = Array<VT>(std::vector<VT>(ah)).to(exec);
    const Array<VT> b = Array<VT>(std::vector<VT>(bh)).to(exec);
    const Array<VT> w = Array<VT>(std::vector<VT>(wh)).to(exec);
    const VT nan = std::numeric_limits<VT>::quiet_NaN();
    const std::size_t cap = op->fused_dots_capacity(3);
    Array<double> partials(exec, std::max<std::size_t>(cap, 1));
    KrylovState s0;
    s0.rho = 2.5;
    s0.beta = 0.75;
    s0.omega = 1.25;
    s0.alpha = 0.625;
    BOOST_TEST(op->forms_step_inputs() == exec->is_cuda(), what);
    for (int kind : {int(StepInput<VT>::bicgstab_p), int(StepInput<VT>::bicgstab_s)})
        for (int stopped : {0, 1})
            for (bool finish : {false, true}) {
                const bool p_step = kind == StepInput<VT>::bicgstab_p;
                const int count = p_step ? 1 : 3;
                BOOST_TEST_CONTEXT(what << " " << op->describe() << ", kind " << kind
                                        << (stopped ? ", stopped" : "")
                                        << (finish ? ", finished" : ""))
                {
                    KrylovState si = s0;
                    si.stop = stopped;
                    Array<double> st = state_on(exec, si);
                    auto* state = reinterpret_cast<KrylovState*>(st.data());
                    Array<VT> y = Array<VT>(std::vector<VT>(n, nan)).to(exec);
                    Array<VT> z = Array<VT>(std::vector<VT>(n, nan)).to(exec);
                    const StepInput<VT> in{kind,     state,   r.data(), p_step ? a.data() : nullptr,
                                           b.data(), z.data()};
                    const VT* wp = p_step ? w.data() : nullptr;
                    DotsFinish f;
                    f.kind = p_step ? int(DotsFinish::bicgstab_alpha)
                                    : int(DotsFinish::bicgstab_s_omega);
                    f.state = state;
                    if (!exec->is_cuda()) {
                        BOOST_CHECK_THROW(
                            op->apply_step_dots(in, y.data(), wp, count, partials.data(), cap),
                            NotSupported);
                        continue;
                    }
                    const index_t parts = op->apply_step_dots(
                        in, y.data(), wp, count, partials.data(), cap, finish ? &f : nullptr);
                    BOOST_TEST_REQUIRE(parts > 0);
                    const std::vector<VT> yh = y.to_vector(), zh = z.to_vector();
                    const KrylovState s = state_of(st);
                    BOOST_TEST(s.ticket == 0u);
                    if (stopped) {  // nothing written
                        BOOST_TEST(std::all_of(yh.begin(), yh.end(), [](VT v) { return v != v; }));
                        BOOST_TEST(std::all_of(zh.begin(), zh.end(), [](VT v) { return v != v; }));
                        BOOST_TEST(s.alpha == s0.alpha);
                        continue;
                    }
                    std::vector<double> zw(n);  // z in double from the same vectors
                    for (std::size_t i = 0; i < n; ++i)
                        zw[i] = p_step ? double(rh[i]) +
                                             s0.beta * (double(ah[i]) - s0.omega * double(bh[i]))
                                       : double(rh[i]) - s0.alpha * double(bh[i]);
                    const double tol = sizeof(VT) == 8 ? 1e-13 : 1e-5;
                    BOOST_TEST(test::rel_max_diff(zh, zw) <= tol,
                               "z: " << test::rel_max_diff(zh, zw));
                    Array<VT> y_ref = Array<VT>(std::vector<VT>(n, nan)).to(exec);
                    op->apply(z.data(), y_ref.data());  // A of the z written
                    const std::vector<VT> yr = y_ref.to_vector();
                    BOOST_TEST(test::rel_max_diff(yh, yr) <= tol,
                               "y: " << test::rel_max_diff(yh, yr));
                    double want[3] = {0, 0, 0}, scale[3] = {0, 0, 0};
                    for (std::size_t i = 0; i < n; ++i) {
                        const double wi = p_step ? double(wh[i]) : double(zh[i]), yi = yh[i];
                        want[0] += wi * yi;
                        want[1] += yi * yi;
                        want[2] += wi * wi;
                        scale[0] += std::abs(wi * yi);
                    }
                    if (!finish) {
                        const std::vector<double> ph = partials.to_vector();
                        for (int k = 0; k < count; ++k) {
                            double got = 0;
                            for (index_t c = 0; c < parts; ++c)
                                got += ph[std::size_t(k) * std::size_t(parts) + std::size_t(c)];
                            const double sc = k == 0 ? scale[0] : want[k];
                            BOOST_TEST(std::abs(got - want[k]) <= 1e-12 * sc,
                                       "sum " << k << ": " << got << " vs " << want[k]);
                        }
                        BOOST_TEST(s.alpha == s0.alpha);  // left to the caller
                    } else {
                        KrylovState e = s0;  // the finalize rules on the host
                        DotsFinish fh = f;
                        fh.state = &e;
                        finish_dots(fh, want);
                        const double rel = 1e-11 * scale[0] / std::abs(want[0]);
                        BOOST_TEST(std::abs(s.alpha - e.alpha) <= rel * std::abs(e.alpha),
                                   s.alpha << " vs " << e.alpha);
                        BOOST_TEST(std::abs(s.omega - e.omega) <= rel * std::abs(e.omega),
                                   s.omega << " vs " << e.omega);
                        BOOST_TEST(s.stop == e.stop);
                        BOOST_TEST(s.half == e.half);
                    }
                }
            }
    if (!exec->is_cuda()) return;
    // refused: a kind that does not match the count, a z that aliases r
    Array<double> st = state_on(exec, s0);
    auto* state = reinterpret_cast<KrylovState*>(st.data());
    Array<VT> y(exec, n), z(exec, n);
    const StepInput<VT> p_in{
        StepInput<VT>::bicgstab_p, state, r.data(), a.data(), b.data(), z.data()};
    BOOST_CHECK_THROW(op->apply_step_dots(p_in, y.data(), w.data(), 3, partials.data(), cap),
                      InputError);
    StepInput<VT> alias = p_in;
    alias.z = const_cast<VT*>(r.data());
    BOOST_CHECK_THROW(op->apply_step_dots(alias, y.data(), w.data(), 1, partials.data(), cap),
                      InputError);
}

}  // namespace

BOOST_AUTO_TEST_CASE(bdia_fused_dots_give_the_product_and_its_dot_products)
{
    // check_step_dots: the same products with a BiCGStab step's input formed in them
    // every block size with a compiled kernel (1, 2, 3, 4, 8, 16) and the generic one (5);
    // several CTAs each (>= 576 rows); banded and grid variants
    for (index_t nc : {1, 2, 3, 4, 5, 8, 16}) {
        const auto a = hepta(12, 8, 6, nc, nc % 2 == 0, 70 + unsigned(nc));
        const std::string what = "hepta 12x8x6 Nc=" + std::to_string(nc);
        check_fused_dots<double, double>(what, a, nc);
        check_fused_dots<float, float>(what, a, nc);
        check_fused_dots<float, double>(what, a, nc);
        check_step_dots<double, double>(what, a, nc);
        check_step_dots<float, float>(what, a, nc);
        check_step_dots<float, double>(what, a, nc);
    }
    // Nc = 1 with interior tiles: N even takes two rows a thread on the GPU (pairs of 16-byte
    // loads; offsets ±J, ±JH even, then odd), N odd one row a thread
    struct Grid {
        index_t J, H, I;
    };
    for (Grid g : {Grid{16, 12, 16}, Grid{17, 12, 16}, Grid{17, 13, 15}}) {
        const auto a = hepta(g.J, g.H, g.I, 1, false, 90 + unsigned(g.J + g.H));
        const std::string what = "hepta " + std::to_string(g.J) + "x" + std::to_string(g.H) + "x" +
                                 std::to_string(g.I) + " Nc=1";
        check_fused_dots<double, double>(what, a, 1);
        check_fused_dots<float, double>(what, a, 1);
        check_step_dots<double, double>(what, a, 1);
        check_step_dots<float, float>(what, a, 1);
        check_step_dots<float, double>(what, a, 1);
    }
    // extra block diagonals (9, not 7): the generic kernel
    const auto h = hepta(6, 5, 4, 2, false, 80);
    FormatOptions opt;
    opt.block_size = 2;
    opt.block_offsets = {-60, -30, -6, -1, 0, 1, 6, 30, 60};
    const auto exec = test::test_executor();
    const auto op9 = make_matrix_operator<double, double>(h, Format::bdia, exec, opt);
    BOOST_TEST(op9->describe().find("D=9") != std::string::npos, op9->describe());
    BOOST_TEST((op9->fused_dots_capacity(1) > 0) == exec->is_cuda());
}

BOOST_AUTO_TEST_CASE(fused_dots_are_declined_by_other_formats_and_the_thesis_kernel)
{
    const auto exec = test::test_executor();
    const auto a = hepta(6, 5, 4, 3, false, 81);
    FormatOptions thesis;
    thesis.block_size = 3;
    thesis.bdia_kernel = kernels::BdiaKernel::thesis;
    const auto t = make_matrix_operator<double, double>(a, Format::bdia, exec, thesis);
    const auto c = make_matrix_operator<double, double>(a, Format::csr, exec);
    const Array<double> x =
        Array<double>(test::random_vector<double>(std::size_t(a.rows), 3)).to(exec);
    Array<double> y(exec, std::size_t(a.rows));
    Array<double> partials(exec, 4096);
    for (const auto* op : {t.get(), c.get()}) {
        BOOST_TEST(op->fused_dots_capacity(1) == 0u, op->describe());
        BOOST_TEST(
            op->apply_fused_dots(x.data(), y.data(), x.data(), 1, partials.data(), 4096) == 0,
            op->describe());
        BOOST_TEST(!op->forms_step_inputs(), op->describe());
        Array<double> state(exec, sizeof(KrylovState) / sizeof(double));
        Array<double> z(exec, std::size_t(a.rows));
        const StepInput<double> in{StepInput<double>::bicgstab_s,
                                   reinterpret_cast<KrylovState*>(state.data()),
                                   x.data(),
                                   nullptr,
                                   x.data(),
                                   z.data()};
        BOOST_CHECK_THROW(op->apply_step_dots(in, y.data(), nullptr, 3, partials.data(), 4096),
                          NotSupported);
    }
}

namespace {

// kernels::bdia_right_scale on the executor under test: Â = A B with B block diagonal (blocks
// of b), checked through products: Â x against A (B x) computed here in double.
template <class MT, class VT>
void check_right_scale(const Coo<double>& a64, index_t nc, index_t b, double tol)
{
    const auto exec = test::test_executor();
    const Bdia<MT> a_host = bdia_from_coo(convert_values<MT>(a64), nc);
    const Bdia<MT> a = a_host.to(exec);
    Bdia<MT> out = a_host.to(exec);
    dispatch_executor(*exec, [&](const auto& e) {
        kernels::fill(e, index_t(out.data.size()), MT(7), out.data.data());
    });
    const std::size_t n = std::size_t(a64.rows), nb = n / std::size_t(b);
    const std::vector<VT> bh = test::random_vector<VT>(nb * std::size_t(b * b), 21);
    const Array<VT> bd = Array<VT>(std::vector<VT>(bh)).to(exec);
    dispatch_executor(*exec,
                      [&](const auto& e) { kernels::bdia_right_scale(e, a, b, bd.data(), out); });
    const std::vector<VT> x = test::random_vector<VT>(n, 22);
    std::vector<double> bx(n, 0.0);  // B x
    for (std::size_t p = 0; p < nb; ++p)
        for (index_t i = 0; i < b; ++i)
            for (index_t j = 0; j < b; ++j)
                bx[p * b + i] += double(bh[p * b * b + i * b + j]) * double(x[p * b + j]);
    std::vector<double> want(n, 0.0);  // A (B x)
    const Coo<MT> am = convert_values<MT>(a64);
    for (offset_t k = 0; k < am.nnz(); ++k)
        want[std::size_t(am.row[std::size_t(k)])] +=
            double(am.val[std::size_t(k)]) * bx[std::size_t(am.col[std::size_t(k)])];
    const Array<VT> xd = Array<VT>(std::vector<VT>(x)).to(exec);
    Array<VT> yd(exec, n);
    dispatch_executor(*exec, [&](const auto& e) {
        kernels::spmv(e, out, Op::normal, VT(1), xd.data(), VT(0), yd.data());
    });
    BOOST_TEST(test::rel_max_diff(yd.to_vector(), want) <= tol,
               "Nc=" << nc << " b=" << b << ": " << test::rel_max_diff(yd.to_vector(), want));
}

}  // namespace

BOOST_AUTO_TEST_CASE(bdia_right_scale_equals_the_product_with_the_block_diagonal)
{
    for (index_t nc : {1, 2, 3, 4}) {
        const auto a = hepta(7, 5, 4, nc, nc == 2, 90 + unsigned(nc));  // both variants
        for (index_t b : {index_t(1), nc, index_t(2)}) {
            if (nc % b != 0) continue;
            check_right_scale<double, double>(a, nc, b, 1e-13);
            check_right_scale<float, double>(a, nc, b, 1e-5);
            check_right_scale<float, float>(a, nc, b, 1e-5);
        }
    }
    // several tiles of block rows (the host kernel's 1024) and the threaded path (>= 32768 rows)
    for (index_t nc : {1, 3}) {
        const auto a = hepta(40, 30, 30, nc, false, 80 + unsigned(nc));
        check_right_scale<double, double>(a, nc, nc, 1e-13);
        if (nc > 1) check_right_scale<double, double>(a, nc, 1, 1e-13);
    }
    // blocks that do not divide the block size
    const auto exec = test::test_executor();
    const Bdia<double> a = bdia_from_coo(hepta(4, 3, 3, 3, false, 99), 3).to(exec);
    Bdia<double> out = bdia_from_coo(hepta(4, 3, 3, 3, false, 99), 3).to(exec);
    const Array<double> bd(exec, 4 * 36);
    BOOST_CHECK_THROW(
        dispatch_executor(
            *exec, [&](const auto& e) { kernels::bdia_right_scale(e, a, 2, bd.data(), out); }),
        InputError);
}

BOOST_AUTO_TEST_CASE(bdia_right_scale_by_the_main_blocks_inverses_writes_the_identity)
{
    // unit_main: B is the inverse of A's main blocks, so A B holds exactly I there and says so
    // (Bdia::unit_main_block); every other slot as without it; A B x against A (B x) in double
    const auto exec = test::test_executor();
    for (index_t nc : {1, 3}) {
        auto a64 = hepta(7, 5, 4, nc, false, 95 + unsigned(nc));
        for (offset_t k = 0; k < a64.nnz(); ++k)  // invertible main blocks (dominant diagonal)
            if (a64.row[std::size_t(k)] == a64.col[std::size_t(k)])
                a64.val[std::size_t(k)] = 4.0 + a64.val[std::size_t(k)];
        const Bdia<double> a_host = bdia_from_coo(a64, nc);
        const index_t q0 = a_host.main_block_diagonal();
        BOOST_TEST_REQUIRE(q0 >= 0);
        const std::size_t n = std::size_t(a64.rows), nb = n / std::size_t(nc);
        const std::vector<double>& ad = a_host.data.host();
        std::vector<double> binv(nb * std::size_t(nc * nc));  // row-major inverses
        for (std::size_t p = 0; p < nb; ++p) {
            double m[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
            for (index_t i = 0; i < nc; ++i)  // A(p nc + i, p nc + s) = slot (q0, s) of row i
                for (index_t s2 = 0; s2 < nc; ++s2)
                    m[i][s2] = ad[std::size_t(q0 * nc + s2) * n + p * std::size_t(nc) + i];
            double inv[3][3];
            if (nc == 1) {
                inv[0][0] = 1.0 / m[0][0];
            } else {  // adjugate / determinant
                const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                                   m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                                   m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j) {
                        const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3,
                                  c1 = (i + 2) % 3;
                        inv[i][j] = (m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]) / det;
                    }
            }
            for (index_t i = 0; i < nc; ++i)
                for (index_t j = 0; j < nc; ++j)
                    binv[p * std::size_t(nc * nc) + std::size_t(i * nc + j)] = inv[i][j];
        }
        const Array<double> bd = Array<double>(std::vector<double>(binv)).to(exec);
        const Bdia<double> a = a_host.to(exec);
        Bdia<double> plain = a_host.to(exec), unit = a_host.to(exec);
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::bdia_right_scale(e, a, nc, bd.data(), plain);
            kernels::bdia_right_scale(e, a, nc, bd.data(), unit, true);
        });
        BOOST_TEST(!plain.unit_main_block);
        BOOST_TEST(unit.unit_main_block);
        BOOST_TEST(unit.to(cpu_executor()).unit_main_block);  // kept by to()
        const std::vector<double> ph = plain.data.to_vector(), uv = unit.data.to_vector();
        std::size_t off_identity = 0, other_differs = 0;
        for (std::size_t k = 0; k < uv.size(); ++k) {
            const std::size_t slot = k / n, r = k % n;
            if (index_t(slot) / nc == q0) {
                const double want = index_t(slot) % nc == index_t(r % std::size_t(nc)) ? 1 : 0;
                off_identity += uv[k] != want;
            } else {
                other_differs += uv[k] != ph[k];
            }
        }
        BOOST_TEST(off_identity == 0u, "Nc=" << nc);
        BOOST_TEST(other_differs == 0u, "Nc=" << nc);
        // A B x against A (B x): the identity is A_ii B_i up to the rounding of the inverse
        const std::vector<double> x = test::random_vector<double>(n, 23);
        std::vector<double> bx(n, 0.0), want(n, 0.0);
        for (std::size_t p = 0; p < nb; ++p)
            for (index_t i = 0; i < nc; ++i)
                for (index_t j = 0; j < nc; ++j)
                    bx[p * nc + i] += binv[p * nc * nc + std::size_t(i * nc + j)] * x[p * nc + j];
        for (offset_t k = 0; k < a64.nnz(); ++k)
            want[std::size_t(a64.row[std::size_t(k)])] +=
                a64.val[std::size_t(k)] * bx[std::size_t(a64.col[std::size_t(k)])];
        const Array<double> xd = Array<double>(std::vector<double>(x)).to(exec);
        Array<double> yd(exec, n);
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::spmv(e, unit, Op::normal, 1.0, xd.data(), 0.0, yd.data());
        });
        BOOST_TEST(test::rel_max_diff(yd.to_vector(), want) <= 1e-12,
                   "Nc=" << nc << ": " << test::rel_max_diff(yd.to_vector(), want));
        // again without it: the flag cleared
        dispatch_executor(
            *exec, [&](const auto& e) { kernels::bdia_right_scale(e, a, nc, bd.data(), unit); });
        BOOST_TEST(!unit.unit_main_block);
        if (nc == 3) {  // blocks of 1 are not the main blocks' inverses
            BOOST_CHECK_THROW(dispatch_executor(*exec,
                                                [&](const auto& e) {
                                                    kernels::bdia_right_scale(e, a, 1, bd.data(),
                                                                              unit, true);
                                                }),
                              InputError);
        }
    }
    // no block diagonal at offset 0
    const Bdia<double> z = bdia_zeros<double>(8, 8, 1, {-1, 1}).to(exec);
    Bdia<double> zo = bdia_zeros<double>(8, 8, 1, {-1, 1}).to(exec);
    const Array<double> ones = Array<double>(std::vector<double>(8, 1.0)).to(exec);
    BOOST_CHECK_THROW(
        dispatch_executor(
            *exec,
            [&](const auto& e) { kernels::bdia_right_scale(e, z, 1, ones.data(), zo, true); }),
        InputError);
}

// ------------------------------------------------------------------------- the format registry

BOOST_AUTO_TEST_CASE(every_registered_format_parses_builds_round_trips_and_multiplies)
{
    // formats/registry.hpp: what every format in AllFormats must do, checked through the
    // registry alone (a new format gets these checks without a line here)
    std::vector<std::string> names;
    for_each_format([&](auto traits) {
        using Tr = decltype(traits);
        const std::string name = Tr::info.name;
        names.push_back(name);
        BOOST_TEST((parse_format(name) == Tr::info.id), name);
        BOOST_TEST(std::string(to_string(Tr::info.id)) == name);
        BOOST_TEST(std::string(format_info(Tr::info.id).name) == name);
        BOOST_TEST(!std::string(Tr::info.summary).empty(), name);
        if (Tr::info.alias != nullptr)
            BOOST_TEST((parse_format(Tr::info.alias) == Tr::info.id), name);
        std::string upper = name;
        for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        BOOST_TEST((parse_format(upper) == Tr::info.id), name << " in capitals");

        for (const auto& m : hepta_matrices()) {
            FormatOptions opt;
            opt.block_size = m.nc;
            const std::string what = name + " (registry) " + m.name;
            auto build = [&](const auto& a) { return Tr::build(a, opt); };
            // exact round trip, in double and float
            for (int pass = 0; pass < 2; ++pass) {
                std::string why;
                auto back = [&](const auto& a) {
                    const auto built = build(a);
                    if constexpr (std::is_same_v<std::decay_t<decltype(built)>,
                                                 std::decay_t<decltype(a)>>)
                        return built;
                    else
                        return to_coo(built);
                };
                if (pass == 0) {
                    BOOST_TEST(test::same_coo(m.a, back(m.a), why), what << ": " << why);
                } else {
                    const Coo<float> af = convert_values<float>(m.a);
                    BOOST_TEST(test::same_coo(af, back(af), why), what << " (float): " << why);
                }
            }
            // the product against the CPU CSR reference and Eigen, on the executor under test
            check_format(what, m.a, build, Op::normal, false, test::two_pairs());
            check_format(what, m.a, build, Op::transpose, false, test::two_pairs());
            // the bytes model: what spmv_traffic counts for this format, and at least the
            // values of the stored entries
            const double bytes = Tr::matrix_bytes(build(m.a), 8.0);
            BOOST_TEST(bytes >= 8.0 * double(m.a.nnz()), what);
            BOOST_TEST(
                spmv_traffic(m.a, Tr::info.id, opt, Precision::double_).matrix_bytes == bytes,
                what);
        }
    });
    BOOST_TEST(names.size() == format_table().size());
    std::string joined;
    for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
    BOOST_TEST(format_names() == joined);
    // an unknown name: InputError naming every valid choice
    try {
        parse_format("csx");
        BOOST_TEST(false, "parse_format(\"csx\") did not throw");
    } catch (const InputError& e) {
        for (const auto& n : names)
            BOOST_TEST(std::string(e.what()).find(n) != std::string::npos, n);
    }
}

namespace {

// The operator of `a` with B's values put in by update_values (or update_values_device)
// against the operator built from B, y = A x on the executor under test.
template <class MT, class VT>
void check_update_values(const std::string& what, const Coo<double>& a, Format f,
                         const FormatOptions& opt, bool device_values)
{
    const auto exec = test::test_executor();
    // B: A's pattern, other values; A's explicit zeros get values and some entries become 0
    Coo<double> b = a;
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    for (offset_t k = 0; k < b.nnz(); ++k) b.val[k] = (k % 11 == 3) ? 0.0 : u(gen);
    auto op = make_matrix_operator<MT, VT>(a, f, exec, opt);
    BOOST_TEST((op->format() == f), what);
    if (device_values) {
        const Array<double> dv = b.val.to(exec);
        op->update_values_device(dv.data(), b.nnz());
    } else {
        op->update_values(b.val.host().data(), b.nnz());
    }
    const auto ref = make_matrix_operator<MT, VT>(b, f, exec, opt);
    std::vector<VT> x(std::size_t(a.cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = VT(1) + VT(i % 7) / VT(7);
    const Array<VT> xd = Array<VT>(x).to(exec);
    Array<VT> y1(exec, std::size_t(a.rows)), y2(exec, std::size_t(a.rows));
    op->apply(xd.data(), y1.data());
    ref->apply(xd.data(), y2.data());
    const double tol = std::is_same_v<MT, double> ? 1e-13 : 1e-5;
    BOOST_TEST(test::rel_max_diff(y1.to_vector(), y2.to_vector()) <= tol,
               what << ": " << test::rel_max_diff(y1.to_vector(), y2.to_vector()));
    // a second refresh (through the kept slot map) back to A's values
    op->update_values(a.val.host().data(), a.nnz());
    const auto ra = make_matrix_operator<MT, VT>(a, f, exec, opt);
    op->apply(xd.data(), y1.data());
    ra->apply(xd.data(), y2.data());
    BOOST_TEST(test::rel_max_diff(y1.to_vector(), y2.to_vector()) <= tol, what << " (back)");
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_registered_format_refreshes_its_values_in_place)
{
    // MatrixOperator::update_values: new values for the same pattern, through the slot map
    // the registry's build makes, in every format, precision and on the executor under test
    for_each_format([&](auto traits) {
        using Tr = decltype(traits);
        const std::string name = Tr::info.name;
        for (const auto& m : hepta_matrices()) {
            FormatOptions opt;
            opt.block_size = m.nc;
            const std::string what = name + " refresh " + m.name;
            check_update_values<double, double>(what, m.a, Tr::info.id, opt, false);
            check_update_values<float, double>(what + " mixed", m.a, Tr::info.id, opt, true);
            check_update_values<float, float>(what + " single", m.a, Tr::info.id, opt, false);
        }
        if constexpr (!Tr::info.block_size) {
            for (const auto& m : random_matrices()) {
                check_update_values<double, double>(name + " refresh " + m.name, m.a, Tr::info.id,
                                                    FormatOptions{}, true);
            }
        }
    });
    // wrong count; a stored transpose keeps the old values, so it refuses
    const auto exec = test::test_executor();
    const Coo<double>& a = hepta_matrices().front().a;
    auto op = make_matrix_operator<double, double>(a, Format::csr, exec);
    BOOST_CHECK_THROW(op->update_values(a.val.host().data(), a.nnz() - 1), DimensionMismatch);
    FormatOptions stored;
    stored.transpose = TransposeMode::stored;
    auto st = make_matrix_operator<double, double>(a, Format::ell, exec, stored);
    BOOST_CHECK_THROW(st->update_values(a.val.host().data(), a.nnz()), NotSupported);
}

BOOST_AUTO_TEST_CASE(every_registered_format_builds_from_a_borrowed_csr_view)
{
    // make_matrix_operator(CsrView): the caller's 32-bit CSR arrays, no copy of them by the
    // view; the same operator as from canonical COO, in every format and on the executor
    // under test; to_coo(view) gives the canonical COO back
    const auto exec = test::test_executor();
    for (const auto& m : hepta_matrices()) {
        const Csr<double> c = csr_from_coo(m.a);
        std::vector<index_t> ptr(c.row_ptr.size());
        for (std::size_t r = 0; r < ptr.size(); ++r) ptr[r] = index_t(c.row_ptr[r]);
        const CsrView view{c.rows, ptr.data(), c.col_idx.host().data(), c.values.host().data(),
                           c.cols};
        std::string why;
        BOOST_TEST(test::same_coo(m.a, to_coo(view), why), m.name << ": " << why);
        for_each_format([&](auto traits) {
            using Tr = decltype(traits);
            FormatOptions opt;
            opt.block_size = m.nc;
            auto from_view = make_matrix_operator<double, double>(view, Tr::info.id, exec, opt);
            auto from_coo = make_matrix_operator<double, double>(m.a, Tr::info.id, exec, opt);
            BOOST_TEST((from_view->format() == Tr::info.id));
            BOOST_TEST(from_view->rows() == m.a.rows);
            BOOST_TEST(from_view->cols() == m.a.cols);
            std::vector<double> x(std::size_t(m.a.cols));
            for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + double(i % 5) / 5.0;
            const Array<double> xd = Array<double>(x).to(exec);
            Array<double> y1(exec, std::size_t(m.a.rows)), y2(exec, std::size_t(m.a.rows));
            from_view->apply(xd.data(), y1.data());
            from_coo->apply(xd.data(), y2.data());
            BOOST_TEST(test::rel_max_diff(y1.to_vector(), y2.to_vector()) <= 1e-14,
                       std::string(Tr::info.name) << " " << m.name);
        });
    }
}
