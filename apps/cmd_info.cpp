// heptane info: what a matrix is and which format heptane would use for it, and why.
#include <cstdio>
#include <string>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "generators/matrix_market.hpp"
#include "solver/precond/amg/amg.hpp"

namespace heptane::cli {

namespace {
const char* info_usage =
    "usage: heptane info FILE [--json] [--verbose [AMG options]]\n"
    "       heptane info --generate JxHxIxNc[:model[:banded]] [--json] [--verbose]\n"
    "FILE: Matrix Market or PETSc binary (told by its first bytes).\n\n"
    "Sizes, nnz, per-row nnz statistics (min, max, mean, average deviation %), the detected\n"
    "block size Nc, the distinct block offsets, the padding BDIA-GH would add, the grid\n"
    "J x H x I of 7-point (or J x H of 5-point) patterns, and the format heptane would pick\n"
    "with the reason. --json prints one JSON object (keys include rows, cols, nnz,\n"
    "block_size, grid ([J,H,I], [J,H] or null), block_offsets, format, format_reason).\n"
    "--verbose also builds the algebraic multigrid hierarchy `--pc amg` would use (on the\n"
    "host, block size = the detected Nc) and prints its levels (rows, nonzeros, nonzeros per\n"
    "row), operator and grid complexity and the setup time (JSON key amg). AMG options:\n";
}

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
    Problem p = load_problem(file, gen, quiet);
    Structure s = detect_structure(p.a);
    std::optional<AmgInfo> amg;
    if (verbose && p.a.rows == p.a.cols) {
        const index_t nc = s.block_size > 0 && p.a.rows % s.block_size == 0 ? s.block_size : 1;
        amg = amg_hierarchy(csr_from_coo(p.a), nc, pco.amg);
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
            char extra[256];
            std::snprintf(extra, sizeof extra,
                          ", \"amg\": {\"operator_complexity\": %.6g, \"grid_complexity\": "
                          "%.6g, \"coarse_solve\": %s, \"setup_ms\": %.3f, \"levels\": [",
                          amg->operator_complexity, amg->grid_complexity,
                          json_string(amg->coarse_solve).c_str(), amg->hierarchy_ms);
            body = body.substr(0, close) + extra + levels + "]}" + body.substr(close);
        }
        // prepend the source to the object produced by to_json
        std::printf("{\"source\": %s, %s\n", json_string(p.source).c_str(), body.c_str() + 1);
    } else {
        std::printf("matrix: %s\n%s", p.source.c_str(), to_text(s).c_str());
        if (amg)
            std::printf("AMG hierarchy (smoothed aggregation, host setup %.1f ms):\n%s\n",
                        amg->hierarchy_ms, amg->table().c_str());
        else if (verbose)
            std::printf("AMG hierarchy: none (the matrix is not square)\n");
    }
    return 0;
}

}  // namespace heptane::cli
