// CPR's setup kernels, the CSR pattern fingerprint and Gershgorin's bound on CUDA; declared in
// amg_kernels.hpp, the per-cell work shared with the CPU (cpr_cell.hpp). A thread per cell: its nc
// rows are walked together, ~7·nc² entries for a 7-point stencil. Read straight from global
// memory, a warp's loads land in 32 rows ~0.75 KB apart (Nc = 3), each line fetched for a few
// bytes and fetched again on the second pass; so the staged kernels first copy the stretch of
// A their block of cells reads -- contiguous, as a block's cells are consecutive rows -- into
// shared memory with coalesced loads, and walk it there. A block whose stretch does not fit
// the shared memory sized for the average row (rows much longer than the rest) reads global
// memory instead; both through the same cell code, so the same bits.
#include <cstdlib>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <string>
#include <type_traits>

#include "core/cuda_common.hpp"
#include "core/error.hpp"
#include "solver/precond/amg/amg_kernels.hpp"
#include "solver/precond/amg/cpr_cell.hpp"

namespace heptane::kernels {

namespace {

constexpr int threads = 128;
constexpr index_t max_nc = 8;  // cur and work live in local arrays

// NC > 0: the block size known at compile time (the divisions by it become multiplies, the
// scratch arrays their exact size); 0: nc at run time, up to max_nc. The same operations
// either way (cpr_cell.hpp), so the same bits.
template <int NC>
__global__ void cpr_count_kernel(index_t ncells, index_t nc_rt,
                                 const offset_t* __restrict__ row_ptr,
                                 const index_t* __restrict__ col, offset_t* __restrict__ counts,
                                 int* defects)
{
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= ncells) return;
    offset_t cur[NC > 0 ? NC : max_nc];
    const int d = detail::cpr_cell_defects(index_t(i), nc, ncells * nc, row_ptr, col);
    if (d) atomicOr(defects, d);
    counts[i] = d ? 0 : detail::cpr_cell_count(index_t(i), nc, row_ptr, col, cur);
}

template <int NC, class VT>
__global__ void cpr_values_kernel(index_t ncells, index_t nc_rt, index_t p,
                                  const offset_t* __restrict__ row_ptr,
                                  const index_t* __restrict__ col, const double* __restrict__ val,
                                  const offset_t* __restrict__ ap_ptr, index_t* __restrict__ ap_col,
                                  double* __restrict__ ap_val, VT* __restrict__ w,
                                  unsigned long long* singular)
{
    constexpr int m = NC > 0 ? NC : int(max_nc);
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= ncells) return;
    offset_t cur[m];
    double work[3 * m * m];
    if (!detail::cpr_cell_values(index_t(i), nc, p, row_ptr, col, val, ap_ptr, ap_col, ap_val, w,
                                 cur, work))
        atomicAdd(singular, 1ull);
}

__global__ void fingerprint_kernel(index_t rows, const offset_t* __restrict__ row_ptr,
                                   const index_t* __restrict__ col, unsigned long long* h)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    unsigned long long x = i < rows ? fingerprint_row(index_t(i), row_ptr, col) : 0ull;
    for (int o = 16; o > 0; o /= 2) x ^= __shfl_xor_sync(0xffffffffu, x, o);
    if (threadIdx.x % 32 == 0 && x) atomicXor(h, x);
}

// the bits of a non-negative double order as the values do: an integer max
__global__ void gershgorin_kernel(index_t n, const offset_t* __restrict__ row_ptr,
                                  const index_t* __restrict__ col, const double* __restrict__ val,
                                  unsigned long long* bound)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    double x = i < n ? gershgorin_row(index_t(i), row_ptr, col, val) : 0.0;
    for (int o = 16; o > 0; o /= 2) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
    if (threadIdx.x % 32 == 0 && x > 0)
        atomicMax(bound, static_cast<unsigned long long>(__double_as_longlong(x)));
}

using cuda::read_back;

