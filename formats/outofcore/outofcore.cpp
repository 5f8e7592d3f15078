// The out-of-core operator: chunks in host memory (outofcore.hpp), the leading ones resident
// on the device as the budget allows, the rest streamed through `buffers` device buffers by a
// copy stream, each product on the executor's stream behind the copy of its chunk (events:
// `ready` after a copy, `freed` after the product that read the buffer). Nothing waits on the
// host: apply() returns with the work queued, as the in-core operators do.
#include "formats/outofcore/outofcore.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

#include "core/error.hpp"
#include "formats/outofcore/outofcore_file.hpp"
#include "formats/outofcore/outofcore_kernels.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#include "formats/bdia/bdia_cuda.hpp"
#endif

namespace heptane {

namespace {

constexpr std::size_t align16(std::size_t n)
{
    return (n + 15) / 16 * 16;
}
constexpr std::size_t align256(std::size_t n)
{
    return (n + 255) / 256 * 256;
}

void* host_block(std::size_t bytes, bool pinned)
{
    if (pinned) {
#ifdef HEPTANE_HAVE_CUDA
        void* p = nullptr;
        const cudaError_t err = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
        HEPTANE_ENSURE(err == cudaSuccess, DeviceError,
                       "page-locked host allocation of "
                           << bytes << " bytes failed: " << cudaGetErrorString(err)
                           << " (host memory exhausted?)");
        return p;
#else
        HEPTANE_THROW(NotSupported, "page-locked memory in a build without CUDA");
#endif
    }
    // 2 MB aligned and backed by huge pages where the OS offers them: a chunk's first touch
    // then faults in 512 times fewer pieces (page faults were 75 % of building the chunks)
    const std::size_t huge = std::size_t(2) << 20;
    const std::size_t n = (std::max<std::size_t>(bytes, 1) + huge - 1) / huge * huge;
    void* p = std::aligned_alloc(huge, n);
    HEPTANE_ENSURE(p, DeviceError, "host allocation of " << bytes << " bytes failed");
    advise_huge_pages(p, n);
    return p;
}

void free_host_block(void* p, bool pinned) noexcept
{
    if (!p) return;
#ifdef HEPTANE_HAVE_CUDA
    if (pinned) {
        cudaFreeHost(p);
        return;
    }
#else
    (void)pinned;
#endif
    std::free(p);
}

/// Lanes per row of the CUDA kernels: as the in-core CSR vector kernel (the largest power of
/// two ≤ half the mean row, 2..32), 1 for rows of one or two entries.
int lanes_for(index_t rows, offset_t nnz)
{
    const double mean = rows > 0 ? double(nnz) / rows : 0.0;
    if (mean < 2.0) return 1;
    int g = 2;
    while (g < 32 && 2.0 * (2 * g) <= mean) g *= 2;
    return g;
}

#ifdef HEPTANE_HAVE_CUDA
/// What the device has free (the pool's cached memory returned first) less max(1 GiB, 10 %)
/// and 8 vectors of rows + cols values: OutOfCoreOptions::device_budget's default.
std::size_t auto_device_budget(const CudaExecutor& ce, index_t rows, index_t cols,
                               std::size_t value_bytes)
{
    ce.release_cached();  // memory the stream-ordered pool keeps counts as free
    const std::size_t free_b = device_free_bytes(ce);
    const std::size_t vectors = 8 * (std::size_t(rows) + std::size_t(cols)) * value_bytes;
    const std::size_t reserve = std::max<std::size_t>(std::size_t(1) << 30, free_b / 10) + vectors;
    return free_b > reserve ? free_b - reserve : 0;
}
#endif

}  // namespace

std::string bytes_text(double b)
{
    char buf[32];
    if (b >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.0f kB", b / 1e3);
    return buf;
}

// ---- OocMatrix ----------------------------------------------------------------------------

template <class MT>
OocMatrix<MT>::~OocMatrix()
{
    for (auto& c : chunks_) free_host_block(c.data, pinned_);
    close_file();
}

template <class MT>
OocMatrix<MT>::OocMatrix(OocMatrix&& o) noexcept
    : rows_(o.rows_),
      cols_(o.cols_),
      nnz_(o.nnz_),
      bytes_(o.bytes_),
      max_chunk_(o.max_chunk_),
      pinned_(o.pinned_),
      chunks_(std::move(o.chunks_)),
      file_(std::move(o.file_)),
      fd_(o.fd_)
{
    o.fd_ = -1;
    o.file_.clear();
    o.chunks_.clear();
    o.rows_ = 0;
    o.nnz_ = 0;
    o.bytes_ = 0;
}

template <class MT>
OocMatrix<MT>& OocMatrix<MT>::operator=(OocMatrix&& o) noexcept
{
    if (this != &o) {
        for (auto& c : chunks_) free_host_block(c.data, pinned_);
        close_file();
        file_ = std::move(o.file_);
        fd_ = o.fd_;
        o.fd_ = -1;
        o.file_.clear();
        rows_ = o.rows_;
        cols_ = o.cols_;
        nnz_ = o.nnz_;
        bytes_ = o.bytes_;
        max_chunk_ = o.max_chunk_;
        pinned_ = o.pinned_;
        chunks_ = std::move(o.chunks_);
        o.chunks_.clear();
        o.rows_ = 0;
        o.nnz_ = 0;
        o.bytes_ = 0;
    }
    return *this;
}

// ---- OocBuilder ---------------------------------------------------------------------------

template <class MT>
struct OocBuilder<MT>::Sink {
    detail::HocWriter writer;
    std::vector<char> block;  ///< the chunk being written, assembled in one piece
    Sink(const std::string& path) : writer(path, int(sizeof(MT))) {}
};

template <class MT>
OocBuilder<MT>::~OocBuilder() = default;

template <class MT>
OocBuilder<MT>::OocBuilder(index_t cols, std::size_t chunk_bytes, const std::string& path)
    : OocBuilder(cols, chunk_bytes, false)
{
    sink_ = std::make_unique<Sink>(path);
}

template <class MT>
OocBuilder<MT>::OocBuilder(index_t cols, std::size_t chunk_bytes, bool pinned)
    : chunk_bytes_(chunk_bytes)
{
    HEPTANE_ENSURE(cols >= 0, InputError, "out-of-core matrix: negative column count " << cols);
    HEPTANE_ENSURE(chunk_bytes >= 64, InputError,
                   "out-of-core chunk size " << chunk_bytes << " bytes is below 64 bytes");
#ifndef HEPTANE_HAVE_CUDA
    HEPTANE_ENSURE(!pinned, NotSupported, "page-locked chunks in a build without CUDA");
#endif
    m_.cols_ = cols;
    m_.pinned_ = pinned;
}

template <class MT>
void OocBuilder<MT>::append_row(const index_t* cols, const double* vals, index_t n)
{
    HEPTANE_ENSURE(n >= 0, InputError, "out-of-core matrix: negative row length " << n);
    const auto block_bytes = [&](std::size_t rows, std::size_t nnz) {
        return align16(align16((rows + 1) * 4) + nnz * 4) + nnz * sizeof(MT);
    };
    const std::size_t r = static_cast<std::size_t>(staged_rows());
    const std::size_t z = col_.size();
    if (r > 0 && (block_bytes(r + 1, z + n) > chunk_bytes_ ||
                  z + n > std::numeric_limits<std::uint32_t>::max()))
        seal();
    HEPTANE_ENSURE(std::size_t(n) <= std::numeric_limits<std::uint32_t>::max(), InputError,
                   "out-of-core matrix: a row of " << n << " entries");
    HEPTANE_ENSURE(m_.rows_ + staged_rows() < std::numeric_limits<index_t>::max(), InputError,
                   "out-of-core matrix: more than 2^31 - 1 rows");
    index_t lo = 0, hi = 0;  // the row's smallest and largest column (one check per row)
    for (index_t k = 0; k < n; ++k) {
        lo = std::min(lo, cols[k]);
        hi = std::max(hi, cols[k]);
    }
    if (lo < 0 || hi >= m_.cols_) {
        for (index_t k = 0; k < n; ++k)
            HEPTANE_ENSURE(cols[k] >= 0 && cols[k] < m_.cols_, InputError,
                           "out-of-core matrix: column " << cols[k] + 1 << " of row "
                                                         << m_.rows_ + staged_rows() + 1
                                                         << " is outside 1.." << m_.cols_);
    }
    const std::size_t at = col_.size();  // after a seal: 0
    col_.resize(at + std::size_t(n));
    val_.resize(at + std::size_t(n));
    std::uint32_t* cd = col_.data() + at;
    MT* vd = val_.data() + at;
    for (index_t k = 0; k < n; ++k) {
        cd[k] = static_cast<std::uint32_t>(cols[k]);
        vd[k] = static_cast<MT>(vals[k]);
    }
    row_ptr_.push_back(static_cast<std::uint32_t>(col_.size()));
}

template <class MT>
void OocBuilder<MT>::seal()
{
    const index_t rows = staged_rows();
    if (rows == 0) return;
    OocChunk c;
    c.row0 = m_.rows_;
    c.rows = rows;
    c.nnz = static_cast<offset_t>(col_.size());
    c.col_off = align16(row_ptr_.size() * 4);
    c.val_off = align16(c.col_off + col_.size() * 4);
    c.bytes = c.val_off + val_.size() * sizeof(MT);
    c.lanes = lanes_for(rows, c.nnz);
    char* base = nullptr;
    if (sink_) {
        sink_->block.resize(c.bytes);
        base = sink_->block.data();
    } else {
        c.data = host_block(c.bytes, m_.pinned_);
        base = static_cast<char*>(c.data);
    }
    std::memset(base + row_ptr_.size() * 4, 0, c.col_off - row_ptr_.size() * 4);
    std::memset(base + c.col_off + col_.size() * 4, 0, c.val_off - c.col_off - col_.size() * 4);
    // the three copies in pieces over the threads (a chunk of 64 MB: memory bound)
    const std::size_t piece = std::size_t(1) << 20;
    const std::size_t sizes[3] = {row_ptr_.size() * 4, col_.size() * 4, val_.size() * sizeof(MT)};
    const char* src[3] = {reinterpret_cast<const char*>(row_ptr_.data()),
                          reinterpret_cast<const char*>(col_.data()),
                          reinterpret_cast<const char*>(val_.data())};
    char* dst[3] = {base, base + c.col_off, base + c.val_off};
    const long long n0 = static_cast<long long>((sizes[0] + piece - 1) / piece);
    const long long n1 = static_cast<long long>((sizes[1] + piece - 1) / piece);
    const long long n2 = static_cast<long long>((sizes[2] + piece - 1) / piece);
#pragma omp parallel for schedule(dynamic, 1) if (n0 + n1 + n2 > 4)
    for (long long t = 0; t < n0 + n1 + n2; ++t) {
        const int a = t < n0 ? 0 : (t < n0 + n1 ? 1 : 2);
        const std::size_t off = std::size_t(t - (a == 0 ? 0 : (a == 1 ? n0 : n0 + n1))) * piece;
        std::memcpy(dst[a] + off, src[a] + off, std::min(piece, sizes[a] - off));
    }
    if (sink_) c.file_offset = sink_->writer.write_block(base, c.bytes);
    m_.chunks_.push_back(c);
    m_.rows_ += rows;
    m_.nnz_ += c.nnz;
    m_.bytes_ += c.bytes;
    m_.max_chunk_ = std::max(m_.max_chunk_, c.bytes);
    row_ptr_.assign(1, 0);
    col_.clear();
    val_.clear();
}

template <class MT>
OocMatrix<MT> OocBuilder<MT>::finish()
{
    seal();
    if (sink_) {  // table, trailer, rename; then the matrix reads its blocks from the file
        sink_->writer.finish(m_.chunks_, m_.rows_, m_.cols_, m_.nnz_);
        const std::string path = sink_->writer.path();
        sink_.reset();
        m_ = OocMatrix<MT>();
        OocFileOptions o;
        o.host_memory = 0;
        return open_ooc_file<MT>(path, o);
    }
    OocMatrix<MT> out = std::move(m_);
    m_ = OocMatrix<MT>();
    return out;
}

template <class MT>
OocMatrix<MT> make_ooc_matrix(const Coo<double>& a, std::size_t chunk_bytes, bool pinned)
{
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "out-of-core matrix");
    OocBuilder<MT> b(a.cols, chunk_bytes, pinned);
    for (index_t i = 0; i < a.rows; ++i)
        b.append_row(a.col.data() + ptr[i], a.val.data() + ptr[i],
                     static_cast<index_t>(ptr[i + 1] - ptr[i]));
    return b.finish();
}

template <class MT>
OocMatrix<MT> make_ooc_matrix(const Csr<double>& a, std::size_t chunk_bytes, bool pinned)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), InputError, "out-of-core matrix: host CSR only");
    OocBuilder<MT> b(a.cols, chunk_bytes, pinned);
    const offset_t* ptr = a.row_ptr.data();
    for (index_t i = 0; i < a.rows; ++i)
        b.append_row(a.col_idx.data() + ptr[i], a.values.data() + ptr[i],
                     static_cast<index_t>(ptr[i + 1] - ptr[i]));
    return b.finish();
}

