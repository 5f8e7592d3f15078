// The out-of-core chunk kernels on the CPU (OpenMP over the chunk's rows), CSR and BDIA-GH
// chunks; A^T x scatters with atomics, as the in-core CSR kernel does.
#include "formats/outofcore/outofcore_kernels.hpp"

#include "core/parallel.hpp"

namespace heptane::kernels {

namespace {
/// row(i, k0, k1) for every row i of the chunk (its entries k0 .. k1), in parallel over rows.
template <class MT, class Row>
void each_row(const OocChunkView<MT>& c, Row&& row)
{
#pragma omp parallel for schedule(static, 512) if (c.rows >= kParallelMin)
    for (index_t i = 0; i < c.rows; ++i) row(i, c.row_ptr[i], c.row_ptr[i + 1]);
}

/// BDIA-GH chunk: row(i, k, column) for every valid slot k of every row i (zeros included).
template <class MT, class Slot>
void each_bdia_row(const OocChunkView<MT>& c, Slot&& slot)
{
#pragma omp parallel for schedule(static, 512) if (c.rows >= kParallelMin)
    for (index_t i = 0; i < c.rows; ++i) {
        const index_t r = c.row0 + i;
        const index_t base = r - r % c.nc;
        for (int q = 0; q < c.block_diagonals; ++q) {
            const index_t cb = base + index_t(c.offsets[q]) * c.nc;
            for (int s = 0; s < c.nc; ++s)
                if (cb + s >= 0 && cb + s < c.cols) slot(i, q * c.nc + s, cb + s);
        }
    }
}
}  // namespace

template <class MT, class VT>
void ooc_chunk_apply(const CpuExecutor&, const OocChunkView<MT>& c, VT alpha, const VT* x, VT beta,
                     VT* y)
{
    if (c.nc > 0) {
#pragma omp parallel for schedule(static, 512) if (c.rows >= kParallelMin)
        for (index_t i = 0; i < c.rows; ++i) {
            const index_t r = c.row0 + i;
            const index_t base = r - r % c.nc;
            VT sum = 0;
            for (int q = 0; q < c.block_diagonals; ++q) {
                const index_t cb = base + index_t(c.offsets[q]) * c.nc;
                for (int s = 0; s < c.nc; ++s)
                    if (cb + s >= 0 && cb + s < c.cols)
                        sum += VT(c.val[std::size_t(q * c.nc + s) * std::size_t(c.rows) + i]) *
                               x[cb + s];
            }
            y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
        }
        return;
    }
    each_row(c, [&](index_t i, std::uint32_t k0, std::uint32_t k1) {
        VT sum = 0;
        for (std::uint32_t k = k0; k < k1; ++k) sum += VT(c.val[k]) * x[c.col[k]];
        y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
    });
}

template <class MT, class VT>
void ooc_chunk_apply_transpose(const CpuExecutor&, const OocChunkView<MT>& c, VT alpha, const VT* x,
                               VT* y)
{
    if (c.nc > 0) {
        each_bdia_row(c, [&](index_t i, int k, index_t j) {
            const MT v = c.val[std::size_t(k) * std::size_t(c.rows) + i];
            if (v == MT(0)) return;
            const VT t = VT(v) * (alpha * x[i]);
#pragma omp atomic
            y[j] += t;
        });
        return;
    }
    each_row(c, [&](index_t i, std::uint32_t k0, std::uint32_t k1) {
        const VT xi = alpha * x[i];
        for (std::uint32_t k = k0; k < k1; ++k) {
            const VT t = VT(c.val[k]) * xi;
#pragma omp atomic
            y[c.col[k]] += t;
        }
    });
}

template <class VT>
void ooc_scale(const CpuExecutor&, index_t n, VT beta, VT* y)
{
    if (beta == VT(1)) return;
#pragma omp parallel for if (n >= kParallelMin)
    for (index_t j = 0; j < n; ++j) y[j] = beta == VT(0) ? VT(0) : beta * y[j];
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                              \
    template void ooc_chunk_apply<MT, VT>(const CpuExecutor&, const OocChunkView<MT>&, VT,       \
                                          const VT*, VT, VT*);                                   \
    template void ooc_chunk_apply_transpose<MT, VT>(const CpuExecutor&, const OocChunkView<MT>&, \
                                                    VT, const VT*, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE
template void ooc_scale<double>(const CpuExecutor&, index_t, double, double*);
template void ooc_scale<float>(const CpuExecutor&, index_t, float, float*);

}  // namespace heptane::kernels
