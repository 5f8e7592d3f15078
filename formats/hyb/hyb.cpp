// HYB from canonical COO and back. Row i's first min(len_i, K) entries go to the ELL part
// (slot j at j*rows + i, as in ell_from_coo), the rest, in order, to the COO part, which is
// therefore canonical too.
#include "formats/hyb/hyb.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace heptane {

namespace {

constexpr offset_t kChunk = 1024;  // rows per work item of the conversions

}  // namespace

index_t choose_hyb_width(const std::vector<offset_t>& row_lengths)
{
    const offset_t rows = static_cast<offset_t>(row_lengths.size());
    offset_t longest = 0;
    for (offset_t len : row_lengths) longest = std::max(longest, len);
    std::vector<offset_t> hist(std::size_t(longest) + 1, 0);
    for (offset_t len : row_lengths) ++hist[len];
    // at_least = rows with K or more entries; grow K while that is >= max(4096, rows/3).
    offset_t at_least = rows;
    index_t width = 0;
    for (offset_t k = 1; k <= longest; ++k) {
        at_least -= hist[k - 1];
        if (at_least < 4096 || 3 * at_least < rows) break;
        width = static_cast<index_t>(k);
    }
    return width;
}

template <class T>
Hyb<T> hyb_from_coo(const Coo<T>& a, index_t width)
{
    const std::vector<offset_t> ptr = canonical_row_ptr(a, "hyb_from_coo");
    const index_t rows = a.rows;
    if (width < 0) {
        std::vector<offset_t> len(rows);
        for (index_t i = 0; i < rows; ++i) len[i] = ptr[i + 1] - ptr[i];
        width = choose_hyb_width(len);
    }
    const index_t* ac = a.col.data();
    const T* av = a.val.data();

    // ELL part: chunks of rows, slot by slot (contiguous writes per thread).
    const std::size_t slots = std::size_t(rows) * std::size_t(width);
    std::vector<index_t> ci(slots);
    std::vector<T> ev(slots);
    const offset_t nchunks = (offset_t(rows) + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (offset_t ch = 0; ch < nchunks; ++ch) {
        const index_t i0 = index_t(ch * kChunk);
        const index_t i1 = index_t(std::min<offset_t>(rows, (ch + 1) * kChunk));
        for (index_t j = 0; j < width; ++j)
            for (index_t i = i0; i < i1; ++i) {
                const offset_t len = ptr[i + 1] - ptr[i];
                const std::size_t s = std::size_t(j) * rows + i;
                ci[s] = j < len ? ac[ptr[i] + j] : -1;
                ev[s] = j < len ? av[ptr[i] + j] : T(0);
            }
    }

    // COO part: entries past `width` in their row, in canonical order.
    std::vector<offset_t> tail(std::size_t(rows) + 1, 0);
    for (index_t i = 0; i < rows; ++i)
        tail[i + 1] = tail[i] + std::max<offset_t>(0, ptr[i + 1] - ptr[i] - width);
    const offset_t ntail = tail[rows];
    std::vector<index_t> tr(ntail), tc(ntail);
    std::vector<T> tv(ntail);
#pragma omp parallel for schedule(dynamic, 1024) if (ntail > kParallelMin)
    for (index_t i = 0; i < rows; ++i) {
        offset_t o = tail[i];
        for (offset_t k = ptr[i] + width; k < ptr[i + 1]; ++k, ++o) {
            tr[o] = i;
            tc[o] = ac[k];
            tv[o] = av[k];
        }
    }

    Hyb<T> h;
    h.ell.rows = rows;
    h.ell.cols = a.cols;
    h.ell.width = width;
    h.ell.col_idx = Array<index_t>(std::move(ci));
    h.ell.values = Array<T>(std::move(ev));
    h.coo = Coo<T>{rows, a.cols, Array<index_t>(std::move(tr)), Array<index_t>(std::move(tc)),
                   Array<T>(std::move(tv))};
    return h;
}

template <class T>
Coo<T> to_coo(const Hyb<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu() && a.coo.exec()->is_cpu(), NotSupported,
                   "to_coo works on host HYB");
    HEPTANE_ENSURE(a.coo.nnz() == 0 || (a.coo.rows == a.ell.rows && a.coo.cols == a.ell.cols),
                   DimensionMismatch,
                   "HYB parts differ in size: ELL " << a.ell.rows << " x " << a.ell.cols << ", COO "
                                                    << a.coo.rows << " x " << a.coo.cols);
    Coo<T> e = to_coo(a.ell);
    const std::vector<offset_t> ep = canonical_row_ptr(e, "to_coo(Hyb) ELL part");
    if (a.coo.nnz() == 0) return e;  // no tail (the common case of a regular matrix): no merge
    const std::vector<offset_t> cp = canonical_row_ptr(a.coo, "to_coo(Hyb) COO part");
    const index_t rows = a.rows();
    std::vector<offset_t> ptr(std::size_t(rows) + 1, 0);
    for (index_t i = 0; i < rows; ++i)
        ptr[i + 1] = ptr[i] + (ep[i + 1] - ep[i]) + (cp[i + 1] - cp[i]);
    const offset_t nnz = ptr[rows];
    std::vector<index_t> r(nnz), c(nnz);
    std::vector<T> v(nnz);
    // Merge each row's two sorted parts by column. A HYB from hyb_from_coo has every ELL
    // column before every COO column, but a merge keeps the result canonical regardless.
#pragma omp parallel for schedule(dynamic, 1024) if (nnz > kParallelMin)
    for (index_t i = 0; i < rows; ++i) {
        offset_t p = ep[i], q = cp[i], o = ptr[i];
        while (p < ep[i + 1] || q < cp[i + 1]) {
            const bool from_ell = q == cp[i + 1] || (p < ep[i + 1] && e.col[p] < a.coo.col[q]);
            r[o] = i;
            if (from_ell) {
                c[o] = e.col[p];
                v[o] = e.val[p++];
            } else {
                c[o] = a.coo.col[q];
                v[o] = a.coo.val[q++];
            }
            ++o;
        }
    }
    return Coo<T>{a.rows(), a.cols(), Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                  Array<T>(std::move(v))};
}

#define HEPTANE_INSTANTIATE(T)                               \
    template Hyb<T> hyb_from_coo<T>(const Coo<T>&, index_t); \
    template Coo<T> to_coo<T>(const Hyb<T>&);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
