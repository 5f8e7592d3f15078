// heptane info: what a matrix is and which format heptane would use for it, and why.
#include <cstdio>
#include <string>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "formats/detect/detect.hpp"
#include "generators/matrix_market.hpp"

namespace heptane::cli {

namespace {
const char* info_usage =
    "usage: heptane info FILE [--json]\n"
    "       heptane info --generate JxHxIxNc[:model[:banded]] [--json]\n\n"
    "Sizes, nnz, per-row nnz statistics (min, max, mean, average deviation %), the detected\n"
    "block size Nc, the distinct block offsets, the padding BDIA-GH would add, the grid\n"
    "J x H x I of 7-point (or J x H of 5-point) patterns, and the format heptane would pick\n"
    "with the reason. --json prints one JSON object (keys include rows, cols, nnz,\n"
    "block_size, grid ([J,H,I], [J,H] or null), block_offsets, format, format_reason).\n";
}

int cmd_info(int argc, char** argv)
{
    Args args(argc, argv, {"--json", "--quiet"});
    if (args.help()) {
        std::printf("%s", info_usage);
        return 0;
    }
    const bool json = args.flag("--json");
    const bool quiet = args.flag("--quiet") || json;
    auto gen = args.get("--generate");
    args.finish(gen ? 0 : 1, gen ? 0 : 1);
    std::optional<std::string> file;
    if (!args.positionals().empty()) file = args.positionals()[0];
    Problem p = load_problem(file, gen, quiet);
    Structure s = detect_structure(p.a);
    if (json) {
        std::string body = to_json(s);
        // prepend the source to the object produced by to_json
        std::printf("{\"source\": %s, %s\n", json_string(p.source).c_str(), body.c_str() + 1);
    } else {
        std::printf("matrix: %s\n%s", p.source.c_str(), to_text(s).c_str());
    }
    return 0;
}

}  // namespace heptane::cli
