// BSR from canonical COO and back. Block row I holds rows [I*b, (I+1)*b); its blocks are the
// distinct block columns c/b of those rows' entries. Each row's entries are sorted, so its
// block columns come out non-decreasing: collapsing runs gives a short list per row, and one
// small sort per block row merges them (no hash map, no per-thread array of size cols).
#include "formats/bsr/bsr.hpp"

#include <algorithm>
#include <cstdint>

#include "core/bitset.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/padded_to_coo.hpp"
#include "formats/padding_limit.hpp"

namespace heptane {

namespace {

// The sorted distinct block columns of block row `ib` into `out`.
inline void block_columns(const std::vector<offset_t>& ptr, const index_t* col, index_t b,
                          index_t ib, std::vector<index_t>& out)
{
    out.clear();
    for (index_t i = ib * b; i < (ib + 1) * b; ++i) {
        index_t last = -1;
        for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) {
            const index_t bc = col[k] / b;
            if (bc != last) out.push_back(last = bc);
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace

template <class T>
Bsr<T> bsr_from_coo(const Coo<T>& a, index_t block_size)
{
    const index_t b = block_size;
    HEPTANE_ENSURE(b >= 1, InputError, "BSR block size must be >= 1, got " << b);
    HEPTANE_ENSURE(
        a.rows % b == 0 && a.cols % b == 0, InputError,
        "BSR block size " << b << " does not divide the matrix size " << a.rows << " x " << a.cols);
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "bsr_from_coo");
    const index_t brows = a.rows / b;
    const index_t* col = a.col.data();
    const T* val = a.val.data();

    // Pass 1: blocks per block row.
    std::vector<offset_t> bptr(std::size_t(brows) + 1, 0);
#pragma omp parallel if (a.nnz() > kParallelMin)
    {
        std::vector<index_t> bcols;
#pragma omp for schedule(dynamic, 256)
        for (index_t ib = 0; ib < brows; ++ib) {
            block_columns(ptr, col, b, ib, bcols);
            bptr[ib + 1] = offset_t(bcols.size());
        }
    }
    for (index_t ib = 0; ib < brows; ++ib) bptr[ib + 1] += bptr[ib];
    const offset_t nnzb = bptr[brows];

    // Pass 2: block columns, values and the pattern. Block row ib owns values
    // [bptr[ib]*b*b, bptr[ib+1]*b*b); only its first and last pattern words may be shared with
    // other block rows, so only those get an atomic OR (an atomic per entry costs more than
    // the rest of the pass).
    const std::size_t bb = std::size_t(b) * b;
    // refused before allocating where the blocks would be mostly padding (a block size that
    // does not match the matrix's coupled unknowns on a scattered pattern)
    HEPTANE_ENSURE(padding_within_limit(std::size_t(nnzb) * bb, a.nnz()), InputError,
                   "BSR with block size " << b << " would store " << nnzb << " blocks, "
                                          << std::size_t(nnzb) * bb << " values for " << a.nnz()
                                          << " entries (limit: 32 values an entry beyond 2^24): "
                                             "the entries do not form dense "
                                          << b << " x " << b
                                          << " blocks (a smaller --block-size, or CSR)");
    std::vector<index_t> bci(nnzb);
    std::vector<T> values(nnzb * bb, T(0));
    Array<std::uint64_t> pattern = make_bitset(nnzb * bb, false);
    std::uint64_t* bits = pattern.data();
#pragma omp parallel if (a.nnz() > kParallelMin)
    {
        std::vector<index_t> bcols;
#pragma omp for schedule(dynamic, 256)
        for (index_t ib = 0; ib < brows; ++ib) {
            block_columns(ptr, col, b, ib, bcols);
            std::copy(bcols.begin(), bcols.end(), bci.begin() + bptr[ib]);
            if (bcols.empty()) continue;
            const std::size_t first_word = (std::size_t(bptr[ib]) * bb) >> 6;
            const std::size_t last_word = (std::size_t(bptr[ib + 1]) * bb - 1) >> 6;
            for (index_t lr = 0; lr < b; ++lr) {
                const index_t i = ib * b + lr;
                // block columns of this row are non-decreasing: walk the sorted list
                std::size_t p = 0;
                for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) {
                    const index_t bc = col[k] / b;
                    while (bcols[p] != bc) ++p;
                    const std::size_t s =
                        (std::size_t(bptr[ib]) + p) * bb + std::size_t(lr) * b + col[k] % b;
                    values[s] = val[k];
                    // only the block row's first and last pattern words can be shared
                    const std::size_t w = s >> 6;
                    if (w == first_word || w == last_word)
                        set_bit_atomic(bits, s);
                    else
                        bits[w] |= std::uint64_t{1} << (s & 63);
                }
            }
        }
    }
    Bsr<T> m;
    m.rows = a.rows;
    m.cols = a.cols;
    m.block_size = b;
    m.row_ptr = Array<offset_t>(std::move(bptr));
    m.col_idx = Array<index_t>(std::move(bci));
    m.values = Array<T>(std::move(values));
    m.pattern = std::move(pattern);
    return m;
}

template <class T>
Coo<T> to_coo(const Bsr<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "to_coo works on host BSR");
    const index_t b = a.block_size;
    const std::size_t bb = std::size_t(b) * b;
    const offset_t* bptr = a.row_ptr.data();
    const index_t* bci = a.col_idx.data();
    // Blocks are sorted by block column, so walking a row across its blocks gives ascending
    // columns.
    return detail::padded_to_coo(
        a.rows, a.cols, a.pattern.data(), a.values.data(), offset_t(a.values.size()) > kParallelMin,
        [&](index_t i, auto&& f) {
            const index_t ib = i / b, lr = i % b;
            for (offset_t p = bptr[ib]; p < bptr[ib + 1]; ++p)
                for (index_t j = 0; j < b; ++j)
                    f(std::size_t(p) * bb + std::size_t(lr) * b + j, bci[p] * b + j);
        });
}

#define HEPTANE_INSTANTIATE(T)                               \
    template Bsr<T> bsr_from_coo<T>(const Coo<T>&, index_t); \
    template Coo<T> to_coo<T>(const Bsr<T>&);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
