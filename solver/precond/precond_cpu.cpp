// Preconditioner kernels on the CPU (OpenMP).
#include "solver/precond/precond_kernels.hpp"

#include <cstdint>
#include <vector>

namespace heptane::kernels {

namespace {
/// Below this many rows a loop runs on one thread (see vector_cpu.cpp).
constexpr index_t parallel_min = 1 << 15;
}  // namespace

template <class VT>
void diag_scale(const CpuExecutor&, index_t n, const VT* d, const VT* r, VT* z)
{
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) z[i] = d[i] * r[i];
}

template <class VT>
void block_diag_apply(const CpuExecutor&, index_t nblocks, index_t nc, const VT* binv, const VT* r,
                      VT* z)
{
    const std::size_t nc2 = std::size_t(nc) * nc;
#pragma omp parallel for schedule(static) if (nblocks * nc >= parallel_min)
    for (index_t c = 0; c < nblocks; ++c) {
        const VT* b = binv + nc2 * c;
        const VT* rc = r + std::size_t(c) * nc;
        VT* zc = z + std::size_t(c) * nc;
        for (index_t a = 0; a < nc; ++a) {
            VT sum = 0;
            for (index_t k = 0; k < nc; ++k) sum += b[a * nc + k] * rc[k];
            zc[a] = sum;
        }
    }
}

namespace {
/// One block row of a triangular solve (see precond_kernels.hpp).
template <class VT>
inline void triangular_row(const TriangularFactor<VT>& f, index_t i, VT* in, VT* out)
{
    const index_t nc = f.nc;
    const std::size_t nc2 = std::size_t(nc) * nc;
    VT* w = in + std::size_t(i) * nc;
    for (offset_t k = f.row_ptr[i]; k < f.row_ptr[i + 1]; ++k) {
        const VT* blk = f.val + nc2 * std::size_t(k);
        const VT* xj = out + std::size_t(f.col[k]) * nc;
        for (index_t a = 0; a < nc; ++a) {
            VT sum = 0;
            for (index_t b = 0; b < nc; ++b) sum += blk[a * nc + b] * xj[b];
            w[a] -= sum;
        }
    }
    VT* zi = out + std::size_t(i) * nc;
    if (!f.diag_inv) {
        if (zi != w)
            for (index_t a = 0; a < nc; ++a) zi[a] = w[a];
        return;
    }
    const VT* d = f.diag_inv + nc2 * std::size_t(i);
    for (index_t a = 0; a < nc; ++a) {
        VT sum = 0;
        for (index_t b = 0; b < nc; ++b) sum += d[a * nc + b] * w[b];
        zi[a] = sum;
    }
}
}  // namespace

template <class VT>
void triangular_solve(const CpuExecutor&, const TriangularFactor<VT>& f, VT* in, VT* out)
{
    // The lower solve reads finished y_j from `out`: run it on `out` from the start.
    if (!f.diag_inv && in != out) {
        const std::size_t n = std::size_t(f.block_rows) * f.nc;
#pragma omp parallel for schedule(static) if (n >= std::size_t(parallel_min))
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
        in = out;
    }
    for (index_t l = 0; l < f.levels; ++l) {
        const index_t begin = f.level_ptr[l], end = f.level_ptr[l + 1];
        // small levels run on one thread: a parallel region costs more than their work
#pragma omp parallel for schedule(static) if (std::int64_t(end - begin) * f.nc >= 4096)
        for (index_t q = begin; q < end; ++q) triangular_row(f, f.level_rows[q], in, out);
    }
}

template <class VT>
void multicolor_solve(const CpuExecutor&, const MulticolorFactor<VT>& f, const VT* r, VT* y, VT* z)
{
    const index_t nc = f.nc;
    const std::size_t nc_s = std::size_t(nc);
    for (int pass = 0; pass < 2; ++pass) {
        const bool lower = pass == 0;
        const ColorTriangle<VT>& t = lower ? f.lower : f.upper;
        for (index_t step = 0; step < f.colors; ++step) {
            const index_t c = lower ? step : f.colors - 1 - step;
            const index_t p0 = f.color_ptr[c], rows_c = f.color_ptr[c + 1] - p0;
            const std::size_t rows_cs = std::size_t(rows_c) * nc_s;
            const index_t width = t.width[c];
            const index_t* col = t.col + t.col_off[c];
            const VT* val = t.val + t.val_off[c];
            const VT* dinv = lower ? nullptr : f.diag_inv + std::size_t(p0) * nc_s * nc_s;
#pragma omp parallel if (std::int64_t(rows_cs) >= 4096)
            {
                std::vector<VT> w(nc_s);
#pragma omp for schedule(static)
                for (index_t li = 0; li < rows_c; ++li) {
                    const index_t i = p0 + li;
                    const std::size_t s0 = std::size_t(li) * nc_s;
                    const VT* src =
                        lower ? r + std::size_t(f.perm[i]) * nc_s : y + std::size_t(i) * nc_s;
                    for (index_t a = 0; a < nc; ++a) w[std::size_t(a)] = src[a];
                    for (index_t k = 0; k < width; ++k) {
                        const index_t j =
                            col[std::size_t(k) * std::size_t(rows_c) + std::size_t(li)];
                        if (j < 0) break;
                        const VT* xj = y + std::size_t(j) * nc_s;
                        for (index_t b = 0; b < nc; ++b) {
                            const VT* v =
                                val + (std::size_t(k) * nc_s + std::size_t(b)) * rows_cs + s0;
                            for (index_t a = 0; a < nc; ++a) w[std::size_t(a)] -= v[a] * xj[b];
                        }
                    }
                    VT* yi = y + std::size_t(i) * nc_s;
                    if (lower) {
                        for (index_t a = 0; a < nc; ++a) yi[a] = w[std::size_t(a)];
                        continue;
                    }
                    VT* zi = z + std::size_t(f.perm[i]) * nc_s;
                    for (index_t a = 0; a < nc; ++a) {
                        VT sum = 0;
                        for (index_t b = 0; b < nc; ++b)
                            sum += dinv[std::size_t(b) * rows_cs + s0 + std::size_t(a)] *
                                   w[std::size_t(b)];
                        yi[a] = sum;
                        zi[a] = sum;
                    }
                }
            }
        }
    }
}

#define HEPTANE_INSTANTIATE(VT)                                                                    \
    template void diag_scale<VT>(const CpuExecutor&, index_t, const VT*, const VT*, VT*);          \
    template void block_diag_apply<VT>(const CpuExecutor&, index_t, index_t, const VT*, const VT*, \
                                       VT*);                                                       \
    template void triangular_solve<VT>(const CpuExecutor&, const TriangularFactor<VT>&, VT*, VT*); \
    template void multicolor_solve<VT>(const CpuExecutor&, const MulticolorFactor<VT>&, const VT*, \
                                       VT*, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
