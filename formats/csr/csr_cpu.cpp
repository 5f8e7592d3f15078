// CSR SpMV on the CPU (OpenMP over rows). A^T x without a stored transpose scatters with
// atomics; an operator that keeps transpose(A) uses the row kernel instead.
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/csr/csr_kernels.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void spmv(const CpuExecutor&, const Csr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), DimensionMismatch, "CSR matrix is not on the host");
    const offset_t* ptr = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    const MT* v = a.values.data();
    if (op == Op::normal) {
        // y_i = alpha * sum_k a_ik x_k + beta * y_i
#pragma omp parallel for schedule(static, 512) if (a.rows >= kParallelMin)
        for (index_t i = 0; i < a.rows; ++i) {
            VT sum = 0;
            for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) sum += VT(v[k]) * x[ci[k]];
            y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
        }
        return;
    }
    // y_j = beta * y_j + alpha * sum_i a_ij x_i
#pragma omp parallel for if (a.cols >= kParallelMin)
    for (index_t j = 0; j < a.cols; ++j) y[j] = beta == VT(0) ? VT(0) : beta * y[j];
#pragma omp parallel for schedule(static, 512) if (a.rows >= kParallelMin)
    for (index_t i = 0; i < a.rows; ++i) {
        const VT xi = alpha * x[i];
        for (offset_t k = ptr[i]; k < ptr[i + 1]; ++k) {
            const VT t = VT(v[k]) * xi;
#pragma omp atomic
            y[ci[k]] += t;
        }
    }
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Csr<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
