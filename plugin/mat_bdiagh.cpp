/*
   MATBDIAGH ("bdiagh"): a SeqAIJ matrix that also keeps a BDIA-GH copy for heptane. On
   several MPI ranks it is an MPIAIJ matrix under the name bdiagh and nothing more (the KSP
   types build heptane's distributed operator from the rows of any parallel matrix).

   Built like MatCreate_SeqAIJCUSPARSE builds on SeqAIJ: MatCreate_BDIAGH() makes the matrix
   AIJ, then MatConvert_SeqAIJ_BDIAGH() renames the type and overrides only MatAssemblyEnd
   (plus destroy and view to manage the copy). Preallocation, MatSetValues, MatZeroEntries,
   MatMult and every other operation are SeqAIJ's, so a simulator assembles it exactly like
   AIJ (-mat_type bdiagh, or -dm_mat_type bdiagh for DMCreateMatrix).

   At MAT_FINAL_ASSEMBLY the copy is brought up to date: when the nonzero state
   (MatGetNonzeroState) changed since the copy was built, the structure is found again (from
   the DMDA of the matrix, -heptane_grid/-heptane_block, or detect_structure) and the BDIA-GH
   operator is rebuilt, on the GPU when one is used (-heptane_device); when only the values
   changed, they are scattered into the existing copy and uploaded. The KSP types hbcgs/hcg
   use that copy directly.
*/
#include "plugin/petsc_common.hpp"

static PetscErrorCode       MatConvert_BDIAGH_SeqAIJ(Mat, MatType, MatReuse, Mat *);
PETSC_INTERN PetscErrorCode MatConvert_SeqAIJ_BDIAGH(Mat, MatType, MatReuse, Mat *);

/* -heptane_device and -heptane_precision with the matrix's prefix, unless a KSP fixed them. */
static PetscErrorCode MatBDIAGHReadOptions_Private(Mat A, Mat_BDIAGH *b)
{
  char      device[64];
  PetscInt  idx;
  PetscBool flg;

  PetscFunctionBegin;
  if (b->cfg_locked) PetscFunctionReturn(0);
  PetscCall(PetscOptionsGetString(((PetscObject)A)->options, ((PetscObject)A)->prefix, "-heptane_device", device, sizeof(device), &flg));
  if (flg) {
    PetscCall(HeptaneCheckDevice(device));
    HeptaneCallCXX(b->cfg.device = device);
  }
  PetscCall(PetscOptionsGetEList(((PetscObject)A)->options, ((PetscObject)A)->prefix, "-heptane_precision", HeptanePrecisions, HeptaneNumPrecisions, &idx, &flg));
  if (flg) b->cfg.precision = idx == 0 ? heptane::Precision::double_ : (idx == 1 ? heptane::Precision::single : heptane::Precision::mixed);
  PetscFunctionReturn(0);
}

/* Bring the BDIA-GH copy up to date. in_assembly: called from MatAssemblyEnd_BDIAGH, after
   which MatAssemblyEnd() increases the object state once more (src/mat/interface/matrix.c),
   so the state the copy will match is the current one + 1. */
static PetscErrorCode MatBDIAGHUpdate_Private(Mat A, PetscBool force_build, PetscBool in_assembly, PetscInt *updated)
{
  Mat_BDIAGH               *b = (Mat_BDIAGH *)A->spptr;
  PetscObjectState          nz, st;
  PetscBool                 build, found = PETSC_FALSE;
  HeptaneCSR                csr = {};
  heptane::plugin::GridHint hint;
  DM                        dm;

  PetscFunctionBegin;
  *updated = 0;
  PetscCall(MatGetNonzeroState(A, &nz));
  PetscCall(PetscObjectStateGet((PetscObject)A, &st));
  if (in_assembly) st++;
  build = (PetscBool)(force_build || !b->engine->built() || nz != b->nzstate);
  if (!build && st == b->state) PetscFunctionReturn(0);
  if (A->rmap->N == 0) PetscFunctionReturn(0);
  PetscCheck(A->rmap->N == A->cmap->N, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Mat type bdiagh: the matrix is %" PetscInt_FMT " x %" PetscInt_FMT ", BDIA-GH needs a square matrix", A->rmap->N, A->cmap->N);
  PetscCall(HeptaneCSRGet(A, &csr));
  if (build) {
    PetscCall(HeptaneGridHintFromOptions(((PetscObject)A)->options, ((PetscObject)A)->prefix, &hint, &found));
    if (!found || !hint.has_grid()) {
      heptane::index_t nc = hint.block_size;
      PetscCall(MatGetDM(A, &dm));
      PetscCall(HeptaneGridHintFromDM(dm, &hint, &found));
      if (nc > 0 && !found) hint.block_size = nc;
    }
    HeptaneCallCXX(b->engine->build(csr.view, hint, b->cfg));
    PetscCall(PetscInfo(A, "bdiagh: built %s; %s; %.3f ms (detection %.3f ms)\n", b->engine->describe().c_str(), b->engine->structure_note().c_str(), b->engine->timings().last_build_ms, b->engine->timings().last_detect_ms));
    *updated = 2;
  } else {
    HeptaneCallCXX(b->engine->refresh_values(csr.view));
    PetscCall(PetscInfo(A, "bdiagh: values refreshed (%s), %.3f ms\n", b->engine->refresh_note().c_str(), b->engine->timings().last_refresh_ms));
    *updated = 1;
  }
  PetscCall(HeptaneCSRRestore(&csr));
  b->nzstate = nz;
  b->state   = st;
  PetscFunctionReturn(0);
}

PetscErrorCode MatBDIAGHGetEngine(Mat A, const heptane::plugin::MatrixConfig *want, heptane::plugin::MatrixEngine **engine, PetscInt *updated)
{
  Mat_BDIAGH *b;
  PetscBool   is, reconfigure = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATBDIAGH, &is));
  PetscCheck(is, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "matrix type %s is not %s", ((PetscObject)A)->type_name, MATBDIAGH);
  b = (Mat_BDIAGH *)A->spptr;
  PetscCheck(b, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "a bdiagh matrix on several ranks keeps no BDIA-GH copy (it is an MPIAIJ matrix; the KSP builds the distributed operator)");
  if (want && (want->device != b->cfg.device || want->precision != b->cfg.precision)) {
    HeptaneCallCXX(b->cfg.device = want->device);
    b->cfg.precision = want->precision;
    b->cfg_locked    = PETSC_TRUE;
    reconfigure      = PETSC_TRUE;
  }
  PetscCall(MatBDIAGHUpdate_Private(A, reconfigure, PETSC_FALSE, updated));
  *engine = b->engine;
  PetscFunctionReturn(0);
}

