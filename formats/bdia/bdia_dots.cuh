// BDIA-GH y = A x with the dot products of a Krylov step fused into the product: kernel
// templates. bdia_dots_fp64.cu, bdia_dots_fp32.cu and bdia_dots_mixed.cu instantiate them.
//
// A BiCGStab iteration follows each product with a reduction over its result:
//     v = A p̂,  then α = ρ / (r̂, v)                   (the alpha step reads r̂ and v: 2 passes)
//     t = A ŝ,  then (t, s), (t, t), (s, s) for ω     (the omega step reads t and s: 2 passes)
// and CG follows q = A p with (p, q). Here the product computes those sums while each y_r is
// still in a register: the result is never read back, and w_r is read next to it (for w = x,
// i.e. no preconditioner, w_r is the x entry the row has just loaded: an L1/L2 hit). Per
// iteration of unpreconditioned BiCGStab that is 3 vector passes fewer (22 -> 19); with a
// preconditioner 2 fewer. Each CTA leaves one partial per sum; a small reduction over the
// partials (solver/vector: *_partials) finishes the step, in block order (reproducible).
//
// The product is the tuned kernel's (bdia_impl.cuh: row_sum / row_sum2, the tuned launch
// shape of each block size), with beta = 0; the bytes are the product's plus one read of w
// when w is not x.
#pragma once

#include "core/cuda_block_sum.cuh"
#include "formats/bdia/bdia_impl.cuh"

