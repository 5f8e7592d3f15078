#include "solver/solve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "formats/csr/csr.hpp"
#include "formats/spmv.hpp"
#include "solver/bicgstab/bicgstab_reference.hpp"
#include "solver/krylov.hpp"
#include "solver/refine.hpp"

namespace heptane {

const char* to_string(SolveStage s) noexcept
{
    switch (s) {
        case SolveStage::build_operator:
            return "build_operator";
        case SolveStage::build_preconditioner:
            return "build_preconditioner";
        case SolveStage::upload:
            return "upload";
        case SolveStage::solve:
            return "solve";
        case SolveStage::download:
            return "download";
    }
    return "?";
}

std::shared_ptr<const Executor> make_executor(const std::string& device)
{
    if (device == "cpu" || device == "host") return cpu_executor();
    for (const char* prefix : {"cuda", "gpu"}) {
        const std::string p(prefix);
        if (device == p) return CudaExecutor::create(0);
        if (device.rfind(p + ":", 0) == 0) {
            const std::string num = device.substr(p.size() + 1);
            std::size_t used = 0;
            int id = -1;
            try {
                id = std::stoi(num, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            HEPTANE_ENSURE(used == num.size() && !num.empty() && id >= 0, InputError,
                           "bad device '" << device << "' (choices: cpu, cuda, cuda:N)");
            return CudaExecutor::create(id);
        }
    }
    HEPTANE_THROW(InputError, "unknown device '" << device << "' (choices: cpu, cuda, cuda:N)");
}

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// A host fp64 vector on `exec` as VT: fp64 vectors go up from the caller's array (no host copy:
// a fresh vector of 67 MB costs more in page faults than its upload).
template <class VT>
Array<VT> upload_vector(const std::vector<double>& v, const std::shared_ptr<const Executor>& exec)
{
    if constexpr (std::is_same_v<VT, double>) {
        Array<VT> d(exec, v.size());
        copy_bytes(*cpu_executor(), v.data(), *exec, d.data(), v.size() * sizeof(VT));
        return d;
    } else {
        return Array<VT>(std::vector<VT>(v.begin(), v.end())).to(exec);
    }
}

// x from `exec` into the result's fp64 vector (fp64 straight into it).
template <class VT>
void download_vector(const Array<VT>& x, std::vector<double>& out)
{
    if constexpr (std::is_same_v<VT, double>) {
        resize_for_overwrite(out, x.size());
        copy_bytes(*x.exec(), x.data(), *cpu_executor(), out.data(), x.bytes());
    } else {
        const std::vector<VT> xh = x.to_vector();
        out.assign(xh.begin(), xh.end());
    }
}

// The operator in (MT, VT) from the caller's COO when there is one (the COO path of
// make_matrix_operator), else from the CSR; on a GPU (double values) BDIA-GH is placed from the
// CSR (from its copy there, or streamed up), and the CSR format copies the device copy.
template <class MT, class VT>
std::unique_ptr<Operator<VT>> build_operator(const Coo<double>* a, const Csr<double>& csr,
                                             const Csr<double>* csr_on_exec, const SolveConfig& cfg,
                                             const std::shared_ptr<const Executor>& exec)
{
    if (cfg.out_of_core) {
        const OutOfCoreOptions& o = *cfg.out_of_core;
        const bool pinned = exec->is_cuda();
        auto m = std::make_shared<OocMatrix<MT>>(
            o.bdia_block_size > 0
                ? (a ? make_ooc_matrix_bdia<MT>(*a, o.bdia_block_size, o.bdia_block_offsets,
                                                o.chunk_bytes, pinned)
                     : make_ooc_matrix_bdia<MT>(csr, o.bdia_block_size, o.bdia_block_offsets,
                                                o.chunk_bytes, pinned))
                : (a ? make_ooc_matrix<MT>(*a, o.chunk_bytes, pinned)
                     : make_ooc_matrix<MT>(csr, o.chunk_bytes, pinned)));
        return std::make_unique<OutOfCoreOperator<MT, VT>>(std::move(m), exec, *cfg.out_of_core);
    }
    // on a GPU, BDIA-GH (double values) from the CSR: placed from the device copy or streamed
    // up, with no host pass over the COO
    const bool from_csr =
        !a || (std::is_same_v<MT, double> && exec->is_cuda() && cfg.format_options.block_size > 0 &&
               (cfg.format == Format::bdia || (cfg.format == Format::csr && csr_on_exec)));
    if (from_csr)
        return make_matrix_operator<MT, VT>(csr, cfg.format, exec, cfg.format_options, csr_on_exec);
    return make_matrix_operator<MT, VT>(*a, cfg.format, exec, cfg.format_options);
}

// One attempt with preconditioner `pc`. `a`: the caller's COO (null when solve_system took it
// over); `csr`: A as CSR on the host, made once by solve_system in csr_ms.
template <class MT, class VT>
SolveResult run(const Coo<double>* a, const Csr<double>& csr, double csr_ms,
                const std::vector<double>& b, const SolveConfig& cfg, PcType pc,
                const std::shared_ptr<const Executor>& exec, clock_type::time_point t_start)
{
    SolveResult res;
    res.precision = cfg.precision;
    res.device = exec->name();
    auto stage = [&](SolveStage s) {
        if (cfg.on_stage) cfg.on_stage(s, ms_since(t_start));
    };
    const index_t nc =
        cfg.block_size > 0
            ? cfg.block_size
            : (cfg.format_options.block_size > 0 ? cfg.format_options.block_size : 1);
    const bool reference =
        cfg.solver == SolverType::bicgstab && cfg.impl == BicgstabImpl::reference;

    // the operator
    stage(SolveStage::build_operator);
    auto t0 = clock_type::now();
    // On a GPU, when the preconditioner is set up from A's CSR there (AMG, CPR, Jacobi, block
    // Jacobi), A's CSR goes up once: BDIA-GH is placed from it there, the CSR format copies
    // it there (device to device), instead of one upload (or a host setup) each; it is
    // released after the preconditioner's setup. With no such preconditioner, BDIA-GH streams
    // the entries up and places them as they arrive (no whole device copy of the CSR).
    std::unique_ptr<Csr<double>> csr_on_exec;
    const bool pc_from_device_csr = pc == PcType::amg || pc == PcType::cpr ||
                                    pc == PcType::jacobi || pc == PcType::block_jacobi;
    if (!reference && exec->is_cuda() && !cfg.out_of_core &&
        ((std::is_same_v<MT, double> && cfg.format == Format::csr) || pc_from_device_csr))
        csr_on_exec = std::make_unique<Csr<double>>(csr.to(exec));
    std::shared_ptr<const Operator<VT>> op;
    if (reference) {
        if constexpr (std::is_same_v<MT, double> && std::is_same_v<VT, double>) {
            op = make_cusparse_csr_operator(csr, exec);
        } else {
            HEPTANE_THROW(NotSupported, "the reference BiCGStab runs in double precision only");
        }
    } else {
        op = build_operator<MT, VT>(a, csr, csr_on_exec.get(), cfg, exec);
    }
    exec->synchronize();
    res.timings.operator_ms = csr_ms + ms_since(t0);
    res.timings.host_csr_ms = csr_ms;
    res.format = op->describe();

    // the preconditioner
    stage(SolveStage::build_preconditioner);
    t0 = clock_type::now();
    // AMG's finest level and CPR's residual use the solver's own operator when it has the
    // preconditioner's precision (e.g. BDIA-GH at the floor), else a CSR copy of their own
    std::shared_ptr<const Operator<VT>> a_op;
    if constexpr (std::is_same_v<MT, VT>) {
        if (!reference) a_op = op;
    }
    std::shared_ptr<const Preconditioner<VT>> m =
        make_preconditioner<VT>(pc, csr, nc, exec, cfg.pc_options, a_op, csr_on_exec.get());
    exec->synchronize();
    csr_on_exec.reset();
    res.timings.preconditioner_ms = ms_since(t0);
    res.preconditioner = m->describe();

    // vectors
    stage(SolveStage::upload);
    t0 = clock_type::now();
    const Array<VT> b_dev = upload_vector<VT>(b, exec);
    Array<VT> x_dev = cfg.x0.empty() ? Array<VT>(exec, b.size()) : upload_vector<VT>(cfg.x0, exec);
    res.timings.upload_ms = ms_since(t0);

    // mixed: the fp64 matrix too, for the residuals of the refinement
    constexpr bool mixed = std::is_same_v<MT, float> && std::is_same_v<VT, double>;
    std::unique_ptr<Operator<double>> op64;
    if constexpr (mixed) {
        if (cfg.refine && !reference) {
            t0 = clock_type::now();
            op64 = build_operator<double, double>(a, csr, nullptr, cfg, exec);
            exec->synchronize();
            res.timings.operator_ms += ms_since(t0);
        }
    }

    stage(SolveStage::solve);
    SolverOptions opts = cfg.options;
    opts.nonzero_initial_guess = !cfg.x0.empty();
    SolverExtras extras;
    extras.bicgstab_impl = cfg.impl;
    extras.restart = cfg.restart;
    const std::unique_ptr<Solver<VT>> solver = make_solver<VT>(cfg.solver, opts, extras);
    solver->set_operator(op);
    solver->set_preconditioner(m);
    res.solver = solver->name();
    bool refined = false;
    if constexpr (mixed) {
        if (op64) {
            MixedRefinement refinement;
            res.status = refinement.solve(*solver, *op64, b_dev, x_dev, opts);
            const int corrections = refinement.corrections();
            res.corrections = corrections;
            res.solver += ", fp64 iterative refinement (" + std::to_string(corrections) +
                          (corrections == 1 ? " correction)" : " corrections)");
            refined = true;
        }
    }
    if (!refined) res.status = solver->solve(b_dev, x_dev);

    stage(SolveStage::download);
    t0 = clock_type::now();
    download_vector(x_dev, res.x);
    res.timings.download_ms = ms_since(t0);
    if constexpr (!std::is_same_v<MT, double>) {
        // fp32 values: the solver's own true residual is against the rounded matrix it
        // iterated with; report the one against the matrix as given (fp64), on the host
        // (the refinement has it already, from the fp64 matrix on the device)
        if (opts.compute_true_residual && !op64) {
            t0 = clock_type::now();
            std::vector<double> r(b);  // r = b − A x
            heptane::spmv(*cpu_executor(), csr, Op::normal, -1.0, res.x.data(), 1.0, r.data());
            double rr = 0, bb = 0;
            for (std::size_t i = 0; i < r.size(); ++i) {
                rr += r[i] * r[i];
                bb += b[i] * b[i];
            }
            res.status.true_residual_norm = std::sqrt(rr);
            res.status.true_relative_residual = bb > 0 ? std::sqrt(rr / bb) : std::sqrt(rr);
            res.status.timings.true_residual_ms += ms_since(t0);
            // the fp32 matrix's recursive residual met the tolerance; say so when the
            // matrix as given denies it (the result must not claim convergence)
            const double tol = std::max(opts.rtol * std::sqrt(bb), opts.atol);
            if (res.status.converged() && std::sqrt(rr) > tol)
                res.status.reason = Reason::diverged_true_residual;
        }
    }
    res.timings.setup_ms = res.status.timings.setup_ms;
    res.timings.solve_ms = res.status.timings.solve_ms;
    res.timings.per_iteration_ms = res.status.timings.per_iteration_ms;
    res.timings.true_residual_ms = res.status.timings.true_residual_ms;
    return res;
}

// One solve with A as out-of-core chunks (solve_system's OocMatrix overload).
template <class MT, class VT>
SolveResult run_ooc(const std::shared_ptr<const OocMatrix<MT>>& a, const std::vector<double>& b,
                    const SolveConfig& cfg, const std::shared_ptr<const Executor>& exec,
                    clock_type::time_point t_start, const OocRowSplit* split)
{
    SolveResult res;
    res.precision = cfg.precision;
    res.device = exec->name();
    auto stage = [&](SolveStage s) {
        if (cfg.on_stage) cfg.on_stage(s, ms_since(t_start));
    };
    const PcType pc = cfg.pc.value_or(PcType::jacobi);
    HEPTANE_ENSURE(pc == PcType::none || pc == PcType::jacobi || pc == PcType::block_jacobi,
                   NotSupported,
                   "with the matrix out of core the preconditioner is none, jacobi or bjacobi ("
                       << to_string(pc) << " needs the matrix in memory)");
    const index_t nc = cfg.block_size > 0 ? cfg.block_size : ooc_block_size(a->chunks());

    stage(SolveStage::build_operator);
    auto t0 = clock_type::now();
    std::shared_ptr<const Operator<VT>> op;
    const OutOfCoreOptions oo = cfg.out_of_core.value_or(OutOfCoreOptions{});
    if (split) {
        auto rows = std::make_shared<const OutOfCoreOperator<MT, VT>>(
            a, exec, oo, split->first_chunk, split->last_chunk);
        if constexpr (std::is_same_v<VT, double>)
            op = split->whole ? split->whole(std::move(rows)) : nullptr;
        else
            op = split->whole_fp32 ? split->whole_fp32(std::move(rows)) : nullptr;
        HEPTANE_ENSURE(op != nullptr, InputError, "solve_system: the row split made no operator");
    } else {
        op = std::make_shared<const OutOfCoreOperator<MT, VT>>(a, exec, oo);
    }
    HEPTANE_ENSURE(
        std::size_t(op->rows()) == b.size(), DimensionMismatch,
        "solve_system: b has " << b.size() << " entries, the operator " << op->rows() << " rows");
    HEPTANE_ENSURE(cfg.x0.empty() || cfg.x0.size() == b.size(), DimensionMismatch,
                   "solve_system: x0 has " << cfg.x0.size() << " entries, the operator "
                                           << op->rows() << " rows");
    exec->synchronize();
    res.timings.operator_ms = ms_since(t0);
    res.format = op->describe();

    stage(SolveStage::build_preconditioner);
    t0 = clock_type::now();
    const index_t pc_nc = pc == PcType::block_jacobi ? nc : 1;
    std::shared_ptr<const Preconditioner<VT>> m =
        pc == PcType::none
            ? make_preconditioner<VT>(
                  pc,
                  Csr<double>{op->rows(), op->rows(),
                              Array<offset_t>(std::vector<offset_t>(op->rows() + 1, 0)),
                              Array<index_t>(), Array<double>()},
                  1, exec)
            : make_preconditioner<VT>(pc,
                                      ooc_block_diagonal(*a, pc_nc, split ? split->first_chunk : 0,
                                                         split ? split->last_chunk : -1),
                                      pc_nc, exec);
    exec->synchronize();
    res.timings.preconditioner_ms = ms_since(t0);
    res.preconditioner = m->describe();

    stage(SolveStage::upload);
    t0 = clock_type::now();
    const Array<VT> b_dev = upload_vector<VT>(b, exec);
    Array<VT> x_dev = cfg.x0.empty() ? Array<VT>(exec, b.size()) : upload_vector<VT>(cfg.x0, exec);
    res.timings.upload_ms = ms_since(t0);

    stage(SolveStage::solve);
    SolverOptions opts = cfg.options;
    opts.nonzero_initial_guess = !cfg.x0.empty();
    SolverExtras extras;
    extras.restart = cfg.restart;
    const std::unique_ptr<Solver<VT>> solver = make_solver<VT>(cfg.solver, opts, extras);
    solver->set_operator(op);
    solver->set_preconditioner(m);
    res.solver = solver->name();
    res.status = solver->solve(b_dev, x_dev);

    stage(SolveStage::download);
    t0 = clock_type::now();
    download_vector(x_dev, res.x);
    res.timings.download_ms = ms_since(t0);
    res.timings.setup_ms = res.status.timings.setup_ms;
    res.timings.solve_ms = res.status.timings.solve_ms;
    res.timings.per_iteration_ms = res.status.timings.per_iteration_ms;
    res.timings.true_residual_ms = res.status.timings.true_residual_ms;
    res.timings.total_ms = ms_since(t_start);
    return res;
}

}  // namespace

namespace {

void check_system(index_t rows, index_t cols, const std::vector<double>& b, const SolveConfig& cfg)
{
    HEPTANE_ENSURE(rows == cols, DimensionMismatch,
                   "solve_system: A is " << rows << " x " << cols << ", not square");
    HEPTANE_ENSURE(b.size() == std::size_t(rows), DimensionMismatch,
                   "solve_system: b has " << b.size() << " entries, A has " << rows << " rows");
    HEPTANE_ENSURE(
        cfg.x0.empty() || cfg.x0.size() == std::size_t(rows), DimensionMismatch,
        "solve_system: x0 has " << cfg.x0.size() << " entries, A has " << rows << " rows");
}

/// SolveConfig::null_space_constant: every row of A sums to ~0 (InputError naming the first
/// row, 1-based, that does not).
void check_constant_null_space(const Csr<double>& a)
{
    for (index_t i = 0; i < a.rows; ++i) {
        double sum = 0, abs = 0;
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
            sum += a.values[k];
            abs += std::abs(a.values[k]);
        }
        HEPTANE_ENSURE(std::abs(sum) <= 1e-8 * abs, InputError,
                       "the constants are declared A's null space (--null-space constant), but "
                       "row "
                           << std::int64_t(i) + 1 << " sums to " << sum << " (|a_ij| sum to " << abs
                           << "): A 1 is not zero, so they are not; drop the option for a "
                              "nonsingular A");
    }
}

/// x = x0 + P (x − x0), P = I − 1 1ᵀ / n; returns ‖(I − P)(x − x0)‖, the constant removed.
double remove_constant(std::vector<double>& x, const std::vector<double>& x0)
{
    const std::size_t n = x.size();
    if (n == 0) return 0;
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) mean += x[i] - (x0.empty() ? 0.0 : x0[i]);
    mean /= double(n);
    for (double& v : x) v -= mean;
    return std::abs(mean) * std::sqrt(double(n));
}

SolveResult solve(const Coo<double>* a, const Csr<double>& csr, double csr_ms,
                  const std::vector<double>& b, const SolveConfig& cfg_in,
                  const std::shared_ptr<const Executor>& exec, clock_type::time_point t_start)
{
    SolveConfig cfg_null;  // with the null space: AMG's coarsest by a generalized inverse
    if (cfg_in.null_space_constant) {
        check_constant_null_space(csr);
        cfg_null = cfg_in;
        cfg_null.pc_options.amg.singular = cfg_null.pc_options.cpr.amg.singular = true;
    }
    const SolveConfig& cfg = cfg_in.null_space_constant ? cfg_null : cfg_in;
    auto finish = [&](SolveResult& r) {
        if (cfg.null_space_constant) r.null_space_removed = remove_constant(r.x, cfg.x0);
        r.timings.total_ms = ms_since(t_start);
    };
    auto attempt = [&](PcType pc) {
        switch (cfg.precision) {
            case Precision::double_:
                return run<double, double>(a, csr, csr_ms, b, cfg, pc, exec, t_start);
            case Precision::single:
                return run<float, float>(a, csr, csr_ms, b, cfg, pc, exec, t_start);
            case Precision::mixed:
                return run<float, double>(a, csr, csr_ms, b, cfg, pc, exec, t_start);
        }
        HEPTANE_THROW(InputError, "solve_system: unknown precision");
    };
    SolveResult res;
    if (cfg.pc) {
        res = attempt(*cfg.pc);
        finish(res);
        return res;
    }
    const index_t nc =
        cfg.block_size > 0
            ? cfg.block_size
            : (cfg.format_options.block_size > 0 ? cfg.format_options.block_size : 1);
    const std::vector<PcType> chain = default_preconditioners(exec->kind(), cfg.solver, nc);
    std::string why;  // what the ones before the last attempt said
    auto left = [&why](const std::string& pc, const std::string& reason) {
        why += (why.empty() ? "" : "; ") + pc + ": " + reason;
    };
    for (std::size_t k = 0; k < chain.size(); ++k) {
        const bool last = k + 1 == chain.size();
        try {
            res = attempt(chain[k]);
        } catch (const InputError& e) {  // cannot be set up on this matrix
            if (last) throw;
            left(to_string(chain[k]), e.what());
            continue;
        } catch (const NotSupported& e) {
            if (last) throw;
            left(to_string(chain[k]), e.what());
            continue;
        }
        if (res.status.converged() || last) break;
        left(res.preconditioner, res.status.summary());
    }
    const std::string where = exec->is_cuda() ? "CUDA" : "the CPU";
    res.preconditioner += why.empty() ? " (the default on " + where + ")"
                                      : " (fallback on " + where + "; " + why + ")";
    finish(res);
    return res;
}

}  // namespace

