// BDIA-GH SpMV on the CPU (OpenMP), y = alpha*op(A)*x + beta*y (docs/design.md §1).
//
// Notation: Nc block size, d_q block offsets, B = rows/Nc block rows, C = cols/Nc block
// columns, D(k, r) = data[k*rows + r] with k = q*Nc + s. Row r = b*Nc + l (block row b).
//
// Normal:    y[b*Nc + l] = alpha * sum_q sum_s D(q*Nc + s, b*Nc + l) * x[(b + d_q)*Nc + s]
//                          + beta * y[b*Nc + l],          summed over q with 0 <= b + d_q < C.
//
// Transpose: A(r, c) with r = b*Nc + l and c = (b + d_q)*Nc + s is D(q*Nc + s, r). For output
//            c = e*Nc + s (block column e) the rows that hold column c are the block row
//            b = e - d_q of every q, so
//
//            y[e*Nc + s] = alpha * sum_q sum_l D(q*Nc + s, (e - d_q)*Nc + l) * x[(e - d_q)*Nc + l]
//                          + beta * y[e*Nc + s],          summed over q with 0 <= e - d_q < B:
//
//            A^T is BDIA with block offsets -d_q and each block transposed, and A^T x is a
//            gather over the same data (no atomics, no stored copy).
//
// Nc >= 2 (and Nc = 1 with many offsets): a chunk of (block) rows at a time into a small
// accumulator that stays in L1. For each block offset q the block rows of the chunk whose
// neighbour lies inside the matrix form one contiguous range [lo, hi): the boundary rows
// (column outside [0, cols)) are exactly the rows cut off by that clipping, so the inner loops
// carry no bounds checks and read data and x as contiguous streams (Nc at a time). Nc is a
// template parameter for the common block sizes so the short loops over s and l unroll.
//
// Nc = 1 with at most kRowwiseMaxOffsets offsets (the 7-point pressure matrix): rows in
// blocks of 8 whose sums stay in registers, all D offsets per block (D streams of data and
// x, the offsets precomputed); the interior rows, where every column is inside the matrix,
// run without bounds checks, the boundary rows at both ends separately with them. On a
// 2-core Xeon this beat the chunked loop by 1.4-1.8x at Nc = 1 (it re-reads the L1
// accumulator once per offset); at Nc = 8 the chunked loop won (D*Nc = 56 streams are too
// many for the prefetchers).
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "formats/bdia/bdia_kernels.hpp"

