// Matrices larger than the device: the matrix lives in host memory (page-locked where a GPU
// will read it), cut into row chunks, and an Operator streams the chunks through a few
// device buffers, the copy of chunk k+1 (on a copy stream) overlapping the product of chunk k
// (on the executor's stream). As many leading chunks as the device budget allows stay on the
// device (partial residency), merged into one block (one CSR block; one BDIA-GH row block for
// BDIA-GH chunks) that one launch runs; only the rest crosses the bus at every product. The vectors
// stay in the executor's memory, so MLEM, LSQR, CG and BiCGStab use the operator unchanged.
//
// A chunk is compact CSR: 32-bit row pointers local to the chunk, 32-bit column indices and
// values of type MT (fp32 values halve the bytes streamed), in one block so that one copy
// moves it:
//
//     [row_ptr: rows + 1 x u32][col: nnz x u32][pad to 16 B][val: nnz x MT]
//
// y = A x writes each chunk's own rows; y = A^T x scales y by beta once and each chunk adds
// its rows' contribution (an atomic scatter on the GPU, no stored transpose).
//
// When the matrix does not fit in host memory either, the chunks live in a chunk file
// (.hoc, outofcore_file.cpp: the blocks as above, each at a 4096-byte offset, then a table of
// the chunks and a trailer). open_ooc_file keeps the trailing chunks in host memory within a
// host budget and leaves the rest in the file; the operator keeps the leading chunks on the
// device within its budget, streams host chunks straight from their page-locked blocks and
// reads file chunks into page-locked staging buffers (pread over the threads) one buffer
// ahead of their copies. Every chunk read from a file is checked once (row pointers, columns)
// before a kernel sees it.
//
// A matrix of Nc x Nc blocks on a few block diagonals (BDIA-GH, formats/bdia) may be cut into
// BDIA-GH chunks instead (make_ooc_matrix_bdia): rows a multiple of Nc, no column indices,
//
//     [block offsets: D x i32][pad to 16 B][val: D Nc rows x MT, column-major]
//
// so a chunk streams 8 bytes per fp64 slot where CSR streams 12 per entry (plus the zeros
// BDIA-GH pads with: none for a banded hepta matrix, its missing face couplings for a grid).
// Kernels: outofcore_kernels.hpp (CPU: outofcore_cpu.cpp, CUDA: outofcore.cu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/operator.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"

namespace heptane {

/// One chunk's block of memory, laid out as above.
struct OocChunk {
    index_t row0 = 0;         ///< first row of the chunk in the matrix
    index_t rows = 0;         ///< rows in the chunk (≥ 1)
    offset_t nnz = 0;         ///< entries in the chunk (< 2^32)
    std::size_t bytes = 0;    ///< bytes of the block (what one copy moves)
    std::size_t col_off = 0;  ///< byte offset of the column indices in the block
    std::size_t val_off = 0;  ///< byte offset of the values in the block
    int lanes = 1;            ///< threads per row of the CUDA kernels (1..32, from the mean row)
    int nc = 0;               ///< 0: a CSR chunk; else a BDIA-GH chunk of Nc x Nc blocks
    int block_diagonals = 0;  ///< BDIA-GH: D, the block offsets at the block's start
    void* data = nullptr;     ///< the block in host memory; null: in the matrix's file only
    std::uint64_t file_offset = 0;  ///< where the block starts in the chunk file (if any)
};

/// How open_ooc_file places a chunk file's blocks.
struct OocFileOptions {
    /// Host memory the blocks may take: the trailing chunks are read into memory while they
    /// fit, the others stay in the file (read at every product that needs them). SIZE_MAX:
    /// every block in memory; 0: none.
    std::size_t host_memory = ~std::size_t(0);
    /// Page-locked blocks (a GPU build only), for a GPU to stream from.
    bool pinned = false;
    /// Only chunks [first_chunk, last_chunk) are read into memory (a process's own rows when
    /// the rows are split over processes); last_chunk < 0: to the last.
    index_t first_chunk = 0;
    index_t last_chunk = -1;
};

template <class MT>
class OocMatrix;
/// Open a chunk file written with MT values (InputError naming the file's value type
/// otherwise), reading the blocks opt.host_memory allows (checked as read_chunk does).
template <class MT>
OocMatrix<MT> open_ooc_file(const std::string& path, const OocFileOptions& opt = {});

/// The chunked matrix in host memory. Move-only; frees its blocks (page-locked or not).
template <class MT>
class OocMatrix {
public:
    OocMatrix() = default;
    ~OocMatrix();
    OocMatrix(OocMatrix&& o) noexcept;
    OocMatrix& operator=(OocMatrix&& o) noexcept;
    OocMatrix(const OocMatrix&) = delete;
    OocMatrix& operator=(const OocMatrix&) = delete;

