#include "formats/coo/coo.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace heptane {

namespace {
/// Up to this many entries canonicalize() sorts a permutation (canonicalize_small): its
/// O(n log n) comparisons beat the counting sort's eight allocations only on small inputs
/// (with 2^15 it made 5k-30k-entry files 1.3-1.5x slower to read on this VM).
constexpr offset_t kSortMax = 2048;
/// Rows of up to this many entries are sorted by insertion in canonicalize()'s counting path.
constexpr std::ptrdiff_t kInsertionMax = 32;

/// canonicalize() up to kSortMax entries: one sort of a permutation by (row,
/// column, input position) (so equal entries keep their input order, as the counting sort
/// keeps them), then the same merge of duplicates. Four allocations where the counting sort
/// takes eight, which is most of its time on a small input. Indices already range-checked.
template <class T>
void canonicalize_small(Coo<T>& a, DuplicatePolicy policy)
{
    const offset_t nnz = a.nnz();
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    const T* v = a.val.data();
    std::vector<offset_t> perm(static_cast<std::size_t>(nnz));
    std::iota(perm.begin(), perm.end(), offset_t(0));
    std::sort(perm.begin(), perm.end(), [&](offset_t x, offset_t y) {
        return r[x] != r[y] ? r[x] < r[y] : c[x] != c[y] ? c[x] < c[y] : x < y;
    });
    std::vector<index_t> nr, nc;
    std::vector<T> nv;
    nr.reserve(std::size_t(nnz));
    nc.reserve(std::size_t(nnz));
    nv.reserve(std::size_t(nnz));
    for (const offset_t p : perm) {
        if (!nr.empty() && nr.back() == r[p] && nc.back() == c[p]) {
            // sorted: the first duplicate met is in the lowest row, at its lowest column
            HEPTANE_ENSURE(policy != DuplicatePolicy::error, InputError,
                           "duplicate entry at (" << r[p] + 1 << ", " << c[p] + 1 << ") (1-based)");
            nv.back() = policy == DuplicatePolicy::sum ? nv.back() + v[p] : v[p];
            continue;
        }
        nr.push_back(r[p]);
        nc.push_back(c[p]);
        nv.push_back(v[p]);
    }
    a.row = Array<index_t>(std::move(nr));
    a.col = Array<index_t>(std::move(nc));
    a.val = Array<T>(std::move(nv));
}
}  // namespace

