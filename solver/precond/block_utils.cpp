#include "solver/precond/block_utils.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "solver/precond/block_kernels.hpp"

namespace heptane::detail {

namespace {

const Csr<double>& on_host(const Csr<double>& a, Csr<double>& keep)
{
    if (a.exec()->is_cpu()) return a;
    keep = a.to(cpu_executor());
    return keep;
}

/// The sorted distinct block columns of block row I, and I itself, into c (room for the
/// row's entries + 1); returns how many. A scalar row's columns are ascending (canonical CSR),
/// so each adds a block once (repeats in a row skipped) and the nc runs are merged by
/// insertion (a few dozen columns); any order is sorted correctly, only slower.
index_t gather_block_row(const offset_t* rp, const index_t* ci, index_t nc, index_t I, index_t* c)
{
    index_t len = 0;
    c[len++] = I;
    for (index_t r = I * nc; r < (I + 1) * nc; ++r) {
        index_t last = -1;
        for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
            const index_t b = ci[k] / nc;
            if (b == last) continue;
            last = b;
            index_t j = len++;
            for (; j > 0 && c[j - 1] > b; --j) c[j] = c[j - 1];
            c[j] = b;
        }
    }
    return index_t(std::unique(c, c + len) - c);
}

}  // namespace

BlockPattern block_pattern(const Csr<double>& a_in, index_t nc, const char* who)
{
    HEPTANE_ENSURE(nc >= 1, InputError, who << ": block size " << nc << " must be >= 1");
    HEPTANE_ENSURE(a_in.rows == a_in.cols, DimensionMismatch,
                   who << ": the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
    HEPTANE_ENSURE(a_in.rows % nc == 0, InputError,
                   who << ": block size " << nc << " does not divide the size " << a_in.rows);
    Csr<double> keep;
    const Csr<double>& h = on_host(a_in, keep);
    const index_t n = h.rows, nb = n / nc;
    const offset_t* rp = h.row_ptr.data();
    const index_t* ci = h.col_idx.data();

    BlockPattern p;
    p.rows = n;
    p.row_ptr.assign(rp, rp + n + 1);
    BlockCsrHost& m = p.blocks;
    m.nb = nb;
    m.nc = nc;
    m.ptr.assign(std::size_t(nb) + 1, 0);
    m.diag.assign(std::size_t(nb), 0);
    // pass 1: how many blocks each block row has; the first row with a column out of range
    index_t bad_row = n;
#pragma omp parallel reduction(min : bad_row) if (nb > 4096)
    {
        std::vector<index_t> c;
#pragma omp for schedule(static)
        for (index_t I = 0; I < nb; ++I) {
            for (index_t r = I * nc; r < (I + 1) * nc && bad_row >= n; ++r)
                for (offset_t k = rp[r]; k < rp[r + 1]; ++k)
                    if (ci[k] < 0 || ci[k] >= n) {
                        bad_row = r;
                        break;
                    }
            const std::size_t room = std::size_t(rp[(I + 1) * nc] - rp[I * nc]) + 1;
            if (c.size() < room) c.resize(2 * room);
            m.ptr[std::size_t(I) + 1] = gather_block_row(rp, ci, nc, I, c.data());
        }
    }
    HEPTANE_ENSURE(
        bad_row == n, InputError,
        who << ": row " << std::int64_t(bad_row) + 1 << " has a column outside 1.." << n);
    for (index_t I = 0; I < nb; ++I) m.ptr[std::size_t(I) + 1] += m.ptr[std::size_t(I)];
    m.col.resize(std::size_t(m.ptr.back()));
    // pass 2: the block columns, the diagonal, and whether every block is dense: scalar
    // row r = I·nc + a holds exactly the columns col[q]·nc + b, q over the row's blocks,
    // b = 0 … nc − 1, in that order (then entry k of the row is value (q·nc + a)·nc + b, and
    // no slot map is needed)
    int dense = 1;
#pragma omp parallel reduction(& : dense) if (nb > 4096)
    {
        std::vector<index_t> c;
#pragma omp for schedule(static)
        for (index_t I = 0; I < nb; ++I) {
            const std::size_t room = std::size_t(rp[(I + 1) * nc] - rp[I * nc]) + 1;
            if (c.size() < room) c.resize(2 * room);
            const index_t len = gather_block_row(rp, ci, nc, I, c.data());
            const offset_t base = m.ptr[std::size_t(I)];
            index_t* cols = m.col.data() + base;
            std::copy(c.data(), c.data() + len, cols);
            m.diag[std::size_t(I)] = base + (std::lower_bound(cols, cols + len, I) - cols);
            if (!dense) continue;
            for (index_t r = I * nc; r < (I + 1) * nc && dense; ++r) {
                if (rp[r + 1] - rp[r] != offset_t(len) * nc) {
                    dense = 0;
                    break;
                }
                for (index_t q = 0; q < len && dense; ++q)
                    for (index_t b = 0; b < nc; ++b)
                        if (ci[rp[r] + q * nc + b] != cols[q] * nc + b) dense = 0;
            }
        }
    }
    if (dense) {
        p.all_dense = true;
        return p;
    }
    // pass 3: where each entry goes
    p.slot.resize(std::size_t(rp[n]));
    const index_t nc2 = nc * nc;
#pragma omp parallel for schedule(static) if (nb > 4096)
    for (index_t I = 0; I < nb; ++I) {
        const offset_t base = m.ptr[std::size_t(I)];
        const index_t* cols = m.col.data() + base;
        const index_t len = index_t(m.ptr[std::size_t(I) + 1] - base);
        for (index_t r = I * nc; r < (I + 1) * nc; ++r) {
            index_t q = 0;
            for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
                const index_t b = ci[k] / nc;
                if (cols[q] > b)  // not ascending: search
                    q = index_t(std::lower_bound(cols, cols + len, b) - cols);
                while (cols[q] < b) ++q;
                p.slot[std::size_t(k)] = q * nc2 + (r % nc) * nc + ci[k] % nc;
            }
        }
    }
    return p;
}

