// BDIA-GH from canonical COO and back (docs/design.md §1). With block size Nc, entry (r, c) lies
// on block offset d = c/Nc - r/Nc and, if d = d_q, in diagonal k = q*Nc + (c mod Nc), stored
// at data[k*rows + r]. Distinct block offsets are found with one flag per possible offset
// (no hash map); each entry's q by binary search in the short sorted offset list.
#include "formats/bdia/bdia.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/bitset.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/bdia/bdia_build.hpp"
#include "formats/padded_to_coo.hpp"
#include "formats/padding_limit.hpp"

namespace heptane {

namespace {

// Set bits [begin, end). Partial end words by hand, whole words in parallel.
void set_bit_range(std::uint64_t* words, std::size_t begin, std::size_t end)
{
    if (begin >= end) return;
    const std::size_t wb = begin >> 6, we = (end - 1) >> 6;
    const std::uint64_t all = ~std::uint64_t{0};
    const std::uint64_t first = all << (begin & 63);
    const std::uint64_t last = all >> (63 - ((end - 1) & 63));
    if (wb == we) {
        words[wb] |= first & last;
        return;
    }
    words[wb] |= first;
    words[we] |= last;
#pragma omp parallel for if (offset_t(we - wb) > kParallelMin)
    for (std::size_t w = wb + 1; w < we; ++w) words[w] = all;
}

// Validates size and block size; returns the block offsets sorted and without repeats.
std::vector<index_t> checked_offsets(index_t rows, index_t cols, index_t nc,
                                     std::vector<index_t> offsets, const char* who)
{
    HEPTANE_ENSURE(nc >= 1, InputError, who << ": block size must be >= 1, got " << nc);
    HEPTANE_ENSURE(rows >= 0 && cols >= 0, InputError,
                   who << ": negative matrix size " << rows << " x " << cols);
    HEPTANE_ENSURE(rows % nc == 0 && cols % nc == 0, InputError,
                   who << ": block size " << nc << " does not divide the matrix size " << rows
                       << " x " << cols);
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
    // An offset beyond the matrix has no valid slot; bounding it keeps d*Nc inside index_t.
    for (index_t d : offsets)
        HEPTANE_ENSURE(d >= -(rows / nc) && d <= cols / nc, InputError,
                       who << ": block offset " << d << " lies outside the " << rows / nc << " x "
                           << cols / nc << " block matrix");
    return offsets;
}

// The distinct block offsets of host CSR arrays (rows x cols, row pointers ptr, columns col) for
// a block size `nc` that is either an index_t or the constant 1 (std::integral_constant: the
// divisions and remainders per entry fold away; an integer division per entry was the larger
// part of a scalar conversion). Each thread scans a contiguous range of rows; a column outside
// the matrix is skipped (the placement reports it).
template <class NC>
void find_offsets(index_t rows, index_t cols, NC nc, const offset_t* ptr, const index_t* c,
                  std::vector<index_t>& block_offsets)
{
    const index_t brows = rows / nc, bcols = cols / nc;
    // d = c/Nc - r/Nc lies in [-(brows-1), bcols-1]; used[d + brows - 1] marks it.
    const std::size_t span = brows > 0 && bcols > 0 ? std::size_t(brows) + bcols - 1 : 0;
    std::vector<std::uint8_t> used(span, 0);
#pragma omp parallel for schedule(static) if (ptr[rows] > kParallelMin)
    for (index_t r = 0; r < rows; ++r) {
        const offset_t rb = r / nc;
        for (offset_t k = ptr[r]; k < ptr[r + 1]; ++k) {
            if (c[k] < 0 || c[k] >= cols) continue;
            const std::size_t f = std::size_t(offset_t(c[k] / nc) - rb + brows - 1);
            // Read first: the few flags of a stencil are set once and then only read, so
            // their cache lines stay shared instead of moving between the threads at every
            // entry (an unconditional write made this loop most of the conversion's time on
            // 16 threads).
            bool seen;
#pragma omp atomic read
            seen = used[f];
            if (!seen) {
#pragma omp atomic write
                used[f] = 1;
            }
        }
    }
    for (std::size_t f = 0; f < span; ++f)
        if (used[f]) block_offsets.push_back(static_cast<index_t>(offset_t(f) - brows + 1));
}

// Every entry into data/bits; bad = the first entry on an offset not in the list (nnz: none).
template <class T, class NC>
void bdia_fill_raw(index_t rows, index_t cols, NC nc, const std::vector<index_t>& block_offsets,
                   const offset_t* ptr, const index_t* c, const T* v, T* data, std::uint64_t* bits,
                   offset_t& bad)
{
    const index_t nq = index_t(block_offsets.size());
    const index_t* dq = block_offsets.data();
    const offset_t nnz = ptr[rows];
    offset_t first_bad = nnz;
    // Each thread takes a contiguous range of rows [r0, r1) (its entries are contiguous too).
    // Its bits of diagonal k lie in [k*rows + r0, k*rows + r1), so only the first and the last
    // word of each such stretch can hold another thread's bits: those get an atomic OR, the
    // rest a plain one (an atomic per entry cost more than everything else here).
#pragma omp parallel reduction(min : first_bad) if (nnz > kParallelMin)
    {
        const ThreadShare share = thread_share(rows);
        const index_t r0 = index_t(share.begin), r1 = index_t(share.end);
        for (index_t r = r0; r < r1; ++r) {
            const index_t rb = r / nc;
            index_t q = 0;  // the previous entry's offset index: a row's entries ascend in d
            for (offset_t e = ptr[r]; e < ptr[r + 1]; ++e) {
                if (c[e] < 0 || c[e] >= cols) {  // outside the matrix
                    first_bad = std::min(first_bad, e);
                    continue;
                }
                const index_t d = c[e] / nc - rb;
                // Most entries lie on the offset of the previous entry or the next one: try
                // those before the binary search.
                if (!(q < nq && dq[q] == d)) {
                    if (q + 1 < nq && dq[q + 1] == d)
                        ++q;
                    else
                        q = index_t(std::lower_bound(dq, dq + nq, d) - dq);
                }
                if (q == nq || dq[q] != d) {
                    first_bad = std::min(first_bad, e);
                    q = 0;
                    continue;
                }
                // slot k = q*Nc + (c mod Nc), stored at data[k*rows + r]
                const std::size_t k = std::size_t(q) * nc + c[e] % nc;
                const std::size_t s = k * rows + r;
                data[s] = v[e];
                const std::size_t w = s >> 6;
                if (w == (k * rows + r0) >> 6 || w == (k * rows + r1 - 1) >> 6)
                    set_bit_atomic(bits, s);
                else
                    bits[w] |= std::uint64_t{1} << (s & 63);
            }
        }
    }
    bad = first_bad;
}

// Sizes and row pointers of host CSR `a` (from 0, non-decreasing, to nnz): O(rows).
template <class T>
void require_row_pointers(const Csr<T>& a, const char* who)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, who << " works on host CSR");
    HEPTANE_ENSURE(a.rows >= 0 && a.cols >= 0 && a.row_ptr.size() == std::size_t(a.rows) + 1 &&
                       a.col_idx.size() == a.values.size(),
                   InputError,
                   who << ": CSR arrays do not fit a " << a.rows << " x " << a.cols << " matrix ("
                       << a.row_ptr.size() << " row pointers, " << a.col_idx.size() << " columns, "
                       << a.values.size() << " values)");
    const offset_t* rp = a.row_ptr.data();
    HEPTANE_ENSURE(rp[0] == 0 && rp[a.rows] == a.nnz(), InputError,
                   who << ": row pointers run from " << rp[0] << " to " << rp[a.rows]
                       << ", not from 0 to " << a.nnz());
    index_t bad = a.rows;
#pragma omp parallel for reduction(min : bad) if (a.rows > kParallelMin)
    for (index_t i = 0; i < a.rows; ++i)
        if (rp[i + 1] < rp[i]) bad = std::min(bad, i);
    HEPTANE_ENSURE(bad == a.rows, InputError,
                   who << ": decreasing row pointers at row " << bad << " (0-based)");
}