template <class T>
void canonicalize(Coo<T>& a, DuplicatePolicy policy)
{
    HEPTANE_ENSURE(a.row.on_host() && a.col.on_host() && a.val.on_host(), NotSupported,
                   "canonicalize works on host COO");
    const offset_t nnz = a.nnz();
    HEPTANE_ENSURE(offset_t(a.row.size()) == nnz && offset_t(a.col.size()) == nnz,
                   DimensionMismatch,
                   "COO arrays differ in length: row " << a.row.size() << ", col " << a.col.size()
                                                       << ", val " << nnz);
    HEPTANE_ENSURE(a.rows >= 0 && a.cols >= 0, InputError,
                   "negative matrix size " << a.rows << " x " << a.cols);
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    // 1. indices in range (report the first bad one)
    offset_t bad = nnz;
    auto outside = [&](offset_t k) {
        return r[k] < 0 || r[k] >= a.rows || c[k] < 0 || c[k] >= a.cols;
    };
    if (nnz > kParallelMin) {
#pragma omp parallel for reduction(min : bad)
        for (offset_t k = 0; k < nnz; ++k)
            if (outside(k)) bad = std::min(bad, k);
    } else {  // no parallel region for small inputs: even a serial one costs microseconds
        for (offset_t k = 0; k < nnz && bad == nnz; ++k)
            if (outside(k)) bad = k;
    }
    HEPTANE_ENSURE(bad == nnz, InputError,
                   "entry " << bad << " at (" << r[bad] << ", " << c[bad]
                            << ") (0-based) lies outside the " << a.rows << " x " << a.cols
                            << " matrix");
    // already canonical (strictly increasing (row, col): sorted, no duplicates), as the files
    // heptane and most tools write are: nothing to move
    auto before = [&](offset_t k) {
        return r[k - 1] < r[k] || (r[k - 1] == r[k] && c[k - 1] < c[k]);
    };
    bool sorted = true;
    if (nnz > kParallelMin) {
#pragma omp parallel for reduction(&& : sorted)
        for (offset_t k = 1; k < nnz; ++k) sorted = sorted && before(k);
    } else {
        for (offset_t k = 1; k < nnz && sorted; ++k) sorted = before(k);
    }
    if (sorted) return;
    if (nnz <= kSortMax) return canonicalize_small(a, policy);
    // 2. counting sort by row (stable: equal rows keep their input order)
    std::vector<offset_t> ptr(std::size_t(a.rows) + 1, 0);
    for (offset_t k = 0; k < nnz; ++k) ++ptr[r[k] + 1];
    std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
    std::vector<offset_t> perm(nnz);
    {
        std::vector<offset_t> next(ptr.begin(), ptr.end() - 1);
        for (offset_t k = 0; k < nnz; ++k) perm[next[r[k]]++] = k;
    }
    // 3. sort each row by column (stable), then merge duplicates in place
    std::vector<offset_t> kept(a.rows, 0);
    offset_t dup_row = a.rows;  // first row with a duplicate, if any
    const bool parallel = nnz + a.rows > kParallelMin;
    // row i sorted and its duplicates marked; returns whether it had one (policy error)
    auto sort_row = [&](index_t i) {
        bool dup = false;
        auto b = perm.begin() + ptr[i], e = perm.begin() + ptr[i + 1];
        if (e - b <= kInsertionMax) {
            // a short row: insertion sort (stable: an entry passes only larger columns), no
            // allocation; std::stable_sort asks for a buffer on every call, which was most of
            // the time on files of short rows (a symmetric one's mirrored entries, e.g.)
            for (auto it = b + (e - b > 0 ? 1 : 0); it < e; ++it) {
                const offset_t x = *it;
                const index_t cx = c[x];
                auto j = it;
                for (; j > b && c[*(j - 1)] > cx; --j) *j = *(j - 1);
                *j = x;
            }
        } else {
            std::stable_sort(b, e, [&](offset_t x, offset_t y) { return c[x] < c[y]; });
        }
        offset_t out = ptr[i];
        index_t last_col = -1;  // columns are >= 0, so the first entry is always kept
        for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) {
            const index_t col = c[perm[k]];
            if (col == last_col) {
                if (policy == DuplicatePolicy::error) dup = true;
                perm[k] = -1 - perm[k];  // merged into the previous kept entry by the gather
                continue;
            }
            last_col = col;
            ++out;
        }
        kept[i] = out - ptr[i];
        return dup;
    };
    if (parallel) {
#pragma omp parallel for schedule(dynamic, 256) reduction(min : dup_row)
        for (index_t i = 0; i < a.rows; ++i)
            if (sort_row(i)) dup_row = std::min<offset_t>(dup_row, i);
    } else {
        for (index_t i = 0; i < a.rows; ++i)
            if (sort_row(i)) dup_row = std::min<offset_t>(dup_row, i);
    }
    if (dup_row < a.rows) {
        // find the first duplicated column of that row for the message
        index_t col = -1;
        for (offset_t k = ptr[dup_row]; k < ptr[dup_row + 1]; ++k)
            if (perm[k] < 0) {
                col = c[-1 - perm[k]];
                break;
            }
        HEPTANE_THROW(InputError,
                      "duplicate entry at (" << dup_row + 1 << ", " << col + 1 << ") (1-based)");
    }
    // 4. gather into new arrays
    std::vector<offset_t> out_ptr(std::size_t(a.rows) + 1, 0);
    for (index_t i = 0; i < a.rows; ++i) out_ptr[i + 1] = out_ptr[i] + kept[i];
    const offset_t nout = out_ptr[a.rows];
    std::vector<index_t> nr(nout), nc(nout);
    std::vector<T> nv(nout);
    const T* v = a.val.data();
    auto gather_row = [&](index_t i) {
        offset_t o = out_ptr[i] - 1;
        for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) {
            const offset_t p = perm[k];
            if (p >= 0) {
                ++o;
                nr[o] = i;
                nc[o] = c[p];
                nv[o] = v[p];
            } else if (policy == DuplicatePolicy::sum) {
                nv[o] += v[-1 - p];
            } else {  // keep_last
                nv[o] = v[-1 - p];
            }
        }
    };
    if (parallel) {
#pragma omp parallel for schedule(dynamic, 256)
        for (index_t i = 0; i < a.rows; ++i) gather_row(i);
    } else {
        for (index_t i = 0; i < a.rows; ++i) gather_row(i);
    }
    a.row = Array<index_t>(std::move(nr));
    a.col = Array<index_t>(std::move(nc));
    a.val = Array<T>(std::move(nv));
}

