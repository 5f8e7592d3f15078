// kernels::copy_values and kernels::scatter_values on CUDA (formats/values_kernels.hpp): one
// thread per entry (copy_values: the targets ascend with j, so the writes of a warp fall on
// few lines), grid-stride for scatter_values.
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

}  // namespace

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
