// What the plugin's KSP and Mat types share: borrowing CSR from PETSc, the grid hint from the
// options database or a DMDA, option values.
#include "plugin/petsc_common.hpp"

#include <cstring>
#include <sstream>
#include <vector>

#include "core/executor.hpp"
#include "formats/format.hpp"
#include "formats/values_kernels.hpp"

// "auto" and the registry's formats (formats/format.hpp), for PetscOptionsEList
static const std::vector<const char *> &format_names()
{
  static const std::vector<const char *> names = [] {
    std::vector<const char *> v{"auto"};
    for (const heptane::FormatInfo &i : heptane::format_table()) v.push_back(i.name);
    return v;
  }();
  return names;
}
const char *const *const HeptaneFormats              = format_names().data();
const PetscInt           HeptaneNumFormats           = (PetscInt)format_names().size();
const char *const        HeptanePrecisions[]         = {"double", "single", "mixed"};
const char *const        HeptaneCoarseSolves[]       = {"auto", "dense", "amg"};
const char *const        HeptaneCoarseAggregations[] = {"bfs", "strength"};
const PetscInt           HeptaneNumPrecisions        = 3;

PetscErrorCode HeptaneValuesKey(Mat A, std::uint64_t *key)
{
  PetscObjectId    id;
  PetscObjectState nz;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetId((PetscObject)A, &id));
  PetscCall(MatGetNonzeroState(A, &nz));
  *key = (std::uint64_t(id) << 32) ^ std::uint64_t(nz);
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneCSRGet(Mat A, HeptaneCSR *csr)
{
  PetscBool done;

  PetscFunctionBegin;
  csr->mat = A;
  PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &csr->n, &csr->ia, &csr->ja, &done));
  PetscCheck(done, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "heptane: MatGetRowIJ() gave no CSR for matrix type %s", ((PetscObject)A)->type_name);
  PetscCall(MatSeqAIJGetArrayRead(A, &csr->a));
  PetscCall(HeptaneValuesKey(A, &csr->values_key));
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

/* The two SeqAIJ blocks of an MPIAIJ matrix, or *Ad = NULL for another type. bdiagh on several
   ranks is an MPIAIJ matrix under another name (mat_bdiagh.cpp), which MatMPIAIJGetSeqAIJ
   checks for: it is asked under the base type's name, as MatGetFactor_BDIAGH_PETSc does. */
static PetscErrorCode HeptaneMPIAIJBlocks(Mat A, Mat *Ad, Mat *Ao, const PetscInt **garray)
{
  PetscBool      mpiaij, bdiagh;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  *Ad = *Ao = NULL;
  *garray   = NULL;
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIAIJ, &mpiaij));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATBDIAGH, &bdiagh));
  if (mpiaij) PetscCall(MatMPIAIJGetSeqAIJ(A, Ad, Ao, garray));
  else if (bdiagh) {
    PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATMPIAIJ));
    ierr = MatMPIAIJGetSeqAIJ(A, Ad, Ao, garray);
    PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATBDIAGH));
    PetscCall(ierr);
  }
  PetscFunctionReturn(0);
}

/* The scalar pattern of a BAIJ matrix, made again only for a new matrix, nonzero state or
   column map: the row pointers always, the columns when `cols` (and not made yet). Row r of
   block row ib holds row r of each of its blocks in turn, so its row pointer is
   ia[ib]*bs2 + r*(ia[ib+1]-ia[ib])*bs: every row is filled on its own (OpenMP). The source of
   each entry in the BAIJ array follows from the pointers by formula
   (kernels::block_values_to_csr); the map `src` is made only when asked for (HeptaneBAIJSrc). */
