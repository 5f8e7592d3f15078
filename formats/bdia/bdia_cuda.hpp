// BDIA-GH CUDA products with an explicit launch shape, for benchmarks that compare shapes
// (heptane bench spmv). kernels::spmv(const CudaExecutor&, const Bdia&, ...) calls this with
// the tuned defaults; user code should call that one.
#pragma once

#include "formats/bdia/bdia_kernels.hpp"

namespace heptane::kernels {

/// Launch shape of the optimized BDIA kernels (0 = the tuned default).
struct BdiaLaunch {
    int block = 0;            ///< threads per CTA: 64, 128 or 256
    int rows_per_thread = 0;  ///< 1 or 2 (2: 2-wide vector loads where Nc and N are even)
    /// Loads staged per thread before use: 1 = primary (all D block diagonals for Nc <= 4,
    /// one for Nc >= 8), 2 = alternative (about 16 loads; compiled for Nc = 3, 4, 8; the
    /// primary one elsewhere).
    int stage = 0;
};

/// y = alpha * op(A) * x + beta * y with `kernel` and `launch` (thesis ignores `launch`).
/// Throws NotSupported when A has more than 64 block diagonals, DimensionMismatch when A is
/// not on this executor or block_size does not divide its sizes, InputError for a bad
/// launch shape.
template <class MT, class VT>
void spmv_bdia(const CudaExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta,
               VT* y, BdiaKernel kernel, const BdiaLaunch& launch);

}  // namespace heptane::kernels
