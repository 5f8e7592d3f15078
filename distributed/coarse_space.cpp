// The global coarse correction (coarse_space.hpp): aggregation, the coarse matrix over the
// ranks, its dense LU, and the two-level application.
#include "distributed/coarse_space.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <sstream>

#include "core/error.hpp"
#include "distributed/host_stage.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "solver/precond/amg/amg.hpp"
#include "solver/precond/amg/amg_setup.hpp"

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

/// AMG's aggregates of the diagonal block's strong couplings, level by level (unaggregated
/// nodes alone), down to the level whose count is nearest `want` (by ratio); stops when a
/// level coarsens by less than 1.2. Returns the number of aggregates, or −1 when that stall
/// leaves more than twice `want` (a coupled system whose block strengths barely aggregate:
/// the caller grows them breadth-first instead).
index_t strength_aggregates(const CsrView& d, index_t nc, index_t want, double theta,
                            std::vector<index_t>& agg)
{
    const index_t nb = d.rows / nc;
    agg.resize(std::size_t(nb));
    for (index_t i = 0; i < nb; ++i) agg[std::size_t(i)] = i;
    std::vector<offset_t> rp(d.row_ptr, d.row_ptr + d.rows + 1);
    const offset_t nnz = rp.back();
    Csr<double> a{d.rows, d.rows, Array<offset_t>(std::move(rp)),
                  Array<index_t>(std::vector<index_t>(d.col_idx, d.col_idx + nnz)),
                  Array<double>(std::vector<double>(d.values, d.values + nnz))};
    index_t count = nb;
    while (count > want) {
        const amg::Strength s = amg::strength(a, nc, theta);
        amg::Aggregates g = amg::aggregate(s);
        index_t c = g.count;
        for (index_t& x : g.of_node)
            if (x < 0) x = c++;  // no strong neighbour: alone
        if (double(c) * 1.2 > double(count)) return count > 2 * want ? -1 : count;  // stalled
        const bool nearer = c<want&& double(want) / double(c)> double(count) / double(want);
        if (nearer) break;  // the level above is nearer the count
        for (index_t& x : agg) x = g.of_node[std::size_t(x)];
        g.count = c;  // the next level: Tᵀ a T, T the tentative (unsmoothed) prolongator
        const Csr<double> t = amg::prolongator(a, nc, s, g, 0.0);
        a = amg::galerkin(transpose(t), a, t);
        count = c;
    }
    return count;
}

}  // namespace

CoarseOptions::Aggregation parse_coarse_aggregation(const std::string& name)
{
    if (name == "bfs") return CoarseOptions::Aggregation::bfs;
    if (name == "strength") return CoarseOptions::Aggregation::strength;
    HEPTANE_THROW(InputError, "unknown coarse aggregation '" << name << "' (bfs, strength)");
}

const char* to_string(CoarseOptions::Aggregation a) noexcept
{
    return a == CoarseOptions::Aggregation::strength ? "strength" : "bfs";
}

CoarseOptions::Solve parse_coarse_solve(const std::string& name)
{
    if (name == "auto") return CoarseOptions::Solve::automatic;
    if (name == "dense") return CoarseOptions::Solve::dense;
    if (name == "amg") return CoarseOptions::Solve::amg;
    HEPTANE_THROW(InputError, "unknown coarse solve '" << name << "' (auto, dense, amg)");
}

