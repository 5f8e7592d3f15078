// The global coarse correction (coarse_space.hpp): aggregation, the coarse matrix over the
// ranks, its dense LU, and the two-level application.
#include "distributed/coarse_space.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <sstream>

#include "core/error.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::dist {

namespace {

/// Aggregates of about `size` block rows each, grown breadth-first over the block graph of
/// the diagonal block from the first unassigned block row; a last piece of fewer than size/2
/// joins a neighbouring aggregate. Returns the number of aggregates.
index_t grow_aggregates(const CsrView& d, index_t nc, index_t size, std::vector<index_t>& agg)
{
    const index_t nb = d.rows / nc;
    agg.assign(std::size_t(nb), -1);
    std::vector<index_t> members;  // of the aggregate being grown
    std::deque<index_t> queue;
    index_t count = 0;
    auto neighbours = [&](index_t b, auto&& f) {
        for (index_t r = b * nc; r < (b + 1) * nc; ++r)
            for (index_t k = d.row_ptr[r]; k < d.row_ptr[r + 1]; ++k) {
                const index_t c = d.col_idx[k] / nc;
                if (c >= 0 && c < nb && c != b) f(c);
            }
    };
    for (index_t seed = 0; seed < nb; ++seed) {
        if (agg[std::size_t(seed)] >= 0) continue;
        members.assign(1, seed);
        agg[std::size_t(seed)] = count;
        queue.assign(1, seed);
        while (!queue.empty() && index_t(members.size()) < size) {
            const index_t u = queue.front();
            queue.pop_front();
            neighbours(u, [&](index_t v) {
                if (agg[std::size_t(v)] < 0 && index_t(members.size()) < size) {
                    agg[std::size_t(v)] = count;
                    members.push_back(v);
                    queue.push_back(v);
                }
            });
        }
        index_t join = -1;  // a small piece joins the aggregate of a neighbour
        if (2 * index_t(members.size()) < size)
            for (index_t u : members) {
                neighbours(u, [&](index_t v) {
                    if (join < 0 && agg[std::size_t(v)] >= 0 && agg[std::size_t(v)] != count)
                        join = agg[std::size_t(v)];
                });
                if (join >= 0) break;
            }
        if (join >= 0)
            for (index_t u : members) agg[std::size_t(u)] = join;
        else
            ++count;
    }
    return count;
}

template <class VT>
void to_host(const Executor& exec, const VT* src, index_t n, std::vector<VT>& stage,
             std::vector<double>& out)
{
    out.resize(std::size_t(n));
    if (exec.is_cpu()) {
        for (index_t i = 0; i < n; ++i) out[std::size_t(i)] = double(src[i]);
        return;
    }
    stage.resize(std::size_t(n));
    copy_bytes(exec, src, *cpu_executor(), stage.data(), std::size_t(n) * sizeof(VT));
    for (index_t i = 0; i < n; ++i) out[std::size_t(i)] = double(stage[std::size_t(i)]);
}

template <class VT>
void from_host(const std::vector<double>& in, std::vector<VT>& stage, const Executor& exec, VT* dst)
{
    const std::size_t n = in.size();
    if (exec.is_cpu()) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = VT(in[i]);
        return;
    }
    stage.resize(n);
    for (std::size_t i = 0; i < n; ++i) stage[i] = VT(in[i]);
    copy_bytes(*cpu_executor(), stage.data(), exec, dst, n * sizeof(VT));
}

template <class VT>
void axpby_on(const Executor& exec, index_t n, VT a, const VT* x, VT b, VT* y)
{
    dispatch_executor(exec, [&](const auto& e) { kernels::axpby(e, n, a, x, b, y); });
}

}  // namespace

