// BDIA-GH SpMV on CUDA: kernel templates. bdia_fp64.cu, bdia_fp32.cu and bdia_mixed.cu
// instantiate them, one precision per file (CI compiles the CUDA code on two cores).
//
// Layout (docs/design.md §1): value(r, k = q*Nc + s) = data[k*N + r],
//   column(r, k) = (r/Nc + d_q)*Nc + s, a slot is valid iff block column r/Nc + d_q is in
//   [0, cols/Nc); validity is per (block row, q), not per element.
//   A x:   y_r = sum_q sum_s data[(q*Nc+s)*N + r] * x[(r/Nc + d_q)*Nc + s]
//   A^T x: A^T is BDIA with offsets -d_q and transposed blocks; for output row j = c*Nc + s
//          y_j = sum_q sum_a data[(q*Nc+s)*N + (c-d_q)*Nc + a] * x[(c-d_q)*Nc + a]
//
// ---- The floor, and what the optimized kernels expect to gain (written before tuning) ----
// Bytes of one y = A x with beta = 0: sizeof(MT)*D*Nc*N (each stored value once) +
// sizeof(VT)*N (x, once from DRAM; its D*Nc re-reads hit L1/L2) + sizeof(VT)*N (y written).
// fp64: 8*D*Nc*N + 16N. Floor time = bytes / copy bandwidth (3.0 TB/s measured on the H100).
// E.g. N = 65,536, Nc = 8: 30.4 MB -> 10.1 us; N = 2^21, Nc = 8: 969 MB -> 323 us.
// Mixed (fp32 values, fp64 vectors) moves 4*D*Nc*N + 16N: 1.87x fewer bytes at Nc = 4,
// 1.93x at Nc = 8.
//
// What holds the thesis kernel (one thread per row, D*Nc offsets in shared memory, a loop
// with a bounds test per slot) below the floor, with the measured bar (BENCHMARKS.md):
//  1. Too few loads in flight. Each iteration's load is behind a bounds test on a run-time
//     offset, so the compiler issues about one data load (+ one x load) per thread at a time.
//     Little's law: ~3 TB/s * ~0.7 us = ~2 MB in flight, ~16 KB per SM. At N = 65,536 there
//     are only ~16 warps per SM: 16*32*8 B = 4 KB per round trip -> far from the floor (65 %).
//     At 0.5-2 M rows the SM is full (64 warps) and it is nearly enough (83-91 %).
//  2. Index math: r mod Nc and r / Nc with a run-time Nc (integer division, ~20 instructions)
//     and a 64-bit multiply per slot; cheap next to memory, but it lengthens the dependency
//     chain in front of each load.
//  3. Launch and tail: at 10 us a 2-3 us ramp/tail is 20-30 %; little to win beyond 1.
// The optimized kernel: Nc and D are template parameters (Nc in {1,2,3,4,8,16}, D = 7; others
// take a generic path), the D*Nc loads of a row are fully unrolled with no test in the
// interior (rows whose every block diagonal is inside the matrix: all but ~2*J*H*Nc rows of a
// GH matrix; a block-uniform branch picks the checked copy for the boundary CTAs), so all
// loads of a row are independent and issued back to back: ~D*Nc*8 B in flight per thread
// instead of 8. Values are read with evict-first loads so that x stays in L1/L2.
// Expected: N = 65,536: 65 % -> ~80 % (bounded by launch + ramp, ~2 us of 12); 0.5-2 M rows:
// 83-91 % -> 95 %+; large N: ~97-100 % (already at the floor; must not lose).
// Optional 2 rows per thread (Nc even): 16-byte loads, and the two rows of a block share
// their x loads; halves the thread count, so it should help only at large N.
//
// A^T x (optimized): the lanes of a warp are grouped by Nc (32/Nc groups, Nc | 32 or Nc = 3
// with 2 idle lanes). Lane a of the group for output block c reads, for each q, input row
// i = (c - d_q)*Nc + a: the Nc values data[(q*Nc+s)*N + i] and x[i], coalesced exactly as
// A x reads them (shifted by d_q*Nc rows), and accumulates P[s] += data*x[i]. After all q,
// one reduce-scatter across the group (Nc-1 shuffles: recursive halving for powers of two,
// a rotation for Nc = 3) gives lane s the sum of P[s] over the group: y[c*Nc + s]. Same bytes
// as A x, no atomics, no stored copy, and D x-loads per row instead of D*Nc: expected within
// a few % of A x.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "formats/bdia/bdia_cuda.hpp"
#include "formats/cuda_spmv_common.cuh"

