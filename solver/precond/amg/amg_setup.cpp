#include "solver/precond/amg/amg_setup.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/error.hpp"
#include "formats/detect/detect.hpp"
#include "solver/precond/block_utils.hpp"

namespace heptane::amg {

namespace {

// Exclusive prefix sum of counts[0..n) into ptr[0..n] (ptr[0] = 0).
std::vector<offset_t> prefix(const std::vector<offset_t>& counts)
{
    std::vector<offset_t> ptr(counts.size() + 1, 0);
    for (std::size_t i = 0; i < counts.size(); ++i) ptr[i + 1] = ptr[i] + counts[i];
    return ptr;
}

Csr<double> host_csr(index_t rows, index_t cols, std::vector<offset_t> ptr,
                     std::vector<index_t> col, std::vector<double> val)
{
    Csr<double> c;
    c.rows = rows;
    c.cols = cols;
    c.row_ptr = Array<offset_t>(std::move(ptr));
    c.col_idx = Array<index_t>(std::move(col));
    c.values = Array<double>(std::move(val));
    return c;
}

/// The host CSR matrix whose row i form(i, col, val) appends to col and val (columns
/// ascending), each row formed once: every thread into buffers of its own (rows taken 256 at a
/// time), then copied into place (a counting pass first would form every row twice).
template <class Form>
Csr<double> rows_formed_once(index_t n, index_t cols, Form&& form)
{
    std::vector<offset_t> cnt(static_cast<std::size_t>(n)), at(static_cast<std::size_t>(n));
    std::vector<int> owner(static_cast<std::size_t>(n));
    std::vector<std::vector<index_t>> tcol(static_cast<std::size_t>(omp_get_max_threads()));
    std::vector<std::vector<double>> tval(tcol.size());
#pragma omp parallel
    {
        const int t = omp_get_thread_num();
        std::vector<index_t>& col = tcol[static_cast<std::size_t>(t)];
        std::vector<double>& val = tval[static_cast<std::size_t>(t)];
#pragma omp for schedule(dynamic, 256)
        for (index_t i = 0; i < n; ++i) {
            const std::size_t base = col.size();
            form(i, col, val);
            owner[i] = t;
            at[i] = offset_t(base);
            cnt[i] = offset_t(col.size() - base);
        }
    }
    std::vector<offset_t> ptr = prefix(cnt);
    std::vector<index_t> col(static_cast<std::size_t>(ptr.back()));
    std::vector<double> val(static_cast<std::size_t>(ptr.back()));
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i) {
        const std::size_t t = static_cast<std::size_t>(owner[i]);
        std::copy_n(tcol[t].begin() + std::ptrdiff_t(at[i]), cnt[i], col.begin() + ptr[i]);
        std::copy_n(tval[t].begin() + std::ptrdiff_t(at[i]), cnt[i], val.begin() + ptr[i]);
    }
    return host_csr(n, cols, std::move(ptr), std::move(col), std::move(val));
}

}  // namespace

