// heptane solve: A x = b with BiCGStab, CG or GMRES on the CPU or a GPU, with an honest account of
// convergence (reason, recursive and true residual, error against x_true when known).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "apps/progress.hpp"
#include "core/error.hpp"
#include "formats/detect/detect.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/hepta.hpp"
#include "generators/matrix_file.hpp"
#include "solver/solve.hpp"

namespace heptane::cli {

namespace {
const char* solve_usage =
    "usage: heptane solve A.mtx [-b b.mtx] [options]\n"
    "       heptane solve A.hoc [-b b.mtx] [options]   (a chunk file: always out of core)\n"
    "       heptane solve --generate JxHxIxNc[:model[:banded]] [options]\n\n"
    "Solve A x = b. Without -b, b = A*1 (for --generate: b = A*x_true, and the error against\n"
    "x_true is reported; for a PETSc binary file that holds a vector after its matrix, as\n"
    "-ksp_view_mat binary -ksp_view_rhs binary write, that vector). Files: Matrix Market or\n"
    "PETSc binary (told by their first bytes); -o FILE.petsc writes PETSc binary. A chunk file\n"
    "(A.hoc: heptane convert A.mtx -o A.hoc, pet -o A.hoc) stays on disk and in host memory as\n"
    "--host-memory allows and streams to the device at every product: --pc none, jacobi\n"
    "(default) or bjacobi (set up from its diagonal blocks), its chunks' format, --precision\n"
    "from its values (fp64: double; fp32: mixed (default) or single).\n"
    "  --solver S        bicgstab (default) | cg (symmetric positive definite A) | gmres\n"
    "                    (restarted flexible GMRES(m), right-preconditioned; also: fgmres)\n"
    "  --no-symmetry-check  cg: run even when A is not symmetric (by default a matrix with\n"
    "                    |a_ij - a_ji| > 1e-8 max(|a_ij|, |a_ji|) anywhere stops before the\n"
    "                    solve with that pair named, exit 1; not checked for a chunk file)\n"
    "  --restart M       gmres: basis vectors per cycle before a restart (default 30; keeps\n"
    "                    2M+1 vectors with a preconditioner, M+1 without; --max-it counts\n"
    "                    the iterations of all cycles)\n"
    "  --pc P            none | jacobi | bjacobi | ilu0 | ilu0-mc | amg | cpr. Default on the\n"
    "                    CPU: ilu0 (bjacobi for cg); on CUDA: amg (cpr for bicgstab/gmres with\n"
    "                    Nc > 1), and if it fails or does not converge ilu0-mc, then ilu0\n"
    "                    (bjacobi after amg for cg); the result names the one used and why\n"
    "                    the others were left; bjacobi and ilu0(-mc)\n"
    "                    work on Nc x Nc blocks; ilu0-mc is ILU(0) in multi-colour order (one\n"
    "                    GPU launch per colour, more iterations than natural-order ilu0);\n"
    "                    amg: smoothed-aggregation algebraic multigrid, one V-cycle per apply\n"
    "                    (Nc x Nc blocks aggregated together; the default smoother is\n"
    "                    Chebyshev, symmetric and so fit for cg, except for a non-symmetric\n"
    "                    Nc > 1 system: block ILU(0)); cpr: two-stage CPR for coupled\n"
    "                    Nc > 1 systems (quasi-IMPES pressure by AMG, then block ILU(0))\n"
    "AMG and CPR options (--pc amg | cpr):\n%s"
    "  --format F        auto (default: the format `heptane info` picks, with the reason\n"
    "                    printed) or one of:\n%s"
    "  --precision P     double | single | mixed (fp32 matrix values, fp64 vectors); default\n"
    "                    double. mixed refines: the fp32-valued solver finds corrections of\n"
    "                    the residual taken with the fp64 matrix (kept on the device too) until\n"
    "                    it meets --rtol. single (and mixed with --no-refine) stops on the\n"
    "                    residual of the rounded matrix; the true relres printed is against the\n"
    "                    fp64 matrix and can stay above --rtol by ~1e-7 ||A|| ||x|| / ||b||:\n"
    "                    the result is then NOT converged (diverged_true_residual, exit 1)\n"
    "  --no-refine       mixed: no fp64 refinement (one solve with the fp32 values)\n"
    "  --device D        auto | cpu | gpu | gpu:N (default auto: the GPU when there is one\n"
    "                    and the matrix has enough stored entries for it to win, by a model\n"
    "                    measured with scripts/device-crossover.sh -- about 6.7 M entries with\n"
    "                    16 host threads, fewer with fewer; the choice is printed)\n"
    "  --impl I          fused (default) | reference (thesis-style cuBLAS/cuSPARSE BiCGStab,\n"
    "                    GPU and double only)\n"
    "  --rtol R          stop when ||r|| <= R ||b|| (default 1e-8)\n"
    "  --atol A          or when ||r|| < A (default 0)\n"
    "  --max-it N        iteration limit (default 1000)\n"
    "  --check-every K   GPU: read the residual on the host every K iterations (default 0:\n"
    "                    automatic, 1 with --pc amg or cpr or out of core with chunks\n"
    "                    streamed, else 8; gmres reads it every iteration). Out of core\n"
    "                    nothing is queued past a check: a product there streams A\n"
    "  --no-graphs       GPU: launch every kernel instead of replaying each batch of K\n"
    "                    iterations from a CUDA graph (the default where the operator and\n"
    "                    preconditioner allow it: BDIA-GH and the other non-CSR formats;\n"
    "                    not gmres, whose host reads the Hessenberg column every iteration)\n"
    "  --no-fused-dots   GPU, BDIA-GH: reduce the dot products after each product in kernels\n"
    "                    of their own instead of inside the product (the default saves 2-3\n"
    "                    vector passes per iteration, and BiCGStab without a preconditioner\n"
    "                    forms p and s inside the products too; the results agree to\n"
    "                    rounding)\n"
    "  --x0 FILE         initial guess (a vector file)\n"
    "%s"
    "  -o FILE           write x (Matrix Market vector; PETSc binary for FILE.petsc)\n"
    "  --monitor         print the residual at every check\n"
    "  --history FILE    write the residual history as CSV (iteration,residual,relative)\n"
    "  --json            one JSON object on stdout (keys: converged, reason, iterations,\n"
    "                    true_relres, relres, solve_seconds, setup_seconds, per_iteration_ms,\n"
    "                    solver, restart (gmres; null otherwise), format, format_reason,\n"
    "                    device, ...)\n"
    "  --quiet           no progress on stderr\n"
    "%s"
    "  (out of core, --pc defaults to jacobi: ilu0, amg and cpr keep a copy of A on the device)\n"
    "%s"
    "Under mpirun (mpirun -np P heptane solve ...; a build with MPI) the rows are split over\n"
    "the P ranks, one GPU per rank (node-local rank) or CPU ranks, operator BDIA-GH for a\n"
    "hepta grid; any other matrix file (or --format csr, with a file or --generate) runs on\n"
    "the distributed CSR operator (rows split in whole Nc blocks, a halo of exactly the\n"
    "columns each rank reads; on GPUs packed there and staged through the host); any\n"
    "--precision (mixed refined against the fp64 matrix as on one process; single and\n"
    "--no-refine: the true relres against the fp64 matrix, on the host); a file, -b and\n"
    "--x0 are read by every rank, which keeps its rows; the\n"
    "preconditioner is per rank (ilu0: ILU(0) of each rank's diagonal block):\n"
    "  --split S         planes (default: whole z-planes of the grid; cells where the grid\n"
    "                    has fewer z-planes than ranks) | cells (BDIA-GH)\n"
    "  --halo M          auto | host | pinned-async | pinned-sync | pageable-async |\n"
    "                    pageable-sync | nccl | cuda-aware | peer (auto: host on CPU ranks;\n"
    "                    on GPUs peer (CUDA IPC, kernels write into the neighbour's memory)\n"
    "                    when each rank has its own GPU of one node with peer access, else\n"
    "                    nccl when built with NCCL and each rank has its own GPU, else\n"
    "                    pinned-async)\n"
    "  --reduce M        auto | mpi | nccl | peer: how the dot products are summed over the\n"
    "                    ranks (auto: as --halo picks, mpi for the host-staged models)\n"
    "  --coarse          a global coarse correction around the ranks' preconditioner (which\n"
    "                    leaves out the couplings between ranks): aggregates on each rank,\n"
    "                    A_c = P^T A P over all ranks, whole on every rank; fewer iterations\n"
    "                    as the ranks grow, at one more product per application\n"
    "  --coarse-aggregates N  aggregates per rank (default min(64, 512 / (ranks x Nc)))\n"
    "  --coarse-solve S  auto | dense | amg: how every rank solves with A_c (dense LU, at\n"
    "                    most 8192 unknowns; amg: --coarse-cycles steps of AMG's cycle on\n"
    "                    A_c, for many aggregates per rank; auto: dense up to 1024 unknowns)\n"
    "  --coarse-cycles N steps of the coarse AMG iteration (default 2)\n"
    "  --coarse-aggregation A  bfs (default: grown breadth-first, about N of them) |\n"
    "                    strength (AMG's aggregates of the strong couplings, level by level\n"
    "                    down to the count nearest N)\n"
    "  --amg-global      with --pc amg (or cpr: its pressure stage): one AMG hierarchy over all\n"
    "                    ranks instead of one per rank's diagonal block: levels split over the\n"
    "                    ranks, each smoothed through the distributed product (--amg-smoother\n"
    "                    chebyshev, jacobi or l1jacobi; auto is chebyshev), the coarsest\n"
    "                    gathered and inverted on every rank; the cycle runs on the host (GPU\n"
    "                    vectors go down and up). The default on CPU ranks for --pc amg on a\n"
    "                    scalar system (Nc = 1) and for --pc cpr, without --coarse or the\n"
    "                    ilu0mc smoother (refused -- a zero diagonal, a singular coarsest\n"
    "                    level --: each rank's own instead); the report says which and why\n"
    "  --amg-per-rank    one AMG (CPR) per rank's diagonal block: block Jacobi over the ranks\n"
    "A chunk file under mpirun (mpirun -np P heptane solve A.hoc ...): each rank reads and\n"
    "streams its own group of the file's chunks (about equal bytes; --host-memory and\n"
    "--device-memory per rank), x is gathered on every rank at every product and the dot\n"
    "products summed over the ranks; --pc none, jacobi or bjacobi of each rank's rows (the\n"
    "same preconditioner as on one process):\n"
    "  --gather M        auto | host (device -> host, MPI_Allgatherv, host -> device) | nccl\n"
    "                    (device to device; a GPU per rank, a build with NCCL); auto: nccl\n"
    "                    where it can run, else host\n"
    "  --reduce M        auto | mpi | nccl | peer, as above (auto: peer or nccl where they\n"
    "                    can run, else mpi)\n"
    "Exit status: 0 converged, 1 not converged (the reason is printed) or failed, 2 usage.\n";

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b, double* bmax)
{
    double d = 0, m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, std::abs(a[i] - b[i]));
        m = std::max(m, std::abs(b[i]));
    }
    *bmax = m;
    return d;
}

