// bdia_slots_from_csr on the CPU (formats/bdia/bdia_slots.hpp): one pass over the rows, OpenMP.
#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "formats/bdia/bdia_slots.hpp"

namespace heptane::kernels {

template <class ST>
offset_t bdia_slots_from_csr(const CpuExecutor&, index_t n, index_t nc, const index_t* row_ptr,
                             const index_t* col, const index_t* offsets, index_t nq, ST* slot)
{
    HEPTANE_ENSURE(nc >= 1 && n % nc == 0, InputError,
                   "BDIA-GH slots: block size " << nc << " does not divide " << n);
    offset_t bad = -1;
#pragma omp parallel for schedule(static) if (n > 32768)
    for (index_t r = 0; r < n; ++r) {
        for (offset_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
            const index_t c = col[k];
            const index_t d = c / nc - r / nc;
            index_t q = 0;
            while (q < nq && offsets[q] != d) ++q;
            if (q == nq || c < 0 || c >= n) {
#pragma omp critical(heptane_bdia_slots_bad)
                bad = bad < 0 ? k : std::min(bad, k);
                continue;
            }
            slot[k] = ST((offset_t(q) * nc + c % nc) * offset_t(n) + r);
        }
    }
    return bad;
}

template offset_t bdia_slots_from_csr<std::int32_t>(const CpuExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int32_t*);
template offset_t bdia_slots_from_csr<std::int64_t>(const CpuExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int64_t*);

}  // namespace heptane::kernels
