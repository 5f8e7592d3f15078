// Multigrid and CPR kernels, declared once; amg_cpu.cpp (OpenMP) and amg.cu (CUDA) implement
// them side by side. VT = double and float. Vectors live in the executor's memory.
#pragma once

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// One smoothing step: d = a·d + b·(dinv ∘ r); x += d. With a = 0, d is only written (it
/// may hold garbage). A Jacobi sweep is (a, b) = (0, ω); a Chebyshev step (ρ_k ρ_{k−1},
/// 2ρ_k/δ) (solver/precond/amg/amg.cpp). Traffic: 5 passes (3 with a = 0).
template <class VT>
void smooth_step(const CpuExecutor& exec, index_t n, VT a, VT b, const VT* dinv, const VT* r, VT* d,
                 VT* x);
template <class VT>
void smooth_step(const CudaExecutor& exec, index_t n, VT a, VT b, const VT* dinv, const VT* r,
                 VT* d, VT* x);

/// x = Ainv b for a dense row-major n × n Ainv (the coarsest level).
template <class VT>
void dense_apply(const CpuExecutor& exec, index_t n, const VT* ainv, const VT* b, VT* x);
template <class VT>
void dense_apply(const CudaExecutor& exec, index_t n, const VT* ainv, const VT* b, VT* x);

/// CPR restriction to the pressure: rp_i = Σ_c w[i·nc + c] r[i·nc + c] (cells i < ncells).
template <class VT>
void cpr_restrict(const CpuExecutor& exec, index_t ncells, index_t nc, const VT* w, const VT* r,
                  VT* rp);
template <class VT>
void cpr_restrict(const CudaExecutor& exec, index_t ncells, index_t nc, const VT* w, const VT* r,
                  VT* rp);

/// CPR prolongation of the pressure: z[i·nc + c] = (c == p ? xp_i : 0).
template <class VT>
void cpr_prolong(const CpuExecutor& exec, index_t ncells, index_t nc, index_t p, const VT* xp,
                 VT* z);
template <class VT>
void cpr_prolong(const CudaExecutor& exec, index_t ncells, index_t nc, index_t p, const VT* xp,
                 VT* z);

/// The fixed pseudo-random start vector of the λ_max estimates, made where it is used (the
/// host's sequential generator and upload cost more than the estimate at 8 M rows):
///     v_i = 0.5 + u(i),  u(i) = (splitmix64(i) >> 11) · 2⁻⁵³ ∈ [0, 1)
/// the same on every executor (a counter-based hash: no state, any order).
template <class VT>
void start_vector(const CpuExecutor& exec, index_t n, VT* v);
template <class VT>
void start_vector(const CudaExecutor& exec, index_t n, VT* v);

/// splitmix64 of i, the hash start_vector draws from.
HEPTANE_HD inline constexpr unsigned long long start_hash(unsigned long long i)
{
    unsigned long long x = i + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace heptane::kernels