namespace heptane::kernels {

namespace {

constexpr index_t kChunkRows = 2048;  // rows (or columns) per work item: 16 KiB of fp64 in L1

// y[i] = alpha*t[i] + beta*y[i], without reading y when beta == 0.
template <class VT>
inline void finish(VT alpha, const VT* t, VT beta, VT* y, index_t n)
{
    if (beta == VT(0)) {
        for (index_t i = 0; i < n; ++i) y[i] = alpha * t[i];
    } else {
        for (index_t i = 0; i < n; ++i) y[i] = alpha * t[i] + beta * y[i];
    }
}

constexpr index_t kRowwiseMaxOffsets = 16;

// Nc = 1: y[i] = alpha * sum_q D(q, i + u_q) * x[i + w_q] + beta * y[i], summed over the q
// with 0 <= i + w_q < nin. Normal: w_q = d_q, u_q = 0 (nin = cols); transpose: w_q = u_q =
// -d_q (nin = rows, and the data row is the x index).
template <bool Transpose, class MT, class VT>
void bdia1_rowwise(const Bdia<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    constexpr int kRows = 8;
    const offset_t rows = a.rows;
    const offset_t nout = Transpose ? a.cols : a.rows, nin = Transpose ? a.rows : a.cols;
    const int nq = a.num_block_diagonals();
    offset_t w[kRowwiseMaxOffsets];
    for (int q = 0; q < nq; ++q)
        w[q] = Transpose ? -offset_t(a.block_offsets[q]) : a.block_offsets[q];
    const MT* data = a.data.data();
    // interior outputs: 0 <= i + w_q < nin for every q
    offset_t lo = 0, hi = nout;
    for (int q = 0; q < nq; ++q) {
        lo = std::max(lo, -w[q]);
        hi = std::min(hi, nin - w[q]);
    }
    // fewer outputs than the largest offset (a rank's few rows of a large grid, or none): every
    // output is a boundary one
    lo = std::min(lo, nout);
    hi = std::max(hi, lo);
    const offset_t nblocks = (hi - lo) / kRows;
    const offset_t tail = lo + nblocks * kRows;  // boundary rows: [0, lo) and [tail, nout)
    auto store = [&](offset_t i, VT sum) {
        y[i] = beta == VT(0) ? alpha * sum : alpha * sum + beta * y[i];
    };
    auto boundary_row = [&](offset_t i) {
        VT sum = 0;
        for (int q = 0; q < nq; ++q) {
            const offset_t j = i + w[q];
            if (j >= 0 && j < nin) sum += VT(data[q * rows + (Transpose ? j : i)]) * x[j];
        }
        store(i, sum);
    };
#pragma omp parallel if (nout > kChunkRows)
    {
#pragma omp for schedule(static) nowait
        for (offset_t i = 0; i < lo; ++i) boundary_row(i);
#pragma omp for schedule(static) nowait
        for (offset_t k = 0; k < nblocks; ++k) {
            const offset_t i = lo + k * kRows;
            VT sum[kRows] = {};
            for (int q = 0; q < nq; ++q) {
                const MT* __restrict d = data + q * rows + (Transpose ? i + w[q] : i);
                const VT* __restrict xq = x + i + w[q];
                for (int l = 0; l < kRows; ++l) sum[l] += VT(d[l]) * xq[l];
            }
            if (beta == VT(0)) {
                for (int l = 0; l < kRows; ++l) y[i + l] = alpha * sum[l];
            } else {
                for (int l = 0; l < kRows; ++l) y[i + l] = alpha * sum[l] + beta * y[i + l];
            }
        }
#pragma omp for schedule(static)
        for (offset_t i = tail; i < nout; ++i) boundary_row(i);
    }
}

// The chunk loop A x and A^T x share: `count` block rows (A x) or block columns (A^T x) in
// chunks of kChunkRows / Nc; body(b0, b1, t) sums chunk [b0, b1) into its thread's zeroed
// accumulator t, which finish then writes to y[b0*Nc ..].
template <class VT, class Body>
void chunked_sweep(offset_t count, index_t nc, VT alpha, VT beta, VT* y, const Body& body)
{
    const offset_t chunk = std::max<index_t>(1, kChunkRows / nc);
    const offset_t nchunks = (count + chunk - 1) / chunk;
#pragma omp parallel if (nchunks > 1)
    {
        std::vector<VT> acc(std::size_t(chunk) * nc);
#pragma omp for schedule(static)
        for (offset_t ch = 0; ch < nchunks; ++ch) {
            const offset_t b0 = ch * chunk, b1 = std::min(count, b0 + chunk);
            VT* __restrict t = acc.data();
            std::fill(t, t + (b1 - b0) * nc, VT(0));
            body(b0, b1, t);
            finish(alpha, t, beta, y + b0 * nc, index_t((b1 - b0) * nc));
        }
    }
}

// NC > 0: block size known at compile time; NC == 0: a.block_size at run time.
template <int NC, class MT, class VT>
void bdia_normal(const Bdia<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t nc = NC > 0 ? NC : a.block_size;
    const index_t rows = a.rows, nq = a.num_block_diagonals();
    const offset_t cb = a.cols / nc;
    const index_t* dq = a.block_offsets.data();
    const MT* data = a.data.data();
    chunked_sweep(rows / nc, nc, alpha, beta, y, [&](offset_t b0, offset_t b1, VT* __restrict t) {
        for (index_t q = 0; q < nq; ++q) {
            const offset_t d = dq[q];
            // block rows b of the chunk with 0 <= b + d < C (interior for this offset)
            const offset_t lo = std::max(b0, -d), hi = std::min(b1, cb - d);
            if (lo >= hi) continue;
            const offset_t n = hi - lo;
            VT* __restrict tq = t + (lo - b0) * nc;
            const VT* __restrict xq = x + (lo + d) * nc;  // x[(b + d)*Nc + s]
            if constexpr (NC == 1) {
                const MT* __restrict dk = data + std::size_t(q) * rows + lo;
                for (offset_t i = 0; i < n; ++i) tq[i] += VT(dk[i]) * xq[i];
            } else if constexpr (NC > 1) {
                // all Nc diagonals of block offset q in one sweep: Nc streams of data
                const MT* dk = data + std::size_t(q) * NC * rows + lo * NC;
                for (offset_t i = 0; i < n; ++i) {
                    VT sum[NC];
                    for (int l = 0; l < NC; ++l) sum[l] = tq[i * NC + l];
                    for (int s = 0; s < NC; ++s) {
                        const VT xv = xq[i * NC + s];
                        const MT* __restrict ds = dk + std::size_t(s) * rows + i * NC;
                        for (int l = 0; l < NC; ++l) sum[l] += VT(ds[l]) * xv;
                    }
                    for (int l = 0; l < NC; ++l) tq[i * NC + l] = sum[l];
                }
            } else {
                // run-time Nc: one diagonal per sweep
                for (index_t s = 0; s < nc; ++s) {
                    const MT* __restrict ds = data + (std::size_t(q) * nc + s) * rows + lo * nc;
                    for (offset_t i = 0; i < n; ++i) {
                        const VT xv = xq[i * nc + s];
                        for (index_t l = 0; l < nc; ++l) tq[i * nc + l] += VT(ds[i * nc + l]) * xv;
                    }
                }
            }
        }
    });
}

template <int NC, class MT, class VT>
void bdia_transpose(const Bdia<MT>& a, VT alpha, const VT* x, VT beta, VT* y)
{
    const index_t nc = NC > 0 ? NC : a.block_size;
    const index_t rows = a.rows, nq = a.num_block_diagonals();
    const offset_t nb = rows / nc;
    const index_t* dq = a.block_offsets.data();
    const MT* data = a.data.data();
    chunked_sweep(a.cols / nc, nc, alpha, beta, y, [&](offset_t e0, offset_t e1, VT* __restrict t) {
        for (index_t q = 0; q < nq; ++q) {
            const offset_t d = dq[q];
            // block columns e of the chunk with 0 <= e - d < B
            const offset_t lo = std::max(e0, d), hi = std::min(e1, nb + d);
            if (lo >= hi) continue;
            const offset_t n = hi - lo;
            VT* __restrict tq = t + (lo - e0) * nc;
            const VT* __restrict xq = x + (lo - d) * nc;  // x[(e - d)*Nc + l]
            if constexpr (NC == 1) {
                const MT* __restrict dk = data + std::size_t(q) * rows + (lo - d);
                for (offset_t i = 0; i < n; ++i) tq[i] += VT(dk[i]) * xq[i];
            } else if constexpr (NC > 1) {
                const MT* dk = data + std::size_t(q) * NC * rows + (lo - d) * NC;
                for (offset_t i = 0; i < n; ++i) {
                    // one transposed block: sum[s] = sum_l D(q*Nc + s, (e-d)*Nc + l) x[..+l],
                    // Nc independent sums (no dependency chain), each in ascending l
                    const VT* xb = xq + i * NC;
                    VT sum[NC] = {};
                    for (int l = 0; l < NC; ++l) {
                        const VT xl = xb[l];
                        for (int s = 0; s < NC; ++s)
                            sum[s] += VT(dk[std::size_t(s) * rows + i * NC + l]) * xl;
                    }
                    for (int s = 0; s < NC; ++s) tq[i * NC + s] += sum[s];
                }
            } else {
                for (index_t s = 0; s < nc; ++s) {
                    const MT* __restrict ds =
                        data + (std::size_t(q) * nc + s) * rows + (lo - d) * nc;
                    for (offset_t i = 0; i < n; ++i) {
                        VT sum = 0;
                        for (index_t l = 0; l < nc; ++l) sum += VT(ds[i * nc + l]) * xq[i * nc + l];
                        tq[i * nc + s] += sum;
                    }
                }
            }
        }
    });
}

template <int NC, class MT, class VT>
void bdia_apply(const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    if constexpr (NC == 1) {
        if (a.num_block_diagonals() <= kRowwiseMaxOffsets) {
            if (op == Op::normal)
                bdia1_rowwise<false>(a, alpha, x, beta, y);
            else
                bdia1_rowwise<true>(a, alpha, x, beta, y);
            return;
        }
    }
    if (op == Op::normal)
        bdia_normal<NC>(a, alpha, x, beta, y);
    else
        bdia_transpose<NC>(a, alpha, x, beta, y);
}

}  // namespace

template <class MT, class VT>
void spmv(const CpuExecutor&, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), DimensionMismatch, "BDIA matrix is not on the host");
    HEPTANE_ENSURE(a.block_size >= 1 && a.rows % a.block_size == 0 && a.cols % a.block_size == 0,
                   InputError,
                   "BDIA block size " << a.block_size << " does not divide the size " << a.rows
                                      << " x " << a.cols);
    HEPTANE_ENSURE(
        a.data.size() == std::size_t(a.slots()), DimensionMismatch,
        "BDIA data holds " << a.data.size() << " values, its structure needs " << a.slots());
    switch (a.block_size) {
        case 1:
            return bdia_apply<1>(a, op, alpha, x, beta, y);
        case 2:
            return bdia_apply<2>(a, op, alpha, x, beta, y);
        case 3:
            return bdia_apply<3>(a, op, alpha, x, beta, y);
        case 4:
            return bdia_apply<4>(a, op, alpha, x, beta, y);
        case 8:
            return bdia_apply<8>(a, op, alpha, x, beta, y);
        case 16:
            return bdia_apply<16>(a, op, alpha, x, beta, y);
        default:
            return bdia_apply<0>(a, op, alpha, x, beta, y);
    }
}