// ---- BDIA-GH chunks -----------------------------------------------------------------------

/// BDIA-GH chunks from rows in CSR form (ptr, col, val; columns in any order within a row).
template <class MT>
OocMatrix<MT> ooc_bdia_from_rows(index_t rows, index_t cols, const offset_t* ptr,
                                 const index_t* col, const double* val, index_t nc,
                                 const std::vector<index_t>& offsets, std::size_t chunk_bytes,
                                 bool pinned)
{
    HEPTANE_ENSURE(
        nc >= 1 && rows % nc == 0 && cols % nc == 0, InputError,
        "BDIA-GH chunks: block size " << nc << " does not divide " << rows << " x " << cols);
    const index_t D = static_cast<index_t>(offsets.size());
    HEPTANE_ENSURE(D >= 1 && D <= 64 && std::is_sorted(offsets.begin(), offsets.end()) &&
                       std::adjacent_find(offsets.begin(), offsets.end()) == offsets.end(),
                   InputError, "BDIA-GH chunks: " << D << " block offsets, not 1..64 ascending");
#ifndef HEPTANE_HAVE_CUDA
    HEPTANE_ENSURE(!pinned, NotSupported, "page-locked chunks in a build without CUDA");
#endif
    const std::size_t val_off = align16(std::size_t(D) * 4);
    const std::size_t per_block_row = std::size_t(D) * nc * nc * sizeof(MT);
    const index_t block_rows = rows / nc;
    const index_t chunk_blocks = static_cast<index_t>(std::max<std::size_t>(
        1, std::min<std::size_t>(
               std::size_t(block_rows),
               chunk_bytes > val_off ? (chunk_bytes - val_off) / per_block_row : 1)));
    OocMatrix<MT> m;  // its destructor frees the blocks placed so far when a check throws
    m.rows_ = rows;
    m.cols_ = cols;
    m.pinned_ = pinned;
    for (index_t b0 = 0; b0 < block_rows; b0 += chunk_blocks) {
        OocChunk c;
        c.row0 = b0 * nc;
        c.rows = std::min(chunk_blocks, block_rows - b0) * nc;
        c.nc = nc;
        c.block_diagonals = D;
        c.col_off = 0;
        c.val_off = val_off;
        c.bytes = val_off + std::size_t(D) * nc * std::size_t(c.rows) * sizeof(MT);
        c.data = host_block(c.bytes, pinned);
        m.chunks_.push_back(c);  // owned by m from here
        char* base = static_cast<char*>(c.data);
        std::memset(base, 0, c.bytes);
        auto* off = reinterpret_cast<std::int32_t*>(base);
        for (index_t q = 0; q < D; ++q) off[q] = static_cast<std::int32_t>(offsets[q]);
        MT* v = reinterpret_cast<MT*>(base + val_off);
        long long bad = -1;  // the first row with an entry off the block offsets
        offset_t nnz = 0;
#pragma omp parallel for reduction(+ : nnz) schedule(static, 256) if (c.rows >= 4096)
        for (index_t i = 0; i < c.rows; ++i) {
            const index_t r = c.row0 + i;
            for (offset_t k = ptr[r]; k < ptr[r + 1]; ++k) {
                const index_t d = col[k] / nc - r / nc;
                const auto it = std::lower_bound(offsets.begin(), offsets.end(), d);
                if (it == offsets.end() || *it != d) {
#pragma omp critical(heptane_ooc_bdia)
                    if (bad < 0 || r < bad) bad = r;
                    continue;
                }
                const index_t q = static_cast<index_t>(it - offsets.begin());
                v[std::size_t(q * nc + col[k] % nc) * std::size_t(c.rows) + std::size_t(i)] =
                    static_cast<MT>(val[k]);
                ++nnz;
            }
        }
        HEPTANE_ENSURE(bad < 0, InputError,
                       "BDIA-GH chunks: row " << bad + 1 << " has an entry off the block offsets");
        m.chunks_.back().nnz = nnz;
        m.nnz_ += nnz;
        m.bytes_ += c.bytes;
        m.max_chunk_ = std::max(m.max_chunk_, c.bytes);
    }
    return m;
}