namespace heptane::kernels::bdia_detail {

using namespace cuda_detail;

constexpr int max_block_diagonals = bdia_max_block_diagonals;

/// Everything a BDIA kernel needs about A, passed by value (kernel parameter space).
struct Params {
    long long n;     ///< rows of A (N): the stride between diagonals in `data`
    index_t rows;    ///< rows of op(A) = length of y
    index_t nc;      ///< block size
    index_t nd;      ///< block diagonals (D)
    index_t nbr;     ///< block rows of A
    index_t nbc;     ///< block columns of A
    index_t lo, hi;  ///< interior block rows of op(A): every block diagonal in range
    index_t boff[max_block_diagonals];  ///< block offsets of op(A)'s source: d_q of A
    /// A^T x of a row block of a larger matrix (spmv_bdia_rows): y += alpha * sum by atomicAdd
    /// (beta unused), as other row blocks may add into the same entries on other streams.
    int atomic_out;
    /// The block diagonal holding the identity (Bdia::unit_main_block; A x only), -1: none.
    /// The tuned kernel for Nc = 1 and D = 7 adds x there instead of reading its values when
    /// it is the middle one (the hepta's offset 0); every other kernel reads the stored I.
    int unit_q = -1;
};

/// 2-wide vectors for the 2-rows-per-thread kernel.
template <class T>
struct vec2;
template <>
struct vec2<double> {
    using type = double2;
};
template <>
struct vec2<float> {
    using type = float2;
};

template <class T>
__device__ __forceinline__ typename vec2<T>::type ldcs2(const T* p)
{
    return __ldcs(reinterpret_cast<const typename vec2<T>::type*>(p));
}
template <class T>
__device__ __forceinline__ typename vec2<T>::type ldg2(const T* p)
{
    return __ldg(reinterpret_cast<const typename vec2<T>::type*>(p));
}
template <class T>
__device__ __forceinline__ void st2(T* p, T a, T b)
{
    *reinterpret_cast<typename vec2<T>::type*>(p) = typename vec2<T>::type{a, b};
}
/// Whether p may be read as pairs (2 * sizeof(T)-byte aligned); null counts as aligned.
template <class T>
inline bool aligned2(const T* p)
{
    return (reinterpret_cast<std::uintptr_t>(p) % (2 * sizeof(T))) == 0;
}

// ------------------------------------------------------------------------------------------
// Thesis kernel (the baseline): one thread per row, the D*Nc element offsets in shared
// memory, a bounds test per slot, run-time Nc.
//   y_r = sum_k data[k*N + r] * x[r - r%Nc + offset_k]     (0 <= column < cols)
template <class MT, class VT>
__global__ void __launch_bounds__(256)
    thesis_kernel(Params p, index_t cols, const MT* __restrict__ data, VT alpha,
                  const VT* __restrict__ x, VT beta, VT* __restrict__ y)
{
    extern __shared__ index_t s_off[];  // D*Nc element offsets
    const int nk = p.nd * p.nc;
    for (int k = threadIdx.x; k < nk; k += blockDim.x)
        s_off[k] = p.boff[k / p.nc] * p.nc + k % p.nc;
    __syncthreads();
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= p.n) return;
    const long long base = r - r % p.nc;
    VT sum = 0;
    for (int k = 0; k < nk; ++k) {
        const long long c = base + s_off[k];
        if (c >= 0 && c < cols) sum += VT(data[k * p.n + r]) * x[c];
    }
    store_result(y, r, alpha, sum, beta);
}

/// The A^T x kernels' store: store_result, or an atomic add for a row block (Params).
template <class VT>
__device__ __forceinline__ void store_t(const Params& p, VT* y, long long i, VT alpha, VT sum,
                                        VT beta)
{
    if (p.atomic_out)
        atomicAdd(y + i, alpha * sum);
    else
        store_result(y, i, alpha, sum, beta);
}

// Thesis-style A^T x (also the generic fallback): one thread per output row j = c*Nc + s,
// gathering column s of the blocks (c - d_q, c):
//   y_j = sum_q sum_a data[(q*Nc+s)*N + (c-d_q)*Nc + a] * x[(c-d_q)*Nc + a]
template <class MT, class VT>
__global__ void __launch_bounds__(256)
    gather_t_kernel(Params p, const MT* __restrict__ data, VT alpha, const VT* __restrict__ x,
                    VT beta, VT* __restrict__ y)
{
    const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (j >= p.rows) return;
    const long long c = j / p.nc;
    const int s = static_cast<int>(j - c * p.nc);
    VT sum = 0;
    for (int q = 0; q < p.nd; ++q) {
        const long long ib = c - p.boff[q];
        if (ib < 0 || ib >= p.nbr) continue;
        const MT* d = data + (static_cast<long long>(q) * p.nc + s) * p.n + ib * p.nc;
        const VT* xb = x + ib * p.nc;
        for (int a = 0; a < p.nc; ++a) sum += VT(ldg(d + a)) * ldg(xb + a);
    }
    store_t(p, y, j, alpha, sum, beta);
}

// ------------------------------------------------------------------------------------------
// Optimized A x. NC > 0 and D > 0: compile-time block size and block-diagonal count; the
// loads of a row are staged in register arrays before any arithmetic, so they are issued
// back to back (all D*NC of them for NC <= 4, NC per block diagonal for larger blocks).
// NC = 0 / D = 0: run-time values (generic path).

/// Where the tuned product reads x from: an array (const VT*), or an input the product forms
/// on the fly from other vectors (a functor with value_type and operator()(i), e.g. a Krylov
/// step's p = r + beta (p - omega v): bdia_dots.cuh). x_at(x, i) is x[i] (read-only path
/// for an array); x_value<X> its type.
template <class VT>
__device__ __forceinline__ VT x_at(const VT* __restrict__ x, long long i)
{
    return ldg(x + i);
}
template <class X>
__device__ __forceinline__ typename X::value_type x_at(const X& x, long long i)
{
    return x(i);
}
template <class X>
using x_value = std::decay_t<decltype(x_at(std::declval<const X&>(), 0LL))>;