Strength strength(const Csr<double>& a, index_t nc, double theta)
{
    HEPTANE_ENSURE(a.rows == a.cols, InputError,
                   "AMG: the matrix is " << a.rows << " x " << a.cols << ", not square");
    HEPTANE_ENSURE(nc >= 1 && a.rows % nc == 0, InputError,
                   "AMG: block size " << nc << " does not divide the " << a.rows << " rows");
    const index_t nodes = a.rows / nc;
    const offset_t* rp = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    const double* v = a.values.data();
    Strength s;
    s.nodes = nodes;
    s.keep.assign(std::size_t(a.nnz()), 0);
    if (nc == 1) {  // scalar: the rows are the nodes, sorted already
        std::vector<double> d(static_cast<std::size_t>(nodes), 0.0);
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < nodes; ++i)
            for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
                if (ci[k] == i) d[i] += std::abs(v[k]);
        std::vector<offset_t> cnt(static_cast<std::size_t>(nodes));
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < nodes; ++i) {
            offset_t m = 0;
            for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
                const index_t j = ci[k];
                const double x = std::abs(v[k]);
                const bool strong =
                    j == i ||
                    (x > 0 && x > theta * std::sqrt(d[i] * d[static_cast<std::size_t>(j)]));
                s.keep[k] = strong ? 1 : 0;
                if (strong && j != i) ++m;
            }
            cnt[i] = m;
        }
        s.ptr = prefix(cnt);
        s.adj.resize(static_cast<std::size_t>(s.ptr.back()));
        s.weight.resize(static_cast<std::size_t>(s.ptr.back()));
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < nodes; ++i) {
            offset_t q = s.ptr[i];
            for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
                const index_t j = ci[k];
                if (j == i || !s.keep[k]) continue;
                const double ref = std::sqrt(d[i] * d[static_cast<std::size_t>(j)]);
                s.adj[q] = j;
                s.weight[q] = ref > 0 ? std::abs(v[k]) / ref : std::numeric_limits<double>::max();
                ++q;
            }
        }
        return s;
    }

    // the node couplings: block Frobenius norms (|a_ij| for Nc = 1), per node a short list
    // of (neighbour, norm²) gathered from the node's Nc rows
    std::vector<double> diag(static_cast<std::size_t>(nodes), 0.0);
    std::vector<offset_t> count(static_cast<std::size_t>(nodes), 0);
    // node I's blocks: at most the entries of its rows
    std::vector<offset_t> tmp_ptr(std::size_t(nodes) + 1);
    for (index_t i = 0; i <= nodes; ++i) tmp_ptr[i] = rp[std::size_t(i) * nc];
    std::vector<index_t> tmp_col(std::size_t(a.nnz()));
    std::vector<double> tmp_norm(std::size_t(a.nnz()));
#pragma omp parallel for schedule(static)
    for (index_t node = 0; node < nodes; ++node) {
        const offset_t base = tmp_ptr[node];
        offset_t len = 0;
        for (index_t r = node * nc; r < (node + 1) * nc; ++r) {
            for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
                const index_t j = ci[k] / nc;
                const double x = v[k] * v[k];
                offset_t q = 0;
                while (q < len && tmp_col[base + q] != j) ++q;
                if (q == len) {
                    tmp_col[base + len] = j;
                    tmp_norm[base + len] = 0;
                    ++len;
                }
                tmp_norm[base + q] += x;
            }
        }
        for (offset_t q = 0; q < len; ++q)
            if (tmp_col[base + q] == node) diag[node] = std::sqrt(tmp_norm[base + q]);
        count[node] = len;
    }
    // strong pairs (|a_IJ| > θ sqrt(|a_II| |a_JJ|); a zero norm is never strong)
    std::vector<offset_t> strong_count(static_cast<std::size_t>(nodes), 0);
#pragma omp parallel for schedule(static)
    for (index_t node = 0; node < nodes; ++node) {
        const offset_t base = tmp_ptr[node];
        offset_t m = 0;
        for (offset_t q = 0; q < count[node]; ++q) {
            const index_t j = tmp_col[base + q];
            const double x = std::sqrt(tmp_norm[base + q]);
            const double ref = std::sqrt(diag[node] * diag[j]);
            if (j != node && x > 0 && x > theta * ref) {
                tmp_col[base + m] = j;
                tmp_norm[base + m] = ref > 0 ? x / ref : std::numeric_limits<double>::max();
                ++m;
            }
        }
        strong_count[node] = m;
    }
    s.ptr = prefix(strong_count);
    s.adj.resize(std::size_t(s.ptr.back()));
    s.weight.resize(std::size_t(s.ptr.back()));
#pragma omp parallel for schedule(static)
    for (index_t node = 0; node < nodes; ++node) {
        const offset_t base = tmp_ptr[node];
        // sorted by neighbour (the rows were sorted, but Nc rows interleave)
        thread_local std::vector<std::pair<index_t, double>> e;
        e.clear();
        for (offset_t q = 0; q < strong_count[node]; ++q)
            e.emplace_back(tmp_col[base + q], tmp_norm[base + q]);
        std::sort(e.begin(), e.end());
        for (std::size_t q = 0; q < e.size(); ++q) {
            s.adj[s.ptr[node] + offset_t(q)] = e[q].first;
            s.weight[s.ptr[node] + offset_t(q)] = e[q].second;
        }
        // entries to keep in the filtered matrix
        for (index_t r = node * nc; r < (node + 1) * nc; ++r)
            for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
                const index_t j = ci[k] / nc;
                const bool strong =
                    j == node || std::binary_search(s.adj.begin() + s.ptr[node],
                                                    s.adj.begin() + s.ptr[node + 1], j);
                s.keep[k] = strong ? 1 : 0;
            }
    }
    return s;
}