static PetscErrorCode HeptaneBAIJMap(Mat A, const PetscInt bcolmap[], HeptaneBAIJ *b, PetscBool cols)
{
  PetscObjectState nz;
  PetscObjectId    id;
  PetscInt         bs, nb, bs2;
  const PetscInt  *ia, *ja;
  PetscBool        done;
  PetscLogDouble   t0, t1;

  PetscFunctionBegin;
  PetscCall(MatGetNonzeroState(A, &nz));
  PetscCall(PetscObjectGetId((PetscObject)A, &id));
  PetscCall(MatGetBlockSize(A, &bs));
  bs2 = bs * bs;
  /* PETSc 3.18's SeqBAIJ counts no new nonzero state for a block put into room its preallocation
     left: the entries grew under the same state, so their number is compared too */
  PetscBool grew = PETSC_FALSE;
  if (!b->ptr.empty() && id == b->id && nz == b->nz) {
    MatInfo info;
    PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
    grew = (PetscBool)((PetscInt)info.nz_used != (PetscInt)b->ptr.back());
  }
  const PetscBool newp = (PetscBool)(id != b->id || nz != b->nz || bcolmap != b->bcolmap || grew);
  if (!newp && (!cols || b->has_col)) PetscFunctionReturn(0);
  PetscCall(PetscTime(&t0));
  PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_TRUE, &nb, &ia, &ja, &done));
  PetscCheck(done, PETSC_COMM_SELF, PETSC_ERR_SUP, "heptane: MatGetRowIJ() gave no block CSR for matrix type %s", ((PetscObject)A)->type_name);
  PetscCheck(ia[nb] * bs2 < 2147483647 && nb * bs < 2147483647, PETSC_COMM_SELF, PETSC_ERR_SUP, "heptane: %" PetscInt_FMT " entries do not fit 32-bit indices", ia[nb] * bs2);
  if (newp) { /* a new pattern: the row pointers */
    HeptaneCallCXX(b->ptr.resize((size_t)(nb * bs) + 1); heptane::plugin::BigVector<heptane::index_t>().swap(b->col); heptane::plugin::BigVector<heptane::index_t>().swap(b->src));
    heptane::index_t *ptr = b->ptr.data();
    ptr[nb * bs]          = (heptane::index_t)(ia[nb] * bs2);
#pragma omp parallel for schedule(static) if (nb > 4096)
    for (PetscInt ib = 0; ib < nb; ib++)
      for (PetscInt r = 0; r < bs; r++) ptr[ib * bs + r] = (heptane::index_t)(ia[ib] * bs2 + r * (ia[ib + 1] - ia[ib]) * bs);
    b->id      = id;
    b->nz      = nz;
    b->bcolmap = bcolmap;
    b->bs      = bs;
    b->state   = -1;
    b->has_col = PETSC_FALSE;
  }
  if (cols && !b->has_col) { /* the columns */
    HeptaneCallCXX(b->col.resize((size_t)(ia[nb] * bs2)));
    heptane::index_t *col = b->col.data();
#pragma omp parallel for schedule(static) if (nb > 4096)
    for (PetscInt ib = 0; ib < nb; ib++) {
      const PetscInt nk = ia[ib + 1] - ia[ib];
      for (PetscInt r = 0; r < bs; r++) {
        heptane::index_t *c = col + ia[ib] * bs2 + r * nk * bs;
        for (PetscInt k = ia[ib]; k < ia[ib + 1]; k++) {
          const PetscInt jb = bcolmap ? bcolmap[ja[k]] : ja[k];
          for (PetscInt cc = 0; cc < bs; cc++) *c++ = (heptane::index_t)(jb * bs + cc);
        }
      }
    }
    b->has_col = PETSC_TRUE;
  }
  PetscCall(MatRestoreRowIJ(A, 0, PETSC_FALSE, PETSC_TRUE, &nb, &ia, &ja, &done));
  PetscCall(PetscTime(&t1));
  PetscCall(PetscInfo(A, "heptane: the scalar pattern of a BAIJ matrix (bs %" PetscInt_FMT ", %" PetscInt_FMT " entries): %s in %.3f ms\n", bs, (PetscInt)b->ptr.back(), cols ? "row pointers and columns" : "row pointers", (t1 - t0) * 1e3));
  PetscFunctionReturn(0);
}

/* b->src (the BAIJ position of each scalar entry), for the CPU's composed maps; once per
   pattern, from the row pointers as block_values_to_csr computes it. */
