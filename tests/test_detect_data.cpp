// Structure detection on the real reservoir matrices of ../shared/data (see its README for
// the grids the collections document). The program is registered with DATA: without the
// folder it exits 77 and ctest reports it skipped, never passed.
#include <boost/test/unit_test.hpp>

#include <array>
#include <string>

#include "formats/detect/detect.hpp"
#include "generators/matrix_market.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

Structure detect_file(const std::string& name)
{
    const auto a = read_matrix_market<double>(test::data_file(name));
    const auto st = detect_structure(a);
    BOOST_TEST_MESSAGE(name << ": " << to_json(st));
    return st;
}

void check_grid(const std::string& name, index_t nc, int dims, std::array<index_t, 3> grid)
{
    const auto st = detect_file(name);
    BOOST_TEST_CONTEXT(name << ": " << to_json(st))
    {
        BOOST_TEST(st.block_size == nc);
        BOOST_TEST(st.hepta);
        BOOST_TEST(st.grid_dims == dims);
        BOOST_TEST(st.grid[0] == grid[0]);
        BOOST_TEST(st.grid[1] == grid[1]);
        BOOST_TEST(st.grid[2] == grid[2]);
        BOOST_TEST(st.block_offsets.size() == std::size_t(2 * dims + 1));
        // simulators produce real grids: nothing couples across the box faces
        BOOST_TEST(st.grid_variant);
        BOOST_TEST(st.face_couplings == 0);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(sherman4_is_a_16x23x3_grid)
{
    check_grid("sherman4.mtx", 1, 3, {16, 23, 3});
}

BOOST_AUTO_TEST_CASE(orsreg_1_is_a_21x21x5_grid)
{
    check_grid("orsreg_1.mtx", 1, 3, {21, 21, 5});
    // a full grid: BDIA pads only the missing face couplings (14509 in-bounds slots)
    const auto st = detect_file("orsreg_1.mtx");
    BOOST_TEST(st.bdia_slots == 14509);
    BOOST_TEST(st.hepta_reason.find("all couplings of the stencil are stored") !=
               std::string::npos);
    BOOST_TEST(std::string(to_string(st.format)) == "bdiagh");
}

BOOST_AUTO_TEST_CASE(saylr4_is_a_33x6x18_grid)
{
    check_grid("saylr4.mtx", 1, 3, {33, 6, 18});
}

BOOST_AUTO_TEST_CASE(sherman1_is_a_10x10x10_grid)
{
    // stored as the lower triangle of a symmetric matrix; the reader expands it
    check_grid("sherman1.mtx", 1, 3, {10, 10, 10});
}

BOOST_AUTO_TEST_CASE(saylr1_is_a_14x17_2d_grid)
{
    check_grid("saylr1.mtx", 1, 2, {14, 17, 1});
}

BOOST_AUTO_TEST_CASE(opm_matr33_is_a_line_of_3_cells_with_3x3_blocks)
{
    // 14 of its 63 entries are explicit zeros: they still fill the 3 x 3 blocks.
    // A line of cells is reported as J = 3, H = I = 1 (grid_dims 1).
    check_grid("opm_matr33.mtx", 3, 1, {3, 1, 1});
    const auto st = detect_file("opm_matr33.mtx");
    BOOST_TEST((st.block_offsets == std::vector<index_t>{-1, 0, 1}));
    BOOST_TEST(st.bdia_padding == 0.0);
    BOOST_TEST(std::string(to_string(st.format)) == "bdiagh");
}

BOOST_AUTO_TEST_CASE(orsirr_1_is_not_hepta_and_says_why)
{
    const auto st = detect_file("orsirr_1.mtx");
    BOOST_TEST(!st.hepta);
    BOOST_TEST(st.grid_dims == 0);
    BOOST_TEST(st.block_offsets.size() == 407u);
    BOOST_TEST(st.hepta_reason.find("407 distinct block offsets, more than the 7 of a 7-point "
                                    "stencil") != std::string::npos,
               st.hepta_reason);
    BOOST_TEST(std::string(to_string(st.format)) != "bdiagh");
    BOOST_TEST(st.format_reason.find("not BDIA-GH") != std::string::npos, st.format_reason);
}

BOOST_AUTO_TEST_CASE(rectangular_and_dense_test_matrices_are_not_hepta)
{
    for (const char* name : {"illc1033.mtx", "well1033.mtx", "tomography_spex.mtx"}) {
        const auto st = detect_file(name);
        BOOST_TEST(!st.hepta, name << ": " << st.hepta_reason);
        BOOST_TEST(std::string(to_string(st.format)) != "bdiagh", name << ": " << st.format_reason);
    }
}
