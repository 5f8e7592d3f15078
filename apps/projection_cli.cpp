#include "apps/projection_cli.hpp"

#include <algorithm>
#include <cstdio>

#include "generators/matrix_file.hpp"

namespace heptane::cli {

ProjectionCli::ProjectionCli(Args& args)
    : prec(args.get_or("--precision", "double")),
      prec_given_(args.get("--precision").has_value()),
      device(args.get_or("--device", "auto")),
      fmt_name_(args.get_or("--format", "csr")),
      tr_name_(args.get_or("--transpose", "native")),
      occ_(parse_out_of_core(args, true))
{
}

void ProjectionCli::resolve()
{
    precision = precision_option(prec);
    parse_format_and_transpose(fmt_name_, tr_name_, format, fo);
    if (device != "auto") (void)pick_executor(device);  // no such device: the error before the read
}

void ProjectionCli::place(const Coo<double>& a, int vectors, bool quiet)
{
    std::string why;
    exec =
        given_exec ? given_exec : pick_solve_executor(device, static_cast<long long>(a.nnz()), why);
    dev = device_label(*exec);
    if (!quiet && !why.empty()) std::fprintf(stderr, "device %s\n", why.c_str());
    OutOfCoreChoice c = occ_;
    if (!force_out_of_core.empty()) {
        if (c.mode == "off") throw UsageError("--out-of-core off: " + force_out_of_core);
        c.mode = "on";
    }
    out_of_core = out_of_core_choice(c, *exec, a.rows, a.cols, a.nnz(), precision, vectors, quiet);
    if (out_of_core) {
        format = Format::csr;  // the chunks are CSR; A^T x scatters
        fo.transpose = TransposeMode::scatter;
    }
}

void ProjectionCli::place(const OocFileInfo& f, int vectors, bool quiet)
{
    precision = chunk_file_precision(f, prec, prec_given_);
    std::string why;
    exec =
        given_exec ? given_exec : pick_solve_executor(device, static_cast<long long>(f.nnz), why);
    dev = device_label(*exec);
    if (!quiet && !why.empty()) std::fprintf(stderr, "device %s\n", why.c_str());
    check_chunk_file_choices(occ_);
    OutOfCoreChoice c = occ_;
    c.mode = "on";
    out_of_core = out_of_core_choice(c, *exec, f.rows, f.cols, f.nnz, precision, vectors, true);
    format = Format::csr;
    fo.transpose = TransposeMode::scatter;
    if (!quiet) {
        const OocFileOptions o = file_options();
        std::fprintf(stderr,
                     "out of core from the chunk file: %.2f GB in %d chunks, up to %.2f GB of them "
                     "in host memory\n",
                     double(f.bytes) / 1e9, f.chunks,
                     double(std::min<std::size_t>(o.host_memory, f.bytes)) / 1e9);
    }
}

void ProjectionCli::place(const ProjectionInput& s, int vectors, bool quiet)
{
    if (s.chunk_file)
        place(s.info, vectors, quiet);
    else
        place(s.a, vectors, quiet);
}

ProjectionInput read_projection_input(const std::string& path)
{
    ProjectionInput s;
    s.chunk_file = is_ooc_file(path);
    if (s.chunk_file) {
        s.info = ooc_file_info(path);
        s.a.rows = s.info.rows;
        s.a.cols = s.info.cols;
        s.nnz = s.info.nnz;
    } else {
        s.a = read_matrix_file(path).a;
        s.nnz = s.a.nnz();
    }
    return s;
}

OocFileOptions ProjectionCli::file_options() const
{
    OocFileOptions o;
    o.host_memory = host_memory_budget(occ_);
    o.pinned = exec && exec->is_cuda();
    return o;
}

Coo<double> row_slice(const Coo<double>& a, index_t r0, index_t r1)
{
    const auto lo = std::lower_bound(a.row.host().begin(), a.row.host().end(), r0);
    const auto hi = std::lower_bound(a.row.host().begin(), a.row.host().end(), r1);
    const std::size_t k0 = std::size_t(lo - a.row.host().begin()),
                      k1 = std::size_t(hi - a.row.host().begin());
    std::vector<index_t> row(k1 - k0), col(k1 - k0);
    std::vector<double> val(k1 - k0);
    for (std::size_t k = k0; k < k1; ++k) {
        row[k - k0] = a.row[k] - r0;
        col[k - k0] = a.col[k];
        val[k - k0] = a.val[k];
    }
    return Coo<double>{r1 - r0, a.cols, Array<index_t>(std::move(row)),
                       Array<index_t>(std::move(col)), Array<double>(std::move(val))};
}

ProcessGroup projection_ranks(ProjectionCli& pc, bool& quiet, const char* command)
{
    ProcessGroup group;
    if (!launched_by_mpirun()) return group;
#ifdef HEPTANE_CLI_MPI
    group = mpi_process_group(pc.device);
    pc.given_exec = group.exec;
    pc.force_out_of_core = "under mpirun each rank streams its own rows out of core";
    if (group.rank != 0) quiet = true;
    return group;
#else
    (void)pc;
    (void)quiet;
    throw UsageError(std::string("heptane ") + command +
                     " runs under mpirun, but this build has no MPI (configure with MPI found "
                     "and HEPTANE_WITH_MPI=ON)");
#endif
}

}  // namespace heptane::cli