namespace heptane::kernels::bdia_detail {

/// acc[0] += w y;  ND = 3: acc[1] += y y, acc[2] += w w   (in double)
template <int ND, class VT>
__device__ __forceinline__ void add_dots(double (&acc)[ND], VT wr, VT yr)
{
    const double wd = wr, yd = yr;
    acc[0] += wd * yd;
    if constexpr (ND == 3) {
        acc[1] += yd * yd;
        acc[2] += wd * wd;
    }
}

/// y = A x and the partial sums of ND dot products (ND = 1: (w, y); ND = 3: (w, y), (y, y),
/// (w, w)): partials[k * gridDim.x + blockIdx.x]. Every thread reaches the block sum (no
/// early return); threads past the last row add nothing.
template <int NC, int D, int G, int RPT, int ND, class MT, class VT>
__global__ void __launch_bounds__(256)
    ax_dots_kernel(Params p, const MT* __restrict__ data, const VT* __restrict__ x,
                   VT* __restrict__ y, const VT* __restrict__ w, double* __restrict__ partials)
{
    bool interior;
    const long long r = thread_row<NC, RPT>(p, interior);
    double acc[ND];
#pragma unroll
    for (int k = 0; k < ND; ++k) acc[k] = 0.0;
    if (r < p.n) {
        VT s[RPT];
        thread_sums<NC, D, G, RPT>(p, r, interior, data, x, s);
#pragma unroll
        for (int k = 0; k < RPT; ++k) {
            y[r + k] = s[k];
            add_dots<ND>(acc, ldg(w + r + k), s[k]);
        }
    }
    cuda_detail::block_sum<ND>(acc);
    if (threadIdx.x == 0)
#pragma unroll
        for (int k = 0; k < ND; ++k) partials[k * gridDim.x + blockIdx.x] = acc[k];
}

/// Launch the fused product for compile-time NC (0: generic) in the tuned shape of (MT, VT);
/// returns the CTA count (partials per sum).
template <int NC, int D, int ND, class MT, class VT>
index_t launch_ax_dots(const CudaExecutor& exec, const Params& p, const MT* data, const VT* x,
                       VT* y, const VT* w, double* partials, std::size_t capacity)
{
    constexpr int RPT = NC > 0 && NC % 2 == 0 ? tuned_rows_per_thread<MT>(NC) : 1;
    constexpr int G = NC == 0                       ? 0
                      : tuned_alt_stage<MT, VT>(NC) ? alt_stage(NC)
                                                    : primary_stage(NC, D);
    constexpr int block = 256;
    const unsigned grid = cuda::grid_for((p.n + RPT - 1) / RPT, block);
    HEPTANE_ENSURE(std::size_t(ND) * grid <= capacity, InputError,
                   "fused BDIA product: " << std::size_t(ND) * grid
                                          << " partial sums do not fit the " << capacity
                                          << " given (spmv_dots_capacity)");
    ax_dots_kernel<NC, D, G, RPT, ND, MT, VT>
        <<<grid, block, 0, cuda::stream(exec)>>>(p, data, x, y, w, partials);
    HEPTANE_CUDA_LAUNCH_CHECK();
    return static_cast<index_t>(grid);
}

template <int ND, class MT, class VT>
index_t spmv_dots_nd(const CudaExecutor& exec, const Params& p, const MT* data, const VT* x, VT* y,
                     const VT* w, double* partials, std::size_t capacity)
{
    if (p.nd == 7) {
        switch (p.nc) {
            case 1:
                return launch_ax_dots<1, 7, ND>(exec, p, data, x, y, w, partials, capacity);
            case 2:
                return launch_ax_dots<2, 7, ND>(exec, p, data, x, y, w, partials, capacity);
            case 3:
                return launch_ax_dots<3, 7, ND>(exec, p, data, x, y, w, partials, capacity);
            case 4:
                return launch_ax_dots<4, 7, ND>(exec, p, data, x, y, w, partials, capacity);
            case 8:
                return launch_ax_dots<8, 7, ND>(exec, p, data, x, y, w, partials, capacity);
            case 16:
                return launch_ax_dots<16, 7, ND>(exec, p, data, x, y, w, partials, capacity);
            default:
                break;
        }
    }
    return launch_ax_dots<0, 0, ND>(exec, p, data, x, y, w, partials, capacity);
}

template <class MT, class VT>
index_t spmv_dots_impl(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                       int count, double* partials, std::size_t capacity)
{
    HEPTANE_ENSURE(count == 1 || count == 3, InputError,
                   "fused BDIA product: " << count << " dot products (1 or 3)");
    if (a.rows == 0 || a.num_block_diagonals() == 0) return 0;  // nothing to fuse into
    make_current(exec);
    HEPTANE_ENSURE(
        a.block_size > 0 && a.rows % a.block_size == 0 && a.cols % a.block_size == 0,
        DimensionMismatch,
        "BDIA block size " << a.block_size << " does not divide " << a.rows << " x " << a.cols);
    HEPTANE_ENSURE(a.rows == a.cols, DimensionMismatch,
                   "fused BDIA product: w and y share rows, so A must be square, not "
                       << a.rows << " x " << a.cols);
    if (a.num_block_diagonals() > max_block_diagonals) return 0;
    ensure_on_device(exec, *a.exec(), "BDIA");
    HEPTANE_ENSURE(a.data.size() == static_cast<std::size_t>(a.slots()), DimensionMismatch,
                   "BDIA data holds " << a.data.size() << " values, expected " << a.slots());
    const Params p = make_params(a, Op::normal);
    if (count == 1) return spmv_dots_nd<1>(exec, p, a.data.data(), x, y, w, partials, capacity);
    return spmv_dots_nd<3>(exec, p, a.data.data(), x, y, w, partials, capacity);
}

}  // namespace heptane::kernels::bdia_detail

namespace heptane::kernels {

template <class MT, class VT>
index_t spmv_dots(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                  int count, double* partials, std::size_t capacity)
{
    return bdia_detail::spmv_dots_impl<MT, VT>(exec, a, x, y, w, count, partials, capacity);
}

}  // namespace heptane::kernels

/// Instantiate the fused BDIA product for one (MT, VT) pair (inside heptane::kernels).
#define HEPTANE_INSTANTIATE_BDIA_DOTS(MT, VT)                                                \
    template index_t spmv_dots<MT, VT>(const CudaExecutor&, const Bdia<MT>&, const VT*, VT*, \
                                       const VT*, int, double*, std::size_t);
