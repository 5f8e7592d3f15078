// DIA SpMV on CUDA: one thread per row, the diagonal offsets staged in shared memory.
//   A x:   y_r = sum_d data[d*rows + r] * x[r + off_d]            (0 <= r + off_d < cols)
//   A^T x: y_j = sum_d data[d*rows + j - off_d] * x[j - off_d]    (0 <= j - off_d < rows)
// Both are gathers over columns of `data` (coalesced, no atomics); padding slots hold 0 but
// are skipped by the bounds test so that x is never read out of range.
//
// Traffic (fp64): 8 bytes per slot, padding included, x about once, y once.
#include "formats/cuda_spmv_common.cuh"
#include "formats/dia/dia_kernels.hpp"

namespace heptane::kernels {

namespace {

using namespace cuda_detail;

template <bool transposed, class MT, class VT>
__global__ void __launch_bounds__(256)
    dia_kernel(index_t rows, index_t cols, index_t ndiag, const index_t* __restrict__ offsets,
               const MT* __restrict__ data, VT alpha, const VT* __restrict__ x, VT beta,
               VT* __restrict__ y)
{
    extern __shared__ index_t s_off[];
    for (int d = threadIdx.x; d < ndiag; d += blockDim.x) s_off[d] = offsets[d];
    __syncthreads();
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const index_t ny = transposed ? cols : rows;
    if (i >= ny) return;
    VT sum = 0;
#pragma unroll 4
    for (index_t d = 0; d < ndiag; ++d) {
        if (!transposed) {
            const long long c = i + s_off[d];
            if (c >= 0 && c < cols)
                sum += VT(ldcs(data + static_cast<long long>(d) * rows + i)) * ldg(x + c);
        } else {
            const long long r = i - s_off[d];
            if (r >= 0 && r < rows)
                sum += VT(ldcs(data + static_cast<long long>(d) * rows + r)) * ldg(x + r);
        }
    }
    store_result(y, i, alpha, sum, beta);
}

}  // namespace

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Dia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    if (ny == 0) return;
    make_current(exec);
    const index_t nd = a.num_diagonals();
    if (nd == 0 || a.rows == 0) {
        scale(exec, ny, beta, y);
        return;
    }
    ensure_on_device(exec, *a.exec(), "DIA");
    ensure_on_device(exec, *a.offsets.exec(), "DIA");
    auto s = cuda::stream(exec);
    const unsigned grid = cuda::grid_for(ny, 256);
    const std::size_t smem = static_cast<std::size_t>(nd) * sizeof(index_t);
    HEPTANE_ENSURE(smem <= 48 * 1024, NotSupported,
                   "DIA with " << nd << " diagonals exceeds the CUDA kernel's 12288");
    if (op == Op::normal)
        dia_kernel<false, MT, VT><<<grid, 256, smem, s>>>(a.rows, a.cols, nd, a.offsets.data(),
                                                          a.data.data(), alpha, x, beta, y);
    else
        dia_kernel<true, MT, VT><<<grid, 256, smem, s>>>(a.rows, a.cols, nd, a.offsets.data(),
                                                         a.data.data(), alpha, x, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CudaExecutor&, const Dia<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
