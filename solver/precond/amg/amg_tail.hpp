// The coarse end of an AMG cycle in one launch ("the tail"): from the first level of at most
// AmgOptions::tail_rows rows down to the coarsest and back, every step of the ordinary cycle
// (amg.cpp: smoothing, residual, restriction, coarsest solve, prolongation) in the same order
// and with the same arithmetic, written once against a Team:
//   - on a GPU one CTA of threads (amg.cu): a step is a loop over its rows split among the
//     threads, the steps separated by a CTA barrier. A coarse level of the ordinary cycle is
//     ~14 launches of a few microseconds each with next to no work in them (docs/benchmarks.md:
//     "the V-cycle launches ~65 small kernels per iteration"); here all of them are one.
//   - on the CPU a team of one (amg_cpu.cpp): the same steps in sequence, which is how the
//     tests check the algorithm against the ordinary cycle in CI.
// The levels reach it through AmgTail (plain pointers in the executor's memory), passed by
// value, so a CUDA graph that recorded the launch replays it as it was.
#pragma once

#include "core/types.hpp"

namespace heptane::kernels {

constexpr int amg_tail_max_levels = 8;  // levels a tail may hold
constexpr int amg_tail_max_steps = 8;   // smoothing steps a level may take in one visit

template <class VT>
struct AmgTailCsr {
    const offset_t* ptr = nullptr;
    const index_t* col = nullptr;
    const VT* val = nullptr;
};

template <class VT>
struct AmgTailLevel {
    index_t n = 0;
    AmgTailCsr<VT> a;     // the level's matrix (not on a coarsest level solved densely)
    AmgTailCsr<VT> r, p;  // restriction to and prolongation from the next level (not on the last)
    const VT* dinv = nullptr;
    VT *res = nullptr, *d = nullptr;     // work vectors
    VT *b = nullptr, *x = nullptr;       // right-hand side and correction (not read on level 0)
    VT *b2 = nullptr, *e2 = nullptr;     // the W-cycle's second visit
    VT step_a[amg_tail_max_steps] = {};  // smoothing step k: d = a_k d + b_k (dinv ∘ r); x += d
    VT step_b[amg_tail_max_steps] = {};
};

template <class VT>
struct AmgTail {
    int levels = 0;  // levels in the tail; its last is the hierarchy's coarsest
    int pre = 0, post = 0;
    int coarse_steps = 0;   // smoothing steps on a coarsest level not solved densely
    bool chebyshev = true;  // Chebyshev (residual updated by r −= A d) or (l1-)Jacobi sweeps
    bool w_cycle = false;   // a second visit of every level but the last two
    const VT* coarse_inv = nullptr;  // the coarsest level's dense inverse, row-major, or null
    AmgTailLevel<VT> lv[amg_tail_max_levels];
};

/// The CPU's team: one member.
struct SerialTeam {
    static index_t first() { return 0; }
    static index_t stride() { return 1; }
    static void sync() {}
};

#if defined(__CUDACC__)
#define HEPTANE_TAIL_NOINLINE __noinline__
#define HEPTANE_TAIL_UNROLL _Pragma("unroll")
#else
#define HEPTANE_TAIL_NOINLINE
#define HEPTANE_TAIL_UNROLL
#endif

namespace tail_detail {

/// Σ_j v[j] x[c(j)], j = 0 .. n−1, in order; the loads of eight terms are issued before any
/// of them is used (a GPU thread walking a row alone would otherwise wait out one memory
/// latency per term: measured, a tail of 818- and 123-row levels took longer than the ~28
/// launches it replaced)
template <class VT, class Col>
HEPTANE_HD inline VT ordered_dot(index_t n, const VT* v, Col c, const VT* x)
{
    constexpr int batch = 8;
    VT s = 0;
    index_t j = 0;
    for (; j + batch <= n; j += batch) {
        VT t[batch];
        HEPTANE_TAIL_UNROLL
        for (int u = 0; u < batch; ++u) t[u] = v[j + u] * x[c(j + u)];
        HEPTANE_TAIL_UNROLL
        for (int u = 0; u < batch; ++u) s += t[u];
    }
    for (; j < n; ++j) s += v[j] * x[c(j)];
    return s;
}

struct Columns {  // the columns of a CSR row
    const index_t* col;
    HEPTANE_HD index_t operator()(index_t j) const { return col[j]; }
};
struct Identity {  // a dense row
    HEPTANE_HD index_t operator()(index_t j) const { return j; }
};

/// Σ_k m.val[k] x[m.col[k]] over row i, in column order
template <class VT>
HEPTANE_HD inline VT row_dot(const AmgTailCsr<VT>& m, index_t i, const VT* x)
{
    const offset_t k0 = m.ptr[i];
    return ordered_dot(static_cast<index_t>(m.ptr[i + 1] - k0), m.val + k0, Columns{m.col + k0}, x);
}

/// res = b − A x
template <class T, class VT>
HEPTANE_HD inline void residual(T& t, const AmgTailLevel<VT>& L, const VT* b, const VT* x, VT* res)
{
    for (index_t i = t.first(); i < L.n; i += t.stride()) res[i] = b[i] - row_dot(L.a, i, x);
    t.sync();
}

/// `sweeps` smoothing steps on A x = b (zero: x taken as 0, not read), as amg.cpp's smooth()
template <class T, class VT>
HEPTANE_HD inline void smooth(T& t, const AmgTail<VT>& g, const AmgTailLevel<VT>& L, const VT* b,
                              VT* x, int sweeps, bool zero)
{
    const index_t n = L.n;
    if (sweeps <= 0) {
        if (zero)
            for (index_t i = t.first(); i < n; i += t.stride()) x[i] = VT(0);
        t.sync();
        return;
    }
    const VT* r = b;
    for (int k = 0; k < sweeps; ++k) {
        if (g.chebyshev) {
            if (k == 0 && !zero) {
                residual(t, L, b, x, L.res);
                r = L.res;
            } else if (k > 0 && r == b) {
                residual(t, L, b, x, L.res);
                r = L.res;
            } else if (k > 0) {  // r −= A d
                for (index_t i = t.first(); i < n; i += t.stride())
                    L.res[i] = L.res[i] - row_dot(L.a, i, L.d);
                t.sync();
            }
        } else if (!(zero && k == 0)) {
            residual(t, L, b, x, L.res);
            r = L.res;
        }
        const VT a = L.step_a[k], bk = L.step_b[k];
        const bool fresh = zero && k == 0;  // x = 0 + d
        for (index_t i = t.first(); i < n; i += t.stride()) {
            const VT di =
                a == VT(0) ? bk * (L.dinv[i] * r[i]) : a * L.d[i] + bk * (L.dinv[i] * r[i]);
            L.d[i] = di;
            x[i] = fresh ? di : x[i] + di;
        }
        t.sync();
    }
}

/// Level D of the tail (x ≈ A_D⁻¹ b from x = 0); D is a template argument so that the W-cycle's
/// two visits unfold at compile time (no recursion on the device)
template <int D, class T, class VT>
HEPTANE_HD HEPTANE_TAIL_NOINLINE void cycle(T& t, const AmgTail<VT>& g, const VT* b, VT* x)
{
    const AmgTailLevel<VT>& L = g.lv[D];
    if (D == g.levels - 1) {
        if (g.coarse_inv) {
            for (index_t i = t.first(); i < L.n; i += t.stride())
                x[i] =
                    ordered_dot(L.n, g.coarse_inv + static_cast<long long>(i) * L.n, Identity{}, b);
            t.sync();
        } else {
            smooth(t, g, L, b, x, g.coarse_steps, true);
        }
        return;
    }
    if constexpr (D + 1 < amg_tail_max_levels) {
        const AmgTailLevel<VT>& C = g.lv[D + 1];
        smooth(t, g, L, b, x, g.pre, true);
        residual(t, L, b, x, L.res);
        for (index_t i = t.first(); i < C.n; i += t.stride()) C.b[i] = row_dot(L.r, i, L.res);
        t.sync();
        cycle<D + 1>(t, g, C.b, C.x);
        if (g.w_cycle && D + 2 < g.levels) {
            residual(t, C, C.b, C.x, C.b2);
            cycle<D + 1>(t, g, C.b2, C.e2);
            for (index_t i = t.first(); i < C.n; i += t.stride()) C.x[i] = C.e2[i] + C.x[i];
            t.sync();
        }
        for (index_t i = t.first(); i < L.n; i += t.stride()) x[i] = row_dot(L.p, i, C.x) + x[i];
        t.sync();
        smooth(t, g, L, b, x, g.post, false);
    }
}

}  // namespace tail_detail

/// x ≈ A_t⁻¹ b by the cycle of the tail's levels (t = its first), x = 0 on entry (not read).
template <class T, class VT>
HEPTANE_HD inline void amg_tail_cycle(T& t, const AmgTail<VT>& g, const VT* b, VT* x)
{
    tail_detail::cycle<0>(t, g, b, x);
}

/// The tail's cycle on the executor: one launch of one CTA on CUDA, in sequence on the CPU.
template <class VT>
void amg_tail(const CpuExecutor& exec, const AmgTail<VT>& g, const VT* b, VT* x);
template <class VT>
void amg_tail(const CudaExecutor& exec, const AmgTail<VT>& g, const VT* b, VT* x);

}  // namespace heptane::kernels
