// DIA from canonical COO and back. Entry (r, c) lies on offset c - r; the distinct offsets
// are found with one flag per possible offset (rows + cols - 1 bytes, no hash map), and each
// entry's diagonal by binary search in the short sorted offset list.
#include "formats/dia/dia.hpp"

#include <algorithm>
#include <cstdint>

#include "core/bitset.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/padded_to_coo.hpp"
#include "formats/padding_limit.hpp"

namespace heptane {

template <class T>
Dia<T> dia_from_coo(const Coo<T>& a, index_t max_diagonals)
{
    require_canonical(a, "dia_from_coo");
    const index_t rows = a.rows, cols = a.cols;
    const offset_t nnz = a.nnz();
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    const T* v = a.val.data();

    // Offset c - r lies in [-(rows-1), cols-1]; flag[c - r + rows - 1] marks it as used.
    const std::size_t span = rows > 0 && cols > 0 ? std::size_t(rows) + cols - 1 : 0;
    std::vector<std::uint8_t> used(span, 0);
#pragma omp parallel for if (nnz > kParallelMin)
    for (offset_t k = 0; k < nnz; ++k) {
        const std::size_t f = std::size_t(offset_t(c[k]) - r[k] + rows - 1);
#pragma omp atomic write
        used[f] = 1;
    }
    std::vector<index_t> offsets;
    for (std::size_t f = 0; f < span; ++f)
        if (used[f]) offsets.push_back(static_cast<index_t>(offset_t(f) - rows + 1));
    HEPTANE_ENSURE(index_t(offsets.size()) <= max_diagonals, InputError,
                   "DIA would need " << offsets.size() << " diagonals for this " << rows << " x "
                                     << cols << " matrix, more than the limit of " << max_diagonals
                                     << " (use CSR, ELL or HYB)");
    used = {};

    const index_t nd = index_t(offsets.size());
    const std::size_t slots = std::size_t(nd) * rows;
    HEPTANE_ENSURE(padding_within_limit(slots, nnz), InputError,
                   "DIA would store " << slots << " values (" << nd << " diagonals of " << rows
                                      << " rows) for " << nnz
                                      << " entries (limit: 32 values an entry beyond 2^24): the "
                                         "entries do not fill their diagonals (use CSR, ELL or "
                                         "HYB)");
    std::vector<T> data(slots, T(0));
    Array<std::uint64_t> pattern = make_bitset(slots, false);
    std::uint64_t* bits = pattern.data();
    const index_t* ob = offsets.data();
    // Each thread takes a contiguous range of rows [r0, r1) (its entries are contiguous too).
    // Its bits of diagonal d lie in [d*rows + r0, d*rows + r1), so only the first and the last
    // word of each such stretch can hold another thread's bits: those get an atomic OR, the
    // rest a plain one (an atomic per entry cost more than everything else here).
#pragma omp parallel if (nnz > kParallelMin)
    {
        const ThreadShare share = thread_share(rows);
        const index_t r0 = index_t(share.begin), r1 = index_t(share.end);
        const offset_t e0 = std::lower_bound(r, r + nnz, r0) - r;
        const offset_t e1 = std::lower_bound(r, r + nnz, r1) - r;
        for (offset_t e = e0; e < e1; ++e) {
            const std::size_t d = std::lower_bound(ob, ob + nd, c[e] - r[e]) - ob;
            const std::size_t s = d * rows + r[e];
            data[s] = v[e];
            const std::size_t w = s >> 6;
            if (w == (d * rows + r0) >> 6 || w == (d * rows + r1 - 1) >> 6)
                set_bit_atomic(bits, s);
            else
                bits[w] |= std::uint64_t{1} << (s & 63);
        }
    }
    Dia<T> m;
    m.rows = rows;
    m.cols = cols;
    m.offsets = Array<index_t>(std::move(offsets));
    m.data = Array<T>(std::move(data));
    m.pattern = std::move(pattern);
    return m;
}

template <class T>
Coo<T> to_coo(const Dia<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "to_coo works on host DIA");
    const index_t rows = a.rows, nd = a.num_diagonals();
    const std::uint64_t* bits = a.pattern.data();
    const index_t* off = a.offsets.data();
    const T* data = a.data.data();
    // offsets ascend, so each row comes out sorted by column
    return detail::padded_to_coo(rows, a.cols, bits, data, offset_t(a.data.size()) > kParallelMin,
                                 [&](index_t i, auto&& f) {
                                     for (index_t d = 0; d < nd; ++d)
                                         f(std::size_t(d) * rows + i, i + off[d]);
                                 });
}

#define HEPTANE_INSTANTIATE(T)                               \
    template Dia<T> dia_from_coo<T>(const Coo<T>&, index_t); \
    template Coo<T> to_coo<T>(const Dia<T>&);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
