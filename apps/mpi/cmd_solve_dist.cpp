// heptane solve under mpirun: the same command on P ranks, one GPU per rank (or CPU ranks).
// Rows are split in contiguous ranges (whole z-planes of a generated grid, cells otherwise);
// with --generate each rank builds only its rows, a file is read by every rank and each
// keeps its rows (so do -b and --x0). The preconditioner is per rank (block Jacobi over the
// ranks: jacobi and bjacobi are the one-process ones, ilu0 is ILU(0) of each rank's diagonal
// block). --precision as on one process: single = fp32 matrix, vectors, solver and
// preconditioner; mixed = fp32 matrix values, fp64 vectors, solver and preconditioner. Rank 0
// prints the report; -o gathers x there (fp64).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "apps/args.hpp"
#include "apps/common.hpp"
#include "apps/mpi/mpi_common.hpp"
#include "core/bitset.hpp"
#include "core/error.hpp"
#include "distributed/coarse_space.hpp"
#include "distributed/dist_amg.hpp"
#include "distributed/dist_bdia.hpp"
#include "distributed/dist_cpr.hpp"
#include "distributed/dist_csr.hpp"
#include "distributed/symmetry.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "generators/hepta.hpp"
#include "generators/matrix_file.hpp"
#include "solver/krylov.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/refine.hpp"
#include "solver/solve.hpp"