static PetscErrorCode MatAssemblyEnd_BDIAGH(Mat A, MatAssemblyType mode)
{
  Mat_BDIAGH *b = (Mat_BDIAGH *)A->spptr;
  PetscInt    updated;

  PetscFunctionBegin;
  PetscCall((*b->assemblyend)(A, mode));
  if (mode == MAT_FLUSH_ASSEMBLY) PetscFunctionReturn(0);
  PetscCall(MatBDIAGHReadOptions_Private(A, b));
  PetscCall(MatBDIAGHUpdate_Private(A, PETSC_FALSE, PETSC_TRUE, &updated));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatView_BDIAGH(Mat A, PetscViewer viewer)
{
  Mat_BDIAGH       *b = (Mat_BDIAGH *)A->spptr;
  PetscBool         isascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  if (b->view) PetscCall((*b->view)(A, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL) {
    if (b->engine->built()) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "BDIA-GH copy: %s\n", b->engine->describe().c_str()));
      PetscCall(PetscViewerASCIIPrintf(viewer, "  structure: %s\n", b->engine->structure_note().c_str()));
      PetscCall(PetscViewerASCIIPrintf(viewer, "  %d build(s), %d values-only refresh(es)\n", b->engine->timings().builds, b->engine->timings().refreshes));
    } else PetscCall(PetscViewerASCIIPrintf(viewer, "BDIA-GH copy: not built yet (built at the final assembly)\n"));
  }
  PetscFunctionReturn(0);
}

