// BSR SpMV on CUDA: one warp per block row. The values of a block row are one contiguous
// span (its blocks one after the other, row-major inside), so the warp reads it 32
// consecutive values at a time (coalesced). For b*b <= 32 the warp covers P = 32/(b*b)
// blocks per step and lane l always holds element e = l mod b*b (row e/b, column e%b) of
// its block; for b*b > 32 each lane holds the elements l, l+32, ... of every block. Each
// lane accumulates per element, and the partial sums of one block row are reduced through
// shared memory at the end (once per block row, not per block).
//   y_{br*b+i} = sum_blocks sum_j B(i,j) * x[bc*b + j]
// A^T x: y = beta*y, then the same walk scatters alpha*B(i,j)*x[br*b+i] into y[bc*b+j].
// Block sizes with b*b > 256, and b = 1 (plain CSR), use a thread-per-row kernel.
//
// Traffic (fp64): 8*b*b bytes per block + 4 for its column index, 8 per block-row pointer,
// x about once, y once.
#include "formats/bsr/bsr_kernels.hpp"
#include "formats/cuda_spmv_common.cuh"

namespace heptane::kernels {

namespace {

using namespace cuda_detail;

constexpr int bsr_block = 256;      // 8 warps, one block row each
constexpr int bsr_max_elems = 256;  // b <= 16 on the warp kernel

// B = block size known at compile time (0: run time, b*b <= 256)
template <int B, bool transposed, class MT, class VT>
__global__ void __launch_bounds__(bsr_block)
    bsr_warp_kernel(index_t block_rows, index_t rt_b, const offset_t* __restrict__ ptr,
                    const index_t* __restrict__ ci, const MT* __restrict__ v, VT alpha,
                    const VT* __restrict__ x, VT beta, VT* __restrict__ y)
{
    constexpr int max_e = (B > 0 ? (B * B + 31) / 32 : bsr_max_elems / 32);
    const int b = B > 0 ? B : rt_b;
    const int bb = b * b;
    const int lane = threadIdx.x & 31;
    const int wib = threadIdx.x >> 5;
    const long long br = blockIdx.x * static_cast<long long>(bsr_block / 32) + wib;
    __shared__ VT s_acc[bsr_block / 32][bsr_max_elems > 32 ? bsr_max_elems : 32];

    // lane -> (slot p, element e): small blocks pack P blocks per warp step
    const int per_step = bb <= 32 ? 32 / bb : 1;  // blocks per step
    const int p = bb <= 32 ? lane / bb : 0;
    const int ne = bb <= 32 ? 1 : (bb + 31) / 32;  // elements per lane
    const bool active = bb <= 32 ? p < per_step : true;

    VT acc[max_e];
#pragma unroll
    for (int m = 0; m < max_e; ++m) acc[m] = VT(0);
    if (br < block_rows && active) {
        const offset_t kb0 = ptr[br], kb1 = ptr[br + 1];
#pragma unroll 4  // several blocks' loads in flight per lane
        for (offset_t kb = kb0 + p; kb < kb1; kb += per_step) {
            const long long col0 = static_cast<long long>(ldg(ci + kb)) * b;
            const MT* blk = v + kb * bb;
#pragma unroll
            for (int m = 0; m < max_e; ++m) {
                const int e = bb <= 32 ? lane - p * bb : lane + 32 * m;
                if (m < ne && e < bb) {
                    const int i = e / b, j = e - (e / b) * b;
                    if (!transposed) {
                        acc[m] += VT(ldcs(blk + e)) * ldg(x + col0 + j);
                    } else {
                        atomicAdd(y + col0 + j, alpha * VT(ldcs(blk + e)) * x[br * b + i]);
                    }
                }
            }
        }
    }
    if (transposed) return;
    // reduce: s_acc[e] = sum over the lanes holding element e, then row i sums its b columns
    VT* s = s_acc[wib];
    for (int e = lane; e < bb; e += 32) s[e] = VT(0);
    __syncwarp();
    if (active) {
#pragma unroll
        for (int m = 0; m < max_e; ++m) {
            const int e = bb <= 32 ? lane - p * bb : lane + 32 * m;
            if (m < ne && e < bb) atomicAdd(s + e, acc[m]);
        }
    }
    __syncwarp();
    if (br < block_rows) {
        for (int i = lane; i < b; i += 32) {
            VT sum = 0;
            for (int j = 0; j < b; ++j) sum += s[i * b + j];
            store_result(y, br * b + i, alpha, sum, beta);
        }
    }
}

// fallback for large blocks: one thread per row
template <bool transposed, class MT, class VT>
__global__ void __launch_bounds__(256)
    bsr_row_kernel(index_t rows, index_t b, const offset_t* __restrict__ ptr,
                   const index_t* __restrict__ ci, const MT* __restrict__ v, VT alpha,
                   const VT* __restrict__ x, VT beta, VT* __restrict__ y)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= rows) return;
    const long long br = r / b;
    const int i = static_cast<int>(r - br * b);
    const long long bb = static_cast<long long>(b) * b;
    VT sum = 0;
    const VT xr = transposed ? alpha * x[r] : VT(0);
    for (offset_t kb = ptr[br]; kb < ptr[br + 1]; ++kb) {
        const long long col0 = static_cast<long long>(ci[kb]) * b;
        const MT* row = v + kb * bb + static_cast<long long>(i) * b;
        for (int j = 0; j < b; ++j) {
            if (!transposed)
                sum += VT(row[j]) * ldg(x + col0 + j);
            else
                atomicAdd(y + col0 + j, VT(row[j]) * xr);
        }
    }
    if (!transposed) store_result(y, r, alpha, sum, beta);
}