/// The NC values x[i .. i+NC) of one block column (16-byte loads when NC is even: i is
/// a multiple of NC, so 16-byte aligned).
template <int NC, class VT>
__device__ __forceinline__ void load_x_block(const VT* __restrict__ x, long long i, VT (&xv)[NC])
{
    const VT* __restrict__ xq = x + i;
    if constexpr (NC % 2 == 0) {
        using V2 = typename vec2<VT>::type;
#pragma unroll
        for (int s = 0; s < NC; s += 2) {
            const V2 t = __ldg(reinterpret_cast<const V2*>(xq + s));
            xv[s] = t.x;
            xv[s + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int s = 0; s < NC; ++s) xv[s] = ldg(xq + s);
    }
}
/// The same for an input formed on the fly: entry by entry.
template <int NC, class X>
__device__ __forceinline__ void load_x_block(const X& x, long long i,
                                             typename X::value_type (&xv)[NC])
{
#pragma unroll
    for (int s = 0; s < NC; ++s) xv[s] = x(i + s);
}

/// Block diagonal q of row r (r in block row br): its NC values and the NC x entries, or
/// zeros when the block column is outside the matrix (checked copy only; never loads then).
/// U >= 0: block diagonal U is the identity (NC = 1 only; q and U compile-time constants once
/// unrolled): its value 1, not loaded.
template <int NC, bool checked, int U = -1, class MT, class X, class VT>
__device__ __forceinline__ void load_diagonal(const Params& p, int q, long long r, long long br,
                                              const MT* __restrict__ data, const X& x, MT (&v)[NC],
                                              VT (&xv)[NC])
{
    static_assert(U < 0 || NC == 1, "an identity block diagonal is compiled for Nc = 1 only");
    if (U >= 0 && q == U) {
        v[0] = MT(1);
        load_x_block<NC>(x, r, xv);  // the block column is the row's own
        return;
    }
    const int dq = p.boff[q];
    const long long cb = br + dq;
    if (checked && (cb < 0 || cb >= p.nbc)) {
#pragma unroll
        for (int s = 0; s < NC; ++s) {
            v[s] = MT(0);
            xv[s] = VT(0);
        }
        return;
    }
    const MT* d = data + static_cast<long long>(q) * NC * p.n + r;
#pragma unroll
    for (int s = 0; s < NC; ++s) v[s] = ldcs(d + s * p.n);
    load_x_block<NC>(x, cb * NC, xv);
}

template <int NC, int D, int G, bool checked, int U = -1, class MT, class X, class VT = x_value<X>>
__device__ __forceinline__ VT row_sum(const Params& p, long long r, const MT* __restrict__ data,
                                      const X& x)
{
    VT sum = 0;
    if constexpr (NC > 0 && D > 0) {
        const long long br = r / NC;
        // stage G block diagonals at a time: G*NC values and x entries in registers
#pragma unroll
        for (int q0 = 0; q0 < D; q0 += G) {
            MT v[G][NC];
            VT xv[G][NC];
#pragma unroll
            for (int g = 0; g < G; ++g)
                if (q0 + g < D)
                    load_diagonal<NC, checked, U>(p, q0 + g, r, br, data, x, v[g], xv[g]);
#pragma unroll
            for (int g = 0; g < G; ++g)
                if (q0 + g < D) {
#pragma unroll
                    for (int s = 0; s < NC; ++s) sum += VT(v[g][s]) * xv[g][s];
                }
        }
    } else {
        const int nc = p.nc;
        const long long br = r / nc;
        for (int q = 0; q < p.nd; ++q) {
            const int dq = p.boff[q];
            const long long cb = br + dq;
            if (checked && (cb < 0 || cb >= p.nbc)) continue;
            const long long xq = cb * nc;
            const MT* d = data + static_cast<long long>(q) * nc * p.n + r;
#pragma unroll 4
            for (int s = 0; s < nc; ++s) sum += VT(ldcs(d + s * p.n)) * x_at(x, xq + s);
        }
    }
    return sum;
}

// Two consecutive rows r, r+1 of one block (NC even, N even, r even): 2-wide value loads,
// shared x loads.
template <int NC, int D, int G, bool checked, class MT, class X, class VT>
__device__ __forceinline__ void row_sum2(const Params& p, long long r, const MT* __restrict__ data,
                                         const X& x, VT& s0, VT& s1)
{
    static_assert(NC > 0 && NC % 2 == 0 && D > 0, "2 rows per thread need an even Nc");
    using M2 = typename vec2<MT>::type;
    const long long br = r / NC;
    s0 = 0;
    s1 = 0;
#pragma unroll
    for (int q0 = 0; q0 < D; q0 += G) {
        M2 v[G][NC];
        VT xv[G][NC];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (q0 + g >= D) continue;
            const int q = q0 + g;
            const long long cb = br + p.boff[q];
            if (checked && (cb < 0 || cb >= p.nbc)) {
#pragma unroll
                for (int s = 0; s < NC; ++s) {
                    v[g][s] = M2{MT(0), MT(0)};
                    xv[g][s] = VT(0);
                }
                continue;
            }
            const MT* d = data + static_cast<long long>(q) * NC * p.n + r;
#pragma unroll
            for (int s = 0; s < NC; ++s) v[g][s] = ldcs2(d + s * p.n);
            load_x_block<NC>(x, cb * NC, xv[g]);
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (q0 + g >= D) continue;
#pragma unroll
            for (int s = 0; s < NC; ++s) {
                s0 += VT(v[g][s].x) * xv[g][s];
                s1 += VT(v[g][s].y) * xv[g][s];
            }
        }
    }
}

