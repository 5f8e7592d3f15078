// heptane spmv: one sparse matrix-vector product y = A x (or A^T x) in a chosen format,
// precision and device; checks the result against the fp64 CSR CPU product, then reports
// the median time and the effective bandwidth (floor bytes / time, BENCHMARKS.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "core/array.hpp"
#include "core/bandwidth.hpp"
#include "core/error.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/detect/detect.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/matrix_file.hpp"

namespace heptane::cli {

namespace {
const char* spmv_usage =
    "usage: heptane spmv FILE | --generate JxHxIxNc[:model] [options]\n"
    "FILE: Matrix Market or PETSc binary (told by its first bytes), or a chunk file (A.hoc,\n"
    "heptane convert ... -o A.hoc): the matrix stays in the file and streams out of core.\n\n"
    "One product y = A x, checked against the fp64 CSR product on the CPU, then timed.\n"
    "A chunk file's product is checked against fp64 sums on the CPU of the entries read from\n"
    "its blocks one at a time (no chunk kernel; the matrix need not fit in memory); --format\n"
    "does not apply (its chunks are its format) and --precision follows its values (fp64:\n"
    "double; fp32: mixed (default) or single).\n"
    "  --format F        auto (default: the format `heptane info` picks) or one of:\n%s"
    "  --precision P     double | single | mixed (fp32 values, fp64 vectors); default double\n"
    "  --device D        auto | cpu | gpu | gpu:N (default auto: the GPU when there is one\n"
    "                    and the matrix has enough stored entries for it to win, by heptane\n"
    "                    solve's measured model (scripts/device-crossover.sh); the choice is\n"
    "                    printed)\n"
    "  --transpose       compute A^T x\n"
    "  --block-size B    BSR / BDIA-GH block size (default: detected)\n"
    "  -x FILE           x as a vector file (default: x_i = 1 + (i mod 7)/7)\n"
    "  -o FILE           write y (Matrix Market array; PETSc binary for FILE.petsc)\n"
    "  --reps N          timed repetitions after one warm-up (default 20); median reported\n"
    "  --resident-fraction R  out of core: keep at most this fraction of the chunks' bytes\n"
    "                    resident (default 1: as many as --device-memory allows)\n"
    "  --json            one JSON object on stdout\n"
    "Out of core, the floor of a product is (streamed bytes) / (pinned host-to-device\n"
    "bandwidth) + (resident bytes + vectors) / (device copy bandwidth), both measured in the run\n"
    "and printed with the time over that floor.\n";

struct Result {
    std::vector<double> y;
    std::vector<double> times;
    std::string describe;
    OocLayout layout;  ///< out of core only
};

/// One warm-up product (the result checked), then `reps` timed ones.
template <class VT>
Result time_products(const Operator<VT>* op, const std::shared_ptr<const Executor>& exec,
                     bool transpose, const std::vector<double>& x, int reps, OocLayout layout)
{
    const std::size_t ny = std::size_t(transpose ? op->cols() : op->rows());
    std::vector<VT> xh(x.begin(), x.end());
    Array<VT> xd = Array<VT>(std::move(xh)).to(exec);
    Array<VT> yd(exec, ny);
    Result r;
    r.describe = op->describe();
    r.layout = layout;
    auto once = [&] {
        if (transpose)
            op->apply_transpose(VT(1), xd.data(), VT(0), yd.data());
        else
            op->apply(VT(1), xd.data(), VT(0), yd.data());
        exec->synchronize();
    };
    once();  // warm-up, and the result that is checked
    auto yv = yd.to_vector();
    r.y.assign(yv.begin(), yv.end());
    for (int i = 0; i < reps; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        once();
        r.times.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return r;
}

template <class MT, class VT>
Result run(const Coo<double>& a, Format f, const FormatOptions& opt,
           std::shared_ptr<const Executor> exec, bool transpose, const std::vector<double>& x,
           int reps, const OutOfCoreOptions* ooc)
{
    if (ooc) {
        auto o = make_out_of_core_operator<MT, VT>(a, exec, *ooc);
        return time_products<VT>(o.get(), exec, transpose, x, reps, o->layout());
    }
    auto o = make_matrix_operator<MT, VT>(a, f, exec, opt);
    return time_products<VT>(o.get(), exec, transpose, x, reps, {});
}

/// What the report prints beside the timing.
struct Shown {
    std::string source, format, precision;
    index_t rows = 0, cols = 0;
    offset_t nnz = 0;
    bool transpose = false, out_of_core = false, json = false;
    std::size_t value_bytes = 8;  ///< of x and y
    std::string check = "fp64 CSR on the CPU";
    std::string file_note;  ///< a chunk file: where its streamed chunks come from
};

/// Prints the result (text or JSON); returns the exit status (1 when the check failed).
int report(const Shown& w, Result& r, const Executor& exec, double rel, double tol, SpmvTraffic t,
           const std::optional<std::string>& yfile)
{
    const bool ok = rel <= tol;
    std::sort(r.times.begin(), r.times.end());
    const double med = r.times[r.times.size() / 2];
    // out of core: the floor of the product from the two measured bandwidths
    double h2d = 0, dev_bw = 0, floor_s = 0;
    if (w.out_of_core) {
        t.matrix_bytes = double(r.layout.bytes);
        t.vector_bytes = double(w.value_bytes) * (double(w.rows) + double(w.cols));
        if (exec.is_cuda()) {
            h2d = measure_h2d_bandwidth(exec);
            dev_bw = measure_copy_bandwidth(exec);
            floor_s = double(r.layout.streamed_bytes) / (h2d * 1e9) +
                      (double(r.layout.resident_bytes) + t.vector_bytes) / (dev_bw * 1e9);
        }
    }
    const double gbs = t.total() / med / 1e9;
    const double gflops = 2.0 * double(w.nnz) / med / 1e9;
    if (yfile)
        write_vector_file(*yfile, r.y,
                          w.transpose ? "y = A^T x by heptane spmv" : "y = A x by heptane spmv");
    if (w.json) {
        std::printf(
            "{\"source\": %s, \"operator\": %s, \"format\": \"%s\", \"precision\": \"%s\", "
            "\"device\": %s, \"transpose\": %s, \"rows\": %d, \"cols\": %d, \"nnz\": %lld, "
            "\"median_seconds\": %.9f, \"min_seconds\": %.9f, \"max_seconds\": %.9f, "
            "\"floor_bytes\": %.0f, \"gb_per_s\": %.2f, \"gflop_per_s\": %.2f, "
            "\"check\": %s, \"check_rel_error\": %.3e, \"check_passed\": %s",
            json_string(w.source).c_str(), json_string(r.describe).c_str(), w.format.c_str(),
            w.precision.c_str(), json_string(exec.name()).c_str(), w.transpose ? "true" : "false",
            w.rows, w.cols, static_cast<long long>(w.nnz), med, r.times.front(), r.times.back(),
            t.total(), gbs, gflops, json_string(w.check).c_str(), rel, ok ? "true" : "false");
        if (w.out_of_core)
            std::printf(
                ", \"out_of_core\": {\"chunks\": %d, \"resident_chunks\": %d, \"bytes\": %zu, "
                "\"resident_bytes\": %zu, \"streamed_bytes\": %zu, \"file_chunks\": %d, "
                "\"file_bytes\": %zu, \"buffer_bytes\": %zu, "
                "\"budget\": %zu, \"h2d_gb_per_s\": %.2f, \"copy_gb_per_s\": %.2f, "
                "\"floor_seconds\": %.9f, \"over_floor\": %.4f, \"streamed_gb_per_s\": %.2f}",
                r.layout.chunks, r.layout.resident_chunks, r.layout.bytes, r.layout.resident_bytes,
                r.layout.streamed_bytes, r.layout.file_chunks, r.layout.file_bytes,
                r.layout.buffer_bytes, r.layout.budget, h2d, dev_bw, floor_s,
                floor_s > 0 ? med / floor_s : -1.0, double(r.layout.streamed_bytes) / med / 1e9);
        std::printf("}\n");
    } else {
        std::printf("%s\n", r.describe.c_str());
        if (!w.file_note.empty()) std::printf("  %s\n", w.file_note.c_str());
        std::printf("  %s: median %.3f ms (min %.3f, max %.3f, %zu reps)\n",
                    w.transpose ? "y = A^T x" : "y = A x", med * 1e3, r.times.front() * 1e3,
                    r.times.back() * 1e3, r.times.size());
        if (w.out_of_core && floor_s > 0)
            std::printf(
                "  out of core: %.3f GB streamed per product at %.1f GB/s (%.1f %% of the %.1f "
                "GB/s\n"
                "  pinned host-to-device copy), %.3f GB resident; floor %.3f ms (streamed / H2D +\n"
                "  resident and vectors / %.0f GB/s device copy): time %.3fx the floor\n",
                double(r.layout.streamed_bytes) / 1e9, double(r.layout.streamed_bytes) / med / 1e9,
                100.0 * double(r.layout.streamed_bytes) / med / 1e9 / h2d, h2d,
                double(r.layout.resident_bytes) / 1e9, floor_s * 1e3, dev_bw, med / floor_s);
        else
            std::printf("  %.1f GB/s effective (%.1f MB at the floor), %.2f GFLOP/s\n", gbs,
                        t.total() / 1e6, gflops);
        std::printf("  check against %s: relative error %.2e (%s, tolerance %.0e)\n",
                    w.check.c_str(), rel, ok ? "ok" : "FAILED", tol);
    }
    return ok ? 0 : 1;
}

/// x from -x FILE, or x_i = 1 + (i mod 7) / 7.
std::vector<double> product_input(const std::optional<std::string>& xfile, std::size_t nx)
{
    std::vector<double> x;
    if (xfile) {
        x = read_vector_file(*xfile);
        HEPTANE_ENSURE(x.size() == nx, DimensionMismatch,
                       "x has " << x.size() << " entries, the product needs " << nx);
    } else {
        x.resize(nx);
        for (std::size_t i = 0; i < nx; ++i) x[i] = 1.0 + double(i % 7) / 7.0;
    }
    return x;
}

/// max |y - ref| relative to max_i scale_i (the size of the terms summed).
double relative_error(const std::vector<double>& y, const std::vector<double>& ref,
                      const std::vector<double>& scale)
{
    double err = 0, sc = 1e-300;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double d = std::abs(y[i] - ref[i]);
        err = (d > err || std::isnan(d)) ? d : err;
        sc = std::max(sc, scale[i]);
    }
    return err / sc;
}

/// heptane spmv A.hoc: the product streamed from the chunk file.
template <class MT>
int spmv_chunk_file(const std::string& path, const OocFileInfo& info, Precision pr,
                    const std::string& prec, const std::string& device, bool transpose,
                    const OutOfCoreChoice& occ, double resident,
                    const std::optional<std::string>& xfile,
                    const std::optional<std::string>& yfile, int reps, bool json, bool quiet)
{
    std::string device_why;
    const auto exec = pick_solve_executor(device, static_cast<long long>(info.nnz), device_why);
    if (!quiet && !device_why.empty()) std::fprintf(stderr, "device %s\n", device_why.c_str());
    OocFileOptions fo;
    fo.host_memory = host_memory_budget(occ);
    fo.pinned = exec->is_cuda();
    const auto m = std::make_shared<const OocMatrix<MT>>(open_ooc_file<MT>(path, fo));
    OutOfCoreChoice oc = occ;
    oc.mode = "on";
    std::optional<OutOfCoreOptions> oo =
        out_of_core_choice(oc, *exec, info.rows, info.cols, info.nnz, pr, 2, true);
    oo->max_resident_fraction = resident;
    const std::vector<double> x =
        product_input(xfile, std::size_t(transpose ? info.rows : info.cols));
    Result r;
    bool fp32_vectors = false;
    if constexpr (std::is_same_v<MT, float>) {
        if (pr == Precision::single) {
            const OutOfCoreOperator<float, float> op(m, exec, *oo);
            r = time_products<float>(&op, exec, transpose, x, reps, op.layout());
            fp32_vectors = true;
        }
    }
    if (!fp32_vectors) {  // fp64 vectors: double, or mixed with fp32 values
        const OutOfCoreOperator<MT, double> op(m, exec, *oo);
        r = time_products<double>(&op, exec, transpose, x, reps, op.layout());
    }
    std::vector<double> ref(r.y.size()), scale(r.y.size());
    ooc_reference_product(*m, transpose, x.data(), ref.data(), scale.data());
    Shown w;
    w.source = path;
    w.format = to_string(ooc_bdia_chunks(m->chunks()) ? Format::bdia : Format::csr);
    w.precision = prec;
    w.rows = info.rows;
    w.cols = info.cols;
    w.nnz = info.nnz;
    w.transpose = transpose;
    w.out_of_core = true;
    w.json = json;
    w.value_bytes = pr == Precision::single ? 4 : 8;
    w.check = "fp64 sums on the CPU of the chunk file's entries";
    char note[160];
    std::snprintf(note, sizeof note,
                  "chunk file: %d chunks, %d of them (%.3f GB) read from the file at every product",
                  int(r.layout.chunks), int(r.layout.file_chunks),
                  double(r.layout.file_bytes) / 1e9);
    w.file_note = note;
    return report(w, r, *exec, relative_error(r.y, ref, scale),
                  pr == Precision::double_ ? 1e-12 : 1e-5, SpmvTraffic{}, yfile);
}
}  // namespace

int cmd_spmv(int argc, char** argv)
{
    Args args(argc, argv, {"--transpose", "--json", "--quiet"});
    if (args.help()) {
        std::printf(spmv_usage, format_help(20).c_str());
        std::printf("%s%s", out_of_core_help, chunk_file_help);
        return 0;
    }
    const bool json = args.flag("--json");
    const bool quiet = args.flag("--quiet") || json;
    const bool transpose = args.flag("--transpose");
    auto gen = args.get("--generate");
    auto fmt_name = args.get_or("--format", "auto");
    auto prec = args.get_or("--precision", "double");
    auto device = args.get_or("--device", "auto");
    const long long bs = args.get_int("--block-size", 0);
    auto xfile = args.get("-x");
    auto yfile = args.get("-o");
    const int reps = static_cast<int>(args.get_int("--reps", 20));
    const OutOfCoreChoice occ = parse_out_of_core(args, true);
    const double resident = args.get_double("--resident-fraction", 1.0);
    const bool prec_given = args.get("--precision").has_value();
    args.finish(gen ? 0 : 1, gen ? 0 : 1);
    if (reps < 1) throw UsageError("--reps must be at least 1");
    if (!(resident >= 0 && resident <= 1))
        throw UsageError("--resident-fraction must be in [0, 1]");
    Precision pr = precision_option(prec);
    std::optional<std::string> file;
    if (!args.positionals().empty()) file = args.positionals()[0];
    if (device != "auto") (void)pick_executor(device);  // no such device: the error before the read
    if (file && is_ooc_file(*file) && !gen) {
        check_chunk_file_choices(occ, fmt_name);
        if (bs > 0) throw UsageError("--block-size: a chunk file's chunks fix their block size");
        const OocFileInfo info = ooc_file_info(*file);
        pr = chunk_file_precision(info, prec, prec_given);
        return info.value_bytes == 4
                   ? spmv_chunk_file<float>(*file, info, pr, prec, device, transpose, occ, resident,
                                            xfile, yfile, reps, json, quiet)
                   : spmv_chunk_file<double>(*file, info, pr, prec, device, transpose, occ,
                                             resident, xfile, yfile, reps, json, quiet);
    }
    if (occ.host_memory) throw UsageError("--host-memory applies to a chunk file (A.hoc) only");
    Problem p = load_problem(file, gen, quiet);
    std::string device_why;
    const auto exec = pick_solve_executor(device, static_cast<long long>(p.a.nnz()), device_why);
    if (!quiet && !device_why.empty()) std::fprintf(stderr, "device %s\n", device_why.c_str());

    const std::size_t xb = pr == Precision::single ? 4 : 8;
    std::optional<OutOfCoreOptions> oo =
        out_of_core_choice(occ, *exec, p.a.rows, p.a.cols, p.a.nnz(), pr, 2, quiet);
    const bool out_of_core = oo.has_value();
    if (oo) oo->max_resident_fraction = resident;
    Structure s = detect_structure(p.a);
    Format f =
        usage_checked([&] { return fmt_name == "auto" ? s.format : parse_format(fmt_name); });
    if (oo && f == Format::bdia && !s.block_offsets.empty()) {  // BDIA-GH chunks
        oo->bdia_block_size = s.block_size;
        oo->bdia_block_offsets = s.block_offsets;
    } else if (oo) {
        f = Format::csr;
    }
    FormatOptions opt;
    opt.block_size = bs > 0 ? static_cast<index_t>(bs) : s.block_size;

    const std::vector<double> x =
        product_input(xfile, std::size_t(transpose ? p.a.rows : p.a.cols));
    // fp64 CSR reference on the CPU
    auto csr = csr_from_coo(p.a);
    std::vector<double> ref(transpose ? p.a.cols : p.a.rows);
    kernels::spmv(*cpu_executor(), csr, transpose ? Op::transpose : Op::normal, 1.0, x.data(), 0.0,
                  ref.data());

    Result r;
    const OutOfCoreOptions* po = oo ? &*oo : nullptr;
    if (pr == Precision::double_)
        r = run<double, double>(p.a, f, opt, exec, transpose, x, reps, po);
    else if (pr == Precision::single)
        r = run<float, float>(p.a, f, opt, exec, transpose, x, reps, po);
    else
        r = run<float, double>(p.a, f, opt, exec, transpose, x, reps, po);
    // check: max |y - ref| relative to max_i sum_j |a_ij x_j| (the size of the terms summed)
    std::vector<double> scale(ref.size(), 0.0);
    for (offset_t k = 0; k < p.a.nnz(); ++k) {
        const index_t i = transpose ? p.a.col[k] : p.a.row[k];
        const index_t j = transpose ? p.a.row[k] : p.a.col[k];
        scale[i] += std::abs(p.a.val[k] * x[j]);
    }
    Shown w;
    w.source = p.source;
    w.format = to_string(f);
    w.precision = prec;
    w.rows = p.a.rows;
    w.cols = p.a.cols;
    w.nnz = p.a.nnz();
    w.transpose = transpose;
    w.out_of_core = out_of_core;
    w.json = json;
    w.value_bytes = xb;
    return report(w, r, *exec, relative_error(r.y, ref, scale),
                  pr == Precision::double_ ? 1e-12 : 1e-5,
                  out_of_core ? SpmvTraffic{} : spmv_traffic(p.a, f, opt, pr), yfile);
}

}  // namespace heptane::cli