// The staged kernels' shared memory: the block's row pointers (threads·nc + 1), then where
// the entries fit in `cap`, their values (VALUES) and columns. Returns whether they fit.
template <bool VALUES>
__device__ bool stage_entries(long long i0, index_t cells, index_t nc, offset_t cap,
                              const offset_t* __restrict__ row_ptr, const index_t* __restrict__ col,
                              const double* __restrict__ val, offset_t* srp, double* sval,
                              index_t* scol)
{
    const index_t nr = cells * nc;
    const long long r0 = i0 * nc;
    for (index_t t = threadIdx.x; t <= nr; t += blockDim.x) srp[t] = row_ptr[r0 + t];
    __syncthreads();
    const offset_t k0 = srp[0], len = srp[nr] - k0;
    const bool fits = len >= 0 && len <= cap;
    if (fits) {
        // batches of U independent loads per thread in flight before their stores
        constexpr int U = 8;
        const offset_t step = blockDim.x;
        offset_t t = threadIdx.x;
        for (; t + (U - 1) * step < len; t += U * step) {
            index_t c[U];
            double v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                c[u] = col[k0 + t + u * step];
                if constexpr (VALUES) v[u] = val[k0 + t + u * step];
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                scol[t + u * step] = c[u];
                if constexpr (VALUES) sval[t + u * step] = v[u];
            }
        }
        for (; t < len; t += step) {
            scol[t] = col[k0 + t];
            if constexpr (VALUES) sval[t] = val[k0 + t];
        }
    }
    __syncthreads();
    return fits;
}

template <int NC>
__global__ void cpr_count_staged_kernel(index_t ncells, index_t nc_rt, offset_t cap,
                                        const offset_t* __restrict__ row_ptr,
                                        const index_t* __restrict__ col,
                                        offset_t* __restrict__ counts, int* defects)
{
    extern __shared__ double smem[];
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    const long long i0 = static_cast<long long>(blockIdx.x) * blockDim.x;
    const index_t cells = index_t(min(static_cast<long long>(blockDim.x), ncells - i0));
    auto* srp = reinterpret_cast<offset_t*>(smem);
    auto* scol = reinterpret_cast<index_t*>(srp + std::size_t(blockDim.x) * nc + 1);
    const bool fits =
        stage_entries<false>(i0, cells, nc, cap, row_ptr, col, nullptr, srp, nullptr, scol);
    if (index_t(threadIdx.x) >= cells) return;
    const index_t i = index_t(i0) + index_t(threadIdx.x);
    const detail::cpr_window<offset_t> rp{srp, i0 * nc};
    const detail::cpr_window<index_t> c =
        fits ? detail::cpr_window<index_t>{scol, rp[i0 * nc]} : detail::cpr_window<index_t>{col, 0};
    offset_t cur[NC > 0 ? NC : max_nc];
    const int d = detail::cpr_cell_defects(i, nc, ncells * nc, rp, c);
    if (d) atomicOr(defects, d);
    counts[i] = d ? 0 : detail::cpr_cell_count(i, nc, rp, c, cur);
}

template <int NC, class VT>
__global__ void cpr_values_staged_kernel(index_t ncells, index_t nc_rt, index_t p, offset_t cap,
                                         const offset_t* __restrict__ row_ptr,
                                         const index_t* __restrict__ col,
                                         const double* __restrict__ val,
                                         const offset_t* __restrict__ ap_ptr,
                                         index_t* __restrict__ ap_col, double* __restrict__ ap_val,
                                         VT* __restrict__ w, unsigned long long* singular)
{
    extern __shared__ double smem[];
    constexpr int m = NC > 0 ? NC : int(max_nc);
    const index_t nc = NC > 0 ? index_t(NC) : nc_rt;
    const long long i0 = static_cast<long long>(blockIdx.x) * blockDim.x;
    const index_t cells = index_t(min(static_cast<long long>(blockDim.x), ncells - i0));
    auto* srp = reinterpret_cast<offset_t*>(smem);
    double* sval = reinterpret_cast<double*>(srp + std::size_t(blockDim.x) * nc + 1);
    auto* scol = reinterpret_cast<index_t*>(sval + cap);
    const bool fits = stage_entries<true>(i0, cells, nc, cap, row_ptr, col, val, srp, sval, scol);
    if (index_t(threadIdx.x) >= cells) return;
    const index_t i = index_t(i0) + index_t(threadIdx.x);
    const detail::cpr_window<offset_t> rp{srp, i0 * nc};
    const offset_t k0 = rp[i0 * nc];
    const detail::cpr_window<index_t> c =
        fits ? detail::cpr_window<index_t>{scol, k0} : detail::cpr_window<index_t>{col, 0};
    const detail::cpr_window<double> v =
        fits ? detail::cpr_window<double>{sval, k0} : detail::cpr_window<double>{val, 0};
    offset_t cur[m];
    double work[3 * m * m];
    if (!detail::cpr_cell_values(i, nc, p, rp, c, v, ap_ptr, ap_col, ap_val, w, cur, work))
        atomicAdd(singular, 1ull);
}

