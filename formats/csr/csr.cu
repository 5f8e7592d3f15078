// CSR SpMV on CUDA: scalar (a thread per row), vector (a group of 2..32 lanes per row) and
// merge-path (Merrill & Garland, SC'16: every thread gets the same number of rows + nonzeros,
// whatever the row lengths), selectable through CsrKernel. A^T x without a stored transpose:
// y = beta*y, then a lane group per row scatters alpha*a_ij*x_i into y_j with atomics.
//
// Traffic of y = A x (fp64): 12 bytes per nonzero (value + column index), 8 per row pointer,
// x about once through L2, y once: 12*nnz + 24*N bytes at the floor.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "formats/csr/csr_kernels.hpp"
#include "formats/csr/csr_vector.cuh"
#include "formats/cuda_spmv_common.cuh"

namespace heptane::kernels {

namespace {

using namespace cuda_detail;

// ---- scalar: y_i = alpha * sum_k a_ik x_k + beta * y_i, one thread per row ---------------
template <class MT, class VT>
__global__ void __launch_bounds__(256)
    csr_scalar_kernel(index_t rows, const offset_t* __restrict__ ptr,
                      const index_t* __restrict__ ci, const MT* __restrict__ v, VT alpha,
                      const VT* __restrict__ x, VT beta, VT* __restrict__ y)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= rows) return;
    const offset_t e = ptr[r + 1];
    VT sum = 0;
    for (offset_t k = ptr[r]; k < e; ++k) sum += VT(ldcs(v + k)) * ldg(x + ldg(ci + k));
    store_result(y, r, alpha, sum, beta);
}

// ---- merge-path --------------------------------------------------------------------------
// The merge of the row-end offsets (ptr[1..rows]) with the nonzero indices 0..nnz-1 has
// rows + nnz items. Tile t of the grid takes items [t*TILE, (t+1)*TILE): it finds its start
// and end on the merge path by binary search, stages the products a_ik*x_k of its nonzeros
// and its row ends in shared memory (coalesced), and each thread walks IPT items of the tile.
// Rows that end inside the tile are written to y; the partial sum of the row the tile ends
// in is a carry-out that a second kernel adds to y (after the tile that ends the row wrote
// it). Exactly rows + nnz items per tile whatever the row lengths: no load imbalance.
constexpr int merge_block = 128;
constexpr int merge_ipt = 8;
constexpr int merge_tile = merge_block * merge_ipt;

/// Merge-path search: the split (rows consumed, nonzeros consumed) of diagonal `diag` of the
/// merge of a[0..a_len) (row ends) with the natural numbers 0..b_len-1.
template <class A>
__device__ __forceinline__ void merge_search(long long diag, const A* a, long long a_len,
                                             long long b_len, long long& ra, long long& nb)
{
    long long lo = diag > b_len ? diag - b_len : 0;
    long long hi = diag < a_len ? diag : a_len;
    while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if (static_cast<long long>(a[mid]) <= diag - mid - 1)
            lo = mid + 1;
        else
            hi = mid;
    }
    ra = lo;
    nb = diag - lo;
}

/// Split of the merge path at every tile boundary t*TILE, t = 0..tiles (one thread each):
/// the tiles then start with one load instead of a chain of ~log2(rows + nnz) dependent ones.
__global__ void csr_merge_partition_kernel(index_t rows, offset_t nnz, long long tiles,
                                           const offset_t* __restrict__ ptr,
                                           long long* __restrict__ coord)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t > tiles) return;
    const long long total = static_cast<long long>(rows) + nnz;
    const long long diag = t * merge_tile < total ? t * merge_tile : total;
    long long ra, nb;
    merge_search(diag, ptr + 1, rows, nnz, ra, nb);
    coord[2 * t] = ra;
    coord[2 * t + 1] = nb;
}

