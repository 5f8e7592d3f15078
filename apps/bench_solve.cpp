// heptane bench solve: BiCGStab (or, with --solver gmres, flexible GMRES(m)) on the thesis
// systems (BENCHMARKS.md), per format and per implementation, with the thesis protocol (5
// iterations + setup) and to a tolerance; time per iteration next to its floor.
//
// Two per-iteration figures. "5-it ms/it" is the thesis protocol's: a fresh solve_system
// (operator, preconditioner, solver workspace, pinned check mirrors) for 5 iterations, its
// solve time / 5, so the per-solve fixed costs of a new solver are spread over 5 iterations.
// "ms/it" is the steady state: operator, preconditioner, b and x built once, one solver
// object, one warm-up solve, then --reps solves of --steady-its iterations on the same object
// and arrays; the median of solve_ms / iterations. Both BiCGStab implementations and GMRES go
// through that path (make_solver, the Solver interface).
//
// Floor of one unpreconditioned BiCGStab iteration (BENCHMARKS.md): two products read the
// matrix twice, plus k vector passes of 8N bytes each; k = 15 when the vector updates and the
// dot products are fused (the lower end of the 15-17 quoted there). floor = bytes / copy BW,
// with the copy bandwidth measured by this program (CUDA) or taken as given (--copy-gbs).
//
// Floor of one GMRES(m) iteration (solver/gmres/gmres_traffic.hpp, docs/benchmarks.md): the
// bytes of one inner iteration averaged over a whole cycle with its restart,
// (1 + 1/m) · matrix bytes + k(m) · 8N with k(m) = 2m + 13 + 8/m (73.27 for m = 30); no
// preconditioner bytes. The steady-state solves run whole cycles by default (4m iterations).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "apps/args.hpp"
#include "apps/bench.hpp"
#include "apps/common.hpp"
#include "core/array.hpp"
#include "core/bandwidth.hpp"
#include "core/error.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "formats/matrix.hpp"
#include "generators/hepta.hpp"
#include "solver/bicgstab/bicgstab.hpp"
#include "solver/bicgstab/bicgstab_reference.hpp"
#include "solver/gmres/gmres_traffic.hpp"
#include "solver/krylov.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solve.hpp"