/// What report() prints beside the result.
struct Report {
    std::string source;
    index_t rows = 0;
    offset_t nnz = 0;
    std::string format, format_reason, precision, device_why;
    std::optional<std::string> xfile, hist;
    bool json = false;
};

/// Write x and the history when asked, print the result (text or JSON); the exit status.
int report(const SolveResult& r, const SolveConfig& cfg, const Report& o,
           const std::vector<double>& x_true)
{
    const Status& st = r.status;
    double err = -1, xmax = 0;
    if (!x_true.empty()) err = max_abs_diff(r.x, x_true, &xmax) / (xmax > 0 ? xmax : 1);
    if (o.xfile) write_vector_file(*o.xfile, r.x, "x from heptane solve: " + st.summary());
    if (o.hist) write_history_csv(*o.hist, st);
    const auto& t = r.timings;
    const double setup_s = (t.operator_ms + t.preconditioner_ms + t.upload_ms + t.setup_ms) / 1e3;
    const std::string restart_json =
        cfg.solver == SolverType::gmres ? std::to_string(cfg.restart) : "null";
    if (o.json) {
        std::printf(
            "{\"source\": %s, \"converged\": %s, \"reason\": \"%s\", \"iterations\": %d, "
            "\"relres\": %.6e, \"true_relres\": %s, \"error_vs_xtrue\": %s, "
            "\"solve_seconds\": %.6f, \"setup_seconds\": %.6f, \"total_seconds\": %.6f, "
            "\"per_iteration_ms\": %.6f, \"solver\": %s, \"restart\": %s, \"preconditioner\": %s, "
            "\"format\": "
            "\"%s\", "
            "\"format_reason\": %s, \"operator\": %s, \"precision\": \"%s\", \"device\": %s, "
            "\"device_choice\": %s, \"cuda_graph\": %s, \"fused_dots\": %s, \"fused_inputs\": "
            "\"%s\", "
            "\"corrections\": %d, \"null_space_removed\": %s, \"rows\": %d, \"nnz\": %lld}\n",
            json_string(o.source).c_str(), st.converged() ? "true" : "false", to_string(st.reason),
            st.iterations, st.relative_residual, json_number(st.true_relative_residual).c_str(),
            json_number(err).c_str(), t.solve_ms / 1e3, setup_s, t.total_ms / 1e3,
            t.per_iteration_ms, json_string(r.solver).c_str(), restart_json.c_str(),
            json_string(r.preconditioner).c_str(), o.format.c_str(),
            json_string(o.format_reason).c_str(), json_string(r.format).c_str(),
            o.precision.c_str(), json_string(r.device).c_str(),
            o.device_why.empty() ? "null" : json_string(o.device_why).c_str(),
            st.cuda_graph ? "true" : "false", st.fused_dots ? "true" : "false",
            to_string(st.fused_inputs), r.corrections, json_number(r.null_space_removed).c_str(),
            o.rows, static_cast<long long>(o.nnz));
    } else {
        std::printf("system    %s: %d rows, %lld entries\n", o.source.c_str(), o.rows,
                    static_cast<long long>(o.nnz));
        std::printf("operator  %s\n", r.format.c_str());
        std::printf("solver    %s, preconditioner %s, on %s\n", r.solver.c_str(),
                    r.preconditioner.c_str(), r.device.c_str());
        print_result(st, err);
        if (r.null_space_removed >= 0)
            std::printf(
                "          null space: the constant removed from the solution's "
                "correction (its component there had norm %.3e)\n",
                r.null_space_removed);
        std::printf(
            "time      setup %.3f s (operator %.3f, preconditioner %.3f, upload %.3f), "
            "solve %.3f s, %.4f ms per iteration%s%s%s, total %.3f s\n",
            setup_s, t.operator_ms / 1e3, t.preconditioner_ms / 1e3, t.upload_ms / 1e3,
            t.solve_ms / 1e3, t.per_iteration_ms, st.cuda_graph ? " (CUDA graph)" : "",
            st.fused_dots ? " (dot products fused into the products)" : "",
            st.fused_inputs == FusedInputs::p_and_s ? " (p and s formed in them)"
            : st.fused_inputs == FusedInputs::s     ? " (s formed in them)"
                                                    : "",
            t.total_ms / 1e3);
    }
    return st.converged() ? 0 : 1;
}

