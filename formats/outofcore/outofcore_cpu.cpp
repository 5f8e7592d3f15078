// The out-of-core chunk kernels on the CPU (OpenMP over the chunk's rows); A^T x scatters with
// atomics, as the in-core CSR kernel does.
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
}  // namespace

template <class MT, class VT>
void ooc_chunk_apply(const CpuExecutor&, const OocChunkView<MT>& c, VT alpha, const VT* x, VT beta,
                     VT* y)
{
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
