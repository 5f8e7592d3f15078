// Vector kernels on the CPU (OpenMP). The KrylovState is in host memory; each step ends by
// calling the same finalize function the CUDA kernels call from their last block.
// Reductions use OpenMP's reduction clause over a static schedule (run-to-run
// reproducible for a fixed thread count) and accumulate in double.
#include "solver/vector/vector_kernels.hpp"

#include <cmath>

namespace heptane::kernels {

namespace {
/// Below this length a loop runs on one thread: a parallel region (fork, barrier) costs
/// more than the memory-bound work, and on an oversubscribed host a barrier can wait a whole
/// scheduler time slice.
constexpr index_t parallel_min = 1 << 15;

/// Distributed solves: each of v summed over the processes (core/reducer.hpp), all in one
/// call; nothing on one process.
template <class... D>
void global_sum(const CpuExecutor& e, const StepContext& ctx, D&... v)
{
    if (!ctx.reducer) return;
    double buf[] = {v...};
    ctx.reducer->sum(e, buf, int(sizeof...(D)));
    int k = 0;
    ((v = buf[k++]), ...);
}
}  // namespace

std::size_t reduce_partials_size(const CpuExecutor&)
{
    return 0;
}

template <class VT>
void fill(const CpuExecutor&, index_t n, VT value, VT* x)
{
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) x[i] = value;
}

template <class VT>
void copy(const CpuExecutor&, index_t n, const VT* x, VT* y)
{
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) y[i] = x[i];
}

template <class VT>
void axpby(const CpuExecutor&, index_t n, VT a, const VT* x, VT b, VT* y)
{
    if (b == VT(0)) {
#pragma omp parallel for schedule(static) if (n >= parallel_min)
        for (index_t i = 0; i < n; ++i) y[i] = a * x[i];
    } else {
#pragma omp parallel for schedule(static) if (n >= parallel_min)
        for (index_t i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
    }
}

template <class VT>
void dot(const CpuExecutor& e, index_t n, const VT* x, const VT* y, StepContext ctx, int slot)
{
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) sum += double(x[i]) * double(y[i]);
    global_sum(e, ctx, sum);
    ctx.state->scratch[slot] = sum;
}

template <class VT>
void norm2(const CpuExecutor& e, index_t n, const VT* x, StepContext ctx, int slot)
{
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
    global_sum(e, ctx, sum);
    ctx.state->scratch[slot] = std::sqrt(sum);
}

void request_stop(const CpuExecutor&, StepContext ctx, Reason reason)
{
    if (!ctx.state->stop) krylov::stop_with(*ctx.state, reason);
}

// ---- BiCGStab ----------------------------------------------------------------------------

template <class VT>
void bicgstab_init(const CpuExecutor& e, index_t n, const VT* b, const VT* r, VT* r_hat, VT* p,
                   VT* v, StopParams params, StepContext ctx)
{
    double bb = 0, rr = 0;
#pragma omp parallel for schedule(static) reduction(+ : bb, rr) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) {
        const VT ri = r[i];
        r_hat[i] = ri;
        p[i] = VT(0);
        v[i] = VT(0);
        bb += double(b[i]) * double(b[i]);
        rr += double(ri) * double(ri);
    }
    global_sum(e, ctx, bb, rr);
    krylov::init_finalize(*ctx.state, bb, rr, params, ctx.history);
}

template <class VT>
void bicgstab_update_p(const CpuExecutor&, index_t n, const VT* r, const VT* v, VT* p,
                       StepContext ctx)
{
    const KrylovState& st = *ctx.state;
    if (st.stop) return;
    const VT beta = VT(st.beta), omega = VT(st.omega);
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) p[i] = r[i] + beta * (p[i] - omega * v[i]);
}

template <class VT>
void bicgstab_alpha(const CpuExecutor& e, index_t n, const VT* r_hat, const VT* v, StepContext ctx)
{
    if (ctx.state->stop) return;
    double rv = 0;
#pragma omp parallel for schedule(static) reduction(+ : rv) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) rv += double(r_hat[i]) * double(v[i]);
    global_sum(e, ctx, rv);
    krylov::bicgstab_alpha_finalize(*ctx.state, rv);
}