template <class MT>
OocMatrix<MT> make_ooc_matrix_bdia(const Coo<double>& a, index_t nc,
                                   const std::vector<index_t>& block_offsets,
                                   std::size_t chunk_bytes, bool pinned)
{
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "out-of-core BDIA-GH chunks");
    return ooc_bdia_from_rows<MT>(a.rows, a.cols, ptr.data(), a.col.data(), a.val.data(), nc,
                                  block_offsets, chunk_bytes, pinned);
}

template <class MT>
OocMatrix<MT> make_ooc_matrix_bdia(const Csr<double>& a, index_t nc,
                                   const std::vector<index_t>& block_offsets,
                                   std::size_t chunk_bytes, bool pinned)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), InputError, "out-of-core matrix: host CSR only");
    return ooc_bdia_from_rows<MT>(a.rows, a.cols, a.row_ptr.data(), a.col_idx.data(),
                                  a.values.data(), nc, block_offsets, chunk_bytes, pinned);
}

// ---- the operator -------------------------------------------------------------------------

template <class MT, class VT>
struct OutOfCoreOperator<MT, VT>::Impl {
    std::shared_ptr<const OocMatrix<MT>> m;
    std::shared_ptr<const Executor> exec;
    OocLayout layout;
    index_t k0 = 0, k1 = 0;               ///< the chunks [k0, k1) this operator applies
    index_t row0 = 0;                     ///< their first row
    index_t rows = 0;                     ///< their rows
    void* resident = nullptr;             ///< one device block for the resident chunks
    std::vector<std::size_t> res_offset;  ///< chunk k's offset in it
    /// BDIA-GH chunks on a GPU whose resident chunks share Nc and block offsets: their values
    /// merged into one row block (value (i, q*Nc + s) of its rows at [(q*Nc + s) * rows + i]),
    /// run by one launch of the in-core kernels instead of one a chunk.
    bool merged = false;
    index_t merged_rows = 0;
    /// ... and it is all the operator's rows and touches all of its columns: A^T x stores
    /// y = alpha A^T x + beta y in that launch (no scaling pass, no atomic adds).
    bool merged_whole = false;
    /// CSR chunks on a GPU: the resident ones as one CSR block (32-bit row pointers through
    /// it, when its entries fit them), run as one chunk.
    bool merged_csr = false;
    kernels::OocChunkView<MT> merged_view;
    std::vector<void*> buffers;  ///< device stream buffers
    std::vector<void*> staging;  ///< host buffers the file chunks are read into
    bool staging_pinned = false;
    mutable std::vector<unsigned char> checked;  ///< file chunk k checked once (operator's k)
    /// BDIA-GH chunks on a GPU: chunk k's block offsets in host memory at host_off[host_at[k]]
    std::vector<std::int32_t> host_off;
    std::vector<std::size_t> host_at;
    /// The streamed chunks in the order they are copied: host and file chunks interleaved in
    /// proportion, so that the copies of host chunks keep the bus busy while the host reads
    /// the next file chunk (the order of the products does not matter: rows are disjoint,
    /// A^T x's scatters atomic).
    std::vector<index_t> order;
#ifdef HEPTANE_HAVE_CUDA
    cudaStream_t copy = nullptr;
    std::vector<cudaEvent_t> ready, freed;
    std::vector<cudaEvent_t> staged;  ///< after the copy out of staging buffer s
    /// With resident and streamed chunks: the resident chunks' products run on a stream of
    /// their own, beside the streamed ones (joined back at the end of each product), so that
    /// they hide behind the copies instead of holding the buffers' refills back.
    cudaStream_t side = nullptr;
    cudaEvent_t fork = nullptr, join = nullptr;
#endif

