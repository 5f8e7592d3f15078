// DIA SpMV on the CPU (OpenMP), y = alpha*op(A)*x + beta*y, with D(d, r) = data[d*rows + r]
// = A(r, r + off_d):
//
// Normal:    y[r] = alpha * sum_d D(d, r) * x[r + off_d] + beta * y[r],  0 <= r + off_d < cols
// Transpose: A(r, c) = D(d, r) with c = r + off_d, so for an output c the row is r = c - off_d:
//            y[c] = alpha * sum_d D(d, c - off_d) * x[c - off_d] + beta * y[c],
//                                                                      0 <= c - off_d < rows
//            a gather over the same data (A^T is DIA with offsets -off_d), no atomics.
//
// Up to kRowwiseMaxDiagonals diagonals (banded, stencil): outputs in blocks of 8 whose sums
// stay in registers, every diagonal per block (one stream of data and x each); the interior
// outputs, whose partners all lie inside the matrix, without bounds checks, the boundary
// outputs at both ends separately with them. More diagonals: a chunk of outputs at a time into
// an accumulator in L1; per diagonal, the outputs of the chunk whose partner index lies inside
// the matrix form one range, so the inner loop is two contiguous streams without bounds
// checks (too many concurrent streams defeat the prefetchers; see bdia_cpu.cpp).
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "formats/dia/dia_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr offset_t kChunk = 2048;

constexpr index_t kRowwiseMaxDiagonals = 16;

// op = normal: out = rows, partner index j = i + off (in [0, cols)), slot row = i.
// op = transpose: out = cols, partner j = i - off (in [0, rows)), slot row = j.
template <bool Transpose, class MT, class VT>
void dia_rowwise(const Dia<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    constexpr int kRows = 8;
    const offset_t rows = a.rows;
    const offset_t nout = Transpose ? a.cols : a.rows, nin = Transpose ? a.rows : a.cols;
    const int nd = a.num_diagonals();
    offset_t w[kRowwiseMaxDiagonals];  // j = i + w[d]
    for (int d = 0; d < nd; ++d) w[d] = Transpose ? -offset_t(a.offsets[d]) : a.offsets[d];
    const MT* data = a.data.data();
    offset_t lo = 0, hi = nout;  // interior outputs: 0 <= i + w[d] < nin for every d
    for (int d = 0; d < nd; ++d) {
        lo = std::max(lo, -w[d]);
        hi = std::min(hi, nin - w[d]);
    }
    hi = std::max(hi, lo);
    const offset_t nblocks = (hi - lo) / kRows;
    const offset_t tail = lo + nblocks * kRows;  // boundary outputs: [0, lo) and [tail, nout)
    auto boundary = [&](offset_t i) {
        VT sum = 0;
        for (int d = 0; d < nd; ++d) {
            const offset_t j = i + w[d];
            if (j >= 0 && j < nin) sum += VT(data[d * rows + (Transpose ? j : i)]) * x[j];
        }
        y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
    };
#pragma omp parallel if (nout > kChunk)
    {
#pragma omp for schedule(static) nowait
        for (offset_t i = 0; i < lo; ++i) boundary(i);
#pragma omp for schedule(static) nowait
        for (offset_t k = 0; k < nblocks; ++k) {
            const offset_t i = lo + k * kRows;
            VT sum[kRows] = {};
            for (int d = 0; d < nd; ++d) {
                const MT* __restrict dk = data + d * rows + (Transpose ? i + w[d] : i);
                const VT* __restrict xk = x + i + w[d];
                for (int l = 0; l < kRows; ++l) sum[l] += VT(dk[l]) * xk[l];
            }
            if (beta == VT(0)) {
                for (int l = 0; l < kRows; ++l) y[i + l] = alpha * sum[l];
            } else {
                for (int l = 0; l < kRows; ++l) y[i + l] = alpha * sum[l] + beta * y[i + l];
            }
        }
#pragma omp for schedule(static)
        for (offset_t i = tail; i < nout; ++i) boundary(i);
    }
}

template <class MT, class VT>
void dia_chunked(const Dia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    const bool tr = op == Op::transpose;
    const offset_t rows = a.rows;
    const offset_t nout = tr ? a.cols : a.rows, nin = tr ? a.rows : a.cols;
    const index_t nd = a.num_diagonals();
    const index_t* off = a.offsets.data();
    const MT* data = a.data.data();
    const offset_t nchunks = (nout + kChunk - 1) / kChunk;
#pragma omp parallel if (nchunks > 1)
    {
        std::vector<VT> acc(kChunk);
#pragma omp for schedule(static)
        for (offset_t ch = 0; ch < nchunks; ++ch) {
            const offset_t i0 = ch * kChunk, i1 = std::min(nout, i0 + kChunk);
            VT* __restrict t = acc.data();
            std::fill(t, t + (i1 - i0), VT(0));
            for (index_t d = 0; d < nd; ++d) {
                const offset_t o = tr ? -offset_t(off[d]) : offset_t(off[d]);  // j = i + o
                const offset_t lo = std::max(i0, -o), hi = std::min(i1, nin - o);
                if (lo >= hi) continue;
                // slot row: i (normal) or j = i + o (transpose)
                const MT* __restrict dk = data + d * rows + (tr ? lo + o : lo);
                const VT* __restrict xk = x + lo + o;
                VT* __restrict tk = t + (lo - i0);
                for (offset_t i = 0; i < hi - lo; ++i) tk[i] += VT(dk[i]) * xk[i];
            }
            VT* yc = y + i0;
            if (beta == VT(0)) {
                for (offset_t i = 0; i < i1 - i0; ++i) yc[i] = alpha * t[i];
            } else {
                for (offset_t i = 0; i < i1 - i0; ++i) yc[i] = alpha * t[i] + beta * yc[i];
            }
        }
    }
}

}  // namespace

template <class MT, class VT>
void spmv(const CpuExecutor&, const Dia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), DimensionMismatch, "DIA matrix is not on the host");
    HEPTANE_ENSURE(a.data.size() == std::size_t(a.num_diagonals()) * std::size_t(a.rows),
                   DimensionMismatch,
                   "DIA data holds " << a.data.size() << " values, " << a.num_diagonals()
                                     << " diagonals of " << a.rows << " rows need "
                                     << std::size_t(a.num_diagonals()) * std::size_t(a.rows));
    if (a.num_diagonals() > kRowwiseMaxDiagonals)
        dia_chunked(a, op, alpha, x, beta, y);
    else if (op == Op::normal)
        dia_rowwise<false>(a, alpha, x, beta, y);
    else
        dia_rowwise<true>(a, alpha, x, beta, y);
}

#define HEPTANE_INSTANTIATE(MT, VT) \
    template void spmv<MT, VT>(const CpuExecutor&, const Dia<MT>&, Op, VT, const VT*, VT, VT*);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