template <class MT, class VT>
__global__ void __launch_bounds__(merge_block)
    csr_merge_kernel(index_t rows, offset_t nnz, const offset_t* __restrict__ ptr,
                     const index_t* __restrict__ ci, const MT* __restrict__ v, VT alpha,
                     const VT* __restrict__ x, VT beta, VT* __restrict__ y,
                     const long long* __restrict__ coord, index_t* __restrict__ carry_row,
                     VT* __restrict__ carry_val)
{
    __shared__ int s_rowend[merge_tile + 1];  // row ends relative to the tile's first nonzero
    __shared__ VT s_prod[merge_tile];         // a_ik * x_k of the tile's nonzeros
    __shared__ VT s_sum[merge_tile + 1];      // per-row sums of the tile's rows

    const long long total = static_cast<long long>(rows) + nnz;
    const long long d0 = static_cast<long long>(blockIdx.x) * merge_tile;
    const long long d1 = d0 + merge_tile < total ? d0 + merge_tile : total;
    // the tile's start and end on the merge path (csr_merge_partition_kernel)
    const long long r0 = coord[2 * blockIdx.x], n0 = coord[2 * blockIdx.x + 1];
    const long long r1 = coord[2 * blockIdx.x + 2], n1 = coord[2 * blockIdx.x + 3];
    const int nrows = static_cast<int>(r1 - r0);  // rows that end in this tile
    const int nnzt = static_cast<int>(n1 - n0);   // nonzeros of this tile
    for (int i = threadIdx.x; i < nrows; i += merge_block)
        s_rowend[i] = static_cast<int>(ptr[r0 + 1 + i] - n0);
    for (int i = threadIdx.x; i < nnzt; i += merge_block)
        s_prod[i] = VT(ldcs(v + n0 + i)) * ldg(x + ldg(ci + n0 + i));
    for (int i = threadIdx.x; i <= nrows; i += merge_block) s_sum[i] = VT(0);
    __syncthreads();

    // this thread's items [t0, t1) of the tile, split on the tile-local merge path
    const long long tile_items = d1 - d0;
    const long long t0 = static_cast<long long>(threadIdx.x) * merge_ipt;
    if (t0 < tile_items) {
        const long long t1 = t0 + merge_ipt < tile_items ? t0 + merge_ipt : tile_items;
        long long row, nz;
        merge_search(t0, s_rowend, nrows, nnzt, row, nz);
        const long long first_row = row;
        VT sum = 0;
        for (long long it = t0; it < t1; ++it) {
            if (row < nrows && nz >= s_rowend[row]) {
                // row end: a row begun by this thread is its own; the first may be shared
                if (row == first_row)
                    atomicAdd(s_sum + row, sum);
                else
                    s_sum[row] = sum;
                sum = 0;
                ++row;
            } else {
                sum += s_prod[nz];
                ++nz;
            }
        }
        if (sum != VT(0)) atomicAdd(s_sum + row, sum);  // partial row: continued after t1
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nrows; i += merge_block)
        store_result(y, r0 + i, alpha, s_sum[i], beta);
    if (threadIdx.x == 0) {
        // the row the tile ends in (if any of its nonzeros are here) continues in later tiles
        const bool carry = r1 < rows && n1 > n0 && ptr[r1] < n1;
        carry_row[blockIdx.x] = carry ? static_cast<index_t>(r1) : index_t(-1);
        carry_val[blockIdx.x] = carry ? s_sum[nrows] : VT(0);
    }
}

template <class VT>
__global__ void csr_merge_fixup_kernel(long long tiles, const index_t* __restrict__ carry_row,
                                       const VT* __restrict__ carry_val, VT alpha,
                                       VT* __restrict__ y)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t >= tiles) return;
    const index_t r = carry_row[t];
    if (r >= 0) atomicAdd(y + r, alpha * carry_val[t]);
}