Aggregates aggregate(const Strength& s)
{
    // Synchronous rounds (the CUDA setup runs the same ones, amg_device.cu): every round reads
    // only the previous round's states, so the result does not depend on the thread count
    const index_t n = s.nodes;
    std::vector<std::uint8_t> state(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i)
        state[i] = s.ptr[i] == s.ptr[i + 1] ? mis_out : mis_undecided;  // isolated: out
    std::vector<std::uint64_t> key(static_cast<std::size_t>(n)), m1(static_cast<std::size_t>(n));
    for (long long undecided = 1; undecided > 0;) {
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < n; ++i) key[i] = mis_key(state[i], i);
#pragma omp parallel for schedule(static)
        for (index_t i = 0; i < n; ++i) {
            std::uint64_t m = key[i];
            for (offset_t k = s.ptr[i]; k < s.ptr[i + 1]; ++k) m = std::max(m, key[s.adj[k]]);
            m1[i] = m;
        }
        undecided = 0;
#pragma omp parallel for schedule(static) reduction(+ : undecided)
        for (index_t i = 0; i < n; ++i) {
            if (state[i] != mis_undecided) continue;
            std::uint64_t m = m1[i];
            for (offset_t k = s.ptr[i]; k < s.ptr[i + 1]; ++k) m = std::max(m, m1[s.adj[k]]);
            state[i] = mis_next_state(m, key[i]);
            if (state[i] == mis_undecided) ++undecided;
        }
    }
    Aggregates g;
    g.of_node.assign(static_cast<std::size_t>(n), -1);
    auto& id = g.of_node;
    for (index_t i = 0; i < n; ++i)  // the roots, numbered in node order
        if (state[i] == mis_root) id[i] = g.count++;
    // every neighbour of a root joins it (a node has at most one root neighbour in a
    // symmetric graph; otherwise the strongest, the first in its row on ties)
    std::vector<index_t> next = id;
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i)
        if (state[i] != mis_root)
            next[i] =
                strongest_aggregated(s.ptr.data(), s.adj.data(), s.weight.data(), i, id.data());
    id.swap(next);
    // the rest (at distance 2 from a root) join their strongest aggregated neighbour; repeated
    // while that changes anything (once for a symmetric graph)
    for (bool changed = true; changed;) {
        changed = false;
        next = id;
#pragma omp parallel for schedule(static) reduction(|| : changed)
        for (index_t i = 0; i < n; ++i) {
            if (id[i] >= 0 || s.ptr[i] == s.ptr[i + 1]) continue;
            next[i] =
                strongest_aggregated(s.ptr.data(), s.adj.data(), s.weight.data(), i, id.data());
            if (next[i] >= 0) changed = true;
        }
        id.swap(next);
    }
    // none left with a symmetric graph; in any case a coupled node ends in an aggregate
    for (index_t i = 0; i < n; ++i)
        if (id[i] < 0 && s.ptr[i] < s.ptr[i + 1]) id[i] = g.count++;
    return g;
}

std::array<double, 3> axis_strength(const Csr<double>& a, const Grid& g)
{
    const index_t n = a.rows, nx = g[0], ny = g[1];
    const offset_t* rp = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    const double* v = a.values.data();
    std::vector<double> d(static_cast<std::size_t>(n), 0.0);
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
            if (ci[k] == i) d[std::size_t(i)] = std::abs(v[k]);
    double s0 = 0, s1 = 0, s2 = 0, c0 = 0, c1 = 0, c2 = 0;
#pragma omp parallel for schedule(static) reduction(+ : s0, s1, s2, c0, c1, c2)
    for (index_t i = 0; i < n; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            const index_t j = ci[k];
            const int axis = j == i ? -1 : grid_axis(i, j, nx, ny);
            if (axis < 0) continue;
            const double dd = d[std::size_t(i)] * d[std::size_t(j)];
            const double w = dd > 0 ? std::abs(v[k]) / std::sqrt(dd) : 0.0;
            if (axis == 0) {
                s0 += w;
                c0 += 1;
            } else if (axis == 1) {
                s1 += w;
                c1 += 1;
            } else {
                s2 += w;
                c2 += 1;
            }
        }
    return {c0 > 0 ? s0 / c0 : 0.0, c1 > 0 ? s1 / c1 : 0.0, c2 > 0 ? s2 / c2 : 0.0};
}

