// Every format on the real matrices of ../shared/data (reservoir, OPM, least-squares and
// tomography matrices nobody on this project wrote): exact round trips, A x and A^T x against
// the CSR CPU kernel and Eigen on the executor under test, the Operator factory, and the
// BDIA-GH structure of the hepta matrices.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "formats/matrix.hpp"
#include "generators/matrix_market.hpp"
#include "tests/test_formats_common.hpp"

using namespace heptane;
using test::check_format;

namespace {

Coo<double> load(const std::string& name)
{
    return read_matrix_market<double>(test::data_file(name + ".mtx"));
}

template <class Build>
void check_round_trip(const std::string& what, const Coo<double>& a, Build&& build)
{
    std::string why;
    BOOST_TEST(test::same_coo(a, to_coo(build(a)), why), what << ": " << why);
    const Coo<float> f = convert_values<float>(a);
    BOOST_TEST(test::same_coo(f, to_coo(build(f)), why), what << " (float): " << why);
}

// Round trip, A x and A^T x of every format (BSR and BDIA with each block size in `blocks`
// that divides the size), and the factory with default options. `stencil`: a hepta-type
// matrix, whose BDIA has few block diagonals and must run everywhere; for the others a device
// back end may refuse BDIA's hundreds of block diagonals (NotSupported, reported).
void check_every_format(const std::string& name, std::vector<index_t> blocks, bool stencil)
{
    const Coo<double> a = load(name);
    BOOST_TEST_MESSAGE(name << ": " << a.rows << " x " << a.cols << ", " << a.nnz() << " entries");
    blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                                [&](index_t b) { return a.rows % b != 0 || a.cols % b != 0; }),
                 blocks.end());
    for (Op op : {Op::normal, Op::transpose}) {
        check_format(
            "ELL " + name, a, [](const auto& m) { return ell_from_coo(m); }, op);
        check_format(
            "HYB " + name, a, [](const auto& m) { return hyb_from_coo(m); }, op);
        check_format(
            "HYB width 3 " + name, a, [](const auto& m) { return hyb_from_coo(m, 3); }, op);
        check_format(
            "DIA " + name, a, [](const auto& m) { return dia_from_coo(m, m.rows + m.cols); }, op);
        for (index_t b : blocks) {
            const std::string tag = " b=" + std::to_string(b) + " " + name;
            check_format(
                "BSR" + tag, a, [b](const auto& m) { return bsr_from_coo(m, b); }, op);
            check_format(
                "BDIA" + tag, a, [b](const auto& m) { return bdia_from_coo(m, b); }, op, !stencil);
        }
    }
    check_round_trip("ELL " + name, a, [](const auto& m) { return ell_from_coo(m); });
    check_round_trip("HYB " + name, a, [](const auto& m) { return hyb_from_coo(m, 3); });
    check_round_trip("DIA " + name, a,
                     [](const auto& m) { return dia_from_coo(m, m.rows + m.cols); });
    for (index_t b : blocks) {
        check_round_trip("BSR b=" + std::to_string(b) + " " + name, a,
                         [b](const auto& m) { return bsr_from_coo(m, b); });
        check_round_trip("BDIA b=" + std::to_string(b) + " " + name, a,
                         [b](const auto& m) { return bdia_from_coo(m, b); });
    }

    // the factory, default options (block size detected), scatter and stored transposes
    const auto exec = test::test_executor();
    const Csr<double> csr = csr_from_coo(a);
    const test::Reference<double, double> normal(a, Op::normal, 1), transposed(a, Op::transpose, 2);
    for (Format f : {Format::coo, Format::csr, Format::ell, Format::hyb, Format::dia, Format::bsr,
                     Format::bdia}) {
        if (f == Format::dia && a.rows + a.cols > 1024 + 1) {
            // DIA's default limit is 1024 diagonals; an irregular matrix may need more
            const auto d = dia_from_coo(a, a.rows + a.cols).num_diagonals();
            if (d > 1024) continue;
        }
        for (TransposeMode t : {TransposeMode::scatter, TransposeMode::stored}) {
            FormatOptions opt;
            opt.transpose = t;
            const auto op = make_matrix_operator<double, double>(a, f, exec, opt);
            const std::string what = name + " " + op->describe();
            auto apply = [&](double al, const double* x, double be, double* y) {
                op->apply(al, x, be, y);
            };
            if (!test::device_accepts<double>(what, a.cols, a.rows, f == Format::bdia && !stencil,
                                              apply))
                continue;
            test::check_run(what, normal, csr, 1.0, 0.0, 3, apply);
            test::check_run(what, transposed, csr, -0.5, 1.0, 4,
                            [&](double al, const double* x, double be, double* y) {
                                op->apply_transpose(al, x, be, y);
                            });
        }
    }
}

