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

/// A CSR matrix in the caller's host arrays, borrowed: read, never copied by the view, never
/// freed (an Eigen-Map-like view; e.g. PETSc's assembled AIJ with 32-bit PetscInt). 0-based,
/// columns ascending within each row, no duplicates.
struct CsrView {
    index_t rows = 0;
    const index_t* row_ptr = nullptr;  ///< rows + 1 entries
    const index_t* col_idx = nullptr;  ///< row_ptr[rows] entries
    const double* values = nullptr;    ///< row_ptr[rows] entries
    index_t cols = -1;                 ///< -1: square (as many columns as rows)

    offset_t nnz() const noexcept { return rows > 0 ? offset_t(row_ptr[rows]) : 0; }
    index_t columns() const noexcept { return cols < 0 ? rows : cols; }
};

/// Canonical host COO of the view's entries, in its order (parallel).
Coo<double> to_coo(const CsrView& a);

/// What check_symmetry found: symmetric, or the worst pair (i, j) (0-based) with a(i, j),
/// a(j, i) and their relative difference.
struct SymmetryCheck {
    bool symmetric = true;
    index_t i = -1, j = -1;
    double aij = 0, aji = 0, worst = 0;
};
/// Whether a square view equals its transpose: every entry against the one at the mirrored
/// place (binary search in that row, whose columns must ascend; a missing one counts as 0),
/// |a_ij - a_ji| <= tol max(|a_ij|, |a_ji|). OpenMP-parallel over rows; the worst pair is the
/// same with any thread count (the first in row order among equal ones).
SymmetryCheck check_symmetry(const CsrView& a, double tol);

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
