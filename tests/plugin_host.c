/*
   A PETSc program that knows nothing of heptane: the plugin tests load libheptane_petsc.so
   into it at run time (-dll_append) and compare its output with PETSc's own KSPs.

   It assembles a 3-D (or 2-D) convection-diffusion system with `dof` unknowns per cell on a
   DMDA (or on a plain Mat with -use_dm 0), with b = A x_exact, and solves it `-solves` times;
   each solve after the first re-assembles new values into the same pattern (a Newton loop),
   and -new_pattern_at k adds entries at solve k (a new pattern). It prints per solve the
   iterations, KSPGetResidualNorm, the true residual ||b - A x|| and the error, and a final
   "solution norm" line the tests compare.

   Options: -n N (cells per dimension, 12), -dim 2|3 (3), -dof d (1), -use_dm 0|1 (1),
            -solves k (1), -new_pattern_at k (0 = never), -recreate_mat_every k (0 = never: with
            the DMDA, before solves 1 + k, 1 + 2k, ... KSPReset, MatDestroy and a new matrix of the
            same pattern), -convection c (0.3), -x0 0|1 (0),
            -prefix p (the KSP's options prefix; none), -permute 0|1 (0: with -use_dm 0, the cells
            numbered by a fixed pseudo-random permutation, a numbering that is no grid's),
            -empty_rank r (-1: with -use_dm 0, rank r owns no rows, the others split the cells),
            -shell_amat 0|1 (0: the KSP's Amat a MATSHELL whose MatMult is A's, Pmat A itself, as
            a Jacobian-free host's -snes_mf_operator gives),
            -mffd_amat 0|1 (0: the KSP's Amat PETSc's own matrix-free differencing, MATMFFD of
            F(x) = A x at the base point x_exact, as -snes_mf_operator makes it; products exact to
            about 1e-8 relative),
            -pmat_shift s (0: Pmat an assembled copy of A with s added to its diagonal, refreshed
            with A's values each solve; Amat A, or the shell of -shell_amat 1: the answer solves
            A x = b, only the preconditioner comes from the shifted matrix),
            -neumann 0|1 (0: -dof 1 only; every diagonal entry minus the sum of its row's
            couplings, so A 1 = 0 -- a pure-Neumann pressure, singular -- with the constants
            attached as A's null space (MatSetNullSpace); x_exact has zero mean, so the answer
            PETSc's KSPs give, x0 + a correction with no constant in it, is x_exact (x0 + 1 with
            -x0 1: the initial guess 0.9 x_exact + 1 keeps its constant))
            -host_test 0|1|2 (0: the host's own convergence test, KSPSetConvergenceTest, as
            simulators set one: 1 stops at ||r|| < 1e-4 ||r_0||, a tolerance of its own, with
            KSP_CONVERGED_RTOL; 2 wraps PETSc's KSPConvergedDefault with its own context and
            stops with KSP_DIVERGED_ITS at iteration -host_test_stop k (0: never) unless that
            converged first. Either checks it is called once per iteration from 0, in order,
            with KSPGetIterationNumber and KSPGetResidualNorm as passed, and that the solve
            stopped where it said; MISMATCH otherwise),
            -true_residual_monitor 0|1 (0: a monitor of the host's own that builds the residual
            of each iterate, KSPBuildResidual, and prints MISMATCH where ||b - A x_i|| is not the
            KSP's residual norm to 1e-6 of it plus -true_residual_monitor_btol (0) times ||b||),
   plus any -ksp_ / -pc_ / -mat_type / -dm_mat_type option (-mat_type sbaij stores the upper
   triangle: a symmetric system, -convection 0 -dof 1).

   Written in C that is also valid C++ (the build compiles it as C++).
*/
#include <petscdmda.h>
#include <petscksp.h>

/* value of coupling (row cell/comp a) -> (neighbour, comp b) for direction dirn (0..5),
   scaled by s: diffusion + upwind convection, dense dof x dof blocks, diagonally dominant */
static PetscScalar Coupling(PetscInt dirn, PetscInt a, PetscInt b, PetscReal conv, PetscReal s)
{
  PetscReal v = (a == b) ? -1.0 : -0.05 / (1.0 + (PetscReal)(a + 2 * b));
  if (dirn == 0) v -= conv; /* upwind from -x */
  return (PetscScalar)(s * v);
}

