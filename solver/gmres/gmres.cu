// GMRES block kernels on CUDA: the multi-dot h = V^T w and the multi-axpy w += alpha V h of
// classical Gram-Schmidt. All work is queued on the executor's stream; nothing here waits.
//
// The multi-dot is two launches: every block reduces its grid-stride share of up to `tile`
// columns at once (each thread reads w[i] once and the tile's V entries of row i, keeping a
// running sum per column in registers), writes one partial per column; then one block per
// column adds those partials in block order. The sums are therefore reproducible run to run
// for a given device. The multi-axpy keeps the k coefficients in shared memory and updates
// each w[i] in one read and one write, with ‖w‖² reduced the same way when asked for.
#include <algorithm>
#include <cstddef>

#include "core/cuda_block_sum.cuh"
#include "core/cuda_common.hpp"
#include "solver/gmres/gmres_kernels.hpp"
#include "solver/gmres/gmres_traffic.hpp"

namespace heptane::kernels {

namespace {

constexpr int block_size = 256;
// dot products per pass over w: gmres_traffic.hpp's gmres_cuda_dot_tile (8; measured against
// 16 and 32 there)
constexpr int tile = gmres_cuda_dot_tile;
constexpr int max_coef =
    4096;  // coefficients in shared memory per multi-axpy launch (32 KiB + 64 B)

unsigned blocks_for(const CudaExecutor& exec, index_t n)
{
    const unsigned g = cuda::grid_for(n, block_size);
    const unsigned m =
        8u * static_cast<unsigned>(exec.multiprocessors() > 0 ? exec.multiprocessors() : 16);
    return g < m ? g : m;
}

using cuda_detail::block_sum;

/// Tile blockIdx.y: columns c0 .. c0 + cols of V against w, and (tile 0, with_norm) (w, w).
/// Partial of sum c from block b at partials[c * gridDim.x + b]; the norm is sum k.
template <class VT>
__global__ void __launch_bounds__(block_size)
    multi_dot_kernel(index_t n, int k, const VT* __restrict__ V, const VT* __restrict__ w,
                     bool with_norm, double* __restrict__ partials)
{
    const int c0 = static_cast<int>(blockIdx.y) * tile;
    const int cols = min(tile, k - c0);  // <= 0: the norm only (k == 0)
    const bool norm = with_norm && blockIdx.y == 0;
    const std::size_t ld = static_cast<std::size_t>(n);
    const VT* base = V + static_cast<std::size_t>(c0) * ld;
    double acc[tile + 1];
#pragma unroll
    for (int t = 0; t <= tile; ++t) acc[t] = 0.0;
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const double wi = static_cast<double>(w[i]);
#pragma unroll
        for (int t = 0; t < tile; ++t)
            if (t < cols)
                acc[t] += static_cast<double>(base[static_cast<std::size_t>(t) * ld + i]) * wi;
        if (norm) acc[tile] += wi * wi;
    }
    block_sum<tile + 1>(acc);
    if (threadIdx.x == 0) {
        for (int t = 0; t < cols; ++t)
            partials[static_cast<std::size_t>(c0 + t) * gridDim.x + blockIdx.x] = acc[t];
        if (norm) partials[static_cast<std::size_t>(k) * gridDim.x + blockIdx.x] = acc[tile];
    }
}

/// out[c] = Σ_b partials[c * parts + b], one block per sum c, in block order.
__global__ void __launch_bounds__(block_size)
    finish_kernel(unsigned parts, const double* __restrict__ partials, double* __restrict__ out)
{
    const std::size_t c = blockIdx.x;
    double acc[1] = {0.0};
    for (unsigned b = threadIdx.x; b < parts; b += blockDim.x) acc[0] += partials[c * parts + b];
    block_sum<1>(acc);
    if (threadIdx.x == 0) out[c] = acc[0];
}

/// Shared slots multi_axpy_kernel keeps for k coefficients: k rounded up to the unroll (8) plus
/// one more group of 8.
__host__ __device__ constexpr int coef_slots(int k)
{
    return (k + 7) / 8 * 8 + 8;
}

/// w += alpha Σ_{c<k} coef[c] V_c; with partials, (w, w) of the result per block.
template <class VT>
__global__ void __launch_bounds__(block_size)
    multi_axpy_kernel(index_t n, int k, const VT* __restrict__ V, const double* __restrict__ coef,
                      double alpha, VT* w, double* partials)
{
    // k coefficients, then zeros up to coef_slots(k): the compiled loop below reads the
    // coefficients in pairs (LDS.128), its remainder too, so an odd k read one double past k
    // (compute-sanitizer memcheck: a 16-byte shared read at a[0] when k = 1); the padding keeps
    // every such read inside the array
    extern __shared__ double a[];
    for (int c = threadIdx.x; c < coef_slots(k); c += blockDim.x)
        a[c] = c < k ? alpha * coef[c] : 0.0;
    __syncthreads();
    const std::size_t ld = static_cast<std::size_t>(n);
    double acc[1] = {0.0};
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        double s = static_cast<double>(w[i]);
#pragma unroll 8
        for (int c = 0; c < k; ++c)
            s += a[c] * static_cast<double>(V[static_cast<std::size_t>(c) * ld + i]);
        const VT wi = static_cast<VT>(s);
        w[i] = wi;
        acc[0] += static_cast<double>(wi) * static_cast<double>(wi);
    }
    if (partials != nullptr) {  // the same for every thread of the block
        block_sum<1>(acc);
        if (threadIdx.x == 0) partials[blockIdx.x] = acc[0];
    }
}

}  // namespace