namespace heptane::cli {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// This rank's rows, b, x0 (empty: zero) and (when known) x_true, from --generate or a file:
/// a BDIA-GH block (a hepta grid in natural order), or for any other matrix (or --format csr)
/// its rows as MPIAIJ splits them, for the distributed CSR operator.
struct LocalProblem {
    dist::RowPartition part;
    Bdia<double> local;
    std::optional<dist::OwnedSplitRows> csr;
    std::vector<double> b, x0, x_true;
    std::string source;
    index_t global_rows = 0;
    offset_t nnz = 0;
    index_t block_size = 1;
};

/// This rank's rows of a vector file (Matrix Market or PETSc binary) over the whole system (-b,
/// --x0), which every rank reads; DimensionMismatch (the same on every rank) when its length is not
/// A's.
std::vector<double> read_local_rows(const std::string& path, const char* what,
                                    const dist::RowPartition& part, int rank)
{
    const std::vector<double> v = read_vector_file(path);
    HEPTANE_ENSURE(v.size() == std::size_t(part.global_rows()), DimensionMismatch,
                   what << " (" << path << ") has " << v.size() << " entries, A has "
                        << part.global_rows() << " rows");
    return std::vector<double>(v.begin() + part.begin(rank), v.begin() + part.end(rank));
}

/// b = A * 1 on rows [r0, r1), x_true = 1.
void b_is_a_times_one(const Coo<double>& a, index_t r0, index_t r1, LocalProblem& p)
{
    p.b.assign(std::size_t(r1 - r0), 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k) {
        const index_t r = a.row[k];
        if (r >= r0 && r < r1) p.b[std::size_t(r - r0)] += a.val[k];
    }
    p.x_true.assign(std::size_t(r1 - r0), 1.0);
}

dist::OwnedSplitRows split_rows(const Bdia<double>& a, index_t row_begin, index_t global_rows);

/// check_sym: --solver cg without --no-symmetry-check (a file: every rank checks the whole
/// matrix it read; generated: the ranks' rows together, collective); the same InputError on
/// every rank where A is not symmetric.
LocalProblem build_local(const dist::Communicator& comm, const std::optional<std::string>& file,
                         const std::optional<std::string>& gen,
                         const std::optional<std::string>& bfile,
                         const std::optional<std::string>& x0file, const std::string& split,
                         bool want_csr, bool check_sym)
{
    LocalProblem p;
    const int rank = comm.rank(), size = comm.size();
    if (file && gen) throw UsageError("give a matrix file or --generate, not both");
    if (!file && !gen)
        throw UsageError("no matrix: give a Matrix Market or PETSc binary file, or --generate");
    if (gen) {
        const HeptaSpec s = parse_generate_spec(*gen);
        validate(s);
        p.source = describe(s);
        p.global_rows = index_t(s.rows());
        p.nnz = hepta_nnz(s);
        p.block_size = s.Nc;
        // whole z-planes where there are as many as ranks (as for a file's grid), else cells
        p.part = split == "planes" && s.I >= size
                     ? dist::partition_planes(s.I, s.J * s.H * s.Nc, size)
                     : dist::partition_rows(p.global_rows, s.Nc, size);
        const index_t r0 = p.part.begin(rank), r1 = p.part.end(rank);
        p.local = generate_hepta_bdia_rows<double>(s, r0, r1);
        if (check_sym)
            require_symmetric_for_cg(
                dist::check_symmetry(comm.comm(), split_rows(p.local, r0, p.global_rows).view(), r0,
                                     cg_symmetry_tol),
                true);
        if (!bfile) {
            LinearSystem<double> sys = make_rhs_rows(s, p.local, r0);
            p.b = std::move(sys.b);
            p.x_true = std::move(sys.x_true);
        }
        if (want_csr) {  // --format csr: the same rows as the distributed CSR operator
            p.csr = split_rows(p.local, r0, p.global_rows);
            p.local = Bdia<double>{};
        }
    } else {
        p.source = *file;
        const Coo<double> a = read_matrix_file(*file).a;
        HEPTANE_ENSURE(a.rows == a.cols, DimensionMismatch,
                       "A is " << a.rows << " x " << a.cols << ": solve needs a square matrix");
        if (check_sym) require_symmetric_for_cg(symmetry_of(a), comm.rank() != 0);
        const Structure st = detect_structure(a);
        p.global_rows = a.rows;
        p.nnz = a.nnz();
        p.block_size = st.block_size;
        if (!st.hepta || want_csr) {  // the distributed CSR operator, rows in blocks of Nc
            p.part = dist::partition_rows(a.rows, st.block_size, size);
            p.csr = dist::split_coo_rows(a, p.part.begin(rank), p.part.end(rank));
        } else {
            const index_t plane = st.grid_dims == 3 ? st.grid[0] * st.grid[1] * st.block_size : 0;
            p.part = split == "planes" && plane > 0 && a.rows / plane >= size
                         ? dist::partition_planes(a.rows / plane, plane, size)
                         : dist::partition_rows(a.rows, st.block_size, size);
            p.local = dist::bdia_rows(bdia_from_coo(a, st.block_size, st.block_offsets),
                                      p.part.begin(rank), p.part.end(rank));
        }
        if (!bfile) b_is_a_times_one(a, p.part.begin(rank), p.part.end(rank), p);
    }
    if (bfile) p.b = read_local_rows(*bfile, "b", p.part, rank);
    if (x0file) p.x0 = read_local_rows(*x0file, "x0", p.part, rank);
    return p;
}

/// The local block (on the host) with fp32 values, for single and mixed: the same structure
/// and stored pattern, every slot's value rounded, including the slots that couple to other
/// ranks' rows (outside the pattern, which is why a round trip through COO would not do).
Bdia<float> with_float_values(const Bdia<double>& a)
{
    const double* v = a.data.data();
    return Bdia<float>{a.rows,
                       a.cols,
                       a.block_size,
                       a.block_offsets,
                       Array<float>(std::vector<float>(v, v + a.data.size())),
                       a.pattern};
}

/// What one rank's solve gives back, whatever the precision.
struct RankSolve {
    Status status;
    std::vector<double> x;  ///< this rank's rows of the last iterate
    std::string solver, op, exchange, reduction, pc;
    std::string over_ranks_refused;  ///< the AMG/CPR over the ranks by default, refused: why
    double pc_s = 0, op_s = 0;
};

/// This rank's rows of its BDIA-GH block (the couplings to other ranks' rows are in its data,
/// not in its pattern: generate_hepta_bdia_rows, bdia_rows) as MPIAIJ splits them, for the
/// global coarse correction: the diagonal block and the rest in global columns.
dist::OwnedSplitRows split_rows(const Bdia<double>& a, index_t row_begin, index_t global_rows)
{
    dist::OwnedSplitRows s;
    const index_t rows = a.rows, nc = a.block_size, nk = a.num_diagonals();
    const std::uint64_t* bits = a.pattern.data();
    const double* data = a.data.data();
    for (index_t i = 0; i < rows; ++i) {
        const index_t base = i - i % nc;
        for (index_t k = 0; k < nk; ++k) {
            const std::size_t slot = std::size_t(k) * std::size_t(rows) + std::size_t(i);
            const index_t c = base + a.offset(k);
            if (c >= 0 && c < rows) {
                if (!test_bit(bits, slot)) continue;
                s.dc.push_back(c);
                s.dv.push_back(data[slot]);
            } else if (row_begin + c >= 0 && row_begin + c < global_rows && data[slot] != 0) {
                s.oc.push_back(row_begin + c);
                s.ov.push_back(data[slot]);
            }
        }
        s.dp.push_back(index_t(s.dc.size()));
        s.op.push_back(index_t(s.oc.size()));
    }
    return s;
}

/// The diagonal block of rows split as MPIAIJ's, as a heptane CSR (for the rank's
/// preconditioner).
Csr<double> diagonal_block(const dist::OwnedSplitRows& s)
{
    const index_t n = index_t(s.dp.size()) - 1;
    return Csr<double>{n, n, Array<offset_t>(std::vector<offset_t>(s.dp.begin(), s.dp.end())),
                       Array<index_t>(std::vector<index_t>(s.dc)),
                       Array<double>(std::vector<double>(s.dv))};
}

/// The preconditioner of this rank's diagonal block (VT, from the fp64 block as on one
/// process), the operator with MT values, and the solve in VT from p.x0 (zero when empty);
/// `coarse`: with the global coarse correction around that preconditioner (dist::CoarseSpace
/// with `co`, its symmetric form set here from the solver); `global`: pc is amg or cpr and one
/// AMG hierarchy over all ranks (dist::DistAmg; for cpr its pressure stage, dist::DistCpr) takes
/// the place of the rank's own. Consumes p.local.
template <class MT, class VT>
RankSolve solve_on_ranks(const std::shared_ptr<const dist::Communicator>& comm, LocalProblem& p,
                         const std::shared_ptr<const Executor>& exec, const dist::DistOptions& dopt,
                         SolverType solver, const SolverExtras& extras, PcType pc,
                         const PcOptions& pc_options, SolverOptions opts, bool coarse,
                         dist::CoarseOptions co, bool global, bool global_by_default, bool refine)
{
    constexpr bool fp32_values = !std::is_same_v<MT, double>;
    refine = refine && fp32_values && std::is_same_v<VT, double>;
    RankSolve r;
    const std::size_t n = std::size_t(p.part.rows(comm->rank()));
    auto t = Clock::now();
    const dist::OwnedSplitRows split =
        p.csr              ? *p.csr
        : coarse || global ? split_rows(p.local, p.part.begin(comm->rank()), p.global_rows)
                           : dist::OwnedSplitRows{};
    const bool global_cpr = global && pc == PcType::cpr && p.block_size > 1;
    // the AMG/CPR over the ranks that the default chose, refused (on every rank alike: a zero
    // diagonal, a singular coarsest level): each rank's own instead, as the plugin does
    const auto refused = [&](const std::exception& e) {
        if (!global_by_default) throw;
        r.over_ranks_refused = e.what();
    };
    std::shared_ptr<const Operator<VT>> m;
    if (global && !global_cpr) {
        try {
            m = std::make_shared<dist::DistAmg<VT>>(comm->comm(), exec, split.view(),
                                                    p.part.begin(comm->rank()), p.block_size,
                                                    pc_options.amg);
        } catch (const InputError& e) {
            refused(e);
        } catch (const NotSupported& e) {
            refused(e);
        }
    }
    if (!m && !global_cpr)
        m = make_preconditioner<VT>(pc,
                                    p.csr ? diagonal_block(*p.csr) : csr_from_coo(to_coo(p.local)),
                                    p.block_size, exec, pc_options);
    r.pc_s = seconds_since(t);

    t = Clock::now();
    std::unique_ptr<Operator<VT>> opp;
    // fp32 values: the matrix as given (fp64) too -- on the executor for the refinement's
    // residuals (mixed), else on the host for the true residual after the solve (single,
    // mixed with --no-refine), as one process does
    std::unique_ptr<Operator<double>> op64;
    const std::shared_ptr<const Executor> exec64 = refine ? exec : cpu_executor();
    if (p.csr) {
        auto c = std::make_unique<dist::DistributedCsr<MT, VT>>(comm, p.csr->view(), exec);
        r.exchange = c->exchange_name();
        r.reduction = c->reduction_name();
        opp = std::move(c);
        if (fp32_values)
            op64 =
                std::make_unique<dist::DistributedCsr<double, double>>(comm, p.csr->view(), exec64);
    } else {
        Bdia<MT> local;
        if constexpr (std::is_same_v<MT, double>) {
            local = std::move(p.local);
        } else {
            local = with_float_values(p.local);
            op64 = std::make_unique<dist::DistributedBdia<double, double>>(
                comm, p.part, std::exchange(p.local, Bdia<double>{}), exec64,
                refine ? dopt : dist::DistOptions{});
        }
        auto d = std::make_unique<dist::DistributedBdia<MT, VT>>(comm, p.part, std::move(local),
                                                                 exec, dopt);
        r.exchange = d->exchange_name();
        r.reduction = d->reduction_name();
        opp = std::move(d);
    }
    const Operator<VT>& op = *opp;
    const Array<VT> b = Array<VT>(std::vector<VT>(p.b.begin(), p.b.end())).to(exec);
    Array<VT> x = p.x0.empty() ? Array<VT>(exec, n)
                               : Array<VT>(std::vector<VT>(p.x0.begin(), p.x0.end())).to(exec);
    r.op_s = seconds_since(t);
    if (global_cpr) {
        t = Clock::now();
        try {
            m = std::make_shared<dist::DistCpr<VT>>(
                comm->comm(), std::shared_ptr<const Operator<VT>>(std::shared_ptr<void>(), &op),
                split.view(), p.part.begin(comm->rank()), p.block_size, pc_options.cpr);
        } catch (const InputError& e) {
            refused(e);
        } catch (const NotSupported& e) {
            refused(e);
        }
        // (p.local has gone into the operator by now: the diagonal block from the split rows)
        if (!m)
            m = make_preconditioner<VT>(pc, diagonal_block(p.csr ? *p.csr : split), p.block_size,
                                        exec, pc_options);
        r.pc_s += seconds_since(t);
    }

    std::shared_ptr<const Operator<VT>> q;  // the coarse correction around m
    if (coarse) {
        t = Clock::now();
        co.symmetric = solver == SolverType::cg;
        q = std::make_shared<dist::CoarseSpace<VT>>(
            comm->comm(), std::shared_ptr<const Operator<VT>>(std::shared_ptr<void>(), &op), m,
            split.view(), p.block_size, co);
        r.pc_s += seconds_since(t);
    }

    opts.nonzero_initial_guess = !p.x0.empty();
    MPI_Barrier(comm->comm());
    const std::unique_ptr<Solver<VT>> s = make_solver<VT>(solver, opts, extras);
    s->set_operator(op);
    s->set_preconditioner(q ? *q : *m);
    r.solver = s->name();
    bool refined = false;
    if constexpr (std::is_same_v<VT, double>) {
        if (refine) {
            MixedRefinement refinement;
            r.status = refinement.solve(*s, *op64, b, x, opts);
            const int k = refinement.corrections();
            r.solver += ", fp64 iterative refinement (" + std::to_string(k) +
                        (k == 1 ? " correction)" : " corrections)");
            refined = true;
        }
    }
    if (!refined) r.status = s->solve(b, x);
    const std::vector<VT> xh = n > 0 ? x.to_vector() : std::vector<VT>{};
    r.x.assign(xh.begin(), xh.end());
    if (op64 && !refined && opts.compute_true_residual) {
        // the solver's true residual is the rounded matrix's; the one against the matrix as
        // given, on the host, summed over the ranks; a "converged" it denies is not kept
        const auto t0 = Clock::now();
        std::vector<double> res(p.b);
        op64->apply(-1.0, r.x.data(), 1.0, res.data());  // collective (the halo exchange)
        double sums[2] = {0, 0};
        for (std::size_t i = 0; i < n; ++i) {
            sums[0] += res[i] * res[i];
            sums[1] += p.b[i] * p.b[i];
        }
        MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm->comm());
        r.status.true_residual_norm = std::sqrt(sums[0]);
        r.status.true_relative_residual =
            sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : std::sqrt(sums[0]);
        r.status.timings.true_residual_ms += seconds_since(t0) * 1e3;
        const double tol = std::max(opts.rtol * std::sqrt(sums[1]), opts.atol);
        if (r.status.converged() && r.status.true_residual_norm > tol)
            r.status.reason = Reason::diverged_true_residual;
    }
    r.op = op.describe();
    r.pc = q ? q->describe() : m->describe();
    return r;
}

