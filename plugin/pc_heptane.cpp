/*
   PCHAMG ("hamg") and PCHCPR ("hcpr"): heptane's smoothed-aggregation AMG and its CPR
   (constrained pressure residual: AMG on the quasi-IMPES pressure system, BILU(0) on the whole)
   as ordinary PETSc preconditioners, for PETSc's own KSPs:

       -ksp_type cg -pc_type hamg            -ksp_type fgmres -pc_type hcpr

   With heptane's KSPs (hbcgs, hcg, hgmres) the same PC types select heptane's preconditioner
   inside heptane's own loop instead (ksp_heptane.cpp, KSPHeptaneTakePC): the PC is then set to
   none and nothing here runs.

   Setup (PCSetUp_Heptane, for a new Pmat and whenever its values changed):
     - one rank: SeqAIJ and bdiagh are read in place (MatGetRowIJ, MatSeqAIJGetArrayRead), SeqBAIJ
       is converted to SeqAIJ once per pattern (MAT_REUSE_MATRIX for new values), a one-rank
       MPIAIJ gives its diagonal block; several ranks: each rank's diagonal block (the columns
       of its own rows; MPIAIJ's in place, any other type copied with MatGetRow), so the
       preconditioner is block Jacobi over the ranks with AMG/CPR of each block;
     - Nc (AMG's aggregation of whole cells, CPR's cells) from -heptane_block, else the DMDA's
       dof, else the matrix block size, else a bdiagh matrix's detected Nc, else 1;
     - same Pmat object and nonzero state as the last setup: values only (update_values: AMG
       keeps its aggregates, P and R and redoes the Galerkin products, the smoother data and
       the coarse inverse; CPR also its weights and the second stage's numeric part);
       otherwise, or when that is refused, a new setup;
     - the executor is the plugin's device choice (-heptane_device, default auto: the first GPU
       where resolve_device's measured model says it wins for the stored entries per rank,
       else the CPU; on several ranks the GPU of the node-local rank).
   Apply (PCApply_Heptane): the Vec's local array to the executor (no copy on the CPU), one AMG
   cycle (or CPR's two stages) there, and back. Several ranks with -heptane_coarse: that
   application inside a global coarse correction (dist::CoarseSpace, its symmetric form: Q, M, Q;
   its products with A through PETSc's MatMult of Pmat), made after each setup (its coarse
   matrix assembled from the new values at a values-only one).
*/
#include <petsc/private/pcimpl.h>
#include <omp.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "plugin/device_pool.hpp"
#include "plugin/petsc_common.hpp"

typedef struct {
  heptane::PcType             type; /* amg or cpr */
  heptane::PcOptions         *opts; /* -heptane_amg_*, -heptane_cpr_* */
  heptane::PcOptions         *opts_built;
  char                        device[64]; /* -heptane_device */
  PetscInt                    block;      /* -heptane_block; 0: from the matrix */
  heptane::plugin::PcEngine  *engine;
  HeptaneAIJCopy              sbaij; /* an SBAIJ matrix's AIJ copy (owned) */
  HeptaneBAIJ                *baij;  /* a BAIJ matrix's map to scalar CSR (PCHeptaneCSRGet) */
  HeptaneRows                *rows;  /* several ranks: this rank's rows */
  PetscObjectId               mat_id;
  PetscObjectState            mat_nzstate;
  PetscInt                    nc;
  PetscMPIInt                 ranks;
  std::string                *nc_from, *mat_type, *last;
  std::string                *device_built; /* the executor's device of the last setup */
  std::string                *device_why;   /* what -heptane_device auto chose and why */
  PetscBool                   coarse;       /* -heptane_coarse: several ranks, a global coarse correction */
  PetscInt                    coarse_aggregates;
  PetscInt                    coarse_solve;       /* -heptane_coarse_solve: 0 auto, 1 dense, 2 amg */
  PetscInt                    coarse_cycles;      /* -heptane_coarse_cycles */
  PetscInt                    coarse_aggregation; /* -heptane_coarse_aggregation: 0 bfs, 1 strength */
  struct PCHeptaneCoarseData *q;                  /* the correction, while there is one */
  PetscBool                   over_ranks;         /* the last setup asked for the AMG/CPR over the ranks (HeptaneAmgOverRanks) */
  PetscBool                   over_ranks_refused; /* ... which was refused at this pattern: each rank's own */
  std::string                *over_ranks_why;     /* what decided, for the view */
  std::string                *failed;             /* the last setup met a singular matrix on some rank (heptane::SingularError:
                                                     a zero pivot, a zero diagonal, a singular block or coarsest level): as
                                                     PETSc's own PCs, PC_FACTOR_NUMERIC_ZEROPIVOT and Inf from PCApply */
} PC_Heptane;

/* Several ranks, -heptane_coarse: dist::CoarseSpace around the engine (engine_impl.hpp's
   GlobalCoarse), its product with A being PETSc's MatMult of Pmat on the placed arrays. Its
   symmetric form (Q, M, Q), so that it suits every KSP, CG included. */
struct PCHeptaneCoarseData {
  std::unique_ptr<heptane::plugin::detail::GlobalCoarse<double>> q;
  Vec                                                            x = NULL, y = NULL; /* arrays placed for MatMult */
  heptane::plugin::GlobalCoarseOptions                           built;              /* what it was built with */
  double                                                         ms = 0;
};

