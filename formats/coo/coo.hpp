// Canonical COO: the one format every reader and generator emits and every other format
// builds from (docs/design.md §2). Canonical means: entries sorted by (row, column), no duplicates.
#pragma once

#include "core/array.hpp"
#include "core/types.hpp"

namespace heptane {

/// What canonicalize() does with repeated (row, column) entries.
enum class DuplicatePolicy { sum, error, keep_last };

template <class T>
struct Coo {
    index_t rows = 0;
    index_t cols = 0;
    Array<index_t> row;  ///< 0-based row of each entry
    Array<index_t> col;  ///< 0-based column of each entry
    Array<T> val;

    offset_t nnz() const noexcept { return static_cast<offset_t>(val.size()); }
    const std::shared_ptr<const Executor>& exec() const noexcept { return val.exec(); }
    /// A copy on `exec`.
    Coo to(std::shared_ptr<const Executor> exec) const
    {
        return Coo{rows, cols, row.to(exec), col.to(exec), val.to(exec)};
    }
};

/// Sort by (row, column) and resolve duplicates by `policy` (sum: add them; error: throw
/// InputError naming the first repeated entry; keep_last: the later entry wins). Checks
/// every index against the size (InputError). Host arrays only. Parallel (OpenMP).
template <class T>
void canonicalize(Coo<T>& a, DuplicatePolicy policy = DuplicatePolicy::sum);

/// True when sorted by (row, column) without duplicates and every index is in range.
template <class T>
bool is_canonical(const Coo<T>& a);

/// The same matrix with values converted to U (e.g. double -> float for mixed precision).
template <class U, class T>
Coo<U> convert_values(const Coo<T>& a);

/// Checks, in parallel, that `a` is canonical host COO (is_canonical() is serial; the format
/// conversions see 100 M+ entries). Throws NotSupported for device arrays, DimensionMismatch for
/// arrays of different lengths, and InputError naming `who` and the first entry that breaks it.
template <class T>
void require_canonical(const Coo<T>& a, const char* who);

/// Row pointer (rows + 1 entries) of canonical host COO, after require_canonical(a, who).
template <class T>
std::vector<offset_t> canonical_row_ptr(const Coo<T>& a, const char* who);

/// Number of stored entries in each row (host).
template <class T>
std::vector<offset_t> row_lengths(const Coo<T>& a);

}  // namespace heptane