/// Why the AMG (CPR) runs over the ranks or per rank, in the CLI's options.
const char* over_ranks_words(OverRanksWhy w)
{
    switch (w) {
        case OverRanksWhy::not_amg:
            return "";
        case OverRanksWhy::asked:
            return "--amg-global";
        case OverRanksWhy::declined:
            return "--amg-per-rank";
        case OverRanksWhy::gpu_ranks:
            return "GPU ranks: one per rank, on the device; --amg-global for one hierarchy over "
                   "the ranks, on the host";
        case OverRanksWhy::coarse:
            return "--coarse: its correction around each rank's own";
        case OverRanksWhy::ilu0mc_smoother:
            return "--amg-smoother ilu0mc: not built over the ranks";
        case OverRanksWhy::block_system:
            return "Nc > 1 (its ilu0mc smoother), unless --amg-global; --pc cpr for a coupled "
                   "system";
        case OverRanksWhy::default_scalar:
            return "the default for a scalar system on CPU ranks; --amg-per-rank for one AMG per "
                   "rank";
        case OverRanksWhy::default_cpr:
            return "the default for CPR on CPU ranks; --amg-per-rank for CPR per rank";
    }
    return "";
}

/// The one-process operator line's words for the precision.
const char* precision_words(Precision p)
{
    return p == Precision::single  ? "fp32"
           : p == Precision::mixed ? "fp32 values/fp64 vectors"
                                   : "fp64";
}

