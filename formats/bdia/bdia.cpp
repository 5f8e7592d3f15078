// BDIA-GH from canonical COO and back (docs/design.md §1). With block size Nc, entry (r, c) lies
// on block offset d = c/Nc - r/Nc and, if d = d_q, in diagonal k = q*Nc + (c mod Nc), stored
// at data[k*rows + r]. Distinct block offsets are found with one flag per possible offset
// (no hash map); each entry's q by binary search in the short sorted offset list.
#include "formats/bdia/bdia.hpp"

#include <algorithm>
#include <cstdint>

#include "core/bitset.hpp"
#include "core/error.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace heptane {

namespace {

// Loops over fewer items than this run serially: a parallel region costs more there.
constexpr offset_t kParallelMin = offset_t(1) << 15;

// Set bit i where other threads may set bits of the same word.
inline void set_bit_atomic(std::uint64_t* words, std::size_t i) noexcept
{
    const std::uint64_t m = std::uint64_t{1} << (i & 63);
#pragma omp atomic
    words[i >> 6] |= m;
}

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

}  // namespace

template <class T>
Bdia<T> bdia_from_coo(const Coo<T>& a, index_t block_size, std::vector<index_t> block_offsets)
{
    const index_t nc = block_size;
    const bool given = !block_offsets.empty();
    block_offsets = checked_offsets(a.rows, a.cols, nc, std::move(block_offsets), "bdia_from_coo");
    require_canonical(a, "bdia_from_coo");
    const index_t rows = a.rows, brows = a.rows / nc, bcols = a.cols / nc;
    const offset_t nnz = a.nnz();
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    const T* v = a.val.data();

    if (!given) {
        // d = c/Nc - r/Nc lies in [-(brows-1), bcols-1]; used[d + brows - 1] marks it.
        const std::size_t span = brows > 0 && bcols > 0 ? std::size_t(brows) + bcols - 1 : 0;
        std::vector<std::uint8_t> used(span, 0);
#pragma omp parallel for if (nnz > kParallelMin)
        for (offset_t k = 0; k < nnz; ++k) {
            const std::size_t f = std::size_t(offset_t(c[k] / nc) - r[k] / nc + brows - 1);
#pragma omp atomic write
            used[f] = 1;
        }
        for (std::size_t f = 0; f < span; ++f)
            if (used[f]) block_offsets.push_back(static_cast<index_t>(offset_t(f) - brows + 1));
    }

    const index_t nq = index_t(block_offsets.size());
    const std::size_t slots = std::size_t(nq) * nc * rows;
    std::vector<T> data(slots, T(0));
    Array<std::uint64_t> pattern = make_bitset(slots, false);
    std::uint64_t* bits = pattern.data();
    const index_t* dq = block_offsets.data();
    offset_t bad = nnz;  // first entry on an offset that is not in the list
    // Each thread takes a contiguous range of rows [r0, r1) (its entries are contiguous too).
    // Its bits of diagonal k lie in [k*rows + r0, k*rows + r1), so only the first and the last
    // word of each such stretch can hold another thread's bits: those get an atomic OR, the
    // rest a plain one (an atomic per entry cost more than everything else here).
#pragma omp parallel reduction(min : bad) if (nnz > kParallelMin)
    {
#ifdef _OPENMP
        const offset_t t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const offset_t t = 0, nt = 1;
#endif
        const index_t r0 = index_t(rows * t / nt), r1 = index_t(rows * (t + 1) / nt);
        const offset_t e0 = std::lower_bound(r, r + nnz, r0) - r;
        const offset_t e1 = std::lower_bound(r, r + nnz, r1) - r;
        for (offset_t e = e0; e < e1; ++e) {
            const index_t d = c[e] / nc - r[e] / nc;
            const index_t q = index_t(std::lower_bound(dq, dq + nq, d) - dq);
            if (q == nq || dq[q] != d) {
                bad = std::min(bad, e);
                continue;
            }
            // slot k = q*Nc + (c mod Nc), stored at data[k*rows + r]
            const std::size_t k = std::size_t(q) * nc + c[e] % nc;
            const std::size_t s = k * rows + r[e];
            data[s] = v[e];
            const std::size_t w = s >> 6;
            if (w == (k * rows + r0) >> 6 || w == (k * rows + r1 - 1) >> 6)
                set_bit_atomic(bits, s);
            else
                bits[w] |= std::uint64_t{1} << (s & 63);
        }
    }
    HEPTANE_ENSURE(bad == nnz, InputError,
                   "bdia_from_coo: entry (" << r[bad] << ", " << c[bad]
                                            << ") (0-based) lies on block offset "
                                            << c[bad] / nc - r[bad] / nc
                                            << ", which is not among the given block offsets"
                                            << " (block size " << nc << ")");
    Bdia<T> m;
    m.rows = a.rows;
    m.cols = a.cols;
    m.block_size = nc;
    m.block_offsets = std::move(block_offsets);
    m.data = Array<T>(std::move(data));
    m.pattern = std::move(pattern);
    return m;
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
    // Pass 1: stored entries per row; pass 2: fill. column(r, k) = r - r mod Nc + offset(k)
    // grows with k (offsets ascend, s < Nc), so each row comes out sorted.
    std::vector<offset_t> ptr(std::size_t(rows) + 1, 0);
#pragma omp parallel for schedule(static) if (offset_t(a.data.size()) > kParallelMin)
    for (index_t i = 0; i < rows; ++i) {
        offset_t n = 0;
        for (index_t k = 0; k < nk; ++k) n += test_bit(bits, std::size_t(k) * rows + i);
        ptr[i + 1] = n;
    }
    for (index_t i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
    const offset_t nnz = ptr[rows];
    std::vector<index_t> r(nnz), c(nnz);
    std::vector<T> v(nnz);
#pragma omp parallel for schedule(static) if (offset_t(a.data.size()) > kParallelMin)
    for (index_t i = 0; i < rows; ++i) {
        offset_t o = ptr[i];
        const index_t base = i - i % nc;
        for (index_t k = 0; k < nk; ++k) {
            const std::size_t s = std::size_t(k) * rows + i;
            if (!test_bit(bits, s)) continue;
            r[o] = i;
            c[o] = base + off[k];
            v[o] = data[s];
            ++o;
        }
    }
    return Coo<T>{a.rows, a.cols, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                  Array<T>(std::move(v))};
}

template <class T>
Bdia<T> bdia_zeros(index_t rows, index_t cols, index_t block_size,
                   std::vector<index_t> block_offsets)
{
    const index_t nc = block_size;
    block_offsets = checked_offsets(rows, cols, nc, std::move(block_offsets), "bdia_zeros");
    const index_t nq = index_t(block_offsets.size());
    const index_t brows = rows / nc, bcols = cols / nc;
    const std::size_t slots = std::size_t(nq) * nc * rows;
    Bdia<T> m;
    m.rows = rows;
    m.cols = cols;
    m.block_size = nc;
    m.data = Array<T>(cpu_executor(), slots);
    m.pattern = make_bitset(slots, false);
    // Diagonal k = q*Nc + s is valid on block rows b with 0 <= b + d_q < bcols: one
    // contiguous range of rows, so one contiguous range of bits.
    for (index_t q = 0; q < nq; ++q) {
        const offset_t d = block_offsets[q];
        const offset_t lo = std::max<offset_t>(0, -d), hi = std::min<offset_t>(brows, bcols - d);
        if (lo >= hi) continue;
        for (index_t s = 0; s < nc; ++s) {
            const std::size_t k0 = (std::size_t(q) * nc + s) * rows;
            set_bit_range(m.pattern.data(), k0 + std::size_t(lo) * nc, k0 + std::size_t(hi) * nc);
        }
    }
    m.block_offsets = std::move(block_offsets);
    return m;
}

#define HEPTANE_INSTANTIATE(T)                                                       \
    template Bdia<T> bdia_from_coo<T>(const Coo<T>&, index_t, std::vector<index_t>); \
    template Coo<T> to_coo<T>(const Bdia<T>&);                                       \
    template Bdia<T> bdia_zeros<T>(index_t, index_t, index_t, std::vector<index_t>);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
