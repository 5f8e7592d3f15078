// bdia_place_entries on CUDA (formats/bdia/bdia_build.hpp): one thread per row for short rows
// (below), one warp per row for long ones (its entries read by neighbouring lanes: coalesced), the
// block offsets in the kernel's parameters when there are at most 64 of them, else in device memory
// (ascending: a binary search), the pattern bit set by an atomicOr on its 64-bit word (a word's 64
// rows come from neighbouring warps of one diagonal); an entry on none of the offsets is reported
// through atomicMin. bdia_place_entries_from_host streams the entries up in chunks of rows on a
// copy stream and places each chunk on the executor's stream while the next one goes up.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/array.hpp"
#include "core/cuda_common.hpp"
#include "formats/bdia/bdia_build.hpp"

namespace heptane::kernels {

namespace {

constexpr int kParamOffsets = 64;

// rows: the matrix's (the slots' stride); the kernel places rows [r0, r1), whose entries
// e (row_ptr's numbering) lie at col[e - e0], val[e - e0].
struct PlaceParams {
    long long rows, cols, r0, r1, e0;
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
    const long long r =
        p.r0 + blockIdx.x * static_cast<long long>(kWarpsPerBlock) + threadIdx.x / 32;
    if (r >= p.r1) return;
    const long long nc = Scalar ? 1 : p.nc;
    const long long rb = r / nc;
    const long long end = row_ptr[r + 1];
    const index_t* offsets = many_offsets ? many_offsets : p.offsets;
    for (long long e = row_ptr[r] + threadIdx.x % 32; e < end; e += 32) {
        const long long c = col[e - p.e0];
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
        data[s] = val[e - p.e0];
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
    const long long r = p.r0 + blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const bool row_ok = r < p.r1;
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
            const long long c = col[e - p.e0];
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
                    data[s] = val[e - p.e0];
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

// What both entry points share: the memsets, the kernel parameters and the bad-entry flag.
struct Placement {
    PlaceParams p{};
    Array<index_t> many;  // more offsets than the parameters hold: in device memory
    Array<unsigned long long> bad;
    bool per_thread = false;
    cudaStream_t st = nullptr;

    Placement(const CudaExecutor& exec, index_t rows, index_t cols, index_t nc,
              const index_t* offsets, index_t nq, offset_t nnz, void* data, std::size_t value_bytes,
              std::uint64_t* pattern)
        : bad(exec.shared_from_this(), 1), st(cuda::stream(exec))
    {
        HEPTANE_ENSURE(nc >= 1 && rows % nc == 0, InputError,
                       "BDIA-GH on a GPU: block size " << nc << " does not divide " << rows);
        HEPTANE_CUDA_CHECK(cudaSetDevice(exec.device()));
        const std::size_t slots = std::size_t(nq) * std::size_t(nc) * std::size_t(rows);
        if (slots > 0) {
            HEPTANE_CUDA_CHECK(cudaMemsetAsync(data, 0, slots * value_bytes, st));
            HEPTANE_CUDA_CHECK(
                cudaMemsetAsync(pattern, 0, (slots + 63) / 64 * sizeof(std::uint64_t), st));
        }
        p.rows = rows;
        p.cols = cols;
        p.nc = nc;
        p.nq = nq;
        if (nq > kParamOffsets)
            many = Array<index_t>(std::vector<index_t>(offsets, offsets + nq))
                       .to(exec.shared_from_this());
        else
            for (index_t q = 0; q < nq; ++q) p.offsets[q] = offsets[q];
        HEPTANE_CUDA_CHECK(cudaMemsetAsync(bad.data(), 0xff, sizeof(unsigned long long), st));
        // short rows (up to 32 entries on average): a thread per row; long ones: a warp per row
        per_thread = nnz <= offset_t(32) * rows;
    }

    /// Rows [r0, r1), their entries at col[e - e0], val[e - e0].
    template <class T>
    void place(long long r0, long long r1, long long e0, const offset_t* row_ptr,
               const index_t* col, const T* val, T* data, std::uint64_t* pattern)
    {
        if (r1 <= r0) return;
        p.r0 = r0;
        p.r1 = r1;
        p.e0 = e0;
        const bool scalar = p.nc == 1;
        const auto kernel =
            per_thread
                ? (scalar ? bdia_place_rows_kernel<T, true> : bdia_place_rows_kernel<T, false>)
                : (scalar ? bdia_place_kernel<T, true> : bdia_place_kernel<T, false>);
        const unsigned grid =
            cuda::grid_for(r1 - r0, per_thread ? kWarpsPerBlock * 32 : kWarpsPerBlock);
        kernel<<<grid, kWarpsPerBlock * 32, 0, st>>>(
            p, p.nq > kParamOffsets ? many.data() : nullptr, row_ptr, col, val, data,
            reinterpret_cast<unsigned long long*>(pattern), bad.data());
        HEPTANE_CUDA_LAUNCH_CHECK();
    }

    /// Waits for the stream; -1 or the lowest bad entry.
    offset_t first_bad(const CudaExecutor& exec)
    {
        const unsigned long long none = ~0ull;
        unsigned long long first = none;
        copy_bytes(exec, bad.data(), *cpu_executor(), &first, sizeof first);
        return first == none ? offset_t(-1) : offset_t(first);
    }
};

}  // namespace

template <class T>
offset_t bdia_place_entries(const CudaExecutor& exec, index_t rows, index_t cols, index_t nc,
                            const index_t* offsets, index_t nq, offset_t nnz,
                            const offset_t* row_ptr, const index_t* col, const T* val, T* data,
                            std::uint64_t* pattern)
{
    Placement pl(exec, rows, cols, nc, offsets, nq, nnz, data, sizeof(T), pattern);
    pl.place(0, rows, 0, row_ptr, col, val, data, pattern);
    return pl.first_bad(exec);
}

template <class T>
offset_t bdia_place_entries_from_host(const CudaExecutor& exec, index_t rows, index_t cols,
                                      index_t nc, const index_t* offsets, index_t nq,
                                      const offset_t* row_ptr, const index_t* col, const T* val,
                                      T* data, std::uint64_t* pattern, offset_t chunk_entries)
{
    const offset_t nnz = row_ptr[rows];
    Placement pl(exec, rows, cols, nc, offsets, nq, nnz, data, sizeof(T), pattern);
    const auto owner = exec.shared_from_this();
    // the row pointers at once (8 bytes a row), the entries in chunks of whole rows of about
    // equal size (none a sliver at the end)
    const offset_t pieces = std::max<offset_t>(
        1, (nnz + std::max<offset_t>(chunk_entries, 1) - 1) / std::max<offset_t>(chunk_entries, 1));
    const offset_t target = (nnz + pieces - 1) / pieces;
    std::vector<index_t> cut{0};  // chunk c: rows [cut[c], cut[c + 1])
    offset_t longest = 0;
    while (cut.back() < rows) {
        const index_t r0 = cut.back();
        // the last row that starts before row_ptr[r0] + target, at least one row
        index_t r1 =
            index_t(std::upper_bound(row_ptr + r0 + 1, row_ptr + rows + 1, row_ptr[r0] + target) -
                    row_ptr) -
            1;
        r1 = std::max<index_t>(r1, r0 + 1);
        longest = std::max(longest, row_ptr[r1] - row_ptr[r0]);
        cut.push_back(r1);
    }
    const std::size_t chunks = cut.size() - 1;
    // Two streams: the copies on `copy` (one StagedUpload: the host threads keep filling the
    // staging buffers), the placements on the executor's. Events order them on the device:
    // chunk c is placed once it has arrived (arrived[b]); buffer b is refilled once chunk
    // c - 2's placement has read it (placed[b]). The host never waits for a placement.
    cudaStream_t copy = nullptr;
    HEPTANE_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    cudaEvent_t ev[5] = {};  // arrived[2], placed[2], allocated
    cudaEvent_t *arrived = ev, *placed = ev + 2, &allocated = ev[4];
    offset_t bad = -1;
    try {
        for (auto& e : ev) HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        Array<offset_t> dptr(owner, std::size_t(rows) + 1);
        const int nbuf = chunks > 1 ? 2 : 1;
        Array<index_t> dcol[2];
        Array<T> dval[2];
        for (int b = 0; b < nbuf; ++b) {
            dcol[b] = Array<index_t>(owner, std::size_t(longest));
            dval[b] = Array<T>(owner, std::size_t(longest));
        }
        // the allocations are ordered on the executor's stream: the copies wait for them
        HEPTANE_CUDA_CHECK(cudaEventRecord(allocated, pl.st));
        HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(copy, allocated, 0));
        {
            cuda::StagedUpload up(copy);
            up.copy(dptr.data(), row_ptr, dptr.bytes());
            for (std::size_t c = 0; c < chunks; ++c) {
                const int b = int(c % 2);
                if (c >= 2) HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(copy, placed[b], 0));
                const offset_t e0 = row_ptr[cut[c]], n = row_ptr[cut[c + 1]] - e0;
                up.copy(dcol[b].data(), col + e0, std::size_t(n) * sizeof(index_t));
                up.copy(dval[b].data(), val + e0, std::size_t(n) * sizeof(T));
                HEPTANE_CUDA_CHECK(cudaEventRecord(arrived[b], copy));
                HEPTANE_CUDA_CHECK(cudaStreamWaitEvent(pl.st, arrived[b], 0));
                pl.place(cut[c], cut[c + 1], e0, dptr.data(), dcol[b].data(), dval[b].data(), data,
                         pattern);
                HEPTANE_CUDA_CHECK(cudaEventRecord(placed[b], pl.st));
            }
        }  // the copies done (and the staging buffers free for first_bad's read)
        bad = pl.first_bad(exec);  // waits for the placements; the buffers are freed after
    } catch (...) {
        cudaStreamSynchronize(copy);
        cudaStreamSynchronize(pl.st);
        for (auto& e : ev)
            if (e) cudaEventDestroy(e);
        cudaStreamDestroy(copy);
        throw;
    }
    for (auto& e : ev) cudaEventDestroy(e);
    cudaStreamDestroy(copy);
    return bad;
}

#define HEPTANE_INSTANTIATE(T)                                                                    \
    template offset_t bdia_place_entries<T>(const CudaExecutor&, index_t, index_t, index_t,       \
                                            const index_t*, index_t, offset_t, const offset_t*,   \
                                            const index_t*, const T*, T*, std::uint64_t*);        \
    template offset_t bdia_place_entries_from_host<T>(                                            \
        const CudaExecutor&, index_t, index_t, index_t, const index_t*, index_t, const offset_t*, \
        const index_t*, const T*, T*, std::uint64_t*, offset_t);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
