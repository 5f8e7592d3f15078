// CSR: row pointers (64-bit, nnz may pass 2^31), column indices, values.
#pragma once

#include "formats/coo/coo.hpp"

namespace heptane {

template <class T>
struct Csr {
    index_t rows = 0;
    index_t cols = 0;
    Array<offset_t> row_ptr;  ///< rows + 1 entries
    Array<index_t> col_idx;   ///< sorted within each row
    Array<T> values;

    offset_t nnz() const noexcept { return static_cast<offset_t>(values.size()); }
    const std::shared_ptr<const Executor>& exec() const noexcept { return values.exec(); }
    Csr to(std::shared_ptr<const Executor> exec) const
    {
        return Csr{rows, cols, row_ptr.to(exec), col_idx.to(exec), values.to(exec)};
    }
};

/// Build from canonical COO (host). Throws InputError if `a` is not canonical.
template <class T>
Csr<T> csr_from_coo(const Coo<T>& a);
/// The same, taking over a's column and value arrays (no copy; `a` is left empty).
template <class T>
Csr<T> csr_from_coo(Coo<T>&& a);
/// Back to canonical COO, entry for entry (host).
template <class T>
Coo<T> to_coo(const Csr<T>& a);
/// The stored transpose A^T as CSR (host, parallel counting sort by column).
template <class T>
Csr<T> transpose(const Csr<T>& a);

}  // namespace heptane
