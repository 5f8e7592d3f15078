// Preconditioner kernels on the CPU (OpenMP).
#include "solver/precond/precond_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "solver/precond/block_kernels.hpp"

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

namespace {
template <int NC, class VT>
void block_diag_apply_nc(index_t nblocks, index_t nc_rt, const VT* binv, const VT* r, VT* z)
{
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
#pragma omp parallel for schedule(static) if (nblocks * nc >= parallel_min)
    for (index_t c = 0; c < nblocks; ++c) {
        const VT* b = binv + nc2 * std::size_t(c);
        const VT* rc = r + std::size_t(c) * std::size_t(nc);
        VT* zc = z + std::size_t(c) * std::size_t(nc);
        for (index_t a = 0; a < nc; ++a) {
            VT sum = 0;
            for (index_t k = 0; k < nc; ++k) sum += b[a * nc + k] * rc[k];
            zc[a] = sum;
        }
    }
}
}  // namespace

template <class VT>
void block_diag_apply(const CpuExecutor& exec, index_t nblocks, index_t nc, const VT* binv,
                      const VT* r, VT* z)
{
    // the block size at compile time for the common ones: the small loops unrolled
    switch (nc) {
        case 1:
            return diag_scale(exec, nblocks, binv, r, z);
        case 2:
            return block_diag_apply_nc<2>(nblocks, nc, binv, r, z);
        case 3:
            return block_diag_apply_nc<3>(nblocks, nc, binv, r, z);
        case 4:
            return block_diag_apply_nc<4>(nblocks, nc, binv, r, z);
        default:
            return block_diag_apply_nc<0>(nblocks, nc, binv, r, z);
    }
}

