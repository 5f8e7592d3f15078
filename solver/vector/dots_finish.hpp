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

/// Which step the summed dot products end and the KrylovState it updates.
struct DotsFinish {
    enum Kind : int {
        bicgstab_alpha = 1,    ///< count 1: α = ρ / (r̂, v)
        bicgstab_s_omega = 2,  ///< count 3: (t, s), (t, t), (s, s): the half-step test and ω
        cg_alpha = 3,          ///< count 1: α = ρ / (p, q)
    };
    int kind = 0;
    KrylovState* state = nullptr;
};

/// The input of a fused product that the product forms itself from a BiCGStab step's vectors,
/// instead of a vector kernel writing it before the product reads it (solver/bicgstab: the
/// unpreconditioned loop on one process). Each row's product reads its neighbours' entries
/// and computes them from r, a, b (cache hits: those rows' own threads read them too); the
/// row's own entry is written to z. The scalars are the state's (β, ω after the last step;
/// α after the α step), read by the kernel; once the state has stopped it does nothing.
///     bicgstab_p: z = p_new = r + β (a − ω b)    a = p, b = v of the last iteration
///     bicgstab_s: z = s     = r − α b            b = v = A p_new;  w (the dot products'
///                                                 other vector) is then s itself
/// z aliases none of r, a, b (their neighbours' entries are read while z is written).
template <class VT>
struct StepInput {
    enum Kind : int {
        bicgstab_p = 1,
        bicgstab_s = 2,
    };
    int kind = 0;
    const KrylovState* state = nullptr;
    const VT* r = nullptr;
    const VT* a = nullptr;
    const VT* b = nullptr;
    VT* z = nullptr;
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
