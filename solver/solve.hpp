// One call from a host matrix and right-hand side to a solution, for the CLI (`heptane
// solve`), the plugin and quick experiments: builds the operator (make_matrix_operator with
// the chosen format, precision and device), the preconditioner, runs the solver (BiCGStab,
// CG or GMRES, through make_solver) and returns x on the host with the Status, the timings
// and what was used.
//
//     SolveConfig cfg;                       // BiCGStab + ILU(0), CSR, double, on the CPU
//     cfg.device = "cuda";
//     cfg.format = Format::bdia;
//     SolveResult res = solve_system(a, b, cfg);
//     std::printf("%s\n", res.status.summary().c_str());
//
// Errors (thrown): a non-canonical or non-square A, b or x0 of the wrong length
// (DimensionMismatch), an unknown device string (InputError), no CUDA (NotSupported /
// DeviceError), what make_matrix_operator and make_preconditioner throw (e.g. a format that
// cannot hold A, a singular block). Non-convergence is the returned Status.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "core/types.hpp"
#include "formats/coo/coo.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "solver/bicgstab/bicgstab.hpp"
#include "solver/krylov.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solver.hpp"

namespace heptane {

// SolverType, parse_solver and to_string(SolverType) are in solver/krylov.hpp.

/// "cpu", "cuda" (device 0), "cuda:N" (also "gpu", "gpu:N"). Throws InputError for anything
/// else, NotSupported/DeviceError when CUDA is absent.
std::shared_ptr<const Executor> make_executor(const std::string& device);

/// The stages solve_system reports to SolveConfig::on_stage, in order.
enum class SolveStage { build_operator, build_preconditioner, upload, solve, download };
const char* to_string(SolveStage s) noexcept;

struct SolveConfig {
    SolverType solver = SolverType::bicgstab;
    /// GMRES: the restart length m (≥ 1; basis vectors kept per cycle).
    int restart = 30;
    /// BiCGStab loop; reference = cuBLAS + cuSPARSE CSR (CUDA, double precision only; the
    /// format is then always cuSPARSE CSR).
    BicgstabImpl impl = BicgstabImpl::fused;
    Format format = Format::csr;
    FormatOptions format_options;
    /// double: fp64 everywhere; single: fp32 matrix, vectors and preconditioner; mixed: fp32
    /// matrix values, fp64 vectors and preconditioner. Single (and mixed without refine)
    /// stops on the recursive residual of the rounded (fp32) matrix; Status's true residual
    /// is then ‖b − A x‖ with the fp64 matrix as given (on the host, after the solve), which
    /// can stay above rtol·‖b‖ by about the fp32 rounding of A times ‖A‖‖x‖/‖b‖; the Status's
    /// reason is then Reason::diverged_true_residual, not converged.
    Precision precision = Precision::double_;
    /// Unset: default_preconditioners(): tried in turn until one converges (a later one is a
    /// second, complete solve from x0), the fallback named in SolveResult::preconditioner.
    std::optional<PcType> pc;
    /// Options of the amg and cpr preconditioners (AmgOptions, CprOptions).
    PcOptions pc_options;
    /// Preconditioner block size Nc. 0: format_options.block_size when > 0, else 1.
    index_t block_size = 0;
    /// "cpu", "cuda", "cuda:N" (make_executor); ignored when `executor` is set.
    std::string device = "cpu";
    /// The executor to run on, shared with the caller (its stream, cuBLAS and cuSPARSE
    /// handles): one executor per process instead of one per call. Unset: make_executor(device).
    std::shared_ptr<const Executor> executor;
    /// Mixed precision: iterative refinement -- the solver (fp32 matrix values, fp64
    /// vectors) finds corrections of the residual taken with the fp64 matrix (kept on the
    /// device beside the fp32 one) until that true residual meets rtol/atol. Without it the
    /// solve stops on the recursive residual of the rounded matrix, whose true residual can
    /// stay about 1e-7 ||A|| ||x|| / ||b|| behind. No effect in double or single precision.
    bool refine = true;
    /// rtol, atol, max_it, check_every, monitor (per iteration progress), ...
    SolverOptions options;
    /// Initial guess (empty: zero). Non-empty sets options.nonzero_initial_guess.
    std::vector<double> x0;
    /// The constant vector is A's null space (A 1 = 0: a pure-Neumann pressure, a closed
    /// domain with no accumulation term), as PETSc's MatSetNullSpace(PETSC_TRUE) says it:
    /// AMG's and CPR's coarsest level by a generalized inverse (AmgOptions::singular) and the
    /// solution's correction freed of its constant, x = x0 + P (x − x0) with P = I − 1 1ᵀ / n
    /// (the answer PETSc's KSPs give). b must be consistent (orthogonal to Aᵀ's null space:
    /// for a symmetric A, zero mean). InputError when a row's sum is not ~0 (|Σ_j a_ij| >
    /// 1e-8 Σ_j |a_ij|): the constants are then no null space.
    bool null_space_constant = false;
    /// Set: the matrix stays in host memory in row chunks and streams to the device at every
    /// product (formats/outofcore; `format` is then ignored, the chunks are CSR). The
    /// preconditioner is set up from the host matrix and lives on the device: pick one that
    /// keeps no copy of A there (none, jacobi, bjacobi).
    std::optional<OutOfCoreOptions> out_of_core;
    /// Called when a stage starts (for progress output of long runs); elapsed_ms since the
    /// call to solve_system.
    std::function<void(SolveStage stage, double elapsed_ms)> on_stage;
};

struct SolveTimingsFull {
    double operator_ms = 0;        ///< build the format and upload it (host_csr_ms included)
    double host_csr_ms = 0;        ///< of operator_ms: A's CSR made on the host from the COO
    double preconditioner_ms = 0;  ///< host setup (factorisation) and upload
    double upload_ms = 0;          ///< b (and x0) to the device
    double setup_ms = 0;           ///< solver workspace, initial residual (Status timings)
    double solve_ms = 0;           ///< the iterations
    double per_iteration_ms = 0;
    double true_residual_ms = 0;
    double download_ms = 0;  ///< x to the host
    double total_ms = 0;     ///< the whole call
};

struct SolveResult {
    std::vector<double> x;  ///< the last iterate, on the host
    Status status;
    std::string solver;          ///< Solver::name(), e.g. "bicgstab (fused)", "gmres(30)"
    std::string format;          ///< the operator's describe()
    std::string preconditioner;  ///< the preconditioner's describe()
    std::string device;          ///< the executor's name()
    Precision precision = Precision::double_;
    /// Mixed precision with SolveConfig::refine: the corrections solved for (0 otherwise).
    int corrections = 0;
    /// SolveConfig::null_space_constant: the norm of the constant removed from the solution's
    /// correction (-1: no null space declared).
    double null_space_removed = -1;
    SolveTimingsFull timings;
};

/// The model behind `--device auto` (heptane solve) and `-heptane_device auto` (the PETSc
/// plugin, one rank) for a solve: the GPU when nnz · (c_cpu(threads) − c_gpu) > F, with F the
/// GPU's fixed cost (CUDA start-up, handles, setup launches) and c the time per stored entry
/// of a solve with the defaults (setup and iterations) on each device, fitted to `heptane
/// solve` timed on both (scripts/device-crossover.sh; docs/benchmarks.md). c_cpu scales as
/// 16 / min(threads, 16) from the 16 cores it was measured on. Returns the stored entries
/// from which the GPU wins with this many host threads. ranks_per_gpu = k > 1 (MPI ranks of a
/// node sharing each GPU; nnz then per rank): F · k² and c_gpu · k, each rank's GPU setup
/// serialised over the k ranks and its AMG of a k-th of the node's rows needing more iterations
/// than the AMG over the CPU ranks. Fitted on the H200 machine (one GPU, 16 cores, reservoir
/// pressure 1 M cells, hamg, three solves): 2 GPU ranks 3.04 s against 4.32-4.98 s on 2 CPU
/// ranks (the GPU: 1.42 M entries < 3.65 M a rank), 4 GPU ranks 3.33 s against 2.39-2.97 s
/// (the CPU: 5.8 M > 1.83 M), 16 11.94 s against 0.97-1.35 s.
long long auto_gpu_min_entries(int threads, int ranks_per_gpu = 1);

/// The preconditioners solve_system tries, in order, when SolveConfig::pc is unset: the next
/// one when a preconditioner cannot be set up or its solve does not converge.
/// CPU: bjacobi for CG (ILU(0) is not symmetric), ilu0 for BiCGStab and GMRES (set up in
/// microseconds there, and fewest iterations of the cheap ones).
/// CUDA: amg for Nc = 1 and for CG (iterations that do not grow with the grid, set up on the
/// device in tens of ms at 1 M rows), cpr for Nc > 1 with BiCGStab and GMRES; then ilu0-mc
/// (multi-colour ILU(0): 2 + 2 launches per apply on a 7-point grid, its setup on the host)
/// and ilu0 (level-scheduled; the last resort) -- bjacobi after amg for CG.
/// `distributed` (heptane solve under mpirun, any number of ranks: each rank preconditions its
/// diagonal block, block Jacobi over the ranks): bjacobi for CG, else ilu_preconditioners(device)
/// -- the policy the distributed solve has been measured with (docs/benchmarks.md, many GPUs). One
/// policy for every caller: solve_system, heptane solve (also under mpirun) and the PETSc plugin
/// (whose -pc_type ilu is ilu_preconditioners' chain).
std::vector<PcType> default_preconditioners(ExecKind device, SolverType solver, index_t nc,
                                            bool distributed = false);

/// What ILU(0) means on a device, in the order to try: on CUDA the multi-colour ILU(0) (its
/// triangular solves in a few launches), then the level-scheduled one (the same factors of
/// the natural order) when the colouring cannot be set up or its solve does not converge;
/// on the CPU the natural-order ILU(0) alone.
std::vector<PcType> ilu_preconditioners(ExecKind device);

/// Solve A x = b. `a` is canonical host COO (square); b has a.rows entries.
SolveResult solve_system(const Coo<double>& a, const std::vector<double>& b,
                         const SolveConfig& cfg);
/// The same, taking `a` over: its column and value arrays become the CSR the operator and the
/// preconditioner are made from, with no copy (a is left empty). For callers that do not need
/// A afterwards (a matrix read from a file): the copy of a large matrix's entries costs more
/// than the GPU setup itself.
SolveResult solve_system(Coo<double>&& a, const std::vector<double>& b, const SolveConfig& cfg);
/// Solve A x = b with A given as out-of-core chunks of MT values (formats/outofcore: a chunk
/// file that open_ooc_file opened, or chunks made in memory; page-locked for a GPU) that need
/// not fit in host memory: the operator streams them (cfg.out_of_core's budget, residency and
/// buffers; unset: the defaults). The chunks are the matrix as given: cfg.precision picks the
/// vectors -- fp64 for double (MT = double) and mixed (MT = float: no refinement, nothing to
/// refine against), fp32 for single (MT = float); any other pairing is InputError. cfg.pc:
/// none, jacobi or bjacobi (set up from the diagonal blocks, read from the chunks once; unset:
/// jacobi), block size cfg.block_size or else the chunks' (ooc_block_size); the others need
/// the matrix in memory: NotSupported. cfg.format, format_options and impl are not used.
template <class MT>
SolveResult solve_system(std::shared_ptr<const OocMatrix<MT>> a, const std::vector<double>& b,
                         const SolveConfig& cfg);

/// The rows of an out-of-core matrix split over processes: this process holds chunks
/// [first_chunk, last_chunk) (whole blocks of Nc rows), and `whole` makes the operator the
/// solver runs on from the operator of those rows over every column -- one that gathers x and
/// sums the dot products over the processes (dist::GatheredRowsOperator).
struct OocRowSplit {
    index_t first_chunk = 0;
    index_t last_chunk = -1;
    std::function<std::shared_ptr<const Operator<double>>(std::shared_ptr<const Operator<double>>)>
        whole;
    std::function<std::shared_ptr<const Operator<float>>(std::shared_ptr<const Operator<float>>)>
        whole_fp32;
};
/// solve_system above on this process's rows: b, cfg.x0 and the result's x are those rows; the
/// preconditioner (none, jacobi, bjacobi) is set up from their diagonal blocks.
template <class MT>
SolveResult solve_system(std::shared_ptr<const OocMatrix<MT>> a, const std::vector<double>& b,
                         const SolveConfig& cfg, const OocRowSplit& split);

}  // namespace heptane
