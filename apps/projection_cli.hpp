// What heptane lsqr and heptane mlem share on the command line: the system's format, A^T
// strategy, precision, device and out-of-core options, and the choices made from them.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "solver/mlem/mlem.hpp"

namespace heptane::cli {

/// A of lsqr / mlem: read from Matrix Market or PETSc binary, or only the shape of a chunk
/// file (.hoc), whose blocks the out-of-core operator reads.
struct ProjectionInput {
    Coo<double> a;  ///< the entries; for a chunk file only rows and cols
    bool chunk_file = false;
    OocFileInfo info;  ///< a chunk file's header
    offset_t nnz = 0;
};
ProjectionInput read_projection_input(const std::string& path);
struct ProjectionCli;
/// Under mpirun (a build with MPI): the ranks, each rank's executor given to `pc`, out of
/// core forced, `quiet` set on every rank but 0; one process otherwise. UsageError naming
/// `command` under mpirun without MPI.
ProcessGroup projection_ranks(ProjectionCli& pc, bool& quiet, const char* command);
/// Rows [r0, r1) of canonical COO `a`, renumbered from 0 (a rank's rows under mpirun).
Coo<double> row_slice(const Coo<double>& a, index_t r0, index_t r1);

struct ProjectionCli {
    /// Reads --format, --transpose, --precision, --device and the out-of-core options (before
    /// Args::finish).
    explicit ProjectionCli(Args& args);
    /// After Args::finish: the precision, the format and A^T strategy (UsageError for bad
    /// names); a named device that does not exist is reported here, before the system is read.
    void resolve();
    /// After the read: the executor (auto: by the solve's measured model, the choice on
    /// stderr unless `quiet`), then out of core's choice for `vectors` vectors of the method
    /// (when chosen: CSR chunks, A^T by scatter).
    void place(const Coo<double>& a, int vectors, bool quiet);
    /// Either of the two by the system's kind.
    void place(const ProjectionInput& s, int vectors, bool quiet);
    /// The same for a chunk file (always out of core): the executor by the file's entries,
    /// the precision from the file's values when --precision is not given (fp32: mixed,
    /// fp64: double; UsageError when it is given and does not match), the host budget.
    void place(const OocFileInfo& f, int vectors, bool quiet);
    /// Options for open_ooc_file after place(chunk file).
    OocFileOptions file_options() const;

