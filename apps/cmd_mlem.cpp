// heptane mlem: an emission image from Poisson counts with MLEM or OSEM on the CPU or a GPU,
// with the Poisson log-likelihood of every iteration (solver/mlem/mlem.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "apps/projection_cli.hpp"
#include "core/error.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/matrix_file.hpp"
#include "solver/mlem/mlem.hpp"

namespace heptane::cli {

namespace {
const char* mlem_usage =
    "usage: heptane mlem A.mtx g.mtx --iters N [options]   (Matrix Market or PETSc binary;\n"
    "                                                      A.hoc: a chunk file, out of core)\n\n"
    "Maximum-likelihood image f >= 0 of counts g ~ Poisson(A f) (A: rows = lines of response,\n"
    "columns = voxels, entries >= 0) by MLEM, or by OSEM with --subsets S > 1. Per iteration:\n"
    "q = A f, c = g / q (0 where q = 0), b = A^T c, f = f * b / norm with norm = A^T 1; start\n"
    "f0 = sum(g) / sum(norm) (0 for voxels no row sees, which stay 0). Prints the Poisson\n"
    "log-likelihood L(f) = sum_i g_i log (Af)_i - (Af)_i after every iteration (rows with\n"
    "(Af)_i = 0 add nothing); for MLEM it never decreases.\n"
    "  --iters N         iterations (passes over all subsets); required\n"
    "  --subsets S       OSEM with S consecutive row blocks of about equal nnz, each built once\n"
    "                    as its own operator (default 1: MLEM); out of core: S groups of\n"
    "                    chunks of about equal bytes, the device budget split between them\n"
    "  --format F        csr (default) or one of:\n%s"
    "  --transpose T     A^T x: native (default: the format's own kernel; for CSR, COO, ELL,\n"
    "                    HYB, BSR an atomic scatter, for BDIA-GH and DIA a gather) | scatter\n"
    "                    (the same kernels) | stored (a CSR copy of A^T built once: a gather\n"
    "                    without atomics, twice the matrix memory)\n"
    "  --precision P     double (default) | single | mixed (fp32 matrix, fp64 vectors)\n"
    "  --device D        auto | cpu | gpu | gpu:N (default auto: the GPU when there is one\n"
    "                    and the matrix has enough stored entries for it to win, by heptane\n"
    "                    solve's measured model (scripts/device-crossover.sh); the choice is\n"
    "                    printed)\n"
    "  --no-loglik       skip the log-likelihood (OSEM: saves a forward projection per iteration)\n"
    "  --phantom FILE    the true image: report ||f - f_true|| / ||f_true|| at the end\n"
    "  -o FILE           write f (Matrix Market vector; PETSc binary for FILE.petsc)\n"
    "  --json            one JSON object on stdout: loglik (one value per iteration, after it),\n"
    "                    loglik_initial, iterations, subsets, counts, unseen_voxels, seconds\n"
    "                    (the iterations), setup_seconds, per_iteration_ms, format, transpose,\n"
    "                    operator, precision, device, rows, cols, nnz, ranks (1, or the\n"
    "                    mpirun ranks), phantom_relerr (with --phantom)\n"
    "  --quiet           no progress on stderr\n"
    "%s"
    "Under mpirun (mpirun -np P heptane mlem ...; a build with MPI) each rank streams its own\n"
    "rows out of core (of A.hoc: a group of its chunks of about equal bytes, reading only those\n"
    "into host memory; of a Matrix Market A, which every rank reads: a block of rows of about\n"
    "equal entries) on the GPU of its node-local rank (--device auto|cpu|gpu); the sensitivity\n"
    "and every back projection are summed over the ranks (device to device with NCCL where\n"
    "each rank has a GPU of its own and the build has NCCL, else MPI_Allreduce through host\n"
    "memory), the scalars (counts, log-likelihoods) through MPI, so f is the same on every\n"
    "rank and rank 0 prints and writes it. OSEM (--subsets S): each rank cuts its rows into S\n"
    "groups of its chunks; subset s is every rank's group s (the JSON's operator lists each\n"
    "subset's rows), so S is at most the fewest chunks of a rank.\n"
    "Exit status: 0 done, 1 failure (bad file, negative counts or matrix entries, ...), 2 usage.\n";

struct Result {
    MlemStatus status;
    std::vector<double> f;
    std::string op;
    double operator_ms = 0;
};

/// A from a Matrix Market / PETSc file (coo) or a chunk file (hoc, opened with `fopt`).
struct Source {
    const Coo<double>* coo = nullptr;
    std::string hoc;
    OocFileOptions fopt;
    index_t cols = 0;
    /// Under mpirun: this rank of `ranks` streams its own rows (a group of the chunk file's
    /// chunks of about equal bytes, or a block of rows of about equal entries), and `sum`
    /// adds over the ranks.
    int rank = 0, ranks = 1;
    std::function<void(double*, int)> sum;
    const ProcessGroup* group = nullptr;
};

template <class MT, class VT>
Result run(const Source& src, const std::vector<double>& g, int subsets, Format format,
           const FormatOptions& fo, const MlemOptions& mo,
           const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions* ooc)
{
    Result r;
    const auto t0 = std::chrono::steady_clock::now();
    Mlem<VT> em(mo);
    std::vector<double> g_local;         // under mpirun: this rank's counts
    if (src.ranks > 1 && subsets > 1) {  // OSEM: every rank's group s of its rows is subset s
        index_t row0 = 0;
        std::string layout;
        auto blocks = rank_subsets<MT, VT>(src.coo ? *src.coo : Coo<double>{}, src.hoc, src.fopt,
                                           exec, *ooc, *src.group, subsets, row0, layout);
        index_t mine = 0;
        for (const auto& b : blocks) mine += b->rows();
        r.op = "rank " + std::to_string(src.rank) + " of " + std::to_string(src.ranks) + ": rows " +
               std::to_string(row0 + 1) + ".." + std::to_string(row0 + mine) + " in " +
               std::to_string(subsets) + " subsets of every rank's rows (" + layout +
               "), block 0: " + blocks[0]->describe();
        g_local.assign(g.begin() + row0, g.begin() + row0 + mine);
        em.set_subsets(std::move(blocks));
        em.set_process_sum(src.sum);
    } else if (src.ranks > 1) {  // this rank's rows; A^T x summed over the ranks by the operator
        index_t row0 = 0;
        std::shared_ptr<const Operator<VT>> op = rank_rows<MT, VT>(
            src.coo ? *src.coo : Coo<double>{}, src.hoc, src.fopt, exec, *ooc, *src.group, row0);
        r.op = "rank " + std::to_string(src.rank) + " of " + std::to_string(src.ranks) + ": rows " +
               std::to_string(row0 + 1) + ".." + std::to_string(row0 + op->rows()) + ", " +
               op->describe();
        g_local.assign(g.begin() + row0, g.begin() + row0 + op->rows());
        em.set_operator(op);
        em.set_process_sum(src.sum);
    } else if (!src.hoc.empty()) {
        auto m = std::make_shared<const OocMatrix<MT>>(open_ooc_file<MT>(src.hoc, src.fopt));
        if (subsets > 1) {
            auto blocks = make_out_of_core_subsets<MT, VT>(m, subsets, exec, *ooc);
            r.op = std::to_string(subsets) + " row blocks, block 0: " + blocks[0]->describe();
            em.set_subsets(std::move(blocks));
        } else {
            auto op = std::make_shared<const OutOfCoreOperator<MT, VT>>(m, exec, *ooc);
            r.op = op->describe();
            em.set_operator(op);
        }
    } else if (ooc && subsets > 1) {
        const Coo<double>& a = *src.coo;
        auto m = std::make_shared<const OocMatrix<MT>>(
            make_ooc_matrix<MT>(a, ooc->chunk_bytes, exec->is_cuda()));
        auto blocks = make_out_of_core_subsets<MT, VT>(m, subsets, exec, *ooc);
        r.op = std::to_string(subsets) + " row blocks, block 0: " + blocks[0]->describe();
        em.set_subsets(std::move(blocks));
    } else if (ooc) {
        std::shared_ptr<const Operator<VT>> op =
            make_out_of_core_operator<MT, VT>(*src.coo, exec, *ooc);
        r.op = op->describe();
        em.set_operator(op);
    } else if (subsets == 1) {
        std::shared_ptr<const Operator<VT>> op =
            make_matrix_operator<MT, VT>(*src.coo, format, exec, fo);
        r.op = op->describe();
        em.set_operator(op);
    } else {
        auto blocks = make_row_block_operators<MT, VT>(*src.coo, subsets, format, exec, fo);
        r.op = std::to_string(subsets) + " row blocks, block 0: " + blocks[0]->describe();
        em.set_subsets(std::move(blocks));
    }
    r.operator_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<double>& gr = src.ranks > 1 ? g_local : g;
    const std::vector<VT> gv(gr.begin(), gr.end());
    Array<VT> gd = Array<VT>(gv).to(exec);
    Array<VT> fd(exec, std::size_t(src.cols));
    r.status = em.solve(gd, fd);
    const std::vector<VT> fh = fd.to_vector();
    r.f.assign(fh.begin(), fh.end());
    return r;
}
}  // namespace

int cmd_mlem(int argc, char** argv)
{
    Args args(argc, argv, {"--json", "--quiet", "--no-loglik"});
    if (args.help()) {
        std::printf(mlem_usage, format_help(20).c_str(),
                    (std::string(out_of_core_help) + chunk_file_help).c_str());
        return 0;
    }
    const bool json = args.flag("--json");
    bool quiet = args.flag("--quiet") || json;
    MlemOptions mo;
    mo.compute_loglik = !args.flag("--no-loglik");
    auto iters = args.get("--iters");
    const long long iterations = args.get_int("--iters", -1);
    const long long subsets = args.get_int("--subsets", 1);
    auto ffile = args.get("-o");
    auto phantom = args.get("--phantom");
    ProjectionCli pc(args);
    args.finish(2, 2);
    if (!iters) throw UsageError("--iters N is required");
    if (iterations < 0 || iterations > 100000000) throw UsageError("--iters must be in [0, 1e8]");
    mo.iterations = static_cast<int>(iterations);
    if (subsets < 1) throw UsageError("--subsets must be >= 1");
    pc.resolve();
    // under mpirun: each rank streams its own rows out of core, the sums over the ranks by MPI
    ProcessGroup group = projection_ranks(pc, quiet, "mlem");
    const bool root = group.rank == 0;
    const std::string& afile = args.positionals()[0];
    const std::string& gfile = args.positionals()[1];
    const auto t_read = std::chrono::steady_clock::now();
    // a chunk file is read chunk by chunk by the operator (its entries are not checked for
    // signs here: that would read it all once more)
    const ProjectionInput sys = read_projection_input(afile);
    const Coo<double>& a = sys.a;
    const offset_t a_nnz = sys.nnz;
    const std::vector<double> g = read_vector_of(gfile, std::size_t(a.rows), "g", "rows");
    HEPTANE_ENSURE(subsets <= a.rows, InputError,
                   "--subsets " << subsets << " exceeds the " << a.rows << " rows of A");
    offset_t negative = 0;
    for (offset_t k = 0; k < a.nnz(); ++k) negative += a.val[k] < 0 ? 1 : 0;
    HEPTANE_ENSURE(negative == 0, InputError,
                   afile << " has " << negative
                         << " negative entries; MLEM needs a system matrix with a_ij >= 0");
    std::vector<double> truth;
    if (phantom) {
        truth = read_vector_of(*phantom, std::size_t(a.cols), "the phantom", "columns");
    }
    const double read_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
    if (!quiet)
        std::fprintf(stderr, "read %s (%d x %d, %lld entries) and %s in %.3f s\n", afile.c_str(),
                     a.rows, a.cols, static_cast<long long>(a_nnz), gfile.c_str(), read_s);

    // out of core: g, f, q, b, 1/norm, norm and the reduction scratch as 6 vectors
    pc.place(sys, 6, quiet);
    Source src;
    src.cols = a.cols;
    src.rank = group.rank;
    src.ranks = group.size;
    src.sum = group.sum;
    src.group = &group;
    if (sys.chunk_file) {
        src.hoc = afile;
        src.fopt = pc.file_options();
    } else {
        src.coo = &a;
    }
    const int S = static_cast<int>(subsets);
    const std::optional<OutOfCoreOptions>& oo = pc.out_of_core;
    if (oo) {
        if (!quiet) {
            const auto t_start = std::chrono::steady_clock::now();
            const bool osem = S > 1;
            mo.progress = [t_start, osem](int k, int n) {
                std::fprintf(
                    stderr, "%s iteration %d of %d, %.1f s\n", osem ? "OSEM" : "MLEM", k, n,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start)
                        .count());
            };
        }
    }
    const OutOfCoreOptions* po = oo ? &*oo : nullptr;
    Result r = pc.precision == Precision::double_
                   ? run<double, double>(src, g, S, pc.format, pc.fo, mo, pc.exec, po)
               : pc.precision == Precision::single
                   ? run<float, float>(src, g, S, pc.format, pc.fo, mo, pc.exec, po)
                   : run<float, double>(src, g, S, pc.format, pc.fo, mo, pc.exec, po);
    const MlemStatus& st = r.status;
    double relerr = -1;
    if (phantom) {
        double num = 0, den = 0;
        for (std::size_t j = 0; j < truth.size(); ++j) {
            num += (r.f[j] - truth[j]) * (r.f[j] - truth[j]);
            den += truth[j] * truth[j];
        }
        relerr = std::sqrt(num / (den > 0 ? den : 1));
    }
    if (!root) return 0;  // f, the log-likelihoods and the sums are the same on every rank
    if (ffile)
        write_vector_file(*ffile, r.f,
                          "f from heptane mlem: " + std::to_string(st.iterations) +
                              " iterations, " + std::to_string(st.subsets) + " subsets");
    const double setup_s = (r.operator_ms + st.timings.setup_ms) / 1e3;
    if (json) {
        std::string ll = "[";
        for (std::size_t k = 1; k < st.loglik.size(); ++k) {
            char buf[40];
            std::snprintf(buf, sizeof buf, "%s%.17g", k > 1 ? ", " : "", st.loglik[k]);
            ll += buf;
        }
        ll += "]";
        std::printf(
            "{\"loglik\": %s, \"loglik_initial\": %.17g, \"iterations\": %d, \"subsets\": %d, "
            "\"counts\": %.17g, \"unseen_voxels\": %d, \"seconds\": %.6f, "
            "\"setup_seconds\": %.6f, \"per_iteration_ms\": %.6f, \"format\": \"%s\", "
            "\"transpose\": \"%s\", \"operator\": %s, \"precision\": \"%s\", \"device\": \"%s\", "
            "\"rows\": %d, \"cols\": %d, \"nnz\": %lld, \"ranks\": %d",
            ll.c_str(), st.loglik.empty() ? 0.0 : st.loglik[0], st.iterations, st.subsets,
            st.counts, st.unseen_voxels, st.timings.solve_ms / 1e3, setup_s,
            st.timings.per_iteration_ms, to_string(pc.format),
            describe_transpose(pc.format, pc.fo.transpose), json_string(r.op).c_str(),
            pc.prec.c_str(), pc.dev.c_str(), a.rows, a.cols, static_cast<long long>(a_nnz),
            group.size);
        if (phantom) std::printf(", \"phantom_relerr\": %.9g", relerr);
        std::printf("}\n");
    } else {
        std::printf(
            "system    %s: %d rows (LORs) x %d columns (voxels), %lld entries; counts %s "
            "(total %.0f)\n",
            afile.c_str(), a.rows, a.cols, static_cast<long long>(a_nnz), gfile.c_str(), st.counts);
        if (group.size > 1)
            std::printf("ranks     %d (mpirun), each streaming its own rows out of core\n",
                        group.size);
        std::printf("operator  %s (A^T: %s)\n", r.op.c_str(),
                    describe_transpose(pc.format, pc.fo.transpose));
        std::printf("%s       %d iterations%s, f0 = %.6g, %d voxels unseen\n",
                    st.subsets > 1 ? "OSEM" : "MLEM", st.iterations,
                    st.subsets > 1 ? (" x " + std::to_string(st.subsets) + " subsets").c_str() : "",
                    st.initial_value, st.unseen_voxels);
        if (!st.loglik.empty()) {
            std::printf("loglik    initial %.10e\n", st.loglik[0]);
            for (std::size_t k = 1; k < st.loglik.size(); ++k)
                std::printf("          iteration %4zu  %.10e  (%+.3e)\n", k, st.loglik[k],
                            st.loglik[k] - st.loglik[k - 1]);
        }
        if (phantom) std::printf("phantom   ||f - f_true|| / ||f_true|| = %.4e\n", relerr);
        std::printf("time      setup %.3f s, iterations %.3f s, %.4f ms per iteration\n", setup_s,
                    st.timings.solve_ms / 1e3, st.timings.per_iteration_ms);
    }
    return 0;
}

}  // namespace heptane::cli
