// Options of the algebraic multigrid preconditioner (amg.hpp) and of CPR (cpr.hpp). Kept in
// a header of their own so that SolveConfig, the CLI and the plugin can carry them without
// the setup code.
#pragma once

#include <array>
#include <string>

#include "core/types.hpp"

namespace heptane {

/// Smoother of every level but the coarsest (solved directly).
///   chebyshev  Chebyshev polynomial in D⁻¹A of degree `sweeps` on [λ/ratio, λ], λ a bound
///              on the largest eigenvalue of D⁻¹A (power_iterations below; the default
///              smoother, as PETSc GAMG's; symmetric, so the cycle suits CG).
///   jacobi     damped Jacobi x += ω D⁻¹ (b − A x), `sweeps` times (ω = jacobi_weight).
///   l1jacobi   l1-Jacobi x += D_l1⁻¹ (b − A x), D_l1 = diag(|a_ii| + Σ_{j≠i} |a_ij|)
///              (convergent for any SPD matrix without a weight; hypre's l1 smoothers).
///   ilu0mc     one multi-colour ILU(0) correction x += (LU)⁻¹ (b − A x) per sweep (the
///              ilu0-mc preconditioner as a smoother; not symmetric: BiCGStab/GMRES).
///   automatic  (the default) ilu0mc for a block system (Nc > 1) that is not symmetric — a
///              coupled reservoir system, whose point smoothing does not converge — else
///              chebyshev. The preconditioner's options() and describe() name the one chosen.
enum class AmgSmoother { chebyshev, jacobi, l1jacobi, ilu0mc, automatic };
/// "chebyshev" (also "cheby"), "jacobi", "l1jacobi" (also "l1-jacobi"), "ilu0mc" (also
/// "ilu0-mc"), "auto". Throws InputError naming the choices.
AmgSmoother parse_amg_smoother(const std::string& name);
const char* to_string(AmgSmoother s) noexcept;

/// V: one coarse-grid visit per level; W: two (cycle_index = 2).
enum class AmgCycle { v, w };
AmgCycle parse_amg_cycle(const std::string& name);
const char* to_string(AmgCycle c) noexcept;

/// Where the hierarchy (strength, aggregation, P, R, Galerkin products) is built.
///   automatic  on the device when the executor is a GPU and Nc = 1 (pressure systems, CPR's
///              pressure stage), else on the host
///   host       on the host (OpenMP; the CPU reference), whatever the executor
///   device     on the device (amg_device.hpp); InputError on a CPU executor or with Nc > 1
enum class AmgSetup { automatic, host, device };
/// "auto", "host", "device". Throws InputError naming the choices.
AmgSetup parse_amg_setup(const std::string& name);
const char* to_string(AmgSetup s) noexcept;

/// How the cells of a level are grouped into the next level's unknowns.
///   mis  (the default) smoothed aggregation's aggregates: a maximal distance-2 independent
///        set of the strong graph, its neighbours joined (amg_setup.hpp); any pattern
///   box  boxes of a structured grid's cells (AmgOptions::grid, or the grid formats/detect
///        finds behind A's pattern): each direction whose mean strength
///        |a_ij| / sqrt(|a_ii a_jj|) is at least box_ratio times the strongest direction's
///        is halved (semi-coarsening where one direction dominates, as hypre's PFMG), an odd
///        last cell joining the box before it; the coarse cells are a grid again, numbered
///        in natural order, so every level keeps a grid — and with plain aggregation
///        (prolongation_weight 0) a 7-point stencil stays 7-point on every level; coarsening
///        goes on down to min(coarse_size, 64) rows (amg::box_coarse_size). Nc = 1
///        only; without a grid (or with Nc > 1) the setup uses mis and says so. The AMG over
///        the ranks (dist::DistAmg) always uses mis.
enum class AmgAggregation { mis, box };
/// "mis", "box". Throws InputError naming the choices.
AmgAggregation parse_amg_aggregation(const std::string& name);
const char* to_string(AmgAggregation a) noexcept;

/// One AMG per MPI rank (no), one hierarchy over the ranks (yes), or the caller's choice
/// (automatic); AmgOptions::over_ranks.
enum class AmgOverRanks { no, yes, automatic };

/// Smoothed aggregation (Vaněk, Mandel, Brezina 1996), as PETSc GAMG, amgcl and AMGX's
/// aggregation AMG do it. Names follow PETSc's -pc_gamg_* where there is one.
struct AmgOptions {
    /// Strength of connection: node j is a strong neighbour of i when
    /// |a_ij| > theta·sqrt(|a_ii|·|a_jj|) (Frobenius norms of the Nc × Nc blocks for Nc > 1).
    /// 0 keeps every coupling (GAMG's default threshold); amgcl's default is 0.08. 0.02 was
    /// measured best over both kinds of systems here: on the reservoir example's anisotropic
    /// pressure (kz = 0.1 kx) 0.08 drops the vertical couplings and needs 10 BiCGStab
    /// iterations at 96x96x48 where 0.02 and 0 need 6 (GAMG: 6); on the channelized model
    /// (contrast 1e7) 0 needs 26 CG iterations at 64x64x32 where 0.02 needs 14 and 0.08 13.
    double strength_threshold = 0.02;
    /// Prolongator smoothing P = (I − ω D_F⁻¹ A_F) T, ω = prolongation_weight / ρ(D_F⁻¹ A_F)
    /// (A_F: A without its weak couplings, lumped into the diagonal). 0: unsmoothed (plain)
    /// aggregation, whose coarse operators keep A's stencil (7-point stays 7-point).
    double prolongation_weight = 4.0 / 3.0;
    /// The AMG over the ranks (dist::DistAmg) only: each row of the smoothed P keeps at most
    /// this many entries, the largest in magnitude, scaled so that the row's sum stays (hypre
    /// BoomerAMG's P_max_elmts; 0: every entry). On the reservoir pressure over 16 ranks the
    /// coarse levels of the slabs that coarsen least had ~490 entries a row and their Galerkin
    /// products 5x the multiply-adds of the other ranks. The most multiply-adds on any rank and
    /// BiCGStab's iterations (this VM, 16 ranks): 1 M cells (three solves) 37.9 M / 19 its with
    /// all, 7.5 M / 19 with 6, 5.9 M / 19 with 4; 8.4 M cells (one solve) 329 M / 5 with all,
    /// 65 M / 5 with 8, 56 M / 5 with 6, 44 M / 9 with 4 (H200 machine). The one-process AMG
    /// does not read it.
    int prolongation_max_entries = 6;
    /// Stop coarsening at this many rows or fewer (the coarsest level is solved with a dense
    /// LU on the executor), after max_levels levels, or when a level coarsens by less than
    /// a factor 1.2 (then the coarsest level is inverted densely only while that is cheap,
    /// amg::dense_coarse, else ILU(0) sweeps or, symmetric A, smoothed).
    index_t coarse_size = 300;
    int max_levels = 20;
    AmgSmoother smoother = AmgSmoother::automatic;
    /// Chebyshev degree, or Jacobi / l1-Jacobi / ILU sweeps, before and after the coarse
    /// correction.
    int pre_sweeps = 2;
    int post_sweeps = 2;
    double jacobi_weight = 2.0 / 3.0;
    /// Chebyshev interval [λ_max/ratio, 1.1·λ_max] (GAMG: [0.1, 1.1]·λ_max → ratio 11).
    double chebyshev_ratio = 11.0;
    /// λ_max(D⁻¹A) for Chebyshev. 0: Gershgorin's bound max_i Σ_j |a_ij| / |a_ii|, one pass
    /// over each level (amgcl's default), the interval's top. N > 0: estimated by N power
    /// iterations and, on a symmetric matrix, N + 2 Jacobi-preconditioned CG (Lanczos) steps,
    /// the larger, times 1.1 (PETSc GAMG's way). Measured (H100, CG, rtol 1e-6): the
    /// estimates took 6.4 of AMG's 27.4 ms setup at 459 K cells and 19 of 132 ms at 8.4 M;
    /// the bound costs one more CG iteration on the channelized model (14 → 15 at 64x64x32,
    /// 16 → 17 at 128x128x28; reservoir: 6 either way).
    int power_iterations = 0;
    AmgCycle cycle = AmgCycle::v;
    /// The levels of at most this many rows, down to the coarsest, run as one launch (the
    /// cycle's "tail", amg_tail.hpp: one CTA on a GPU, in place of ~14 launches a level with
    /// next to no work in them); 0 (the default): every step its own launch. Smoothers
    /// chebyshev, jacobi and l1jacobi; the levels AMG owns (not the solver's operator); at most
    /// 8 levels and 8 smoothing steps a visit. The same steps in the same order either way.
    /// Not the default because it did not win where measured (H200, CG rtol 1e-6, 1 M and
    /// 8.4 M cells, docs/benchmarks.md "The coarse levels in one launch"): with the launches
    /// replayed from a CUDA graph, one CTA walking levels of 256-2048 rows took as long as
    /// their launches (box: 2.6-2.7 against 2.8 ms of solve at 1 M cells) or longer (818-row
    /// mis levels: 4.3 against 3.2 ms; 16 K rows: 3.7 ms).
    index_t tail_rows = 0;
    AmgSetup setup = AmgSetup::automatic;
    AmgAggregation aggregation = AmgAggregation::mis;
    /// aggregation = box: a direction is halved when its mean strength is at least this
    /// fraction of the strongest direction's.
    double box_ratio = 0.25;
    /// The grid of cells behind A_0's pattern, {nx, ny, nz} in natural order (x fastest), when
    /// the caller knows it (a BDIA-GH operator's); {0, 0, 0}: found from A's pattern
    /// (formats/detect) where box aggregation needs it.
    std::array<index_t, 3> grid{0, 0, 0};
    /// Several MPI ranks: one hierarchy over all of them (yes: dist::DistAmg,
    /// distributed/dist_amg.hpp: levels split over the ranks, every level smoothed through the
    /// distributed product; chebyshev, jacobi or l1jacobi) or one AMG per rank's diagonal block
    /// (no: block Jacobi over the ranks). automatic: the caller decides (the PETSc plugin's
    /// rule, plugin/petsc_common.hpp HeptaneAmgOverRanks). The one-process AMG does not read it.
    AmgOverRanks over_ranks = AmgOverRanks::no;
    /// The operator is singular by design and the caller said so (its null space declared: a
    /// pure-Neumann pressure; the PETSc plugin sets it where the KSP's Amat or Pmat carries
    /// MatSetNullSpace, the CLI with --null-space constant). The coarsest level's dense inverse
    /// is then a generalized inverse (amg::generalized_inverse: pivots below 1e-11 of the
    /// largest entry pinned) instead of an InputError for a singular coarsest level. Without it
    /// such an operator's coarsest level is singular up to rounding: refused where a pivot is
    /// exactly zero, and otherwise inverted through a rounding-sized pivot, which makes the
    /// cycle indefinite (CG stops: seen on a 16³ Neumann Laplacian).
    bool singular = false;
};

/// Why amg_over_ranks decided as it did (each caller words it for its own options).
enum class OverRanksWhy {
    not_amg,          ///< one rank, or the preconditioner is neither AMG nor CPR: no
    asked,            ///< asked for (AmgOverRanks::yes): yes
    declined,         ///< asked not to (AmgOverRanks::no): no
    gpu_ranks,        ///< automatic on GPU ranks: no (the hierarchy over the ranks is the host's)
    coarse,           ///< automatic with the global coarse correction: no (it has its own)
    ilu0mc_smoother,  ///< automatic with the ilu0mc smoother: no (not built over the ranks)
    block_system,     ///< automatic, AMG of an Nc > 1 system: no (CPR for a coupled one)
    default_scalar,   ///< automatic, AMG of a scalar system on CPU ranks: yes
    default_cpr,      ///< automatic, CPR on CPU ranks: yes
};
struct OverRanks {
    bool yes = false;
    OverRanksWhy why = OverRanksWhy::not_amg;
};
/// Whether AMG (`cpr`: CPR's pressure stage) runs as one hierarchy over all `ranks` ranks
/// (dist::DistAmg, dist::DistCpr) or as one per rank's diagonal block (block Jacobi over the
/// ranks) -- the rule `heptane solve` under mpirun and the PETSc plugin share. Automatic: over
/// the ranks on CPU ranks for AMG of a scalar system and for CPR, unless the global coarse
/// correction is on or the smoother is ilu0mc (16 CPU ranks, the reservoir example's 1 M-cell
/// pressure: 12 BiCGStab iterations against 116 with one AMG per rank; docs/petsc.md).
OverRanks amg_over_ranks(AmgOverRanks asked, AmgSmoother smoother, bool amg, bool cpr, int ranks,
                         bool cpu, index_t nc, bool coarse);

/// The second stage of CPR on the whole system.
enum class CprSmoother { bilu0, bilu0mc, bjacobi };

/// Constrained pressure residual (Wallis 1983; two-stage, as in OPM and Eclipse): a
/// quasi-IMPES decoupling, AMG on the pressure system, and a block preconditioner on the
/// full system, applied multiplicatively.
struct CprOptions {
    /// Which unknown of each cell is the pressure.
    index_t pressure_index = 0;
    AmgOptions amg;
    /// Unset on the command line: block ILU(0) on the CPU, block Jacobi on a GPU (cpr.cpp says
    /// why).
    bool second_stage_auto = true;
    CprSmoother second_stage = CprSmoother::bilu0;
};

}  // namespace heptane