namespace {

// Where the blocks of block row I go: one array in the block layout (block_fill), or the
// L, U, D arrays of the factorisation (block_fill_factors). zero(I) clears them; block(I, q)
// is block q of the row.
struct CombinedTarget {
    const BlockCsrHost& m;
    double* val;
    std::size_t nc2;
    void zero(index_t I) const
    {
        std::fill(val + std::size_t(m.ptr[std::size_t(I)]) * nc2,
                  val + std::size_t(m.ptr[std::size_t(I) + 1]) * nc2, 0.0);
    }
    double* block(index_t I, index_t q) const
    {
        return val + std::size_t(m.ptr[std::size_t(I)] + q) * nc2;
    }
};
struct FactorTarget {
    const BlockCsrHost& m;
    const Ilu0Symbolic& s;
    double *lower, *upper, *diag;
    const std::vector<offset_t>* map;  // block q of m -> factor block (ilu0_symbolic's code)
    std::size_t nc2;
    double* code_block(offset_t t) const
    {
        const offset_t nl = s.nl(), nlu = nl + s.nu();
        return t < nl    ? lower + std::size_t(t) * nc2
               : t < nlu ? upper + std::size_t(t - nl) * nc2
                         : diag + std::size_t(t - nlu) * nc2;
    }
    void zero(index_t I) const
    {
        if (map) {
            for (offset_t q = m.ptr[std::size_t(I)]; q < m.ptr[std::size_t(I) + 1]; ++q)
                std::fill_n(code_block((*map)[std::size_t(q)]), nc2, 0.0);
            return;
        }
        std::fill(lower + std::size_t(s.lower.ptr[std::size_t(I)]) * nc2,
                  lower + std::size_t(s.lower.ptr[std::size_t(I) + 1]) * nc2, 0.0);
        std::fill(diag + std::size_t(I) * nc2, diag + std::size_t(I + 1) * nc2, 0.0);
        std::fill(upper + std::size_t(s.upper.ptr[std::size_t(I)]) * nc2,
                  upper + std::size_t(s.upper.ptr[std::size_t(I) + 1]) * nc2, 0.0);
    }
    double* block(index_t I, index_t q) const
    {
        if (map) return code_block((*map)[std::size_t(m.ptr[std::size_t(I)] + q)]);
        const index_t dl = index_t(m.diag[std::size_t(I)] - m.ptr[std::size_t(I)]);
        if (q < dl) return lower + std::size_t(s.lower.ptr[std::size_t(I)] + q) * nc2;
        if (q == dl) return diag + std::size_t(I) * nc2;
        return upper + std::size_t(s.upper.ptr[std::size_t(I)] + (q - dl - 1)) * nc2;
    }
};

constexpr index_t no_row = std::numeric_limits<index_t>::max();

// The values of the scalar entries into the blocks, each checked against the column it had
// at setup; returns the first scalar row that differs, or no_row.
template <int NC, class Target>
index_t fill_rows(const BlockPattern& p, const offset_t* rp, const index_t* ci, const double* v,
                  const Target& t)
{
    const BlockCsrHost& m = p.blocks;
    const index_t nb = m.nb;
    const index_t nc = NC > 0 ? index_t(NC) : m.nc;
    const index_t nc2 = nc * nc;
    index_t bad = no_row;
    if (p.dense()) {  // row a of block q of block row I: entries q·nc … q·nc + nc − 1 of row I·nc +
                      // a
#pragma omp parallel for schedule(static) reduction(min : bad) if (nb > 4096)
        for (index_t I = 0; I < nb; ++I) {
            const index_t* cols = m.col.data() + m.ptr[std::size_t(I)];
            const index_t len = index_t(m.ptr[std::size_t(I) + 1] - m.ptr[std::size_t(I)]);
            for (index_t q = 0; q < len; ++q) {
                double* blk = t.block(I, q);
                const index_t c0 = cols[q] * nc;
                for (index_t a = 0; a < nc; ++a) {
                    const offset_t k = rp[I * nc + a] + offset_t(q) * nc;
                    for (index_t b = 0; b < nc; ++b) {
                        if (ci[k + b] != c0 + b) bad = std::min(bad, I * nc + a);
                        blk[a * nc + b] = v[k + b] + 0.0;  // as a sum into zero: -0 -> +0
                    }
                }
            }
        }
        return bad;
    }
#pragma omp parallel for schedule(static) reduction(min : bad) if (nb > 4096)
    for (index_t I = 0; I < nb; ++I) {
        const offset_t base = m.ptr[std::size_t(I)];
        t.zero(I);
        for (index_t r = I * nc; r < (I + 1) * nc; ++r)
            for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
                const index_t s = p.slot[std::size_t(k)], q = s / nc2;
                const index_t c = m.col[std::size_t(base + q)] * nc + s % nc;
                if (c != ci[k]) {
                    bad = std::min(bad, r);
                    break;
                }
                t.block(I, q)[s % nc2] += v[k];
            }
    }
    return bad;
}

