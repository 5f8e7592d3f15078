// The Matrix Market reader on the real matrices of ../shared/data (README.md there): sizes and
// entry counts against the files' own headers, and entries checked by hand with grep.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "generators/matrix_file.hpp"
#include "generators/matrix_market.hpp"
#include "tests/test_common.hpp"

using namespace heptane;
namespace fs = std::filesystem;

namespace {

// Value at (i, j), 1-based, of a canonical matrix; `found` says whether it is stored.
template <class T>
T at(const Coo<T>& a, index_t i, index_t j, bool* found = nullptr)
{
    const auto& r = a.row.host();
    const auto& c = a.col.host();
    std::size_t lo = 0, hi = r.size();
    while (lo < hi) {  // first entry not before (i-1, j-1)
        const std::size_t mid = (lo + hi) / 2;
        if (r[mid] < i - 1 || (r[mid] == i - 1 && c[mid] < j - 1))
            lo = mid + 1;
        else
            hi = mid;
    }
    const bool ok = lo < r.size() && r[lo] == i - 1 && c[lo] == j - 1;
    if (found) *found = ok;
    return ok ? a.val[lo] : T(0);
}

// The size line of a file, read here independently of the reader: rows, cols, entries.
struct SizeLine {
    long long rows = -1, cols = -1, entries = -1;
    std::string banner;
};
SizeLine size_line(const std::string& path)
{
    std::ifstream in(path);
    SizeLine s;
    std::string line;
    std::getline(in, s.banner);
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '%') break;
    std::istringstream(line) >> s.rows >> s.cols >> s.entries;
    return s;
}

