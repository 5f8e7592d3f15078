// HYB SpMV on the CPU: the ELL part, then the COO part added on top.
//
//     y = alpha*op(E)*x + beta*y      (ELL kernel: applies beta, never reads y when beta == 0)
//     y += alpha*op(C)*x              (here: the COO tail accumulates into y)
//
// The COO tail is accumulated here rather than by the COO kernel with beta = 1, which would
// spend a pass over y on y = 1*y. Normal: each thread takes a contiguous range of the
// (canonical, so row-sorted) tail widened to whole rows, so no two threads add into the same
// y entry: no atomics. Transpose: the tail scatters into columns with atomic adds, as the ELL
// transpose does (see ell_cpu.cpp).
#include <algorithm>

#include "core/error.hpp"
#include "formats/coo/coo_accumulate.hpp"
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void spmv(const CpuExecutor& exec, const Hyb<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu() && a.coo.exec()->is_cpu(), DimensionMismatch,
                   "HYB matrix is not on the host");
    HEPTANE_ENSURE(a.coo.nnz() == 0 || (a.coo.rows == a.rows() && a.coo.cols == a.cols()),
                   DimensionMismatch,
                   "HYB parts differ in size: ELL " << a.rows() << " x " << a.cols() << ", COO "
                                                    << a.coo.rows << " x " << a.coo.cols);
    spmv(exec, a.ell, op, alpha, x, beta, y);
    if (a.coo.nnz() > 0)  // the COO tail accumulates into y
        detail::coo_accumulate(a.coo.nnz(), a.coo.row.data(), a.coo.col.data(), a.coo.val.data(),
                               op, alpha, x, y);
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Hyb<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
