// heptane bench comm and heptane bench scale: the many-GPU benchmarks, run under mpirun
// (one rank per GPU). Every time is the slowest rank's: each repetition starts after a
// barrier and ends when the rank's device is idle; the median over repetitions is reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/bench.hpp"
#include "apps/common.hpp"
#include "apps/mpi/mpi_common.hpp"
#include "core/error.hpp"
#include "distributed/dist_bdia.hpp"
#ifdef HEPTANE_HAVE_CUDA
#include "distributed/peer.hpp"
#endif
#include "generators/hepta.hpp"
#include "solver/bicgstab/bicgstab.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::cli {

namespace {

/// Seconds per f(): the median over `reps` samples of the slowest rank's time for `batch`
/// calls queued back to back (after a barrier; the device waited for at the end), divided by
/// `batch` — what f costs inside a solver loop, where the host does not wait between calls.
/// `warm` untimed calls first.
double time_ranks(const dist::Communicator& comm, const Executor& exec,
                  const std::function<void()>& f, int reps, int warm = 3, int batch = 20)
{
    for (int i = 0; i < warm; ++i) f();
    exec.synchronize();
    std::vector<double> t(static_cast<std::size_t>(reps));
    for (int i = 0; i < reps; ++i) {
        MPI_Barrier(comm.comm());
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < batch; ++k) f();
        exec.synchronize();
        t[std::size_t(i)] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / batch;
    }
    MPI_Allreduce(MPI_IN_PLACE, t.data(), reps, MPI_DOUBLE, MPI_MAX, comm.comm());
    std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
    return t[std::size_t(reps / 2)];
}

/// As time_ranks, with the `batch` calls recorded once into a CUDA graph and each sample one
/// launch of it (what the calls cost inside the solver's replayed batches). f must be
/// graph-safe.
double time_ranks_graph(const dist::Communicator& comm, const Executor& exec,
                        const std::function<void()>& f, int reps, int batch = 20)
{
    BatchGraph graph;
    graph.record(exec, [&] {
        for (int k = 0; k < batch; ++k) f();
    });
    return time_ranks(
               comm, exec, [&] { graph.launch(exec); }, reps, 3, 1) /
           batch;
}

std::vector<std::string> split_list(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

std::vector<long long> parse_sizes(const std::string& s)
{
    std::vector<long long> out;
    for (const std::string& t : split_list(s)) {
        char* end = nullptr;
        double v = std::strtod(t.c_str(), &end);
        const std::string unit = end;
        if (unit == "K" || unit == "k")
            v *= 1024;
        else if (unit == "M" || unit == "m")
            v *= 1024 * 1024;
        else if (!unit.empty())
            throw UsageError("bad size '" + t + "' (bytes, or with K or M)");
        if (v < 8) throw UsageError("size '" + t + "' is under one double");
        out.push_back(static_cast<long long>(v));
    }
    return out;
}

const char* comm_usage =
    "usage: mpirun -np P heptane bench comm [options]\n\n"
    "Halo exchange and reduction times between the ranks (one GPU each, or CPU ranks): each\n"
    "rank exchanges a chunk with its lower and its upper neighbour, as one SpMV of a row-split\n"
    "operator does, by every halo model; then the all-reduce of 1, 2 and 4 doubles by every\n"
    "reduction model. A sample is 20 calls queued back to back (as in a solver loop) after a\n"
    "barrier; times are the slowest rank's per call, median over the samples. The models a\n"
    "CUDA graph can hold (nccl, peer, on GPUs) are also timed with the 20 calls recorded once\n"
    "and replayed as one graph, as the solver's batches run them (columns '... graph').\n"
    "  --sizes LIST     chunk bytes per neighbour (K, M suffixes; default\n"
    "                   8,1K,8K,64K,256K,1M,4M,16M,64M)\n"
    "  --models LIST    halo models (default: every one this build, MPI and the node offer:\n"
    "                   the four host-staged ones, nccl, cuda-aware, peer)\n"
    "  --reps N         timed repetitions (default 50)\n"
    "  --device D       auto | cpu | gpu (default auto)\n"
    "  --csv FILE       also write the rows as CSV\n";

const char* scale_usage =
    "usage: mpirun -np P heptane bench scale [SPEC ...] [options]\n\n"
    "BiCGStab per iteration on P ranks for generated GH systems (SPEC = JxHxIxNc[:model], the\n"
    "global system; default: reservoir systems of N = 1M, 16.7M and 33.5M with Nc = 1 and 16.7M\n"
    "with Nc = 8), with its breakdown: the distributed SpMV, the local SpMV alone, one halo\n"
    "exchange alone, the part of the SpMV spent waiting for the halo (SpMV - local SpMV),\n"
    "one reduction point alone, and the rest (vector work). Run it with P = 1, 2, 4 for strong\n"
    "scaling (scripts/multi-gpu.sh runs it on 1, 2 and 4 GPUs; docs/benchmarks.md has the\n"
    "efficiencies it gave).\n"
    "  --weak           SPEC is per rank: the z extent is multiplied by P (weak scaling)\n"
    "  --iters N        BiCGStab iterations per solve, no preconditioner, rtol 0 (default 50)\n"
    "  --reps N         timed repetitions of the parts (default 30)\n"
    "  --halo M --reduce M   models (default auto; see heptane solve --help)\n"
    "  --no-graphs      launch every kernel (default: batches of 8 iterations replayed from a\n"
    "                   CUDA graph where the models allow it: peer, nccl)\n"
    "  --device D       auto | cpu | gpu (default auto)\n"
    "  --csv FILE       append the rows as CSV (the header when the file is new)\n";

}  // namespace