const char* to_string(CoarseOptions::Solve s) noexcept
{
    switch (s) {
        case CoarseOptions::Solve::dense:
            return "dense";
        case CoarseOptions::Solve::amg:
            return "amg";
        default:
            return "auto";
    }
}

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
    aggregation_ = opt.aggregation;
    if (nb == 0)
        aggs_ = 0;
    else if (aggregation_ == CoarseOptions::Aggregation::strength)
        aggs_ = strength_aggregates(rows.diag, nc_, want, opt.amg.strength_threshold, agg_);
    if (nb > 0 && (aggregation_ == CoarseOptions::Aggregation::bfs || aggs_ < 0)) {
        strength_stalled_ = aggs_ < 0;
        aggs_ = grow_aggregates(rows.diag, nc_, (nb + want - 1) / want, agg_);
    }
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
    HEPTANE_ENSURE(opt.cycles >= 1, InputError,
                   "coarse space: " << opt.cycles << " AMG cycles per coarse solve (at least 1)");
    solve_ = opt.solve != CoarseOptions::Solve::automatic ? opt.solve
             : nc_total_ <= opt.dense_limit               ? CoarseOptions::Solve::dense
                                                          : CoarseOptions::Solve::amg;
    HEPTANE_ENSURE(solve_ != CoarseOptions::Solve::dense || nc_total_ <= 8192, InputError,
                   "coarse space: " << nc_total_
                                    << " coarse unknowns for a dense LU (at most 8192: ask fewer "
                                       "aggregates, or the AMG coarse solve)");
    cycles_ = opt.cycles;
    amg_opts_ = opt.amg;
    singular_ = opt.singular;
    amg_opts_.singular = amg_opts_.singular || opt.singular;
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
    pattern(rows, agg_displs);
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
void CoarseSpace<VT>::pattern(const SplitRows& rows, const std::vector<int>& agg_displs)
{
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    const index_t mine = aggs_ * nc_;
    const index_t own = agg_displs[std::size_t(rank)] * nc_;
    const offset_t onnz = rows.off.rows > 0 && rows.off.row_ptr ? rows.off.nnz() : 0;
    // the fine rows of each coarse row (counting sort)
    std::vector<offset_t> frp(std::size_t(mine) + 1, 0);
    auto crow = [&](index_t i) { return agg_[std::size_t(i / nc_)] * nc_ + i % nc_; };
    for (index_t i = 0; i < n_; ++i) ++frp[std::size_t(crow(i)) + 1];
    for (index_t r = 0; r < mine; ++r) frp[std::size_t(r) + 1] += frp[std::size_t(r)];
    std::vector<index_t> fine(static_cast<std::size_t>(n_));
    {
        std::vector<offset_t> at(frp.begin(), frp.end() - 1);
        for (index_t i = 0; i < n_; ++i) fine[std::size_t(at[std::size_t(crow(i))]++)] = i;
    }
    int bad = 0;
    auto dcol = [&](offset_t k) {
        const index_t j = rows.diag.col_idx[k];
        if (j < 0 || j >= n_) {
            bad = 1;
            return own;
        }
        return own + agg_[std::size_t(j / nc_)] * nc_ + j % nc_;
    };
    auto ocol = [&](offset_t k) {
        const index_t j = off_ref_[std::size_t(k)];
        return off_agg_[std::size_t(j)] * nc_ + off_global_[std::size_t(j)] % nc_;
    };
    const bool has_off = onnz > 0 && rows.off.row_ptr;
    lrp_.assign(std::size_t(mine) + 1, 0);
    lci_.clear();
    std::vector<index_t> cols;
    for (index_t r = 0; r < mine; ++r) {
        cols.clear();
        for (offset_t f = frp[std::size_t(r)]; f < frp[std::size_t(r) + 1]; ++f) {
            const index_t i = fine[std::size_t(f)];
            for (index_t k = rows.diag.row_ptr[i]; k < rows.diag.row_ptr[i + 1]; ++k)
                cols.push_back(dcol(k));
            if (has_off)
                for (index_t k = rows.off.row_ptr[i]; k < rows.off.row_ptr[i + 1]; ++k)
                    cols.push_back(ocol(k));
        }
        std::sort(cols.begin(), cols.end());
        cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
        lci_.insert(lci_.end(), cols.begin(), cols.end());
        lrp_[std::size_t(r) + 1] = offset_t(lci_.size());
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "coarse space: a column of the rank's diagonal block outside its rows");
    // each fine entry's slot among its coarse row's entries
    auto slot = [&](index_t r, index_t c) {
        const auto b = lci_.begin() + lrp_[std::size_t(r)];
        const auto e = lci_.begin() + lrp_[std::size_t(r) + 1];
        return offset_t(std::lower_bound(b, e, c) - lci_.begin());
    };
    slot_d_.assign(std::size_t(rows.diag.nnz()), 0);
    slot_o_.assign(std::size_t(onnz), 0);
    for (index_t i = 0; i < n_; ++i) {
        const index_t r = crow(i);
        for (index_t k = rows.diag.row_ptr[i]; k < rows.diag.row_ptr[i + 1]; ++k)
            slot_d_[std::size_t(k)] = slot(r, dcol(k));
        if (has_off)
            for (index_t k = rows.off.row_ptr[i]; k < rows.off.row_ptr[i + 1]; ++k)
                slot_o_[std::size_t(k)] = slot(r, ocol(k));
    }
    // the whole pattern on every rank: row lengths, then columns
    std::vector<index_t> len(static_cast<std::size_t>(mine));
    for (index_t r = 0; r < mine; ++r)
        len[std::size_t(r)] = index_t(lrp_[std::size_t(r) + 1] - lrp_[std::size_t(r)]);
    std::vector<index_t> all_len(static_cast<std::size_t>(nc_total_));
    MPI_Allgatherv(len.data(), int(mine), MPI_INT, all_len.data(), counts_.data(), displs_.data(),
                   MPI_INT, comm_);
    static_assert(sizeof(index_t) == sizeof(int), "index_t is MPI_INT");
    std::vector<offset_t> rp(std::size_t(nc_total_) + 1, 0);
    for (index_t r = 0; r < nc_total_; ++r)
        rp[std::size_t(r) + 1] = rp[std::size_t(r)] + all_len[std::size_t(r)];
    HEPTANE_ENSURE(rp.back() < offset_t(1) << 31, InputError,
                   "coarse space: " << rp.back() << " coarse entries (fewer than 2^31: ask fewer "
                                    << "aggregates)");
    vcounts_.assign(std::size_t(ranks_), 0);
    vdispls_.assign(std::size_t(ranks_), 0);
    for (int p = 0; p < ranks_; ++p) {
        const std::size_t first = std::size_t(displs_[std::size_t(p)]);
        const std::size_t last = first + std::size_t(counts_[std::size_t(p)]);
        vdispls_[std::size_t(p)] = int(rp[first]);
        vcounts_[std::size_t(p)] = int(rp[last]) - vdispls_[std::size_t(p)];
    }
    std::vector<index_t> ci(std::size_t(rp.back()));
    MPI_Allgatherv(lci_.data(), int(lci_.size()), MPI_INT, ci.data(), vcounts_.data(),
                   vdispls_.data(), MPI_INT, comm_);
    acs_.rows = nc_total_;
    acs_.cols = nc_total_;
    acs_.row_ptr = Array<offset_t>(std::move(rp));
    acs_.col_idx = Array<index_t>(std::move(ci));
    acs_.values = Array<double>(std::vector<double>(std::size_t(acs_.col_idx.size()), 0.0));
}

