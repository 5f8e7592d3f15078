// BSR SpMV on the CPU (OpenMP). Block p of block row I has block column J = col_idx[p] and
// values V_p(l, j) = values[(p*b + l)*b + j] (row-major inside the block):
//
// Normal:    y[I*b + l] = alpha * sum_p sum_j V_p(l, j) * x[J*b + j] + beta * y[I*b + l]
//            by block rows, no atomics.
// Transpose: y[J*b + j] = beta * y[J*b + j] + alpha * sum_{p: col p = J} sum_l V_p(l, j) x[I*b + l]
//            a scatter: each block's b sums are formed locally, then added into y with
//            atomics, since block rows of different threads meet in the same block columns.
//
// The block size is a template parameter for the common sizes so the b x b loops unroll.
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "formats/bsr/bsr_kernels.hpp"

namespace heptane::kernels {

namespace {

// In a parallel region over the block rows: body(ib, t), t the thread's accumulator of b
// values (on the stack, registers, for a compile-time block size B > 0).
template <int B, class VT, class Body>
void over_block_rows(index_t nb, index_t b, bool parallel, Body&& body)
{
#pragma omp parallel if (parallel)
    {
        std::vector<VT> heap(B > 0 ? 0 : b);
        VT stack[std::max(B, 1)];
        VT* __restrict t = heap.data();
        if constexpr (B > 0) t = stack;
#pragma omp for schedule(static, 256)
        for (index_t ib = 0; ib < nb; ++ib) body(ib, t);
    }
}

// B > 0: block size known at compile time; B == 0: a.block_size at run time.
template <int B, class MT, class VT>
void bsr_apply(const Bsr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t b = B > 0 ? B : a.block_size;
    const index_t nb = a.block_rows();
    const offset_t* ptr = a.row_ptr.data();
    const index_t* bci = a.col_idx.data();
    const MT* val = a.values.data();
    const std::size_t bb = std::size_t(b) * b;
    const bool parallel = offset_t(a.values.size()) > kParallelMin;
    if (op == Op::normal) {
        over_block_rows<B, VT>(nb, b, parallel, [&](index_t ib, VT* __restrict t) {
            for (index_t l = 0; l < b; ++l) t[l] = 0;
            for (offset_t p = ptr[ib]; p < ptr[ib + 1]; ++p) {
                const MT* __restrict vp = val + std::size_t(p) * bb;
                const VT* __restrict xp = x + std::size_t(bci[p]) * b;
                // column by column: b independent sums (no dependency chain)
                for (index_t j = 0; j < b; ++j) {
                    const VT xj = xp[j];
                    for (index_t l = 0; l < b; ++l) t[l] += VT(vp[l * b + j]) * xj;
                }
            }
            VT* yb = y + std::size_t(ib) * b;
            if (beta == VT(0)) {
                for (index_t l = 0; l < b; ++l) yb[l] = alpha * t[l];
            } else {
                for (index_t l = 0; l < b; ++l) yb[l] = alpha * t[l] + beta * yb[l];
            }
        });
        return;
    }
#pragma omp parallel for if (a.cols > kParallelMin)
    for (index_t c = 0; c < a.cols; ++c) y[c] = beta == VT(0) ? VT(0) : beta * y[c];
    over_block_rows<B, VT>(nb, b, parallel, [&](index_t ib, VT* __restrict t) {
        const VT* xb = x + std::size_t(ib) * b;
        for (offset_t p = ptr[ib]; p < ptr[ib + 1]; ++p) {
            const MT* __restrict vp = val + std::size_t(p) * bb;
            for (index_t j = 0; j < b; ++j) t[j] = 0;
            for (index_t l = 0; l < b; ++l) {
                const VT xl = alpha * xb[l];
                for (index_t j = 0; j < b; ++j) t[j] += VT(vp[l * b + j]) * xl;
            }
            VT* yp = y + std::size_t(bci[p]) * b;
            for (index_t j = 0; j < b; ++j) {
#pragma omp atomic
                yp[j] += t[j];
            }
        }
    });
}

}  // namespace

template <class MT, class VT>
void spmv(const CpuExecutor&, const Bsr<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), DimensionMismatch, "BSR matrix is not on the host");
    HEPTANE_ENSURE(a.block_size >= 1 && a.rows % a.block_size == 0 && a.cols % a.block_size == 0,
                   InputError,
                   "BSR block size " << a.block_size << " does not divide the size " << a.rows
                                     << " x " << a.cols);
    switch (a.block_size) {
        case 1:
            return bsr_apply<1>(a, op, alpha, x, beta, y);
        case 2:
            return bsr_apply<2>(a, op, alpha, x, beta, y);
        case 3:
            return bsr_apply<3>(a, op, alpha, x, beta, y);
        case 4:
            return bsr_apply<4>(a, op, alpha, x, beta, y);
        case 8:
            return bsr_apply<8>(a, op, alpha, x, beta, y);
        case 16:
            return bsr_apply<16>(a, op, alpha, x, beta, y);
        default:
            return bsr_apply<0>(a, op, alpha, x, beta, y);
    }
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Bsr<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
