#include "formats/csr/csr.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/error.hpp"

namespace heptane {

template <class T>
Csr<T> csr_from_coo(const Coo<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "csr_from_coo works on host COO");
    Csr<T> m;
    m.rows = a.rows;
    m.cols = a.cols;
    // checks canonical order (InputError naming the first entry that breaks it), in parallel
    m.row_ptr = Array<offset_t>(canonical_row_ptr(a, "csr_from_coo"));
    m.col_idx = a.col;  // canonical order is CSR order
    m.values = a.val;
    return m;
}

template <class T>
Csr<T> csr_from_coo(Coo<T>&& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "csr_from_coo works on host COO");
    Csr<T> m;
    m.rows = a.rows;
    m.cols = a.cols;
    m.row_ptr = Array<offset_t>(canonical_row_ptr(a, "csr_from_coo"));
    m.col_idx = std::move(a.col);
    m.values = std::move(a.val);
    a = Coo<T>{};
    return m;
}

template <class T>
Coo<T> to_coo(const Csr<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "to_coo works on host CSR");
    std::vector<index_t> r(a.nnz());
#pragma omp parallel for schedule(dynamic, 1024)
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) r[k] = i;
    return Coo<T>{a.rows, a.cols, Array<index_t>(std::move(r)), a.col_idx, a.values};
}

template <class T>
Csr<T> transpose(const Csr<T>& a)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "transpose works on host CSR");
    Csr<T> t;
    t.rows = a.cols;
    t.cols = a.rows;
    std::vector<offset_t> ptr(std::size_t(a.cols) + 1, 0);
    const offset_t nnz = a.nnz();
    for (offset_t k = 0; k < nnz; ++k) ++ptr[a.col_idx[k] + 1];
    std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
    std::vector<index_t> ci(nnz);
    std::vector<T> v(nnz);
    std::vector<offset_t> next(ptr.begin(), ptr.end() - 1);
    // rows in increasing order, so each transposed row comes out sorted by column
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
            const offset_t p = next[a.col_idx[k]]++;
            ci[p] = i;
            v[p] = a.values[k];
        }
    t.row_ptr = Array<offset_t>(std::move(ptr));
    t.col_idx = Array<index_t>(std::move(ci));
    t.values = Array<T>(std::move(v));
    return t;
}

#define HEPTANE_INSTANTIATE(T)                      \
    template Csr<T> csr_from_coo<T>(const Coo<T>&); \
    template Csr<T> csr_from_coo<T>(Coo<T> &&);     \
    template Coo<T> to_coo<T>(const Csr<T>&);       \
    template Csr<T> transpose<T>(const Csr<T>&);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

Coo<double> to_coo(const CsrView& a)
{
    const offset_t nnz = a.nnz();
    std::vector<index_t> row(std::size_t(nnz), 0);
    std::vector<index_t> col(a.col_idx, a.col_idx + nnz);
    std::vector<double> val(a.values, a.values + nnz);
#pragma omp parallel for schedule(static) if (a.rows > 32768)
    for (index_t r = 0; r < a.rows; ++r)
        for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) row[std::size_t(k)] = r;
    return Coo<double>{a.rows, a.columns(), Array<index_t>(std::move(row)),
                       Array<index_t>(std::move(col)), Array<double>(std::move(val))};
}

SymmetryCheck check_symmetry(const CsrView& a, double tol)
{
    HEPTANE_ENSURE(a.columns() == a.rows, DimensionMismatch,
                   "check_symmetry: the matrix is " << a.rows << " x " << a.columns());
    SymmetryCheck best;
    // a better worst: larger, or as large and earlier in row order
    auto better = [](const SymmetryCheck& x, const SymmetryCheck& y) {
        if (x.symmetric) return false;
        if (y.symmetric) return true;
        if (x.worst != y.worst) return x.worst > y.worst;
        return x.i < y.i || (x.i == y.i && x.j < y.j);
    };
#pragma omp parallel if (a.nnz() > 65536)
    {
        SymmetryCheck mine;
#pragma omp for schedule(static) nowait
        for (index_t i = 0; i < a.rows; ++i)
            for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
                const index_t j = a.col_idx[k];
                const index_t *b = a.col_idx + a.row_ptr[j], *e = a.col_idx + a.row_ptr[j + 1];
                const index_t* f = std::lower_bound(b, e, i);
                const double t = (f != e && *f == i) ? a.values[a.row_ptr[j] + (f - b)] : 0.0;
                const double v = a.values[k];
                const double d = std::fabs(v - t), sc = std::max(std::fabs(v), std::fabs(t));
                if (d > tol * sc && (mine.symmetric || d / sc > mine.worst)) {
                    mine.symmetric = false;
                    mine.worst = d / sc;
                    mine.i = i;
                    mine.j = j;
                    mine.aij = v;
                    mine.aji = t;
                }
            }
#pragma omp critical(heptane_check_symmetry)
        if (better(mine, best)) best = mine;
    }
    return best;
}

}  // namespace heptane