Aggregates box_aggregate(const Grid& g, const Grid& step)
{
    const Grid c = box_coarse_grid(g, step);
    const index_t n = g[0] * g[1] * g[2];
    Aggregates out;
    out.count = c[0] * c[1] * c[2];
    out.of_node.resize(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i)
        out.of_node[std::size_t(i)] =
            box_of(i, g[0], g[1], step[0], step[1], step[2], c[0], c[1], c[2]);
    return out;
}

std::uint32_t box_stencil(const Csr<double>& a, const BoxMap& m)
{
    const index_t n = a.rows;
    const offset_t* rp = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    std::uint32_t mask = 1u << box_self;
#pragma omp parallel for schedule(static) reduction(| : mask)
    for (index_t i = 0; i < n; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            const int q = m.code(i, ci[k]);
            mask |= q < 0 ? box_wide : 1u << q;
        }
    return mask;
}

Csr<double> box_galerkin(const Csr<double>& a, const BoxMap& m, std::uint32_t mask)
{
    HEPTANE_ENSURE(!(mask & box_wide), InputError,
                   "AMG box Galerkin product: a coupling is not between neighbouring boxes");
    const index_t nc = m.cx * m.cy * m.cz;
    std::vector<offset_t> counts(static_cast<std::size_t>(nc), 0);
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < nc; ++r)
        for (int q = 0; q < 27; ++q)
            if ((mask >> q & 1u) && m.column(r, q) >= 0) ++counts[std::size_t(r)];
    std::vector<offset_t> ptr = prefix(counts);
    std::vector<index_t> col(static_cast<std::size_t>(ptr.back()));
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < nc; ++r) {
        offset_t k = ptr[std::size_t(r)];
        for (int q = 0; q < 27; ++q) {
            const index_t j = (mask >> q & 1u) ? m.column(r, q) : -1;
            if (j >= 0) col[std::size_t(k++)] = j;
        }
    }
    std::vector<double> val(col.size(), 0.0);
    Csr<double> c = host_csr(nc, nc, std::move(ptr), std::move(col), std::move(val));
    box_galerkin_numeric(a, m, c);
    return c;
}

void box_galerkin_numeric(const Csr<double>& a, const BoxMap& m, Csr<double>& c)
{
    const index_t nc = m.cx * m.cy * m.cz;
    HEPTANE_ENSURE(a.rows == m.nx * m.ny * m.nz && c.rows == nc, InputError,
                   "AMG box Galerkin product: the matrices do not fit the grids");
    const offset_t* rp = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    const double* v = a.values.data();
    const offset_t* cp = c.row_ptr.data();
    const index_t* cc = c.col_idx.data();
    double* cv = c.values.data();
    int outside = 0;
#pragma omp parallel for schedule(static) reduction(max : outside)
    for (index_t r = 0; r < nc; ++r) {
        double acc[27];
        if (!m.sum_row(r, rp, ci, v, acc)) outside = 1;
        std::uint32_t stored = 0;
        for (offset_t k = cp[r]; k < cp[r + 1]; ++k) {
            const int q = m.coarse_code(r, cc[k]);
            if (q < 0 || q >= 27) {  // not a neighbouring box: not box_galerkin's pattern
                outside = 1;
                continue;
            }
            cv[k] = acc[q];
            stored |= 1u << q;
        }
        for (int q = 0; q < 27; ++q)
            if (!(stored >> q & 1u) && acc[q] != 0) outside = 1;
    }
    HEPTANE_ENSURE(!outside, InputError,
                   "AMG box Galerkin product: a coupling falls outside the coarse pattern");
}