long long auto_gpu_min_entries(int threads, int ranks_per_gpu)
{
    // fitted to docs/logs/device-crossover-h100-2026-11-27-run3.csv (heptane solve with its
    // defaults, H100 and 16 host cores): the GPU process spent 0.43-0.45 s more outside the
    // solve (CUDA start-up, handles) plus ~0.05 s of setup launches; per stored entry the
    // CPU took 0.05-0.12 us (Nc = 3 - 1), the GPU (AMG / CPR) ~0.012 us. The measured
    // crossover lies between 6.1 M and 14.6 M entries (Nc = 1), 2.0 M and 16.3 M (Nc = 3).
    constexpr double fixed_s = 0.50, cpu16_s = 0.09e-6, gpu_s = 0.015e-6;
    const double cpu_s = cpu16_s * 16.0 / std::clamp(threads, 1, 16);
    const double k = std::max(1, ranks_per_gpu);  // ranks sharing the GPU: docs in solve.hpp
    if (cpu_s <= gpu_s * k) return std::numeric_limits<long long>::max();
    return static_cast<long long>(std::ceil(fixed_s * k * k / (cpu_s - gpu_s * k)));
}

std::vector<PcType> ilu_preconditioners(ExecKind device)
{
    if (device == ExecKind::cpu) return {PcType::ilu0};
    return {PcType::ilu0_mc, PcType::ilu0};
}

