// bdia_place_entries on CUDA (formats/bdia/bdia_build.hpp): one warp per row (its entries read
// by neighbouring lanes: coalesced), the block offsets in the kernel's parameters when there are
// at most 64 of them, else in device memory (ascending: a binary search), the pattern bit set by an
// atomicOr on its 64-bit word (a word's 64 rows come from neighbouring warps of one diagonal); an
// entry on none of the offsets is reported through atomicMin.
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
        int lo = 0, hi = p.nq;  // the first q with offsets[q] >= d
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (offsets[mid] < d)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == p.nq || offsets[lo] != d) {
            atomicMin(bad, static_cast<unsigned long long>(e));
            continue;
        }
        const long long s = (static_cast<long long>(lo) * nc + c % nc) * p.rows + r;
        data[s] = val[e];
        atomicOr(pattern + (s >> 6), 1ull << (s & 63));
    }
}

}  // namespace

template <class T>
offset_t bdia_place_entries(const CudaExecutor& exec, index_t rows, index_t cols, index_t nc,
                            const index_t* offsets, index_t nq, const offset_t* row_ptr,
                            const index_t* col, const T* val, T* data, std::uint64_t* pattern)
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
    const unsigned long long none = ~0ull;
    copy_bytes(*cpu_executor(), &none, exec, bad.data(), sizeof none);
    if (rows > 0) {
        auto* bits = reinterpret_cast<unsigned long long*>(pattern);
        const unsigned grid = cuda::grid_for(rows, kWarpsPerBlock);
        if (nc == 1)
            bdia_place_kernel<T, true><<<grid, kWarpsPerBlock * 32, 0, st>>>(
                p, many_ptr, row_ptr, col, val, data, bits, bad.data());
        else
            bdia_place_kernel<T, false><<<grid, kWarpsPerBlock * 32, 0, st>>>(
                p, many_ptr, row_ptr, col, val, data, bits, bad.data());
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
    unsigned long long first = none;
    copy_bytes(exec, bad.data(), *cpu_executor(), &first, sizeof first);
    return first == none ? offset_t(-1) : offset_t(first);
}

#define HEPTANE_INSTANTIATE(T)                                                              \
    template offset_t bdia_place_entries<T>(const CudaExecutor&, index_t, index_t, index_t, \
                                            const index_t*, index_t, const offset_t*,       \
                                            const index_t*, const T*, T*, std::uint64_t*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
