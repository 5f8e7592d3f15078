/*
   A small black-oil-style reservoir simulator written against PETSc alone: the kind of host
   program whose linear solver is switched from the command line.

   Grid: a DMDA box of nx x ny x nz cells (x fastest) with a 7-point stencil, layered
   heterogeneous permeability (one value per layer, varied laterally, kz = kx/10) and porosity.
   A water injector and a producer are vertical wells through every layer.

   Two systems, each solved with a KSP configured only by KSPSetFromOptions:
     pressure  one unknown per cell (Nc = 1): slightly compressible single-phase flow, one
               linear solve per implicit time step (symmetric positive definite);
     coupled   three unknowns per cell (Nc = 3: p, Sw, Sg; So = 1 - Sw - Sg): water, oil and
               gas mass balances with Corey relative permeabilities and upstream mobilities,
               Newton's method per implicit step, one linear solve per Newton iteration
               (nonsymmetric, dense 3 x 3 blocks). Every Newton iteration re-assembles the
               Jacobian into the same nonzero pattern.

   Per linear solve it prints the KSP iterations, KSPGetResidualNorm, the reason and the
   KSPSolve time; at the end a checksum and the norm of each solution (compare runs with them).

   Options: -nx -ny -nz (32 32 16), -steps (3), -newton (2), -dt (days, 1),
            -system pressure|coupled|both (both), -summary_only (only the final lines),
            -z_split_only (1), plus every -ksp_/-pc_/-dm_/-da_ option of PETSc.

   Runs on any number of MPI ranks (at most nz). The DMDA is split over the ranks along z only
   (each rank owns whole x-y layers), so that PETSc's global numbering of the unknowns is the
   grid's natural one (x fastest), which a distributed solver on BDIA-GH rows (heptane's hbcgs)
   takes as it is; -z_split_only 0 lets PETSc split in every direction (-da_processors_x/y/z
   still choose), which heptane's KSPs renumber into the natural order. C that is also valid C++.
*/
#include <petscdmda.h>
#include <petscksp.h>

typedef struct {
  PetscInt  nx, ny, nz, layer_cells;
  PetscReal dx, dy, dz, tscale;
  PetscInt  inj_i, inj_j, prod_i, prod_j;
  PetscReal q_inj, pi_prod, p_bhp;
  PetscBool z_only; /* the DMDA split over the ranks along z only */
} Model;

/* ---- rock properties ------------------------------------------------------------------- */

static PetscReal Perm(const Model *m, PetscInt i, PetscInt j, PetscInt k)
{
  static const PetscReal layer_md[8] = {250.0, 20.0, 900.0, 4.0, 350.0, 60.0, 1200.0, 1.5};
  const PetscInt         layer       = (k / m->layer_cells) % 8;
  return layer_md[layer] * PetscExpReal(0.8 * PetscSinReal(0.37 * (PetscReal)i + 1.3 * (PetscReal)layer) * PetscCosReal(0.23 * (PetscReal)j + 0.7 * (PetscReal)layer));
}

static PetscReal Poro(const Model *m, PetscInt k)
{
  return 0.12 + 0.03 * (PetscReal)((k / m->layer_cells) % 5);
}

/* Transmissibility between cell (i,j,k) and its neighbour in direction d (0:-x 1:+x 2:-y
   3:+y 4:-z 5:+z): harmonic mean of the permeabilities times area / distance. */
static PetscReal Trans(const Model *m, PetscInt i, PetscInt j, PetscInt k, PetscInt d, PetscInt in, PetscInt jn, PetscInt kn)
{
  PetscReal k1 = Perm(m, i, j, k), k2 = Perm(m, in, jn, kn), geo;
  if (d < 2) geo = m->dy * m->dz / m->dx;
  else if (d < 4) geo = m->dx * m->dz / m->dy;
  else {
    geo = m->dx * m->dy / m->dz;
    k1 *= 0.1;
    k2 *= 0.1;
  }
  return m->tscale * geo * 2.0 / (1.0 / k1 + 1.0 / k2);
}

