// PETSc binary files (see petsc_binary.hpp for the layout).
#include "generators/petsc_binary.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_bytes.hpp"

namespace heptane {
namespace {

std::uint64_t load_be(const unsigned char* p, int bytes)
{
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
    return v;
}

void store_be(std::uint64_t v, int bytes, unsigned char* p)
{
    for (int i = bytes - 1; i >= 0; --i) {
        p[i] = static_cast<unsigned char>(v & 0xffU);
        v >>= 8;
    }
}

// A PetscInt of `bytes` bytes as a signed value.
long long to_signed(std::uint64_t v, int bytes)
{
    if (bytes == 4) return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    return static_cast<long long>(v);
}

// Sequential big-endian reads of bytes in memory, with the offset kept for messages.
class Reader {
public:
    Reader(std::string_view data, std::string name) : data_(data), path_(std::move(name)) {}
    const std::string& path() const noexcept { return path_; }
    std::uint64_t pos() const noexcept { return pos_; }
    std::uint64_t left() const noexcept { return data_.size() - pos_; }

    const unsigned char* bytes(std::uint64_t n, const std::string& what)
    {
        if (n > left())
            HEPTANE_THROW(InputError, path_ << ": truncated at byte " << pos_ << ": " << what
                                            << " needs " << n << " bytes, the file has " << left()
                                            << " more");
        const auto* p = reinterpret_cast<const unsigned char*>(data_.data()) + pos_;
        pos_ += n;
        return p;
    }
    long long integer(int ib, const std::string& what)
    {
        return to_signed(load_be(bytes(std::uint64_t(ib), what), ib), ib);
    }
    // n PetscInts, each checked to lie in [lo, hi], into out (converted to Int); parallel
    template <class Int>
    void integers(int ib, std::size_t n, long long lo, long long hi, Int* out,
                  const std::string& what)
    {
        const std::uint64_t at = pos_;
        const unsigned char* p = bytes(std::uint64_t(n) * std::uint64_t(ib), what);
        std::size_t bad = n;
#pragma omp parallel for reduction(min : bad) schedule(static) if (n > 65536)
        for (std::size_t i = 0; i < n; ++i) {
            const long long v = to_signed(load_be(p + i * std::size_t(ib), ib), ib);
            if (v < lo || v > hi)
                bad = std::min(bad, i);
            else
                out[i] = static_cast<Int>(v);
        }
        if (bad < n) {
            const long long v = to_signed(load_be(p + bad * std::size_t(ib), ib), ib);
            HEPTANE_THROW(InputError, path_ << ": byte " << at + bad * std::uint64_t(ib) << ": "
                                            << what << " " << bad + 1 << " is " << v
                                            << ", outside [" << lo << ", " << hi << "]");
        }
    }
    void doubles(std::size_t n, double* out, const std::string& what)
    {
        const unsigned char* p = bytes(std::uint64_t(n) * 8U, what);
#pragma omp parallel for schedule(static) if (n > 65536)
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t bits = load_be(p + 8 * i, 8);
            std::memcpy(out + i, &bits, 8);
        }
    }

private:
    std::string_view data_;
    std::string path_;
    std::uint64_t pos_ = 0;
};

// The PetscInt width from the first bytes: 4 when they are a class id as a 32-bit integer,
// 8 as a 64-bit one, 0 when neither.
int index_bytes_of(const unsigned char* b, std::size_t n)
{
    auto is_id = [](long long v) { return v == petsc_mat_classid || v == petsc_vec_classid; };
    if (n >= 4 && is_id(to_signed(load_be(b, 4), 4))) return 4;
    if (n >= 8 && is_id(to_signed(load_be(b, 8), 8))) return 8;
    return 0;
}

Coo<double> read_matrix(Reader& in, int ib, int object)
{
    const std::string at = "object " + std::to_string(object) + " (a matrix)";
    const long long rows = in.integer(ib, at + ": rows");
    const long long cols = in.integer(ib, at + ": columns");
    const long long nnz = in.integer(ib, at + ": nonzeros");
    constexpr long long max_index = std::numeric_limits<index_t>::max();
    if (nnz < 0)
        HEPTANE_THROW(InputError, in.path() << ": " << at << " is stored dense (nonzeros " << nnz
                                            << "); heptane reads sparse (AIJ) matrices");
    if (rows < 0 || cols < 0 || rows > max_index || cols > max_index)
        HEPTANE_THROW(InputError, in.path() << ": " << at << " is " << rows << " x " << cols
                                            << ": sizes must lie in [0, " << max_index << "]");
    // the arrays must fit in what is left before anything is allocated (checked without
    // overflow: nnz may be anything in a damaged file)
    const std::uint64_t left = in.left();
    const bool fits = std::uint64_t(rows) <= left / std::uint64_t(ib) &&
                      std::uint64_t(nnz) <= (left - std::uint64_t(rows) * std::uint64_t(ib)) /
                                                (std::uint64_t(ib) + 8U);
    const double need = double(rows) * ib + double(nnz) * (ib + 8);  // for the message
    const std::string need_text =
        need < 9e18 ? std::to_string(static_cast<long long>(need)) : std::string("over 9e18");
    if (!fits)
        HEPTANE_THROW(InputError, in.path()
                                      << ": truncated: " << at << " of " << rows << " x " << cols
                                      << " with " << nnz << " nonzeros needs " << need_text
                                      << " bytes after its header, the file has " << in.left());
    std::vector<index_t> len(static_cast<std::size_t>(rows), 0);
    in.integers(ib, std::size_t(rows), 0, std::min(nnz, max_index), len.data(),
                at + ": length of row");
    long long sum = 0;
    for (index_t l : len) sum += l;
    if (sum != nnz)
        HEPTANE_THROW(InputError, in.path() << ": " << at << ": the row lengths add up to " << sum
                                            << ", the header says " << nnz << " nonzeros");
    Coo<double> a;
    a.rows = static_cast<index_t>(rows);
    a.cols = static_cast<index_t>(cols);
    a.row = Array<index_t>(std::vector<index_t>(std::size_t(nnz)));
    a.col = Array<index_t>(std::vector<index_t>(std::size_t(nnz)));
    a.val = Array<double>(std::vector<double>(std::size_t(nnz)));
    in.integers(ib, std::size_t(nnz), 0, cols - 1, a.col.data(), at + ": column of entry");
    in.doubles(std::size_t(nnz), a.val.data(), at + ": values");
    // rows from the lengths; canonical already when every row's columns ascend
    bool sorted = true;
    std::size_t k = 0;
    for (index_t r = 0; r < a.rows; ++r) {
        const std::size_t e = k + std::size_t(len[std::size_t(r)]);
        for (std::size_t j = k; j < e; ++j) {
            a.row[j] = r;
            if (j > k && a.col[j] <= a.col[j - 1]) sorted = false;
        }
        k = e;
    }
    if (!sorted) canonicalize(a, DuplicatePolicy::sum);
    return a;
}

}  // namespace

