// PETSc binary files (generators/petsc_binary.*, generators/matrix_file.*): files assembled
// here byte by byte from PETSc's documented layout (MatLoad/VecLoad's manual pages), read and
// compared with the matrix they spell; the writer's bytes against the same hand-made ones;
// every malformed file refused with a message that says where. (PETSc's own MatLoad reading
// heptane's files, and heptane reading PETSc's -ksp_view_mat output, are checked by
// tests/cli_petsc_binary.sh where PETSc is installed.)
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "generators/matrix_file.hpp"
#include "generators/matrix_market.hpp"
#include "generators/petsc_binary.hpp"

using namespace heptane;
namespace fs = std::filesystem;

namespace {

// Big-endian bytes, built without the code under test.
struct Bytes {
    int ib = 4;  // PetscInt width
    std::string s;
    Bytes& i(long long v)
    {
        for (int k = ib - 1; k >= 0; --k)
            s.push_back(static_cast<char>((static_cast<unsigned long long>(v) >> (8 * k)) & 0xff));
        return *this;
    }
    Bytes& d(double v)
    {
        unsigned long long u = 0;
        std::memcpy(&u, &v, 8);
        for (int k = 7; k >= 0; --k) s.push_back(static_cast<char>((u >> (8 * k)) & 0xff));
        return *this;
    }
};

struct TmpDir {
    fs::path dir;
    TmpDir()
    {
        dir = fs::temp_directory_path() /
              ("heptane_petsc_bin_" + std::to_string(static_cast<long long>(::getpid())));
        fs::create_directories(dir);
    }
    ~TmpDir()
    {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::string file(const std::string& name, const std::string& bytes) const
    {
        const std::string p = (dir / name).string();
        std::ofstream(p, std::ios::binary) << bytes;
        return p;
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string slurp(const std::string& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The 3 x 4 matrix [[1 0 2 0] [0 0 0 0] [0 -3 0 4.5]] and b = (1, -2, 0.25).
Bytes example(int ib)
{
    Bytes b{ib, {}};
    b.i(1211216).i(3).i(4).i(4);  // class id, rows, cols, nnz
    b.i(2).i(0).i(2);             // row lengths
    b.i(0).i(2).i(1).i(3);        // columns
    b.d(1).d(2).d(-3).d(4.5);     // values
    b.i(1211214).i(3).d(1).d(-2).d(0.25);
    return b;
}

void check_example(const Coo<double>& a)
{
    BOOST_TEST(a.rows == 3);
    BOOST_TEST(a.cols == 4);
    BOOST_TEST(a.row.host() == (std::vector<index_t>{0, 0, 2, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(a.col.host() == (std::vector<index_t>{0, 2, 1, 3}),
               boost::test_tools::per_element());
    BOOST_TEST(a.val.host() == (std::vector<double>{1, 2, -3, 4.5}),
               boost::test_tools::per_element());
}

template <class E, class F>
std::string message_of(F&& f)
{
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "(nothing thrown)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(hand_made_files_read_as_the_matrix_and_vector_they_spell)
{
    TmpDir t;
    for (int ib : {4, 8}) {
        const std::string p = t.file("ex" + std::to_string(ib), example(ib).s);
        BOOST_TEST(is_petsc_binary(p));
        BOOST_TEST((file_format_of(p) == FileFormat::petsc_binary));
        const PetscBinaryContents c = read_petsc_binary(p);
        BOOST_TEST(c.index_bytes == ib);
        BOOST_TEST(c.objects == 2);
        BOOST_REQUIRE(c.matrix.has_value());
        check_example(*c.matrix);
        BOOST_REQUIRE(c.vectors.size() == 1U);
        BOOST_TEST(c.vectors[0] == (std::vector<double>{1, -2, 0.25}),
                   boost::test_tools::per_element());
        // through the format-neutral readers: the vector after the matrix is its rhs
        const MatrixFile m = read_matrix_file(p);
        check_example(m.a);
        BOOST_REQUIRE(m.rhs.has_value());
        BOOST_TEST(m.rhs->size() == 3U);
        BOOST_TEST(read_vector_file(p) == (std::vector<double>{1, -2, 0.25}),
                   boost::test_tools::per_element());
        BOOST_TEST(announced_entries(p) == 4);
    }
}

BOOST_AUTO_TEST_CASE(writer_emits_petscs_bytes_and_reads_them_back)
{
    TmpDir t;
    // from a non-canonical COO: the writer sorts row by row, as MatView writes
    Coo<double> a;
    a.rows = 3;
    a.cols = 4;
    a.row = Array<index_t>(std::vector<index_t>{2, 0, 2, 0});
    a.col = Array<index_t>(std::vector<index_t>{3, 2, 1, 0});
    a.val = Array<double>(std::vector<double>{4.5, 2, -3, 1});
    const std::vector<double> b{1, -2, 0.25};
    for (int ib : {4, 8}) {
        const std::string p = t.path("w" + std::to_string(ib) + ".petsc");
        write_petsc_binary(p, &a, {&b}, ib);
        BOOST_TEST(slurp(p) == example(ib).s);
        BOOST_TEST(!fs::exists(p + ".tmp"));
    }
    // write_matrix_file / write_vector_file pick the format from the name
    write_matrix_file(t.path("m.petsc"), a, "ignored comment");
    write_vector_file(t.path("v.petsc"), b, "");
    write_matrix_file(t.path("m.mtx"), a, "a comment");
    Bytes only_a = example(4);
    only_a.s.resize(only_a.s.size() - (8 + 3 * 8));  // drop the vector
    BOOST_TEST(slurp(t.path("m.petsc")) == only_a.s);
    BOOST_TEST(read_vector_file(t.path("v.petsc")) == b, boost::test_tools::per_element());
    BOOST_TEST((file_format_of(t.path("m.mtx")) == FileFormat::matrix_market));
    check_example(read_matrix_file(t.path("m.mtx")).a);
    check_example(read_matrix_file(t.path("m.petsc")).a);
    BOOST_TEST(!read_matrix_file(t.path("m.petsc")).rhs.has_value());
    BOOST_TEST(announced_entries(t.path("m.mtx")) == 4);
    BOOST_TEST(announced_entries(t.path("v.petsc")) == -1);  // a vector announces no entries
    // an empty matrix and a directory that does not exist
    Coo<double> empty;
    empty.rows = 2;
    empty.cols = 2;
    write_petsc_binary(t.path("e.petsc"), &empty, {}, 4);
    const Coo<double> e = read_petsc_binary_matrix(t.path("e.petsc"));
    BOOST_TEST(e.rows == 2);
    BOOST_TEST(e.nnz() == 0);
    BOOST_CHECK_THROW(write_petsc_binary(t.path("no/such/dir/x.petsc"), &a, {}, 4), IoError);
    BOOST_CHECK_THROW(write_petsc_binary(t.path("x.petsc"), &a, {}, 2), InputError);
}

BOOST_AUTO_TEST_CASE(rows_with_unsorted_or_repeated_columns_are_made_canonical)
{
    TmpDir t;
    Bytes b{4, {}};
    b.i(1211216).i(2).i(2).i(4).i(3).i(1);
    b.i(1).i(0).i(1).i(0);
    b.d(5).d(6).d(7).d(8);
    const Coo<double> a = read_petsc_binary_matrix(t.file("u", b.s));
    BOOST_TEST(a.row.host() == (std::vector<index_t>{0, 0, 1}), boost::test_tools::per_element());
    BOOST_TEST(a.col.host() == (std::vector<index_t>{0, 1, 0}), boost::test_tools::per_element());
    BOOST_TEST(a.val.host() == (std::vector<double>{6, 12, 8}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(malformed_files_are_refused_with_where_and_why)
{
    TmpDir t;
    auto fails = [&](const std::string& name, const std::string& bytes, const std::string& says) {
        const std::string p = t.file(name, bytes);
        const std::string m = message_of<InputError>([&] { read_petsc_binary(p); });
        BOOST_TEST_INFO(name << ": " << m);
        BOOST_TEST(m.find(says) != std::string::npos);
    };
    const std::string good = example(4).s;
    fails("truncated", good.substr(0, 40), "truncated");
    fails("truncated_vector", good.substr(0, good.size() - 4), "does not fit");
    {
        Bytes b{4, {}};
        b.i(1211216).i(3).i(4).i(5).i(2).i(0).i(2).i(0).i(2).i(1).i(3).i(0);
        b.d(1).d(2).d(-3).d(4.5).d(0);
        fails("lengths", b.s, "row lengths add up to 4, the header says 5");
    }
    {
        Bytes b{4, {}};
        b.i(1211216).i(3).i(4).i(4).i(2).i(0).i(2).i(0).i(4).i(1).i(3);
        b.d(1).d(2).d(-3).d(4.5);
        fails("column", b.s, "column of entry 2 is 4, outside [0, 3]");
    }
    {
        Bytes b{4, {}};
        b.i(1211216).i(2).i(2).i(-1).d(1).d(2).d(3).d(4);
        fails("dense", b.s, "stored dense");
    }
    {
        Bytes b{4, {}};
        b.i(1211216).i(-3).i(4).i(0);
        fails("negative", b.s, "sizes must lie in");
    }
    fails("second_matrix", good + good, "a second matrix");
    fails("stray", good + "xy", "2 stray bytes");
    {
        Bytes b{4, good};
        b.i(1211218).i(0);  // an IS after the objects heptane reads
        fails("unknown", b.s, "class id 1211218");
    }
    fails("not_petsc", "%%MatrixMarket matrix coordinate real general\n",
          "not a PETSc binary file");
    {
        Bytes v{4, {}};
        v.i(1211214).i(1).d(3);
        const std::string p = t.file("vector_only", v.s);
        const std::string m = message_of<InputError>([&] { read_matrix_file(p); });
        BOOST_TEST(m.find("1 vector(s) and no matrix") != std::string::npos);
        Bytes only_a{4, good.substr(0, good.size() - (4 + 4 + 3 * 8))};
        const std::string q = t.file("matrix_only", only_a.s);
        const std::string n = message_of<InputError>([&] { read_petsc_binary_vector(q); });
        BOOST_TEST(n.find("no vector") != std::string::npos);
    }
    BOOST_TEST(!is_petsc_binary(t.path("does_not_exist")));
    BOOST_CHECK_THROW(read_petsc_binary(t.path("does_not_exist")), IoError);
}

// A file of neither format (another program's binary, a PETSc file with its class id
// damaged, text without a banner): the format-neutral readers name both formats; a file
// that begins as Matrix Market does keeps the Matrix Market reader's own message.
BOOST_AUTO_TEST_CASE(a_file_of_neither_format_is_refused_naming_both)
{
    TmpDir t;
    Bytes damaged{4, example(4).s};
    damaged.s[0] = 'x';
    for (const std::string& bytes :
         {std::string("garbage!garbage!"), damaged.s, std::string("1 2 3\n4 5 6\n"),
          std::string("\xEF\xBB\xBFgarbage\n")}) {
        const std::string p = t.file("neither", bytes);
        for (const std::string& m : {message_of<InputError>([&] { read_matrix_file(p); }),
                                     message_of<InputError>([&] { read_vector_file(p); })}) {
            BOOST_TEST_CONTEXT(m)
            {
                BOOST_TEST(m.find("neither a Matrix Market file") != std::string::npos);
                BOOST_TEST(m.find("nor a PETSc binary file") != std::string::npos);
            }
        }
    }
    const std::string mm = t.file("mm", "%%MatrixMarket matrix coordinate real general\n2 2 1\n");
    const std::string m = message_of<InputError>([&] { read_matrix_file(mm); });
    BOOST_TEST(m.find("neither") == std::string::npos);
    BOOST_TEST(m.find("ends after") != std::string::npos, m);
}

BOOST_AUTO_TEST_CASE(matrix_market_and_petsc_binary_hold_the_same_generated_matrix)
{
    // a non-symmetric matrix with empty rows and columns, through both writers and readers
    TmpDir t;
    Coo<double> a;
    a.rows = 50;
    a.cols = 40;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < a.rows; i += 3)
        for (index_t j = (i * 7) % 5; j < a.cols; j += 1 + (i % 4)) {
            r.push_back(i);
            c.push_back(j);
            v.push_back(1.0 / (1 + i + 2 * j) - 0.01 * j);
        }
    a.row = Array<index_t>(r);
    a.col = Array<index_t>(c);
    a.val = Array<double>(v);
    write_matrix_file(t.path("g.mtx"), a, "");
    write_matrix_file(t.path("g.petsc"), a, "", true);
    const Coo<double> m = read_matrix_file(t.path("g.mtx")).a;
    const Coo<double> p = read_matrix_file(t.path("g.petsc")).a;
    BOOST_TEST(read_petsc_binary(t.path("g.petsc")).index_bytes == 8);
    BOOST_TEST(m.rows == p.rows);
    BOOST_TEST(m.cols == p.cols);
    BOOST_TEST(m.row.host() == p.row.host(), boost::test_tools::per_element());
    BOOST_TEST(m.col.host() == p.col.host(), boost::test_tools::per_element());
    BOOST_TEST(m.val.host() == p.val.host(), boost::test_tools::per_element());
    BOOST_TEST(p.val.host() == v, boost::test_tools::per_element());
}
