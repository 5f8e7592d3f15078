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
// preconditioner 2 fewer. Each CTA leaves one partial per sum. Then either a small reduction
// over the partials (solver/vector: *_partials) finishes the step, or -- with a DotsFinish,
// one process -- the last CTA to finish does: it adds the partials up (thread t the CTAs t,
// t + 256, ...; then the block sum: a fixed order, reproducible) and runs the step's finalize
// on the totals (solver/vector/dots_finish.hpp). That saves the reduction's launch and its
// pass over the partials, twice per BiCGStab iteration.
//
// The product is the tuned kernel's (bdia_impl.cuh: row_sum / row_sum2, the tuned launch
// shape of each block size), with beta = 0; the bytes are the product's plus one read of w
// when w is not x.
#pragma once

#include "core/cuda_block_sum.cuh"
#include "formats/bdia/bdia_impl.cuh"
#include "solver/vector/dots_finish.hpp"

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

/// thread_row (bdia_impl.cuh) for tile `tile` of blockDim.x * RPT rows instead of blockIdx.x.
template <int NC, int RPT>
__device__ __forceinline__ long long tile_row(const Params& p, long long tile, bool& interior)
{
    const long long cta_rows = static_cast<long long>(blockDim.x) * RPT;
    const long long r_begin = tile * cta_rows;
    const long long r_end = r_begin + cta_rows < p.n ? r_begin + cta_rows : p.n;
    const int nc = NC > 0 ? NC : p.nc;
    interior =
        r_begin >= static_cast<long long>(p.lo) * nc && r_end <= static_cast<long long>(p.hi) * nc;
    return r_begin + static_cast<long long>(threadIdx.x) * RPT;
}

/// The last CTA of a fused product with a DotsFinish: the partials of every CTA added up
/// (thread t: CTAs t, t + blockDim.x, ... in order; then the block sum) and the step's
/// finalize run by thread 0. The CTA's own partial was written and fenced before its ticket.
template <int ND>
__device__ void finish_partials(const double* partials, const DotsFinish& finish)
{
    __threadfence();
    double acc[ND];
#pragma unroll
    for (int k = 0; k < ND; ++k) acc[k] = 0.0;
    const unsigned parts = gridDim.x;
#pragma unroll 4
    for (unsigned b = threadIdx.x; b < parts; b += blockDim.x)
#pragma unroll
        for (int k = 0; k < ND; ++k) acc[k] += __ldcg(&partials[k * parts + b]);
    cuda_detail::block_sum<ND>(acc);
    if (threadIdx.x == 0) finish_dots(finish, acc);
}

/// y = A x and the partial sums of ND dot products (ND = 1: (w, y); ND = 3: (w, y), (y, y),
/// (w, w)): partials[k * gridDim.x + blockIdx.x]. The rows come in tiles of the plain
/// product's CTA (blockDim.x * RPT rows, the same rows per thread); a CTA takes the tiles
/// blockIdx.x, blockIdx.x + gridDim.x, ... and sums once at the end, so the block sum is paid
/// once per resident CTA rather than once per 256 rows (at Nc = 1 it made the fused product
/// slower than the plain product plus a reduction kernel). Every thread reaches the block
/// sum; threads past the last row add nothing. finish.kind != 0: the last CTA
/// (finish.state->ticket, which it wraps back to 0) finishes the step (finish_partials).
template <int NC, int D, int G, int RPT, int ND, class MT, class VT>
__global__ void __launch_bounds__(256)
    ax_dots_kernel(Params p, const MT* __restrict__ data, const VT* __restrict__ x,
                   VT* __restrict__ y, const VT* __restrict__ w, double* __restrict__ partials,
                   long long tiles, DotsFinish finish)
{
    double acc[ND];
#pragma unroll
    for (int k = 0; k < ND; ++k) acc[k] = 0.0;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        bool interior;
        const long long r = tile_row<NC, RPT>(p, tile, interior);
        if (r < p.n) {
            VT s[RPT];
            thread_sums<NC, D, G, RPT>(p, r, interior, data, x, s);
#pragma unroll
            for (int k = 0; k < RPT; ++k) {
                y[r + k] = s[k];
                add_dots<ND>(acc, ldg(w + r + k), s[k]);
            }
        }
    }
    cuda_detail::block_sum<ND>(acc);
    if (finish.kind == 0) {
        if (threadIdx.x == 0)
#pragma unroll
            for (int k = 0; k < ND; ++k) partials[k * gridDim.x + blockIdx.x] = acc[k];
        return;
    }
    __shared__ bool last;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int k = 0; k < ND; ++k) partials[k * gridDim.x + blockIdx.x] = acc[k];
        __threadfence();
        last = atomicInc(&finish.state->ticket, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) finish_partials<ND>(partials, finish);
}