bool is_petsc_binary(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    unsigned char b[8] = {};
    in.read(reinterpret_cast<char*>(b), sizeof b);
    return index_bytes_of(b, std::size_t(in.gcount())) != 0;
}

long long petsc_binary_announced_nnz(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    unsigned char b[32] = {};
    in.read(reinterpret_cast<char*>(b), sizeof b);
    const std::size_t n = std::size_t(in.gcount());
    const int ib = index_bytes_of(b, n);
    if (ib == 0 || n < 4 * std::size_t(ib)) return -1;
    if (to_signed(load_be(b, ib), ib) != petsc_mat_classid) return -1;
    return to_signed(load_be(b + 3 * ib, ib), ib);
}

PetscBinaryContents read_petsc_binary(const std::string& path)
{
    const FileBytes file(path);
    return read_petsc_binary_buffer(file.view(), path);
}

PetscBinaryContents read_petsc_binary_buffer(std::string_view data, const std::string& path)
{
    Reader in(data, path);
    PetscBinaryContents c;
    c.index_bytes = index_bytes_of(reinterpret_cast<const unsigned char*>(data.data()),
                                   std::min<std::size_t>(8, data.size()));
    if (c.index_bytes == 0)
        HEPTANE_THROW(InputError, path << ": not a PETSc binary file (it does not start with a "
                                       << "matrix or vector class id, " << petsc_mat_classid
                                       << " or " << petsc_vec_classid << ")");
    const int ib = c.index_bytes;
    while (in.left() > 0) {
        const std::uint64_t at = in.pos();
        const int object = c.objects + 1;
        if (in.left() < std::uint64_t(ib))
            HEPTANE_THROW(InputError, path << ": " << in.left() << " stray bytes at byte " << at
                                           << ", after object " << c.objects
                                           << " (a file of a single-precision or complex "
                                           << "PETSc? heptane reads real double scalars)");
        const long long id = in.integer(ib, "a class id");
        if (id == petsc_mat_classid) {
            if (c.matrix)
                HEPTANE_THROW(InputError, path << ": byte " << at << ": object " << object
                                               << " is a second matrix; heptane reads one");
            c.matrix = read_matrix(in, ib, object);
        } else if (id == petsc_vec_classid) {
            const std::string what = "object " + std::to_string(object) + " (a vector)";
            const long long n = in.integer(ib, what + ": length");
            if (n < 0 || std::uint64_t(n) > in.left() / 8U)
                HEPTANE_THROW(InputError, path << ": byte " << at << ": " << what << " of length "
                                               << n << " does not fit in the " << in.left()
                                               << " bytes left");
            std::vector<double> v(static_cast<std::size_t>(n));
            in.doubles(std::size_t(n), v.data(), what + ": values");
            c.vectors.push_back(std::move(v));
        } else {
            HEPTANE_THROW(InputError, path << ": byte " << at << ": object " << object
                                           << " has class id " << id << ", neither a matrix ("
                                           << petsc_mat_classid << ") nor a vector ("
                                           << petsc_vec_classid
                                           << "); after a single-precision or complex PETSc's "
                                           << "object? heptane reads real double scalars");
        }
        ++c.objects;
    }
    return c;
}

