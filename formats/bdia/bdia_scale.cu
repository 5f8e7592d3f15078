// BDIA-GH right block-diagonal scaling on CUDA, out = A B (bdia_kernels.hpp:
// bdia_right_scale), for the three (MT, VT) pairs. One thread per row: its D·Nc slots, each
// the sum of b products of A's slots in the same b-block with a column of B's block (A's
// values of the row come from L1 after the first read).
#include "formats/bdia/bdia_impl.cuh"

namespace heptane::kernels {

namespace {

template <class MT, class VT>
__global__ void __launch_bounds__(256)
    right_scale_kernel(bdia_detail::Params p, index_t b, int unit_q, const MT* __restrict__ in,
                       const VT* __restrict__ binv, MT* __restrict__ out)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= p.n) return;
    const long long br = r / p.nc;
    for (int q = 0; q < p.nd; ++q) {
        const long long cb = br + p.boff[q];
        const bool inside = cb >= 0 && cb < p.nbc;
        for (int s = 0; s < p.nc; ++s) {
            double sum = 0;
            if (q == unit_q)  // A_ii B_i = I
                sum = s == static_cast<int>(r - br * p.nc) ? 1.0 : 0.0;
            else if (inside) {
                const long long c = cb * p.nc + s;
                const int j = static_cast<int>(c % b);
                const VT* bp = binv + (c / b) * static_cast<long long>(b) * b + j;
                const MT* ap = in + static_cast<long long>(q * p.nc + s - j) * p.n + r;
                for (int i = 0; i < b; ++i)
                    sum += double(cuda_detail::ldcs(ap + i * p.n)) * double(__ldg(bp + i * b));
            }
            out[static_cast<long long>(q * p.nc + s) * p.n + r] = MT(sum);
        }
    }
}

}  // namespace

template <class MT, class VT>
void bdia_right_scale(const CudaExecutor& exec, const Bdia<MT>& a, index_t b, const VT* binv,
                      Bdia<MT>& out, bool unit_main)
{
    check_right_scale(a, b, out, unit_main);
    out.unit_main_block = unit_main;
    if (a.rows == 0 || a.num_block_diagonals() == 0) return;
    cuda_detail::make_current(exec);
    cuda_detail::ensure_on_device(exec, *a.exec(), "BDIA");
    cuda_detail::ensure_on_device(exec, *out.data.exec(), "BDIA");
    HEPTANE_ENSURE(a.num_block_diagonals() <= bdia_detail::max_block_diagonals, NotSupported,
                   "BDIA right scaling on CUDA takes at most " << bdia_detail::max_block_diagonals
                                                               << " block diagonals");
    const bdia_detail::Params p = bdia_detail::make_params(a, Op::normal);
    right_scale_kernel<MT, VT><<<cuda::grid_for(p.n, 256), 256, 0, cuda::stream(exec)>>>(
        p, b, unit_main ? int(a.main_block_diagonal()) : -1, a.data.data(), binv, out.data.data());
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                       \
    template void bdia_right_scale<MT, VT>(const CudaExecutor&, const Bdia<MT>&, index_t, \
                                           const VT*, Bdia<MT>&, bool);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