// ---- row-length statistics, once per matrix ------------------------------------------------
__global__ void max_row_length_kernel(index_t rows, const offset_t* __restrict__ ptr,
                                      unsigned long long* __restrict__ out)
{
    unsigned long long m = 0;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; r < rows;
         r += stride) {
        const unsigned long long len = static_cast<unsigned long long>(ptr[r + 1] - ptr[r]);
        m = len > m ? len : m;
    }
    for (int o = 16; o > 0; o /= 2) {
        const unsigned long long other = __shfl_xor_sync(0xffffffffu, m, o);
        m = other > m ? other : m;
    }
    if ((threadIdx.x & 31) == 0) atomicMax(out, m);
}

/// The longest row, computed on the device once per matrix and cached by (row_ptr, rows,
/// nnz). Only the automatic kernel choice uses it, so a stale entry (a freed matrix whose
/// address is reused with the same sizes) could only pick a slower kernel, never a wrong
/// result.
offset_t max_row_length(const CudaExecutor& exec, index_t rows, offset_t nnz, const offset_t* ptr)
{
    static std::mutex mutex;
    static std::map<std::tuple<const void*, index_t, offset_t>, offset_t> cache;
    const auto key = std::make_tuple(static_cast<const void*>(ptr), rows, nnz);
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = cache.find(key);
        if (it != cache.end()) return it->second;
    }
    auto s = cuda::stream(exec);
    unsigned long long* d = nullptr;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(*d), s));
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(*d), s));
    const unsigned grid =
        std::min<unsigned>(cuda::grid_for(rows, 256), 4u * exec.multiprocessors());
    max_row_length_kernel<<<grid, 256, 0, s>>>(rows, ptr, d);
    HEPTANE_CUDA_LAUNCH_CHECK();
    unsigned long long h = 0;
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(&h, d, sizeof(h), cudaMemcpyDeviceToHost, s));
    HEPTANE_CUDA_CHECK(cudaFreeAsync(d, s));
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
    std::lock_guard<std::mutex> lock(mutex);
    cache[key] = static_cast<offset_t>(h);
    return static_cast<offset_t>(h);
}

/// Lanes per row for the vector kernels: the largest power of two <= half the mean row
/// length, 2..32. Each lane then handles about two or more entries of its row, so it has
/// independent loads in flight, and the shuffle reduction (log2 G steps) is shared by more
/// work (measured on the H100: G = mean/2 beats G = mean for GH rows of 28 and 56).
int group_size(index_t rows, offset_t nnz)
{
    const double mean = rows > 0 ? double(nnz) / rows : 0.0;
    int g = 2;
    while (g < 32 && 2.0 * (2 * g) <= mean) g *= 2;
    return g;
}