template <class VT>
void CoarseSpace<VT>::assemble(const SplitRows& rows)
{
    const offset_t onnz = rows.off.rows > 0 && rows.off.row_ptr ? rows.off.nnz() : 0;
    int bad = onnz != offset_t(slot_o_.size()) || rows.diag.nnz() != offset_t(slot_d_.size())
                  ? 1
                  : 0;  // the setup's pattern, or an error
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "coarse space: the rows are not the pattern of the setup (another number of "
                   "entries)");
    std::vector<double> part(lci_.size(), 0.0);
    const offset_t dnnz = rows.diag.nnz();
    for (offset_t k = 0; k < dnnz; ++k)
        part[std::size_t(slot_d_[std::size_t(k)])] += rows.diag.values[k];
    for (offset_t k = 0; k < onnz; ++k)
        part[std::size_t(slot_o_[std::size_t(k)])] += rows.off.values[k];
    // every rank's coarse rows to every rank, into a new matrix (the last one stays while the
    // new one is factored or set up: a failure keeps it)
    Csr<double> ac{acs_.rows, acs_.cols, acs_.row_ptr, acs_.col_idx,
                   Array<double>(std::vector<double>(std::size_t(acs_.nnz()), 0.0))};
    MPI_Allgatherv(part.data(), int(part.size()), MPI_DOUBLE, ac.values.data(), vcounts_.data(),
                   vdispls_.data(), MPI_DOUBLE, comm_);
    if (solve_ == CoarseOptions::Solve::dense) {
        std::swap(ac, acs_);
        try {
            factor_dense();
        } catch (...) {
            std::swap(ac, acs_);
            throw;
        }
        return;
    }
    // AMG of the coarse matrix on the host (a new setup: it throws for a singular one and the
    // last one stays)
    amg_ = std::make_shared<AmgPreconditioner<double>>(ac, nc_, cpu_executor(), amg_opts_);
    std::swap(ac, acs_);
}

