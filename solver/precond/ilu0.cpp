// ILU(0) / BILU(0) factorisation and level schedules, on the host.
//
// Split for values-only updates: ilu0_symbolic finds, once per pattern, every update
// A_ij −= L_ik U_kj of the IKJ elimination as a pair of block positions in the factors'
// own layout (L, U, D); ilu0_numeric then only walks those lists, in place (block
// arithmetic compiled for Nc = 1..4, no searching, no allocation per row).
//
// Why on the host: CUDA 13 removed cuSPARSE's legacy csrilu02/bsrilu02 (and csrsv2/bsrsv2)
// routines, and a factorisation runs once per setup, so heptane factorises here in double
// and uploads the factors; only the triangular solves, which run twice per BiCGStab
// iteration, run on the device (precond.cu, level-scheduled).
#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "solver/precond/block_kernels.hpp"
#include "solver/precond/block_utils.hpp"

namespace heptane::detail {

Ilu0Symbolic ilu0_symbolic(const BlockCsrHost& a)
{
    const index_t nb = a.nb;
    Ilu0Symbolic s;
    for (BlockCsrHost* f : {&s.lower, &s.upper}) {
        f->nb = nb;
        f->nc = a.nc;
        f->ptr.assign(std::size_t(nb) + 1, 0);
    }
    for (index_t i = 0; i < nb; ++i) {
        const offset_t d = a.diag[std::size_t(i)];
        s.lower.ptr[std::size_t(i) + 1] = s.lower.ptr[std::size_t(i)] + (d - a.ptr[std::size_t(i)]);
        s.upper.ptr[std::size_t(i) + 1] =
            s.upper.ptr[std::size_t(i)] + (a.ptr[std::size_t(i) + 1] - d - 1);
    }
    const offset_t nl = s.nl(), nu = s.nu();
    s.lower.col.resize(std::size_t(nl));
    s.upper.col.resize(std::size_t(nu));
    s.upd_ptr.assign(std::size_t(nl) + 1, 0);

    // The updates of row i: for each of its lower blocks (i, k), the blocks (k, j > k) of U
    // whose column j row i also holds (both rows ascending: one merge). Pass 0 counts,
    // pass 1 writes.
    for (int pass = 0; pass < 2; ++pass) {
#pragma omp parallel for schedule(static) if (nb > 4096)
        for (index_t i = 0; i < nb; ++i) {
            const offset_t b = a.ptr[std::size_t(i)], d = a.diag[std::size_t(i)],
                           e = a.ptr[std::size_t(i) + 1];
            const offset_t l0 = s.lower.ptr[std::size_t(i)], u0 = s.upper.ptr[std::size_t(i)];
            if (pass == 0) {
                std::copy(a.col.begin() + b, a.col.begin() + d, s.lower.col.begin() + l0);
                std::copy(a.col.begin() + d + 1, a.col.begin() + e, s.upper.col.begin() + u0);
            }
            offset_t l = l0;
            for (offset_t q = b; q < d; ++q, ++l) {
                const index_t k = a.col[std::size_t(q)];
                const offset_t dk = a.diag[std::size_t(k)], uk = s.upper.ptr[std::size_t(k)];
                offset_t t = b, out = pass == 0 ? 0 : s.upd_ptr[std::size_t(l)];
                for (offset_t u = dk + 1; u < a.ptr[std::size_t(k) + 1]; ++u) {
                    const index_t j = a.col[std::size_t(u)];
                    while (t < e && a.col[std::size_t(t)] < j) ++t;
                    if (t == e) break;
                    if (a.col[std::size_t(t)] != j) continue;
                    if (pass == 1) {
                        s.upd_src[std::size_t(out)] = uk + (u - dk - 1);
                        s.upd_dst[std::size_t(out)] = t < d    ? l0 + (t - b)
                                                      : t == d ? nl + nu + i
                                                               : nl + u0 + (t - d - 1);
                    }
                    ++out;
                }
                if (pass == 0) s.upd_ptr[std::size_t(l) + 1] = out;
            }
        }
        if (pass == 0) {
            for (offset_t l = 0; l < nl; ++l)
                s.upd_ptr[std::size_t(l) + 1] += s.upd_ptr[std::size_t(l)];
            s.upd_src.resize(std::size_t(s.upd_ptr.back()));
            s.upd_dst.resize(std::size_t(s.upd_ptr.back()));
        }
    }
    return s;
}

std::vector<offset_t> ilu0_block_map(const BlockCsrHost& permuted, const Ilu0Symbolic& s,
                                     const std::vector<offset_t>& src)
{
    std::vector<offset_t> map(src.size());
    const offset_t nl = s.nl(), nu = s.nu();
#pragma omp parallel for schedule(static) if (permuted.nb > 4096)
    for (index_t i = 0; i < permuted.nb; ++i) {
        const offset_t b = permuted.ptr[std::size_t(i)], d = permuted.diag[std::size_t(i)],
                       e = permuted.ptr[std::size_t(i) + 1];
        for (offset_t q = b; q < e; ++q)
            map[std::size_t(src[std::size_t(q)])] =
                q < d    ? s.lower.ptr[std::size_t(i)] + (q - b)
                : q == d ? nl + nu + i
                         : nl + s.upper.ptr[std::size_t(i)] + (q - d - 1);
    }
    return map;
}

namespace {

struct RowFailure {
    index_t row = std::numeric_limits<index_t>::max();
    PivotFailure f;
};

/// The factor arrays of ilu0_numeric.
struct FactorArrays {
    double* lower;
    double* upper;
    double* diag;
    double* dinv;
};

/// IKJ elimination of block row i with the finished rows k < i it couples to; tmp: 2·nc²
/// doubles of scratch. False (and `fail` set) when the pivot block is singular.
template <int NC>
bool factor_row(const Ilu0Symbolic& s, const FactorArrays& f, index_t i, double* tmp,
                RowFailure& fail)
{
    const index_t nc = NC > 0 ? index_t(NC) : s.lower.nc;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    const offset_t nl = s.nl(), nlu = nl + s.nu();
    for (offset_t l = s.lower.ptr[std::size_t(i)]; l < s.lower.ptr[std::size_t(i) + 1]; ++l) {
        double* lik = f.lower + std::size_t(l) * nc2;
        // L_ik = A_ik U_kk⁻¹
        block_mul<NC>(lik, f.dinv + std::size_t(s.lower.col[std::size_t(l)]) * nc2, tmp, nc);
        std::copy(tmp, tmp + nc2, lik);
        // A_ij −= L_ik U_kj for the U blocks (k, j > k) that row i also holds
        for (offset_t e = s.upd_ptr[std::size_t(l)]; e < s.upd_ptr[std::size_t(l) + 1]; ++e) {
            const offset_t t = s.upd_dst[std::size_t(e)];
            double* target = t < nl    ? f.lower + std::size_t(t) * nc2
                             : t < nlu ? f.upper + std::size_t(t - nl) * nc2
                                       : f.diag + std::size_t(t - nlu) * nc2;
            block_mul_sub<NC>(lik, f.upper + std::size_t(s.upd_src[std::size_t(e)]) * nc2, target,
                              nc);
        }
    }
    const PivotFailure p = invert_block_nc<NC>(f.diag + std::size_t(i) * nc2,
                                               f.dinv + std::size_t(i) * nc2, nc, tmp + nc2);
    if (!p.singular) return true;
    fail.row = i;
    fail.f = p;
    return false;
}

template <int NC>
RowFailure factor_rows(const Ilu0Symbolic& s, const FactorArrays& f,
                       const std::vector<index_t>* groups)
{
    const std::size_t nc2 = std::size_t(s.lower.nc) * std::size_t(s.lower.nc);
    RowFailure fail;
    if (!groups) {  // natural order: row i needs the rows before it
        std::vector<double> tmp(2 * nc2);
        for (index_t i = 0; i < s.lower.nb; ++i)
            if (!factor_row<NC>(s, f, i, tmp.data(), fail)) break;
        return fail;
    }
    for (std::size_t g = 0; g + 1 < groups->size(); ++g) {
        const index_t r0 = (*groups)[g], r1 = (*groups)[g + 1];
#pragma omp parallel if (r1 - r0 > 2048)
        {
            std::vector<double> tmp(2 * nc2);
            RowFailure mine;
#pragma omp for schedule(static) nowait
            for (index_t i = r0; i < r1; ++i)
                if (mine.row == std::numeric_limits<index_t>::max())
                    factor_row<NC>(s, f, i, tmp.data(), mine);
#pragma omp critical(heptane_ilu0_failure)
            if (mine.row < fail.row) fail = mine;
        }
        if (fail.row != std::numeric_limits<index_t>::max()) break;
    }
    return fail;
}

}  // namespace

void ilu0_numeric(const Ilu0Symbolic& s, double* lower, double* upper, double* diag, double* dinv,
                  const std::vector<index_t>* groups)
{
    const FactorArrays f{lower, upper, diag, dinv};
    RowFailure fail;
    dispatch_block_size(s.lower.nc,
                        [&](auto NC) { fail = factor_rows<decltype(NC)::value>(s, f, groups); });
    if (fail.row != std::numeric_limits<index_t>::max())
        HEPTANE_THROW(SingularError, (s.lower.nc == 1 ? "ILU(0)" : "BILU(0)")
                                         << ": singular pivot block after elimination, "
                                         << describe_pivot_failure(fail.row, s.lower.nc, fail.f));
}

Ilu0Factors ilu0_factorize(const BlockCsrHost& a)
{
    Ilu0Symbolic s = ilu0_symbolic(a);
    const std::size_t nc2 = std::size_t(a.nc) * std::size_t(a.nc);
    std::vector<double> lower(std::size_t(s.nl()) * nc2), upper(std::size_t(s.nu()) * nc2),
        diag(std::size_t(a.nb) * nc2);
    for (index_t i = 0; i < a.nb; ++i) {  // a's blocks into the factor layout
        const offset_t b = a.ptr[std::size_t(i)], d = a.diag[std::size_t(i)],
                       e = a.ptr[std::size_t(i) + 1];
        std::copy(a.val.begin() + std::ptrdiff_t(std::size_t(b) * nc2),
                  a.val.begin() + std::ptrdiff_t(std::size_t(d) * nc2),
                  lower.begin() + std::ptrdiff_t(std::size_t(s.lower.ptr[std::size_t(i)]) * nc2));
        std::copy(a.val.begin() + std::ptrdiff_t(std::size_t(d) * nc2),
                  a.val.begin() + std::ptrdiff_t(std::size_t(d + 1) * nc2),
                  diag.begin() + std::ptrdiff_t(std::size_t(i) * nc2));
        std::copy(a.val.begin() + std::ptrdiff_t(std::size_t(d + 1) * nc2),
                  a.val.begin() + std::ptrdiff_t(std::size_t(e) * nc2),
                  upper.begin() + std::ptrdiff_t(std::size_t(s.upper.ptr[std::size_t(i)]) * nc2));
    }
    Ilu0Factors out;
    out.diag_inv.resize(std::size_t(a.nb) * nc2);
    ilu0_numeric(s, lower.data(), upper.data(), diag.data(), out.diag_inv.data());
    out.lower = std::move(s.lower);
    out.upper = std::move(s.upper);
    out.lower.val = std::move(lower);
    out.upper.val = std::move(upper);
    return out;
}

LevelSchedule level_schedule(const BlockCsrHost& f, bool lower)
{
    const index_t nb = f.nb;
    std::vector<index_t> level(std::size_t(nb), 0);
    index_t levels = nb > 0 ? 1 : 0;
    for (index_t step = 0; step < nb; ++step) {
        const index_t i = lower ? step : nb - 1 - step;
        index_t l = 0;
        for (offset_t q = f.ptr[std::size_t(i)]; q < f.ptr[std::size_t(i) + 1]; ++q)
            l = std::max(l, level[std::size_t(f.col[std::size_t(q)])] + 1);
        level[std::size_t(i)] = l;
        levels = std::max(levels, l + 1);
    }
    LevelSchedule s;
    s.ptr.assign(std::size_t(levels) + 1, 0);
    for (index_t i = 0; i < nb; ++i) ++s.ptr[std::size_t(level[std::size_t(i)]) + 1];
    for (index_t l = 0; l < levels; ++l) s.ptr[std::size_t(l) + 1] += s.ptr[std::size_t(l)];
    s.rows.resize(std::size_t(nb));
    std::vector<index_t> next(s.ptr.begin(), s.ptr.end() - 1);
    for (index_t i = 0; i < nb; ++i)
        s.rows[std::size_t(next[std::size_t(level[std::size_t(i)])]++)] = i;
    return s;
}

}  // namespace heptane::detail
