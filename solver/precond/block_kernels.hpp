// Dense Nc × Nc block arithmetic of the preconditioner setups (internal, double): products
// and the partial-pivoting inverse, with the block size a compile-time constant for the
// common ones (NC = 1..4; NC = 0: nc at run time) and no allocation for nc <= 8. Every
// variant performs the same operations in the same order, so the bits do not depend on which
// one ran. The inverse and the (block) Jacobi gather are also device code (HEPTANE_HD): the
// numeric refresh of Jacobi and block Jacobi runs them on the GPU (precond_refresh.cu) with
// the host's operations and roundings (mul_rn), so a block inverted there has the host's bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/types.hpp"
#include "solver/precond/block_utils.hpp"

namespace heptane::detail {

// Full unrolling of a loop whose count is a compile-time constant (the block loops for NC > 0);
// nvcc's (both passes of a .cu file) or the host compiler's spelling
#if defined(__CUDACC__)
#define HEPTANE_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__)
#define HEPTANE_UNROLL _Pragma("GCC unroll 8")
#elif defined(__clang__)
#define HEPTANE_UNROLL _Pragma("clang loop unroll(full)")
#else
#define HEPTANE_UNROLL
#endif

/// a·b rounded by itself. In device code nvcc fuses a product followed by an add or a
/// subtraction into one FMA (one rounding); the host build (x86-64 without -mfma) rounds
/// twice. __dmul_rn is never fused, so the device rounds as the host does.
HEPTANE_HD inline double mul_rn(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

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

/// invert_block_core's operations on the arrays it is given (w: the scratch, inv: the result).
template <int NC>
HEPTANE_HD inline PivotFailure invert_block_steps(const double* a, double* inv, index_t nc_rt,
                                                  double* w)
{
    const std::size_t n = NC > 0 ? std::size_t(NC) : std::size_t(nc_rt);
    double scale = 0;
    for (std::size_t i = 0; i < n * n; ++i) {
        w[i] = a[i];
        const double m = fabs(w[i]);
        if (scale < m) scale = m;  // std::max(scale, m)
    }
    const double threshold = double(n) * std::numeric_limits<double>::epsilon() * scale;
    for (std::size_t i = 0; i < n * n; ++i) inv[i] = 0;
    for (std::size_t i = 0; i < n; ++i) inv[i * n + i] = 1;
    HEPTANE_UNROLL
    for (std::size_t k = 0; k < n; ++k) {
        // the pivot: the first row i >= k of largest |w(i, k)|; every index below is a loop
        // counter (no w[piv ...]), so with NC known the loops unroll onto registers
        std::size_t piv = k;
        double p = w[k * n + k], best = fabs(p);
        HEPTANE_UNROLL
        for (std::size_t i = k + 1; i < n; ++i) {
            const double c = fabs(w[i * n + k]);
            if (c > best) {
                piv = i;
                best = c;
                p = w[i * n + k];
            }
        }
        if (!(fabs(p) > threshold))  // also catches NaN
            return PivotFailure{true, index_t(k), p, threshold};
        HEPTANE_UNROLL
        for (std::size_t i = k + 1; i < n; ++i)
            if (piv == i)
                for (std::size_t j = 0; j < n; ++j) {
                    const double wk = w[k * n + j], ik = inv[k * n + j];
                    w[k * n + j] = w[i * n + j];
                    inv[k * n + j] = inv[i * n + j];
                    w[i * n + j] = wk;
                    inv[i * n + j] = ik;
                }
        const double rp = 1.0 / p;
        for (std::size_t j = 0; j < n; ++j) {
            w[k * n + j] *= rp;
            inv[k * n + j] *= rp;
        }
        HEPTANE_UNROLL
        for (std::size_t i = 0; i < n; ++i) {
            if (i == k) continue;
            const double f = w[i * n + k];
            if (f == 0.0) continue;
            for (std::size_t j = 0; j < n; ++j) {
                w[i * n + j] -= mul_rn(f, w[k * n + j]);
                inv[i * n + j] -= mul_rn(f, inv[k * n + j]);
            }
        }
    }
    return PivotFailure{};
}

/// inv = a⁻¹, Gauss-Jordan with partial pivoting (see invert_block in block_utils.hpp), on
/// the host or the device; `w`: nc² doubles of scratch (NC = 0 only). fabs is std::abs for
/// doubles and the products go through mul_rn, so host and device give the same bits. With
/// the block size known (NC > 0) the steps run on local arrays, which the compiler keeps in
/// registers (w, inv and a might alias, so through them it cannot): the same operations in
/// the same order, 1.9x faster for 3 x 3 blocks on the host. inv is written either way.
template <int NC>
HEPTANE_HD inline PivotFailure invert_block_core(const double* a, double* inv, index_t nc_rt,
                                                 double* w)
{
    if constexpr (NC > 0) {
        double lw[NC * NC], li[NC * NC];
        const PivotFailure f = invert_block_steps<NC>(a, li, nc_rt, lw);
        for (int s = 0; s < NC * NC; ++s) inv[s] = li[s];
        return f;
    } else {
        return invert_block_steps<NC>(a, inv, nc_rt, w);
    }
}

/// inv = a⁻¹ on the host: invert_block_core with `work` (nc² doubles) as scratch, or, with
/// nullptr, scratch on the stack up to nc = 8, else allocated.
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
    return invert_block_core<NC>(a, inv, nc_rt, w);
}

/// The diagonal block of block row c for (block) Jacobi, from CSR values through its gather
/// map (map: nc² positions into `values`, row-major over the block, −1 where the CSR has no
/// entry): b[s] = 0 + values[map[s]] (the host setup's sum into zero: −0 becomes +0), 0 where
/// map[s] < 0. Host and device.
template <int NC, class IT>
HEPTANE_HD inline void gather_block(const IT* map, const double* values, index_t nc_rt, double* b)
{
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    for (index_t s = 0; s < nc * nc; ++s) {
        double x = 0.0;
        if (map[s] >= 0) x += values[map[s]];
        b[s] = x;
    }
}

/// Block c of kernels::block_diag_invert: gathered, inverted, stored in VT at inv + c·nc².
/// `scratch`: 3·nc² doubles. False (inv not written) when a pivot failed.
template <int NC, class IT, class VT>
HEPTANE_HD inline bool invert_gathered_block(index_t c, index_t nc_rt, const IT* map,
                                             const double* values, VT* inv, double* scratch)
{
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    double* b = scratch;
    double* out = scratch + nc2;
    gather_block<NC>(map + nc2 * std::size_t(c), values, nc, b);
    if (invert_block_core<NC>(b, out, nc, out + nc2).singular) return false;
    VT* dst = inv + nc2 * std::size_t(c);
    for (std::size_t s = 0; s < nc2; ++s) dst[s] = VT(out[s]);
    return true;
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
