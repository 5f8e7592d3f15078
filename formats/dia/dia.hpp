// DIA: one column of length `rows` per distinct diagonal offset (column - row);
// data[d*rows + r] = A(r, r + offsets[d]). Slots outside the matrix or absent from the
// pattern hold 0; `pattern` records which slots are stored entries so to_coo is exact.
#pragma once

#include <cstdint>

#include "formats/coo/coo.hpp"

namespace heptane {

template <class T>
struct Dia {
    index_t rows = 0;
    index_t cols = 0;
    Array<index_t> offsets;        ///< ascending
    Array<T> data;                 ///< offsets.size() * rows, column-major
    Array<std::uint64_t> pattern;  ///< bitset over data slots: 1 = stored entry

    index_t num_diagonals() const noexcept { return static_cast<index_t>(offsets.size()); }
    const std::shared_ptr<const Executor>& exec() const noexcept { return data.exec(); }
    Dia to(std::shared_ptr<const Executor> exec) const
    {
        return Dia{rows, cols, offsets.to(exec), data.to(exec), pattern.to(exec)};
    }
};

/// Build from canonical COO. Throws InputError if more than `max_diagonals` distinct
/// diagonals would be needed (DIA would be mostly padding).
template <class T>
Dia<T> dia_from_coo(const Coo<T>& a, index_t max_diagonals = 1024);
template <class T>
Coo<T> to_coo(const Dia<T>& a);

}  // namespace heptane
