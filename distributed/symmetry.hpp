// Whether a matrix split over the ranks by rows equals its transpose, from each rank's rows as
// MPIAIJ keeps them (dist::SplitRows: the diagonal block and the rest): the diagonal block
// against itself on the rank (check_symmetry), every off-rank entry a(i, j) against a(j, i) on
// the owner of row j (one MPI_Alltoallv of the off-rank entries), |a_ij − a_ji| ≤
// tol·max(|a_ij|, |a_ji|) with a missing entry counted as 0, as check_symmetry does on one
// process. It costs a pass over the rows and one exchange of the entries that couple ranks,
// where PETSc's MatIsSymmetric/MatIsTranspose of an MPIAIJ matrix gathers the rows each rank's
// columns touch (hcg's KSPSetUp on 16 CPU ranks and 1 M rows took 1.5-1.8 s with it, hbcgs's
// 0.3 s: docs/petsc.md).
//
//     SymmetryCheck s = dist::check_symmetry(comm, rows, row_begin, 1e-8);  // collective
#pragma once

#include <mpi.h>

#include "distributed/coarse_space.hpp"
#include "formats/csr/csr.hpp"

namespace heptane::dist {

/// Collective. `rows`: this rank's rows (rows.diag square, its columns numbered from
/// row_begin; off's columns through off_cols, or global where that is null), the ranks' rows
/// consecutive in rank order. The result is the same on every rank: symmetric, or the worst
/// pair over all ranks in global 0-based indices (ties: the lowest rank's). Throws InputError
/// (on every rank) for an off-rank column outside the matrix or inside the rank's own rows.
SymmetryCheck check_symmetry(MPI_Comm comm, const SplitRows& rows, index_t row_begin, double tol);

}  // namespace heptane::dist
