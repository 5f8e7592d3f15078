// kernels::copy_values, kernels::scatter_values and kernels::block_values_to_csr on the CPU
// (formats/values_kernels.hpp).
#include "formats/values_kernels.hpp"

#include <cstdint>

namespace heptane::kernels {

template <class MT>
void copy_values(const CpuExecutor& /*exec*/, offset_t n, const offset_t* from, const offset_t* to,
                 const double* src, MT* dst)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (offset_t j = 0; j < n; ++j) dst[to[j]] = static_cast<MT>(src[from[j]]);
}

template <class IT, class VT>
void scatter_values(const CpuExecutor& /*exec*/, offset_t n, const IT* map, const double* src,
                    VT* dst)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (offset_t k = 0; k < n; ++k) dst[map[k]] = VT(src[k]);
}

void block_values_to_csr(const CpuExecutor& /*exec*/, index_t rows, index_t bs,
                         const index_t* row_ptr, const double* src, double* dst)
{
    const std::int64_t bs2 = std::int64_t(bs) * bs;
#pragma omp parallel for schedule(static) if (rows > 16384)
    for (index_t row = 0; row < rows; ++row) {  // block by block: no division per entry
        const index_t r = row % bs;
        const double* s = src + row_ptr[row - r] + r;
        double* d = dst + row_ptr[row];
        const std::int64_t blocks = (row_ptr[row + 1] - row_ptr[row]) / bs;
        for (std::int64_t k = 0; k < blocks; ++k, s += bs2)
            for (index_t c = 0; c < bs; ++c) *d++ = s[std::int64_t(c) * bs];
    }
}

void block_pattern_to_csr(const CpuExecutor& /*exec*/, index_t block_rows, index_t bs,
                          const index_t* block_ptr, const index_t* block_col, index_t* row_ptr,
                          index_t* col_idx)
{
    const index_t bs2 = bs * bs;
    if (block_rows >= 0) row_ptr[std::int64_t(block_rows) * bs] = block_ptr[block_rows] * bs2;
#pragma omp parallel for schedule(static) if (block_rows > 4096)
    for (index_t ib = 0; ib < block_rows; ++ib) {
        const index_t nk = block_ptr[ib + 1] - block_ptr[ib];
        for (index_t r = 0; r < bs; ++r) {
            const index_t begin = block_ptr[ib] * bs2 + r * nk * bs;
            row_ptr[std::int64_t(ib) * bs + r] = begin;
            index_t* c = col_idx + begin;
            for (index_t k = block_ptr[ib]; k < block_ptr[ib + 1]; ++k)
                for (index_t j = 0; j < bs; ++j) *c++ = block_col[k] * bs + j;
        }
    }
}

template void copy_values<double>(const CpuExecutor&, offset_t, const offset_t*, const offset_t*,
                                  const double*, double*);
template void copy_values<float>(const CpuExecutor&, offset_t, const offset_t*, const offset_t*,
                                 const double*, float*);

#define HEPTANE_INSTANTIATE(IT, VT)                                                              \
    template void scatter_values<IT, VT>(const CpuExecutor&, offset_t, const IT*, const double*, \
                                         VT*);
HEPTANE_INDEX_VALUE_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