    kernels::OocChunkView<MT> view(const OocChunk& c, const void* base) const
    {
        const char* p = static_cast<const char*>(base);
        kernels::OocChunkView<MT> v;
        v.rows = c.rows;
        v.nnz = c.nnz;
        v.row_ptr = reinterpret_cast<const std::uint32_t*>(p);
        v.col = reinterpret_cast<const std::uint32_t*>(p + c.col_off);
        v.val = reinterpret_cast<const MT*>(p + c.val_off);
        v.lanes = c.lanes;
        v.nc = c.nc;
        v.block_diagonals = c.block_diagonals;
        v.offsets = reinterpret_cast<const std::int32_t*>(p + c.col_off);
        v.row0 = c.row0;
        v.cols = m->cols();
        const std::size_t k = std::size_t(&c - (m->chunks().data() + k0));
        if (k < host_at.size() && c.nc > 0) v.host_offsets = host_off.data() + host_at[k];
        return v;
    }

    void release() noexcept
    {
#ifdef HEPTANE_HAVE_CUDA
        if (exec && exec->is_cuda()) {
            if (copy) cudaStreamSynchronize(copy);
            try {
                exec->synchronize();
            } catch (...) {
            }
            if (side) cudaStreamSynchronize(side);
            for (auto e : ready) cudaEventDestroy(e);
            for (auto e : freed) cudaEventDestroy(e);
            for (auto e : staged) cudaEventDestroy(e);
            staged.clear();
            if (fork) cudaEventDestroy(fork);
            if (join) cudaEventDestroy(join);
            if (side) cudaStreamDestroy(side);
            fork = join = nullptr;
            side = nullptr;
            ready.clear();
            freed.clear();
            if (copy) cudaStreamDestroy(copy);
            copy = nullptr;
        }
#endif
        for (void* b : buffers) exec->free(b);
        buffers.clear();
        free_staging();
        if (resident) exec->free(resident);
        resident = nullptr;
    }
    void free_staging() noexcept
    {
        for (void* p : staging) free_host_block(p, staging_pinned);
        staging.clear();
    }
    void alloc_staging(int n, std::size_t bytes, bool pinned)
    {
        staging_pinned = pinned;
        for (int s = 0; s < n; ++s) staging.push_back(host_block(bytes, pinned));
        layout.staging_bytes = std::size_t(n) * bytes;
    }
    /// The operator's chunk k (index from k0) read from the file into `dst`, checked the
    /// first time.
    void read(index_t k, void* dst) const
    {
        m->read_chunk(k0 + k, dst, !checked[std::size_t(k)]);
        checked[std::size_t(k)] = 1;
    }
    ~Impl()
    {
        release();
    }
};

template <class MT, class VT>
OutOfCoreOperator<MT, VT>::OutOfCoreOperator(std::shared_ptr<const OocMatrix<MT>> m,
                                             const std::shared_ptr<const Executor>& exec,
                                             const OutOfCoreOptions& opt)
    : OutOfCoreOperator(m, exec, opt, 0, m ? static_cast<index_t>(m->chunks().size()) : 0)
{
}