// HEPTANE_CPR_KERNEL (for before/after measurements in one binary): "runtime" takes the block
// size at run time, "global" the kernels that read global memory (not staged); both may be
// given ("global,runtime").
bool kernel_option(const char* word)
{
    const char* e = std::getenv("HEPTANE_CPR_KERNEL");
    return e && std::strstr(e, word) != nullptr;
}

// A staged launch: cells (= threads) per block, the entries' capacity, the shared bytes.
// threads 0: none fits (the global kernels run).
struct Staging {
    int threads = 0;
    offset_t cap = 0;
    std::size_t bytes = 0;
};

// The largest of 128, 64 and 32 cells a block whose row pointers and 1.25 times the average
// cell's entries fit 48 KB (the default limit), else 32 cells in up to 160 KB (opted in).
Staging staging(index_t ncells, index_t nc, offset_t nnz, std::size_t entry_bytes)
{
    static const bool global = kernel_option("global");
    Staging st;
    if (global || ncells <= 0 || nnz <= 0) return st;
    const double per_cell = double(nnz) / double(ncells);
    for (int t : {128, 64, 32}) {
        st.threads = t;
        st.cap = offset_t(1.25 * per_cell * t) + 32;
        st.bytes = (std::size_t(t) * std::size_t(nc) + 1) * sizeof(offset_t) +
                   std::size_t(st.cap) * entry_bytes;
        if (st.bytes <= (std::size_t(48) << 10)) return st;
    }
    if (st.bytes <= (std::size_t(160) << 10)) return st;
    return Staging{};
}

template <class K>
void allow_shared(K kernel, std::size_t bytes)
{
    if (bytes > (std::size_t(48) << 10))
        HEPTANE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(bytes)));
}

// the block size for the kernels' templates: nc where it has one (1-4), else 0 (at run time);
// HEPTANE_CPR_KERNEL=runtime: always 0
int compiled_nc(index_t nc)
{
    static const bool runtime = kernel_option("runtime");
    return runtime || nc < 1 || nc > 4 ? 0 : int(nc);
}

// f(std::integral_constant<int, N>{}) with N = compiled_nc(nc): the one dispatch from a run-time
// block size to the kernels' template argument
template <class F>
void with_compiled_nc(index_t nc, F&& f)
{
    switch (compiled_nc(nc)) {
        case 1:
            f(std::integral_constant<int, 1>{});
            break;
        case 2:
            f(std::integral_constant<int, 2>{});
            break;
        case 3:
            f(std::integral_constant<int, 3>{});
            break;
        case 4:
            f(std::integral_constant<int, 4>{});
            break;
        default:
            f(std::integral_constant<int, 0>{});
    }
}

}  // namespace

int cpr_pressure_pattern(const CudaExecutor& exec, index_t ncells, index_t nc,
                         const offset_t* row_ptr, const index_t* col, offset_t* ap_ptr)
{
    const auto s = cuda::stream(exec);
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(ap_ptr, 0, sizeof(offset_t), s));
    if (ncells <= 0) return 0;
    HEPTANE_ENSURE(nc >= 1 && nc <= max_nc, NotSupported,
                   "CPR setup on CUDA: block size " << nc << " > " << max_nc);
    int* defects = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&defects, sizeof(int), s));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(defects, 0, sizeof(int), s));
    const Staging st =
        staging(ncells, nc, read_back(exec, row_ptr + offset_t(ncells) * nc), sizeof(index_t));
    const auto launch = [&](auto global_kernel, auto staged_kernel) {
        if (st.threads == 0) {
            global_kernel<<<cuda::grid_for(ncells, threads), threads, 0, s>>>(
                ncells, nc, row_ptr, col, ap_ptr + 1, defects);
        } else {
            allow_shared(staged_kernel, st.bytes);
            staged_kernel<<<cuda::grid_for(ncells, st.threads), st.threads, st.bytes, s>>>(
                ncells, nc, st.cap, row_ptr, col, ap_ptr + 1, defects);
        }
    };
    with_compiled_nc(nc, [&](auto k) {
        constexpr int N = decltype(k)::value;
        launch(cpr_count_kernel<N>, cpr_count_staged_kernel<N>);
    });
    HEPTANE_CUDA_LAUNCH_CHECK();
    // the row pointers: an inclusive scan of the counts in place
    std::size_t bytes = 0;
    HEPTANE_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, ap_ptr + 1, ap_ptr + 1,
                                                     static_cast<long long>(ncells), s));
    void* tmp = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&tmp, bytes, s));
    HEPTANE_CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp, bytes, ap_ptr + 1, ap_ptr + 1,
                                                     static_cast<long long>(ncells), s));
    HEPTANE_CUDA_CHECK(cudaFreeAsync(tmp, s));
    const int d = read_back(exec, defects);
    HEPTANE_CUDA_CHECK(cudaFreeAsync(defects, s));
    return d;
}

