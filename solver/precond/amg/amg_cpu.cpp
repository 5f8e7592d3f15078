// Multigrid and CPR kernels on the CPU (OpenMP); declared in amg_kernels.hpp.
#include "solver/precond/amg/amg_kernels.hpp"
#include "solver/precond/amg/amg_tail.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "solver/precond/amg/cpr_cell.hpp"

namespace heptane::kernels {

template <class VT>
void smooth_step(const CpuExecutor&, index_t n, VT a, VT b, const VT* dinv, const VT* r, VT* d,
                 VT* x, bool fresh)
{
    if (a == VT(0)) {
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < n; ++i) {
            d[i] = b * (dinv[i] * r[i]);
            x[i] = fresh ? d[i] : x[i] + d[i];
        }
    } else {
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < n; ++i) {
            d[i] = a * d[i] + b * (dinv[i] * r[i]);
            x[i] = fresh ? d[i] : x[i] + d[i];
        }
    }
}

template <class VT>
void dense_apply(const CpuExecutor&, index_t n, const VT* ainv, const VT* b, VT* x)
{
#pragma omp parallel for schedule(static) if (n > 256)
    for (index_t i = 0; i < n; ++i) {
        VT s = 0;
        const VT* row = ainv + static_cast<std::size_t>(i) * n;
        for (index_t j = 0; j < n; ++j) s += row[j] * b[j];
        x[i] = s;
    }
}

template <class VT>
void cpr_restrict(const CpuExecutor&, index_t ncells, index_t nc, const VT* w, const VT* r, VT* rp)
{
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < ncells; ++i) {
        VT s = 0;
        for (index_t c = 0; c < nc; ++c)
            s += w[static_cast<std::size_t>(i) * nc + c] * r[static_cast<std::size_t>(i) * nc + c];
        rp[i] = s;
    }
}

template <class VT>
void cpr_prolong(const CpuExecutor&, index_t ncells, index_t nc, index_t p, const VT* xp, VT* z)
{
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < ncells; ++i)
        for (index_t c = 0; c < nc; ++c)
            z[static_cast<std::size_t>(i) * nc + c] = c == p ? xp[i] : VT(0);
}

template <class MT, class VT>
void cpr_stage_two(const CpuExecutor&, const CprBdia<MT>& a, const VT* xp, const VT* r,
                   const VT* binv, VT* out)
{
    HEPTANE_ENSURE(a.nc >= 1 && a.nc <= 8 && a.nq <= CprBdia<MT>::max_offsets, NotSupported,
                   "CPR's fused second stage: block size " << a.nc << " (at most 8), " << a.nq
                                                           << " block offsets");
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < a.cells; ++i) cpr_stage_two_cell(a, i, xp, r, binv, out);
}

template void cpr_stage_two<double, double>(const CpuExecutor&, const CprBdia<double>&,
                                            const double*, const double*, const double*, double*);
template void cpr_stage_two<float, double>(const CpuExecutor&, const CprBdia<float>&, const double*,
                                           const double*, const double*, double*);
template void cpr_stage_two<float, float>(const CpuExecutor&, const CprBdia<float>&, const float*,
                                          const float*, const float*, float*);
template void cpr_stage_two<double, float>(const CpuExecutor&, const CprBdia<double>&, const float*,
                                           const float*, const float*, float*);

template <class VT>
void start_vector(const CpuExecutor&, index_t n, VT* v)
{
#pragma omp parallel for schedule(static) if (n > 32768)
    for (index_t i = 0; i < n; ++i)
        v[i] = VT(0.5 + double(start_hash(static_cast<unsigned long long>(i)) >> 11) * 0x1.0p-53);
}

int cpr_pressure_pattern(const CpuExecutor&, index_t ncells, index_t nc, const offset_t* row_ptr,
                         const index_t* col, offset_t* ap_ptr)
{
    const index_t n = ncells * nc;
    int defects = 0;
    ap_ptr[0] = 0;
#pragma omp parallel reduction(| : defects)
    {
        std::vector<offset_t> cur(static_cast<std::size_t>(nc));
#pragma omp for schedule(static)
        for (index_t i = 0; i < ncells; ++i) {
            const int d = detail::cpr_cell_defects(i, nc, n, row_ptr, col);
            defects |= d;
            ap_ptr[i + 1] = d ? 0 : detail::cpr_cell_count(i, nc, row_ptr, col, cur.data());
        }
    }
    for (index_t i = 0; i < ncells; ++i) ap_ptr[i + 1] += ap_ptr[i];
    return defects;
}

template <class VT>
index_t cpr_pressure_values(const CpuExecutor&, index_t ncells, index_t nc, index_t p,
                            const offset_t* row_ptr, const index_t* col, const double* val,
                            const offset_t* ap_ptr, index_t* ap_col, double* ap_val, VT* w)
{
    index_t singular = 0;
#pragma omp parallel reduction(+ : singular)
    {
        std::vector<offset_t> cur(static_cast<std::size_t>(nc));
        std::vector<double> work(3 * std::size_t(nc) * std::size_t(nc));
#pragma omp for schedule(static)
        for (index_t i = 0; i < ncells; ++i)
            if (!detail::cpr_cell_values(i, nc, p, row_ptr, col, val, ap_ptr, ap_col, ap_val, w,
                                         cur.data(), work.data()))
                ++singular;
    }
    return singular;
}

std::uint64_t csr_pattern_fingerprint(const CpuExecutor&, index_t rows, const offset_t* row_ptr,
                                      const index_t* col)
{
    unsigned long long h = 0;
#pragma omp parallel for schedule(static) reduction(^ : h)
    for (index_t i = 0; i < rows; ++i) h ^= fingerprint_row(i, row_ptr, col);
    return fingerprint_finish(h, rows, rows > 0 ? row_ptr[rows] : 0);
}

double gershgorin_bound(const CpuExecutor&, index_t n, const offset_t* row_ptr, const index_t* col,
                        const double* val)
{
    double bound = 0;
#pragma omp parallel for schedule(static) reduction(max : bound)
    for (index_t i = 0; i < n; ++i) bound = std::max(bound, gershgorin_row(i, row_ptr, col, val));
    return bound;
}

template <class VT>
void amg_tail(const CpuExecutor&, const AmgTail<VT>& g, const VT* b, VT* x)
{
    SerialTeam team;
    amg_tail_cycle(team, g, b, x);
}

#define HEPTANE_INSTANTIATE(VT)                                                                   \
    template void amg_tail<VT>(const CpuExecutor&, const AmgTail<VT>&, const VT*, VT*);           \
    template void start_vector<VT>(const CpuExecutor&, index_t, VT*);                             \
    template void smooth_step<VT>(const CpuExecutor&, index_t, VT, VT, const VT*, const VT*, VT*, \
                                  VT*, bool);                                                     \
    template void dense_apply<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*);        \
    template void cpr_restrict<VT>(const CpuExecutor&, index_t, index_t, const VT*, const VT*,    \
                                   VT*);                                                          \
    template void cpr_prolong<VT>(const CpuExecutor&, index_t, index_t, index_t, const VT*, VT*); \
    template index_t cpr_pressure_values<VT>(const CpuExecutor&, index_t, index_t, index_t,       \
                                             const offset_t*, const index_t*, const double*,      \
                                             const offset_t*, index_t*, double*, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