template <class MT, class VT>
OutOfCoreOperator<MT, VT>::OutOfCoreOperator(std::shared_ptr<const OocMatrix<MT>> m,
                                             const std::shared_ptr<const Executor>& exec,
                                             const OutOfCoreOptions& opt, index_t first,
                                             index_t last)
    : impl_(std::make_unique<Impl>())
{
    HEPTANE_ENSURE(m, InputError, "out-of-core operator: no matrix");
    HEPTANE_ENSURE(opt.buffers >= 2, InputError,
                   "out-of-core operator: " << opt.buffers << " stream buffers (2 or more)");
    HEPTANE_ENSURE(opt.max_resident_fraction >= 0 && opt.max_resident_fraction <= 1, InputError,
                   "out-of-core operator: resident fraction " << opt.max_resident_fraction
                                                              << " outside [0, 1]");
    Impl& d = *impl_;
    d.m = std::move(m);
    d.exec = exec;
    const index_t nall = static_cast<index_t>(d.m->chunks().size());
    HEPTANE_ENSURE((first == 0 && last == nall) || (first >= 0 && first < last && last <= nall),
                   InputError,
                   "out-of-core operator: chunks [" << first << ", " << last << ") of " << nall);
    d.k0 = first;
    d.k1 = last;
    // the operator's chunks: [k0, k1) of the matrix's, indexed from 0 below
    const std::vector<OocChunk> chunks(d.m->chunks().begin() + first, d.m->chunks().begin() + last);
    d.row0 = chunks.empty() ? 0 : chunks.front().row0;
    d.rows = chunks.empty() ? d.m->rows() : chunks.back().row0 + chunks.back().rows - d.row0;
    OocLayout& L = d.layout;
    L.chunks = static_cast<index_t>(chunks.size());
    for (const auto& c : chunks) L.bytes += c.bytes;
    d.checked.assign(chunks.size(), 0);
    std::size_t maxc = 0;  // the largest of the operator's chunks: a stream buffer's size
    for (const auto& c : chunks) maxc = std::max(maxc, c.bytes);
    const std::size_t staging_bytes = detail::hoc_round(maxc);  // file reads: whole 4 kB
    if (d.exec->is_cpu()) {  // the host blocks are the matrix: nothing to place
        for (const auto& c : chunks) {
            if (c.data) {
                ++L.resident_chunks;
                L.resident_bytes += c.bytes;
            } else {
                ++L.file_chunks;
                L.file_bytes += c.bytes;
            }
        }
        if (L.file_chunks > 0) d.alloc_staging(1, staging_bytes, false);
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    HEPTANE_ENSURE(d.m->pinned() || d.m->host_bytes() == 0, InputError,
                   "out-of-core operator on a GPU: the chunks must be in page-locked memory "
                   "(build them with pinned = true)");
    const auto& ce = static_cast<const CudaExecutor&>(*d.exec);
    HEPTANE_CUDA_CHECK(cudaSetDevice(ce.device()));
    for (index_t k = 0; k < L.chunks; ++k) {  // the BDIA-GH chunks' offsets for their launches
        d.host_at.push_back(d.host_off.size());
        const auto off = d.m->block_offsets(first + k);
        d.host_off.insert(d.host_off.end(), off.begin(), off.end());
    }
    std::size_t budget = opt.device_budget;
    if (budget == 0) budget = auto_device_budget(ce, d.rows, d.m->cols(), sizeof(VT));
    L.budget = budget;
    const double cap = opt.max_resident_fraction * double(L.bytes);
    // Everything resident: an in-core operator in chunk form, no buffers.
    const auto padded = [&](index_t upto) {
        std::size_t s = 0;
        for (index_t k = 0; k < upto; ++k) s += align256(chunks[k].bytes);
        return s;
    };
    index_t resident = 0;
    if (opt.max_resident_fraction >= 1 && padded(L.chunks) <= budget) {
        resident = L.chunks;
    } else {
        const int nbuf = static_cast<int>(std::min<std::size_t>(opt.buffers, chunks.size()));
        const std::size_t buf_bytes = std::size_t(nbuf) * align256(maxc);
        HEPTANE_ENSURE(buf_bytes <= budget, InputError,
                       "the device budget of "
                           << budget << " bytes cannot hold " << nbuf << " stream buffers of "
                           << maxc << " bytes: lower the chunk size or raise the budget");
        std::size_t used = 0, raw = 0;
        while (resident < L.chunks) {
            const std::size_t b = align256(chunks[resident].bytes);
            if (used + b + buf_bytes > budget || double(raw + chunks[resident].bytes) > cap) break;
            used += b;
            raw += chunks[resident].bytes;
            ++resident;
        }
        const int streamed = static_cast<int>(L.chunks - resident);
        const int n = std::min(nbuf, streamed);
        for (int s = 0; s < n; ++s) d.buffers.push_back(d.exec->alloc(maxc));
        L.buffer_bytes = std::size_t(n) * maxc;
        HEPTANE_CUDA_CHECK(cudaStreamCreateWithFlags(&d.copy, cudaStreamNonBlocking));
        for (int s = 0; s < n; ++s) {
            cudaEvent_t a = nullptr, b = nullptr;
            HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
            d.ready.push_back(a);
            HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
            d.freed.push_back(b);
        }
        {
            std::vector<index_t> host, file;
            for (index_t k = resident; k < L.chunks; ++k) {
                (chunks[k].data ? host : file).push_back(k);
                if (!chunks[k].data) L.file_bytes += chunks[k].bytes;
            }
            L.file_chunks = static_cast<index_t>(file.size());
            std::size_t h = 0, f = 0;
            while (h < host.size() || f < file.size()) {
                // the list that is behind its share of the chunks placed so far goes next
                const bool take_file =
                    h == host.size() || (f < file.size() && double(f) * double(host.size()) <=
                                                                double(h) * double(file.size()));
                d.order.push_back(take_file ? file[f++] : host[h++]);
            }
        }
        if (L.file_chunks > 0) {  // a page-locked staging buffer beside each device buffer
            d.alloc_staging(n, staging_bytes, true);
            for (int s = 0; s < n; ++s) {
                cudaEvent_t e = nullptr;
                HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
                d.staged.push_back(e);
            }
        }
    }
    L.resident_chunks = resident;
    if (resident > 0 && resident < L.chunks) {
        HEPTANE_CUDA_CHECK(cudaStreamCreateWithFlags(&d.side, cudaStreamNonBlocking));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&d.fork, cudaEventDisableTiming));
        HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&d.join, cudaEventDisableTiming));
    }
    // BDIA-GH chunks with one Nc and one set of block offsets: the resident ones in one block
    const auto offsets_of = [&](index_t k) {
        const auto* o = d.host_off.data() + d.host_at[std::size_t(k)];
        return std::vector<std::int32_t>(o, o + chunks[k].block_diagonals);
    };
    d.merged = resident > 0 && chunks[0].nc > 0;
    for (index_t k = 1; d.merged && k < resident; ++k)
        d.merged = chunks[k].nc == chunks[0].nc &&
                   chunks[k].block_diagonals == chunks[0].block_diagonals &&
                   chunks[k].row0 == chunks[k - 1].row0 + chunks[k - 1].rows &&
                   offsets_of(k) == offsets_of(0);
    if (d.merged) {
        d.merged_rows = chunks[resident - 1].row0 + chunks[resident - 1].rows - chunks[0].row0;
        const auto off = offsets_of(0);
        const index_t nc = chunks[0].nc, br0 = chunks[0].row0 / nc, nbc = d.m->cols() / nc;
        const index_t dmin = *std::min_element(off.begin(), off.end());
        const index_t dmax = *std::max_element(off.begin(), off.end());
        d.merged_whole =
            resident == L.chunks && br0 + dmin <= 0 && br0 + d.merged_rows / nc + dmax >= nbc;
    }
    const std::size_t cols_in_block =
        d.merged ? std::size_t(chunks[0].block_diagonals) * std::size_t(chunks[0].nc) : 0;
    // CSR chunks: the resident ones as one CSR block,
    //     [row_ptr: rows + 1 x u32][col: nnz x u32][pad to 16 B][val: nnz x MT]
    offset_t res_nnz = 0;
    index_t res_rows = 0;
    d.merged_csr = resident > 1;
    for (index_t k = 0; k < resident; ++k) {
        d.merged_csr =
            d.merged_csr && chunks[k].nc == 0 && chunks[k].row0 == chunks[0].row0 + res_rows;
        res_nnz += chunks[k].nnz;
        res_rows += chunks[k].rows;
    }
    d.merged_csr = d.merged_csr && res_nnz < offset_t(std::numeric_limits<std::uint32_t>::max());
    const std::size_t csr_col_off = align16(4 * (std::size_t(res_rows) + 1));
    const std::size_t csr_val_off = align16(csr_col_off + 4 * std::size_t(res_nnz));
    std::vector<std::uint32_t> csr_ptr;  // the block's row pointers, built on the host
    if (d.merged_csr) csr_ptr.assign(std::size_t(res_rows) + 1, 0);
    const std::size_t res_bytes =
        d.merged       ? align256(cols_in_block * std::size_t(d.merged_rows) * sizeof(MT))
        : d.merged_csr ? align256(csr_val_off + std::size_t(res_nnz) * sizeof(MT))
                       : padded(resident);
    if (resident > 0) {
        d.resident = d.exec->alloc(res_bytes);
        std::size_t off = 0;
        std::size_t at_row = 0, at_nnz = 0;  // the CSR block's rows and entries so far
        bool own_staging = false;  // resident chunks from the file: through one staging buffer
        for (index_t k = 0; k < resident; ++k) {
            d.res_offset.push_back(off);
            const void* src = chunks[k].data;
            if (!src) {
                if (d.staging.empty()) {
                    d.alloc_staging(1, staging_bytes, true);
                    own_staging = true;
                }
                HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));  // staging free
                d.read(k, d.staging[0]);
                src = d.staging[0];
            }
            if (d.merged) {  // the chunk's columns into the block's, at its first row
                const std::size_t w = std::size_t(chunks[k].rows) * sizeof(MT);
                const std::size_t pitch = std::size_t(d.merged_rows) * sizeof(MT);
                char* dst = static_cast<char*>(d.resident) +
                            std::size_t(chunks[k].row0 - chunks[0].row0) * sizeof(MT);
                const char* from = static_cast<const char*>(src) + chunks[k].val_off;
                if (pitch <= std::size_t(std::numeric_limits<int>::max())) {
                    HEPTANE_CUDA_CHECK(cudaMemcpy2DAsync(dst, pitch, from, w, w, cols_in_block,
                                                         cudaMemcpyHostToDevice, cuda::stream(ce)));
                } else {  // past the largest pitch a 2D copy takes: a copy a column
                    for (std::size_t j = 0; j < cols_in_block; ++j)
                        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst + j * pitch, from + j * w, w,
                                                           cudaMemcpyHostToDevice,
                                                           cuda::stream(ce)));
                }
            } else if (d.merged_csr) {  // its row pointers moved up, columns and values after
                const auto* rp = static_cast<const std::uint32_t*>(src);
                for (index_t i = 1; i <= chunks[k].rows; ++i)
                    csr_ptr[at_row + std::size_t(i)] = static_cast<std::uint32_t>(at_nnz + rp[i]);
                char* base = static_cast<char*>(d.resident);
                const char* from = static_cast<const char*>(src);
                const std::size_t nz = std::size_t(chunks[k].nnz);
                HEPTANE_CUDA_CHECK(cudaMemcpyAsync(base + csr_col_off + 4 * at_nnz,
                                                   from + chunks[k].col_off, 4 * nz,
                                                   cudaMemcpyHostToDevice, cuda::stream(ce)));
                HEPTANE_CUDA_CHECK(cudaMemcpyAsync(base + csr_val_off + sizeof(MT) * at_nnz,
                                                   from + chunks[k].val_off, sizeof(MT) * nz,
                                                   cudaMemcpyHostToDevice, cuda::stream(ce)));
                at_row += std::size_t(chunks[k].rows);
                at_nnz += nz;
            } else {
                HEPTANE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(d.resident) + off, src,
                                                   chunks[k].bytes, cudaMemcpyHostToDevice,
                                                   cuda::stream(ce)));
            }
            L.resident_bytes += chunks[k].bytes;
            off += align256(chunks[k].bytes);
        }
        if (d.merged_csr) {
            HEPTANE_CUDA_CHECK(cudaMemcpyAsync(d.resident, csr_ptr.data(), 4 * csr_ptr.size(),
                                               cudaMemcpyHostToDevice, cuda::stream(ce)));
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));  // csr_ptr may go
            const char* base = static_cast<const char*>(d.resident);
            auto& v = d.merged_view;
            v.rows = res_rows;
            v.nnz = res_nnz;
            v.row_ptr = reinterpret_cast<const std::uint32_t*>(base);
            v.col = reinterpret_cast<const std::uint32_t*>(base + csr_col_off);
            v.val = reinterpret_cast<const MT*>(base + csr_val_off);
            v.lanes = lanes_for(res_rows, res_nnz);
            v.row0 = chunks[0].row0;
            v.cols = d.m->cols();
        }
        if (own_staging) {
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
            d.free_staging();
            L.staging_bytes = 0;
        }
    }
    L.streamed_bytes = L.bytes - L.resident_bytes;
    d.exec->synchronize();  // the buffers' allocation is ordered before the copy stream uses them
