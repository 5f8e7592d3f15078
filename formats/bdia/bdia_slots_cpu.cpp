// bdia_slots_from_csr, bdia_values_from_blocks and bdia_values_from_csr on the CPU
// (formats/bdia/bdia_slots.hpp): one pass over the rows, OpenMP.
#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "formats/bdia/bdia_slots.hpp"

namespace heptane::kernels {

template <class ST>
offset_t bdia_slots_from_csr(const CpuExecutor&, index_t n, index_t nc, const index_t* row_ptr,
                             const index_t* col, const index_t* offsets, index_t nq, ST* slot)
{
    HEPTANE_ENSURE(nc >= 1 && n % nc == 0, InputError,
                   "BDIA-GH slots: block size " << nc << " does not divide " << n);
    offset_t bad = -1;
#pragma omp parallel for schedule(static) if (n > 32768)
    for (index_t r = 0; r < n; ++r) {
        for (offset_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
            const index_t c = col[k];
            const index_t d = c / nc - r / nc;
            index_t q = 0;
            while (q < nq && offsets[q] != d) ++q;
            if (q == nq || c < 0 || c >= n) {
#pragma omp critical(heptane_bdia_slots_bad)
                bad = bad < 0 ? k : std::min(bad, k);
                continue;
            }
            slot[k] = ST((offset_t(q) * nc + c % nc) * offset_t(n) + r);
        }
    }
    return bad;
}

offset_t BdiaCsrCopyPlan::full_entries() const noexcept
{
    offset_t e = 0;
    for (const Run& r : runs) e += offset_t(r.last - r.first) * width;
    return e;
}

BdiaCsrCopyPlan bdia_csr_copy_plan(index_t n, index_t width, const index_t* row_ptr,
                                   const offset_t* slot)
{
    BdiaCsrCopyPlan p;
    p.n = n;
    p.width = width;
    std::vector<char> is_full(std::size_t(n) + 1, 0);  // row n: not full (ends the last run)
    offset_t others = 0;
#pragma omp parallel for schedule(static) reduction(+ : others) if (n > 32768)
    for (index_t r = 0; r < n; ++r) {
        const offset_t* s = slot + row_ptr[r];
        bool f = width > 0 && row_ptr[r + 1] - row_ptr[r] == width;
        for (index_t j = 0; j < width && f; ++j) f = s[j] == offset_t(j) * n + r;
        is_full[std::size_t(r)] = f;
        if (!f) others += row_ptr[r + 1] - row_ptr[r];
    }
    const auto full = [&](index_t r) { return is_full[std::size_t(r)] != 0; };
    p.other_slot.reserve(std::size_t(others));
    for (index_t r = 0; r < n;) {
        BdiaCsrCopyPlan::Run run;  // full rows [first, last), then the other rows up to the next
        run.first = r;
        run.entry = row_ptr[r];
        while (r < n && full(r)) ++r;
        run.last = r;
        run.other_first = offset_t(p.other_slot.size());
        for (; r < n && !full(r); ++r)
            for (offset_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) p.other_slot.push_back(slot[k]);
        run.other_last = offset_t(p.other_slot.size());
        p.runs.push_back(run);
    }
    return p;
}

template <class MT>
void bdia_values_from_csr(const CpuExecutor&, const BdiaCsrCopyPlan& p, const double* values,
                          MT* dst)
{
    const index_t w = p.width;
    const offset_t n = p.n;
    // rows per tile: its values (tile * width doubles) in 16 KB, at least 8 rows a store run
    const index_t tile =
        std::max<index_t>(8, std::min<index_t>(256, 2048 / std::max<index_t>(w, 1)));
    const std::int64_t runs = std::int64_t(p.runs.size());
    const offset_t entries =  // the values' count: the last run's entries end them
        p.runs.empty()
            ? 0
            : p.runs.back().entry + offset_t(p.runs.back().last - p.runs.back().first) * w +
                  (p.runs.back().other_last - p.runs.back().other_first);
    // in row order (static): the other rows after a run write the lines the run just wrote
#pragma omp parallel for schedule(static) if (n > 32768)
    for (std::int64_t i = 0; i < runs; ++i) {
        const BdiaCsrCopyPlan::Run& run = p.runs[std::size_t(i)];
        for (index_t t0 = run.first; t0 < run.last; t0 += tile) {
            const index_t t1 = std::min(run.last, t0 + tile);
            const double* v = values + run.entry + offset_t(t0 - run.first) * w;
            // the next tile's share of the values (this run's next rows, or its other rows and
            // the next run's), a few lines with each slot j: the loop below reads a tile down
            // its columns (stride w), which the hardware prefetchers do not follow into the
            // next tile; 8.1-8.6 -> 6.5-7.4 ms at Nc = 3 (393 K rows, runs of 186), Nc = 2
            // 2.6-2.8 -> 2.1-2.2 ms, Nc = 4 17.1-17.5 -> 14.8-15.1 ms, one core of the VM
            // (2026-12-06)
            const offset_t next0 = run.entry + offset_t(t1 - run.first) * w;
            const char* next = reinterpret_cast<const char*>(values + next0);
            // (rows of at most 8 values are read line after line: no prefetching, which cost
            // Nc = 1 0.24 -> 0.34 ms)
            const offset_t next_lines =
                w <= 8 ? 0
                       : (std::min(offset_t(tile) * w, entries - next0) * offset_t(sizeof(double)) +
                          63) /
                             64;
            const offset_t per_slot = (next_lines + w - 1) / std::max<index_t>(w, 1);
            for (index_t j = 0; j < w; ++j) {  // unrolled by hand: 1.5-2x the compiler's loop
                for (offset_t l = j * per_slot; l < std::min(next_lines, (j + 1) * per_slot); ++l)
                    __builtin_prefetch(next + l * 64);
                MT* __restrict d = dst + offset_t(j) * n;
                const double* __restrict src = v + j;
                index_t r = t0;
                for (; r + 4 <= t1; r += 4, src += 4 * offset_t(w)) {
                    const double a = src[0], b = src[w], c = src[2 * offset_t(w)],
                                 e = src[3 * offset_t(w)];
                    d[r] = MT(a);
                    d[r + 1] = MT(b);
                    d[r + 2] = MT(c);
                    d[r + 3] = MT(e);
                }
                for (; r < t1; ++r, src += w) d[r] = MT(*src);
            }
        }
        // the other rows' entries: contiguous after the run's
        const double* v = values + run.entry + offset_t(run.last - run.first) * w;
        for (offset_t e = run.other_first; e < run.other_last; ++e)
            dst[p.other_slot[std::size_t(e)]] = MT(v[e - run.other_first]);
    }
}

template void bdia_values_from_csr<double>(const CpuExecutor&, const BdiaCsrCopyPlan&,
                                           const double*, double*);
template void bdia_values_from_csr<float>(const CpuExecutor&, const BdiaCsrCopyPlan&, const double*,
                                          float*);

template <class MT>
offset_t bdia_values_from_blocks(const CpuExecutor&, index_t block_rows, index_t nc,
                                 const index_t* block_ptr, const index_t* block_col,
                                 const double* values, const index_t* offsets, index_t nq, MT* dst,
                                 const index_t* col_map, index_t first_block_row)
{
    HEPTANE_ENSURE(nc >= 1 && block_rows >= 0, InputError,
                   "BDIA-GH values from blocks: block size " << nc);
    const offset_t n = offset_t(block_rows) * nc, bb = offset_t(nc) * nc;
    offset_t bad = -1;
#pragma omp parallel for schedule(static) if (block_rows > 8192)
    for (index_t ib = 0; ib < block_rows; ++ib) {
        for (offset_t k = block_ptr[ib]; k < block_ptr[ib + 1]; ++k) {
            const index_t d =
                col_map ? col_map[block_col[k]] - (first_block_row + ib) : block_col[k] - ib;
            index_t q = 0;
            while (q < nq && offsets[q] != d) ++q;
            if (q == nq || (!col_map && (block_col[k] < 0 || block_col[k] >= block_rows))) {
#pragma omp critical(heptane_bdia_blocks_bad)
                bad = bad < 0 ? k : std::min(bad, k);
                continue;
            }
            const double* src = values + k * bb;
            MT* out = dst + offset_t(q) * nc * n + offset_t(ib) * nc;
            for (index_t c = 0; c < nc; ++c, src += nc, out += n)
                for (index_t r = 0; r < nc; ++r) out[r] = MT(src[r]);
        }
    }
    return bad;
}

template offset_t bdia_values_from_blocks<double>(const CpuExecutor&, index_t, index_t,
                                                  const index_t*, const index_t*, const double*,
                                                  const index_t*, index_t, double*, const index_t*,
                                                  index_t);
template offset_t bdia_values_from_blocks<float>(const CpuExecutor&, index_t, index_t,
                                                 const index_t*, const index_t*, const double*,
                                                 const index_t*, index_t, float*, const index_t*,
                                                 index_t);

template offset_t bdia_slots_from_csr<std::int32_t>(const CpuExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int32_t*);
template offset_t bdia_slots_from_csr<std::int64_t>(const CpuExecutor&, index_t, index_t,
                                                    const index_t*, const index_t*, const index_t*,
                                                    index_t, std::int64_t*);

}  // namespace heptane::kernels
