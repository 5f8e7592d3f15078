// What heptane lsqr and heptane mlem share on the command line: the system's format, A^T
// strategy, precision, device and out-of-core options, and the choices made from them.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "apps/args.hpp"
#include "apps/common.hpp"

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

}  // namespace heptane::cli