int bench_comm(int argc, char** argv)
{
    Args args(argc, argv, {});
    if (args.help()) {
        if (first_rank_of_launch()) std::printf("%s", comm_usage);
        return 0;
    }
    const auto sizes = parse_sizes(args.get_or("--sizes", "8,1K,8K,64K,256K,1M,4M,16M,64M"));
    const auto models_opt = args.get("--models");
    const int reps = static_cast<int>(args.get_int("--reps", 50));
    const std::string device = args.get_or("--device", "auto");
    const auto csv = args.get("--csv");
    args.finish(0, 0);
    if (reps < 1) throw UsageError("--reps must be >= 1");

    MpiSession session;
    const auto comm = std::make_shared<const dist::Communicator>(MPI_COMM_WORLD);
    const auto exec = rank_executor(device, *comm);
    const bool root = comm->rank() == 0;
    std::vector<dist::HaloModel> models;
    if (models_opt) {
        for (const auto& m : split_list(*models_opt)) models.push_back(dist::parse_halo_model(m));
    } else if (exec->is_cpu()) {
        models = {dist::HaloModel::host};
    } else {
        models = {dist::HaloModel::pinned_async, dist::HaloModel::pinned_sync,
                  dist::HaloModel::pageable_async, dist::HaloModel::pageable_sync};
        if (dist::built_with_nccl()) models.push_back(dist::HaloModel::nccl);
        if (dist::Communicator::cuda_aware()) models.push_back(dist::HaloModel::cuda_aware);
#ifdef HEPTANE_HAVE_CUDA
        if (dist::peer_capable(*exec, *comm)) models.push_back(dist::HaloModel::peer);
#endif
    }
    // the models a CUDA graph can hold get a second column, timed as one graph launch
    auto graph_model = [&](dist::HaloModel m) {
        return exec->is_cuda() && (m == dist::HaloModel::nccl || m == dist::HaloModel::peer);
    };
    std::ostringstream rows;
    rows << "kind,model,bytes,ranks,median_us,gbps,cuda_graph\n";
    if (root) {
        std::printf("heptane bench comm: %d ranks, %s (rank 0), %d repetitions\n", comm->size(),
                    exec->name().c_str(), reps);
        std::printf(
            "halo exchange: each rank sends a chunk to and receives one from each "
            "neighbour (GB/s: bytes a middle rank sends / time)\n");
        std::printf("| bytes/neighbour |");
        int columns = 0;
        for (auto m : models) {
            std::printf(" %s us |", dist::to_string(m));
            ++columns;
        }
        for (auto m : models)
            if (graph_model(m)) {
                std::printf(" %s graph us |", dist::to_string(m));
                ++columns;
            }
        std::printf("\n|---:|");
        for (int i = 0; i < columns; ++i) std::printf("---:|");
        std::printf("\n");
    }
    for (long long bytes : sizes) {
        const index_t count = index_t(bytes / 8);
        const int P = comm->size();
        const dist::RowPartition part = dist::partition_rows(index_t(P) * count, 1, P);
        const dist::HaloPlan plan = dist::make_halo_plan(part, comm->rank(), count, count);
        Array<double> x(exec, std::size_t(count));
        std::vector<double> ones(std::size_t(count), 1.0);
        copy_bytes(*cpu_executor(), ones.data(), *exec, x.data(), ones.size() * sizeof(double));
        if (root) std::printf("| %lld |", bytes);
        const bool big = bytes >= (1 << 22);
        const int samples = big ? std::max(3, reps / 10) : reps, batch = big ? 2 : 20;
        const double sent = double(std::min(2, P - 1)) * double(bytes);
        std::ostringstream graph_cells;
        for (auto m : models) {
            auto halo = dist::make_halo_exchange<double>(m, plan, comm, exec);
            const auto exchange = [&] {
                halo->start(x.data());
                halo->finish();
            };
            const double t = time_ranks(*comm, *exec, exchange, samples, 3, batch);
            if (root) {
                std::printf(" %.1f |", t * 1e6);
                rows << "halo," << dist::to_string(m) << ',' << bytes << ',' << P << ',' << t * 1e6
                     << ',' << sent / t / 1e9 << ",0\n";
            }
            if (!graph_model(m)) continue;
            if (!halo->graph_safe()) {
                graph_cells << " - |";
                continue;
            }
            const double tg = time_ranks_graph(*comm, *exec, exchange, samples, batch);
            char cell[32];
            std::snprintf(cell, sizeof cell, " %.1f |", tg * 1e6);
            graph_cells << cell;
            if (root)
                rows << "halo," << dist::to_string(m) << ',' << bytes << ',' << P << ',' << tg * 1e6
                     << ',' << sent / tg / 1e9 << ",1\n";
        }
        if (root) std::printf("%s", graph_cells.str().c_str());
        if (root) {
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    std::vector<dist::ReduceModel> rmodels{dist::ReduceModel::mpi};
    if (exec->is_cuda() && dist::built_with_nccl()) rmodels.push_back(dist::ReduceModel::nccl);
#ifdef HEPTANE_HAVE_CUDA
    if (dist::peer_capable(*exec, *comm)) rmodels.push_back(dist::ReduceModel::peer);
#endif
    if (root) std::printf("\nreduction point (all-reduce of k doubles in executor memory):\n");
    Array<double> buf(exec, 8);
    for (auto rm : rmodels) {
        auto red = dist::make_reducer(rm, comm, exec);
        for (int k : {1, 2, 4}) {
            const auto point = [&] { red->sum(*exec, buf.data(), k); };
            const double t = time_ranks(*comm, *exec, point, reps * 4);
            const bool graph = exec->is_cuda() && red->graph_safe();
            const double tg = graph ? time_ranks_graph(*comm, *exec, point, reps * 4) : 0.0;
            if (root) {
                std::printf("  %-5s %d doubles: %.1f us", dist::to_string(rm), k, t * 1e6);
                if (graph) std::printf(" (graph: %.1f us)", tg * 1e6);
                std::printf("\n");
                rows << "reduce," << dist::to_string(rm) << ',' << 8 * k << ',' << comm->size()
                     << ',' << t * 1e6 << ",,0\n";
                if (graph)
                    rows << "reduce," << dist::to_string(rm) << ',' << 8 * k << ',' << comm->size()
                         << ',' << tg * 1e6 << ",,1\n";
            }
        }
    }
    if (root && csv) {
        std::ofstream f(*csv);
        HEPTANE_ENSURE(f.good(), IoError, "cannot write " << *csv);
        f << rows.str();
    }
    return 0;
}

int bench_scale(int argc, char** argv)
{
    Args args(argc, argv, {"--weak", "--no-graphs"});
    if (args.help()) {
        if (first_rank_of_launch()) std::printf("%s", scale_usage);
        return 0;
    }
    const bool weak = args.flag("--weak");
    const bool graphs = !args.flag("--no-graphs");
    const int iters = static_cast<int>(args.get_int("--iters", 50));
    const int reps = static_cast<int>(args.get_int("--reps", 30));
    const std::string device = args.get_or("--device", "auto");
    dist::DistOptions dopt;
    dopt.halo = dist::parse_halo_model(args.get_or("--halo", "auto"));
    dopt.reduce = dist::parse_reduce_model(args.get_or("--reduce", "auto"));
    const auto csv = args.get("--csv");
    args.finish(0, 64);
    if (iters < 1 || reps < 1) throw UsageError("--iters and --reps must be >= 1");
    std::vector<std::string> specs = args.positionals();
    if (specs.empty())
        specs = {"100x100x100x1:reservoir", "256x256x256x1:reservoir", "256x256x512x1:reservoir",
                 "128x128x128x8:reservoir"};

    MpiSession session;
    const auto comm = std::make_shared<const dist::Communicator>(MPI_COMM_WORLD);
    const auto exec = rank_executor(device, *comm);
    const bool root = comm->rank() == 0;
    const int P = comm->size();
    const char* header =
        "spec,N,Nc,ranks,halo,reduce,iter_ms,spmv_ms,local_spmv_ms,halo_ms,halo_wait_ms,"
        "reduce_ms,vector_ms,halo_wait_pct,iterations,cuda_graph\n";
    std::ostringstream rows;
    if (root) {
        std::printf(
            "heptane bench scale: %d ranks, %s (rank 0), BiCGStab %d iterations, no "
            "preconditioner%s\n",
            P, exec->name().c_str(), iters, weak ? ", weak scaling (SPEC per rank)" : "");
        std::printf(
            "| system | N | ranks | halo | iteration ms | SpMV ms | local SpMV ms | halo "
            "alone ms | halo wait ms | reduction ms | vector ms | halo wait %% | reduce | "
            "graph |\n");
        std::printf("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    }
    for (const std::string& text : specs) {
        HeptaSpec s = parse_generate_spec(text);
        if (weak) s.I *= P;
        validate(s);
        const dist::RowPartition part = dist::partition_planes(s.I, s.J * s.H * s.Nc, P);
        const index_t r0 = part.begin(comm->rank()), r1 = part.end(comm->rank()), n = r1 - r0;
        Bdia<double> loc = generate_hepta_bdia_rows<double>(s, r0, r1);
        const std::vector<double> b_host = make_rhs_rows(s, loc, r0).b;
        dist::DistributedBdia<double, double> op(comm, part, std::move(loc), exec, dopt);
        Array<double> b = Array<double>(std::vector<double>(b_host)).to(exec);
        Array<double> x(exec, std::size_t(n)), y(exec, std::size_t(n));

        SolverOptions o;
        o.rtol = 0;
        o.max_it = iters;
        o.compute_true_residual = false;
        o.cuda_graphs = graphs;
        Bicgstab<double> solver(o);
        solver.set_operator(op);
        solver.solve(b, x);  // warm-up (workspace, first touches)
        std::vector<double> per_it;
        int its = 0;
        bool used_graph = false;
        for (int rep = 0; rep < 3; ++rep) {
            MPI_Barrier(comm->comm());
            const Status st = solver.solve(b, x);
            its = st.iterations;
            used_graph = st.cuda_graph;
            per_it.push_back(
                max_over_ranks(st.timings.solve_ms / std::max(1, st.iterations), *comm));
        }
        std::sort(per_it.begin(), per_it.end());
        const double iter_ms = per_it[1];
        const double spmv = time_ranks(
                                *comm, *exec, [&] { op.apply(b.data(), y.data()); }, reps) *
                            1e3;
        const double local = time_ranks(
                                 *comm, *exec, [&] { op.apply_local(b.data(), y.data()); }, reps) *
                             1e3;
        const double halo = time_ranks(
                                *comm, *exec, [&] { op.exchange(b.data()); }, reps) *
                            1e3;
        Array<double> buf(exec, 2);
        const double red =
            P > 1 ? time_ranks(
                        *comm, *exec, [&] { op.reducer()->sum(*exec, buf.data(), 2); }, reps) *
                        1e3
                  : 0.0;
        const double wait = std::max(0.0, spmv - local);
        const double vec = std::max(0.0, iter_ms - 2 * spmv - 4 * red);
        if (root) {
            std::printf(
                "| %s | %lld | %d | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | "
                "%.1f | %s | %s |\n",
                text.c_str(), static_cast<long long>(s.rows()), P, op.exchange_name().c_str(),
                iter_ms, spmv, local, halo, wait, red, vec, 100.0 * 2 * wait / iter_ms,
                op.reduction_name().c_str(), used_graph ? "yes" : "no");
            std::fflush(stdout);
            rows << text << ',' << s.rows() << ',' << s.Nc << ',' << P << ',' << op.exchange_name()
                 << ',' << op.reduction_name() << ',' << iter_ms << ',' << spmv << ',' << local
                 << ',' << halo << ',' << wait << ',' << red << ',' << vec << ','
                 << 100.0 * 2 * wait / iter_ms << ',' << its << ',' << (used_graph ? 1 : 0) << '\n';
        }
    }
    if (root && csv) {
        const bool fresh = !std::ifstream(*csv).good();
        std::ofstream f(*csv, std::ios::app);
        HEPTANE_ENSURE(f.good(), IoError, "cannot write " << *csv);
        if (fresh) f << header;
        f << rows.str();
    }
    return 0;
}

}  // namespace heptane::cli
