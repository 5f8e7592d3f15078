// Canonical COO from a padded store (DIA, BDIA-GH, BSR): the slots a row may use, each with
// its column and a pattern bit that says whether it holds a stored entry (internal header of
// the formats' builders).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/bitset.hpp"
#include "core/parallel.hpp"
#include "formats/coo/coo.hpp"

namespace heptane::detail {

/// for_each_slot(i, f) calls f(slot, column) for every slot of row i in ascending column
/// order; a slot is an entry when bit `slot` of `bits` is set, its value values[slot]. Two
/// passes over the rows (count, then fill), in parallel when `parallel`; rows come out sorted.
template <class T, class ForEachSlot>
Coo<T> padded_to_coo(index_t rows, index_t cols, const std::uint64_t* bits, const T* values,
                     bool parallel, ForEachSlot&& for_each_slot)
{
    std::vector<offset_t> ptr(std::size_t(rows) + 1, 0);
#pragma omp parallel for schedule(static) if (parallel)
    for (index_t i = 0; i < rows; ++i) {
        offset_t n = 0;
        for_each_slot(i, [&](std::size_t s, index_t) { n += test_bit(bits, s); });
        ptr[std::size_t(i) + 1] = n;
    }
    for (index_t i = 0; i < rows; ++i) ptr[std::size_t(i) + 1] += ptr[std::size_t(i)];
    const offset_t nnz = ptr[std::size_t(rows)];
    std::vector<index_t> r(nnz), c(nnz);
    std::vector<T> v(nnz);
#pragma omp parallel for schedule(static) if (parallel)
    for (index_t i = 0; i < rows; ++i) {
        offset_t o = ptr[std::size_t(i)];
        for_each_slot(i, [&](std::size_t s, index_t col) {
            if (!test_bit(bits, s)) return;
            r[o] = i;
            c[o] = col;
            v[o] = values[s];
            ++o;
        });
    }
    return Coo<T>{rows, cols, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                  Array<T>(std::move(v))};
}

}  // namespace heptane::detail