static const char *PCHeptaneName(PC_Heptane *p)
{
  return p->type == heptane::PcType::amg ? PCHAMG : PCHCPR;
}

static const char *PCHeptaneMan(PC_Heptane *p)
{
  return p->type == heptane::PcType::amg ? "PCHAMG" : "PCHCPR";
}

/* One rank: the CSR of Pmat, restored by HeptaneCSRRestore: in place for SeqAIJ (and its GPU
   variants), bdiagh and a one-rank MPIAIJ's diagonal block; SeqBAIJ (or a one-rank MPIBAIJ's
   diagonal block) through HeptaneBAIJGet's map (once per pattern, the values gathered at each
   setup, no MatConvert); SBAIJ through an AIJ copy (MatConvert once per pattern, then
   MAT_REUSE_MATRIX). */
static PetscErrorCode PCHeptaneCSRGet(PC pc, Mat A, HeptaneCSR *csr)
{
  PC_Heptane     *p = (PC_Heptane *)pc->data;
  PetscBool       isaij, isbdiagh, isbaij, ismpiaij, ismpibaij, issbaij;
  Mat             Ad, Ao;
  const PetscInt *colmap;

  PetscFunctionBegin;
  *csr = HeptaneCSR();
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQAIJ, &isaij)); /* seqaij and its GPU variants */
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATBDIAGH, &isbdiagh));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQBAIJ, &isbaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIAIJ, &ismpiaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &ismpibaij));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)A, &issbaij, MATSEQSBAIJ, MATMPISBAIJ, ""));
  if (isaij || isbdiagh) {
    PetscCall(HeptaneCSRGet(A, csr));
    PetscFunctionReturn(0);
  }
  if (ismpiaij) {
    PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, &colmap));
    PetscCall(HeptaneCSRGet(Ad, csr));
    PetscFunctionReturn(0);
  }
  if (isbaij || ismpibaij) {
    Ad = A;
    if (ismpibaij) PetscCall(MatMPIBAIJGetSeqBAIJ(A, &Ad, &Ao, &colmap));
    PetscCall(HeptaneBAIJGet(Ad, NULL, p->baij, &csr->view));
    PetscFunctionReturn(0);
  }
  /* SBAIJ (only its upper triangle is stored) and any other assembled type with MatGetRow
     (sell, dense, ...): an AIJ copy, converted once per pattern */
  if (!issbaij) PetscCall(HeptaneCheckEntriesReadable((PetscObject)pc, A, PCHeptaneName(p), "Or use a PETSc PC."));
  PetscCall(HeptaneAIJCopyGet(A, &p->sbaij, &Ad));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)Ad, MATMPIAIJ, &ismpiaij));
  if (ismpiaij) PetscCall(MatMPIAIJGetSeqAIJ(Ad, &Ad, &Ao, &colmap));
  PetscCall(HeptaneCSRGet(Ad, csr));
  PetscFunctionReturn(0);
}

/* Nc: -heptane_block, else the DMDA's dof, else the matrix block size, else a bdiagh matrix's
   detected block size, else 1. */
static PetscErrorCode PCHeptaneBlockSize(PC pc, Mat A, PetscInt *nc)
{
  PC_Heptane               *p = (PC_Heptane *)pc->data;
  DM                        dm;
  PetscBool                 found, isbdiagh;
  PetscInt                  bs;
  heptane::plugin::GridHint hint;

  PetscFunctionBegin;
  if (p->block > 0) {
    *nc = p->block;
    HeptaneCallCXX(*p->nc_from = "-heptane_block");
    PetscFunctionReturn(0);
  }
  PetscCall(MatGetDM(A, &dm));
  if (!dm) dm = pc->dm;
  PetscCall(HeptaneGridHintFromDM(dm, &hint, &found));
  if (found && hint.block_size > 0) {
    *nc = hint.block_size;
    HeptaneCallCXX(*p->nc_from = "the DMDA's dof");
    PetscFunctionReturn(0);
  }
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATBDIAGH, &isbdiagh));
  if (bs <= 1 && isbdiagh && A->spptr) {
    const heptane::plugin::MatrixEngine *e = ((Mat_BDIAGH *)A->spptr)->engine;
    if (e && e->built() && !e->distributed()) {
      *nc = e->block_size();
      HeptaneCallCXX(*p->nc_from = "the bdiagh matrix's block size");
      PetscFunctionReturn(0);
    }
  }
  *nc = bs > 0 ? bs : 1;
  HeptaneCallCXX(*p->nc_from = "the matrix block size");
  PetscFunctionReturn(0);
}

/* -heptane_device as the executor name: "auto" weighs the devices for A's stored entries per
   rank and the host threads (resolve_device's model; the same choice on every rank); on
   several ranks a GPU is that of the node-local rank (as the distributed operator takes it). */