    index_t rows() const noexcept { return rows_; }
    index_t cols() const noexcept { return cols_; }
    offset_t nnz() const noexcept { return nnz_; }
    /// Bytes of all chunk blocks (what a product streams when nothing is resident).
    std::size_t bytes() const noexcept { return bytes_; }
    /// The largest block (the size of a stream buffer).
    std::size_t max_chunk_bytes() const noexcept { return max_chunk_; }
    bool pinned() const noexcept { return pinned_; }
    const std::vector<OocChunk>& chunks() const noexcept { return chunks_; }
    /// The chunk file behind the chunks whose data is null ("" when every block is in memory).
    const std::string& file() const noexcept { return file_; }
    /// Bytes of the blocks held in host memory (the rest are read from file() when used).
    std::size_t host_bytes() const noexcept;
    /// Read chunk k's block from the file into `dst` (at least file_read_bytes(k) bytes;
    /// 4096-byte aligned for direct I/O), over the threads in pieces, and check it when
    /// `check` (row pointers from 0 to nnz, non-decreasing; columns < cols()). IoError on a
    /// short read, InputError on a bad block. Thread-safe (pread).
    void read_chunk(index_t k, void* dst, bool check = true) const;
    /// What read_chunk(k) writes: the block rounded up to 4096 bytes.
    std::size_t file_read_bytes(index_t k) const;
    /// Chunk k's block offsets (a BDIA-GH chunk; empty for a CSR chunk), from its block in
    /// memory or read from the file (not checked: read_chunk checks them before they are used).
    std::vector<std::int32_t> block_offsets(index_t k) const;

private:
    template <class>
    friend class OocBuilder;
    template <class T>
    friend OocMatrix<T> ooc_bdia_from_rows(index_t, index_t, const offset_t*, const index_t*,
                                           const double*, index_t, const std::vector<index_t>&,
                                           std::size_t, bool);
    friend OocMatrix<MT> open_ooc_file<MT>(const std::string&, const OocFileOptions&);
    void close_file() noexcept;
    index_t rows_ = 0, cols_ = 0;
    offset_t nnz_ = 0;
    std::size_t bytes_ = 0, max_chunk_ = 0;
    bool pinned_ = false;
    std::vector<OocChunk> chunks_;
    std::string file_;
    int fd_ = -1;
};

/// Check a chunk block in memory (row pointers from 0 to nnz, non-decreasing; columns below
/// `cols`); InputError naming `where` otherwise.
template <class MT>
void check_ooc_block(const OocChunk& c, const void* block, index_t cols, const std::string& where);

/// Builds an OocMatrix row by row (rows in order), cutting a chunk whenever the next row would
/// take its block past `chunk_bytes` (a row larger than that gets a chunk of its own).
/// `pinned`: page-locked blocks (cudaHostAlloc; a GPU build only, NotSupported otherwise) for a
/// GPU to stream from; plain host memory for the CPU.
template <class MT>
class OocBuilder {
public:
    OocBuilder(index_t cols, std::size_t chunk_bytes, bool pinned);
    /// Write the chunks to a chunk file at `path` as they are sealed (memory: one chunk);
    /// finish() writes the table and returns the matrix with every block in the file. The
    /// file appears at `path` only when finish() succeeds (written as path.tmp, renamed).
    OocBuilder(index_t cols, std::size_t chunk_bytes, const std::string& path);
    ~OocBuilder();
    OocBuilder(const OocBuilder&) = delete;
    OocBuilder& operator=(const OocBuilder&) = delete;
    /// Append one row: n entries, columns in [0, cols) (any order), values converted to MT.
    void append_row(const index_t* cols, const double* vals, index_t n);
    index_t rows() const noexcept { return m_.rows_ + staged_rows(); }
    /// Seal the last chunk and hand the matrix over (the builder is then empty).
    OocMatrix<MT> finish();

private:
    index_t staged_rows() const noexcept { return static_cast<index_t>(row_ptr_.size()) - 1; }
    void seal();
    OocMatrix<MT> m_;
    std::size_t chunk_bytes_;
    struct Sink;
    std::unique_ptr<Sink> sink_;  ///< the chunk file being written, if any
    std::vector<std::uint32_t> row_ptr_{0};
    std::vector<std::uint32_t> col_;
    std::vector<MT> val_;
};

/// BDIA-GH chunks (see above) of canonical host COO `a` with block size `nc` (dividing rows and
/// cols) and the ascending block offsets (every entry on one: InputError otherwise); chunk rows
/// a multiple of nc, about chunk_bytes a block. nnz() counts a's entries.
template <class MT>
OocMatrix<MT> make_ooc_matrix_bdia(const Coo<double>& a, index_t nc,
                                   const std::vector<index_t>& block_offsets,
                                   std::size_t chunk_bytes, bool pinned);
/// The same from host CSR.
template <class MT>
OocMatrix<MT> make_ooc_matrix_bdia(const Csr<double>& a, index_t nc,
                                   const std::vector<index_t>& block_offsets,
                                   std::size_t chunk_bytes, bool pinned);

/// The chunked copy of canonical host COO `a` (values converted to MT).
template <class MT>
OocMatrix<MT> make_ooc_matrix(const Coo<double>& a, std::size_t chunk_bytes, bool pinned);
/// The same from host CSR.
template <class MT>
OocMatrix<MT> make_ooc_matrix(const Csr<double>& a, std::size_t chunk_bytes, bool pinned);

/// "1.58 GB", "67.1 MB", "357 kB": bytes as the operators' describe() and heptane info print them.
std::string bytes_text(double bytes);

/// A chunk file's header and table, without reading any block.
struct OocFileInfo {
    index_t rows = 0, cols = 0;
    offset_t nnz = 0;
    int value_bytes = 8;  ///< 8: fp64 values, 4: fp32
    index_t chunks = 0;
    std::size_t bytes = 0;      ///< all blocks
    std::size_t max_chunk = 0;  ///< the largest block
};
/// Read a chunk file's header, table and trailer; IoError when it cannot be read, InputError
/// when it is not a heptane chunk file or its table is inconsistent (truncated, bad offsets).
OocFileInfo ooc_file_info(const std::string& path);
/// Whether `path` names a chunk file (ends in ".hoc").
bool is_ooc_file(const std::string& path);
/// Write `m` as a chunk file at `path` (blocks in the file are copied through a buffer).
template <class MT>
void save_ooc_file(const OocMatrix<MT>& m, const std::string& path);
/// The entries of `m` as canonical host COO (blocks in the file read one at a time; of
/// BDIA-GH chunks the non-zero slots).
template <class MT>
Coo<double> to_coo(const OocMatrix<MT>& m);
/// y = A x (A^T x with `transpose`) in fp64 on the host from the chunks' entries, the blocks
/// read one at a time (a reference: no chunk kernel, the matrix need not fit in memory);
/// `scale` (may be null) gets sum_j |a_ij x_j| per entry of y, the size of what was summed.
template <class MT>
void ooc_reference_product(const OocMatrix<MT>& m, bool transpose, const double* x, double* y,
                           double* scale);

/// The Nc x Nc diagonal blocks of square `m` (entries (i, j) with i / nc == j / nc; of BDIA-GH
/// chunks the non-zero slots) as host CSR: what Jacobi and block Jacobi are set up from when
/// the matrix itself is not in memory. Reads every block once (from the file where it is).
/// Chunks [first_chunk, last_chunk) only (last_chunk < 0: to the end): the square block of
/// their rows, numbered from their first row (a process's rows); they must start and end on
/// a block. InputError otherwise, and for nc < 1 or a matrix that is not square.
template <class MT>
Csr<double> ooc_block_diagonal(const OocMatrix<MT>& m, index_t nc, index_t first_chunk = 0,
                               index_t last_chunk = -1);
/// The block size the chunks tell: their Nc when every chunk is BDIA-GH with one Nc, else 1.
index_t ooc_block_size(const std::vector<OocChunk>& chunks);
/// Whether the chunks are BDIA-GH (the first chunk's format; a file's chunks share it).
inline bool ooc_bdia_chunks(const std::vector<OocChunk>& chunks)
{
    return !chunks.empty() && chunks.front().nc > 0;
}

struct OutOfCoreOptions {
    /// Target bytes per chunk block when the operator builds the chunks itself.
    std::size_t chunk_bytes = std::size_t(64) << 20;
    /// Device memory the matrix may take (resident chunks and stream buffers), bytes; 0: what
    /// the device has free at construction, less a reserve for the solver's vectors
    /// (max(1 GiB, 10 %) plus 8 vectors of rows + cols values).
    std::size_t device_budget = 0;
    /// At most this fraction of the matrix's bytes stays resident (1: as much as the budget
    /// allows; 0: stream everything). For benchmarks of partial residency.
    double max_resident_fraction = 1.0;
    /// Stream buffers (≥ 2): copies run up to buffers − 1 chunks ahead of the products.
    int buffers = 3;
    /// When the operator builds the chunks itself: BDIA-GH chunks with this block size and
    /// these block offsets (a hepta matrix's, formats/detect); 0: CSR chunks.
    index_t bdia_block_size = 0;
    std::vector<index_t> bdia_block_offsets;
};

/// Where the chunks of an out-of-core operator live.
struct OocLayout {
    index_t chunks = 0;
    index_t resident_chunks = 0;     ///< the leading chunks kept on the device
    std::size_t bytes = 0;           ///< all chunk blocks
    std::size_t resident_bytes = 0;  ///< of which resident
    std::size_t streamed_bytes = 0;  ///< of which copied at every product
    std::size_t buffer_bytes = 0;    ///< device stream buffers
    std::size_t budget = 0;          ///< the device budget it was placed with
    index_t file_chunks = 0;         ///< of the streamed (CPU: all) chunks, those read from file
    std::size_t file_bytes = 0;      ///< their bytes: read from the file at every product
    std::size_t staging_bytes = 0;   ///< page-locked host staging buffers for them
};

/// The operator: y = alpha op(A) x + beta y with A in host chunks and x, y in the memory of
/// `exec` (a CPU executor computes from the host blocks directly). Thread-compatible like the
/// other operators: one apply at a time.
template <class MT, class VT>
class OutOfCoreOperator final : public Operator<VT> {
public:
    /// Place `m` on `exec` under `opt`'s budget. A GPU needs m.pinned(). Throws InputError
    /// when the budget cannot hold the stream buffers (lower the chunk size), DeviceError on
    /// allocation failures.
    OutOfCoreOperator(std::shared_ptr<const OocMatrix<MT>> m,
                      const std::shared_ptr<const Executor>& exec,
                      const OutOfCoreOptions& opt = {});
    /// The rows of chunks [first, last) only (a row block, e.g. an OSEM subset): rows() is
    /// theirs, x of A^T x and y of A x start at the block's first row. InputError for an empty
    /// or out-of-range chunk range.
    OutOfCoreOperator(std::shared_ptr<const OocMatrix<MT>> m,
                      const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions& opt,
                      index_t first, index_t last);
    ~OutOfCoreOperator() override;
    OutOfCoreOperator(const OutOfCoreOperator&) = delete;
    OutOfCoreOperator& operator=(const OutOfCoreOperator&) = delete;

