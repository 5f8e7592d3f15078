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
__global__ void block_diag_kernel(index_t nblocks, index_t nc, const VT* binv, const VT* r, VT* z)
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
__global__ void triangular_level_kernel(TriangularFactor<VT> f, const index_t* rows, index_t count,
                                        VT* in, VT* out)
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

// Multi-colour ILU(0), one colour of one triangle: one thread per scalar row s of the
// colour (see MulticolorFactor in precond_kernels.hpp). Lower (dinv == nullptr):
//     y_(i,a) = r_(perm i, a) − Σ_k Σ_b L_k[a][b] y_(col_k, b)
// Upper: w_(i,a) = y_(i,a) − Σ_k Σ_b U_k[a][b] z'_(col_k, b); z'_(i,a) = Σ_b D⁻¹[a][b] w_(i,b),
// written to y_(i,a) (in place: no row of this colour reads it) and to z_(perm i, a).
// Values and column indices are stored column-major over the colour's scalar rows, so a
// warp reads them coalesced; the nc threads of a block row exchange w through shared
// memory (the thread block holds whole block rows: blockDim.x is a multiple of nc).
template <class VT>
__global__ void multicolor_color_kernel(index_t p0, index_t rows_c, index_t nc, index_t width,
                                        const index_t* __restrict__ col, const VT* __restrict__ val,
                                        const VT* __restrict__ dinv,
                                        const index_t* __restrict__ perm, const VT* __restrict__ r,
                                        VT* y, VT* __restrict__ z)
{
    extern __shared__ unsigned char shared_raw[];
    VT* sh = reinterpret_cast<VT*>(shared_raw);
    const long long rows_cs = static_cast<long long>(rows_c) * nc;
    const long long s = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const bool active = s < rows_cs;
    const index_t li = active ? static_cast<index_t>(s / nc) : 0;
    const index_t a = active ? static_cast<index_t>(s - static_cast<long long>(li) * nc) : 0;
    const index_t i = p0 + li;
    VT w = 0;
    if (active) {
        w = dinv ? y[static_cast<long long>(i) * nc + a]
                 : r[static_cast<long long>(perm[i]) * nc + a];
        for (index_t k = 0; k < width; ++k) {
            const index_t j = col[static_cast<long long>(k) * rows_c + li];
            if (j < 0) break;
            const VT* xj = y + static_cast<long long>(j) * nc;
            const VT* v = val + static_cast<long long>(k) * nc * rows_cs + s;
            for (index_t b = 0; b < nc; ++b) w -= v[b * rows_cs] * xj[b];
        }
    }
    if (!dinv) {
        if (active) y[static_cast<long long>(i) * nc + a] = w;
        return;
    }
    if (nc == 1) {
        if (active) {
            const VT zi = dinv[s] * w;
            y[i] = zi;
            z[perm[i]] = zi;
        }
        return;
    }
    sh[threadIdx.x] = w;
    __syncthreads();
    if (!active) return;
    const VT* wb = sh + (threadIdx.x - a);
    VT zi = 0;
    for (index_t b = 0; b < nc; ++b) zi += dinv[b * rows_cs + s] * wb[b];
    y[static_cast<long long>(i) * nc + a] = zi;
    z[static_cast<long long>(perm[i]) * nc + a] = zi;
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
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(out, in, sizeof(VT) * std::size_t(f.block_rows) * f.nc,
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

template <class VT>
void multicolor_solve(const CudaExecutor& exec, const MulticolorFactor<VT>& f, const VT* r, VT* y,
                      VT* z)
{
    const auto s = cuda::stream(exec);
    const index_t nc = f.nc;
    HEPTANE_ENSURE(nc >= 1 && nc <= 256, NotSupported,
                   "multi-colour ILU(0) on CUDA: block size " << nc << " > 256");
    const int threads = nc * (256 / nc);  // whole block rows per thread block
    for_each_color(
        f, [&](bool lower, const ColorTriangle<VT>& t, index_t c, index_t p0, index_t rows_c) {
            const long long rows_cs = static_cast<long long>(rows_c) * nc;
            if (rows_cs <= 0) return;
            const VT* dinv = lower ? nullptr : f.diag_inv + static_cast<long long>(p0) * nc * nc;
            const std::size_t shared = lower || nc == 1 ? 0 : sizeof(VT) * std::size_t(threads);
            multicolor_color_kernel<VT><<<cuda::grid_for(rows_cs, threads), threads, shared, s>>>(
                p0, rows_c, nc, t.width[c], t.col + t.col_off[c], t.val + t.val_off[c], dinv,
                f.perm, r, y, z);
            HEPTANE_CUDA_LAUNCH_CHECK();
        });
}

#define HEPTANE_INSTANTIATE(VT)                                                               \
    template void diag_scale<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*);    \
    template void block_diag_apply<VT>(const CudaExecutor&, index_t, index_t, const VT*,      \
                                       const VT*, VT*);                                       \
    template void triangular_solve<VT>(const CudaExecutor&, const TriangularFactor<VT>&, VT*, \
                                       VT*);                                                  \
    template void multicolor_solve<VT>(const CudaExecutor&, const MulticolorFactor<VT>&,      \
                                       const VT*, VT*, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
