// kernels::copy_values on the CPU (formats/values_kernels.hpp).
#include "formats/values_kernels.hpp"

namespace heptane::kernels {

template <class MT>
void copy_values(const CpuExecutor& /*exec*/, offset_t n, const offset_t* from, const offset_t* to,
                 const double* src, MT* dst)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (offset_t j = 0; j < n; ++j) dst[to[j]] = static_cast<MT>(src[from[j]]);
}

template void copy_values<double>(const CpuExecutor&, offset_t, const offset_t*, const offset_t*,
                                  const double*, double*);
template void copy_values<float>(const CpuExecutor&, offset_t, const offset_t*, const offset_t*,
                                 const double*, float*);

}  // namespace heptane::kernels
