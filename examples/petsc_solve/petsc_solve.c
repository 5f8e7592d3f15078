/* petsc_solve: solve A x = b read from PETSc binary files, with whatever KSP and PC the options
   name. The way a PETSc user tries a solver on a system dumped from a simulator
   (-ksp_view_mat binary -ksp_view_rhs binary write both into one file, "binaryoutput") or
   written by `heptane gen -o A.petsc --rhs b.petsc`. It knows nothing of heptane: heptane's
   solvers enter at run time, -dll_append libheptane_petsc.so -ksp_type hcg -pc_type hamg.

   Options: -f FILE       the matrix (and b, when the file holds a vector after it)
            -rhs FILE     b (default: the vector after the matrix in -f, else b = A 1)
            -solves N     N solves of the same system (default 1), each with a new KSP, so
                          each is a time to solution: KSPSetUp (the PC's setup) + KSPSolve
            -quiet        only the summary lines
   Matrix and vector types come from the options (MatSetFromOptions before MatLoad:
   -mat_type aijcusparse -vec_type cuda for PETSc's own GPU path). Every solve prints
     loaded: solve K its N residual R REASON setup S s solve T s time U s true relres E
   (true relres: ||b - A x|| / ||b|| with PETSc's MatMult in double), then one line with the
   best time of the run and ||x||_2 (compared between runs by tests/plugin_compare.py). */
#include <petscksp.h>

static char help[] = "Solves A x = b from PETSc binary files with the KSP/PC the options name.\n"
                     "  -f FILE -rhs FILE -solves N -quiet\n";

int main(int argc, char **argv)
{
  char               file[PETSC_MAX_PATH_LEN] = "", rhsfile[PETSC_MAX_PATH_LEN] = "";
  PetscBool          has_f, has_rhs, quiet = PETSC_FALSE, from_f = PETSC_FALSE;
  PetscInt           solves = 1, m, n, k;
  PetscViewer        fd;
  Mat                A;
  Vec                b, x, r;
  PetscReal          bnorm, xnorm = 0, best = 1e300, worst_relres = 0;
  PetscErrorCode     ierr;
  MatInfo            info;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-f", file, sizeof(file), &has_f));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-rhs", rhsfile, sizeof(rhsfile), &has_rhs));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-solves", &solves, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-quiet", &quiet, NULL));
  PetscCheck(has_f, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "give the matrix file with -f FILE");
  PetscCheck(solves >= 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-solves must be at least 1");

  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &fd));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetFromOptions(A));
  PetscCall(MatLoad(A, fd));
  PetscCall(MatGetSize(A, &m, &n));
  PetscCheck(m == n, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "A is %" PetscInt_FMT " x %" PetscInt_FMT ": a square matrix is needed", m, n);
  PetscCall(MatCreateVecs(A, &x, &b));
  if (has_rhs) {
    PetscViewer fr;
    PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, rhsfile, FILE_MODE_READ, &fr));
    PetscCall(VecLoad(b, fr));
    PetscCall(PetscViewerDestroy(&fr));
  } else {
    /* a vector after the matrix, if the file holds one (reading past its end is an error,
       caught here) */
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = VecLoad(b, fd);
    PetscCall(PetscPopErrorHandler());
    from_f = ierr ? PETSC_FALSE : PETSC_TRUE;
    if (!from_f) {
      PetscCall(VecSet(x, 1.0));
      PetscCall(MatMult(A, x, b));
    }
  }
  PetscCall(PetscViewerDestroy(&fd));
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &info));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "loaded: %s: %" PetscInt_FMT " x %" PetscInt_FMT ", %.0f nonzeros; b %s\n", file, m, n, (double)info.nz_used, has_rhs ? rhsfile : (from_f ? "from the vector after the matrix" : "= A 1")));
  PetscCall(VecDuplicate(b, &r));

  for (k = 1; k <= solves; ++k) {
    KSP                ksp;
    PetscInt           its;
    PetscReal          rnorm, tnorm, relres;
    PetscLogDouble     t0, t1, t2;
    KSPConvergedReason reason;

    PetscCall(VecSet(x, 0.0));
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(KSPSetFromOptions(ksp));
    PetscCall(PetscBarrier((PetscObject)ksp));
    PetscCall(PetscTime(&t0));
    PetscCall(KSPSetUp(ksp));
    PetscCall(PetscTime(&t1));
    PetscCall(KSPSolve(ksp, b, x));
    PetscCall(PetscBarrier((PetscObject)ksp));
    PetscCall(PetscTime(&t2));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(KSPGetResidualNorm(ksp, &rnorm));
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(MatMult(A, x, r));
    PetscCall(VecAYPX(r, -1.0, b)); /* r = b - A x */
    PetscCall(VecNorm(r, NORM_2, &tnorm));
    relres = bnorm > 0 ? tnorm / bnorm : tnorm;
    if (relres > worst_relres) worst_relres = relres;
    if (t2 - t0 < best) best = t2 - t0;
    if (!quiet || k == solves)
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "loaded: solve %" PetscInt_FMT " its %" PetscInt_FMT " residual %.4e %s setup %.4f s solve %.4f s time %.4f s true relres %.2e\n", k, its, (double)rnorm, KSPConvergedReasons[reason], t1 - t0, t2 - t1, t2 - t0, (double)relres));
    PetscCall(KSPDestroy(&ksp));
  }
  PetscCall(VecNorm(x, NORM_2, &xnorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "loaded: best time %.4f s of %" PetscInt_FMT ", worst true relres %.2e, |x|_2 = %.13e\n", best, solves, (double)worst_relres, (double)xnorm));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}
