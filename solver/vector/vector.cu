// Vector kernels on CUDA. All work is queued on the executor's stream; nothing here waits
// for the device.
//
// Reductions are one launch each: every block reduces its grid-stride share, writes one
// partial per sum, and takes a ticket; the last block to finish (atomicInc wraps the ticket
// back to 0 for the next launch) adds the partials in block order and runs the finalize
// function of krylov_state.hpp on the KrylovState in device memory. The sums are therefore
// reproducible run to run for a given device, and alpha, beta, omega and the stopping tests
// never visit the host. The reductions and element-wise steps are launched as programmatic
// dependents (core/cuda_dependent_launch.cuh): each is scheduled while the kernel before it
// finishes and waits for it before touching memory.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/cuda_block_sum.cuh"
#include "core/cuda_common.hpp"
#include "core/cuda_dependent_launch.cuh"
#include "solver/vector/vector_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr int block_size = 256;
constexpr int max_sums = 4;  // partials per block (the widest reduction has 3 sums)

int max_blocks(const CudaExecutor& exec)
{
    return 8 * (exec.multiprocessors() > 0 ? exec.multiprocessors() : 16);
}

unsigned blocks_for(const CudaExecutor& exec, index_t n)
{
    const unsigned g = cuda::grid_for(n, block_size);
    const unsigned m = static_cast<unsigned>(max_blocks(exec));
    return g < m ? g : m;
}

/// CTAs of a reduction: 4 a multiprocessor (half of max_blocks). Measured on the H100
/// (2026-12-06, BiCGStab's x/r update with its two sums at 1-16.8 M rows, element at a time;
/// docs/logs/bicgstab-update-xr-h100-2026-12-06-s44.md): 4 CTAs of 256
/// threads a multiprocessor took 1.7-5.8 us less per launch than 8 (why was not measured
/// apart: fewer partials for the last CTA to add and a shorter tail are the likely reasons).
unsigned reduce_blocks_for(const CudaExecutor& exec, index_t n)
{
    const unsigned g = cuda::grid_for(n, block_size);
    const unsigned m = static_cast<unsigned>(max_blocks(exec) / 2);
    return g < m ? g : m;
}

/// A map with a paired form (Map::pair(i, acc): elements 2i and 2i + 1 through 16-byte loads
/// and stores; Map::paired names it), which the reduction takes when map.use_pairs was set at
/// launch (aligned arrays).
template <class Map, class = void>
struct has_pair : std::false_type {
};
template <class Map>
struct has_pair<Map, std::void_t<typename Map::paired>> : std::true_type {
};

inline bool aligned16(const void* p)
{
    return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

using cuda_detail::block_sum;

/// Map: load(state) once per thread, then (i, acc) for each element. Fin(state, sums, hist)
/// runs once, in the last block. gated: do nothing once state->stop is set.
template <int NS, class Map, class Fin>
__global__ void __launch_bounds__(block_size)
    reduce_kernel(index_t n, Map map, Fin fin, StepContext ctx, bool gated)
{
    cuda_detail::wait_for_prior_kernels();  // cuda::launch_dependent
    cuda_detail::allow_dependents();
    KrylovState* st = ctx.state;
    if (gated && st->stop) return;
    map.load(*st);
    double acc[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) acc[k] = 0.0;
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    bool scalar = true;
    if constexpr (has_pair<Map>::value) {
        if (map.use_pairs) {  // elements 2i, 2i + 1 a step; an odd last element by thread 0
            scalar = false;
            for (long long i = first; i < n / 2; i += stride) map.template pair<NS>(i, acc);
            if ((n & 1) && first == 0) map(n - 1, acc);
        }
    }
    if (scalar)
        for (long long i = first; i < n; i += stride) map(i, acc);
    block_sum<NS>(acc);
    __shared__ bool last;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int k = 0; k < NS; ++k) ctx.partials[k * gridDim.x + blockIdx.x] = acc[k];
        __threadfence();
        last = atomicInc(&st->ticket, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int k = 0; k < NS; ++k) acc[k] = 0.0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
#pragma unroll
        for (int k = 0; k < NS; ++k) acc[k] += __ldcg(&ctx.partials[k * gridDim.x + b]);
    block_sum<NS>(acc);
    if (threadIdx.x == 0) fin(*st, acc, ctx.history);
}

