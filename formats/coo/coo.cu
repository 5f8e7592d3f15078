// COO SpMV on CUDA. Canonical COO is sorted by row, so y = A x is a segmented reduction:
// y = beta*y first, then each warp takes 32 consecutive entries at a time, reduces the runs
// of equal rows with shuffles (a run is contiguous because rows are sorted), and the first
// lane of each run adds the run's sum to y with one atomic: one atomic per (row, warp step)
// instead of one per entry. A^T x scatters alpha*a_ij*x_i into y_j with an atomic per entry.
//
// Traffic of y = A x (fp64): 16 bytes per entry (value, row and column), x about once, y
// read and written by the scaling pass and again by the atomics.
#include "formats/coo/coo_kernels.hpp"
#include "formats/cuda_spmv_common.cuh"

namespace heptane::kernels {

namespace {

using namespace cuda_detail;

constexpr int coo_block = 256;
constexpr int coo_steps = 4;  // warp steps of 32 entries per warp

// y_r += alpha * sum over the entries of row r (y already holds beta*y)
template <class MT, class VT>
__global__ void __launch_bounds__(coo_block)
    coo_segmented_kernel(offset_t nnz, const index_t* __restrict__ row,
                         const index_t* __restrict__ col, const MT* __restrict__ v, VT alpha,
                         const VT* __restrict__ x, VT* __restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const long long base = warp * 32 * coo_steps;
#pragma unroll
    for (int step = 0; step < coo_steps; ++step) {
        const long long e = base + step * 32 + lane;
        const bool valid = e < nnz;
        index_t r = valid ? ldg(row + e) : index_t(-1);  // -1 only after the last entry
        VT s = valid ? VT(ldcs(v + e)) * ldg(x + ldg(col + e)) : VT(0);
        // suffix sums within runs of equal r: lane i gets the sum of its run from i onwards
#pragma unroll
        for (int o = 1; o < 32; o *= 2) {
            const index_t ro = __shfl_down_sync(0xffffffffu, r, o);
            const VT so = __shfl_down_sync(0xffffffffu, s, o);
            if (lane + o < 32 && ro == r) s += so;
        }
        const index_t prev = __shfl_up_sync(0xffffffffu, r, 1);
        if (valid && (lane == 0 || prev != r)) atomicAdd(y + r, alpha * s);
        if (base + step * 32 + 32 >= nnz) break;  // warp-uniform
    }
}

// y_c += alpha * a_rc * x_r (y already holds beta*y)
template <class MT, class VT>
__global__ void __launch_bounds__(coo_block)
    coo_scatter_kernel(offset_t nnz, const index_t* __restrict__ row,
                       const index_t* __restrict__ col, const MT* __restrict__ v, VT alpha,
                       const VT* __restrict__ x, VT* __restrict__ y)
{
    const long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (e >= nnz) return;
    atomicAdd(y + ldg(col + e), alpha * VT(ldcs(v + e)) * ldg(x + ldg(row + e)));
}

}  // namespace

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Coo<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    if (ny == 0) return;
    make_current(exec);
    scale(exec, ny, beta, y);
    const offset_t nnz = a.nnz();
    if (nnz == 0) return;
    ensure_on_device(exec, *a.exec(), "COO");
    ensure_on_device(exec, *a.row.exec(), "COO");
    auto s = cuda::stream(exec);
    if (op == Op::normal) {
        const long long warps = (nnz + 32LL * coo_steps - 1) / (32LL * coo_steps);
        coo_segmented_kernel<MT, VT><<<cuda::grid_for(warps * 32, coo_block), coo_block, 0, s>>>(
            nnz, a.row.data(), a.col.data(), a.val.data(), alpha, x, y);
    } else {
        coo_scatter_kernel<MT, VT><<<cuda::grid_for(nnz, coo_block), coo_block, 0, s>>>(
            nnz, a.row.data(), a.col.data(), a.val.data(), alpha, x, y);
    }
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CudaExecutor&, const Coo<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