template <int G, class MT, class VT>
void launch_vector(const CudaExecutor& exec, const Csr<MT>& a, VT alpha, const VT* x, VT beta,
                   VT* y)
{
    const unsigned grid = cuda::grid_for(static_cast<long long>(a.rows) * G, 256);
    csr_vector_kernel<G, offset_t, index_t, MT, VT><<<grid, 256, 0, cuda::stream(exec)>>>(
        a.rows, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, beta, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <int G, class MT, class VT>
void launch_scatter(const CudaExecutor& exec, const Csr<MT>& a, VT alpha, const VT* x, VT* y)
{
    const ScatterStripes st = scatter_stripes(a.rows, G);
    const unsigned grid = cuda::grid_for(st.groups(a.rows) * G, 256);
    csr_scatter_kernel<G, offset_t, index_t, MT, VT><<<grid, 256, 0, cuda::stream(exec)>>>(
        a.rows, st, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
}

template <class MT, class VT>
void launch_merge(const CudaExecutor& exec, const Csr<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    auto s = cuda::stream(exec);
    const long long total = static_cast<long long>(a.rows) + a.nnz();
    const long long tiles = (total + merge_tile - 1) / merge_tile;
    // tile splits (tiles + 1 pairs) and carry-outs (one (row, partial sum) per tile), from
    // the stream-ordered pool
    void* buf = nullptr;
    const std::size_t coord_bytes = (tiles + 1) * 2 * sizeof(long long);
    const std::size_t row_bytes = (tiles * sizeof(index_t) + 15) / 16 * 16;
    HEPTANE_CUDA_CHECK(cudaMallocAsync(&buf, coord_bytes + row_bytes + tiles * sizeof(VT), s));
    auto* coord = static_cast<long long*>(buf);
    auto* carry_row = reinterpret_cast<index_t*>(static_cast<char*>(buf) + coord_bytes);
    auto* carry_val = reinterpret_cast<VT*>(static_cast<char*>(buf) + coord_bytes + row_bytes);
    csr_merge_partition_kernel<<<cuda::grid_for(tiles + 1, 256), 256, 0, s>>>(
        a.rows, a.nnz(), tiles, a.row_ptr.data(), coord);
    HEPTANE_CUDA_LAUNCH_CHECK();
    csr_merge_kernel<MT, VT><<<static_cast<unsigned>(tiles), merge_block, 0, s>>>(
        a.rows, a.nnz(), a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, beta, y,
        coord, carry_row, carry_val);
    HEPTANE_CUDA_LAUNCH_CHECK();
    csr_merge_fixup_kernel<VT>
        <<<cuda::grid_for(tiles, 256), 256, 0, s>>>(tiles, carry_row, carry_val, alpha, y);
    HEPTANE_CUDA_LAUNCH_CHECK();
    HEPTANE_CUDA_CHECK(cudaFreeAsync(buf, s));
}

}  // namespace

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Csr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y,
          CsrKernel kernel)
{
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    if (ny == 0) return;
    make_current(exec);
    auto s = cuda::stream(exec);
    if (a.nnz() == 0) {  // y = beta*y (no product term)
        scale(exec, ny, beta, y);
        return;
    }
    ensure_on_device(exec, *a.row_ptr.exec(), "CSR");
    ensure_on_device(exec, *a.exec(), "CSR");
    const int g = group_size(a.rows, a.nnz());
    if (op == Op::transpose) {
        // y = beta*y; y_j += alpha * sum_i a_ij x_i by atomics
        scale(exec, ny, beta, y);
        switch (g) {
            case 2:
                launch_scatter<2>(exec, a, alpha, x, y);
                break;
            case 4:
                launch_scatter<4>(exec, a, alpha, x, y);
                break;
            case 8:
                launch_scatter<8>(exec, a, alpha, x, y);
                break;
            case 16:
                launch_scatter<16>(exec, a, alpha, x, y);
                break;
            default:
                launch_scatter<32>(exec, a, alpha, x, y);
                break;
        }
        return;
    }
    if (kernel == CsrKernel::automatic) {
        // very unequal rows (a row far longer than the mean) starve the vector kernel's
        // lanes and unbalance its blocks: merge-path then; otherwise vector
        const double mean = double(a.nnz()) / a.rows;
        const offset_t longest = max_row_length(exec, a.rows, a.nnz(), a.row_ptr.data());
        kernel = double(longest) > 8.0 * mean + 64.0 ? CsrKernel::merge : CsrKernel::vector;
    }
    switch (kernel) {
        case CsrKernel::scalar: {
            csr_scalar_kernel<MT, VT><<<cuda::grid_for(a.rows, 256), 256, 0, s>>>(
                a.rows, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, beta, y);
            HEPTANE_CUDA_LAUNCH_CHECK();
            return;
        }
        case CsrKernel::merge:
            launch_merge(exec, a, alpha, x, beta, y);
            return;
        default:
            switch (g) {
                case 2:
                    launch_vector<2>(exec, a, alpha, x, beta, y);
                    break;
                case 4:
                    launch_vector<4>(exec, a, alpha, x, beta, y);
                    break;
                case 8:
                    launch_vector<8>(exec, a, alpha, x, beta, y);
                    break;
                case 16:
                    launch_vector<16>(exec, a, alpha, x, beta, y);
                    break;
                default:
                    launch_vector<32>(exec, a, alpha, x, beta, y);
                    break;
            }
    }
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                             \
    template void spmv<MT, VT>(const CudaExecutor&, const Csr<MT>&, Op, VT, const VT*, VT, VT*, \
                               CsrKernel);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
