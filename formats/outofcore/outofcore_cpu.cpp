// The out-of-core chunk kernels on the CPU (OpenMP over the chunk's rows); A^T x scatters with
// atomics, as the in-core CSR kernel does.
#include "formats/outofcore/outofcore_kernels.hpp"

#include "core/parallel.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void ooc_chunk_apply(const CpuExecutor&, const OocChunkView<MT>& c, VT alpha, const VT* x, VT beta,
                     VT* y)
{
    const std::uint32_t* ptr = c.row_ptr;
    const std::uint32_t* ci = c.col;
    const MT* v = c.val;
#pragma omp parallel for schedule(static, 512) if (c.rows >= kParallelMin)
    for (index_t i = 0; i < c.rows; ++i) {
        VT sum = 0;
        for (std::uint32_t k = ptr[i]; k < ptr[i + 1]; ++k) sum += VT(v[k]) * x[ci[k]];
        y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
    }
}

template <class MT, class VT>
void ooc_chunk_apply_transpose(const CpuExecutor&, const OocChunkView<MT>& c, VT alpha, const VT* x,
                               VT* y)
{
    const std::uint32_t* ptr = c.row_ptr;
    const std::uint32_t* ci = c.col;
    const MT* v = c.val;
#pragma omp parallel for schedule(static, 512) if (c.rows >= kParallelMin)
    for (index_t i = 0; i < c.rows; ++i) {
        const VT xi = alpha * x[i];
        for (std::uint32_t k = ptr[i]; k < ptr[i + 1]; ++k) {
            const VT t = VT(v[k]) * xi;
#pragma omp atomic
            y[ci[k]] += t;
        }
    }
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
HEPTANE_INSTANTIATE(double, double)
HEPTANE_INSTANTIATE(float, float)
HEPTANE_INSTANTIATE(float, double)
#undef HEPTANE_INSTANTIATE
template void ooc_scale<double>(const CpuExecutor&, index_t, double, double*);
template void ooc_scale<float>(const CpuExecutor&, index_t, float, float*);

}  // namespace heptane::kernels
