// Preconditioner kernels on CUDA. The triangular solves of ILU(0) are level-scheduled: the
// host computed the levels at setup; here each level is one launch with one thread per block
// row. Correctness first: a row's blocks are read by one thread (uncoalesced for Nc > 1).
#include "core/cuda_common.hpp"
#include "solver/precond/precond_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr int block_threads = 256;

template <class VT>
__global__ void diag_scale_kernel(index_t n, const VT* d, const VT* r, VT* z)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) z[i] = d[i] * r[i];
}

// one thread per scalar row: z_(c,a) = Σ_k B_c[a][k] r_(c,k)
template <class VT>
__global__ void block_diag_kernel(index_t nblocks, index_t nc, const VT* binv, const VT* r,
                                  VT* z)
{
    const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= static_cast<long long>(nblocks) * nc) return;
    const long long c = row / nc;
    const index_t a = static_cast<index_t>(row - c * nc);
    const VT* b = binv + (c * nc + a) * nc;  // row a of block c
    const VT* rc = r + c * nc;
    VT sum = 0;
    for (index_t k = 0; k < nc; ++k) sum += b[k] * rc[k];
    z[row] = sum;
}

// one thread per block row of the level (see triangular_solve in precond_kernels.hpp)
template <class VT>
__global__ void triangular_level_kernel(TriangularFactor<VT> f, const index_t* rows,
                                        index_t count, VT* in, VT* out)
{
    const index_t q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    const index_t i = rows[q];
    const index_t nc = f.nc;
    const long long nc2 = static_cast<long long>(nc) * nc;
    VT* w = in + static_cast<long long>(i) * nc;
    for (offset_t k = f.row_ptr[i]; k < f.row_ptr[i + 1]; ++k) {
        const VT* blk = f.val + nc2 * k;
        const VT* xj = out + static_cast<long long>(f.col[k]) * nc;
        for (index_t a = 0; a < nc; ++a) {
            VT sum = 0;
            for (index_t b = 0; b < nc; ++b) sum += blk[a * nc + b] * xj[b];
            w[a] -= sum;
        }
    }
    VT* zi = out + static_cast<long long>(i) * nc;
    if (!f.diag_inv) {
        if (zi != w)
            for (index_t a = 0; a < nc; ++a) zi[a] = w[a];
        return;
    }
    const VT* d = f.diag_inv + nc2 * i;
    for (index_t a = 0; a < nc; ++a) {
        VT sum = 0;
        for (index_t b = 0; b < nc; ++b) sum += d[a * nc + b] * w[b];
        zi[a] = sum;
    }
}

}  // namespace

template <class VT>
void diag_scale(const CudaExecutor& exec, index_t n, const VT* d, const VT* r, VT* z)
{
    if (n <= 0) return;
    diag_scale_kernel<<<cuda::grid_for(n, block_threads), block_threads, 0, cuda::stream(exec)>>>(
        n, d, r, z);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void block_diag_apply(const CudaExecutor& exec, index_t nblocks, index_t nc, const VT* binv,
                      const VT* r, VT* z)
{
    const long long rows = static_cast<long long>(nblocks) * nc;
    if (rows <= 0) return;
    block_diag_kernel<<<cuda::grid_for(rows, block_threads), block_threads, 0,
                        cuda::stream(exec)>>>(nblocks, nc, binv, r, z);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void triangular_solve(const CudaExecutor& exec, const TriangularFactor<VT>& f, VT* in, VT* out)
{
    const auto s = cuda::stream(exec);
    if (!f.diag_inv && in != out) {  // the lower solve runs in place on out
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(out, in,
                                           sizeof(VT) * std::size_t(f.block_rows) * f.nc,
                                           cudaMemcpyDeviceToDevice, s));
        in = out;
    }
    constexpr int threads = 128;
    for (index_t l = 0; l < f.levels; ++l) {
        const index_t begin = f.level_ptr[l];
        const index_t count = f.level_ptr[l + 1] - begin;
        if (count <= 0) continue;
        triangular_level_kernel<<<cuda::grid_for(count, threads), threads, 0, s>>>(
            f, f.level_rows + begin, count, in, out);
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
}

#define HEPTANE_INSTANTIATE(VT)                                                              \
    template void diag_scale<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*);   \
    template void block_diag_apply<VT>(const CudaExecutor&, index_t, index_t, const VT*,     \
                                       const VT*, VT*);                                      \
    template void triangular_solve<VT>(const CudaExecutor&, const TriangularFactor<VT>&, VT*, \
                                       VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