    std::string prec;
    std::string device;
    Precision precision = Precision::double_;
    Format format = Format::csr;
    FormatOptions fo;
    std::shared_ptr<const Executor> exec;
    std::string dev;  ///< device_label(*exec)
    std::optional<OutOfCoreOptions> out_of_core;
    /// Set before place(): the executor to use (a rank's under mpirun) instead of choosing.
    std::shared_ptr<const Executor> given_exec;
    /// Set before place(): out of core whatever --out-of-core auto would choose ("off" is
    /// then a usage error naming `why`).
    std::string force_out_of_core;

private:
    bool prec_given_ = false;
    std::string fmt_name_;
    std::string tr_name_;
    OutOfCoreChoice occ_;
};

/// Under mpirun: this rank's rows as chunks (`first`..`last` of `m`'s), a group of the chunk
/// file's chunks of about equal bytes (only those read into memory), or of canonical COO `a`
/// a block of rows of about equal entries cut into CSR chunks; `starts`: every rank's first row,
/// then the row count.
template <class MT>
struct RankChunks {
    std::shared_ptr<const OocMatrix<MT>> m;
    index_t first = 0, last = 0;
    std::vector<index_t> starts;
};
template <class MT>
RankChunks<MT> rank_chunks(const Coo<double>& a, const std::string& hoc, const OocFileOptions& fopt,
                           const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions& ooc,
                           const ProcessGroup& g)
{
    RankChunks<MT> r;
    if (!hoc.empty()) {
        ChunkFileSplit split = chunk_file_split<MT>(hoc, g.size, g.rank);
        r.starts = std::move(split.starts);
        OocFileOptions fo = fopt;
        fo.first_chunk = r.first = split.first;
        fo.last_chunk = r.last = split.last;
        r.m = std::make_shared<const OocMatrix<MT>>(open_ooc_file<MT>(hoc, fo));
    } else {
        r.starts = row_block_bounds(a, g.size);
        const Coo<double> mine =
            row_slice(a, r.starts[std::size_t(g.rank)], r.starts[std::size_t(g.rank) + 1]);
        r.m = std::make_shared<const OocMatrix<MT>>(
            make_ooc_matrix<MT>(mine, ooc.chunk_bytes, exec->is_cuda()));  // CSR chunks
        r.last = static_cast<index_t>(r.m->chunks().size());
    }
    return r;
}

/// Under mpirun: this rank's rows (rank_chunks) as its out-of-core operator, wrapped by the
/// group's row-block operator; `row0` gets its first row.
template <class MT, class VT>
std::shared_ptr<const Operator<VT>> rank_rows(const Coo<double>& a, const std::string& hoc,
                                              const OocFileOptions& fopt,
                                              const std::shared_ptr<const Executor>& exec,
                                              const OutOfCoreOptions& ooc, const ProcessGroup& g,
                                              index_t& row0)
{
    RankChunks<MT> rc = rank_chunks<MT>(a, hoc, fopt, exec, ooc, g);
    std::shared_ptr<const Operator<VT>> op =
        std::make_shared<const OutOfCoreOperator<MT, VT>>(rc.m, exec, ooc, rc.first, rc.last);
    row0 = rc.starts[std::size_t(g.rank)];
    if constexpr (std::is_same_v<VT, double>)
        return g.row_block(std::move(op), rc.starts);
    else
        return g.row_block_fp32(std::move(op), rc.starts);
}

/// OSEM under mpirun: this rank's rows cut into `subsets` groups of its chunks (of about
/// equal bytes; a device budget split evenly between them), subset s being every rank's group
/// s; each group wrapped by the group's row-block operator (A^T summed over the ranks). `row0`
/// gets the rank's first row, `layout` (on every rank) every subset's rows over the ranks,
/// 1-based: "1..40,81..120 | 41..80,121..160". UsageError on every rank when some rank has
/// fewer chunks than `subsets` (checked together, so that no rank waits alone).
template <class MT, class VT>
std::vector<std::shared_ptr<const Operator<VT>>> rank_subsets(
    const Coo<double>& a, const std::string& hoc, const OocFileOptions& fopt,
    const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions& ooc, const ProcessGroup& g,
    int subsets, index_t& row0, std::string& layout)
{
    RankChunks<MT> rc = rank_chunks<MT>(a, hoc, fopt, exec, ooc, g);
    const auto& m = rc.m;
    const index_t first = rc.first, last = rc.last;
    const std::vector<index_t>& starts = rc.starts;
    row0 = starts[std::size_t(g.rank)];
    // the fewest chunks of any rank: every rank's count (a sum of vectors zero but at its own)
    std::vector<double> counts(std::size_t(g.size), 0.0);
    counts[std::size_t(g.rank)] = double(last - first);
    g.sum(counts.data(), g.size);
    const double fewest = *std::min_element(counts.begin(), counts.end());
    if (fewest < subsets)
        throw UsageError("--subsets " + std::to_string(subsets) + ": a rank's rows are only " +
                         std::to_string(static_cast<long long>(fewest)) +
                         " chunks (one subset takes at least one chunk of every rank): fewer "
                         "subsets, or a smaller --chunk-bytes");
    auto blocks = make_out_of_core_subsets<MT, VT>(m, subsets, exec, ooc, first, last);
    // every rank's rows of every group, then each group's row partition over the ranks
    const std::size_t S = std::size_t(subsets), P = std::size_t(g.size);
    std::vector<double> rows(P * S, 0.0);
    for (std::size_t s = 0; s < S; ++s) rows[std::size_t(g.rank) * S + s] = blocks[s]->rows();
    g.sum(rows.data(), static_cast<int>(rows.size()));
    std::vector<std::shared_ptr<const Operator<VT>>> ops;
    layout.clear();
    std::vector<index_t> at(starts.begin(), starts.end() - 1);  // next row of each rank
    for (std::size_t s = 0; s < S; ++s) {
        std::vector<index_t> part{0};
        if (s > 0) layout += " | ";
        for (std::size_t p = 0; p < P; ++p) {
            const index_t n = static_cast<index_t>(rows[p * S + s]);
            part.push_back(part.back() + n);
            if (p > 0) layout += ",";
            layout += std::to_string(at[p] + 1) + ".." + std::to_string(at[p] + n);
            at[p] += n;
        }
        if constexpr (std::is_same_v<VT, double>)
            ops.push_back(g.row_block(std::move(blocks[s]), part));
        else
            ops.push_back(g.row_block_fp32(std::move(blocks[s]), part));
    }
    return ops;
}

}  // namespace heptane::cli
