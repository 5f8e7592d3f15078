// The exchange plan of a halo of arbitrary global columns (column_plan.hpp).
#include "distributed/column_plan.hpp"

#include <algorithm>

namespace heptane::dist {

std::size_t ColumnPlan::send_count() const noexcept
{
    std::size_t total = 0;
    for (const auto& rows : send_rows) total += rows.size();
    return total;
}

std::vector<long long> row_starts(MPI_Comm comm, index_t n)
{
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    std::vector<long long> s(std::size_t(ranks) + 1, 0);
    long long mine = n;
    MPI_Allgather(&mine, 1, MPI_LONG_LONG, s.data() + 1, 1, MPI_LONG_LONG, comm);
    for (int p = 0; p < ranks; ++p) s[std::size_t(p) + 1] += s[std::size_t(p)];
    return s;
}

ColumnPlan make_column_plan(MPI_Comm comm, const std::vector<long long>& halo,
                            const std::vector<long long>& starts, long long begin)
{
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    ColumnPlan pl;
    // who owns which halo columns (contiguous runs: the halo ascends, the ranges do too)
    std::vector<int> want(std::size_t(ranks), 0);
    for (std::size_t h = 0; h < halo.size(); ++h) {
        const int p =
            int(std::upper_bound(starts.begin(), starts.end(), halo[h]) - starts.begin()) - 1;
        if (pl.recv_peer.empty() || pl.recv_peer.back() != p) {
            pl.recv_peer.push_back(p);
            pl.recv_at.push_back(int(h));
            pl.recv_n.push_back(0);
        }
        ++pl.recv_n.back();
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
    MPI_Alltoallv(halo.data(), want.data(), sd.data(), MPI_LONG_LONG, asked.data(), give.data(),
                  rd.data(), MPI_LONG_LONG, comm);
    for (int p = 0; p < ranks; ++p) {
        if (give[std::size_t(p)] == 0) continue;
        pl.send_peer.push_back(p);
        std::vector<index_t> rows;
        for (int k = rd[std::size_t(p)]; k < rd[std::size_t(p) + 1]; ++k)
            rows.push_back(index_t(asked[std::size_t(k)] - begin));
        pl.send_rows.push_back(std::move(rows));
    }
    return pl;
}

void post_exchange(MPI_Comm comm, const ColumnPlan& pl, const void* packed, void* halo,
                   MPI_Datatype type, int tag, std::vector<MPI_Request>& req)
{
    int size = 0;
    MPI_Type_size(type, &size);
    for (std::size_t q = 0; q < pl.recv_peer.size(); ++q) {
        req.emplace_back();
        MPI_Irecv(static_cast<char*>(halo) + std::size_t(pl.recv_at[q]) * std::size_t(size),
                  pl.recv_n[q], type, pl.recv_peer[q], tag, comm, &req.back());
    }
    std::size_t at = 0;
    for (std::size_t q = 0; q < pl.send_peer.size(); ++q) {
        const std::size_t n = pl.send_rows[q].size();
        req.emplace_back();
        MPI_Isend(static_cast<const char*>(packed) + at * std::size_t(size), int(n), type,
                  pl.send_peer[q], tag, comm, &req.back());
        at += n;
    }
}

template <class T>
void start_exchange(MPI_Comm comm, const ColumnPlan& pl, const T* x, T* halo, MPI_Datatype type,
                    int tag, std::vector<T>& sbuf, std::vector<MPI_Request>& req)
{
    sbuf.resize(pl.send_count());
    std::size_t at = 0;
    for (const std::vector<index_t>& rows : pl.send_rows)
        for (const index_t r : rows) sbuf[at++] = x[r];
    post_exchange(comm, pl, sbuf.data(), halo, type, tag, req);
}

template void start_exchange<double>(MPI_Comm, const ColumnPlan&, const double*, double*,
                                     MPI_Datatype, int, std::vector<double>&,
                                     std::vector<MPI_Request>&);
template void start_exchange<float>(MPI_Comm, const ColumnPlan&, const float*, float*, MPI_Datatype,
                                    int, std::vector<float>&, std::vector<MPI_Request>&);
template void start_exchange<long long>(MPI_Comm, const ColumnPlan&, const long long*, long long*,
                                        MPI_Datatype, int, std::vector<long long>&,
                                        std::vector<MPI_Request>&);

}  // namespace heptane::dist