template <int B, bool transposed, class MT, class VT>
void launch_warp(const CudaExecutor& exec, const Bsr<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    const unsigned grid = cuda::grid_for(a.block_rows(), bsr_block / 32);
    bsr_warp_kernel<B, transposed, MT, VT><<<grid, bsr_block, 0, cuda::stream(exec)>>>(
        a.block_rows(), a.block_size, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x,
        beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <bool transposed, class MT, class VT>
void dispatch(const CudaExecutor& exec, const Bsr<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    switch (a.block_size) {
        case 2:
            launch_warp<2, transposed>(exec, a, alpha, x, beta, y);
            return;
        case 3:
            launch_warp<3, transposed>(exec, a, alpha, x, beta, y);
            return;
        case 4:
            launch_warp<4, transposed>(exec, a, alpha, x, beta, y);
            return;
        case 8:
            launch_warp<8, transposed>(exec, a, alpha, x, beta, y);
            return;
        default:
            break;
    }
    // b = 1 is CSR: a warp per 1 x 1 "block row" would leave most lanes idle (7 % of the copy
    // rate measured on the H100), so one thread per row, as for large blocks
    if (a.block_size > 1 && a.block_size * a.block_size <= bsr_max_elems) {
        launch_warp<0, transposed>(exec, a, alpha, x, beta, y);
        return;
    }
    bsr_row_kernel<transposed, MT, VT><<<cuda::grid_for(a.rows, 256), 256, 0, cuda::stream(exec)>>>(
        a.rows, a.block_size, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, beta,
        y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

}  // namespace

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Bsr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    if (ny == 0) return;
    make_current(exec);
    if (a.nnz_blocks() == 0) {
        scale(exec, ny, beta, y);
        return;
    }
    HEPTANE_ENSURE(
        a.block_size > 0 && a.rows % a.block_size == 0 && a.cols % a.block_size == 0,
        DimensionMismatch,
        "BSR block size " << a.block_size << " does not divide " << a.rows << " x " << a.cols);
    ensure_on_device(exec, *a.exec(), "BSR");
    ensure_on_device(exec, *a.row_ptr.exec(), "BSR");
    if (op == Op::normal) {
        dispatch<false>(exec, a, alpha, x, beta, y);
    } else {
        scale(exec, ny, beta, y);
        dispatch<true>(exec, a, alpha, x, VT(1), y);
    }
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CudaExecutor&, const Bsr<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