namespace {
template <class T>
void require_coo_arrays(const Coo<T>& a, const char* who)
{
    HEPTANE_ENSURE(a.row.on_host() && a.col.on_host() && a.val.on_host(), NotSupported,
                   who << " works on host COO");
    const offset_t nnz = a.nnz();
    HEPTANE_ENSURE(offset_t(a.row.size()) == nnz && offset_t(a.col.size()) == nnz,
                   DimensionMismatch,
                   who << ": COO arrays differ in length (row " << a.row.size() << ", col "
                       << a.col.size() << ", val " << nnz << ")");
}

// Entry k (< nnz) is where canonical order wants it: inside the matrix, after entry k - 1.
inline bool canonical_at(const index_t* r, const index_t* c, offset_t k, index_t rows, index_t cols)
{
    const bool in_range = r[k] >= 0 && r[k] < rows && c[k] >= 0 && c[k] < cols;
    return in_range && (k == 0 || r[k] > r[k - 1] || (r[k] == r[k - 1] && c[k] > c[k - 1]));
}

// Throws the InputError naming entry `bad` unless it is nnz (no entry broke the order).
template <class T>
void require_canonical_at(const Coo<T>& a, const char* who, offset_t bad)
{
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    HEPTANE_ENSURE(bad == a.nnz(), InputError,
                   who << " needs canonical COO (sorted by row and column, no duplicates, "
                          "indices inside the "
                       << a.rows << " x " << a.cols << " matrix); entry " << bad << " at ("
                       << r[bad] << ", " << c[bad] << ") (0-based) breaks it");
}
}  // namespace

template <class T>
void require_canonical(const Coo<T>& a, const char* who)
{
    require_coo_arrays(a, who);
    const offset_t nnz = a.nnz();
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    offset_t bad = nnz;
#pragma omp parallel for reduction(min : bad) if (nnz > kParallelMin)
    for (offset_t k = 0; k < nnz; ++k)
        if (!canonical_at(r, c, k, a.rows, a.cols)) bad = std::min(bad, k);
    require_canonical_at(a, who, bad);
}

template <class T>
std::vector<offset_t> canonical_row_ptr(const Coo<T>& a, const char* who)
{
    require_coo_arrays(a, who);
    const offset_t nnz = a.nnz();
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    // One pass checks the order and fills the pointers (the row array read once, not twice):
    // ptr[i] = first entry whose row is >= i, so entry k starts rows (row[k-1], row[k]]. An
    // entry out of order writes nothing (its rows could lie outside ptr); the result is then
    // discarded by the throw.
    std::vector<offset_t> ptr(std::size_t(a.rows) + 1);
    offset_t bad = nnz;
#pragma omp parallel for reduction(min : bad) if (nnz > kParallelMin)
    for (offset_t k = 0; k <= nnz; ++k) {
        if (k < nnz && !canonical_at(r, c, k, a.rows, a.cols)) {
            bad = std::min(bad, k);
            continue;
        }
        // entry k - 1 in range (else it is bad itself and its rows below are not trusted)
        if (k > 0 && (r[k - 1] < 0 || r[k - 1] >= a.rows)) continue;
        const index_t lo = k == 0 ? 0 : r[k - 1] + 1;
        const index_t hi = k == nnz ? a.rows : r[k];
        for (index_t i = lo; i <= hi; ++i) ptr[std::size_t(i)] = k;
    }
    require_canonical_at(a, who, bad);
    return ptr;
}

template <class T>
bool is_canonical(const Coo<T>& a)
{
    if (!a.row.on_host()) return false;
    const offset_t nnz = a.nnz();
    if (offset_t(a.row.size()) != nnz || offset_t(a.col.size()) != nnz) return false;
    for (offset_t k = 0; k < nnz; ++k) {
        if (a.row[k] < 0 || a.row[k] >= a.rows || a.col[k] < 0 || a.col[k] >= a.cols) return false;
        if (k > 0 &&
            (a.row[k] < a.row[k - 1] || (a.row[k] == a.row[k - 1] && a.col[k] <= a.col[k - 1])))
            return false;
    }
    return true;
}

template <class U, class T>
Coo<U> convert_values(const Coo<T>& a)
{
    auto host = a.exec()->is_cpu() ? a : a.to(cpu_executor());
    std::vector<U> v(host.val.size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<U>(host.val[k]);
    return Coo<U>{a.rows, a.cols, host.row, host.col, Array<U>(std::move(v))};
}

template <class T>
std::vector<offset_t> row_lengths(const Coo<T>& a)
{
    std::vector<offset_t> len(a.rows, 0);
    for (offset_t k = 0; k < a.nnz(); ++k) ++len[a.row[k]];
    return len;
}

#define HEPTANE_INSTANTIATE(T)                                      \
    template void canonicalize<T>(Coo<T>&, DuplicatePolicy);        \
    template bool is_canonical<T>(const Coo<T>&);                   \
    template std::vector<offset_t> row_lengths<T>(const Coo<T>&);   \
    template void require_canonical<T>(const Coo<T>&, const char*); \
    template std::vector<offset_t> canonical_row_ptr<T>(const Coo<T>&, const char*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE
template Coo<float> convert_values<float, double>(const Coo<double>&);
template Coo<double> convert_values<double, float>(const Coo<float>&);
template Coo<double> convert_values<double, double>(const Coo<double>&);
template Coo<float> convert_values<float, float>(const Coo<float>&);

}  // namespace heptane