/// Element-wise kernel, gated by state->stop.
template <class Map>
__global__ void __launch_bounds__(block_size) map_kernel(index_t n, Map map, StepContext ctx)
{
    cuda_detail::wait_for_prior_kernels();  // cuda::launch_dependent
    cuda_detail::allow_dependents();
    if (ctx.state->stop) return;
    map.load(*ctx.state);
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if constexpr (has_pair<Map>::value) {
        if (map.use_pairs) {  // elements 2i, 2i + 1 a step; an odd last element by thread 0
            for (long long i = first; i < n / 2; i += stride) map.pair(i);
            if ((n & 1) && first == 0) map(n - 1);
            return;
        }
    }
    for (long long i = first; i < n; i += stride) map(i);
}

/// Distributed solves, first half: the last block stores the local sums in state->sums.
struct StoreSums {
    template <int NS>
    __device__ void operator()(KrylovState& s, const double (&v)[NS], double*) const
    {
#pragma unroll
        for (int k = 0; k < NS; ++k) s.sums[k] = v[k];
    }
};

/// Distributed solves, second half: the finalize step on the global sums (one thread).
template <int NS, class Fin>
__global__ void finalize_kernel(Fin fin, StepContext ctx, bool gated)
{
    KrylovState* st = ctx.state;
    if (gated && st->stop) return;
    double v[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) v[k] = st->sums[k];
    fin(*st, v, ctx.history);
}

