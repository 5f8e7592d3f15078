// kernels::copy_values, kernels::scatter_values and kernels::block_values_to_csr on CUDA
// (formats/values_kernels.hpp): one thread per entry (copy_values: the targets ascend with j,
// so the writes of a warp fall on few lines), grid-stride for scatter_values, a warp per row
// for block_values_to_csr (its writes contiguous; its reads, bs apart, fall on the lines the
// block row's other rows read too).
#include <cstdint>

#include "core/cuda_common.hpp"
#include "formats/values_kernels.hpp"

namespace heptane::kernels {

namespace {

template <class MT>
__global__ void copy_values_kernel(long long n, const offset_t* __restrict__ from,
                                   const offset_t* __restrict__ to, const double* __restrict__ src,
                                   MT* __restrict__ dst)
{
    const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (j < n) dst[to[j]] = static_cast<MT>(src[from[j]]);
}

// dst[map[k]] = VT(src[k]), grid-stride
template <class IT, class VT>
__global__ void scatter_values_kernel(long long n, const IT* __restrict__ map,
                                      const double* __restrict__ src, VT* __restrict__ dst)
{
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
         k += stride)
        dst[map[k]] = VT(src[k]);
}

// a warp per scalar row; the lanes stride over its entries
__global__ void block_values_to_csr_kernel(index_t rows, index_t bs,
                                           const index_t* __restrict__ row_ptr,
                                           const double* __restrict__ src, double* __restrict__ dst)
{
    const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= rows) return;
    const index_t row = static_cast<index_t>(warp);
    const index_t r = row % bs;
    const long long bs2 = static_cast<long long>(bs) * bs;
    const long long base = static_cast<long long>(row_ptr[row - r]) + r;
    const long long begin = row_ptr[row];
    const long long len = row_ptr[row + 1] - begin;
    for (long long t = lane; t < len; t += 32)
        dst[begin + t] = src[base + (t / bs) * bs2 + (t % bs) * bs];
}

// a warp per scalar row: lane 0 its row pointer, the lanes its columns
__global__ void block_pattern_to_csr_kernel(index_t block_rows, index_t bs,
                                            const index_t* __restrict__ block_ptr,
                                            const index_t* __restrict__ block_col,
                                            index_t* __restrict__ row_ptr,
                                            index_t* __restrict__ col_idx)
{
    const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const long long rows = static_cast<long long>(block_rows) * bs;
    if (warp >= rows) return;
    const index_t row = static_cast<index_t>(warp);
    const index_t ib = row / bs, r = row % bs;
    const index_t first = block_ptr[ib], nk = block_ptr[ib + 1] - first;
    const index_t begin = first * bs * bs + r * nk * bs;
    if (lane == 0) row_ptr[row] = begin;
    if (lane == 0 && row == rows - 1) row_ptr[rows] = block_ptr[block_rows] * bs * bs;
    for (index_t t = lane; t < nk * bs; t += 32)
        col_idx[begin + t] = block_col[first + t / bs] * bs + t % bs;
}

}  // namespace

void block_pattern_to_csr(const CudaExecutor& exec, index_t block_rows, index_t bs,
                          const index_t* block_ptr, const index_t* block_col, index_t* row_ptr,
                          index_t* col_idx)
{
    if (block_rows <= 0) return;
    constexpr int threads = 256;  // 8 rows a block
    const long long blocks = (static_cast<long long>(block_rows) * bs * 32 + threads - 1) / threads;
    block_pattern_to_csr_kernel<<<static_cast<unsigned>(blocks), threads, 0, cuda::stream(exec)>>>(
        block_rows, bs, block_ptr, block_col, row_ptr, col_idx);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

void block_values_to_csr(const CudaExecutor& exec, index_t rows, index_t bs, const index_t* row_ptr,
                         const double* src, double* dst)
{
    if (rows <= 0) return;
    constexpr int threads = 256;  // 8 rows a block
    const long long blocks = (static_cast<long long>(rows) * 32 + threads - 1) / threads;
    block_values_to_csr_kernel<<<static_cast<unsigned>(blocks), threads, 0, cuda::stream(exec)>>>(
        rows, bs, row_ptr, src, dst);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class MT>
void copy_values(const CudaExecutor& exec, offset_t n, const offset_t* from, const offset_t* to,
                 const double* src, MT* dst)
{
    if (n <= 0) return;
    constexpr int block = 256;
    copy_values_kernel<MT>
        <<<cuda::grid_for(n, block), block, 0, cuda::stream(exec)>>>(n, from, to, src, dst);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template void copy_values<double>(const CudaExecutor&, offset_t, const offset_t*, const offset_t*,
                                  const double*, double*);
template void copy_values<float>(const CudaExecutor&, offset_t, const offset_t*, const offset_t*,
                                 const double*, float*);

template <class IT, class VT>
void scatter_values(const CudaExecutor& exec, offset_t n, const IT* map, const double* src, VT* dst)
{
    if (n <= 0) return;
    constexpr int threads = 256;
    const long long blocks = (n + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
    scatter_values_kernel<<<grid, threads, 0, cuda::stream(exec)>>>(n, map, src, dst);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(IT, VT)                                                               \
    template void scatter_values<IT, VT>(const CudaExecutor&, offset_t, const IT*, const double*, \
                                         VT*);
HEPTANE_INDEX_VALUE_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
