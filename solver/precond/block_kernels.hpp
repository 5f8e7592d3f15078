// Dense Nc × Nc block arithmetic of the preconditioner setups (internal, host, double):
// products and the partial-pivoting inverse, with the block size a compile-time constant for
// the common ones (NC = 1..4; NC = 0: nc at run time) and no allocation for nc <= 8. Every
// variant performs the same operations in the same order, so the bits do not depend on which
// one ran.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "solver/precond/block_utils.hpp"

namespace heptane::detail {

/// c = a · b (c must not alias a or b)
template <int NC>
inline void block_mul(const double* a, const double* b, double* c, index_t nc_rt)
{
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    for (index_t i = 0; i < nc; ++i)
        for (index_t j = 0; j < nc; ++j) {
            double s = 0;
            for (index_t k = 0; k < nc; ++k) s += a[i * nc + k] * b[k * nc + j];
            c[i * nc + j] = s;
        }
}

/// c −= a · b (a row of a that is zero is skipped, so infinities in b do not spread)
template <int NC>
inline void block_mul_sub(const double* a, const double* b, double* c, index_t nc_rt)
{
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    for (index_t i = 0; i < nc; ++i)
        for (index_t k = 0; k < nc; ++k) {
            const double aik = a[i * nc + k];
            if (aik == 0.0) continue;
            for (index_t j = 0; j < nc; ++j) c[i * nc + j] -= aik * b[k * nc + j];
        }
}

/// inv = a⁻¹, Gauss-Jordan with partial pivoting (see invert_block in block_utils.hpp).
/// `work`: nc² doubles of scratch, or nullptr (then on the stack up to nc = 8, else
/// allocated).
template <int NC>
inline PivotFailure invert_block_nc(const double* a, double* inv, index_t nc_rt,
                                    double* work = nullptr)
{
    const std::size_t n = NC > 0 ? std::size_t(NC) : std::size_t(nc_rt);
    constexpr std::size_t stack = NC > 0 ? std::size_t(NC) * std::size_t(NC) : 64;
    double w_stack[stack];
    std::vector<double> w_heap;
    double* w = work ? work : w_stack;
    if (!work && n * n > stack) {
        w_heap.resize(n * n);
        w = w_heap.data();
    }
    double scale = 0;
    for (std::size_t i = 0; i < n * n; ++i) {
        w[i] = a[i];
        scale = std::max(scale, std::abs(w[i]));
    }
    const double threshold = double(n) * std::numeric_limits<double>::epsilon() * scale;
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

/// Calls f(std::integral_constant<int, NC>) with NC = nc for nc = 1..4, NC = 0 otherwise: the
/// block loops compiled for the common block sizes.
template <class F>
inline void dispatch_block_size(index_t nc, F&& f)
{
    switch (nc) {
        case 1:
            return f(std::integral_constant<int, 1>{});
        case 2:
            return f(std::integral_constant<int, 2>{});
        case 3:
            return f(std::integral_constant<int, 3>{});
        case 4:
            return f(std::integral_constant<int, 4>{});
        default:
            return f(std::integral_constant<int, 0>{});
    }
}

}  // namespace heptane::detail