std::vector<PcType> default_preconditioners(ExecKind device, SolverType solver, index_t nc,
                                            bool distributed)
{
    if (solver == SolverType::cg && (device == ExecKind::cpu || distributed))
        return {PcType::block_jacobi};
    if (device == ExecKind::cpu || distributed) return ilu_preconditioners(device);
    if (solver == SolverType::cg) return {PcType::amg, PcType::block_jacobi};
    std::vector<PcType> chain{nc > 1 ? PcType::cpr : PcType::amg};
    for (PcType p : ilu_preconditioners(device)) chain.push_back(p);
    return chain;
}

SolveResult solve_system(const Coo<double>& a, const std::vector<double>& b, const SolveConfig& cfg)
{
    const auto t_start = clock_type::now();
    check_system(a.rows, a.cols, b, cfg);
    const auto exec = cfg.executor ? cfg.executor : make_executor(cfg.device);
    const auto t0 = clock_type::now();
    const Csr<double> csr = csr_from_coo(a);
    return solve(&a, csr, ms_since(t0), b, cfg, exec, t_start);
}

SolveResult solve_system(Coo<double>&& a, const std::vector<double>& b, const SolveConfig& cfg)
{
    const auto t_start = clock_type::now();
    check_system(a.rows, a.cols, b, cfg);
    const auto exec = cfg.executor ? cfg.executor : make_executor(cfg.device);
    const auto t0 = clock_type::now();
    const Csr<double> csr = csr_from_coo(std::move(a));  // takes a's columns and values over
    return solve(nullptr, csr, ms_since(t0), b, cfg, exec, t_start);
}