namespace heptane::cli {

namespace {
const char* usage =
    "usage: heptane bench solve [--solver bicgstab|gmres] [--restart M]\n"
    "                           [--sizes thesis|small|LIST] [--formats bdiagh,csr,bsr]\n"
    "                           [--impl fused,fused-apart,fused-inputs,fused-sinput,\n"
    "                                   fused-noinputs,fused-nodots,reference]\n"
    "                           [--device auto|cpu|gpu]\n"
    "                           [--pc none|jacobi|bjacobi|ilu0] [--rtol R] [--max-it N]\n"
    "                           [--model uniform|reservoir] [--reps N] [--steady-its N]\n"
    "                           [--copy-gbs G] [--csv FILE] [--json FILE]\n\n"
    "For each system: 5 iterations + setup of the solver (the thesis protocol, timed end to\n"
    "end), the steady-state time per iteration, and a solve to --rtol (default 1e-8) on the\n"
    "reservoir model; per format and implementation, in double precision. Prints a markdown\n"
    "table with the steady-state time per iteration next to the floor:\n"
    "  5 it + setup ms  median over --reps of a fresh solve (operator, preconditioner, upload,\n"
    "               solver setup, 5 iterations; not the download of x), solve_system taking\n"
    "               the matrix over as heptane solve does (no copy of its entries)\n"
    "  5-it ms/it   that solve's iteration time / 5 (the per-solve fixed costs of a new\n"
    "               solver included); a second table splits \"5 it + setup\" into its phases\n"
    "               (host CSR from the COO, operator, preconditioner, upload of b, solver\n"
    "               setup, iterations, true residual; medians), as the CSV's and JSON's\n"
    "               five_it_* columns do\n"
    "  ms/it        steady state: operator, preconditioner, b and x built once, one warm-up\n"
    "               solve, then --reps solves of --steady-its iterations (rtol = atol = 0) on\n"
    "               the same solver object and arrays; median of solve time / iterations\n"
    "  floor ms/it  bytes of one iteration at the floor / copy bandwidth; x floor: ms/it over it.\n"
    "               bicgstab: 2 x matrix bytes + 15 x 8N; gmres: (1 + 1/M) x matrix bytes +\n"
    "               k(M) x 8N, k(M) = 2M + 13 + 8/M (73.27 for M = 30), one inner iteration\n"
    "               averaged over a whole cycle with its restart (solver/gmres/gmres_traffic.hpp;\n"
    "               CUDA: more for M > 32). Neither counts preconditioner bytes\n"
    "  --solver     bicgstab (default) or gmres: flexible, right-preconditioned GMRES(M) through\n"
    "               the Solver interface; its rows have impl \"gmres(M)\", and every column,\n"
    "               the 5-iteration thesis protocol and the solve to --rtol included, is GMRES's\n"
    "  --restart M  gmres: basis vectors per cycle (default 30); a usage error with bicgstab\n"
    "  --impl       bicgstab only (a usage error with gmres). fused: heptane's loop (dot\n"
    "               products fused into the BDIA-GH products on a GPU, whose last CTA also\n"
    "               adds them up and takes alpha and omega; without a preconditioner the\n"
    "               products also form their inputs, p and s up to 2^19 rows (3 kernels per\n"
    "               iteration instead of 5), s alone above (4)); fused-apart: the same with\n"
    "               the products' partial sums added up in kernels of their own;\n"
    "               fused-inputs: p and s always formed in the products; fused-sinput: s\n"
    "               alone (4 kernels); fused-noinputs: p and s never (5 kernels);\n"
    "               fused-nodots: the loop with the dot products reduced in kernels of their\n"
    "               own (and p, s in their own); the steady-state solves take the same\n"
    "               options;\n"
    "               reference: the thesis-style cuBLAS/cuSPARSE loop (default fused)\n"
    "  --reps       repetitions of each timed measurement (default 5)\n"
    "  --steady-its iterations per steady-state solve (at least 1; default 50, gmres 4M: four\n"
    "               whole cycles, as its floor averages over whole cycles; give a multiple of\n"
    "               M); a solve that stops earlier (a breakdown, say) makes the row an error\n"
    "  --sizes      thesis: the ten banded systems of BENCHMARKS.md; small: the first three;\n"
    "               or a list JxHxIxNc,... (default thesis)\n"
    "  --model      coefficients for the 5-iteration runs (default uniform, as the thesis);\n"
    "               the to-tolerance runs always use the reservoir model\n"
    "  --copy-gbs   device copy bandwidth in GB/s for the floor (default: measured on CUDA,\n"
    "               required on the CPU to print a floor)\n";

struct Row {
    std::string system, format, impl, device;
    long long n = 0, nnz = 0;
    double five_it_ms = 0, five_it_per_it_ms = 0, per_it_ms = 0, floor_ms = 0;
    int tol_iterations = 0;
    double tol_seconds = 0, tol_true_relres = 0;
    std::string tol_reason;
    // the 5-iteration solve's phases (SolveTimingsFull), each the median over --reps
    double p_csr = 0, p_operator = 0, p_pc = 0, p_upload = 0, p_setup = 0, p_iterations = 0,
           p_true = 0;
};

std::vector<HeptaSpec> thesis_sizes()
{
    const int t[10][4] = {{16, 16, 32, 8},  {16, 32, 32, 8}, {16, 16, 32, 16}, {32, 64, 64, 4},
                          {16, 32, 32, 16}, {32, 32, 64, 8}, {32, 128, 64, 4}, {32, 64, 64, 8},
                          {32, 32, 64, 16}, {32, 128, 64, 8}};
    std::vector<HeptaSpec> v;
    for (auto& r : t) {
        HeptaSpec s;
        s.J = r[0];
        s.H = r[1];
        s.I = r[2];
        s.Nc = r[3];
        s.banded = true;
        v.push_back(s);
    }
    return v;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Steady-state ms per iteration of `cfg`'s solver (BiCGStab or GMRES, through make_solver) on
// A x = b, double precision as the 5-iteration runs: the operator and the preconditioner built
// as solve_system builds them, b and x uploaded once, one warm-up solve and `reps` timed
// solves of `its` iterations (rtol = atol = 0) on the same solver object, whose workspace and
// check mirrors the warm-up allocates. Median over the reps of solve_ms / iterations.
double steady_per_it_ms(const Coo<double>& a, const std::vector<double>& b, const SolveConfig& cfg,
                        const std::shared_ptr<const Executor>& exec, int its, int reps)
{
    const Csr<double> csr = csr_from_coo(a);
    std::shared_ptr<const Operator<double>> op;
    if (cfg.solver == SolverType::bicgstab && cfg.impl == BicgstabImpl::reference)
        op = make_cusparse_csr_operator(csr, exec);  // the thesis baseline, as solve_system
    else
        op = make_matrix_operator<double, double>(a, cfg.format, exec, cfg.format_options);
    std::shared_ptr<const Preconditioner<double>> m = make_preconditioner<double>(
        cfg.pc.value_or(PcType::none), csr, cfg.block_size > 0 ? cfg.block_size : 1, exec);
    const Array<double> b_dev = Array<double>(b).to(exec);
    Array<double> x_dev(exec, b.size());
    SolverOptions opts = cfg.options;  // the --impl's fused_dots, fused_finish, fused_inputs
    opts.rtol = 0;
    opts.atol = 0;
    opts.max_it = its;
    opts.record_history = false;
    opts.compute_true_residual = false;
    SolverExtras extras;
    extras.bicgstab_impl = cfg.impl;
    extras.restart = cfg.restart;
    const std::unique_ptr<Solver<double>> s = make_solver<double>(cfg.solver, opts, extras);
    s->set_operator(op);
    s->set_preconditioner(m);
    s->solve(b_dev, x_dev);  // warm-up
    std::vector<double> per;
    for (int k = 0; k < reps; ++k) {
        const Status st = s->solve(b_dev, x_dev);
        HEPTANE_ENSURE(st.iterations == its, InputError,
                       "steady-state solve stopped after "
                           << st.iterations << " of " << its << " iterations ("
                           << to_string(st.reason) << "); use a smaller --steady-its");
        per.push_back(st.timings.solve_ms / st.iterations);
    }
    return median(per);
}
}  // namespace

int bench_solve(int argc, char** argv)
{
    Args args(argc, argv, {});
    if (args.help()) {
        std::printf("%s", usage);
        return 0;
    }
    const std::string solver_name = args.get_or("--solver", "bicgstab");
    const SolverType solver = usage_checked([&] { return parse_solver(solver_name); });
    if (solver == SolverType::cg) throw UsageError("--solver must be bicgstab or gmres, not cg");
    const bool gmres = solver == SolverType::gmres;
    const bool has_restart = args.get("--restart").has_value();
    const long long restart = args.get_int("--restart", 30);
    const bool has_impl = args.get("--impl").has_value();
    const std::string sizes = args.get_or("--sizes", "thesis");
    const std::string formats = args.get_or("--formats", "bdiagh,csr");
    const std::string impls = args.get_or("--impl", "fused");
    const std::string device = args.get_or("--device", "auto");
    const std::string pc = args.get_or("--pc", "none");
    const double rtol = args.get_double("--rtol", 1e-8);
    const int max_it = static_cast<int>(args.get_int("--max-it", 2000));
    const std::string model = args.get_or("--model", "uniform");
    const int reps = static_cast<int>(args.get_int("--reps", 5));
    const int steady_its = static_cast<int>(
        args.get_int("--steady-its", gmres ? 4 * std::clamp(restart, 1LL, 1LL << 20) : 50));
    double copy_gbs = args.get_double("--copy-gbs", 0);
    auto csv = args.get("--csv");
    auto jsonf = args.get("--json");
    args.finish(0, 0);
    if (restart < 1 || restart > (1 << 20)) throw UsageError("--restart must be in [1, 1048576]");
    if (reps < 1) throw UsageError("--reps must be at least 1");
    if (steady_its < 1) throw UsageError("--steady-its must be at least 1");
    if (has_restart && !gmres) throw UsageError("--restart applies to --solver gmres only");
    if (has_impl && gmres)
        throw UsageError("--impl applies to --solver bicgstab only (GMRES has one loop)");
    const int m = static_cast<int>(restart);
    const std::string gmres_label = "gmres(" + std::to_string(m) + ")";

    auto exec = pick_executor(device);
    const std::string dev = device_label(*exec);
    if (copy_gbs <= 0 && exec->is_cuda()) copy_gbs = measure_copy_bandwidth(*exec);

    std::vector<HeptaSpec> specs;
    if (sizes == "thesis") {
        specs = thesis_sizes();
    } else if (sizes == "small") {
        specs = thesis_sizes();
        specs.resize(3);
    } else {
        std::size_t i = 0;
        while (i < sizes.size()) {
            auto j = sizes.find(',', i);
            if (j == std::string::npos) j = sizes.size();
            auto s = parse_generate_spec(sizes.substr(i, j - i) + ":banded");
            specs.push_back(s);
            i = j + 1;
        }
    }
    const auto fmt_list = split_commas(formats);
    // GMRES has one loop: its rows are labelled gmres(m) where BiCGStab's name the loop
    const auto impl_list = gmres ? std::vector<std::string>{gmres_label} : split_commas(impls);
    // GMRES(m) traffic per iteration (solver/gmres/gmres_traffic.hpp): CUDA's multi-dot
    // rereads w once per gmres_cuda_dot_tile basis vectors
    const GmresTraffic gmres_model =
        gmres_traffic(m, false, exec->is_cuda() ? gmres_cuda_dot_tile : 0);

    std::vector<Row> rows;
    std::printf(
        "%s on %s; copy bandwidth %s; preconditioner %s\n",
        gmres ? ("GMRES(" + std::to_string(m) + ")").c_str() : "BiCGStab", exec->name().c_str(),
        copy_gbs > 0 ? (std::to_string(int(copy_gbs)) + " GB/s").c_str() : "not given", pc.c_str());
    if (gmres)
        std::printf(
            "floor per iteration: %.4f x matrix bytes + %.4f x 8N (k(m) = 2m + 13 + 8/m, plus "
            "the rereads of w of CUDA's multi-dot; solver/gmres/gmres_traffic.hpp)%s\n",
            gmres_model.products, gmres_model.vector_passes,
            pc == "none" ? "" : "; preconditioner bytes not counted");
    std::printf(
        "| system | N | nnz | format | impl | 5 it + setup ms | 5-it ms/it | ms/it (%d it) | "
        "floor ms/it | x floor | it to %.0e | s to tol | true relres | reason |\n",
        steady_its, rtol);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
    for (auto spec : specs) {
        spec.model = usage_checked([&] { return parse_model(model); });
        auto a = generate_hepta_coo<double>(spec);
        auto sys = make_rhs(spec, a);
        HeptaSpec rspec = spec;
        rspec.model = HeptaModel::reservoir;
        auto ar = generate_hepta_coo<double>(rspec);
        auto rsys = make_rhs(rspec, ar);
        Structure st = detect_structure(a);
        for (const auto& fname : fmt_list) {
            for (const auto& iname : impl_list) {
                SolveConfig cfg;
                cfg.format = usage_checked([&] { return parse_format(fname); });
                // fused-nodots: the fused loop with the dot products reduced apart;
                // fused-apart: fused dot products, their partial sums reduced apart;
                // fused-inputs / -sinput / -noinputs: p and s, s alone, neither formed in the
                // products (fused: SolverOptions' automatic choice)
                const bool nodots = iname == "fused-nodots";
                const bool apart = iname == "fused-apart";
                const bool noinputs = iname == "fused-noinputs";
                const bool sinput = iname == "fused-sinput";
                const bool inputs = iname == "fused-inputs";
                cfg.solver = solver;
                cfg.restart = m;
                if (!gmres)
                    cfg.impl = usage_checked([&] {
                        return parse_bicgstab_impl(
                            nodots || apart || noinputs || sinput || inputs ? "fused" : iname);
                    });
                cfg.options.fused_dots = !nodots;
                cfg.options.fused_finish = !apart;
                cfg.options.fused_inputs = noinputs ? FusedInputs::none
                                           : sinput ? FusedInputs::s
                                           : inputs ? FusedInputs::p_and_s
                                                    : FusedInputs::automatic;
                cfg.pc = usage_checked([&] { return parse_pc(pc); });
                cfg.executor = exec;
                cfg.format_options.block_size = st.block_size;
                cfg.block_size = st.block_size;
                if (cfg.format == Format::bdia) cfg.format_options.block_offsets = st.block_offsets;
                Row r;
                r.system = describe(spec);
                r.format = fname;
                r.impl = iname;
                r.device = dev;
                r.n = a.rows;
                r.nnz = a.nnz();
                try {
                    // thesis protocol: exactly 5 iterations (rtol 0 so none stops early)
                    cfg.options.rtol = 0;
                    cfg.options.atol = 0;
                    cfg.options.max_it = 5;
                    cfg.options.record_history = false;
                    std::vector<double> t5, per5, ph[7];
                    for (int k = 0; k < reps; ++k) {
                        // solve_system takes a copy over, as heptane solve does with the
                        // matrix it read (the copy is made before its clock starts)
                        Coo<double> taken = a;
                        auto res = solve_system(std::move(taken), sys.b, cfg);
                        t5.push_back(res.timings.total_ms - res.timings.download_ms);
                        per5.push_back(res.timings.per_iteration_ms);
                        const auto& t = res.timings;
                        const double p[7] = {t.operator_ms - t.host_csr_ms,
                                             t.preconditioner_ms,
                                             t.upload_ms,
                                             t.setup_ms,
                                             t.solve_ms,
                                             t.true_residual_ms,
                                             t.host_csr_ms};
                        for (int q = 0; q < 7; ++q) ph[q].push_back(p[q]);
                    }
                    r.five_it_ms = median(t5);
                    r.p_operator = median(ph[0]);
                    r.p_pc = median(ph[1]);
                    r.p_upload = median(ph[2]);
                    r.p_setup = median(ph[3]);
                    r.p_iterations = median(ph[4]);
                    r.p_true = median(ph[5]);
                    r.p_csr = median(ph[6]);
                    r.five_it_per_it_ms = median(per5);
                    // steady state: one operator and solver, --steady-its iterations a solve
                    r.per_it_ms = steady_per_it_ms(a, sys.b, cfg, exec, steady_its, reps);
                    if (copy_gbs > 0) {
                        const Precision p = Precision::double_;
                        const auto traffic = spmv_traffic(a, cfg.format, cfg.format_options, p);
                        const double bytes =
                            gmres ? gmres_model.bytes(traffic.matrix_bytes, double(a.rows))
                                  : 2 * traffic.matrix_bytes + 15.0 * 8.0 * a.rows;
                        r.floor_ms = bytes / (copy_gbs * 1e9) * 1e3;
                    }
                    // to tolerance on the reservoir model
                    cfg.options.rtol = rtol;
                    cfg.options.max_it = max_it;
                    auto res = solve_system(ar, rsys.b, cfg);
                    r.tol_iterations = res.status.iterations;
                    r.tol_seconds = res.timings.solve_ms / 1e3;
                    r.tol_true_relres = res.status.true_relative_residual;
                    r.tol_reason = to_string(res.status.reason);
                } catch (const Error& e) {
                    r.tol_reason = std::string("error: ") + e.what();
                }
                rows.push_back(r);
                std::printf(
                    "| %s | %lld | %lld | %s | %s | %.3f | %.4f | %.4f | %s | %s | %d | %.4f | "
                    "%.1e | %s |\n",
                    r.system.c_str(), r.n, r.nnz, r.format.c_str(), r.impl.c_str(), r.five_it_ms,
                    r.five_it_per_it_ms, r.per_it_ms,
                    r.floor_ms > 0 ? std::to_string(r.floor_ms).substr(0, 6).c_str() : "-",
                    r.floor_ms > 0 ? std::to_string(r.per_it_ms / r.floor_ms).substr(0, 4).c_str()
                                   : "-",
                    r.tol_iterations, r.tol_seconds, r.tol_true_relres, r.tol_reason.c_str());
                std::fflush(stdout);
            }
        }
    }
    // where a fresh solve's time goes (the 5-iteration protocol; the rest of "5 it + setup"
    // is the host's COO -> CSR, counted in operator, and bookkeeping)
    std::printf(
        "\n5 it + setup, phases (median ms over --reps): host csr = A's CSR made on the host "
        "from the COO; operator = the format built (and uploaded) from it; pc = preconditioner "
        "setup; upload = b and x0; solver setup = workspace and initial residual; iterations = "
        "the 5 iterations; true = final ||b - A x||\n");
    std::printf(
        "| system | format | impl | 5 it + setup | host csr | operator | pc | upload | solver "
        "setup | iterations | true |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& r : rows)
        std::printf("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n",
                    r.system.c_str(), r.format.c_str(), r.impl.c_str(), r.five_it_ms, r.p_csr,
                    r.p_operator, r.p_pc, r.p_upload, r.p_setup, r.p_iterations, r.p_true);
    std::fflush(stdout);
    if (csv) {
        std::ofstream f(*csv);
        HEPTANE_ENSURE(f.good(), IoError, "cannot write " << *csv);
        f << "system,n,nnz,format,impl,device,five_it_setup_ms,per_it_ms,floor_ms,tol_iterations,"
             "tol_seconds,tol_true_relres,tol_reason,five_it_per_it_ms,steady_its,"
             "five_it_host_csr_ms,five_it_operator_ms,five_it_pc_ms,five_it_upload_ms,five_it_"
             "solver_setup_ms,"
             "five_it_iterations_ms,five_it_true_residual_ms\n";
        for (const auto& r : rows)
            f << '"' << r.system << "\"," << r.n << ',' << r.nnz << ',' << r.format << ',' << r.impl
              << ',' << r.device << ',' << r.five_it_ms << ',' << r.per_it_ms << ',' << r.floor_ms
              << ',' << r.tol_iterations << ',' << r.tol_seconds << ',' << r.tol_true_relres
              << ",\"" << r.tol_reason << "\"," << r.five_it_per_it_ms << ',' << steady_its << ','
              << r.p_csr << ',' << r.p_operator << ',' << r.p_pc << ',' << r.p_upload << ','
              << r.p_setup << ',' << r.p_iterations << ',' << r.p_true << '\n';
    }
    if (jsonf) {
        std::ofstream f(*jsonf);
        HEPTANE_ENSURE(f.good(), IoError, "cannot write " << *jsonf);
        f << "[\n";
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i];
            f << "  {\"system\": " << json_string(r.system) << ", \"n\": " << r.n
              << ", \"nnz\": " << r.nnz << ", \"format\": \"" << r.format << "\", \"impl\": \""
              << r.impl << "\", \"device\": \"" << r.device
              << "\", \"five_it_setup_ms\": " << r.five_it_ms << ", \"per_it_ms\": " << r.per_it_ms
              << ", \"floor_ms\": " << r.floor_ms << ", \"tol_iterations\": " << r.tol_iterations
              << ", \"tol_seconds\": " << r.tol_seconds
              << ", \"tol_true_relres\": " << r.tol_true_relres
              << ", \"tol_reason\": " << json_string(r.tol_reason)
              << ", \"five_it_per_it_ms\": " << r.five_it_per_it_ms
              << ", \"steady_its\": " << steady_its
              << ", \"five_it_phases_ms\": {\"host_csr\": " << r.p_csr
              << ", \"operator\": " << r.p_operator << ", \"pc\": " << r.p_pc
              << ", \"upload\": " << r.p_upload << ", \"solver_setup\": " << r.p_setup
              << ", \"iterations\": " << r.p_iterations << ", \"true_residual\": " << r.p_true
              << "}}" << (i + 1 < rows.size() ? ",\n" : "\n");
        }
        f << "]\n";
    }
    return 0;
}

}  // namespace heptane::cli