#else
    HEPTANE_THROW(NotSupported, "CUDA executor in a build without CUDA");
#endif
}

template <class MT, class VT>
OutOfCoreOperator<MT, VT>::~OutOfCoreOperator() = default;

template <class MT, class VT>
index_t OutOfCoreOperator<MT, VT>::rows() const
{
    return impl_->rows;
}
template <class MT, class VT>
index_t OutOfCoreOperator<MT, VT>::cols() const
{
    return impl_->m->cols();
}
template <class MT, class VT>
std::shared_ptr<const Executor> OutOfCoreOperator<MT, VT>::executor() const
{
    return impl_->exec;
}
template <class MT, class VT>
const OocLayout& OutOfCoreOperator<MT, VT>::layout() const noexcept
{
    return impl_->layout;
}

namespace {

template <class MT, class VT>
void run_chunk(const CpuExecutor& e, const kernels::OocChunkView<MT>& v, index_t r, bool tr,
               VT alpha, const VT* x, VT beta, VT* y)
{
    if (tr)
        kernels::ooc_chunk_apply_transpose(e, v, alpha, x + r, y);
    else
        kernels::ooc_chunk_apply(e, v, alpha, x, beta, y + r);
}

#ifdef HEPTANE_HAVE_CUDA
template <class MT, class VT>
void run_chunk(const CudaExecutor& e, const kernels::OocChunkView<MT>& v, index_t r, bool tr,
               VT alpha, const VT* x, VT beta, VT* y, cudaStream_t s = nullptr)
{
    if (tr)
        kernels::ooc_chunk_apply_transpose(e, v, alpha, x + r, y, s);
    else
        kernels::ooc_chunk_apply(e, v, alpha, x, beta, y + r, s);
}
#endif

template <class MT, class VT>
void apply_impl(const typename OutOfCoreOperator<MT, VT>::Impl& d, bool tr, VT alpha, const VT* x,
                VT beta, VT* y)
{
    const OocChunk* chunks = d.m->chunks().data() + d.k0;  // the operator's [k0, k1)
    const auto row_of = [&](const OocChunk& c) { return c.row0 - d.row0; };
    if (d.exec->is_cpu()) {
        const auto& ce = static_cast<const CpuExecutor&>(*d.exec);
        if (tr) kernels::ooc_scale(ce, d.m->cols(), beta, y);
        // the chunks over the threads (a chunk's own loop then runs on its thread: regions do
        // not nest); A^T x's scatters are atomic, so chunks may add into y side by side
        const long long n = static_cast<long long>(d.k1 - d.k0);
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
        for (long long k = 0; k < n; ++k)
            if (chunks[k].data)
                run_chunk(ce, d.view(chunks[k], chunks[k].data), row_of(chunks[k]), tr, alpha, x,
                          beta, y);
        // chunks in the file: one at a time, read over the threads, then its product
        for (long long k = 0; k < n && d.layout.file_chunks > 0; ++k) {
            if (chunks[k].data) continue;
            d.read(index_t(k), d.staging[0]);
            run_chunk(ce, d.view(chunks[k], d.staging[0]), row_of(chunks[k]), tr, alpha, x, beta,
                      y);
        }
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    const auto& ce = static_cast<const CudaExecutor&>(*d.exec);
    HEPTANE_CUDA_CHECK(cudaSetDevice(ce.device()));
    const cudaStream_t s0 = cuda::stream(ce);
    const index_t R = d.layout.resident_chunks;
    const index_t n = d.k1 - d.k0 - R;
    const int S = static_cast<int>(d.buffers.size());
    const auto queue_copy = [&](index_t i) {  // streamed chunk i into buffer i % S
        const int s = static_cast<int>(i % S);
        const index_t k = d.order[std::size_t(i)];
        const OocChunk& c = chunks[k];
        const void* src = c.data;
        if (!src) {  // from the file: into staging buffer s once its last copy is done
            HEPTANE_CUDA_CHECK(cudaEventSynchronize(d.staged[s]));
            d.read(k, d.staging[s]);
            src = d.staging[s];
        }
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(d.copy, d.freed[s], 0));
        HEPTANE_CUDA_CHECK(
            cudaMemcpyAsync(d.buffers[s], src, c.bytes, cudaMemcpyHostToDevice, d.copy));
        HEPTANE_CUDA_CHECK(cudaEventRecord(d.ready[s], d.copy));
        if (!c.data) HEPTANE_CUDA_CHECK(cudaEventRecord(d.staged[s], d.copy));
    };
    // the first copies from host memory start at once, beside the resident chunks' products;
    // with chunks in the file the host reads them, so the resident products are queued first
    const bool reads = d.layout.file_chunks > 0;
    if (!reads)
        for (index_t i = 0; i < std::min<index_t>(n, S); ++i) queue_copy(i);
    if (tr && !d.merged_whole) kernels::ooc_scale(ce, d.m->cols(), beta, y);
    // the resident chunks: on the side stream when chunks stream too (after x, y and the
    // scaling are ready: the fork event), else on the executor's stream
    if (d.side) {
        HEPTANE_CUDA_CHECK(cudaEventRecord(d.fork, s0));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(d.side, d.fork, 0));
    }
    if (d.merged) {  // one launch over the resident rows
        kernels::BdiaRows<MT> b;
        b.row0 = chunks[0].row0;
        b.rows = d.merged_rows;
        b.cols = d.m->cols();
        b.block_size = chunks[0].nc;
        b.block_diagonals = chunks[0].block_diagonals;
        b.block_offsets = d.host_off.data();
        b.data = static_cast<const MT*>(d.resident);
        b.exclusive = d.merged_whole;
        kernels::spmv_bdia_rows(ce, b, tr ? Op::transpose : Op::normal, alpha,
                                tr ? x + row_of(chunks[0]) : x, beta,
                                tr ? y : y + row_of(chunks[0]), d.side);
    } else if (d.merged_csr) {
        run_chunk(ce, d.merged_view, row_of(chunks[0]), tr, alpha, x, beta, y, d.side);
    } else {
        for (index_t k = 0; k < R; ++k)
            run_chunk(ce, d.view(chunks[k], static_cast<const char*>(d.resident) + d.res_offset[k]),
                      row_of(chunks[k]), tr, alpha, x, beta, y, d.side);
    }
    if (reads)
        for (index_t i = 0; i < std::min<index_t>(n, S); ++i) queue_copy(i);
    for (index_t i = 0; i < n; ++i) {
        const int s = static_cast<int>(i % S);
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(s0, d.ready[s], 0));
        const index_t k = d.order[std::size_t(i)];
        run_chunk(ce, d.view(chunks[k], d.buffers[s]), row_of(chunks[k]), tr, alpha, x, beta, y);
        HEPTANE_CUDA_CHECK(cudaEventRecord(d.freed[s], s0));
        if (i + S < n) queue_copy(i + S);
    }
    if (d.side) {  // join: the product is done when both streams are
        HEPTANE_CUDA_CHECK(cudaEventRecord(d.join, d.side));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(s0, d.join, 0));
    }
