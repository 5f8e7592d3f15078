// CPR's setup kernels, the CSR pattern fingerprint and Gershgorin's bound on CUDA; declared in
// amg_kernels.hpp, the per-cell work shared with the CPU (cpr_cell.hpp). A thread per cell: its nc
// rows are walked together, ~7·nc² entries for a 7-point stencil, so the warps read scattered rows
// but each entry once per pass.
#include <cstdlib>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <string>

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

// the block size for the kernels' templates: nc where it has one (1-4), else 0 (at run time);
// HEPTANE_CPR_KERNEL=runtime: always 0 (before/after measurements in one binary)
int compiled_nc(index_t nc)
{
    static const bool runtime = [] {
        const char* e = std::getenv("HEPTANE_CPR_KERNEL");
        return e && std::string(e) == "runtime";
    }();
    return runtime || nc < 1 || nc > 4 ? 0 : int(nc);
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
    const auto grid = cuda::grid_for(ncells, threads);
    switch (compiled_nc(nc)) {
        case 1:
            cpr_count_kernel<1>
                <<<grid, threads, 0, s>>>(ncells, nc, row_ptr, col, ap_ptr + 1, defects);
            break;
        case 2:
            cpr_count_kernel<2>
                <<<grid, threads, 0, s>>>(ncells, nc, row_ptr, col, ap_ptr + 1, defects);
            break;
        case 3:
            cpr_count_kernel<3>
                <<<grid, threads, 0, s>>>(ncells, nc, row_ptr, col, ap_ptr + 1, defects);
            break;
        case 4:
            cpr_count_kernel<4>
                <<<grid, threads, 0, s>>>(ncells, nc, row_ptr, col, ap_ptr + 1, defects);
            break;
        default:
            cpr_count_kernel<0>
                <<<grid, threads, 0, s>>>(ncells, nc, row_ptr, col, ap_ptr + 1, defects);
    }
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
    const auto grid = cuda::grid_for(ncells, threads);
    const auto launch = [&](auto kernel) {
        kernel<<<grid, threads, 0, s>>>(ncells, nc, p, row_ptr, col, val, ap_ptr, ap_col, ap_val, w,
                                        singular);
    };
    switch (compiled_nc(nc)) {
        case 1:
            launch(cpr_values_kernel<1, VT>);
            break;
        case 2:
            launch(cpr_values_kernel<2, VT>);
            break;
        case 3:
            launch(cpr_values_kernel<3, VT>);
            break;
        case 4:
            launch(cpr_values_kernel<4, VT>);
            break;
        default:
            launch(cpr_values_kernel<0, VT>);
    }
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
