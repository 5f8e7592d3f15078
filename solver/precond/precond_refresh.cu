// The values-only refresh kernels on CUDA (precond_kernels.hpp): the numeric part of Jacobi
// and block Jacobi from CSR values already on the device, and the scatter of CSR values into
// another layout. The block inversion is block_kernels.hpp's, the host's operations with the
// host's roundings, so a block inverted here has the bits the host setup gives it.
#include <climits>
#include <cstdint>

#include "core/cuda_common.hpp"
#include "solver/precond/block_kernels.hpp"
#include "solver/precond/precond_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr int block_threads = 128;
/// Largest nc the run-time-size kernel (NC = 0) takes: its block lives in local arrays.
constexpr index_t max_runtime_nc = 8;

// one thread per block c: B_c gathered, inverted into inv (scratch of 3·nc² doubles in
// registers / local memory); the lowest failing block into *flag
template <int NC, class IT, class VT>
__global__ void block_diag_invert_kernel(index_t nblocks, index_t nc, const IT* __restrict__ map,
                                         const double* __restrict__ values, VT* __restrict__ inv,
                                         index_t* flag)
{
    constexpr int cap = NC > 0 ? NC * NC : max_runtime_nc * max_runtime_nc;
    double scratch[3 * cap];
    const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= nblocks) return;
    if (!detail::invert_gathered_block<NC>(index_t(c), nc, map, values, inv, scratch))
        atomicMin(flag, index_t(c));
}

// one thread per row r: its nc entries of the gather map; repeated columns counted
template <class RP, class IT>
__global__ void block_diag_map_kernel(index_t rows, index_t nc, const RP* __restrict__ row_ptr,
                                      const index_t* __restrict__ col, IT* __restrict__ map,
                                      unsigned long long* repeats)
{
    const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const index_t c = index_t(r) / nc;
    IT* m = map + static_cast<long long>(c) * nc * nc + static_cast<long long>(r % nc) * nc;
    for (index_t b = 0; b < nc; ++b) m[b] = IT(-1);
    unsigned long long rep = 0;
    const RP lo = row_ptr[r], hi = row_ptr[r + 1];
    for (RP k = lo; k < hi; ++k) {
        const index_t j = col[k];
        if (k > lo && j == col[k - 1]) ++rep;
        if (j < 0 || j >= rows || j / nc != c) continue;
        if (m[j % nc] < 0) m[j % nc] = IT(k);
    }
    if (rep) atomicAdd(repeats, rep);
}

}  // namespace

template <class IT, class VT>
index_t block_diag_invert(const CudaExecutor& exec, index_t nblocks, index_t nc, const IT* map,
                          const double* values, VT* inv, index_t* flag)
{
    HEPTANE_ENSURE(
        nc >= 1 && nc <= max_runtime_nc, NotSupported,
        "block-Jacobi numeric part on CUDA: block size " << nc << " > " << max_runtime_nc);
    if (nblocks <= 0) return -1;
    const auto s = cuda::stream(exec);
    static const index_t none = INT_MAX;  // static: the copy may read it after we return
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(flag, &none, sizeof(index_t), cudaMemcpyHostToDevice, s));
    const unsigned grid = cuda::grid_for(nblocks, block_threads);
    detail::dispatch_block_size(nc, [&](auto NC) {
        block_diag_invert_kernel<decltype(NC)::value, IT, VT>
            <<<grid, block_threads, 0, s>>>(nblocks, nc, map, values, inv, flag);
    });
    HEPTANE_CUDA_LAUNCH_CHECK();
    index_t first = INT_MAX;
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(&first, flag, sizeof(index_t), cudaMemcpyDeviceToHost, s));
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
    return first == INT_MAX ? -1 : first;
}

template <class RP, class IT>
offset_t block_diag_map(const CudaExecutor& exec, index_t nblocks, index_t nc, const RP* row_ptr,
                        const index_t* col, IT* map)
{
    const index_t rows = nblocks * nc;
    if (rows <= 0) return 0;
    const auto s = cuda::stream(exec);
    unsigned long long* d = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&d, sizeof(*d), s));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(*d), s));
    block_diag_map_kernel<<<cuda::grid_for(rows, 256), 256, 0, s>>>(rows, nc, row_ptr, col, map, d);
    HEPTANE_CUDA_LAUNCH_CHECK();
    unsigned long long repeats = 0;
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(&repeats, d, sizeof(repeats), cudaMemcpyDeviceToHost, s));
    HEPTANE_CUDA_CHECK(cudaFreeAsync(d, s));
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
    return offset_t(repeats);
}

__global__ void widen_row_ptr_kernel(long long n1, const index_t* __restrict__ in,
                                     offset_t* __restrict__ out)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n1;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = offset_t(in[i]);
}

void widen_row_ptr(const CudaExecutor& exec, index_t n, const index_t* in, offset_t* out)
{
    if (n < 0) return;
    constexpr int threads = 256;
    const long long n1 = (long long)n + 1;
    const long long blocks = (n1 + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
    widen_row_ptr_kernel<<<grid, threads, 0, cuda::stream(exec)>>>(n1, in, out);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(IT, VT)                                                              \
    template index_t block_diag_invert<IT, VT>(const CudaExecutor&, index_t, index_t, const IT*, \
                                               const double*, VT*, index_t*);
HEPTANE_INDEX_VALUE_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

#define HEPTANE_INSTANTIATE(RP, IT)                                                            \
    template offset_t block_diag_map<RP, IT>(const CudaExecutor&, index_t, index_t, const RP*, \
                                             const index_t*, IT*);
HEPTANE_BLOCK_DIAG_MAP_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
