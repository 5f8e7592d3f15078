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
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace heptane::kernels {

namespace {

// Loops over fewer items than this run serially: a parallel region costs more there.
constexpr offset_t kParallelMin = offset_t(1) << 15;

// y[row] += alpha * sum over the tail entries of row (op = normal), or
// y[col] += alpha * val * x[row] (op = transpose).
template <class MT, class VT>
void add_tail(const Coo<MT>& c, Op op, VT alpha, const VT* x, VT* y)
{
    const offset_t nnz = c.nnz();
    const index_t* r = c.row.data();
    const index_t* ci = c.col.data();
    const MT* v = c.val.data();
    if (op == Op::transpose) {
#pragma omp parallel for if (nnz > kParallelMin)
        for (offset_t k = 0; k < nnz; ++k) {
            const VT t = alpha * VT(v[k]) * x[r[k]];
#pragma omp atomic
            y[ci[k]] += t;
        }
        return;
    }
#pragma omp parallel if (nnz > kParallelMin)
    {
#ifdef _OPENMP
        const offset_t t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const offset_t t = 0, nt = 1;
#endif
        offset_t b = nnz * t / nt, e = nnz * (t + 1) / nt;
        // whole rows: a range starts at the first entry of a row that begins inside it
        while (b > 0 && b < nnz && r[b] == r[b - 1]) ++b;
        while (e > 0 && e < nnz && r[e] == r[e - 1]) ++e;
        for (offset_t k = b; k < e;) {
            const index_t row = r[k];
            VT sum = 0;
            for (; k < e && r[k] == row; ++k) sum += VT(v[k]) * x[ci[k]];
            y[row] += alpha * sum;
        }
    }
}

}  // namespace

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
    if (a.coo.nnz() > 0) add_tail(a.coo, op, alpha, x, y);
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Hyb<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_INSTANTIATE(double, double)
HEPTANE_INSTANTIATE(float, float)
HEPTANE_INSTANTIATE(float, double)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