namespace {
/// The triangular solves in the natural row order: ascending for L (its columns are j < i),
/// descending for U (j > i); see precond_kernels.hpp. Row i reads row i of `in` and the
/// finished rows j of `out` and writes only row i of `out`.
///
/// The rows form a chain (row i needs the row solved just before it, i − 1 for L, i + 1 for
/// U, wherever the factor couples them, as it does on a grid), so the time per row is the
/// latency from one row's result to the next, not the bandwidth. Two things shorten it:
///   - the products are subtracted from w one by one, the neighbour's block last (for L the
///     last stored block, for U the first: U's blocks are visited backwards), so the chain is
///     one multiply-subtract (plus D⁻¹ for U), as in PETSc's MatSolve, not a sum of products
///     subtracted at the end;
///   - the neighbour's result is taken from registers (`prev`), not reloaded from `out`
///     right after it was stored.
/// Same products in the same order either way: `prev` holds the bits just stored.
template <int NC, bool Lower, class VT>
void triangular_sweep_fixed(const TriangularFactor<VT>& f, const VT* in, VT* out)
{
    constexpr std::size_t nc = NC, nc2 = nc * nc;
    const index_t nb = f.block_rows;
    VT prev[NC] = {};  // the result of the row solved just before
    for (index_t step = 0; step < nb; ++step) {
        const index_t i = Lower ? step : nb - 1 - step;
        const index_t neighbour = Lower ? i - 1 : i + 1;
        VT w[NC];
        const VT* ri = in + std::size_t(i) * nc;
        for (std::size_t a = 0; a < nc; ++a) w[a] = ri[a];
        const offset_t k0 = f.row_ptr[i], k1 = f.row_ptr[i + 1], len = k1 - k0;
        for (offset_t q = 0; q + 1 < len; ++q) {  // all blocks but the last visited
            const offset_t k = Lower ? k0 + q : k1 - 1 - q;
            const VT* blk = f.val + nc2 * std::size_t(k);
            const VT* xj = out + std::size_t(f.col[k]) * nc;
            for (std::size_t a = 0; a < nc; ++a)
                for (std::size_t b = 0; b < nc; ++b) w[a] -= blk[a * nc + b] * xj[b];
        }
        if (len > 0) {  // the last one: the neighbour's block when the factor has one
            const offset_t k = Lower ? k1 - 1 : k0;
            const VT* blk = f.val + nc2 * std::size_t(k);
            const index_t j = f.col[k];
            if (step > 0 && j == neighbour) {
                for (std::size_t a = 0; a < nc; ++a)
                    for (std::size_t b = 0; b < nc; ++b) w[a] -= blk[a * nc + b] * prev[b];
            } else {
                const VT* xj = out + std::size_t(j) * nc;
                for (std::size_t a = 0; a < nc; ++a)
                    for (std::size_t b = 0; b < nc; ++b) w[a] -= blk[a * nc + b] * xj[b];
            }
        }
        VT* zi = out + std::size_t(i) * nc;
        if (Lower) {
            for (std::size_t a = 0; a < nc; ++a) zi[a] = prev[a] = w[a];
            continue;
        }
        const VT* d = f.diag_inv + nc2 * std::size_t(i);
        for (std::size_t a = 0; a < nc; ++a) {
            VT sum = 0;
            for (std::size_t b = 0; b < nc; ++b) sum += d[a * nc + b] * w[b];
            zi[a] = sum;
        }
        for (std::size_t a = 0; a < nc; ++a) prev[a] = zi[a];
    }
}

/// Any block size (f.nc at run time): the same order of the products, w in `scratch`.
template <bool Lower, class VT>
void triangular_sweep_any(const TriangularFactor<VT>& f, const VT* in, VT* out)
{
    const index_t nb = f.block_rows, nc = f.nc;
    const std::size_t ncs = std::size_t(nc), nc2 = ncs * ncs;
    std::vector<VT> scratch(ncs);
    VT* w = scratch.data();
    for (index_t step = 0; step < nb; ++step) {
        const index_t i = Lower ? step : nb - 1 - step;
        const VT* ri = in + std::size_t(i) * ncs;
        for (index_t a = 0; a < nc; ++a) w[a] = ri[a];
        const offset_t k0 = f.row_ptr[i], k1 = f.row_ptr[i + 1];
        for (offset_t q = 0; q < k1 - k0; ++q) {
            const offset_t k = Lower ? k0 + q : k1 - 1 - q;
            const VT* blk = f.val + nc2 * std::size_t(k);
            const VT* xj = out + std::size_t(f.col[k]) * ncs;
            for (index_t a = 0; a < nc; ++a)
                for (index_t b = 0; b < nc; ++b) w[a] -= blk[a * nc + b] * xj[b];
        }
        VT* zi = out + std::size_t(i) * ncs;
        if (Lower) {
            for (index_t a = 0; a < nc; ++a) zi[a] = w[a];
            continue;
        }
        const VT* d = f.diag_inv + nc2 * std::size_t(i);
        for (index_t a = 0; a < nc; ++a) {
            VT sum = 0;
            for (index_t b = 0; b < nc; ++b) sum += d[a * nc + b] * w[b];
            zi[a] = sum;
        }
    }
}

template <int NC, class VT>
void triangular_sweep(const TriangularFactor<VT>& f, const VT* in, VT* out)
{
    if constexpr (NC > 0) {
        if (!f.diag_inv)
            triangular_sweep_fixed<NC, true>(f, in, out);
        else
            triangular_sweep_fixed<NC, false>(f, in, out);
    } else {
        if (!f.diag_inv)
            triangular_sweep_any<true>(f, in, out);
        else
            triangular_sweep_any<false>(f, in, out);
    }
}
}  // namespace

// One thread, natural row order; the level schedule (f.level_rows, f.level_ptr), which the
// GPU needs, is not used here. On the 2-core development host the level schedule shared by
// 2 threads was 2-2.7x slower per apply than one thread in natural order (BILU(0) at
// 64 x 64 x 32, Nc = 3, and ILU(0) at 128 x 128 x 64, Nc = 1; docs/benchmarks.md, "CPU:
// heptane vs PETSc KSPBCGS per iteration"). A level is a grid wavefront: its rows are
// scattered through memory (no locality, no prefetch), and rows i and i + 1, adjacent in
// memory, lie in consecutive levels and are often solved by different threads, so the cache
// lines of `out` move between cores at every level. The threaded alternative on the CPU is
// the multi-colour ILU(0) (multicolor_solve).
template <class VT>
void triangular_solve(const CpuExecutor&, const TriangularFactor<VT>& f, VT* in, VT* out)
{
    switch (f.nc) {
        case 1:
            return triangular_sweep<1>(f, in, out);
        case 2:
            return triangular_sweep<2>(f, in, out);
        case 3:
            return triangular_sweep<3>(f, in, out);
        case 4:
            return triangular_sweep<4>(f, in, out);
        default:
            return triangular_sweep<0>(f, in, out);
    }
}