/// x[i], x[i + 1] (i even) of an array or of an input formed on the fly (its pair()).
template <class VT>
__device__ __forceinline__ typename vec2<VT>::type x_pair(const VT* __restrict__ x, long long i)
{
    return ldg2(x + i);
}
template <class X>
__device__ __forceinline__ auto x_pair(const X& x, long long i)
{
    return x.pair(i);
}

/// Rows r and r + 1 of an interior tile at Nc = 1 (N even, r even): the values of each block
/// diagonal as one 16-byte load (8-byte for float), x as one aligned pair where the offset is
/// even and as the pair before plus one entry where it is odd (the entries r + d and
/// r + d + 1 either way). The same products summed in the same order as row_sum, so each row's
/// sum is row_sum's. U >= 0: block diagonal U is the identity (its values 1, not loaded).
template <int D, int U, class MT, class X, class VT>
__device__ __forceinline__ void row_pair_nc1(const Params& p, long long r,
                                             const MT* __restrict__ data, const X& x, VT& s0,
                                             VT& s1)
{
    using M2 = typename vec2<MT>::type;
    M2 v[D];
    VT x0[D], x1[D];
#pragma unroll
    for (int q = 0; q < D; ++q) {
        if (q == U)
            v[q] = M2{MT(1), MT(1)};
        else
            v[q] = ldcs2(data + static_cast<long long>(q) * p.n + r);
        const long long c = r + p.boff[q];
        const bool odd = (c & 1) != 0;
        const auto t = x_pair(x, odd ? c - 1 : c);
        x0[q] = odd ? t.y : t.x;
        x1[q] = odd ? x_at(x, c + 1) : t.y;
    }
    s0 = 0;
    s1 = 0;
#pragma unroll
    for (int q = 0; q < D; ++q) {
        s0 += VT(v[q].x) * x0[q];
        s1 += VT(v[q].y) * x1[q];
    }
}

/// The first of the RPT rows of this thread in tile `tile` (blockDim.x * RPT rows), and whether
/// the whole tile lies in the interior block rows (block-uniform: no bounds tests there).
template <int NC, int RPT>
__device__ __forceinline__ long long tile_row(const Params& p, long long tile, bool& interior)
{
    const long long cta_rows = static_cast<long long>(blockDim.x) * RPT;
    const long long r_begin = tile * cta_rows;
    const long long r_end = r_begin + cta_rows < p.n ? r_begin + cta_rows : p.n;
    const int nc = NC > 0 ? NC : p.nc;
    interior =
        r_begin >= static_cast<long long>(p.lo) * nc && r_end <= static_cast<long long>(p.hi) * nc;
    return r_begin + static_cast<long long>(threadIdx.x) * RPT;
}

/// tile_row of this CTA's tile (one tile per CTA).
template <int NC, int RPT>
__device__ __forceinline__ long long thread_row(const Params& p, bool& interior)
{
    return tile_row<NC, RPT>(p, blockIdx.x, interior);
}

/// The sums of the RPT rows r, r+1, .. of this thread into s (checked copy unless the CTA is
/// interior).
template <int NC, int D, int G, int RPT, class MT, class X, class VT>
__device__ __forceinline__ void thread_sums(const Params& p, long long r, bool interior,
                                            const MT* __restrict__ data, const X& x, VT (&s)[RPT])
{
    if constexpr (RPT == 1) {
        if constexpr (NC == 1 && D == 7) {  // the identity in the middle: x added, not read
            if (p.unit_q == D / 2) {
                s[0] = interior ? row_sum<NC, D, G, false, D / 2>(p, r, data, x)
                                : row_sum<NC, D, G, true, D / 2>(p, r, data, x);
                return;
            }
        }
        s[0] = interior ? row_sum<NC, D, G, false>(p, r, data, x)
                        : row_sum<NC, D, G, true>(p, r, data, x);
    } else if constexpr (NC == 1) {  // two rows (N even): pairs inside, row by row at the edges
        static_assert(RPT == 2 && D > 0, "Nc = 1 takes 1 or 2 rows per thread");
        const bool unit = D == 7 && p.unit_q == D / 2;
        if (!interior) {
            s[0] = unit ? row_sum<NC, D, G, true, D / 2>(p, r, data, x)
                        : row_sum<NC, D, G, true>(p, r, data, x);
            s[1] = unit ? row_sum<NC, D, G, true, D / 2>(p, r + 1, data, x)
                        : row_sum<NC, D, G, true>(p, r + 1, data, x);
        } else if (unit) {
            row_pair_nc1<D, D / 2>(p, r, data, x, s[0], s[1]);
        } else {
            row_pair_nc1<D, -1>(p, r, data, x, s[0], s[1]);
        }
    } else {
        if (interior)
            row_sum2<NC, D, G, false>(p, r, data, x, s[0], s[1]);
        else
            row_sum2<NC, D, G, true>(p, r, data, x, s[0], s[1]);
    }
}

