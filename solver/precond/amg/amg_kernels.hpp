// Multigrid and CPR kernels, declared once; amg_cpu.cpp (OpenMP) and amg.cu (CUDA) implement
// them side by side. VT = double and float. Vectors live in the executor's memory.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// One smoothing step: d = a·d + b·(dinv ∘ r); x += d, or x = d where `fresh` (x was 0:
/// the cycle's first step on a level, which then neither fills x with zeros nor reads it).
/// With a = 0, d is only written (it may hold garbage). A Jacobi sweep is (a, b) = (0, ω); a
/// Chebyshev step (ρ_k ρ_{k−1}, 2ρ_k/δ) (solver/precond/amg/amg.cpp). Traffic: 5 passes (3
/// with a = 0, 1 fewer when fresh).
template <class VT>
void smooth_step(const CpuExecutor& exec, index_t n, VT a, VT b, const VT* dinv, const VT* r, VT* d,
                 VT* x, bool fresh = false);
template <class VT>
void smooth_step(const CudaExecutor& exec, index_t n, VT a, VT b, const VT* dinv, const VT* r,
                 VT* d, VT* x, bool fresh = false);

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

/// A BDIA-GH matrix of `cells` Nc × Nc block rows (formats/bdia/bdia.hpp: element diagonal
/// k = q·nc + s of block offset offsets[q] is the plane data[k·rows, (k + 1)·rows), rows =
/// cells·nc) as CPR's fused second stage reads it: only the planes of column p of each block.
template <class MT>
struct CprBdia {
    static constexpr int max_offsets = 32;
    index_t cells = 0, nc = 1, p = 0, nq = 0;
    index_t offsets[max_offsets] = {};
    const MT* data = nullptr;
};

/// CPR's second stage from x_p, on a BDIA-GH A, one pass (the pressure correction E x_p is
/// zero outside the pressure unknowns, so A E x_p reads only the nq planes of column p, 1/nc
/// of A):  t = r − A E x_p;  out = E x_p + binv ∘ t  (binv: the nc × nc row-major inverses
/// of the diagonal blocks, block Jacobi's M₂), or out = t where binv is null (another M₂
/// then applies to it). Replaces the prolongation, the full product, M₂ and the sum.
/// Traffic (binv given): A/nc + r + x_p + binv + out, against the unfused A + 6 vectors
/// + binv. nc <= 8 on CUDA (NotSupported otherwise).
template <class MT, class VT>
void cpr_stage_two(const CpuExecutor& exec, const CprBdia<MT>& a, const VT* xp, const VT* r,
                   const VT* binv, VT* out);
template <class MT, class VT>
void cpr_stage_two(const CudaExecutor& exec, const CprBdia<MT>& a, const VT* xp, const VT* r,
                   const VT* binv, VT* out);

/// cpr_stage_two for cell I (nc <= 8): the CPU's loop body; the CUDA kernel (amg.cu) forms the
/// same sums in the same order with a thread per row.
template <class MT, class VT>
HEPTANE_HD inline void cpr_stage_two_cell(const CprBdia<MT>& a, index_t I, const VT* xp,
                                          const VT* r, const VT* binv, VT* out)
{
    const index_t nc = a.nc;
    const long long rows = static_cast<long long>(a.cells) * nc;
    const long long r0 = static_cast<long long>(I) * nc;
    VT t[8];
    for (index_t i = 0; i < nc; ++i) t[i] = r[r0 + i];
    for (index_t q = 0; q < a.nq; ++q) {
        const long long J = static_cast<long long>(I) + a.offsets[q];
        if (J < 0 || J >= a.cells) continue;
        const VT x = xp[J];
        const MT* plane = a.data + (static_cast<long long>(q) * nc + a.p) * rows + r0;
        for (index_t i = 0; i < nc; ++i) t[i] -= VT(plane[i]) * x;
    }
    if (!binv) {
        for (index_t i = 0; i < nc; ++i) out[r0 + i] = t[i];
        return;
    }
    const VT* b = binv + r0 * nc;
    for (index_t i = 0; i < nc; ++i) {
        VT s = i == a.p ? xp[I] : VT(0);
        for (index_t j = 0; j < nc; ++j) s += b[i * nc + j] * t[j];
        out[r0 + i] = s;
    }
}