/* -mffd_amat: the function MATMFFD differences, F(x) = A x */
static PetscErrorCode LinearFunction(void *ctx, Vec x, Vec f)
{
  PetscFunctionBeginUser;
  PetscCall(MatMult((Mat)ctx, x, f));
  PetscFunctionReturn(0);
}

/* -shell_amat: the shell's product is the assembled matrix's */
static PetscErrorCode ShellMult(Mat S, Vec x, Vec y)
{
  Mat A;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &A));
  PetscCall(MatMult(A, x, y));
  PetscFunctionReturn(0);
}

/* -permute: the cells numbered by a fixed pseudo-random permutation (Fisher-Yates with an LCG),
   a numbering that is no grid's */
static PetscBool Permute = PETSC_FALSE;
static PetscInt *Perm    = NULL;
static PetscInt  Number(PetscInt c, PetscInt ncell)
{
  (void)ncell;
  return Permute ? Perm[c] : c;
}
static PetscErrorCode MakePermutation(PetscInt ncell)
{
  unsigned long long state = 12345;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(ncell, &Perm));
  for (PetscInt i = 0; i < ncell; i++) Perm[i] = i;
  for (PetscInt i = ncell - 1; i > 0; i--) {
    state             = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const PetscInt j  = (PetscInt)((state >> 33) % (unsigned long long)(i + 1));
    const PetscInt t  = Perm[i];
    Perm[i]           = Perm[j];
    Perm[j]           = t;
  }
  PetscFunctionReturn(0);
}

/* a cell's index in the grid's natural order -> PETSc's (the DMDA's AO; itself without one) */
static PetscErrorCode ToPetsc(AO ao, PetscInt dof, PetscInt *c)
{
  PetscInt first;
  PetscFunctionBeginUser;
  if (!ao) PetscFunctionReturn(0);
  first = *c * dof;
  PetscCall(AOApplicationToPetsc(ao, 1, &first));
  *c = first / dof;
  PetscFunctionReturn(0);
}