namespace {

/// Two block rows [br, br + 2) of one block diagonal at a time, for pc blocks of the block size
/// (B = NC) in fp64: the 2·NC values of a slot s of both rows are contiguous (r = br·NC + t), so
/// they go as NC vectors of two (SSE2, x86-64's baseline; GCC/Clang vector extensions), each
/// lane scaled by its own row's pc block (lane l of vector k is block row (2k + l) / NC of the
/// pair). The scalar loop made 3 loads, a multiply and an add per term of each output (A's
/// values read again for every output column, its sums started from 0): about 80 instructions
/// a 3 × 3 block, so the fold was bound by instructions, not memory (6.6 of its 8.9 ms with the
/// matrix in the cache, 2026-12-06). The sum over i in the same order, the first term not added
/// to 0: the same values (a zero's sign aside). Returns the first block row left for the caller
/// (hi, or hi − 1 when [lo, hi) has an odd count).
template <int NC>
offset_t right_scale_pairs(const double* __restrict__ aq, const double* __restrict__ binv,
                           double* __restrict__ oq, offset_t n, offset_t d, offset_t lo,
                           offset_t hi)
{
    typedef double v2 __attribute__((vector_size(16)));
    const auto load = [](const double* p) {
        v2 v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    const auto store = [](double* p, v2 v) { std::memcpy(p, &v, sizeof v); };
    offset_t br = lo;
    for (; br + 2 <= hi; br += 2) {
        const double* b0 = binv + (br + d) * NC * NC;  // row-major NC × NC blocks of cb, cb + 1
        const double* b1 = b0 + NC * NC;
        v2 a[NC][NC];  // a[i][k]: slot i of the pair's rows, values 2k, 2k + 1
        for (int i = 0; i < NC; ++i)
            for (int k = 0; k < NC; ++k) a[i][k] = load(aq + offset_t(i) * n + br * NC + 2 * k);
        for (int s = 0; s < NC; ++s) {
            double* o = oq + offset_t(s) * n + br * NC;
            for (int k = 0; k < NC; ++k) {
                const double* p0 = (2 * k) / NC == 0 ? b0 : b1;
                const double* p1 = (2 * k + 1) / NC == 0 ? b0 : b1;
                v2 sum = a[0][k] * v2{p0[s], p1[s]};
                for (int i = 1; i < NC; ++i) sum += a[i][k] * v2{p0[i * NC + s], p1[i * NC + s]};
                store(o + 2 * k, sum);
            }
        }
    }
    return br;
}

/// One tile of block rows [br0, br1) of bdia_right_scale: NC and B compile-time where they are
/// nonzero (the runtime nc and b otherwise), so that the loops over a block's entries unroll.
template <int NC, int B, class MT, class VT>
void right_scale_tile(const Bdia<MT>& a, int nc_rt, int b_rt, const VT* binv, MT* o, int unit_q,
                      offset_t br0, offset_t br1)
{
    const int nc = NC > 0 ? NC : nc_rt;
    const int b = B > 0 ? B : b_rt;
    const offset_t n = a.rows, nbc = a.cols / nc;
    const int nq = a.num_block_diagonals();
    const index_t* dq = a.block_offsets.data();
    const MT* in = a.data.data();
    const int per = nc / b;  // pc blocks per block column
    for (int q = 0; q < nq; ++q) {
        MT* __restrict__ oq = o + offset_t(q) * nc * n;  // Â and A are two arrays
        const MT* __restrict__ aq = in + offset_t(q) * nc * n;
        if (q == unit_q) {  // A_ii B_i = I
            for (int s = 0; s < nc; ++s)
                for (offset_t br = br0; br < br1; ++br)
                    for (int t = 0; t < nc; ++t)
                        oq[offset_t(s) * n + br * nc + t] = MT(s == t ? 1.0 : 0.0);
            continue;
        }
        // the block rows whose block column cb = br + d_q lies inside the matrix; the others
        // are padding: their slots lie outside it
        const offset_t d = dq[q];
        const offset_t lo = std::max(br0, std::min(br1, -d));
        const offset_t hi = std::max(lo, std::min(br1, nbc - d));
        const auto zero = [&](offset_t from, offset_t to) {
            for (int s = 0; s < nc; ++s)
                for (offset_t br = from; br < to; ++br)
                    for (int t = 0; t < nc; ++t) oq[offset_t(s) * n + br * nc + t] = MT(0);
        };
        zero(br0, lo);
        zero(hi, br1);
        offset_t from = lo;
        if constexpr (NC >= 2 && NC == B && std::is_same_v<MT, double> &&
                      std::is_same_v<VT, double>)
            from = right_scale_pairs<NC>(aq, binv, oq, n, d, lo, hi);
        // a block row at a time: with compile-time sizes its Nc × Nc block of A and the
        // pc blocks it meets stay in registers for all Nc² outputs
        for (offset_t br = from; br < hi; ++br) {
            const offset_t cb = br + d;
            for (int s = 0; s < nc; ++s) {
                const int j = s % b;
                const VT* bp = binv + (cb * per + s / b) * offset_t(b) * b + j;
                const MT* ap = aq + offset_t(s - j) * n + br * nc;
                MT* op = oq + offset_t(s) * n + br * nc;
                for (int t = 0; t < nc; ++t) {
                    double sum = 0;
                    for (int i = 0; i < b; ++i)
                        sum += double(ap[offset_t(i) * n + t]) * double(bp[i * b]);
                    op[t] = MT(sum);
                }
            }
        }
    }
}

}  // namespace

template <class MT, class VT>
void bdia_right_scale(const CpuExecutor&, const Bdia<MT>& a, index_t b, const VT* binv,
                      Bdia<MT>& out, bool unit_main)
{
    check_right_scale(a, b, out, unit_main);
    HEPTANE_ENSURE(a.exec()->is_cpu() && out.data.exec()->is_cpu(), DimensionMismatch,
                   "BDIA right scaling on the host: the matrices are not on the host");
    const offset_t n = a.rows;
    const int nc = a.block_size;
    const offset_t nbr = n / nc;
    MT* o = out.data.data();
    const int unit_q = unit_main ? int(a.main_block_diagonal()) : -1;
    // row r = br·Nc + t, block diagonal q, column c = cb·Nc + s (cb = br + d_q) of pc block
    // P = c / b = cb·per + s / b, j = c mod b = s mod b (b divides Nc):
    //     out(r, (q, s)) = sum_i A(r, (q, s − j + i)) · B_P(i, j)
    // Tiles of block rows, and within a tile one block diagonal at a time: its Nc input and Nc
    // output slots are the only streams (2 Nc of them; a row at a time over all slots was
    // 2 D Nc streams, more than the prefetchers follow), each value of A read once. The sum over i
    // in the same order whatever the tiling: the same results bit for bit. Nc = b = 1..4 and b = 1
    // with Nc = 2..4 unroll their block loops (compile-time sizes).
    constexpr offset_t tile = 1024;  // block rows: 2 Nc streams of Nc·8 KiB at fp64
    const offset_t tiles = (nbr + tile - 1) / tile;
    using Tile = void (*)(const Bdia<MT>&, int, int, const VT*, MT*, int, offset_t, offset_t);
    Tile f = &right_scale_tile<0, 0, MT, VT>;
    if (nc == int(b)) {
        if (nc == 1) f = &right_scale_tile<1, 1, MT, VT>;
        if (nc == 2) f = &right_scale_tile<2, 2, MT, VT>;
        if (nc == 3) f = &right_scale_tile<3, 3, MT, VT>;
        if (nc == 4) f = &right_scale_tile<4, 4, MT, VT>;
    } else if (b == 1) {
        if (nc == 2) f = &right_scale_tile<2, 1, MT, VT>;
        if (nc == 3) f = &right_scale_tile<3, 1, MT, VT>;
        if (nc == 4) f = &right_scale_tile<4, 1, MT, VT>;
    }
#pragma omp parallel for schedule(static) if (n >= 32768)
    for (offset_t tb = 0; tb < tiles; ++tb)
        f(a, nc, int(b), binv, o, unit_q, tb * tile, std::min(nbr, tb * tile + tile));
    out.unit_main_block = unit_main;
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                              \
    template void spmv<MT, VT>(const CpuExecutor&, const Bdia<MT>&, Op, VT, const VT*, VT, VT*); \
    template void bdia_right_scale<MT, VT>(const CpuExecutor&, const Bdia<MT>&, index_t,         \
                                           const VT*, Bdia<MT>&, bool);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
