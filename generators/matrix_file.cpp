// Matrix and vector files by format (see matrix_file.hpp).
#include "generators/matrix_file.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "generators/matrix_market.hpp"
#include "generators/petsc_binary.hpp"

namespace heptane {

FileFormat file_format_of(const std::string& path)
{
    return is_petsc_binary(path) ? FileFormat::petsc_binary : FileFormat::matrix_market;
}

FileFormat file_format_for_writing(const std::string& path)
{
    const std::string ext = ".petsc";
    return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0
               ? FileFormat::petsc_binary
               : FileFormat::matrix_market;
}

const char* to_string(FileFormat f) noexcept
{
    return f == FileFormat::petsc_binary ? "PETSc binary" : "Matrix Market";
}

namespace {

/// A file that is not PETSc binary and does not begin as Matrix Market does ('%', after a
/// UTF-8 byte order mark): an InputError naming both formats, rather than the Matrix Market
/// reader's "missing banner" alone (a binary file of another program, say). An empty or
/// unreadable file is left to the readers' own messages.
void ensure_a_known_format(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    unsigned char b[4] = {};
    in.read(reinterpret_cast<char*>(b), sizeof b);
    const std::size_t n = std::size_t(in.gcount());
    if (n == 0) return;
    const bool bom = n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF;
    if ((bom ? (n < 4 || b[3] == '%') : b[0] == '%') || is_petsc_binary(path)) return;
    HEPTANE_THROW(InputError,
                  path << ": neither a Matrix Market file (its first line would begin with "
                          "'%%MatrixMarket') nor a PETSc binary file (it would begin with "
                          "PETSc's Mat or Vec class id, 1211216 or 1211214, as a big-endian "
                          "32- or 64-bit integer)");
}

}  // namespace

MatrixFile read_matrix_file(const std::string& path)
{
    {  // a heptane out-of-core chunk file (formats/outofcore) is neither format: say what it is
        std::ifstream in(path, std::ios::binary);
        char head[8] = {};
        if (in.read(head, 8) && std::string(head, 8) == "HEPTHOC1")
            HEPTANE_THROW(InputError, path
                                          << " is a heptane out-of-core chunk file (.hoc): heptane "
                                             "solve (one process), mlem and lsqr read it as it is, "
                                             "heptane info describes it; `heptane convert "
                                          << path << " -o A.mtx` writes it as Matrix Market");
    }
    ensure_a_known_format(path);
    MatrixFile m;
    m.format = file_format_of(path);
    if (m.format == FileFormat::matrix_market) {
        m.a = read_matrix_market<double>(path);
        return m;
    }
    PetscBinaryContents c = read_petsc_binary(path);
    HEPTANE_ENSURE(
        c.matrix.has_value(), InputError,
        path << ": a PETSc binary file with " << c.vectors.size() << " vector(s) and no matrix");
    m.a = std::move(*c.matrix);
    if (!c.vectors.empty()) m.rhs = std::move(c.vectors.front());
    return m;
}

std::vector<double> read_vector_file(const std::string& path)
{
    ensure_a_known_format(path);
    if (file_format_of(path) == FileFormat::petsc_binary) return read_petsc_binary_vector(path);
    return read_matrix_market_vector<double>(path);
}

long long announced_entries(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return -1;
    if (file_format_of(path) == FileFormat::petsc_binary) return petsc_binary_announced_nnz(path);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '%') {
            long long rows = 0, cols = 0, nnz = -1;
            std::istringstream(line) >> rows >> cols >> nnz;
            return nnz;
        }
    return -1;
}

void write_matrix_file(const std::string& path, const Coo<double>& a, const std::string& comment,
                       bool petsc_int64)
{
    if (file_format_for_writing(path) == FileFormat::petsc_binary)
        write_petsc_binary(path, &a, {}, petsc_int64 ? 8 : 4);
    else
        write_matrix_market(path, a, comment);
}

void write_vector_file(const std::string& path, const std::vector<double>& x,
                       const std::string& comment, bool petsc_int64)
{
    if (file_format_for_writing(path) == FileFormat::petsc_binary)
        write_petsc_binary(path, nullptr, {&x}, petsc_int64 ? 8 : 4);
    else
        write_matrix_market_vector(path, x, comment);
}

}  // namespace heptane
