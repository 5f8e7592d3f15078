#include "solver/precond/block_utils.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.hpp"

namespace heptane::detail {

BlockCsrHost block_csr_from_csr(const Csr<double>& a_in, index_t nc, const char* who)
{
    HEPTANE_ENSURE(nc >= 1, InputError, who << ": block size " << nc << " must be >= 1");
    HEPTANE_ENSURE(a_in.rows == a_in.cols, DimensionMismatch,
                   who << ": the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
    HEPTANE_ENSURE(a_in.rows % nc == 0, InputError,
                   who << ": block size " << nc << " does not divide the size " << a_in.rows);
    const Csr<double> a = a_in.exec()->is_cpu() ? Csr<double>{} : a_in.to(cpu_executor());
    const Csr<double>& h = a_in.exec()->is_cpu() ? a_in : a;

    BlockCsrHost m;
    m.nc = nc;
    m.nb = h.rows / nc;
    const std::size_t nc2 = std::size_t(nc) * nc;
    m.ptr.assign(std::size_t(m.nb) + 1, 0);
    m.diag.assign(std::size_t(m.nb), 0);
    std::vector<index_t> cols;
    // pattern: the distinct block columns of each block row, plus the diagonal
    std::vector<std::vector<index_t>> rows_cols(std::size_t(m.nb));
#pragma omp parallel for schedule(dynamic, 64) private(cols)
    for (index_t I = 0; I < m.nb; ++I) {
        cols.clear();
        cols.push_back(I);
        for (index_t r = I * nc; r < (I + 1) * nc; ++r)
            for (offset_t k = h.row_ptr[r]; k < h.row_ptr[r + 1]; ++k)
                cols.push_back(h.col_idx[k] / nc);
        std::sort(cols.begin(), cols.end());
        cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
        rows_cols[std::size_t(I)] = cols;
    }
    for (index_t I = 0; I < m.nb; ++I)
        m.ptr[std::size_t(I) + 1] =
            m.ptr[std::size_t(I)] + offset_t(rows_cols[std::size_t(I)].size());
    m.col.resize(std::size_t(m.ptr.back()));
    m.val.assign(std::size_t(m.ptr.back()) * nc2, 0.0);
#pragma omp parallel for schedule(dynamic, 64)
    for (index_t I = 0; I < m.nb; ++I) {
        const auto& cs = rows_cols[std::size_t(I)];
        const offset_t base = m.ptr[std::size_t(I)];
        std::copy(cs.begin(), cs.end(), m.col.begin() + base);
        m.diag[std::size_t(I)] = base + (std::lower_bound(cs.begin(), cs.end(), I) - cs.begin());
        for (index_t r = I * nc; r < (I + 1) * nc; ++r)
            for (offset_t k = h.row_ptr[r]; k < h.row_ptr[r + 1]; ++k) {
                const index_t c = h.col_idx[k];
                const offset_t pos =
                    base + (std::lower_bound(cs.begin(), cs.end(), c / nc) - cs.begin());
                m.val[std::size_t(pos) * nc2 + std::size_t(r % nc) * nc + std::size_t(c % nc)] +=
                    h.values[k];
            }
    }
    return m;
}

PivotFailure invert_block(const double* a, double* inv, index_t nc)
{
    const std::size_t n = std::size_t(nc);
    std::vector<double> w(a, a + n * n);
    double scale = 0;
    for (double v : w) scale = std::max(scale, std::abs(v));
    const double threshold = double(nc) * std::numeric_limits<double>::epsilon() * scale;
    for (std::size_t i = 0; i < n * n; ++i) inv[i] = 0;
    for (std::size_t i = 0; i < n; ++i) inv[i * n + i] = 1;
    for (std::size_t k = 0; k < n; ++k) {
        std::size_t piv = k;
        for (std::size_t i = k + 1; i < n; ++i)
            if (std::abs(w[i * n + k]) > std::abs(w[piv * n + k])) piv = i;
        const double p = w[piv * n + k];
        if (!(std::abs(p) > threshold))  // also catches NaN
            return PivotFailure{true, index_t(k), p, threshold};
        if (piv != k)
            for (std::size_t j = 0; j < n; ++j) {
                std::swap(w[k * n + j], w[piv * n + j]);
                std::swap(inv[k * n + j], inv[piv * n + j]);
            }
        const double rp = 1.0 / p;
        for (std::size_t j = 0; j < n; ++j) {
            w[k * n + j] *= rp;
            inv[k * n + j] *= rp;
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (i == k) continue;
            const double f = w[i * n + k];
            if (f == 0.0) continue;
            for (std::size_t j = 0; j < n; ++j) {
                w[i * n + j] -= f * w[k * n + j];
                inv[i * n + j] -= f * inv[k * n + j];
            }
        }
    }
    return PivotFailure{};
}

std::string describe_pivot_failure(index_t block_row, index_t nc, const PivotFailure& f)
{
    std::ostringstream os;
    os << "block row " << block_row << " (rows " << std::int64_t(block_row) * nc << ".."
       << std::int64_t(block_row) * nc + nc - 1 << "): pivot " << f.step + 1 << " of " << nc
       << " is " << f.pivot << " after partial pivoting (|pivot| <= " << f.threshold
       << " = nc*eps*max|a_ij|)";
    return os.str();
}

}  // namespace heptane::detail
