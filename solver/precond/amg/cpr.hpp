// CPR, the constrained-pressure-residual two-stage preconditioner for the coupled systems
// of black-oil and compositional simulators (Wallis 1983; Gries et al. 2014; OPM's
// cprw), as a heptane Preconditioner on an Nc × Nc block matrix:
//
//   decoupling   quasi-IMPES weights per cell: w_I = D_I⁻ᵀ e_p, D_I the cell's diagonal
//                block, p the pressure unknown (a singular D_I keeps w_I = e_p);
//   pressure     A_p[I, J] = Σ_c w_I[c] A[(I, c), (J, p)] (unit diagonal), solved
//                approximately by one AMG cycle (amg.hpp);
//   second stage M₂ = block ILU(0) (natural or multi-colour) or block Jacobi (the default on a
//                GPU) on the whole
//                system;
//   z = E x_p + M₂⁻¹ (r − A E x_p),  x_p = AMG(Wᵀ r),  (E x_p)_(I, c) = x_p,I if c = p else 0.
//
// Every step of the apply runs on the executor; so does the setup when A is given there
// (make_cpr's a_exec). update_values redoes the weights, A_p's values (AMG's values refresh
// on the kept hierarchy) and M₂'s numeric part.
#pragma once

#include <memory>

#include "solver/precond/amg/amg.hpp"
#include "solver/precond/preconditioner.hpp"

namespace heptane {

/// CPR on host CSR `a` with block size nc (≥ 1, dividing the rows). `a_op`: A on `exec` (the
/// solver's operator) for the second stage's residual; null: CPR keeps a CSR copy. `a_exec`:
/// A already in exec's memory (the caller's copy, borrowed for the setup): the weights, the
/// pressure matrix and block Jacobi's M₂ are then made there (kernels::cpr_pressure_*;
/// nothing of A crosses the bus, and a values refresh runs there too, its pattern checked by
/// fingerprint), unless its rows are not sorted, repeat a column or nc > 8 on a GPU (the host
/// path then sets up). Both paths give the same preconditioner, bit for bit. `a` itself may
/// live in exec's memory (then a_exec is normally `&a`): it is copied to the host only where
/// the host path needs it. `keep_pattern` (a GPU, the executor path): CPR keeps A's pattern
/// there so that update_values_device (new values of A on the device) redoes the weights,
/// A_p, AMG and block Jacobi's M₂ there, with nothing crossing the bus.
/// Throws InputError for a pressure index ≥ nc and what AMG and M₂'s setup throw.
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_cpr(const Csr<double>& a, index_t nc,
                                             std::shared_ptr<const Executor> exec,
                                             const CprOptions& opts,
                                             std::shared_ptr<const Operator<VT>> a_op = nullptr,
                                             const Csr<double>* a_exec = nullptr,
                                             bool keep_pattern = false);

/// Sets up and applies AMG (Nc = 1) and CPR (Nc = 2) on tiny systems on `exec` (a GPU; a
/// no-op on the CPU), so that the device code they use (cuSPARSE's transpose and SpGEMM,
/// heptane's setup kernels), which CUDA loads at its first use, is loaded: 45-75 ms that a
/// first setup would otherwise spend (H100). For a background thread before the first setup
/// (the PETSc plugin's prewarm). Returns the milliseconds it took.
double warm_up_multigrid(const std::shared_ptr<const Executor>& exec);

/// The second stage's preconditioner type for these options on `exec`: unset (second_stage_auto)
/// natural block ILU(0) on the CPU and block Jacobi on a GPU, else the one asked for (bilu0 ->
/// ilu0, bilu0mc -> ilu0_mc, bjacobi -> block_jacobi). CPR per rank and over the ranks
/// (dist::DistCpr) choose by it.
PcType cpr_second_stage(const CprOptions& opts, const Executor& exec);
/// The quasi-IMPES pressure matrix of `a` and the weights (nc per cell), host (for tests and
/// `heptane info`).
Csr<double> cpr_pressure_matrix(const Csr<double>& a, index_t nc, index_t pressure_index,
                                std::vector<double>* weights = nullptr);

}  // namespace heptane
