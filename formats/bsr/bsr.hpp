// BSR: CSR over dense b x b blocks (row-major inside a block). Fill-in zeros inside a
// block are recorded in `pattern` so to_coo is exact.
#pragma once

#include <cstdint>

#include "formats/coo/coo.hpp"

namespace heptane {

template <class T>
struct Bsr {
    index_t rows = 0;  ///< = block_rows * block_size
    index_t cols = 0;
    index_t block_size = 1;
    Array<offset_t> row_ptr;       ///< block_rows + 1
    Array<index_t> col_idx;        ///< block column of each block, sorted within a block row
    Array<T> values;               ///< nnzb * b * b, block after block, row-major within
    Array<std::uint64_t> pattern;  ///< bitset over values: 1 = stored entry

    index_t block_rows() const noexcept { return block_size ? rows / block_size : 0; }
    index_t block_cols() const noexcept { return block_size ? cols / block_size : 0; }
    offset_t nnz_blocks() const noexcept { return static_cast<offset_t>(col_idx.size()); }
    const std::shared_ptr<const Executor>& exec() const noexcept { return values.exec(); }
    Bsr to(std::shared_ptr<const Executor> exec) const
    {
        return Bsr{rows,
                   cols,
                   block_size,
                   row_ptr.to(exec),
                   col_idx.to(exec),
                   values.to(exec),
                   pattern.to(exec)};
    }
};

/// Build from canonical COO. rows and cols must be multiples of b (InputError otherwise).
template <class T>
Bsr<T> bsr_from_coo(const Coo<T>& a, index_t block_size);
template <class T>
Coo<T> to_coo(const Bsr<T>& a);

}  // namespace heptane
