// The CSR lane-group kernels (a group of G = 1..32 lanes per row), shared by the in-core CSR
// SpMV (formats/csr/csr.cu: 64-bit row pointers, 32-bit columns) and the out-of-core chunks
// (formats/outofcore/outofcore.cu: 32-bit chunk-local row pointers and columns): PT is the
// row-pointer type, CT the column type. Include only from .cu files.
#pragma once

#include "formats/cuda_spmv_common.cuh"

namespace heptane::kernels::cuda_detail {

// ---- vector: G lanes per row, strided over the row, then a shuffle reduction ---------------
template <int G, class PT, class CT, class MT, class VT>
__global__ void __launch_bounds__(256)
    csr_vector_kernel(index_t rows, const PT* __restrict__ ptr, const CT* __restrict__ ci,
                      const MT* __restrict__ v, VT alpha, const VT* __restrict__ x, VT beta,
                      VT* __restrict__ y)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long r = t / G;
    const int lane = static_cast<int>(t % G);
    VT sum = 0;
    if (r < rows) {
        const PT e = ptr[r + 1];
        PT k = ptr[r] + lane;
        VT sum2 = 0;  // two independent chains: two loads in flight per lane
        for (; k + G < e; k += 2 * G) {
            sum += VT(ldcs(v + k)) * ldg(x + ldg(ci + k));
            sum2 += VT(ldcs(v + k + G)) * ldg(x + ldg(ci + k + G));
        }
        if (k < e) sum += VT(ldcs(v + k)) * ldg(x + ldg(ci + k));
        sum += sum2;
    }
    sum = group_sum<G>(sum);  // every lane takes part: the shuffles use the full mask
    if (lane == 0 && r < rows) store_result(y, r, alpha, sum, beta);
}

// ---- A^T x: y_j += alpha * a_ij * x_i, G lanes per row i (y already scaled by beta) --------
template <int G, class PT, class CT, class MT, class VT>
__global__ void __launch_bounds__(256)
    csr_scatter_kernel(index_t rows, const PT* __restrict__ ptr, const CT* __restrict__ ci,
                       const MT* __restrict__ v, VT alpha, const VT* __restrict__ x,
                       VT* __restrict__ y)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long r = t / G;
    const int lane = static_cast<int>(t % G);
    if (r >= rows) return;
    const VT xr = alpha * x[r];
    const PT e = ptr[r + 1];
    for (PT k = ptr[r] + lane; k < e; k += G) atomicAdd(y + ci[k], VT(ldcs(v + k)) * xr);
}

}  // namespace heptane::kernels::cuda_detail
