// What heptane lsqr and heptane mlem share on the command line: the system's format, A^T
// strategy, precision, device and out-of-core options, and the choices made from them.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "apps/args.hpp"
#include "apps/common.hpp"

namespace heptane::cli {

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

    std::string prec;
    std::string device;
    Precision precision = Precision::double_;
    Format format = Format::csr;
    FormatOptions fo;
    std::shared_ptr<const Executor> exec;
    std::string dev;  ///< device_label(*exec)
    std::optional<OutOfCoreOptions> out_of_core;

private:
    std::string fmt_name_;
    std::string tr_name_;
    OutOfCoreChoice occ_;
};

}  // namespace heptane::cli
