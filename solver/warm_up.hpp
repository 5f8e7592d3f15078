// Loading a GPU's device code ahead of the first solve.
//
// CUDA loads a kernel at its first launch in a process (lazy loading, the default since CUDA
// 12): the first solve on a GPU pays for each kernel it launches the first time, ~5-7 ms for
// a BiCGStab solve of the PETSc plugin on an H100 (2026-12-06), where later solves pay
// nothing. warm_up_krylov runs heptane's Krylov solves on tiny systems on the executor, so
// that those kernels are loaded before a caller's first solve: for a background thread (the
// PETSc plugin's prewarm at load), where the loading overlaps the host program's own set-up.
// warm_up_multigrid (solver/precond/amg/cpr.hpp) does the same for AMG's and CPR's setup.
#pragma once

#include <memory>
#include <vector>

#include "core/executor.hpp"
#include "solver/krylov.hpp"

namespace heptane {

/// What warm_up_krylov ran.
struct WarmUpReport {
    double ms = 0;   ///< wall time of the whole warm-up
    int solves = 0;  ///< tiny solves run (each converged: otherwise Error)
};

/// Runs each of `solvers` on a 7-point hepta system of 16 x 16 x 8 cells with Nc unknowns a
/// cell for each Nc in `block_sizes` (1..8), on `exec`, as the PETSc plugin runs them on a
/// BDIA-GH matrix: the Jacobi (Nc = 1) or block-Jacobi preconditioner set up from the CSR
/// pattern and values in exec's memory; BiCGStab with it folded into the operator (A M^-1, its
/// main diagonal exactly 1 at Nc = 1; zero initial guess) and unfolded from a nonzero initial
/// guess; CG and GMRES(30) with it. Options as the plugin's (a monitor, CUDA graphs, fused
/// products, the true residual). Every solve must converge to rtol 1e-6 (Error
/// otherwise: a broken kernel, not a slow one). Works on any executor (on the CPU it loads
/// nothing and serves as its own check).
WarmUpReport warm_up_krylov(const std::shared_ptr<const Executor>& exec,
                            const std::vector<SolverType>& solvers,
                            const std::vector<index_t>& block_sizes);

}  // namespace heptane