#else
    HEPTANE_THROW(NotSupported, "CUDA executor in a build without CUDA");
#endif
}

}  // namespace

template <class MT, class VT>
bool OutOfCoreOperator<MT, VT>::host_paced() const
{
    return impl_->layout.streamed_bytes > 0 || impl_->layout.file_chunks > 0;
}

template <class MT, class VT>
void OutOfCoreOperator<MT, VT>::apply(VT alpha, const VT* x, VT beta, VT* y) const
{
    apply_impl<MT, VT>(*impl_, false, alpha, x, beta, y);
}

template <class MT, class VT>
void OutOfCoreOperator<MT, VT>::apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const
{
    apply_impl<MT, VT>(*impl_, true, alpha, x, beta, y);
}

template <class MT, class VT>
std::string OutOfCoreOperator<MT, VT>::describe() const
{
    const Impl& d = *impl_;
    const OocLayout& L = d.layout;
    std::ostringstream os;
    offset_t nnz = 0;
    std::size_t maxc = 0;
    for (index_t k = d.k0; k < d.k1; ++k) {
        nnz += d.m->chunks()[k].nnz;
        maxc = std::max(maxc, d.m->chunks()[k].bytes);
    }
    const bool bdia = d.k1 > d.k0 && d.m->chunks()[d.k0].nc > 0;
    os << "out-of-core " << (bdia ? "bdia-gh" : "csr") << " " << d.rows << "x" << d.m->cols()
       << " nnz=" << nnz << ", " << L.chunks << " chunks of <= " << bytes_text(double(maxc)) << " ("
       << (std::is_same_v<MT, float>
               ? (std::is_same_v<VT, float> ? "fp32" : "fp32 values, fp64 vectors")
               : "fp64")
       << ")";
    if (d.exec->is_cuda())
        os << ", " << L.resident_chunks << " resident (" << bytes_text(double(L.resident_bytes))
           << ((d.merged || d.merged_csr) && L.resident_chunks > 1 ? ", one block" : "") << "), "
           << bytes_text(double(L.streamed_bytes)) << " streamed per product through "
           << d.buffers.size() << " buffers";
    if (L.file_chunks > 0)
        os << ", " << L.file_chunks << " chunks (" << bytes_text(double(L.file_bytes))
           << ") read from " << d.m->file() << " at every product";
    os << " on " << d.exec->name();
    return os.str();
}