static PetscErrorCode PCHeptaneDevice(PC pc, Mat A, std::string *device)
{
  PC_Heptane *p = (PC_Heptane *)pc->data;
  MPI_Comm    node;
  PetscMPIInt local;
  long long   nnz   = -1;
  int         share = 1;

  PetscFunctionBegin;
  if (!strcmp(p->device, "auto")) {
    PetscCall(HeptaneEntriesPerRank(A, PetscObjectComm((PetscObject)pc), &nnz));
    PetscCall(HeptaneRanksPerGpu(PetscObjectComm((PetscObject)pc), &share));
  }
  HeptaneCallCXX(*device = heptane::plugin::resolve_device(p->device, nnz, omp_get_max_threads(), p->device_why, share));
  if (p->ranks > 1 && *device == "cuda") {
    const int gpus = heptane::CudaExecutor::device_count();
    PetscCallMPI(MPI_Comm_split_type(PetscObjectComm((PetscObject)pc), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    PetscCallMPI(MPI_Comm_rank(node, &local));
    PetscCallMPI(MPI_Comm_free(&node));
    HeptaneCallCXX(*device = "cuda:" + std::to_string(gpus > 0 ? local % gpus : 0));
  }
  PetscFunctionReturn(0);
}

/* Build (values_only false) or refresh the engine from `a`; an error is kept in *msg (with its
   PETSc error code in *code), not raised, so that the ranks can agree on it. */
static void PCHeptaneEngine(PC_Heptane *p, const heptane::plugin::CsrView &a, PetscBool values_only, const std::string &device, std::string *msg, PetscErrorCode *code, PetscBool *refreshed, std::string *refused, PetscBool *singular)
{
  *code      = 0;
  *singular  = PETSC_FALSE;
  *refreshed = PETSC_FALSE;
  try {
    if (values_only) {
      try {
        p->engine->refresh(a);
        *refreshed = PETSC_TRUE;
      } catch (const heptane::InputError &e) {
        *refused = e.what();
      }
    }
    /* the AMG over the ranks (-heptane_amg_global or its default, HeptaneAmgOverRanks) is
       applied in the rank's AMG's place (PCHeptaneCoarse), so the rank keeps only point Jacobi
       of its rows; should the hierarchy be refused, PCSetUp builds each rank's own here */
    p->over_ranks              = (PetscBool)HeptaneAmgOverRanks(p->opts->amg, p->type, p->ranks, device == "cpu", (heptane::index_t)p->nc, p->coarse, p->over_ranks_refused, p->over_ranks_why);
    const heptane::PcType type = p->over_ranks ? heptane::PcType::jacobi : p->type;
    if (!*refreshed) p->engine->build(type, a, (heptane::index_t)p->nc, device, *p->opts);
  } catch (const heptane::NotSupported &e) {
    *code = PETSC_ERR_SUP;
    *msg  = std::string(e.what()) + " [" + e.where() + "]";
  } catch (const heptane::DeviceError &e) {
    *code = PETSC_ERR_GPU;
    *msg  = std::string(e.what()) + " [" + e.where() + "]";
  } catch (const heptane::SingularError &e) {
    *code     = PETSC_ERR_MAT_LU_ZRPVT;
    *singular = PETSC_TRUE;
    *msg      = std::string(e.what()) + " [" + e.where() + "]";
  } catch (const heptane::Error &e) {
    *code = PETSC_ERR_ARG_WRONG;
    *msg  = std::string(e.what()) + " [" + e.where() + "]";
  } catch (const std::bad_alloc &) {
    *code = PETSC_ERR_MEM;
    *msg  = "out of memory";
  } catch (const std::exception &e) {
    *code = PETSC_ERR_LIB;
    *msg  = e.what();
  }
}

static PetscErrorCode PCHeptaneCoarseFree(PC_Heptane *p)
{
  PetscFunctionBegin;
  if (!p->q) PetscFunctionReturn(0);
  PetscCall(VecDestroy(&p->q->x));
  PetscCall(VecDestroy(&p->q->y));
  delete p->q;
  p->q = NULL;
  PetscFunctionReturn(0);
}

/* After a setup on several ranks: build the coarse correction (a new hierarchy, or other
   aggregates) or assemble its coarse matrix from the new values (values_only). Collective. */
static PetscErrorCode PCHeptaneCoarse(PC pc, Mat src, PetscBool values_only, PetscBool *refused_hierarchy)
{
  PC_Heptane *p    = (PC_Heptane *)pc->data;
  MPI_Comm    comm = PetscObjectComm((PetscObject)pc);
  PetscInt    n;
  std::string refused;

  PetscFunctionBegin;
  const bool hierarchy = p->over_ranks;
  *refused_hierarchy   = PETSC_FALSE;
  if (!(p->coarse || hierarchy) || p->ranks < 2) {
    PetscCall(PCHeptaneCoarseFree(p));
    PetscFunctionReturn(0);
  }
  heptane::plugin::GlobalCoarseOptions o;
  o.aggregates  = (heptane::index_t)p->coarse_aggregates;
  o.symmetric   = true;
  o.solve       = (int)p->coarse_solve;
  o.cycles      = (int)p->coarse_cycles;
  o.aggregation = (int)p->coarse_aggregation;
  o.hierarchy   = hierarchy;
  if (hierarchy) o.amg = p->opts->amg;
  o.cpr = hierarchy && p->type == heptane::PcType::cpr;
  if (o.cpr) o.cpr_opts = p->opts->cpr;
  if (p->q && (!values_only || p->q->built != o)) PetscCall(PCHeptaneCoarseFree(p));
  PetscCall(MatGetLocalSize(pc->pmat, &n, NULL));
  if (!p->q) {
    HeptaneCallCXX(p->q = new PCHeptaneCoarseData());
    PetscCall(MatCreateVecs(pc->pmat, &p->q->x, &p->q->y));
  }
  PetscCall(HeptaneRowsGet(src, p->rows));
  const auto t0 = std::chrono::steady_clock::now();
  HeptaneCallCXX(
    try {
      if (p->q->q) p->q->q->update(p->rows->split.diag, p->rows->split.off, p->rows->split.off_cols);
      else {
        Mat                        A  = pc->pmat;
        Vec                        vx = p->q->x, vy = p->q->y;
        auto                       cpu = heptane::cpu_executor();
        auto                       a   = std::make_shared<heptane::plugin::detail::HostCallbackOperator<double>>((heptane::index_t)n, cpu,
                                                                                         [A, vx, vy](const double *x, double *y) {
                                                                                           if (VecPlaceArray(vx, x) || VecPlaceArray(vy, y) || MatMult(A, vx, vy) || VecResetArray(vx) || VecResetArray(vy))
                                                                                             throw std::runtime_error("PETSc's MatMult inside the coarse correction failed");
                                                                                         },
                                                                                         "PETSc MatMult");
        heptane::plugin::PcEngine *e   = p->engine;
        auto                       m   = std::make_shared<heptane::plugin::detail::HostCallbackOperator<double>>((heptane::index_t)n, cpu, [e](const double *r, double *z) { e->apply(r, z); }, e->describe());
        p->q->q                        = heptane::plugin::detail::make_global_coarse<double>(comm, a, m, p->rows->split.diag, p->rows->split.off, p->rows->split.off_cols, (heptane::index_t)p->nc, o);
        p->q->built                    = o;
      }
    } catch (const heptane::InputError &e) { refused = e.what(); });
  p->q->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  PetscCall(HeptaneRowsRestore(p->rows));
  if (!refused.empty()) {
    PetscCall(PCHeptaneCoarseFree(p));
    PetscCall(PetscInfo(pc, "-heptane_coarse: %s\n", refused.c_str()));
    if (hierarchy) {
      /* refused on every rank alike: each rank's own AMG/CPR (PCSetUp) until the pattern changes */
      *refused_hierarchy    = PETSC_TRUE;
      p->over_ranks_refused = PETSC_TRUE;
      HeptaneCallCXX(*p->over_ranks_why = "refused at this pattern (" + refused + "): each rank's own instead");
      if (p->opts->amg.over_ranks == heptane::AmgOverRanks::yes) PetscCall(PetscFPrintf(comm, PETSC_STDERR, "WARNING (heptane): -heptane_amg_global: no AMG/CPR over the ranks, each rank's own instead (%s)\n", refused.c_str()));
    } else PetscCall(PetscFPrintf(comm, PETSC_STDERR, "WARNING (heptane): -heptane_coarse: no global coarse correction, each rank's preconditioner alone (%s)\n", refused.c_str()));
  }
  PetscFunctionReturn(0);
}

/* After PCHeptaneEngine: several ranks stop together on an error of one (none is left waiting
   in a collective), with the message on the rank that had it. A singular matrix (*singular on
   some rank) is not an error, as for PETSc's own PCs (a zero pivot in ILU, LU, bjacobi): unless
   -ksp_error_if_not_converged (pc->erroriffailure), every rank records it in p->failed and sets
   PC_FACTOR_NUMERIC_ZEROPIVOT, *failed is true, and KSPSolve ends with KSP_DIVERGED_PC_FAILED.
   Collective. */
static PetscErrorCode PCHeptaneAgree(PC pc, PetscErrorCode code, PetscBool singular, const std::string &msg, PetscBool *failed)
{
  PC_Heptane *p    = (PC_Heptane *)pc->data;
  MPI_Comm    comm = PetscObjectComm((PetscObject)pc);
  /* 0 ok, 1 singular (a PC failure), 2 an error */
  PetscMPIInt mine = code ? (singular && !pc->erroriffailure ? 1 : 2) : 0, any = mine, rank = 0;

  PetscFunctionBegin;
  *failed = PETSC_FALSE;
  if (p->ranks > 1) PetscCallMPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const std::string where = p->ranks > 1 ? " on rank " + std::to_string(rank) : "";
  PetscCheck(mine < 2, PETSC_COMM_SELF, code, "PC %s%s: heptane: %s", PCHeptaneName(p), where.c_str(), msg.c_str());
  PetscCheck(any < 2, PETSC_COMM_SELF, PETSC_ERR_LIB, "PC %s: the setup failed on another rank", PCHeptaneName(p));
  if (any == 1) {
    HeptaneCallCXX(*p->failed = mine ? msg + where : "its setup failed on another rank");
    PetscCall(PCSetFailedReason(pc, PC_FACTOR_NUMERIC_ZEROPIVOT));
    PetscCall(PetscInfo(pc, "%s: the preconditioner could not be set up (%s): PC_FACTOR_NUMERIC_ZEROPIVOT, KSPSolve stops with KSP_DIVERGED_PC_FAILED\n", PCHeptaneName(p), p->failed->c_str()));
    p->mat_id = 0; /* the next setup is a full one */
    *failed   = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCSetUp_Heptane(PC pc)
{
  PC_Heptane                     *p   = (PC_Heptane *)pc->data;
  Mat                             A   = pc->pmat;
  HeptaneCSR                      csr = {};
  PetscObjectState                nz;
  PetscObjectId                   id;
  PetscInt                        nc;
  PetscBool                       values_only, refreshed = PETSC_FALSE, singular = PETSC_FALSE, failed = PETSC_FALSE;
  PetscErrorCode                  code = 0;
  std::string                     device, msg, refused;
  MPI_Comm                        comm = PetscObjectComm((PetscObject)pc);
  const heptane::plugin::CsrView *view;

  PetscFunctionBegin;
  PetscCheck(A, comm, PETSC_ERR_ORDER, "PC %s: no matrix (KSPSetOperators or PCSetOperators first)", PCHeptaneName(p));
  PetscCheck(A->rmap->N == A->cmap->N, comm, PETSC_ERR_ARG_SIZ, "PC %s: the matrix is %" PetscInt_FMT " x %" PetscInt_FMT ", not square", PCHeptaneName(p), A->rmap->N, A->cmap->N);
  {
    char who[64];
    PetscCall(PetscSNPrintf(who, sizeof(who), "PC %s", PCHeptaneName(p)));
    PetscCall(HeptaneCheckEntriesReadable((PetscObject)pc, A, who, "The PC is built from the Pmat: give the KSP an assembled one (KSPSetOperators(ksp, Amat, Pmat))."));
  }
  PetscCallMPI(MPI_Comm_size(comm, &p->ranks));
  if (!p->failed->empty()) { /* the last setup failed: a full one now, the reason cleared */
    HeptaneCallCXX(p->failed->clear());
    PetscCall(PCSetFailedReason(pc, PC_NOERROR));
  }
  PetscCall(HeptanePcOptionsNullSpace(pc->mat, A, p->opts));
  PetscCall(MatGetNonzeroState(A, &nz));
  PetscCall(PetscObjectGetId((PetscObject)A, &id));
  PetscCall(PCHeptaneBlockSize(pc, A, &nc));
  PetscCall(PCHeptaneDevice(pc, A, &device));
  values_only = (PetscBool)(p->engine->built() && id == p->mat_id && nz == p->mat_nzstate && nc == p->nc && HeptanePcOptionsEqual(*p->opts, *p->opts_built) && device == *p->device_built);
  p->nc       = nc;
  if (!values_only) p->over_ranks_refused = PETSC_FALSE; /* a new pattern: try the AMG over the ranks again */
  if (p->ranks > 1) {                                    /* this rank's diagonal block (local columns): block Jacobi over the ranks */
    PetscBool issbaij;
    Mat       src = A;
    if (!p->rows) HeptaneCallCXX(p->rows = new HeptaneRows());
    PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPISBAIJ, &issbaij));
    if (issbaij) PetscCall(HeptaneAIJCopyGet(A, &p->sbaij, &src)); /* MatGetRow would give the upper triangle only */
    PetscCall(HeptaneRowsGet(src, p->rows));
    view = &p->rows->split.diag;
  } else {
    PetscCall(PCHeptaneCSRGet(pc, A, &csr));
    view = &csr.view;
  }
  PCHeptaneEngine(p, *view, values_only, device, &msg, &code, &refreshed, &refused, &singular);
  PetscCall(HeptaneCSRRestore(&csr));
  if (p->rows) PetscCall(HeptaneRowsRestore(p->rows));
  PetscCall(PCHeptaneAgree(pc, code, singular, msg, &failed));
  if (failed) { /* no coarse correction around a preconditioner that is not there */
    PetscCall(PCHeptaneCoarseFree(p));
    HeptaneCallCXX(*p->device_built = device; *p->mat_type = ((PetscObject)A)->type_name; *p->last = "FAILED");
    PetscFunctionReturn(0);
  }
  if (!refused.empty()) PetscCall(PetscInfo(pc, "%s: values-only refresh refused (%s); set up from scratch\n", PCHeptaneName(p), refused.c_str()));
  if (p->ranks > 1 || p->q) {
    PetscBool fall_back;
    PetscCall(PCHeptaneCoarse(pc, p->rows && p->sbaij.aij ? p->sbaij.aij : A, refreshed, &fall_back));
    if (fall_back) { /* the AMG/CPR over the ranks refused: each rank's own, from its rows */
      const std::string why = *p->over_ranks_why;
      PetscCall(HeptaneRowsGet(p->rows && p->sbaij.aij ? p->sbaij.aij : A, p->rows));
      PCHeptaneEngine(p, p->rows->split.diag, PETSC_FALSE, device, &msg, &code, &refreshed, &refused, &singular);
      PetscCall(HeptaneRowsRestore(p->rows));
      HeptaneCallCXX(*p->over_ranks_why = why);
      PetscCall(PCHeptaneAgree(pc, code, singular, msg, &failed));
      if (failed) PetscFunctionReturn(0);
      PetscCall(PetscInfo(pc, "%s: the AMG/CPR over the ranks was refused; each rank's own instead\n", PCHeptaneName(p)));
    }
  }
  p->mat_id      = id;
  p->mat_nzstate = nz;
  *p->opts_built = *p->opts;
  {
    char ms[32];
    PetscCall(PetscSNPrintf(ms, sizeof(ms), "%.3f ms", p->engine->timings().last_setup_ms));
    HeptaneCallCXX(*p->device_built = device; *p->mat_type = ((PetscObject)A)->type_name; *p->last = std::string(refreshed ? "values only (numeric part redone on the kept hierarchy)" : "full (new pattern)") + " in " + ms);
  }
  PetscCall(PetscInfo(pc, "%s: setup %s; %s\n", PCHeptaneName(p), p->last->c_str(), p->engine->describe().c_str()));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCApply_Heptane(PC pc, Vec x, Vec y)
{
  PC_Heptane        *p = (PC_Heptane *)pc->data;
  const PetscScalar *xa;
  PetscScalar       *ya;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(x, &n));
  if (!p->failed->empty()) { /* a failed setup: Inf, as PETSc's MatSolve of a failed factor, so that
                                 the KSP stops with KSP_DIVERGED_PC_FAILED */
    PetscScalar *inf;
    PetscInt     m;
    PetscCall(VecGetLocalSize(y, &m));
    PetscCall(VecGetArrayWrite(y, &inf)); /* not VecSetInf: deprecated in 3.22, gone from 3.25's library */
    for (PetscInt i = 0; i < m; ++i) inf[i] = PETSC_INFINITY;
    PetscCall(VecRestoreArrayWrite(y, &inf));
    PetscFunctionReturn(0);
  }
  PetscCheck(n == (PetscInt)p->engine->rows(), PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "PC %s: the vector has %" PetscInt_FMT " local rows, the preconditioner %" PetscInt_FMT, PCHeptaneName(p), n, (PetscInt)p->engine->rows());
  if (!(p->q && p->q->q) && sizeof(PetscScalar) == sizeof(double)) {
    /* PETSc's CUDA vectors on the preconditioner's GPU: applied on their device arrays where
       they are (no copy to the host and back); else the host path below */
    PetscMemType mx = PETSC_MEMTYPE_HOST, my = PETSC_MEMTYPE_HOST;
    PetscBool    done = PETSC_FALSE;
    PetscCall(VecGetArrayReadAndMemType(x, &xa, &mx));
    if (PetscMemTypeDevice(mx)) {
      PetscCall(VecGetArrayWriteAndMemType(y, &ya, &my));
      if (PetscMemTypeDevice(my) && p->engine->on_device((const double *)xa, (const double *)ya)) {
        HeptaneCallCXX(p->engine->apply_device((const double *)xa, (double *)ya));
        done = PETSC_TRUE;
      }
      PetscCall(VecRestoreArrayWriteAndMemType(y, &ya));
    }
    PetscCall(VecRestoreArrayReadAndMemType(x, &xa));
    if (done) PetscFunctionReturn(0);
  }
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayWrite(y, &ya));
  if (p->q && p->q->q) HeptaneCallCXX(p->q->q->op()->apply(1.0, xa, 0.0, ya));
  else HeptaneCallCXX(p->engine->apply(xa, ya));
  PetscCall(VecRestoreArrayWrite(y, &ya));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCView_Heptane(PC pc, PetscViewer viewer)
{
  PC_Heptane *p = (PC_Heptane *)pc->data;
  PetscBool   isascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane %s, applied by heptane (a CUDA Vec on heptane's GPU where it is; else the Vec's host array to the executor and back)\n", p->type == heptane::PcType::amg ? "smoothed-aggregation AMG (one cycle per application)" : "CPR (quasi-IMPES pressure AMG, then a second stage on the whole system)"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane options: -heptane_device %s %s\n", p->device, HeptanePcOptionsText(*p->opts, (PetscBool)(p->type == heptane::PcType::cpr)).c_str()));
  if (!p->failed->empty()) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner setup FAILED: %s (PC_FACTOR_NUMERIC_ZEROPIVOT: KSPSolve stops with KSP_DIVERGED_PC_FAILED, as after a zero pivot in PETSc's own PCs; -ksp_error_if_not_converged makes it an error)\n",
                                     p->failed->c_str()));
    PetscFunctionReturn(0);
  }
  if (!p->engine->built()) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner: %s\n", p->engine->describe().c_str()));
  if (!p->device_why->empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane device: %s\n", p->device_why->c_str()));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane block size Nc=%" PetscInt_FMT " from %s, PETSc matrix %s\n", p->nc, p->nc_from->c_str(), p->mat_type->c_str()));
  if (p->ranks > 1 && p->over_ranks)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner on %d ranks: the %s over the ranks below (each rank keeps only point Jacobi of its rows; should the hierarchy be refused, each rank's own %s is built)\n", (int)p->ranks, p->type == heptane::PcType::cpr ? "CPR" : "AMG", p->type == heptane::PcType::cpr ? "CPR" : "AMG"));
  else if (p->ranks > 1)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner on %d ranks: %s of each rank's diagonal block (block Jacobi over the ranks; the couplings between ranks are not in it%s); rank 0's shown; not over the ranks: %s\n", (int)p->ranks, p->type == heptane::PcType::amg ? "AMG" : "CPR",
                                     p->q && p->q->q ? ", but in the global coarse correction below" : ": -heptane_coarse adds a global coarse correction, -heptane_amg_global one AMG over the ranks", p->over_ranks_why->c_str()));
  if (p->q && p->q->q && p->q->built.hierarchy)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane %s over the ranks (-heptane_amg_global: %s), applied instead of each rank's %s: %s; last setup %.3f ms; rank 0's shown\n", p->type == heptane::PcType::cpr ? "CPR" : "AMG", p->over_ranks_why->c_str(), p->type == heptane::PcType::cpr ? "CPR" : "AMG",
                                     p->q->q->op()->describe().c_str(), p->q->ms));
  else if (p->q && p->q->q) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane global coarse correction (-heptane_coarse): %s; last setup %.3f ms; rank 0's shown\n", p->q->q->op()->describe().c_str(), p->q->ms));
  {
    const std::string table = p->engine->hierarchy();
    if (!table.empty()) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane AMG hierarchy:\n"));
      PetscCall(HeptaneViewLines(viewer, "    ", table));
    }
  }
  {
    const heptane::plugin::PcTimings &t = p->engine->timings();
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner setups: %d full (new pattern), %d values-only (numeric only, hierarchy kept); last: %s\n", t.builds, t.refreshes, p->last->c_str()));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane applications: %ld, %.3f ms in all; %ld on PETSc's CUDA vectors where they are (their device arrays, no host copy), %ld through the host arrays\n", t.applies, t.apply_ms, t.device_applies, t.applies - t.device_applies));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCSetFromOptions_Heptane(PC pc, HeptaneOptionItems PetscOptionsObject)
{
  PC_Heptane *p = (PC_Heptane *)pc->data;
  char        device[64];
  PetscBool   flg;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, p->type == heptane::PcType::amg ? "PC hamg options (heptane AMG)" : "PC hcpr options (heptane CPR)");
  PetscCall(PetscOptionsString("-heptane_device", "Where heptane's preconditioner runs: auto (the GPU where the measured model of heptane solve --device auto says it wins for the matrix's stored entries per rank and the host threads, else the CPU), cpu, gpu, gpu:N", PCHeptaneMan(p), p->device, device, sizeof(device), &flg));
  if (flg) {
    PetscCall(HeptaneCheckDevice(device));
    PetscCall(PetscStrncpy(p->device, device, sizeof(p->device)));
  }
  PetscCall(PetscOptionsBoundedInt("-heptane_block", "Unknowns per cell Nc (AMG aggregates whole cells; CPR's cells) (default: the DMDA's dof, else the matrix block size)", PCHeptaneMan(p), p->block, &p->block, NULL, 0));
  PetscCall(HeptanePcOptionsFromOptions(PetscOptionsObject, p->opts, (PetscBool)(p->type == heptane::PcType::cpr), PCHeptaneMan(p)));
  PetscCall(PetscOptionsBool("-heptane_coarse", "Several ranks: a global coarse correction around each rank's preconditioner (aggregates per rank, A_c = P^T A P with the couplings between ranks, whole on every rank; its symmetric form)", PCHeptaneMan(p), p->coarse, &p->coarse, NULL));
  PetscCall(PetscOptionsBoundedInt("-heptane_coarse_aggregates", "-heptane_coarse: aggregates per rank (0: min(64, 512 / (ranks x Nc)))", PCHeptaneMan(p), p->coarse_aggregates, &p->coarse_aggregates, NULL, 0));
  PetscCall(PetscOptionsEList("-heptane_coarse_solve", "-heptane_coarse: how every rank solves with A_c: dense LU (at most 8192 unknowns), AMG (-heptane_coarse_cycles steps of its cycle; many aggregates per rank), auto (dense up to 1024 unknowns)", PCHeptaneMan(p), HeptaneCoarseSolves, 3, HeptaneCoarseSolves[p->coarse_solve], &p->coarse_solve, NULL));
  PetscCall(PetscOptionsRangeInt("-heptane_coarse_cycles", "-heptane_coarse_solve amg: steps of the AMG iteration per coarse solve", PCHeptaneMan(p), p->coarse_cycles, &p->coarse_cycles, NULL, 1, 100));
  PetscCall(PetscOptionsEList("-heptane_coarse_aggregation", "-heptane_coarse: the aggregates: bfs (grown breadth-first) or strength (AMG's aggregates of the strong couplings, level by level down to the count nearest -heptane_coarse_aggregates)", PCHeptaneMan(p), HeptaneCoarseAggregations, 2, HeptaneCoarseAggregations[p->coarse_aggregation], &p->coarse_aggregation, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode PCReset_Heptane(PC pc)
{
  PC_Heptane *p = (PC_Heptane *)pc->data;

  PetscFunctionBegin;
  PetscCall(PCHeptaneCoarseFree(p));
  PetscCall(MatDestroy(&p->sbaij.aij));
  delete p->engine;
  delete p->rows;
  p->engine = NULL;
  p->rows   = NULL;
  HeptaneCallCXX(p->engine = new heptane::plugin::PcEngine());
  p->mat_id      = 0;
  p->mat_nzstate = -1;
  HeptaneCallCXX(p->failed->clear());
  PetscFunctionReturn(0);
}

static PetscErrorCode PCDestroy_Heptane(PC pc)
{
  PC_Heptane *p = (PC_Heptane *)pc->data;

  PetscFunctionBegin;
  PetscCall(PCHeptaneCoarseFree(p));
  PetscCall(MatDestroy(&p->sbaij.aij));
  delete p->engine;
  delete p->rows;
  delete p->opts;
  delete p->opts_built;
  delete p->nc_from;
  delete p->baij;
  delete p->mat_type;
  delete p->last;
  delete p->device_built;
  delete p->device_why;
  delete p->over_ranks_why;
  delete p->failed;
  PetscCall(PetscFree(pc->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCCreate_Heptane_Private(PC pc, heptane::PcType type)
{
  PC_Heptane *p;

  PetscFunctionBegin;
  PetscCall(PetscNew(&p));
  p->coarse_cycles = 2;
  pc->data         = p;
  p->type          = type;
  p->mat_nzstate   = -1;
  PetscCall(PetscStrncpy(p->device, "auto", sizeof(p->device)));
  HeptaneCallCXX(p->opts = new heptane::PcOptions(); p->opts->amg.over_ranks = heptane::AmgOverRanks::automatic; p->opts->cpr.amg.over_ranks = heptane::AmgOverRanks::automatic; p->opts_built = new heptane::PcOptions(); p->over_ranks_why = new std::string(); p->failed = new std::string(); p->engine = new heptane::plugin::PcEngine(); p->nc_from = new std::string(); p->mat_type = new std::string(); p->last = new std::string(); p->device_built = new std::string(); p->device_why = new std::string(); p->baij = new HeptaneBAIJ());
  pc->ops->setup          = PCSetUp_Heptane;
  pc->ops->apply          = PCApply_Heptane;
  pc->ops->view           = PCView_Heptane;
  pc->ops->setfromoptions = PCSetFromOptions_Heptane;
  pc->ops->reset          = PCReset_Heptane;
  pc->ops->destroy        = PCDestroy_Heptane;
  PetscFunctionReturn(0);
}

/*MC
   PCHAMG - "hamg": heptane's smoothed-aggregation algebraic multigrid (one V- or W-cycle per
   application) on the CPU or a GPU. With heptane's KSPs (hbcgs, hcg, hgmres) it runs inside
   heptane's loop; with PETSc's KSPs it is an ordinary PC (on several ranks: AMG of each rank's
   diagonal block, block Jacobi over the ranks).

   Options Database Keys:
+  -heptane_amg_threshold <theta> - strength of connection (default 0.02)
.  -heptane_amg_smoother <auto,chebyshev,jacobi,l1jacobi,ilu0mc> - smoother (default auto: ilu0mc
   for a non-symmetric block system, Nc > 1, else chebyshev)
.  -heptane_amg_sweeps <k> - pre- and post-smoothing sweeps (default 2)
.  -heptane_amg_cycle <v,w> - cycle (default v)
.  -heptane_amg_coarse_size <n> - stop coarsening at n rows (default 300; box aggregation: min(n, 64))
.  -heptane_amg_max_levels <L> - at most L levels (default 20)
.  -heptane_amg_tail_rows <n> - the levels of at most n rows, down to the coarsest, run as one launch
   (one CTA on a GPU; chebyshev, jacobi, l1jacobi; default 0: every step its own launch)
.  -heptane_amg_setup <auto,host,device> - where the hierarchy is built (default auto: the GPU
   for a GPU run and a scalar system)
.  -heptane_amg_lambda_its <N> - Chebyshev's lambda_max(D^-1 A): 0 (default) Gershgorin's bound,
   N > 0 estimated by N power and N + 2 Lanczos steps
.  -heptane_amg_p_max <N> - the AMG over the ranks: at most N entries a row of the smoothed P (the
   largest, the row's sum kept; default 6, 0: all)
.  -heptane_amg_aggregation <mis,box> - aggregates: mis (default; any pattern) or box (2 cells a box
   along each strongly coupled axis of the operator's grid, Nc = 1; mis where there is no grid)
.  -heptane_amg_box_ratio <r> - box: an axis is halved when its mean strength is >= r times the
   strongest axis' (default 0.25)
.  -heptane_amg_p_weight <w> - prolongator smoothing weight over rho(D^-1 A) (default 4/3; 0: plain
   aggregation, whose coarse levels keep a 7-point stencil)
.  -heptane_amg_global <true,false> - hamg (hcpr: its pressure stage) on several ranks: one AMG
   hierarchy over all ranks (levels split over the ranks, smoothed through the distributed
   product; chebyshev, jacobi or l1jacobi; on the host) applied instead of each rank's AMG; a
   values-only PCSetUp keeps its aggregates and P and redoes the Galerkin products. Not given:
   on for CPU ranks without -heptane_coarse, for hcpr and for hamg on a scalar system (Nc = 1),
   off otherwise; a refused hierarchy gives each rank its own AMG/CPR until the pattern changes
.  -heptane_block <Nc> - unknowns per cell (default: the DMDA's dof, else the matrix block size)
.  -heptane_coarse <true,false> - several ranks: a global coarse correction around each rank's
   AMG (symmetric form, for every KSP); -heptane_coarse_aggregates N per rank,
   -heptane_coarse_solve <auto,dense,amg>, -heptane_coarse_cycles N (amg, default 2),
   -heptane_coarse_aggregation <bfs,strength>
-  -heptane_device <auto,cpu,gpu,gpu:N> - where it runs

M*/
PetscErrorCode PCCreate_HAMG(PC pc)
{
  PetscFunctionBegin;
  PetscCall(PCCreate_Heptane_Private(pc, heptane::PcType::amg));
  PetscFunctionReturn(0);
}

/*MC
   PCHCPR - "hcpr": heptane's two-stage CPR for coupled Nc x Nc block systems (quasi-IMPES
   decoupling, one AMG cycle on the pressure system, then BILU(0) or block Jacobi on the whole
   system). Options as for PCHAMG (its pressure AMG), plus

   Options Database Keys:
+  -heptane_cpr_pressure_index <p> - the pressure unknown of each cell (default 0)
-  -heptane_cpr_second <auto,bilu0,bilu0mc,bjacobi> - the second stage (auto: BILU(0) on the
   CPU, multi-colour BILU(0) on a GPU)

M*/
PetscErrorCode PCCreate_HCPR(PC pc)
{
  PetscFunctionBegin;
  PetscCall(PCCreate_Heptane_Private(pc, heptane::PcType::cpr));
  PetscFunctionReturn(0);
}
