// Multigrid and CPR kernels on CUDA; declared in amg_kernels.hpp. Plain launches on the
// executor's stream (graph-safe).
#include "core/cuda_common.hpp"
#include "solver/precond/amg/amg_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr int threads = 256;

template <class VT>
__global__ void start_vector_kernel(index_t n, VT* __restrict__ v)
{
    const index_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = VT(0.5 + double(start_hash(static_cast<unsigned long long>(i)) >> 11) * 0x1.0p-53);
}

template <class VT, bool keep_d>
__global__ void smooth_step_kernel(index_t n, VT a, VT b, const VT* __restrict__ dinv,
                                   const VT* __restrict__ r, VT* __restrict__ d, VT* __restrict__ x)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const VT t = keep_d ? a * d[i] + b * (dinv[i] * r[i]) : b * (dinv[i] * r[i]);
    d[i] = t;
    x[i] += t;
}

// one warp per row of the dense inverse
template <class VT>
__global__ void dense_apply_kernel(index_t n, const VT* __restrict__ ainv, const VT* __restrict__ b,
                                   VT* __restrict__ x)
{
    const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= n) return;
    const VT* row = ainv + warp * n;
    VT s = 0;
    for (index_t j = lane; j < n; j += 32) s += row[j] * b[j];
    for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) x[warp] = s;
}

template <class VT>
__global__ void cpr_restrict_kernel(index_t ncells, index_t nc, const VT* __restrict__ w,
                                    const VT* __restrict__ r, VT* __restrict__ rp)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= ncells) return;
    VT s = 0;
    for (index_t c = 0; c < nc; ++c) s += w[i * nc + c] * r[i * nc + c];
    rp[i] = s;
}

template <class VT>
__global__ void cpr_prolong_kernel(index_t ncells, index_t nc, index_t p, const VT* __restrict__ xp,
                                   VT* __restrict__ z)
{
    const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= static_cast<long long>(ncells) * nc) return;
    const long long i = k / nc;
    z[k] = (k - i * nc) == p ? xp[i] : VT(0);
}

void set_device(const CudaExecutor& exec)
{
    HEPTANE_CUDA_CHECK(cudaSetDevice(exec.device()));
}

}  // namespace

template <class VT>
void start_vector(const CudaExecutor& exec, index_t n, VT* v)
{
    if (n == 0) return;
    set_device(exec);
    start_vector_kernel<VT><<<cuda::grid_for(n, threads), threads, 0, cuda::stream(exec)>>>(n, v);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void smooth_step(const CudaExecutor& exec, index_t n, VT a, VT b, const VT* dinv, const VT* r,
                 VT* d, VT* x)
{
    if (n == 0) return;
    set_device(exec);
    const unsigned g = cuda::grid_for(n, threads);
    if (a == VT(0))
        smooth_step_kernel<VT, false>
            <<<g, threads, 0, cuda::stream(exec)>>>(n, a, b, dinv, r, d, x);
    else
        smooth_step_kernel<VT, true><<<g, threads, 0, cuda::stream(exec)>>>(n, a, b, dinv, r, d, x);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void dense_apply(const CudaExecutor& exec, index_t n, const VT* ainv, const VT* b, VT* x)
{
    if (n == 0) return;
    set_device(exec);
    dense_apply_kernel<VT><<<cuda::grid_for(static_cast<long long>(n) * 32, threads), threads, 0,
                             cuda::stream(exec)>>>(n, ainv, b, x);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void cpr_restrict(const CudaExecutor& exec, index_t ncells, index_t nc, const VT* w, const VT* r,
                  VT* rp)
{
    if (ncells == 0) return;
    set_device(exec);
    cpr_restrict_kernel<VT>
        <<<cuda::grid_for(ncells, threads), threads, 0, cuda::stream(exec)>>>(ncells, nc, w, r, rp);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void cpr_prolong(const CudaExecutor& exec, index_t ncells, index_t nc, index_t p, const VT* xp,
                 VT* z)
{
    if (ncells == 0) return;
    set_device(exec);
    cpr_prolong_kernel<VT><<<cuda::grid_for(static_cast<long long>(ncells) * nc, threads), threads,
                             0, cuda::stream(exec)>>>(ncells, nc, p, xp, z);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(VT)                                                                    \
    template void start_vector<VT>(const CudaExecutor&, index_t, VT*);                             \
    template void smooth_step<VT>(const CudaExecutor&, index_t, VT, VT, const VT*, const VT*, VT*, \
                                  VT*);                                                            \
    template void dense_apply<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*);        \
    template void cpr_restrict<VT>(const CudaExecutor&, index_t, index_t, const VT*, const VT*,    \
                                   VT*);                                                           \
    template void cpr_prolong<VT>(const CudaExecutor&, index_t, index_t, index_t, const VT*, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
