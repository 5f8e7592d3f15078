// kernels::copy_values and kernels::scatter_values on the CPU (formats/values_kernels.hpp).
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