/// Progress: the residual at every check with --monitor, otherwise about once a second on long
/// solves; the stages as they start unless quiet.
void set_progress(SolveConfig& cfg, bool monitor, bool quiet)
{
    const auto t_start = std::chrono::steady_clock::now();
    auto last_print = std::make_shared<double>(0);
    cfg.options.monitor = [=](const IterationInfo& it) {
        const double now =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
        if (monitor || (!quiet && now - *last_print >= 1.0)) {
            std::fprintf(stderr, "  iteration %6d  ||r|| %.6e  ||r||/||b|| %.3e\n", it.iteration,
                         it.residual_norm, it.relative_residual);
            *last_print = now;
        }
    };
    if (!quiet)
        cfg.on_stage = [](SolveStage st, double ms) {
            std::fprintf(stderr, "  [%8.1f ms] %s\n", ms, to_string(st));
        };
}

/// heptane solve A.hoc: the matrix stays in its chunk file (and as much of it in host memory
/// as --host-memory allows) and streams to the device at every product.
struct ChunkFileSolve {
    std::string path, device, prec, fmt_name;
    bool prec_given = false, chunk_bytes_given = false, monitor = false, quiet = false;
    bool ranks = false;                            ///< under mpirun: each rank streams its own rows
    std::string gather = "auto", reduce = "auto";  ///< under mpirun: the exchange models
    ProcessGroup group;                            ///< the ranks (one process: size 1)
    OutOfCoreChoice occ;
    std::optional<std::string> bfile, x0file;
    Report out;
};