static const PetscInt Dir[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};

static PetscBool Inside(const Model *m, PetscInt i, PetscInt j, PetscInt k)
{
  return (PetscBool)(i >= 0 && i < m->nx && j >= 0 && j < m->ny && k >= 0 && k < m->nz);
}

/* ---- the pressure system (Nc = 1) ------------------------------------------------------
   (V phi c_t / dt)(p - p_old) - sum T (p_nb - p) + PI (p - p_bhp)[producer] = q [injector] */

static PetscErrorCode AssemblePressure(DM da, const Model *m, PetscReal dt, Vec pold, Mat A, Vec rhs)
{
  PetscInt      xs, ys, zs, xm, ym, zm;
  PetscScalar ***po, ***r;
  const PetscReal ct = 1e-4, vol = m->dx * m->dy * m->dz;

  PetscFunctionBeginUser;
  PetscCall(MatZeroEntries(A));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(DMDAVecGetArrayRead(da, pold, &po));
  PetscCall(DMDAVecGetArray(da, rhs, &r));
  for (PetscInt k = zs; k < zs + zm; k++)
    for (PetscInt j = ys; j < ys + ym; j++)
      for (PetscInt i = xs; i < xs + xm; i++) {
        MatStencil  row, col[7];
        PetscScalar v[7];
        PetscInt    n   = 1;
        PetscReal   acc = vol * Poro(m, k) * ct / dt, diag = acc;
        row.i = i;
        row.j = j;
        row.k = k;
        row.c = 0;
        for (PetscInt d = 0; d < 6; d++) {
          const PetscInt in = i + Dir[d][0], jn = j + Dir[d][1], kn = k + Dir[d][2];
          if (!Inside(m, in, jn, kn)) continue;
          const PetscReal t = Trans(m, i, j, k, d, in, jn, kn);
          col[n].i = in;
          col[n].j = jn;
          col[n].k = kn;
          col[n].c = 0;
          v[n++]   = -t;
          diag += t;
        }
        r[k][j][i] = acc * po[k][j][i];
        if (i == m->inj_i && j == m->inj_j) r[k][j][i] += m->q_inj / (PetscReal)m->nz;
        if (i == m->prod_i && j == m->prod_j) {
          diag += m->pi_prod;
          r[k][j][i] += m->pi_prod * m->p_bhp;
        }
        col[0] = row;
        v[0]   = diag;
        PetscCall(MatSetValuesStencil(A, 1, &row, n, col, v, INSERT_VALUES));
      }
  PetscCall(DMDAVecRestoreArray(da, rhs, &r));
  PetscCall(DMDAVecRestoreArrayRead(da, pold, &po));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* ---- the coupled black-oil-style system (Nc = 3: p, Sw, Sg) ----------------------------
   R_a = (V phi/dt)(b_a(p) S_a - b_a(p_old) S_a_old) - sum T lambda_a(S_up) (p_nb - p) - q_a,
   a = water, oil, gas; lambda_a = S_a^2 / mu_a; b_w, b_o slightly and b_g strongly
   compressible. J = dR/d(p, Sw, Sg), assembled as dense 3 x 3 blocks (a fixed pattern). */

typedef struct {
  PetscScalar p, sw, sg;
} Cell;

static const PetscReal Mu[3] = {0.5, 2.0, 0.05};

static void Fvf(PetscReal p, PetscReal b[3], PetscReal db[3])
{
  b[0]  = 1.0 + 4e-5 * (p - 200.0);
  db[0] = 4e-5;
  b[1]  = 1.0 + 1e-4 * (p - 200.0);
  db[1] = 1e-4;
  b[2]  = p / 200.0;
  db[2] = 1.0 / 200.0;
}

/* saturations S[a] and dS[a]/d(Sw, Sg) */
static void Sats(const Cell *c, PetscReal s[3], PetscReal ds[3][2])
{
  s[0]     = c->sw;
  s[2]     = c->sg;
  s[1]     = 1.0 - c->sw - c->sg;
  ds[0][0] = 1;
  ds[0][1] = 0;
  ds[1][0] = -1;
  ds[1][1] = -1;
  ds[2][0] = 0;
  ds[2][1] = 1;
}

/* mobilities lambda[a] and dlambda[a]/d(Sw, Sg) */
static void Mobility(const Cell *c, PetscReal lam[3], PetscReal dlam[3][2])
{
  PetscReal s[3], ds[3][2];
  Sats(c, s, ds);
  for (PetscInt a = 0; a < 3; a++) {
    const PetscReal sa = PetscMax(s[a], 0.0);
    lam[a]             = sa * sa / Mu[a];
    dlam[a][0]         = 2.0 * sa * ds[a][0] / Mu[a];
    dlam[a][1]         = 2.0 * sa * ds[a][1] / Mu[a];
  }
}

static PetscErrorCode AssembleCoupled(DM da, const Model *m, PetscReal dt, Vec xold, Vec xloc, Mat J, Vec F)
{
  PetscInt        xs, ys, zs, xm, ym, zm;
  Cell         ***xo, ***x, ***f;
  const PetscReal vol = m->dx * m->dy * m->dz;

  PetscFunctionBeginUser;
  PetscCall(MatZeroEntries(J));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(DMDAVecGetArrayRead(da, xold, &xo));
  PetscCall(DMDAVecGetArrayRead(da, xloc, &x));
  PetscCall(DMDAVecGetArray(da, F, &f));
  for (PetscInt k = zs; k < zs + zm; k++)
    for (PetscInt j = ys; j < ys + ym; j++)
      for (PetscInt i = xs; i < xs + xm; i++) {
        const Cell *c = &x[k][j][i], *co = &xo[k][j][i];
        PetscReal   a = vol * Poro(m, k) / dt, b[3], db[3], bo[3], dbo[3], s[3], ds[3][2], so[3], dso[3][2], lam[3], dlam[3][2];
        PetscReal   res[3], Jd[9];
        MatStencil  row, col;

        row.i = i;
        row.j = j;
        row.k = k;
        row.c = 0;
        Fvf(PetscRealPart(c->p), b, db);
        Fvf(PetscRealPart(co->p), bo, dbo);
        Sats(c, s, ds);
        Sats(co, so, dso);
        /* accumulation */
        for (PetscInt e = 0; e < 3; e++) {
          res[e]        = a * (b[e] * s[e] - bo[e] * so[e]);
          Jd[e * 3 + 0] = a * db[e] * s[e];
          Jd[e * 3 + 1] = a * b[e] * ds[e][0];
          Jd[e * 3 + 2] = a * b[e] * ds[e][1];
        }
        /* fluxes to the neighbours, upstream mobility */
        for (PetscInt d = 0; d < 6; d++) {
          const PetscInt in = i + Dir[d][0], jn = j + Dir[d][1], kn = k + Dir[d][2];
          PetscReal      Jn[9], lup[3], dlup[3][2];
          if (!Inside(m, in, jn, kn)) continue;
          const Cell     *cn  = &x[kn][jn][in];
          const PetscReal t   = Trans(m, i, j, k, d, in, jn, kn);
          const PetscReal dp  = PetscRealPart(cn->p - c->p);
          const PetscBool up  = (PetscBool)(dp > 0); /* the neighbour is upstream */
          Mobility(up ? cn : c, lup, dlup);
          for (PetscInt e = 0; e < 3; e++) {
            res[e] -= t * lup[e] * dp;
            Jd[e * 3 + 0] += t * lup[e];
            Jn[e * 3 + 0] = -t * lup[e];
            Jn[e * 3 + 1] = up ? -t * dlup[e][0] * dp : 0.0;
            Jn[e * 3 + 2] = up ? -t * dlup[e][1] * dp : 0.0;
            if (!up) {
              Jd[e * 3 + 1] -= t * dlup[e][0] * dp;
              Jd[e * 3 + 2] -= t * dlup[e][1] * dp;
            }
          }
          col.i = in;
          col.j = jn;
          col.k = kn;
          col.c = 0;
          {
            PetscScalar blk[9];
            for (PetscInt q = 0; q < 9; q++) blk[q] = Jn[q];
            PetscCall(MatSetValuesBlockedStencil(J, 1, &row, 1, &col, blk, INSERT_VALUES));
          }
        }
        /* wells: water injection at a fixed rate, a producer at a fixed bottom-hole pressure */
        if (i == m->inj_i && j == m->inj_j) res[0] -= m->q_inj / (PetscReal)m->nz;
        if (i == m->prod_i && j == m->prod_j && PetscRealPart(c->p) > m->p_bhp) {
          const PetscReal dpw = PetscRealPart(c->p) - m->p_bhp;
          Mobility(c, lam, dlam);
          for (PetscInt e = 0; e < 3; e++) {
            res[e] += m->pi_prod * lam[e] * dpw;
            Jd[e * 3 + 0] += m->pi_prod * lam[e];
            Jd[e * 3 + 1] += m->pi_prod * dlam[e][0] * dpw;
            Jd[e * 3 + 2] += m->pi_prod * dlam[e][1] * dpw;
          }
        }
        f[k][j][i].p  = res[0];
        f[k][j][i].sw = res[1];
        f[k][j][i].sg = res[2];
        {
          PetscScalar blk[9];
          for (PetscInt q = 0; q < 9; q++) blk[q] = Jd[q];
          PetscCall(MatSetValuesBlockedStencil(J, 1, &row, 1, &row, blk, INSERT_VALUES));
        }
      }
  PetscCall(DMDAVecRestoreArray(da, F, &f));
  PetscCall(DMDAVecRestoreArrayRead(da, xloc, &x));
  PetscCall(DMDAVecRestoreArrayRead(da, xold, &xo));
  PetscCall(MatAssemblyBegin(J, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(J, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* x += dx, saturations kept in [0, 1] with So >= 0 */
static PetscErrorCode NewtonUpdate(DM da, Vec x, Vec dx)
{
  PetscInt xs, ys, zs, xm, ym, zm;
  Cell  ***xa, ***d;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(DMDAVecGetArray(da, x, &xa));
  PetscCall(DMDAVecGetArrayRead(da, dx, &d));
  for (PetscInt k = zs; k < zs + zm; k++)
    for (PetscInt j = ys; j < ys + ym; j++)
      for (PetscInt i = xs; i < xs + xm; i++) {
        Cell     *c  = &xa[k][j][i];
        PetscReal sw = PetscRealPart(c->sw + d[k][j][i].sw), sg = PetscRealPart(c->sg + d[k][j][i].sg);
        sw           = PetscMin(PetscMax(sw, 0.0), 1.0);
        sg           = PetscMin(PetscMax(sg, 0.0), 1.0);
        if (sw + sg > 1.0) {
          const PetscReal s = 1.0 / (sw + sg);
          sw *= s;
          sg *= s;
        }
        c->p += d[k][j][i].p;
        c->sw = sw;
        c->sg = sg;
      }
  PetscCall(DMDAVecRestoreArrayRead(da, dx, &d));
  PetscCall(DMDAVecRestoreArray(da, x, &xa));
  PetscFunctionReturn(0);
}

/* After the timed KSPSolve: the KSP's iterations, residual norm and reason, and the true
   relative residual ||b - A x|| / ||b|| with PETSc's own MatMult in double precision (whatever
   precision the KSP worked in); *max_relres keeps the largest of the run. */
static PetscErrorCode ReportSolve(KSP ksp, Mat A, Vec b, Vec x, const char *what, PetscInt step, PetscInt newton, double seconds, PetscBool quiet, PetscInt *total_its, PetscReal *max_relres)
{
  PetscInt           its;
  PetscReal          rnorm, bnorm, tnorm, relres;
  KSPConvergedReason reason;
  Vec                r;

  PetscFunctionBeginUser;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetResidualNorm(ksp, &rnorm));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b)); /* r = b - A x */
  PetscCall(VecNorm(r, NORM_2, &tnorm));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(VecDestroy(&r));
  relres = bnorm > 0 ? tnorm / bnorm : tnorm;
  if (relres > *max_relres) *max_relres = relres;
  *total_its += its;
  if (!quiet) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-8s step %" PetscInt_FMT " newton %" PetscInt_FMT ": its %4" PetscInt_FMT "  residual %.4e  %-22s solve %.4f s  true relres %.2e\n", what, step, newton, its, (double)rnorm, KSPConvergedReasons[reason], seconds, (double)relres));
  PetscFunctionReturn(0);
}

/* ranks in x and y: 1 (a split along z only), or PETSc's choice */
static PetscInt SplitXY(const Model *m)
{
  return m->z_only ? 1 : PETSC_DECIDE;
}

static PetscErrorCode RunPressure(const Model *m, PetscInt steps, PetscReal dt0, PetscBool quiet)
{
  DM          da;
  Mat         A;
  Vec         p, pold, rhs;
  KSP         ksp;
  KSPType     type;
  PetscReal   dt = dt0, norm, sum;
  PetscInt    total_its = 0;
  double      t_solve = 0, t0;
  PetscReal   max_relres = 0;
  PetscScalar s;

  PetscFunctionBeginUser;
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, m->nx, m->ny, m->nz, SplitXY(m), SplitXY(m), PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDASetFieldName(da, 0, "pressure"));
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(DMCreateGlobalVector(da, &p));
  PetscCall(VecDuplicate(p, &pold));
  PetscCall(VecDuplicate(p, &rhs));
  { /* initial pressure: 200 bar plus a hydrostatic gradient */
    PetscInt      xs, ys, zs, xm, ym, zm;
    PetscScalar ***pa;
    PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
    PetscCall(DMDAVecGetArray(da, pold, &pa));
    for (PetscInt k = zs; k < zs + zm; k++)
      for (PetscInt j = ys; j < ys + ym; j++)
        for (PetscInt i = xs; i < xs + xm; i++) pa[k][j][i] = 200.0 + 0.1 * m->dz * (PetscReal)k;
    PetscCall(DMDAVecRestoreArray(da, pold, &pa));
  }
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  for (PetscInt step = 1; step <= steps; step++, dt *= 1.5) {
    PetscCall(AssemblePressure(da, m, dt, pold, A, rhs));
    PetscCall(KSPSetOperators(ksp, A, A));
    if (step == 1) PetscCall(KSPSetFromOptions(ksp));
    t0 = MPI_Wtime();
    PetscCall(KSPSolve(ksp, rhs, p));
    t0 = MPI_Wtime() - t0;
    t_solve += t0;
    PetscCall(ReportSolve(ksp, A, rhs, p, "pressure", step, 1, t0, quiet, &total_its, &max_relres));
    PetscCall(VecCopy(p, pold));
  }
  PetscCall(KSPGetType(ksp, &type));
  PetscCall(VecNorm(p, NORM_2, &norm));
  PetscCall(VecSum(p, &s));
  sum = PetscRealPart(s);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "pressure: ksp %s, %" PetscInt_FMT " solves, %" PetscInt_FMT " iterations, solve time %.4f s; |p|_2 = %.12e sum(p) = %.12e; max true relres %.2e\n", type, steps, total_its, t_solve, (double)norm, (double)sum, (double)max_relres));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&pold));
  PetscCall(VecDestroy(&rhs));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