// The block offsets: given (checked: checked_offsets) or found in the CSR arrays.
std::vector<index_t> block_offsets_of(index_t rows, index_t cols, index_t nc,
                                      std::vector<index_t> offsets, const offset_t* ptr,
                                      const index_t* col, const char* who)
{
    const bool given = !offsets.empty();
    offsets = checked_offsets(rows, cols, nc, std::move(offsets), who);
    if (!given) {
        if (nc == 1)
            find_offsets(rows, cols, std::integral_constant<index_t, 1>{}, ptr, col, offsets);
        else
            find_offsets(rows, cols, nc, ptr, col, offsets);
    }
    return offsets;
}

// BDIA-GH stores every slot of its block diagonals: a matrix whose entries lie on many of them
// (a random pattern, a numbering that is no grid's) would store far more values than entries.
// An InputError rather than an allocation of gigabytes (an explicit --format bdiagh): more than
// 32 values stored per entry, once beyond 2^24 slots (a small matrix on many block diagonals,
// e.g. a least-squares system's 1200, is still built).
void check_storage(index_t rows, index_t cols, index_t nc, std::size_t block_diagonals,
                   offset_t nnz, const char* who)
{
    const std::size_t slots = block_diagonals * std::size_t(nc) * std::size_t(rows);
    HEPTANE_ENSURE(padding_within_limit(slots, nnz), InputError,
                   who << ": BDIA-GH would need " << block_diagonals
                       << " block diagonals of block size " << nc << " for this " << rows << " x "
                       << cols << " matrix and store " << slots << " values for its " << nnz
                       << " entries (limit: 32 values an entry beyond 2^24): its entries do not "
                          "lie on a few block diagonals (use CSR, ELL or HYB; --format auto "
                          "chooses)");
}

