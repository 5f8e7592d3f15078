// Matrix Market reader and writer: what each kind of file reads as, every kind of bad input
// (exception type, file name and exact line in the message), round trips, and that the
// parallel parse gives the same result, and the same error line, as the serial one.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "generators/matrix_market.hpp"
#include "tests/test_common.hpp"

using namespace heptane;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp directory, removed at the end of the test.
struct TempDir {
    fs::path dir;
    TempDir()
    {
        static std::atomic<int> counter{0};
        std::random_device rd;
        dir = fs::temp_directory_path() / ("heptane_mm_" + std::to_string(::getpid()) + "_" +
                                           std::to_string(counter++) + "_" + std::to_string(rd()));
        fs::create_directories(dir);
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
    // Write `text` to a file named `name` and return its path.
    std::string file(const std::string& name, const std::string& text) const
    {
        const std::string p = path(name);
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
};

// `f` must throw InputError whose message starts with "FILE:LINE:" and contains `words`.
template <class F>
void expect_input_error(F&& f, const std::string& file, long line, const std::string& words)
{
    try {
        f();
        BOOST_ERROR("no InputError for " << file << " (expected line " << line << ": " << words
                                         << ")");
    } catch (const InputError& e) {
        const std::string msg = e.what();
        const std::string where = file + ":" + std::to_string(line) + ": ";
        BOOST_TEST_INFO("message: " << msg);
        BOOST_TEST(msg.rfind(where, 0) == 0);
        BOOST_TEST_INFO("message: " << msg);
        BOOST_TEST(msg.find(words) != std::string::npos);
    }
}

// Write `text` to a file and expect reading it as a double matrix to fail at `line`.
void expect_bad_file(const std::string& text, long line, const std::string& words,
                     const MatrixMarketOptions& opt = {})
{
    TempDir t;
    const std::string p = t.file("bad.mtx", text);
    expect_input_error([&] { read_matrix_market<double>(p, opt); }, p, line, words);
    // the parallel path on tiny pieces must report the same line
    MatrixMarketOptions par = opt;
    par.threads = 3;
    par.chunk_bytes = 1;
    expect_input_error([&] { read_matrix_market<double>(p, par); }, p, line, words);
}

template <class T>
Coo<T> read_text(const std::string& text, const MatrixMarketOptions& opt = {},
                 MatrixMarketInfo* info = nullptr)
{
    TempDir t;
    return read_matrix_market<T>(t.file("m.mtx", text), opt, info);
}

template <class T>
std::vector<T> host(const Array<T>& a)
{
    return a.to_vector();
}

// Exact equality (bit patterns of the values, so -0 and NaN compare too).
template <class T>
bool same(const Coo<T>& a, const Coo<T>& b)
{
    if (a.rows != b.rows || a.cols != b.cols || a.nnz() != b.nnz()) return false;
    const auto av = host(a.val), bv = host(b.val);
    return host(a.row) == host(b.row) && host(a.col) == host(b.col) &&
           (av.empty() || std::memcmp(av.data(), bv.data(), av.size() * sizeof(T)) == 0);
}

const std::string general_banner = "%%MatrixMarket matrix coordinate real general\n";

}  // namespace

// ------------------------------------------------------------------------------------------
// What files read as

BOOST_AUTO_TEST_CASE(reads_general_coordinate_with_comments_blank_lines_crlf_and_tabs)
{
    const std::string text =
        "%%MatrixMarket matrix coordinate real general\r\n"
        "% a comment\r\n"
        "\r\n"
        "%another\n"
        "  3 4\t5  \r\n"
        "3 1 -1.5\r\n"
        "\n"
        "1\t4\t2e3\n"
        "% a comment among the entries\n"
        "   2 2 .25\n"
        "1 1 +7\n"
        "3 4 1.0D-2";  // Fortran exponent, no final newline
    MatrixMarketInfo info;
    const auto a = read_text<double>(text, {}, &info);
    BOOST_TEST(a.rows == 3);
    BOOST_TEST(a.cols == 4);
    BOOST_TEST(is_canonical(a));
    BOOST_TEST(host(a.row) == (std::vector<index_t>{0, 0, 1, 2, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(host(a.col) == (std::vector<index_t>{0, 3, 1, 0, 3}),
               boost::test_tools::per_element());
    BOOST_TEST(host(a.val) == (std::vector<double>{7.0, 2000.0, 0.25, -1.5, 0.01}),
               boost::test_tools::per_element());
    BOOST_TEST(info.object == "matrix");
    BOOST_TEST(info.format == "coordinate");
    BOOST_TEST(info.field == "real");
    BOOST_TEST(info.symmetry == "general");
    BOOST_TEST(info.declared_entries == 5);
    BOOST_TEST(info.non_finite == 0);
    BOOST_TEST(info.bytes == text.size());
}

BOOST_AUTO_TEST_CASE(banner_words_are_case_insensitive)
{
    const auto a =
        read_text<double>("%%matrixmarket MATRIX Coordinate REAL General\n1 1 1\n1 1 3\n");
    BOOST_TEST(a.nnz() == 1);
    BOOST_TEST(a.val[0] == 3.0);
}

BOOST_AUTO_TEST_CASE(symmetric_is_expanded_to_both_triangles_with_the_diagonal_once)
{
    MatrixMarketInfo info;
    const auto a = read_text<double>(
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 4\n2 1 -1\n3 2 -2\n3 3 5\n",
        {}, &info);
    BOOST_TEST(info.symmetry == "symmetric");
    BOOST_TEST(info.declared_entries == 4);
    BOOST_TEST(a.nnz() == 6);
    BOOST_TEST(host(a.row) == (std::vector<index_t>{0, 0, 1, 1, 2, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(host(a.col) == (std::vector<index_t>{0, 1, 0, 2, 1, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(host(a.val) == (std::vector<double>{4, -1, -1, -2, -2, 5}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(skew_symmetric_mirror_is_negated)
{
    const auto a = read_text<float>(
        "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 1 -2\n");
    BOOST_TEST(a.nnz() == 4);
    BOOST_TEST(host(a.row) == (std::vector<index_t>{0, 0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(host(a.col) == (std::vector<index_t>{1, 2, 0, 0}), boost::test_tools::per_element());
    BOOST_TEST(host(a.val) == (std::vector<float>{-1.5f, 2.0f, 1.5f, -2.0f}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(pattern_entries_get_value_one)
{
    const auto g =
        read_text<double>("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n2 3\n1 1\n");
    BOOST_TEST(host(g.val) == (std::vector<double>{1, 1}), boost::test_tools::per_element());
    BOOST_TEST(host(g.col) == (std::vector<index_t>{0, 2}), boost::test_tools::per_element());
    const auto s =
        read_text<float>("%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n2 1\n2 2\n");
    BOOST_TEST(s.nnz() == 3);
    BOOST_TEST(host(s.val) == (std::vector<float>{1, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(integer_field_is_read_as_values)
{
    const auto a = read_text<double>(
        "%%MatrixMarket matrix coordinate integer general\n2 2 3\n1 1 -3\n2 2 +12\n2 1 0\n");
    BOOST_TEST(host(a.val) == (std::vector<double>{-3, 0, 12}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(explicit_zeros_are_kept)
{
    const auto a = read_text<double>(general_banner + "2 2 3\n1 1 0\n2 2 0.0\n1 2 -0\n");
    BOOST_TEST(a.nnz() == 3);
}

BOOST_AUTO_TEST_CASE(array_general_is_a_dense_matrix_in_column_major_order)
{
    MatrixMarketInfo info;
    const auto a = read_text<double>(
        "%%MatrixMarket matrix array real general\n% comment\n2 3\n1\n2\n3\n4\n\n5\n0\n", {},
        &info);
    BOOST_TEST(info.format == "array");
    BOOST_TEST(info.declared_entries == 6);
    BOOST_TEST(is_canonical(a));
    BOOST_TEST(a.nnz() == 6);  // the zero is kept
    BOOST_TEST(host(a.row) == (std::vector<index_t>{0, 0, 0, 1, 1, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(host(a.col) == (std::vector<index_t>{0, 1, 2, 0, 1, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(host(a.val) == (std::vector<double>{1, 3, 5, 2, 4, 0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(array_symmetric_and_skew_store_the_lower_triangle)
{
    // symmetric: columns of the lower triangle: (1,1) (2,1) (3,1) (2,2) (3,2) (3,3)
    const auto s =
        read_text<double>("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
    BOOST_TEST(s.nnz() == 9);
    BOOST_TEST(host(s.val) == (std::vector<double>{1, 2, 3, 2, 4, 5, 3, 5, 6}),
               boost::test_tools::per_element());
    // skew: strict lower triangle (2,1) (3,1) (3,2)
    const auto k =
        read_text<double>("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n");
    BOOST_TEST(k.nnz() == 6);
    BOOST_TEST(host(k.row) == (std::vector<index_t>{0, 0, 1, 1, 2, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(host(k.col) == (std::vector<index_t>{1, 2, 0, 2, 0, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(host(k.val) == (std::vector<double>{-1, -2, 1, -3, 2, 3}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(array_integer_field)
{
    const auto a = read_text<float>("%%MatrixMarket matrix array integer general\n1 2\n7\n-8\n");
    BOOST_TEST(host(a.val) == (std::vector<float>{7, -8}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(empty_matrices_are_fine)
{
    const auto a = read_text<double>(general_banner + "0 0 0\n");
    BOOST_TEST(a.rows == 0);
    BOOST_TEST(a.nnz() == 0);
    const auto b = read_text<double>(general_banner + "5 7 0");  // no final newline
    BOOST_TEST(b.rows == 5);
    BOOST_TEST(b.cols == 7);
    BOOST_TEST(b.nnz() == 0);
}

BOOST_AUTO_TEST_CASE(reads_from_a_memory_buffer)
{
    const std::string text = general_banner + "2 2 1\n2 1 3.5\n";
    const auto a = read_matrix_market_buffer<double>(text, "in-memory");
    BOOST_TEST(a.nnz() == 1);
    BOOST_TEST(a.val[0] == 3.5);
    expect_input_error(
        [] { read_matrix_market_buffer<double>(general_banner + "2 2 1\n3 1 1\n", "buf"); }, "buf",
        3, "row index 3 is out of range 1..2");
}

BOOST_AUTO_TEST_CASE(reads_a_pipe_that_cannot_be_mapped)
{
    TempDir t;
    const std::string p = t.path("pipe.mtx");
    BOOST_REQUIRE(::mkfifo(p.c_str(), 0600) == 0);
    const std::string text = general_banner + "2 2 2\n1 1 1\n2 2 2\n";
    std::thread writer([&] { std::ofstream(p, std::ios::binary) << text; });
    const auto a = read_matrix_market<double>(p);
    writer.join();
    BOOST_TEST(host(a.val) == (std::vector<double>{1, 2}), boost::test_tools::per_element());
}

// ------------------------------------------------------------------------------------------
// Duplicates

BOOST_AUTO_TEST_CASE(duplicates_are_summed_by_default)
{
    const auto a = read_text<double>(general_banner + "2 2 3\n1 2 1\n2 1 5\n1 2 2\n");
    BOOST_TEST(host(a.val) == (std::vector<double>{3, 5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(duplicates_keep_last_takes_the_later_entry)
{
    MatrixMarketOptions opt;
    opt.duplicates = DuplicatePolicy::keep_last;
    const auto a = read_text<double>(general_banner + "2 2 4\n1 2 1\n2 1 5\n1 2 2\n2 1 -1\n", opt);
    BOOST_TEST(host(a.val) == (std::vector<double>{2, -1}), boost::test_tools::per_element());
    // symmetric: the mirror follows the stored entry that wins
    const auto s = read_text<double>(
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n2 1 9\n", opt);
    BOOST_TEST(host(s.val) == (std::vector<double>{9, 9}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(duplicates_error_names_both_lines)
{
    MatrixMarketOptions opt;
    opt.duplicates = DuplicatePolicy::error;
    expect_bad_file(general_banner + "% c\n3 3 5\n1 1 1\n3 2 1\n2 2 1\n\n3 2 4\n2 2 5\n", 8,
                    "duplicate entry (3, 2), first given on line 5", opt);
    expect_bad_file("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n3 1 1\n2 2 1\n3 1 1\n",
                    5, "duplicate entry (3, 1), first given on line 3", opt);
}

// ------------------------------------------------------------------------------------------
// Bad input: each names the file and the line

BOOST_AUTO_TEST_CASE(missing_file_is_an_io_error_naming_it)
{
    TempDir t;
    const std::string p = t.path("nope.mtx");
    BOOST_CHECK_EXCEPTION(read_matrix_market<double>(p), IoError, [&](const IoError& e) {
        return std::string(e.what()).find(p) != std::string::npos;
    });
    BOOST_CHECK_THROW(read_matrix_market<double>(t.dir.string()), IoError);  // a directory
    BOOST_CHECK_THROW(read_matrix_market_vector<double>(p), IoError);
}

BOOST_AUTO_TEST_CASE(error_empty_file)
{
    expect_bad_file("", 1, "the file is empty");
}

BOOST_AUTO_TEST_CASE(error_missing_banner)
{
    expect_bad_file("3 3 1\n1 1 1\n", 1, "missing banner");
    expect_bad_file("% just a comment\n3 3 1\n1 1 1\n", 1, "missing banner");
    expect_bad_file("\n%%MatrixMarket matrix coordinate real general\n1 1 0\n", 1,
                    "missing banner");
}

BOOST_AUTO_TEST_CASE(error_garbled_banner_token)
{
    expect_bad_file("%%MatrixMarkt matrix coordinate real general\n1 1 0\n", 1,
                    "garbled banner: '%%MatrixMarkt'");
    expect_bad_file("%%MatrixMarket\n1 1 0\n", 1, "incomplete banner");
    expect_bad_file("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "incomplete banner");
    expect_bad_file("%%MatrixMarket matrix coordinate real general extra\n1 1 0\n", 1,
                    "unexpected text 'extra' after the banner");
}

BOOST_AUTO_TEST_CASE(error_banner_unknown_object)
{
    expect_bad_file("%%MatrixMarket tensor coordinate real general\n1 1 0\n", 1,
                    "unknown object 'tensor'");
    expect_bad_file("%%MatrixMarket vector coordinate real general\n1 1 0\n", 1,
                    "object 'vector' is not supported");
}

BOOST_AUTO_TEST_CASE(error_banner_unknown_format)
{
    expect_bad_file("%%MatrixMarket matrix sparse real general\n1 1 0\n", 1,
                    "unknown format 'sparse'");
}

BOOST_AUTO_TEST_CASE(error_banner_unknown_field)
{
    expect_bad_file("%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n", 1,
                    "unknown field 'quaternion'");
    expect_bad_file("%%MatrixMarket matrix array pattern general\n1 1\n", 1,
                    "'pattern' is not valid with the 'array' format");
    expect_bad_file("%%MatrixMarket matrix coordinate pattern skew-symmetric\n1 1 0\n", 1,
                    "'pattern' is not valid with 'skew-symmetric'");
}

BOOST_AUTO_TEST_CASE(error_banner_unknown_symmetry)
{
    expect_bad_file("%%MatrixMarket matrix coordinate real upper\n1 1 0\n", 1,
                    "unknown symmetry 'upper'");
    expect_bad_file("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1,
                    "'hermitian' needs a complex field");
}

BOOST_AUTO_TEST_CASE(error_complex_field_is_not_supported)
{
    expect_bad_file("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n", 1,
                    "complex matrices are not supported");
}

BOOST_AUTO_TEST_CASE(error_missing_size_line)
{
    expect_bad_file(general_banner, 1, "missing size line");
    expect_bad_file(general_banner + "% only comments\n\n% here\n", 4, "missing size line");
}

BOOST_AUTO_TEST_CASE(error_bad_size_line)
{
    expect_bad_file(general_banner + "% c\n3 x 4\n", 3, "the column count 'x' is not an integer");
    expect_bad_file(general_banner + "3 3\n1 1 1\n", 2, "bad size line '3 3'");
    expect_bad_file(general_banner + "3 3 1 7\n1 1 1\n", 2, "unexpected text '7' on the size line");
    expect_bad_file(general_banner + "3 3.0 1\n1 1 1\n", 2, "is not an integer");
    expect_bad_file("%%MatrixMarket matrix array real general\n3\n", 2, "expected 'rows cols'");
}

BOOST_AUTO_TEST_CASE(error_negative_sizes)
{
    expect_bad_file(general_banner + "-3 3 1\n1 1 1\n", 2, "negative row count -3");
    expect_bad_file(general_banner + "3 3 -1\n", 2, "negative entry count -1");
}

BOOST_AUTO_TEST_CASE(error_absurd_sizes)
{
    expect_bad_file(general_banner + "2147483648 1 0\n", 2,
                    "the row count 2147483648 exceeds the largest supported size 2147483647");
    expect_bad_file(general_banner + "1 99999999999999999999 0\n", 2, "absurdly large");
    expect_bad_file(general_banner + "3 3 10\n", 2, "declares 10 entries, more than 3 x 3 = 9");
    expect_bad_file("%%MatrixMarket matrix coordinate real symmetric\n3 3 7\n", 2,
                    "more than the 6 positions of the lower triangle");
    expect_bad_file("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n", 2,
                    "must be square");
    // fits rows x cols but not any machine's memory
    expect_bad_file(general_banner + "2000000000 2000000000 4000000000000000000\n", 2,
                    "of memory to read");
    MatrixMarketOptions opt;
    opt.memory_limit = 1 << 20;
    expect_bad_file(general_banner + "100000 100000 1000000\n", 2, "more than the memory limit",
                    opt);
    expect_bad_file("%%MatrixMarket matrix array real general\n100000 100000\n", 2,
                    "more than the memory limit", opt);
}

BOOST_AUTO_TEST_CASE(error_fewer_entries_than_declared)
{
    expect_bad_file(general_banner + "3 3 4\n1 1 1\n2 2 1\n3 3 1\n", 5,
                    "the file ends after 3 of the 4 declared entries");
    expect_bad_file(general_banner + "3 3 4\n1 1 1\n2 2 1\n3 3 1", 5, "ends after 3 of the 4");
    expect_bad_file(general_banner + "3 3 4\n1 1 1\n\n\n", 5, "ends after 1 of the 4");
    expect_bad_file(general_banner + "3 3 1", 2, "ends after 0 of the 1");
    expect_bad_file("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5,
                    "ends after 3 of the 4");
}

BOOST_AUTO_TEST_CASE(error_more_entries_than_declared)
{
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n% c\n2 2 1\n\n3 3 1\n1 2 1\n", 7,
                    "more entries than the 2 declared");
    expect_bad_file("%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n", 5,
                    "more entries than the 2 declared");
}

BOOST_AUTO_TEST_CASE(error_index_zero_or_out_of_range)
{
    expect_bad_file(general_banner + "3 4 2\n1 1 1\n0 1 1\n", 4,
                    "row index 0 is out of range 1..3 (indices are 1-based)");
    expect_bad_file(general_banner + "3 4 2\n1 1 1\n1 0 1\n", 4,
                    "column index 0 is out of range 1..4");
    expect_bad_file(general_banner + "3 4 2\n1 1 1\n4 1 1\n", 4,
                    "row index 4 is out of range 1..3");
    expect_bad_file(general_banner + "3 4 2\n1 1 1\n1 5 1\n", 4,
                    "column index 5 is out of range 1..4");
    expect_bad_file(general_banner + "3 4 1\n-1 1 1\n", 3, "row index -1 is out of range");
    expect_bad_file(general_banner + "3 4 1\n1 99999999999999999999 1\n", 3,
                    "column index '99999999999999999999' is out of range");
}

BOOST_AUTO_TEST_CASE(error_non_numeric_value)
{
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2 abc\n", 4,
                    "expected a real value, found 'abc'");
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2 1.5.3\n", 4,
                    "expected a real value, found '1.5.3'");
    expect_bad_file(general_banner + "3 3 1\nx 2 1\n", 3,
                    "expected an integer row index, found 'x'");
    expect_bad_file(general_banner + "3 3 1\n1.0 2 1\n", 3,
                    "expected an integer row index, found '1.0'");
    expect_bad_file(general_banner + "3 3 1\n1,2,3\n", 3,
                    "expected an integer row index, found '1,2,3'");
    expect_bad_file("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 2.5\n", 3,
                    "expected an integer value");
    expect_bad_file("%%MatrixMarket matrix array real general\n2 1\n1\nfoo\n", 4,
                    "expected a real value, found 'foo'");
}

BOOST_AUTO_TEST_CASE(error_text_after_an_entry)
{
    expect_bad_file(general_banner + "3 3 1\n1 1 1 2\n", 3, "unexpected text '2' after the entry");
    expect_bad_file("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n", 3,
                    "has no values");
    expect_bad_file("%%MatrixMarket matrix array real general\n2 1\n1 2\n", 3,
                    "one value per line");
}

BOOST_AUTO_TEST_CASE(error_truncated_last_line)
{
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2", 4, "missing value");
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2 \n", 4, "missing value");
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2", 4, "missing column index");
}

BOOST_AUTO_TEST_CASE(error_non_finite_values_with_policy_error)
{
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2 nan\n", 4, "value 'nan' is NaN");
    expect_bad_file(general_banner + "3 3 2\n1 1 -inf\n2 2 1\n", 3, "value '-inf' is infinite");
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2 1e400\n", 4, "'1e400' overflows double");
    expect_bad_file("%%MatrixMarket matrix array real general\n2 1\n1\nInfinity\n", 4,
                    "is infinite");
    // fine in double, infinite in float
    TempDir t;
    const std::string p = t.file("f.mtx", general_banner + "2 2 2\n1 1 1\n2 2 1e39\n");
    BOOST_TEST(read_matrix_market<double>(p).nnz() == 2);
    expect_input_error([&] { read_matrix_market<float>(p); }, p, 4, "'1e39' overflows float");
}

BOOST_AUTO_TEST_CASE(non_finite_values_with_policy_warn_are_counted_and_reported)
{
    TempDir t;
    const std::string p =
        t.file("w.mtx", general_banner + "3 3 4\n1 1 nan\n2 2 1\n3 3 inf\n1 3 -inf\n");
    const std::string err = t.path("stderr.txt");
    MatrixMarketOptions opt;
    opt.non_finite = NonFinitePolicy::warn;
    MatrixMarketInfo info;
    // capture stderr
    std::fflush(stderr);
    const int saved = ::dup(2);
    std::FILE* f = std::fopen(err.c_str(), "w");
    ::dup2(::fileno(f), 2);
    const auto a = read_matrix_market<double>(p, opt, &info);
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::fclose(f);
    std::ifstream in(err);
    const std::string warning((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    BOOST_TEST(info.non_finite == 3);
    BOOST_TEST(a.nnz() == 4);
    BOOST_TEST(std::isnan(a.val[0]));
    BOOST_TEST(a.val[1] == -std::numeric_limits<double>::infinity());
    BOOST_TEST(warning.find("warning") != std::string::npos);
    BOOST_TEST(warning.find(p + ":3:") != std::string::npos);
    BOOST_TEST(warning.find("3 NaN or Inf") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(non_finite_values_with_policy_accept_are_counted)
{
    MatrixMarketOptions opt;
    opt.non_finite = NonFinitePolicy::accept;
    MatrixMarketInfo info;
    const auto a = read_text<float>(general_banner + "2 2 2\n1 1 NaN\n2 2 1e39\n", opt, &info);
    BOOST_TEST(info.non_finite == 2);
    BOOST_TEST(std::isinf(a.val[1]));
}

BOOST_AUTO_TEST_CASE(error_symmetric_file_with_an_upper_triangle_entry)
{
    expect_bad_file("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1\n2 1 1\n2 3 1\n",
                    5, "entry (2, 3) lies above the diagonal");
    expect_bad_file("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n1 2 1\n",
                    4, "entry (1, 2) lies above the diagonal");
}

BOOST_AUTO_TEST_CASE(error_skew_symmetric_file_with_a_diagonal_entry)
{
    expect_bad_file("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n",
                    4, "diagonal entry (2, 2) in a skew-symmetric file");
}

BOOST_AUTO_TEST_CASE(error_first_problem_in_file_order_wins)
{
    // an extra entry (line 5) comes before a bad line (line 6)
    expect_bad_file(general_banner + "3 3 2\n1 1 1\n2 2 1\n3 3 1\nbad\n", 5,
                    "more entries than the 2");
    // a bad line before the extra entries
    expect_bad_file(general_banner + "3 3 2\n1 1 1\nbad\n3 3 1\n1 2 1\n", 4, "found 'bad'");
}

BOOST_AUTO_TEST_CASE(error_messages_quote_binary_junk_safely)
{
    TempDir t;
    const std::string p = t.file("j.mtx", general_banner + "2 2 1\n1 1 \x01\x02\xff\n");
    try {
        read_matrix_market<double>(p);
        BOOST_ERROR("no error");
    } catch (const InputError& e) {
        const std::string msg = e.what();
        BOOST_TEST(msg.find("'\?\?\?'") != std::string::npos);  // escaped: no trigraph
        for (char c : msg) BOOST_TEST((c >= 0x20 && c < 0x7f));
    }
}

// ------------------------------------------------------------------------------------------
// The parallel parse

namespace {
// A general file of `n` random entries in random order with duplicates, comments and blank
// lines here and there, varied spellings of numbers.
std::string big_random_file(index_t rows, index_t cols, int n, unsigned seed, bool symmetric)
{
    std::mt19937 gen(seed);
    std::uniform_int_distribution<index_t> ri(1, rows), ci(1, cols);
    std::uniform_real_distribution<double> v(-10, 10);
    std::ostringstream s;
    s.precision(17);
    s << "%%MatrixMarket matrix coordinate real " << (symmetric ? "symmetric" : "general") << "\n";
    s << rows << " " << cols << " " << n << "\n";
    for (int k = 0; k < n; ++k) {
        index_t i = ri(gen), j = ci(gen);
        if (symmetric && j > i) std::swap(i, j);
        if (k % 97 == 0) s << "% comment " << k << "\n";
        if (k % 89 == 0) s << "\n";
        switch (k % 4) {
            case 0:
                s << i << " " << j << " " << v(gen) << "\n";
                break;
            case 1:
                s << "  " << i << "\t" << j << "   " << std::scientific << v(gen)
                  << std::defaultfloat << "\r\n";
                break;
            case 2:
                s << i << " " << j << " " << int(v(gen)) << "\n";
                break;
            default:
                s << i << " " << j << " -" << k << ".5e-3\n";
                break;
        }
    }
    return s.str();
}
}  // namespace

BOOST_AUTO_TEST_CASE(parallel_parse_equals_serial_parse)
{
    for (bool symmetric : {false, true}) {
        const std::string text = big_random_file(3000, 3000, 60000, 11 + symmetric, symmetric);
        TempDir t;
        const std::string p = t.file("big.mtx", text);
        MatrixMarketOptions serial;
        serial.threads = 1;
        serial.chunk_bytes = text.size() + 1;
        const auto a = read_matrix_market<double>(p, serial);
        for (std::size_t chunk : {std::size_t(0), std::size_t(1), std::size_t(100),
                                  std::size_t(4096), std::size_t(1) << 16}) {
            for (int threads : {2, 4}) {
                MatrixMarketOptions par;
                par.threads = threads;
                par.chunk_bytes = chunk;
                BOOST_TEST_CONTEXT("chunk " << chunk << ", threads " << threads << ", symmetric "
                                            << symmetric)
                {
                    BOOST_TEST(same(read_matrix_market<double>(p, par), a));
                    par.duplicates = DuplicatePolicy::keep_last;
                    serial.duplicates = DuplicatePolicy::keep_last;
                    BOOST_TEST(same(read_matrix_market<double>(p, par),
                                    read_matrix_market<double>(p, serial)));
                    serial.duplicates = DuplicatePolicy::sum;
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(parallel_parse_reports_the_exact_line_of_a_deep_error)
{
    std::string text = big_random_file(1000, 1000, 100000, 5, false);
    // count lines to pick a line deep in the file, and break it
    std::vector<std::size_t> starts{0};
    for (std::size_t k = 0; k < text.size(); ++k)
        if (text[k] == '\n') starts.push_back(k + 1);
    std::size_t target = starts.size() * 2 / 3;
    while (text[starts[target - 1]] == '%' || text[starts[target - 1]] == '\n' ||
           text[starts[target - 1]] == ' ')
        ++target;  // a line that holds an entry (1-based line number `target`)
    text.insert(starts[target - 1], "x");  // "x123 456 ..." is no row index
    TempDir t;
    const std::string p = t.file("deep.mtx", text);
    for (int threads : {1, 2, 4}) {
        MatrixMarketOptions opt;
        opt.threads = threads;
        opt.chunk_bytes = 3000;
        expect_input_error([&] { read_matrix_market<double>(p, opt); }, p, long(target),
                           "expected an integer row index");
    }
    // and an entry past the declared count, deep in the file
    std::string more = big_random_file(1000, 1000, 100000, 6, false);
    const std::size_t size_line = more.find('\n') + 1;
    more.replace(size_line, more.find('\n', size_line) - size_line, "1000 1000 70000");
    std::size_t entries = 0, line = 2, pos = more.find('\n', size_line) + 1;
    while (true) {
        ++line;
        const std::size_t e = more.find('\n', pos);
        const char c = more[pos];
        if (c != '%' && c != '\n' && c != '\r') {
            if (entries == 70000) break;
            ++entries;
        }
        pos = e + 1;
    }
    const std::string q = t.file("more.mtx", more);
    for (int threads : {1, 3}) {
        MatrixMarketOptions opt;
        opt.threads = threads;
        opt.chunk_bytes = 5000;
        expect_input_error([&] { read_matrix_market<double>(q, opt); }, q, long(line),
                           "more entries than the 70000 declared");
    }
}

// ------------------------------------------------------------------------------------------
// Writing and round trips

namespace {
// Values over the whole range of T: random mantissas times random powers of ten, plus the
// awkward ones (extremes, subnormals, signed zero).
template <class T>
Coo<T> awkward_random_coo(index_t rows, index_t cols, unsigned seed)
{
    auto a = test::random_coo<T>(rows, cols, 0, 9, seed);
    std::mt19937 gen(seed);
    const int e = std::numeric_limits<T>::max_exponent10 - 1;
    std::uniform_int_distribution<int> ex(-e, e);
    auto& v = a.val.host();
    for (auto& x : v) x = static_cast<T>(x * std::pow(10.0, ex(gen)));
    const T special[] = {std::numeric_limits<T>::max(),
                         std::numeric_limits<T>::lowest(),
                         std::numeric_limits<T>::min(),
                         std::numeric_limits<T>::denorm_min(),
                         T(-0.0),
                         T(0.1),
                         T(1) / T(3)};
    for (std::size_t k = 0; k < std::size(special) && k < v.size(); ++k)
        v[k * 7 % v.size()] = special[k];
    return a;
}
}  // namespace

BOOST_AUTO_TEST_CASE(round_trip_double_is_exact)
{
    TempDir t;
    for (unsigned seed : {1u, 2u, 3u}) {
        const auto a = awkward_random_coo<double>(500 + seed, 300, seed);
        const std::string p = t.path("rt.mtx");
        write_matrix_market(p, a, "round trip\nsecond line");
        BOOST_TEST(!fs::exists(p + ".tmp"));
        MatrixMarketInfo info;
        const auto b = read_matrix_market<double>(p, {}, &info);
        BOOST_TEST(same(a, b));
        BOOST_TEST(info.declared_entries == a.nnz());
    }
}

BOOST_AUTO_TEST_CASE(round_trip_float_is_exact)
{
    TempDir t;
    for (unsigned seed : {4u, 5u}) {
        const auto a = awkward_random_coo<float>(400, 600 + seed, seed);
        const std::string p = t.path("rt.mtx");
        write_matrix_market(p, a);
        BOOST_TEST(same(a, read_matrix_market<float>(p)));
        MatrixMarketOptions par;
        par.threads = 3;
        par.chunk_bytes = 777;
        BOOST_TEST(same(a, read_matrix_market<float>(p, par)));
    }
}

// Decimal tokens of every shape the reader's fast paths and their fallbacks see (1-25 digits,
// a fraction or not, exponents from -330 to 330, signs, leading zeros, "1." and ".5"; row
// indices written with a '+'): each value must equal, bit for bit, what the C library's
// strtod/strtof read from the same text (the "C" locale), for double and float.
BOOST_AUTO_TEST_CASE(values_equal_strtod_bit_for_bit)
{
    std::mt19937_64 rng(2026);
    auto digits = [&](int n) {
        std::string d;
        for (int i = 0; i < n; ++i) d += char('0' + rng() % 10);
        return d;
    };
    std::vector<std::string> toks = {"0",
                                     "-0",
                                     "1.",
                                     ".5",
                                     "-.25e1",
                                     "9007199254740993",
                                     "9007199254740992",
                                     "16777217",
                                     "1e22",
                                     "1e23",
                                     "1e-22",
                                     "1e-23",
                                     "123456789012345678",
                                     "1234567890123456789",
                                     "4.9e-324",
                                     "2.2250738585072014e-308",
                                     "1.7976931348623157e308",
                                     "3.4028235e38",
                                     "1.17549435e-38",
                                     "0.1",
                                     "0.3",
                                     "1E5",
                                     "1e+05",
                                     "00012.5000",
                                     "7e0",
                                     "-5E-0"};
    for (int i = 0; i < 3000; ++i) {
        std::string t = rng() % 4 == 0 ? "-" : "";
        const int pre = int(rng() % 20), post = int(rng() % 8 == 0 ? 0 : rng() % 12);
        t += pre ? digits(pre) : "0";
        if (post || rng() % 3 == 0) t += "." + digits(post);
        if (rng() % 2) {
            const int e = int(rng() % 661) - 330;
            t += (rng() % 2 ? "e" : "E") +
                 std::to_string(std::abs(e) > 40 && rng() % 2 ? e / 10 : e);
        }
        toks.push_back(t);
    }
    const std::size_t n = toks.size();
    std::string text = "%%MatrixMarket matrix coordinate real general\n" + std::to_string(n) +
                       " 1 " + std::to_string(n) + "\n";
    for (std::size_t i = 0; i < n; ++i)
        text += "+" + std::to_string(i + 1) + " 1 " + toks[i] + "\n";
    MatrixMarketOptions opt;
    opt.non_finite = NonFinitePolicy::accept;  // 1e330 and the like: inf, as strtod says
    const auto d = read_matrix_market_buffer<double>(text, "values", opt);
    const auto f = read_matrix_market_buffer<float>(text, "values", opt);
    BOOST_TEST_REQUIRE(d.nnz() == offset_t(n));
    BOOST_TEST_REQUIRE(f.nnz() == offset_t(n));
    std::size_t bad_d = 0, bad_f = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double rd = std::strtod(toks[i].c_str(), nullptr);
        const float rf = std::strtof(toks[i].c_str(), nullptr);
        BOOST_TEST_REQUIRE(d.row[i] == index_t(i));  // canonical order: entry i is token i
        const std::size_t r = i;
        if (std::memcmp(&d.val[r], &rd, sizeof rd) != 0 && bad_d++ < 5)
            BOOST_TEST_MESSAGE("double " << toks[i] << ": " << d.val[r] << " vs " << rd);
        if (std::memcmp(&f.val[r], &rf, sizeof rf) != 0 && bad_f++ < 5)
            BOOST_TEST_MESSAGE("float " << toks[i] << ": " << f.val[r] << " vs " << rf);
    }
    BOOST_TEST(bad_d == 0u);
    BOOST_TEST(bad_f == 0u);
}

BOOST_AUTO_TEST_CASE(round_trip_keeps_nan_and_inf_with_policy_accept)
{
    Coo<double> a;
    a.rows = a.cols = 3;
    a.row = std::vector<index_t>{0, 1, 2};
    a.col = std::vector<index_t>{0, 1, 2};
    a.val = std::vector<double>{std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN()};
    TempDir t;
    const std::string p = t.path("nf.mtx");
    write_matrix_market(p, a);
    MatrixMarketOptions opt;
    opt.non_finite = NonFinitePolicy::accept;
    const auto b = read_matrix_market<double>(p, opt);
    BOOST_TEST(b.val[0] == a.val[0]);
    BOOST_TEST(b.val[1] == a.val[1]);
    BOOST_TEST(std::isnan(b.val[2]));
    BOOST_CHECK_THROW(read_matrix_market<double>(p), InputError);
}

BOOST_AUTO_TEST_CASE(writer_output_is_one_based_general_with_comments)
{
    Coo<double> a;
    a.rows = 2;
    a.cols = 3;
    a.row = std::vector<index_t>{0, 1};
    a.col = std::vector<index_t>{2, 0};
    a.val = std::vector<double>{0.1, -2.5};
    TempDir t;
    const std::string p = t.path("w.mtx");
    write_matrix_market(p, a, "made by a test");
    std::ifstream in(p);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    BOOST_TEST(text ==
               "%%MatrixMarket matrix coordinate real general\n% made by a test\n2 3 2\n"
               "1 3 0.1\n2 1 -2.5\n");
}

BOOST_AUTO_TEST_CASE(writer_to_a_missing_directory_is_an_io_error_and_leaves_nothing)
{
    TempDir t;
    const std::string p = t.path("no/such/dir/a.mtx");
    const auto a = test::random_coo<double>(10, 10, 1, 3, 1);
    BOOST_CHECK_EXCEPTION(write_matrix_market(p, a), IoError, [&](const IoError& e) {
        return std::string(e.what()).find("does not exist") != std::string::npos;
    });
    BOOST_CHECK_THROW(write_matrix_market_vector(p, std::vector<double>{1, 2}), IoError);
    BOOST_TEST(!fs::exists(t.path("no")));
}

BOOST_AUTO_TEST_CASE(writer_replaces_an_existing_file_whole)
{
    TempDir t;
    const std::string p = t.file("x.mtx", std::string(100000, 'z'));
    const auto a = test::random_coo<double>(20, 20, 1, 3, 2);
    write_matrix_market(p, a);
    BOOST_TEST(same(a, read_matrix_market<double>(p)));
    BOOST_TEST(!fs::exists(p + ".tmp"));
}

BOOST_AUTO_TEST_CASE(writer_rejects_inconsistent_coo)
{
    TempDir t;
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{0, 2};
    a.col = std::vector<index_t>{0, 0};
    a.val = std::vector<double>{1, 2};
    BOOST_CHECK_THROW(write_matrix_market(t.path("a.mtx"), a), InputError);
    a.row = std::vector<index_t>{0};
    BOOST_CHECK_THROW(write_matrix_market(t.path("a.mtx"), a), DimensionMismatch);
    BOOST_TEST(fs::is_empty(t.dir));
}

BOOST_AUTO_TEST_CASE(vector_round_trip_and_shapes)
{
    TempDir t;
    const auto x = test::random_vector<double>(1234, 9);
    const std::string p = t.path("x.mtx");
    write_matrix_market_vector(p, x, "rhs");
    BOOST_TEST(read_matrix_market_vector<double>(p) == x, boost::test_tools::per_element());
    const auto xf = test::random_vector<float>(55, 10);
    write_matrix_market_vector(p, xf);
    BOOST_TEST(read_matrix_market_vector<float>(p) == xf, boost::test_tools::per_element());
    // 1 x n array
    BOOST_TEST(read_matrix_market_vector<double>(
                   t.file("r.mtx", "%%MatrixMarket matrix array real general\n1 3\n1\n2\n3\n")) ==
                   (std::vector<double>{1, 2, 3}),
               boost::test_tools::per_element());
    // coordinate with one column: missing entries are 0, duplicates summed
    BOOST_TEST(read_matrix_market_vector<double>(
                   t.file("c.mtx", general_banner + "5 1 3\n4 1 2\n2 1 1\n4 1 3\n")) ==
                   (std::vector<double>{0, 1, 0, 5, 0}),
               boost::test_tools::per_element());
    // coordinate with one row
    BOOST_TEST(read_matrix_market_vector<double>(t.file(
                   "d.mtx", general_banner + "1 3 1\n1 2 7\n")) == (std::vector<double>{0, 7, 0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(vector_reader_rejects_a_matrix_and_names_the_line)
{
    TempDir t;
    const std::string p = t.file("m.mtx", general_banner + "% c\n2 2 1\n1 1 1\n");
    expect_input_error([&] { read_matrix_market_vector<double>(p); }, p, 3,
                       "expected a vector (n x 1 or 1 x n), but the file holds a 2 x 2 matrix");
    const std::string q = t.file("v.mtx", "%%MatrixMarket matrix array real general\n3 1\n1\n2\n");
    expect_input_error([&] { read_matrix_market_vector<double>(q); }, q, 4,
                       "ends after 2 of the 3");
    const std::string r =
        t.file("w.mtx", "%%MatrixMarket matrix array real general\n2 1\n1\nnan\n");
    expect_input_error([&] { read_matrix_market_vector<double>(r); }, r, 4, "is NaN");
}
