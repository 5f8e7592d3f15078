// Chunk files (.hoc) of the out-of-core operator: writing (HocWriter, save_ooc_file), reading
// the table (ooc_file_info, open_ooc_file) and blocks (OocMatrix::read_chunk), and the check
// every block read from a file gets once. Layout: outofcore_file.hpp.
#include "formats/outofcore/outofcore_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif

namespace heptane {

namespace detail {

namespace {
const char hoc_magic[8] = {'H', 'E', 'P', 'T', 'H', 'O', 'C', '1'};
const char hoc_trailer_magic[8] = {'H', 'E', 'P', 'T', 'H', 'O', 'C', 'T'};

std::uint64_t fnv1a(const void* p, std::size_t n)
{
    const auto* b = static_cast<const unsigned char*>(p);
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
}  // namespace

HocWriter::HocWriter(const std::string& path, int value_bytes)
    : path_(path), f_(path), value_bytes_(value_bytes)
{
    std::vector<char> head(hoc_header_bytes, 0);
    std::memcpy(head.data(), hoc_magic, 8);
    const std::uint32_t version = 1, vb = static_cast<std::uint32_t>(value_bytes);
    std::memcpy(head.data() + 8, &version, 4);
    std::memcpy(head.data() + 12, &vb, 4);
    f_.write(head.data(), head.size());
    at_ = hoc_header_bytes;
}

std::uint64_t HocWriter::write_block(const void* data, std::size_t bytes)
{
    const std::uint64_t off = at_;
    f_.write(static_cast<const char*>(data), bytes);
    static const std::vector<char> zeros(hoc_align, 0);
    const std::size_t pad = hoc_round(bytes) - bytes;
    f_.write(zeros.data(), pad);
    at_ += bytes + pad;
    return off;
}

void HocWriter::finish(const std::vector<OocChunk>& chunks, index_t rows, index_t cols,
                       offset_t nnz)
{
    std::vector<std::uint64_t> table;
    table.reserve(chunks.size() * hoc_record_words);
    for (const auto& c : chunks) {
        const std::uint64_t rec[hoc_record_words] = {c.file_offset,
                                                     c.bytes,
                                                     c.col_off,
                                                     c.val_off,
                                                     std::uint64_t(c.row0),
                                                     std::uint64_t(c.rows),
                                                     std::uint64_t(c.nnz),
                                                     std::uint64_t(c.lanes),
                                                     std::uint64_t(c.nc),
                                                     std::uint64_t(c.block_diagonals)};
        table.insert(table.end(), rec, rec + hoc_record_words);
    }
    const std::uint64_t table_at = at_;
    f_.write(reinterpret_cast<const char*>(table.data()), table.size() * 8);
    std::uint64_t trailer[8] = {0,
                                table_at,
                                chunks.size(),
                                std::uint64_t(rows),
                                std::uint64_t(cols),
                                std::uint64_t(nnz),
                                fnv1a(table.data(), table.size() * 8),
                                std::uint64_t(value_bytes_)};
    std::memcpy(&trailer[0], hoc_trailer_magic, 8);
    f_.write(reinterpret_cast<const char*>(trailer), sizeof trailer);
    f_.commit();
}

namespace {

struct Fd {
    int fd = -1;
    ~Fd()
    {
        if (fd >= 0) ::close(fd);
    }
};

/// pread all of [off, off + n) or throw.
void pread_all(int fd, void* dst, std::size_t n, std::uint64_t off, const std::string& path)
{
    char* p = static_cast<char*>(dst);
    while (n > 0) {
        const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(off));
        if (got < 0 && errno == EINTR) continue;
        HEPTANE_ENSURE(got >= 0, IoError, "cannot read '" << path << "': " << std::strerror(errno));
        HEPTANE_ENSURE(got > 0, IoError,
                       "'" << path << "' ends at byte " << off << ": truncated chunk file");
        p += got;
        n -= std::size_t(got);
        off += std::uint64_t(got);
    }
}

/// The table and trailer of an open chunk file, checked for consistency.
OocFileInfo read_table(int fd, const std::string& path, std::vector<OocChunk>& chunks)
{
    struct stat st {};
    HEPTANE_ENSURE(::fstat(fd, &st) == 0, IoError,
                   "cannot stat '" << path << "': " << std::strerror(errno));
    const std::uint64_t size = std::uint64_t(st.st_size);
    const auto bad = [&](const char* why) {
        HEPTANE_THROW(InputError,
                      "'" << path << "' is not a valid heptane chunk file (.hoc): " << why);
    };
    if (size < hoc_header_bytes + hoc_trailer_bytes) bad("too short");
    char head[16];
    pread_all(fd, head, sizeof head, 0, path);
    if (std::memcmp(head, hoc_magic, 8) != 0) bad("no HEPTHOC1 header");
    std::uint32_t version = 0, vb = 0;
    std::memcpy(&version, head + 8, 4);
    std::memcpy(&vb, head + 12, 4);
    if (version != 1) bad("unknown version");
    if (vb != 4 && vb != 8) bad("value size is neither 4 nor 8 bytes");
    std::uint64_t tr[8];
    pread_all(fd, tr, sizeof tr, size - hoc_trailer_bytes, path);
    if (std::memcmp(&tr[0], hoc_trailer_magic, 8) != 0)
        bad("no trailer (truncated, or still being written)");
    const std::uint64_t table_at = tr[1], n = tr[2], rows = tr[3], cols = tr[4], nnz = tr[5];
    if (tr[7] != vb) bad("header and trailer disagree on the value size");
    if (rows > std::uint64_t(std::numeric_limits<index_t>::max()) ||
        cols > std::uint64_t(std::numeric_limits<index_t>::max()) || n > rows + 1)
        bad("row, column or chunk count out of range");
    if (table_at < hoc_header_bytes ||
        table_at + n * hoc_record_words * 8 + hoc_trailer_bytes != size)
        bad("the table does not end where the trailer starts");
    std::vector<std::uint64_t> table(n * hoc_record_words);
    if (n > 0) pread_all(fd, table.data(), table.size() * 8, table_at, path);
    if (fnv1a(table.data(), table.size() * 8) != tr[6]) bad("the table's checksum is wrong");
    OocFileInfo info;
    info.rows = index_t(rows);
    info.cols = index_t(cols);
    info.nnz = offset_t(nnz);
    info.value_bytes = int(vb);
    info.chunks = index_t(n);
    chunks.clear();
    std::uint64_t next_row = 0, sum_nnz = 0, end = hoc_header_bytes;
    for (std::uint64_t k = 0; k < n; ++k) {
        const std::uint64_t* r = &table[k * hoc_record_words];
        OocChunk c;
        c.file_offset = r[0];
        c.bytes = r[1];
        c.col_off = r[2];
        c.val_off = r[3];
        const std::uint64_t row0 = r[4], crows = r[5], cnnz = r[6], lanes = r[7], nc = r[8],
                            nd = r[9];
        if (row0 != next_row || crows == 0 || row0 + crows > rows) bad("chunk rows out of order");
        if (cnnz > std::numeric_limits<std::uint32_t>::max()) bad("a chunk of 2^32 entries");
        if (nc == 0) {
            const std::uint64_t col_off = (((crows + 1) * 4) + 15) / 16 * 16;
            const std::uint64_t val_off = ((col_off + cnnz * 4) + 15) / 16 * 16;
            if (nd != 0 || c.col_off != col_off || c.val_off != val_off ||
                c.bytes != val_off + cnnz * vb)
                bad("a chunk's layout does not match its rows and entries");
        } else {  // BDIA-GH: [offsets][values]
            if (nc > 64 || nd < 1 || nd > 64 || row0 % nc != 0 || crows % nc != 0 ||
                cols % nc != 0 || c.col_off != 0 || c.val_off != (nd * 4 + 15) / 16 * 16 ||
                c.bytes != c.val_off + nd * nc * crows * vb || cnnz > nd * nc * crows)
                bad("a BDIA-GH chunk's layout does not match its rows and block diagonals");
        }
        if (c.file_offset % hoc_align != 0 || c.file_offset < end ||
            c.file_offset + hoc_round(c.bytes) > table_at)
            bad("a chunk's block lies outside the file's block area");
        if (lanes < 1 || lanes > 32) bad("a chunk's lanes are outside 1..32");
        c.row0 = index_t(row0);
        c.rows = index_t(crows);
        c.nnz = offset_t(cnnz);
        c.lanes = int(lanes);
        c.nc = int(nc);
        c.block_diagonals = int(nd);
        end = c.file_offset + hoc_round(c.bytes);
        next_row = row0 + crows;
        sum_nnz += cnnz;
        info.bytes += c.bytes;
        info.max_chunk = std::max(info.max_chunk, c.bytes);
        chunks.push_back(c);
    }
    if (next_row != rows || sum_nnz != nnz) bad("the chunks' rows or entries do not add up");
    return info;
}

}  // namespace

}  // namespace detail

bool is_ooc_file(const std::string& path)
{
    return path.size() > 4 && path.compare(path.size() - 4, 4, ".hoc") == 0;
}

OocFileInfo ooc_file_info(const std::string& path)
{
    detail::Fd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    HEPTANE_ENSURE(f.fd >= 0, IoError, "cannot open '" << path << "': " << std::strerror(errno));
    std::vector<OocChunk> chunks;
    return detail::read_table(f.fd, path, chunks);
}

template <class MT>
void check_ooc_block(const OocChunk& c, const void* block, index_t cols, const std::string& where)
{
    const char* p = static_cast<const char*>(block);
    if (c.nc > 0) {  // BDIA-GH: ascending, distinct block offsets; the columns follow from them
        const auto* off = reinterpret_cast<const std::int32_t*>(p + c.col_off);
        for (int q = 1; q < c.block_diagonals; ++q)
            HEPTANE_ENSURE(off[q] > off[q - 1], InputError,
                           where << ": the block offsets of the chunk at row " << c.row0 + 1
                                 << " are not ascending");
        return;
    }
    const auto* rp = reinterpret_cast<const std::uint32_t*>(p);
    const auto* col = reinterpret_cast<const std::uint32_t*>(p + c.col_off);
    HEPTANE_ENSURE(rp[0] == 0 && rp[c.rows] == c.nnz, InputError,
                   where << ": the row pointers of the chunk at row " << c.row0 + 1
                         << " do not run from 0 to its " << c.nnz << " entries");
    long long bad_rows = 0, bad_cols = 0;
#pragma omp parallel for reduction(+ : bad_rows) if (c.rows > 65536)
    for (long long i = 0; i < c.rows; ++i) bad_rows += rp[i + 1] < rp[i] ? 1 : 0;
    const long long nnz = static_cast<long long>(c.nnz);
    const std::uint32_t ncols = static_cast<std::uint32_t>(cols);
#pragma omp parallel for reduction(+ : bad_cols) if (nnz > 262144)
    for (long long k = 0; k < nnz; ++k) bad_cols += col[k] >= ncols ? 1 : 0;
    HEPTANE_ENSURE(
        bad_rows == 0, InputError,
        where << ": " << bad_rows << " decreasing row pointers in the chunk at row " << c.row0 + 1);
    HEPTANE_ENSURE(bad_cols == 0, InputError,
                   where << ": " << bad_cols << " column indices >= " << cols
                         << " in the chunk at row " << c.row0 + 1);
}

template <class MT>
std::size_t OocMatrix<MT>::host_bytes() const noexcept
{
    std::size_t s = 0;
    for (const auto& c : chunks_) s += c.data ? c.bytes : 0;
    return s;
}

template <class MT>
std::size_t OocMatrix<MT>::file_read_bytes(index_t k) const
{
    return detail::hoc_round(chunks_.at(std::size_t(k)).bytes);
}

template <class MT>
std::vector<std::int32_t> OocMatrix<MT>::block_offsets(index_t k) const
{
    const OocChunk& c = chunks_.at(std::size_t(k));
    std::vector<std::int32_t> off(std::size_t(c.nc > 0 ? c.block_diagonals : 0));
    const std::size_t n = off.size() * sizeof(std::int32_t);
    if (n == 0) return off;
    if (c.data) {
        std::memcpy(off.data(), static_cast<const char*>(c.data) + c.col_off, n);
    } else {
        HEPTANE_ENSURE(fd_ >= 0, InputError, "out-of-core matrix: no chunk file to read from");
        detail::pread_all(fd_, off.data(), n, c.file_offset + c.col_off, file_);
    }
    return off;
}

template <class MT>
void OocMatrix<MT>::read_chunk(index_t k, void* dst, bool check) const
{
    HEPTANE_ENSURE(fd_ >= 0, InputError, "out-of-core matrix: no chunk file to read from");
    const OocChunk& c = chunks_.at(std::size_t(k));
    const std::size_t n = detail::hoc_round(c.bytes);
    // pieces of 2 MB over the threads: one thread's pread from the page cache runs at a
    // fraction of what the memory system gives several (a 64 MB chunk: 32 pieces)
    const std::size_t piece = std::size_t(2) << 20;
    const long long pieces = static_cast<long long>((n + piece - 1) / piece);
    std::string err;
#pragma omp parallel for schedule(dynamic, 1) if (pieces > 1)
    for (long long t = 0; t < pieces; ++t) {
        const std::size_t off = std::size_t(t) * piece;
        try {
            detail::pread_all(fd_, static_cast<char*>(dst) + off, std::min(piece, n - off),
                              c.file_offset + off, file_);
        } catch (const std::exception& e) {
#pragma omp critical(heptane_ooc_read)
            err = e.what();
        }
    }
    if (!err.empty()) HEPTANE_THROW(IoError, err);
    if (check) check_ooc_block<MT>(c, dst, cols_, file_);
}

template <class MT>
void OocMatrix<MT>::close_file() noexcept
{
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

template <class MT>
OocMatrix<MT> open_ooc_file(const std::string& path, const OocFileOptions& opt)
{
    detail::Fd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    HEPTANE_ENSURE(f.fd >= 0, IoError, "cannot open '" << path << "': " << std::strerror(errno));
    std::vector<OocChunk> chunks;
    const OocFileInfo info = detail::read_table(f.fd, path, chunks);
    HEPTANE_ENSURE(info.value_bytes == int(sizeof(MT)), InputError,
                   "'" << path << "' holds fp" << info.value_bytes * 8 << " values, not fp"
                       << sizeof(MT) * 8 << " (--precision "
                       << (info.value_bytes == 4 ? "single or mixed" : "double") << ")");
#ifndef HEPTANE_HAVE_CUDA
    HEPTANE_ENSURE(!opt.pinned, NotSupported, "page-locked chunks in a build without CUDA");
#endif
    OocMatrix<MT> m;
    m.rows_ = info.rows;
    m.cols_ = info.cols;
    m.nnz_ = info.nnz;
    m.bytes_ = info.bytes;
    m.max_chunk_ = info.max_chunk;
    m.pinned_ = opt.pinned;
    m.chunks_ = std::move(chunks);
    m.file_ = path;
    m.fd_ = f.fd;
    f.fd = -1;
    // the trailing chunks into memory while they fit (the leading ones are those an operator
    // keeps on the device)
    std::size_t used = 0;
    const std::size_t lo = std::size_t(std::max<index_t>(0, opt.first_chunk));
    const std::size_t hi = opt.last_chunk < 0
                               ? m.chunks_.size()
                               : std::min(m.chunks_.size(), std::size_t(opt.last_chunk));
    for (std::size_t k = hi; k-- > lo;) {
        OocChunk& c = m.chunks_[k];
        const std::size_t b = detail::hoc_round(c.bytes);
        if (used + b > opt.host_memory) break;
        void* p = nullptr;
        if (opt.pinned) {
#ifdef HEPTANE_HAVE_CUDA
            const cudaError_t e = cudaHostAlloc(&p, b, cudaHostAllocPortable);
            HEPTANE_ENSURE(e == cudaSuccess, DeviceError,
                           "page-locked host allocation of "
                               << b << " bytes failed: " << cudaGetErrorString(e)
                               << " (lower --host-memory)");
#endif
        } else {
            p = std::aligned_alloc(detail::hoc_align, b);
            HEPTANE_ENSURE(p, DeviceError, "host allocation of " << b << " bytes failed");
        }
        c.data = p;  // owned by m from here (freed by its destructor)
        m.read_chunk(index_t(k), p, true);
        used += b;
    }
    return m;
}

namespace {
/// Chunk k's block: in memory, or read from the file into one buffer (reused).
template <class MT>
class BlockReader {
public:
    explicit BlockReader(const OocMatrix<MT>& m) : m_(m) {}
    ~BlockReader() { std::free(buf_); }
    BlockReader(const BlockReader&) = delete;
    BlockReader& operator=(const BlockReader&) = delete;
    const void* block(index_t k)
    {
        const OocChunk& c = m_.chunks()[std::size_t(k)];
        if (c.data) return c.data;
        if (!buf_) {
            buf_ = std::aligned_alloc(detail::hoc_align, detail::hoc_round(m_.max_chunk_bytes()));
            HEPTANE_ENSURE(buf_, DeviceError, "host allocation for a chunk failed");
        }
        m_.read_chunk(k, buf_, true);
        return buf_;
    }

private:
    const OocMatrix<MT>& m_;
    void* buf_ = nullptr;
};
}  // namespace

template <class MT>
void save_ooc_file(const OocMatrix<MT>& m, const std::string& path)
{
    detail::HocWriter w(path, int(sizeof(MT)));
    std::vector<OocChunk> chunks = m.chunks();
    BlockReader<MT> r(m);
    for (std::size_t k = 0; k < chunks.size(); ++k)
        chunks[k].file_offset = w.write_block(r.block(index_t(k)), chunks[k].bytes);
    w.finish(chunks, m.rows(), m.cols(), m.nnz());
}

namespace {

// Calls f(row, col, value) for every stored entry of chunks [first, k1) of m, the blocks read
// one at a time (from the file where they are there; of BDIA-GH chunks the non-zero slots
// inside the matrix).
template <class MT, class F>
void visit_entries(const OocMatrix<MT>& m, std::size_t first, std::size_t k1, F&& f)
{
    BlockReader<MT> r(m);
    for (std::size_t k = first; k < k1; ++k) {
        const OocChunk& c = m.chunks()[k];
        const char* p = static_cast<const char*>(r.block(index_t(k)));
        if (c.nc > 0) {  // BDIA-GH: the non-zero slots
            const auto* off = reinterpret_cast<const std::int32_t*>(p + c.col_off);
            const auto* v = reinterpret_cast<const MT*>(p + c.val_off);
            for (index_t i = 0; i < c.rows; ++i) {
                const index_t rr = c.row0 + i, base = rr - rr % c.nc;
                for (int q = 0; q < c.block_diagonals; ++q)
                    for (int s = 0; s < c.nc; ++s) {
                        const index_t j = base + index_t(off[q]) * c.nc + s;
                        const MT x = v[std::size_t(q * c.nc + s) * std::size_t(c.rows) + i];
                        if (j >= 0 && j < m.cols() && x != MT(0)) f(rr, j, double(x));
                    }
            }
            continue;
        }
        const auto* rp = reinterpret_cast<const std::uint32_t*>(p);
        const auto* ci = reinterpret_cast<const std::uint32_t*>(p + c.col_off);
        const auto* v = reinterpret_cast<const MT*>(p + c.val_off);
        for (index_t i = 0; i < c.rows; ++i)
            for (std::uint32_t q = rp[i]; q < rp[i + 1]; ++q)
                f(c.row0 + i, index_t(ci[q]), double(v[q]));
    }
}

// The entries of chunks [first, last) of m (last < 0: to the end) for which keep(row, col), as
// canonical COO: of m.rows() x m.cols() for every chunk, else of the square block of the
// chunks' rows, rows and columns less their first row.
template <class MT, class Keep>
Coo<double> collect_entries(const OocMatrix<MT>& m, std::size_t expected, Keep keep,
                            index_t first = 0, index_t last = -1)
{
    const std::size_t k1 = last < 0 ? m.chunks().size() : std::size_t(last);
    const bool part = first > 0 || k1 < m.chunks().size();
    const index_t shift = part ? m.chunks()[std::size_t(first)].row0 : 0;
    std::vector<index_t> row, col;
    std::vector<double> val;
    row.reserve(expected);
    col.reserve(expected);
    val.reserve(expected);
    index_t rows = 0;
    for (std::size_t k = std::size_t(first); k < k1; ++k) rows += m.chunks()[k].rows;
    visit_entries(m, std::size_t(first), k1, [&](index_t i, index_t j, double x) {
        if (!keep(i, j)) return;
        row.push_back(i - shift);
        col.push_back(j - shift);
        val.push_back(x);
    });
    Coo<double> a{part ? rows : m.rows(), part ? rows : m.cols(), Array<index_t>(std::move(row)),
                  Array<index_t>(std::move(col)), Array<double>(std::move(val))};
    canonicalize(a);
    return a;
}

}  // namespace

template <class MT>
Coo<double> to_coo(const OocMatrix<MT>& m)
{
    return collect_entries(m, std::size_t(m.nnz()), [](index_t, index_t) { return true; });
}

template <class MT>
void ooc_reference_product(const OocMatrix<MT>& m, bool transpose, const double* x, double* y,
                           double* scale)
{
    const std::size_t ny = std::size_t(transpose ? m.cols() : m.rows());
    std::fill(y, y + ny, 0.0);
    if (scale) std::fill(scale, scale + ny, 0.0);
    visit_entries(m, 0, m.chunks().size(), [&](index_t i, index_t j, double v) {
        const index_t to = transpose ? j : i, from = transpose ? i : j;
        y[to] += v * x[from];
        if (scale) scale[to] += std::abs(v * x[from]);
    });
}

template <class MT>
Csr<double> ooc_block_diagonal(const OocMatrix<MT>& m, index_t nc, index_t first_chunk,
                               index_t last_chunk)
{
    const index_t count = index_t(m.chunks().size());
    const index_t last = last_chunk < 0 ? count : last_chunk;
    HEPTANE_ENSURE(
        nc >= 1 && m.rows() == m.cols() && 0 <= first_chunk && first_chunk < last && last <= count,
        InputError,
        "the diagonal blocks of chunks [" << first_chunk << ", " << last << ") of a " << m.rows()
                                          << " x " << m.cols() << " matrix of " << count
                                          << " chunks: it must be square, the range "
                                             "within the chunks");
    const index_t r0 = m.chunks()[std::size_t(first_chunk)].row0;
    const OocChunk& end = m.chunks()[std::size_t(last - 1)];
    const index_t r1 = end.row0 + end.rows;
    HEPTANE_ENSURE(r0 % nc == 0 && r1 % nc == 0, InputError,
                   "the diagonal blocks of rows [" << r0 << ", " << r1
                                                   << "): the rows must start and end on a "
                                                      "block of "
                                                   << nc);
    return csr_from_coo(collect_entries(
        m, std::size_t(r1 - r0) * std::size_t(nc),
        [nc](index_t i, index_t j) { return i / nc == j / nc; }, first_chunk, last));
}

index_t ooc_block_size(const std::vector<OocChunk>& chunks)
{
    int nc = 0;
    for (const OocChunk& c : chunks) {
        if (c.nc <= 0) return 1;
        nc = nc == 0 ? c.nc : (nc == c.nc ? nc : 1);
    }
    return nc > 0 ? nc : 1;
}

#define HEPTANE_INSTANTIATE_FILE(MT)                                                              \
    template void check_ooc_block<MT>(const OocChunk&, const void*, index_t, const std::string&); \
    template std::size_t OocMatrix<MT>::host_bytes() const noexcept;                              \
    template std::size_t OocMatrix<MT>::file_read_bytes(index_t) const;                           \
    template void OocMatrix<MT>::read_chunk(index_t, void*, bool) const;                          \
    template std::vector<std::int32_t> OocMatrix<MT>::block_offsets(index_t) const;               \
    template void OocMatrix<MT>::close_file() noexcept;                                           \
    template OocMatrix<MT> open_ooc_file<MT>(const std::string&, const OocFileOptions&);          \
    template void save_ooc_file<MT>(const OocMatrix<MT>&, const std::string&);                    \
    template Coo<double> to_coo<MT>(const OocMatrix<MT>&);                                        \
    template void ooc_reference_product<MT>(const OocMatrix<MT>&, bool, const double*, double*,   \
                                            double*);                                             \
    template Csr<double> ooc_block_diagonal<MT>(const OocMatrix<MT>&, index_t, index_t, index_t);
HEPTANE_INSTANTIATE_FILE(double)
HEPTANE_INSTANTIATE_FILE(float)
#undef HEPTANE_INSTANTIATE_FILE

}  // namespace heptane
