// heptane convert: a matrix file in, through a storage format, a matrix file out, with the
// format's statistics (storage, padding, build time) and a check that nothing was lost.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "apps/progress.hpp"
#include "core/error.hpp"
#include "formats/detect/detect.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "formats/registry.hpp"
#include "generators/matrix_file.hpp"

namespace heptane::cli {

namespace {
const char* convert_usage =
    "usage: heptane convert IN.mtx -o OUT.mtx [--format F] [--block-size B] [--json]\n"
    "                       [--petsc-int64]\n"
    "       heptane convert IN.mtx -o OUT.hoc [--precision double|single] [--chunk-bytes B]\n"
    "                       [--chunk-format auto|csr|bdia]\n"
    "       heptane convert --generate JxHxIxNc[:model] -o OUT.mtx [--format F] ...\n\n"
    "Build format F (default: the one `heptane info` picks) from the matrix, convert it back\n"
    "to canonical COO, check that every entry came back unchanged, and write OUT.mtx\n"
    "(coordinate real general). Prints the format's storage, padding and conversion times.\n"
    "Symmetric input is written expanded (general). IN may be Matrix Market or PETSc binary\n"
    "(told by its first bytes); OUT ending in .petsc is written as PETSc binary (MatLoad\n"
    "reads it; 32-bit indices unless --petsc-int64).\n"
    "OUT ending in .hoc is written as a chunk file for out-of-core runs (heptane mlem/lsqr\n"
    "A.hoc): row chunks of --chunk-bytes (default 64M), values in --precision double (default)\n"
    "or single, chunks in --chunk-format auto (BDIA-GH for a hepta matrix, else CSR) | csr |\n"
    "bdia; the file is read back and compared with the chunks, byte for byte. IN ending\n"
    "in .hoc is read chunk by chunk (into memory: it must fit).\n"
    "  --block-size B   BSR / BDIA-GH block size (default: detected)\n"
    "Formats:\n";

template <class F>
Coo<double> round_trip(const F& m)
{
    return to_coo(m);
}
Coo<double> round_trip(const Coo<double>& m)
{
    return m;
}

bool same(const Coo<double>& a, const Coo<double>& b)
{
    return a.rows == b.rows && a.cols == b.cols && a.row.host() == b.row.host() &&
           a.col.host() == b.col.host() && a.val.host() == b.val.host();
}
}  // namespace

int cmd_convert(int argc, char** argv)
{
    Args args(argc, argv, {"--json", "--quiet", "--petsc-int64"});
    if (args.help()) {
        std::printf("%s%s", convert_usage, format_help(2).c_str());
        return 0;
    }
    const bool json = args.flag("--json");
    const bool int64 = args.flag("--petsc-int64");
    const bool quiet = args.flag("--quiet") || json;
    auto gen = args.get("--generate");
    auto out = args.get("-o");
    auto fmt_name = args.get("--format");
    const long long bs = args.get_int("--block-size", 0);
    const std::string prec = args.get_or("--precision", "double");
    const auto chunk_opt = args.get("--chunk-bytes");
    const std::string chunk_format = args.get_or("--chunk-format", "auto");
    args.finish(gen ? 0 : 1, gen ? 0 : 1);
    if (!out) throw UsageError("-o OUT.mtx is required");
    std::optional<std::string> file;
    if (!args.positionals().empty()) file = args.positionals()[0];
    if (is_ooc_file(*out)) {
        if (prec != "double" && prec != "single")
            throw UsageError("--precision must be double or single, not '" + prec + "'");
        if (chunk_format != "auto" && chunk_format != "csr" && chunk_format != "bdia")
            throw UsageError("--chunk-format must be auto, csr or bdia, not '" + chunk_format +
                             "'");
        std::size_t chunk_bytes = std::size_t(64) << 20;
        if (chunk_opt) {
            chunk_bytes = usage_checked([&] { return parse_bytes(*chunk_opt); });
            if (chunk_bytes < 4096) throw UsageError("--chunk-bytes must be at least 4k");
        }
        const Problem p = load_problem(file, gen, quiet);
        const Structure st = detect_structure(p.a);
        const bool bdia = chunk_format == "bdia" || (chunk_format == "auto" && st.hepta);
        const auto t0 = std::chrono::steady_clock::now();
        const auto write = [&](auto tag) {
            using MT = decltype(tag);
            const OocMatrix<MT> m =
                bdia ? make_ooc_matrix_bdia<MT>(p.a, st.block_size, st.block_offsets, chunk_bytes,
                                                false)
                     : make_ooc_matrix<MT>(p.a, chunk_bytes, false);
            {
                Stage st(quiet, "writing " + *out);
                save_ooc_file(m, *out);
                st.done();
            }
            const OocMatrix<MT> back = open_ooc_file<MT>(*out);  // read back, checked
            bool same_blocks = back.chunks().size() == m.chunks().size();
            for (std::size_t k = 0; same_blocks && k < m.chunks().size(); ++k)
                same_blocks = back.chunks()[k].bytes == m.chunks()[k].bytes &&
                              std::memcmp(back.chunks()[k].data, m.chunks()[k].data,
                                          m.chunks()[k].bytes) == 0;
            HEPTANE_ENSURE(same_blocks, IoError,
                           *out << " read back differs from the chunks written");
            return std::make_pair(m.chunks().size(), m.bytes());
        };
        const auto [chunks, bytes] = prec == "single" ? write(float{}) : write(double{});
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (json)
            std::printf(
                "{\"source\": %s, \"format\": \"chunk file (%s chunks)\", \"precision\": \"%s\", "
                "\"rows\": %d, \"cols\": %d, \"nnz\": %lld, \"chunks\": %zu, "
                "\"bytes\": %zu, \"seconds\": %.6f, \"exact\": true}\n",
                json_string(p.source).c_str(), bdia ? "bdia-gh" : "csr", prec.c_str(), p.a.rows,
                p.a.cols, static_cast<long long>(p.a.nnz()), chunks, bytes, s);
        else
            std::printf(
                "%s -> %s (chunk file, %s chunks, %s values): %d x %d, %lld entries in %zu chunks, "
                "%.1f MB; read back byte for byte, %.3f s\n",
                p.source.c_str(), out->c_str(), bdia ? "BDIA-GH" : "CSR", prec.c_str(), p.a.rows,
                p.a.cols, static_cast<long long>(p.a.nnz()), chunks, bytes / 1e6, s);
        return 0;
    }
    if (chunk_opt || args.get("--precision") || args.get("--chunk-format"))
        throw UsageError(
            "--precision, --chunk-bytes and --chunk-format apply to a chunk file (-o OUT.hoc)");
    Problem p;
    if (file && is_ooc_file(*file)) {  // a chunk file in: its entries (fp32 values widened)
        const OocFileInfo fi = ooc_file_info(*file);
        p.a = fi.value_bytes == 4 ? to_coo(open_ooc_file<float>(*file, {0, false}))
                                  : to_coo(open_ooc_file<double>(*file, {0, false}));
        p.source = *file;
    } else {
        p = load_problem(file, gen, quiet);
    }

    Structure s = detect_structure(p.a);
    const Format f = usage_checked([&] { return fmt_name ? parse_format(*fmt_name) : s.format; });
    const index_t b = bs > 0 ? static_cast<index_t>(bs) : s.block_size;

    auto t0 = std::chrono::steady_clock::now();
    Coo<double> back;
    double build_s = 0;
    auto timed = [&](auto&& build) {
        auto m = build();
        build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        back = round_trip(m);
    };
    FormatOptions opt;
    opt.block_size = b;
    visit_format(f, [&](auto traits) { timed([&] { return traits.build(p.a, opt); }); });
    const double total_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    HEPTANE_ENSURE(same(back, p.a), InputError,
                   "round trip through " << to_string(f) << " changed the matrix");
    const SpmvTraffic t = spmv_traffic(p.a, f, opt, Precision::double_);
    const double csr_bytes = 12.0 * p.a.nnz() + 8.0 * (p.a.rows + 1);
    {
        Stage st(quiet, "writing " + *out);
        write_matrix_file(*out, back, "converted by heptane through " + std::string(to_string(f)),
                          int64);
        st.done();
    }
    if (json) {
        std::printf(
            "{\"source\": %s, \"format\": \"%s\", \"block_size\": %d, \"rows\": %d, "
            "\"cols\": %d, \"nnz\": %lld, \"storage_bytes\": %.0f, \"csr_bytes\": %.0f, "
            "\"build_seconds\": %.6f, \"round_trip_seconds\": %.6f, \"exact\": true}\n",
            json_string(p.source).c_str(), to_string(f), b, p.a.rows, p.a.cols,
            static_cast<long long>(p.a.nnz()), t.matrix_bytes, csr_bytes, build_s, total_s);
    } else {
        std::printf("%s -> %s (block size %d): %d x %d, %lld entries\n", p.source.c_str(),
                    to_string(f), b, p.a.rows, p.a.cols, static_cast<long long>(p.a.nnz()));
        std::printf("  storage %.1f MB (CSR would be %.1f MB, %.2fx)\n", t.matrix_bytes / 1e6,
                    csr_bytes / 1e6, t.matrix_bytes / csr_bytes);
        std::printf("  build %.3f s, back to COO %.3f s, every entry unchanged\n", build_s,
                    total_s - build_s);
    }
    return 0;
}

}  // namespace heptane::cli
