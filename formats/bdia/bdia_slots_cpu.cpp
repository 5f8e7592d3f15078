// bdia_slots_from_csr and bdia_values_from_blocks on the CPU (formats/bdia/bdia_slots.hpp): one
// pass over the rows, OpenMP.
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

template <class MT>
offset_t bdia_values_from_blocks(const CpuExecutor&, index_t block_rows, index_t nc,
                                 const index_t* block_ptr, const index_t* block_col,
                                 const double* values, const index_t* offsets, index_t nq, MT* dst,
                                 const index_t* col_map, index_t first_block_row)
{
    HEPTANE_ENSURE(nc >= 1 && block_rows >= 0, InputError,
                   "BDIA-GH values from blocks: block size " << nc);
    const offset_t n = offset_t(block_rows) * nc, bb = offset_t(nc) * nc;
    offset_t bad = -1;
#pragma omp parallel for schedule(static) if (block_rows > 8192)
    for (index_t ib = 0; ib < block_rows; ++ib) {
        for (offset_t k = block_ptr[ib]; k < block_ptr[ib + 1]; ++k) {
            const index_t d =
                col_map ? col_map[block_col[k]] - (first_block_row + ib) : block_col[k] - ib;
            index_t q = 0;
            while (q < nq && offsets[q] != d) ++q;
            if (q == nq || (!col_map && (block_col[k] < 0 || block_col[k] >= block_rows))) {
#pragma omp critical(heptane_bdia_blocks_bad)
                bad = bad < 0 ? k : std::min(bad, k);
                continue;
            }
            const double* src = values + k * bb;
            MT* out = dst + offset_t(q) * nc * n + offset_t(ib) * nc;
            for (index_t c = 0; c < nc; ++c, src += nc, out += n)
                for (index_t r = 0; r < nc; ++r) out[r] = MT(src[r]);
        }
    }
    return bad;
}

template offset_t bdia_values_from_blocks<double>(const CpuExecutor&, index_t, index_t,
                                                  const index_t*, const index_t*, const double*,
                                                  const index_t*, index_t, double*, const index_t*,
                                                  index_t);
template offset_t bdia_values_from_blocks<float>(const CpuExecutor&, index_t, index_t,
                                                 const index_t*, const index_t*, const double*,
                                                 const index_t*, index_t, float*, const index_t*,
                                                 index_t);

template offset_t bdia_slots_from_csr<std::int32_t>(const CpuExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int32_t*);
template offset_t bdia_slots_from_csr<std::int64_t>(const CpuExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int64_t*);

}  // namespace heptane::kernels
