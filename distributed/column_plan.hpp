// The exchange of a halo of arbitrary global columns between row-split ranks (MPIAIJ's layout:
// each rank's rows one contiguous range, the ranges in rank order), as the general operator
// (dist_csr.hpp) and every level of the AMG over the ranks (dist_amg.hpp) need it:
//
//     starts = row_starts(comm, n);                            // collective
//     plan = make_column_plan(comm, halo, starts, starts[rank]); // collective, once a pattern
//     start_exchange(comm, plan, x, halo_values, MPI_DOUBLE, tag, sbuf, req);
//     ... work that needs no halo ...
//     MPI_Waitall(req)                                          // halo_values now hold x there
//
// Host memory only (a GPU's values are packed on the device and copied down first:
// post_exchange).
#pragma once

#include <mpi.h>

#include <vector>

#include "core/types.hpp"

namespace heptane::dist {

/// Who sends what to whom for a halo of global columns: halo positions
/// [recv_at[q], recv_at[q] + recv_n[q]) come from recv_peer[q]; this rank's rows send_rows[q]
/// (numbered from its first row) go to send_peer[q].
struct ColumnPlan {
    std::vector<int> recv_peer, recv_at, recv_n, send_peer;
    std::vector<std::vector<index_t>> send_rows;
    /// Σ send_rows[q].size(): the values packed per exchange.
    std::size_t send_count() const noexcept;
};

/// Row starts of every rank (ranks + 1 entries) from each rank's row count n (collective).
std::vector<long long> row_starts(MPI_Comm comm, index_t n);

/// The plan of a halo of global columns `halo` (ascending, none of them this rank's rows
/// [begin, ...)), `starts` the ranks' row starts (collective: each owner learns which of its
/// rows to send).
ColumnPlan make_column_plan(MPI_Comm comm, const std::vector<long long>& halo,
                            const std::vector<long long>& starts, long long begin);

/// Posts the exchange from values already packed: `packed` holds the plan's send_rows in order
/// (send_count() values of `type`), `halo` receives at the plan's positions. The requests are
/// appended to req; MPI_Waitall on them finishes it (packed untouched until then).
void post_exchange(MPI_Comm comm, const ColumnPlan& pl, const void* packed, void* halo,
                   MPI_Datatype type, int tag, std::vector<MPI_Request>& req);

/// Posts the exchange that fills halo (the plan's positions) with x at the owners' rows: the
/// receives, this rank's rows packed into sbuf, the sends. The requests are appended to req;
/// MPI_Waitall on them finishes it (x and sbuf untouched until then). T: double, float or
/// long long, `type` the matching MPI type.
template <class T>
void start_exchange(MPI_Comm comm, const ColumnPlan& pl, const T* x, T* halo, MPI_Datatype type,
                    int tag, std::vector<T>& sbuf, std::vector<MPI_Request>& req);

}  // namespace heptane::dist