/// Launch the fused product for compile-time NC (0: generic) in the tuned shape of (MT, VT);
/// returns the CTA count (partials per sum).
template <int NC, int D, int ND, class MT, class VT>
index_t launch_ax_dots(const CudaExecutor& exec, const Params& p, const MT* data, const VT* x,
                       VT* y, const VT* w, double* partials, std::size_t capacity,
                       const DotsFinish& finish)
{
    constexpr int RPT = NC > 0 && NC % 2 == 0 ? tuned_rows_per_thread<MT>(NC) : 1;
    constexpr int G = NC == 0                       ? 0
                      : tuned_alt_stage<MT, VT>(NC) ? alt_stage(NC)
                                                    : primary_stage(NC, D);
    constexpr int block = 256;
    const auto kernel = ax_dots_kernel<NC, D, G, RPT, ND, MT, VT>;
    // as many CTAs as are resident at once (the occupancy of this instantiation, asked once),
    // the tiles shared out evenly: ceil(tiles / grid) each
    static const int resident = [&] {
        int b = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, block, 0) != cudaSuccess) {
            (void)cudaGetLastError();
            b = 0;
        }
        return b > 0 ? b : 1;
    }();
    const long long tiles = cuda::grid_for((p.n + RPT - 1) / RPT, block);
    const long long cap = static_cast<long long>(resident) *
                          (exec.multiprocessors() > 0 ? exec.multiprocessors() : 16);
    const long long per = (tiles + cap - 1) / cap;
    const auto grid = static_cast<unsigned>((tiles + per - 1) / per);
    HEPTANE_ENSURE(std::size_t(ND) * grid <= capacity, InputError,
                   "fused BDIA product: " << std::size_t(ND) * grid
                                          << " partial sums do not fit the " << capacity
                                          << " given (spmv_dots_capacity)");
    kernel<<<grid, block, 0, cuda::stream(exec)>>>(p, data, x, y, w, partials, tiles, finish);
    HEPTANE_CUDA_LAUNCH_CHECK();
    return static_cast<index_t>(grid);
}

template <int ND, class MT, class VT>
index_t spmv_dots_nd(const CudaExecutor& exec, const Params& p, const MT* data, const VT* x, VT* y,
                     const VT* w, double* partials, std::size_t capacity, const DotsFinish& finish)
{
    if (p.nd == 7) {
        switch (p.nc) {
            case 1:
                return launch_ax_dots<1, 7, ND>(exec, p, data, x, y, w, partials, capacity, finish);
            case 2:
                return launch_ax_dots<2, 7, ND>(exec, p, data, x, y, w, partials, capacity, finish);
            case 3:
                return launch_ax_dots<3, 7, ND>(exec, p, data, x, y, w, partials, capacity, finish);
            case 4:
                return launch_ax_dots<4, 7, ND>(exec, p, data, x, y, w, partials, capacity, finish);
            case 8:
                return launch_ax_dots<8, 7, ND>(exec, p, data, x, y, w, partials, capacity, finish);
            case 16:
                return launch_ax_dots<16, 7, ND>(exec, p, data, x, y, w, partials, capacity,
                                                 finish);
            default:
                break;
        }
    }
    return launch_ax_dots<0, 0, ND>(exec, p, data, x, y, w, partials, capacity, finish);
}

template <class MT, class VT>
index_t spmv_dots_impl(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                       int count, double* partials, std::size_t capacity, const DotsFinish* finish)
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
    DotsFinish fin;  // kind 0: leave the partials to the caller
    if (finish) {
        const bool three = finish->kind == DotsFinish::bicgstab_s_omega;
        const bool one =
            finish->kind == DotsFinish::bicgstab_alpha || finish->kind == DotsFinish::cg_alpha;
        HEPTANE_ENSURE(finish->state && (count == 3 ? three : one), InputError,
                       "fused BDIA product: a finish of kind " << finish->kind << " for " << count
                                                               << " dot products");
        fin = *finish;
    }
    if (count == 1)
        return spmv_dots_nd<1>(exec, p, a.data.data(), x, y, w, partials, capacity, fin);
    return spmv_dots_nd<3>(exec, p, a.data.data(), x, y, w, partials, capacity, fin);
}

}  // namespace heptane::kernels::bdia_detail

namespace heptane::kernels {

template <class MT, class VT>
index_t spmv_dots(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                  int count, double* partials, std::size_t capacity, const DotsFinish* finish)
{
    return bdia_detail::spmv_dots_impl<MT, VT>(exec, a, x, y, w, count, partials, capacity, finish);
}

}  // namespace heptane::kernels

/// Instantiate the fused BDIA product for one (MT, VT) pair (inside heptane::kernels).
#define HEPTANE_INSTANTIATE_BDIA_DOTS(MT, VT)                                                \
    template index_t spmv_dots<MT, VT>(const CudaExecutor&, const Bdia<MT>&, const VT*, VT*, \
                                       const VT*, int, double*, std::size_t, const DotsFinish*);
