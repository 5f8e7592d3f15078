// HYB SpMV on the CPU: the ELL part, then the COO part added on top.
//
//     y = alpha*op(E)*x + beta*y      (ELL kernel: applies beta, never reads y when beta == 0)
//     y = alpha*op(C)*x + 1*y         (COO kernel: accumulates)
//
// The normal products need no atomics (ELL by rows, COO by whole-row segments); the
// transposes scatter with atomics in both parts (see ell_cpu.cpp and coo_cpu.cpp).
#include "core/error.hpp"
#include "formats/coo/coo_kernels.hpp"
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void spmv(const CpuExecutor& exec, const Hyb<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu() && a.coo.exec()->is_cpu(), DimensionMismatch,
                   "HYB matrix is not on the host");
    spmv(exec, a.ell, op, alpha, x, beta, y);
    if (a.coo.nnz() > 0) spmv(exec, a.coo, op, alpha, x, VT(1), y);
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Hyb<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_INSTANTIATE(double, double)
HEPTANE_INSTANTIATE(float, float)
HEPTANE_INSTANTIATE(float, double)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