static PetscErrorCode Assemble(Mat A, DM da, PetscInt n, PetscInt dim, PetscInt dof, PetscReal conv, PetscReal s, PetscBool extra, PetscBool neumann)
{
  PetscInt    nz = dim == 3 ? n : 1, ny = n, nx = n;
  PetscInt    ncell = nx * ny * nz;
  PetscScalar block[16 * 16];

  AO          ao = NULL;

  PetscFunctionBeginUser;
  PetscCheck(dof <= 16, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "dof <= 16");
  if (da) PetscCall(DMDAGetAO(da, &ao)); /* a DMDA split in x or y numbers the cells rank by rank */
  PetscCall(MatZeroEntries(A));
  for (PetscInt k = 0; k < nz; k++)
    for (PetscInt j = 0; j < ny; j++)
      for (PetscInt i = 0; i < nx; i++) {
        PetscInt       c        = Number(i + nx * (j + ny * k), ncell);
        const PetscInt nb[6][3] = {{i - 1, j, k}, {i + 1, j, k}, {i, j - 1, k}, {i, j + 1, k}, {i, j, k - 1}, {i, j, k + 1}};
        PetscReal      diag     = 0.0;
        const PetscInt c_nat    = c;
        PetscCall(ToPetsc(ao, dof, &c));
        for (PetscInt d = 0; d < 6; d++) {
          const PetscInt ii = nb[d][0], jj = nb[d][1], kk = nb[d][2];
          if (dim == 2 && d >= 4) continue;
          if (ii < 0 || ii >= nx || jj < 0 || jj >= ny || kk < 0 || kk >= nz) continue;
          PetscInt cn = Number(ii + nx * (jj + ny * kk), ncell);
          PetscCall(ToPetsc(ao, dof, &cn));
          for (PetscInt a = 0; a < dof; a++)
            for (PetscInt b = 0; b < dof; b++) block[a * dof + b] = Coupling(d, a, b, conv, s);
          diag += 1.0 + (d == 0 ? conv : 0.0) + 0.05 * dof;
          PetscCall(MatSetValuesBlocked(A, 1, &c, 1, &cn, block, ADD_VALUES));
        }
        if (neumann) diag = 0.0; /* dof 1: minus the sum of the row's couplings, A 1 = 0 */
        for (PetscInt d = 0; neumann && d < 6; d++) {
          const PetscInt ii = nb[d][0], jj = nb[d][1], kk = nb[d][2];
          if (dim == 2 && d >= 4) continue;
          if (ii < 0 || ii >= nx || jj < 0 || jj >= ny || kk < 0 || kk >= nz) continue;
          diag -= PetscRealPart(Coupling(d, 0, 0, conv, 1.0));
        }
        for (PetscInt a = 0; a < dof; a++)
          for (PetscInt b = 0; b < dof; b++) block[a * dof + b] = neumann ? s * diag : (a == b) ? s * (diag + 0.5 + 0.1 * a) : 0.02 * s * (a - b);
        PetscCall(MatSetValuesBlocked(A, 1, &c, 1, &c, block, ADD_VALUES));
        if (extra && c_nat == 0) { /* a long-range coupling: a new nonzero pattern */
          PetscInt far = Number(ncell - 1, ncell);
          PetscCall(ToPetsc(ao, dof, &far));
          for (PetscInt a = 0; a < dof * dof; a++) block[a] = -0.01 * s;
          PetscCall(MatSetValuesBlocked(A, 1, &c, 1, &far, block, ADD_VALUES));
        }
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* -host_test: the host's own convergence test and what it saw */
typedef struct {
  PetscInt           mode, stop_at, calls, last;
  PetscReal          r0;
  KSPConvergedReason said;
  void              *dctx; /* KSPConvergedDefault's context (mode 2) */
} HostTest;

static PetscErrorCode HostConverged(KSP ksp, PetscInt it, PetscReal rnorm, KSPConvergedReason *reason, void *ctx)
{
  HostTest *t = (HostTest *)ctx;
  PetscInt  kits;
  PetscReal krn;

  PetscFunctionBeginUser;
  PetscCall(KSPGetIterationNumber(ksp, &kits));
  PetscCall(KSPGetResidualNorm(ksp, &krn));
  if (it != t->calls || kits != it || krn != rnorm)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: MISMATCH convergence test call %" PetscInt_FMT " at iteration %" PetscInt_FMT " (KSPGetIterationNumber %" PetscInt_FMT ", KSPGetResidualNorm %.6e, passed %.6e)\n", t->calls, it, kits, (double)krn, (double)rnorm));
  t->calls++;
  t->last = it;
  if (t->mode == 1) {
    if (it == 0) t->r0 = rnorm;
    *reason = rnorm < 1e-4 * t->r0 ? KSP_CONVERGED_RTOL : KSP_CONVERGED_ITERATING;
  } else {
    PetscCall(KSPConvergedDefault(ksp, it, rnorm, reason, t->dctx));
    if (*reason == KSP_CONVERGED_ITERATING && t->stop_at > 0 && it >= t->stop_at) *reason = KSP_DIVERGED_ITS;
  }
  t->said = *reason;
  PetscFunctionReturn(0);
}

/* -true_residual_monitor: ||b - A x_i|| of each iterate against the KSP's norm, to 1e-6 of it
   plus -true_residual_monitor_btol times ||b|| (fp32 matrix values: their rounding) */
static PetscReal TrueResidualBtol = 0;
static PetscErrorCode TrueResidualMonitor(KSP ksp, PetscInt it, PetscReal rnorm, void *ctx)
{
  PetscInt *checked = (PetscInt *)ctx;
  Vec       r, b;
  PetscReal tn, bn;

  PetscFunctionBeginUser;
  PetscCall(KSPBuildResidual(ksp, NULL, NULL, &r));
  PetscCall(VecNorm(r, NORM_2, &tn));
  PetscCall(VecDestroy(&r));
  PetscCall(KSPGetRhs(ksp, &b));
  PetscCall(VecNorm(b, NORM_2, &bn));
  if (!(PetscAbsReal(tn - rnorm) <= 1e-6 * rnorm + TrueResidualBtol * bn + 1e-12)) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: MISMATCH iterate %" PetscInt_FMT ": ||b - A x_i|| = %.10e, the KSP's norm %.10e\n", it, (double)tn, (double)rnorm));
  (*checked)++;
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  monitor_checked = 0;
  PetscBool true_residual_monitor = PETSC_FALSE;
  HostTest host_test = {0, 0, 0, -1, 0, KSP_CONVERGED_ITERATING, NULL};
  PetscInt           n = 12, dim = 3, dof = 1, solves = 1, new_pattern_at = 0, empty_rank = -1, recreate_every = 0, its, N;
  PetscReal          conv = 0.3, rnorm, tnorm, bnorm, enorm, xnorm, xenorm, pmat_shift = 0;
  PetscBool          use_dm = PETSC_TRUE, x0 = PETSC_FALSE, shell_amat = PETSC_FALSE, mffd_amat = PETSC_FALSE, neumann = PETSC_FALSE;
  Mat                S = NULL, P = NULL;
  DM                 da = NULL;
  Mat                A;
  Vec                x, b, xe, r;
  KSP                ksp;
  KSPType            ktype;
  KSPConvergedReason reason;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-dim", &dim, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-dof", &dof, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-solves", &solves, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-new_pattern_at", &new_pattern_at, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-recreate_mat_every", &recreate_every, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-convection", &conv, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-use_dm", &use_dm, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-x0", &x0, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-permute", &Permute, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-empty_rank", &empty_rank, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-shell_amat", &shell_amat, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-pmat_shift", &pmat_shift, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-mffd_amat", &mffd_amat, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-neumann", &neumann, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-host_test", &host_test.mode, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-true_residual_monitor", &true_residual_monitor, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-true_residual_monitor_btol", &TrueResidualBtol, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-host_test_stop", &host_test.stop_at, NULL));
  PetscCheck(!neumann || dof == 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "-neumann needs -dof 1");
  PetscCheck(!(shell_amat && mffd_amat), PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "-shell_amat or -mffd_amat, not both");
  PetscCheck(recreate_every <= 0 || (use_dm && pmat_shift == 0 && !shell_amat && !mffd_amat), PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "-recreate_mat_every needs -use_dm 1 and no -pmat_shift, -shell_amat, -mffd_amat");
  PetscCheck(empty_rank < 0 || !use_dm, PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "-empty_rank needs -use_dm 0");
  PetscCheck(!Permute || !use_dm, PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "-permute needs -use_dm 0");
  if (Permute) PetscCall(MakePermutation(n * n * (dim == 3 ? n : 1)));
  PetscCheck(dim == 2 || dim == 3, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-dim 2 or 3");

  if (use_dm) {
    if (dim == 3) PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, n, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, NULL, &da));
    else PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, &da));
    PetscCall(DMSetFromOptions(da));
    PetscCall(DMSetUp(da));
    PetscCall(DMCreateMatrix(da, &A));
    /* Assemble numbers the cells naturally and maps them to PETSc's numbering through the DMDA's AO */
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_LOCATION_ERR, PETSC_FALSE));
  } else {
    N = dof * n * n * (dim == 3 ? n : 1);
    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    if (empty_rank >= 0) { /* rank empty_rank owns nothing; the others split the cells */
      PetscMPIInt rank, size;
      PetscInt    cells = N / dof, others, k, mine;
      PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
      PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
      PetscCheck(size >= 2 && empty_rank < size, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-empty_rank needs at least 2 ranks and a rank below their number");
      others = size - 1;
      k      = rank < empty_rank ? rank : rank - 1; /* index among the ranks that own rows */
      mine   = rank == empty_rank ? 0 : cells / others + (k < cells % others ? 1 : 0);
      PetscCall(MatSetSizes(A, dof * mine, dof * mine, N, N));
    } else PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, N, N));
    PetscCall(MatSetBlockSize(A, dof));
    PetscCall(MatSetFromOptions(A));
    PetscCall(MatXAIJSetPreallocation(A, dof, NULL, NULL, NULL, NULL));
    PetscCall(MatSeqAIJSetPreallocation(A, 8 * dof, NULL));
    PetscCall(MatSeqBAIJSetPreallocation(A, dof, 8, NULL));
    PetscCall(MatMPIAIJSetPreallocation(A, 8 * dof, NULL, 8 * dof, NULL));
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetUp(A));
  }
  { /* -mat_type sbaij (symmetric storage: use -convection 0 -dof 1): the upper triangle is kept */
    PetscBool sbaij;
    PetscCall(PetscObjectTypeCompareAny((PetscObject)A, &sbaij, MATSEQSBAIJ, MATMPISBAIJ, ""));
    if (sbaij) PetscCall(MatSetOption(A, MAT_IGNORE_LOWER_TRIANGULAR, PETSC_TRUE));
  }
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &xe));
  PetscCall(VecDuplicate(x, &r));
  PetscCall(VecGetSize(x, &N));
  {
    PetscInt     lo, hi;
    PetscScalar *v;
    PetscCall(VecGetOwnershipRange(xe, &lo, &hi));
    PetscCall(VecGetArray(xe, &v));
    for (PetscInt i = lo; i < hi; i++) v[i - lo] = 1.0 + 0.5 * PetscSinReal(0.37 * (PetscReal)i) + 0.001 * (PetscReal)(i % 97);
    PetscCall(VecRestoreArray(xe, &v));
  }
  if (neumann) { /* x_exact with zero mean: no component in A's null space; the null space attached */
    PetscScalar  sum;
    MatNullSpace nsp;
    PetscCall(VecSum(xe, &sum));
    PetscCall(VecShift(xe, -sum / (PetscScalar)N));
    PetscCall(MatNullSpaceCreate(PETSC_COMM_WORLD, PETSC_TRUE, 0, NULL, &nsp));
    PetscCall(MatSetNullSpace(A, nsp));
    PetscCall(MatNullSpaceDestroy(&nsp));
  }

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  { /* -prefix p: the KSP's options prefix, as a host's (e.g. -prefix flow_: -flow_ksp_type ...) */
    char      prefix[64];
    PetscBool flg;
    PetscCall(PetscOptionsGetString(NULL, NULL, "-prefix", prefix, sizeof(prefix), &flg));
    if (flg) PetscCall(KSPSetOptionsPrefix(ksp, prefix));
  }
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 2000));
  if (true_residual_monitor) PetscCall(KSPMonitorSet(ksp, TrueResidualMonitor, &monitor_checked, NULL));
  if (host_test.mode) {
    if (host_test.mode == 2) PetscCall(KSPConvergedDefaultCreate(&host_test.dctx));
    PetscCall(KSPSetConvergenceTest(ksp, HostConverged, &host_test, NULL));
  }
  for (PetscInt s = 1; s <= solves; s++) {
    const PetscReal scale = 1.0 + 0.1 * (PetscReal)(s - 1);
    double          t0, t1;
    if (recreate_every > 0 && s > 1 && (s - 1) % recreate_every == 0) {
      /* a host that makes a new matrix of the same pattern: the KSP let go of the old one first,
         so the new one's arrays may land where the old one's were */
      PetscCall(KSPReset(ksp));
      PetscCall(MatDestroy(&A));
      PetscCall(DMCreateMatrix(da, &A));
      PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
      PetscCall(MatSetOption(A, MAT_NEW_NONZERO_LOCATION_ERR, PETSC_FALSE));
    }
    PetscCall(Assemble(A, da, n, dim, dof, conv, scale, (PetscBool)(new_pattern_at > 0 && s >= new_pattern_at), neumann));
    PetscCall(MatMult(A, xe, b));
    if (pmat_shift != 0) { /* Pmat: A + shift I, the same object each solve (new values, or a new pattern) */
      if (!P) {
        PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &P));
        if (da) PetscCall(MatSetDM(P, da));
      } else PetscCall(MatCopy(A, P, new_pattern_at > 0 && s == new_pattern_at ? DIFFERENT_NONZERO_PATTERN : SAME_NONZERO_PATTERN));
      PetscCall(MatShift(P, pmat_shift));
    }
    if (mffd_amat) { /* Amat: PETSc's matrix-free differencing of F(x) = A x (made once; its base point set each solve) */
      if (!S) {
        PetscInt m, nloc;
        PetscCall(MatGetLocalSize(A, &m, &nloc));
        PetscCall(MatCreateMFFD(PETSC_COMM_WORLD, m, nloc, N, N, &S));
        PetscCall(MatMFFDSetFunction(S, LinearFunction, (void *)A));
      }
      PetscCall(MatMFFDSetBase(S, xe, NULL));
      PetscCall(MatAssemblyBegin(S, MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(S, MAT_FINAL_ASSEMBLY));
      PetscCall(KSPSetOperators(ksp, S, P ? P : A));
    } else if (shell_amat) { /* Amat: a shell with A's product (made once), Pmat: A (or P) */
      if (!S) {
        PetscInt m, nloc;
        PetscCall(MatGetLocalSize(A, &m, &nloc));
        PetscCall(MatCreateShell(PETSC_COMM_WORLD, m, nloc, N, N, (void *)A, &S));
        PetscCall(MatShellSetOperation(S, MATOP_MULT, (void (*)(void))ShellMult));
      }
      PetscCall(KSPSetOperators(ksp, S, P ? P : A));
    } else PetscCall(KSPSetOperators(ksp, A, P ? P : A));
    PetscCall(KSPSetFromOptions(ksp));
    if (x0) {
      PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_TRUE));
      PetscCall(VecCopy(xe, x));
      PetscCall(VecScale(x, 0.9));
      if (neumann) PetscCall(VecShift(x, 1.0)); /* a constant the solve keeps: the answer is x_exact + 1 */
    } else PetscCall(VecSet(x, 0.0));
    host_test.calls = 0;
    host_test.last  = -1;
    host_test.said  = KSP_CONVERGED_ITERATING;
    t0              = MPI_Wtime();
    PetscCall(KSPSolve(ksp, b, x));
    t1 = MPI_Wtime();
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(KSPGetResidualNorm(ksp, &rnorm));
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    if (true_residual_monitor) {
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: true-residual monitor checked %" PetscInt_FMT " iterates\n", monitor_checked));
      if (monitor_checked != its + 1) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: MISMATCH the monitor saw %" PetscInt_FMT " iterates of %" PetscInt_FMT " iterations\n", monitor_checked, its));
      monitor_checked = 0;
    }
    if (host_test.mode) { /* called once per iteration 0..its, and the solve stopped where it said (or at -ksp_max_it) */
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: convergence test called %" PetscInt_FMT " times, last at iteration %" PetscInt_FMT ", said %s\n", host_test.calls, host_test.last, KSPConvergedReasons[host_test.said]));
      if (host_test.calls != its + 1 || host_test.last != its || (host_test.said != KSP_CONVERGED_ITERATING && host_test.said != reason))
        PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: MISMATCH the convergence test was called %" PetscInt_FMT " times (last at %" PetscInt_FMT ", said %s) for %" PetscInt_FMT " iterations ending %s\n", host_test.calls, host_test.last, KSPConvergedReasons[host_test.said], its, KSPConvergedReasons[reason]));
    }
    PetscCall(MatMult(A, x, r));
    PetscCall(VecAYPX(r, -1.0, b));
    PetscCall(VecNorm(r, NORM_2, &tnorm));
    PetscCall(VecNorm(b, NORM_2, &bnorm));
    PetscCall(VecWAXPY(r, -1.0, xe, x));
    if (neumann && x0) PetscCall(VecShift(r, -1.0)); /* against x_exact + 1 */
    PetscCall(VecNorm(r, NORM_2, &enorm));
    PetscCall(VecNorm(xe, NORM_2, &xenorm));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: solve %" PetscInt_FMT " N=%" PetscInt_FMT " its=%" PetscInt_FMT " reason=%s rnorm=%.6e true=%.6e rel_error=%.3e time=%.4f s\n", s, N, its, KSPConvergedReasons[reason], (double)rnorm, (double)tnorm, (double)(enorm / xenorm), t1 - t0));
    /* the KSP's residual norm must be the true one up to the recursion's drift */
    if (reason > 0 && !(rnorm <= 10.0 * tnorm + 1e-12 * bnorm && tnorm <= 10.0 * rnorm + 1e-8 * bnorm)) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: MISMATCH KSPGetResidualNorm %.6e vs ||b - A x|| %.6e\n", (double)rnorm, (double)tnorm));
  }
  PetscCall(KSPGetType(ksp, &ktype));
  PetscCall(VecNorm(x, NORM_2, &xnorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host: ksp=%s solution norm = %.12e\n", ktype, (double)xnorm));

  PetscCall(KSPDestroy(&ksp));
#if PETSC_VERSION_GE(3, 23, 0) /* PetscCtxDestroyFn: void ** since 3.23 */
  if (host_test.dctx) PetscCall(KSPConvergedDefaultDestroy(&host_test.dctx));
#else
  if (host_test.dctx) PetscCall(KSPConvergedDefaultDestroy(host_test.dctx));
#endif
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&xe));
  PetscCall(VecDestroy(&r));
  PetscCall(MatDestroy(&S));
  PetscCall(MatDestroy(&P));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFree(Perm));
  PetscCall(PetscFinalize());
  return 0;
}
