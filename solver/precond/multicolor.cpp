// Multi-colour ordering for ILU(0)/BILU(0) on the host (internal; see block_utils.hpp).
//
// Why: the natural-order triangular solves of ILU(0) on a J×H×I 7-point grid have
// J+H+I−2 wavefront levels per triangle, one GPU launch each. After a multi-colour
// permutation no two block rows of one colour are coupled, so every block row of a colour
// depends only on rows of earlier colours (lower solve) or later colours (upper solve):
// one launch per colour per triangle (2 + 2 for the red-black colouring of 7-point grids).
// The price is a weaker factorisation (ILU(0) of P A Pᵀ drops different fill), so more
// iterations; docs/design.md §3 and preconditioner.hpp say when each is used.
#include <algorithm>

#include "core/error.hpp"
#include "solver/precond/block_utils.hpp"

namespace heptane::detail {

MulticolorOrdering multicolor_ordering(const BlockCsrHost& a)
{
    const index_t nb = a.nb;
    // the pattern of A + Aᵀ without the diagonal: a structurally nonsymmetric A couples
    // row i to j through either a_ij or a_ji, and both directions must see another colour
    std::vector<offset_t> tptr(std::size_t(nb) + 1, 0);
    for (index_t i = 0; i < nb; ++i)
        for (offset_t q = a.ptr[std::size_t(i)]; q < a.ptr[std::size_t(i) + 1]; ++q)
            ++tptr[std::size_t(a.col[std::size_t(q)]) + 1];
    for (index_t i = 0; i < nb; ++i) tptr[std::size_t(i) + 1] += tptr[std::size_t(i)];
    std::vector<index_t> tcol(static_cast<std::size_t>(tptr[std::size_t(nb)]));
    {
        std::vector<offset_t> next(tptr.begin(), tptr.end() - 1);
        for (index_t i = 0; i < nb; ++i)
            for (offset_t q = a.ptr[std::size_t(i)]; q < a.ptr[std::size_t(i) + 1]; ++q)
                tcol[std::size_t(next[std::size_t(a.col[std::size_t(q)])]++)] = i;
    }

    MulticolorOrdering o;
    o.color.assign(std::size_t(nb), -1);
    auto for_neighbours = [&](index_t i, auto&& f) {
        for (offset_t q = a.ptr[std::size_t(i)]; q < a.ptr[std::size_t(i) + 1]; ++q)
            if (a.col[std::size_t(q)] != i) f(a.col[std::size_t(q)]);
        for (offset_t q = tptr[std::size_t(i)]; q < tptr[std::size_t(i) + 1]; ++q)
            if (tcol[std::size_t(q)] != i) f(tcol[std::size_t(q)]);
    };

    // First try two colours (breadth-first from the lowest unvisited row, which is red):
    // a bipartite graph whose rows are not numbered in a parity order (e.g. saylr4,
    // sherman4) gets 3–4 colours from the greedy pass below, and fewer colours mean fewer
    // launches and larger ones.
    bool bipartite = true;
    std::vector<index_t> queue;
    queue.reserve(std::size_t(nb));
    for (index_t root = 0; root < nb && bipartite; ++root) {
        if (o.color[std::size_t(root)] >= 0) continue;
        o.color[std::size_t(root)] = 0;
        queue.clear();
        queue.push_back(root);
        for (std::size_t h = 0; h < queue.size() && bipartite; ++h) {
            const index_t i = queue[h];
            const index_t other = 1 - o.color[std::size_t(i)];
            for_neighbours(i, [&](index_t j) {
                index_t& cj = o.color[std::size_t(j)];
                if (cj < 0) {
                    cj = other;
                    queue.push_back(j);
                } else if (cj != other) {
                    bipartite = false;
                }
            });
        }
    }
    if (bipartite) {
        o.colors = nb > 0 ? 1 : 0;
        for (index_t c : o.color) o.colors = std::max(o.colors, c + 1);
    } else {
        // greedy in natural order: the smallest colour no coloured neighbour has
        o.color.assign(std::size_t(nb), -1);
        o.colors = 0;
        std::vector<index_t> seen;  // seen[k] == i: colour k is taken by a neighbour of i
        for (index_t i = 0; i < nb; ++i) {
            for_neighbours(i, [&](index_t j) {
                const index_t k = o.color[std::size_t(j)];
                if (k < 0) return;
                if (std::size_t(k) >= seen.size()) seen.resize(std::size_t(k) + 1, -1);
                seen[std::size_t(k)] = i;
            });
            index_t k = 0;
            while (std::size_t(k) < seen.size() && seen[std::size_t(k)] == i) ++k;
            o.color[std::size_t(i)] = k;
            o.colors = std::max(o.colors, k + 1);
        }
    }

    // block rows of a colour contiguous, natural order inside a colour
    o.color_ptr.assign(std::size_t(o.colors) + 1, 0);
    for (index_t i = 0; i < nb; ++i) ++o.color_ptr[std::size_t(o.color[std::size_t(i)]) + 1];
    for (index_t k = 0; k < o.colors; ++k)
        o.color_ptr[std::size_t(k) + 1] += o.color_ptr[std::size_t(k)];
    o.perm.resize(std::size_t(nb));
    std::vector<index_t> next(o.color_ptr.begin(), o.color_ptr.end() - 1);
    for (index_t i = 0; i < nb; ++i)
        o.perm[std::size_t(next[std::size_t(o.color[std::size_t(i)])]++)] = i;
    return o;
}

BlockCsrHost permute_pattern(const BlockCsrHost& a, const std::vector<index_t>& perm,
                             std::vector<offset_t>& src)
{
    const index_t nb = a.nb;
    HEPTANE_ENSURE(perm.size() == std::size_t(nb), InputError,
                   "permute_symmetric: " << perm.size() << " entries for " << nb << " block rows");
    std::vector<index_t> inv(std::size_t(nb), -1);
    for (index_t i = 0; i < nb; ++i) inv[std::size_t(perm[std::size_t(i)])] = i;
    BlockCsrHost p;
    p.nb = nb;
    p.nc = a.nc;
    p.ptr.assign(std::size_t(nb) + 1, 0);
    for (index_t i = 0; i < nb; ++i) {
        const index_t old = perm[std::size_t(i)];
        p.ptr[std::size_t(i) + 1] =
            p.ptr[std::size_t(i)] + (a.ptr[std::size_t(old) + 1] - a.ptr[std::size_t(old)]);
    }
    p.col.resize(a.col.size());
    p.diag.assign(std::size_t(nb), -1);
    src.resize(a.col.size());
#pragma omp parallel for schedule(static) if (nb > 4096)
    for (index_t i = 0; i < nb; ++i) {
        const index_t old = perm[std::size_t(i)];
        const offset_t base = p.ptr[std::size_t(i)];
        index_t* col = p.col.data() + base;
        offset_t* from = src.data() + base;
        index_t len = 0;
        // the new columns sorted by insertion (a block row holds a few dozen blocks)
        for (offset_t q = a.ptr[std::size_t(old)]; q < a.ptr[std::size_t(old) + 1]; ++q, ++len) {
            const index_t j = inv[std::size_t(a.col[std::size_t(q)])];
            index_t at = len;
            for (; at > 0 && col[at - 1] > j; --at) {
                col[at] = col[at - 1];
                from[at] = from[at - 1];
            }
            col[at] = j;
            from[at] = q;
        }
        for (index_t x = 0; x < len; ++x)
            if (col[x] == i) p.diag[std::size_t(i)] = base + x;
    }
    return p;
}

BlockCsrHost permute_symmetric(const BlockCsrHost& a, const std::vector<index_t>& perm)
{
    std::vector<offset_t> src;
    BlockCsrHost p = permute_pattern(a, perm, src);
    const std::size_t nc2 = std::size_t(a.nc) * std::size_t(a.nc);
    p.val.resize(a.val.size());
    for (std::size_t q = 0; q < src.size(); ++q)
        std::copy(a.val.begin() + std::ptrdiff_t(std::size_t(src[q]) * nc2),
                  a.val.begin() + std::ptrdiff_t(std::size_t(src[q] + 1) * nc2),
                  p.val.begin() + std::ptrdiff_t(q * nc2));
    return p;
}

}  // namespace heptane::detail