template <class VT>
CoarseSpace<VT>::CoarseSpace(MPI_Comm comm, std::shared_ptr<const Operator<VT>> a,
                             std::shared_ptr<const Operator<VT>> local, const SplitRows& rows,
                             index_t nc, const CoarseOptions& opt)
    : comm_(comm), a_(std::move(a)), local_(std::move(local)), nc_(nc), symmetric_(opt.symmetric)
{
    const auto t0 = std::chrono::steady_clock::now();
    MPI_Comm_size(comm_, &ranks_);
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    n_ = rows.diag.rows;
    // the checks every rank must agree on before anything collective that depends on them
    int bad = (!a_ || !local_ || nc_ < 1 || n_ % std::max<index_t>(nc_, 1) != 0 ||
               n_ != a_->rows() || n_ != local_->rows())
                  ? 1
                  : 0;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "coarse space: no operator or preconditioner, or a rank's rows do not fit "
                   "(rows a multiple of Nc = "
                       << nc_ << ", the operator's and the preconditioner's rows)");
    // rows per rank and aggregates per rank
    std::vector<long long> starts(std::size_t(ranks_) + 1, 0);
    {
        long long mine = n_;
        MPI_Allgather(&mine, 1, MPI_LONG_LONG, starts.data() + 1, 1, MPI_LONG_LONG, comm_);
        for (int p = 0; p < ranks_; ++p) starts[std::size_t(p) + 1] += starts[std::size_t(p)];
    }
    const index_t nb = n_ / nc_;
    index_t want = opt.aggregates > 0
                       ? opt.aggregates
                       : std::min<index_t>(64, 512 / std::max<index_t>(1, index_t(ranks_) * nc_));
    want = std::max<index_t>(1, std::min(want, std::max<index_t>(nb, 1)));
    aggs_ = nb > 0 ? grow_aggregates(rows.diag, nc_, (nb + want - 1) / want, agg_) : 0;
    std::vector<int> agg_counts(static_cast<std::size_t>(ranks_)),
        agg_displs(std::size_t(ranks_) + 1, 0);
    {
        int mine = int(aggs_);
        MPI_Allgather(&mine, 1, MPI_INT, agg_counts.data(), 1, MPI_INT, comm_);
        for (int p = 0; p < ranks_; ++p)
            agg_displs[std::size_t(p) + 1] =
                agg_displs[std::size_t(p)] + agg_counts[std::size_t(p)];
    }
    nc_total_ = index_t(agg_displs[std::size_t(ranks_)]) * nc_;
    HEPTANE_ENSURE(
        nc_total_ <= 4096, InputError,
        "coarse space: " << nc_total_ << " coarse unknowns (at most 4096: ask fewer aggregates)");
    counts_.resize(static_cast<std::size_t>(ranks_));
    displs_.resize(static_cast<std::size_t>(ranks_));
    for (int p = 0; p < ranks_; ++p) {
        counts_[std::size_t(p)] = agg_counts[std::size_t(p)] * int(nc_);
        displs_[std::size_t(p)] = agg_displs[std::size_t(p)] * int(nc_);
    }
    c_begin_ = displs_[std::size_t(rank)];

    // the off-rank columns (off_cols, or the entries' own global columns when it is null),
    // each entry's place among them, and the global aggregate of each one's block, asked of
    // its owner once
    const offset_t onnz = rows.off.rows > 0 && rows.off.row_ptr ? rows.off.nnz() : 0;
    off_ref_.resize(std::size_t(onnz));
    off_global_.clear();
    if (rows.off_cols) {
        index_t count = 0;
        for (offset_t k = 0; k < onnz; ++k) {
            off_ref_[std::size_t(k)] = rows.off.col_idx[k];
            count = std::max(count, rows.off.col_idx[k] + 1);
        }
        off_global_.assign(rows.off_cols, rows.off_cols + count);
    } else {
        off_global_.assign(rows.off.col_idx, rows.off.col_idx + onnz);
        std::sort(off_global_.begin(), off_global_.end());
        off_global_.erase(std::unique(off_global_.begin(), off_global_.end()), off_global_.end());
        for (offset_t k = 0; k < onnz; ++k)
            off_ref_[std::size_t(k)] = index_t(
                std::lower_bound(off_global_.begin(), off_global_.end(), rows.off.col_idx[k]) -
                off_global_.begin());
    }
    const index_t off_cols = index_t(off_global_.size());
    off_agg_.assign(std::size_t(off_cols), -1);
    std::vector<std::vector<int>> ask(static_cast<std::size_t>(ranks_));      // block rows there
    std::vector<std::vector<index_t>> who(static_cast<std::size_t>(ranks_));  // off columns
    bad = 0;
    for (index_t j = 0; j < off_cols; ++j) {
        const long long g = off_global_[std::size_t(j)];
        if (g < 0 || g >= starts.back() ||
            (g >= starts[std::size_t(rank)] && g < starts[std::size_t(rank) + 1])) {
            bad = 1;
            continue;
        }
        const int p = int(std::upper_bound(starts.begin(), starts.end(), g) - starts.begin()) - 1;
        ask[std::size_t(p)].push_back(int((g - starts[std::size_t(p)]) / nc_));
        who[std::size_t(p)].push_back(j);
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "coarse space: an off-rank column outside the matrix or inside the rank's "
                   "own rows");
    std::vector<int> send_n(static_cast<std::size_t>(ranks_)),
        recv_n(static_cast<std::size_t>(ranks_));
    for (int p = 0; p < ranks_; ++p) send_n[std::size_t(p)] = int(ask[std::size_t(p)].size());
    MPI_Alltoall(send_n.data(), 1, MPI_INT, recv_n.data(), 1, MPI_INT, comm_);
    std::vector<int> sd(std::size_t(ranks_) + 1, 0), rd(std::size_t(ranks_) + 1, 0);
    for (int p = 0; p < ranks_; ++p) {
        sd[std::size_t(p) + 1] = sd[std::size_t(p)] + send_n[std::size_t(p)];
        rd[std::size_t(p) + 1] = rd[std::size_t(p)] + recv_n[std::size_t(p)];
    }
    std::vector<int> out(std::size_t(sd.back())), in(std::size_t(rd.back()));
    for (int p = 0; p < ranks_; ++p)
        std::copy(ask[std::size_t(p)].begin(), ask[std::size_t(p)].end(),
                  out.begin() + sd[std::size_t(p)]);
    MPI_Alltoallv(out.data(), send_n.data(), sd.data(), MPI_INT, in.data(), recv_n.data(),
                  rd.data(), MPI_INT, comm_);
    for (int& b : in)  // answer with the global aggregate
        b = (b >= 0 && b < nb) ? agg_displs[std::size_t(rank)] + int(agg_[std::size_t(b)]) : -1;
    MPI_Alltoallv(in.data(), recv_n.data(), rd.data(), MPI_INT, out.data(), send_n.data(),
                  sd.data(), MPI_INT, comm_);
    for (int p = 0; p < ranks_; ++p)
        for (std::size_t q = 0; q < who[std::size_t(p)].size(); ++q)
            off_agg_[std::size_t(who[std::size_t(p)][q])] =
                out[std::size_t(sd[std::size_t(p)]) + q];
    bad = std::any_of(off_agg_.begin(), off_agg_.end(), [](index_t g) { return g < 0; }) ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "coarse space: an off-rank column its owner does not have");

    const auto exec = a_->executor();
    t_ = Array<VT>(exec, std::size_t(n_));
    z1_ = Array<VT>(exec, std::size_t(n_));
    assemble(rows);
    setup_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class VT>