template <class MT>
int solve_chunk_file(ChunkFileSolve& c, const OocFileInfo& info, SolveConfig& cfg)
{
    const ProcessGroup& g = c.group;
    OocFileOptions fo;
    fo.host_memory = host_memory_budget(c.occ);
    fo.pinned = cfg.executor->is_cuda();
    std::vector<index_t> starts;  // under mpirun: every rank's first row, then the row count
    if (g.size > 1) {             // a group of the file's chunks of about equal bytes per rank
        ChunkFileSplit split = chunk_file_split<MT>(c.path, g.size, g.rank);
        starts = std::move(split.starts);
        fo.first_chunk = split.first;
        fo.last_chunk = split.last;
    }
    std::shared_ptr<const OocMatrix<MT>> m;
    {
        Stage st(c.quiet, "opening " + c.path);
        m = std::make_shared<const OocMatrix<MT>>(open_ooc_file<MT>(c.path, fo));
        char note[200];
        std::snprintf(note, sizeof note,
                      "%.3f GB in %zu chunks, %.3f GB of them read into host memory%s",
                      double(m->bytes()) / 1e9, m->chunks().size(), double(m->host_bytes()) / 1e9,
                      g.size > 1 ? " (rank 0's share)" : "");
        st.done(note);
    }
    const index_t r0 = g.size > 1 ? starts[std::size_t(g.rank)] : 0;
    const index_t r1 = g.size > 1 ? starts[std::size_t(g.rank) + 1] : info.rows;
    {
        // the device budget less the vectors: under mpirun a rank holds its rows of the
        // Krylov vectors and two of the whole length (x gathered, and one to spare)
        OutOfCoreChoice oc = c.occ;
        oc.mode = "on";
        const int vectors = 10 + (cfg.solver == SolverType::gmres ? 2 * cfg.restart + 1 : 0);
        const double entries =
            g.size > 1 ? double(vectors - 2) * double(r1 - r0) + 2.0 * double(info.rows) : -1.0;
        cfg.out_of_core = out_of_core_choice(oc, *cfg.executor, info.rows, info.cols, info.nnz,
                                             cfg.precision, vectors, true, entries);
    }
    std::vector<double> b, x_true;
    if (c.bfile) {
        b = read_vector_file(*c.bfile);
        HEPTANE_ENSURE(b.size() == std::size_t(m->rows()), DimensionMismatch,
                       "b has " << b.size() << " entries, A has " << m->rows() << " rows");
        b = std::vector<double>(b.begin() + r0, b.begin() + r1);  // this rank's rows
    } else {  // b = A * 1 from this rank's chunks on the CPU (one pass over them)
        Stage st(c.quiet, "b = A * 1");
        const auto host =
            g.size > 1 ? std::make_unique<const OutOfCoreOperator<MT, double>>(
                             m, cpu_executor(), OutOfCoreOptions{}, fo.first_chunk, fo.last_chunk)
                       : std::make_unique<const OutOfCoreOperator<MT, double>>(m, cpu_executor());
        const std::vector<double> ones(std::size_t(m->cols()), 1.0);
        b.assign(std::size_t(r1 - r0), 0.0);
        host->apply(ones.data(), b.data());
        x_true = ones;
        st.done();
    }
    if (c.x0file) {
        cfg.x0 = read_vector_file(*c.x0file);
        HEPTANE_ENSURE(cfg.x0.size() == std::size_t(m->rows()), DimensionMismatch,
                       "x0 has " << cfg.x0.size() << " entries, A has " << m->rows() << " rows");
        cfg.x0 = std::vector<double>(cfg.x0.begin() + r0, cfg.x0.begin() + r1);
    }
    set_progress(cfg, c.monitor, c.quiet);
    const bool bdia = ooc_bdia_chunks(m->chunks());
    c.out.format = to_string(bdia ? Format::bdia : Format::csr);
    c.out.format_reason = std::string("the chunk file's ") + (bdia ? "BDIA-GH" : "CSR") +
                          " chunks, streamed out of core" +
                          (g.size > 1 ? ", each rank its own (x gathered at every product)" : "");
    if (!c.quiet)
        std::fprintf(stderr, "format %s: %s\n", c.out.format.c_str(), c.out.format_reason.c_str());
    SolveResult r;
    if (g.size > 1) {
        OocRowSplit split;
        split.first_chunk = fo.first_chunk;
        split.last_chunk = fo.last_chunk;
        split.whole = [&](std::shared_ptr<const Operator<double>> rows) {
            return g.gather_rows(std::move(rows), starts, c.gather, c.reduce);
        };
        split.whole_fp32 = [&](std::shared_ptr<const Operator<float>> rows) {
            return g.gather_rows_fp32(std::move(rows), starts, c.gather, c.reduce);
        };
        r = solve_system<MT>(m, b, cfg, split);
        std::vector<double> x(std::size_t(info.rows), 0.0);  // x whole on every rank
        std::copy(r.x.begin(), r.x.end(), x.begin() + r0);
        g.sum(x.data(), info.rows);
        r.x = std::move(x);
        if (g.rank != 0) return r.status.converged() ? 0 : 1;  // rank 0 reports
    } else {
        r = solve_system<MT>(m, b, cfg);
    }
    return report(r, cfg, c.out, x_true);
}