// The distinct BDIA block offsets (Nc = 1) must lie on the 7-point stencil of the grid.
void check_stencil_offsets(const std::string& name, index_t J, index_t H)
{
    const auto b = bdia_from_coo(load(name), 1);
    const std::set<index_t> stencil{-J * H, -J, -1, 0, 1, J, J * H};
    for (index_t d : b.block_offsets)
        BOOST_TEST(stencil.count(d) == 1, name << ": offset " << d << " is not in the J=" << J
                                               << " H=" << H << " stencil");
    BOOST_TEST(b.num_block_diagonals() <= 7);
}

}  // namespace

BOOST_AUTO_TEST_CASE(sherman4_every_format_matches_csr_and_eigen)
{
    check_every_format("sherman4", {1, 3}, true);
}
BOOST_AUTO_TEST_CASE(orsreg_1_every_format_matches_csr_and_eigen)
{
    check_every_format("orsreg_1", {1, 3}, true);
}
BOOST_AUTO_TEST_CASE(saylr4_every_format_matches_csr_and_eigen)
{
    check_every_format("saylr4", {1, 3}, true);
}
BOOST_AUTO_TEST_CASE(opm_matr33_every_format_matches_csr_and_eigen)
{
    check_every_format("opm_matr33", {1, 3}, true);
}
BOOST_AUTO_TEST_CASE(sherman1_every_format_matches_csr_and_eigen)
{
    check_every_format("sherman1", {1, 2}, true);
}
BOOST_AUTO_TEST_CASE(orsirr_1_every_format_matches_csr_and_eigen)
{
    check_every_format("orsirr_1", {1, 2}, false);
}
BOOST_AUTO_TEST_CASE(saylr1_every_format_matches_csr_and_eigen)
{
    check_every_format("saylr1", {1, 2}, true);
}
BOOST_AUTO_TEST_CASE(tomography_spex_every_format_matches_csr_and_eigen)
{
    check_every_format("tomography_spex", {1, 2}, false);
}
BOOST_AUTO_TEST_CASE(illc1033_rectangular_every_format_matches_csr_and_eigen)
{
    check_every_format("illc1033", {1}, false);
}
BOOST_AUTO_TEST_CASE(well1033_rectangular_every_format_matches_csr_and_eigen)
{
    check_every_format("well1033", {1}, false);
}

BOOST_AUTO_TEST_CASE(hepta_matrices_have_bdia_offsets_on_their_grid_stencil)
{
    check_stencil_offsets("sherman4", 16, 23);
    check_stencil_offsets("orsreg_1", 21, 21);
    check_stencil_offsets("saylr4", 33, 6);
    check_stencil_offsets("sherman1", 10, 10);
}

BOOST_AUTO_TEST_CASE(opm_matr33_is_detected_as_3x3_blocks_on_three_block_offsets)
{
    // 9 x 9, 63 stored entries (14 explicit zeros): 7 dense 3 x 3 blocks of 3 cells in a row
    const Coo<double> a = load("opm_matr33");
    BOOST_TEST(a.nnz() == 63);
    const auto op = make_matrix_operator<double, double>(a, Format::bdia, test::test_executor());
    BOOST_TEST(op->describe().find("Nc=3 D=3 ") != std::string::npos, op->describe());
    const auto b = bdia_from_coo(a, 3);
    BOOST_TEST(b.block_offsets == (std::vector<index_t>{-1, 0, 1}),
               boost::test_tools::per_element());
    std::string why;
    BOOST_TEST(test::same_coo(a, to_coo(b), why), why);  // explicit zeros survive
}
