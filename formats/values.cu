// kernels::copy_values on CUDA (formats/values_kernels.hpp): one thread per entry; the
// targets ascend with j, so the writes of a warp fall on few lines.
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

}  // namespace heptane::kernels