template <int NS, class Map, class Fin>
void launch_reduce(const CudaExecutor& exec, index_t n, Map map, Fin fin, StepContext ctx,
                   bool gated)
{
    const unsigned blocks = reduce_blocks_for(exec, n);
    if (!ctx.reducer) {
        cuda::launch_dependent(exec, reduce_kernel<NS, Map, Fin>, blocks, block_size, n, map, fin,
                               ctx, gated);
        return;
    }
    // local sums -> one reduction of the NS sums over the processes -> finalize. A gated
    // step that has stopped leaves stale sums; every process has the same state (the
    // scalars come from the same global sums), so all skip the finalize together.
    reduce_kernel<NS>
        <<<blocks, block_size, 0, cuda::stream(exec)>>>(n, map, StoreSums{}, ctx, gated);
    HEPTANE_CUDA_LAUNCH_CHECK();
    double* sums =
        reinterpret_cast<double*>(reinterpret_cast<char*>(ctx.state) + offsetof(KrylovState, sums));
    ctx.reducer->sum(exec, sums, NS);
    finalize_kernel<NS><<<1, 1, 0, cuda::stream(exec)>>>(fin, ctx, gated);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class Map>
void launch_map(const CudaExecutor& exec, index_t n, Map map, StepContext ctx)
{
    index_t work = n;  // steps of the grid-stride loop: half as many in pairs
    if constexpr (has_pair<Map>::value)
        if (map.use_pairs) work = n / 2 + (n & 1);
    cuda::launch_dependent(exec, map_kernel<Map>, blocks_for(exec, work), block_size, n, map, ctx);
}

// ---- plain kernels ------------------------------------------------------------------------

template <class VT>
__global__ void fill_kernel(index_t n, VT value, VT* x)
{
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        x[i] = value;
}

template <class VT>
__global__ void axpby_kernel(index_t n, VT a, const VT* x, VT b, VT* y)
{
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        y[i] = b == VT(0) ? a * x[i] : a * x[i] + b * y[i];
}

__global__ void request_stop_kernel(KrylovState* st, int reason)
{
    if (!st->stop) {
        st->stop = 1;
        st->reason = reason;
    }
}

// ---- maps and finalizers -------------------------------------------------------------------

struct NoLoad {
    __device__ void load(const KrylovState&) {}
};

template <class VT>
struct DotMap : NoLoad {
    const VT* x;
    const VT* y;
    __device__ void operator()(long long i, double (&a)[1]) const
    {
        a[0] += double(x[i]) * double(y[i]);
    }
};
struct ScratchFin {
    int slot;
    bool sqrt_it;
    __device__ void operator()(KrylovState& s, const double (&v)[1], double*) const
    {
        s.scratch[slot] = sqrt_it ? sqrt(v[0]) : v[0];
    }
};

template <class VT>
struct BicgstabInitMap : NoLoad {
    const VT* b;
    const VT* r;
    VT* r_hat;
    VT* p;
    VT* v;
    __device__ void operator()(long long i, double (&a)[2]) const
    {
        const VT ri = r[i];
        const VT bi = b[i];
        r_hat[i] = ri;
        p[i] = VT(0);
        v[i] = VT(0);
        a[0] += double(bi) * double(bi);
        a[1] += double(ri) * double(ri);
    }
};
template <class VT>
struct NormsMap : NoLoad {  // (b, b), (r, r)
    const VT* b;
    const VT* r;
    __device__ void operator()(long long i, double (&a)[2]) const
    {
        const VT bi = b[i], ri = r[i];
        a[0] += double(bi) * double(bi);
        a[1] += double(ri) * double(ri);
    }
};
struct InitFin {
    StopParams params;
    __device__ void operator()(KrylovState& s, const double (&v)[2], double* hist) const
    {
        krylov::init_finalize(s, v[0], v[1], params, hist);
    }
};

template <class VT>
struct UpdatePMap {  // p = r + β (p − ω v)
    const VT* r;
    const VT* v;
    VT* p;
    VT beta, omega;
    __device__ void load(const KrylovState& s)
    {
        beta = VT(s.beta);
        omega = VT(s.omega);
    }
    bool use_pairs;  // double and every array 16-byte aligned (set at launch): pair()
    using paired = void;
    __device__ void operator()(long long i) const { p[i] = r[i] + beta * (p[i] - omega * v[i]); }
    // Elements 2i and 2i + 1 as operator() computes them, through 16-byte loads and stores
    // (as UpdateXrMap::pair). Only for double, where use_pairs is set.
    __device__ void pair(long long i) const
    {
        if constexpr (std::is_same_v<VT, double>) {
            const double2 ri = reinterpret_cast<const double2*>(r)[i];
            const double2 vi = reinterpret_cast<const double2*>(v)[i];
            double2 pi = reinterpret_cast<const double2*>(p)[i];
            pi.x = ri.x + beta * (pi.x - omega * vi.x);
            pi.y = ri.y + beta * (pi.y - omega * vi.y);
            reinterpret_cast<double2*>(p)[i] = pi;
        }
    }
};

struct AlphaFin {
    __device__ void operator()(KrylovState& s, const double (&v)[1], double*) const
    {
        krylov::bicgstab_alpha_finalize(s, v[0]);
    }
};

template <class VT>
struct UpdateSMap {  // s = r − α v ((s, s) comes with ω, OmegaMap)
    const VT* r;
    const VT* v;
    VT* s;
    VT alpha;
    __device__ void load(const KrylovState& st) { alpha = VT(st.alpha); }
    __device__ void operator()(long long i) const { s[i] = r[i] - alpha * v[i]; }
};

template <class VT>
struct OmegaMap : NoLoad {  // (t, s), (t, t), (s, s)
    const VT* t;
    const VT* s;
    __device__ void operator()(long long i, double (&a)[3]) const
    {
        const double ti = t[i], si = s[i];
        a[0] += ti * si;
        a[1] += ti * ti;
        a[2] += si * si;
    }
};
struct OmegaFin {
    __device__ void operator()(KrylovState& s, const double (&v)[3], double*) const
    {
        krylov::bicgstab_s_omega_finalize(s, v[0], v[1], v[2]);
    }
};

template <class VT>
struct UpdateXrMap {  // x += α p̂ + ω ŝ; r = s − ω t; (r̂, r), (r, r)
    const VT* p_hat;
    const VT* s_hat;
    const VT* s;
    const VT* t;
    const VT* r_hat;
    VT* x;
    VT* r;
    VT alpha, omega;
    bool use_s;
    bool use_pairs;  // double and every array 16-byte aligned (set at launch): pair()
    using paired = void;
    __device__ void load(const KrylovState& st)
    {
        alpha = VT(st.alpha);
        omega = VT(st.omega);
        use_s = st.omega != 0.0;
    }
    __device__ void operator()(long long i, double (&a)[2]) const
    {
        VT ri;
        if (use_s) {
            x[i] += alpha * p_hat[i] + omega * s_hat[i];
            ri = s[i] - omega * t[i];
        } else {
            x[i] += alpha * p_hat[i];
            ri = s[i];
        }
        r[i] = ri;
        a[0] += double(r_hat[i]) * double(ri);
        a[1] += double(ri) * double(ri);
    }
    // Elements 2i and 2i + 1, each as operator() computes it (the same operations in the
    // same order), through 16-byte loads and stores: at 1-2 M rows on the H100 the scalar
    // form moved 2.2-2.4 TB/s, this one with 4 CTAs a multiprocessor 2.7 (2026-12-06
    // microbenchmark, docs/logs/bicgstab-update-xr-h100-2026-12-06-s44.md). Only for double,
    // where use_pairs is set.
    template <int NS>
    __device__ void pair(long long i, double (&a)[NS]) const
    {
        if constexpr (std::is_same_v<VT, double>) {
            static_assert(NS == 2, "UpdateXrMap has two sums");
            const double2 ph = reinterpret_cast<const double2*>(p_hat)[i];
            const double2 sh = reinterpret_cast<const double2*>(s_hat)[i];
            const double2 si = reinterpret_cast<const double2*>(s)[i];
            const double2 ti = reinterpret_cast<const double2*>(t)[i];
            const double2 rh = reinterpret_cast<const double2*>(r_hat)[i];
            double2 xi = reinterpret_cast<const double2*>(x)[i];
            double2 ri;
            if (use_s) {
                xi.x += alpha * ph.x + omega * sh.x;
                xi.y += alpha * ph.y + omega * sh.y;
                ri.x = si.x - omega * ti.x;
                ri.y = si.y - omega * ti.y;
            } else {
                xi.x += alpha * ph.x;
                xi.y += alpha * ph.y;
                ri = si;
            }
            reinterpret_cast<double2*>(x)[i] = xi;
            reinterpret_cast<double2*>(r)[i] = ri;
            a[0] += rh.x * ri.x;
            a[1] += ri.x * ri.x;
            a[0] += rh.y * ri.y;
            a[1] += ri.y * ri.y;
        }
    }
};
struct XrFin {
    __device__ void operator()(KrylovState& s, const double (&v)[2], double* hist) const
    {
        krylov::bicgstab_xr_finalize(s, v[0], v[1], hist);
    }
};

template <class VT>
struct CgStartMap : NoLoad {  // p = z, (r, z)
    const VT* r;
    const VT* z;
    VT* p;
    __device__ void operator()(long long i, double (&a)[1]) const
    {
        const VT zi = z[i];
        p[i] = zi;
        a[0] += double(r[i]) * double(zi);
    }
};
struct CgRhoFin {
    __device__ void operator()(KrylovState& s, const double (&v)[1], double*) const
    {
        krylov::cg_rho_finalize(s, v[0]);
    }
};
struct CgAlphaFin {
    __device__ void operator()(KrylovState& s, const double (&v)[1], double*) const
    {
        krylov::cg_alpha_finalize(s, v[0]);
    }
};
template <class VT>
struct CgXrMap {  // x += α p; r −= α q; (r, r)
    const VT* p;
    const VT* q;
    VT* x;
    VT* r;
    VT alpha;
    __device__ void load(const KrylovState& st) { alpha = VT(st.alpha); }
    __device__ void operator()(long long i, double (&a)[1]) const
    {
        x[i] += alpha * p[i];
        const VT ri = r[i] - alpha * q[i];
        r[i] = ri;
        a[0] += double(ri) * double(ri);
    }
};
struct CgXrFin {
    bool identity_pc;
    __device__ void operator()(KrylovState& s, const double (&v)[1], double* hist) const
    {
        krylov::cg_xr_finalize(s, v[0], identity_pc, hist);
    }
};
struct CgBetaFin {
    __device__ void operator()(KrylovState& s, const double (&v)[1], double*) const
    {
        krylov::cg_beta_finalize(s, v[0]);
    }
};
template <class VT>
struct CgUpdatePMap {  // p = z + β p
    const VT* z;
    VT* p;
    VT beta;
    __device__ void load(const KrylovState& st) { beta = VT(st.beta); }
    __device__ void operator()(long long i) const { p[i] = z[i] + beta * p[i]; }
};

// ---- LSQR and MLEM maps ------------------------------------------------------------------

template <class VT>
struct SumMap : NoLoad {  // Σ x
    const VT* x;
    __device__ void operator()(long long i, double (&a)[1]) const { a[0] += double(x[i]); }
};
template <class VT>
struct CountNegativeMap : NoLoad {  // #{x_i < 0 or NaN}
    const VT* x;
    __device__ void operator()(long long i, double (&a)[1]) const
    {
        a[0] += (x[i] >= VT(0)) ? 0.0 : 1.0;
    }
};
template <class VT>
struct LsqrXwMap : NoLoad {  // x += t1 w; w = s v + t2 w; (w, w)
    VT t1, t2, s;
    const VT* v;
    VT* w;
    VT* x;
    __device__ void operator()(long long i, double (&a)[1]) const
    {
        VT wn;
        if (x) {
            const VT wi = w[i];
            x[i] += t1 * wi;
            wn = s * v[i] + t2 * wi;
        } else {
            wn = t2 == VT(0) ? s * v[i] : s * v[i] + t2 * w[i];
        }
        w[i] = wn;
        a[0] += double(wn) * double(wn);
    }
};
template <class VT>
struct MlemCorrelateMap : NoLoad {  // c = g / q (0 where q <= 0), Σ_{q>0} g log q − q
    const VT* g;
    const VT* q;
    VT* c;
    __device__ void operator()(long long i, double (&a)[1]) const
    {
        const VT qi = q[i], gi = g[i];
        VT ci = VT(0);
        if (qi > VT(0)) {
            ci = gi / qi;
            a[0] += (gi > VT(0) ? double(gi) * log(double(qi)) : 0.0) - double(qi);
        }
        if (c) c[i] = ci;
    }
};
struct HistoryFin {
    int index;
    __device__ void operator()(KrylovState&, const double (&v)[1], double* hist) const
    {
        if (index >= 0) hist[index] = v[0];
    }
};

template <class VT>
__global__ void mlem_sensitivity_kernel(index_t n, const VT* norm, VT* inv_norm, VT* f, VT f0)
{
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
         j += stride) {
        const VT nj = norm[j];
        const bool seen = nj > VT(0);
        inv_norm[j] = seen ? VT(1) / nj : VT(0);
        if (f) f[j] = seen ? f0 : VT(0);
    }
}