/// x gathered on rank 0 (empty elsewhere).
std::vector<double> gather(const dist::Communicator& comm, const dist::RowPartition& part,
                           const std::vector<double>& x)
{
    std::vector<int> counts(std::size_t(comm.size())), displs(std::size_t(comm.size()));
    for (int p = 0; p < comm.size(); ++p) {
        counts[p] = part.rows(p);
        displs[p] = part.begin(p);
    }
    std::vector<double> all(comm.rank() == 0 ? std::size_t(part.global_rows()) : 0);
    MPI_Gatherv(x.data(), int(x.size()), MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                MPI_DOUBLE, 0, comm.comm());
    return all;
}

}  // namespace

int cmd_solve_distributed(Args& args, bool json, bool monitor, bool quiet_flag)
{
    MpiSession session;
    const auto comm = std::make_shared<const dist::Communicator>(MPI_COMM_WORLD);
    const bool root = comm->rank() == 0;
    const bool quiet = quiet_flag || json || !root;
    auto gen = args.get("--generate");
    auto bfile = args.get("-b");
    auto xfile = args.get("-o");
    auto hist = args.get("--history");
    auto x0file = args.get("--x0");
    const SolverType solver =
        usage_checked([&] { return parse_solver(args.get_or("--solver", "bicgstab")); });
    const bool has_restart = args.get("--restart").has_value();
    const long long restart = args.get_int("--restart", 30);
    auto pc_name = args.get("--pc");
    PcOptions pc_options = parse_pc_options(args);
    const bool null_space = parse_null_space(args);
    pc_options.amg.singular = pc_options.cpr.amg.singular = null_space;
    const std::string fmt = args.get_or("--format", "auto");
    const std::string prec = args.get_or("--precision", "double");
    const std::string device = args.get_or("--device", "auto");
    const std::string impl = args.get_or("--impl", "fused");
    const std::string split = args.get_or("--split", "planes");
    const bool coarse = args.flag("--coarse");
    const bool amg_global_flag = args.flag("--amg-global");
    const bool amg_per_rank = args.flag("--amg-per-rank");
    const bool refine = !args.flag("--no-refine");
    const bool has_aggregates = args.get("--coarse-aggregates").has_value();
    const long long aggregates = args.get_int("--coarse-aggregates", 0);
    const auto coarse_solve = args.get("--coarse-solve");
    const long long coarse_cycles = args.get_int("--coarse-cycles", 2);
    const auto coarse_aggregation = args.get("--coarse-aggregation");
    dist::DistOptions dopt;
    dopt.halo = dist::parse_halo_model(args.get_or("--halo", "auto"));
    dopt.reduce = dist::parse_reduce_model(args.get_or("--reduce", "auto"));
    SolverOptions opts;
    opts.rtol = args.get_double("--rtol", opts.rtol);
    opts.atol = args.get_double("--atol", opts.atol);
    opts.max_it = static_cast<int>(args.get_int("--max-it", opts.max_it));
    opts.check_every = static_cast<int>(args.get_int("--check-every", opts.check_every));
    opts.cuda_graphs = !args.flag("--no-graphs");
    const bool check_sym = solver == SolverType::cg && !args.flag("--no-symmetry-check");
    args.finish(gen ? 0 : 1, gen ? 0 : 1);
    if (fmt != "auto" && fmt != "bdiagh" && fmt != "csr")
        throw UsageError(
            "under mpirun the operator is BDIA-GH split over the ranks (a hepta grid), else the "
            "distributed CSR: --format auto, bdiagh or csr, not " +
            fmt);
    const Precision precision = precision_option(prec);
    if (impl != "fused")
        throw UsageError(
            "under mpirun --impl fused only (the reference "
            "implementation is single-process)");
    if (split != "planes" && split != "cells") throw UsageError("--split must be planes or cells");
    if (opts.max_it < 0) throw UsageError("--max-it must be >= 0");
    if (opts.check_every < 0) throw UsageError("--check-every must be >= 0 (0: automatic)");
    if (restart < 1 || restart > (1 << 20)) throw UsageError("--restart must be in [1, 1048576]");
    if (has_restart && solver != SolverType::gmres)
        throw UsageError("--restart applies to --solver gmres only");
    if (has_aggregates && !coarse)
        throw UsageError("--coarse-aggregates applies with --coarse only");
    if (aggregates < 0 || aggregates > (1 << 24))
        throw UsageError("--coarse-aggregates must be in [0, 16777216] (0: the default)");
    if ((coarse_solve || args.get("--coarse-cycles") || coarse_aggregation) && !coarse)
        throw UsageError(
            "--coarse-solve, --coarse-cycles and --coarse-aggregation apply with --coarse only");
    if (coarse_cycles < 1 || coarse_cycles > 100)
        throw UsageError("--coarse-cycles must be in [1, 100]");
    dist::CoarseOptions co;
    co.singular = null_space;  // a singular A_c by a generalized inverse
    co.aggregates = index_t(aggregates);
    co.cycles = int(coarse_cycles);
    if (coarse_solve)
        co.solve = usage_checked([&] { return dist::parse_coarse_solve(*coarse_solve); });
    if (coarse_aggregation)
        co.aggregation =
            usage_checked([&] { return dist::parse_coarse_aggregation(*coarse_aggregation); });
    SolverExtras extras;
    extras.restart = static_cast<int>(restart);

    const auto t0 = Clock::now();
    const auto exec = rank_executor(device, *comm);
    if (!quiet)
        std::fprintf(stderr, "heptane solve on %d MPI ranks (%s)\n", comm->size(),
                     exec->is_cuda() ? "one GPU per rank" : "CPU ranks");
    LocalProblem p =
        build_local(*comm,
                    args.positionals().empty() ? std::nullopt
                                               : std::optional<std::string>(args.positionals()[0]),
                    gen, bfile, x0file, split, fmt == "csr", check_sym);
    const double t_build = seconds_since(t0);

    // preconditioner of this rank's diagonal block
    PcType pc = default_preconditioners(exec->kind(), solver, 1, /*distributed=*/true).front();
    if (pc_name) pc = usage_checked([&] { return parse_pc(*pc_name); });
    if (amg_global_flag && amg_per_rank)
        throw UsageError("--amg-global and --amg-per-rank: give one of them");
    if (amg_global_flag && pc != PcType::amg && pc != PcType::cpr)
        throw UsageError("--amg-global applies with --pc amg or cpr only");
    if (amg_per_rank && pc != PcType::amg && pc != PcType::cpr)
        throw UsageError("--amg-per-rank applies with --pc amg or cpr only");
    if (amg_global_flag && coarse)
        throw UsageError(
            "--amg-global and --coarse: the AMG over the ranks has its own coarse levels; give "
            "one of them");
    // one AMG (CPR) over the ranks or one per rank: the rule the plugin shares
    const OverRanks over = amg_over_ranks(
        amg_global_flag ? AmgOverRanks::yes
        : amg_per_rank  ? AmgOverRanks::no
                        : AmgOverRanks::automatic,
        pc == PcType::cpr ? pc_options.cpr.amg.smoother : pc_options.amg.smoother,
        pc == PcType::amg, pc == PcType::cpr, comm->size(), exec->is_cpu(), p.block_size, coarse);
    const bool amg_global = over.yes;
    const bool amg_default =
        over.why == OverRanksWhy::default_scalar || over.why == OverRanksWhy::default_cpr;

    double last_print = 0;
    opts.monitor = [&](const IterationInfo& it) {
        const double now = seconds_since(t0);
        if (root && (monitor || (!quiet && now - last_print >= 1.0))) {
            std::fprintf(stderr, "  iteration %6d  ||r|| %.6e  ||r||/||b|| %.3e\n", it.iteration,
                         it.residual_norm, it.relative_residual);
            last_print = now;
        }
    };
    const RankSolve r =
        precision == Precision::single
            ? solve_on_ranks<float, float>(comm, p, exec, dopt, solver, extras, pc, pc_options,
                                           opts, coarse, co, amg_global, amg_default, false)
        : precision == Precision::mixed
            ? solve_on_ranks<float, double>(comm, p, exec, dopt, solver, extras, pc, pc_options,
                                            opts, coarse, co, amg_global, amg_default, refine)
            : solve_on_ranks<double, double>(comm, p, exec, dopt, solver, extras, pc, pc_options,
                                             opts, coarse, co, amg_global, amg_default, false);
    const Status& st = r.status;
    std::vector<double> xh = r.x;
    double null_removed = -1;  // --null-space constant: the constant of x - x0, over the ranks
    if (null_space) {
        double sum = 0;
        for (std::size_t i = 0; i < xh.size(); ++i) sum += xh[i] - (p.x0.empty() ? 0.0 : p.x0[i]);
        MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, comm->comm());
        const double mean = sum / double(p.global_rows);
        for (double& v : xh) v -= mean;
        null_removed = std::abs(mean) * std::sqrt(double(p.global_rows));
    }

    // error against x_true: max over all rows / max |x_true|
    double err = -1;
    if (!p.x_true.empty()) {
        double d = 0, xm = 0;
        for (std::size_t i = 0; i < xh.size(); ++i) {
            d = std::max(d, std::abs(xh[i] - p.x_true[i]));
            xm = std::max(xm, std::abs(p.x_true[i]));
        }
        d = max_over_ranks(d, *comm);
        xm = max_over_ranks(xm, *comm);
        err = d / (xm > 0 ? xm : 1);
    }
    const double setup_s =
        max_over_ranks(t_build + r.pc_s + r.op_s + st.timings.setup_ms / 1e3, *comm);
    const double solve_s = max_over_ranks(st.timings.solve_ms / 1e3, *comm);
    const double per_it = st.iterations > 0 ? solve_s * 1e3 / st.iterations : 0.0;
    const std::vector<double> x_all = xfile ? gather(*comm, p.part, xh) : std::vector<double>{};
    const double total_s = max_over_ranks(seconds_since(t0), *comm);
    if (!root) return st.converged() ? 0 : 1;

    if (xfile) write_vector_file(*xfile, x_all, "x from heptane solve: " + st.summary());
    const bool over_used = amg_global && r.over_ranks_refused.empty();
    const std::string over_why =
        std::string(over_ranks_words(over.why)) +
        (r.over_ranks_refused.empty()
             ? ""
             : "; refused (" + r.over_ranks_refused + "): each rank's own instead");
    const std::string over_json = over.why == OverRanksWhy::not_amg ? "null"
                                  : over_used                       ? "true"
                                                                    : "false";
    const std::string over_why_json =
        over.why == OverRanksWhy::not_amg ? "null" : json_string(over_why);
    if (hist) write_history_csv(*hist, st);
    const std::string& solver_name = r.solver;
    const std::string restart_json =
        solver == SolverType::gmres ? std::to_string(extras.restart) : "null";
    if (json) {
        std::printf(
            "{\"source\": %s, \"converged\": %s, \"reason\": \"%s\", \"iterations\": %d, "
            "\"relres\": %.6e, \"true_relres\": %.6e, \"error_vs_xtrue\": %s, "
            "\"solve_seconds\": %.6f, \"setup_seconds\": %.6f, \"total_seconds\": %.6f, "
            "\"per_iteration_ms\": %.6f, \"solver\": \"%s\", \"restart\": %s, "
            "\"preconditioner\": %s, "
            "\"format\": \"%s\", \"operator\": %s, \"precision\": \"%s\", "
            "\"device\": %s, \"ranks\": %d, \"partition\": %s, \"halo\": \"%s\", "
            "\"reduce\": \"%s\", \"cuda_graph\": %s, \"null_space_removed\": %s, \"rows\": %d, "
            "\"nnz\": %lld, \"amg_over_ranks\": %s, \"amg_over_ranks_why\": %s}\n",
            json_string(p.source).c_str(), st.converged() ? "true" : "false", to_string(st.reason),
            st.iterations, st.relative_residual, st.true_relative_residual,
            json_number(err).c_str(), solve_s, setup_s, total_s, per_it, solver_name.c_str(),
            restart_json.c_str(), json_string(r.pc).c_str(), p.csr ? "csr" : "bdiagh",
            json_string(r.op).c_str(), prec.c_str(), json_string(exec->name()).c_str(),
            comm->size(), json_string(p.part.describe()).c_str(), r.exchange.c_str(),
            r.reduction.c_str(), st.cuda_graph ? "true" : "false",
            json_number(null_removed).c_str(), p.global_rows, static_cast<long long>(p.nnz),
            over_json.c_str(), over_why_json.c_str());
    } else {
        std::printf("system    %s: %d rows, %lld entries, on %d ranks\n", p.source.c_str(),
                    p.global_rows, static_cast<long long>(p.nnz), comm->size());
        std::printf("split     %s\n", p.part.describe().c_str());
        std::printf("operator  %s (rank 0), precision %s (%s)\n", r.op.c_str(), prec.c_str(),
                    precision_words(precision));
        std::printf("solver    %s, preconditioner %s%s\n", solver_name.c_str(), r.pc.c_str(),
                    over_used || coarse ? "" : " per rank");
        if (over.why != OverRanksWhy::not_amg)
            std::printf("%-10s%s: %s\n", pc == PcType::cpr ? "cpr" : "amg",
                        over_used ? "one hierarchy over the ranks" : "one per rank",
                        over_why.c_str());
        print_result(st, err);
        if (null_removed >= 0)
            std::printf(
                "          null space: the constant removed from the solution's "
                "correction (its component there had norm %.3e)\n",
                null_removed);
        std::printf(
            "time      setup %.3f s, solve %.3f s, %.4f ms per iteration%s, total %.3f s "
            "(slowest rank)\n",
            setup_s, solve_s, per_it, st.cuda_graph ? " (CUDA graph)" : "", total_s);
    }
    return st.converged() ? 0 : 1;
}

}  // namespace heptane::cli
