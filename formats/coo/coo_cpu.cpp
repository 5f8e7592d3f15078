// COO SpMV on the CPU. Rows of canonical COO are contiguous, so y = alpha*A*x + beta*y is
// computed row-segment by row-segment without atomics: each thread takes a contiguous range
// of entries, widened to whole rows. A^T x scatters into columns and uses atomics.
#include <algorithm>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/coo/coo_accumulate.hpp"
#include "formats/coo/coo_kernels.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void spmv(const CpuExecutor&, const Coo<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), DimensionMismatch, "COO matrix is not on the host");
    const index_t ny = op == Op::normal ? a.rows : a.cols;
    // y = beta*y (never read y when beta == 0)
#pragma omp parallel for if (ny >= kParallelMin)
    for (index_t i = 0; i < ny; ++i) y[i] = beta == VT(0) ? VT(0) : beta * y[i];
    const offset_t nnz = a.nnz();
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    const MT* v = a.val.data();
    detail::coo_accumulate(nnz, r, c, v, op, alpha, x, y);
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Coo<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
