// The AMG hierarchy over the ranks (dist_amg.hpp): row-split levels with halos,
// the Galerkin product with the couplings between ranks, the distributed
// smoothers and the V-cycle.
#include "distributed/dist_amg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "distributed/column_plan.hpp"
#include "distributed/host_stage.hpp"
#include "formats/csr/csr.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "solver/precond/amg/amg_setup.hpp"

namespace heptane::dist {

namespace {

using Plan = ColumnPlan;

}  // namespace

template <class VT>
struct DistAmg<VT>::Level {
    index_t n = 0;                ///< this rank's rows
    long long begin = 0;          ///< its first global row
    Csr<double> diag;             ///< local columns
    Csr<double> off;              ///< columns: positions in the halo
    std::vector<long long> halo;  ///< global column of each halo position, ascending
    Plan plan;                    ///< the halo's exchange
    std::vector<double> dinv;     ///< smoother diagonal
    double lambda = 0;            ///< Gershgorin's bound of D⁻¹A (global)
    // to the next level: P = [p | po], p over the next level's rows on this rank
    // (r = pᵀ), po over other ranks' (columns: positions of pho, the global
    // coarse columns, ascending; exchanged by pplan: forward for the
    // prolongation, in reverse for the restriction)
    Csr<double> p, r, po;
    std::vector<long long> pho;
    Plan pplan;
    // kept for a values-only update (P stays, the Galerkin product is redone on its
    // patterns): level 0's input pattern and the slot of each input off entry; the halo's
    // rows of P (hp, hcl: compact columns, hv), po's columns compact (pocl), the compact
    // columns beyond the next level's own rows (rc, global), poᵀ (pot), the next level's
    // row starts (cst), the counts of the rows sent to other owners (g*), and the slot
    // of each contribution of Pᵀ A P in the next level (< its diag nnz: diag, else off)
    std::vector<index_t> in_op;
    std::vector<long long> in_og;
    std::vector<offset_t> in_slot;
    std::vector<offset_t> hp;
    std::vector<index_t> hcl, pocl;
    std::vector<double> hv;
    std::vector<long long> rc, cst;
    Csr<double> pot;
    std::vector<int> gsn, gsd, grn, grd;
    std::vector<offset_t> gslot;
    mutable std::vector<double> hx, sbuf, res, d, b, x, phx;
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

void ensure_all(MPI_Comm comm, bool ok, const std::string& what)
{
    int bad = ok ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    HEPTANE_ENSURE(bad == 0, InputError, "distributed AMG: " << what);
}

/// halo (positions of the plan) = x at the owners' rows (blocking; T is double
/// or long long).
template <class T>
void forward(MPI_Comm comm, const Plan& pl, const T* x, T* halo, MPI_Datatype type, int tag,
             std::vector<T>& buf)
{
    std::vector<MPI_Request> req;
    start_exchange(comm, pl, x, halo, type, tag, buf, req);
    MPI_Waitall(int(req.size()), req.data(), MPI_STATUSES_IGNORE);
}

/// y (this rank's rows) += the values of every rank's halo positions it owns
/// (the reverse of forward: each rank sends its halo values to their owners,
/// which add them).
void reverse_add(MPI_Comm comm, const Plan& pl, const double* halo, double* y, int tag,
                 std::vector<double>& buf)
{
    std::vector<MPI_Request> req(pl.recv_peer.size() + pl.send_peer.size());
    std::size_t nr = 0;
    buf.resize(pl.send_count());
    std::size_t at = 0;
    for (std::size_t q = 0; q < pl.send_peer.size(); ++q) {
        MPI_Irecv(buf.data() + at, int(pl.send_rows[q].size()), MPI_DOUBLE, pl.send_peer[q], tag,
                  comm, &req[nr++]);
        at += pl.send_rows[q].size();
    }
    for (std::size_t q = 0; q < pl.recv_peer.size(); ++q)
        MPI_Isend(halo + pl.recv_at[q], pl.recv_n[q], MPI_DOUBLE, pl.recv_peer[q], tag, comm,
                  &req[nr++]);
    MPI_Waitall(int(nr), req.data(), MPI_STATUSES_IGNORE);
    at = 0;
    for (std::size_t q = 0; q < pl.send_peer.size(); ++q) {
        for (std::size_t k = 0; k < pl.send_rows[q].size(); ++k)
            y[pl.send_rows[q][k]] += buf[at + k];
        at += pl.send_rows[q].size();
    }
}

/// Off-rank entries (row, global column, value) of this rank's rows into the
/// level's off part (duplicates summed) and halo, and the exchange plan
/// (collective: each owner learns which of its rows to send). Returns the slot
/// of each entry (in the order given) in the off part's values.
template <class L>
std::vector<offset_t> set_halo(MPI_Comm comm, L& lv, const std::vector<long long>& starts,
                               const std::vector<std::tuple<index_t, long long, double>>& ent)
{
    int ranks = 1, rank = 0;
    MPI_Comm_size(comm, &ranks);
    MPI_Comm_rank(comm, &rank);
    std::vector<std::size_t> order(ent.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(std::get<0>(ent[a]), std::get<1>(ent[a])) <
               std::tie(std::get<0>(ent[b]), std::get<1>(ent[b]));
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
    std::vector<offset_t> rp(std::size_t(lv.n) + 1, 0), slot(ent.size());
    std::vector<index_t> ci;
    std::vector<double> va;
    for (std::size_t t = 0; t < order.size(); ++t) {
        const auto [i, g, v] = ent[order[t]];
        if (t > 0 && std::get<0>(ent[order[t - 1]]) == i && std::get<1>(ent[order[t - 1]]) == g) {
            va.back() += v;
            slot[order[t]] = offset_t(va.size()) - 1;
            continue;
        }
        ci.push_back(
            index_t(std::lower_bound(lv.halo.begin(), lv.halo.end(), g) - lv.halo.begin()));
        va.push_back(v);
        slot[order[t]] = offset_t(va.size()) - 1;
        ++rp[std::size_t(i) + 1];
    }
    for (index_t i = 0; i < lv.n; ++i) rp[std::size_t(i) + 1] += rp[std::size_t(i)];
    lv.off = make_csr(lv.n, index_t(lv.halo.size()), std::move(rp), std::move(ci), std::move(va));
    lv.plan = make_column_plan(comm, lv.halo, starts, lv.begin);
    return slot;
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

/// Every rank's `out[q]` (per send peer) to its peer, into `in[q]` (per receive
/// peer), the sizes known on both sides only per message: MPI_Probe for each
/// receive.
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

/// The smoother's data of a level: D⁻¹ (or the l1 row sums' inverse) and
/// Gershgorin's bound of D⁻¹A over whole rows, the largest over the ranks
/// (collective; InputError on every rank for a zero diagonal, naming the first
/// global row).
template <class L>
void smoother_data(MPI_Comm comm, L& lv, std::size_t l, bool l1)
{
    lv.dinv.assign(std::size_t(lv.n), 0.0);
    double lam = 0;
    long long zero_row = -1;
    const offset_t* rp = lv.diag.row_ptr.data();
    const index_t* ci = lv.diag.col_idx.data();
    const double* va = lv.diag.values.data();
    const offset_t* orp = lv.off.row_ptr.data();
    const double* ova = lv.off.values.data();
    for (index_t i = 0; i < lv.n; ++i) {
        double dii = 0, sum = 0;
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            if (ci[k] == i) dii += va[k];
            sum += std::abs(va[k]);
        }
        for (offset_t k = orp[i]; k < orp[i + 1]; ++k) sum += std::abs(ova[k]);
        if (dii == 0) {
            if (zero_row < 0) zero_row = lv.begin + i;
            continue;
        }
        lv.dinv[std::size_t(i)] = l1 ? 1.0 / sum : 1.0 / dii;  // sum includes |a_ii|
        lam = std::max(lam, sum / std::abs(dii));
    }
    long long bad_row = zero_row < 0 ? (long long)(1) << 62 : zero_row;
    MPI_Allreduce(MPI_IN_PLACE, &bad_row, 1, MPI_LONG_LONG, MPI_MIN, comm);
    HEPTANE_ENSURE(
        bad_row == (long long)(1) << 62, InputError,
        "distributed AMG: level " << l << " has a zero diagonal at global row " << bad_row + 1);
    MPI_Allreduce(MPI_IN_PLACE, &lam, 1, MPI_DOUBLE, MPI_MAX, comm);
    lv.lambda = lam;
}

/// The coarsest level (`rows` global) gathered whole on every rank and its dense
/// inverse (row-major; collective; InputError when singular, a generalized inverse with
/// `singular`: AmgOptions::singular).
template <class L>
std::vector<double> dense_coarsest(MPI_Comm comm, const L& lv, long long rows, std::size_t l,
                                   bool singular)
{
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    std::vector<long long> gi, gj;
    std::vector<double> gv;
    triplets_of(lv, gi, gj, gv);
    std::vector<int> ec(static_cast<std::size_t>(ranks)), ed(std::size_t(ranks) + 1, 0);
    int me = int(gi.size());
    MPI_Allgather(&me, 1, MPI_INT, ec.data(), 1, MPI_INT, comm);
    for (int q = 0; q < ranks; ++q)
        ed[std::size_t(q) + 1] = ed[std::size_t(q)] + ec[std::size_t(q)];
    std::vector<long long> ai(std::size_t(ed.back())), aj(ai.size());
    std::vector<double> av(ai.size());
    MPI_Allgatherv(gi.data(), me, MPI_LONG_LONG, ai.data(), ec.data(), ed.data(), MPI_LONG_LONG,
                   comm);
    MPI_Allgatherv(gj.data(), me, MPI_LONG_LONG, aj.data(), ec.data(), ed.data(), MPI_LONG_LONG,
                   comm);
    MPI_Allgatherv(gv.data(), me, MPI_DOUBLE, av.data(), ec.data(), ed.data(), MPI_DOUBLE, comm);
    std::vector<std::size_t> order(ai.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        return std::tie(ai[x], aj[x]) < std::tie(ai[y], aj[y]);
    });
    Coo<double> coo;
    coo.rows = coo.cols = index_t(rows);
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
    return amg::dense_inverse(csr_from_coo(coo), int(l), singular);
}

/// The slowest rank's aggregation, prolongation and products, and the ranks, into ph
/// (collective).
void find_slowest(MPI_Comm comm, DistAmgPhases& ph)
{
    struct Loc {
        double v;
        int r;
    };
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    Loc m[3] = {{ph.aggregation, rank}, {ph.prolongation, rank}, {ph.products, rank}};
    MPI_Allreduce(MPI_IN_PLACE, m, 3, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    for (int k = 0; k < 3; ++k) {
        ph.slowest[k] = m[k].v;
        ph.slowest_rank[k] = m[k].r;
    }
    ph.slowest_adds = ph.adds;
    MPI_Bcast(&ph.slowest_adds, 1, MPI_LONG_LONG, ph.slowest_rank[2], comm);
    Loc a{double(ph.adds), rank};
    MPI_Allreduce(MPI_IN_PLACE, &a, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    ph.most_adds = (long long)a.v;
    ph.most_adds_rank = a.r;
}

/// Gustavson's accumulator over compact columns.
struct Accum {
    std::vector<double> acc;
    std::vector<index_t> mark, touched;
    long long adds = 0;
    explicit Accum(std::size_t width) : acc(width, 0.0), mark(width, -1) {}
    void start() { touched.clear(); }
    void add(index_t row, index_t c, double v)
    {
        ++adds;
        if (mark[std::size_t(c)] != row) {
            mark[std::size_t(c)] = row;
            acc[std::size_t(c)] = 0;
            touched.push_back(c);
        }
        acc[std::size_t(c)] += v;
    }
    void reset() { std::fill(mark.begin(), mark.end(), -1); }
};

/// The next level C = Pᵀ A P of F with F's kept P (F.p, F.po, the halo's rows
/// of P, F.rc, F.pot, F.cst): A P row by row (Gustavson), this rank's coarse
/// rows from p (R = pᵀ), the rows of other ranks' aggregates that po reaches
/// summed here (poᵀ (A P)) and sent to their owners. The contributions come in
/// an order fixed by the patterns alone. symbolic: C's patterns (diagonal block,
/// halo, off part, plan) and where each contribution goes (F.gslot, F.g*
/// counts) are made first; then (both ways) C's values are zeroed and every
/// contribution added at its slot. Collective.
template <class L>
void galerkin(MPI_Comm comm, L& F, L& C, bool symbolic, DistAmgPhases& ph)
{
    auto tt = std::chrono::steady_clock::now();
    auto tick = [&](double& phase) {
        const auto now = std::chrono::steady_clock::now();
        phase += std::chrono::duration<double, std::milli>(now - tt).count();
        tt = now;
    };
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    const long long own_lo = C.begin, own_hi = C.begin + C.n;
    auto global_col = [&](index_t c) { return c < C.n ? own_lo + c : F.rc[std::size_t(c - C.n)]; };
    Accum acc(std::size_t(C.n) + F.rc.size());
    // A P, row by row
    std::vector<offset_t> app(std::size_t(F.n) + 1, 0);
    std::vector<index_t> apc;
    std::vector<double> apv;
    {  // about as many entries as A's rows times P's widest rows
        const std::size_t guess = std::size_t(F.diag.nnz() + F.off.nnz()) * 2;
        apc.reserve(guess);
        apv.reserve(guess);
    }
    for (index_t i = 0; i < F.n; ++i) {
        acc.start();
        for (offset_t k = F.diag.row_ptr[i]; k < F.diag.row_ptr[i + 1]; ++k) {
            const index_t j = F.diag.col_idx[k];
            const double a = F.diag.values[k];
            for (offset_t t = F.p.row_ptr[j]; t < F.p.row_ptr[j + 1]; ++t)
                acc.add(i, F.p.col_idx[t], a * F.p.values[t]);
            for (offset_t t = F.po.row_ptr[j]; t < F.po.row_ptr[j + 1]; ++t)
                acc.add(i, F.pocl[std::size_t(F.po.col_idx[t])], a * F.po.values[t]);
        }
        for (offset_t k = F.off.row_ptr[i]; k < F.off.row_ptr[i + 1]; ++k) {
            const index_t h = F.off.col_idx[k];
            for (offset_t t = F.hp[std::size_t(h)]; t < F.hp[std::size_t(h) + 1]; ++t)
                acc.add(i, F.hcl[std::size_t(t)], F.off.values[k] * F.hv[std::size_t(t)]);
        }
        for (index_t c : acc.touched) {
            apc.push_back(c);
            apv.push_back(acc.acc[std::size_t(c)]);
        }
        app[std::size_t(i) + 1] = offset_t(apc.size());
    }
    // this rank's coarse rows: pᵀ (A P)
    std::vector<double> vals;
    std::vector<index_t> vi;    // symbolic: local coarse row
    std::vector<long long> vj;  // symbolic: global column
    acc.reset();
    for (index_t I = 0; I < C.n; ++I) {
        acc.start();
        for (offset_t k = F.r.row_ptr[I]; k < F.r.row_ptr[I + 1]; ++k) {
            const index_t i = F.r.col_idx[k];
            for (offset_t t = app[std::size_t(i)]; t < app[std::size_t(i) + 1]; ++t)
                acc.add(I, apc[std::size_t(t)], F.r.values[k] * apv[std::size_t(t)]);
        }
        for (index_t c : acc.touched) {
            vals.push_back(acc.acc[std::size_t(c)]);
            if (symbolic) {
                vi.push_back(I);
                vj.push_back(global_col(c));
            }
        }
    }
    // the rows of other ranks' aggregates: poᵀ (A P), summed here, grouped by owner
    std::vector<std::vector<long long>> to_i(static_cast<std::size_t>(ranks)),
        to_j(static_cast<std::size_t>(ranks));
    std::vector<std::vector<double>> to_v(static_cast<std::size_t>(ranks));
    acc.reset();
    for (index_t c = 0; c < F.pot.rows; ++c) {
        acc.start();
        for (offset_t k = F.pot.row_ptr[c]; k < F.pot.row_ptr[c + 1]; ++k) {
            const index_t i = F.pot.col_idx[k];
            for (offset_t t = app[std::size_t(i)]; t < app[std::size_t(i) + 1]; ++t)
                acc.add(c, apc[std::size_t(t)], F.pot.values[k] * apv[std::size_t(t)]);
        }
        const long long I = F.pho[std::size_t(c)];
        const int o = int(std::upper_bound(F.cst.begin(), F.cst.end(), I) - F.cst.begin()) - 1;
        for (index_t col : acc.touched) {
            to_v[std::size_t(o)].push_back(acc.acc[std::size_t(col)]);
            if (symbolic) {
                to_i[std::size_t(o)].push_back(I);
                to_j[std::size_t(o)].push_back(global_col(col));
            }
        }
    }
    ph.adds += acc.adds;
    tick(ph.products);
    if (symbolic) {
        F.gsn.assign(std::size_t(ranks), 0);
        F.grn.assign(std::size_t(ranks), 0);
        for (int q = 0; q < ranks; ++q) F.gsn[std::size_t(q)] = int(to_v[std::size_t(q)].size());
        MPI_Alltoall(F.gsn.data(), 1, MPI_INT, F.grn.data(), 1, MPI_INT, comm);
        F.gsd.assign(std::size_t(ranks) + 1, 0);
        F.grd.assign(std::size_t(ranks) + 1, 0);
        for (int q = 0; q < ranks; ++q) {
            F.gsd[std::size_t(q) + 1] = F.gsd[std::size_t(q)] + F.gsn[std::size_t(q)];
            F.grd[std::size_t(q) + 1] = F.grd[std::size_t(q)] + F.grn[std::size_t(q)];
        }
    }
    {
        std::vector<double> ov, iv(std::size_t(F.grd.back()));
        for (int q = 0; q < ranks; ++q) {
            HEPTANE_ENSURE(int(to_v[std::size_t(q)].size()) == F.gsn[std::size_t(q)], Error,
                           "distributed AMG: the Galerkin product's pattern changed");
            ov.insert(ov.end(), to_v[std::size_t(q)].begin(), to_v[std::size_t(q)].end());
        }
        MPI_Alltoallv(ov.data(), F.gsn.data(), F.gsd.data(), MPI_DOUBLE, iv.data(), F.grn.data(),
                      F.grd.data(), MPI_DOUBLE, comm);
        vals.insert(vals.end(), iv.begin(), iv.end());
        if (symbolic) {
            std::vector<long long> oi, oj, ii(iv.size()), ij(iv.size());
            for (int q = 0; q < ranks; ++q) {
                oi.insert(oi.end(), to_i[std::size_t(q)].begin(), to_i[std::size_t(q)].end());
                oj.insert(oj.end(), to_j[std::size_t(q)].begin(), to_j[std::size_t(q)].end());
            }
            MPI_Alltoallv(oi.data(), F.gsn.data(), F.gsd.data(), MPI_LONG_LONG, ii.data(),
                          F.grn.data(), F.grd.data(), MPI_LONG_LONG, comm);
            MPI_Alltoallv(oj.data(), F.gsn.data(), F.gsd.data(), MPI_LONG_LONG, ij.data(),
                          F.grn.data(), F.grd.data(), MPI_LONG_LONG, comm);
            for (std::size_t k = 0; k < ii.size(); ++k) {
                vi.push_back(index_t(ii[k] - own_lo));
                vj.push_back(ij[k]);
            }
        }
    }
    tick(ph.exchange);
    if (symbolic) {
        // C's rows: sorted, duplicates one slot, split into the diagonal block and
        // the rest
        std::vector<std::size_t> order(vi.size()), rs(std::size_t(C.n) + 1, 0);
        for (index_t I : vi) ++rs[std::size_t(I) + 1];
        for (index_t I = 0; I < C.n; ++I) rs[std::size_t(I) + 1] += rs[std::size_t(I)];
        {
            std::vector<std::size_t> at(rs.begin(), rs.end() - 1);
            for (std::size_t k = 0; k < vi.size(); ++k) order[at[std::size_t(vi[k])]++] = k;
        }
        for (index_t I = 0; I < C.n; ++I)  // each row's few contributions by column
            std::sort(order.begin() + std::ptrdiff_t(rs[std::size_t(I)]),
                      order.begin() + std::ptrdiff_t(rs[std::size_t(I) + 1]),
                      [&](std::size_t x, std::size_t y) { return vj[x] < vj[y]; });
        std::vector<offset_t> dp(std::size_t(C.n) + 1, 0);
        std::vector<index_t> dc;
        std::vector<std::tuple<index_t, long long, double>> ent;
        std::vector<offset_t> code(vi.size());  // >= 0: diag slot; < 0: -(ent index) - 1
        for (std::size_t t = 0; t < order.size(); ++t) {
            const std::size_t k = order[t];
            const bool same = t > 0 && vi[order[t - 1]] == vi[k] && vj[order[t - 1]] == vj[k];
            if (vj[k] >= own_lo && vj[k] < own_hi) {
                if (!same) {
                    dc.push_back(index_t(vj[k] - own_lo));
                    ++dp[std::size_t(vi[k]) + 1];
                }
                code[k] = offset_t(dc.size()) - 1;
            } else {
                if (!same) ent.emplace_back(vi[k], vj[k], 0.0);
                code[k] = -offset_t(ent.size());
            }
        }
        for (index_t I = 0; I < C.n; ++I) dp[std::size_t(I) + 1] += dp[std::size_t(I)];
        const offset_t dn = offset_t(dc.size());
        C.diag = make_csr(C.n, C.n, std::move(dp), std::move(dc), std::vector<double>(dn, 0.0));
        const std::vector<offset_t> os = set_halo(comm, C, F.cst, ent);
        F.gslot.resize(code.size());
        for (std::size_t k = 0; k < code.size(); ++k)
            F.gslot[k] = code[k] >= 0 ? code[k] : dn + os[std::size_t(-code[k] - 1)];
    }
    HEPTANE_ENSURE(vals.size() == F.gslot.size(), Error,
                   "distributed AMG: the Galerkin product's pattern changed");
    double* dv = C.diag.values.data();
    double* ovv = C.off.values.data();
    const offset_t dn = C.diag.nnz();
    std::fill(dv, dv + dn, 0.0);
    std::fill(ovv, ovv + C.off.nnz(), 0.0);
    for (std::size_t k = 0; k < vals.size(); ++k) {
        const offset_t sl = F.gslot[k];
        if (sl < dn)
            dv[sl] += vals[k];
        else
            ovv[sl - dn] += vals[k];
    }
    tick(ph.patterns);
}

}  // namespace

template <class VT>
DistAmg<VT>::DistAmg(MPI_Comm comm, std::shared_ptr<const Executor> exec, const SplitRows& rows,
                     index_t row_begin, index_t nc, const AmgOptions& opts)
    : exec_(std::move(exec)), n_(rows.diag.rows), nc_(nc), opts_(opts)
{
    MPI_Comm_dup(comm,
                 &comm_);  // its own tags: the levels' messages meet no one else's
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
                       opts_.max_levels >= 1 && opts_.prolongation_max_entries >= 0,
                   "negative sweeps or P entries, a Chebyshev ratio <= 1 or no levels");
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
    if (!refresh(rows)) setup(rows, row_begin_);
}

template <class VT>
bool DistAmg<VT>::refresh(const SplitRows& rows)
{
    const auto t0 = std::chrono::steady_clock::now();
    Level& f = *levels_.front();
    // the same patterns on every rank? (else the whole setup again)
    bool same = n_ == f.n;
    const offset_t dn = f.diag.nnz();
    if (same && n_ > 0) {
        same = rows.diag.row_ptr[n_] == dn &&
               std::equal(rows.diag.row_ptr, rows.diag.row_ptr + n_ + 1, f.diag.row_ptr.data()) &&
               std::equal(rows.diag.col_idx, rows.diag.col_idx + dn, f.diag.col_idx.data());
        const bool has_off = rows.off.rows > 0 && rows.off.row_ptr;
        if (same && has_off)
            same = std::equal(rows.off.row_ptr, rows.off.row_ptr + n_ + 1, f.in_op.begin());
        else if (same)
            same = f.in_op.back() == 0;
        for (index_t k = 0; same && has_off && k < f.in_op.back(); ++k) {
            const index_t c = rows.off.col_idx[k];
            same = (rows.off_cols ? rows.off_cols[c] : c) == f.in_og[std::size_t(k)];
        }
    }
    int all = same ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm_);
    if (all == 0) return false;
    // the numeric part on the kept patterns and P; put back as it was if it throws
    struct Saved {
        std::vector<double> dv, ov, dinv;
        double lambda;
    };
    std::vector<Saved> saved;
    for (const auto& lp : levels_)
        saved.push_back(
            {lp->diag.values.to_vector(), lp->off.values.to_vector(), lp->dinv, lp->lambda});
    std::vector<double> inv;
    DistAmgPhases ph;
    try {
        if (n_ > 0) {
            std::copy(rows.diag.values, rows.diag.values + dn, f.diag.values.data());
            double* ov = f.off.values.data();
            std::fill(ov, ov + f.off.nnz(), 0.0);
            for (std::size_t k = 0; k < f.in_slot.size(); ++k)
                ov[f.in_slot[k]] += rows.off.values[k];
        }
        const bool l1 = opts_.smoother == AmgSmoother::l1jacobi;
        for (std::size_t l = 0; l < levels_.size(); ++l) {
            smoother_data(comm_, *levels_[l], l, l1);
            if (l + 1 < levels_.size())
                galerkin(comm_, *levels_[l], *levels_[l + 1], false, ph);
            else if (dense_)
                inv = dense_coarsest(comm_, *levels_[l], info_[l].rows, l, opts_.singular);
        }
    } catch (...) {
        for (std::size_t l = 0; l < levels_.size(); ++l) {
            Level& L = *levels_[l];
            std::copy(saved[l].dv.begin(), saved[l].dv.end(), L.diag.values.data());
            std::copy(saved[l].ov.begin(), saved[l].ov.end(), L.off.values.data());
            L.dinv = std::move(saved[l].dinv);
            L.lambda = saved[l].lambda;
        }
        throw;
    }
    if (dense_) inv_ = std::move(inv);
    find_slowest(comm_, ph);
    ++refreshes_;
    refresh_phases_ = ph;
    refresh_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return true;
}

template <class VT>
void DistAmg<VT>::setup(const SplitRows& rows, index_t row_begin)
{
    const auto t0 = std::chrono::steady_clock::now();
    int ranks = 1, rank = 0;
    MPI_Comm_size(comm_, &ranks);
    MPI_Comm_rank(comm_, &rank);
    // built apart and kept only when the whole setup succeeds (update_values keeps the last)
    std::vector<std::unique_ptr<Level>> levels;
    std::vector<DistAmgLevelInfo> info;
    bool dense = false;
    std::vector<double> inv;
    std::vector<int> cnt, dsp;
    DistAmgPhases phase;

    // level 0 from the split rows
    auto first = std::make_unique<Level>();
    Level& f = *first;
    f.n = n_;
    std::vector<long long> starts = row_starts(comm_, n_);
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
        f.in_op.assign(std::size_t(n_) + 1, 0);
        if (rows.off.rows > 0 && rows.off.row_ptr)
            for (index_t i = 0; i < n_; ++i) {
                for (index_t k = rows.off.row_ptr[i]; k < rows.off.row_ptr[i + 1]; ++k) {
                    const index_t c = rows.off.col_idx[k];
                    ent.emplace_back(i, rows.off_cols ? rows.off_cols[c] : c, rows.off.values[k]);
                    f.in_og.push_back(std::get<1>(ent.back()));
                }
                f.in_op[std::size_t(i) + 1] = index_t(ent.size());
            }
        f.in_slot = set_halo(comm_, f, starts, ent);
    }
    levels.push_back(std::move(first));

