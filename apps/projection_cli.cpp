#include "apps/projection_cli.hpp"

#include <cstdio>

namespace heptane::cli {

ProjectionCli::ProjectionCli(Args& args)
    : prec(args.get_or("--precision", "double")),
      device(args.get_or("--device", "auto")),
      fmt_name_(args.get_or("--format", "csr")),
      tr_name_(args.get_or("--transpose", "native")),
      occ_(parse_out_of_core(args))
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
    exec = pick_solve_executor(device, static_cast<long long>(a.nnz()), why);
    dev = device_label(*exec);
    if (!quiet && !why.empty()) std::fprintf(stderr, "device %s\n", why.c_str());
    out_of_core =
        out_of_core_choice(occ_, *exec, a.rows, a.cols, a.nnz(), precision, vectors, quiet);
    if (out_of_core) {
        format = Format::csr;  // the chunks are CSR; A^T x scatters
        fo.transpose = TransposeMode::scatter;
    }
}

}  // namespace heptane::cli