Grid find_grid(const Csr<double>& a)
{
    if (a.rows != a.cols || a.rows == 0 || a.nnz() >= std::numeric_limits<index_t>::max())
        return {0, 0, 0};
    std::vector<index_t> rp(static_cast<std::size_t>(a.rows) + 1);
    const offset_t* src = a.row_ptr.data();
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i <= a.rows; ++i) rp[std::size_t(i)] = index_t(src[i]);
    CsrView view;
    view.rows = a.rows;
    view.row_ptr = rp.data();
    view.col_idx = a.col_idx.data();
    view.values = a.values.data();
    DetectOptions opt;
    opt.max_block_size = 1;
    opt.max_sparse_block_size = 1;
    const Structure st = detect_structure(view, opt);
    if (!st.hepta || st.block_size != 1 || st.grid_dims < 1) return {0, 0, 0};
    return {st.grid[0], st.grid[1], st.grid[2]};
}

Csr<double> prolongator(const Csr<double>& a, index_t nc, const Strength& s, const Aggregates& agg,
                        double weight)
{
    const index_t n = a.rows;
    const offset_t* rp = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    const double* v = a.values.data();
    const index_t cols = agg.count * nc;
    auto tcol = [&](index_t j) -> index_t {  // column of T's one in row j, or -1
        const index_t g = agg.of_node[std::size_t(j / nc)];
        return g < 0 ? -1 : g * nc + j % nc;
    };
    if (weight == 0) {
        std::vector<offset_t> cnt(static_cast<std::size_t>(n));
        for (index_t i = 0; i < n; ++i) cnt[i] = tcol(i) >= 0 ? 1 : 0;
        std::vector<offset_t> ptr = prefix(cnt);
        std::vector<index_t> col(std::size_t(ptr.back()));
        std::vector<double> val(std::size_t(ptr.back()), 1.0);
        for (index_t i = 0; i < n; ++i)
            if (cnt[i]) col[ptr[i]] = tcol(i);
        return host_csr(n, cols, std::move(ptr), std::move(col), std::move(val));
    }
    // filtered diagonal d_F = a_ii + Σ weak a_ij, and the Gershgorin bound of D_F⁻¹ A_F
    std::vector<double> dF(static_cast<std::size_t>(n));
    double rho = 0;
#pragma omp parallel for schedule(static) reduction(max : rho)
    for (index_t i = 0; i < n; ++i) {
        double d = 0, off = 0;
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            if (ci[k] == i)
                d += v[k];
            else if (!s.keep[k])
                d += v[k];
            else
                off += std::abs(v[k]);
        }
        dF[i] = d;
        if (d != 0) rho = std::max(rho, 1.0 + off / std::abs(d));
    }
    const double omega = rho > 0 ? weight / rho : 0.0;
    // P row i = T row i − ω/d_F Σ_{kept j} a_F_ij T row j, built twice (count, then fill)
    // with a small buffer per thread instead of a scratch array of A's size: a row is cheap to
    // build, and rows_formed_once's buffers cost more here than the second pass (measured:
    // P 204 -> 327 ms at 1 M rows on 2 threads)
    auto build_row = [&](index_t i, std::vector<std::pair<index_t, double>>& e) {
        e.clear();
        const index_t ti = tcol(i);
        if (ti >= 0) e.emplace_back(ti, 1.0);
        if (dF[i] != 0) {
            const double f = omega / dF[i];
            for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
                const index_t j = ci[k];
                if (j != i && !s.keep[k]) continue;
                const index_t tj = tcol(j);
                if (tj < 0) continue;
                e.emplace_back(tj, -f * (j == i ? dF[i] : v[k]));
            }
        }
        // merge equal columns in the order the entries come (the CUDA setup sums in the same
        // order), drop exact zeros (cancellation), then sort the distinct columns
        std::size_t m = 0;
        for (std::size_t q = 0; q < e.size(); ++q) {
            std::size_t t = 0;
            while (t < m && e[t].first != e[q].first) ++t;
            if (t < m)
                e[t].second += e[q].second;
            else
                e[m++] = e[q];
        }
        std::size_t w = 0;
        for (std::size_t q = 0; q < m; ++q)
            if (e[q].second != 0) e[w++] = e[q];
        std::sort(e.begin(), e.begin() + std::ptrdiff_t(w),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        e.resize(w);
    };
    std::vector<offset_t> cnt(static_cast<std::size_t>(n));