static PetscErrorCode HeptaneBAIJSrc(HeptaneBAIJ *b)
{
  PetscFunctionBegin;
  const size_t nnz = (size_t)b->ptr.back();
  if (b->src.size() == nnz) PetscFunctionReturn(0);
  HeptaneCallCXX(b->src.resize(nnz));
  const heptane::index_t  bs = (heptane::index_t)b->bs, rows = (heptane::index_t)(b->ptr.size() - 1);
  const heptane::index_t *ptr = b->ptr.data();
  heptane::index_t       *src = b->src.data();
#pragma omp parallel for schedule(static) if (rows > 16384)
  for (heptane::index_t row = 0; row < rows; row++) {
    const heptane::index_t r = row % bs, blocks = (ptr[row + 1] - ptr[row]) / bs;
    heptane::index_t      *s = src + ptr[row];
    for (heptane::index_t k = 0, at = ptr[row - r] + r; k < blocks; k++, at += bs * bs)
      for (heptane::index_t c = 0; c < bs; c++) *s++ = at + c * bs;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneBAIJGet(Mat A, const PetscInt bcolmap[], HeptaneBAIJ *b, heptane::plugin::CsrView *view)
{
  PetscObjectState st;
  PetscScalar     *a;

  PetscFunctionBegin;
  PetscCall(HeptaneBAIJMap(A, bcolmap, b, PETSC_TRUE));
  PetscCall(PetscObjectStateGet((PetscObject)A, &st));
  const heptane::index_t rows = (heptane::index_t)(b->ptr.size() - 1);
  if (b->val.size() != b->col.size()) HeptaneCallCXX(b->val.resize(b->col.size()));
  if (st != b->state) { /* new values (a second call for the same values gathers nothing) */
    PetscLogDouble t0, t1;
    PetscCall(PetscTime(&t0));
    PetscCall(MatSeqBAIJGetArray(A, &a));
    if constexpr (sizeof(PetscScalar) == sizeof(double)) {
      heptane::kernels::block_values_to_csr(*heptane::cpu_executor(), rows, (heptane::index_t)b->bs, b->ptr.data(), (const double *)a, b->val.data());
    } else { /* complex: the real parts, through the map */
      PetscCall(HeptaneBAIJSrc(b));
      const size_t n = b->src.size();
      for (size_t e = 0; e < n; e++) b->val[e] = PetscRealPart(a[b->src[e]]);
    }
    PetscCall(MatSeqBAIJRestoreArray(A, &a));
    PetscCall(PetscObjectStateGet((PetscObject)A, &b->state)); /* GetArray/RestoreArray moved it on */
    PetscCall(PetscTime(&t1));
    PetscCall(PetscInfo(A, "heptane: the values of a BAIJ matrix gathered into scalar CSR order in %.3f ms\n", (t1 - t0) * 1e3));
  }
  view->rows    = rows;
  view->row_ptr = b->ptr.data();
  view->col_idx = b->col.data();
  view->values  = b->val.data();
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneBAIJValuesGet(Mat A, HeptaneBAIJ *b, PetscBool want_pos, const double **values, const heptane::index_t **pos, PetscInt *nnz, PetscInt *bs)
{
  PetscScalar *a;

  PetscFunctionBegin;
  *values = NULL;
  *pos    = NULL;
  *nnz    = 0;
  *bs     = 0;
  if (sizeof(PetscScalar) != sizeof(double)) PetscFunctionReturn(0); /* complex: gather instead */
  PetscCall(HeptaneBAIJMap(A, NULL, b, PETSC_FALSE));
  if (want_pos) PetscCall(HeptaneBAIJSrc(b));
  PetscCall(MatSeqBAIJGetArray(A, &a));
  *values = (const double *)a;
  *pos    = want_pos ? b->src.data() : NULL;
  *nnz    = (PetscInt)b->ptr.back();
  *bs     = b->bs;
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneBAIJBlocksGet(Mat A, HeptaneBAIJ *b, heptane::plugin::BlockCsrView *blocks, HeptaneBlockIndex32 *store)
{
  PetscInt        nb, bs;
  const PetscInt *ia, *ja;
  PetscBool       done;
  PetscScalar    *a;
  const bool      copy = sizeof(PetscInt) != sizeof(heptane::index_t); /* 64-bit PetscInt */

  PetscFunctionBegin;
  *blocks = heptane::plugin::BlockCsrView();
  if (!store && b) store = &b->blk32;
  if (sizeof(PetscScalar) != sizeof(double) || (copy && !store)) PetscFunctionReturn(0);
  if (b) PetscCall(HeptaneBAIJMap(A, NULL, b, PETSC_FALSE));
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_TRUE, &nb, &ia, &ja, &done));
  PetscCheck(done, PETSC_COMM_SELF, PETSC_ERR_SUP, "heptane: MatGetRowIJ() gave no block CSR for matrix type %s", ((PetscObject)A)->type_name);
  if (copy) { /* the block indices into 32 bits, the values still in place; MatGetRowIJ given back now */
    const bool fits = nb < 2147483647 && ia[nb] < 2147483647;
    if (fits) HeptaneCallCXX(store->ptr.assign(ia, ia + nb + 1); store->col.assign(ja, ja + ia[nb]));
    PetscInt nr = nb; /* MatRestoreRowIJ may set it (and clears ia, ja) */
    PetscCall(MatRestoreRowIJ(A, 0, PETSC_FALSE, PETSC_TRUE, &nr, &ia, &ja, &done));
    if (!fits) PetscFunctionReturn(0);
  }
  PetscCall(MatSeqBAIJGetArray(A, &a));
  blocks->block_rows = (heptane::index_t)nb;
  blocks->block_size = (heptane::index_t)bs;
  blocks->block_ptr  = copy ? store->ptr.data() : (const heptane::index_t *)ia;
  blocks->block_col  = copy ? store->col.data() : (const heptane::index_t *)ja;
  blocks->values     = (const double *)a;
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneBAIJBlocksRestore(Mat A, heptane::plugin::BlockCsrView *blocks)
{
  PetscInt        nb;
  const PetscInt *ia = (const PetscInt *)blocks->block_ptr, *ja = (const PetscInt *)blocks->block_col;
  PetscBool       done;
  PetscScalar    *a = (PetscScalar *)blocks->values;

  PetscFunctionBegin;
  if (blocks->block_ptr) {
    PetscCall(MatSeqBAIJRestoreArray(A, &a));
    if (sizeof(PetscInt) == sizeof(heptane::index_t)) PetscCall(MatRestoreRowIJ(A, 0, PETSC_FALSE, PETSC_TRUE, &nb, &ia, &ja, &done)); /* 64-bit: given back in Get */
  }
  *blocks = heptane::plugin::BlockCsrView();
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneBAIJValuesRestore(Mat A, const double **values)
{
  PetscScalar *a = (PetscScalar *)*values;

  PetscFunctionBegin;
  if (a) PetscCall(MatSeqBAIJRestoreArray(A, &a));
  *values = NULL;
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneAIJCopyGet(Mat A, HeptaneAIJCopy *c, Mat *aij)
{
  PetscObjectState nz, st;
  PetscObjectId    id;

  PetscFunctionBegin;
  PetscCall(MatGetNonzeroState(A, &nz));
  PetscCall(PetscObjectStateGet((PetscObject)A, &st));
  PetscCall(PetscObjectGetId((PetscObject)A, &id));
  MatInfo     info;
  PetscMPIInt size, action; /* 2: make anew, 1: refresh the values, 0: keep */
  PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
  action = !c->aij || id != c->id || nz != c->nz || info.nz_used != c->entries ? 2 : st != c->state ? 1 : 0;
  /* MatConvert is collective: every rank does what one needs (an entry new on one rank's rows
     changes only that rank's count -- and, for MPISBAIJ, its nonzero state) */
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  if (size > 1) PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &action, 1, MPI_INT, MPI_MAX, PetscObjectComm((PetscObject)A)));
  if (action == 2) {
    PetscCall(MatDestroy(&c->aij));
    PetscCall(MatConvert(A, MATAIJ, MAT_INITIAL_MATRIX, &c->aij));
  } else if (action == 1) {
    PetscCall(MatConvert(A, MATAIJ, MAT_REUSE_MATRIX, &c->aij));
  }
  c->id      = id;
  c->nz      = nz;
  c->state   = st;
  c->entries = info.nz_used;
  *aij       = c->aij;
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneCheckEntriesReadable(PetscObject obj, Mat A, const char who[], const char advice[])
{
  PetscBool isbdiagh, has;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATBDIAGH, &isbdiagh));
  if (isbdiagh) PetscFunctionReturn(0);
  PetscCall(MatHasOperation(A, MATOP_GET_ROW, &has));
  PetscCheck(has, PetscObjectComm(obj), PETSC_ERR_SUP, "%s: the matrix (type %s) gives no entries (no MatGetRow: a matrix-free operator?); heptane needs an assembled matrix: aij, baij, sbaij, bdiagh (or their mpi types). %s", who, ((PetscObject)A)->type_name, advice);
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneRowsGet(Mat A, HeptaneRows *r)
{
  Mat                Ad, Ao;
  const PetscInt    *garray, *cols;
  const PetscScalar *vals;
  PetscInt           n, ncols, dnnz = 0, onnz = 0;

  PetscFunctionBegin;
  PetscCheck(A->cmap->N < 2147483647, PETSC_COMM_SELF, PETSC_ERR_SUP, "heptane: %" PetscInt_FMT " columns do not fit 32-bit indices", A->cmap->N);
  PetscCall(HeptaneRowsRestore(r)); /* a loan still open (an error on the way): end it first */
  PetscCall(MatGetOwnershipRange(A, &r->rstart, &r->rend));
  n = r->rend - r->rstart;
  PetscCall(HeptaneMPIAIJBlocks(A, &Ad, &Ao, &garray));
  if (Ad) {
    /* Ad: the rows' entries in the columns [rstart, rend) numbered from 0 (the row and column
       layouts are the same: KSPHeptaneUpdateRanks checks), in the order MatGetRow gives them
       (columns ascending); Ao: the others, column j global column garray[j] (ascending) */
    PetscCall(HeptaneCSRGet(Ad, &r->ad));
    PetscCall(HeptaneCSRGet(Ao, &r->ao));
    PetscCheck(r->ad.n == n && r->ao.n == n, PETSC_COMM_SELF, PETSC_ERR_PLIB, "heptane: the MPIAIJ blocks have %" PetscInt_FMT " and %" PetscInt_FMT " rows, the rank owns %" PetscInt_FMT, r->ad.n, r->ao.n, n);
    r->inplace    = PETSC_TRUE;
    r->split.diag = r->ad.view;
    r->split.off  = r->ao.view;
    if (sizeof(PetscInt) == sizeof(heptane::index_t)) {
      r->split.off_cols = reinterpret_cast<const heptane::index_t *>(garray);
    } else { /* 64-bit PetscInt: heptane's indices are 32-bit */
      HeptaneCallCXX(r->garray32.assign(garray, garray + Ao->cmap->n));
      r->split.off_cols = r->garray32.data();
    }
    PetscFunctionReturn(0);
  }
  r->inplace = PETSC_FALSE;
  {
    PetscBool mpibaij;
    PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &mpibaij));
    r->baij = mpibaij;
    if (mpibaij) { /* its two SeqBAIJ blocks, expanded through a map kept per pattern */
      const PetscInt *bgarray;
      PetscCall(MatMPIBAIJGetSeqBAIJ(A, &Ad, &Ao, &bgarray));
      PetscCall(HeptaneBAIJGet(Ad, NULL, &r->bd, &r->split.diag));
      PetscCall(HeptaneBAIJGet(Ao, bgarray, &r->bo, &r->split.off));
      PetscCheck(r->split.diag.rows == n && r->split.off.rows == n, PETSC_COMM_SELF, PETSC_ERR_PLIB, "heptane: the MPIBAIJ blocks have %d and %d rows, the rank owns %" PetscInt_FMT, (int)r->split.diag.rows, (int)r->split.off.rows, n);
      r->split.off_cols = NULL; /* global columns */
      PetscFunctionReturn(0);
    }
  }
  /* another type: copied row by row. Sizes first (MatGetRow without indices or values only
     counts), then one allocation */
  for (PetscInt i = r->rstart; i < r->rend; i++) {
    PetscCall(MatGetRow(A, i, &ncols, &cols, NULL));
    for (PetscInt k = 0; k < ncols; k++) {
      if (cols[k] >= r->rstart && cols[k] < r->rend) dnnz++;
      else onnz++;
    }
    PetscCall(MatRestoreRow(A, i, &ncols, &cols, NULL));
  }
  PetscCheck(dnnz + onnz < 2147483647, PETSC_COMM_SELF, PETSC_ERR_SUP, "heptane: %" PetscInt_FMT " entries on one rank do not fit 32-bit indices", dnnz + onnz);
  HeptaneCallCXX(r->dptr.resize((size_t)n + 1); r->dcol.resize((size_t)dnnz); r->dval.resize((size_t)dnnz); r->optr.resize((size_t)n + 1); r->ocol.resize((size_t)onnz); r->oval.resize((size_t)onnz));
  r->dptr[0] = r->optr[0] = 0;
  dnnz = onnz = 0;
  for (PetscInt i = r->rstart; i < r->rend; i++) {
    PetscCall(MatGetRow(A, i, &ncols, &cols, &vals));
    for (PetscInt k = 0; k < ncols; k++) {
      if (cols[k] >= r->rstart && cols[k] < r->rend) {
        r->dcol[(size_t)dnnz] = (heptane::index_t)(cols[k] - r->rstart);
        r->dval[(size_t)dnnz] = PetscRealPart(vals[k]);
        dnnz++;
      } else {
        r->ocol[(size_t)onnz] = (heptane::index_t)cols[k];
        r->oval[(size_t)onnz] = PetscRealPart(vals[k]);
        onnz++;
      }
    }
    PetscCall(MatRestoreRow(A, i, &ncols, &cols, &vals));
    r->dptr[(size_t)(i - r->rstart) + 1] = (heptane::index_t)dnnz;
    r->optr[(size_t)(i - r->rstart) + 1] = (heptane::index_t)onnz;
  }
  r->split.diag     = heptane::plugin::CsrView{(heptane::index_t)n, r->dptr.data(), r->dcol.data(), r->dval.data()};
  r->split.off      = heptane::plugin::CsrView{(heptane::index_t)n, r->optr.data(), r->ocol.data(), r->oval.data()};
  r->split.off_cols = NULL; /* global columns */
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneRowsRestore(HeptaneRows *r)
{
  PetscFunctionBegin;
  PetscCall(HeptaneCSRRestore(&r->ad));
  PetscCall(HeptaneCSRRestore(&r->ao));
  if (r->inplace) r->split = heptane::plugin::DistRows(); /* PETSc's arrays: no longer ours to read */
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

static const char *const HeptaneAmgSmoothers[]    = {"chebyshev", "jacobi", "l1jacobi", "ilu0mc", "auto"};
static const char *const HeptaneAmgCycles[]       = {"v", "w"};
static const char *const HeptaneAmgSetups[]       = {"auto", "host", "device"};
static const char *const HeptaneAmgAggregations[] = {"mis", "box"};
static const char *const HeptaneCprSeconds[]      = {"auto", "bilu0", "bilu0mc", "bjacobi"};

PetscErrorCode HeptanePcOptionsFromOptions(HeptaneOptionItems PetscOptionsObject, heptane::PcOptions *opts, PetscBool cpr, const char man[])
{
  heptane::AmgOptions &a      = opts->amg;
  PetscReal            theta  = a.strength_threshold;
  PetscInt             smooth = (PetscInt)a.smoother, cycle = (PetscInt)a.cycle, sweeps = a.pre_sweeps, coarse = a.coarse_size, levels = a.max_levels;
  PetscBool            flg;

  PetscFunctionBegin;
  PetscCall(PetscOptionsReal("-heptane_amg_threshold", "AMG strength of connection theta: j is a strong neighbour of i when |a_ij| > theta sqrt(|a_ii a_jj|) (block norms for Nc > 1); 0 keeps every coupling", man, theta, &theta, &flg));
  PetscCheck(theta >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-heptane_amg_threshold %g: must be >= 0", (double)theta);
  a.strength_threshold = theta;
  PetscCall(PetscOptionsEList("-heptane_amg_smoother", "AMG smoother: auto (ilu0mc for a non-symmetric block system, Nc > 1, else chebyshev), chebyshev (symmetric: CG), jacobi (damped), l1jacobi, ilu0mc (multi-colour ILU(0), not symmetric)", man, HeptaneAmgSmoothers, 5, HeptaneAmgSmoothers[smooth], &smooth, NULL));
  a.smoother = (heptane::AmgSmoother)smooth;
  PetscCall(PetscOptionsBoundedInt("-heptane_amg_sweeps", "AMG pre- and post-smoothing sweeps (Chebyshev: the degree)", man, sweeps, &sweeps, NULL, 1));
  a.pre_sweeps = a.post_sweeps = (int)sweeps;
  PetscCall(PetscOptionsEList("-heptane_amg_cycle", "AMG cycle: v or w", man, HeptaneAmgCycles, 2, HeptaneAmgCycles[cycle], &cycle, NULL));
  a.cycle = (heptane::AmgCycle)cycle;
  PetscCall(PetscOptionsBoundedInt("-heptane_amg_coarse_size", "AMG: stop coarsening at this many rows or fewer (the coarsest level is solved by a dense LU)", man, coarse, &coarse, NULL, 1));
  a.coarse_size = (heptane::index_t)coarse;
  PetscCall(PetscOptionsBoundedInt("-heptane_amg_max_levels", "AMG: at most this many levels", man, levels, &levels, NULL, 1));
  a.max_levels  = (int)levels;
  PetscInt tail = a.tail_rows;
  PetscCall(PetscOptionsBoundedInt("-heptane_amg_tail_rows", "AMG: the levels of at most this many rows, down to the coarsest, run as one launch (one CTA on a GPU; chebyshev, jacobi, l1jacobi); 0: every step its own launch", man, tail, &tail, NULL, 0));
  a.tail_rows    = (heptane::index_t)tail;
  PetscInt setup = (PetscInt)a.setup;
  PetscCall(PetscOptionsEList("-heptane_amg_setup", "AMG: where the hierarchy is built: auto (the GPU for a GPU run and a scalar system, else the host), host, device", man, HeptaneAmgSetups, 3, HeptaneAmgSetups[setup], &setup, NULL));
  a.setup       = (heptane::AmgSetup)setup;
  PetscInt lits = a.power_iterations;
  PetscCall(PetscOptionsBoundedInt("-heptane_amg_lambda_its", "AMG Chebyshev: lambda_max(D^-1 A) by Gershgorin's bound (0) or estimated by this many power and Lanczos steps", man, lits, &lits, NULL, 0));
  a.power_iterations = (int)lits;
  PetscInt pmax      = a.prolongation_max_entries;
  PetscCall(PetscOptionsBoundedInt("-heptane_amg_p_max", "AMG over the ranks (-heptane_amg_global): at most this many entries a row of the smoothed P, the largest, the row's sum kept (0: all; hypre's P_max_elmts)", man, pmax, &pmax, NULL, 0));
  a.prolongation_max_entries = (int)pmax;
  PetscInt agg               = (PetscInt)a.aggregation;
  PetscCall(PetscOptionsEList("-heptane_amg_aggregation", "AMG aggregates: mis (smoothed aggregation's independent sets, any pattern) or box (2 cells a box along each strongly coupled axis of the operator's grid, Nc = 1; mis where there is no grid)", man, HeptaneAmgAggregations, 2, HeptaneAmgAggregations[agg], &agg, NULL));
  a.aggregation    = (heptane::AmgAggregation)agg;
  PetscReal bratio = a.box_ratio, pw = a.prolongation_weight;
  PetscCall(PetscOptionsReal("-heptane_amg_box_ratio", "AMG box aggregation: an axis is halved when its mean strength is at least this fraction of the strongest axis'", man, bratio, &bratio, NULL));
  PetscCheck(bratio > 0 && bratio <= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-heptane_amg_box_ratio %g: must be in (0, 1]", (double)bratio);
  a.box_ratio = bratio;
  PetscCall(PetscOptionsReal("-heptane_amg_p_weight", "AMG prolongator smoothing weight over rho(D^-1 A) (0: plain aggregation, whose coarse levels keep a 7-point stencil)", man, pw, &pw, NULL));
  PetscCheck(pw >= 0 && pw < 2, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-heptane_amg_p_weight %g: must be in [0, 2)", (double)pw);
  a.prolongation_weight = pw;
  {
    PetscBool global = a.over_ranks == heptane::AmgOverRanks::yes ? PETSC_TRUE : PETSC_FALSE, set;
    PetscCall(PetscOptionsBool("-heptane_amg_global",
                               "AMG (hamg, and hcpr's pressure stage) on several ranks: one hierarchy over all ranks (levels split over the ranks, each smoothed by chebyshev/jacobi/l1jacobi through the distributed product; coarsest level gathered) "
                               "instead of one AMG per rank's diagonal block (block Jacobi over the ranks). "
                               "Not given: over the ranks on CPU ranks without -heptane_coarse for hcpr and for hamg on a scalar system (Nc = 1), else per rank",
                               man, global, &global, &set));
    if (set) a.over_ranks = global ? heptane::AmgOverRanks::yes : heptane::AmgOverRanks::no;
  }
  if (cpr) {
    PetscInt p = opts->cpr.pressure_index, second = opts->cpr.second_stage_auto ? 0 : 1 + (PetscInt)opts->cpr.second_stage;
    PetscCall(PetscOptionsBoundedInt("-heptane_cpr_pressure_index", "CPR: the pressure unknown of each cell (0 .. Nc-1)", man, p, &p, NULL, 0));
    opts->cpr.pressure_index = (heptane::index_t)p;
    PetscCall(PetscOptionsEList("-heptane_cpr_second", "CPR second stage on the whole system: auto (BILU(0) on the CPU, block Jacobi on a GPU), bilu0, bilu0mc, bjacobi", man, HeptaneCprSeconds, 4, HeptaneCprSeconds[second], &second, NULL));
    opts->cpr.second_stage_auto = second == 0;
    if (second > 0) opts->cpr.second_stage = (heptane::CprSmoother)(second - 1);
  }
  opts->cpr.amg = opts->amg;
  PetscFunctionReturn(0);
}

bool HeptaneAmgOverRanks(const heptane::AmgOptions &a, heptane::PcType type, int ranks, bool cpu, heptane::index_t nc, bool coarse, bool refused, std::string *why)
{
  using W = heptane::OverRanksWhy;
  if (refused) return false; /* *why: the caller's account of the refusal */
  const bool               cpr = type == heptane::PcType::cpr;
  const heptane::OverRanks o   = heptane::amg_over_ranks(a.over_ranks, a.smoother, type == heptane::PcType::amg, cpr, ranks, cpu, nc, coarse);
  if (why) switch (o.why) {
    case W::not_amg:
      *why = "";
      break;
    case W::asked:
      *why = "asked for";
      break;
    case W::declined:
      *why = "-heptane_amg_global false";
      break;
    case W::gpu_ranks:
      *why = "GPU ranks: per rank, on the device, unless -heptane_amg_global (the hierarchy over the ranks runs on the host)";
      break;
    case W::coarse:
      *why = "-heptane_coarse: its correction around each rank's own";
      break;
    case W::ilu0mc_smoother:
      *why = "-heptane_amg_smoother ilu0mc: per rank (not built over the ranks)";
      break;
    case W::block_system:
      *why = "Nc > 1: per rank (its ilu0mc smoother) unless -heptane_amg_global; -pc_type hcpr for a coupled system";
      break;
    case W::default_cpr:
      *why = "not given; the default for CPR on CPU ranks, -heptane_amg_global false for CPR per rank";
      break;
    case W::default_scalar:
      *why = "not given; the default for a scalar system on CPU ranks, -heptane_amg_global false for one AMG per rank";
      break;
    }
  return o.yes;
}

std::string HeptanePcOptionsText(const heptane::PcOptions &o, PetscBool cpr)
{
  std::ostringstream os;
  os << "-heptane_amg_threshold " << o.amg.strength_threshold << " -heptane_amg_smoother " << HeptaneAmgSmoothers[(int)o.amg.smoother] << " -heptane_amg_sweeps " << o.amg.pre_sweeps << " -heptane_amg_cycle " << HeptaneAmgCycles[(int)o.amg.cycle] << " -heptane_amg_coarse_size "
     << o.amg.coarse_size << " -heptane_amg_max_levels " << o.amg.max_levels << " -heptane_amg_tail_rows " << o.amg.tail_rows << " -heptane_amg_setup " << HeptaneAmgSetups[(int)o.amg.setup] << " -heptane_amg_lambda_its " << o.amg.power_iterations << " -heptane_amg_p_max "
     << o.amg.prolongation_max_entries << " -heptane_amg_aggregation " << HeptaneAmgAggregations[(int)o.amg.aggregation] << " -heptane_amg_box_ratio " << o.amg.box_ratio << " -heptane_amg_p_weight " << o.amg.prolongation_weight;
  if (!cpr) os << " -heptane_amg_global " << (o.amg.over_ranks == heptane::AmgOverRanks::yes ? "true" : o.amg.over_ranks == heptane::AmgOverRanks::no ? "false" : "(not given)");
  if (cpr) os << " -heptane_cpr_pressure_index " << o.cpr.pressure_index << " -heptane_cpr_second " << HeptaneCprSeconds[o.cpr.second_stage_auto ? 0 : 1 + (int)o.cpr.second_stage];
  if ((cpr ? o.cpr.amg : o.amg).singular) os << "; a null space declared (MatSetNullSpace): the coarsest level by a generalized inverse";
  return os.str();
}

PetscBool HeptanePcOptionsEqual(const heptane::PcOptions &x, const heptane::PcOptions &y)
{
  const auto same_amg = [](const heptane::AmgOptions &a, const heptane::AmgOptions &b) {
    return a.strength_threshold == b.strength_threshold && a.smoother == b.smoother && a.pre_sweeps == b.pre_sweeps && a.post_sweeps == b.post_sweeps && a.cycle == b.cycle && a.coarse_size == b.coarse_size && a.max_levels == b.max_levels && a.tail_rows == b.tail_rows && a.setup == b.setup && a.power_iterations == b.power_iterations && a.over_ranks == b.over_ranks && a.prolongation_max_entries == b.prolongation_max_entries && a.singular == b.singular && a.aggregation == b.aggregation && a.box_ratio == b.box_ratio && a.prolongation_weight == b.prolongation_weight;
  };
  return (PetscBool)(same_amg(x.amg, y.amg) && same_amg(x.cpr.amg, y.cpr.amg) && x.cpr.pressure_index == y.cpr.pressure_index && x.cpr.second_stage_auto == y.cpr.second_stage_auto && x.cpr.second_stage == y.cpr.second_stage && x.jacobi_zero_diagonal == y.jacobi_zero_diagonal);
}

PetscErrorCode HeptanePcOptionsNullSpace(Mat Amat, Mat Pmat, heptane::PcOptions *o)
{
  MatNullSpace na = NULL, np = NULL;

  PetscFunctionBegin;
  if (Amat) PetscCall(MatGetNullSpace(Amat, &na));
  if (Pmat) PetscCall(MatGetNullSpace(Pmat, &np));
  o->amg.singular = o->cpr.amg.singular = (na || np);
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneEntriesPerRank(Mat A, MPI_Comm comm, long long *nnz)
{
  PetscBool   has;
  PetscMPIInt size;
  MatInfo     info;

  PetscFunctionBegin;
  *nnz = -1;
  PetscCall(MatHasOperation(A, MATOP_GETINFO, &has));
  if (!has) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &info));
  *nnz = (long long)(info.nz_used / size);
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneRanksPerGpu(MPI_Comm comm, int *k)
{
  MPI_Comm    node;
  PetscMPIInt local, size;
  int         gpus;

  PetscFunctionBegin;
  *k = 1;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  if (size < 2) PetscFunctionReturn(0);
  HeptaneCallCXX(gpus = heptane::CudaExecutor::device_count());
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_size(node, &local));
  PetscCallMPI(MPI_Comm_free(&node));
  int mine = gpus > 0 ? (local + gpus - 1) / gpus : 1;
  PetscCallMPI(MPI_Allreduce(&mine, k, 1, MPI_INT, MPI_MAX, comm));
  PetscFunctionReturn(0);
}

PetscErrorCode HeptaneViewLines(PetscViewer viewer, const char indent[], const std::string &text)
{
  std::size_t b = 0;

  PetscFunctionBegin;
  while (b < text.size()) {
    std::size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    PetscCall(PetscViewerASCIIPrintf(viewer, "%s%s\n", indent, text.substr(b, e - b).c_str()));
    b = e + 1;
  }
  PetscFunctionReturn(0);
}