template <class VT>
std::vector<double> CoarseSpace<VT>::coarse_matrix() const
{
    const index_t m = nc_total_;
    std::vector<double> d(std::size_t(m) * std::size_t(m), 0.0);
    const offset_t* rp = acs_.row_ptr.data();
    const index_t* ci = acs_.col_idx.data();
    const double* v = acs_.values.data();
    for (index_t i = 0; i < m; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
            d[std::size_t(i) * std::size_t(m) + std::size_t(ci[k])] += v[k];
    return d;
}

template <class VT>
void CoarseSpace<VT>::factor_dense()
{
    // LU with partial pivoting (every rank the same numbers, so the same result), kept only
    // when it succeeds
    const index_t m = nc_total_;
    std::vector<double> lu = coarse_matrix();
    if (singular_) {  // a null space declared: a generalized inverse (the same on every rank)
        std::vector<double> g(lu.size(), 0.0);
        rank_ = amg::generalized_inverse(lu.data(), g.data(), m, 1e-11);
        HEPTANE_ENSURE(rank_ > 0, InputError,
                       "coarse space: the coarse matrix (" << m << " unknowns) is zero");
        ginv_.swap(g);
        return;
    }
    std::vector<index_t> piv(std::size_t(m), 0);
    double scale = 0;
    for (double v : lu) scale = std::max(scale, std::abs(v));
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
                                                              "in its kernel: declare them its "
                                                              "null space -- --null-space "
                                                              "constant, MatSetNullSpace -- or "
                                                              "run without it)");
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
    lu_.swap(lu);
    piv_.swap(piv);
}

template <class VT>
void CoarseSpace<VT>::coarse_solve(const std::vector<double>& rc, std::vector<double>& zc) const
{
    const index_t m = nc_total_;
    if (solve_ == CoarseOptions::Solve::dense && singular_) {  // zc = G rc
        zc.assign(std::size_t(m), 0.0);
        for (index_t i = 0; i < m; ++i) {
            double s = 0;
            for (index_t j = 0; j < m; ++j)
                s += ginv_[std::size_t(i) * std::size_t(m) + std::size_t(j)] * rc[std::size_t(j)];
            zc[std::size_t(i)] = s;
        }
        return;
    }
    if (solve_ == CoarseOptions::Solve::dense) {  // L U zc = P rc
        zc = rc;
        for (index_t k = 0; k < m; ++k) {
            const index_t p = piv_[std::size_t(k)];
            if (p != k) std::swap(zc[std::size_t(k)], zc[std::size_t(p)]);
        }
        for (index_t i = 0; i < m; ++i) {
            double s = zc[std::size_t(i)];
            for (index_t j = 0; j < i; ++j)
                s -= lu_[std::size_t(i) * std::size_t(m) + std::size_t(j)] * zc[std::size_t(j)];
            zc[std::size_t(i)] = s;
        }
        for (index_t i = m - 1; i >= 0; --i) {
            double s = zc[std::size_t(i)];
            for (index_t j = i + 1; j < m; ++j)
                s -= lu_[std::size_t(i) * std::size_t(m) + std::size_t(j)] * zc[std::size_t(j)];
            zc[std::size_t(i)] = s / lu_[std::size_t(i) * std::size_t(m) + std::size_t(i)];
        }
        return;
    }
    // z = B rc, then z += B (rc - A_c z), cycles_ steps in all
    zc.assign(std::size_t(m), 0.0);
    amg_->apply(1.0, rc.data(), 0.0, zc.data());
    for (int c = 1; c < cycles_; ++c) {
        cres_ = rc;
        kernels::spmv(*cpu_executor(), acs_, Op::normal, -1.0, zc.data(), 1.0, cres_.data());
        amg_->apply(1.0, cres_.data(), 1.0, zc.data());
    }
}

template <class VT>
void CoarseSpace<VT>::coarse_correct(const double* r, double* y) const
{
    const index_t m = nc_total_;
    rc_.assign(std::size_t(m), 0.0);
    for (index_t i = 0; i < n_; ++i) rc_[std::size_t(coarse_of(i))] += r[i];
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rc_.data(), counts_.data(), displs_.data(),
                   MPI_DOUBLE, comm_);
    coarse_solve(rc_, zc_);
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
      << " aggregates on this rank x Nc " << nc_ << " ("
      << (strength_stalled_ ? "bfs: strength stalled" : to_string(aggregation_)) << "), "
      << acs_.nnz() << " entries; "
      << (solve_ == CoarseOptions::Solve::dense
              ? (singular_ ? "a generalized inverse (null space declared: rank " +
                                 std::to_string(rank_) + " of " + std::to_string(nc_total_) + ")"
                           : std::string("dense LU"))
              : "AMG (" + std::to_string(cycles_) + " cycle" + (cycles_ == 1 ? "" : "s") + ", " +
                    std::to_string(amg_->info().levels.size()) + " levels)")
      << " on every rank; " << (symmetric_ ? "symmetric: Q, M, Q" : "A-DEF2: Q then M")
      << ") around " << local_->describe();
    return s.str();
}

template class CoarseSpace<double>;
template class CoarseSpace<float>;

}  // namespace heptane::dist