int solve_chunk_file(ChunkFileSolve& c, SolveConfig& cfg)
{
    const OocFileInfo info = ooc_file_info(c.path);
    check_chunk_file_choices(c.occ, c.fmt_name);
    if (c.chunk_bytes_given)
        throw UsageError(
            "--chunk-bytes: a chunk file's chunks are fixed (heptane convert "
            "--chunk-bytes rewrites them)");
    if (cfg.impl != BicgstabImpl::fused)
        throw UsageError("--impl reference needs the matrix in memory, not a chunk file");
    if (cfg.pc && *cfg.pc != PcType::none && *cfg.pc != PcType::jacobi &&
        *cfg.pc != PcType::block_jacobi)
        throw UsageError(std::string("--pc ") + to_string(*cfg.pc) +
                         " needs the matrix in memory; with a chunk file: none, jacobi or bjacobi");
    cfg.precision = chunk_file_precision(info, c.prec, c.prec_given);
    if (info.rows != info.cols)
        throw UsageError("A is " + std::to_string(info.rows) + " x " + std::to_string(info.cols) +
                         ": solve needs a square matrix");
    if (c.ranks) {
#ifdef HEPTANE_CLI_MPI
        c.group = mpi_process_group(c.device);
        cfg.executor = c.group.exec;
        if (c.group.rank != 0) c.quiet = true;
        c.out.device_why = "under mpirun: " + device_label(*cfg.executor) + " on each of " +
                           std::to_string(c.group.size) + " ranks";
#else
        throw UsageError(
            "heptane solve runs under mpirun, but this build has no MPI (configure with MPI "
            "found and HEPTANE_WITH_MPI=ON)");
#endif
    } else {
        cfg.executor =
            pick_solve_executor(c.device, static_cast<long long>(info.nnz), c.out.device_why);
    }
    if (!c.quiet && !c.out.device_why.empty())
        std::fprintf(stderr, "device %s\n", c.out.device_why.c_str());
    c.out.source = c.path;
    c.out.rows = info.rows;
    c.out.nnz = info.nnz;
    c.out.precision = c.prec;
    return info.value_bytes == 4 ? solve_chunk_file<float>(c, info, cfg)
                                 : solve_chunk_file<double>(c, info, cfg);
}
}  // namespace