namespace {
/// The NS sums of a fused product's partials (in order), over the processes with a reducer;
/// false (nothing summed) once the iteration has stopped.
template <int NS>
bool sum_partials(const CpuExecutor& e, index_t parts, const double* partials,
                  const StepContext& ctx, double (&v)[NS])
{
    if (ctx.state->stop) return false;
    for (int k = 0; k < NS; ++k) {
        v[k] = 0;
        for (index_t b = 0; b < parts; ++b) v[k] += partials[std::size_t(k) * parts + b];
    }
    if (ctx.reducer) ctx.reducer->sum(e, v, NS);
    return true;
}
}  // namespace

void bicgstab_alpha_partials(const CpuExecutor& e, index_t parts, const double* partials,
                             StepContext ctx)
{
    double v[1];
    if (sum_partials(e, parts, partials, ctx, v)) krylov::bicgstab_alpha_finalize(*ctx.state, v[0]);
}

void bicgstab_omega_partials(const CpuExecutor& e, index_t parts, const double* partials,
                             StepContext ctx)
{
    double v[3];
    if (sum_partials(e, parts, partials, ctx, v))
        krylov::bicgstab_s_omega_finalize(*ctx.state, v[0], v[1], v[2]);
}

void cg_alpha_partials(const CpuExecutor& e, index_t parts, const double* partials, StepContext ctx)
{
    double v[1];
    if (sum_partials(e, parts, partials, ctx, v)) krylov::cg_alpha_finalize(*ctx.state, v[0]);
}

template <class VT>
void bicgstab_update_s(const CpuExecutor&, index_t n, const VT* r, const VT* v, VT* s,
                       StepContext ctx)
{
    if (ctx.state->stop) return;
    const VT alpha = VT(ctx.state->alpha);
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) s[i] = r[i] - alpha * v[i];
}

template <class VT>
void bicgstab_omega(const CpuExecutor& e, index_t n, const VT* t, const VT* s, StepContext ctx)
{
    if (ctx.state->stop) return;
    double ts = 0, tt = 0, ss = 0;
#pragma omp parallel for schedule(static) reduction(+ : ts, tt, ss) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) {
        ts += double(t[i]) * double(s[i]);
        tt += double(t[i]) * double(t[i]);
        ss += double(s[i]) * double(s[i]);
    }
    global_sum(e, ctx, ts, tt, ss);
    krylov::bicgstab_s_omega_finalize(*ctx.state, ts, tt, ss);
}

template <class VT>
void bicgstab_update_xr(const CpuExecutor& e, index_t n, const VT* p_hat, const VT* s_hat,
                        const VT* s, const VT* t, const VT* r_hat, VT* x, VT* r, StepContext ctx)
{
    if (ctx.state->stop) return;
    const VT alpha = VT(ctx.state->alpha), omega = VT(ctx.state->omega);
    const bool use_s = ctx.state->omega != 0.0;
    double rhat_r = 0, rr = 0;
#pragma omp parallel for schedule(static) reduction(+ : rhat_r, rr) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) {
        x[i] += use_s ? alpha * p_hat[i] + omega * s_hat[i] : alpha * p_hat[i];
        const VT ri = use_s ? s[i] - omega * t[i] : s[i];
        r[i] = ri;
        rhat_r += double(r_hat[i]) * double(ri);
        rr += double(ri) * double(ri);
    }
    global_sum(e, ctx, rhat_r, rr);
    krylov::bicgstab_xr_finalize(*ctx.state, rhat_r, rr, ctx.history);
}

// ---- CG ------------------------------------------------------------------------------------

template <class VT>
void cg_init(const CpuExecutor& e, index_t n, const VT* b, const VT* r, StopParams params,
             StepContext ctx)
{
    double bb = 0, rr = 0;
#pragma omp parallel for schedule(static) reduction(+ : bb, rr) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) {
        bb += double(b[i]) * double(b[i]);
        rr += double(r[i]) * double(r[i]);
    }
    global_sum(e, ctx, bb, rr);
    krylov::init_finalize(*ctx.state, bb, rr, params, ctx.history);
}

template <class VT>
void cg_start(const CpuExecutor& e, index_t n, const VT* r, const VT* z, VT* p, StepContext ctx)
{
    if (ctx.state->stop) return;
    double rz = 0;
#pragma omp parallel for schedule(static) reduction(+ : rz) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) {
        p[i] = z[i];
        rz += double(r[i]) * double(z[i]);
    }
    global_sum(e, ctx, rz);
    krylov::cg_rho_finalize(*ctx.state, rz);
}

