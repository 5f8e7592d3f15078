// The out-of-core chunk kernels on CUDA, queued on the executor's stream: a group of `lanes`
// threads per row (the in-core CSR vector kernels, formats/csr/csr_vector.cuh), 32-bit chunk-local
// row pointers and columns. A^T x: each lane group scatters alpha * a_ij * x_i into y_j with
// atomics (y scaled by beta once before the chunks, ooc_scale). BDIA-GH chunks: the in-core
// BDIA-GH kernels on the chunk as a row block (kernels::spmv_bdia_rows, with the block offsets
// the operator keeps in host memory: the same loads as in core; A^T x gathers per output
// entry and adds each once, atomically).
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
    const ScatterStripes st = transpose ? scatter_stripes(c.rows, G) : ScatterStripes{};
    const unsigned grid = cuda::grid_for(st.groups(c.rows) * G, 256);
    if (transpose)
        csr_scatter_kernel<G, std::uint32_t, std::uint32_t, MT, VT>
            <<<grid, 256, 0, s>>>(c.rows, st, c.row_ptr, c.col, c.val, alpha, x, y);
    else
        csr_vector_kernel<G, std::uint32_t, std::uint32_t, MT, VT>
            <<<grid, 256, 0, s>>>(c.rows, c.row_ptr, c.col, c.val, alpha, x, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class MT, class VT>
void dispatch(const CudaExecutor& exec, const OocChunkView<MT>& c, VT alpha, const VT* x, VT beta,
              VT* y, bool transpose, void* stream)
{
    if (c.rows <= 0) return;
    make_current(exec);
    const cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : cuda::stream(exec);
    if (c.nc > 0) {  // BDIA-GH: the in-core BDIA-GH kernels on the chunk as a row block
        HEPTANE_ENSURE(c.host_offsets, InputError,
                       "BDIA-GH chunk at row " << c.row0 << ": no block offsets in host memory");
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