int cmd_solve(int argc, char** argv)
{
    Args args(argc, argv,
              {"--monitor", "--json", "--quiet", "--no-graphs", "--no-fused-dots", "--no-refine",
               "--coarse", "--amg-global", "--amg-per-rank", "--no-symmetry-check"});
    if (args.help()) {
        std::printf(solve_usage, pc_options_help, format_help(20).c_str(), null_space_help,
                    out_of_core_help, chunk_file_help);
        return 0;
    }
    const bool json = args.flag("--json");
    const bool monitor = args.flag("--monitor");
    const bool quiet = args.flag("--quiet") || json;
    // under mpirun a chunk file's rows are split over the ranks, each streaming its own
    const bool chunk_file_ranks =
        launched_by_mpirun() && !args.positionals().empty() && is_ooc_file(args.positionals()[0]);
    if (launched_by_mpirun() && !chunk_file_ranks) {
        const auto ooc = args.get("--out-of-core");
        if ((ooc && *ooc != "off") || args.get("--device-memory") || args.get("--chunk-bytes"))
            throw UsageError(
                "--out-of-core, --device-memory and --chunk-bytes with a matrix in memory run "
                "on one process: under mpirun each rank keeps its rows on its own GPU; for ranks "
                "that stream their rows, give a chunk file (heptane convert A.mtx -o A.hoc)");
#ifdef HEPTANE_CLI_MPI
        return cmd_solve_distributed(args, json, monitor, args.flag("--quiet"));
#else
        throw UsageError(
            "heptane solve runs under mpirun, but this build has no MPI (configure "
            "with MPI found and HEPTANE_WITH_MPI=ON)");
#endif
    }
    const std::string gather = args.get_or("--gather", "auto");
    const std::string reduce = args.get_or("--reduce", "auto");
    if (chunk_file_ranks) {
        for (const char* o : {"--halo", "--split"})
            if (args.get(o))
                throw UsageError(std::string(o) +
                                 " applies to a matrix in memory under mpirun; the ranks of a "
                                 "chunk file take --gather and --reduce");
        if (args.flag("--coarse") || args.get("--coarse-aggregates") ||
            args.get("--coarse-solve") || args.get("--coarse-cycles") ||
            args.get("--coarse-aggregation"))
            throw UsageError(
                "--coarse applies to a matrix in memory under mpirun (the ranks of a chunk file "
                "take --pc none, jacobi or bjacobi)");
        if (gather != "auto" && gather != "host" && gather != "nccl")
            throw UsageError("--gather " + gather + ": the choices are auto, host and nccl");
        if (reduce != "auto" && reduce != "mpi" && reduce != "nccl" && reduce != "peer")
            throw UsageError("--reduce " + reduce + ": the choices are auto, mpi, nccl and peer");
    } else {
        for (const char* o : {"--halo", "--reduce", "--split", "--gather", "--coarse-aggregates",
                              "--coarse-solve", "--coarse-cycles", "--coarse-aggregation"})
            if (args.get(o)) throw UsageError(std::string(o) + " applies under mpirun only");
        if (args.flag("--coarse"))
            throw UsageError(
                "--coarse applies under mpirun only (one process has no ranks to couple)");
        for (const char* o : {"--amg-global", "--amg-per-rank"})
            if (args.flag(o))
                throw UsageError(std::string(o) +
                                 " applies under mpirun only (one process has one AMG hierarchy "
                                 "already)");
    }
    auto gen = args.get("--generate");
    auto bfile = args.get("-b");
    auto x0file = args.get("--x0");
    auto xfile = args.get("-o");
    auto hist = args.get("--history");
    SolveConfig cfg;
    cfg.solver = usage_checked([&] { return parse_solver(args.get_or("--solver", "bicgstab")); });
    const bool has_restart = args.get("--restart").has_value();
    const long long restart = args.get_int("--restart", cfg.restart);
    if (auto pc = args.get("--pc")) cfg.pc = usage_checked([&] { return parse_pc(*pc); });
    cfg.pc_options = parse_pc_options(args);
    const std::string fmt_name = args.get_or("--format", "auto");
    const std::string prec = args.get_or("--precision", "double");
    const std::string device = args.get_or("--device", "auto");
    cfg.impl = usage_checked([&] { return parse_bicgstab_impl(args.get_or("--impl", "fused")); });
    cfg.options.rtol = args.get_double("--rtol", cfg.options.rtol);
    cfg.options.atol = args.get_double("--atol", cfg.options.atol);
    cfg.options.max_it = static_cast<int>(args.get_int("--max-it", cfg.options.max_it));
    cfg.options.check_every =
        static_cast<int>(args.get_int("--check-every", cfg.options.check_every));
    cfg.options.cuda_graphs = !args.flag("--no-graphs");
    cfg.options.fused_dots = !args.flag("--no-fused-dots");
    cfg.refine = !args.flag("--no-refine");
    const bool check_symmetry_for_cg = !args.flag("--no-symmetry-check");
    cfg.null_space_constant = parse_null_space(args);
    const OutOfCoreChoice occ = parse_out_of_core(args, true);
    const bool prec_given = args.get("--precision").has_value();
    const bool chunk_bytes_given = args.get("--chunk-bytes").has_value();
    args.finish(gen ? 0 : 1, gen ? 0 : 1);
    cfg.precision = precision_option(prec);
    if (!(cfg.options.rtol >= 0)) throw UsageError("--rtol must be >= 0");
    if (!(cfg.options.atol >= 0)) throw UsageError("--atol must be >= 0");
    if (fmt_name != "auto") usage_checked([&] { return parse_format(fmt_name); });
    if (cfg.options.max_it < 0) throw UsageError("--max-it must be >= 0");
    if (cfg.options.check_every < 0) throw UsageError("--check-every must be >= 0 (0: automatic)");
    if (restart < 1 || restart > (1 << 20)) throw UsageError("--restart must be in [1, 1048576]");
    cfg.restart = static_cast<int>(restart);
    if (has_restart && cfg.solver != SolverType::gmres)
        throw UsageError("--restart applies to --solver gmres only");

    // The device: a bad name is a usage error at once. A GPU's start-up (CUDA context,
    // handles: ~0.45 s on the H100 machine) runs in a thread beside the read when the GPU is
    // named, or when auto will pick it by the size the file or generator announces.
    const int dev = parse_device_name(device);
    std::future<std::shared_ptr<const Executor>> warming;
    std::shared_ptr<const Executor> exec;
    std::optional<std::string> file;
    if (!args.positionals().empty()) file = args.positionals()[0];
    if (file && is_ooc_file(*file) && !gen) {
        ChunkFileSolve c;
        c.path = *file;
        c.device = device;
        c.prec = prec;
        c.fmt_name = fmt_name;
        c.prec_given = prec_given;
        c.chunk_bytes_given = chunk_bytes_given;
        c.monitor = monitor;
        c.quiet = quiet;
        c.occ = occ;
        c.bfile = bfile;
        c.x0file = x0file;
        c.out.xfile = xfile;
        c.out.hist = hist;
        c.out.json = json;
        c.ranks = chunk_file_ranks;
        c.gather = gather;
        c.reduce = reduce;
        return solve_chunk_file(c, cfg);
    }
    if (occ.host_memory) throw UsageError("--host-memory applies to a chunk file (A.hoc) only");
    if (dev == device_cpu) {
        exec = cpu_executor();
    } else if (dev >= 0 && (!built_with_cuda() || dev >= CudaExecutor::device_count())) {
        exec = pick_executor(device);  // no such GPU: the error now, before the read
    } else if (dev >= 0) {
        warming = std::async(std::launch::async, [dev] {
            return std::shared_ptr<const Executor>(CudaExecutor::create(dev));
        });
    } else if (built_with_cuda() && CudaExecutor::device_count() > 0 &&
               expected_entries(file, gen) >= auto_gpu_min_entries(cpu_executor()->threads())) {
        warming = std::async(std::launch::async, [] {
            return std::shared_ptr<const Executor>(CudaExecutor::create(0));
        });
    }
    Problem p = load_problem(file, gen, quiet);
    std::string device_why;
    if (!exec && dev >= 0) exec = warming.get();
    if (!exec)
        exec = pick_solve_executor(device, static_cast<long long>(p.a.nnz()), device_why, &warming);
    cfg.executor = exec;  // solve_system runs on it (no second stream and handles)
    HEPTANE_ENSURE(p.a.rows == p.a.cols, DimensionMismatch,
                   "A is " << p.a.rows << " x " << p.a.cols << ": solve needs a square matrix");
    if (cfg.solver == SolverType::cg && check_symmetry_for_cg)
        require_symmetric_for_cg(symmetry_of(p.a), quiet);

    // right-hand side
    std::vector<double> b, x_true;
    if (bfile) {
        b = read_vector_file(*bfile);
        HEPTANE_ENSURE(b.size() == std::size_t(p.a.rows), DimensionMismatch,
                       "b has " << b.size() << " entries, A has " << p.a.rows << " rows");
    } else if (p.rhs_in_file) {
        b = std::move(*p.rhs_in_file);
        HEPTANE_ENSURE(b.size() == std::size_t(p.a.rows), DimensionMismatch,
                       "the vector after the matrix in " << *file << " has " << b.size()
                                                         << " entries, A has " << p.a.rows
                                                         << " rows");
    } else if (p.spec) {
        auto sys = make_rhs(*p.spec, p.a);
        b = std::move(sys.b);
        x_true = std::move(sys.x_true);
    } else {
        b.assign(p.a.rows, 0.0);  // b = A * 1
        for (offset_t k = 0; k < p.a.nnz(); ++k) b[p.a.row[k]] += p.a.val[k];
        x_true.assign(p.a.rows, 1.0);
    }
    if (x0file) {
        cfg.x0 = read_vector_file(*x0file);
        HEPTANE_ENSURE(cfg.x0.size() == std::size_t(p.a.rows), DimensionMismatch,
                       "x0 has " << cfg.x0.size() << " entries, A has " << p.a.rows << " rows");
    }

    // format: the detected choice unless told
    Structure s = detect_structure(p.a);
    std::string format_reason;
    if (fmt_name == "auto") {
        cfg.format = s.format;
        format_reason = s.format_reason;
    } else {
        cfg.format = parse_format(fmt_name);
        format_reason = "requested with --format";
    }
    cfg.format_options.block_size = s.block_size;
    cfg.block_size = s.block_size;
    if (cfg.format == Format::bdia) cfg.format_options.block_offsets = s.block_offsets;
    // the grid behind the pattern, for --amg-aggregation box (AMG's matrix and CPR's pressure
    // matrix have a cell a row), so that AMG need not find it again
    if (s.hepta && s.grid_dims > 0) cfg.pc_options.amg.grid = cfg.pc_options.cpr.amg.grid = s.grid;

    // out of core: the matrix in host chunks, streamed at every product (solver vectors: about
    // 10 of the rows, GMRES's basis aside)
    {
        const int vectors = 10 + (cfg.solver == SolverType::gmres ? 2 * cfg.restart + 1 : 0);
        cfg.out_of_core = out_of_core_choice(occ, *exec, p.a.rows, p.a.cols, p.a.nnz(),
                                             cfg.precision, vectors, quiet);
        if (cfg.out_of_core && cfg.format == Format::bdia && !s.block_offsets.empty()) {
            // BDIA-GH chunks: no column indices streamed (8 bytes a slot, not 12 an entry)
            cfg.out_of_core->bdia_block_size = s.block_size;
            cfg.out_of_core->bdia_block_offsets = s.block_offsets;
            format_reason = "BDIA-GH chunks of the out-of-core operator";
            if (!cfg.pc) cfg.pc = PcType::jacobi;
        } else if (cfg.out_of_core) {
            cfg.format = Format::csr;
            format_reason = "the chunks of the out-of-core operator";
            if (!cfg.pc) cfg.pc = PcType::jacobi;  // keeps no copy of A on the device
        }
    }

    set_progress(cfg, monitor, quiet);
    if (!quiet) {
        std::fprintf(stderr, "format %s: %s\n", to_string(cfg.format), format_reason.c_str());
        if (!device_why.empty()) std::fprintf(stderr, "device %s\n", device_why.c_str());
    }
    // solve_system takes the matrix over (no copy of its entries): only its size is used below
    const index_t rows = p.a.rows;
    const offset_t nnz = p.a.nnz();
    SolveResult r = solve_system(std::move(p.a), b, cfg);

    return report(r, cfg,
                  Report{p.source, rows, nnz, to_string(cfg.format), format_reason, prec,
                         device_why, xfile, hist, json},
                  x_true);
}

}  // namespace heptane::cli
