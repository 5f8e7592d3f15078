// What the plugin's KSP and Mat types share: borrowing CSR from PETSc, the grid hint from the
// options database or a DMDA, option values.
#include "plugin/petsc_common.hpp"

#include <cstring>

const char *const HeptaneFormats[]     = {"auto", "csr", "bdiagh", "ell", "hyb", "dia", "bsr", "coo"};
const PetscInt    HeptaneNumFormats    = 8;
const char *const HeptanePrecisions[]  = {"double", "single", "mixed"};
const PetscInt    HeptaneNumPrecisions = 3;

PetscErrorCode HeptaneCSRGet(Mat A, HeptaneCSR *csr)
{
  PetscBool done;

  PetscFunctionBegin;
  csr->mat = A;
  PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &csr->n, &csr->ia, &csr->ja, &done));
  PetscCheck(done, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "heptane: MatGetRowIJ() gave no CSR for matrix type %s", ((PetscObject)A)->type_name);
  PetscCall(MatSeqAIJGetArrayRead(A, &csr->a));
  csr->view.rows   = (heptane::index_t)csr->n;
  csr->view.values = csr->a;
  if (sizeof(PetscInt) == sizeof(heptane::index_t)) {
    csr->view.row_ptr = reinterpret_cast<const heptane::index_t *>(csr->ia);
    csr->view.col_idx = reinterpret_cast<const heptane::index_t *>(csr->ja);
  } else { /* 64-bit PetscInt: heptane's indices are 32-bit, copy them */
    PetscCheck(csr->n < 2147483647 && csr->ia[csr->n] < 2147483647, PETSC_COMM_SELF, PETSC_ERR_SUP, "heptane: %" PetscInt_FMT " entries do not fit 32-bit indices", csr->ia[csr->n]);
    HeptaneCallCXX(csr->ia32.assign(csr->ia, csr->ia + csr->n + 1); csr->ja32.assign(csr->ja, csr->ja + csr->ia[csr->n]));
    csr->view.row_ptr = csr->ia32.data();
    csr->view.col_idx = csr->ja32.data();
  }
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneCSRRestore(HeptaneCSR *csr)
{
  PetscBool done;

  PetscFunctionBegin;
  if (!csr->mat) PetscFunctionReturn(0);
  PetscCall(MatSeqAIJRestoreArrayRead(csr->mat, &csr->a));
  PetscCall(MatRestoreRowIJ(csr->mat, 0, PETSC_FALSE, PETSC_FALSE, &csr->n, &csr->ia, &csr->ja, &done));
  csr->mat = NULL;
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneGridHintFromOptions(PetscOptions options, const char prefix[], heptane::plugin::GridHint *hint, PetscBool *found)
{
  PetscInt  grid[3] = {1, 1, 1}, n = 3, nc = 0;
  PetscBool gflg, bflg;

  PetscFunctionBegin;
  *found = PETSC_FALSE;
  PetscCall(PetscOptionsGetIntArray(options, prefix, "-heptane_grid", grid, &n, &gflg));
  PetscCall(PetscOptionsGetInt(options, prefix, "-heptane_block", &nc, &bflg));
  if (bflg) {
    PetscCheck(nc >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-heptane_block %" PetscInt_FMT ": the block size must be >= 1", nc);
    hint->block_size = (heptane::index_t)nc;
    hint->source     = "-heptane_block";
    *found           = PETSC_TRUE;
  }
  if (gflg) {
    PetscCheck(n >= 1 && n <= 3, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "-heptane_grid takes J[,H[,I]] (1 to 3 values), got %" PetscInt_FMT, n);
    for (PetscInt i = n; i < 3; i++) grid[i] = 1;
    for (PetscInt i = 0; i < 3; i++) PetscCheck(grid[i] >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-heptane_grid %" PetscInt_FMT ",%" PetscInt_FMT ",%" PetscInt_FMT ": every extent must be >= 1", grid[0], grid[1], grid[2]);
    for (int i = 0; i < 3; i++) hint->grid[i] = (heptane::index_t)grid[i];
    if (!bflg) hint->block_size = 1;
    hint->star_stencil = true;
    hint->source       = bflg ? "-heptane_grid/-heptane_block" : "-heptane_grid";
    *found             = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneGridHintFromDM(DM dm, heptane::plugin::GridHint *hint, PetscBool *found)
{
  PetscBool       isda;
  PetscInt        dim, M, N, P, dof, s;
  DMBoundaryType  bx, by, bz;
  DMDAStencilType st;

  PetscFunctionBegin;
  *found = PETSC_FALSE;
  if (!dm) PetscFunctionReturn(0);
  PetscCall(PetscObjectTypeCompare((PetscObject)dm, DMDA, &isda));
  if (!isda) PetscFunctionReturn(0);
  PetscCall(DMDAGetInfo(dm, &dim, &M, &N, &P, NULL, NULL, NULL, &dof, &s, &bx, &by, &bz, &st));
  /* DMDA natural ordering on one rank: ((k*N + j)*M + i)*dof + c, x fastest: GH's J x H x I */
  hint->grid[0]    = (heptane::index_t)M;
  hint->grid[1]    = (heptane::index_t)(dim > 1 ? N : 1);
  hint->grid[2]    = (heptane::index_t)(dim > 2 ? P : 1);
  hint->block_size = (heptane::index_t)dof;
  /* the block offsets follow from the grid for a star stencil of width 1 without wrap-around */
  hint->star_stencil = st == DMDA_STENCIL_STAR && s == 1 && bx != DM_BOUNDARY_PERIODIC && by != DM_BOUNDARY_PERIODIC && bz != DM_BOUNDARY_PERIODIC;
  hint->source       = "DMDA";
  *found             = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneCheckDevice(const char device[])
{
  PetscBool ok = PETSC_FALSE;

  PetscFunctionBegin;
  if (!strcmp(device, "auto") || !strcmp(device, "cpu") || !strcmp(device, "gpu") || !strcmp(device, "cuda")) ok = PETSC_TRUE;
  else if (!strncmp(device, "gpu:", 4) || !strncmp(device, "cuda:", 5)) {
    const char *num = strchr(device, ':') + 1;
    ok              = (PetscBool)(*num != 0);
    for (const char *c = num; *c; c++)
      if (*c < '0' || *c > '9') ok = PETSC_FALSE;
  }
  PetscCheck(ok, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "-heptane_device %s: choose auto, cpu, gpu, gpu:N (cuda, cuda:N are accepted too)", device);
  PetscFunctionReturn(0);
}
