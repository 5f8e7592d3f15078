// The distributed symmetry check (symmetry.hpp).
#include "distributed/symmetry.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace heptane::dist {

SymmetryCheck check_symmetry(MPI_Comm comm, const SplitRows& rows, index_t row_begin, double tol)
{
    int ranks = 1, rank = 0;
    MPI_Comm_size(comm, &ranks);
    MPI_Comm_rank(comm, &rank);
    const index_t n = rows.diag.rows;
    std::vector<long long> starts(std::size_t(ranks) + 1, 0);
    {
        long long mine = n;
        MPI_Allgather(&mine, 1, MPI_LONG_LONG, starts.data() + 1, 1, MPI_LONG_LONG, comm);
        for (int p = 0; p < ranks; ++p) starts[std::size_t(p) + 1] += starts[std::size_t(p)];
    }
    // the diagonal block on its own, in global indices
    SymmetryCheck best = n > 0 ? heptane::check_symmetry(rows.diag, tol) : SymmetryCheck{};
    if (!best.symmetric) {
        best.i += row_begin;
        best.j += row_begin;
    }
    auto consider = [&](index_t i, index_t j, double v, double t) {
        const double d = std::fabs(v - t), sc = std::max(std::fabs(v), std::fabs(t));
        if (d > tol * sc &&
            (best.symmetric || d / sc > best.worst ||
             (d / sc == best.worst && (i < best.i || (i == best.i && j < best.j))))) {
            best.symmetric = false;
            best.worst = d / sc;
            best.i = i;
            best.j = j;
            best.aij = v;
            best.aji = t;
        }
    };
    // every off-rank entry (global row, global column, value) to the owner of its column
    const bool has_off = n > 0 && rows.off.row_ptr && rows.off.nnz() > 0;
    auto global_col = [&](offset_t k) {
        return rows.off_cols ? rows.off_cols[rows.off.col_idx[k]] : rows.off.col_idx[k];
    };
    std::vector<int> send_n(std::size_t(ranks), 0), recv_n(std::size_t(ranks), 0);
    int bad = 0;
    auto owner = [&](index_t g) {
        return int(std::upper_bound(starts.begin(), starts.end(), (long long)g) - starts.begin()) -
               1;
    };
    if (has_off)
        for (offset_t k = 0; k < rows.off.nnz(); ++k) {
            const index_t g = global_col(k);
            if (g < 0 || g >= starts.back() || owner(g) == rank) {
                bad = 1;
                continue;
            }
            ++send_n[std::size_t(owner(g))];
        }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "symmetry check: an off-rank column outside the matrix or inside the rank's "
                   "own rows");
    MPI_Alltoall(send_n.data(), 1, MPI_INT, recv_n.data(), 1, MPI_INT, comm);
    std::vector<int> sd(std::size_t(ranks) + 1, 0), rd(std::size_t(ranks) + 1, 0);
    for (int p = 0; p < ranks; ++p) {
        sd[std::size_t(p) + 1] = sd[std::size_t(p)] + send_n[std::size_t(p)];
        rd[std::size_t(p) + 1] = rd[std::size_t(p)] + recv_n[std::size_t(p)];
    }
    std::vector<int> out_idx(2 * std::size_t(sd.back())), in_idx(2 * std::size_t(rd.back()));
    std::vector<double> out_val(std::size_t(sd.back())), in_val(std::size_t(rd.back()));
    {
        std::vector<int> at(sd.begin(), sd.end() - 1);
        if (has_off)
            for (index_t i = 0; i < n; ++i)
                for (index_t k = rows.off.row_ptr[i]; k < rows.off.row_ptr[i + 1]; ++k) {
                    const index_t g = global_col(k);
                    const int q = at[std::size_t(owner(g))]++;
                    out_idx[2 * std::size_t(q)] = g;
                    out_idx[2 * std::size_t(q) + 1] = row_begin + i;
                    out_val[std::size_t(q)] = rows.off.values[k];
                }
    }
    {
        const std::size_t np = static_cast<std::size_t>(ranks);
        std::vector<int> s2(np), d2(np), r2(np), e2(np);
        for (int p = 0; p < ranks; ++p) {
            s2[std::size_t(p)] = 2 * send_n[std::size_t(p)];
            d2[std::size_t(p)] = 2 * sd[std::size_t(p)];
            r2[std::size_t(p)] = 2 * recv_n[std::size_t(p)];
            e2[std::size_t(p)] = 2 * rd[std::size_t(p)];
        }
        MPI_Alltoallv(out_idx.data(), s2.data(), d2.data(), MPI_INT, in_idx.data(), r2.data(),
                      e2.data(), MPI_INT, comm);
        MPI_Alltoallv(out_val.data(), send_n.data(), sd.data(), MPI_DOUBLE, in_val.data(),
                      recv_n.data(), rd.data(), MPI_DOUBLE, comm);
    }
    // a(i, j) from rank p (j ours) against our a(j, i): i is off-rank for us
    for (int q = 0; q < rd.back(); ++q) {
        const index_t j = in_idx[2 * std::size_t(q)], i = in_idx[2 * std::size_t(q) + 1];
        const index_t r = j - row_begin;
        double t = 0;
        if (has_off && r >= 0 && r < n)
            for (index_t k = rows.off.row_ptr[r]; k < rows.off.row_ptr[r + 1]; ++k)
                if (global_col(k) == i) t += rows.off.values[k];
        consider(i, j, in_val[std::size_t(q)], t);
    }
    // the worst over the ranks (the lowest rank on ties), then its pair from that rank
    struct {
        double worst;
        int rank;
    } me{best.symmetric ? -1.0 : best.worst, rank}, top{};
    MPI_Allreduce(&me, &top, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    if (top.worst < 0) return SymmetryCheck{};
    double pair[4] = {double(best.i), double(best.j), best.aij, best.aji};
    MPI_Bcast(pair, 4, MPI_DOUBLE, top.rank, comm);
    SymmetryCheck s;
    s.symmetric = false;
    s.worst = top.worst;
    s.i = index_t(pair[0]);
    s.j = index_t(pair[1]);
    s.aij = pair[2];
    s.aji = pair[3];
    return s;
}

}  // namespace heptane::dist