template <class VT>
__global__ void mlem_update_kernel(index_t n, const VT* b, const VT* inv_norm, VT* f)
{
    const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
         j += stride) {
        const VT s = inv_norm[j];
        if (s != VT(0)) f[j] = f[j] * (b[j] * s);  // f · Aᵀ(g / A f) / norm
    }
}

}  // namespace

std::size_t reduce_partials_size(const CudaExecutor& exec)
{
    return static_cast<std::size_t>(max_sums) * max_blocks(exec);
}

template <class VT>
void fill(const CudaExecutor& exec, index_t n, VT value, VT* x)
{
    if (n <= 0) return;
    fill_kernel<<<blocks_for(exec, n), block_size, 0, cuda::stream(exec)>>>(n, value, x);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void copy(const CudaExecutor& exec, index_t n, const VT* x, VT* y)
{
    if (n <= 0 || x == y) return;
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(y, x, sizeof(VT) * std::size_t(n), cudaMemcpyDeviceToDevice,
                                       cuda::stream(exec)));
}

template <class VT>
void axpby(const CudaExecutor& exec, index_t n, VT a, const VT* x, VT b, VT* y)
{
    if (n <= 0) return;
    axpby_kernel<<<blocks_for(exec, n), block_size, 0, cuda::stream(exec)>>>(n, a, x, b, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void dot(const CudaExecutor& exec, index_t n, const VT* x, const VT* y, StepContext ctx, int slot)
{
    launch_reduce<1>(exec, n, DotMap<VT>{{}, x, y}, ScratchFin{slot, false}, ctx, false);
}

template <class VT>
void norm2(const CudaExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot)
{
    launch_reduce<1>(exec, n, DotMap<VT>{{}, x, x}, ScratchFin{slot, true}, ctx, false);
}

void request_stop(const CudaExecutor& exec, StepContext ctx, Reason reason)
{
    request_stop_kernel<<<1, 1, 0, cuda::stream(exec)>>>(ctx.state, static_cast<int>(reason));
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void bicgstab_init(const CudaExecutor& exec, index_t n, const VT* b, const VT* r, VT* r_hat, VT* p,
                   VT* v, StopParams params, StepContext ctx)
{
    launch_reduce<2>(exec, n, BicgstabInitMap<VT>{{}, b, r, r_hat, p, v}, InitFin{params}, ctx,
                     false);
}

template <class VT>
void bicgstab_update_p(const CudaExecutor& exec, index_t n, const VT* r, const VT* v, VT* p,
                       StepContext ctx)
{
    const bool pairs = std::is_same_v<VT, double> && cuda::paired_forms(n) && aligned16(r) &&
                       aligned16(v) && aligned16(p);
    launch_map(exec, n, UpdatePMap<VT>{r, v, p, VT(0), VT(0), pairs}, ctx);
}

template <class VT>
void bicgstab_alpha(const CudaExecutor& exec, index_t n, const VT* r_hat, const VT* v,
                    StepContext ctx)
{
    launch_reduce<1>(exec, n, DotMap<VT>{{}, r_hat, v}, AlphaFin{}, ctx, true);
}

namespace {
/// The partial sums a fused product left (Operator::apply_fused_dots), NS per CTA.
template <int NS>
struct PartialsMap : NoLoad {
    const double* partials;
    long long parts;
    __device__ void operator()(long long i, double (&a)[NS]) const
    {
#pragma unroll
        for (int k = 0; k < NS; ++k) a[k] += __ldcg(&partials[k * parts + i]);
    }
};
}  // namespace

void bicgstab_alpha_partials(const CudaExecutor& exec, index_t parts, const double* partials,
                             StepContext ctx)
{
    launch_reduce<1>(exec, parts, PartialsMap<1>{{}, partials, parts}, AlphaFin{}, ctx, true);
}

void bicgstab_omega_partials(const CudaExecutor& exec, index_t parts, const double* partials,
                             StepContext ctx)
{
    launch_reduce<3>(exec, parts, PartialsMap<3>{{}, partials, parts}, OmegaFin{}, ctx, true);
}

void cg_alpha_partials(const CudaExecutor& exec, index_t parts, const double* partials,
                       StepContext ctx)
{
    launch_reduce<1>(exec, parts, PartialsMap<1>{{}, partials, parts}, CgAlphaFin{}, ctx, true);
}

template <class VT>
void bicgstab_update_s(const CudaExecutor& exec, index_t n, const VT* r, const VT* v, VT* s,
                       StepContext ctx)
{
    launch_map(exec, n, UpdateSMap<VT>{r, v, s, VT(0)}, ctx);
}

template <class VT>
void bicgstab_omega(const CudaExecutor& exec, index_t n, const VT* t, const VT* s, StepContext ctx)
{
    launch_reduce<3>(exec, n, OmegaMap<VT>{{}, t, s}, OmegaFin{}, ctx, true);
}

template <class VT>
void bicgstab_update_xr(const CudaExecutor& exec, index_t n, const VT* p_hat, const VT* s_hat,
                        const VT* s, const VT* t, const VT* r_hat, VT* x, VT* r, StepContext ctx)
{
    // The element form reads s and t after writing x, and r̂ after writing r; the paired form
    // loads all before it stores. They agree unless those alias (BiCGStab's never do): then
    // the element form.
    const bool apart = s != x && t != x && r_hat != x && r_hat != r;
    const bool pairs = std::is_same_v<VT, double> && apart && aligned16(p_hat) &&
                       aligned16(s_hat) && aligned16(s) && aligned16(t) && aligned16(r_hat) &&
                       aligned16(x) && aligned16(r);
    launch_reduce<2>(exec, n,
                     UpdateXrMap<VT>{p_hat, s_hat, s, t, r_hat, x, r, VT(0), VT(0), false, pairs},
                     XrFin{}, ctx, true);
}

template <class VT>
void cg_init(const CudaExecutor& exec, index_t n, const VT* b, const VT* r, StopParams params,
             StepContext ctx)
{
    launch_reduce<2>(exec, n, NormsMap<VT>{{}, b, r}, InitFin{params}, ctx, false);
}

template <class VT>
void cg_start(const CudaExecutor& exec, index_t n, const VT* r, const VT* z, VT* p, StepContext ctx)
{
    launch_reduce<1>(exec, n, CgStartMap<VT>{{}, r, z, p}, CgRhoFin{}, ctx, true);
}

template <class VT>
void cg_alpha(const CudaExecutor& exec, index_t n, const VT* p, const VT* q, StepContext ctx)
{
    launch_reduce<1>(exec, n, DotMap<VT>{{}, p, q}, CgAlphaFin{}, ctx, true);
}

template <class VT>
void cg_update_xr(const CudaExecutor& exec, index_t n, const VT* p, const VT* q, VT* x, VT* r,
                  bool identity_pc, StepContext ctx)
{
    launch_reduce<1>(exec, n, CgXrMap<VT>{p, q, x, r, VT(0)}, CgXrFin{identity_pc}, ctx, true);
}

template <class VT>
void cg_beta(const CudaExecutor& exec, index_t n, const VT* r, const VT* z, StepContext ctx)
{
    launch_reduce<1>(exec, n, DotMap<VT>{{}, r, z}, CgBetaFin{}, ctx, true);
}

template <class VT>
void cg_update_p(const CudaExecutor& exec, index_t n, const VT* z, VT* p, StepContext ctx)
{
    launch_map(exec, n, CgUpdatePMap<VT>{z, p, VT(0)}, ctx);
}

// ---- LSQR and MLEM ---------------------------------------------------------------------------

template <class VT>
void sum(const CudaExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot)
{
    launch_reduce<1>(exec, n, SumMap<VT>{{}, x}, ScratchFin{slot, false}, ctx, false);
}

template <class VT>
void count_negative(const CudaExecutor& exec, index_t n, const VT* x, StepContext ctx, int slot)
{
    launch_reduce<1>(exec, n, CountNegativeMap<VT>{{}, x}, ScratchFin{slot, false}, ctx, false);
}

template <class VT>
void lsqr_update_xw(const CudaExecutor& exec, index_t n, VT t1, VT t2, VT s, const VT* v, VT* w,
                    VT* x, StepContext ctx, int slot)
{
    launch_reduce<1>(exec, n, LsqrXwMap<VT>{{}, t1, t2, s, v, w, x}, ScratchFin{slot, false}, ctx,
                     false);
}

template <class VT>
void mlem_correlate(const CudaExecutor& exec, index_t m, const VT* g, const VT* q, VT* c,
                    StepContext ctx, int index)
{
    launch_reduce<1>(exec, m, MlemCorrelateMap<VT>{{}, g, q, c}, HistoryFin{index}, ctx, false);
}

template <class VT>
void mlem_sensitivity(const CudaExecutor& exec, index_t n, const VT* norm, VT* inv_norm, VT* f,
                      VT f0)
{
    if (n <= 0) return;
    mlem_sensitivity_kernel<<<blocks_for(exec, n), block_size, 0, cuda::stream(exec)>>>(
        n, norm, inv_norm, f, f0);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class VT>
void mlem_update(const CudaExecutor& exec, index_t n, const VT* b, const VT* inv_norm, VT* f)
{
    if (n <= 0) return;
    mlem_update_kernel<<<blocks_for(exec, n), block_size, 0, cuda::stream(exec)>>>(n, b, inv_norm,
                                                                                   f);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

#define HEPTANE_INSTANTIATE_TOMO(VT)                                                             \
    template void sum<VT>(const CudaExecutor&, index_t, const VT*, StepContext, int);            \
    template void count_negative<VT>(const CudaExecutor&, index_t, const VT*, StepContext, int); \
    template void lsqr_update_xw<VT>(const CudaExecutor&, index_t, VT, VT, VT, const VT*, VT*,   \
                                     VT*, StepContext, int);                                     \
    template void mlem_correlate<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*,    \
                                     StepContext, int);                                          \
    template void mlem_sensitivity<VT>(const CudaExecutor&, index_t, const VT*, VT*, VT*, VT);   \
    template void mlem_update<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*);
HEPTANE_INSTANTIATE_TOMO(double)
HEPTANE_INSTANTIATE_TOMO(float)
#undef HEPTANE_INSTANTIATE_TOMO

#define HEPTANE_INSTANTIATE(VT)                                                                   \
    template void fill<VT>(const CudaExecutor&, index_t, VT, VT*);                                \
    template void copy<VT>(const CudaExecutor&, index_t, const VT*, VT*);                         \
    template void axpby<VT>(const CudaExecutor&, index_t, VT, const VT*, VT, VT*);                \
    template void dot<VT>(const CudaExecutor&, index_t, const VT*, const VT*, StepContext, int);  \
    template void norm2<VT>(const CudaExecutor&, index_t, const VT*, StepContext, int);           \
    template void bicgstab_init<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*, VT*, \
                                    VT*, StopParams, StepContext);                                \
    template void bicgstab_update_p<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*,  \
                                        StepContext);                                             \
    template void bicgstab_alpha<VT>(const CudaExecutor&, index_t, const VT*, const VT*,          \
                                     StepContext);                                                \
    template void bicgstab_update_s<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*,  \
                                        StepContext);                                             \
    template void bicgstab_omega<VT>(const CudaExecutor&, index_t, const VT*, const VT*,          \
                                     StepContext);                                                \
    template void bicgstab_update_xr<VT>(const CudaExecutor&, index_t, const VT*, const VT*,      \
                                         const VT*, const VT*, const VT*, VT*, VT*, StepContext); \
    template void cg_init<VT>(const CudaExecutor&, index_t, const VT*, const VT*, StopParams,     \
                              StepContext);                                                       \
    template void cg_start<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*,           \
                               StepContext);                                                      \
    template void cg_alpha<VT>(const CudaExecutor&, index_t, const VT*, const VT*, StepContext);  \
    template void cg_update_xr<VT>(const CudaExecutor&, index_t, const VT*, const VT*, VT*, VT*,  \
                                   bool, StepContext);                                            \
    template void cg_beta<VT>(const CudaExecutor&, index_t, const VT*, const VT*, StepContext);   \
    template void cg_update_p<VT>(const CudaExecutor&, index_t, const VT*, VT*, StepContext);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
