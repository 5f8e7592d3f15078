// What heptane lsqr and heptane mlem share on the command line: the system's format, A^T
// strategy, precision, device and out-of-core options, and the choices made from them.
#pragma once

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

/// Under mpirun: this rank's rows (a group of the chunk file's chunks, or a block of rows of
/// about equal entries) as its out-of-core operator, wrapped by the group's row-block
/// operator; `row0` gets its first row.
template <class MT, class VT>
std::shared_ptr<const Operator<VT>> rank_rows(const Coo<double>& a, const std::string& hoc,
                                              const OocFileOptions& fopt,
                                              const std::shared_ptr<const Executor>& exec,
                                              const OutOfCoreOptions& ooc, const ProcessGroup& g,
                                              index_t& row0)
{
    std::shared_ptr<const Operator<VT>> op;
    std::vector<index_t> starts;
    if (!hoc.empty()) {
        ChunkFileSplit split = chunk_file_split<MT>(hoc, g.size, g.rank);
        starts = std::move(split.starts);
        OocFileOptions fo = fopt;
        fo.first_chunk = split.first;
        fo.last_chunk = split.last;
        op = std::make_shared<const OutOfCoreOperator<MT, VT>>(
            std::make_shared<const OocMatrix<MT>>(open_ooc_file<MT>(hoc, fo)), exec, ooc,
            fo.first_chunk, fo.last_chunk);
    } else {
        starts = row_block_bounds(a, g.size);
        op = make_out_of_core_operator<MT, VT>(
            row_slice(a, starts[std::size_t(g.rank)], starts[std::size_t(g.rank) + 1]), exec, ooc);
    }
    row0 = starts[std::size_t(g.rank)];
    if constexpr (std::is_same_v<VT, double>)
        return g.row_block(std::move(op), starts);
    else
        return g.row_block_fp32(std::move(op), starts);
}

}  // namespace heptane::cli
