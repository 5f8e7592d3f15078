// HYB SpMV on CUDA: the ELL part computes y = alpha*op(A_ell)*x + beta*y, then the COO part
// adds alpha*op(A_coo)*x (beta = 1: no scaling pass). Two launches on one stream, so the
// COO atomics follow the ELL writes.
#include "formats/coo/coo_kernels.hpp"
#include "formats/cuda_spmv_common.cuh"
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void spmv(const CudaExecutor& exec, const Hyb<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.coo.nnz() == 0 || (a.coo.rows == a.rows() && a.coo.cols == a.cols()),
                   DimensionMismatch,
                   "HYB parts differ in size: ELL " << a.rows() << " x " << a.cols() << ", COO "
                                                    << a.coo.rows << " x " << a.coo.cols);
    spmv(exec, a.ell, op, alpha, x, beta, y);
    if (a.coo.nnz() > 0) spmv(exec, a.coo, op, alpha, x, VT(1), y);
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CudaExecutor&, const Hyb<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