template <class VT>
void cg_alpha(const CpuExecutor& e, index_t n, const VT* p, const VT* q, StepContext ctx)
{
    if (ctx.state->stop) return;
    double pq = 0;
#pragma omp parallel for schedule(static) reduction(+ : pq) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) pq += double(p[i]) * double(q[i]);
    global_sum(e, ctx, pq);
    krylov::cg_alpha_finalize(*ctx.state, pq);
}

template <class VT>
void cg_update_xr(const CpuExecutor& e, index_t n, const VT* p, const VT* q, VT* x, VT* r,
                  bool identity_pc, StepContext ctx)
{
    if (ctx.state->stop) return;
    const VT alpha = VT(ctx.state->alpha);
    double rr = 0;
#pragma omp parallel for schedule(static) reduction(+ : rr) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) {
        x[i] += alpha * p[i];
        const VT ri = r[i] - alpha * q[i];
        r[i] = ri;
        rr += double(ri) * double(ri);
    }
    global_sum(e, ctx, rr);
    krylov::cg_xr_finalize(*ctx.state, rr, identity_pc, ctx.history);
}

template <class VT>
void cg_beta(const CpuExecutor& e, index_t n, const VT* r, const VT* z, StepContext ctx)
{
    if (ctx.state->stop) return;
    double rz = 0;
#pragma omp parallel for schedule(static) reduction(+ : rz) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) rz += double(r[i]) * double(z[i]);
    global_sum(e, ctx, rz);
    krylov::cg_beta_finalize(*ctx.state, rz);
}

template <class VT>
void cg_update_p(const CpuExecutor&, index_t n, const VT* z, VT* p, StepContext ctx)
{
    if (ctx.state->stop) return;
    const VT beta = VT(ctx.state->beta);
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) p[i] = z[i] + beta * p[i];
}

// ---- LSQR and MLEM ---------------------------------------------------------------------------

template <class VT>
void sum(const CpuExecutor& e, index_t n, const VT* x, StepContext ctx, int slot)
{
    double acc = 0;
#pragma omp parallel for schedule(static) reduction(+ : acc) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) acc += double(x[i]);
    global_sum(e, ctx, acc);
    ctx.state->scratch[slot] = acc;
}

template <class VT>
void count_negative(const CpuExecutor& e, index_t n, const VT* x, StepContext ctx, int slot)
{
    double count = 0;
#pragma omp parallel for schedule(static) reduction(+ : count) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) count += (x[i] >= VT(0)) ? 0.0 : 1.0;  // NaN counts
    global_sum(e, ctx, count);
    ctx.state->scratch[slot] = count;
}

template <class VT>
void lsqr_update_xw(const CpuExecutor& e, index_t n, VT t1, VT t2, VT s, const VT* v, VT* w, VT* x,
                    StepContext ctx, int slot)
{
    double ww = 0;
    if (x) {
#pragma omp parallel for schedule(static) reduction(+ : ww) if (n >= parallel_min)
        for (index_t i = 0; i < n; ++i) {
            const VT wi = w[i];
            x[i] += t1 * wi;                   // x = x + t1 w
            const VT wn = s * v[i] + t2 * wi;  // w = v + t2 w (v = s v̂)
            w[i] = wn;
            ww += double(wn) * double(wn);
        }
    } else if (t2 == VT(0)) {
#pragma omp parallel for schedule(static) reduction(+ : ww) if (n >= parallel_min)
        for (index_t i = 0; i < n; ++i) {
            const VT wn = s * v[i];
            w[i] = wn;
            ww += double(wn) * double(wn);
        }
    } else {
#pragma omp parallel for schedule(static) reduction(+ : ww) if (n >= parallel_min)
        for (index_t i = 0; i < n; ++i) {
            const VT wn = s * v[i] + t2 * w[i];
            w[i] = wn;
            ww += double(wn) * double(wn);
        }
    }
    global_sum(e, ctx, ww);
    ctx.state->scratch[slot] = ww;
}