CoarseSpace<VT>::~CoarseSpace() = default;

template <class VT>
void CoarseSpace<VT>::update_values(const SplitRows& rows)
{
    const auto t0 = std::chrono::steady_clock::now();
    int bad = rows.diag.rows != n_ ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError, "coarse space: new values for another number of rows");
    assemble(rows);
    setup_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class VT>
void CoarseSpace<VT>::assemble(const SplitRows& rows)
{
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    const index_t m = nc_total_;
    const index_t mine = aggs_ * nc_;
    std::vector<double> part(std::size_t(mine) * std::size_t(m), 0.0);
    const index_t own = displs_[std::size_t(rank)];  // = first global aggregate × nc
    const offset_t onnz = rows.off.rows > 0 && rows.off.row_ptr ? rows.off.nnz() : 0;
    int bad = onnz != offset_t(off_ref_.size()) ? 1 : 0;  // the setup's pattern, or an error
    for (index_t i = 0; i < n_ && bad == 0; ++i) {
        const index_t row = agg_[std::size_t(i / nc_)] * nc_ + i % nc_;
        double* prow = part.data() + std::size_t(row) * std::size_t(m);
        for (index_t k = rows.diag.row_ptr[i]; k < rows.diag.row_ptr[i + 1]; ++k) {
            const index_t j = rows.diag.col_idx[k];
            if (j < 0 || j >= n_) {
                bad = 1;
                continue;
            }
            prow[own + agg_[std::size_t(j / nc_)] * nc_ + j % nc_] += rows.diag.values[k];
        }
        if (off_ref_.empty() || !rows.off.row_ptr) continue;
        for (index_t k = rows.off.row_ptr[i]; k < rows.off.row_ptr[i + 1]; ++k) {
            const index_t j = off_ref_[std::size_t(k)];
            const index_t g = off_agg_[std::size_t(j)];
            prow[g * nc_ + off_global_[std::size_t(j)] % nc_] += rows.off.values[k];
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "coarse space: the rows are not the pattern of the setup (a column outside it)");
    // every rank's coarse rows to every rank
    std::vector<double> ac(std::size_t(m) * std::size_t(m), 0.0);
    {
        std::vector<int> cnt(static_cast<std::size_t>(ranks_)),
            dsp(static_cast<std::size_t>(ranks_));
        for (int p = 0; p < ranks_; ++p) {
            cnt[std::size_t(p)] = counts_[std::size_t(p)] * int(m);
            dsp[std::size_t(p)] = displs_[std::size_t(p)] * int(m);
        }
        MPI_Allgatherv(part.data(), int(part.size()), MPI_DOUBLE, ac.data(), cnt.data(), dsp.data(),
                       MPI_DOUBLE, comm_);
    }
    // LU with partial pivoting (every rank the same numbers, so the same result), kept only
    // when it succeeds: a coarse matrix that cannot be factored leaves the last one in place
    std::vector<double> lu = ac;
    std::vector<index_t> piv(std::size_t(m), 0);
    double scale = 0;
    for (double v : ac) scale = std::max(scale, std::abs(v));
    for (index_t k = 0; k < m; ++k) {
        index_t p = k;
        for (index_t i = k + 1; i < m; ++i)
            if (std::abs(lu[std::size_t(i) * std::size_t(m) + std::size_t(k)]) >
                std::abs(lu[std::size_t(p) * std::size_t(m) + std::size_t(k)]))
                p = i;
        piv[std::size_t(k)] = p;
        const double pivot = lu[std::size_t(p) * std::size_t(m) + std::size_t(k)];
        HEPTANE_ENSURE(std::abs(pivot) > 1e-13 * scale && scale > 0, InputError,
                       "coarse space: the coarse matrix (" << m << " unknowns) is singular at "
                                                           << "unknown " << k + 1
                                                           << " (a matrix whose constants are "
                                                              "in its kernel has no coarse "
                                                              "solve: run without it)");
        if (p != k)
            for (index_t j = 0; j < m; ++j)
                std::swap(lu[std::size_t(k) * std::size_t(m) + std::size_t(j)],
                          lu[std::size_t(p) * std::size_t(m) + std::size_t(j)]);
        for (index_t i = k + 1; i < m; ++i) {
            double& l = lu[std::size_t(i) * std::size_t(m) + std::size_t(k)];
            l /= pivot;
            if (l == 0) continue;
            for (index_t j = k + 1; j < m; ++j)
                lu[std::size_t(i) * std::size_t(m) + std::size_t(j)] -=
                    l * lu[std::size_t(k) * std::size_t(m) + std::size_t(j)];
        }
    }
    ac_.swap(ac);
    lu_.swap(lu);
    piv_.swap(piv);
}

template <class VT>
void CoarseSpace<VT>::coarse_correct(const double* r, double* y) const
{
    const index_t m = nc_total_;
    rc_.assign(std::size_t(m), 0.0);
    for (index_t i = 0; i < n_; ++i) rc_[std::size_t(coarse_of(i))] += r[i];
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rc_.data(), counts_.data(), displs_.data(),
                   MPI_DOUBLE, comm_);
    // solve L U zc = P rc
    zc_ = rc_;
    for (index_t k = 0; k < m; ++k) {
        const index_t p = piv_[std::size_t(k)];
        if (p != k) std::swap(zc_[std::size_t(k)], zc_[std::size_t(p)]);
    }
    for (index_t i = 0; i < m; ++i) {
        double s = zc_[std::size_t(i)];
        for (index_t j = 0; j < i; ++j)
            s -= lu_[std::size_t(i) * std::size_t(m) + std::size_t(j)] * zc_[std::size_t(j)];
        zc_[std::size_t(i)] = s;
    }
    for (index_t i = m - 1; i >= 0; --i) {
        double s = zc_[std::size_t(i)];
        for (index_t j = i + 1; j < m; ++j)
            s -= lu_[std::size_t(i) * std::size_t(m) + std::size_t(j)] * zc_[std::size_t(j)];
        zc_[std::size_t(i)] = s / lu_[std::size_t(i) * std::size_t(m) + std::size_t(i)];
    }
    for (index_t i = 0; i < n_; ++i) y[i] = zc_[std::size_t(coarse_of(i))];
}