namespace {

template <class MT>
SolveResult solve_ooc(const std::shared_ptr<const OocMatrix<MT>>& a, const std::vector<double>& b,
                      const SolveConfig& cfg, const OocRowSplit* split)
{
    const auto t_start = clock_type::now();
    HEPTANE_ENSURE(a != nullptr, InputError, "solve_system: no matrix");
    HEPTANE_ENSURE(!cfg.null_space_constant, InputError,
                   "a null space (--null-space constant) is not supported out of core (its "
                   "preconditioners are none, jacobi and bjacobi, which need no such care: "
                   "drop the option and remove the solution's mean yourself)");
    if (split)
        HEPTANE_ENSURE(a->rows() == a->cols(), DimensionMismatch,
                       "solve_system: A is " << a->rows() << " x " << a->cols() << ", not square");
    else
        check_system(a->rows(), a->cols(), b, cfg);
    const auto exec = cfg.executor ? cfg.executor : make_executor(cfg.device);
    constexpr bool fp32 = std::is_same_v<MT, float>;
    switch (cfg.precision) {
        case Precision::double_:
            if constexpr (!fp32) return run_ooc<double, double>(a, b, cfg, exec, t_start, split);
            break;
        case Precision::single:
            if constexpr (fp32) return run_ooc<float, float>(a, b, cfg, exec, t_start, split);
            break;
        case Precision::mixed:
            if constexpr (fp32) return run_ooc<float, double>(a, b, cfg, exec, t_start, split);
            break;
    }
    HEPTANE_THROW(InputError, "solve_system: precision "
                                  << to_string(cfg.precision) << " does not fit the chunks' fp"
                                  << 8 * sizeof(MT)
                                  << " values (fp64: double; fp32: single or mixed)");
}

}  // namespace

template <class MT>
SolveResult solve_system(std::shared_ptr<const OocMatrix<MT>> a, const std::vector<double>& b,
                         const SolveConfig& cfg)
{
    return solve_ooc<MT>(a, b, cfg, nullptr);
}

template <class MT>
SolveResult solve_system(std::shared_ptr<const OocMatrix<MT>> a, const std::vector<double>& b,
                         const SolveConfig& cfg, const OocRowSplit& split)
{
    return solve_ooc<MT>(a, b, cfg, &split);
}

template SolveResult solve_system<double>(std::shared_ptr<const OocMatrix<double>>,
                                          const std::vector<double>&, const SolveConfig&);
template SolveResult solve_system<float>(std::shared_ptr<const OocMatrix<float>>,
                                         const std::vector<double>&, const SolveConfig&);
template SolveResult solve_system<double>(std::shared_ptr<const OocMatrix<double>>,
                                          const std::vector<double>&, const SolveConfig&,
                                          const OocRowSplit&);
template SolveResult solve_system<float>(std::shared_ptr<const OocMatrix<float>>,
                                         const std::vector<double>&, const SolveConfig&,
                                         const OocRowSplit&);

}  // namespace heptane