template <int NC, int D, int G, int RPT, class MT, class VT>
__global__ void __launch_bounds__(256)
    ax_kernel(Params p, const MT* __restrict__ data, VT alpha, const VT* __restrict__ x, VT beta,
              VT* __restrict__ y)
{
    bool interior;
    const long long r = thread_row<NC, RPT>(p, interior);
    if (r >= p.n) return;
    VT s[RPT];
    thread_sums<NC, D, G, RPT>(p, r, interior, data, x, s);
#pragma unroll
    for (int k = 0; k < RPT; ++k) store_result(y, r + k, alpha, s[k], beta);
}

// ------------------------------------------------------------------------------------------
// Optimized A^T x: lane groups of NC, a reduce-scatter at the end.

/// One step of the recursive-halving reduce-scatter: lanes a and a^H exchange halves; the
/// lane with bit H set keeps (and sums) the upper half of P[0..2H), the other the lower.
template <int H, class VT, int NC>
__device__ __forceinline__ void halving_step(VT (&P)[NC], int a)
{
    if constexpr (H >= 1) {
        const bool upper = (a & H) != 0;
#pragma unroll
        for (int i = 0; i < H; ++i) {
            const VT send = upper ? P[i] : P[i + H];
            const VT keep = upper ? P[i + H] : P[i];
            P[i] = keep + __shfl_xor_sync(0xffffffffu, send, H);
        }
        halving_step<H / 2>(P, a);
    }
}

/// Lane s of each aligned group of NC lanes gets sum over the group of P[s]. NC a power of
/// two: recursive halving (NC-1 shuffles). Otherwise a rotation (NC-1 shuffles, NC^2
/// selects). `a` = lane index in the group; `g0` = the group's first lane in the warp.
template <int NC, class VT>
__device__ __forceinline__ VT reduce_scatter(VT (&P)[NC], int a, int g0)
{
    if constexpr ((NC & (NC - 1)) == 0) {
        halving_step<NC / 2>(P, a);
        return P[0];
    } else {
        auto pick = [&](int idx) {
            VT v = P[0];
#pragma unroll
            for (int i = 1; i < NC; ++i) v = idx == i ? P[i] : v;
            return v;
        };
        VT out = pick(a);
#pragma unroll
        for (int t = 1; t < NC; ++t) {
            // lane b sends P_b[(b - t) mod NC] to lane (b - t) mod NC; we receive from a + t
            const VT send = pick((a - t + NC) % NC);
            out += __shfl_sync(0xffffffffu, send, g0 + (a + t) % NC);
        }
        return out;
    }
}

/// P[s] += sum_q data[(q*NC+s)*N + i_q] * x[i_q], i_q = (cb - d_q)*NC + a: the lane's share
/// of output block cb. Loads staged in registers (G block diagonals at a time) before use.
template <int NC, int D, bool checked, class MT, class VT>
__device__ __forceinline__ void t_partials(const Params& p, long long cb, int a,
                                           const MT* __restrict__ data, const VT* __restrict__ x,
                                           VT (&P)[NC])
{
    constexpr int G = NC <= 4 ? D : 1;
#pragma unroll
    for (int q0 = 0; q0 < D; q0 += G) {
        MT v[G][NC];
        VT xi[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (q0 + g >= D) continue;
            const int q = q0 + g;
            const long long ib = cb - p.boff[q];  // input block row of A
            if (checked && (ib < 0 || ib >= p.nbr)) {
                xi[g] = VT(0);
#pragma unroll
                for (int s = 0; s < NC; ++s) v[g][s] = MT(0);
                continue;
            }
            const long long i = ib * NC + a;
            xi[g] = ldg(x + i);
            const MT* d = data + static_cast<long long>(q) * NC * p.n + i;
#pragma unroll
            for (int s = 0; s < NC; ++s) v[g][s] = ldcs(d + s * p.n);
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (q0 + g >= D) continue;
#pragma unroll
            for (int s = 0; s < NC; ++s) P[s] += VT(v[g][s]) * xi[g];
        }
    }
}