    index_t rows() const override;
    index_t cols() const override;
    std::shared_ptr<const Executor> executor() const override;
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override;
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override;
    using Operator<VT>::apply;
    std::string describe() const override;
    /// True when chunks stream (from host memory or the file) at every product.
    bool host_paced() const override;
    const OocLayout& layout() const noexcept;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// Build the chunks from canonical host COO (page-locked when `exec` is a GPU) and place them.
template <class MT, class VT>
std::unique_ptr<OutOfCoreOperator<MT, VT>> make_out_of_core_operator(
    const Coo<double>& a, std::shared_ptr<const Executor> exec, const OutOfCoreOptions& opt = {});

/// `subsets` operators over consecutive groups of chunks of about equal bytes (OSEM's row
/// blocks), sharing `m`; a device budget (given, or what the device has free less the reserve)
/// is split evenly between them. Of chunks [first, last) only (last < 0: to the end; a
/// process's own rows). InputError when there are fewer chunks than `subsets` (lower the
/// chunk size).
template <class MT, class VT>
std::vector<std::shared_ptr<const Operator<VT>>> make_out_of_core_subsets(
    const std::shared_ptr<const OocMatrix<MT>>& m, int subsets,
    const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions& opt = {},
    index_t first = 0, index_t last = -1);

/// `parts` consecutive groups of m's chunks [first, last) (last < 0: to the end) of about
/// equal bytes, at least one chunk each: parts + 1 chunk indices, `first` first and `last`
/// last (OSEM's subsets, processes' rows). InputError when there are fewer chunks than parts.
template <class MT>
std::vector<index_t> ooc_chunk_groups(const OocMatrix<MT>& m, int parts, index_t first = 0,
                                      index_t last = -1);

/// Bytes the chunks of a matrix with `rows`, `nnz` take at `value_bytes` per value (the
/// row pointers of every chunk, 4-byte columns, values; padding not counted): for the
/// --out-of-core auto rule before anything is built.
inline double ooc_bytes_estimate(double rows, double nnz, double value_bytes)
{
    return 4.0 * rows + (4.0 + value_bytes) * nnz;
}

/// "8G", "512M", "64k", "1.5GiB", "8e9", "1000": bytes (k, M, G, T powers of 1024, with or
/// without "B"/"iB"). Throws InputError on anything else or a value < 1.
std::size_t parse_bytes(const std::string& s);

/// Device memory free now on `exec` (cudaMemGetInfo); 0 on the CPU.
std::size_t device_free_bytes(const Executor& exec);

}  // namespace heptane
