// The out-of-core chunk kernels on CUDA, queued on the executor's stream: a group of `lanes`
// threads per row (the in-core CSR vector kernels, formats/csr/csr_vector.cuh), 32-bit chunk-local
// row pointers and columns. A^T x: each lane group scatters alpha * a_ij * x_i into y_j with
// atomics (y scaled by beta once before the chunks, ooc_scale). BDIA-GH chunks whose block
// offsets the operator has in host memory: the in-core BDIA-GH kernels on the chunk as a row
// block (kernels::spmv_bdia_rows: the same loads as in core; A^T x gathers per output entry
// and adds each once, atomically). Otherwise a thread per row over the D*Nc slots, columns
// from the row and the block offsets, A^T x scattering the non-zero slots.
#include "formats/bdia/bdia_cuda.hpp"
#include "formats/csr/csr_vector.cuh"
#include "formats/outofcore/outofcore_kernels.hpp"

namespace heptane::kernels {

namespace {

using namespace cuda_detail;

template <int G, class MT, class VT>
void launch(cudaStream_t s, const OocChunkView<MT>& c, VT alpha, const VT* x, VT beta, VT* y,
            bool transpose)
{
    const unsigned grid = cuda::grid_for(static_cast<long long>(c.rows) * G, 256);
    if (transpose)
        csr_scatter_kernel<G, std::uint32_t, std::uint32_t, MT, VT>
            <<<grid, 256, 0, s>>>(c.rows, c.row_ptr, c.col, c.val, alpha, x, y);
    else
        csr_vector_kernel<G, std::uint32_t, std::uint32_t, MT, VT>
            <<<grid, 256, 0, s>>>(c.rows, c.row_ptr, c.col, c.val, alpha, x, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class MT, class VT>
__global__ void ooc_bdia_kernel(index_t rows, index_t row0, index_t cols, int nc, int D,
                                const std::int32_t* __restrict__ offsets,
                                const MT* __restrict__ val, VT alpha, const VT* __restrict__ x,
                                VT beta, VT* __restrict__ y)
{
    const index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const index_t r = row0 + i, base = r - r % nc;
    VT sum = 0;
    for (int q = 0; q < D; ++q) {
        const index_t cb = base + index_t(__ldg(offsets + q)) * nc;
        for (int s = 0; s < nc; ++s) {
            const index_t j = cb + s;
            if (j >= 0 && j < cols)
                sum += VT(val[std::size_t(q * nc + s) * std::size_t(rows) + i]) * __ldg(x + j);
        }
    }
    y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
}

template <class MT, class VT>
__global__ void ooc_bdia_scatter_kernel(index_t rows, index_t row0, index_t cols, int nc, int D,
                                        const std::int32_t* __restrict__ offsets,
                                        const MT* __restrict__ val, VT alpha,
                                        const VT* __restrict__ x, VT* __restrict__ y)
{
    const index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const index_t r = row0 + i, base = r - r % nc;
    const VT xi = alpha * x[i];
    for (int q = 0; q < D; ++q) {
        const index_t cb = base + index_t(__ldg(offsets + q)) * nc;
        for (int s = 0; s < nc; ++s) {
            const index_t j = cb + s;
            const MT v = val[std::size_t(q * nc + s) * std::size_t(rows) + i];
            if (j >= 0 && j < cols && v != MT(0)) atomicAdd(y + j, VT(v) * xi);
        }
    }
}

template <class MT, class VT>
void dispatch(const CudaExecutor& exec, const OocChunkView<MT>& c, VT alpha, const VT* x, VT beta,
              VT* y, bool transpose, void* stream)
{
    if (c.rows <= 0) return;
    make_current(exec);
    const cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : cuda::stream(exec);
    if (c.nc > 0 && c.host_offsets && c.row0 % c.nc == 0 && c.cols % c.nc == 0) {
        // the in-core BDIA-GH kernels on the chunk as a row block of its own
        BdiaRows<MT> b;
        b.row0 = c.row0;
        b.rows = c.rows;
        b.cols = c.cols;
        b.block_size = c.nc;
        b.block_diagonals = c.block_diagonals;
        b.block_offsets = c.host_offsets;
        b.data = c.val;
        spmv_bdia_rows(exec, b, transpose ? Op::transpose : Op::normal, alpha, x, beta, y, s);
        return;
    }
    if (c.nc > 0) {
        const unsigned grid = cuda::grid_for(static_cast<long long>(c.rows), 256);
        if (transpose)
            ooc_bdia_scatter_kernel<MT, VT><<<grid, 256, 0, s>>>(
                c.rows, c.row0, c.cols, c.nc, c.block_diagonals, c.offsets, c.val, alpha, x, y);
        else
            ooc_bdia_kernel<MT, VT><<<grid, 256, 0, s>>>(c.rows, c.row0, c.cols, c.nc,
                                                         c.block_diagonals, c.offsets, c.val, alpha,
                                                         x, beta, y);
        HEPTANE_CUDA_LAUNCH_CHECK();
        return;
    }
    switch (c.lanes) {
        case 1:
            launch<1>(s, c, alpha, x, beta, y, transpose);
            break;
        case 2:
            launch<2>(s, c, alpha, x, beta, y, transpose);
            break;
        case 4:
            launch<4>(s, c, alpha, x, beta, y, transpose);
            break;
        case 8:
            launch<8>(s, c, alpha, x, beta, y, transpose);
            break;
        case 16:
            launch<16>(s, c, alpha, x, beta, y, transpose);
            break;
        default:
            launch<32>(s, c, alpha, x, beta, y, transpose);
            break;
    }
}

}  // namespace

template <class MT, class VT>
void ooc_chunk_apply(const CudaExecutor& exec, const OocChunkView<MT>& c, VT alpha, const VT* x,
                     VT beta, VT* y, void* stream)
{
    dispatch(exec, c, alpha, x, beta, y, false, stream);
}

template <class MT, class VT>
void ooc_chunk_apply_transpose(const CudaExecutor& exec, const OocChunkView<MT>& c, VT alpha,
                               const VT* x, VT* y, void* stream)
{
    dispatch(exec, c, alpha, x, VT(0), y, true, stream);
}

template <class VT>
void ooc_scale(const CudaExecutor& exec, index_t n, VT beta, VT* y)
{
    make_current(exec);
    scale(exec, n, beta, y);
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                               \
    template void ooc_chunk_apply<MT, VT>(const CudaExecutor&, const OocChunkView<MT>&, VT,       \
                                          const VT*, VT, VT*, void*);                             \
    template void ooc_chunk_apply_transpose<MT, VT>(const CudaExecutor&, const OocChunkView<MT>&, \
                                                    VT, const VT*, VT*, void*);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE
template void ooc_scale<double>(const CudaExecutor&, index_t, double, double*);
template void ooc_scale<float>(const CudaExecutor&, index_t, float, float*);

}  // namespace heptane::kernels
