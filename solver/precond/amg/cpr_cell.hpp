// CPR's setup for one cell, from the scalar CSR of an Nc × Nc block matrix, shared by the
// CPU and CUDA kernels (cpr_pressure_pattern / cpr_pressure_values in amg_kernels.hpp), so
// both give the same pattern and the same bits as the host reference (cpr.cpp's
// weights_and_pressure on detail::block_pattern):
//
//   the cell's block columns   the union of col / nc over its nc rows, in increasing order,
//                              with the cell's own (diagonal) block whether stored or not;
//   the weights                w = D⁻ᵀ e_p = row p of D⁻¹, D the diagonal block (zeros where
//                              nothing is stored), e_p where D is singular;
//   the pressure entries       A_p[I, J] = Σ_c w_c a[(I, c), (J, p)], the sum over c in order,
//                              each product rounded by itself (mul_rn), 0 where not stored.
//
// The rows are walked together, one cursor per row (a merge): each row's columns must be
// increasing (sorted, none repeated); cpr_cell_defects says where they are not, and the
// callers then take the host path.
//
// row_ptr, col and val are pointers or anything indexed like them with global positions
// (the CUDA kernels pass windows onto copies in shared memory, cpr_window below).
#pragma once

#include <climits>

#include "core/types.hpp"
#include "solver/precond/block_kernels.hpp"

namespace heptane::detail {

/// A window onto a copy of a stretch of an array, indexed with the array's own positions:
/// w[i] = p[i - base].
template <class T>
struct cpr_window {
    const T* p;
    offset_t base;
    HEPTANE_HD T operator[](offset_t i) const { return p[i - base]; }
};

/// Defects of cell I's rows that the merge below cannot take: bit 0 a column not greater
/// than the one before it in its row (unsorted or repeated), bit 1 a column outside [0, n).
template <class RP, class CI>
HEPTANE_HD inline int cpr_cell_defects(index_t I, index_t nc, index_t n, const RP& row_ptr,
                                       const CI& col)
{
    int d = 0;
    for (index_t c = 0; c < nc; ++c) {
        const offset_t lo = row_ptr[offset_t(I) * nc + c], hi = row_ptr[offset_t(I) * nc + c + 1];
        for (offset_t k = lo; k < hi; ++k) {
            const index_t j = col[k];
            if (j < 0 || j >= n) d |= 2;
            if (k > lo && j <= col[k - 1]) d |= 1;
        }
    }
    return d;
}

/// Walks the block columns of cell I in increasing order, calling f(J, cur) for each before
/// its entries are passed: cur[c] is then the first entry of row (I, c) in block column J (or
/// past it). The diagonal block J = I comes in its place even where no row stores it.
/// `cur`: nc offsets of scratch.
template <class RP, class CI, class F>
HEPTANE_HD inline void cpr_cell_walk(index_t I, index_t nc, const RP& row_ptr, const CI& col,
                                     offset_t* cur, F&& f)
{
    const offset_t r0 = offset_t(I) * nc;
    for (index_t c = 0; c < nc; ++c) cur[c] = row_ptr[r0 + c];
    bool diag = false;
    for (;;) {
        index_t J = INT_MAX;
        for (index_t c = 0; c < nc; ++c)
            if (cur[c] < row_ptr[r0 + c + 1]) {
                const index_t b = col[cur[c]] / nc;
                if (b < J) J = b;
            }
        if (!diag && I <= J) {
            diag = true;
            if (I < J) {  // no row stores the diagonal block
                f(I, cur);
                continue;
            }
        }
        if (J == INT_MAX) return;
        f(J, cur);
        for (index_t c = 0; c < nc; ++c)
            while (cur[c] < row_ptr[r0 + c + 1] && col[cur[c]] / nc == J) ++cur[c];
    }
}

/// The number of block columns of cell I (the length of A_p's row I).
template <class RP, class CI>
HEPTANE_HD inline offset_t cpr_cell_count(index_t I, index_t nc, const RP& row_ptr, const CI& col,
                                          offset_t* cur)
{
    offset_t count = 0;
    cpr_cell_walk(I, nc, row_ptr, col, cur, [&](index_t, const offset_t*) { ++count; });
    return count;
}

/// Cell I's weights (w[I·nc + c], as VT) and its row of A_p (ap_col, ap_val from ap_ptr[I]).
/// scratch: nc offsets (cur) and 3·nc² doubles (work). Returns false where D is singular.
template <class VT, class RP, class CI, class VA>
HEPTANE_HD inline bool cpr_cell_values(index_t I, index_t nc, index_t p, const RP& row_ptr,
                                       const CI& col, const VA& val, const offset_t* ap_ptr,
                                       index_t* ap_col, double* ap_val, VT* w, offset_t* cur,
                                       double* work)
{
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    double* d = work;
    double* inv = work + nc2;
    for (std::size_t s = 0; s < nc2; ++s) d[s] = 0;
    const offset_t r0 = offset_t(I) * nc;
    for (index_t c = 0; c < nc; ++c)
        for (offset_t k = row_ptr[r0 + c]; k < row_ptr[r0 + c + 1]; ++k)
            if (col[k] / nc == I) d[std::size_t(c) * nc + col[k] % nc] = val[k];
    const bool singular = invert_block_core<0>(d, inv, nc, inv + nc2).singular;
    // w = row p of D⁻¹ (kept in d's first nc entries, D no longer needed)
    double* wc = d;
    for (index_t c = 0; c < nc; ++c) {
        wc[c] = singular ? (c == p ? 1.0 : 0.0) : inv[std::size_t(p) * nc + c];
        w[offset_t(I) * nc + c] = VT(wc[c]);
    }
    offset_t q = ap_ptr[I];
    cpr_cell_walk(I, nc, row_ptr, col, cur, [&](index_t J, const offset_t* at) {
        double s = 0;
        for (index_t c = 0; c < nc; ++c) {
            double v = 0;
            for (offset_t k = at[c]; k < row_ptr[r0 + c + 1] && col[k] / nc == J; ++k)
                if (col[k] % nc == p) v = val[k];
            s += mul_rn(wc[c], v);
        }
        ap_col[q] = J;
        ap_val[q] = s;
        ++q;
    });
    return !singular;
}

}  // namespace heptane::detail