template <class MT, class VT>
std::unique_ptr<OutOfCoreOperator<MT, VT>> make_out_of_core_operator(
    const Coo<double>& a, std::shared_ptr<const Executor> exec, const OutOfCoreOptions& opt)
{
    auto m = std::make_shared<OocMatrix<MT>>(
        opt.bdia_block_size > 0
            ? make_ooc_matrix_bdia<MT>(a, opt.bdia_block_size, opt.bdia_block_offsets,
                                       opt.chunk_bytes, exec->is_cuda())
            : make_ooc_matrix<MT>(a, opt.chunk_bytes, exec->is_cuda()));
    return std::make_unique<OutOfCoreOperator<MT, VT>>(std::move(m), std::move(exec), opt);
}

template <class MT, class VT>
std::vector<std::shared_ptr<const Operator<VT>>> make_out_of_core_subsets(
    const std::shared_ptr<const OocMatrix<MT>>& m, int subsets,
    const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions& opt, index_t first,
    index_t last)
{
    HEPTANE_ENSURE(m, InputError, "out-of-core subsets: no matrix");
    const index_t all = static_cast<index_t>(m->chunks().size());
    if (last < 0) last = all;
    HEPTANE_ENSURE(first >= 0 && first < last && last <= all, InputError,
                   "out-of-core subsets: chunks [" << first << ", " << last << ") of " << all);
    const index_t n = last - first;
    HEPTANE_ENSURE(subsets >= 1 && subsets <= n, InputError,
                   subsets << " out-of-core subsets of " << n
                           << " chunks: lower the chunk size (--chunk-bytes)");
    OutOfCoreOptions o = opt;
#ifdef HEPTANE_HAVE_CUDA
    if (exec->is_cuda() && o.device_budget == 0)
        o.device_budget = auto_device_budget(static_cast<const CudaExecutor&>(*exec), m->rows(),
                                             m->cols(), sizeof(VT));
#endif
    o.device_budget /= std::size_t(subsets);
    const std::vector<index_t> g = ooc_chunk_groups(*m, subsets, first, last);
    std::vector<std::shared_ptr<const Operator<VT>>> ops;
    ops.reserve(std::size_t(subsets));
    for (int s = 0; s < subsets; ++s)
        ops.push_back(std::make_shared<OutOfCoreOperator<MT, VT>>(m, exec, o, g[s], g[s + 1]));
    return ops;
}

template <class MT>
std::vector<index_t> ooc_chunk_groups(const OocMatrix<MT>& m, int parts, index_t first,
                                      index_t last)
{
    const auto& chunks = m.chunks();
    const index_t all = static_cast<index_t>(chunks.size());
    if (last < 0) last = all;
    HEPTANE_ENSURE(first >= 0 && first <= last && last <= all, InputError,
                   "chunk groups: chunks [" << first << ", " << last << ") of " << all);
    HEPTANE_ENSURE(
        parts >= 1 && parts <= last - first, InputError,
        parts << " groups of " << last - first << " chunks: lower the chunk size (--chunk-bytes)");
    std::size_t total = 0;
    for (index_t k = first; k < last; ++k) total += chunks[k].bytes;
    // cut where the bytes so far pass s / parts of the whole, at least one chunk each
    std::vector<index_t> bounds{first};
    index_t at = first;
    std::size_t done = 0;
    for (int s = 1; s <= parts; ++s) {
        index_t end = at + 1;
        done += chunks[at].bytes;
        const double target = double(total) * s / parts;
        while (end < last - (parts - s) && double(done) + 0.5 * double(chunks[end].bytes) <= target)
            done += chunks[end++].bytes;
        if (s == parts) end = last;
        bounds.push_back(end);
        at = end;
    }
    return bounds;
}

// ---- helpers ------------------------------------------------------------------------------

std::size_t parse_bytes(const std::string& s)
{
    const char* p = s.c_str();
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    HEPTANE_ENSURE(end != p && std::isfinite(v), InputError,
                   "'" << s << "' is not a byte count (e.g. 8G, 512M, 1e9)");
    std::string unit(end);
    for (auto& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    double mult = 1;
    if (unit.empty() || unit == "b")
        mult = 1;
    else if (unit == "k" || unit == "kb" || unit == "kib")
        mult = 1024.0;
    else if (unit == "m" || unit == "mb" || unit == "mib")
        mult = 1024.0 * 1024;
    else if (unit == "g" || unit == "gb" || unit == "gib")
        mult = 1024.0 * 1024 * 1024;
    else if (unit == "t" || unit == "tb" || unit == "tib")
        mult = 1024.0 * 1024 * 1024 * 1024;
    else
        HEPTANE_THROW(InputError, "'" << s << "': unknown unit '" << end << "' (k, M, G or T)");
    const double b = v * mult;
    HEPTANE_ENSURE(b >= 1 && b < 1.8e19, InputError, "'" << s << "' is not a byte count >= 1");
    return static_cast<std::size_t>(b);
}

std::size_t device_free_bytes(const Executor& exec)
{
    if (!exec.is_cuda()) return 0;
#ifdef HEPTANE_HAVE_CUDA
    const auto& ce = static_cast<const CudaExecutor&>(exec);
    HEPTANE_CUDA_CHECK(cudaSetDevice(ce.device()));
    std::size_t free_b = 0, total = 0;
    HEPTANE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
    return free_b;
#else
    return 0;
#endif
}

#define HEPTANE_INSTANTIATE_M(MT)                                                          \
    template class OocMatrix<MT>;                                                          \
    template class OocBuilder<MT>;                                                         \
    template OocMatrix<MT> make_ooc_matrix<MT>(const Coo<double>&, std::size_t, bool);     \
    template std::vector<index_t> ooc_chunk_groups<MT>(const OocMatrix<MT>&, int, index_t, \
                                                       index_t);                           \
    template OocMatrix<MT> make_ooc_matrix<MT>(const Csr<double>&, std::size_t, bool);     \
    template OocMatrix<MT> make_ooc_matrix_bdia<MT>(                                       \
        const Coo<double>&, index_t, const std::vector<index_t>&, std::size_t, bool);      \
    template OocMatrix<MT> make_ooc_matrix_bdia<MT>(                                       \
        const Csr<double>&, index_t, const std::vector<index_t>&, std::size_t, bool);
HEPTANE_INSTANTIATE_M(double)
HEPTANE_INSTANTIATE_M(float)
#undef HEPTANE_INSTANTIATE_M
#define HEPTANE_INSTANTIATE(MT, VT)                                                               \
    template class OutOfCoreOperator<MT, VT>;                                                     \
    template std::unique_ptr<OutOfCoreOperator<MT, VT>> make_out_of_core_operator<MT, VT>(        \
        const Coo<double>&, std::shared_ptr<const Executor>, const OutOfCoreOptions&);            \
    template std::vector<std::shared_ptr<const Operator<VT>>> make_out_of_core_subsets<MT, VT>(   \
        const std::shared_ptr<const OocMatrix<MT>>&, int, const std::shared_ptr<const Executor>&, \
        const OutOfCoreOptions&, index_t, index_t);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
