// The harness of heptane bench lsqr and bench mlem (bench_projection.hpp).
#include "apps/bench_projection.hpp"

#include <cstdio>
#include <fstream>

#include "apps/bench.hpp"
#include "core/bandwidth.hpp"
#include "core/error.hpp"
#include "solver/mlem/mlem.hpp"

namespace heptane::cli {

ProjectionBench parse_projection_bench(Args& args, int iters, int check_iters, bool subsets,
                                       const char* rhs)
{
    ProjectionBench b;
    b.spec.detectors = static_cast<index_t>(args.get_int("--detectors", 256));
    b.spec.image = static_cast<index_t>(args.get_int("--image", 128));
    b.spec.rings = static_cast<index_t>(args.get_int("--rings", 1));
    b.spec.slices = static_cast<index_t>(args.get_int("--slices", 1));
    b.formats = args.get_or("--formats", "csr,ell,hyb,coo");
    b.transposes = args.get_or("--transpose", "native,stored");
    b.prec = args.get_or("--precision", "double");
    b.device = args.get_or("--device", "auto");
    b.iters = static_cast<int>(args.get_int("--iters", iters));
    b.check_iters = static_cast<int>(args.get_int("--check-iters", check_iters));
    b.reps = static_cast<int>(args.get_int("--reps", 10));
    if (subsets) b.subsets = static_cast<int>(args.get_int("--subsets", 0));
    b.csv = args.get("--csv");
    b.json = args.get("--json");
    args.finish(0, 2);
    if (args.positionals().size() == 1)
        throw UsageError(std::string("give both A.mtx and ") + rhs + ".mtx, or neither");
    if (b.iters < 1 || b.check_iters < 1 || b.reps < 1)
        throw UsageError("--iters, --check-iters and --reps must be >= 1");
    return b;
}

Coo<double> transposed(const Coo<double>& a)
{
    Coo<double> t{a.cols, a.rows, a.col, a.row, a.val};
    canonicalize(t);
    return t;
}

double print_projection_system(const char* method, const Executor& exec, const std::string& prec,
                               const Coo<double>& a, const std::string& source, int reps, int iters)
{
    const double copy_gbs = measure_copy_bandwidth(exec);
    std::printf("%s on %s (%s): %d x %d, %lld entries (%.1f per row)\n", method,
                exec.name().c_str(), prec.c_str(), a.rows, a.cols, static_cast<long long>(a.nnz()),
                double(a.nnz()) / a.rows);
    std::printf(
        "system %s; copy bandwidth %.1f GB/s (read + written, this run); median of %d; "
        "iteration over %d iterations\n\n",
        source.c_str(), copy_gbs, reps, iters);
    return copy_gbs;
}

int for_each_projection_case(
    const ProjectionBench& b, std::vector<ProjectionRow>& rows,
    const std::function<void(ProjectionRow&, Format, const FormatOptions&)>& measure,
    const std::function<void(const ProjectionRow&)>& print)
{
    int failed = 0;
    for (const auto& fname : split_commas(b.formats)) {
        for (const auto& tname : split_commas(b.transposes)) {
            ProjectionRow r;
            FormatOptions fo;
            Format fmt;
            parse_format_and_transpose(fname, tname, fmt, fo);
            r.format = fname;
            r.transpose = tname + " (" + describe_transpose(fmt, fo.transpose) + ")";
            try {
                measure(r, fmt, fo);
            } catch (const Error& e) {
                r.status = std::string("n/a: ") + e.what();
            }
            if (r.status == "FAILED") ++failed;
            rows.push_back(r);
            print(r);
            std::fflush(stdout);
        }
    }
    return failed;
}

void write_projection_results(const ProjectionBench& b, const std::string& source,
                              const std::string& dev, const std::string& device_name,
                              const Coo<double>& a, double copy_gbs,
                              const std::vector<ProjectionRow>& rows, bool osem)
{
    if (b.csv) {
        std::ofstream f(*b.csv);
        HEPTANE_ENSURE(f.good(), IoError, "cannot write " << *b.csv);
        f << "system,device,precision,rows,cols,nnz,copy_gbs,format,transpose,status,check_err,"
             "fwd_s,fwd_bytes,back_s,back_bytes,iter_s,iter_floor_bytes,"
          << (osem ? "osem_subsets,osem_iter_s," : "") << "fwd_min_s,back_min_s,iter_min_s\n";
        for (const auto& r : rows) {
            f << '"' << source << "\"," << dev << ',' << b.prec << ',' << a.rows << ',' << a.cols
              << ',' << a.nnz() << ',' << copy_gbs << ',' << r.format << ",\"" << r.transpose
              << "\",\"" << r.status << "\"," << r.check_err << ',' << r.fwd_s << ',' << r.fwd_bytes
              << ',' << r.back_s << ',' << r.back_bytes << ',' << r.iter_s << ',' << r.iter_bytes;
            if (osem) f << ',' << b.subsets << ',' << r.osem_iter_s;
            f << ',' << r.fwd_min << ',' << r.back_min << ',' << r.iter_min << '\n';
        }
    }
    if (b.json) {
        std::ofstream f(*b.json);
        HEPTANE_ENSURE(f.good(), IoError, "cannot write " << *b.json);
        f << "{\"system\": " << json_string(source) << ", \"device\": " << json_string(device_name)
          << ", \"precision\": \"" << b.prec << "\", \"rows\": " << a.rows
          << ", \"cols\": " << a.cols << ", \"nnz\": " << a.nnz() << ", \"copy_gbs\": " << copy_gbs
          << ", \"results\": [\n";
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i];
            f << "  {\"format\": \"" << r.format
              << "\", \"transpose\": " << json_string(r.transpose)
              << ", \"status\": " << json_string(r.status) << ", \"check_err\": " << r.check_err
              << ", \"fwd_s\": " << r.fwd_s << ", \"fwd_bytes\": " << r.fwd_bytes
              << ", \"back_s\": " << r.back_s << ", \"back_bytes\": " << r.back_bytes
              << ", \"iter_s\": " << r.iter_s << ", \"iter_floor_bytes\": " << r.iter_bytes;
            if (osem)
                f << ", \"osem_subsets\": " << b.subsets << ", \"osem_iter_s\": " << r.osem_iter_s;
            f << ", \"fwd_min_s\": " << r.fwd_min << ", \"back_min_s\": " << r.back_min
              << ", \"iter_min_s\": " << r.iter_min << "}" << (i + 1 < rows.size() ? ",\n" : "\n");
        }
        f << "]}\n";
    }
}

}  // namespace heptane::cli