template <int NC, int D, class MT, class VT>
__global__ void __launch_bounds__(256)
    t_kernel(Params p, const MT* __restrict__ data, VT alpha, const VT* __restrict__ x, VT beta,
             VT* __restrict__ y)
{
    constexpr int groups = 32 / NC;  // lane groups per warp
    const int lane = threadIdx.x & 31;
    const int g = lane / NC;
    const int a = lane - g * NC;
    const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const long long cb = warp * groups + g;  // output block row (block column of A)
    const long long cta_first = (blockIdx.x * static_cast<long long>(blockDim.x) / 32) * groups;
    const long long cta_last = cta_first + static_cast<long long>(blockDim.x / 32) * groups;
    const bool interior = cta_first >= p.lo && cta_last <= p.hi;
    const bool valid = g < groups && cb < p.nbc;
    VT P[NC];
#pragma unroll
    for (int s = 0; s < NC; ++s) P[s] = VT(0);
    if (valid) {
        if (interior)
            t_partials<NC, D, false>(p, cb, a, data, x, P);
        else
            t_partials<NC, D, true>(p, cb, a, data, x, P);
    }
    // every lane of the warp takes part in the shuffles
    const VT out = reduce_scatter<NC>(P, a, g * NC);
    if (valid) store_t(p, y, cb * NC + a, alpha, out, beta);
}

// ------------------------------------------------------------------------------------------
// Host side.

template <class MT>
Params make_params(const Bdia<MT>& a, Op op)
{
    Params p{};
    p.n = a.rows;
    p.nc = a.block_size;
    p.nd = a.num_block_diagonals();
    p.nbr = a.rows / a.block_size;
    p.nbc = a.cols / a.block_size;
    p.rows = op == Op::normal ? a.rows : a.cols;
    index_t dmin = 0, dmax = 0;
    for (int q = 0; q < p.nd; ++q) {
        p.boff[q] = a.block_offsets[q];
        dmin = q == 0 ? a.block_offsets[q] : std::min(dmin, a.block_offsets[q]);
        dmax = q == 0 ? a.block_offsets[q] : std::max(dmax, a.block_offsets[q]);
    }
    if (op == Op::normal) {
        // A x, block row c: c + d_q in [0, nbc) for every q
        p.lo = std::max<index_t>(0, -dmin);
        p.hi = std::min<index_t>(p.nbr, p.nbc - dmax);
    } else {
        // A^T x, output block c: c - d_q in [0, nbr) for every q
        p.lo = std::max<index_t>(0, dmax);
        p.hi = std::min<index_t>(p.nbc, p.nbr + dmin);
    }
    if (p.hi < p.lo) p.hi = p.lo;  // no interior
    if (op == Op::normal && a.unit_main_block) p.unit_q = a.main_block_diagonal();
    return p;
}

