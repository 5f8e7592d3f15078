// ILU(0) / BILU(0) factorisation and level schedules, on the host.
//
// Why on the host: CUDA 13 removed cuSPARSE's legacy csrilu02/bsrilu02 (and csrsv2/bsrsv2)
// routines, and a factorisation runs once per setup, so heptane factorises here in double
// and uploads the factors; only the triangular solves, which run twice per BiCGStab
// iteration, run on the device (precond.cu, level-scheduled).
#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "solver/precond/block_utils.hpp"

namespace heptane::detail {

namespace {
/// c = a · b for nc × nc row-major blocks (c must not alias a or b)
void block_mul(const double* a, const double* b, double* c, index_t nc)
{
    for (index_t i = 0; i < nc; ++i)
        for (index_t j = 0; j < nc; ++j) {
            double s = 0;
            for (index_t k = 0; k < nc; ++k) s += a[i * nc + k] * b[k * nc + j];
            c[i * nc + j] = s;
        }
}
/// c −= a · b
void block_mul_sub(const double* a, const double* b, double* c, index_t nc)
{
    for (index_t i = 0; i < nc; ++i)
        for (index_t k = 0; k < nc; ++k) {
            const double aik = a[i * nc + k];
            if (aik == 0.0) continue;
            for (index_t j = 0; j < nc; ++j) c[i * nc + j] -= aik * b[k * nc + j];
        }
}
}  // namespace

Ilu0Factors ilu0_factorize(const BlockCsrHost& a)
{
    const index_t nb = a.nb, nc = a.nc;
    const std::size_t nc2 = std::size_t(nc) * nc;
    std::vector<double> val = a.val;  // factorised in place: L multipliers, U blocks
    std::vector<double> dinv(std::size_t(nb) * nc2);
    std::vector<offset_t> marker(std::size_t(nb), -1);
    std::vector<double> tmp(nc2);

    // IKJ order: row i is eliminated with the finished rows k < i it couples to.
    for (index_t i = 0; i < nb; ++i) {
        const offset_t begin = a.ptr[std::size_t(i)], end = a.ptr[std::size_t(i) + 1];
        for (offset_t q = begin; q < end; ++q) marker[std::size_t(a.col[std::size_t(q)])] = q;
        for (offset_t q = begin; q < a.diag[std::size_t(i)]; ++q) {
            const index_t k = a.col[std::size_t(q)];
            double* lik = &val[std::size_t(q) * nc2];
            // L_ik = A_ik U_kk⁻¹
            block_mul(lik, &dinv[std::size_t(k) * nc2], tmp.data(), nc);
            std::memcpy(lik, tmp.data(), nc2 * sizeof(double));
            // A_ij −= L_ik U_kj for the U blocks (k, j > k) that row i also holds
            for (offset_t u = a.diag[std::size_t(k)] + 1; u < a.ptr[std::size_t(k) + 1]; ++u) {
                const offset_t target = marker[std::size_t(a.col[std::size_t(u)])];
                if (target >= 0)
                    block_mul_sub(lik, &val[std::size_t(u) * nc2], &val[std::size_t(target) * nc2],
                                  nc);
            }
        }
        const offset_t d = a.diag[std::size_t(i)];
        const PivotFailure f =
            invert_block(&val[std::size_t(d) * nc2], &dinv[std::size_t(i) * nc2], nc);
        if (f.singular)
            HEPTANE_THROW(InputError, (nc == 1 ? "ILU(0)" : "BILU(0)")
                                          << ": singular pivot block after elimination, "
                                          << describe_pivot_failure(i, nc, f));
        for (offset_t q = begin; q < end; ++q) marker[std::size_t(a.col[std::size_t(q)])] = -1;
    }

    Ilu0Factors out;
    for (BlockCsrHost* f : {&out.lower, &out.upper}) {
        f->nb = nb;
        f->nc = nc;
        f->ptr.assign(std::size_t(nb) + 1, 0);
    }
    for (index_t i = 0; i < nb; ++i) {
        const offset_t d = a.diag[std::size_t(i)];
        out.lower.ptr[std::size_t(i) + 1] =
            out.lower.ptr[std::size_t(i)] + (d - a.ptr[std::size_t(i)]);
        out.upper.ptr[std::size_t(i) + 1] =
            out.upper.ptr[std::size_t(i)] + (a.ptr[std::size_t(i) + 1] - d - 1);
    }
    for (index_t i = 0; i < nb; ++i) {
        const offset_t d = a.diag[std::size_t(i)];
        for (offset_t q = a.ptr[std::size_t(i)]; q < a.ptr[std::size_t(i) + 1]; ++q) {
            if (q == d) continue;
            BlockCsrHost& f = q < d ? out.lower : out.upper;
            f.col.push_back(a.col[std::size_t(q)]);
            f.val.insert(f.val.end(), val.begin() + std::ptrdiff_t(std::size_t(q) * nc2),
                         val.begin() + std::ptrdiff_t(std::size_t(q + 1) * nc2));
        }
    }
    out.diag_inv = std::move(dinv);
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
