// heptane: the command-line tool. `heptane <command> [options]`; `heptane <command> --help`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "core/error.hpp"

namespace {

struct Command {
    const char* name;
    const char* summary;
    int (*run)(int, char**);
};

const Command commands[] = {
    {"gen", "generate a general-hepta system (Matrix Market out)", heptane::cli::cmd_gen},
    {"info", "sizes, row statistics, detected block structure and grid, format choice",
     heptane::cli::cmd_info},
    {"convert", "convert a Matrix Market file through a storage format, with statistics",
     heptane::cli::cmd_convert},
    {"spmv", "one sparse matrix-vector product: result, time and bandwidth",
     heptane::cli::cmd_spmv},
    {"solve", "solve A x = b: BiCGStab, CG or GMRES (CPU or GPU; under mpirun over the ranks)",
     heptane::cli::cmd_solve},
    {"mlem", "emission tomography: MLEM / OSEM image from counts, log-likelihood per iteration",
     heptane::cli::cmd_mlem},
    {"lsqr", "least squares min ||Ax - b|| with LSQR (SciPy's parameters and stopping tests)",
     heptane::cli::cmd_lsqr},
    {"pet", "generate a PET-like system: ring scanner matrix, phantom, Poisson counts",
     heptane::cli::cmd_pet},
    {"bench",
     "benchmarks (spmv, solve, precond, setup, mlem, lsqr, mmread; comm, scale under mpirun)",
     heptane::cli::cmd_bench},
};

void usage(std::FILE* f)
{
    std::fprintf(f,
                 "heptane: sparse linear solvers for reservoir simulation (CPU and CUDA)\n\n"
                 "usage: heptane <command> [options]     heptane <command> --help\n\n"
                 "commands:\n");
    for (const auto& c : commands) std::fprintf(f, "  %-9s %s\n", c.name, c.summary);
    std::fprintf(f,
                 "\nExit status: 0 success, 1 the work failed (bad file, no convergence, ...), "
                 "2 usage error.\n");
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string cmd = argv[1];
    // Under mpirun the GPUs wait on each other (peer and NCCL kernels): load every kernel
    // before the first launch, not lazily (distributed/peer.hpp), unless the user said.
    if (heptane::cli::launched_by_mpirun()) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        usage(stdout);
        return 0;
    }
    for (const auto& c : commands) {
        if (cmd != c.name) continue;
        try {
            return c.run(argc - 2, argv + 2);
        } catch (const heptane::cli::UsageError& e) {
            std::fprintf(stderr, "heptane %s: %s\n", c.name, e.what());
            return 2;
        } catch (const heptane::Error& e) {
            std::fprintf(stderr, "heptane %s: error: %s\n", c.name, e.what());
            return 1;
        } catch (const std::bad_alloc&) {
            std::fprintf(stderr, "heptane %s: error: out of memory\n", c.name);
            return 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "heptane %s: error: %s\n", c.name, e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "heptane: unknown command '%s'\n\n", cmd.c_str());
    usage(stderr);
    return 2;
}