#pragma omp parallel
    {
        std::vector<std::pair<index_t, double>> e;
#pragma omp for schedule(static)
        for (index_t i = 0; i < n; ++i) {
            build_row(i, e);
            cnt[i] = offset_t(e.size());
        }
    }
    std::vector<offset_t> ptr = prefix(cnt);
    std::vector<index_t> col(static_cast<std::size_t>(ptr.back()));
    std::vector<double> val(static_cast<std::size_t>(ptr.back()));
#pragma omp parallel
    {
        std::vector<std::pair<index_t, double>> e;
#pragma omp for schedule(static)
        for (index_t i = 0; i < n; ++i) {
            build_row(i, e);
            for (std::size_t q = 0; q < e.size(); ++q) {
                col[ptr[i] + offset_t(q)] = e[q].first;
                val[ptr[i] + offset_t(q)] = e[q].second;
            }
        }
    }
    return host_csr(n, cols, std::move(ptr), std::move(col), std::move(val));
}

namespace {

/// R·A·P row by row, term by term (the Galerkin product's symbolic pass, its first numeric
/// pass and the values refresh walk the same triple loop).
struct RapRows {
    RapRows(const Csr<double>& r, const Csr<double>& a, const Csr<double>& p)
        : rp(r.row_ptr.data()),
          ap(a.row_ptr.data()),
          pp(p.row_ptr.data()),
          rc(r.col_idx.data()),
          ac(a.col_idx.data()),
          pc(p.col_idx.data()),
          rv(r.values.data()),
          av(a.values.data()),
          pv(p.values.data())
    {
    }
    /// visit(l, v) for every term v = r_ij a_jk p_kl of row i (a column l may come many times)
    template <class Visit>
    void row(index_t i, Visit&& visit) const
    {
        for (offset_t q = rp[i]; q < rp[i + 1]; ++q) {
            const index_t j = rc[q];
            for (offset_t t = ap[j]; t < ap[j + 1]; ++t) {
                const index_t k = ac[t];
                const double x = rv[q] * av[t];
                for (offset_t u = pp[k]; u < pp[k + 1]; ++u) visit(pc[u], x * pv[u]);
            }
        }
    }
    const offset_t *rp, *ap, *pp;
    const index_t *rc, *ac, *pc;
    const double *rv, *av, *pv;
};

}  // namespace

Csr<double> galerkin(const Csr<double>& r, const Csr<double>& a, const Csr<double>& p)
{
    // R A P row by row without forming A P: row I of the result sums r_Ij a_jk p_kl over the
    // entries of R's row I, A's rows j and P's rows k (a dense accumulator per thread over
    // the coarse columns). One pass: each thread forms its rows into buffers of its own, then
    // they are copied to their places (the triple loop is most of the work: a counting pass
    // before it would run it twice)
    HEPTANE_ENSURE(r.cols == a.rows && a.cols == p.rows, DimensionMismatch,
                   "galerkin: R " << r.rows << "x" << r.cols << ", A " << a.rows << "x" << a.cols
                                  << ", P " << p.rows << "x" << p.cols);
    const RapRows rap(r, a, p);
    std::vector<std::vector<index_t>> marks(static_cast<std::size_t>(omp_get_max_threads()));
    std::vector<std::vector<double>> accs(marks.size());
    return rows_formed_once(
        r.rows, p.cols, [&](index_t i, std::vector<index_t>& col, std::vector<double>& val) {
            const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
            std::vector<index_t>& mark = marks[t];
            std::vector<double>& acc = accs[t];
            if (mark.empty()) {
                mark.assign(static_cast<std::size_t>(p.cols), -1);
                acc.resize(static_cast<std::size_t>(p.cols));
            }
            const std::size_t base = col.size();
            rap.row(i, [&](index_t l, double v) {
                if (mark[l] != i) {
                    mark[l] = i;
                    acc[l] = 0;
                    col.push_back(l);
                }
                acc[l] += v;
            });
            std::sort(col.begin() + std::ptrdiff_t(base), col.end());
            for (std::size_t q = base; q < col.size(); ++q) val.push_back(acc[col[q]]);
        });
}