Coo<double> read_petsc_binary_matrix(const std::string& path)
{
    PetscBinaryContents c = read_petsc_binary(path);
    HEPTANE_ENSURE(
        c.matrix.has_value(), InputError,
        path << ": a PETSc binary file with " << c.vectors.size() << " vector(s) and no matrix");
    return std::move(*c.matrix);
}

std::vector<double> read_petsc_binary_vector(const std::string& path)
{
    PetscBinaryContents c = read_petsc_binary(path);
    HEPTANE_ENSURE(!c.vectors.empty(), InputError,
                   path << ": a PETSc binary file with no vector (it holds "
                        << (c.matrix ? "a matrix" : "nothing") << ")");
    return std::move(c.vectors.front());
}

void write_petsc_binary(const std::string& path, const Coo<double>* a,
                        const std::vector<const std::vector<double>*>& vectors, int index_bytes)
{
    HEPTANE_ENSURE(index_bytes == 4 || index_bytes == 8, InputError,
                   "PETSc binary: PetscInt is 4 or 8 bytes, not " << index_bytes);
    const long long max_int = index_bytes == 4 ? std::numeric_limits<std::int32_t>::max()
                                               : std::numeric_limits<long long>::max();
    auto fits = [&](long long v, const char* what) {
        HEPTANE_ENSURE(v <= max_int, InputError,
                       "cannot write '" << path << "': " << what << " " << v
                                        << " does not fit a 32-bit PetscInt (write 64-bit "
                                        << "indices, for a PETSc configured "
                                        << "--with-64-bit-indices)");
    };
    AtomicFile out(path);
    std::vector<unsigned char> buf;
    auto put = [&](long long v) {
        const std::size_t at = buf.size();
        buf.resize(at + std::size_t(index_bytes));
        store_be(static_cast<std::uint64_t>(v), index_bytes, buf.data() + at);
    };
    auto put_double = [&](double v) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, 8);
        const std::size_t at = buf.size();
        buf.resize(at + 8);
        store_be(bits, 8, buf.data() + at);
    };
    auto flush = [&](bool force) {
        if (force || buf.size() >= (std::size_t(1) << 22)) {
            out.write(reinterpret_cast<const char*>(buf.data()), buf.size());
            buf.clear();
        }
    };
    if (a) {
        Coo<double> sorted;
        const Coo<double>* m = a;
        if (!a->val.on_host() || !is_canonical(*a)) {
            sorted = a->to(cpu_executor());
            canonicalize(sorted, DuplicatePolicy::sum);
            m = &sorted;
        }
        const std::size_t nnz = std::size_t(m->nnz());
        fits(m->rows, "rows");
        fits(m->cols, "columns");
        fits(static_cast<long long>(nnz), "nonzeros");
        put(petsc_mat_classid);
        put(m->rows);
        put(m->cols);
        put(static_cast<long long>(nnz));
        std::vector<long long> len(std::size_t(m->rows), 0);
        for (std::size_t k = 0; k < nnz; ++k) ++len[std::size_t(m->row[k])];
        for (long long l : len) {
            put(l);
            flush(false);
        }
        for (std::size_t k = 0; k < nnz; ++k) {
            put(m->col[k]);
            flush(false);
        }
        for (std::size_t k = 0; k < nnz; ++k) {
            put_double(m->val[k]);
            flush(false);
        }
    }
    for (const std::vector<double>* v : vectors) {
        HEPTANE_ENSURE(v != nullptr, InputError, "write_petsc_binary: a null vector");
        fits(static_cast<long long>(v->size()), "vector length");
        put(petsc_vec_classid);
        put(static_cast<long long>(v->size()));
        for (double x : *v) {
            put_double(x);
            flush(false);
        }
    }
    flush(true);
    out.commit();
}

}  // namespace heptane