    const bool l1 = opts_.smoother == AmgSmoother::l1jacobi;
    for (std::size_t l = 0;; ++l) {
        Level& L = *levels[l];
        smoother_data(comm_, L, l, l1);
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
        auto tt = std::chrono::steady_clock::now();
        auto tick = [&](double& phase) {  // the time since the last tick, to `phase`
            const auto now = std::chrono::steady_clock::now();
            phase += std::chrono::duration<double, std::milli>(now - tt).count();
            tt = now;
        };
        amg::Strength s;
        amg::Aggregates g;
        if (!last) {
            if (L.n > 0) {
                s = amg::strength(L.diag, nc_, opts_.strength_threshold);
                g = amg::aggregate(s);
            }
            long long coarse = L.n > 0 ? (long long)(g.count) * nc_ : 0;
            MPI_Allreduce(MPI_IN_PLACE, &coarse, 1, MPI_LONG_LONG, MPI_SUM, comm_);
            last = coarse == 0 || double(coarse) * 1.2 > double(li.rows);  // stalled
        }
        tick(phase.aggregation);
        if (last) {
            // gathered whole on every rank, inverted densely where that is cheap
            dense = amg::dense_coarse(index_t(std::min<long long>(li.rows, 1LL << 30)),
                                      offset_t(info[0].nnz), opts_.coarse_size);
            if (dense) {
                inv = dense_coarsest(comm_, L, li.rows, l, opts_.singular);
                const std::vector<long long> st = row_starts(comm_, L.n);
                cnt.assign(std::size_t(ranks), 0);
                dsp.assign(std::size_t(ranks), 0);
                for (int q = 0; q < ranks; ++q) {
                    cnt[std::size_t(q)] = int(st[std::size_t(q) + 1] - st[std::size_t(q)]);
                    dsp[std::size_t(q)] = int(st[std::size_t(q)]);
                }
            }
            break;
        }

        // the next level
        auto next = std::make_unique<Level>();
        Level& C = *next;
        C.n = L.n > 0 ? g.count * nc_ : 0;
        const std::vector<long long> cst = row_starts(comm_, C.n);
        C.begin = cst[std::size_t(rank)];
        const long long own_lo = C.begin, own_hi = C.begin + C.n;
        const int tag = tag_base + 8 * int(l);
        // T: the global coarse column of each fine row (-1: none), the halo's from
        // the owners
        std::vector<long long> tcol(std::size_t(L.n), -1), thalo(L.halo.size(), -1), lbuf;
        for (index_t i = 0; i < L.n; ++i) {
            const index_t a = g.of_node[std::size_t(i / nc_)];
            if (a >= 0) tcol[std::size_t(i)] = C.begin + (long long)(a)*nc_ + i % nc_;
        }
        forward(comm_, L.plan, tcol.data(), thalo.data(), MPI_LONG_LONG, tag, lbuf);
        // P = (I - w D_F^-1 A_F) T over whole rows (the couplings to other ranks
        // count as strong; D_F: the diagonal plus the weak couplings of the
        // diagonal block), w = weight / rho, rho Gershgorin's bound of D_F^-1 A_F
        // over all ranks
        std::vector<double> dF(std::size_t(L.n), 0.0);
        double rho = 0;
        for (index_t i = 0; i < L.n; ++i) {
            double d = 0, offsum = 0;
            for (offset_t k = L.diag.row_ptr[i]; k < L.diag.row_ptr[i + 1]; ++k) {
                if (L.diag.col_idx[k] == i || !s.keep[std::size_t(k)])
                    d += L.diag.values[k];
                else
                    offsum += std::abs(L.diag.values[k]);
            }
            for (offset_t k = L.off.row_ptr[i]; k < L.off.row_ptr[i + 1]; ++k)
                offsum += std::abs(L.off.values[k]);
            dF[std::size_t(i)] = d;
            if (d != 0) rho = std::max(rho, 1.0 + offsum / std::abs(d));
        }
        MPI_Allreduce(MPI_IN_PLACE, &rho, 1, MPI_DOUBLE, MPI_MAX, comm_);
        const double omega = rho > 0 ? opts_.prolongation_weight / rho : 0.0;
        std::vector<offset_t> pp(std::size_t(L.n) + 1, 0), qp(std::size_t(L.n) + 1, 0);
        std::vector<index_t> pc;
        std::vector<long long> qc;
        std::vector<double> pv, qv;
        std::vector<std::pair<long long, double>> e, row;
        const std::size_t pmax = std::size_t(std::max(0, opts_.prolongation_max_entries));
        for (index_t i = 0; i < L.n; ++i) {
            e.clear();
            if (tcol[std::size_t(i)] >= 0) e.emplace_back(tcol[std::size_t(i)], 1.0);
            if (omega != 0 && dF[std::size_t(i)] != 0) {
                const double f = omega / dF[std::size_t(i)];
                for (offset_t k = L.diag.row_ptr[i]; k < L.diag.row_ptr[i + 1]; ++k) {
                    const index_t j = L.diag.col_idx[k];
                    if ((j != i && !s.keep[std::size_t(k)]) || tcol[std::size_t(j)] < 0) continue;
                    e.emplace_back(tcol[std::size_t(j)],
                                   -f * (j == i ? dF[std::size_t(i)] : L.diag.values[k]));
                }
                for (offset_t k = L.off.row_ptr[i]; k < L.off.row_ptr[i + 1]; ++k) {
                    const long long tj = thalo[std::size_t(L.off.col_idx[k])];
                    if (tj >= 0) e.emplace_back(tj, -f * L.off.values[k]);
                }
            }
            std::stable_sort(e.begin(), e.end(),
                             [](const auto& x, const auto& y) { return x.first < y.first; });
            row.clear();
            for (std::size_t q = 0; q < e.size();) {
                double v = 0;
                std::size_t t = q;
                for (; t < e.size() && e[t].first == e[q].first; ++t) v += e[t].second;
                if (v != 0) row.emplace_back(e[q].first, v);
                q = t;
            }
            if (pmax > 0 && row.size() > pmax) {  // truncated: the largest, the row's sum kept
                double all = 0, kept = 0;
                for (const auto& x : row) all += x.second;
                std::partial_sort(
                    row.begin(), row.begin() + std::ptrdiff_t(pmax), row.end(),
                    [](const auto& x, const auto& y) {
                        return std::abs(x.second) > std::abs(y.second) ||
                               (std::abs(x.second) == std::abs(y.second) && x.first < y.first);
                    });
                row.resize(pmax);
                for (const auto& x : row) kept += x.second;
                if (kept != 0)
                    for (auto& x : row) x.second *= all / kept;
                std::sort(row.begin(), row.end());
            }
            for (const auto& x : row) {
                if (x.first >= own_lo && x.first < own_hi) {
                    pc.push_back(index_t(x.first - own_lo));
                    pv.push_back(x.second);
                } else {
                    qc.push_back(x.first);
                    qv.push_back(x.second);
                }
            }
            pp[std::size_t(i) + 1] = offset_t(pc.size());
            qp[std::size_t(i) + 1] = offset_t(qc.size());
        }
        L.p = make_csr(L.n, C.n, std::move(pp), std::move(pc), std::move(pv));
        L.r = L.n > 0 ? transpose(L.p) : empty_csr(C.n, 0);
        L.pho = qc;
        std::sort(L.pho.begin(), L.pho.end());
        L.pho.erase(std::unique(L.pho.begin(), L.pho.end()), L.pho.end());
        {
            std::vector<index_t> qcl(qc.size());
            for (std::size_t k = 0; k < qc.size(); ++k)
                qcl[k] =
                    index_t(std::lower_bound(L.pho.begin(), L.pho.end(), qc[k]) - L.pho.begin());
            L.po =
                make_csr(L.n, index_t(L.pho.size()), std::move(qp), std::move(qcl), std::move(qv));
        }
        L.pplan = make_column_plan(comm_, L.pho, cst, C.begin);
        L.phx.resize(L.pho.size());
        // the whole rows of P of the halo columns, from their owners (global
        // columns)
        const Plan& pl = L.plan;
        std::vector<std::vector<long long>> out_cols(pl.send_peer.size()), in_cols;
        std::vector<std::vector<double>> out_vals(pl.send_peer.size()), in_vals;
        std::vector<std::vector<int>> out_len(pl.send_peer.size()), in_len;
        for (std::size_t q = 0; q < pl.send_peer.size(); ++q)
            for (index_t row : pl.send_rows[q]) {
                const offset_t a = L.p.row_ptr[row], z = L.p.row_ptr[row + 1];
                const offset_t a2 = L.po.row_ptr[row], z2 = L.po.row_ptr[row + 1];
                out_len[q].push_back(int((z - a) + (z2 - a2)));
                for (offset_t k = a; k < z; ++k) {
                    out_cols[q].push_back(C.begin + L.p.col_idx[k]);
                    out_vals[q].push_back(L.p.values[k]);
                }
                for (offset_t k = a2; k < z2; ++k) {
                    out_cols[q].push_back(L.pho[std::size_t(L.po.col_idx[k])]);
                    out_vals[q].push_back(L.po.values[k]);
                }
            }
        exchange_lists(comm_, pl.send_peer, out_len, pl.recv_peer, in_len, MPI_INT, tag + 1);
        exchange_lists(comm_, pl.send_peer, out_cols, pl.recv_peer, in_cols, MPI_LONG_LONG,
                       tag + 2);
        exchange_lists(comm_, pl.send_peer, out_vals, pl.recv_peer, in_vals, MPI_DOUBLE, tag + 3);
        std::vector<offset_t> hp(L.halo.size() + 1, 0);
        std::vector<long long> hc;
        std::vector<double> hv;
        for (std::size_t q = 0; q < pl.recv_peer.size(); ++q) {
            HEPTANE_ENSURE(int(in_len[q].size()) == pl.recv_n[q], Error,
                           "distributed AMG: a neighbour sent another number of "
                           "prolongator rows");
            for (std::size_t k = 0; k < in_len[q].size(); ++k)
                hp[std::size_t(pl.recv_at[q]) + k + 1] = in_len[q][k];
            hc.insert(hc.end(), in_cols[q].begin(), in_cols[q].end());
            hv.insert(hv.end(), in_vals[q].begin(), in_vals[q].end());
        }
        for (std::size_t h = 0; h < L.halo.size(); ++h) hp[h + 1] += hp[h];
        // the columns of A P numbered compactly: this rank's coarse rows first,
        // then the others that P (its own rows' and the halo's) reaches, ascending
        L.rc = L.pho;
        for (long long c : hc)
            if (c < own_lo || c >= own_hi) L.rc.push_back(c);
        std::sort(L.rc.begin(), L.rc.end());
        L.rc.erase(std::unique(L.rc.begin(), L.rc.end()), L.rc.end());
        auto compact = [&](long long c) {
            return c >= own_lo && c < own_hi
                       ? index_t(c - own_lo)
                       : C.n +
                             index_t(std::lower_bound(L.rc.begin(), L.rc.end(), c) - L.rc.begin());
        };
        L.hcl.resize(hc.size());
        L.pocl.resize(L.pho.size());
        for (std::size_t t = 0; t < hc.size(); ++t) L.hcl[t] = compact(hc[t]);
        for (std::size_t t = 0; t < L.pho.size(); ++t) L.pocl[t] = compact(L.pho[t]);
        L.hp = std::move(hp);
        L.hv = std::move(hv);
        L.pot = L.n > 0 ? transpose(L.po) : empty_csr(0, 0);
        L.cst = cst;
        tick(phase.prolongation);
        galerkin(comm_, L, C, true, phase);
        tick(phase.galerkin);
        levels.push_back(std::move(next));
    }
    levels_ = std::move(levels);
    info_ = std::move(info);
    dense_ = dense;
    inv_ = std::move(inv);
    cnt_ = std::move(cnt);
    dsp_ = std::move(dsp);
    row_begin_ = row_begin;
    find_slowest(comm_, phase);
    phases_ = phase;
    setup_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

namespace {

/// y = alpha A x + beta y over the ranks: the halo's messages in flight while
/// the diagonal block's product runs.
template <class L>
void product(MPI_Comm comm, const L& lv, int tag, double alpha, const double* x, double beta,
             double* y)
{
    std::vector<MPI_Request> req;
    start_exchange(comm, lv.plan, x, lv.hx.data(), MPI_DOUBLE, tag, lv.sbuf, req);
    const auto& cpu = *cpu_executor();
    if (lv.n > 0) kernels::spmv(cpu, lv.diag, Op::normal, alpha, x, beta, y);
    MPI_Waitall(int(req.size()), req.data(), MPI_STATUSES_IGNORE);
    if (lv.n > 0 && lv.off.nnz() > 0)
        kernels::spmv(cpu, lv.off, Op::normal, alpha, lv.hx.data(), 1.0, y);
}

}  // namespace

template <class VT>
void DistAmg<VT>::cycle(std::size_t l, const double* b, double* x) const
{
    const Level& L = *levels_[l];
    const index_t n = L.n;
    const int tag = tag_base + 8 * int(l) + 4;
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
    // b_c = Pᵀ r: this rank's aggregates from p, the others' from po, sent to
    // their owners
    if (C.n > 0) kernels::spmv(cpu, L.r, Op::normal, 1.0, L.res.data(), 0.0, C.b.data());
    std::fill(L.phx.begin(), L.phx.end(), 0.0);
    for (index_t i = 0; i < n; ++i)
        for (offset_t k = L.po.row_ptr[i]; k < L.po.row_ptr[i + 1]; ++k)
            L.phx[std::size_t(L.po.col_idx[k])] += L.po.values[k] * L.res[std::size_t(i)];
    reverse_add(comm_, L.pplan, L.phx.data(), C.b.data(), tag + 1, L.sbuf);
    cycle(l + 1, C.b.data(), C.x.data());
    // x += P x_c: po's columns from their owners
    forward(comm_, L.pplan, C.x.data(), L.phx.data(), MPI_DOUBLE, tag + 2, L.sbuf);
    if (n > 0) kernels::spmv(cpu, L.p, Op::normal, 1.0, C.x.data(), 1.0, x);
    if (n > 0 && L.po.nnz() > 0) kernels::spmv(cpu, L.po, Op::normal, 1.0, L.phx.data(), 1.0, x);
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
    s << ", operator complexity " << operator_complexity() << "; ";
    if (opts_.prolongation_max_entries > 0)
        s << "P at most " << opts_.prolongation_max_entries << " entries a row; ";
    s << to_string(opts_.smoother);
    if (opts_.smoother == AmgSmoother::chebyshev)
        s << " degree " << opts_.pre_sweeps << "/" << opts_.post_sweeps;
    else
        s << " " << opts_.pre_sweeps << "/" << opts_.post_sweeps << " sweeps";
    s << " through the distributed product; coarsest level "
      << (dense_ ? "gathered and inverted densely on every rank" : "smoothed (too large to invert)")
      << "; V-cycle on the host; setup " << setup_ms_ << " ms, rank 0's (aggregation "
      << phases_.aggregation;
    auto slow = [&](const DistAmgPhases& p, int k) {
        s << " (slowest rank " << p.slowest_rank[k] << ": " << p.slowest[k];
        if (k == 2)
            s << "; multiply-adds " << p.adds << " here, " << p.slowest_adds << " on rank "
              << p.slowest_rank[k] << ", at most " << p.most_adds << " (rank " << p.most_adds_rank
              << ")";
        s << ")";
    };
    slow(phases_, 0);
    s << ", prolongation " << phases_.prolongation;
    slow(phases_, 1);
    s << ", Galerkin " << phases_.galerkin << ": products " << phases_.products;
    slow(phases_, 2);
    s << ", exchange " << phases_.exchange << ", patterns and scatter " << phases_.patterns << ")";
    if (refreshes_ > 0) {
        s << "; " << refreshes_ << " values-only update" << (refreshes_ == 1 ? "" : "s")
          << " on the kept aggregates and P, the last " << refresh_ms_ << " ms (Galerkin products "
          << refresh_phases_.products;
        slow(refresh_phases_, 2);
        s << ", exchange " << refresh_phases_.exchange << ", scatter " << refresh_phases_.patterns
          << ")";
    }
    s << ")";
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
    for (index_t r = 0; r < L.n; ++r)
        for (offset_t k = L.po.row_ptr[r]; k < L.po.row_ptr[r + 1]; ++k) {
            i.push_back(L.begin + r);
            j.push_back(L.pho[std::size_t(L.po.col_idx[k])]);
            v.push_back(L.po.values[k]);
        }
}

template class DistAmg<double>;
template class DistAmg<float>;

}  // namespace heptane::dist
