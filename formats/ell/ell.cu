// ELL SpMV on CUDA: one thread per row; slot k of row r sits at k*rows + r, so a warp reads
// 32 consecutive values and column indices per slot (coalesced). Padding slots (column -1)
// are skipped, never multiplied: x is not read for them. A^T x: y = beta*y, then each thread
// scatters alpha*a_rc*x_r of its row into y_c with atomics.
//
// Traffic of y = A x (fp64): 12 bytes per slot, padding included, x about once, y once.
#include "formats/cuda_spmv_common.cuh"
#include "formats/ell/ell_kernels.hpp"

namespace heptane::kernels {

namespace {

using namespace cuda_detail;

template <class MT, class VT>
__global__ void __launch_bounds__(256)
    ell_kernel(index_t rows, index_t width, const index_t* __restrict__ ci,
               const MT* __restrict__ v, VT alpha, const VT* __restrict__ x, VT beta,
               VT* __restrict__ y)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= rows) return;
    VT sum = 0;
#pragma unroll 4
    for (index_t k = 0; k < width; ++k) {
        const long long slot = static_cast<long long>(k) * rows + r;
        const index_t c = ldg(ci + slot);
        if (c >= 0) sum += VT(ldcs(v + slot)) * ldg(x + c);
    }
    store_result(y, r, alpha, sum, beta);
}

template <class MT, class VT>
__global__ void __launch_bounds__(256)
    ell_scatter_kernel(index_t rows, index_t width, const index_t* __restrict__ ci,
                       const MT* __restrict__ v, VT alpha, const VT* __restrict__ x,
                       VT* __restrict__ y)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= rows) return;
    const VT xr = alpha * x[r];
    for (index_t k = 0; k < width; ++k) {
        const long long slot = static_cast<long long>(k) * rows + r;
        const index_t c = ldg(ci + slot);
        if (c >= 0) atomicAdd(y + c, VT(ldcs(v + slot)) * xr);
    }
}

}  // namespace

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Ell<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    if (ny == 0) return;
    make_current(exec);
    if (a.slots() == 0) {
        scale(exec, ny, beta, y);
        return;
    }
    ensure_on_device(exec, *a.exec(), "ELL");
    ensure_on_device(exec, *a.col_idx.exec(), "ELL");
    auto s = cuda::stream(exec);
    const unsigned grid = cuda::grid_for(a.rows, 256);
    if (op == Op::normal) {
        ell_kernel<MT, VT><<<grid, 256, 0, s>>>(a.rows, a.width, a.col_idx.data(), a.values.data(),
                                                alpha, x, beta, y);
    } else {
        scale(exec, ny, beta, y);
        ell_scatter_kernel<MT, VT>
            <<<grid, 256, 0, s>>>(a.rows, a.width, a.col_idx.data(), a.values.data(), alpha, x, y);
    }
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CudaExecutor&, const Ell<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