// BDIA-GH with these offsets from host CSR arrays (the checks done), on `exec`: placed on the
// host, or on a GPU from `dev` (the same arrays already there) or an upload of them. An entry
// outside the matrix or off the offsets is an InputError naming it.
template <class T>
Bdia<T> place_csr(index_t rows, index_t cols, index_t nc, std::vector<index_t> offsets,
                  const offset_t* ptr, const index_t* col, const T* val,
                  const std::shared_ptr<const Executor>& exec, const Csr<T>* dev, const char* who)
{
    const index_t nq = index_t(offsets.size());
    const offset_t nnz = ptr[rows];
    const std::size_t slots = std::size_t(nq) * std::size_t(nc) * std::size_t(rows);
    Bdia<T> m;
    m.rows = rows;
    m.cols = cols;
    m.block_size = nc;
    m.data = Array<T>(exec, slots);
    m.pattern = Array<std::uint64_t>(exec, (slots + 63) / 64);
    offset_t bad = -1;
    if (exec->is_cpu()) {
        bad = kernels::bdia_place_entries(static_cast<const CpuExecutor&>(*exec), rows, cols, nc,
                                          offsets.data(), nq, nnz, ptr, col, val, m.data.data(),
                                          m.pattern.data());
    } else {
#ifdef HEPTANE_HAVE_CUDA
        const auto& cuda_exec = static_cast<const CudaExecutor&>(*exec);
        if (dev) {  // the caller's copy on the device
            bad = kernels::bdia_place_entries(cuda_exec, rows, cols, nc, offsets.data(), nq, nnz,
                                              dev->row_ptr.data(), dev->col_idx.data(),
                                              dev->values.data(), m.data.data(), m.pattern.data());
        } else {  // streamed up in chunks, each placed while the next one is uploaded
            constexpr offset_t kChunkEntries = offset_t(1) << 22;
            bad = kernels::bdia_place_entries_from_host(cuda_exec, rows, cols, nc, offsets.data(),
                                                        nq, ptr, col, val, m.data.data(),
                                                        m.pattern.data(), kChunkEntries);
        }
#else
        (void)dev;
        HEPTANE_THROW(NotSupported, "BDIA-GH on a GPU requested in a build without CUDA");
#endif
    }
    if (bad >= 0) {
        const index_t r = index_t(std::upper_bound(ptr, ptr + rows + 1, bad) - ptr - 1);
        const index_t c = col[bad];
        HEPTANE_ENSURE(c >= 0 && c < cols, InputError,
                       who << ": entry (" << r << ", " << c << ") (0-based) lies outside the "
                           << rows << " x " << cols << " matrix");
        HEPTANE_THROW(InputError, who << ": entry (" << r << ", " << c
                                      << ") (0-based) lies on block offset " << c / nc - r / nc
                                      << ", which is not among the given block offsets"
                                      << " (block size " << nc << ")");
    }
    m.block_offsets = std::move(offsets);
    return m;
}

}  // namespace

