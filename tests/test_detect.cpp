// Structure detection on generated matrices: GH grids of both variants (3-D, 2-D, 1-D,
// Nc = 1..4), matrices that lack some couplings, random and special matrices, the format
// choice and its reason, and the JSON form.
#include <boost/test/unit_test.hpp>

#include <array>
#include <chrono>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "formats/detect/detect.hpp"
#include "generators/hepta.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

HeptaSpec spec(index_t J, index_t H, index_t I, index_t nc, bool banded)
{
    HeptaSpec s;
    s.J = J;
    s.H = H;
    s.I = I;
    s.Nc = nc;
    s.banded = banded;
    s.model = HeptaModel::reservoir;
    s.seed = 3;
    return s;
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

Coo<double> make_coo(index_t rows, index_t cols, std::vector<index_t> r, std::vector<index_t> c)
{
    Coo<double> a;
    a.rows = rows;
    a.cols = cols;
    a.val = std::vector<double>(r.size(), 1.0);
    a.row = std::move(r);
    a.col = std::move(c);
    return a;
}

/// Keep the entries for which keep(row, col) holds.
template <class F>
Coo<double> filter(const Coo<double>& a, F keep)
{
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (offset_t k = 0; k < a.nnz(); ++k)
        if (keep(a.row[k], a.col[k])) {
            r.push_back(a.row[k]);
            c.push_back(a.col[k]);
            v.push_back(a.val[k]);
        }
    Coo<double> out;
    out.rows = a.rows;
    out.cols = a.cols;
    out.row = std::move(r);
    out.col = std::move(c);
    out.val = std::move(v);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(finds_block_size_offsets_and_grid_of_generated_3d_matrices)
{
    for (bool banded : {true, false})
        for (index_t nc : {1, 2, 3, 4}) {
            const auto s = spec(5, 4, 3, nc, banded);
            const auto a = generate_hepta_coo<double>(s);
            const auto st = detect_structure(a);
            BOOST_TEST_CONTEXT(describe(s) << ": " << to_json(st))
            {
                BOOST_TEST(st.block_size == nc);
                BOOST_TEST(st.block_offsets == hepta_block_offsets(s),
                           boost::test_tools::per_element());
                BOOST_TEST(st.hepta);
                BOOST_TEST(st.grid_dims == 3);
                BOOST_TEST(st.grid[0] == 5);
                BOOST_TEST(st.grid[1] == 4);
                BOOST_TEST(st.grid[2] == 3);
                BOOST_TEST(st.grid_variant == !banded);
                BOOST_TEST(std::string(to_string(st.format)) == "bdiagh");
                BOOST_TEST(st.nnz == hepta_nnz(s));
                // in-bounds slots: a banded GH matrix fills them all
                const offset_t G = 60, slots = offset_t(nc) * nc * (7 * G - 2 - 2 * 5 - 2 * 20);
                BOOST_TEST(st.bdia_slots == slots);
                BOOST_TEST(st.bdia_padding == double(slots - st.nnz) / st.nnz,
                           boost::test_tools::tolerance(1e-12));
                if (banded) {
                    BOOST_TEST(st.bdia_padding == 0.0);
                    // every wrap coupling is stored: x: 2(HI - 1), y: 2J(I - 1)
                    BOOST_TEST(st.face_couplings == 2 * (4 * 3 - 1) + 2 * 5 * (3 - 1));
                    BOOST_TEST(contains(st.hepta_reason, "banded variant"));
                } else {
                    BOOST_TEST(st.face_couplings == 0);
                    BOOST_TEST(contains(st.hepta_reason, "grid variant"));
                }
                BOOST_TEST(contains(st.hepta_reason, "5 x 4 x 3 grid"));
                BOOST_TEST(contains(st.hepta_reason, "all couplings of the stencil are stored"));
            }
        }
}

BOOST_AUTO_TEST_CASE(finds_2d_grids_of_both_variants)
{
    for (bool banded : {true, false})
        for (index_t nc : {1, 2, 3}) {
            const auto s = spec(7, 6, 1, nc, banded);
            const auto st = detect_structure(generate_hepta_coo<double>(s));
            BOOST_TEST_CONTEXT(describe(s) << ": " << to_json(st))
            {
                BOOST_TEST(st.block_size == nc);
                BOOST_TEST(st.hepta);
                BOOST_TEST(st.grid_dims == 2);
                BOOST_TEST(st.grid[0] == 7);
                BOOST_TEST(st.grid[1] == 6);
                BOOST_TEST(st.grid[2] == 1);
                BOOST_TEST(st.grid_variant == !banded);
                BOOST_TEST(contains(st.hepta_reason, "5-point"));
                BOOST_TEST(contains(to_json(st), "\"grid\": [7, 6]"));
            }
        }
}

BOOST_AUTO_TEST_CASE(a_line_of_cells_is_a_1d_grid_j_by_1_by_1)
{
    const auto st = detect_structure(generate_hepta_coo<double>(spec(9, 1, 1, 2, false)));
    BOOST_TEST(st.hepta);
    BOOST_TEST(st.grid_dims == 1);
    BOOST_TEST(st.grid[0] == 9);
    BOOST_TEST(st.grid[1] == 1);
    BOOST_TEST(st.grid[2] == 1);
    BOOST_TEST(st.block_size == 2);
    BOOST_TEST(contains(to_json(st), "\"grid\": [9]"));
}

BOOST_AUTO_TEST_CASE(missing_couplings_keep_the_seven_offsets_and_the_grid)
{
    // zero transmissibility across a "shale barrier" between z-planes 1 and 2 and across
    // some x-faces: the entries are absent, the stencil is still 7-point.
    const auto s = spec(6, 5, 4, 1, false);
    const index_t jh = 30;
    const auto full = generate_hepta_coo<double>(s);
    const auto a = filter(full, [&](index_t r, index_t c) {
        const index_t lo = std::min(r, c), hi = std::max(r, c);
        if (hi - lo == jh && lo / jh == 1) return false;  // barrier between planes 1 and 2
        if (hi - lo == 1 && lo % 6 == 2 && lo % 5 == 0) return false;  // scattered x-faces
        return true;
    });
    BOOST_TEST(a.nnz() < full.nnz());
    const auto st = detect_structure(a);
    BOOST_TEST(st.hepta);
    BOOST_TEST(st.block_offsets.size() == 7u);
    BOOST_TEST(st.grid[0] == 6);
    BOOST_TEST(st.grid[1] == 5);
    BOOST_TEST(st.grid[2] == 4);
    BOOST_TEST(st.grid_variant);
    BOOST_TEST(st.bdia_padding > detect_structure(full).bdia_padding);
    BOOST_TEST(contains(st.hepta_reason, std::to_string(full.nnz() - a.nnz()) + " of its " +
                                             std::to_string(full.nnz()) + " entries are missing"));
}

BOOST_AUTO_TEST_CASE(explicit_zeros_count_as_stored_and_a_missing_entry_breaks_the_block)
{
    auto a = generate_hepta_coo<double>(spec(4, 3, 2, 2, true));
    for (offset_t k = 0; k < a.nnz(); k += 3) a.val[k] = 0.0;  // values are never looked at
    BOOST_TEST(detect_structure(a).block_size == 2);
    // drop one off-diagonal entry of one block: that block is no longer full
    const index_t r0 = 10;
    bool dropped = false;
    const auto b = filter(a, [&](index_t r, index_t c) {
        if (!dropped && r == r0 && c / 2 != r / 2) {
            dropped = true;
            return false;
        }
        return true;
    });
    const auto st = detect_structure(b);
    BOOST_TEST(st.block_size == 1);
    // with Nc = 1 the block offsets are the element offsets {+-JH*2 + s, ...}: not 7; and as
    // sparse 2 x 2 blocks it is the banded variant (couplings across the box's faces), which
    // sparse blocks do not take (a band cut into blocks would look like one)
    BOOST_TEST(st.block_offsets.size() > 7u);
    BOOST_TEST(!st.sparse_blocks);
    // the same on the grid variant: found as sparse 2 x 2 blocks on the 4 x 3 x 2 grid
    auto g = generate_hepta_coo<double>(spec(4, 3, 2, 2, false));
    dropped = false;
    const auto gs = detect_structure(filter(g, [&](index_t r, index_t c) {
        if (!dropped && r == r0 && c / 2 != r / 2) {
            dropped = true;
            return false;
        }
        return true;
    }));
    BOOST_TEST(gs.block_size == 2);
    BOOST_TEST(gs.sparse_blocks);
    BOOST_TEST(gs.hepta);
    BOOST_TEST((gs.grid == std::array<index_t, 3>{4, 3, 2}));
    BOOST_TEST(gs.block_fill < 1.0);
}

BOOST_AUTO_TEST_CASE(sparse_blocks_a_16x23x3_grid_with_3_unknowns_per_cell)
{
    // a coupled system whose off-diagonal blocks couple each unknown to itself only (diagonal
    // 3 x 3 blocks between cells, full blocks within a cell): no full-block Nc but 1, where
    // the element offsets are far more than 7; with sparse blocks it is the 16 x 23 x 3 grid
    const auto a = filter(generate_hepta_coo<double>(spec(16, 23, 3, 3, false)),
                          [](index_t r, index_t c) { return r / 3 == c / 3 || r % 3 == c % 3; });
    const auto st = detect_structure(a);
    BOOST_TEST_MESSAGE(to_text(st));
    BOOST_TEST(st.hepta, st.hepta_reason);
    BOOST_TEST(st.block_size == 3);
    BOOST_TEST(st.sparse_blocks);
    BOOST_TEST(st.grid_dims == 3);
    BOOST_TEST((st.grid == std::array<index_t, 3>{16, 23, 3}));
    BOOST_TEST(st.block_offsets.size() == 7u);
    BOOST_TEST(st.grid_variant);
    // 9 slots per cell block, 3 per neighbour block: fill = nnz / slots < 1
    BOOST_TEST(st.block_fill > 0.3);
    BOOST_TEST(st.block_fill < 0.6);
    BOOST_TEST(contains(st.hepta_reason, "blocks of 3 (sparse: "));
    BOOST_TEST(contains(st.hepta_reason, "with full blocks (Nc = 1) it is not"));
    BOOST_TEST(contains(to_json(st), "\"sparse_blocks\": true"));
    BOOST_TEST(std::string(to_string(st.format)) != "bsr");  // bsr is for full blocks
    // full blocks only: the old answer, 1 x 1 blocks and no grid
    DetectOptions full_only;
    full_only.max_sparse_block_size = 1;
    const auto st1 = detect_structure(a, full_only);
    BOOST_TEST(!st1.hepta);
    BOOST_TEST(st1.block_size == 1);
}

BOOST_AUTO_TEST_CASE(random_matrix_is_not_hepta_and_says_why)
{
    const auto a = test::random_coo<double>(400, 400, 3, 12, 17);
    const auto st = detect_structure(a);
    BOOST_TEST(!st.hepta);
    BOOST_TEST(st.grid_dims == 0);
    BOOST_TEST(st.block_size == 1);
    BOOST_TEST(std::string(to_string(st.format)) != "bdiagh");
    BOOST_TEST(contains(st.hepta_reason, "distinct block offsets, more than the 7"));
    BOOST_TEST(contains(st.hepta_reason, "BDIA would pad"));
    BOOST_TEST(contains(st.format_reason, "not BDIA-GH"));
    BOOST_TEST(contains(to_json(st), "\"grid\": null"));
    BOOST_TEST_MESSAGE(to_text(st));
}

BOOST_AUTO_TEST_CASE(asymmetric_and_shifted_stencils_are_not_hepta)
{
    // upper bidiagonal: offsets {0, 1}
    std::vector<index_t> r, c;
    for (index_t i = 0; i < 10; ++i) {
        r.push_back(i);
        c.push_back(i);
        if (i + 1 < 10) {
            r.push_back(i);
            c.push_back(i + 1);
        }
    }
    const auto st = detect_structure(make_coo(10, 10, r, c));
    BOOST_TEST(!st.hepta);
    BOOST_TEST(contains(st.hepta_reason, "not symmetric"));
    BOOST_TEST(std::string(to_string(st.format)) ==
               "bdiagh");  // still two diagonals without padding: BDIA is fine
    // offsets {0, +-2, +-6}: smallest positive offset is not 1
    r.clear();
    c.clear();
    for (index_t i = 0; i < 24; ++i)
        for (index_t d : {-6, -2, 0, 2, 6})
            if (i + d >= 0 && i + d < 24) {
                r.push_back(i);
                c.push_back(i + d);
            }
    const auto st2 = detect_structure(make_coo(24, 24, r, c));
    BOOST_TEST(!st2.hepta);
    BOOST_TEST(contains(st2.hepta_reason, "not 1"));
    // offsets {0, +-1, +-4, +-10}: 10 is not a multiple of J = 4
    r.clear();
    c.clear();
    for (index_t i = 0; i < 40; ++i)
        for (index_t d : {-10, -4, -1, 0, 1, 4, 10})
            if (i + d >= 0 && i + d < 40) {
                r.push_back(i);
                c.push_back(i + d);
            }
    const auto st3 = detect_structure(make_coo(40, 40, r, c));
    BOOST_TEST(!st3.hepta);
    BOOST_TEST(contains(st3.hepta_reason, "not a multiple of J = 4"));
}

BOOST_AUTO_TEST_CASE(diagonal_rectangular_and_empty_matrices)
{
    std::vector<index_t> r, c;
    for (index_t i = 0; i < 8; ++i) {
        r.push_back(i);
        c.push_back(i);
    }
    const auto d = detect_structure(make_coo(8, 8, r, c));
    BOOST_TEST(d.block_size == 1);
    BOOST_TEST(!d.hepta);
    BOOST_TEST(contains(d.hepta_reason, "only the diagonal blocks"));
    BOOST_TEST(std::string(to_string(d.format)) == "bdiagh");
    const auto rect = detect_structure(make_coo(8, 12, r, c));
    BOOST_TEST(!rect.hepta);
    BOOST_TEST(contains(rect.hepta_reason, "not square"));
    const auto e = detect_structure(make_coo(5, 5, {}, {}));
    BOOST_TEST(e.nnz == 0);
    BOOST_TEST(!e.hepta);
    BOOST_TEST(std::string(to_string(e.format)) == "csr");
    BOOST_TEST(e.row_stats.empty_rows == 5);
    // a dense 12 x 12 matrix is one 12 x 12 block (the largest b that divides 12)
    r.clear();
    c.clear();
    for (index_t i = 0; i < 12; ++i)
        for (index_t j = 0; j < 12; ++j) {
            r.push_back(i);
            c.push_back(j);
        }
    BOOST_TEST(detect_structure(make_coo(12, 12, r, c)).block_size == 12);
}

BOOST_AUTO_TEST_CASE(row_statistics)
{
    // row lengths 1, 3, 0, 4: mean 2, average deviation (1+1+2+2)/4 / 2 = 75 %
    const auto a = make_coo(4, 6, {0, 1, 1, 1, 3, 3, 3, 3}, {2, 0, 1, 5, 0, 1, 2, 3});
    const auto st = detect_structure(a);
    BOOST_TEST(st.row_stats.min == 0);
    BOOST_TEST(st.row_stats.max == 4);
    BOOST_TEST(st.row_stats.mean == 2.0);
    BOOST_TEST(st.row_stats.avg_deviation_pct == 75.0, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(st.row_stats.empty_rows == 1);
}

BOOST_AUTO_TEST_CASE(format_choice_falls_back_by_row_shape)
{
    // uniform rows, many offsets: ELL
    const auto ell = detect_structure(test::random_coo<double>(500, 500, 9, 9, 1));
    BOOST_TEST(std::string(to_string(ell.format)) == "ell");
    BOOST_TEST(contains(ell.format_reason, "uniform"));
    // a few very long rows: HYB when at least 4096 rows share an ELL width, else CSR (HYB
    // would be COO alone there)
    auto long_rows = [](index_t n) {
        auto h = test::random_coo<double>(n, n, 4, 6, 2);
        std::vector<index_t> r, c;
        for (offset_t k = 0; k < h.nnz(); ++k)
            if (h.row[k] >= 5) {
                r.push_back(h.row[k]);
                c.push_back(h.col[k]);
            }
        for (index_t i = 0; i < 5; ++i)
            for (index_t j = 0; j < 200; ++j) {
                r.push_back(i);
                c.push_back(j * 2);
            }
        Coo<double> x;
        x.rows = x.cols = n;
        x.val = std::vector<double>(r.size(), 1.0);
        x.row = std::move(r);
        x.col = std::move(c);
        canonicalize(x);
        return x;
    };
    const auto hyb = detect_structure(long_rows(6000));
    BOOST_TEST(std::string(to_string(hyb.format)) == "hyb");
    BOOST_TEST(contains(hyb.format_reason, "very unequal"));
    const auto small = detect_structure(long_rows(500));
    BOOST_TEST(std::string(to_string(small.format)) == "csr");
    BOOST_TEST(contains(small.format_reason, "HYB's ELL part would be empty"));
    // moderately unequal rows: CSR
    const auto csr = detect_structure(test::random_coo<double>(500, 500, 4, 9, 3));
    BOOST_TEST(std::string(to_string(csr.format)) == "csr");
    // dense 2 x 2 blocks scattered at random: BSR
    const auto pts = test::random_coo<double>(100, 100, 2, 6, 4);
    std::vector<index_t> r, c;
    for (offset_t k = 0; k < pts.nnz(); ++k)
        for (index_t a = 0; a < 2; ++a)
            for (index_t t = 0; t < 2; ++t) {
                r.push_back(pts.row[k] * 2 + a);
                c.push_back(pts.col[k] * 2 + t);
            }
    Coo<double> blocks;
    blocks.rows = blocks.cols = 200;
    blocks.val = std::vector<double>(r.size(), 1.0);
    blocks.row = std::move(r);
    blocks.col = std::move(c);
    canonicalize(blocks);
    const auto bsr = detect_structure(blocks);
    BOOST_TEST(bsr.block_size == 2);
    BOOST_TEST(std::string(to_string(bsr.format)) == "bsr");
}

BOOST_AUTO_TEST_CASE(high_padding_hepta_is_reported_but_not_stored_as_bdia)
{
    // a grid with most couplings missing: still a 7-point grid, but BDIA pads > 30 %
    const auto s = spec(8, 7, 6, 1, false);
    const auto a = filter(generate_hepta_coo<double>(s),
                          [](index_t r, index_t c) { return r == c || (r + c) % 3 == 0; });
    const auto st = detect_structure(a);
    BOOST_TEST(st.hepta);
    BOOST_TEST(st.bdia_padding > 0.3);
    BOOST_TEST(std::string(to_string(st.format)) != "bdiagh");
    BOOST_TEST(contains(st.format_reason, "7-point stencil on a 8 x 7 x 6 grid"));
    BOOST_TEST(contains(st.format_reason, "not BDIA-GH: it would pad"));
}

BOOST_AUTO_TEST_CASE(non_canonical_input_is_an_input_error)
{
    const auto a = make_coo(3, 3, {1, 0}, {0, 0});
    BOOST_CHECK_EXCEPTION(detect_structure(a), InputError,
                          [](const InputError& e) { return contains(e.what(), "canonical"); });
    const auto dup = make_coo(3, 3, {0, 0}, {1, 1});
    BOOST_CHECK_THROW(detect_structure(dup), InputError);
}

BOOST_AUTO_TEST_CASE(json_has_the_promised_keys)
{
    const auto st = detect_structure(generate_hepta_coo<double>(spec(4, 3, 2, 2, true)));
    const auto js = to_json(st);
    for (const char* key : {"\"rows\": 48", "\"cols\": 48", "\"nnz\": ", "\"block_size\": 2",
                            "\"block_offsets\": [-12, -4, -1, 0, 1, 4, 12]", "\"grid\": [4, 3, 2]",
                            "\"format\": \"bdiagh\"", "\"bdia_padding\": 0", "\"hepta\": true",
                            "\"hepta_reason\": ", "\"grid_variant\": false", "\"row_stats\": {",
                            "\"avg_deviation_pct\": ", "\"format_reason\": "})
        BOOST_TEST(contains(js, key), key << " in " << js);
    BOOST_TEST(js.front() == '{');
    BOOST_TEST(js.back() == '}');
}

BOOST_AUTO_TEST_CASE(same_answer_with_any_thread_count_and_fast_on_a_thesis_size)
{
    HeptaSpec s = spec(16, 16, 32, 8, true);  // N = 65,536, nnz = 3,635,072
    s.model = HeptaModel::uniform;
    const auto a = generate_hepta_coo<double>(s);
#ifdef _OPENMP
    omp_set_num_threads(1);
    const auto one = to_json(detect_structure(a));
    omp_set_num_threads(omp_get_num_procs());
#endif
    const auto t0 = std::chrono::steady_clock::now();
    const auto st = detect_structure(a);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST_MESSAGE("detect_structure on " << a.nnz() << " entries: " << sec << " s");
#ifdef _OPENMP
    BOOST_TEST(one == to_json(st));
#endif
    BOOST_TEST(st.block_size == 8);
    BOOST_TEST(st.grid[0] == 16);
    BOOST_TEST(st.grid[1] == 16);
    BOOST_TEST(st.grid[2] == 32);
    BOOST_TEST(st.bdia_padding == 0.0);
    BOOST_TEST(!st.grid_variant);
}

namespace {
// The CSR arrays of canonical COO, built here (32-bit row pointers, as PETSc's MatGetRowIJ).
struct CsrArrays {
    std::vector<index_t> ptr, col;
    std::vector<double> val;
    CsrView view(index_t rows, index_t cols) const
    {
        CsrView v;
        v.rows = rows;
        v.cols = cols;
        v.row_ptr = ptr.data();
        v.col_idx = col.data();
        v.values = val.data();
        return v;
    }
};
CsrArrays csr_arrays(const Coo<double>& a)
{
    CsrArrays c;
    c.ptr.assign(std::size_t(a.rows) + 1, 0);
    for (offset_t k = 0; k < a.nnz(); ++k) ++c.ptr[std::size_t(a.row[k]) + 1];
    for (index_t r = 0; r < a.rows; ++r) c.ptr[std::size_t(r) + 1] += c.ptr[std::size_t(r)];
    c.col = a.col.host();
    c.val = a.val.host();
    return c;
}
}  // namespace

// detect_structure on a borrowed CSR view (the plugin's path: PETSc's arrays, no COO copy)
// gives the COO answer, field for field, on grids of every kind, sparse blocks, a random and
// a rectangular matrix with empty rows; a view whose rows are not sorted or hold a column
// outside the matrix is refused, naming the row.
BOOST_AUTO_TEST_CASE(a_csr_view_gives_the_answer_of_its_coo)
{
    std::vector<Coo<double>> cases;
    cases.push_back(generate_hepta_coo<double>(spec(6, 5, 4, 1, false)));
    cases.push_back(generate_hepta_coo<double>(spec(6, 5, 4, 3, false)));
    cases.push_back(generate_hepta_coo<double>(spec(7, 3, 2, 2, true)));
    cases.push_back(generate_hepta_coo<double>(spec(9, 4, 1, 1, false)));
    {
        // sparse 3 x 3 blocks: drop the couplings between different unknowns off the diagonal
        const auto full = generate_hepta_coo<double>(spec(16, 23, 3, 3, false));
        cases.push_back(
            filter(full, [](index_t r, index_t c) { return r / 3 == c / 3 || r % 3 == c % 3; }));
    }
    cases.push_back(make_coo(5, 8, {0, 0, 2, 4, 4}, {1, 7, 3, 0, 6}));  // rectangular, empty rows
    {
        std::vector<index_t> r, c;
        for (index_t i = 0; i < 200; ++i)
            for (index_t j = 0; j < 200; ++j)
                if ((i * 7919 + j * 104729) % 23 == 0 || i == j) {
                    r.push_back(i);
                    c.push_back(j);
                }
        cases.push_back(make_coo(200, 200, r, c));
    }
    for (const auto& a : cases) {
        const CsrArrays c = csr_arrays(a);
        const std::string coo = to_json(detect_structure(a));
        const std::string view = to_json(detect_structure(c.view(a.rows, a.cols)));
        BOOST_TEST(coo == view);
    }
    // bad views
    const auto a = make_coo(3, 3, {0, 1, 1, 2}, {0, 0, 2, 2});
    CsrArrays c = csr_arrays(a);
    c.col = {0, 2, 0, 2};  // row 1 descends
    BOOST_CHECK_EXCEPTION(detect_structure(c.view(3, 3)), InputError, [](const InputError& e) {
        return contains(e.what(), "row 1 (0-based)");
    });
    c.col = {0, 0, 2, 3};  // row 2 holds column 3 of a 3-column matrix
    BOOST_CHECK_EXCEPTION(detect_structure(c.view(3, 3)), InputError, [](const InputError& e) {
        return contains(e.what(), "row 2 (0-based)");
    });
    c.col = {0, 0, 2, 2};
    c.ptr[0] = 1;
    BOOST_CHECK_THROW(detect_structure(c.view(3, 3)), InputError);
}
