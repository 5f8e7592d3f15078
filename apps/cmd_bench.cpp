// heptane bench: dispatch to the benchmark programs. Benchmarks print numbers; tests check
// answers (BENCHMARKS.md). Every benchmark checks its result before it times anything.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/bench.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "core/error.hpp"
#include "generators/matrix_market.hpp"

#ifdef HEPTANE_HAVE_EIGEN
#include <Eigen/SparseCore>
#include <unsupported/Eigen/SparseExtra>
#endif

namespace heptane::cli {

namespace {

const char* bench_usage =
    "usage: heptane bench <what> [options]\n\n"
    "  spmv     SpMV per format and precision against the copy bandwidth and cuSPARSE\n"
    "           (heptane bench spmv --help); with --out-of-core: streamed from host memory\n"
    "           (heptane bench spmv --out-of-core --help)\n"
    "  solve    BiCGStab (or GMRES(m): --solver gmres) per iteration against its floor and to\n"
    "           tolerance (heptane bench solve --help)\n"
    "  precond  time to solution per preconditioner: setup, iterations, solve (AMG, CPR, ILU,\n"
    "           Jacobi; heptane bench precond --help)\n"
    "  setup    the BDIA-GH operator's setup stage by stage (row pointers, offsets, upload,\n"
    "           placement on the device) next to one product (heptane bench setup --help)\n"
    "  mlem     MLEM/OSEM per iteration, forward and back projections, against their floors\n"
    "           (heptane bench mlem --help); with --out-of-core: a system larger than the GPU\n"
    "  lsqr     LSQR per iteration against its floor (heptane bench lsqr --help)\n"
    "  comm     under mpirun: halo exchange models and reductions between the ranks\n"
    "           (mpirun -np P heptane bench comm --help)\n"
    "  scale    under mpirun: BiCGStab per iteration on P ranks with its breakdown (SpMV,\n"
    "           halo, reductions, vector work) (mpirun -np P heptane bench scale --help)\n"
    "  mmread   Matrix Market read throughput, next to reading the bytes alone (as cat) and\n"
    "           Eigen's loadMarket on the same file (scripts/mmread-compare.sh adds SciPy)\n"
    "           heptane bench mmread FILE [--threads N] [--reps N] [--no-eigen] [--json]\n";

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int bench_mmread(int argc, char** argv)
{
    Args args(argc, argv, {"--no-eigen", "--json"});
    if (args.help()) {
        std::printf("%s", bench_usage);
        return 0;
    }
    const int threads = static_cast<int>(args.get_int("--threads", 0));
    const int reps = static_cast<int>(args.get_int("--reps", 3));
    const bool eigen = !args.flag("--no-eigen");
    const bool json = args.flag("--json");
    args.finish(1, 1);
    const std::string path = args.positionals()[0];

    MatrixMarketOptions opt;
    opt.threads = threads;
    double best = 1e300;
    MatrixMarketInfo info;
    offset_t nnz = 0;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        auto a = read_matrix_market<double>(path, opt, &info);
        best = std::min(best, seconds_since(t0));
        nnz = a.nnz();
    }
    const double mb = info.bytes / 1e6;
    // the file's bytes alone, as `cat FILE > /dev/null` reads them (8 MB reads): the floor a
    // reader cannot beat (from the page cache when the file was read just before)
    double raw_best = 1e300;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        std::FILE* f = std::fopen(path.c_str(), "rb");
        if (!f) HEPTANE_THROW(IoError, "cannot open " << path);
        std::vector<char> buf(std::min(std::size_t(8) << 20, info.bytes + 1));
        while (std::fread(buf.data(), 1, buf.size(), f) == buf.size()) {
        }
        std::fclose(f);
        raw_best = std::min(raw_best, seconds_since(t0));
    }
    double eigen_best = -1;
#ifdef HEPTANE_HAVE_EIGEN
    if (eigen) {
        for (int r = 0; r < reps; ++r) {
            Eigen::SparseMatrix<double, Eigen::RowMajor> m;
            auto t0 = std::chrono::steady_clock::now();
            if (!Eigen::loadMarket(m, path))
                HEPTANE_THROW(IoError, "Eigen::loadMarket failed on " << path);
            const double t = seconds_since(t0);
            eigen_best = eigen_best < 0 ? t : std::min(eigen_best, t);
        }
    }
#else
    (void)eigen;
#endif
    if (json) {
        std::printf(
            "{\"file\": \"%s\", \"bytes\": %zu, \"nnz\": %lld, \"heptane_seconds\": %.9g, "
            "\"heptane_mb_per_s\": %.1f, \"read_seconds\": %.9g, \"read_mb_per_s\": %.1f, "
            "\"eigen_seconds\": %s, \"eigen_mb_per_s\": %s}\n",
            path.c_str(), info.bytes, static_cast<long long>(nnz), best, mb / best, raw_best,
            mb / raw_best, json_number(eigen_best).c_str(),
            json_number(eigen_best > 0 ? mb / eigen_best : -1.0).c_str());
    } else {
        std::printf("file %s: %.1f MB, %lld entries after expansion (best of %d)\n", path.c_str(),
                    mb, static_cast<long long>(nnz), reps);
        std::printf("| reader | seconds | MB/s |\n|---|---|---|\n");
        std::printf("| heptane (canonical COO, %s threads) | %.3f | %.0f |\n",
                    threads ? std::to_string(threads).c_str() : "all", best, mb / best);
        std::printf("| the bytes alone (8 MB freads, as cat) | %.3f | %.0f |\n", raw_best,
                    mb / raw_best);
        if (eigen_best > 0)
            std::printf("| Eigen::loadMarket (SparseMatrix) | %.3f | %.0f |\n", eigen_best,
                        mb / eigen_best);
    }
    return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv)
{
    if (argc < 1) {
        std::fprintf(stderr, "%s", bench_usage);
        return 2;
    }
    const std::string what = argv[0];
    if (what == "-h" || what == "--help") {
        std::printf("%s", bench_usage);
        return 0;
    }
    if (what == "mmread") return bench_mmread(argc - 1, argv + 1);
    if (what == "spmv" || what == "mlem")
        for (int i = 1; i < argc; ++i)
            if (std::string(argv[i]) == "--out-of-core")
                return bench_out_of_core(argc - 1, argv + 1, what == "mlem");
    if (what == "spmv") return bench_spmv(argc - 1, argv + 1);
    if (what == "solve") return bench_solve(argc - 1, argv + 1);
    if (what == "precond") return bench_precond(argc - 1, argv + 1);
    if (what == "setup") return bench_setup(argc - 1, argv + 1);
    if (what == "mlem") return bench_mlem(argc - 1, argv + 1);
    if (what == "lsqr") return bench_lsqr(argc - 1, argv + 1);
    if (what == "comm" || what == "scale") {
#ifdef HEPTANE_CLI_MPI
        return what == "comm" ? bench_comm(argc - 1, argv + 1) : bench_scale(argc - 1, argv + 1);
#else
        throw UsageError("heptane bench " + what + " needs a build with MPI");
#endif
    }
    throw UsageError("unknown benchmark '" + what +
                     "' (spmv, solve, precond, setup, mlem, lsqr, mmread, comm, scale)");
}

}  // namespace heptane::cli
