// The boundary part of a distributed BDIA product on CUDA (coupling_kernels.hpp): one thread
// per boundary row, the D*Nc slots of the row in turn (reads of one slot are coalesced over
// the rows). A small fraction of the rows (about 2 planes of a rank's range). And the pack of a
// halo of arbitrary rows (one thread a value).
#include "core/cuda_common.hpp"
#include "distributed/coupling_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr int max_diagonals = 256;  // D*Nc: 7 block diagonals up to Nc = 36

struct CouplingParams {
    long long n;
    index_t nc, nk;
    CouplingRows c;
    index_t off[max_diagonals];  // element offsets of the D*Nc diagonals
};

template <class MT, class VT>
__global__ void coupling_kernel(CouplingParams p, const MT* __restrict__ data, VT alpha,
                                const VT* __restrict__ halo, VT* __restrict__ y)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long nb = p.n - p.c.upper_begin;
    if (t >= p.c.lower_rows + nb) return;
    const long long r = t < p.c.lower_rows ? t : p.c.upper_begin + (t - p.c.lower_rows);
    const long long base = r - r % p.nc;
    VT sum = 0;
    for (int k = 0; k < p.nk; ++k) {
        const long long col = base + p.off[k];
        long long h;
        if (col < 0 && col >= -p.c.lower)
            h = p.c.lower + col;
        else if (col >= p.n && col - p.n < p.c.upper)
            h = p.c.lower + (col - p.n);
        else
            continue;
        sum += VT(data[k * p.n + r]) * halo[h];
    }
    y[r] += alpha * sum;
}

template <class VT>
__global__ void gather_rows_kernel(index_t n, const index_t* __restrict__ rows,
                                   const VT* __restrict__ x, VT* __restrict__ out)
{
    const long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (k < n) out[k] = x[rows[k]];
}

}  // namespace

template <class MT, class VT>
void bdia_coupling(const CudaExecutor& exec, const Bdia<MT>& a, CouplingRows c, VT alpha,
                   const VT* halo, VT* y)
{
    CouplingParams p{};
    p.n = a.rows;
    p.nc = a.block_size;
    p.nk = a.num_diagonals();
    p.c = c;
    HEPTANE_ENSURE(p.nk <= max_diagonals, NotSupported,
                   "distributed BDIA on CUDA: " << p.nk << " element diagonals (at most "
                                                << max_diagonals << ")");
    for (index_t k = 0; k < p.nk; ++k) p.off[k] = a.offset(k);
    const long long total = c.lower_rows + (a.rows - c.upper_begin);
    if (total <= 0) return;
    coupling_kernel<<<cuda::grid_for(total, 256), 256, 0, cuda::stream(exec)>>>(p, a.data.data(),
                                                                                alpha, halo, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template void bdia_coupling<double, double>(const CudaExecutor&, const Bdia<double>&, CouplingRows,
                                            double, const double*, double*);
template void bdia_coupling<float, float>(const CudaExecutor&, const Bdia<float>&, CouplingRows,
                                          float, const float*, float*);
template void bdia_coupling<float, double>(const CudaExecutor&, const Bdia<float>&, CouplingRows,
                                           double, const double*, double*);

template <class VT>
void gather_rows(const CudaExecutor& exec, index_t n, const index_t* rows, const VT* x, VT* out)
{
    if (n <= 0) return;
    gather_rows_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(exec)>>>(n, rows, x, out);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template void gather_rows<double>(const CudaExecutor&, index_t, const index_t*, const double*,
                                  double*);
template void gather_rows<float>(const CudaExecutor&, index_t, const index_t*, const float*,
                                 float*);

}  // namespace heptane::kernels
