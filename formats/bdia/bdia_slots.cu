// bdia_slots_from_csr on CUDA (formats/bdia/bdia_slots.hpp): one thread per row, the block
// offsets in the kernel's parameters; an entry on none of them is reported through atomicMin.
#include <cstdint>

#include "core/array.hpp"
#include "core/cuda_common.hpp"
#include "formats/bdia/bdia_slots.hpp"

namespace heptane::kernels {

namespace {

struct SlotParams {
    long long n;
    index_t nc, nq;
    index_t offsets[bdia_slots_max_offsets];
};

template <class ST>
__global__ void bdia_slots_kernel(SlotParams p, const index_t* __restrict__ row_ptr,
                                  const index_t* __restrict__ col, ST* __restrict__ slot,
                                  unsigned long long* bad)
{
    const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (r >= p.n) return;
    const long long rb = r / p.nc;
    for (long long k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
        const long long c = col[k];
        const long long d = c / p.nc - rb;
        int q = 0;
        while (q < p.nq && p.offsets[q] != d) ++q;
        if (q == p.nq || c < 0 || c >= p.n) {
            atomicMin(bad, static_cast<unsigned long long>(k));
            continue;
        }
        slot[k] = ST((static_cast<long long>(q) * p.nc + c % p.nc) * p.n + r);
    }
}

}  // namespace

template <class ST>
offset_t bdia_slots_from_csr(const CudaExecutor& exec, index_t n, index_t nc,
                             const index_t* row_ptr, const index_t* col, const index_t* offsets,
                             index_t nq, ST* slot)
{
    HEPTANE_ENSURE(nc >= 1 && n % nc == 0, InputError,
                   "BDIA-GH slots: block size " << nc << " does not divide " << n);
    HEPTANE_ENSURE(nq <= bdia_slots_max_offsets, NotSupported,
                   "BDIA-GH slots on a GPU: " << nq << " block offsets (at most "
                                              << bdia_slots_max_offsets << ")");
    SlotParams p{};
    p.n = n;
    p.nc = nc;
    p.nq = nq;
    for (index_t q = 0; q < nq; ++q) p.offsets[q] = offsets[q];
    Array<unsigned long long> bad(exec.shared_from_this(), 1);
    const unsigned long long none = ~0ull;
    copy_bytes(*cpu_executor(), &none, exec, bad.data(), sizeof none);
    if (n > 0) {
        bdia_slots_kernel<ST><<<cuda::grid_for(n, 256), 256, 0, cuda::stream(exec)>>>(
            p, row_ptr, col, slot, bad.data());
        HEPTANE_CUDA_LAUNCH_CHECK();
    }
    unsigned long long first = none;
    copy_bytes(exec, bad.data(), *cpu_executor(), &first, sizeof first);
    return first == none ? offset_t(-1) : offset_t(first);
}

template offset_t bdia_slots_from_csr<std::int32_t>(const CudaExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int32_t*);
template offset_t bdia_slots_from_csr<std::int64_t>(const CudaExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int64_t*);

}  // namespace heptane::kernels
