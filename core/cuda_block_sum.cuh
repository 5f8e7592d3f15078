// Block-wide sums in double for CUDA reductions, shared by the vector kernels
// (solver/vector/vector.cu) and the products that fuse dot products into themselves
// (formats/bdia/bdia_dots.cuh). Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

namespace heptane::kernels::cuda_detail {

/// Sum each of v[0..NS) over the block (every thread of the block must call it; blockDim.x a
/// multiple of 32, at most 1024); the result is valid in thread 0. The order of the additions
/// is fixed by the launch shape, so the sums are reproducible run to run.
template <int NS>
__device__ void block_sum(double (&v)[NS])
{
    __shared__ double sh[NS][32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < NS; ++k)
        for (int off = 16; off > 0; off >>= 1) v[k] += __shfl_down_sync(0xffffffffu, v[k], off);
    if (lane == 0)
#pragma unroll
        for (int k = 0; k < NS; ++k) sh[k][warp] = v[k];
    __syncthreads();
    if (warp == 0) {
        const int nwarps = blockDim.x >> 5;
#pragma unroll
        for (int k = 0; k < NS; ++k) {
            v[k] = lane < nwarps ? sh[k][lane] : 0.0;
            for (int off = 16; off > 0; off >>= 1) v[k] += __shfl_down_sync(0xffffffffu, v[k], off);
        }
    }
    __syncthreads();  // sh is reused by the next call
}

}  // namespace heptane::kernels::cuda_detail