/// CPR's setup on the executor, from the scalar CSR (row_ptr, col, val) of an Nc × Nc block
/// matrix of ncells·nc rows in the executor's memory (cpr_cell.hpp says what is computed).
/// cpr_pressure_pattern: ap_ptr (ncells + 1 entries) = the row pointers of the pressure
/// matrix A_p (one entry per block column of a cell, its diagonal block always); returns the
/// defects of the input (bit 0: a row's columns not increasing; bit 1: a column outside
/// [0, ncells·nc)), 0 when there are none (otherwise ap_ptr means nothing and the caller
/// takes the host path, whose messages say what is wrong). Traffic: the pattern twice.
int cpr_pressure_pattern(const CpuExecutor& exec, index_t ncells, index_t nc,
                         const offset_t* row_ptr, const index_t* col, offset_t* ap_ptr);
int cpr_pressure_pattern(const CudaExecutor& exec, index_t ncells, index_t nc,
                         const offset_t* row_ptr, const index_t* col, offset_t* ap_ptr);

/// cpr_pressure_values: the quasi-IMPES weights w (ncells·nc, as VT) and A_p's columns and
/// values (ap_col, ap_val: ap_ptr[ncells] entries) on a defect-free input and its ap_ptr;
/// returns the number of cells whose diagonal block is singular (their weights are e_p).
/// The CUDA one takes nc <= 8 (NotSupported otherwise). Bit for bit the host reference.
template <class VT>
index_t cpr_pressure_values(const CpuExecutor& exec, index_t ncells, index_t nc, index_t p,
                            const offset_t* row_ptr, const index_t* col, const double* val,
                            const offset_t* ap_ptr, index_t* ap_col, double* ap_val, VT* w);
template <class VT>
index_t cpr_pressure_values(const CudaExecutor& exec, index_t ncells, index_t nc, index_t p,
                            const offset_t* row_ptr, const index_t* col, const double* val,
                            const offset_t* ap_ptr, index_t* ap_col, double* ap_val, VT* w);

/// A 64-bit fingerprint of a CSR pattern of `rows` rows in the executor's memory (sizes, row
/// lengths, columns and their positions: each row's terms mixed by splitmix64, the rows
/// combined by XOR), the same on every executor: a values-only update compares it instead
/// of keeping a copy of the pattern; two different patterns share one with probability 2⁻⁶⁴.
std::uint64_t csr_pattern_fingerprint(const CpuExecutor& exec, index_t rows,
                                      const offset_t* row_ptr, const index_t* col);
std::uint64_t csr_pattern_fingerprint(const CudaExecutor& exec, index_t rows,
                                      const offset_t* row_ptr, const index_t* col);

/// Gershgorin's bound on λ_max(D⁻¹A), D = diag(A): max_i Σ_j |a_ij| / |a_ii| over the rows
/// of CSR (row_ptr, col, val) in the executor's memory (0 for n = 0; +inf where a row has no
/// nonzero diagonal). One pass over the matrix.
double gershgorin_bound(const CpuExecutor& exec, index_t n, const offset_t* row_ptr,
                        const index_t* col, const double* val);
double gershgorin_bound(const CudaExecutor& exec, index_t n, const offset_t* row_ptr,
                        const index_t* col, const double* val);

/// Row i's term of gershgorin_bound.
HEPTANE_HD inline double gershgorin_row(index_t i, const offset_t* row_ptr, const index_t* col,
                                        const double* val)
{
    double sum = 0, diag = 0;
    for (offset_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
        sum += fabs(val[k]);
        if (col[k] == i) diag += val[k];
    }
    return diag != 0 ? sum / fabs(diag) : (sum != 0 ? HUGE_VAL : 0.0);
}

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

/// One row's term of csr_pattern_fingerprint before the XOR over the rows.
HEPTANE_HD inline unsigned long long fingerprint_row(index_t i, const offset_t* row_ptr,
                                                     const index_t* col)
{
    const offset_t lo = row_ptr[i], hi = row_ptr[i + 1];
    unsigned long long x = start_hash(static_cast<unsigned long long>(i) ^
                                      (static_cast<unsigned long long>(hi - lo) << 32));
    for (offset_t k = lo; k < hi; ++k)
        x = start_hash(x ^ (static_cast<unsigned long long>(static_cast<std::uint32_t>(col[k])) |
                            (static_cast<unsigned long long>(k - lo) << 32)));
    return x;
}

/// csr_pattern_fingerprint from the XOR of the rows' terms.
inline std::uint64_t fingerprint_finish(unsigned long long rows_xor, index_t rows, offset_t nnz)
{
    return rows_xor ^ start_hash(static_cast<unsigned long long>(rows) ^
                                 (static_cast<unsigned long long>(nnz) << 20));
}

}  // namespace heptane::kernels
