// Test systems and exact-arithmetic checks shared by the solver tests (test_solver, test_gmres,
// test_solver_data, test_amg_data): a 7-point convection-diffusion stencil, random diagonally
// dominant matrices, residuals in long double and the bounds derived from them.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "formats/coo/coo.hpp"
#include "tests/test_common.hpp"

namespace heptane::test {

/// An n × n COO matrix from its triplets, in canonical order.
inline Coo<double> square_coo(index_t n, std::vector<index_t> r, std::vector<index_t> c,
                              std::vector<double> v)
{
    Coo<double> a;
    a.rows = a.cols = n;
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<double>(std::move(v));
    canonicalize(a);
    return a;
}

/// 7-point stencil on an nx × ny × nz grid (x fastest). Off-diagonals −1 − c toward the
/// lower neighbour and −1 + c toward the upper one (halved in y, quartered in z; c ≠ 0:
/// nonsymmetric, a convection term); diagonal = Σ|off-diagonals of the row| + margin
/// (margin > 0: strictly diagonally dominant). With `laplacian` the diagonal is 6 instead
/// (c = 0: the Dirichlet Laplacian).
inline Coo<double> seven_point(index_t nx, index_t ny, index_t nz, double c, double margin,
                               bool laplacian = false)
{
    std::vector<index_t> r, cc;
    std::vector<double> v;
    const index_t n = nx * ny * nz;
    for (index_t k = 0; k < nz; ++k)
        for (index_t j = 0; j < ny; ++j)
            for (index_t i = 0; i < nx; ++i) {
                const index_t row = i + nx * (j + ny * k);
                double off = 0;
                auto add = [&](index_t col, double val) {
                    r.push_back(row);
                    cc.push_back(col);
                    v.push_back(val);
                    off += std::abs(val);
                };
                if (i > 0) add(row - 1, -1 - c);
                if (i + 1 < nx) add(row + 1, -1 + c);
                if (j > 0) add(row - nx, -1 - 0.5 * c);
                if (j + 1 < ny) add(row + nx, -1 + 0.5 * c);
                if (k > 0) add(row - nx * ny, -1 - 0.25 * c);
                if (k + 1 < nz) add(row + nx * ny, -1 + 0.25 * c);
                r.push_back(row);
                cc.push_back(row);
                v.push_back(laplacian ? 6.0 : off + margin);
            }
    return square_coo(n, std::move(r), std::move(cc), std::move(v));
}

/// Random nonsymmetric, strictly diagonally dominant by `margin`, the diagonal's signs
/// alternating (+ on even rows).
inline Coo<double> random_dd(index_t n, unsigned seed, double margin)
{
    auto a = random_coo<double>(n, n, 2, 9, seed);
    std::vector<double> off(std::size_t(n), 0.0);
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (offset_t k = 0; k < a.nnz(); ++k)
        if (a.row[k] != a.col[k]) {
            off[std::size_t(a.row[k])] += std::abs(a.val[k]);
            r.push_back(a.row[k]);
            c.push_back(a.col[k]);
            v.push_back(a.val[k]);
        }
    for (index_t i = 0; i < n; ++i) {
        r.push_back(i);
        c.push_back(i);
        v.push_back((i % 2 ? -1.0 : 1.0) * (off[std::size_t(i)] + margin));
    }
    return square_coo(n, std::move(r), std::move(c), std::move(v));
}

/// min_i (|a_ii| − Σ_{j≠i} |a_ij|): ‖A⁻¹‖∞ ≤ 1/δ (Varah), so ‖x − x*‖∞ ≤ ‖b − A x‖∞ / δ.
inline double dominance_margin(const Coo<double>& a)
{
    std::vector<double> d(std::size_t(a.rows), 0.0), off(std::size_t(a.rows), 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k)
        (a.row[k] == a.col[k] ? d : off)[std::size_t(a.row[k])] += std::abs(a.val[k]);
    double m = std::numeric_limits<double>::infinity();
    for (index_t i = 0; i < a.rows; ++i) m = std::min(m, d[std::size_t(i)] - off[std::size_t(i)]);
    return m;
}

/// b − A x, accumulated in long double.
inline std::vector<double> residual(const Coo<double>& a, const std::vector<double>& x,
                                    const std::vector<double>& b)
{
    std::vector<long double> r(b.begin(), b.end());
    for (offset_t k = 0; k < a.nnz(); ++k)
        r[std::size_t(a.row[k])] -= (long double)a.val[k] * x[std::size_t(a.col[k])];
    return std::vector<double>(r.begin(), r.end());
}

inline double norm2(const std::vector<double>& v)
{
    long double s = 0;
    for (double e : v) s += (long double)e * e;
    return std::sqrt(double(s));
}
inline double norm_inf(const std::vector<double>& v)
{
    double m = 0;
    for (double e : v) m = std::max(m, std::abs(e));
    return m;
}
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b)
{
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

/// ‖b − A x‖₂ / ‖b‖₂ (the residual in long double).
inline double true_relres(const Coo<double>& a, const std::vector<double>& x,
                          const std::vector<double>& b)
{
    return norm2(residual(a, x, b)) / norm2(b);
}

/// The rounding error of ‖b − A x‖/‖b‖ evaluated in double: (row length + 2)·eps·‖|A||x| +
/// |b|‖/‖b‖.
inline double residual_rounding(const Coo<double>& a, const std::vector<double>& x,
                                const std::vector<double>& b)
{
    std::vector<double> s(b.size(), 0.0);
    std::vector<int> len(b.size(), 0);
    for (std::size_t i = 0; i < b.size(); ++i) s[i] = std::abs(b[i]);
    for (offset_t k = 0; k < a.nnz(); ++k) {
        s[std::size_t(a.row[k])] += std::abs(a.val[k] * x[std::size_t(a.col[k])]);
        ++len[std::size_t(a.row[k])];
    }
    double ss = 0, bb = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        ss += s[i] * s[i];
        bb += b[i] * b[i];
    }
    const int max_len = *std::max_element(len.begin(), len.end());
    return (max_len + 2) * std::numeric_limits<double>::epsilon() * std::sqrt(ss / bb);
}

}  // namespace heptane::test
