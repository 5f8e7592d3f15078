// Vector kernels of the Krylov solvers, declared once; vector_cpu.cpp (OpenMP) and
// vector.cu (CUDA) implement them side by side. Instantiated for VT = double and float
// (mixed precision uses double vectors). Reductions always accumulate in double.
//
// Pointers are in the executor's memory; n is the vector length. The "step" kernels fuse
// one BiCGStab/CG vector update with the dot products that follow it and finish with the
// stopping logic of solver/vector/krylov_state.hpp on the KrylovState in the executor's
// memory; a step kernel does nothing once `state->stop` is set. The math and the traffic
// (in vector passes of n·sizeof(VT) bytes: one read or one write of a vector) are given
// with each declaration; solver/bicgstab/bicgstab.cpp totals them per iteration.
#pragma once

#include "core/executor.hpp"
#include "core/reducer.hpp"
#include "core/types.hpp"
#include "solver/vector/krylov_state.hpp"

namespace heptane::kernels {

/// Where a step kernel finds its scalars. `partials` is reduction scratch in the executor's
/// memory (CUDA: reduce_partials_size(exec) doubles; unused on the CPU); `history` has
/// max_it + 1 entries, ‖r_i‖ is stored at index i. `reducer` (a host object, null on one
/// process): the sums of each reduction are summed over the processes before the finalize
/// step (on CUDA: local sums into state->sums, reducer->sum on them, a one-thread finalize).
struct StepContext {
    KrylovState* state = nullptr;
    double* history = nullptr;
    double* partials = nullptr;
    const Reducer* reducer = nullptr;
};

/// Doubles of reduction scratch a StepContext needs on this executor.
std::size_t reduce_partials_size(const CpuExecutor& exec);
std::size_t reduce_partials_size(const CudaExecutor& exec);

// ---- plain vector operations (not gated by state->stop) -------------------------------

/// x = value                                                        1 pass
template <class VT>
void fill(const CpuExecutor& exec, index_t n, VT value, VT* x);
template <class VT>
void fill(const CudaExecutor& exec, index_t n, VT value, VT* x);

/// y = x                                                            2 passes
template <class VT>
void copy(const CpuExecutor& exec, index_t n, const VT* x, VT* y);
template <class VT>
void copy(const CudaExecutor& exec, index_t n, const VT* x, VT* y);

/// y = a x + b y (y not read when b == 0)                           2-3 passes
template <class VT>
void axpby(const CpuExecutor& exec, index_t n, VT a, const VT* x, VT b, VT* y);
template <class VT>
void axpby(const CudaExecutor& exec, index_t n, VT a, const VT* x, VT b, VT* y);

/// state->scratch[slot] = (x, y)                                    2 passes
template <class VT>
void dot(const CpuExecutor& exec, index_t n, const VT* x, const VT* y, StepContext ctx, int slot);
template <class VT>
void dot(const CudaExecutor& exec, index_t n, const VT* x, const VT* y, StepContext ctx, int slot);

/// state->scratch[slot] = ‖x‖₂                                      1 pass
template <class VT>
void norm2(const CpuExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot);
template <class VT>
void norm2(const CudaExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot);

/// Stop the iteration with `reason` unless it has stopped already (the host's stagnation
/// test uses it). A one-thread kernel on the GPU.
void request_stop(const CpuExecutor& exec, StepContext ctx, Reason reason);
void request_stop(const CudaExecutor& exec, StepContext ctx, Reason reason);

// ---- BiCGStab (right-preconditioned) --------------------------------------------------

/// r̂ = r, p = 0, v = 0, with (b, b) and (r, r); then krylov::init_finalize.   5 passes
template <class VT>
void bicgstab_init(const CpuExecutor& exec, index_t n, const VT* b, const VT* r, VT* r_hat, VT* p,
                   VT* v, StopParams params, StepContext ctx);
template <class VT>
void bicgstab_init(const CudaExecutor& exec, index_t n, const VT* b, const VT* r, VT* r_hat, VT* p,
                   VT* v, StopParams params, StepContext ctx);

/// p = r + β (p − ω v)                                              4 passes
template <class VT>
void bicgstab_update_p(const CpuExecutor& exec, index_t n, const VT* r, const VT* v, VT* p,
                       StepContext ctx);
template <class VT>
void bicgstab_update_p(const CudaExecutor& exec, index_t n, const VT* r, const VT* v, VT* p,
                       StepContext ctx);

/// α = ρ / (r̂, v)                                                   2 passes
template <class VT>
void bicgstab_alpha(const CpuExecutor& exec, index_t n, const VT* r_hat, const VT* v,
                    StepContext ctx);
template <class VT>
void bicgstab_alpha(const CudaExecutor& exec, index_t n, const VT* r_hat, const VT* v,
                    StepContext ctx);

/// s = r − α v                                                      3 passes
template <class VT>
void bicgstab_update_s(const CpuExecutor& exec, index_t n, const VT* r, const VT* v, VT* s,
                       StepContext ctx);
template <class VT>
void bicgstab_update_s(const CudaExecutor& exec, index_t n, const VT* r, const VT* v, VT* s,
                       StepContext ctx);

/// (t, s), (t, t), (s, s) in one reduction: the half-step test        2 passes
/// (‖s‖ ≤ tol: ω = 0) and ω = (t, s) / (t, t)
template <class VT>
void bicgstab_omega(const CpuExecutor& exec, index_t n, const VT* t, const VT* s, StepContext ctx);
template <class VT>
void bicgstab_omega(const CudaExecutor& exec, index_t n, const VT* t, const VT* s, StepContext ctx);

/// x += α p̂ + ω ŝ;  r = s − ω t;  with (r̂, r) and (r, r)
/// 8 passes (7 when ŝ is s, i.e. no preconditioner; the ŝ term is skipped when ω = 0)
template <class VT>
void bicgstab_update_xr(const CpuExecutor& exec, index_t n, const VT* p_hat, const VT* s_hat,
                        const VT* s, const VT* t, const VT* r_hat, VT* x, VT* r, StepContext ctx);
template <class VT>
void bicgstab_update_xr(const CudaExecutor& exec, index_t n, const VT* p_hat, const VT* s_hat,
                        const VT* s, const VT* t, const VT* r_hat, VT* x, VT* r, StepContext ctx);

// ---- steps whose dot products came with the product (Operator::apply_fused_dots) --------
// `partials`: the product's count × parts partial sums in the executor's memory, sum k at
// partials[k * parts .. (k + 1) * parts). Each step adds them in order (over the processes
// with ctx.reducer, as the step it replaces) and runs the same finalize as that step; no
// vector is read.                                                   0 passes

/// α = ρ / (r̂, v) from the partials of (r̂, v) (v = A p̂ fused with count 1, w = r̂)
void bicgstab_alpha_partials(const CpuExecutor& exec, index_t parts, const double* partials,
                             StepContext ctx);
void bicgstab_alpha_partials(const CudaExecutor& exec, index_t parts, const double* partials,
                             StepContext ctx);

/// The ω step (half-step test, ω) from the partials of (t, s), (t, t), (s, s)
/// (t = A ŝ fused with count 3, w = s)
void bicgstab_omega_partials(const CpuExecutor& exec, index_t parts, const double* partials,
                             StepContext ctx);
void bicgstab_omega_partials(const CudaExecutor& exec, index_t parts, const double* partials,
                             StepContext ctx);

/// CG α = ρ / (p, q) from the partials of (p, q) (q = A p fused with count 1, w = p)
void cg_alpha_partials(const CpuExecutor& exec, index_t parts, const double* partials,
                       StepContext ctx);
void cg_alpha_partials(const CudaExecutor& exec, index_t parts, const double* partials,
                       StepContext ctx);

// ---- CG (preconditioned) --------------------------------------------------------------

/// (b, b) and (r, r); then krylov::init_finalize.                    2 passes
template <class VT>
void cg_init(const CpuExecutor& exec, index_t n, const VT* b, const VT* r, StopParams params,
             StepContext ctx);
template <class VT>
void cg_init(const CudaExecutor& exec, index_t n, const VT* b, const VT* r, StopParams params,
             StepContext ctx);

/// p = z with ρ = (r, z)                                             3 passes
template <class VT>
void cg_start(const CpuExecutor& exec, index_t n, const VT* r, const VT* z, VT* p, StepContext ctx);
template <class VT>
void cg_start(const CudaExecutor& exec, index_t n, const VT* r, const VT* z, VT* p,
              StepContext ctx);

/// α = ρ / (p, q), q = A p                                           2 passes
template <class VT>
void cg_alpha(const CpuExecutor& exec, index_t n, const VT* p, const VT* q, StepContext ctx);
template <class VT>
void cg_alpha(const CudaExecutor& exec, index_t n, const VT* p, const VT* q, StepContext ctx);

/// x += α p;  r −= α q;  with (r, r) (and, without preconditioner, β = (r,r)/ρ)   6 passes
template <class VT>
void cg_update_xr(const CpuExecutor& exec, index_t n, const VT* p, const VT* q, VT* x, VT* r,
                  bool identity_pc, StepContext ctx);
template <class VT>
void cg_update_xr(const CudaExecutor& exec, index_t n, const VT* p, const VT* q, VT* x, VT* r,
                  bool identity_pc, StepContext ctx);

/// β = (r, z) / ρ, ρ = (r, z)  (with a preconditioner only)          2 passes
template <class VT>
void cg_beta(const CpuExecutor& exec, index_t n, const VT* r, const VT* z, StepContext ctx);
template <class VT>
void cg_beta(const CudaExecutor& exec, index_t n, const VT* r, const VT* z, StepContext ctx);

/// p = z + β p                                                       3 passes
template <class VT>
void cg_update_p(const CpuExecutor& exec, index_t n, const VT* z, VT* p, StepContext ctx);
template <class VT>
void cg_update_p(const CudaExecutor& exec, index_t n, const VT* z, VT* p, StepContext ctx);

// ---- LSQR and MLEM / OSEM (solver/lsqr, solver/mlem) -----------------------------------
// Plain (not gated by state->stop): those solvers keep their scalars on the host. A result
// goes to state->scratch[slot] (slot in [0, 4)) or, for the log-likelihood, to
// ctx.history[index]; nothing waits for the executor.

/// state->scratch[slot] = Σ x_i (accumulated in double)                 1 pass
template <class VT>
void sum(const CpuExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot);
template <class VT>
void sum(const CudaExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot);

/// state->scratch[slot] = #{i : x_i < 0 or x_i is NaN} (as a double)     1 pass
template <class VT>
void count_negative(const CpuExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot);
template <class VT>
void count_negative(const CudaExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot);

/// LSQR's x and w update, with the norm the next iteration's cond(A) estimate needs:
///     x += t1 w  (skipped when x == nullptr);   w = s v + t2 w;   scratch[slot] = ‖w‖²
/// w is not read when x == nullptr and t2 == 0 (the initial w = v / α).
/// 5 passes (x, w, v read; x, w written); 2 passes for the initial w.
template <class VT>
void lsqr_update_xw(const CpuExecutor& exec, index_t n, VT t1, VT t2, VT s, const VT* v, VT* w,
                    VT* x, StepContext ctx, int slot);
template <class VT>
void lsqr_update_xw(const CudaExecutor& exec, index_t n, VT t1, VT t2, VT s, const VT* v, VT* w,
                    VT* x, StepContext ctx, int slot);

/// MLEM correlation fused with the Poisson log-likelihood of the projection q = A f:
///     c_i = g_i / q_i  where q_i > 0, else 0        (0/0 = 0; an empty row gives 0)
///     L   = Σ_{q_i > 0} (g_i log q_i − q_i)         (g_i = 0: −q_i; q_i = 0 adds nothing)
/// c may alias q; c == nullptr: only L. ctx.history[index] = L unless index < 0.
/// 3 passes (g, q read; c written); 2 without c.
template <class VT>
void mlem_correlate(const CpuExecutor& exec, index_t m, const VT* g, const VT* q, VT* c,
                    StepContext ctx, int index);
template <class VT>
void mlem_correlate(const CudaExecutor& exec, index_t m, const VT* g, const VT* q, VT* c,
                    StepContext ctx, int index);

/// MLEM sensitivity: inv_norm_j = 1 / norm_j where norm_j > 0, else 0 (inv_norm may alias
/// norm); when f != nullptr also the initial image f_j = f0 where norm_j > 0, else 0.
/// 2-3 passes.
template <class VT>
void mlem_sensitivity(const CpuExecutor& exec, index_t n, const VT* norm, VT* inv_norm, VT* f,
                      VT f0);
template <class VT>
void mlem_sensitivity(const CudaExecutor& exec, index_t n, const VT* norm, VT* inv_norm, VT* f,
                      VT f0);

/// MLEM update after the back projection b = Aᵀ c:
///     f_j = f_j · b_j · inv_norm_j  where inv_norm_j != 0, else f_j unchanged
/// (a voxel no row of this subset sees keeps its value).             4 passes
template <class VT>
void mlem_update(const CpuExecutor& exec, index_t n, const VT* b, const VT* inv_norm, VT* f);
template <class VT>
void mlem_update(const CudaExecutor& exec, index_t n, const VT* b, const VT* inv_norm, VT* f);

}  // namespace heptane::kernels