namespace kernels {

template <class T>
offset_t bdia_place_entries(const CpuExecutor&, index_t rows, index_t cols, index_t nc,
                            const index_t* offsets, index_t nq, offset_t nnz,
                            const offset_t* row_ptr, const index_t* col, const T* val, T* data,
                            std::uint64_t* pattern)
{
    const std::size_t slots = std::size_t(nq) * std::size_t(nc) * std::size_t(rows);
    const std::size_t words = (slots + 63) / 64;
#pragma omp parallel for schedule(static) if (slots > std::size_t(kParallelMin))
    for (std::size_t i = 0; i < slots; ++i) data[i] = T(0);
#pragma omp parallel for schedule(static) if (words > std::size_t(kParallelMin))
    for (std::size_t i = 0; i < words; ++i) pattern[i] = 0;
    const std::vector<index_t> dq(offsets, offsets + nq);
    offset_t bad = 0;
    auto fill = [&](auto ncv) {
        bdia_fill_raw(rows, cols, ncv, dq, row_ptr, col, val, data, pattern, bad);
    };
    if (nc == 1)
        fill(std::integral_constant<index_t, 1>{});
    else
        fill(nc);
    return bad == nnz ? offset_t(-1) : bad;
}

}  // namespace kernels

template <class T>
std::vector<index_t> bdia_block_offsets(const Coo<T>& a, index_t block_size)
{
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "bdia_block_offsets");
    return block_offsets_of(a.rows, a.cols, block_size, {}, ptr.data(), a.col.data(),
                            "bdia_block_offsets");
}

template <class T>
Bdia<T> bdia_from_coo(const Coo<T>& a, index_t block_size, std::vector<index_t> block_offsets)
{
    return bdia_from_coo(a, block_size, std::move(block_offsets), cpu_executor());
}

template <class T>
Bdia<T> bdia_from_coo(const Coo<T>& a, index_t block_size, std::vector<index_t> block_offsets,
                      const std::shared_ptr<const Executor>& exec)
{
    HEPTANE_ENSURE(exec != nullptr, InputError, "bdia_from_coo: no executor given");
    // canonical COO is CSR with these row pointers (the check of canonical order included)
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "bdia_from_coo");
    block_offsets = block_offsets_of(a.rows, a.cols, block_size, std::move(block_offsets),
                                     ptr.data(), a.col.data(), "bdia_from_coo");
    check_storage(a.rows, a.cols, block_size, block_offsets.size(), a.nnz(), "bdia_from_coo");
    return place_csr<T>(a.rows, a.cols, block_size, std::move(block_offsets), ptr.data(),
                        a.col.data(), a.val.data(), exec, nullptr, "bdia_from_coo");
}

template <class T>
Bdia<T> bdia_from_csr(const Csr<T>& a, index_t block_size, std::vector<index_t> block_offsets,
                      const std::shared_ptr<const Executor>& exec, const Csr<T>* on_exec)
{
    HEPTANE_ENSURE(exec != nullptr, InputError, "bdia_from_csr: no executor given");
    // The row pointers here (O(rows)); each column is checked where it is placed (a column
    // outside the matrix is reported like an entry off the offsets), so the entries are read
    // once, by the placement, and not also by a host pass.
    require_row_pointers(a, "bdia_from_csr");
    HEPTANE_ENSURE(
        !on_exec || exec->is_cpu() ||
            (on_exec->exec() == exec && on_exec->rows == a.rows && on_exec->nnz() == a.nnz()),
        InputError,
        "bdia_from_csr: the executor's copy of the matrix is not the given one on "
        "this executor");
    block_offsets = block_offsets_of(a.rows, a.cols, block_size, std::move(block_offsets),
                                     a.row_ptr.data(), a.col_idx.data(), "bdia_from_csr");
    check_storage(a.rows, a.cols, block_size, block_offsets.size(), a.nnz(), "bdia_from_csr");
    return place_csr(a.rows, a.cols, block_size, std::move(block_offsets), a.row_ptr.data(),
                     a.col_idx.data(), a.values.data(), exec, exec->is_cpu() ? nullptr : on_exec,
                     "bdia_from_csr");
}