void galerkin_numeric(const Csr<double>& r, const Csr<double>& a, const Csr<double>& p,
                      Csr<double>& c)
{
    const index_t n = r.rows, m = p.cols;
    const RapRows rap(r, a, p);
    const offset_t* cp = c.row_ptr.data();
    const index_t* cc = c.col_idx.data();
    double* cv = c.values.data();
    int outside = 0;
#pragma omp parallel reduction(max : outside)
    {
        // acc[l] is zero outside the row being formed: set to zero over the row's pattern
        // after use; an entry off the pattern is caught by its mark
        std::vector<double> acc(static_cast<std::size_t>(m), 0.0);
        std::vector<index_t> mark(static_cast<std::size_t>(m), -1);
#pragma omp for schedule(dynamic, 256)
        for (index_t i = 0; i < n; ++i) {
            for (offset_t q = cp[i]; q < cp[i + 1]; ++q) mark[cc[q]] = i;
            rap.row(i, [&](index_t l, double v) {
                if (mark[l] != i) outside = 1;
                acc[l] += v;
            });
            for (offset_t q = cp[i]; q < cp[i + 1]; ++q) {
                cv[q] = acc[cc[q]];
                acc[cc[q]] = 0;
            }
        }
    }
    HEPTANE_ENSURE(!outside, InputError,
                   "AMG values refresh: a product falls outside the kept coarse pattern");
}

index_t generalized_inverse(const double* a, double* g, index_t n, double tol)
{
    const std::size_t nn = std::size_t(n);
    std::vector<double> lu(a, a + nn * nn);
    std::vector<index_t> prow(nn), pcol(nn);  // position k: original row / column
    for (index_t i = 0; i < n; ++i) prow[std::size_t(i)] = pcol[std::size_t(i)] = i;
    double scale = 0;
    for (std::size_t q = 0; q < nn * nn; ++q) scale = std::max(scale, std::abs(lu[q]));
    const double floor = tol * scale;
    auto at = [&](index_t i, index_t j) -> double& {
        return lu[std::size_t(i) * nn + std::size_t(j)];
    };
    index_t rank = 0;
    for (index_t k = 0; k < n; ++k) {
        // the largest diagonal entry of the trailing block, unless an entry off the diagonal
        // is 10x larger (threshold pivoting: a symmetric positive semidefinite block, whose
        // entries never exceed its largest diagonal but by rounding, pivots on its diagonal
        // throughout and G stays symmetric)
        index_t bi = k, bj = k;
        double best = -1;
        for (index_t i = k; i < n; ++i)
            if (std::abs(at(i, i)) > best) {
                best = std::abs(at(i, i));
                bi = bj = i;
            }
        double off = 10 * best;
        for (index_t i = k; i < n; ++i)
            for (index_t j = k; j < n; ++j)
                if (i != j && std::abs(at(i, j)) > off) {
                    off = std::abs(at(i, j));
                    best = off;
                    bi = i;
                    bj = j;
                }
        if (!(best > floor)) break;  // the rest is numerically zero (or NaN: stop too)
        if (bi != k) {
            for (index_t j = 0; j < n; ++j) std::swap(at(k, j), at(bi, j));
            std::swap(prow[std::size_t(k)], prow[std::size_t(bi)]);
        }
        if (bj != k) {
            for (index_t i = 0; i < n; ++i) std::swap(at(i, k), at(i, bj));
            std::swap(pcol[std::size_t(k)], pcol[std::size_t(bj)]);
        }
        const double piv = at(k, k);
        for (index_t i = k + 1; i < n; ++i) {
            const double l = at(i, k) / piv;
            at(i, k) = l;
            if (l != 0)
                for (index_t j = k + 1; j < n; ++j) at(i, j) -= l * at(k, j);
        }
        rank = k + 1;
    }
    // G = Q [M⁻¹ 0; 0 0] Pᵀ with M = L₁₁ U₁₁ the rank × rank pivot block: column b of M⁻¹
    // solves L y = e_b, U x = y
    std::fill(g, g + nn * nn, 0.0);
    std::vector<double> x(static_cast<std::size_t>(rank));
    for (index_t b = 0; b < rank; ++b) {
        for (index_t i = 0; i < rank; ++i) {
            double s = i == b ? 1.0 : 0.0;
            for (index_t j = 0; j < i; ++j) s -= at(i, j) * x[std::size_t(j)];
            x[std::size_t(i)] = s;
        }
        for (index_t i = rank - 1; i >= 0; --i) {
            double s = x[std::size_t(i)];
            for (index_t j = i + 1; j < rank; ++j) s -= at(i, j) * x[std::size_t(j)];
            x[std::size_t(i)] = s / at(i, i);
        }
        for (index_t i = 0; i < rank; ++i)
            g[std::size_t(pcol[std::size_t(i)]) * nn + std::size_t(prow[std::size_t(b)])] =
                x[std::size_t(i)];
    }
    return rank;
}

