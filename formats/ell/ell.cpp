// ELL from canonical COO and back. Entry j of row r goes to slot j*rows + r, so a row's
// entries keep their column order and padding (column -1, value 0) sits at the end of the row.
#include "formats/ell/ell.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "formats/padding_limit.hpp"

namespace heptane {

namespace {

constexpr offset_t kChunk = 1024;  // rows per work item of the conversions

}  // namespace

template <class T>
Ell<T> ell_from_coo(const Coo<T>& a, index_t width)
{
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "ell_from_coo");
    const index_t rows = a.rows;
    offset_t longest = 0;
    index_t longest_row = 0;
    for (index_t i = 0; i < rows; ++i)
        if (ptr[i + 1] - ptr[i] > longest) {
            longest = ptr[i + 1] - ptr[i];
            longest_row = i;
        }
    if (width < 0) width = static_cast<index_t>(longest);
    HEPTANE_ENSURE(longest <= width, InputError,
                   "ELL width " << width << " is too small: row " << longest_row
                                << " (0-based) has " << longest
                                << " entries (use HYB for a few long rows)");
    const std::size_t slots = std::size_t(rows) * std::size_t(width);
    // every row padded to the width: refused before allocating where that is far more than the
    // entries (a few long rows -- an arrow matrix, a well's row -- are HYB's case)
    HEPTANE_ENSURE(padding_within_limit(slots, a.nnz()), InputError,
                   "ELL of width " << width << " would store " << slots << " slots for " << a.nnz()
                                   << " entries (row " << longest_row << " (0-based) has "
                                   << longest << ", the mean is "
                                   << (rows > 0 ? double(a.nnz()) / rows : 0.0)
                                   << "; limit: 32 slots an entry beyond 2^24): use HYB (ELL "
                                      "for the common rows, COO for the long ones) or CSR");
    Ell<T> m;
    m.rows = rows;
    m.cols = a.cols;
    m.width = width;
    std::vector<index_t> ci(slots);
    std::vector<T> v(slots);
    const index_t* c = a.col.data();
    const T* av = a.val.data();
    // Chunks of rows, slot by slot inside a chunk: each thread writes contiguous stretches of
    // the column-major arrays and reads its chunk's COO entries from cache.
    const offset_t nchunks = (offset_t(rows) + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (offset_t ch = 0; ch < nchunks; ++ch) {
        const index_t i0 = index_t(ch * kChunk),
                      i1 = index_t(std::min<offset_t>(rows, (ch + 1) * kChunk));
        for (index_t j = 0; j < width; ++j)
            for (index_t i = i0; i < i1; ++i) {
                const offset_t len = ptr[i + 1] - ptr[i];
                const std::size_t s = std::size_t(j) * rows + i;
                ci[s] = j < len ? c[ptr[i] + j] : -1;
                v[s] = j < len ? av[ptr[i] + j] : T(0);
            }
    }
    m.col_idx = Array<index_t>(std::move(ci));
    m.values = Array<T>(std::move(v));
    return m;
}

template <class T>
Coo<T> to_coo(const Ell<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "to_coo works on host ELL");
    const index_t rows = a.rows, width = a.width;
    const index_t* ci = a.col_idx.data();
    const T* v = a.values.data();
    // Pass 1: entries per row (slots with column >= 0); pass 2: fill in row order. Chunks of
    // rows so the column-major slots are read in contiguous stretches.
    const offset_t nchunks = (offset_t(rows) + kChunk - 1) / kChunk;
    std::vector<offset_t> ptr(std::size_t(rows) + 1, 0);
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (offset_t ch = 0; ch < nchunks; ++ch) {
        const index_t i0 = index_t(ch * kChunk),
                      i1 = index_t(std::min<offset_t>(rows, (ch + 1) * kChunk));
        for (index_t j = 0; j < width; ++j)
            for (index_t i = i0; i < i1; ++i) ptr[i + 1] += ci[std::size_t(j) * rows + i] >= 0;
    }
    for (index_t i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
    const offset_t nnz = ptr[rows];
    std::vector<index_t> r(nnz), c(nnz);
    std::vector<T> val(nnz);
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (offset_t ch = 0; ch < nchunks; ++ch) {
        const index_t i0 = index_t(ch * kChunk),
                      i1 = index_t(std::min<offset_t>(rows, (ch + 1) * kChunk));
        // next free position of each row of the chunk
        std::vector<offset_t> next(ptr.begin() + i0, ptr.begin() + i1);
        for (index_t j = 0; j < width; ++j)
            for (index_t i = i0; i < i1; ++i) {
                const std::size_t s = std::size_t(j) * rows + i;
                if (ci[s] < 0) continue;
                const offset_t o = next[i - i0]++;
                r[o] = i;
                c[o] = ci[s];
                val[o] = v[s];
            }
    }
    return Coo<T>{a.rows, a.cols, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                  Array<T>(std::move(val))};
}

#define HEPTANE_INSTANTIATE(T)                               \
    template Ell<T> ell_from_coo<T>(const Coo<T>&, index_t); \
    template Coo<T> to_coo<T>(const Ell<T>&);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