/* Undo the bdiagh layer: back to a plain SeqAIJ (the ops saved at conversion). */
static PetscErrorCode MatBDIAGHStrip_Private(Mat A)
{
  Mat_BDIAGH *b = (Mat_BDIAGH *)A->spptr;

  PetscFunctionBegin;
  A->ops->assemblyend = b->assemblyend;
  A->ops->destroy     = b->destroy;
  A->ops->view        = b->view;
  delete b->engine;
  delete b;
  A->spptr = NULL;
  PetscCall(PetscObjectComposeFunction((PetscObject)A, "MatConvert_bdiagh_seqaij_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)A, "MatConvert_seqaij_bdiagh_C", NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatDestroy_BDIAGH(Mat A)
{
  PetscFunctionBegin;
  PetscCall(MatBDIAGHStrip_Private(A));
  PetscCall((*A->ops->destroy)(A)); /* SeqAIJ's */
  PetscFunctionReturn(0);
}

/* MatConvert's reuse modes, shared by both directions: REUSE copies the values into *newmat
   (*B stays NULL: nothing more to do); INITIAL duplicates A into *newmat; INPLACE converts A
   itself. *B: the matrix to convert. */
static PetscErrorCode MatConvertTarget_Private(Mat A, MatReuse reuse, Mat *newmat, Mat *B)
{
  PetscFunctionBegin;
  *B = NULL;
  if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatCopy(A, *newmat, SAME_NONZERO_PATTERN));
    PetscFunctionReturn(0);
  }
  if (reuse == MAT_INITIAL_MATRIX) PetscCall(MatDuplicate(A, MAT_COPY_VALUES, newmat));
  *B = reuse == MAT_INPLACE_MATRIX ? A : *newmat;
  PetscFunctionReturn(0);
}

static PetscErrorCode MatConvert_BDIAGH_SeqAIJ(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat B;

  PetscFunctionBegin;
  PetscCall(MatConvertTarget_Private(A, reuse, newmat, &B));
  if (!B) PetscFunctionReturn(0);
  PetscCall(MatBDIAGHStrip_Private(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJ));
  PetscFunctionReturn(0);
}

PetscErrorCode MatConvert_SeqAIJ_BDIAGH(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat         B;
  Mat_BDIAGH *b;
  PetscInt    updated;

  PetscFunctionBegin;
  PetscCall(MatConvertTarget_Private(A, reuse, newmat, &B));
  if (!B) PetscFunctionReturn(0);

  b = new (std::nothrow) Mat_BDIAGH();
  PetscCheck(b, PETSC_COMM_SELF, PETSC_ERR_MEM, "bdiagh: out of memory");
  b->engine = new (std::nothrow) heptane::plugin::MatrixEngine();
  PetscCheck(b->engine, PETSC_COMM_SELF, PETSC_ERR_MEM, "bdiagh: out of memory");
  HeptaneCallCXX(b->cfg.format = "bdiagh");
  b->nzstate          = -1;
  b->state            = -1;
  b->assemblyend      = B->ops->assemblyend;
  b->destroy          = B->ops->destroy;
  b->view             = B->ops->view;
  B->spptr            = b;
  B->ops->assemblyend = MatAssemblyEnd_BDIAGH;
  B->ops->destroy     = MatDestroy_BDIAGH;
  B->ops->view        = MatView_BDIAGH;
  PetscCall(PetscObjectComposeFunction((PetscObject)B, "MatConvert_bdiagh_seqaij_C", MatConvert_BDIAGH_SeqAIJ));
  PetscCall(PetscObjectComposeFunction((PetscObject)B, "MatConvert_seqaij_bdiagh_C", MatConvert_SeqAIJ_BDIAGH));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATBDIAGH));
  if (B->assembled) {
    PetscCall(MatBDIAGHReadOptions_Private(B, b));
    PetscCall(MatBDIAGHUpdate_Private(B, PETSC_TRUE, PETSC_FALSE, &updated));
  }
  PetscFunctionReturn(0);
}

/* PETSc's own LU/ILU of SeqAIJ for a bdiagh matrix: the factorizations read A through SeqAIJ's
   data, which bdiagh keeps, so they are looked up under the base type's name. With this,
   PETSc's KSPs and PCs work on bdiagh as on AIJ, and PETSc's default PC for it is ILU, as for
   AIJ (PCGetDefaultType_Private asks for an ILU factorization). */
static PetscErrorCode MatGetFactor_BDIAGH_PETSc(Mat A, MatFactorType ftype, Mat *F)
{
  PetscErrorCode ierr;
  PetscMPIInt    size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, size > 1 ? MATMPIAIJ : MATSEQAIJ));
  ierr = MatGetFactor(A, MATSOLVERPETSC, ftype, F);
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATBDIAGH));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

PetscErrorCode MatBDIAGHRegisterFactors(void)
{
  PetscFunctionBegin;
  PetscCall(MatSolverTypeRegister(MATSOLVERPETSC, MATBDIAGH, MAT_FACTOR_LU, MatGetFactor_BDIAGH_PETSc));
  PetscCall(MatSolverTypeRegister(MATSOLVERPETSC, MATBDIAGH, MAT_FACTOR_ILU, MatGetFactor_BDIAGH_PETSc));
  PetscFunctionReturn(0);
}

/*MC
   MATBDIAGH - "bdiagh": a SeqAIJ matrix that keeps a BDIA-GH copy (heptane) for the KSP types
   hbcgs and hcg. On several MPI ranks it is an MPIAIJ matrix by another name, without a copy
   of its own: hbcgs/hcg build heptane's distributed operator from its rows at KSPSetUp.

   Options Database Keys:
+  -mat_type bdiagh - select it (-dm_mat_type bdiagh for DMCreateMatrix())
.  -heptane_device <auto,cpu,gpu,gpu:N> - where the copy lives (default auto: the GPU where the measured model of heptane solve --device auto says it wins for the matrix's stored entries, else the CPU)
.  -heptane_precision <double,single,mixed> - its value precision (default double)
-  -heptane_grid J,H,I -heptane_block Nc - the grid when the matrix has no DMDA (else detected)
M*/
PetscErrorCode MatCreate_BDIAGH(Mat A)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  PetscCall(MatSetType(A, MATAIJ));
  if (size > 1) {
    /* several ranks: an MPIAIJ matrix by another name that keeps no copy; hbcgs/hcg build
       heptane's distributed BDIA-GH operator from its rows at KSPSetUp, as for MPIAIJ */
    PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATBDIAGH));
    PetscFunctionReturn(0);
  }
  PetscCall(MatConvert_SeqAIJ_BDIAGH(A, MATBDIAGH, MAT_INPLACE_MATRIX, &A));
  PetscFunctionReturn(0);
}