std::vector<double> dense_inverse(const Csr<double>& a, int level, bool singular, index_t* rank)
{
    const index_t n = a.rows;
    std::vector<double> d(std::size_t(n) * n, 0.0), inv(std::size_t(n) * n);
    for (index_t i = 0; i < n; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            d[std::size_t(i) * n + a.col_idx[k]] += a.values[k];
    if (singular) {
        // pivots below 1e-11 of the largest entry: a rounding-sized remainder of a singular
        // operator (a pure-Neumann Galerkin operator's last pivot is ~1e-14 of it here)
        const index_t r = generalized_inverse(d.data(), inv.data(), n, 1e-11);
        if (rank) *rank = r;
        return inv;
    }
    if (rank) *rank = n;
    const detail::PivotFailure f = detail::invert_block(d.data(), inv.data(), n);
    HEPTANE_ENSURE(!f.singular, SingularError,
                   "AMG: the coarsest level (level " << level + 1 << ", " << n
                                                     << " rows) is singular: pivot " << f.step + 1
                                                     << " is " << f.pivot
                                                     << " (is the matrix singular, e.g. a "
                                                        "pressure system with no fixed "
                                                        "pressure, well or accumulation "
                                                        "term? If it is singular by design, "
                                                        "declare its null space: PETSc's "
                                                        "MatSetNullSpace, the CLI's "
                                                        "--null-space constant)");
    return inv;
}

std::vector<double> inverse_diagonal(const Csr<double>& a, bool l1, int level)
{
    const index_t n = a.rows;
    std::vector<double> d(static_cast<std::size_t>(n));
    index_t bad = -1;
#pragma omp parallel for schedule(static) reduction(max : bad)
    for (index_t i = 0; i < n; ++i) {
        double diag = 0, sum = 0;
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
            if (a.col_idx[k] == i)
                diag += a.values[k];
            else
                sum += std::abs(a.values[k]);
        }
        const double x = l1 ? std::abs(diag) + sum : diag;
        if (x == 0 || !std::isfinite(x)) {
            bad = std::max(bad, i);
            d[i] = 0;
        } else {
            d[i] = 1.0 / x;
        }
    }
    if (bad >= 0) {
        index_t first = 0;  // report the first zero row
        for (; first < n; ++first) {
            double diag = 0;
            for (offset_t k = a.row_ptr[first]; k < a.row_ptr[first + 1]; ++k)
                if (a.col_idx[k] == first) diag += a.values[k];
            if (diag == 0 || !std::isfinite(diag)) break;
        }
        HEPTANE_THROW(SingularError,
                      "AMG: level "
                          << level + 1 << " has a zero diagonal entry in row " << first + 1
                          << (level == 0 ? " of the matrix" : "")
                          << " (its smoother divides by a_ii"
                          << (level > 0
                                  ? "; a Galerkin product gave it: for a coupled system, CPR (--pc "
                                    "cpr, -pc_type hcpr) applies AMG to the pressure alone"
                                  : "")
                          << ")");
    }
    return d;
}

}  // namespace heptane::amg