template <class Target>
void fill(const BlockPattern& p, const Csr<double>& a_in, const Target& t, const char* who)
{
    Csr<double> keep;
    const Csr<double>& h = on_host(a_in, keep);
    const index_t n = p.rows;
    HEPTANE_ENSURE(h.rows == n && h.cols == n, InputError,
                   who << ": values-only update with a " << h.rows << " x " << h.cols
                       << " matrix; the preconditioner was set up for " << n << " x " << n);
    const offset_t* rp = h.row_ptr.data();
    index_t bad = no_row;
    if (std::memcmp(rp, p.row_ptr.data(), sizeof(offset_t) * (std::size_t(n) + 1)) != 0) {
        bad = index_t(std::mismatch(rp, rp + n + 1, p.row_ptr.data()).first - rp) - 1;
        bad = std::max<index_t>(bad, 0);
    } else {
        dispatch_block_size(p.blocks.nc, [&](auto NC) {
            bad = fill_rows<decltype(NC)::value>(p, rp, h.col_idx.data(), h.values.data(), t);
        });
    }
    HEPTANE_ENSURE(bad == no_row, InputError,
                   who << ": values-only update with another nonzero pattern (row "
                       << std::int64_t(bad) + 1
                       << " differs from the one the preconditioner was set up with); set up a "
                          "new preconditioner for a new pattern");
}

}  // namespace

void block_fill(const BlockPattern& p, const Csr<double>& a, double* val, const char* who)
{
    const std::size_t nc2 = std::size_t(p.blocks.nc) * std::size_t(p.blocks.nc);
    fill(p, a, CombinedTarget{p.blocks, val, nc2}, who);
}

void block_fill_factors(const BlockPattern& p, const Ilu0Symbolic& s, const Csr<double>& a,
                        double* lower, double* upper, double* diag, const char* who,
                        const std::vector<offset_t>* block_map)
{
    const std::size_t nc2 = std::size_t(p.blocks.nc) * std::size_t(p.blocks.nc);
    fill(p, a, FactorTarget{p.blocks, s, lower, upper, diag, block_map, nc2}, who);
}

BlockCsrHost block_csr_from_csr(const Csr<double>& a, index_t nc, const char* who)
{
    BlockPattern p = block_pattern(a, nc, who);
    std::vector<double> val(std::size_t(p.blocks.ptr.back()) * std::size_t(nc) * std::size_t(nc));
    block_fill(p, a, val.data(), who);
    BlockCsrHost m = std::move(p.blocks);
    m.val = std::move(val);
    return m;
}

PivotFailure invert_block(const double* a, double* inv, index_t nc)
{
    PivotFailure f;
    dispatch_block_size(nc, [&](auto NC) { f = invert_block_nc<decltype(NC)::value>(a, inv, nc); });
    return f;
}

std::string describe_pivot_failure(index_t block_row, index_t nc, const PivotFailure& f)
{
    std::ostringstream os;
    // 1-based, as the files and the readers count
    os << "block row " << std::int64_t(block_row) + 1 << " (rows "
       << std::int64_t(block_row) * nc + 1 << ".." << std::int64_t(block_row) * nc + nc
       << "): pivot " << f.step + 1 << " of " << nc << " is " << f.pivot
       << " after partial pivoting (|pivot| <= " << f.threshold << " = nc*eps*max|a_ij|)";
    return os.str();
}

}  // namespace heptane::detail
