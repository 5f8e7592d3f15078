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
// when w is not x. At Nc = 1 a thread takes two rows (row_pair_nc1: 16-byte loads) where N is
// even and the arrays are aligned (nc1_pairs).
//
// Unpreconditioned BiCGStab's products can also form their own input (spmv_step_dots,
// StepInput): p = r + β (p − ω v) in v = A p and s = r − α v in t = A s, the vector kernels
// that wrote p and s gone. Each x entry a row reads is then formed from r, p, v (or r, v) at
// that entry -- a row's neighbours' entries are read by their own threads too, so these are
// L1/L2 hits, and DRAM sees each vector once -- and each row writes its own entry (p or s,
// needed by the x, r update). Per iteration 17 passes instead of 19, 3 kernels instead of 5.
// Instantiated apart (bdia_step_*.cu).
#pragma once

#include "core/cuda_block_sum.cuh"
#include "core/cuda_dependent_launch.cuh"
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

/// BiCGStab's p = r + beta (a - omega b), formed on the fly (StepInput::bicgstab_p): the
/// arithmetic of the vector kernel it replaces (solver/vector: UpdatePMap).
template <class VT>
struct PInput {
    using value_type = VT;
    const KrylovState* state;
    const VT* __restrict__ r;
    const VT* __restrict__ a;
    const VT* __restrict__ b;
    VT beta, omega;
    __device__ __forceinline__ void load()
    {
        beta = VT(state->beta);
        omega = VT(state->omega);
    }
    __device__ __forceinline__ VT operator()(long long i) const
    {
        return ldg(r + i) + beta * (ldg(a + i) - omega * ldg(b + i));
    }
    /// entries i and i + 1 (i even) through one 16-byte load per vector (8-byte for float)
    __device__ __forceinline__ typename vec2<VT>::type pair(long long i) const
    {
        const auto rr = ldg2(r + i), aa = ldg2(a + i), bb = ldg2(b + i);
        return {rr.x + beta * (aa.x - omega * bb.x), rr.y + beta * (aa.y - omega * bb.y)};
    }
    bool pairs_aligned() const { return aligned2(r) && aligned2(a) && aligned2(b); }
};

/// BiCGStab's s = r - alpha b, formed on the fly (StepInput::bicgstab_s; UpdateSMap's
/// arithmetic).
template <class VT>
struct SInput {
    using value_type = VT;
    const KrylovState* state;
    const VT* __restrict__ r;
    const VT* __restrict__ b;
    VT alpha;
    __device__ __forceinline__ void load() { alpha = VT(state->alpha); }
    __device__ __forceinline__ VT operator()(long long i) const
    {
        return ldg(r + i) - alpha * ldg(b + i);
    }
    /// entries i and i + 1 (i even) through one 16-byte load per vector (8-byte for float)
    __device__ __forceinline__ typename vec2<VT>::type pair(long long i) const
    {
        const auto rr = ldg2(r + i), bb = ldg2(b + i);
        return {rr.x - alpha * bb.x, rr.y - alpha * bb.y};
    }
    bool pairs_aligned() const { return aligned2(r) && aligned2(b); }
};

