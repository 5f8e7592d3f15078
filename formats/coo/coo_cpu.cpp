// COO SpMV on the CPU. Rows of canonical COO are contiguous, so y = alpha*A*x + beta*y is
// computed row-segment by row-segment without atomics: each thread takes a contiguous range
// of entries, widened to whole rows. A^T x scatters into columns and uses atomics.
#include <algorithm>

#include "core/error.hpp"
#include "formats/coo/coo_kernels.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace heptane::kernels {

namespace {
/// Below this many rows (or entries) a loop runs on one thread: opening a parallel region
/// costs more than the work (as in solver/vector/vector_cpu.cpp).
constexpr offset_t kParallelMin = 1 << 15;
}  // namespace

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
    if (op == Op::normal) {
#pragma omp parallel if (nnz >= kParallelMin)
        {
#ifdef _OPENMP
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
            const int t = 0, nt = 1;
#endif
            offset_t b = nnz * t / nt, e = nnz * (t + 1) / nt;
            // widen to whole rows: start at the first entry of a row that begins in range
            while (b > 0 && b < nnz && r[b] == r[b - 1]) ++b;
            while (e > 0 && e < nnz && r[e] == r[e - 1]) ++e;
            for (offset_t k = b; k < e;) {
                const index_t row = r[k];
                VT sum = 0;
                for (; k < e && r[k] == row; ++k) sum += VT(v[k]) * x[c[k]];
                y[row] += alpha * sum;
            }
        }
    } else {
#pragma omp parallel for if (nnz >= kParallelMin)
        for (offset_t k = 0; k < nnz; ++k) {
            const VT t = alpha * VT(v[k]) * x[r[k]];
#pragma omp atomic
            y[c[k]] += t;
        }
    }
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Coo<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_INSTANTIATE(double, double)
HEPTANE_INSTANTIATE(float, float)
HEPTANE_INSTANTIATE(float, double)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