template <class VT>
index_t cpr_pressure_values(const CudaExecutor& exec, index_t ncells, index_t nc, index_t p,
                            const offset_t* row_ptr, const index_t* col, const double* val,
                            const offset_t* ap_ptr, index_t* ap_col, double* ap_val, VT* w)
{
    if (ncells <= 0) return 0;
    HEPTANE_ENSURE(nc >= 1 && nc <= max_nc, NotSupported,
                   "CPR setup on CUDA: block size " << nc << " > " << max_nc);
    const auto s = cuda::stream(exec);
    unsigned long long* singular = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&singular, sizeof(*singular), s));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(singular, 0, sizeof(*singular), s));
    const Staging st = staging(ncells, nc, read_back(exec, row_ptr + offset_t(ncells) * nc),
                               sizeof(index_t) + sizeof(double));
    const auto launch = [&](auto global_kernel, auto staged_kernel) {
        if (st.threads == 0) {
            global_kernel<<<cuda::grid_for(ncells, threads), threads, 0, s>>>(
                ncells, nc, p, row_ptr, col, val, ap_ptr, ap_col, ap_val, w, singular);
        } else {
            allow_shared(staged_kernel, st.bytes);
            staged_kernel<<<cuda::grid_for(ncells, st.threads), st.threads, st.bytes, s>>>(
                ncells, nc, p, st.cap, row_ptr, col, val, ap_ptr, ap_col, ap_val, w, singular);
        }
    };
    with_compiled_nc(nc, [&](auto k) {
        constexpr int N = decltype(k)::value;
        launch(cpr_values_kernel<N, VT>, cpr_values_staged_kernel<N, VT>);
    });
    HEPTANE_CUDA_LAUNCH_CHECK();
    const unsigned long long n = read_back(exec, singular);
    HEPTANE_CUDA_CHECK(cudaFreeAsync(singular, s));
    return index_t(n);
}

std::uint64_t csr_pattern_fingerprint(const CudaExecutor& exec, index_t rows,
                                      const offset_t* row_ptr, const index_t* col)
{
    if (rows <= 0) return fingerprint_finish(0, rows, 0);
    const auto s = cuda::stream(exec);
    unsigned long long* h = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&h, sizeof(*h), s));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(h, 0, sizeof(*h), s));
    fingerprint_kernel<<<cuda::grid_for(rows, 256), 256, 0, s>>>(rows, row_ptr, col, h);
    HEPTANE_CUDA_LAUNCH_CHECK();
    const unsigned long long x = read_back(exec, h);
    HEPTANE_CUDA_CHECK(cudaFreeAsync(h, s));
    return fingerprint_finish(x, rows, read_back(exec, row_ptr + rows));
}

double gershgorin_bound(const CudaExecutor& exec, index_t n, const offset_t* row_ptr,
                        const index_t* col, const double* val)
{
    if (n <= 0) return 0;
    const auto s = cuda::stream(exec);
    unsigned long long* b = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&b, sizeof(*b), s));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(b, 0, sizeof(*b), s));
    gershgorin_kernel<<<cuda::grid_for(n, 256), 256, 0, s>>>(n, row_ptr, col, val, b);
    HEPTANE_CUDA_LAUNCH_CHECK();
    const unsigned long long bits = read_back(exec, b);
    HEPTANE_CUDA_CHECK(cudaFreeAsync(b, s));
    double bound = 0;
    std::memcpy(&bound, &bits, sizeof bound);
    return bound;
}

template index_t cpr_pressure_values<double>(const CudaExecutor&, index_t, index_t, index_t,
                                             const offset_t*, const index_t*, const double*,
                                             const offset_t*, index_t*, double*, double*);
template index_t cpr_pressure_values<float>(const CudaExecutor&, index_t, index_t, index_t,
                                            const offset_t*, const index_t*, const double*,
                                            const offset_t*, index_t*, double*, float*);

}  // namespace heptane::kernels