template <class X>
constexpr bool formed_input = !std::is_pointer_v<X>;

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
/// X: an array, or an input formed on the fly (PInput, SInput): then each row's own entry
/// of it is written to z, w null means w is that input, and nothing runs once the state has
/// stopped (every CTA returns before its ticket, so the ticket stays at 0).
template <int NC, int D, int G, int RPT, int ND, class MT, class X, class VT>
__global__ void __launch_bounds__(256)
    ax_dots_kernel(Params p, const MT* __restrict__ data, X x, VT* __restrict__ y,
                   const VT* __restrict__ w, VT* __restrict__ z, double* __restrict__ partials,
                   long long tiles, DotsFinish finish)
{
    cuda_detail::wait_for_prior_kernels();  // cuda::launch_dependent
    cuda_detail::allow_dependents();
    if constexpr (formed_input<X>) {
        if (x.state->stop) return;
        x.load();
    }
    double acc[ND];
#pragma unroll
    for (int k = 0; k < ND; ++k) acc[k] = 0.0;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        bool interior;
        const long long r = tile_row<NC, RPT>(p, tile, interior);
        if (r < p.n) {
            VT s[RPT];
            thread_sums<NC, D, G, RPT>(p, r, interior, data, x, s);
            if constexpr (NC == 1 && RPT == 2) {  // aligned pairs (launch_ax_dots checked)
                st2(y + r, s[0], s[1]);
                if constexpr (formed_input<X>) {
                    const auto zk = x.pair(r);
                    st2(z + r, zk.x, zk.y);
                    const auto wk = w ? ldg2(w + r) : zk;
                    add_dots<ND>(acc, wk.x, s[0]);
                    add_dots<ND>(acc, wk.y, s[1]);
                } else {
                    const auto wk = ldg2(w + r);
                    add_dots<ND>(acc, wk.x, s[0]);
                    add_dots<ND>(acc, wk.y, s[1]);
                }
            } else {
#pragma unroll
                for (int k = 0; k < RPT; ++k) {
                    y[r + k] = s[k];
                    if constexpr (formed_input<X>) {
                        const VT zk = x(r + k);
                        z[r + k] = zk;
                        add_dots<ND>(acc, w ? ldg(w + r + k) : zk, s[k]);
                    } else {
                        add_dots<ND>(acc, ldg(w + r + k), s[k]);
                    }
                }
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

/// Launch the fused product for compile-time NC (0: generic) and RPT rows a thread; returns the
/// CTA count (partials per sum).
template <int NC, int D, int ND, int RPT, class MT, class X, class VT>
index_t launch_ax_dots_rpt(const CudaExecutor& exec, const Params& p, const MT* data, const X& x,
                           VT* y, const VT* w, VT* z, double* partials, std::size_t capacity,
                           const DotsFinish& finish)
{
    constexpr int G = NC == 0                       ? 0
                      : tuned_alt_stage<MT, VT>(NC) ? alt_stage(NC)
                                                    : primary_stage(NC, D);
    constexpr int block = 256;
    const auto kernel = ax_dots_kernel<NC, D, G, RPT, ND, MT, X, VT>;
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
    cuda::launch_dependent(exec, kernel, grid, block, p, data, x, y, w, z, partials, tiles, finish);
    return static_cast<index_t>(grid);
}

/// Whether the Nc = 1 product may take two rows a thread (row_pair_nc1): N even and every
/// array it reads or writes aligned for pairs, from 2^20 rows (cuda::paired_forms, HEPTANE_PAIRS).
/// Measured on the H100 (2026-12-06, BiCGStab without a preconditioner, ms an iteration,
/// docs/benchmarks.md): with x an array or s formed (SInput) in pairs, and p updated in pairs,
/// 1.05 M rows 0.1018 -> 0.1003, 2.1 M 0.1999 -> 0.1965, 16.8 M 1.5768 -> 1.4535. With p formed
/// in the product (PInput) the pairs lost at 1-2 M rows (0.1030 -> 0.1060, 0.1962 -> 0.2000),
/// but PInput takes them too: a thread's two rows add their dot-product terms in another order
/// than two threads do, so a solve whose products form p (SolverOptions::fused_inputs, chosen by
/// the batch a CUDA graph holds) and one whose array-input products do not would round apart
/// (test_solver cuda_graph_replay_matches_plain_launches). PInput serves only up to 2^19 rows
/// unless asked for.
template <class MT, class X, class VT>
bool nc1_pairs(const Params& p, const MT* data, const X& x, const VT* y, const VT* w, const VT* z)
{
    bool ok = cuda::paired_forms(p.n) && p.n % 2 == 0 && aligned2(data) && aligned2(y) &&
              aligned2(w) && aligned2(z);
    if constexpr (formed_input<X>)
        ok = ok && x.pairs_aligned();
    else
        ok = ok && aligned2(x);
    return ok;
}

/// The fused product for compile-time NC in the tuned shape of (MT, VT): two rows a thread for
/// even Nc with fp32 values, and at Nc = 1 where nc1_pairs allows; one otherwise.
template <int NC, int D, int ND, class MT, class X, class VT>
index_t launch_ax_dots(const CudaExecutor& exec, const Params& p, const MT* data, const X& x, VT* y,
                       const VT* w, VT* z, double* partials, std::size_t capacity,
                       const DotsFinish& finish)
{
    if constexpr (NC == 1 && D == 7) {
        if (nc1_pairs(p, data, x, y, w, z))
            return launch_ax_dots_rpt<NC, D, ND, 2>(exec, p, data, x, y, w, z, partials, capacity,
                                                    finish);
    }
    constexpr int RPT = NC > 0 && NC % 2 == 0 ? tuned_rows_per_thread<MT>(NC) : 1;
    return launch_ax_dots_rpt<NC, D, ND, RPT>(exec, p, data, x, y, w, z, partials, capacity,
                                              finish);
}

template <int ND, class MT, class X, class VT>
index_t spmv_dots_nd(const CudaExecutor& exec, const Params& p, const MT* data, const X& x, VT* y,
                     const VT* w, VT* z, double* partials, std::size_t capacity,
                     const DotsFinish& finish)
{
#define HEPTANE_BDIA_DOTS_CASE(NC) \
    case NC:                       \
        return launch_ax_dots<NC, 7, ND>(exec, p, data, x, y, w, z, partials, capacity, finish);
    if (p.nd == 7) {
        switch (p.nc) {
            HEPTANE_BDIA_DOTS_CASE(1)
            HEPTANE_BDIA_DOTS_CASE(2)
            HEPTANE_BDIA_DOTS_CASE(3)
            HEPTANE_BDIA_DOTS_CASE(4)
            HEPTANE_BDIA_DOTS_CASE(8)
            HEPTANE_BDIA_DOTS_CASE(16)
            default:
                break;
        }
    }
#undef HEPTANE_BDIA_DOTS_CASE
    return launch_ax_dots<0, 0, ND>(exec, p, data, x, y, w, z, partials, capacity, finish);
}

/// The checks every fused product makes; false where there is no fused kernel for `a`.
template <class MT>
bool fused_checks(const CudaExecutor& exec, const Bdia<MT>& a)
{
    if (a.rows == 0 || a.num_block_diagonals() == 0) return false;  // nothing to fuse into
    make_current(exec);
    HEPTANE_ENSURE(
        a.block_size > 0 && a.rows % a.block_size == 0 && a.cols % a.block_size == 0,
        DimensionMismatch,
        "BDIA block size " << a.block_size << " does not divide " << a.rows << " x " << a.cols);
    HEPTANE_ENSURE(a.rows == a.cols, DimensionMismatch,
                   "fused BDIA product: w and y share rows, so A must be square, not "
                       << a.rows << " x " << a.cols);
    if (a.num_block_diagonals() > max_block_diagonals) return false;
    ensure_on_device(exec, *a.exec(), "BDIA");
    HEPTANE_ENSURE(a.data.size() == static_cast<std::size_t>(a.slots()), DimensionMismatch,
                   "BDIA data holds " << a.data.size() << " values, expected " << a.slots());
    return true;
}

/// The DotsFinish the kernel gets (kind 0: leave the partials to the caller), checked
/// against `count`.
inline DotsFinish checked_finish(const DotsFinish* finish, int count)
{
    DotsFinish fin;
    if (finish) {
        const bool three = finish->kind == DotsFinish::bicgstab_s_omega;
        const bool one =
            finish->kind == DotsFinish::bicgstab_alpha || finish->kind == DotsFinish::cg_alpha;
        HEPTANE_ENSURE(finish->state && (count == 3 ? three : one), InputError,
                       "fused BDIA product: a finish of kind " << finish->kind << " for " << count
                                                               << " dot products");
        fin = *finish;
    }
    return fin;
}

template <class MT, class VT>
index_t spmv_dots_impl(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                       int count, double* partials, std::size_t capacity, const DotsFinish* finish)
{
    HEPTANE_ENSURE(count == 1 || count == 3, InputError,
                   "fused BDIA product: " << count << " dot products (1 or 3)");
    if (!fused_checks(exec, a)) return 0;
    const Params p = make_params(a, Op::normal);
    const DotsFinish fin = checked_finish(finish, count);
    if (count == 1)
        return spmv_dots_nd<1>(exec, p, a.data.data(), x, y, w, static_cast<VT*>(nullptr), partials,
                               capacity, fin);
    return spmv_dots_nd<3>(exec, p, a.data.data(), x, y, w, static_cast<VT*>(nullptr), partials,
                           capacity, fin);
}

template <class MT, class VT>
index_t spmv_step_dots_impl(const CudaExecutor& exec, const Bdia<MT>& a, const StepInput<VT>& in,
                            VT* y, const VT* w, int count, double* partials, std::size_t capacity,
                            const DotsFinish* finish)
{
    const bool p_step = in.kind == StepInput<VT>::bicgstab_p;
    const bool s_step = in.kind == StepInput<VT>::bicgstab_s;
    HEPTANE_ENSURE(
        (p_step && count == 1 && in.a) || (s_step && count == 3), InputError,
        "fused BDIA product: an input of kind " << in.kind << " for " << count << " dot products");
    HEPTANE_ENSURE(in.state && in.r && in.b && in.z, InputError,
                   "fused BDIA product: the formed input lacks its state or vectors");
    HEPTANE_ENSURE(in.z != in.r && in.z != in.a && in.z != in.b && in.z != y, InputError,
                   "fused BDIA product: the formed input's z aliases a vector it is formed from");
    HEPTANE_ENSURE(fused_checks(exec, a), NotSupported,
                   "fused BDIA product: no fused kernel for this matrix (empty, or more than "
                       << max_block_diagonals << " block diagonals) to form its input in");
    const Params p = make_params(a, Op::normal);
    const DotsFinish fin = checked_finish(finish, count);
    if (p_step)
        return spmv_dots_nd<1>(exec, p, a.data.data(),
                               PInput<VT>{in.state, in.r, in.a, in.b, VT(0), VT(0)}, y, w, in.z,
                               partials, capacity, fin);
    return spmv_dots_nd<3>(exec, p, a.data.data(), SInput<VT>{in.state, in.r, in.b, VT(0)}, y,
                           static_cast<const VT*>(nullptr), in.z, partials, capacity, fin);
}

}  // namespace heptane::kernels::bdia_detail

namespace heptane::kernels {

template <class MT, class VT>
index_t spmv_dots(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                  int count, double* partials, std::size_t capacity, const DotsFinish* finish)
{
    return bdia_detail::spmv_dots_impl<MT, VT>(exec, a, x, y, w, count, partials, capacity, finish);
}

template <class MT, class VT>
index_t spmv_step_dots(const CudaExecutor& exec, const Bdia<MT>& a, const StepInput<VT>& input,
                       VT* y, const VT* w, int count, double* partials, std::size_t capacity,
                       const DotsFinish* finish)
{
    return bdia_detail::spmv_step_dots_impl<MT, VT>(exec, a, input, y, w, count, partials, capacity,
                                                    finish);
}

}  // namespace heptane::kernels

/// Instantiate the fused BDIA product for one (MT, VT) pair (inside heptane::kernels).
#define HEPTANE_INSTANTIATE_BDIA_DOTS(MT, VT)                                                \
    template index_t spmv_dots<MT, VT>(const CudaExecutor&, const Bdia<MT>&, const VT*, VT*, \
                                       const VT*, int, double*, std::size_t, const DotsFinish*);

/// Instantiate the fused product with a formed input for one (MT, VT) pair.
#define HEPTANE_INSTANTIATE_BDIA_STEP_DOTS(MT, VT)                                              \
    template index_t spmv_step_dots<MT, VT>(const CudaExecutor&, const Bdia<MT>&,               \
                                            const StepInput<VT>&, VT*, const VT*, int, double*, \
                                            std::size_t, const DotsFinish*);
