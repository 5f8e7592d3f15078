// heptane pet: a PET-like emission tomography system streamed to Matrix Market files
// (generators/pet.hpp): the system matrix, the Poisson counts and the phantom.
#include <chrono>
#include <cstdio>
#include <string>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "core/error.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/matrix_file.hpp"
#include "generators/pet.hpp"

namespace heptane::cli {

namespace {
const char* pet_usage =
    "usage: heptane pet --rings R --detectors D --image N [--slices Z] -o A.mtx\n"
    "                   [--counts g.mtx] [--phantom f.mtx] [options]\n\n"
    "A ring scanner around an N x N (x Z) voxel image: rows = lines of response (detector pairs\n"
    "whose line passes through the circle inscribed in the image), columns = voxels (x fastest,\n"
    "then y, then z), entries = length of the line inside the voxel in voxel units (Siddon).\n"
    "The phantom is a Shepp-Logan-like head scaled to --counts-per-lor; the counts are\n"
    "g ~ Poisson(A f) from heptane's own seeded generator: the same options give the same\n"
    "files on every machine. A is streamed to disk row block by row block (a counting pass\n"
    "first, for the header): memory stays O(voxels). With -o A.hoc, A is written as a chunk\n"
    "file for out-of-core runs (heptane mlem/lsqr A.hoc): the same matrix, in row chunks of\n"
    "--chunk-bytes, values in --precision; memory: one chunk and a batch of rows.\n"
    "  --rings R           detector rings (default 1; 1 with --slices 1 is a 2-D scanner)\n"
    "  --detectors D       detectors per ring (default 64)\n"
    "  --image N           voxels per side of a slice (default 32)\n"
    "  --slices Z          slices (default 1); rings sit evenly over the image's axial extent\n"
    "  --fov F             image half-width / ring radius, in (0, 0.707) (default 0.6)\n"
    "  --max-ring-diff K   3-D: ring pairs with |r1 - r2| <= K only (default: all)\n"
    "  --counts-per-lor C  mean expected counts per line of response (default 20)\n"
    "  --seed S            seed of the Poisson counts (default 1)\n"
    "  -o FILE             the system matrix A (required; FILE.hoc: a chunk file)\n"
    "  --precision P       chunk file values: double (default) | single\n"
    "  --chunk-bytes B     chunk file: bytes per chunk (default 64M)\n"
    "  --quiet             chunk file: no progress on stderr\n"
    "  --counts FILE       the counts g (Matrix Market vector)\n"
    "  --phantom FILE      the activity image f with E[g] = A f (Matrix Market vector)\n"
    "  --json              one JSON object on stdout: rows, cols, nnz, total_counts, scale,\n"
    "                      seconds, description\n"
    "Exit status: 0 written, 1 failure (e.g. a file cannot be written), 2 usage error.\n";
}  // namespace

int cmd_pet(int argc, char** argv)
{
    Args args(argc, argv, {"--json", "--quiet"});
    if (args.help()) {
        std::printf("%s", pet_usage);
        return 0;
    }
    const bool json = args.flag("--json");
    PetSpec spec;
    auto int_opt = [&](const char* name, long long def) {
        const long long v = args.get_int(name, def);
        if (v < -1 || v > 2147483647LL) throw UsageError(std::string(name) + " is out of range");
        return static_cast<index_t>(v);
    };
    spec.rings = int_opt("--rings", spec.rings);
    spec.detectors = int_opt("--detectors", spec.detectors);
    spec.image = int_opt("--image", spec.image);
    spec.slices = int_opt("--slices", spec.slices);
    spec.max_ring_difference = int_opt("--max-ring-diff", -1);
    spec.fov = args.get_double("--fov", spec.fov);
    spec.counts_per_lor = args.get_double("--counts-per-lor", spec.counts_per_lor);
    const long long seed = args.get_int("--seed", 1);
    auto out = args.get("-o");
    const std::string prec = args.get_or("--precision", "double");
    const auto chunk_opt = args.get("--chunk-bytes");
    const bool quiet = args.flag("--quiet") || json;
    const std::string counts = args.get_or("--counts", "");
    const std::string phantom = args.get_or("--phantom", "");
    args.finish(0, 0);
    if (!out) throw UsageError("-o A.mtx is required");
    if (seed < 0) throw UsageError("--seed must be >= 0");
    spec.seed = static_cast<std::uint64_t>(seed);
    try {
        validate(spec);
    } catch (const InputError& e) {
        throw UsageError(e.what());
    }

    const bool hoc = is_ooc_file(*out);
    if (prec != "double" && prec != "single")
        throw UsageError("--precision must be double or single, not '" + prec + "'");
    if (!hoc && (chunk_opt || args.get("--precision")))
        throw UsageError("--precision and --chunk-bytes apply to a chunk file (-o A.hoc)");
    std::size_t chunk_bytes = std::size_t(64) << 20;
    if (chunk_opt) {
        chunk_bytes = usage_checked([&] { return parse_bytes(*chunk_opt); });
        if (chunk_bytes < 4096) throw UsageError("--chunk-bytes must be at least 4k");
    }

    const auto t0 = std::chrono::steady_clock::now();
    PetFileInfo info;
    if (hoc) {
        const auto progress = [&](index_t done, index_t rows) {
            if (quiet) return;
            std::fprintf(
                stderr, "\rwriting %s: %d of %d rows, %.1f s", out->c_str(), done, rows,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            if (done == rows) std::fprintf(stderr, "\n");
        };
        const auto write = [&](auto tag) {
            using MT = decltype(tag);
            auto sys = write_pet_ooc_system<MT>(spec, chunk_bytes, *out, progress);
            info.rows = sys.a.rows();
            info.cols = sys.a.cols();
            info.nnz = sys.a.nnz();
            info.scale = sys.scale;
            for (double c : sys.counts) info.total_counts += c;
            const std::string what = "heptane pet: " + describe(spec);
            if (!counts.empty()) write_vector_file(counts, sys.counts, what + ", counts");
            if (!phantom.empty()) write_vector_file(phantom, sys.phantom, what + ", phantom");
        };
        if (prec == "single")
            write(float{});
        else
            write(double{});
    } else {
        info = write_pet_system(spec, *out, counts, phantom);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (json) {
        std::printf(
            "{\"rows\": %d, \"cols\": %d, \"nnz\": %lld, \"total_counts\": %.17g, "
            "\"scale\": %.17g, \"seconds\": %.3f, \"description\": %s}\n",
            info.rows, info.cols, static_cast<long long>(info.nnz), info.total_counts, info.scale,
            s, json_string(describe(spec)).c_str());
    } else {
        std::printf("%s\n", describe(spec).c_str());
        std::printf("A         %s: %d LORs x %d voxels, %lld entries (%.1f per row)\n",
                    out->c_str(), info.rows, info.cols, static_cast<long long>(info.nnz),
                    info.rows ? double(info.nnz) / info.rows : 0.0);
        if (!counts.empty())
            std::printf("counts    %s: total %.0f\n", counts.c_str(), info.total_counts);
        if (!phantom.empty())
            std::printf("phantom   %s: activity scale %.6g\n", phantom.c_str(), info.scale);
        std::printf("time      %.3f s\n", s);
    }
    return 0;
}

}  // namespace heptane::cli
