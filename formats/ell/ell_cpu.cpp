// ELL SpMV on the CPU (OpenMP). With slot (j, r) at j*rows + r and column -1 for padding:
//
// Normal:    y[r] = alpha * sum_{j: col(j,r) >= 0} val(j, r) * x[col(j, r)] + beta * y[r]
//            a chunk of rows at a time into an accumulator in L1, slot column by slot column,
//            so the column-major arrays are read as contiguous streams.
// Transpose: y[c] = beta * y[c] + alpha * sum_{(j,r): col(j,r) = c} val(j, r) * x[r]
//            a scatter: rows of different threads meet in the same columns, so the adds into
//            y are atomic (as in the CSR kernel); an operator can keep a stored CSR transpose
//            instead (TransposeMode::stored).
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/ell/ell_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr offset_t kChunk = 2048;
}  // namespace

template <class MT, class VT>
void spmv(const CpuExecutor&, const Ell<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), DimensionMismatch, "ELL matrix is not on the host");
    HEPTANE_ENSURE(
        a.values.size() == std::size_t(a.slots()) && a.col_idx.size() == std::size_t(a.slots()),
        DimensionMismatch,
        "ELL arrays hold " << a.col_idx.size() << " columns and " << a.values.size() << " values, "
                           << a.rows << " rows x width " << a.width << " need " << a.slots());
    const offset_t rows = a.rows;
    const index_t width = a.width;
    const index_t* ci = a.col_idx.data();
    const MT* v = a.values.data();
    if (op == Op::normal) {
        const offset_t nchunks = (rows + kChunk - 1) / kChunk;
#pragma omp parallel if (nchunks > 1)
        {
            std::vector<VT> acc(kChunk);
#pragma omp for schedule(static)
            for (offset_t ch = 0; ch < nchunks; ++ch) {
                const offset_t r0 = ch * kChunk, n = std::min(rows, r0 + kChunk) - r0;
                VT* __restrict t = acc.data();
                std::fill(t, t + n, VT(0));
                for (index_t j = 0; j < width; ++j) {
                    const index_t* __restrict cj = ci + j * rows + r0;
                    const MT* __restrict vj = v + j * rows + r0;
                    for (offset_t i = 0; i < n; ++i)
                        if (cj[i] >= 0) t[i] += VT(vj[i]) * x[cj[i]];
                }
                VT* yc = y + r0;
                if (beta == VT(0)) {
                    for (offset_t i = 0; i < n; ++i) yc[i] = alpha * t[i];
                } else {
                    for (offset_t i = 0; i < n; ++i) yc[i] = alpha * t[i] + beta * yc[i];
                }
            }
        }
        return;
    }
#pragma omp parallel for if (a.cols > kParallelMin)
    for (index_t c = 0; c < a.cols; ++c) y[c] = beta == VT(0) ? VT(0) : beta * y[c];
    const offset_t nchunks = (rows + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (offset_t ch = 0; ch < nchunks; ++ch) {
        const offset_t r0 = ch * kChunk, r1 = std::min(rows, r0 + kChunk);
        for (index_t j = 0; j < width; ++j)
            for (offset_t r = r0; r < r1; ++r) {
                const index_t c = ci[j * rows + r];
                if (c < 0) continue;
                const VT t = alpha * VT(v[j * rows + r]) * x[r];
#pragma omp atomic
                y[c] += t;
            }
    }
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Ell<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