template <class VT>
void multicolor_solve(const CpuExecutor&, const MulticolorFactor<VT>& f, const VT* r, VT* y, VT* z)
{
    const index_t nc = f.nc;
    const std::size_t nc_s = std::size_t(nc);
    for_each_color(f, [&](bool lower, const ColorTriangle<VT>& t, index_t c, index_t p0,
                          index_t rows_c) {
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
                    const index_t j = col[std::size_t(k) * std::size_t(rows_c) + std::size_t(li)];
                    if (j < 0) break;
                    const VT* xj = y + std::size_t(j) * nc_s;
                    for (index_t b = 0; b < nc; ++b) {
                        const VT* v = val + (std::size_t(k) * nc_s + std::size_t(b)) * rows_cs + s0;
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
    });
}

namespace {
template <int NC, class IT, class VT>
index_t block_diag_invert_nc(index_t nblocks, index_t nc_rt, const IT* map, const double* values,
                             VT* inv)
{
    const std::size_t nc = NC > 0 ? std::size_t(NC) : std::size_t(nc_rt);
    constexpr index_t none = std::numeric_limits<index_t>::max();
    index_t bad = none;
#pragma omp parallel reduction(min : bad) if (nblocks * index_t(nc) >= parallel_min)
    {
        std::vector<double> scratch(3 * nc * nc);
#pragma omp for schedule(static)
        for (index_t c = 0; c < nblocks; ++c)
            if (!detail::invert_gathered_block<NC>(c, index_t(nc), map, values, inv,
                                                   scratch.data()))
                bad = std::min(bad, c);
    }
    return bad == none ? -1 : bad;
}
}  // namespace

template <class IT, class VT>
index_t block_diag_invert(const CpuExecutor&, index_t nblocks, index_t nc, const IT* map,
                          const double* values, VT* inv, index_t*)
{
    index_t bad = -1;
    detail::dispatch_block_size(nc, [&](auto NC) {
        bad = block_diag_invert_nc<decltype(NC)::value>(nblocks, nc, map, values, inv);
    });
    return bad;
}

template <class RP, class IT>
offset_t block_diag_map(const CpuExecutor&, index_t nblocks, index_t nc, const RP* row_ptr,
                        const index_t* col, IT* map)
{
    const index_t rows = nblocks * nc;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    offset_t repeats = 0;
#pragma omp parallel for schedule(static) reduction(+ : repeats) if (rows >= parallel_min)
    for (index_t r = 0; r < rows; ++r) {
        const index_t c = r / nc;
        IT* m = map + std::size_t(c) * nc2 + std::size_t(r % nc) * std::size_t(nc);
        for (index_t b = 0; b < nc; ++b) m[b] = IT(-1);
        for (offset_t k = row_ptr[r]; k < offset_t(row_ptr[r + 1]); ++k) {
            const index_t j = col[k];
            if (k > offset_t(row_ptr[r]) && j == col[k - 1]) ++repeats;
            if (j < 0 || j >= rows || j / nc != c) continue;
            if (m[j % nc] < 0) m[j % nc] = IT(k);
        }
    }
    return repeats;
}

void widen_row_ptr(const CpuExecutor&, index_t n, const index_t* in, offset_t* out)
{
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i <= n; ++i) out[i] = offset_t(in[i]);
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

#define HEPTANE_INSTANTIATE(IT, VT)                                                             \
    template index_t block_diag_invert<IT, VT>(const CpuExecutor&, index_t, index_t, const IT*, \
                                               const double*, VT*, index_t*);
HEPTANE_INDEX_VALUE_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

#define HEPTANE_INSTANTIATE(RP, IT)                                                           \
    template offset_t block_diag_map<RP, IT>(const CpuExecutor&, index_t, index_t, const RP*, \
                                             const index_t*, IT*);
HEPTANE_BLOCK_DIAG_MAP_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