template <class T>
Coo<T> to_coo(const Bdia<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "to_coo works on host BDIA");
    const index_t rows = a.rows, nc = a.block_size, nk = a.num_diagonals();
    const std::uint64_t* bits = a.pattern.data();
    const T* data = a.data.data();
    std::vector<index_t> off(nk);
    for (index_t k = 0; k < nk; ++k) off[k] = a.offset(k);
    // column(r, k) = r - r mod Nc + offset(k) grows with k (offsets ascend, s < Nc), so each
    // row comes out sorted.
    return detail::padded_to_coo(rows, a.cols, bits, data, offset_t(a.data.size()) > kParallelMin,
                                 [&](index_t i, auto&& f) {
                                     const index_t base = i - i % nc;
                                     for (index_t k = 0; k < nk; ++k)
                                         f(std::size_t(k) * rows + i, base + off[k]);
                                 });
}

template <class T>
Bdia<T> bdia_zeros(index_t rows, index_t cols, index_t block_size,
                   std::vector<index_t> block_offsets)
{
    const index_t nc = block_size;
    block_offsets = checked_offsets(rows, cols, nc, std::move(block_offsets), "bdia_zeros");
    const std::size_t slots = block_offsets.size() * std::size_t(nc) * std::size_t(rows);
    Bdia<T> m;
    m.rows = rows;
    m.cols = cols;
    m.block_size = nc;
    m.data = Array<T>(cpu_executor(), slots);
    m.pattern = bdia_zeros_pattern(rows, cols, nc, block_offsets);
    m.block_offsets = std::move(block_offsets);
    return m;
}

Array<std::uint64_t> bdia_zeros_pattern(index_t rows, index_t cols, index_t block_size,
                                        const std::vector<index_t>& block_offsets)
{
    const index_t nc = block_size, nq = index_t(block_offsets.size());
    const index_t brows = rows / nc, bcols = cols / nc;
    Array<std::uint64_t> pattern = make_bitset(std::size_t(nq) * nc * rows, false);
    // Diagonal k = q*Nc + s is valid on block rows b with 0 <= b + d_q < bcols: one
    // contiguous range of rows, so one contiguous range of bits.
    for (index_t q = 0; q < nq; ++q) {
        const offset_t d = block_offsets[std::size_t(q)];
        const offset_t lo = std::max<offset_t>(0, -d), hi = std::min<offset_t>(brows, bcols - d);
        if (lo >= hi) continue;
        for (index_t s = 0; s < nc; ++s) {
            const std::size_t k0 = (std::size_t(q) * nc + s) * rows;
            set_bit_range(pattern.data(), k0 + std::size_t(lo) * nc, k0 + std::size_t(hi) * nc);
        }
    }
    return pattern;
}

#define HEPTANE_INSTANTIATE(T)                                                                \
    template Bdia<T> bdia_from_coo<T>(const Coo<T>&, index_t, std::vector<index_t>);          \
    template Bdia<T> bdia_from_coo<T>(const Coo<T>&, index_t, std::vector<index_t>,           \
                                      const std::shared_ptr<const Executor>&);                \
    template std::vector<index_t> bdia_block_offsets<T>(const Coo<T>&, index_t);              \
    template Bdia<T> bdia_from_csr<T>(const Csr<T>&, index_t, std::vector<index_t>,           \
                                      const std::shared_ptr<const Executor>&, const Csr<T>*); \
    template Coo<T> to_coo<T>(const Bdia<T>&);                                                \
    template Bdia<T> bdia_zeros<T>(index_t, index_t, index_t, std::vector<index_t>);          \
    template offset_t kernels::bdia_place_entries<T>(                                         \
        const CpuExecutor&, index_t, index_t, index_t, const index_t*, index_t, offset_t,     \
        const offset_t*, const index_t*, const T*, T*, std::uint64_t*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