template <class VT>
void mlem_correlate(const CpuExecutor& e, index_t m, const VT* g, const VT* q, VT* c,
                    StepContext ctx, int index)
{
    double l = 0;
#pragma omp parallel for schedule(static) reduction(+ : l) if (m >= parallel_min)
    for (index_t i = 0; i < m; ++i) {
        const VT qi = q[i], gi = g[i];
        VT ci = VT(0);
        if (qi > VT(0)) {
            ci = gi / qi;  // correlation g / (A f)
            l += (gi > VT(0) ? double(gi) * std::log(double(qi)) : 0.0) - double(qi);
        }
        if (c) c[i] = ci;
    }
    global_sum(e, ctx, l);
    if (index >= 0) ctx.history[index] = l;
}

template <class VT>
void mlem_sensitivity(const CpuExecutor&, index_t n, const VT* norm, VT* inv_norm, VT* f, VT f0)
{
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t j = 0; j < n; ++j) {
        const VT nj = norm[j];
        const bool seen = nj > VT(0);
        inv_norm[j] = seen ? VT(1) / nj : VT(0);
        if (f) f[j] = seen ? f0 : VT(0);
    }
}

template <class VT>
void mlem_update(const CpuExecutor&, index_t n, const VT* b, const VT* inv_norm, VT* f)
{
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t j = 0; j < n; ++j) {
        const VT s = inv_norm[j];
        if (s != VT(0)) f[j] = f[j] * (b[j] * s);  // f · Aᵀ(g / A f) / norm
    }
}

#define HEPTANE_INSTANTIATE_TOMO(VT)                                                               \
    template void sum<VT>(const CpuExecutor&, index_t, const VT*, StepContext, int);               \
    template void count_negative<VT>(const CpuExecutor&, index_t, const VT*, StepContext, int);    \
    template void lsqr_update_xw<VT>(const CpuExecutor&, index_t, VT, VT, VT, const VT*, VT*, VT*, \
                                     StepContext, int);                                            \
    template void mlem_correlate<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*,       \
                                     StepContext, int);                                            \
    template void mlem_sensitivity<VT>(const CpuExecutor&, index_t, const VT*, VT*, VT*, VT);      \
    template void mlem_update<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*);
HEPTANE_INSTANTIATE_TOMO(double)
HEPTANE_INSTANTIATE_TOMO(float)
#undef HEPTANE_INSTANTIATE_TOMO

#define HEPTANE_INSTANTIATE(VT)                                                                   \
    template void fill<VT>(const CpuExecutor&, index_t, VT, VT*);                                 \
    template void copy<VT>(const CpuExecutor&, index_t, const VT*, VT*);                          \
    template void axpby<VT>(const CpuExecutor&, index_t, VT, const VT*, VT, VT*);                 \
    template void dot<VT>(const CpuExecutor&, index_t, const VT*, const VT*, StepContext, int);   \
    template void norm2<VT>(const CpuExecutor&, index_t, const VT*, StepContext, int);            \
    template void bicgstab_init<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*, VT*,  \
                                    VT*, StopParams, StepContext);                                \
    template void bicgstab_update_p<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*,   \
                                        StepContext);                                             \
    template void bicgstab_alpha<VT>(const CpuExecutor&, index_t, const VT*, const VT*,           \
                                     StepContext);                                                \
    template void bicgstab_update_s<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*,   \
                                        StepContext);                                             \
    template void bicgstab_omega<VT>(const CpuExecutor&, index_t, const VT*, const VT*,           \
                                     StepContext);                                                \
    template void bicgstab_update_xr<VT>(const CpuExecutor&, index_t, const VT*, const VT*,       \
                                         const VT*, const VT*, const VT*, VT*, VT*, StepContext); \
    template void cg_init<VT>(const CpuExecutor&, index_t, const VT*, const VT*, StopParams,      \
                              StepContext);                                                       \
    template void cg_start<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*,            \
                               StepContext);                                                      \
    template void cg_alpha<VT>(const CpuExecutor&, index_t, const VT*, const VT*, StepContext);   \
    template void cg_update_xr<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*, VT*,   \
                                   bool, StepContext);                                            \
    template void cg_beta<VT>(const CpuExecutor&, index_t, const VT*, const VT*, StepContext);    \
    template void cg_update_p<VT>(const CpuExecutor&, index_t, const VT*, VT*, StepContext);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
