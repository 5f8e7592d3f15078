// Multigrid and CPR kernels on CUDA; declared in amg_kernels.hpp. Plain launches on the
// executor's stream (graph-safe).
#include "core/cuda_common.hpp"
#include "core/error.hpp"
#include "solver/precond/amg/amg_kernels.hpp"
#include "solver/precond/amg/amg_tail.hpp"

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

template <class VT, bool keep_d, bool fresh>
__global__ void smooth_step_kernel(index_t n, VT a, VT b, const VT* __restrict__ dinv,
                                   const VT* __restrict__ r, VT* __restrict__ d, VT* __restrict__ x)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const VT t = keep_d ? a * d[i] + b * (dinv[i] * r[i]) : b * (dinv[i] * r[i]);
    d[i] = t;
    x[i] = fresh ? t : x[i] + t;
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

// cpr_stage_two: a thread per row (coalesced reads of A's pressure planes, r and out), a
// block per kStageTwoCells cells; the block's inverses staged through shared memory in one
// coalesced read, each cell's t there for its rows. The same sums in the same order as
// cpr_stage_two_cell (the CPU's).
constexpr int kStageTwoCells = 64;

template <class MT, class VT>
__global__ void cpr_stage_two_kernel(const CprBdia<MT> a, const VT* __restrict__ xp,
                                     const VT* __restrict__ r, const VT* __restrict__ binv,
                                     VT* __restrict__ out)
{
    extern __shared__ unsigned char stage_two_smem[];
    VT* ts = reinterpret_cast<VT*>(stage_two_smem);  // kStageTwoCells · nc
    VT* bs = ts + kStageTwoCells * a.nc;             // kStageTwoCells · nc² (binv given)
    const int nc = a.nc;
    const long long base = static_cast<long long>(blockIdx.x) * kStageTwoCells;
    const int tid = threadIdx.x;
    const int lc = tid / nc, i = tid - lc * nc;
    const long long cell = base + lc;
    const long long rows = static_cast<long long>(a.cells) * nc;
    const bool live = cell < a.cells;
    if (binv) {
        const long long cells_here =
            a.cells - base < kStageTwoCells ? a.cells - base : kStageTwoCells;
        const long long nb = cells_here * nc * nc;
        const VT* src = binv + base * nc * nc;
        for (long long k = tid; k < nb; k += blockDim.x) bs[k] = src[k];
    }
    VT t = 0;
    if (live) {
        const long long row = cell * nc + i;
        t = r[row];
        for (int q = 0; q < a.nq; ++q) {
            const long long j = cell + a.offsets[q];
            if (j < 0 || j >= a.cells) continue;
            t -= VT(a.data[(static_cast<long long>(q) * nc + a.p) * rows + row]) * xp[j];
        }
        if (!binv) out[row] = t;
    }
    if (!binv) return;  // the same for the whole block
    ts[tid] = t;
    __syncthreads();
    if (!live) return;
    VT sum = i == a.p ? xp[cell] : VT(0);
    const VT* b = bs + (lc * nc + i) * nc;
    for (int j = 0; j < nc; ++j) sum += b[j] * ts[lc * nc + j];
    out[cell * nc + i] = sum;
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
                 VT* d, VT* x, bool fresh)
{
    if (n == 0) return;
    set_device(exec);
    const unsigned g = cuda::grid_for(n, threads);
    auto s = cuda::stream(exec);
    if (a == VT(0) && fresh)
        smooth_step_kernel<VT, false, true><<<g, threads, 0, s>>>(n, a, b, dinv, r, d, x);
    else if (a == VT(0))
        smooth_step_kernel<VT, false, false><<<g, threads, 0, s>>>(n, a, b, dinv, r, d, x);
    else if (fresh)
        smooth_step_kernel<VT, true, true><<<g, threads, 0, s>>>(n, a, b, dinv, r, d, x);
    else
        smooth_step_kernel<VT, true, false><<<g, threads, 0, s>>>(n, a, b, dinv, r, d, x);
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

template <class MT, class VT>
void cpr_stage_two(const CudaExecutor& exec, const CprBdia<MT>& a, const VT* xp, const VT* r,
                   const VT* binv, VT* out)
{
    HEPTANE_ENSURE(a.nc >= 1 && a.nc <= 8 && a.nq <= CprBdia<MT>::max_offsets, NotSupported,
                   "CPR's fused second stage: block size " << a.nc << " (at most 8), " << a.nq
                                                           << " block offsets");
    if (a.cells == 0) return;
    set_device(exec);
    const int block = kStageTwoCells * a.nc;
    const std::size_t smem = sizeof(VT) * std::size_t(kStageTwoCells) * a.nc * (1 + a.nc);
    const unsigned grid =
        unsigned((static_cast<long long>(a.cells) + kStageTwoCells - 1) / kStageTwoCells);
    cpr_stage_two_kernel<MT, VT><<<grid, block, smem, cuda::stream(exec)>>>(a, xp, r, binv, out);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template void cpr_stage_two<double, double>(const CudaExecutor&, const CprBdia<double>&,
                                            const double*, const double*, const double*, double*);
template void cpr_stage_two<float, double>(const CudaExecutor&, const CprBdia<float>&,
                                           const double*, const double*, const double*, double*);
template void cpr_stage_two<float, float>(const CudaExecutor&, const CprBdia<float>&, const float*,
                                          const float*, const float*, float*);
template void cpr_stage_two<double, float>(const CudaExecutor&, const CprBdia<double>&,
                                           const float*, const float*, const float*, float*);

namespace {

/// amg_tail's team on CUDA: the threads of one CTA (host stand-ins where nvcc also compiles
/// the team's callers for the host; never run there)
#ifdef __CUDA_ARCH__
#define HEPTANE_ON_DEVICE(device, host) device
#else
#define HEPTANE_ON_DEVICE(device, host) host
#endif
struct BlockTeam {
    HEPTANE_HD index_t first() const
    {
        return HEPTANE_ON_DEVICE(static_cast<index_t>(threadIdx.x), 0);
    }
    HEPTANE_HD index_t stride() const
    {
        return HEPTANE_ON_DEVICE(static_cast<index_t>(blockDim.x), 1);
    }
    HEPTANE_HD void sync() const { HEPTANE_ON_DEVICE(__syncthreads(), (void)0); }
};
#undef HEPTANE_ON_DEVICE

constexpr int tail_threads = 1024;

template <class VT>
__global__ void __launch_bounds__(tail_threads)
    amg_tail_kernel(AmgTail<VT> g, const VT* __restrict__ b, VT* __restrict__ x)
{
    BlockTeam team;
    amg_tail_cycle(team, g, b, x);
}

}  // namespace

template <class VT>
void amg_tail(const CudaExecutor& exec, const AmgTail<VT>& g, const VT* b, VT* x)
{
    static_assert(sizeof(AmgTail<VT>) <= 4000, "a kernel parameter holds at most 4 KB");
    if (g.levels <= 0) return;
    set_device(exec);
    amg_tail_kernel<VT><<<1, tail_threads, 0, cuda::stream(exec)>>>(g, b, x);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(VT)                                                                    \
    template void amg_tail<VT>(const CudaExecutor&, const AmgTail<VT>&, const VT*, VT*);           \
    template void start_vector<VT>(const CudaExecutor&, index_t, VT*);                             \
    template void smooth_step<VT>(const CudaExecutor&, index_t, VT, VT, const VT*, const VT*, VT*, \
                                  VT*, bool);                                                      \
    template void dense_apply<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*);        \
    template void cpr_restrict<VT>(const CudaExecutor&, index_t, index_t, const VT*, const VT*,    \
                                   VT*);                                                           \
    template void cpr_prolong<VT>(const CudaExecutor&, index_t, index_t, index_t, const VT*, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
