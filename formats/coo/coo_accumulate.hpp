// y += alpha op(C) x over the entries of canonical COO on the CPU: the COO kernel and HYB's
// COO tail (internal header of formats/coo/coo_cpu.cpp and formats/hyb/hyb_cpu.cpp).
#pragma once

#include "core/parallel.hpp"
#include "core/types.hpp"

namespace heptane::kernels::detail {

/// Normal: each thread takes a contiguous range of the (row-sorted) entries widened to whole
/// rows, so no two threads add into the same y entry: no atomics. Transpose: a scatter into
/// columns with atomic adds. y is not scaled here.
template <class MT, class VT>
void coo_accumulate(offset_t nnz, const index_t* r, const index_t* c, const MT* v, Op op, VT alpha,
                    const VT* x, VT* y)
{
    if (op == Op::transpose) {
#pragma omp parallel for if (nnz > kParallelMin)
        for (offset_t k = 0; k < nnz; ++k) {
            const VT t = alpha * VT(v[k]) * x[r[k]];
#pragma omp atomic
            y[c[k]] += t;
        }
        return;
    }
#pragma omp parallel if (nnz > kParallelMin)
    {
        const ThreadShare share = thread_share(nnz);
        offset_t b = share.begin, e = share.end;
        // whole rows: a range starts at the first entry of a row that begins inside it
        while (b > 0 && b < nnz && r[b] == r[b - 1]) ++b;
        while (e > 0 && e < nnz && r[e] == r[e - 1]) ++e;
        for (offset_t k = b; k < e;) {
            const index_t row = r[k];
            VT sum = 0;
            for (; k < e && r[k] == row; ++k) sum += VT(v[k]) * x[c[k]];
            y[row] += alpha * sum;
        }
    }
}

}  // namespace heptane::kernels::detail