template <int NC, int D, int G, int RPT, class MT, class VT>
void launch_ax(cudaStream_t s, const Params& p, int block, const MT* data, VT alpha, const VT* x,
               VT beta, VT* y)
{
    const unsigned grid = cuda::grid_for((p.n + RPT - 1) / RPT, block);
    ax_kernel<NC, D, G, RPT, MT, VT><<<grid, block, 0, s>>>(p, data, alpha, x, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <int NC, int D, class MT, class VT>
void launch_t(cudaStream_t s, const Params& p, int block, const MT* data, VT alpha, const VT* x,
              VT beta, VT* y)
{
    constexpr int groups = 32 / NC;
    const long long warps = (p.nbc + groups - 1) / groups;
    const unsigned grid = cuda::grid_for(warps * 32, block);
    t_kernel<NC, D, MT, VT><<<grid, block, 0, s>>>(p, data, alpha, x, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

/// Block diagonals whose loads one thread stages in registers before using them. Primary:
/// all D for Nc <= 4 (D*Nc <= 28 loads), one for Nc >= 8 (Nc loads). Alternative (compiled
/// for Nc = 3, 4, 8 only): about 16 loads (fewer registers for Nc 3 and 4, so more warps per
/// SM; more loads in flight for Nc = 8). 0: none.
constexpr int primary_stage(int nc, int d)
{
    return nc <= 4 ? d : 1;
}
constexpr int alt_stage(int nc)
{
    return nc == 3 ? 5 : nc == 4 ? 4 : nc == 8 ? 2 : 0;
}

template <int NC, int D, int G, class MT, class VT>
void launch_ax_rpt(cudaStream_t s, const Params& p, int block, int rpt, const MT* data, VT alpha,
                   const VT* x, VT beta, VT* y)
{
    if constexpr (NC % 2 == 0) {
        if (rpt == 2 && p.n % 2 == 0) {
            launch_ax<NC, D, G, 2>(s, p, block, data, alpha, x, beta, y);
            return;
        }
    }
    launch_ax<NC, D, G, 1>(s, p, block, data, alpha, x, beta, y);
}

template <int NC, int D, class MT, class VT>
void optimized_nc(cudaStream_t s, const Params& p, Op op, int block, int rpt, int stage,
                  const MT* data, VT alpha, const VT* x, VT beta, VT* y)
{
    if (op == Op::transpose) {
        launch_t<NC, D>(s, p, block, data, alpha, x, beta, y);
        return;
    }
    constexpr int galt = alt_stage(NC);
    if constexpr (galt > 0) {
        if (stage == 2) {
            launch_ax_rpt<NC, D, galt>(s, p, block, rpt, data, alpha, x, beta, y);
            return;
        }
    }
    launch_ax_rpt<NC, D, primary_stage(NC, D)>(s, p, block, rpt, data, alpha, x, beta, y);
}

/// The tuned launch defaults, from the H100 sweeps of `heptane bench spmv --tune`
/// (docs/benchmarks.md): 256 threads per CTA; fp32 values: 2 rows per thread (8-byte float2
/// loads) for Nc = 4, 8, 16, with the alternative staging for Nc = 4 and, in single
/// precision, Nc = 8; fp64: 1 row per thread, alternative staging for Nc = 8 (16 loads in
/// flight per thread instead of 8). Differences between these shapes are within 1-3 %.
template <class MT>
constexpr int tuned_rows_per_thread(int nc)
{
    return sizeof(MT) == 4 && nc >= 4 ? 2 : 1;
}
template <class MT, class VT>
constexpr bool tuned_alt_stage(int nc)
{
    constexpr bool fp32_values = sizeof(MT) == 4;
    constexpr bool fp32_vectors = sizeof(VT) == 4;
    return nc == 4 ? fp32_values : nc == 8 ? (!fp32_values || fp32_vectors) : false;
}
template <class MT, class VT>
BdiaLaunch tuned_launch(index_t nc, const BdiaLaunch& asked)
{
    BdiaLaunch l = asked;
    if (l.block <= 0) l.block = 256;
    if (l.rows_per_thread <= 0) l.rows_per_thread = tuned_rows_per_thread<MT>(nc);
    if (l.stage <= 0) l.stage = tuned_alt_stage<MT, VT>(nc) ? 2 : 1;
    return l;
}

/// The optimized kernels on stream s: compile-time Nc for D = 7, the generic path otherwise.
template <class MT, class VT>
void run_optimized(cudaStream_t s, const Params& p, Op op, int block, int rpt, int stage,
                   const MT* data, VT alpha, const VT* x, VT beta, VT* y)
{
    if (p.nd == 7) {
        switch (p.nc) {
            case 1:
                optimized_nc<1, 7>(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
                return;
            case 2:
                optimized_nc<2, 7>(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
                return;
            case 3:
                optimized_nc<3, 7>(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
                return;
            case 4:
                optimized_nc<4, 7>(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
                return;
            case 8:
                optimized_nc<8, 7>(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
                return;
            case 16:
                optimized_nc<16, 7>(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
                return;
            default:
                break;
        }
    }
    // generic shapes: run-time Nc and D, interior split kept for A x
    if (op == Op::normal)
        launch_ax<0, 0, 0, 1>(s, p, block, data, alpha, x, beta, y);
    else {
        gather_t_kernel<MT, VT>
            <<<cuda::grid_for(p.rows, block), block, 0, s>>>(p, data, alpha, x, beta, y);
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
}

template <class MT, class VT>
void spmv_bdia_impl(const CudaExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x,
                    VT beta, VT* y, BdiaKernel kernel, const BdiaLaunch& launch)
{
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    if (ny == 0) return;
    make_current(exec);
    HEPTANE_ENSURE(
        a.block_size > 0 && a.rows % a.block_size == 0 && a.cols % a.block_size == 0,
        DimensionMismatch,
        "BDIA block size " << a.block_size << " does not divide " << a.rows << " x " << a.cols);
    HEPTANE_ENSURE(a.num_block_diagonals() <= max_block_diagonals, NotSupported,
                   "the CUDA BDIA kernels take at most " << max_block_diagonals
                                                         << " block diagonals, not "
                                                         << a.num_block_diagonals());
    if (a.num_block_diagonals() == 0 || a.rows == 0) {
        scale(exec, ny, beta, y);
        return;
    }
    ensure_on_device(exec, *a.exec(), "BDIA");
    HEPTANE_ENSURE(a.data.size() == static_cast<std::size_t>(a.slots()), DimensionMismatch,
                   "BDIA data holds " << a.data.size() << " values, expected " << a.slots());
    const BdiaLaunch l = tuned_launch<MT, VT>(a.block_size, launch);
    const int block = l.block, rpt = l.rows_per_thread, stage = l.stage;
    HEPTANE_ENSURE(block == 64 || block == 128 || block == 256, InputError,
                   "BDIA launch block " << block << " (64, 128 or 256)");
    HEPTANE_ENSURE(rpt == 1 || rpt == 2, InputError, "BDIA rows per thread " << rpt << " (1 or 2)");
    HEPTANE_ENSURE(stage == 1 || stage == 2, InputError, "BDIA staging " << stage << " (1 or 2)");
    const Params p = make_params(a, op);
    const MT* data = a.data.data();
    auto s = cuda::stream(exec);
    if (kernel == BdiaKernel::thesis) {
        if (op == Op::normal) {
            const std::size_t smem = sizeof(index_t) * p.nd * p.nc;
            HEPTANE_ENSURE(smem <= 48 * 1024, NotSupported,
                           "thesis BDIA kernel: " << p.nd * p.nc << " offsets do not fit");
            thesis_kernel<MT, VT>
                <<<cuda::grid_for(p.n, 256), 256, smem, s>>>(p, a.cols, data, alpha, x, beta, y);
        } else {
            gather_t_kernel<MT, VT>
                <<<cuda::grid_for(p.rows, 256), 256, 0, s>>>(p, data, alpha, x, beta, y);
        }
        HEPTANE_CUDA_LAUNCH_CHECK();
        return;
    }
    run_optimized(s, p, op, block, rpt, stage, data, alpha, x, beta, y);
}

/// A row block of a BDIA-GH matrix as a BDIA matrix of its own: A x with the block offsets
/// shifted by the block's first block row; A^T x over the block columns the block touches,
/// added atomically (Params::atomic_out) unless the block is their only contributor. Tuned launch
/// shape; 2 rows per thread only when the values are 16-byte aligned.
template <class MT, class VT>
void spmv_bdia_rows_impl(const CudaExecutor& exec, const BdiaRows<MT>& b, Op op, VT alpha,
                         const VT* x, VT beta, VT* y, void* stream)
{
    const index_t nc = b.block_size, nd = b.block_diagonals;
    HEPTANE_ENSURE(nc >= 1 && b.rows >= 0 && b.row0 >= 0 && b.row0 % nc == 0 && b.rows % nc == 0 &&
                       b.cols % nc == 0,
                   DimensionMismatch,
                   "BDIA row block: block size " << nc << " does not divide rows " << b.row0
                                                 << " + " << b.rows << " of " << b.cols
                                                 << " columns");
    HEPTANE_ENSURE(
        nd >= 1 && nd <= max_block_diagonals && b.block_offsets != nullptr, NotSupported,
        "BDIA row block: " << nd << " block diagonals (1.." << max_block_diagonals << ")");
    if (b.rows == 0) return;
    make_current(exec);
    const cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : cuda::stream(exec);
    const index_t br0 = b.row0 / nc, nbr = b.rows / nc, nbc = b.cols / nc;
    Params p{};
    p.n = b.rows;
    p.nc = nc;
    p.nd = nd;
    p.nbr = nbr;
    index_t dmin = b.block_offsets[0], dmax = b.block_offsets[0];
    for (index_t q = 0; q < nd; ++q) {
        dmin = std::min<index_t>(dmin, b.block_offsets[q]);
        dmax = std::max<index_t>(dmax, b.block_offsets[q]);
    }
    // block columns this block touches: [c0, c1) (the whole of them for A x's input)
    index_t c0 = 0, shift = br0;
    if (op == Op::normal) {
        p.nbc = nbc;
        p.rows = b.rows;
        p.lo = std::max<index_t>(0, -(dmin + shift));
        p.hi = std::min<index_t>(nbr, nbc - (dmax + shift));
    } else {
        c0 = std::clamp<index_t>(br0 + dmin, 0, nbc);
        const index_t c1 = std::clamp<index_t>(br0 + nbr + dmax, 0, nbc);
        if (c1 <= c0) return;
        shift = br0 - c0;
        p.nbc = c1 - c0;
        p.rows = p.nbc * nc;
        p.lo = std::max<index_t>(0, dmax + shift);
        p.hi = std::min<index_t>(p.nbc, nbr + dmin + shift);
        p.atomic_out = b.exclusive ? 0 : 1;
    }
    if (p.hi < p.lo) p.hi = p.lo;
    for (index_t q = 0; q < nd; ++q) p.boff[q] = b.block_offsets[q] + shift;
    BdiaLaunch l = tuned_launch<MT, VT>(nc, BdiaLaunch{});
    if (reinterpret_cast<std::uintptr_t>(b.data) % 16 != 0) l.rows_per_thread = 1;
    run_optimized(s, p, op, l.block, l.rows_per_thread, l.stage, b.data, alpha, x, beta,
                  op == Op::normal ? y : y + std::size_t(c0) * nc);
}

}  // namespace heptane::kernels::bdia_detail

namespace heptane::kernels {

template <class MT, class VT>
void spmv_bdia(const CudaExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta,
               VT* y, BdiaKernel kernel, const BdiaLaunch& launch)
{
    bdia_detail::spmv_bdia_impl<MT, VT>(exec, a, op, alpha, x, beta, y, kernel, launch);
}

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y,
          BdiaKernel kernel)
{
    bdia_detail::spmv_bdia_impl<MT, VT>(exec, a, op, alpha, x, beta, y, kernel, BdiaLaunch{});
}

template <class MT, class VT>
void spmv_bdia_rows(const CudaExecutor& exec, const BdiaRows<MT>& b, Op op, VT alpha, const VT* x,
                    VT beta, VT* y, void* stream)
{
    bdia_detail::spmv_bdia_rows_impl<MT, VT>(exec, b, op, alpha, x, beta, y, stream);
}

}  // namespace heptane::kernels

/// Instantiate the public BDIA entry points for one (MT, VT) pair (inside heptane::kernels).
#define HEPTANE_INSTANTIATE_BDIA(MT, VT)                                                         \
    template void spmv_bdia<MT, VT>(const CudaExecutor&, const Bdia<MT>&, Op, VT, const VT*, VT, \
                                    VT*, BdiaKernel, const BdiaLaunch&);                         \
    template void spmv<MT, VT>(const CudaExecutor&, const Bdia<MT>&, Op, VT, const VT*, VT, VT*, \
                               BdiaKernel);                                                      \
    template void spmv_bdia_rows<MT, VT>(const CudaExecutor&, const BdiaRows<MT>&, Op, VT,       \
                                         const VT*, VT, VT*, void*);
