// The end of a Krylov step whose dot products a product computed (Operator::apply_fused_dots):
// what the product's last CTA does with the summed dot products when it is asked to finish
// the step itself, instead of leaving per-CTA partial sums for a reduction kernel of its own
// (solver/vector: *_partials). That is one launch and one pass over the partials fewer per
// reduction point: BiCGStab's α and ω steps, CG's α step.
//
// The fused BDIA-GH kernel (formats/bdia/bdia_dots.cuh) includes this header: the one place
// where a format's kernel knows a solver's scalars, because it runs their finalize functions
// (krylov_state.hpp, the same ones the reduction kernels run, so all paths stop by the same
// rules). Only for one process: a distributed solve must add the sums over the processes
// before any finalize runs, so it never passes a DotsFinish.
#pragma once

#include "solver/vector/krylov_state.hpp"

namespace heptane {

/// Which step the summed dot products end, the KrylovState it updates and the history.
struct DotsFinish {
    enum Kind : int {
        bicgstab_alpha = 1,    ///< count 1: α = ρ / (r̂, v)
        bicgstab_s_omega = 2,  ///< count 3: (t, s), (t, t), (s, s): the half-step test and ω
        cg_alpha = 3,          ///< count 1: α = ρ / (p, q)
    };
    int kind = 0;
    KrylovState* state = nullptr;
    double* history = nullptr;
};

/// Runs the finalize of `f.kind` on the summed dot products `v` (as many as the kind
/// takes), gated like the step kernels: nothing once the iteration has stopped.
HEPTANE_HD inline void finish_dots(const DotsFinish& f, const double* v)
{
    KrylovState& s = *f.state;
    if (s.stop) return;
    switch (f.kind) {
        case DotsFinish::bicgstab_alpha:
            krylov::bicgstab_alpha_finalize(s, v[0]);
            break;
        case DotsFinish::bicgstab_s_omega:
            krylov::bicgstab_s_omega_finalize(s, v[0], v[1], v[2]);
            break;
        case DotsFinish::cg_alpha:
            krylov::cg_alpha_finalize(s, v[0]);
            break;
        default:
            break;
    }
}

}  // namespace heptane
