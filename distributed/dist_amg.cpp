// The AMG hierarchy over the ranks (dist_amg.hpp): row-split levels with halos, the Galerkin
// product with the couplings between ranks, the distributed smoothers and the V-cycle.
#include "distributed/dist_amg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "distributed/host_stage.hpp"
#include "formats/csr/csr.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "solver/precond/amg/amg_setup.hpp"

namespace heptane::dist {

template <class VT>
struct DistAmg<VT>::Level {
    index_t n = 0;                ///< this rank's rows
    long long begin = 0;          ///< its first global row
    Csr<double> diag;             ///< local columns
    Csr<double> off;              ///< columns: positions in the halo
    std::vector<long long> halo;  ///< global column of each halo position, ascending
    // the exchange: halo positions [recv_at[q], recv_at[q] + recv_n[q]) come from recv_peer[q];
    // rows send_rows[q] go to send_peer[q]
    std::vector<int> recv_peer, recv_at, recv_n, send_peer;
    std::vector<std::vector<index_t>> send_rows;
    std::vector<double> dinv;  ///< smoother diagonal
    double lambda = 0;         ///< Gershgorin's bound of D⁻¹A (global)
    Csr<double> p, r;          ///< to the next level (columns: its local rows)
    mutable std::vector<double> hx, sbuf, res, d, b, x;
};

namespace {

constexpr int tag_base = 7300;

Csr<double> make_csr(index_t rows, index_t cols, std::vector<offset_t> rp, std::vector<index_t> ci,
                     std::vector<double> v)
{
    return Csr<double>{rows, cols, Array<offset_t>(std::move(rp)), Array<index_t>(std::move(ci)),
                       Array<double>(std::move(v))};
}

Csr<double> empty_csr(index_t rows, index_t cols)
{
    return make_csr(rows, cols, std::vector<offset_t>(std::size_t(rows) + 1, 0), {}, {});
}

/// Row starts of every rank (ranks + 1 entries) from each rank's row count.
std::vector<long long> starts_of(MPI_Comm comm, index_t n)
{
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    std::vector<long long> s(std::size_t(ranks) + 1, 0);
    long long mine = n;
    MPI_Allgather(&mine, 1, MPI_LONG_LONG, s.data() + 1, 1, MPI_LONG_LONG, comm);
    for (int p = 0; p < ranks; ++p) s[std::size_t(p) + 1] += s[std::size_t(p)];
    return s;
}

void ensure_all(MPI_Comm comm, bool ok, const std::string& what)
{
    int bad = ok ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    HEPTANE_ENSURE(bad == 0, InputError, "distributed AMG: " << what);
}

/// Off-rank entries (row, global column, value) of this rank's rows into the level's off part
/// and halo, and the exchange plan (collective: each owner learns which of its rows to send).
template <class L>
void set_halo(MPI_Comm comm, L& lv, const std::vector<long long>& starts,
              std::vector<std::tuple<index_t, long long, double>>& ent)
{
    int ranks = 1, rank = 0;
    MPI_Comm_size(comm, &ranks);
    MPI_Comm_rank(comm, &rank);
    std::sort(ent.begin(), ent.end(), [](const auto& a, const auto& b) {
        return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    lv.halo.clear();
    for (const auto& e : ent) lv.halo.push_back(std::get<1>(e));
    std::sort(lv.halo.begin(), lv.halo.end());
    lv.halo.erase(std::unique(lv.halo.begin(), lv.halo.end()), lv.halo.end());
    bool ok = true;
    for (long long g : lv.halo)
        if (g < 0 || g >= starts.back() ||
            (g >= starts[std::size_t(rank)] && g < starts[std::size_t(rank) + 1]))
            ok = false;
    ensure_all(comm, ok, "an off-rank column outside the matrix or inside the rank's own rows");
    // the off part, duplicates summed
    std::vector<offset_t> rp(std::size_t(lv.n) + 1, 0);
    std::vector<index_t> ci;
    std::vector<double> va;
    for (std::size_t k = 0; k < ent.size(); ++k) {
        const auto [i, g, v] = ent[k];
        const index_t h =
            index_t(std::lower_bound(lv.halo.begin(), lv.halo.end(), g) - lv.halo.begin());
        if (k > 0 && std::get<0>(ent[k - 1]) == i && std::get<1>(ent[k - 1]) == g) {
            va.back() += v;
            continue;
        }
        ci.push_back(h);
        va.push_back(v);
        ++rp[std::size_t(i) + 1];
    }
    for (index_t i = 0; i < lv.n; ++i) rp[std::size_t(i) + 1] += rp[std::size_t(i)];
    lv.off = make_csr(lv.n, index_t(lv.halo.size()), std::move(rp), std::move(ci), std::move(va));
    // who owns which halo columns (contiguous runs: the halo ascends, the ranges do too)
    lv.recv_peer.clear();
    lv.recv_at.clear();
    lv.recv_n.clear();
    std::vector<int> want(std::size_t(ranks), 0);
    for (std::size_t h = 0; h < lv.halo.size(); ++h) {
        const int p =
            int(std::upper_bound(starts.begin(), starts.end(), lv.halo[h]) - starts.begin()) - 1;
        if (lv.recv_peer.empty() || lv.recv_peer.back() != p) {
            lv.recv_peer.push_back(p);
            lv.recv_at.push_back(int(h));
            lv.recv_n.push_back(0);
        }
        ++lv.recv_n.back();
        ++want[std::size_t(p)];
    }
    std::vector<int> give(std::size_t(ranks), 0);
    MPI_Alltoall(want.data(), 1, MPI_INT, give.data(), 1, MPI_INT, comm);
    std::vector<int> sd(std::size_t(ranks) + 1, 0), rd(std::size_t(ranks) + 1, 0);
    for (int p = 0; p < ranks; ++p) {
        sd[std::size_t(p) + 1] = sd[std::size_t(p)] + want[std::size_t(p)];
        rd[std::size_t(p) + 1] = rd[std::size_t(p)] + give[std::size_t(p)];
    }
    std::vector<long long> asked(std::size_t(rd.back()));
    MPI_Alltoallv(lv.halo.data(), want.data(), sd.data(), MPI_LONG_LONG, asked.data(), give.data(),
                  rd.data(), MPI_LONG_LONG, comm);
    lv.send_peer.clear();
    lv.send_rows.clear();
    for (int p = 0; p < ranks; ++p) {
        if (give[std::size_t(p)] == 0) continue;
        lv.send_peer.push_back(p);
        std::vector<index_t> rows;
        for (int k = rd[std::size_t(p)]; k < rd[std::size_t(p) + 1]; ++k)
            rows.push_back(index_t(asked[std::size_t(k)] - lv.begin));
        lv.send_rows.push_back(std::move(rows));
    }
}

/// A level's rows of this rank as triplets in global indices (appended).
template <class L>
void triplets_of(const L& lv, std::vector<long long>& i, std::vector<long long>& j,
                 std::vector<double>& v)
{
    for (index_t r = 0; r < lv.n; ++r) {
        for (offset_t k = lv.diag.row_ptr[r]; k < lv.diag.row_ptr[r + 1]; ++k) {
            i.push_back(lv.begin + r);
            j.push_back(lv.begin + lv.diag.col_idx[k]);
            v.push_back(lv.diag.values[k]);
        }
        for (offset_t k = lv.off.row_ptr[r]; k < lv.off.row_ptr[r + 1]; ++k) {
            i.push_back(lv.begin + r);
            j.push_back(lv.halo[std::size_t(lv.off.col_idx[k])]);
            v.push_back(lv.off.values[k]);
        }
    }
}

/// The diagonal block with each row's couplings to other ranks added to its entry of the same
/// component in its own cell (its diagonal for Nc = 1), as weak couplings are lumped: P smoothed
/// with it keeps the near null space (P 1 = 1 for rows that sum to zero) at the rows next to
/// other ranks, which smoothing with the bare diagonal block would not (it drops their
/// couplings to other ranks). Where that entry is missing or the sum would not keep the
/// diagonal's sign, the row stays as it is.
template <class L>
Csr<double> lumped(const L& lv, index_t nc)
{
    Csr<double> d{lv.diag.rows, lv.diag.cols, lv.diag.row_ptr, lv.diag.col_idx,
                  Array<double>(lv.diag.values.to_vector())};
    double* v = d.values.data();
    const offset_t* rp = d.row_ptr.data();
    const index_t* ci = d.col_idx.data();
    for (index_t i = 0; i < lv.n; ++i) {
        const index_t base = (i / nc) * nc;
        for (offset_t k = lv.off.row_ptr[i]; k < lv.off.row_ptr[i + 1]; ++k) {
            const index_t c = base + index_t(lv.halo[std::size_t(lv.off.col_idx[k])] % nc);
            const index_t* at = std::lower_bound(ci + rp[i], ci + rp[i + 1], c);
            if (at == ci + rp[i + 1] || *at != c) continue;
            double& target = v[at - ci];
            const double sum = target + lv.off.values[k];
            if (c != i || (sum != 0 && (sum > 0) == (target > 0))) target = sum;
        }
    }
    return d;
}

/// Every rank's `out[q]` (per send peer) to its peer, into `in[q]` (per receive peer), the
/// sizes known on both sides only per message: MPI_Probe for each receive.
template <class T>
void exchange_lists(MPI_Comm comm, const std::vector<int>& send_peer,
                    const std::vector<std::vector<T>>& out, const std::vector<int>& recv_peer,
                    std::vector<std::vector<T>>& in, MPI_Datatype type, int tag)
{
    std::vector<MPI_Request> req(send_peer.size());
    for (std::size_t q = 0; q < send_peer.size(); ++q)
        MPI_Isend(out[q].data(), int(out[q].size()), type, send_peer[q], tag, comm, &req[q]);
    in.assign(recv_peer.size(), {});
    for (std::size_t q = 0; q < recv_peer.size(); ++q) {
        MPI_Status st;
        MPI_Probe(recv_peer[q], tag, comm, &st);
        int count = 0;
        MPI_Get_count(&st, type, &count);
        in[q].resize(std::size_t(count));
        MPI_Recv(in[q].data(), count, type, recv_peer[q], tag, comm, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(int(req.size()), req.data(), MPI_STATUSES_IGNORE);
}

}  // namespace

template <class VT>
DistAmg<VT>::DistAmg(MPI_Comm comm, std::shared_ptr<const Executor> exec, const SplitRows& rows,
                     index_t row_begin, index_t nc, const AmgOptions& opts)
    : exec_(std::move(exec)), n_(rows.diag.rows), nc_(nc), opts_(opts)
{
    MPI_Comm_dup(comm, &comm_);  // its own tags: the levels' messages meet no one else's
    try {
        if (opts_.smoother == AmgSmoother::automatic) opts_.smoother = AmgSmoother::chebyshev;
        ensure_all(
            comm_, exec_ && nc_ >= 1 && n_ >= 0 && n_ % std::max<index_t>(nc_, 1) == 0,
            "no executor, or a rank's rows are not a multiple of Nc = " + std::to_string(nc_));
        ensure_all(comm_, opts_.smoother != AmgSmoother::ilu0mc,
                   "the ilu0mc smoother is not built over the ranks (chebyshev, jacobi, "
                   "l1jacobi are)");
        ensure_all(comm_,
                   opts_.pre_sweeps >= 0 && opts_.post_sweeps >= 0 && opts_.chebyshev_ratio > 1 &&
                       opts_.max_levels >= 1,
                   "negative sweeps, a Chebyshev ratio <= 1 or no levels");
        setup(rows, row_begin);
    } catch (...) {
        MPI_Comm_free(&comm_);
        throw;
    }
}

template <class VT>
DistAmg<VT>::~DistAmg()
{
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

template <class VT>
void DistAmg<VT>::update_values(const SplitRows& rows)
{
    ensure_all(comm_, rows.diag.rows == n_, "new values for another number of rows");
    setup(rows, row_begin_);
}

template <class VT>
void DistAmg<VT>::setup(const SplitRows& rows, index_t row_begin)
{
    const auto t0 = std::chrono::steady_clock::now();
    int ranks = 1, rank = 0;
    MPI_Comm_size(comm_, &ranks);
    MPI_Comm_rank(comm_, &rank);
    std::vector<std::unique_ptr<Level>> levels;
    std::vector<DistAmgLevelInfo> info;

    // level 0 from the split rows
    auto first = std::make_unique<Level>();
    Level& f = *first;
    f.n = n_;
    std::vector<long long> starts = starts_of(comm_, n_);
    ensure_all(comm_, starts[std::size_t(rank)] == row_begin,
               "the ranks' rows are not contiguous ranges in rank order");
    f.begin = row_begin;
    {
        const offset_t dn = rows.diag.nnz();
        bool ok = true;
        for (offset_t k = 0; k < dn; ++k)
            if (rows.diag.col_idx[k] < 0 || rows.diag.col_idx[k] >= n_) ok = false;
        ensure_all(comm_, ok, "a column of the rank's diagonal block outside its rows");
        f.diag =
            n_ > 0 ? make_csr(n_, n_,
                              std::vector<offset_t>(rows.diag.row_ptr, rows.diag.row_ptr + n_ + 1),
                              std::vector<index_t>(rows.diag.col_idx, rows.diag.col_idx + dn),
                              std::vector<double>(rows.diag.values, rows.diag.values + dn))
                   : empty_csr(0, 0);
        std::vector<std::tuple<index_t, long long, double>> ent;
        if (rows.off.rows > 0 && rows.off.row_ptr)
            for (index_t i = 0; i < n_; ++i)
                for (index_t k = rows.off.row_ptr[i]; k < rows.off.row_ptr[i + 1]; ++k) {
                    const index_t c = rows.off.col_idx[k];
                    ent.emplace_back(i, rows.off_cols ? rows.off_cols[c] : c, rows.off.values[k]);
                }
        set_halo(comm_, f, starts, ent);
    }
    levels.push_back(std::move(first));

    const bool l1 = opts_.smoother == AmgSmoother::l1jacobi;
    for (std::size_t l = 0;; ++l) {
        Level& L = *levels[l];
        // smoother data: the diagonal, Gershgorin's bound of D⁻¹A over whole rows
        L.dinv.assign(std::size_t(L.n), 0.0);
        double lam = 0;
        long long zero_row = -1;
        {
            const offset_t* rp = L.diag.row_ptr.data();
            const index_t* ci = L.diag.col_idx.data();
            const double* va = L.diag.values.data();
            const offset_t* orp = L.off.row_ptr.data();
            const double* ova = L.off.values.data();
            for (index_t i = 0; i < L.n; ++i) {
                double dii = 0, sum = 0;
                for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
                    if (ci[k] == i) dii += va[k];
                    sum += std::abs(va[k]);
                }
                for (offset_t k = orp[i]; k < orp[i + 1]; ++k) sum += std::abs(ova[k]);
                if (dii == 0) {
                    if (zero_row < 0) zero_row = L.begin + i;
                    continue;
                }
                L.dinv[std::size_t(i)] = l1 ? 1.0 / sum : 1.0 / dii;  // sum includes |a_ii|
                lam = std::max(lam, sum / std::abs(dii));
            }
        }
        long long bad_row = zero_row < 0 ? (long long)(1) << 62 : zero_row;
        MPI_Allreduce(MPI_IN_PLACE, &bad_row, 1, MPI_LONG_LONG, MPI_MIN, comm_);
        HEPTANE_ENSURE(
            bad_row == (long long)(1) << 62, InputError,
            "distributed AMG: level " << l << " has a zero diagonal at global row " << bad_row + 1);
        MPI_Allreduce(MPI_IN_PLACE, &lam, 1, MPI_DOUBLE, MPI_MAX, comm_);
        L.lambda = lam;
        L.hx.resize(L.halo.size());
        L.res.resize(std::size_t(L.n));
        L.d.resize(std::size_t(L.n));
        L.b.resize(std::size_t(L.n));
        L.x.resize(std::size_t(L.n));
        DistAmgLevelInfo li;
        li.rows = L.n;
        li.nnz = L.diag.nnz() + L.off.nnz();
        MPI_Allreduce(MPI_IN_PLACE, &li.rows, 1, MPI_LONG_LONG, MPI_SUM, comm_);
        MPI_Allreduce(MPI_IN_PLACE, &li.nnz, 1, MPI_LONG_LONG, MPI_SUM, comm_);
        li.rank_rows = L.n;
        li.rank_halo = index_t(L.halo.size());
        info.push_back(li);

        // the coarsest level?
        bool last = li.rows <= opts_.coarse_size || int(l) + 1 >= opts_.max_levels;
        amg::Strength s;
        amg::Aggregates g;
        Csr<double> p;
        if (!last) {
            if (L.n > 0) {
                s = amg::strength(L.diag, nc_, opts_.strength_threshold);
                g = amg::aggregate(s);
                p = amg::prolongator(lumped(L, nc_), nc_, s, g, opts_.prolongation_weight);
            } else {
                p = empty_csr(0, 0);
            }
            long long coarse = L.n > 0 ? (long long)(g.count) * nc_ : 0;
            MPI_Allreduce(MPI_IN_PLACE, &coarse, 1, MPI_LONG_LONG, MPI_SUM, comm_);
            last = coarse == 0 || double(coarse) * 1.2 > double(li.rows);  // stalled
        }
        if (last) {
            // gathered whole on every rank, inverted densely where that is cheap
            dense_ = amg::dense_coarse(index_t(std::min<long long>(li.rows, 1LL << 30)),
                                       offset_t(info[0].nnz), opts_.coarse_size);
            if (dense_) {
                std::vector<long long> gi, gj;
                std::vector<double> gv;
                triplets_of(L, gi, gj, gv);
                std::vector<int> ec(static_cast<std::size_t>(ranks)), ed(std::size_t(ranks) + 1, 0);
                int me = int(gi.size());
                MPI_Allgather(&me, 1, MPI_INT, ec.data(), 1, MPI_INT, comm_);
                for (int q = 0; q < ranks; ++q)
                    ed[std::size_t(q) + 1] = ed[std::size_t(q)] + ec[std::size_t(q)];
                std::vector<long long> ai(std::size_t(ed.back())), aj(ai.size());
                std::vector<double> av(ai.size());
                MPI_Allgatherv(gi.data(), me, MPI_LONG_LONG, ai.data(), ec.data(), ed.data(),
                               MPI_LONG_LONG, comm_);
                MPI_Allgatherv(gj.data(), me, MPI_LONG_LONG, aj.data(), ec.data(), ed.data(),
                               MPI_LONG_LONG, comm_);
                MPI_Allgatherv(gv.data(), me, MPI_DOUBLE, av.data(), ec.data(), ed.data(),
                               MPI_DOUBLE, comm_);
                const index_t m = index_t(li.rows);
                std::vector<std::size_t> order(ai.size());
                for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
                std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
                    return std::tie(ai[x], aj[x]) < std::tie(ai[y], aj[y]);
                });
                Coo<double> coo;
                coo.rows = coo.cols = m;
                std::vector<index_t> ri, rj;
                std::vector<double> rv;
                for (std::size_t k : order) {  // canonical: sorted, no duplicates (summed)
                    if (!ri.empty() && ri.back() == ai[k] && rj.back() == aj[k]) {
                        rv.back() += av[k];
                        continue;
                    }
                    ri.push_back(index_t(ai[k]));
                    rj.push_back(index_t(aj[k]));
                    rv.push_back(av[k]);
                }
                coo.row = Array<index_t>(std::move(ri));
                coo.col = Array<index_t>(std::move(rj));
                coo.val = Array<double>(std::move(rv));
                inv_ = amg::dense_inverse(csr_from_coo(coo), int(l));
                const std::vector<long long> st = starts_of(comm_, L.n);
                cnt_.assign(std::size_t(ranks), 0);
                dsp_.assign(std::size_t(ranks), 0);
                for (int q = 0; q < ranks; ++q) {
                    cnt_[std::size_t(q)] = int(st[std::size_t(q) + 1] - st[std::size_t(q)]);
                    dsp_[std::size_t(q)] = int(st[std::size_t(q)]);
                }
            }
            break;
        }

        // the next level: rows of P of the halo columns from their owners, then Pᵀ A P
        auto next = std::make_unique<Level>();
        Level& C = *next;
        C.n = L.n > 0 ? g.count * nc_ : 0;
        const std::vector<long long> cst = starts_of(comm_, C.n);
        C.begin = cst[std::size_t(rank)];
        L.p = std::move(p);
        L.r = L.n > 0 ? transpose(L.p) : empty_csr(0, 0);
        C.diag = L.n > 0 ? amg::galerkin(L.r, L.diag, L.p) : empty_csr(0, 0);
        std::vector<std::vector<long long>> out_cols(L.send_peer.size()), in_cols;
        std::vector<std::vector<double>> out_vals(L.send_peer.size()), in_vals;
        std::vector<std::vector<int>> out_len(L.send_peer.size()), in_len;
        for (std::size_t q = 0; q < L.send_peer.size(); ++q)
            for (index_t row : L.send_rows[q]) {
                const offset_t a = L.p.row_ptr[row], e = L.p.row_ptr[row + 1];
                out_len[q].push_back(int(e - a));
                for (offset_t k = a; k < e; ++k) {
                    out_cols[q].push_back(C.begin + L.p.col_idx[k]);
                    out_vals[q].push_back(L.p.values[k]);
                }
            }
        const int tag = tag_base + 4 * int(l);
        exchange_lists(comm_, L.send_peer, out_len, L.recv_peer, in_len, MPI_INT, tag);
        exchange_lists(comm_, L.send_peer, out_cols, L.recv_peer, in_cols, MPI_LONG_LONG, tag + 1);
        exchange_lists(comm_, L.send_peer, out_vals, L.recv_peer, in_vals, MPI_DOUBLE, tag + 2);
        // P_halo as CSR over the halo positions (global coarse columns)
        std::vector<offset_t> hp(L.halo.size() + 1, 0);
        std::vector<long long> hc;
        std::vector<double> hv;
        for (std::size_t q = 0; q < L.recv_peer.size(); ++q) {
            HEPTANE_ENSURE(int(in_len[q].size()) == L.recv_n[q], Error,
                           "distributed AMG: a neighbour sent another number of prolongator rows");
            for (std::size_t k = 0; k < in_len[q].size(); ++k)
                hp[std::size_t(L.recv_at[q]) + k + 1] = in_len[q][k];
            hc.insert(hc.end(), in_cols[q].begin(), in_cols[q].end());
            hv.insert(hv.end(), in_vals[q].begin(), in_vals[q].end());
        }
        for (std::size_t h = 0; h < L.halo.size(); ++h) hp[h + 1] += hp[h];
        // Pᵀ A_off P_halo: the rows of A_off P_halo (global coarse columns, numbered
        // compactly), then R times them row by row with a dense accumulator (Gustavson)
        std::vector<long long> cj(hc);
        std::sort(cj.begin(), cj.end());
        cj.erase(std::unique(cj.begin(), cj.end()), cj.end());
        std::vector<index_t> hcl(hc.size());
        for (std::size_t t = 0; t < hc.size(); ++t)
            hcl[t] = index_t(std::lower_bound(cj.begin(), cj.end(), hc[t]) - cj.begin());
        std::vector<offset_t> app(std::size_t(L.n) + 1, 0);
        std::vector<index_t> apc;
        std::vector<double> apv;
        std::vector<double> acc(cj.size(), 0.0);
        std::vector<index_t> mark(cj.size(), -1), touched;
        for (index_t i = 0; i < L.n; ++i) {
            touched.clear();
            for (offset_t k = L.off.row_ptr[i]; k < L.off.row_ptr[i + 1]; ++k) {
                const index_t h = L.off.col_idx[k];
                for (offset_t t = hp[std::size_t(h)]; t < hp[std::size_t(h) + 1]; ++t) {
                    const index_t J = hcl[std::size_t(t)];
                    if (mark[std::size_t(J)] != i) {
                        mark[std::size_t(J)] = i;
                        acc[std::size_t(J)] = 0;
                        touched.push_back(J);
                    }
                    acc[std::size_t(J)] += L.off.values[k] * hv[std::size_t(t)];
                }
            }
            for (index_t J : touched) {
                apc.push_back(J);
                apv.push_back(acc[std::size_t(J)]);
            }
            app[std::size_t(i) + 1] = offset_t(apc.size());
        }
        std::vector<std::tuple<index_t, long long, double>> ent;
        std::fill(mark.begin(), mark.end(), -1);
        for (index_t I = 0; I < C.n; ++I) {
            touched.clear();
            for (offset_t k = L.r.row_ptr[I]; k < L.r.row_ptr[I + 1]; ++k) {
                const index_t i = L.r.col_idx[k];
                const double q = L.r.values[k];
                for (offset_t t = app[std::size_t(i)]; t < app[std::size_t(i) + 1]; ++t) {
                    const index_t J = apc[std::size_t(t)];
                    if (mark[std::size_t(J)] != I) {
                        mark[std::size_t(J)] = I;
                        acc[std::size_t(J)] = 0;
                        touched.push_back(J);
                    }
                    acc[std::size_t(J)] += q * apv[std::size_t(t)];
                }
            }
            for (index_t J : touched) ent.emplace_back(I, cj[std::size_t(J)], acc[std::size_t(J)]);
        }
        set_halo(comm_, C, cst, ent);
        levels.push_back(std::move(next));
    }
    levels_ = std::move(levels);
    info_ = std::move(info);
    row_begin_ = row_begin;
    setup_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

namespace {

/// y = alpha A x + beta y over the ranks: the halo's messages in flight while the diagonal
/// block's product runs.
template <class L>
void product(MPI_Comm comm, const L& lv, int tag, double alpha, const double* x, double beta,
             double* y)
{
    std::vector<MPI_Request> req(lv.recv_peer.size() + lv.send_peer.size());
    std::size_t nr = 0;
    for (std::size_t q = 0; q < lv.recv_peer.size(); ++q)
        MPI_Irecv(lv.hx.data() + lv.recv_at[q], lv.recv_n[q], MPI_DOUBLE, lv.recv_peer[q], tag,
                  comm, &req[nr++]);
    std::size_t total = 0;
    for (const auto& rows : lv.send_rows) total += rows.size();
    lv.sbuf.resize(total);
    std::size_t at = 0;
    for (std::size_t q = 0; q < lv.send_peer.size(); ++q) {
        double* buf = lv.sbuf.data() + at;
        for (std::size_t k = 0; k < lv.send_rows[q].size(); ++k) buf[k] = x[lv.send_rows[q][k]];
        MPI_Isend(buf, int(lv.send_rows[q].size()), MPI_DOUBLE, lv.send_peer[q], tag, comm,
                  &req[nr++]);
        at += lv.send_rows[q].size();
    }
    const auto& cpu = *cpu_executor();
    if (lv.n > 0) kernels::spmv(cpu, lv.diag, Op::normal, alpha, x, beta, y);
    MPI_Waitall(int(nr), req.data(), MPI_STATUSES_IGNORE);
    if (lv.n > 0 && lv.off.nnz() > 0)
        kernels::spmv(cpu, lv.off, Op::normal, alpha, lv.hx.data(), 1.0, y);
}

}  // namespace

template <class VT>
void DistAmg<VT>::cycle(std::size_t l, const double* b, double* x) const
{
    const Level& L = *levels_[l];
    const index_t n = L.n;
    const int tag = tag_base + 4 * int(l) + 3;
    auto residual = [&](const double* xx, double* r) {  // r = b - A xx
        std::copy(b, b + n, r);
        product(comm_, L, tag, -1.0, xx, 1.0, r);
    };
    // `sweeps` steps of the smoother from x (zero: from 0, x not read)
    auto smooth = [&](int sweeps, bool zero) {
        if (zero) std::fill(x, x + n, 0.0);
        if (sweeps <= 0) return;
        double* r = L.res.data();
        double* d = L.d.data();
        const double* di = L.dinv.data();
        if (zero)
            std::copy(b, b + n, r);
        else
            residual(x, r);
        if (opts_.smoother == AmgSmoother::chebyshev) {
            const double hi = L.lambda, lo = L.lambda / opts_.chebyshev_ratio;
            const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo);
            const double sigma = theta / delta;
            double rho = 1.0 / sigma;
            for (index_t i = 0; i < n; ++i) {
                d[i] = di[i] * r[i] / theta;
                x[i] += d[i];
            }
            for (int k = 1; k < sweeps; ++k) {
                product(comm_, L, tag, -1.0, d, 1.0, r);  // r -= A d
                const double rho_new = 1.0 / (2.0 * sigma - rho);
                const double c1 = rho_new * rho, c2 = 2.0 * rho_new / delta;
                for (index_t i = 0; i < n; ++i) {
                    d[i] = c1 * d[i] + c2 * di[i] * r[i];
                    x[i] += d[i];
                }
                rho = rho_new;
            }
            return;
        }
        const double w = opts_.smoother == AmgSmoother::jacobi ? opts_.jacobi_weight : 1.0;
        for (int k = 0; k < sweeps; ++k) {
            if (k > 0) residual(x, r);
            for (index_t i = 0; i < n; ++i) x[i] += w * di[i] * r[i];
        }
    };
    if (l + 1 == levels_.size()) {  // the coarsest level
        if (!dense_) {
            smooth(opts_.pre_sweeps + opts_.post_sweeps, true);
            return;
        }
        const std::size_t m = std::size_t(dsp_.back()) + std::size_t(cnt_.back());
        whole_.resize(m);
        MPI_Allgatherv(b, int(n), MPI_DOUBLE, whole_.data(), cnt_.data(), dsp_.data(), MPI_DOUBLE,
                       comm_);
        const int rank_first = [&] {
            int rank = 0;
            MPI_Comm_rank(comm_, &rank);
            return dsp_[std::size_t(rank)];
        }();
        for (index_t i = 0; i < n; ++i) {
            const double* row = inv_.data() + std::size_t(rank_first + i) * m;
            double s = 0;
            for (std::size_t j = 0; j < m; ++j) s += row[j] * whole_[j];
            x[i] = s;
        }
        return;
    }
    const Level& C = *levels_[l + 1];
    smooth(opts_.pre_sweeps, true);
    residual(x, L.res.data());
    const auto& cpu = *cpu_executor();
    if (n > 0) kernels::spmv(cpu, L.r, Op::normal, 1.0, L.res.data(), 0.0, C.b.data());
    cycle(l + 1, C.b.data(), C.x.data());
    if (n > 0) kernels::spmv(cpu, L.p, Op::normal, 1.0, C.x.data(), 1.0, x);
    smooth(opts_.post_sweeps, false);
}

template <class VT>
void DistAmg<VT>::apply(VT alpha, const VT* r, VT beta, VT* z) const
{
    const Executor& exec = *exec_;
    to_host(exec, r, n_, stage_, hr_);
    hz_.assign(std::size_t(n_), 0.0);
    cycle(0, hr_.data(), hz_.data());
    if (beta == VT(0)) {
        from_host(hz_, stage_, exec, z);
        return;
    }
    std::vector<double> old;
    to_host(exec, z, n_, stage_, old);
    for (index_t i = 0; i < n_; ++i)
        hz_[std::size_t(i)] =
            double(alpha) * hz_[std::size_t(i)] + double(beta) * old[std::size_t(i)];
    from_host(hz_, stage_, exec, z);
    return;
}

template <class VT>
void DistAmg<VT>::apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const
{
    apply(alpha, r, beta, z);
}

template <class VT>
double DistAmg<VT>::operator_complexity() const noexcept
{
    if (info_.empty() || info_[0].nnz == 0) return 1.0;
    double s = 0;
    for (const auto& l : info_) s += double(l.nnz);
    return s / double(info_[0].nnz);
}

template <class VT>
std::string DistAmg<VT>::describe() const
{
    int ranks = 1;
    MPI_Comm_size(comm_, &ranks);
    std::ostringstream s;
    s << "AMG over " << ranks << " rank" << (ranks == 1 ? "" : "s") << " (" << info_.size()
      << " levels, rows";
    for (const auto& l : info_) s << ' ' << l.rows;
    s << ", operator complexity " << operator_complexity() << "; " << to_string(opts_.smoother);
    if (opts_.smoother == AmgSmoother::chebyshev)
        s << " degree " << opts_.pre_sweeps << "/" << opts_.post_sweeps;
    else
        s << " " << opts_.pre_sweeps << "/" << opts_.post_sweeps << " sweeps";
    s << " through the distributed product; coarsest level "
      << (dense_ ? "gathered and inverted densely on every rank" : "smoothed (too large to invert)")
      << "; V-cycle on the host; setup " << setup_ms_ << " ms)";
    return s.str();
}

template <class VT>
void DistAmg<VT>::level_triplets(int l, std::vector<long long>& i, std::vector<long long>& j,
                                 std::vector<double>& v) const
{
    i.clear();
    j.clear();
    v.clear();
    triplets_of(*levels_.at(std::size_t(l)), i, j, v);
}

template <class VT>
void DistAmg<VT>::prolongator_triplets(int l, std::vector<long long>& i, std::vector<long long>& j,
                                       std::vector<double>& v) const
{
    i.clear();
    j.clear();
    v.clear();
    const Level& L = *levels_.at(std::size_t(l));
    const Level& C = *levels_.at(std::size_t(l) + 1);
    for (index_t r = 0; r < L.n; ++r)
        for (offset_t k = L.p.row_ptr[r]; k < L.p.row_ptr[r + 1]; ++k) {
            i.push_back(L.begin + r);
            j.push_back(C.begin + L.p.col_idx[k]);
            v.push_back(L.p.values[k]);
        }
}

template class DistAmg<double>;
template class DistAmg<float>;

}  // namespace heptane::dist
