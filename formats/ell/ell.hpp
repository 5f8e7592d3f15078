// ELL: every row padded to `width` entries, stored column-major (entry k of row r at
// k*rows + r) so that one thread per row reads coalesced. Padding slots have column -1
// and value 0, so the stored pattern is exact.
#pragma once

#include "formats/coo/coo.hpp"

namespace heptane {

template <class T>
struct Ell {
    index_t rows = 0;
    index_t cols = 0;
    index_t width = 0;       ///< slots per row
    Array<index_t> col_idx;  ///< rows * width, column-major, -1 = padding
    Array<T> values;         ///< rows * width, column-major, 0 at padding

    offset_t slots() const noexcept { return static_cast<offset_t>(rows) * width; }
    const std::shared_ptr<const Executor>& exec() const noexcept { return values.exec(); }
    Ell to(std::shared_ptr<const Executor> exec) const
    {
        return Ell{rows, cols, width, col_idx.to(exec), values.to(exec)};
    }
};

/// Build from canonical COO; width = longest row unless `width` >= 0 is given (then rows
/// longer than it are an InputError: use HYB for those).
template <class T>
Ell<T> ell_from_coo(const Coo<T>& a, index_t width = -1);
template <class T>
Coo<T> to_coo(const Ell<T>& a);

}  // namespace heptane
