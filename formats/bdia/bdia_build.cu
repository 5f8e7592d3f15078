// bdia_place_entries on CUDA (formats/bdia/bdia_build.hpp): one thread per row for short rows
// (below), one warp per row for long ones (its entries read by neighbouring lanes: coalesced), the
// block offsets in the kernel's parameters when there are at most 64 of them, else in device memory
// (ascending: a binary search), the pattern bit set by an atomicOr on its 64-bit word (a word's 64
// rows come from neighbouring warps of one diagonal); an entry on none of the offsets is reported
// through atomicMin.
#include <cstdint>

#include "core/array.hpp"
#include "core/cuda_common.hpp"
#include "formats/bdia/bdia_build.hpp"

namespace heptane::kernels {

namespace {

constexpr int kParamOffsets = 64;

struct PlaceParams {
    long long rows, cols;
    index_t nc, nq;
    index_t offsets[kParamOffsets];
};

constexpr int kWarpsPerBlock = 8;

// The first q < nq with offsets[q] >= d (nq when none): a binary search of the ascending list.
__device__ inline int first_not_below(const index_t* offsets, int nq, long long d)
{
    int lo = 0, hi = nq;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (offsets[mid] < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

template <class T, bool Scalar>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    bdia_place_kernel(PlaceParams p, const index_t* __restrict__ many_offsets,
                      const offset_t* __restrict__ row_ptr, const index_t* __restrict__ col,
                      const T* __restrict__ val, T* __restrict__ data,
                      unsigned long long* __restrict__ pattern, unsigned long long* bad)
{
    const long long r = blockIdx.x * static_cast<long long>(kWarpsPerBlock) + threadIdx.x / 32;
    if (r >= p.rows) return;
    const long long nc = Scalar ? 1 : p.nc;
    const long long rb = r / nc;
    const long long end = row_ptr[r + 1];
    const index_t* offsets = many_offsets ? many_offsets : p.offsets;
    for (long long e = row_ptr[r] + threadIdx.x % 32; e < end; e += 32) {
        const long long c = col[e];
        if (c < 0 || c >= p.cols) {  // outside the matrix
            atomicMin(bad, static_cast<unsigned long long>(e));
            continue;
        }
        const long long d = c / nc - rb;
        const int lo = first_not_below(offsets, p.nq, d);
        if (lo == p.nq || offsets[lo] != d) {
            atomicMin(bad, static_cast<unsigned long long>(e));
            continue;
        }
        const long long s = (static_cast<long long>(lo) * nc + c % nc) * p.rows + r;
        data[s] = val[e];
        atomicOr(pattern + (s >> 6), 1ull << (s & 63));
    }
}

// The same with one thread per row, for short rows (a 7-point stencil: 7 entries per row at
// Nc = 1): the 32 rows of a warp write the same diagonals at neighbouring addresses
// (coalesced), and the pattern bits of a word are ORed within the warp first (lanes whose
// slots share a word: __match_any_sync; their bits combined by two 32-bit __reduce_or_sync),
// one atomicOr per word instead of one per entry. Every lane runs the warp's longest row's
// trip count so the warp stays converged for the warp-wide calls.
template <class T, bool Scalar>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    bdia_place_rows_kernel(PlaceParams p, const index_t* __restrict__ many_offsets,
                           const offset_t* __restrict__ row_ptr, const index_t* __restrict__ col,
                           const T* __restrict__ val, T* __restrict__ data,
                           unsigned long long* __restrict__ pattern, unsigned long long* bad)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const bool row_ok = r < p.rows;
    const long long begin = row_ok ? row_ptr[r] : 0;
    const int len = row_ok ? int(row_ptr[r + 1] - begin) : 0;
    const int longest = __reduce_max_sync(0xffffffffu, unsigned(len));
    const long long nc = Scalar ? 1 : p.nc;
    const long long rb = row_ok ? r / nc : 0;
    const index_t* offsets = many_offsets ? many_offsets : p.offsets;
    int q = 0;  // the previous entry's offset index: a row's entries mostly ascend in d
    for (int j = 0; j < longest; ++j) {
        unsigned long long word = ~0ull, bit = 0;
        if (j < len) {
            const long long e = begin + j;
            const long long c = col[e];
            bool ok = c >= 0 && c < p.cols;
            if (ok) {
                const long long d = c / nc - rb;
                if (!(q < p.nq && offsets[q] == d)) {
                    if (q + 1 < p.nq && offsets[q + 1] == d) {
                        ++q;
                    } else {
                        q = first_not_below(offsets, p.nq, d);
                    }
                }
                ok = q < p.nq && offsets[q] == d;
                if (ok) {
                    const long long s = (static_cast<long long>(q) * nc + c % nc) * p.rows + r;
                    data[s] = val[e];
                    word = static_cast<unsigned long long>(s) >> 6;
                    bit = 1ull << (s & 63);
                } else {
                    q = 0;
                }
            }
            if (!ok) atomicMin(bad, static_cast<unsigned long long>(e));
        }
        const unsigned group = __match_any_sync(0xffffffffu, word);
        const unsigned lo_bits = __reduce_or_sync(group, unsigned(bit));
        const unsigned hi_bits = __reduce_or_sync(group, unsigned(bit >> 32));
        const bool leader = (threadIdx.x % 32) == unsigned(__ffs(group) - 1);
        if (leader && word != ~0ull)
            atomicOr(pattern + word, (static_cast<unsigned long long>(hi_bits) << 32) | lo_bits);
    }
}

}  // namespace

template <class T>
offset_t bdia_place_entries(const CudaExecutor& exec, index_t rows, index_t cols, index_t nc,
                            const index_t* offsets, index_t nq, offset_t nnz,
                            const offset_t* row_ptr, const index_t* col, const T* val, T* data,
                            std::uint64_t* pattern)
{
    HEPTANE_ENSURE(nc >= 1 && rows % nc == 0, InputError,
                   "BDIA-GH on a GPU: block size " << nc << " does not divide " << rows);
    HEPTANE_CUDA_CHECK(cudaSetDevice(exec.device()));
    const cudaStream_t st = cuda::stream(exec);
    const std::size_t slots = std::size_t(nq) * std::size_t(nc) * std::size_t(rows);
    if (slots > 0) {
        HEPTANE_CUDA_CHECK(cudaMemsetAsync(data, 0, slots * sizeof(T), st));
        HEPTANE_CUDA_CHECK(
            cudaMemsetAsync(pattern, 0, (slots + 63) / 64 * sizeof(std::uint64_t), st));
    }
    PlaceParams p{};
    p.rows = rows;
    p.cols = cols;
    p.nc = nc;
    p.nq = nq;
    Array<index_t> many;  // more offsets than the parameters hold: in device memory
    if (nq > kParamOffsets)
        many =
            Array<index_t>(std::vector<index_t>(offsets, offsets + nq)).to(exec.shared_from_this());
    else
        for (index_t q = 0; q < nq; ++q) p.offsets[q] = offsets[q];
    const index_t* many_ptr = nq > kParamOffsets ? many.data() : nullptr;
    Array<unsigned long long> bad(exec.shared_from_this(), 1);
    const unsigned long long none = ~0ull;  // all bytes 0xff
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(bad.data(), 0xff, sizeof none, st));
    if (rows > 0) {
        // short rows (up to 32 entries on average): a thread per row; long ones: a warp per row
        const bool per_thread = nnz <= offset_t(32) * rows;
        const auto kernel =
            per_thread
                ? (nc == 1 ? bdia_place_rows_kernel<T, true> : bdia_place_rows_kernel<T, false>)
                : (nc == 1 ? bdia_place_kernel<T, true> : bdia_place_kernel<T, false>);
        const unsigned grid =
            cuda::grid_for(rows, per_thread ? kWarpsPerBlock * 32 : kWarpsPerBlock);
        kernel<<<grid, kWarpsPerBlock * 32, 0, st>>>(p, many_ptr, row_ptr, col, val, data,
                                                     reinterpret_cast<unsigned long long*>(pattern),
                                                     bad.data());
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
    unsigned long long first = none;
    copy_bytes(exec, bad.data(), *cpu_executor(), &first, sizeof first);
    return first == none ? offset_t(-1) : offset_t(first);
}

#define HEPTANE_INSTANTIATE(T)                                                                  \
    template offset_t bdia_place_entries<T>(const CudaExecutor&, index_t, index_t, index_t,     \
                                            const index_t*, index_t, offset_t, const offset_t*, \
                                            const index_t*, const T*, T*, std::uint64_t*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