template <class VT>
void CoarseSpace<VT>::apply(VT alpha, const VT* r, VT beta, VT* z) const
{
    const Executor& exec = *a_->executor();
    // z1 = Q r
    to_host(exec, r, n_, stage_, hr_);
    hz_.resize(std::size_t(n_));
    coarse_correct(hr_.data(), hz_.data());
    from_host(hz_, stage_, exec, z1_.data());
    // z1 += M_loc (r - A z1)
    a_->apply(VT(-1), z1_.data(), VT(0), t_.data());
    axpby_on(exec, n_, VT(1), r, VT(1), t_.data());
    local_->apply(VT(1), t_.data(), VT(1), z1_.data());
    if (symmetric_) {  // z1 += Q (r - A z1)
        a_->apply(VT(-1), z1_.data(), VT(0), t_.data());
        axpby_on(exec, n_, VT(1), r, VT(1), t_.data());
        to_host(exec, t_.data(), n_, stage_, hr_);
        coarse_correct(hr_.data(), hz_.data());
        from_host(hz_, stage_, exec, t_.data());
        axpby_on(exec, n_, VT(1), t_.data(), VT(1), z1_.data());
    }
    axpby_on(exec, n_, alpha, z1_.data(), beta, z);
}

template <class VT>
void CoarseSpace<VT>::apply_transpose(VT, const VT*, VT, VT*) const
{
    HEPTANE_THROW(NotSupported, "coarse space: no transpose");
}

template <class VT>
std::string CoarseSpace<VT>::describe() const
{
    std::ostringstream s;
    s << "global coarse correction (" << nc_total_ << " coarse unknowns: " << aggs_
      << " aggregates on this rank x Nc " << nc_ << ", dense LU on every rank; "
      << (symmetric_ ? "symmetric: Q, M, Q" : "A-DEF2: Q then M") << ") around "
      << local_->describe();
    return s.str();
}

template class CoarseSpace<double>;
template class CoarseSpace<float>;

}  // namespace heptane::dist
