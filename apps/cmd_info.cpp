// heptane info: what a matrix is and which format heptane would use for it, and why.
#include <cstdio>
#include <string>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/matrix_market.hpp"
#include "solver/precond/amg/amg.hpp"

namespace heptane::cli {

namespace {
const char* info_usage =
    "usage: heptane info FILE [--json] [--verbose [AMG options]]\n"
    "       heptane info --generate JxHxIxNc[:model[:banded]] [--json] [--verbose]\n"
    "FILE: Matrix Market or PETSc binary (told by its first bytes), or a chunk file (A.hoc:\n"
    "its size, values, chunks and bytes from its table).\n\n"
    "Sizes, nnz, per-row nnz statistics (min, max, mean, average deviation %), the detected\n"
    "block size Nc, the distinct block offsets, the padding BDIA-GH would add, the grid\n"
    "J x H x I of 7-point (or J x H of 5-point) patterns, and the format heptane would pick\n"
    "with the reason. --json prints one JSON object (keys include rows, cols, nnz,\n"
    "block_size, grid ([J,H,I], [J,H] or null), block_offsets, format, format_reason).\n"
    "--verbose also builds the algebraic multigrid hierarchy `--pc amg` would use (on the\n"
    "host, block size = the detected Nc) and prints its levels (rows, nonzeros, nonzeros per\n"
    "row), operator and grid complexity and the setup time (JSON key amg). A square matrix\n"
    "is checked for symmetry, |a_ij - a_ji| <= 1e-8 max(|a_ij|, |a_ji|) (what heptane solve\n"
    "--solver cg requires): JSON keys symmetric (true, false; null when not square) and\n"
    "symmetry_worst (the worst pair, 1-based row and col, its two values and their relative\n"
    "difference; null when symmetric); both null with 2^31 entries or more (not checked).\n"
    "AMG options:\n";

// A chunk file (.hoc): its table only, no block read (JSON keys: source, chunk_file, rows,
// cols, nnz, values, chunk_format, block_size, chunks, bytes, max_chunk_bytes).
template <class MT>
int chunk_file_info(const std::string& path, const OocFileInfo& info, bool json)
{
    OocFileOptions table_only;
    table_only.host_memory = 0;
    const OocMatrix<MT> m = open_ooc_file<MT>(path, table_only);
    const bool bdia = ooc_bdia_chunks(m.chunks());
    const index_t nc = ooc_block_size(m.chunks());
    const char* values = sizeof(MT) == 8 ? "fp64" : "fp32";
    if (json) {
        std::printf(
            "{\"source\": %s, \"chunk_file\": true, \"rows\": %d, \"cols\": %d, "
            "\"nnz\": %lld, \"values\": \"%s\", \"chunk_format\": \"%s\", "
            "\"block_size\": %d, \"chunks\": %d, \"bytes\": %zu, "
            "\"max_chunk_bytes\": %zu}\n",
            json_string(path).c_str(), info.rows, info.cols, static_cast<long long>(info.nnz),
            values, bdia ? "bdiagh" : "csr", nc, info.chunks, info.bytes, info.max_chunk);
        return 0;
    }
    std::printf("%s: heptane chunk file (out of core)\n", path.c_str());
    std::printf("  %d x %d, %lld entries, %s values\n", info.rows, info.cols,
                static_cast<long long>(info.nnz), values);
    std::printf("  %d %s chunks%s, %s in all, the largest %s\n", info.chunks,
                bdia ? "BDIA-GH" : "CSR",
                bdia ? (" (blocks of " + std::to_string(nc) + ")").c_str() : "",
                bytes_text(double(info.bytes)).c_str(), bytes_text(double(info.max_chunk)).c_str());
    std::printf(
        "  read by heptane solve, mlem and lsqr as it is (out of core); heptane convert "
        "%s -o A.mtx writes its entries\n",
        path.c_str());
    return 0;
}

int chunk_file_info(const std::string& path, bool json)
{
    const OocFileInfo info = ooc_file_info(path);
    return info.value_bytes == 4 ? chunk_file_info<float>(path, info, json)
                                 : chunk_file_info<double>(path, info, json);
}
}  // namespace

int cmd_info(int argc, char** argv)
{
    Args args(argc, argv, {"--json", "--quiet", "--verbose"});
    if (args.help()) {
        std::printf("%s%s", info_usage, pc_options_help);
        return 0;
    }
    const bool json = args.flag("--json");
    const bool quiet = args.flag("--quiet") || json;
    const bool verbose = args.flag("--verbose");
    const PcOptions pco = parse_pc_options(args);
    auto gen = args.get("--generate");
    args.finish(gen ? 0 : 1, gen ? 0 : 1);
    std::optional<std::string> file;
    if (!args.positionals().empty()) file = args.positionals()[0];
    if (file && !gen && is_ooc_file(*file)) return chunk_file_info(*file, json);
    Problem p = load_problem(file, gen, quiet);
    Structure s = detect_structure(p.a);
    // square: checked (none when too large for the check); else not asked
    const bool square = p.a.rows == p.a.cols;
    const std::optional<SymmetryCheck> sym =
        square ? symmetry_of(p.a) : std::optional<SymmetryCheck>();
    std::optional<AmgInfo> amg;
    if (verbose && p.a.rows == p.a.cols) {
        const index_t nc = s.block_size > 0 && p.a.rows % s.block_size == 0 ? s.block_size : 1;
        AmgOptions ao = pco.amg;
        if (s.hepta && s.grid_dims > 0) ao.grid = s.grid;  // for --amg-aggregation box
        amg = amg_hierarchy(csr_from_coo(p.a), nc, ao);
    }
    if (json) {
        std::string body = to_json(s);
        if (amg) {  // add "amg": {...} before the closing brace
            std::string levels;
            for (std::size_t l = 0; l < amg->levels.size(); ++l)
                levels += (l ? ", " : "") + std::string("{\"rows\": ") +
                          std::to_string(amg->levels[l].rows) +
                          ", \"nnz\": " + std::to_string(amg->levels[l].nnz) + "}";
            const std::size_t close = body.rfind('}');
            char extra[512];
            std::snprintf(extra, sizeof extra,
                          ", \"amg\": {\"prolongation\": \"%s\", \"aggregates\": %s, "
                          "\"operator_complexity\": %.6g, \"grid_complexity\": "
                          "%.6g, \"coarse_solve\": %s, \"setup_ms\": %.3f, \"levels\": [",
                          pco.amg.prolongation_weight > 0 ? "smoothed" : "plain",
                          json_string(amg->aggregation).c_str(), amg->operator_complexity,
                          amg->grid_complexity, json_string(amg->coarse_solve).c_str(),
                          amg->hierarchy_ms);
            body = body.substr(0, close) + extra + levels + "]}" + body.substr(close);
        }
        {  // "symmetric" and "symmetry_worst" before the closing brace
            std::string extra = ", \"symmetric\": null, \"symmetry_worst\": null";
            if (sym && sym->symmetric) {
                extra = ", \"symmetric\": true, \"symmetry_worst\": null";
            } else if (sym) {
                char w[256];
                std::snprintf(w, sizeof w,
                              ", \"symmetric\": false, \"symmetry_worst\": {\"row\": %d, "
                              "\"col\": %d, \"aij\": %.17g, \"aji\": %.17g, "
                              "\"relative_difference\": %.6g}",
                              sym->i + 1, sym->j + 1, sym->aij, sym->aji, sym->worst);
                extra = w;
            }
            const std::size_t close = body.rfind('}');
            body = body.substr(0, close) + extra + body.substr(close);
        }
        // prepend the source to the object produced by to_json
        std::printf("{\"source\": %s, %s\n", json_string(p.source).c_str(), body.c_str() + 1);
    } else {
        std::printf("matrix: %s\n%s", p.source.c_str(), to_text(s).c_str());
        if (sym && sym->symmetric)
            std::printf(
                "symmetric   yes (to a relative %g: --solver cg applies where A is also "
                "positive definite)\n",
                cg_symmetry_tol);
        else if (square && !sym)
            std::printf("symmetric   not checked (2^31 entries or more)\n");
        else if (sym)
            std::printf(
                "symmetric   no: a(%d, %d) = %.6g but a(%d, %d) = %.6g (relative difference "
                "%.3g): --solver bicgstab or gmres, not cg\n",
                sym->i + 1, sym->j + 1, sym->aij, sym->j + 1, sym->i + 1, sym->aji, sym->worst);
        if (amg)
            std::printf("AMG hierarchy (%s aggregation, aggregates %s, host setup %.1f ms):\n%s\n",
                        pco.amg.prolongation_weight > 0 ? "smoothed" : "plain",
                        amg->aggregation.c_str(), amg->hierarchy_ms, amg->table().c_str());
        else if (verbose)
            std::printf("AMG hierarchy: none (the matrix is not square)\n");
    }
    return 0;
}

}  // namespace heptane::cli
