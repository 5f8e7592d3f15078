// The Krylov solvers by name: SolverType, its parser, and make_solver, which builds any of
// them behind the Solver<VT> interface (solver/solver.hpp).
//
//     SolverExtras ex;
//     ex.restart = 50;
//     auto s = make_solver<double>(parse_solver("gmres"), opts, ex);   // "gmres(50)"
//     s->set_operator(A);
//     Status st = s->solve(b, x);
#pragma once

#include <memory>
#include <string>

#include "solver/bicgstab/bicgstab.hpp"
#include "solver/cg/cg.hpp"
#include "solver/gmres/gmres.hpp"
#include "solver/solver.hpp"

namespace heptane {

enum class SolverType { bicgstab, cg, gmres };
/// "bicgstab" (also "bcgs"), "cg", or "gmres" (also "fgmres": heptane's GMRES is the
/// flexible one). Throws InputError naming the choices.
SolverType parse_solver(const std::string& name);
const char* to_string(SolverType s) noexcept;

/// What make_solver needs beyond SolverOptions, per method (ignored by the others).
struct SolverExtras {
    /// BiCGStab: the fused loop or the cuBLAS reference (solver/bicgstab/bicgstab.hpp).
    BicgstabImpl bicgstab_impl = BicgstabImpl::fused;
    /// GMRES: the restart length m (basis vectors per cycle), ≥ 1.
    int restart = 30;
};

/// A solver of the given type with `options` (Bicgstab, Cg or Gmres). Throws InputError for
/// extras out of range (a restart < 1).
template <class VT>
std::unique_ptr<Solver<VT>> make_solver(SolverType type, const SolverOptions& options = {},
                                        const SolverExtras& extras = {});

extern template std::unique_ptr<Solver<double>> make_solver<double>(SolverType,
                                                                    const SolverOptions&,
                                                                    const SolverExtras&);
extern template std::unique_ptr<Solver<float>> make_solver<float>(SolverType, const SolverOptions&,
                                                                  const SolverExtras&);

}  // namespace heptane