template <class T>
bool same(const Coo<T>& a, const Coo<T>& b)
{
    return a.rows == b.rows && a.cols == b.cols && a.row.host() == b.row.host() &&
           a.col.host() == b.col.host() && a.val.bytes() == b.val.bytes() &&
           (a.val.empty() || std::memcmp(a.val.data(), b.val.data(), a.val.bytes()) == 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(sherman1_symmetric_is_expanded_with_the_diagonal_once)
{
    MatrixMarketInfo info;
    const auto a = read_matrix_market<double>(test::data_file("sherman1.mtx"), {}, &info);
    BOOST_TEST(info.symmetry == "symmetric");
    BOOST_TEST(info.declared_entries == 2375);
    BOOST_TEST(a.rows == 1000);
    BOOST_TEST(a.cols == 1000);
    // all 1000 diagonal entries are stored (awk '$1==$2' counts 1000): 2*2375 - 1000
    BOOST_TEST(a.nnz() == 2 * 2375 - 1000);
    BOOST_TEST(is_canonical(a));
    // line 4 "2 1 5.635e-03", line 100 "32 31 5.635e-03", last line "1000 1000 -2.817e-01"
    BOOST_TEST(at(a, 2, 1) == 5.635e-03);
    BOOST_TEST(at(a, 1, 2) == 5.635e-03);
    BOOST_TEST(at(a, 32, 31) == 5.635e-03);
    BOOST_TEST(at(a, 31, 32) == 5.635e-03);
    BOOST_TEST(at(a, 1, 1) == -5.649e-03);
    BOOST_TEST(at(a, 1000, 1000) == -2.817e-01);
    // symmetric entry by entry
    int asymmetric = 0;
    for (offset_t k = 0; k < a.nnz(); ++k) {
        bool found = false;
        const double t = at(a, a.col[k] + 1, a.row[k] + 1, &found);
        asymmetric += !found || t != a.val[k];
    }
    BOOST_TEST(asymmetric == 0);
}

BOOST_AUTO_TEST_CASE(sherman4_general)
{
    const auto a = read_matrix_market<double>(test::data_file("sherman4.mtx"));
    BOOST_TEST(a.rows == 1104);
    BOOST_TEST(a.cols == 1104);
    BOOST_TEST(a.nnz() == 3786);
    // lines 3, 1000 and 3788 of the file
    BOOST_TEST(at(a, 1, 1) == 1.0);
    BOOST_TEST(at(a, 276, 275) == -4.5264126);
    BOOST_TEST(at(a, 1104, 1104) == 1.0);
}

BOOST_AUTO_TEST_CASE(orsreg_1_general)
{
    const auto a = read_matrix_market<double>(test::data_file("orsreg_1.mtx"));
    BOOST_TEST(a.rows == 2205);
    BOOST_TEST(a.cols == 2205);
    BOOST_TEST(a.nnz() == 14133);
    BOOST_TEST(at(a, 1, 1) == -1.6688333300000e+04);
    BOOST_TEST(at(a, 2, 1) == 6.6666666700000e+00);
    BOOST_TEST(at(a, 2205, 2205) == -1.6680333300000e+04);
}

BOOST_AUTO_TEST_CASE(opm_matr33_keeps_its_explicit_zeros)
{
    const auto a = read_matrix_market<double>(test::data_file("opm_matr33.mtx"));
    BOOST_TEST(a.rows == 9);
    BOOST_TEST(a.cols == 9);
    BOOST_TEST(a.nnz() == 63);
    BOOST_TEST(std::count(a.val.host().begin(), a.val.host().end(), 0.0) == 14);
    bool found = false;
    BOOST_TEST(at(a, 1, 6, &found) == 0.0);  // "1 6 0"
    BOOST_TEST(found);
    BOOST_TEST(at(a, 1, 1) == 1.63148e-07);
    BOOST_TEST(at(a, 1, 3) == -6.09774e-05);
    BOOST_TEST(at(a, 9, 9) == 13.3423);
}

BOOST_AUTO_TEST_CASE(illc1033_rectangular)
{
    const auto a = read_matrix_market<double>(test::data_file("illc1033.mtx"));
    BOOST_TEST(a.rows == 1033);
    BOOST_TEST(a.cols == 320);
    BOOST_TEST(a.nnz() == 4732);
    BOOST_TEST(at(a, 1, 1) == 1.889822365E-01);
    BOOST_TEST(at(a, 1033, 320) == 6.163941529E-02);
    const auto f = read_matrix_market<float>(test::data_file("illc1033.mtx"));
    BOOST_TEST(at(f, 1, 1) == 1.889822365E-01f);
}

BOOST_AUTO_TEST_CASE(every_matrix_agrees_with_its_header_and_parses_the_same_in_parallel)
{
    int matrices = 0;
    for (const auto& e : fs::directory_iterator(test::data_dir())) {
        const std::string p = e.path().string();
        if (e.path().extension() != ".mtx") continue;
        const SizeLine s = size_line(p);
        if (s.banner.find("coordinate") == std::string::npos) continue;  // the rhs vectors
        BOOST_TEST_CONTEXT(p)
        {
            ++matrices;
            MatrixMarketOptions opt;
            opt.duplicates = DuplicatePolicy::error;  // none of them has duplicates
            MatrixMarketInfo info;
            const auto a = read_matrix_market<double>(p, opt, &info);
            BOOST_TEST(a.rows == s.rows);
            BOOST_TEST(a.cols == s.cols);
            BOOST_TEST(info.declared_entries == s.entries);
            BOOST_TEST(info.bytes == fs::file_size(p));
            if (info.symmetry == "general") BOOST_TEST(a.nnz() == s.entries);
            BOOST_TEST(is_canonical(a));
            MatrixMarketOptions par;
            par.threads = 4;
            par.chunk_bytes = 997;
            BOOST_TEST(same(a, read_matrix_market<double>(p, par)));
            // and through the writer
            const auto tmp =
                fs::temp_directory_path() / ("heptane_mm_data_" + e.path().filename().string());
            write_matrix_market(tmp.string(), a);
            BOOST_TEST(same(a, read_matrix_market<double>(tmp.string())));
            fs::remove(tmp);
        }
    }
    BOOST_TEST(matrices >= 10);
}

BOOST_AUTO_TEST_CASE(right_hand_sides)
{
    // leading blanks and Fortran-style mantissas: "  0.22540000E-04", ..., " -0.45080000E+00"
    const auto s1 = read_matrix_market_vector<double>(test::data_file("sherman1_rhs1.mtx"));
    BOOST_TEST(s1.size() == 1000u);
    BOOST_TEST(s1[0] == 0.22540000E-04);
    BOOST_TEST(s1[1] == 0.11270000E+00);
    BOOST_TEST(s1[999] == -0.45080000E+00);
    const auto s4 = read_matrix_market_vector<double>(test::data_file("sherman4_rhs1.mtx"));
    BOOST_TEST(s4.size() == 1104u);
    BOOST_TEST(s4[37] == -0.79310906E+01);  // line 42, the first non-zero
    BOOST_TEST(std::count(s4.begin(), s4.begin() + 37, 0.0) == 37);
    const auto il = read_matrix_market_vector<double>(test::data_file("illc1033_rhs1.mtx"));
    BOOST_TEST(il.size() == 1033u);
    BOOST_TEST(il[0] == -3.033558609E+01);
    const auto we = read_matrix_market_vector<float>(test::data_file("well1033_rhs1.mtx"));
    BOOST_TEST(we.size() == 1033u);
    BOOST_TEST(we[0] == -3.033558609E+01f);
    const auto op = read_matrix_market_vector<double>(test::data_file("opm_rhs3.mtx"));
    BOOST_TEST(op == (std::vector<double>{-4.48332e-07, 3.53746e-07, 4.31812e-05, 1.48051e-07,
                                          -5.76325e-07, -0.000243496, -3.81652e-08, 1.21761e-06,
                                          -9.97615e-05}),
               boost::test_tools::per_element());
    const auto to = read_matrix_market_vector<double>(test::data_file("tomography_spex_rhs.mtx"));
    BOOST_TEST(to.size() == 500u);
    BOOST_TEST(std::count(to.begin(), to.end(), 1.0) == 500);
}

// Every real matrix (and right-hand side) through the PETSc binary writer and reader, with
// 32- and 64-bit indices: the same canonical COO (explicit zeros included) and the same values.
BOOST_AUTO_TEST_CASE(every_matrix_round_trips_through_petsc_binary)
{
    const fs::path tmp =
        fs::temp_directory_path() / ("heptane_mm_petsc_" + std::to_string(::getpid()));
    fs::create_directories(tmp);
    int seen = 0;
    for (const auto& e : fs::directory_iterator(test::data_dir())) {
        if (e.path().extension() != ".mtx") continue;
        const std::string name = e.path().filename().string();
        BOOST_TEST_CONTEXT(name)
        {
            for (bool int64 : {false, true}) {
                const std::string out = (tmp / (name + (int64 ? "64" : "32") + ".petsc")).string();
                const bool is_vector = name.find("rhs") != std::string::npos;
                if (is_vector) {
                    const auto v = read_matrix_market_vector<double>(e.path().string());
                    write_vector_file(out, v, "", int64);
                    BOOST_TEST(read_vector_file(out) == v, boost::test_tools::per_element());
                    continue;
                }
                const Coo<double> a = read_matrix_market<double>(e.path().string());
                write_matrix_file(out, a, "", int64);
                BOOST_TEST(announced_entries(out) == a.nnz());
                const Coo<double> b = read_matrix_file(out).a;
                BOOST_TEST(b.rows == a.rows);
                BOOST_TEST(b.cols == a.cols);
                BOOST_TEST(b.row.host() == a.row.host(), boost::test_tools::per_element());
                BOOST_TEST(b.col.host() == a.col.host(), boost::test_tools::per_element());
                BOOST_TEST(b.val.host() == a.val.host(), boost::test_tools::per_element());
            }
            ++seen;
        }
    }
    std::error_code ec;
    fs::remove_all(tmp, ec);
    BOOST_TEST(seen >= 10);
}