static PetscErrorCode RunCoupled(const Model *m, PetscInt steps, PetscInt newton, PetscReal dt0, PetscBool quiet)
{
  DM        da;
  Mat       J;
  Vec       x, xold, xloc, F, dx;
  KSP       ksp;
  KSPType   type;
  PetscReal dt = dt0, norm, fnorm, sums[3] = {0, 0, 0};
  PetscInt  total_its = 0, solves = 0;
  double    t_solve = 0, t0;
  PetscReal max_relres = 0;

  PetscFunctionBeginUser;
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, m->nx, m->ny, m->nz, SplitXY(m), SplitXY(m), PETSC_DECIDE, 3, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDASetFieldName(da, 0, "pressure"));
  PetscCall(DMDASetFieldName(da, 1, "water saturation"));
  PetscCall(DMDASetFieldName(da, 2, "gas saturation"));
  PetscCall(DMCreateMatrix(da, &J));
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(DMCreateLocalVector(da, &xloc));
  PetscCall(VecDuplicate(x, &xold));
  PetscCall(VecDuplicate(x, &F));
  PetscCall(VecDuplicate(x, &dx));
  { /* initial state: 200 bar + hydrostatic, Sw 0.2, a little gas in the upper layers */
    PetscInt xs, ys, zs, xm, ym, zm;
    Cell  ***xa;
    PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
    PetscCall(DMDAVecGetArray(da, x, &xa));
    for (PetscInt k = zs; k < zs + zm; k++)
      for (PetscInt j = ys; j < ys + ym; j++)
        for (PetscInt i = xs; i < xs + xm; i++) {
          xa[k][j][i].p  = 200.0 + 0.1 * m->dz * (PetscReal)k;
          xa[k][j][i].sw = 0.2;
          xa[k][j][i].sg = k < m->nz / 4 ? 0.08 : 0.02;
        }
    PetscCall(DMDAVecRestoreArray(da, x, &xa));
  }
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  for (PetscInt step = 1; step <= steps; step++, dt *= 1.5) {
    PetscCall(VecCopy(x, xold));
    for (PetscInt it = 1; it <= newton; it++) {
      PetscCall(DMGlobalToLocalBegin(da, x, INSERT_VALUES, xloc));
      PetscCall(DMGlobalToLocalEnd(da, x, INSERT_VALUES, xloc));
      PetscCall(AssembleCoupled(da, m, dt, xold, xloc, J, F));
      PetscCall(VecNorm(F, NORM_2, &fnorm));
      PetscCall(VecScale(F, -1.0));
      PetscCall(KSPSetOperators(ksp, J, J));
      if (!solves) PetscCall(KSPSetFromOptions(ksp));
      t0 = MPI_Wtime();
      PetscCall(KSPSolve(ksp, F, dx));
      t0 = MPI_Wtime() - t0;
      t_solve += t0;
      solves++;
      if (!quiet) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "coupled  step %" PetscInt_FMT " newton %" PetscInt_FMT ": |F| = %.10e\n", step, it, (double)fnorm));
      PetscCall(ReportSolve(ksp, J, F, dx, "coupled", step, it, t0, quiet, &total_its, &max_relres));
      PetscCall(NewtonUpdate(da, x, dx));
    }
  }
  PetscCall(KSPGetType(ksp, &type));
  PetscCall(VecNorm(x, NORM_2, &norm));
  {
    PetscInt xs, ys, zs, xm, ym, zm;
    Cell  ***xa;
    PetscReal loc[3] = {0, 0, 0};
    PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
    PetscCall(DMDAVecGetArrayRead(da, x, &xa));
    for (PetscInt k = zs; k < zs + zm; k++)
      for (PetscInt j = ys; j < ys + ym; j++)
        for (PetscInt i = xs; i < xs + xm; i++) {
          loc[0] += PetscRealPart(xa[k][j][i].p);
          loc[1] += PetscRealPart(xa[k][j][i].sw);
          loc[2] += PetscRealPart(xa[k][j][i].sg);
        }
    PetscCall(DMDAVecRestoreArrayRead(da, x, &xa));
    PetscCallMPI(MPI_Allreduce(loc, sums, 3, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "coupled: ksp %s, %" PetscInt_FMT " solves, %" PetscInt_FMT " iterations, solve time %.4f s; |x|_2 = %.12e sum(p) = %.12e sum(Sw) = %.12e sum(Sg) = %.12e; max true relres %.2e\n", type, solves, total_its, t_solve, (double)norm, (double)sums[0], (double)sums[1], (double)sums[2], (double)max_relres));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&xold));
  PetscCall(VecDestroy(&xloc));
  PetscCall(VecDestroy(&F));
  PetscCall(VecDestroy(&dx));
  PetscCall(MatDestroy(&J));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Model       m;
  PetscInt    steps = 3, newton = 2;
  PetscReal   dt    = 1.0;
  PetscBool   quiet = PETSC_FALSE, z_only = PETSC_TRUE;
  char        system[32];
  PetscMPIInt size;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Black-oil-style reservoir simulator (PETSc only)\n"));
  m.nx = 32;
  m.ny = 32;
  m.nz = 16;
  PetscCall(PetscStrncpy(system, "both", sizeof(system)));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Reservoir example options", NULL);
  PetscCall(PetscOptionsInt("-nx", "cells in x", NULL, m.nx, &m.nx, NULL));
  PetscCall(PetscOptionsInt("-ny", "cells in y", NULL, m.ny, &m.ny, NULL));
  PetscCall(PetscOptionsInt("-nz", "cells in z (layers)", NULL, m.nz, &m.nz, NULL));
  PetscCall(PetscOptionsInt("-steps", "implicit time steps", NULL, steps, &steps, NULL));
  PetscCall(PetscOptionsInt("-newton", "Newton iterations per step (coupled system)", NULL, newton, &newton, NULL));
  PetscCall(PetscOptionsReal("-dt", "first time step (days); later steps grow by 1.5", NULL, dt, &dt, NULL));
  PetscCall(PetscOptionsString("-system", "pressure, coupled or both", NULL, system, system, sizeof(system), NULL));
  PetscCall(PetscOptionsBool("-summary_only", "print only the final line of each system", NULL, quiet, &quiet, NULL));
  PetscCall(PetscOptionsBool("-z_split_only", "split the grid over the ranks along z only (natural global numbering); 0: PETSc's choice in every direction", NULL, z_only, &z_only, NULL));
  PetscOptionsEnd();
  PetscCheck(m.nx > 1 && m.ny > 1 && m.nz > 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-nx -ny -nz must be > 1");
  m.layer_cells = PetscMax(1, m.nz / 8);
  m.dx          = 20.0;
  m.dy          = 20.0;
  m.dz          = 4.0;
  m.tscale      = 1e-3;
  m.inj_i       = m.nx / 8;
  m.inj_j       = m.ny / 8;
  m.prod_i      = m.nx - 1 - m.nx / 8;
  m.prod_j      = m.ny - 1 - m.ny / 8;
  m.q_inj       = 50.0;
  m.pi_prod     = 1.0;
  m.p_bhp       = 150.0;
  m.z_only      = z_only;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "reservoir: %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " = %" PetscInt_FMT " cells, %" PetscInt_FMT " steps, %d MPI rank(s)\n", m.nx, m.ny, m.nz, m.nx * m.ny * m.nz, steps, (int)size));
  if (!strcmp(system, "pressure") || !strcmp(system, "both")) PetscCall(RunPressure(&m, steps, dt, quiet));
  if (!strcmp(system, "coupled") || !strcmp(system, "both")) PetscCall(RunCoupled(&m, steps, newton, dt, quiet));
  PetscCall(PetscFinalize());
  return 0;
}