std::size_t gmres_scratch_size(const CudaExecutor& exec, index_t n, int max_sums)
{
    return static_cast<std::size_t>(max_sums > 0 ? max_sums : 1) * blocks_for(exec, n);
}

template <class VT>
void gmres_multi_dot(const CudaExecutor& exec, index_t n, int k, const VT* V, const VT* w,
                     bool with_norm, double* out, double* scratch)
{
    const int kk = k + (with_norm ? 1 : 0);
    if (kk <= 0) return;
    const cudaStream_t s = cuda::stream(exec);
    if (n <= 0) {
        HEPTANE_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double) * std::size_t(kk), s));
        return;
    }
    const unsigned blocks = blocks_for(exec, n);
    const dim3 grid(blocks, static_cast<unsigned>(std::max(1, (k + tile - 1) / tile)));
    multi_dot_kernel<VT><<<grid, block_size, 0, s>>>(n, k, V, w, with_norm, scratch);
    HEPTANE_CUDA_LAUNCH_CHECK();
    finish_kernel<<<static_cast<unsigned>(kk), block_size, 0, s>>>(blocks, scratch, out);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void gmres_multi_axpy(const CudaExecutor& exec, index_t n, int k, const VT* V, const double* coef,
                      double alpha, VT* w, double* norm_out, double* scratch)
{
    const cudaStream_t s = cuda::stream(exec);
    if (n <= 0) {
        if (norm_out) HEPTANE_CUDA_CHECK(cudaMemsetAsync(norm_out, 0, sizeof(double), s));
        return;
    }
    const unsigned blocks = blocks_for(exec, n);
    const std::size_t ld = static_cast<std::size_t>(n);
    // at most max_coef columns per launch; the last launch (or the only one) takes the norm
    int c0 = 0;
    do {
        const int cols = std::min(max_coef, k - c0);
        const bool last = c0 + cols >= k;
        multi_axpy_kernel<VT>
            <<<blocks, block_size, sizeof(double) * std::size_t(coef_slots(cols)), s>>>(
                n, cols, V + std::size_t(c0) * ld, coef + c0, alpha, w,
                last && norm_out ? scratch : nullptr);
        HEPTANE_CUDA_LAUNCH_CHECK();
        c0 += cols;
    } while (c0 < k);
    if (norm_out) {
        finish_kernel<<<1, block_size, 0, s>>>(blocks, scratch, norm_out);
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
}

template <class VT>
__global__ void scale_next_kernel(index_t n, const double* __restrict__ az_norm2,
                                  const double* __restrict__ w_norm2, double ratio,
                                  VT* __restrict__ w)
{
    const double h = sqrt(fmax(*w_norm2, 0.0));
    const VT s = (h > ratio * sqrt(*az_norm2) && isfinite(h)) ? VT(1.0 / h) : VT(0);
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        w[i] = s * w[i];
}

template <class VT>
void gmres_scale_next(const CudaExecutor& exec, index_t n, const double* az_norm2,
                      const double* w_norm2, double ratio, VT* w)
{
    if (n <= 0) return;
    scale_next_kernel<VT><<<blocks_for(exec, n), block_size, 0, cuda::stream(exec)>>>(
        n, az_norm2, w_norm2, ratio, w);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(VT)                                                                    \
    template void gmres_multi_dot<VT>(const CudaExecutor&, index_t, int, const VT*, const VT*,     \
                                      bool, double*, double*);                                     \
    template void gmres_multi_axpy<VT>(const CudaExecutor&, index_t, int, const VT*,               \
                                       const double*, double, VT*, double*, double*);              \
    template void gmres_scale_next<VT>(const CudaExecutor&, index_t, const double*, const double*, \
                                       double, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
