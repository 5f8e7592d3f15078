/*
   KSPHBCGS ("hbcgs"), KSPHCG ("hcg") and KSPHGMRES ("hgmres"): BiCGStab, CG and flexible
   restarted GMRES on heptane's engine (docs/design.md section 5), made by heptane::make_solver. One
   private struct and one ops table for all three, like KSPCreate_BCGS.

   Setup (KSPSetUp_Heptane, called by KSPSetUp for a new KSP and for every new matrix, before
   KSPSetUp's PCSetUp):
     - the PETSc PC's type selects heptane's preconditioner (none, jacobi, pbjacobi -> block
       Jacobi with Nc x Nc blocks, ilu -> ILU(0)/BILU(0), bjacobi with ILU(0) blocks -> ILU(0)
       of each rank's block, hamg -> AMG, hcpr -> CPR with the -heptane_amg_ and -heptane_cpr_
       options), which heptane applies inside its loop; the PETSc PC keeps its type (PCGetType,
       -ksp_view) but is held: its own setup and apply are replaced by no-ops while this KSP
       has it (KSPHeptaneHoldPC; given back by KSPReset/KSPDestroy). ILU options heptane does
       not honour (a zero-pivot shift, an ordering) are named in a warning;
     - any other PC type, or options that change the method (ILU(k), bjacobi with other
       blocks), and every type with -heptane_petsc_pc: PETSc's own PC, set up by PCSetUp and
       applied through PCApply at each iteration (the vectors to the host and back on a GPU);
     - the matrix read is the KSP's Pmat (PETSc's convention: the preconditioner from Pmat);
       where Amat is another matrix (matrix-free from -snes_mf_operator, or assembled), the
       Krylov loop's products are Amat's MatMult (KSPHeptaneAmatOperator);
     - hcg: the operator's symmetry is checked once per matrix state; a nonsymmetric one stops
       KSPSolve with KSP_DIVERGED_INDEFINITE_MAT and a warning pointing to hbcgs;
     - one rank: SeqAIJ and bdiagh are read in place (MatGetRowIJ, MatSeqAIJGetArrayRead),
       SeqBAIJ: on a GPU with the grid known its blocks and values go up as they are and are
       expanded there (KSPHeptaneBuildFromBlocks), otherwise its scalar CSR is made on the host
       by formula (values gathered); values-only refreshes read the BAIJ array in place where
       the operator and PC can (KSPHeptaneBAIJInPlace); SBAIJ through an AIJ copy, a one-rank
       MPIAIJ gives its diagonal
       block. The grid comes from -heptane_grid/-heptane_block, else the DMDA of the matrix (or
       of the KSP; a DMDA's matrix with entries off its stencil is detected instead), else
       detect_structure;
     - several ranks (docs/design.md section 4): each rank's rows become heptane's distributed
       BDIA-GH operator (engine_dist.cpp): an MPIAIJ (a DMDA's default, bdiagh) lends its
       diagonal and off-diagonal blocks in place, MPIBAIJ's two SeqBAIJ blocks are expanded to
       scalar CSR on the host, any other type is copied with MatGetRow (HeptaneRowsGet); each rank
       builds its preconditioner from its diagonal block, so ILU is block Jacobi over the ranks
       with ILU(0) blocks, as PETSc's bjacobi. A DMDA
       split in x or y (PETSc's default split) numbers the unknowns rank by rank: the matrix
       is renumbered into the grid's natural order once per pattern (KSPHeptaneNaturalMap:
       MatCreateSubMatrix from the DMDA's AO) and b and x are scattered to it and back;
     - same matrix object and nonzero state (MatGetNonzeroState) as the last setup: only the
       values move (engine.hpp) and the preconditioner redoes its numeric part on its kept
       symbolic setup; otherwise the structure is found and the operator and the
       preconditioner are built again (on several ranks the ranks agree on what to do);
     - on the CPU back end heptane's host work runs on -heptane_threads OpenMP threads per rank
       (default 1, OpenMP's own count when OMP_NUM_THREADS is set), the caller's count restored
       after.
   Solve (KSPSolve_Heptane): b and x go to heptane's device, the solver iterates, the monitor
   and the residual history are fed from heptane's monitor, and ksp->its, ksp->rnorm and
   ksp->reason are set from heptane's Status.
*/
#include "plugin/device_pool.hpp"
#include "formats/values_kernels.hpp"
#include "solver/solve.hpp"
#include "plugin/petsc_common.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

typedef struct {
  heptane::SolverType solver;
  /* options (KSPSetFromOptions_Heptane) */
  PetscInt                              format; /* index into HeptaneFormats */
  char                                  device[64];
  PetscInt                              precision; /* index into HeptanePrecisions */
  PetscInt                              check_every;
  PetscBool                             fold;               /* -heptane_fold: Jacobi/block Jacobi folded into the operator (BiCGStab) */
  PetscBool                             coarse;             /* -heptane_coarse: several ranks, a global coarse correction around heptane's PC */
  PetscInt                              coarse_aggregates;  /* -heptane_coarse_aggregates: per rank (0: the default) */
  PetscInt                              coarse_solve;       /* -heptane_coarse_solve: 0 auto, 1 dense, 2 amg */
  PetscInt                              coarse_cycles;      /* -heptane_coarse_cycles: AMG steps per coarse solve */
  PetscInt                              coarse_aggregation; /* -heptane_coarse_aggregation: 0 bfs, 1 strength */
  heptane::plugin::GlobalCoarseOptions *coarse_built;       /* the options the correction in krylov was built with */
  PetscBool                             refine;             /* -heptane_refine: mixed precision refined against the fp64 matrix */
  PetscBool                             check_true;         /* -heptane_check_true_residual: single (and unrefined mixed): ||b - A x|| with PETSc's fp64 MatMult after the solve */
  PetscInt                              register_after;     /* -heptane_register_after: GPU, AIJ or BAIJ: from this values-only refresh of a matrix on, PETSc's value array registered with CUDA and read in place (0: never) */
  PetscInt                              restart;            /* hgmres: -ksp_gmres_restart (KSPGMRESSetRestart) */
  heptane::PcOptions                   *pc_opts;            /* -heptane_amg_*, -heptane_cpr_* (hamg, hcpr) */
  heptane::PcOptions                   *pc_opts_built;      /* those the preconditioner in krylov was built with */
  PetscBool                             over_ranks_refused; /* the AMG/CPR over the ranks was refused at this pattern: each rank's own */
  std::string                          *over_ranks_why;     /* what decided for or against the AMG/CPR over the ranks (HeptaneAmgOverRanks) */
  /* the preconditioner, taken from the PETSc PC */
  heptane::PcType pc;
  char            pc_from[64];   /* what it was chosen from, for the view */
  heptane::PcType pc_built;      /* type of the preconditioner in krylov */
  PetscBool       pc_refreshed;  /* the last setup of it was values-only (numeric part only) */
  PetscBool       baij_blocks;   /* the operator was last built from BAIJ's blocks on the device (no host CSR made) */
  PetscBool       device_values; /* the last values-only refresh read the matrix's values on the GPU (aijcusparse) */
  PetscBool       device_vecs;   /* the last solve took b and x on the GPU (PETSc's CUDA vectors), no host copy */
  PetscBool       solving;       /* inside heptane's solve: the iterate is heptane's, ksp->vec_sol the initial guess */
  PetscInt        device_nnz;    /* ... and that many of them */
  PetscInt        ilu;           /* -heptane_ilu: index into HeptaneIluOrders */
  PetscBool       ilu_fallback;  /* auto: natural ILU(0) after multi-colour ILU(0) failed */
  Vec             x0;            /* the initial guess, kept for a fallback re-solve and for the null space's removal */
  PetscInt        null_vecs;     /* Amat's null space (MatSetNullSpace) at the last solve: -1 none, else its vectors (the constant counted) */
  PetscReal       null_before;   /* ||P_N (x - x0)|| the last solve's correction had in that null space before it was removed */
  Vec             r_true;        /* b - A x of the true-residual check */
  PetscReal       true_rnorm;    /* its norm after the last solve; -1: not checked */
  /* the matrix the engine holds */
  PetscObjectId                        mat_id;
  PetscObjectState                     mat_nzstate, mat_state;
  HeptaneAIJCopy                       sbaij;                  /* an SBAIJ matrix's AIJ copy (owned) */
  HeptaneBAIJ                         *baij;                   /* a BAIJ matrix's map to scalar CSR (KSPHeptaneCSRGet) */
  HeptaneBlockIndex32                 *blk32_diag, *blk32_off; /* several ranks, 64-bit PetscInt: an MPIBAIJ's block indices in 32 bits */
  const char                          *input_how;              /* how the matrix is read, for the view */
  heptane::plugin::MatrixEngine       *own;                    /* engine for non-bdiagh matrices */
  heptane::plugin::MatrixEngine       *engine;                 /* the engine used: own, or the bdiagh matrix's */
  Mat                                  engine_mat;             /* the bdiagh matrix lending its engine (referenced) */
  heptane::plugin::KrylovEngine       *krylov;
  std::string                         *last_update; /* what the last setup did, for the view */
  std::string                         *grid_source;
  std::string                         *device_resolved; /* the device -heptane_device names for the last setup */
  std::string                         *device_why;      /* what -heptane_device auto chose and why */
  std::string                         *mat_type;
  std::string                         *pc_note;   /* why the preconditioner is what it is (fallbacks) */
  std::string                         *pc_failed; /* heptane's PC could not be set up (a zero pivot, a zero diagonal,
                                                     a singular block: heptane::SingularError on some rank): the
                                                     solve stops with KSP_DIVERGED_PC_FAILED, as PETSc's PCs do;
                                                     empty when it was set up */
  HeptaneRows                         *rows;      /* several ranks: this rank's rows (kept for the PC) */
  struct HeptanePcRows                *pc_rows;   /* several ranks, MPIBAIJ + ILU(0): the diagonal part's scalar row pointers (kept: made at a new pattern only) */
  Mat                                  rows_from; /* the matrix they were read from (not referenced) */
  PetscMPIInt                          ranks;     /* of the KSP's communicator */
  PetscInt                             full_builds, value_refreshes, solves;
  long long                            prepared_allocs, solve_allocs; /* the executor's allocations in the last KSPHeptanePrepare / KSPSolve */
  double                               prepared_ms;
  PetscInt                             pc_reuses;    /* values-only setups that kept the preconditioner (KSPSetReusePreconditioner) */
  PetscLogDouble                       rank_entries; /* several ranks: this rank's entries (MatGetInfo) at the last new pattern */
  PetscErrorCode                       monitor_error;
  PetscBool                            host_test;       /* the host's KSPSetConvergenceTest runs inside heptane's loop this solve */
  const std::function<void(double *)> *iterate;         /* during a monitor's or the test's call: writes x_i in the solve's order (empty: none) */
  Vec                                  x_mid, nat_mid;  /* KSPBuildSolution's vectors during the solve (PETSc's layout, the natural one) */
  PetscBool                            monitor_iterate; /* the last solve: a monitor may build the iterate (SolverOptions::monitor_iterate) */
  KSPConvergedReason                   host_reason;     /* what it said at the stop */
  /* a PC type heptane does not have (lu, asm, ilu(k), gamg, ...): PETSc's own PC, set up by
     KSPSetUp's PCSetUp and applied through PCApply inside heptane's loop */
  PetscBool      petsc_pc;
  PetscBool      force_petsc_pc; /* -heptane_petsc_pc: do so for every PC type */
  Vec            pc_r, pc_z;     /* PETSc-layout vectors (Pmat's type) for a PETSc call in heptane's loop: PCApply, Amat's MatMult (arrays placed or scattered) */
  Vec            nat_r, nat_z;   /* natural-layout vectors without arrays (natural map) */
  PetscErrorCode pc_apply_error; /* of PCApply or PETSc's MatMult of Amat */
  std::string   *petsc_pc_note;  /* why, for the view */
  /* a PC type heptane applies itself: PETSc's PC keeps its type (PCGetType, -ksp_view), its
     own setup and apply are replaced by no-ops while heptane's KSP holds it */
  PC             pc_inside;
  struct _PCOps *pc_ops_saved;
  std::string   *warned; /* warnings given (once each) */
  /* hcg: is the operator symmetric (checked once per pattern and values) */
  PetscBool        check_symmetry;
  PetscReal        symmetry_tol;
  PetscInt         symmetric; /* -1 not checked, 0 no, 1 yes */
  PetscObjectState sym_state;
  PetscObjectId    sym_id;
  std::string     *sym_note;
  /* OpenMP threads of heptane's host work on this rank (-heptane_threads; 0: OpenMP's own) */
  PetscInt  threads;
  PetscBool threads_set;
  /* several ranks, a numbering that is not the grid's natural one (a DMDA split in x or y):
     the matrix renumbered once per pattern into the natural order, rows [rstart, rend) of it
     on this rank (MatCreateSubMatrix, values gathered again at each values-only setup), and b
     and x scattered to and from it */
  IS           nat_is; /* PETSc indices of this rank's natural rows */
  Mat          nat_A;  /* the renumbered matrix */
  VecScatter   nat_sc; /* PETSc layout -> natural layout */
  Vec          nat_b, nat_x;
  std::string *nat_note;
} KSP_Heptane;

/* -heptane_ilu: the ordering of -pc_type ilu. auto: multi-colour on a GPU (its apply is one
   launch per colour; the natural order needs one per grid wavefront), natural on the CPU. */
static const char *const HeptaneIluOrders[] = {"auto", "natural", "multicolor"};

static const char *KSPHeptaneName(KSP_Heptane *h)
{
  return h->solver == heptane::SolverType::bicgstab ? KSPHBCGS : (h->solver == heptane::SolverType::cg ? KSPHCG : KSPHGMRES);
}

static heptane::plugin::MatrixConfig KSPHeptaneConfig(KSP_Heptane *h)
{
  heptane::plugin::MatrixConfig cfg;
  cfg.format    = HeptaneFormats[h->format];
  cfg.device    = h->device_resolved->empty() ? std::string(h->device) : *h->device_resolved;
  cfg.precision = h->precision == 0 ? heptane::Precision::double_ : (h->precision == 1 ? heptane::Precision::single : heptane::Precision::mixed);
  return cfg;
}

/* The number of ranks; several need the distributed operator (heptane_distributed). */
static PetscErrorCode KSPHeptaneCheckComm(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)ksp), &h->ranks));
#if !defined(HEPTANE_PLUGIN_DISTRIBUTED)
  PetscCheck(h->ranks == 1, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "KSP %s: this build of the plugin has no distributed operator (heptane_distributed was not built: configure with MPI and HEPTANE_WITH_MPI=ON), and this run has %d ranks; run on one rank or use a PETSc KSP (e.g. -ksp_type bcgs)", KSPHeptaneName(h),
             (int)h->ranks);
#endif
  PetscFunctionReturn(0);
}

/* Thrown out of heptane's solver when PETSc's PCApply or MatMult called from inside it failed
   (its PETSc error is in pc_apply_error). */
struct HeptaneCallbackFailed { };

/* A warning on stderr, once per KSP and text, and in -info. */
static PetscErrorCode KSPHeptaneWarn(KSP ksp, const char msg[])
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCall(PetscInfo(ksp, "%s\n", msg));
  if (h->warned->find(msg) != std::string::npos) PetscFunctionReturn(0);
  HeptaneCallCXX(*h->warned += std::string(msg) + "\n");
  PetscCall(PetscFPrintf(PetscObjectComm((PetscObject)ksp), PETSC_STDERR, "WARNING (heptane): %s\n", msg));
  PetscFunctionReturn(0);
}

/* -pc_type bjacobi (PETSc's default on several ranks): one block per rank, factored by ILU(0),
   is what heptane does for ilu. Otherwise *why says what heptane cannot do (PETSc's own bjacobi
   is applied then). */
static PetscErrorCode KSPHeptaneBJacobiIsILU0(KSP ksp, PC pc, char why[], size_t len)
{
  PetscInt    total = -1, local = -1, levels = 0;
  char        sub[64];
  PetscBool   flg;
  const char *prefix;
  PetscMPIInt size;

  PetscFunctionBegin;
  why[0] = 0;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)pc), &size));
  PetscCall(PCBJacobiGetTotalBlocks(pc, &total, NULL));
  PetscCall(PCBJacobiGetLocalBlocks(pc, &local, NULL));
  if (!((total <= 0 || total == size) && local <= 1)) {
    PetscCall(PetscSNPrintf(why, len, "%" PetscInt_FMT " blocks on %d ranks (heptane's is one block per rank)", total > 0 ? total : local * size, (int)size));
    PetscFunctionReturn(0);
  }
  PetscCall(PCGetOptionsPrefix(pc, &prefix));
  PetscCall(PetscOptionsGetString(((PetscObject)pc)->options, prefix, "-sub_pc_type", sub, sizeof(sub), &flg));
  if (flg && strcmp(sub, PCILU)) {
    PetscCall(PetscSNPrintf(why, len, "-sub_pc_type %s (heptane's blocks are ILU(0))", sub));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscOptionsGetString(((PetscObject)pc)->options, prefix, "-sub_ksp_type", sub, sizeof(sub), &flg));
  if (flg && strcmp(sub, KSPPREONLY)) {
    PetscCall(PetscSNPrintf(why, len, "-sub_ksp_type %s (heptane applies each block's ILU(0) once)", sub));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscOptionsGetInt(((PetscObject)pc)->options, prefix, "-sub_pc_factor_levels", &levels, &flg));
  if (levels != 0) PetscCall(PetscSNPrintf(why, len, "-sub_pc_factor_levels %" PetscInt_FMT " (heptane has ILU(0))", levels));
  PetscFunctionReturn(0);
}

/* A PC heptane applies inside its KSP keeps its type; PETSc's own setup and apply of it are
   replaced by these while heptane's KSP holds it (KSPHeptaneHoldPC), restored after. */
static PetscErrorCode PCSetUp_HeptaneHeld(PC pc)
{
  PetscFunctionBegin;
  (void)pc;
  PetscFunctionReturn(0);
}
static PetscErrorCode PCApply_HeptaneHeld(PC pc, Vec x, Vec y)
{
  PetscFunctionBegin;
  (void)x;
  (void)y;
  SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_SUP, "PC %s is applied by heptane inside its KSP (hbcgs, hcg, hgmres), which holds it: PETSc's own setup of it is not run, so it has no PCApply here. Use -heptane_petsc_pc to have heptane's KSP apply PETSc's own PC instead",
          ((PetscObject)pc)->type_name);
}
static PetscErrorCode PCView_HeptaneHeld(PC pc, PetscViewer viewer)
{
  PetscBool isascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (isascii) PetscCall(PetscViewerASCIIPrintf(viewer, "  applied by heptane inside the KSP (its \"heptane preconditioner\" line above says what it is); PETSc's own setup and apply of this PC are not run\n"));
  (void)pc;
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPHeptaneHoldPC(KSP ksp, PC pc)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  if (pc->ops->setup == PCSetUp_HeptaneHeld) PetscFunctionReturn(0);
  if (!h->pc_ops_saved) PetscCall(PetscNew(&h->pc_ops_saved));
  *h->pc_ops_saved            = *pc->ops;
  h->pc_inside                = pc;
  pc->ops->setup              = PCSetUp_HeptaneHeld;
  pc->ops->apply              = PCApply_HeptaneHeld;
  pc->ops->applytranspose     = PCApply_HeptaneHeld;
  pc->ops->view               = PCView_HeptaneHeld;
  pc->ops->matapply           = NULL;
  pc->ops->applyrichardson    = NULL;
  pc->ops->applyBA            = NULL;
  pc->ops->applyBAtranspose   = NULL;
  pc->ops->applysymmetricleft = pc->ops->applysymmetricright = NULL;
  pc->ops->setuponblocks                                     = NULL;
  pc->ops->presolve                                          = NULL;
  pc->ops->postsolve                                         = NULL;
  pc->ops->getfactoredmatrix                                 = NULL;
  pc->setupcalled                                            = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Give the PC back to PETSc (another PC kind, another KSP type, KSPReset): its own ops again,
   set up afresh at the next PCSetUp. */
static PetscErrorCode KSPHeptaneReleasePC(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  if (h->pc_inside && h->pc_inside == ksp->pc && ksp->pc->ops->setup == PCSetUp_HeptaneHeld) {
    *ksp->pc->ops        = *h->pc_ops_saved;
    ksp->pc->setupcalled = PETSC_FALSE;
  }
  h->pc_inside = NULL;
  PetscFunctionReturn(0);
}

/* The PETSc PC's type selects heptane's preconditioner, which heptane applies inside its loop
   (the PC is held: KSPHeptaneHoldPC); a type heptane does not have, or options of it heptane
   cannot honour that change the method (ILU(k), bjacobi with other blocks), leave the PC to
   PETSc: set up by PCSetUp, applied through PCApply (KSPHeptanePCApply). */
static PetscErrorCode KSPHeptaneTakePC(KSP ksp)
{
  KSP_Heptane       *h = (KSP_Heptane *)ksp->data;
  PC                 pc;
  PCType             type;
  PetscBool          isnone, isjacobi, ispbjacobi, isilu, isbjacobi, isamg, iscpr, flg;
  PetscInt           levels;
  char               why[256] = "", msg[512], opt[64];
  const char        *prefix;
  MatFactorShiftType shift;

  PetscFunctionBegin;
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCGetType(pc, &type));
  if (!type) { /* no PCSetType/PCSetFromOptions yet: PETSc's own default is ILU on one rank,
                  block Jacobi with ILU(0) blocks on several: heptane's ILU(0) (per rank) */
    PetscCall(PCSetType(pc, h->ranks > 1 ? PCBJACOBI : PCILU));
    PetscCall(PCGetType(pc, &type));
    PetscCall(PetscStrncpy(h->pc_from, h->ranks > 1 ? "default (bjacobi/ilu)" : "default (ilu)", sizeof(h->pc_from)));
  } else PetscCall(PetscSNPrintf(h->pc_from, sizeof(h->pc_from), "-pc_type %s", type));
  if (h->pc_inside && h->pc_inside != pc) PetscCall(KSPHeptaneReleasePC(ksp));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCNONE, &isnone));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCJACOBI, &isjacobi));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCPBJACOBI, &ispbjacobi));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCILU, &isilu));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCBJACOBI, &isbjacobi));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCHAMG, &isamg));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCHCPR, &iscpr));
  h->petsc_pc = PETSC_FALSE;
  HeptaneCallCXX(h->petsc_pc_note->clear());
  if (isnone) {
    h->pc = heptane::PcType::none;
    PetscFunctionReturn(0);
  }
  if (isilu) {
    PetscCall(PCFactorGetLevels(pc, &levels));
    if (levels != 0) PetscCall(PetscSNPrintf(why, sizeof(why), "-pc_factor_levels %" PetscInt_FMT " (heptane has ILU(0))", levels));
  }
  if (isbjacobi) PetscCall(KSPHeptaneBJacobiIsILU0(ksp, pc, why, sizeof(why)));
  if (isjacobi) { /* heptane's Jacobi is 1/a_ii: PETSc's other kinds of it are PETSc's to apply */
    PCJacobiType jtype;
    PetscBool    useabs, fixdiag;
    PetscCall(PCJacobiGetType(pc, &jtype));
    PetscCall(PCJacobiGetUseAbs(pc, &useabs));
    PetscCall(PCJacobiGetFixDiagonal(pc, &fixdiag));
    if (jtype != PC_JACOBI_DIAGONAL) PetscCall(PetscSNPrintf(why, sizeof(why), "-pc_jacobi_type %s (heptane's Jacobi is the diagonal)", PCJacobiTypes[jtype]));
    else if (useabs) PetscCall(PetscStrncpy(why, "-pc_jacobi_abs (heptane's Jacobi is 1/a_ii, signed)", sizeof(why)));
    /* a zero diagonal entry as PETSc's PCJACOBI: 1 there (-pc_jacobi_fixdiagonal, its default), else 0 */
    h->pc_opts->jacobi_zero_diagonal = fixdiag ? heptane::ZeroDiagonal::one : heptane::ZeroDiagonal::zero;
  }
  if (!(isjacobi || ispbjacobi || isilu || isbjacobi || isamg || iscpr)) PetscCall(PetscSNPrintf(why, sizeof(why), "heptane has no PC type %s", type));
  if (h->force_petsc_pc && !why[0]) PetscCall(PetscStrncpy(why, "-heptane_petsc_pc", sizeof(why)));
  if (why[0]) { /* PETSc's own PC, through PCApply */
    if (h->pc_inside == pc) PetscCall(KSPHeptaneReleasePC(ksp));
    h->petsc_pc = PETSC_TRUE;
    h->pc       = heptane::PcType::none;
    PetscCall(PetscSNPrintf(msg, sizeof(msg), "PETSc's own PC %s, applied through PCApply at every iteration (%s%s)", type, why, h->engine && h->engine->built() && h->engine->executor()->is_cuda() ? "; the vectors go to the host and back" : ""));
    HeptaneCallCXX(*h->petsc_pc_note = msg);
    PetscCall(PetscInfo(ksp, "%s: %s\n", KSPHeptaneName(h), msg));
    PetscFunctionReturn(0);
  }
  if (isilu) { /* what heptane's ILU(0) does not honour is said, not dropped */
    PetscCall(PCFactorGetShiftType(pc, &shift));
    if (shift != MAT_SHIFT_NONE) {
      PetscCall(PetscSNPrintf(msg, sizeof(msg), "KSP %s: the ILU zero-pivot shift %s (-pc_factor_shift_type) is not applied by heptane's ILU(0) (BILU(0) inverts its Nc x Nc pivot blocks with partial pivoting; a zero pivot stops the setup with the block named). Add -heptane_petsc_pc to apply PETSc's own ILU with the shift", KSPHeptaneName(h), MatFactorShiftTypes[shift]));
      PetscCall(KSPHeptaneWarn(ksp, msg));
    }
    PetscCall(PCGetOptionsPrefix(pc, &prefix));
    {
      PetscReal zeropivot;
      PetscCall(PetscOptionsGetReal(((PetscObject)pc)->options, prefix, "-pc_factor_zeropivot", &zeropivot, &flg));
      if (flg) {
        PetscCall(PetscSNPrintf(msg, sizeof(msg), "KSP %s: -pc_factor_zeropivot %g is not applied by heptane's ILU(0), whose pivot test is relative (a pivot block is singular when a pivot is <= Nc*eps*max|a_ij| of its block row, after partial pivoting). Add -heptane_petsc_pc to apply PETSc's own ILU with that tolerance", KSPHeptaneName(h), (double)zeropivot));
        PetscCall(KSPHeptaneWarn(ksp, msg));
      }
    }
    PetscCall(PetscOptionsGetString(((PetscObject)pc)->options, prefix, "-pc_factor_mat_ordering_type", opt, sizeof(opt), &flg));
    if (flg && strcmp(opt, MATORDERINGNATURAL)) {
      PetscCall(PetscSNPrintf(msg, sizeof(msg), "KSP %s: -pc_factor_mat_ordering_type %s is not applied: heptane's ILU(0) factors in the natural order (-heptane_ilu natural) or a multi-colour one (-heptane_ilu multicolor). Add -heptane_petsc_pc to apply PETSc's own ILU with that ordering", KSPHeptaneName(h), opt));
      PetscCall(KSPHeptaneWarn(ksp, msg));
    }
  }
  h->pc = isjacobi ? heptane::PcType::jacobi : (ispbjacobi ? heptane::PcType::block_jacobi : (isamg ? heptane::PcType::amg : (iscpr ? heptane::PcType::cpr : heptane::PcType::ilu0)));
  PetscCall(KSPHeptaneHoldPC(ksp, pc));
  PetscFunctionReturn(0);
}

/* The heptane preconditioner -pc_type and -heptane_ilu ask for, on the engine's device. */
static heptane::PcType KSPHeptaneResolvePC(KSP_Heptane *h)
{
  if (h->pc != heptane::PcType::ilu0 || h->ilu == 1) return h->pc;
  if (h->ilu == 2) return heptane::PcType::ilu0_mc;
  const auto exec  = h->engine->executor();
  const auto chain = heptane::ilu_preconditioners(exec && exec->is_cuda() ? heptane::ExecKind::cuda : heptane::ExecKind::cpu);
  return h->ilu_fallback ? chain.back() : chain.front();
}

/* hamg/hcpr whose -heptane_amg_ or -heptane_cpr_ options changed since the preconditioner was
   built (KSPSetFromOptions again), or jacobi whose -pc_jacobi_fixdiagonal did: set it up again. */
static bool KSPHeptanePcOptionsChanged(KSP_Heptane *h)
{
  return (h->pc == heptane::PcType::amg || h->pc == heptane::PcType::cpr || h->pc == heptane::PcType::jacobi) && !HeptanePcOptionsEqual(*h->pc_opts, *h->pc_opts_built);
}

/* The CSR of the operator on one rank, restored by HeptaneCSRRestore: in place for AIJ (any
   SeqAIJ-based type, bdiagh, a one-rank MPIAIJ's diagonal block); BAIJ (SeqBAIJ, a one-rank
   MPIBAIJ's diagonal block) through HeptaneBAIJGet's map, made once per pattern, the values
   gathered at each call (no MatConvert); SBAIJ (only its upper triangle is stored) through a
   SeqAIJ copy, converted once per pattern and MAT_REUSE_MATRIX for new values. */
static PetscErrorCode KSPHeptaneCSRGet(KSP ksp, Mat A, HeptaneCSR *csr)
{
  KSP_Heptane    *h = (KSP_Heptane *)ksp->data;
  PetscBool       isaij, isbdiagh, isbaij, ismpiaij, ismpibaij, issbaij, ismpisbaij;
  Mat             Ad, Ao;
  const PetscInt *colmap;

  PetscFunctionBegin;
  *csr = HeptaneCSR();
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQAIJ, &isaij));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATBDIAGH, &isbdiagh));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQBAIJ, &isbaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIAIJ, &ismpiaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &ismpibaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQSBAIJ, &issbaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPISBAIJ, &ismpisbaij));
  if (isaij || isbdiagh) {
    h->input_how = "read in place (MatGetRowIJ, MatSeqAIJGetArrayRead)";
    PetscCall(HeptaneCSRGet(A, csr));
    PetscFunctionReturn(0);
  }
  if (ismpiaij) { /* one rank: the diagonal block is the whole matrix, with global columns */
    h->input_how = "one rank's MPIAIJ: its diagonal block read in place";
    PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, &colmap));
    PetscCall(HeptaneCSRGet(Ad, csr));
    PetscFunctionReturn(0);
  }
  if (isbaij || ismpibaij) {
    h->input_how = h->baij_blocks && h->own->built() && h->own->format() == heptane::Format::bsr
                   ? "BAIJ's arrays are the operator, read in place on the host (no copy); for the preconditioner its scalar CSR made on the host once per pattern (row pointers and columns by formula, no map), values gathered block by block at each "
                     "setup (no MatConvert)"
                   : "BAIJ read through its scalar CSR made on the host once per pattern (row pointers and columns by formula, no map), values gathered block by block at each setup (no MatConvert)";
    Ad           = A;
    if (ismpibaij) PetscCall(MatMPIBAIJGetSeqBAIJ(A, &Ad, &Ao, &colmap));
    PetscCall(HeptaneBAIJGet(Ad, NULL, h->baij, &csr->view));
    PetscFunctionReturn(0);
  }
  if (issbaij || ismpisbaij) h->input_how = "SBAIJ converted to AIJ once per pattern (MatConvert), MAT_REUSE_MATRIX for new values";
  else { /* any other assembled type (sell, dense, ...): an AIJ copy, as for SBAIJ */ PetscCall(HeptaneCheckEntriesReadable((PetscObject)ksp, A, KSPHeptaneName(h), "Or use a PETSc KSP (e.g. -ksp_type bcgs)."));
    h->input_how = "converted to AIJ once per pattern (MatConvert), MAT_REUSE_MATRIX for new values (a type heptane does not read where it is: it reads aij, baij and bdiagh so)";
  }
  PetscCall(HeptaneAIJCopyGet(A, &h->sbaij, &Ad));
  if (ismpisbaij) PetscCall(MatMPIAIJGetSeqAIJ(h->sbaij.aij, &Ad, &Ao, &colmap));
  PetscCall(HeptaneCSRGet(Ad, csr));
  PetscFunctionReturn(0);
}

/* A one-rank BAIJ matrix (SeqBAIJ, a one-rank MPIBAIJ's diagonal block): its values in place,
   in BAIJ's own order, for a values-only refresh through what(values, pos, nnz, block size)
   (the operator's or the preconditioner's permuted path); *done: whether that path took them.
   Nothing is gathered into CSR order. pos (each entry's place in BAIJ's array) is made only
   for an operator on the CPU: on a GPU the position follows from the pattern there and the
   block size (kernels::block_values_to_csr), so pos is null. what's last argument names the
   array (HeptaneValuesKey of the SeqBAIJ). */
template <class What>
static PetscErrorCode KSPHeptaneBAIJInPlace(KSP ksp, Mat A, What what, PetscBool *done)
{
  KSP_Heptane            *h = (KSP_Heptane *)ksp->data;
  PetscBool               isbaij, ismpibaij;
  Mat                     Ad = A, Ao;
  const PetscInt         *colmap;
  const double           *v;
  const heptane::index_t *pos;
  PetscInt                nnz, bs;
  bool                    ok = false;

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQBAIJ, &isbaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &ismpibaij));
  if (!isbaij && !ismpibaij) PetscFunctionReturn(0);
  if (ismpibaij) PetscCall(MatMPIBAIJGetSeqBAIJ(A, &Ad, &Ao, &colmap));
  const bool on_cpu = !h->engine->built() || !h->engine->executor() || h->engine->executor()->is_cpu();
  PetscCall(HeptaneBAIJValuesGet(Ad, h->baij, (PetscBool)on_cpu, &v, &pos, &nnz, &bs));
  if (!v) PetscFunctionReturn(0);
  std::uint64_t key;
  PetscCall(HeptaneValuesKey(Ad, &key));
  PetscErrorCode ierr = 0;
  HeptaneCallCXX(
    try { ok = what(v, pos, (heptane::offset_t)nnz, (heptane::index_t)bs, key); } catch (...) {
      ierr = HeptaneBAIJValuesRestore(Ad, &v);
      throw;
    });
  PetscCall(ierr);
  PetscCall(HeptaneBAIJValuesRestore(Ad, &v));
  *done = ok ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* what(blocks) on a BAIJ matrix's blocks and values (SeqBAIJ; an MPIBAIJ's diagonal block:
   the whole matrix on one rank, this rank's diagonal blocks on several), lent in place and
   given back after, also when what throws. *done: what returned; false where A is no BAIJ or
   its blocks cannot be lent as they are (complex values; 64-bit indices with nowhere to copy
   them into 32 bits). b: where the scalar row pointers are kept (HeptaneBAIJBlocksGet), or
   NULL; store: where 64-bit PetscInt's block indices go in 32 bits (else b's). */
template <class What>
static PetscErrorCode HeptaneWithBAIJBlocks(Mat A, HeptaneBAIJ *b, What what, PetscBool *done, HeptaneBlockIndex32 *store = NULL)
{
  PetscBool                     isbaij, ismpibaij;
  Mat                           Ad = A, Ao;
  const PetscInt               *colmap;
  heptane::plugin::BlockCsrView blocks;
  bool                          ok = false;

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQBAIJ, &isbaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &ismpibaij));
  if (!isbaij && !ismpibaij) PetscFunctionReturn(0);
  if (ismpibaij) PetscCall(MatMPIBAIJGetSeqBAIJ(A, &Ad, &Ao, &colmap));
  PetscCall(HeptaneBAIJBlocksGet(Ad, b, &blocks, store));
  if (!blocks.block_ptr) PetscFunctionReturn(0);
  PetscErrorCode ierr = 0;
  HeptaneCallCXX(
    try { ok = what(blocks); } catch (...) {
      ierr = HeptaneBAIJBlocksRestore(Ad, &blocks);
      throw;
    });
  PetscCall(ierr);
  PetscCall(HeptaneBAIJBlocksRestore(Ad, &blocks));
  *done = ok ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* A one-rank BAIJ matrix on the CPU: its blocks and values in place for a values-only refresh
   through what(blocks) (MatrixEngine::refresh_values_blocks, KrylovEngine::
   refresh_preconditioner_blocks), which reads every position off the block pattern: no map of
   the entries is made or composed. *done: whether that path took them (else the caller takes
   KSPHeptaneBAIJInPlace's). */
template <class What>
static PetscErrorCode KSPHeptaneBAIJBlocksInPlace(KSP ksp, Mat A, What what, PetscBool *done)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  if (!h->engine->built() || !h->engine->executor() || !h->engine->executor()->is_cpu()) PetscFunctionReturn(0);
  PetscCall(HeptaneWithBAIJBlocks(A, h->baij, what, done));
  PetscFunctionReturn(0);
}

/* One rank, a values-only setup by PETSc's nonzero state: a BAIJ matrix whose number of entries
   changed is a new pattern all the same. PETSc's BAIJ (3.18) counts a new nonzero state only
   when MatSetValues reallocates, not when a new block goes into preallocated room, so its state
   can say "same pattern" when it is not (the operator may read its arrays in place). */
static PetscErrorCode KSPHeptaneBAIJGrew(KSP ksp, Mat A, PetscInt *updated)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PetscBool    seq, mpi;
  MatInfo      info;

  PetscFunctionBegin;
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQBAIJ, &seq));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &mpi));
  if (!(seq || mpi) || !h->own->built()) PetscFunctionReturn(0);
  PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
  if ((heptane::offset_t)info.nz_used != h->own->nnz()) {
    PetscCall(PetscInfo(ksp, "%s: the BAIJ matrix has %.0f entries, the operator's pattern %lld, under the same nonzero state: a new pattern\n", KSPHeptaneName(h), (double)info.nz_used, (long long)h->own->nnz()));
    *updated = 2;
  }
  PetscFunctionReturn(0);
}

/* One rank, a values-only setup: an AIJ matrix whose newest values are on the GPU already
   (PETSc's aijcusparse after a device-side update: offload mask GPU or both; a one-rank
   MPIAIJ's diagonal block alike) is read there: MatSeqAIJGetCSRAndMemType's device array,
   copied into the operator on the device (MatrixEngine::refresh_values_device), no copy to the
   host, no upload. Where the host has the newest values (assembled there: offload mask CPU)
   the host path reads PETSc's array in place and uploads it, as for any AIJ. *done: whether
   the device path took them. */
static PetscErrorCode KSPHeptaneDeviceValues(KSP ksp, Mat A, PetscBool *done)
{
  KSP_Heptane    *h = (KSP_Heptane *)ksp->data;
  PetscBool       isaij, ismpiaij;
  Mat             Ad = A, Ao;
  const PetscInt *colmap;
  PetscScalar    *a     = NULL;
  PetscMemType    mtype = PETSC_MEMTYPE_HOST;
  MatInfo         info;
  bool            ok = false;

  PetscFunctionBegin;
  *done            = PETSC_FALSE;
  h->device_values = PETSC_FALSE;
  if (sizeof(PetscScalar) != sizeof(double) || !h->own->built() || !h->own->executor() || !h->own->executor()->is_cuda()) PetscFunctionReturn(0);
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQAIJ, &isaij));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIAIJ, &ismpiaij));
  if (ismpiaij) PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, &colmap));
  else if (!isaij) PetscFunctionReturn(0);
  if (!HeptaneMatNewestOnDevice(Ad)) PetscFunctionReturn(0);
  PetscCall(MatSeqAIJGetCSRAndMemType(Ad, NULL, NULL, &a, &mtype));
  if (!a || !PetscMemTypeDevice(mtype)) PetscFunctionReturn(0);
  PetscCall(MatGetInfo(Ad, MAT_LOCAL, &info));
  HeptaneCallCXX(ok = h->own->refresh_values_device((const double *)a, (heptane::offset_t)info.nz_used));
  if (ok) {
    *done            = PETSC_TRUE;
    h->device_values = PETSC_TRUE;
    h->device_nnz    = (PetscInt)info.nz_used;
  }
  PetscFunctionReturn(0);
}

/* The preconditioners whose first setup reads only the operator's device copies of the
   pattern and values (KrylovEngine::build_preconditioner on a GPU): with them a BAIJ operator
   built from its blocks on the device needs no host CSR at all. */
static PetscBool KSPHeptanePCFromDevice(heptane::PcType t)
{
  return (PetscBool)(t == heptane::PcType::jacobi || t == heptane::PcType::block_jacobi || t == heptane::PcType::amg || t == heptane::PcType::cpr);
}

/* The preconditioners set up from the diagonal blocks alone (none, Jacobi, block Jacobi): with
   them a BAIJ operator built from its blocks on the CPU needs no scalar CSR either. */
static PetscBool KSPHeptanePCFromDiagBlocks(heptane::PcType t)
{
  return (PetscBool)(t == heptane::PcType::none || t == heptane::PcType::jacobi || t == heptane::PcType::block_jacobi);
}

/* BAIJ on the CPU, the preconditioners (ILU(0), either ordering) set up from scalar CSR rows
   that the operator does not need: on one rank it is BAIJ's arrays all the same (the PC's CSR
   gathered through KSPHeptaneCSRGet; six setups of 393 K rows on the VM 1.26 s against 1.68 s
   copied, AIJ 1.44 s). Several ranks, MPIBAIJ: the PC set up from this rank's
   diagonal block as scalar CSR (KSPHeptaneBuildPC: the diagonal SeqBAIJ expanded by formula),
   which the operator does not need: it is built from the blocks all the same (two ranks of the
   VM, 393 K rows with ilu, six setups: 0.76-0.77 s against 0.90 s when the rows were gathered
   for both; AIJ 0.77-0.79 s). AMG and CPR keep the operator from the gathered rows (not
   measured). */
static PetscBool KSPHeptanePCFromRows(heptane::PcType t)
{
  return (PetscBool)(t == heptane::PcType::ilu0 || t == heptane::PcType::ilu0_mc);
}

/* The diagonal blocks of a block CSR matrix (BAIJ) as a scalar CSR matrix of their entries,
   row by row (a block row without its diagonal block gives empty rows: the preconditioner's
   setup then names the zero diagonal): what KSPHeptanePCFromDiagBlocks's types are set up
   from, with nothing of the off-diagonal blocks copied. */
struct HeptaneDiagCSR {
  std::vector<heptane::index_t> ptr, col;
  std::vector<double>           val;
  heptane::plugin::CsrView      view;
};
static void HeptaneDiagBlocks(const heptane::plugin::BlockCsrView &b, HeptaneDiagCSR &d)
{
  const heptane::index_t        bs = b.block_size, nb = b.block_rows;
  std::vector<heptane::index_t> at((size_t)nb, -1); /* the diagonal block of each block row */
  for (heptane::index_t ib = 0; ib < nb; ib++)
    for (heptane::index_t k = b.block_ptr[ib]; k < b.block_ptr[ib + 1] && at[(size_t)ib] < 0; k++)
      if (b.block_col[k] == ib) at[(size_t)ib] = k;
  d.ptr.assign(1, 0);
  d.ptr.reserve((size_t)(nb * bs) + 1);
  d.col.clear();
  d.val.clear();
  d.col.reserve((size_t)nb * (size_t)(bs * bs)); /* one diagonal block a block row, at most */
  d.val.reserve((size_t)nb * (size_t)(bs * bs));
  for (heptane::index_t ib = 0; ib < nb; ib++)
    for (heptane::index_t r = 0; r < bs; r++) {
      if (at[(size_t)ib] >= 0)
        for (heptane::index_t c = 0; c < bs; c++) { /* blocks column-major */
          d.col.push_back(ib * bs + c);
          d.val.push_back(b.values[(size_t)at[(size_t)ib] * (size_t)(bs * bs) + (size_t)(c * bs + r)]);
        }
      d.ptr.push_back((heptane::index_t)d.col.size());
    }
  d.view.rows    = nb * bs;
  d.view.row_ptr = d.ptr.data();
  d.view.col_idx = d.col.data();
  d.view.values  = d.val.data();
}

/* Several ranks, MPIBAIJ + ILU(0): the row pointers of this rank's diagonal part as scalar CSR
   (kept: made at a new pattern only) and the view of that matrix the preconditioner is set up
   and refreshed from. */
struct HeptanePcRows {
  std::vector<heptane::index_t> ptr;
  heptane::offset_t             nnz = -1;
  heptane::plugin::CsrView      view;
};

/* A block CSR matrix (a SeqBAIJ: an MPIBAIJ's diagonal part) as its scalar CSR, made by formula
   on the host (kernels::block_pattern_to_csr, block_values_to_csr: row r of block row ib takes
   row r of each of ib's blocks in turn) straight into the KSP's preconditioner copy
   (KrylovEngine::host_csr: the ILU(0) types' host copy of the matrix, which build and refresh
   then take as it is, so the matrix is expanded once and not copied again); the row pointers
   (32-bit, for the view and the values' formula) into d. */
static void HeptaneBlocksCSR(const heptane::plugin::BlockCsrView &b, HeptanePcRows &d, heptane::plugin::KrylovEngine &k, bool same_pattern)
{
  const heptane::index_t  n   = b.rows();
  const heptane::offset_t nnz = b.nnz();
  const auto              c   = k.host_csr(n, nnz);
  same_pattern                = same_pattern && c.kept && d.ptr.size() == (size_t)n + 1 && d.nnz == nnz;
  if (!same_pattern) {
    d.ptr.resize((size_t)n + 1);
    heptane::kernels::block_pattern_to_csr(*heptane::cpu_executor(), b.block_rows, b.block_size, b.block_ptr, b.block_col, d.ptr.data(), c.col_idx);
    for (heptane::index_t r = 0; r <= n; r++) c.row_ptr[r] = d.ptr[(size_t)r];
    d.nnz = nnz;
  }
  heptane::kernels::block_values_to_csr(*heptane::cpu_executor(), n, b.block_size, d.ptr.data(), b.values, c.values);
  d.view.rows    = n;
  d.view.row_ptr = d.ptr.data();
  d.view.col_idx = c.col_idx;
  d.view.values  = c.values;
}

/* One rank, a new pattern: a BAIJ matrix (SeqBAIJ, a one-rank MPIBAIJ's diagonal block) with
   its grid known is built from its blocks (MatrixEngine::build_blocks): going to a GPU (with a
   PC set up from the device copies) it goes up as it is, blocks and values, and is expanded
   there; on the CPU (Nc = the block size, with a PC set up from the diagonal blocks alone)
   every block goes straight into its BDIA-GH slots. No scalar pattern, no gather on the host
   either way. *done: whether it was; otherwise the caller builds from the scalar CSR. */
static PetscErrorCode KSPHeptaneBuildFromBlocks(KSP ksp, Mat A, const heptane::plugin::GridHint &hint, const heptane::plugin::MatrixConfig &cfg, PetscBool *done)
{
  KSP_Heptane          *h      = (KSP_Heptane *)ksp->data;
  const heptane::PcType want   = KSPHeptaneResolvePC(h);
  const bool            gpu_ok = h->petsc_pc || KSPHeptanePCFromDevice(want), cpu_ok = h->petsc_pc || KSPHeptanePCFromDiagBlocks(want) || KSPHeptanePCFromRows(want);

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  if (!(gpu_ok || cpu_ok)) PetscFunctionReturn(0); /* without a grid only the CPU's operator in place (build_blocks decides) */
  PetscCall(HeptaneWithBAIJBlocks(
    A, h->baij, [&](const heptane::plugin::BlockCsrView &b) { return h->own->build_blocks(b, hint, cfg, cpu_ok, gpu_ok); }, done));
  if (*done)
    h->input_how = !h->own->executor()->is_cpu()            ? "BAIJ's blocks and values uploaded as they are and expanded to scalar CSR on the GPU at each new pattern (no host map, no gather)"
                 : h->own->format() == heptane::Format::bsr ? "BAIJ's arrays are the operator, read in place on the host (no copy at a new pattern or at a values-only update; -heptane_format bdiagh copies them into BDIA-GH instead)"
                                                            : "BAIJ's blocks read straight into the BDIA-GH slots on the host at each new pattern (Nc = the block size: no scalar pattern, no map, no gather)";
  PetscFunctionReturn(0);
}

/* The grid: -heptane_grid/-heptane_block, else the DMDA of the matrix or of the KSP. */
static PetscErrorCode KSPHeptaneGridHint(KSP ksp, Mat A, heptane::plugin::GridHint *hint)
{
  PetscBool found;
  DM        dm;

  PetscFunctionBegin;
  PetscCall(HeptaneGridHintFromOptions(((PetscObject)ksp)->options, ((PetscObject)ksp)->prefix, hint, &found));
  if (found && hint->has_grid()) PetscFunctionReturn(0);
  heptane::index_t nc = hint->block_size;
  PetscCall(MatGetDM(A, &dm));
  if (!dm) dm = ksp->dm;
  PetscCall(HeptaneGridHintFromDM(dm, hint, &found));
  if (!found && nc > 0) hint->block_size = nc;
  PetscFunctionReturn(0);
}

/* Build the preconditioner from the values of A (the KSP's Pmat: PETSc's convention). With -heptane_ilu auto a multi-colour ILU(0)
   that cannot be factored (a zero pivot in the coloured order) falls back to the natural one.
   values_only (a Newton step: the same pattern, new values) keeps the preconditioner's
   symbolic setup and redoes its numeric part only; should that be refused (e.g. values it
   cannot factor), the preconditioner is built from scratch as for a new pattern. */
/* -heptane_amg_global resolved (HeptaneAmgOverRanks) for preconditioner `type` on the KSP's
   operator: false unless that is distributed. */
static bool KSPHeptaneOverRanks(KSP_Heptane *h, heptane::PcType type, std::string *why)
{
  if (!h->engine || !h->engine->built() || !h->engine->distributed()) return false;
  return HeptaneAmgOverRanks(h->pc_opts->amg, type, h->ranks, h->engine->executor()->is_cpu(), h->engine->block_size(), h->coarse, h->over_ranks_refused, why);
}

/* A values-only refresh in place that meets a singular matrix: not done (false), so that the
   full setup that follows in KSPHeptaneBuildPC meets it too and says so (h->pc_failed). */
template <class F>
static bool KSPHeptaneRefreshOrNot(F &&refresh)
{
  try {
    return refresh();
  } catch (const heptane::SingularError &) {
    return false;
  }
}

/* heptane's PC could not be set up on some rank (h->pc_failed): every rank agrees (collective
   on several ranks; a rank whose block was fine would go into the solve's reductions alone),
   and PETSc's PC object carries the reason (-ksp_converged_reason: "PC failed due to
   FACTOR_NUMERIC_ZEROPIVOT"), cleared again once a setup succeeds. */
static PetscErrorCode KSPHeptanePCFailedOverRanks(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PC           pc;
  int          mine = h->pc_failed->empty() ? 0 : 1, any = mine;

  PetscFunctionBegin;
  if (h->engine->distributed()) PetscCallMPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, PetscObjectComm((PetscObject)ksp)));
  if (any && !mine) HeptaneCallCXX(*h->pc_failed = "its setup failed on another rank");
  PetscCall(KSPGetPC(ksp, &pc));
  if (!h->petsc_pc) PetscCall(PCSetFailedReason(pc, any ? PC_FACTOR_NUMERIC_ZEROPIVOT : PC_NOERROR));
  if (any) PetscCall(PetscInfo(ksp, "%s: the preconditioner could not be set up (%s): KSPSolve stops with KSP_DIVERGED_PC_FAILED\n", KSPHeptaneName(h), h->pc_failed->c_str()));
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPHeptaneBuildPC(KSP ksp, Mat A, PetscBool values_only)
{
  KSP_Heptane                    *h    = (KSP_Heptane *)ksp->data;
  HeptaneCSR                      csr  = {};
  heptane::PcType                 want = KSPHeptaneResolvePC(h);
  PetscBool                       fell = PETSC_FALSE, fell_any, refreshed = PETSC_FALSE;
  std::string                     why, refused;
  const heptane::plugin::CsrView *view;
  HeptaneDiagCSR                  diag;

  PetscFunctionBegin;
  values_only = (PetscBool)(values_only && h->pc_failed->empty() && h->krylov->has_preconditioner() && want == h->pc_built && !KSPHeptanePcOptionsChanged(h));
  if (!h->pc_failed->empty()) { /* the last setup failed: a full one now, and the reason cleared */
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    if (!h->petsc_pc) PetscCall(PCSetFailedReason(pc, PC_NOERROR));
    h->pc_failed->clear();
  }
  if (values_only && h->device_values) { /* the operator copied the values on the GPU: the PC's
                                            numeric part from that device copy (no host read,
                                            which would bring PETSc's values back to the host) */
    PetscBool done = PETSC_FALSE;
    HeptaneCallCXX(
      try { done = h->krylov->refresh_preconditioner_permuted(NULL, NULL, (heptane::offset_t)h->device_nnz, *h->engine) ? PETSC_TRUE : PETSC_FALSE; } catch (const heptane::SingularError &) {
        done = PETSC_FALSE; /* the full setup below says so */
      });
    if (h->engine->distributed()) { /* a rank whose block is singular goes on to the full setup
                                       below, whose reductions every rank must join */
      PetscBool all;
      PetscCallMPI(MPI_Allreduce(&done, &all, 1, HEPTANE_MPIU_BOOL, MPI_LAND, PetscObjectComm((PetscObject)ksp)));
      done = all;
    }
    if (done) {
      h->pc_refreshed = PETSC_TRUE;
      PetscFunctionReturn(0);
    }
  }
  if (values_only && h->engine->distributed() && h->rows->baij) {
    /* several ranks, MPIBAIJ: this rank's diagonal blocks in place where the PC can (the PC is
       this rank's); every rank agrees, so that all or none go on to the collective part below */
    PetscBool done, all;
    PetscCall(HeptaneWithBAIJBlocks(
      h->rows_from, NULL, [h](const heptane::plugin::BlockCsrView &b) { return KSPHeptaneRefreshOrNot([&] { return h->krylov->refresh_preconditioner_blocks(b, *h->engine); }); }, &done, h->blk32_diag));
    PetscCallMPI(MPI_Allreduce(&done, &all, 1, HEPTANE_MPIU_BOOL, MPI_LAND, PetscObjectComm((PetscObject)ksp)));
    if (all) {
      h->pc_refreshed = PETSC_TRUE;
      PetscFunctionReturn(0);
    }
  }
  if (values_only && !h->engine->distributed()) { /* BAIJ: its values in place where the PC can */
    PetscBool done;
    PetscCall(KSPHeptaneBAIJBlocksInPlace(
      ksp, A, [h](const heptane::plugin::BlockCsrView &b) { return KSPHeptaneRefreshOrNot([&] { return h->krylov->refresh_preconditioner_blocks(b, *h->engine); }); }, &done));
    if (done) {
      h->pc_refreshed = PETSC_TRUE;
      PetscFunctionReturn(0);
    }
    PetscCall(KSPHeptaneBAIJInPlace(
      ksp, A, [h](const double *v, const heptane::index_t *pos, heptane::offset_t nnz, heptane::index_t, std::uint64_t) { return KSPHeptaneRefreshOrNot([&] { return h->krylov->refresh_preconditioner_permuted(v, pos, nnz, *h->engine); }); }, &done));
    if (done) {
      h->pc_refreshed = PETSC_TRUE;
      PetscFunctionReturn(0);
    }
  }
  if (h->baij_blocks && !values_only && h->engine == h->own && h->engine->executor()->is_cpu() && KSPHeptanePCFromDiagBlocks(want)) {
    /* the operator was built from BAIJ's blocks on the CPU: the preconditioner from the
       diagonal blocks alone (no scalar CSR of the matrix; on several ranks this rank's) */
    PetscBool lent;
    PetscCall(HeptaneWithBAIJBlocks(
      h->engine->distributed() ? h->rows_from : A, h->engine->distributed() ? NULL : h->baij,
      [&](const heptane::plugin::BlockCsrView &b) {
        HeptaneDiagBlocks(b, diag);
        return true;
      },
      &lent, h->blk32_diag));
    PetscCheck(lent, PETSC_COMM_SELF, PETSC_ERR_PLIB, "heptane: the BAIJ blocks the operator was built from are gone");
    view = &diag.view;
  } else if (h->engine->distributed() && h->rows->baij && h->baij_blocks && !h->petsc_pc && KSPHeptanePCFromRows(want)) {
    /* several ranks, MPIBAIJ, the operator from its blocks, ILU(0): this rank's diagonal block
       is its diagonal SeqBAIJ, expanded into scalar CSR by formula (kernels::block_pattern_to_csr,
       block_values_to_csr) straight into the preconditioner's host copy: nothing of the
       off-diagonal part gathered, and no second copy */
    PetscBool lent;
    if (!h->pc_rows) HeptaneCallCXX(h->pc_rows = new HeptanePcRows());
    PetscCall(HeptaneWithBAIJBlocks(
      h->rows_from, NULL,
      [&](const heptane::plugin::BlockCsrView &b) {
        HeptaneBlocksCSR(b, *h->pc_rows, *h->krylov, values_only);
        return true;
      },
      &lent, h->blk32_diag));
    PetscCheck(lent, PETSC_COMM_SELF, PETSC_ERR_PLIB, "heptane: the MPIBAIJ blocks the operator was built from are gone");
    view = &h->pc_rows->view;
  } else if (h->engine->distributed()) { /* several ranks: this rank's diagonal block (MPIAIJ's Ad,
                                            lent again: the operator was updated from the same
                                            matrix; MPIBAIJ's gathered, where the operator read
                                            its blocks as they are or a refresh above left them) */
    if (h->rows->inplace || h->rows->baij) PetscCall(HeptaneRowsGet(h->rows_from, h->rows));
    view = &h->rows->split.diag;
  } else if (h->baij_blocks && !values_only && h->engine == h->own && KSPHeptanePCFromDevice(want)) {
    /* the operator was built from BAIJ's blocks on the device: the preconditioner from its
       device copies, with a view of the row pointers only (no host CSR) */
    csr.view.rows    = (heptane::index_t)(h->baij->ptr.size() - 1);
    csr.view.row_ptr = h->baij->ptr.data();
    view             = &csr.view;
  } else {
    PetscCall(KSPHeptaneCSRGet(ksp, A, &csr));
    view = &csr.view;
  }
  if (values_only)
    HeptaneCallCXX(
      try {
        h->krylov->refresh_preconditioner(*view, *h->engine);
        refreshed = PETSC_TRUE;
      } catch (const heptane::InputError &e) { refused = e.what(); });
  /* the AMG over the ranks (-heptane_amg_global, or its default: KSPHeptaneOverRanks) is
     applied in the rank's AMG's place (KSPHeptaneCoarse), so the rank keeps only point Jacobi
     of its rows (cheap); should it be refused, KSPHeptaneCoarse builds each rank's own AMG */
  const heptane::PcType build = KSPHeptaneOverRanks(h, want, h->over_ranks_why) ? heptane::PcType::jacobi : want;
  if (!refreshed)
    HeptaneCallCXX(
      try { h->krylov->build_preconditioner(build, *view, *h->engine, *h->pc_opts); } catch (const heptane::InputError &e) {
        if (want != heptane::PcType::ilu0_mc || h->ilu != 0) {
          if (!dynamic_cast<const heptane::SingularError *>(&e) || ksp->errorifnotconverged) throw;
          *h->pc_failed = e.what(); /* as PETSc's PCs: KSP_DIVERGED_PC_FAILED, not an error */
        } else {
          why  = e.what();
          fell = PETSC_TRUE;
        }
      });
  if (!refused.empty()) PetscCall(PetscInfo(ksp, "%s: values-only preconditioner refresh refused (%s); set up from scratch\n", KSPHeptaneName(h), refused.c_str()));
  fell_any = fell;
  /* several ranks: one rank's block that cannot be factored sends every rank back to natural */
  if (h->engine->distributed()) PetscCallMPI(MPI_Allreduce(&fell, &fell_any, 1, HEPTANE_MPIU_BOOL, MPI_LOR, PetscObjectComm((PetscObject)ksp)));
  if (fell_any) {
    want = heptane::PcType::ilu0;
    HeptaneCallCXX(
      try {
        h->krylov->build_preconditioner(want, *view, *h->engine);
        *h->pc_note = "natural ILU(0) after multi-colour ILU(0) could not be factored: " + (fell ? why : std::string("on another rank"));
      } catch (const heptane::SingularError &e) {
        if (ksp->errorifnotconverged) throw;
        *h->pc_failed = e.what();
      });
    fell      = PETSC_TRUE;
    refreshed = PETSC_FALSE;
  }
  PetscCall(KSPHeptanePCFailedOverRanks(ksp));
  PetscCall(HeptaneCSRRestore(&csr));
  if (h->engine->distributed()) PetscCall(HeptaneRowsRestore(h->rows));
  if (fell) {
    h->ilu_fallback = PETSC_TRUE;
    PetscCall(PetscInfo(ksp, "%s: %s\n", KSPHeptaneName(h), h->pc_note->c_str()));
  }
  h->pc_built       = want;
  h->pc_refreshed   = refreshed;
  *h->pc_opts_built = *h->pc_opts;
  PetscFunctionReturn(0);
}

/* What -ksp_view says of heptane's distributed CSR operator (MatrixEngine::build_distributed_csr). */
static const char *const HeptaneDistCsrWhat = "heptane's distributed CSR (this rank's diagonal block and its couplings to other ranks' rows through a halo of the columns it reads, exchanged while the diagonal block's product runs)";

/* Several ranks: build (todo 2) or refresh (todo 1) the distributed operator from this rank's
   rows as HeptaneRowsGet gives them (DistRowsScope: both parts read where they are). */
static PetscErrorCode KSPHeptaneRanksEngine(KSP ksp, Mat A, MPI_Comm comm, int todo, const heptane::plugin::GridHint *hint, const heptane::plugin::MatrixConfig &cfg)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  heptane::plugin::DistRowsScope scope(h->rows->split);
  if (todo == 2 && cfg.format == "csr") { /* asked for: heptane's distributed CSR */
    HeptaneCallCXX(h->own->build_distributed_csr(h->rows->split.diag, (heptane::index_t)h->rows->rstart, hint->block_size, comm, cfg));
    HeptaneCallCXX(*h->grid_source = std::string("-heptane_format csr: the operator is ") + HeptaneDistCsrWhat);
    PetscFunctionReturn(0);
  }
  if (todo == 2) {
    std::string refused;
    /* a numbering that is no grid's, or a DMDA's matrix with entries off its stencil (a well's
       long-range coupling), falls back to heptane's distributed CSR (the ranks agree: every
       one throws or none does), unless the grid was named (-heptane_grid), the format
       asked for (-heptane_format bdiagh) or the ranks' rows are not whole blocks (a block size
       to fix) */
    HeptaneCallCXX(
      try { h->own->build_distributed(h->rows->split.diag, (heptane::index_t)h->rows->rstart, comm, *hint, cfg); } catch (const heptane::InputError &e) {
        if ((hint->has_grid() && (hint->source != "DMDA" || cfg.format != "auto")) || std::string(e.what()).find("not whole blocks") != std::string::npos) throw;
        refused = e.what();
      });
    if (!refused.empty()) { /* heptane's general row-split operator, on the ranks' devices */
      HeptaneCallCXX(h->own->build_distributed_csr(h->rows->split.diag, (heptane::index_t)h->rows->rstart, hint->block_size, comm, cfg));
      HeptaneCallCXX(*h->grid_source = std::string(hint->has_grid() ? "the matrix is not on its DMDA's stencil" : "the global numbering is not a grid's") + ", so the operator is " + HeptaneDistCsrWhat + ": " + refused);
      PetscCall(PetscInfo(ksp, "%s: %s\n", KSPHeptaneName(h), h->grid_source->c_str()));
      PetscFunctionReturn(0);
    }
    std::string how;
    if (h->rows->inplace) how = "read in place from the MPIAIJ's diagonal and off-diagonal blocks (MatMPIAIJGetSeqAIJ)";
    else if (h->rows->baij)
      how = h->own->executor()->is_cpu() && h->own->block_size() == h->rows->bd.bs
            ? "read from the MPIBAIJ's two SeqBAIJ blocks (MatMPIBAIJGetSeqBAIJ): at a new pattern through their scalar CSR (by formula, no map, values gathered), at each values-only setup block by block straight into the operator's slots (Nc = the "
              "block size: no gather)"
            : "read from the MPIBAIJ's two SeqBAIJ blocks (MatMPIBAIJGetSeqBAIJ) through their scalar CSR made once per pattern (by formula, no map), values gathered at each setup";
    else how = std::string("copied with MatGetRow (not an MPIAIJ: ") + ((PetscObject)A)->type_name + ")";
    HeptaneCallCXX(*h->grid_source = h->own->structure_note() + "; this rank's rows " + how);
  } else {
    HeptaneCallCXX(h->own->refresh_values(h->rows->split.diag));
  }
  PetscFunctionReturn(0);
}

/* Several ranks, an MPIBAIJ: its two SeqBAIJ blocks lent as they are to the distributed
   operator, on the CPU with Nc = the block size every block straight into its slots, nothing
   gathered into scalar CSR: at each values-only setup (todo 1, MatrixEngine::
   refresh_values_blocks), and at a new pattern (todo 2, build_distributed_blocks) where the
   preconditioner is set up from the diagonal blocks alone (none, Jacobi, block Jacobi) or is
   PETSc's. *done: whether it took them, the same on every rank; otherwise the caller gathers
   (HeptaneRowsGet; a build that fails here is tried again there, which falls back or names the
   error). Collective. */
static PetscErrorCode KSPHeptaneRanksBlocks(KSP ksp, Mat A, int todo, const heptane::plugin::GridHint *hint, const heptane::plugin::MatrixConfig &cfg, PetscBool *done)
{
  KSP_Heptane                    *h = (KSP_Heptane *)ksp->data;
  PetscBool                       ismpibaij;
  Mat                             Ad, Ao;
  const PetscInt                 *garray;
  heptane::plugin::DistBlocksView b;
  bool                            ok   = false;
  PetscErrorCode                  ierr = 0;

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIBAIJ, &ismpibaij));
  if (!ismpibaij || cfg.format == "csr") PetscFunctionReturn(0); /* the same type on every rank; -heptane_format csr takes the rows */
  if (todo == 2 && !h->petsc_pc && !KSPHeptanePCFromDiagBlocks(KSPHeptaneResolvePC(h)) && !KSPHeptanePCFromRows(KSPHeptaneResolvePC(h))) PetscFunctionReturn(0);
  PetscCall(MatMPIBAIJGetSeqBAIJ(A, &Ad, &Ao, &garray));
  PetscCall(HeptaneBAIJBlocksGet(Ad, NULL, &b.diag, h->blk32_diag));
  PetscCall(HeptaneBAIJBlocksGet(Ao, NULL, &b.off, h->blk32_off));
  if (sizeof(PetscInt) == sizeof(heptane::index_t)) b.off_cols = (const heptane::index_t *)garray;
  else if (b.off.block_ptr) {
    /* 64-bit PetscInt: garray (the global block columns) in 32 bits; the blocks were lent, so they fit */
    HeptaneCallCXX(h->blk32_off->garray.assign(garray, garray + Ao->cmap->n / (Ao->cmap->bs > 0 ? Ao->cmap->bs : 1)));
    b.off_cols = h->blk32_off->garray.data();
  }
  HeptaneCallCXX(
    try {
      if (todo == 1) ok = h->own->refresh_values_blocks(b);
      else {
        try {
          ok = h->own->build_distributed_blocks(b, (heptane::index_t)A->rmap->rstart, PetscObjectComm((PetscObject)ksp), *hint, cfg);
        } catch (const heptane::InputError &) {
          ok = false;
        } /* every rank: tried again from the rows */
        if (ok) {
          h->rows->baij   = PETSC_TRUE; /* a preconditioner that needs the rows gathers them (KSPHeptaneBuildPC) */
          h->rows->rstart = A->rmap->rstart;
          h->rows->rend   = A->rmap->rend;
          *h->grid_source = h->own->structure_note() +
                            "; this rank's rows read from the MPIBAIJ's two SeqBAIJ blocks (MatMPIBAIJGetSeqBAIJ) straight into the operator's slots, at a new pattern and at each values-only setup (the CPU, Nc = the block "
                            "size: no scalar CSR, no gather, no map)" +
                            (!h->petsc_pc && KSPHeptanePCFromRows(KSPHeptaneResolvePC(h)) ? "; the preconditioner's rows (ILU(0)): the diagonal SeqBAIJ expanded into scalar CSR by formula at each setup" : "");
        }
      }
    } catch (...) {
      ierr = HeptaneBAIJBlocksRestore(Ao, &b.off);
      if (!ierr) ierr = HeptaneBAIJBlocksRestore(Ad, &b.diag);
      throw;
    });
  PetscCall(ierr);
  PetscCall(HeptaneBAIJBlocksRestore(Ao, &b.off));
  PetscCall(HeptaneBAIJBlocksRestore(Ad, &b.diag));
  *done = ok ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Several ranks, a new pattern: where the global numbering is not the grid's natural one (a
   DMDA split in x or y numbers its unknowns rank by rank), the map to the natural order, made
   once per pattern from the DMDA's AO: this rank takes the natural rows [rstart, rend) (as many
   as it owns in PETSc's numbering), nat_is lists their PETSc indices, the matrix is renumbered
   by MatCreateSubMatrix (KSPHeptaneUpdateRanks) and b and x go through nat_sc. */
static PetscErrorCode KSPHeptaneNaturalMap(KSP ksp, Mat A, DM dm)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PetscBool    isda;
  PetscInt     dim, m = 1, n = 1, p = 1, dof, M, N, P, nloc, *idx;
  AO           ao;
  Vec          tmpl;
  MPI_Comm     comm = PetscObjectComm((PetscObject)ksp);

  PetscFunctionBegin;
  PetscCall(ISDestroy(&h->nat_is));
  PetscCall(MatDestroy(&h->nat_A));
  PetscCall(VecScatterDestroy(&h->nat_sc));
  PetscCall(VecDestroy(&h->nat_b));
  PetscCall(VecDestroy(&h->nat_x));
  PetscCall(VecDestroy(&h->nat_mid));
  HeptaneCallCXX(h->nat_note->clear());
  if (!dm) PetscFunctionReturn(0);
  PetscCall(PetscObjectTypeCompare((PetscObject)dm, DMDA, &isda));
  if (!isda) PetscFunctionReturn(0);
  PetscCall(DMDAGetInfo(dm, &dim, &M, &N, &P, &m, &n, &p, &dof, NULL, NULL, NULL, NULL, NULL));
  if ((dim < 2 || m == 1) && (dim < 3 || n == 1)) PetscFunctionReturn(0); /* slabs of the last dimension: natural */
  PetscCheck(A->rmap->N == M * (dim > 1 ? N : 1) * (dim > 2 ? P : 1) * dof, comm, PETSC_ERR_ARG_SIZ, "KSP %s: the matrix has %" PetscInt_FMT " rows, its DMDA %" PetscInt_FMT " unknowns", KSPHeptaneName(h), A->rmap->N, M * (dim > 1 ? N : 1) * (dim > 2 ? P : 1) * dof);
  PetscCall(DMDAGetAO(dm, &ao));
  nloc = A->rmap->n;
  PetscCall(PetscMalloc1(nloc, &idx));
  for (PetscInt k = 0; k < nloc; k++) idx[k] = A->rmap->rstart + k;
  PetscCall(AOApplicationToPetsc(ao, nloc, idx));
  PetscCall(ISCreateGeneral(comm, nloc, idx, PETSC_OWN_POINTER, &h->nat_is));
  PetscCall(ISSetBlockSize(h->nat_is, dof));
  PetscCall(VecCreateMPI(comm, nloc, A->rmap->N, &h->nat_b));
  PetscCall(VecDuplicate(h->nat_b, &h->nat_x));
  PetscCall(MatCreateVecs(A, &tmpl, NULL));
  PetscCall(VecScatterCreate(tmpl, h->nat_is, h->nat_b, NULL, &h->nat_sc));
  PetscCall(VecDestroy(&tmpl));
  {
    char line[512];
    PetscCall(PetscSNPrintf(line, sizeof(line), "the DMDA is split %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " over the ranks, so PETSc numbers the unknowns rank by rank: the matrix is renumbered into the grid's natural order once per pattern (MatCreateSubMatrix from the DMDA's AO; its values gathered again at each values-only setup), b and x scattered to it and back (VecScatter)", m, dim > 1 ? n : 1, dim > 2 ? p : 1));
    HeptaneCallCXX(*h->nat_note = line);
    PetscCall(PetscInfo(ksp, "%s: %s\n", KSPHeptaneName(h), line));
  }
  PetscFunctionReturn(0);
}

/* Several ranks: this rank's rows of the matrix into the distributed operator, MPIAIJ's two
   blocks in place, any other type through a row copy (HeptaneRowsGet). What to do (0 nothing,
   1 values, 2 build) is agreed over the ranks: building and refreshing are collective. */
static PetscErrorCode KSPHeptaneUpdateRanks(KSP ksp, Mat A, const heptane::plugin::MatrixConfig &cfg, PetscObjectId id, PetscObjectState nz, PetscObjectState st, PetscInt *updated)
{
  KSP_Heptane              *h = (KSP_Heptane *)ksp->data;
  MPI_Comm                  comm;
  int                       mine = 0, todo = 0;
  heptane::plugin::GridHint hint;
  PetscInt                  bs;
  DM                        dm;
  PetscErrorCode            ierr;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetComm((PetscObject)ksp, &comm));
  mine = !(A->rmap->n == A->cmap->n && A->rmap->rstart == A->cmap->rstart);
  PetscCallMPI(MPI_Allreduce(&mine, &todo, 1, MPI_INT, MPI_MAX, comm));
  PetscCheck(!todo, comm, PETSC_ERR_ARG_SIZ, "KSP %s: the matrix's rows and columns are split differently over the ranks (this rank: rows [%" PetscInt_FMT ", %" PetscInt_FMT "), columns [%" PetscInt_FMT ", %" PetscInt_FMT ")): heptane's distributed operator needs the same row and column layout", KSPHeptaneName(h),
             A->rmap->rstart, A->rmap->rend, A->cmap->rstart, A->cmap->rend);
  mine      = 0;
  h->engine = h->own;
  PetscCall(MatDestroy(&h->engine_mat));
  if (!h->own->built() || !h->own->distributed() || id != h->mat_id || nz != h->mat_nzstate || h->own->config() != cfg) mine = 2;
  else if (st != h->mat_state) {
    /* PETSc 3.18's MPIBAIJ counts no new nonzero state for a block put into room its
       preallocation left: this rank's entries are counted too */
    MatInfo info;
    PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
    mine = info.nz_used != h->rank_entries ? 2 : 1;
    if (mine == 2) PetscCall(PetscInfo(ksp, "%s: this rank's part has %.0f entries, the operator's pattern %.0f, under the same nonzero state: a new pattern\n", KSPHeptaneName(h), (double)info.nz_used, (double)h->rank_entries));
  }
  PetscCallMPI(MPI_Allreduce(&mine, &todo, 1, MPI_INT, MPI_MAX, comm));
  *updated = todo;
  if (!todo) PetscFunctionReturn(0);
  if (todo == 2) {
    MatInfo info;
    PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
    h->rank_entries = info.nz_used;
  }
  if (!h->rows) HeptaneCallCXX(h->rows = new HeptaneRows());
  if (todo == 2) {
    PetscCall(MatGetDM(A, &dm));
    if (!dm) dm = ksp->dm;
    PetscCall(KSPHeptaneNaturalMap(ksp, A, dm));
    PetscCall(KSPHeptaneGridHint(ksp, A, &hint));
    if (hint.block_size == 0) { /* Nc: the matrix's block size (PETSc splits the rows on it) */
      PetscCall(MatGetBlockSize(A, &bs));
      hint.block_size = (heptane::index_t)bs;
      HeptaneCallCXX(hint.source = "matrix block size");
    }
  }
  {
    PetscBool issbaij;
    PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPISBAIJ, &issbaij));
    if (issbaij) PetscCall(HeptaneAIJCopyGet(A, &h->sbaij, &A)); /* only the upper triangle is stored: an MPIAIJ copy */
  }
  if (h->nat_is) { /* PETSc's numbering is not the grid's: the rows renumbered into it (MPIBAIJ's
                       MAT_REUSE_MATRIX refuses the layout it made itself: made anew, its rows are
                       copied by HeptaneRowsGet anyway) */
    PetscBool isaij;
    PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIAIJ, &isaij));
    if (!isaij) PetscCall(MatDestroy(&h->nat_A));
    PetscCall(MatCreateSubMatrix(A, h->nat_is, h->nat_is, h->nat_A ? MAT_REUSE_MATRIX : MAT_INITIAL_MATRIX, &h->nat_A));
    A = h->nat_A;
  }
  h->rows_from = A; /* the matrix the rows come from (an SBAIJ's AIJ copy, the renumbered one) */
  {                 /* an MPIBAIJ's blocks as they are, where the operator takes them */
    PetscBool done;
    PetscCall(KSPHeptaneRanksBlocks(ksp, A, todo, &hint, cfg, &done));
    if (todo == 2) h->baij_blocks = done;
    if (done) PetscFunctionReturn(0);
  }
  PetscCall(HeptaneRowsGet(A, h->rows));
  ierr = KSPHeptaneRanksEngine(ksp, A, comm, todo, &hint, cfg);
  PetscCall(HeptaneRowsRestore(h->rows)); /* MPIAIJ's blocks back (copies are kept) */
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/* out = op(in) by PETSc (PCApply of its own PC, Amat's MatMult) inside heptane's loop, x and y
   this rank's rows in heptane's order: PETSc's layout (pc_r, pc_z: KSPHeptanePetscVecs) placed
   around them, or, under the natural map, scattered to PETSc's numbering and back. Collective
   (every rank's solver calls it together). Never nested: one pair of vectors serves both. */
static PetscErrorCode KSPHeptaneInPetscLayout(KSP ksp, const double *x, double *y, PetscErrorCode (*op)(KSP, Vec, Vec))
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  if (h->nat_sc) {
    PetscCall(VecPlaceArray(h->nat_r, x));
    PetscCall(VecPlaceArray(h->nat_z, y));
    PetscCall(VecScatterBegin(h->nat_sc, h->nat_r, h->pc_r, INSERT_VALUES, SCATTER_REVERSE));
    PetscCall(VecScatterEnd(h->nat_sc, h->nat_r, h->pc_r, INSERT_VALUES, SCATTER_REVERSE));
    PetscCall(op(ksp, h->pc_r, h->pc_z));
    PetscCall(VecScatterBegin(h->nat_sc, h->pc_z, h->nat_z, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(h->nat_sc, h->pc_z, h->nat_z, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecResetArray(h->nat_r));
    PetscCall(VecResetArray(h->nat_z));
  } else {
    PetscCall(VecPlaceArray(h->pc_r, x));
    PetscCall(VecPlaceArray(h->pc_z, y));
    PetscCall(op(ksp, h->pc_r, h->pc_z));
    PetscCall(VecResetArray(h->pc_r));
    PetscCall(VecResetArray(h->pc_z));
  }
  PetscFunctionReturn(0);
}

/* The vectors of KSPHeptaneInPetscLayout: Pmat's type and layout (a shell Amat's own
   MatCreateVecs gives host vectors, which an aijcusparse product inside it does not take; the
   host's vectors are Pmat's type, as these are), and natural-layout ones under the natural map. */
static PetscErrorCode KSPHeptanePetscVecs(KSP ksp, Mat Pmat)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PetscInt     n, N;

  PetscFunctionBegin;
  if (h->pc_r) {
    PetscCall(VecGetLocalSize(h->pc_r, &n));
    if (n != Pmat->rmap->n) {
      PetscCall(VecDestroy(&h->pc_r));
      PetscCall(VecDestroy(&h->pc_z));
      PetscCall(VecDestroy(&h->nat_r));
      PetscCall(VecDestroy(&h->nat_z));
    }
  }
  if (!h->pc_r) PetscCall(MatCreateVecs(Pmat, &h->pc_r, &h->pc_z));
  if (!h->nat_sc) {
    PetscCall(VecDestroy(&h->nat_r));
    PetscCall(VecDestroy(&h->nat_z));
  } else if (!h->nat_r) {
    PetscCall(VecGetLocalSize(h->pc_r, &n));
    PetscCall(VecGetSize(h->pc_r, &N));
    PetscCall(VecCreateMPIWithArray(PetscObjectComm((PetscObject)ksp), 1, n, N, NULL, &h->nat_r));
    PetscCall(VecCreateMPIWithArray(PetscObjectComm((PetscObject)ksp), 1, n, N, NULL, &h->nat_z));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPHeptanePCApplyOp(KSP ksp, Vec r, Vec z)
{
  PC pc;

  PetscFunctionBegin;
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCApply(pc, r, z));
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPHeptaneAmatMultOp(KSP ksp, Vec x, Vec y)
{
  Mat Amat;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &Amat, NULL));
  PetscCall(MatMult(Amat, x, y));
  PetscFunctionReturn(0);
}

/* PETSc's own PC as heptane's preconditioner: its vectors, and the callback. */
static PetscErrorCode KSPHeptaneUsePetscPC(KSP ksp, Mat Pmat)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCall(KSPHeptanePetscVecs(ksp, Pmat));
  {
    PC          pc;
    std::string desc;
    PetscCall(KSPGetPC(ksp, &pc));
    HeptaneCallCXX(desc = std::string("PETSc PC ") + ((PetscObject)pc)->type_name + " (PCApply)");
    /* set once, and again when the PC's type changed (the description names it) */
    if (!h->krylov->host_preconditioner() || h->krylov->preconditioner_describe() != desc)
      HeptaneCallCXX(h->krylov->set_host_preconditioner(
        [ksp, h](const double *r, double *z) {
          h->pc_apply_error = KSPHeptaneInPetscLayout(ksp, r, z, KSPHeptanePCApplyOp);
          if (h->pc_apply_error) throw HeptaneCallbackFailed();
        },
        desc));
  }
  h->pc_built = heptane::PcType::none;
  PetscFunctionReturn(0);
}

/* PETSc's convention for KSPSetOperators(ksp, Amat, Pmat): the preconditioner from Pmat, the
   operator Amat. heptane reads Pmat (its operator, detection and preconditioner: KSPHeptaneUpdate);
   where Amat is another matrix, the Krylov loop's products are Amat's MatMult
   (KrylovEngine::set_host_operator), so that the answer solves Amat x = b. */
static PetscErrorCode KSPHeptaneAmatOperator(KSP ksp, Mat Amat, Mat Pmat)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  std::string  desc;

  PetscFunctionBegin;
  if (Amat == Pmat) {
    if (h->krylov->host_operator()) HeptaneCallCXX(h->krylov->clear_host_operator());
    PetscFunctionReturn(0);
  }
  PetscCall(KSPHeptanePetscVecs(ksp, Pmat));
  HeptaneCallCXX(desc = std::string("PETSc's MatMult of the KSP's Amat (type ") + ((PetscObject)Amat)->type_name + "), which is not its Pmat (type " + ((PetscObject)Pmat)->type_name + "): the Krylov loop's products are Amat's; the operator above is Pmat's, read for the preconditioner (PETSc's convention: the preconditioner from Pmat)");
  if (!h->krylov->host_operator() || h->krylov->host_operator_describe() != desc)
    HeptaneCallCXX(h->krylov->set_host_operator(
      [ksp, h](const double *x, double *y) {
        h->pc_apply_error = KSPHeptaneInPetscLayout(ksp, x, y, KSPHeptaneAmatMultOp);
        if (h->pc_apply_error) throw HeptaneCallbackFailed();
      },
      desc));
  PetscFunctionReturn(0);
}

/* -heptane_precision mixed with -heptane_refine: where heptane's operator keeps no fp64 copy of
   the matrix (one rank's CSR, ELL, ... or the distributed operators on several ranks), the
   refinement's residuals are PETSc's MatMult of the KSP's Amat, fp64 in PETSc's layout (a few
   products a solve: one per correction). One rank's bdiagh refines against its own fp64 copy. */
static PetscErrorCode KSPHeptaneFp64Product(KSP ksp, Mat Pmat)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  if (h->precision != 2 || !h->refine) PetscFunctionReturn(0);
  PetscCall(KSPHeptanePetscVecs(ksp, Pmat));
  HeptaneCallCXX(h->krylov->set_fp64_product(
    [ksp, h](const double *x, double *y) {
      h->pc_apply_error = KSPHeptaneInPetscLayout(ksp, x, y, KSPHeptaneAmatMultOp);
      if (h->pc_apply_error) throw HeptaneCallbackFailed();
    },
    "PETSc's MatMult of the KSP's operator (fp64; heptane's operator keeps no fp64 copy)"));
  PetscFunctionReturn(0);
}

/* hcg: whether the operator is symmetric, once per matrix state (pattern or values). One rank:
   every entry against its transpose (a binary search in the sorted row), relative difference
   |a_ij - a_ji| <= tol max(|a_ij|, |a_ji|), a missing transpose counting as 0; several ranks:
   MatIsSymmetric (|a_ij - a_ji| <= tol ||A||_inf) where the matrix type has it. A matrix marked
   with MatSetOption(MAT_SYMMETRIC) is taken at its word. */
/* MatIsSymmetricKnown over the matrix's ranks: known only where every rank knows it, symmetric
   only where every rank says so. PETSc keeps the flag on each rank (MatSetOption is not
   collective: a host may set it where it assembles), and the check that follows an unknown
   answer is collective, so every rank must take the same branch. */
static PetscErrorCode HeptaneSymmetricKnown(Mat M, PetscBool *set, PetscBool *flg)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCall(MatIsSymmetricKnown(M, set, flg));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)M), &size));
  if (size > 1) {
    PetscMPIInt v[2] = {*set ? 1 : 0, *set && *flg ? 1 : 0};
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, PetscObjectComm((PetscObject)M)));
    *set = v[0] ? PETSC_TRUE : PETSC_FALSE;
    *flg = v[1] ? PETSC_TRUE : PETSC_FALSE;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPHeptaneCheckSymmetry(KSP ksp, Mat Amat, Mat Pmat)
{
  KSP_Heptane     *h   = (KSP_Heptane *)ksp->data;
  PetscBool        set = PETSC_FALSE, flg = PETSC_FALSE;
  PetscObjectState st;
  PetscObjectId    id;
  char             line[768];

  PetscFunctionBegin;
  if (h->solver != heptane::SolverType::cg || !h->check_symmetry) {
    h->symmetric = -1;
    PetscFunctionReturn(0);
  }
  /* the entries read are Pmat's: Amat's too where it is Pmat; a separate Amat (KSPHeptaneAmatOperator)
     is taken at its word where it has one (MAT_SYMMETRIC), else its Pmat stands for it */
  PetscCall(HeptaneSymmetricKnown(Amat, &set, &flg));
  Mat M = set || Amat == Pmat ? Amat : Pmat;
  PetscCall(PetscObjectStateGet((PetscObject)M, &st));
  PetscCall(PetscObjectGetId((PetscObject)M, &id));
  {
    /* kept only where every rank kept it: the checks below are collective */
    PetscMPIInt keep = h->symmetric >= 0 && st == h->sym_state && id == h->sym_id;
    if (h->ranks > 1) PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &keep, 1, MPI_INT, MPI_MIN, PetscObjectComm((PetscObject)ksp)));
    if (keep) PetscFunctionReturn(0);
  }
  h->sym_state = st;
  h->sym_id    = id;
  if (!set) PetscCall(HeptaneSymmetricKnown(M, &set, &flg));
  if (set) {
    h->symmetric = flg ? 1 : 0;
    PetscCall(PetscSNPrintf(line, sizeof(line), "the matrix is marked %s (MatSetOption MAT_SYMMETRIC)", flg ? "symmetric" : "not symmetric"));
  } else if (h->ranks > 1 && h->rows_from && h->engine->distributed()) {
    /* heptane's own check over the ranks from this rank's rows (one exchange of the couplings
       between ranks; PETSc's MatIsSymmetric of an MPIAIJ gathers far more: hcg's KSPSetUp took
       1.5-1.8 s with it on 16 ranks and 1 M rows, hbcgs's 0.3 s) */
    heptane::SymmetryCheck sc;
    PetscCall(HeptaneRowsGet(h->rows_from, h->rows));
    HeptaneCallCXX(sc = heptane::plugin::check_symmetry_ranks(PetscObjectComm((PetscObject)ksp), h->rows->split.diag, h->rows->split.off, h->rows->split.off_cols, (heptane::index_t)h->rows->rstart, h->symmetry_tol));
    PetscCall(HeptaneRowsRestore(h->rows));
    h->symmetric = sc.symmetric ? 1 : 0;
    if (sc.symmetric) PetscCall(PetscSNPrintf(line, sizeof(line), "every entry equals its transpose to %g (relative; over the ranks)", (double)h->symmetry_tol));
    else
      PetscCall(PetscSNPrintf(line, sizeof(line), "NOT symmetric: a(%" PetscInt_FMT ", %" PetscInt_FMT ") = %g but a(%" PetscInt_FMT ", %" PetscInt_FMT ") = %g (relative difference %.3g > -heptane_symmetry_tol %g)", (PetscInt)sc.i, (PetscInt)sc.j, sc.aij,
                              (PetscInt)sc.j, (PetscInt)sc.i, sc.aji, sc.worst, (double)h->symmetry_tol));
  } else if (h->ranks > 1) {
    PetscReal norm;
    PetscErrorCode (*istranspose)(Mat, Mat, PetscReal, PetscBool *) = NULL;
    /* MatIsSymmetric where the type has it, else MatIsTranspose(A, A) (what PETSc 3.25's
       MatIsSymmetric does for MPIAIJ itself) where that is composed */
    PetscCall(PetscObjectQueryFunction((PetscObject)M, "MatIsTranspose_C", &istranspose));
    if (!M->ops->issymmetric && !istranspose) {
      h->symmetric = -1;
      PetscCall(PetscSNPrintf(line, sizeof(line), "not checked (matrix type %s has neither MatIsSymmetric nor MatIsTranspose; set MAT_SYMMETRIC to say it is)", ((PetscObject)M)->type_name));
      HeptaneCallCXX(*h->sym_note = line);
      PetscFunctionReturn(0);
    }
    PetscCall(MatNorm(M, NORM_INFINITY, &norm));
    if (M->ops->issymmetric) PetscCall(MatIsSymmetric(M, h->symmetry_tol * norm, &flg));
    else PetscCall(MatIsTranspose(M, M, h->symmetry_tol * norm, &flg));
    h->symmetric = flg ? 1 : 0;
    PetscCall(PetscSNPrintf(line, sizeof(line), "%s with tolerance %g ||A||_inf: %s", M->ops->issymmetric ? "MatIsSymmetric" : "MatIsTranspose(A, A)", (double)h->symmetry_tol, flg ? "symmetric" : "NOT symmetric"));
  } else {
    HeptaneCSR             csr = {};
    heptane::SymmetryCheck sc;
    PetscCall(KSPHeptaneCSRGet(ksp, M, &csr));
    HeptaneCallCXX(sc = heptane::check_symmetry(csr.view, h->symmetry_tol));
    const PetscInt wi = sc.symmetric ? -1 : sc.i, wj = sc.j;
    const double   vij = sc.aij, vji = sc.aji, worst = sc.worst;
    PetscCall(HeptaneCSRRestore(&csr));
    h->symmetric = wi < 0 ? 1 : 0;
    if (wi < 0) PetscCall(PetscSNPrintf(line, sizeof(line), "every entry equals its transpose to %g (relative)", (double)h->symmetry_tol));
    else
      PetscCall(
        PetscSNPrintf(line, sizeof(line), "NOT symmetric: a(%" PetscInt_FMT ", %" PetscInt_FMT ") = %g but a(%" PetscInt_FMT ", %" PetscInt_FMT ") = %g (relative difference %.3g > -heptane_symmetry_tol %g)", wi, wj, vij, wj, wi, vji, worst, (double)h->symmetry_tol));
  }
  if (M != Amat) {
    size_t len;
    PetscCall(PetscStrlen(line, &len));
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " (Pmat's entries, standing for the KSP's Amat of type %s, which heptane applies through MatMult and does not read)", ((PetscObject)Amat)->type_name));
  }
  HeptaneCallCXX(*h->sym_note = line);
  PetscCall(PetscInfo(ksp, "%s: symmetry: %s\n", KSPHeptaneName(h), line));
  PetscFunctionReturn(0);
}

/* OpenMP threads for heptane's host work on the CPU back end (-heptane_threads): set around
   setup and solve, the caller's own count restored after. */
struct HeptaneThreadsScope {
  int  prev = 0;
  bool on   = false;
  explicit HeptaneThreadsScope(const KSP_Heptane *h)
  {
    on = h->threads > 0 && (h->device_resolved->empty() ? heptane::plugin::resolve_device(h->device) : *h->device_resolved) == "cpu";
    if (on) {
      prev = omp_get_max_threads();
      omp_set_num_threads((int)h->threads);
    }
  }
  ~HeptaneThreadsScope()
  {
    if (on) omp_set_num_threads(prev);
  }
  HeptaneThreadsScope(const HeptaneThreadsScope &)            = delete;
  HeptaneThreadsScope &operator=(const HeptaneThreadsScope &) = delete;
};

/* Several ranks, -heptane_coarse: the global coarse correction around heptane's preconditioner
   (KrylovEngine::set_global_coarse: aggregates per rank, A_c = P^T A P with the couplings
   between ranks), made at a new pattern or preconditioner and assembled again from the values
   at a values-only step (`changed`), from this rank's rows as HeptaneRowsGet lends them. A
   coarse matrix that cannot be factored drops it with a warning (the ranks' preconditioner
   alone then). Collective. */
static PetscErrorCode KSPHeptaneCoarse(KSP ksp, PetscBool changed)
{
  KSP_Heptane *h    = (KSP_Heptane *)ksp->data;
  MPI_Comm     comm = PetscObjectComm((PetscObject)ksp);
  std::string  refused;

  PetscFunctionBegin;
  const bool hierarchy = !h->petsc_pc && KSPHeptaneOverRanks(h, h->pc_built, h->over_ranks_why);
  /* a failed setup of the rank's own preconditioner (agreed over the ranks: h->pc_failed) ends
     there: the solve stops with KSP_DIVERGED_PC_FAILED, nothing is built around it */
  if (!(h->coarse || hierarchy) || h->petsc_pc || !h->pc_failed->empty() || h->krylov->host_preconditioner() || !h->engine->distributed()) {
    HeptaneCallCXX(h->krylov->clear_global_coarse());
    PetscFunctionReturn(0);
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &changed, 1, HEPTANE_MPIU_BOOL, MPI_LOR, comm));
  heptane::plugin::GlobalCoarseOptions o;
  o.aggregates  = (heptane::index_t)h->coarse_aggregates;
  o.symmetric   = h->solver == heptane::SolverType::cg;
  o.solve       = (int)h->coarse_solve;
  o.cycles      = (int)h->coarse_cycles;
  o.aggregation = (int)h->coarse_aggregation;
  o.singular    = h->pc_opts->amg.singular; /* MatSetNullSpace (HeptanePcOptionsNullSpace) */
  o.hierarchy   = hierarchy;
  if (hierarchy) o.amg = h->pc_opts->amg;
  o.cpr = hierarchy && h->pc == heptane::PcType::cpr;
  if (o.cpr) o.cpr_opts = h->pc_opts->cpr;
  if (!changed && h->krylov->has_global_coarse() && *h->coarse_built == o) PetscFunctionReturn(0);
  PetscCall(HeptaneRowsGet(h->rows_from, h->rows));
  HeptaneCallCXX(
    try { h->krylov->set_global_coarse(h->rows->split.diag, h->rows->split.off, h->rows->split.off_cols, comm, *h->engine, o); } catch (const heptane::InputError &e) {
      refused = e.what();
      h->krylov->clear_global_coarse();
    });
  PetscCall(HeptaneRowsRestore(h->rows));
  *h->coarse_built = o;
  if (!refused.empty() && hierarchy) {
    /* refused on every rank alike: each rank's own AMG/CPR until the pattern changes */
    const bool asked = h->pc_opts->amg.over_ranks == heptane::AmgOverRanks::yes;
    Mat        Pmat;
    h->over_ranks_refused = PETSC_TRUE;
    PetscCall(KSPGetOperators(ksp, NULL, &Pmat));
    PetscCall(KSPHeptaneBuildPC(ksp, Pmat, PETSC_FALSE));
    HeptaneCallCXX(*h->over_ranks_why = "refused at this pattern (" + refused + "): each rank's own instead");
    if (asked) PetscCall(KSPHeptaneWarn(ksp, ("-heptane_amg_global: no AMG/CPR over the ranks, each rank's own instead (" + refused + ")").c_str()));
    else PetscCall(PetscInfo(ksp, "%s: the AMG over the ranks (the default here) was refused, each rank's own AMG instead (%s)\n", KSPHeptaneName(h), refused.c_str()));
  } else if (!refused.empty()) PetscCall(KSPHeptaneWarn(ksp, ("-heptane_coarse: no global coarse correction, each rank's preconditioner alone (" + refused + ")").c_str()));
  PetscFunctionReturn(0);
}

/* What the next KSPSolve would make at its start -- heptane's copies of b and x, the operator
   with M^-1 folded in (-heptane_fold) and the solver's workspace (vectors, the pinned slots its
   checks read back) -- made here, in KSPSetUp, as PETSc's own KSPs make their work vectors there
   (KSPSetWorkVecs), so that KSPSolve iterates. HEPTANE_PREPARE=0 in the environment leaves them to
   the solve (for comparisons). */
static PetscErrorCode KSPHeptanePrepare(KSP ksp)
{
  KSP_Heptane           *h = (KSP_Heptane *)ksp->data;
  heptane::SolverOptions opts;
  static const bool      off = [] {
    const char *v = getenv("HEPTANE_PREPARE");
    return v && !strcmp(v, "0");
  }();

  PetscFunctionBegin;
  h->prepared_allocs = 0;
  h->prepared_ms     = 0;
  if (off || !h->pc_failed->empty() || h->symmetric == 0 || !h->engine->built()) PetscFunctionReturn(0);
  opts.max_it      = (int)ksp->max_it;
  opts.check_every = (int)h->check_every;
  const double t0  = MPI_Wtime();
  HeptaneCallCXX(h->krylov->set_fold(h->fold); h->krylov->set_refine(h->refine); h->krylov->set_restart((int)h->restart); h->prepared_allocs = (long long)h->krylov->prepare(h->solver, *h->engine, opts, !ksp->guess_zero));
  h->prepared_ms = (MPI_Wtime() - t0) * 1e3;
  PetscFunctionReturn(0);
}

/* Bring the operator and the preconditioner up to date with the KSP's matrix. */
static PetscErrorCode KSPHeptaneUpdate(KSP ksp)
{
  KSP_Heptane                  *h = (KSP_Heptane *)ksp->data;
  Mat                           Amat, Pmat;
  PetscObjectState              nz, st;
  PetscObjectId                 id;
  PetscBool                     isbdiagh, rebuild_pc;
  PetscInt                      updated = 0;
  HeptaneCSR                    csr     = {};
  heptane::plugin::GridHint     hint;
  heptane::plugin::MatrixConfig cfg = KSPHeptaneConfig(h);

  PetscFunctionBegin;
  h->device_values = PETSC_FALSE; /* set again below by a refresh that reads PETSc's device array */
  PetscCall(KSPHeptaneCheckComm(ksp));
  PetscCall(KSPHeptaneTakePC(ksp));
  PetscCall(KSPGetOperators(ksp, &Amat, &Pmat));
  PetscCheck(Amat->rmap->N == Amat->cmap->N, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "KSP %s: the matrix is %" PetscInt_FMT " x %" PetscInt_FMT ", not square", KSPHeptaneName(h), Amat->rmap->N, Amat->cmap->N);
  PetscCheck(Pmat->rmap->N == Amat->rmap->N && Pmat->cmap->N == Amat->cmap->N && Pmat->rmap->n == Amat->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "KSP %s: Pmat (%" PetscInt_FMT " x %" PetscInt_FMT ", %" PetscInt_FMT " rows here) does not match Amat (%" PetscInt_FMT " x %" PetscInt_FMT ", %" PetscInt_FMT " rows here)", KSPHeptaneName(h),
             Pmat->rmap->N, Pmat->cmap->N, Pmat->rmap->n, Amat->rmap->N, Amat->cmap->N, Amat->rmap->n);
  PetscCall(HeptanePcOptionsNullSpace(Amat, Pmat, h->pc_opts));
  {
    char who[64];
    PetscCall(PetscSNPrintf(who, sizeof(who), "KSP %s", KSPHeptaneName(h)));
    PetscCall(HeptaneCheckEntriesReadable((PetscObject)ksp, Pmat, who, Pmat == Amat ? "With a matrix-free operator, give an assembled Pmat too (as -snes_mf_operator does): heptane builds its preconditioner from Pmat and applies the operator through MatMult." : "heptane reads the preconditioning matrix (Pmat); only the operator (Amat) may be matrix-free."));
  }
  PetscCall(PetscObjectTypeCompare((PetscObject)Pmat, MATBDIAGH, &isbdiagh));
  PetscCall(MatGetNonzeroState(Pmat, &nz));
  PetscCall(PetscObjectStateGet((PetscObject)Pmat, &st));
  PetscCall(PetscObjectGetId((PetscObject)Pmat, &id));

  if (h->ranks > 1) {
    /* several ranks: the distributed operator, from any parallel matrix (bdiagh included:
       on several ranks it is an MPIAIJ matrix and keeps no copy of its own) */
    PetscCall(KSPHeptaneUpdateRanks(ksp, Pmat, cfg, id, nz, st, &updated));
  } else if (isbdiagh && (cfg.format == "auto" || cfg.format == "bdiagh")) {
    /* the matrix keeps its own BDIA-GH copy (updated at assembly); use it */
    PetscCall(MatBDIAGHGetEngine(Pmat, &cfg, &h->engine, &updated));
    if (h->engine_mat != Pmat) { /* keep the lender alive as long as its engine is ours */
      PetscCall(PetscObjectReference((PetscObject)Pmat));
      PetscCall(MatDestroy(&h->engine_mat));
      h->engine_mat = Pmat;
    }
    if (id != h->mat_id || nz != h->mat_nzstate || updated == 2) updated = 2;
    else if (st != h->mat_state) updated = PetscMax(updated, 1);
    HeptaneCallCXX(*h->grid_source = "bdiagh matrix: " + h->engine->structure_note());
  } else {
    h->engine = h->own;
    PetscCall(MatDestroy(&h->engine_mat));
    if (!h->own->built() || id != h->mat_id || nz != h->mat_nzstate || h->own->config() != cfg) updated = 2;
    else if (st != h->mat_state) updated = 1;
    if (updated == 1) PetscCall(KSPHeptaneBAIJGrew(ksp, Pmat, &updated));
    PetscBool in_place = PETSC_FALSE;
    if (updated == 1) { /* aijcusparse: its values where they are, on the GPU */
      PetscCall(KSPHeptaneDeviceValues(ksp, Pmat, &in_place));
      if (in_place) h->input_how = "AIJ whose newest values were on the GPU already (aijcusparse): values-only refreshes copy PETSc's device CSR values on the device (MatSeqAIJGetCSRAndMemType: no copy to the host, no upload)";
    }
    if (updated == 1 && !in_place) { /* BAIJ: its values in place, no gather, where the operator can */
      PetscCall(KSPHeptaneBAIJBlocksInPlace(
        ksp, Pmat, [h](const heptane::plugin::BlockCsrView &b) { return h->own->refresh_values_blocks(b); }, &in_place));
      if (in_place)
        h->input_how = h->own->format() == heptane::Format::bsr ? "BAIJ (no MatConvert); its arrays are the operator, read in place on the host: a values-only update copies nothing (-heptane_format bdiagh copies them into BDIA-GH instead)" : "BAIJ (no MatConvert); values-only refreshes read its blocks in place, each straight into its BDIA-GH slots (the CPU, Nc = the block size: positions by the block pattern, no map of the entries)";
      else {
        PetscCall(KSPHeptaneBAIJInPlace(
          ksp, Pmat, [h](const double *v, const heptane::index_t *pos, heptane::offset_t nnz, heptane::index_t bs, std::uint64_t key) { return h->own->refresh_values_permuted(v, pos, nnz, bs, key, (int)h->register_after); }, &in_place));
        if (in_place)
          h->input_how = "BAIJ (no MatConvert); values-only refreshes read its values in place, in BAIJ's own order (no gather on the host: on the CPU through the BDIA-GH slot map composed once with each entry's place in BAIJ's array; "
                         "on a GPU uploaded as they are and put into CSR order there, by formula)";
      }
    }
    if (!in_place && updated) {
      PetscBool blocks = PETSC_FALSE;
      if (updated == 2) {
        PetscCall(KSPHeptaneGridHint(ksp, Pmat, &hint));
        PetscCall(KSPHeptaneBuildFromBlocks(ksp, Pmat, hint, cfg, &blocks));
      }
      if (!blocks) {
        PetscCall(KSPHeptaneCSRGet(ksp, Pmat, &csr));
        if (updated == 1 && csr.view.nnz() != h->own->nnz()) { /* entries grew under the same nonzero
                                                                  state (PETSc 3.18's SeqSBAIJ, as
                                                                  BAIJ: KSPHeptaneBAIJGrew) */
          PetscCall(PetscInfo(ksp, "%s: the matrix has %lld entries, the operator's pattern %lld, under the same nonzero state: a new pattern\n", KSPHeptaneName(h), (long long)csr.view.nnz(), (long long)h->own->nnz()));
          updated = 2;
          PetscCall(KSPHeptaneGridHint(ksp, Pmat, &hint));
        }
        if (updated == 2) {
          HeptaneCallCXX(h->own->build(csr.view, hint, cfg));
          /* -heptane_register_after 1: the solve after this build registers PETSc's value array, the first refresh reads it */
          if (h->register_after == 1) HeptaneCallCXX((void)h->own->mark_values(csr.view.values, csr.view.nnz(), csr.values_key));
        } else HeptaneCallCXX(h->own->refresh_values(csr.view, csr.values_key, (int)h->register_after));
        PetscCall(HeptaneCSRRestore(&csr));
      }
      if (updated == 2) HeptaneCallCXX(*h->grid_source = h->own->structure_note());
      if (updated == 2 && blocks && h->register_after == 1 && h->own->executor() && !h->own->executor()->is_cpu()) { /* as for AIJ above: BAIJ's value array */
        PetscBool marked;
        PetscCall(KSPHeptaneBAIJInPlace(
          ksp, Pmat, [h](const double *v, const heptane::index_t *, heptane::offset_t nnz, heptane::index_t, std::uint64_t key) { return h->own->mark_values(v, nnz, key); }, &marked));
      }
      h->baij_blocks = blocks;
    }
  }
  HeptaneCallCXX(*h->mat_type = ((PetscObject)Pmat)->type_name);
  if (updated == 2) h->full_builds++;
  else if (updated == 1) h->value_refreshes++;

  if (h->petsc_pc) { /* PETSc's PC: set up by KSPSetUp's PCSetUp (after this), from Pmat */
    PetscCall(KSPHeptaneUsePetscPC(ksp, Pmat));
    rebuild_pc = PETSC_FALSE;
  } else {
    if (updated == 2 || KSPHeptanePcOptionsChanged(h) || KSPHeptaneResolvePC(h) != h->pc_built) h->over_ranks_refused = PETSC_FALSE; /* try the AMG over the ranks again */
    rebuild_pc = (PetscBool)(updated || (!h->krylov->has_preconditioner() && h->pc_failed->empty()) || h->krylov->host_preconditioner() || KSPHeptaneResolvePC(h) != h->pc_built || KSPHeptanePcOptionsChanged(h));
    { /* KSPSetReusePreconditioner (-ksp_reuse_preconditioner; SNES sets it on the steps
         -snes_lag_preconditioner skips): new values in the same pattern refresh the operator
         only, the preconditioner is kept as it is, as PETSc's PCSetUp does then */
      PC        pc;
      PetscBool reuse = PETSC_FALSE;
      PetscCall(KSPGetPC(ksp, &pc));
      PetscCall(PCGetReusePreconditioner(pc, &reuse));
      if (reuse && rebuild_pc && updated == 1 && h->pc_failed->empty() && h->krylov->has_preconditioner() && !h->krylov->host_preconditioner() && KSPHeptaneResolvePC(h) == h->pc_built && !KSPHeptanePcOptionsChanged(h)) {
        rebuild_pc = PETSC_FALSE;
        h->pc_reuses++;
        PetscCall(PetscInfo(ksp, "%s: new values, the preconditioner reused (KSPSetReusePreconditioner)\n", KSPHeptaneName(h)));
      }
    }
    if (rebuild_pc) PetscCall(KSPHeptaneBuildPC(ksp, Pmat, (PetscBool)(updated == 1 && !h->krylov->host_preconditioner())));
  }
  if (h->ranks > 1) PetscCall(KSPHeptaneCoarse(ksp, (PetscBool)(updated == 2 || rebuild_pc)));
  if (updated || rebuild_pc) {
    char        line[512];
    const auto &mt    = h->engine->timings();
    const char *where = h->krylov->numeric_path().c_str();
    if (h->petsc_pc)
      PetscCall(PetscSNPrintf(line, sizeof(line), "%s: operator %s in %.3f ms; the preconditioner is PETSc's PCSetUp (PCSetUp in -log_view)", updated == 2 ? "new pattern" : "same pattern", updated == 2 ? "built" : "values refreshed", updated == 2 ? mt.last_build_ms : mt.last_refresh_ms));
    else if (updated == 2) PetscCall(PetscSNPrintf(line, sizeof(line), "new pattern: operator built in %.3f ms (detection %.3f ms), preconditioner %.3f ms (%s)", mt.last_build_ms, mt.last_detect_ms, h->krylov->timings().last_pc_ms, where));
    else if (updated == 1 && !rebuild_pc) PetscCall(PetscSNPrintf(line, sizeof(line), "same pattern: values refreshed in %.3f ms, preconditioner reused as it was (KSPSetReusePreconditioner)", mt.last_refresh_ms));
    else if (updated == 1)
      PetscCall(PetscSNPrintf(line, sizeof(line), "same pattern: values refreshed in %.3f ms, preconditioner %s in %.3f ms (%s)", mt.last_refresh_ms, h->pc_refreshed ? "refactored (numeric only, symbolic setup kept)" : "set up from scratch",
                              h->krylov->timings().last_pc_ms, where));
    else PetscCall(PetscSNPrintf(line, sizeof(line), "new preconditioner (%s): %.3f ms (%s)", h->pc_from, h->krylov->timings().last_pc_ms, where));
    HeptaneCallCXX(*h->last_update = line);
    PetscCall(PetscInfo(ksp, "%s: %s; operator %s\n", KSPHeptaneName(h), line, h->engine->describe().c_str()));
  }
  h->mat_id      = id;
  h->mat_nzstate = nz;
  h->mat_state   = st;
  PetscCall(KSPHeptaneAmatOperator(ksp, Amat, Pmat));
  PetscCall(KSPHeptaneFp64Product(ksp, Pmat));
  PetscCall(KSPHeptaneCheckSymmetry(ksp, Amat, Pmat));
  if (updated || rebuild_pc) PetscCall(KSPHeptanePrepare(ksp));
  PetscFunctionReturn(0);
}

/* -heptane_device for the KSP's matrix: auto weighs the devices by resolve_device's model on
   the stored entries per rank (MatGetInfo, the same on every rank) and the threads heptane
   uses on the CPU (-heptane_threads); a named device as it is. Before the setup, so that the
   threads scope and the engine see the device chosen. */
static PetscErrorCode KSPHeptaneResolveDevice(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  Mat          Amat, Pmat;
  long long    nnz   = -1;
  int          share = 1;

  PetscFunctionBegin;
  if (!strcmp(h->device, "auto")) {
    PetscCall(KSPGetOperators(ksp, &Amat, &Pmat));
    PetscCall(HeptaneEntriesPerRank(Pmat, PetscObjectComm((PetscObject)ksp), &nnz)); /* the matrix heptane reads */
    PetscCall(HeptaneRanksPerGpu(PetscObjectComm((PetscObject)ksp), &share));
  }
  HeptaneCallCXX(*h->device_resolved = heptane::plugin::resolve_device(h->device, nnz, h->threads > 0 ? (int)h->threads : omp_get_max_threads(), h->device_why, share));
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPSetUp_Heptane(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCall(KSPHeptaneResolveDevice(ksp));
  HeptaneThreadsScope threads(h);
  PetscCall(KSPHeptaneUpdate(ksp));
  PetscFunctionReturn(0);
}

/* One line of the history: residual history, ksp->its/rnorm, the monitors. */
static PetscErrorCode KSPHeptaneMonitor(KSP ksp, PetscInt it, PetscReal rnorm)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectSAWsTakeAccess((PetscObject)ksp));
  ksp->its   = it;
  ksp->rnorm = rnorm;
  PetscCall(PetscObjectSAWsGrantAccess((PetscObject)ksp));
  PetscCall(KSPLogResidualHistory(ksp, rnorm));
  PetscCall(KSPMonitor(ksp, it, rnorm));
  PetscFunctionReturn(0);
}

static KSPConvergedReason KSPHeptaneReason(KSP_Heptane *h, heptane::Reason r)
{
  const bool bcgs = h->solver == heptane::SolverType::bicgstab; /* GMRES: breakdown_rho is an invariant Krylov space that misses the tolerance */
  switch (r) {
  case heptane::Reason::converged_rtol:
    return KSP_CONVERGED_RTOL;
  case heptane::Reason::converged_atol:
    return KSP_CONVERGED_ATOL;
  case heptane::Reason::diverged_max_it:
    return KSP_DIVERGED_ITS;
  case heptane::Reason::diverged_dtol:
    return KSP_DIVERGED_DTOL;
  case heptane::Reason::diverged_nan:
    return KSP_DIVERGED_NANORINF;
  case heptane::Reason::breakdown_rho: /* BiCGStab (r^, r) = 0: the BiCG part broke down */
  case heptane::Reason::breakdown_rv:  /* BiCGStab (r^, v) = 0 */
    return bcgs ? KSP_DIVERGED_BREAKDOWN_BICG : KSP_DIVERGED_BREAKDOWN;
  case heptane::Reason::breakdown_omega:
    return KSP_DIVERGED_BREAKDOWN;
  case heptane::Reason::diverged_indefinite: /* CG: (p, Ap) <= 0 or (r, M^-1 r) < 0 */
    return h->pc == heptane::PcType::none ? KSP_DIVERGED_INDEFINITE_MAT : KSP_DIVERGED_INDEFINITE_PC;
  case heptane::Reason::stagnation:
  case heptane::Reason::diverged_true_residual:
    return KSP_DIVERGED_BREAKDOWN;
  case heptane::Reason::converged_by_caller: /* the host's own test (KSPSetConvergenceTest) */
  case heptane::Reason::diverged_by_caller:
    return h->host_reason;
  case heptane::Reason::iterating:
    break;
  }
  return KSP_DIVERGED_BREAKDOWN;
}

/* One run of heptane's solver on the KSP's b and x (scattered to the natural order and back
   under the natural map); a failed PCApply of PETSc's PC stops it with that PETSc error. */
static PetscErrorCode KSPHeptaneRun(KSP ksp, const heptane::SolverOptions &opts, heptane::Status *st)
{
  KSP_Heptane       *h  = (KSP_Heptane *)ksp->data;
  Vec                bv = ksp->vec_rhs, xv = ksp->vec_sol;
  const PetscScalar *b;
  PetscScalar       *x;
  bool               failed = false;

  PetscFunctionBegin;
  if (h->nat_sc) {
    PetscCall(VecScatterBegin(h->nat_sc, ksp->vec_rhs, h->nat_b, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(h->nat_sc, ksp->vec_rhs, h->nat_b, INSERT_VALUES, SCATTER_FORWARD));
    if (!ksp->guess_zero) {
      PetscCall(VecScatterBegin(h->nat_sc, ksp->vec_sol, h->nat_x, INSERT_VALUES, SCATTER_FORWARD));
      PetscCall(VecScatterEnd(h->nat_sc, ksp->vec_sol, h->nat_x, INSERT_VALUES, SCATTER_FORWARD));
    }
    bv = h->nat_b;
    xv = h->nat_x;
  }
  h->pc_apply_error = 0;
  h->device_vecs    = PETSC_FALSE;
  if (sizeof(PetscScalar) == sizeof(double) && h->engine->built() && h->engine->executor()->is_cuda()) {
    /* PETSc's CUDA vectors on heptane's GPU: b and x where they are (device to device), no host
       copy either way; otherwise (host vectors, another GPU, fp32) the host path below */
    PetscMemType mb = PETSC_MEMTYPE_HOST, mx = PETSC_MEMTYPE_HOST;
    PetscCall(VecGetArrayReadAndMemType(bv, &b, &mb));
    if (PetscMemTypeDevice(mb)) {
      PetscCall(VecGetArrayAndMemType(xv, &x, &mx));
      if (PetscMemTypeDevice(mx) && heptane::plugin::KrylovEngine::vectors_on_device(*h->engine, (const double *)b, (const double *)x)) {
        HeptaneCallCXX(
          try { *st = h->krylov->solve(h->solver, *h->engine, opts, !ksp->guess_zero, (const double *)b, (double *)x, true); } catch (const HeptaneCallbackFailed &) { failed = true; });
        h->device_vecs = PETSC_TRUE;
      }
      PetscCall(VecRestoreArrayAndMemType(xv, &x));
    }
    PetscCall(VecRestoreArrayReadAndMemType(bv, &b));
  }
  if (!h->device_vecs) {
    PetscCall(VecGetArrayRead(bv, &b));
    PetscCall(VecGetArray(xv, &x));
    HeptaneCallCXX(
      try { *st = h->krylov->solve(h->solver, *h->engine, opts, !ksp->guess_zero, b, x); } catch (const HeptaneCallbackFailed &) { failed = true; });
    PetscCall(VecRestoreArray(xv, &x));
    PetscCall(VecRestoreArrayRead(bv, &b));
  }
  if (failed) PetscCall(h->pc_apply_error);
  PetscCall(h->monitor_error);
  if (h->nat_sc) {
    PetscCall(VecScatterBegin(h->nat_sc, h->nat_x, ksp->vec_sol, INSERT_VALUES, SCATTER_REVERSE));
    PetscCall(VecScatterEnd(h->nat_sc, h->nat_x, ksp->vec_sol, INSERT_VALUES, SCATTER_REVERSE));
  }
  PetscFunctionReturn(0);
}

/* ||b - A x|| and ||b|| for the KSP's b and x, A its Amat (PETSc's MatMult: any layout, fp64). */
static PetscErrorCode KSPHeptaneResidualNorms(KSP ksp, PetscReal *rn, PetscReal *bn)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  Mat          A;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  if (!h->r_true) PetscCall(VecDuplicate(ksp->vec_rhs, &h->r_true));
  PetscCall(MatMult(A, ksp->vec_sol, h->r_true));
  PetscCall(VecAYPX(h->r_true, -1.0, ksp->vec_rhs)); /* r = b - A x */
  PetscCall(VecNorm(h->r_true, NORM_2, rn));
  PetscCall(VecNorm(ksp->vec_rhs, NORM_2, bn));
  PetscFunctionReturn(0);
}

/* -heptane_precision single (and mixed where it was not refined against an fp64 copy of the
   matrix) stops on the residual of its fp32 recurrence, which can lie below the tolerance while
   the matrix as given leaves ||b - A x|| far above it. After a converged solve the true residual
   is taken with PETSc's MatMult of the KSP's operator (fp64, any layout); above
   max(rtol ||b||, atol) the reason becomes KSP_DIVERGED_BREAKDOWN, so the solve never claims a
   tolerance its answer does not meet. */
static PetscErrorCode KSPHeptaneCheckTrueResidual(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PetscReal    rn, bn, tol;
  const char  *what = h->precision == 1 ? "single" : "mixed";

  PetscFunctionBegin;
  h->true_rnorm = -1;
  if (h->precision == 0 || !h->check_true || ksp->reason <= 0 || h->krylov->last_solve_refined() || h->host_test) PetscFunctionReturn(0); /* the host's test: its criterion, not rtol */
  PetscCall(KSPHeptaneResidualNorms(ksp, &rn, &bn));
  tol           = PetscMax(ksp->rtol * bn, ksp->abstol);
  h->true_rnorm = rn;
  PetscCall(PetscInfo(ksp, "%s: -heptane_precision %s, true residual ||b - A x|| = %g (fp64 MatMult), recurrence's %g, tolerance %g\n", KSPHeptaneName(h), what, (double)rn, (double)ksp->rnorm, (double)tol));
  if (rn > tol) {
    char msg[768];

    ksp->reason = KSP_DIVERGED_BREAKDOWN;
    PetscCall(PetscSNPrintf(msg, sizeof(msg),
                            "KSP %s: -heptane_precision %s stopped on the residual of its fp32 recurrence, but the true residual ||b - A x|| with the fp64 matrix is above max(rtol ||b||, atol) (numbers in -info and -ksp_view), so the reason is "
                            "KSP_DIVERGED_BREAKDOWN, not converged. "
                            "The fp32 rounding of the matrix limits how far the answer can go: use -heptane_precision double, or mixed with -heptane_refine (the default); -heptane_check_true_residual 0 skips this check",
                            KSPHeptaneName(h), what));
    PetscCall(KSPHeptaneWarn(ksp, msg));
  }
  PetscFunctionReturn(0);
}

/* PETSc's own PC failed (its setup or an apply, e.g. a zero pivot) on any rank: the KSP's
   reason becomes KSP_DIVERGED_PC_FAILED on every rank. Collective: PCGetFailedReason is the
   rank's own, and a rank whose PC did not fail (a rank with no rows, say) would otherwise go on
   into the solve's reductions alone and hang. */
static PetscErrorCode KSPHeptanePetscPCFailed(KSP ksp, PetscBool *failed)
{
  KSP_Heptane   *h = (KSP_Heptane *)ksp->data;
  PC             pc;
  PCFailedReason pcreason;
  int            mine, worst;

  PetscFunctionBegin;
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCGetFailedReason(pc, &pcreason));
  mine = pcreason == PC_NOERROR ? -2 : (int)pcreason; /* PC_SETUP_ERROR is -1 */
  PetscCallMPI(MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, PetscObjectComm((PetscObject)ksp)));
  pcreason = worst == -2 ? PC_NOERROR : (PCFailedReason)worst;
  *failed  = pcreason ? PETSC_TRUE : PETSC_FALSE;
  if (*failed) {
    ksp->reason = KSP_DIVERGED_PC_FAILED;
    PetscCall(PetscInfo(ksp, "%s: PETSc's PC %s failed (%s)\n", KSPHeptaneName(h), ((PetscObject)pc)->type_name, PCFailedReasons[pcreason]));
  }
  PetscFunctionReturn(0);
}

/* A null space attached to the KSP's Amat (MatSetNullSpace: a pure-Neumann pressure, a closed
   domain). PETSc's KSPSolve removes the transpose null space from b before the method runs
   (so heptane sees a consistent b), and PETSc's own KSPs remove the null space from every
   preconditioned direction, so their x = x0 + a correction with no component in it. heptane's
   loop (fused, on its device) does not project at every step; instead the correction's
   component in the null space is removed once after the solve, x = x0 + P (x - x0) with P the
   projection onto the null space's orthogonal complement. A x is unchanged (A N = 0), and the
   answer is the one PETSc's KSPs give; without it a preconditioner such as AMG, whose coarsest
   solve is nearly singular on such a system, leaves an arbitrary constant in x. */
static PetscErrorCode KSPHeptaneNullSpace(KSP ksp, MatNullSpace *nullsp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  Mat          A;
  PetscBool    has_const;
  PetscInt     n;
  const Vec   *vecs;

  PetscFunctionBegin;
  *nullsp = NULL;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(MatGetNullSpace(A, nullsp));
  h->null_vecs = -1;
  if (*nullsp) {
    PetscCall(MatNullSpaceGetVecs(*nullsp, &has_const, &n, &vecs));
    h->null_vecs = n + (has_const ? 1 : 0);
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPHeptaneRemoveNullSpace(KSP ksp, MatNullSpace nullsp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PetscReal    before, after;

  PetscFunctionBegin;
  if (!ksp->guess_zero) PetscCall(VecAXPY(ksp->vec_sol, -1.0, h->x0)); /* the correction x - x0 */
  PetscCall(VecNorm(ksp->vec_sol, NORM_2, &before));
  PetscCall(MatNullSpaceRemove(nullsp, ksp->vec_sol));
  PetscCall(VecNorm(ksp->vec_sol, NORM_2, &after));
  if (!ksp->guess_zero) PetscCall(VecAXPY(ksp->vec_sol, 1.0, h->x0));
  h->null_before = PetscSqrtReal(PetscMax(before * before - after * after, 0.0));
  PetscCall(PetscInfo(ksp, "%s: Amat's null space (%" PetscInt_FMT " vector%s) removed from the solution's correction: its component there had norm %g of the correction's %g\n", KSPHeptaneName(h), h->null_vecs, h->null_vecs == 1 ? "" : "s", (double)h->null_before, (double)before));
  PetscFunctionReturn(0);
}

/* Whether a monitor may ask for the iterate (KSPBuildSolution: -ksp_monitor_true_residual,
   -ksp_monitor_solution, a host's own): every one but PETSc's residual-norm monitors. Then the
   fused loops read every iteration before queueing the next (SolverOptions::monitor_iterate). */
static PetscBool KSPHeptaneMonitorsNeedIterate(KSP ksp)
{
  typedef void (*Fn)(void);
  const Fn norm_only[] = {(Fn)KSPMonitorResidual, (Fn)KSPMonitorResidualShort, (Fn)KSPMonitorResidualDrawLG};

  for (PetscInt i = 0; i < ksp->numbermonitors; i++) {
    PetscBool known = PETSC_FALSE;
    for (Fn f : norm_only) known = (PetscBool)(known || (Fn)ksp->monitor[i] == f);
    if (!known) return PETSC_TRUE;
  }
  return PETSC_FALSE;
}

/* The host's own convergence test (KSPSetConvergenceTest), called by heptane's loop once per
   iteration (0 = the initial residual) after the monitors, with ksp->its and ksp->rnorm set, as
   PETSc's KSPs call it: the reason it sets stops the solve at that iteration. With
   -ksp_norm_type none it (and the monitors) get 0 for the norm, as from PETSc's KSPs. */
static heptane::Verdict KSPHeptaneHostTest(KSP ksp, PetscInt it, PetscReal rnorm)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  if (h->monitor_error) return heptane::Verdict::diverged; /* an error of the monitor or the test: stop, KSPSolve returns it */
  ksp->reason      = KSP_CONVERGED_ITERATING;
  h->monitor_error = (*ksp->converged)(ksp, it, rnorm, &ksp->reason, ksp->cnvP);
  if (h->monitor_error) return heptane::Verdict::diverged;
  h->host_reason = ksp->reason;
  return ksp->reason > 0 ? heptane::Verdict::converged : ksp->reason < 0 ? heptane::Verdict::diverged : heptane::Verdict::go_on;
}

/* PETSc's default convergence test, as the KSP's options set it: -ksp_converged_use_initial_residual_norm
   (KSPConvergedDefaultSetUIRNorm: rtol times ||b - A x0|| instead of ||b||) and
   -ksp_converged_use_min_initial_residual_norm (the smaller of the two), from a nonzero initial
   guess, become heptane's rtol relative to ||b|| (||b - A x0|| taken with PETSc's MatMult of
   Amat; ||b|| where b = 0). Another test (KSPSetConvergenceTest, not KSPConvergedSkip) is the
   host's: h->host_test, and heptane's loop calls it (KSPHeptaneHostTest). */
static PetscErrorCode KSPHeptaneConvergenceTest(KSP ksp, double *rtol)
{
  KSP_Heptane            *h   = (KSP_Heptane *)ksp->data;
  KSPConvergedDefaultCtx *ctx = (KSPConvergedDefaultCtx *)ksp->cnvP;

  PetscFunctionBegin;
  if (ksp->converged != KSPConvergedDefault) {
    if (ksp->converged != KSPConvergedSkip) {
      h->host_test = PETSC_TRUE;
      PetscCall(PetscInfo(ksp, "%s: the host's convergence test (KSPSetConvergenceTest) decides: heptane calls it every iteration and reads the residual back each time (no batched checks)\n", KSPHeptaneName(h)));
    }
    PetscFunctionReturn(0);
  }
  if (!ctx || ksp->guess_zero || !(ctx->initialrtol || ctx->mininitialrtol)) PetscFunctionReturn(0);
  {
    PetscReal rn, bn;
    PetscCall(KSPHeptaneResidualNorms(ksp, &rn, &bn)); /* x is x0 here */
    if (bn > 0) *rtol = ksp->rtol * (ctx->initialrtol ? rn : PetscMin(rn, bn)) / bn;
    PetscCall(PetscInfo(ksp, "%s: -ksp_converged_use_%sinitial_residual_norm: ||b - A x0|| = %g, ||b|| = %g, so heptane's rtol (relative to ||b||) is %g\n", KSPHeptaneName(h), ctx->initialrtol ? "" : "min_", (double)rn, (double)bn, *rtol));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPSolve_Heptane(KSP ksp)
{
  KSP_Heptane           *h    = (KSP_Heptane *)ksp->data;
  PetscErrorCode         ierr = 0;
  heptane::Status        st;
  heptane::SolverOptions opts;
  PetscBool              fallback;
  MatNullSpace           nullsp;
  const double           t_solve = MPI_Wtime();

  PetscFunctionBegin;
  PetscCheck(!ksp->transpose_solve, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "KSP %s: KSPSolveTranspose() is not supported (heptane solves A x = b only)", KSPHeptaneName(h));
  PetscCall(KSPHeptaneResolveDevice(ksp)); /* the matrix may have changed since KSPSetUp */
  HeptaneThreadsScope threads(h);
  PetscCall(KSPHeptaneUpdate(ksp)); /* no-op unless the matrix changed since KSPSetUp */
  const std::shared_ptr<const heptane::Executor> exec    = h->engine->built() ? h->engine->executor() : nullptr;
  const std::uint64_t                            allocs0 = exec ? exec->allocations() : 0;
  ksp->its                                               = 0;
  ksp->rnorm                                             = 0;
  h->true_rnorm                                          = -1;
  if (h->symmetric == 0) { /* hcg on a nonsymmetric matrix: stop before iterating */
    char msg[768];
    PetscCall(VecNorm(ksp->vec_rhs, NORM_2, &ksp->rnorm));
    ksp->rnorm0 = ksp->rnorm;
    ksp->reason = KSP_DIVERGED_INDEFINITE_MAT;
    PetscCall(PetscSNPrintf(msg, sizeof(msg), "KSP hcg: the matrix is not symmetric (%s); CG needs a symmetric positive definite matrix, so KSPSolve stops with KSP_DIVERGED_INDEFINITE_MAT without iterating. Use -ksp_type hbcgs (or hgmres) for this system; -heptane_check_symmetry 0 runs CG anyway",
                            h->sym_note->c_str()));
    PetscCall(KSPHeptaneWarn(ksp, msg));
    PetscFunctionReturn(0);
  }
  if (h->petsc_pc) { /* PETSc's PC set up by PCSetUp: a failed setup (e.g. a zero pivot) is the reason */
    PetscBool failed;
    PetscCall(KSPHeptanePetscPCFailed(ksp, &failed));
    if (failed) PetscFunctionReturn(0);
  }
  if (!h->pc_failed->empty()) { /* heptane's PC could not be set up (every rank agrees): as PETSc's
                                   KSPs after a failed PCSetUp, no iterations and x as given */
    PetscCall(VecNorm(ksp->vec_rhs, NORM_2, &ksp->rnorm));
    ksp->rnorm0 = ksp->rnorm;
    ksp->reason = KSP_DIVERGED_PC_FAILED;
    PetscCall(PetscInfo(ksp, "%s: KSP_DIVERGED_PC_FAILED: %s\n", KSPHeptaneName(h), h->pc_failed->c_str()));
    PetscFunctionReturn(0);
  }
  opts.rtol        = ksp->rtol;
  opts.atol        = ksp->abstol;
  opts.dtol        = ksp->divtol > 0 ? ksp->divtol : 1e300;
  opts.max_it      = (int)ksp->max_it;
  opts.check_every = (int)h->check_every;
  h->host_test     = PETSC_FALSE;
  h->host_reason   = KSP_CONVERGED_ITERATING;
  if (ksp->normtype == KSP_NORM_NONE) { /* no convergence test: max_it iterations (or an exact answer before) */
    opts.rtol = 0;
    opts.atol = 0;
    opts.dtol = 1e300;
  }
  if (ksp->normtype != KSP_NORM_NONE || (ksp->converged != KSPConvergedDefault && ksp->converged != KSPConvergedSkip)) PetscCall(KSPHeptaneConvergenceTest(ksp, &opts.rtol));
  h->monitor_error = 0;
  opts.monitor     = [ksp, h](const heptane::IterationInfo &info) {
    h->iterate = &info.iterate;                                                                                                                  /* KSPBuildSolution inside a monitor */
    if (!h->monitor_error) h->monitor_error = KSPHeptaneMonitor(ksp, info.iteration, ksp->normtype == KSP_NORM_NONE ? 0.0 : info.residual_norm); /* none: 0, as PETSc's KSPs */
    h->iterate = NULL;
  };
  h->monitor_iterate   = KSPHeptaneMonitorsNeedIterate(ksp);
  opts.monitor_iterate = (bool)h->monitor_iterate;
  if (h->host_test) { /* the host's test alone decides (breakdowns, NaN and max_it still stop) */
    opts.rtol      = 0;
    opts.atol      = 0;
    opts.dtol      = 1e300;
    opts.stop_test = [ksp, h](const heptane::IterationInfo &info) {
      h->iterate               = &info.iterate; /* KSPBuildSolution inside the test */
      const heptane::Verdict v = KSPHeptaneHostTest(ksp, info.iteration, ksp->normtype == KSP_NORM_NONE ? 0.0 : info.residual_norm);
      h->iterate               = NULL;
      return v;
    };
  }
  /* -heptane_ilu auto on a GPU: a multi-colour ILU(0) that does not converge is retried with
     the natural ILU(0) from the same initial guess (as heptane's solve_system does) */
  fallback = (PetscBool)(!h->petsc_pc && h->pc_built == heptane::PcType::ilu0_mc && h->ilu == 0);
  PetscCall(KSPHeptaneNullSpace(ksp, &nullsp));
  if ((fallback || nullsp) && !ksp->guess_zero) {
    if (!h->x0) PetscCall(VecDuplicate(ksp->vec_sol, &h->x0));
    PetscCall(VecCopy(ksp->vec_sol, h->x0));
  }
  HeptaneCallCXX(h->krylov->set_fold(h->fold); h->krylov->set_refine(h->refine); h->krylov->set_restart((int)h->restart));
  h->solving = PETSC_TRUE;
  ierr       = KSPHeptaneRun(ksp, opts, &st);
  h->solving = PETSC_FALSE;
  PetscCall(ierr);
  if (fallback && !st.converged()) {
    Mat Pmat;

    HeptaneCallCXX(*h->pc_note = std::string("natural ILU(0) after multi-colour ILU(0) did not converge: ") + st.summary());
    PetscCall(PetscInfo(ksp, "%s: %s; solving again\n", KSPHeptaneName(h), h->pc_note->c_str()));
    h->ilu_fallback = PETSC_TRUE;
    PetscCall(KSPGetOperators(ksp, NULL, &Pmat));
    PetscCall(KSPHeptaneBuildPC(ksp, Pmat, PETSC_FALSE));
    if (!ksp->guess_zero) PetscCall(VecCopy(h->x0, ksp->vec_sol));
    if (!h->pc_failed->empty()) { /* natural ILU(0) could not be set up either (every rank agrees) */
      if (ksp->guess_zero) PetscCall(VecSet(ksp->vec_sol, 0.0));
      ksp->its    = 0;
      ksp->reason = KSP_DIVERGED_PC_FAILED;
      PetscCall(PetscInfo(ksp, "%s: KSP_DIVERGED_PC_FAILED: %s\n", KSPHeptaneName(h), h->pc_failed->c_str()));
      PetscFunctionReturn(0);
    }
    h->solving = PETSC_TRUE;
    ierr       = KSPHeptaneRun(ksp, opts, &st);
    h->solving = PETSC_FALSE;
    PetscCall(ierr);
  }
  ksp->its    = st.iterations;
  ksp->rnorm  = ksp->normtype == KSP_NORM_NONE ? 0.0 : st.residual_norm; /* none: 0, as PETSc's KSPs */
  ksp->rnorm0 = st.initial_residual_norm;
  ksp->reason = KSPHeptaneReason(h, st.reason);
  if (ksp->normtype != KSP_NORM_NONE && st.reason == heptane::Reason::diverged_max_it && ksp->converged == KSPConvergedDefault && ksp->cnvP && ((KSPConvergedDefaultCtx *)ksp->cnvP)->convmaxits)
    ksp->reason = KSP_CONVERGED_ITS; /* -ksp_converged_maxits */
  if (ksp->normtype == KSP_NORM_NONE && !h->host_test && (st.converged() || st.reason == heptane::Reason::diverged_max_it || (st.residual_norm == 0 && st.iterations > 0)))
    ksp->reason = ksp->converged == KSPConvergedSkip ? KSP_CONVERGED_ITS : KSP_DIVERGED_ITS; /* as PETSc's KSPs: its convergence test decides */
  if (nullsp) PetscCall(KSPHeptaneRemoveNullSpace(ksp, nullsp));
  PetscCall(KSPHeptaneCheckTrueResidual(ksp));
  if (h->petsc_pc && ksp->reason < 0) { /* PCApply's own failure (e.g. a zero pivot) says more */
    PetscBool failed;
    PetscCall(KSPHeptanePetscPCFailed(ksp, &failed));
  }
  h->solves++;
  h->solve_allocs = exec ? (long long)(exec->allocations() - allocs0) : 0;
  {
    const heptane::plugin::KrylovTimings &kt = h->krylov->timings();
    /* where a solve's time goes: the fold of M^-1 into the operator (made for this solve, else 0),
       b in, the solver's start (its vectors, r0 and the norms), the iterations, x out, and
       KSPSolve's own (norms for the host's test, null spaces, checks) around them */
    PetscCall(PetscInfo(ksp, "%s: %s (%s), %.3f ms: fold %.3f, b in %.3f, start %.3f, iterations %.3f, true residual %.3f, x out %.3f; KSPSolve %.3f ms, %lld allocations on the executor (KSPSetUp made %lld in %.3f ms)\n", KSPHeptaneName(h),
                        st.summary().c_str(), heptane::to_string(st.reason), kt.last_solve_ms, h->krylov->fold_made_at_prepare() ? 0.0 : h->krylov->last_fold_ms(), kt.last_in_ms, st.timings.setup_ms, st.timings.solve_ms, st.timings.true_residual_ms, kt.last_out_ms, (MPI_Wtime() - t_solve) * 1e3, h->solve_allocs, h->prepared_allocs, h->prepared_ms));
  }
  PetscFunctionReturn(0);
}

/* KSPBuildSolution (monitors such as -ksp_monitor_true_residual, KSPBuildResidual): ksp->vec_sol
   is x itself, not a right-preconditioned variable (PETSc's default would apply M^-1 to it, through
   a PC heptane holds). Inside a monitor or the host's test during the solve it is the iterate of
   that iteration, x_i, from heptane's solver (IterationInfo::iterate: x on its device, or GMRES's
   x0 + Z y_i; with the folded operator M^-1 y_i; refined in mixed precision x + d_i), in v or,
   for v = NULL, a vector of the KSP's kept for it; where the solver cannot give it (none of
   heptane's now) it is the initial guess, and a warning says so once. */
static PetscErrorCode KSPBuildSolution_Heptane(KSP ksp, Vec v, Vec *V)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  if (h->solving && h->iterate && *h->iterate) {
    Vec          out = v, into;
    PetscScalar *a;

    if (!out) {
      PetscInt nx = -1, ns;
      if (h->x_mid) PetscCall(VecGetLocalSize(h->x_mid, &nx));
      PetscCall(VecGetLocalSize(ksp->vec_sol, &ns));
      if (nx != ns) { /* first use, or another size since */
        PetscCall(VecDestroy(&h->x_mid));
        PetscCall(VecDuplicate(ksp->vec_sol, &h->x_mid));
      }
      out = h->x_mid;
    }
    if (h->nat_sc && !h->nat_mid) PetscCall(VecDuplicate(h->nat_x, &h->nat_mid));
    into = h->nat_sc ? h->nat_mid : out; /* the solve's order: natural under the natural map */
    PetscCall(VecGetArray(into, &a));
    HeptaneCallCXX((*h->iterate)((double *)a));
    PetscCall(VecRestoreArray(into, &a));
    if (h->nat_sc) {
      PetscCall(VecScatterBegin(h->nat_sc, h->nat_mid, out, INSERT_VALUES, SCATTER_REVERSE));
      PetscCall(VecScatterEnd(h->nat_sc, h->nat_mid, out, INSERT_VALUES, SCATTER_REVERSE));
    }
    if (V) *V = out;
    PetscFunctionReturn(0);
  }
  if (h->solving)
    PetscCall(KSPHeptaneWarn(ksp, "a monitor asked for the iterate during the solve (e.g. -ksp_monitor_true_residual), but this solve cannot give it: what the monitor builds from it (the true "
                                  "residual) is the initial "
                                  "guess's; the KSP residual norm it prints is heptane's own"));
  if (v) {
    PetscCall(VecCopy(ksp->vec_sol, v));
    if (V) *V = v;
  } else if (V) *V = ksp->vec_sol;
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPView_Heptane(KSP ksp, PetscViewer viewer)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  PetscBool    isascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  HeptaneThreadsScope           threads(h); /* the executors' names say the thread count the work runs on */
  const KSPConvergedDefaultCtx *cctx = ksp->converged == KSPConvergedDefault ? (const KSPConvergedDefaultCtx *)ksp->cnvP : NULL;
  const bool                    host = ksp->converged != KSPConvergedDefault && ksp->converged != KSPConvergedSkip;
  const char                   *stop = host ? "stopping on the host's convergence test (KSPSetConvergenceTest), called every iteration with the unpreconditioned ||r|| (0 with -ksp_norm_type none), the residual read back each time"
                                     : ksp->normtype == KSP_NORM_NONE ? "no convergence test (-ksp_norm_type none): -ksp_max_it iterations"
                                     : cctx && cctx->initialrtol      ? "stopping on the unpreconditioned ||r|| <= max(rtol ||b - A x0||, atol) (-ksp_converged_use_initial_residual_norm)"
                                     : cctx && cctx->mininitialrtol   ? "stopping on the unpreconditioned ||r|| <= max(rtol min(||b||, ||b - A x0||), atol) (-ksp_converged_use_min_initial_residual_norm)"
                                                                      : "stopping on the unpreconditioned ||r|| <= max(rtol ||b||, atol)";
  if (h->solver == heptane::SolverType::gmres) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane GMRES(%" PetscInt_FMT ") (flexible, restarted; -ksp_gmres_restart), right-preconditioned inside heptane; %s\n", h->restart, stop));
  else PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane %s, right-preconditioned inside heptane; %s\n", h->solver == heptane::SolverType::bicgstab ? "BiCGStab (fused loop)" : "CG", stop));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane options: -heptane_format %s -heptane_device %s -heptane_precision %s -heptane_check_every %" PetscInt_FMT " -heptane_ilu %s -heptane_fold %s -heptane_refine %s -heptane_check_true_residual %s -heptane_register_after %" PetscInt_FMT "\n", HeptaneFormats[h->format], h->device, HeptanePrecisions[h->precision], h->check_every, HeptaneIluOrders[h->ilu], PetscBools[h->fold], PetscBools[h->refine], PetscBools[h->check_true], h->register_after));
  if (h->petsc_pc) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner: %s (from %s; the PETSc PC below is set up and applied by PETSc)\n", h->petsc_pc_note->c_str(), h->pc_from[0] ? h->pc_from : "-"));
  else
    PetscCall(
      PetscViewerASCIIPrintf(viewer, "  heptane preconditioner: %s (from %s; applied by heptane inside its loop: PETSc's own setup and apply of the PC below are not run)\n", h->krylov->has_preconditioner() ? h->krylov->preconditioner_describe().c_str() : heptane::to_string(h->pc), h->pc_from[0] ? h->pc_from : "-"));
  if (h->solver == heptane::SolverType::cg) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane symmetry check (-heptane_check_symmetry %s): %s\n", PetscBools[h->check_symmetry], h->sym_note->empty() ? "not run yet" : h->sym_note->c_str()));
  if (!h->nat_note->empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane numbering: %s\n", h->nat_note->c_str()));
  if (h->solves && h->null_vecs >= 0)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  heptane null space: Amat's (MatSetNullSpace, %" PetscInt_FMT
                                     " vector%s) removed from the solution's correction after each solve, x = x0 + P (x - x0), as PETSc's KSPs keep it out of their directions (PETSc removed the transpose null space from b); last "
                                     "solve: its component there had norm %g\n",
                                     h->null_vecs, h->null_vecs == 1 ? "" : "s", (double)h->null_before));
  if (h->engine->built() ? h->engine->executor()->is_cpu() : heptane::plugin::resolve_device(h->device) == "cpu") {
    if (h->threads > 0)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane threads: %" PetscInt_FMT " OpenMP thread%s per rank (%s)\n", h->threads, h->threads == 1 ? "" : "s", h->threads_set ? "-heptane_threads" : "the default: one per rank, so that a rank per core does not oversubscribe; -heptane_threads N for more"));
    else PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane threads: OpenMP's own count per rank, %d here (%s)\n", omp_get_max_threads(), h->threads_set ? "-heptane_threads 0" : "OMP_NUM_THREADS is set"));
  }
  if (!h->pc_note->empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner fallback: %s\n", h->pc_note->c_str()));
  if (!h->pc_failed->empty())
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner setup FAILED: %s (KSPSolve stops with KSP_DIVERGED_PC_FAILED, as after a failed PCSetUp; -ksp_error_if_not_converged makes it an error)\n", h->pc_failed->c_str()));
  const bool over_ranks = !h->petsc_pc && KSPHeptaneOverRanks(h, h->pc_built, NULL);
  if (h->krylov->has_global_coarse() && over_ranks)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane %s over the ranks (-heptane_amg_global: %s), applied instead of each rank's %s: %s; last setup %.3f ms; rank 0's shown\n", h->pc == heptane::PcType::cpr ? "CPR" : "AMG", h->over_ranks_why->c_str(), h->pc == heptane::PcType::cpr ? "CPR" : "AMG",
                                     h->krylov->global_coarse_describe().c_str(), h->krylov->global_coarse_ms()));
  else if (h->krylov->has_global_coarse())
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane global coarse correction (-heptane_coarse): %s; last setup %.3f ms; rank 0's shown\n", h->krylov->global_coarse_describe().c_str(), h->krylov->global_coarse_ms()));
  else if (h->coarse && h->ranks > 1) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane global coarse correction (-heptane_coarse): none (not with PETSc's own PC or on one rank's operator, or refused: see the warning)\n"));
  if (h->pc == heptane::PcType::amg || h->pc == heptane::PcType::cpr) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane %s options: %s\n", h->pc == heptane::PcType::amg ? "AMG" : "CPR", HeptanePcOptionsText(*h->pc_opts, (PetscBool)(h->pc == heptane::PcType::cpr)).c_str()));
    if (h->engine && h->engine->built() && h->engine->distributed() && over_ranks)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner on %d ranks: the %s over the ranks above (each rank keeps only point Jacobi of its rows; should the hierarchy be refused, each rank's own %s is built)\n", h->engine->ranks(), h->pc == heptane::PcType::cpr ? "CPR" : "AMG", h->pc == heptane::PcType::cpr ? "CPR" : "AMG"));
    else if (h->engine && h->engine->built() && h->engine->distributed())
      PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner on %d ranks: %s of each rank's diagonal block (block Jacobi over the ranks; the couplings between ranks are not in it%s); rank 0's shown; not over the ranks: %s\n", h->engine->ranks(), h->pc == heptane::PcType::amg ? "AMG" : "CPR",
                                       h->krylov->has_global_coarse() ? ", but in the global coarse correction below" : ": -heptane_coarse adds a global coarse correction, -heptane_amg_global one AMG over the ranks", h->over_ranks_why->c_str()));
    const std::string table = h->krylov->preconditioner_hierarchy();
    if (!table.empty()) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane AMG hierarchy:\n"));
      PetscCall(HeptaneViewLines(viewer, "    ", table));
    }
  }
  if (h->engine && h->engine->built()) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane operator: %s (PETSc matrix %s)\n", h->engine->describe().c_str(), h->mat_type->c_str()));
    if (h->krylov->host_operator()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane Krylov products: %s\n", h->krylov->host_operator_describe().c_str()));
    if (!h->device_why->empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane device: %s\n", h->device_why->c_str()));
    else if (!h->engine->device_choice().empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane device: %s\n", h->engine->device_choice().c_str()));
    if (!h->engine->distributed() && h->input_how) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane matrix input: %s\n", h->input_how));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane structure: %s\n", h->grid_source->c_str()));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane values-only update: %s; preconditioner: %s\n", h->engine->refresh_note().c_str(),
                                     h->petsc_pc ? "PETSc's own PCSetUp for the new values"
                                     : over_ranks && h->krylov->has_global_coarse()
                                       ? "the AMG/CPR over the ranks redoes its numeric part on its kept aggregates, P and patterns (a full setup where a rank's pattern changed); the rank's point Jacobi refreshed"
                                     : h->pc_built == heptane::PcType::amg || h->pc_built == heptane::PcType::cpr
                                       ? "numeric part redone on its kept symbolic setup (AMG keeps its aggregates, P and R; the Galerkin products, smoother data and coarse inverse are redone)"
                                       : "numeric part redone on its kept symbolic setup"));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane setups: %" PetscInt_FMT " full (new pattern), %" PetscInt_FMT " values-only; %" PetscInt_FMT " solves\n", h->full_builds, h->value_refreshes, h->solves));
  if (h->pc_reuses)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner reused: %" PetscInt_FMT " values-only setup%s kept it as it was (KSPSetReusePreconditioner, -snes_lag_preconditioner)\n", h->pc_reuses, h->pc_reuses == 1 ? "" : "s"));
  if (!h->petsc_pc) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner setups: %d full (symbolic + numeric), %d values-only (numeric only, symbolic setup kept)\n", h->krylov->timings().pc_builds, h->krylov->timings().pc_refreshes));
  if (h->krylov->has_preconditioner() && !h->petsc_pc) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane preconditioner, last setup: %s\n", h->krylov->numeric_path().c_str()));
  if (!h->last_update->empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane last setup: %s\n", h->last_update->c_str()));
  if (h->solves)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane last solve: %.3f ms, %lld allocations on the executor (its vectors and workspace are made at KSPSetUp: %lld allocations, %.3f ms, at the last setup)\n", h->krylov->timings().last_solve_ms, h->solve_allocs, h->prepared_allocs, h->prepared_ms));
  if (h->solves && h->engine && h->engine->built() && h->engine->executor()->is_cuda())
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane vectors: %s\n", h->device_vecs ? "b and x read and written on the GPU where PETSc keeps them (CUDA vectors: device-to-device copies, no host copy)" : "b and x from PETSc's host arrays (uploaded and downloaded each solve; with -vec_type cuda (-dm_vec_type cuda) and -heptane_precision double they stay on the GPU)"));
  if (h->solves && h->monitor_iterate)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane monitors: one may build the iterate (KSPBuildSolution: not only PETSc's residual-norm monitors), so BiCGStab and CG read each iteration back before queueing the next (on a GPU: one wait an "
                                             "iteration); GMRES forms x0 + Z y_i aside\n"));
  if (h->solves && h->krylov->last_corrections() > 0)
    PetscCall(
      PetscViewerASCIIPrintf(viewer, "  heptane last solve: mixed precision refined against the fp64 matrix (-heptane_refine), corrections: %d; residuals of the fp64 matrix, from %s\n", h->krylov->last_corrections(), h->krylov->last_refined_against().c_str()));
  if (h->solves && h->true_rnorm >= 0)
    PetscCall(
      PetscViewerASCIIPrintf(viewer, "  heptane last solve: -heptane_precision %s stopped on its fp32 recurrence; true residual ||b - A x|| = %g with PETSc's fp64 MatMult (-heptane_check_true_residual)\n", HeptanePrecisions[h->precision], (double)h->true_rnorm));
  if (h->solves && h->krylov->last_solve_folded())
    PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane last solve: preconditioner folded into the operator (-heptane_fold): BiCGStab on A M^-1 (%s), then x = M^-1 y\n",
                                     h->krylov->last_fold_ms() > 0 ? ((h->krylov->fold_made_at_prepare() ? "made at KSPSetUp for this solve in " : "made for this solve in ") + std::to_string(h->krylov->last_fold_ms()) + " ms").c_str() : "kept from the solve before"));
  {
    const heptane::plugin::PrewarmReport w = heptane::plugin::prewarm_report();
    if (!w.device.empty())
      PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane device set-up: %s made on a background thread at load (-heptane_prewarm) in %.3f ms%s%s; the first setup %s%s\n", w.device.c_str(), w.ms,
                                       w.multigrid_ms > 0 ? (", of which " + std::to_string(w.multigrid_ms) + " ms loading AMG's and CPR's device code (an option names hamg or hcpr)").c_str() : "",
                                       w.krylov_ms > 0 ? (", " + std::to_string(w.krylov_ms) + " ms loading the Krylov solves' device code (" + std::to_string(w.krylov_solves) + " tiny solves: " + w.krylov_what + ")").c_str() : "", w.waited ? "waited for it" : "found it ready",
                                       w.error.empty() ? "" : ("; the loading stopped: " + w.error).c_str()));
    else if (!w.error.empty()) PetscCall(PetscViewerASCIIPrintf(viewer, "  heptane device set-up at load failed (%s); the device was set up at the first setup instead\n", w.error.c_str()));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPSetFromOptions_Heptane(KSP ksp, HeptaneOptionItems PetscOptionsObject)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;
  char         device[64];
  PetscBool    flg;
  PetscInt     grid[3] = {0, 0, 0}, n = 3, nc = 0;
  PetscBool    prewarm = PETSC_TRUE;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, h->solver == heptane::SolverType::bicgstab ? "KSP hbcgs options (heptane BiCGStab)" : (h->solver == heptane::SolverType::cg ? "KSP hcg options (heptane CG)" : "KSP hgmres options (heptane GMRES)"));
  if (h->solver == heptane::SolverType::gmres) PetscCall(PetscOptionsBoundedInt("-ksp_gmres_restart", "Number of Krylov search directions (restart length m of heptane's flexible GMRES)", "KSPGMRESSetRestart", h->restart, &h->restart, NULL, 1));
  PetscCall(PetscOptionsEList("-heptane_format", "Matrix format heptane solves with (auto: BDIA-GH on a grid, else detected; several ranks: auto, bdiagh or csr)", "KSPHBCGS", HeptaneFormats, HeptaneNumFormats, HeptaneFormats[h->format], &h->format, NULL));
  PetscCall(PetscOptionsString("-heptane_device", "Where heptane runs: auto (one rank: the GPU where the measured model of heptane solve --device auto says it wins for this matrix's stored entries and -heptane_threads, else the CPU; several ranks: the same on the entries per rank, the GPU being the node-local rank's), cpu, gpu, gpu:N", "KSPHBCGS", h->device, device, sizeof(device), &flg));
  if (flg) {
    PetscCall(HeptaneCheckDevice(device));
    PetscCall(PetscStrncpy(h->device, device, sizeof(h->device)));
  }
  PetscCall(PetscOptionsEList("-heptane_precision", "double; single (fp32 matrix and vectors); mixed (fp32 matrix values, fp64 vectors)", "KSPHBCGS", HeptanePrecisions, HeptaneNumPrecisions, HeptanePrecisions[h->precision], &h->precision, NULL));
  PetscCall(PetscOptionsEList("-heptane_ilu", "Ordering of -pc_type ilu: auto (multicolor on a GPU, natural on the CPU), natural (PETSc's ILU(0)), multicolor (ILU(0) of a multi-colour permutation)", "KSPHBCGS", HeptaneIluOrders, 3, HeptaneIluOrders[h->ilu], &h->ilu, NULL));
  PetscCall(PetscOptionsBoundedInt("-heptane_check_every", "GPU: the host reads the residual every k iterations (0: automatic, 1 with -pc_type hamg or hcpr, else 8)", "KSPHBCGS", h->check_every, &h->check_every, NULL, 0));
  PetscCall(PetscOptionsBool("-heptane_refine", "-heptane_precision mixed: iterative refinement against the fp64 matrix (one rank's bdiagh operator: its fp64 copy; any other operator: PETSc's MatMult), so that the true residual meets -ksp_rtol as in double", "KSPHBCGS", h->refine, &h->refine, NULL));
  PetscCall(PetscOptionsBoundedInt("-heptane_register_after", "GPU, AIJ or BAIJ (one rank): from the n-th values-only refresh of the same matrix and nonzero state on, PETSc's value array is registered with CUDA (once; page-locked in place, on a background thread started after the solve that follows the (n-1)-th refresh, the build for n = 1) and read by the copy engine instead of copied into pinned buffers on the host; 0: never", "KSPHBCGS", h->register_after, &h->register_after, NULL, 0));
  PetscCall(PetscOptionsBool("-heptane_check_true_residual", "-heptane_precision single (and mixed not refined): after a converged solve, ||b - A x|| with PETSc's fp64 MatMult; above the tolerance the reason is KSP_DIVERGED_BREAKDOWN", "KSPHBCGS", h->check_true, &h->check_true, NULL));
  PetscCall(PetscOptionsBool("-heptane_fold", "hbcgs with -pc_type jacobi/pbjacobi on one rank's bdiagh operator, zero initial guess: BiCGStab on A M^-1 (kept beside A), then x = M^-1 y; the same method without two preconditioner applications per iteration", "KSPHBCGS", h->fold, &h->fold, NULL));
  PetscCall(PetscOptionsBool("-heptane_coarse", "Several ranks: a global coarse correction around heptane's preconditioner of each rank's rows (aggregates per rank, A_c = P^T A P with the couplings between ranks, whole on every rank), so that the iterations grow less with the ranks", "KSPHBCGS", h->coarse, &h->coarse, NULL));
  PetscCall(PetscOptionsBoundedInt("-heptane_coarse_aggregates", "-heptane_coarse: aggregates per rank (0: min(64, 512 / (ranks x Nc)))", "KSPHBCGS", h->coarse_aggregates, &h->coarse_aggregates, NULL, 0));
  PetscCall(PetscOptionsEList("-heptane_coarse_solve", "-heptane_coarse: how every rank solves with A_c: dense LU (at most 8192 unknowns), AMG (-heptane_coarse_cycles steps of its cycle; many aggregates per rank), auto (dense up to 1024 unknowns)", "KSPHBCGS", HeptaneCoarseSolves, 3, HeptaneCoarseSolves[h->coarse_solve], &h->coarse_solve, NULL));
  PetscCall(PetscOptionsRangeInt("-heptane_coarse_cycles", "-heptane_coarse_solve amg: steps of the AMG iteration per coarse solve", "KSPHBCGS", h->coarse_cycles, &h->coarse_cycles, NULL, 1, 100));
  PetscCall(PetscOptionsEList("-heptane_coarse_aggregation", "-heptane_coarse: the aggregates: bfs (grown breadth-first, about -heptane_coarse_aggregates of them) or strength (AMG's aggregates of the strong couplings, level by level down to the count nearest -heptane_coarse_aggregates)", "KSPHBCGS", HeptaneCoarseAggregations, 2, HeptaneCoarseAggregations[h->coarse_aggregation], &h->coarse_aggregation, NULL));
  PetscCall(PetscOptionsBool("-heptane_petsc_pc", "Apply PETSc's own PC (PCSetUp, PCApply) inside heptane's loop even where heptane has the PC type (jacobi, pbjacobi, ilu, bjacobi); PC types heptane does not have are always applied so", "KSPHBCGS", h->force_petsc_pc, &h->force_petsc_pc, NULL));
  PetscCall(PetscOptionsBoundedInt("-heptane_threads", "OpenMP threads per rank for heptane's work on the CPU (0: OpenMP's own count; default 1, or OpenMP's own when OMP_NUM_THREADS is set)", "KSPHBCGS", h->threads, &h->threads, &flg, 0));
  if (flg) h->threads_set = PETSC_TRUE;
  if (h->solver == heptane::SolverType::cg) {
    PetscCall(PetscOptionsBool("-heptane_check_symmetry", "hcg: check once per matrix state that the matrix is symmetric, and stop with KSP_DIVERGED_INDEFINITE_MAT if not", "KSPHCG", h->check_symmetry, &h->check_symmetry, NULL));
    PetscCall(PetscOptionsReal("-heptane_symmetry_tol", "hcg: relative tolerance of the symmetry check, |a_ij - a_ji| <= tol max(|a_ij|, |a_ji|)", "KSPHCG", h->symmetry_tol, &h->symmetry_tol, NULL));
  }
  /* read where they are used (KSPHeptaneGridHint); listed here for -help */
  PetscCall(PetscOptionsIntArray("-heptane_grid", "Grid J,H,I behind the matrix (x fastest) when it has no DMDA (default: from the DMDA, else detected)", "KSPHBCGS", grid, &n, NULL));
  PetscCall(PetscOptionsInt("-heptane_block", "Unknowns per cell Nc with -heptane_grid (default: from the DMDA, else detected)", "KSPHBCGS", nc, &nc, NULL));
  /* read once, when the plugin is loaded (register.cpp); listed here for -help */
  PetscCall(PetscOptionsBool("-heptane_prewarm", "One rank, -heptane_device auto or a GPU: set the GPU up (context, stream, handles, pinned buffers) and load the solves' device code on a background thread when the plugin is loaded, read at load only", "KSPHBCGS", prewarm, &prewarm, NULL));
  /* -pc_type hamg / hcpr: heptane's AMG / CPR inside its loop */
  PetscCall(HeptanePcOptionsFromOptions(PetscOptionsObject, h->pc_opts, PETSC_TRUE, "KSPHBCGS"));
  PetscOptionsHeadEnd();
  /* the PC's type is taken at KSPSetUp (KSPHeptaneUpdate), not here: KSPSetFromOptions() calls
     PCSetFromOptions() before this in PETSc 3.18 and after it in 3.25 (petsc_compat.hpp) */
  PetscCall(KSPHeptaneCheckComm(ksp));
  PetscFunctionReturn(0);
}

/* What reset and destroy free alike: PETSc objects, the held PC given back. */
static PetscErrorCode KSPHeptaneFreeWork(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCall(KSPHeptaneReleasePC(ksp));
  PetscCall(MatDestroy(&h->sbaij.aij));
  PetscCall(MatDestroy(&h->engine_mat));
  PetscCall(VecDestroy(&h->x0));
  PetscCall(VecDestroy(&h->r_true));
  PetscCall(VecDestroy(&h->pc_r));
  PetscCall(VecDestroy(&h->pc_z));
  PetscCall(VecDestroy(&h->nat_r));
  PetscCall(VecDestroy(&h->nat_z));
  PetscCall(ISDestroy(&h->nat_is));
  PetscCall(MatDestroy(&h->nat_A));
  PetscCall(VecScatterDestroy(&h->nat_sc));
  PetscCall(VecDestroy(&h->nat_b));
  PetscCall(VecDestroy(&h->nat_x));
  PetscCall(VecDestroy(&h->nat_mid));
  PetscCall(VecDestroy(&h->x_mid));
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPReset_Heptane(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCall(KSPHeptaneFreeWork(ksp));
  delete h->own;
  delete h->krylov;
  delete h->rows;
  delete h->pc_rows;
  h->rows    = NULL;
  h->pc_rows = NULL;
  h->own     = NULL;
  h->krylov  = NULL;
  h->engine  = NULL;
  HeptaneCallCXX(h->own = new heptane::plugin::MatrixEngine(); h->krylov = new heptane::plugin::KrylovEngine());
  h->engine      = h->own;
  h->mat_id      = 0;
  h->mat_nzstate = h->mat_state = -1;
  h->symmetric                  = -1;
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPDestroy_Heptane(KSP ksp)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCall(KSPHeptaneFreeWork(ksp));
  PetscCall(PetscFree(h->pc_ops_saved));
  delete h->own;
  delete h->krylov;
  delete h->rows;
  delete h->pc_rows;
  delete h->pc_note;
  delete h->pc_failed;
  delete h->petsc_pc_note;
  delete h->warned;
  delete h->sym_note;
  delete h->nat_note;
  delete h->baij;
  delete h->blk32_diag;
  delete h->blk32_off;
  delete h->coarse_built;
  delete h->over_ranks_why;
  delete h->last_update;
  delete h->grid_source;
  delete h->device_resolved;
  delete h->device_why;
  delete h->mat_type;
  delete h->pc_opts;
  delete h->pc_opts_built;
  PetscCall(PetscObjectComposeFunction((PetscObject)ksp, "KSPGMRESSetRestart_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)ksp, "KSPGMRESGetRestart_C", NULL));
  PetscCall(PetscFree(ksp->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPGMRESSetRestart_HGMRES(KSP ksp, PetscInt restart)
{
  KSP_Heptane *h = (KSP_Heptane *)ksp->data;

  PetscFunctionBegin;
  PetscCheck(restart >= 1, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE, "KSP %s: the restart must be >= 1, got %" PetscInt_FMT, KSPHGMRES, restart);
  h->restart = restart;
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPGMRESGetRestart_HGMRES(KSP ksp, PetscInt *restart)
{
  PetscFunctionBegin;
  *restart = ((KSP_Heptane *)ksp->data)->restart;
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPCreate_Heptane_Private(KSP ksp, heptane::SolverType solver)
{
  KSP_Heptane *h;

  PetscFunctionBegin;
  PetscCall(PetscNew(&h));
  ksp->data         = h;
  h->solver         = solver;
  h->format         = 0; /* auto */
  h->precision      = 0; /* double */
  h->check_every    = 0;
  h->fold           = PETSC_TRUE;
  h->refine         = PETSC_TRUE;
  h->check_true     = PETSC_TRUE;
  h->register_after = 2;
  h->true_rnorm     = -1;
  h->null_vecs      = -1;
  h->restart        = 30;
  h->pc             = heptane::PcType::ilu0;
  h->pc_built       = heptane::PcType::none;
  h->mat_nzstate = h->mat_state = -1;
  h->check_symmetry             = PETSC_TRUE;
  h->symmetry_tol               = 1e-8;
  h->symmetric                  = -1;
  h->threads                    = getenv("OMP_NUM_THREADS") ? 0 : 1; /* one per rank unless told */
  h->coarse_cycles              = 2;
  PetscCall(PetscStrncpy(h->device, "auto", sizeof(h->device)));
  HeptaneCallCXX(h->own = new heptane::plugin::MatrixEngine(); h->krylov = new heptane::plugin::KrylovEngine(); h->last_update = new std::string(); h->grid_source = new std::string(); h->device_resolved = new std::string(); h->device_why = new std::string(); h->mat_type = new std::string(); h->pc_note = new std::string(); h->pc_failed = new std::string(); h->pc_opts = new heptane::PcOptions();
                 h->pc_opts->amg.over_ranks = heptane::AmgOverRanks::automatic; h->pc_opts->cpr.amg.over_ranks = heptane::AmgOverRanks::automatic; h->pc_opts_built = new heptane::PcOptions(); h->over_ranks_why = new std::string(); h->petsc_pc_note = new std::string(); h->warned = new std::string(); h->sym_note = new std::string(); h->nat_note = new std::string(); h->baij = new HeptaneBAIJ(); h->blk32_diag = new HeptaneBlockIndex32(); h->blk32_off = new HeptaneBlockIndex32(); h->coarse_built = new heptane::plugin::GlobalCoarseOptions());
  h->engine = h->own;
  PetscCall(KSPHeptaneCheckComm(ksp));

  ksp->ops->setup          = KSPSetUp_Heptane;
  ksp->ops->solve          = KSPSolve_Heptane;
  ksp->ops->destroy        = KSPDestroy_Heptane;
  ksp->ops->reset          = KSPReset_Heptane;
  ksp->ops->view           = KSPView_Heptane;
  ksp->ops->setfromoptions = KSPSetFromOptions_Heptane;
  ksp->ops->buildsolution  = KSPBuildSolution_Heptane;
  ksp->ops->buildresidual  = KSPBuildResidualDefault;
  ksp->setupnewmatrix      = PETSC_TRUE; /* KSPSetUp calls setup for every new matrix: the PC is taken there, before PCSetUp */

  /* heptane iterates right-preconditioned and tests the unpreconditioned residual; the PC
     side only names where PETSc would apply M, so both sides are accepted */
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_UNPRECONDITIONED, PC_RIGHT, 3));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_UNPRECONDITIONED, PC_LEFT, 2));
  /* -ksp_norm_type none (an inner solve of a fixed count, a smoother): -ksp_max_it iterations,
     no convergence test; the reason as PETSc's KSPs give it (KSP_CONVERGED_ITS under
     KSPConvergedSkip, which PCMG and PCKSP set, else KSP_DIVERGED_ITS) */
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_NONE, PC_RIGHT, 1));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_NONE, PC_LEFT, 1));
  if (solver == heptane::SolverType::gmres) { /* KSPGMRESSetRestart()/GetRestart() work on hgmres too */
    PetscCall(PetscObjectComposeFunction((PetscObject)ksp, "KSPGMRESSetRestart_C", KSPGMRESSetRestart_HGMRES));
    PetscCall(PetscObjectComposeFunction((PetscObject)ksp, "KSPGMRESGetRestart_C", KSPGMRESGetRestart_HGMRES));
  }
  PetscFunctionReturn(0);
}

/*MC
   KSPHBCGS - "hbcgs": BiCGStab on heptane's engine (CPU, or a GPU with -heptane_device gpu).

   Options Database Keys:
+  -heptane_format <auto,csr,bdiagh,ell,hyb,dia,bsr,coo> - matrix format (auto: BDIA-GH on a grid, else detected; several ranks: auto, bdiagh or csr)
.  -heptane_device <auto,cpu,gpu,gpu:N> - where heptane runs
.  -heptane_precision <double,single,mixed> - value precision
.  -heptane_check_every <k> - GPU: the host reads the residual every k iterations (default 0:
   automatic, 1 with -pc_type hamg or hcpr, else 8)
.  -heptane_refine <true,false> - -heptane_precision mixed: refined against the fp64 matrix (one
   rank's bdiagh: its fp64 copy; other operators: PETSc's MatMult) until the true residual meets
   -ksp_rtol
.  -heptane_check_true_residual <true,false> - single (and mixed not refined): after a converged
   solve, ||b - A x|| with PETSc's fp64 MatMult; above max(rtol ||b||, atol) the reason is
   KSP_DIVERGED_BREAKDOWN (default true)
.  -heptane_register_after <n> - GPU, AIJ or BAIJ on one rank: from the n-th values-only refresh
   of the same matrix and nonzero state on, PETSc's value array is registered with CUDA and read
   in place (the registration runs on a background thread started after the solve that follows
   the (n-1)-th refresh -- for n = 1, the build -- while the host assembles; default 2; 0: never)
.  -heptane_fold <true,false> - hbcgs with jacobi/pbjacobi on one rank: the preconditioner folded
   into a copy of the operator (A M^-1), the same iterates with fewer passes per iteration
.  -heptane_coarse <true,false> - several ranks: a global coarse correction (aggregates per
   rank, A_c = P^T A P with the couplings between ranks) around each rank's preconditioner;
   -heptane_coarse_aggregates N per rank, -heptane_coarse_solve <auto,dense,amg> (A_c's solve on
   every rank), -heptane_coarse_cycles N (amg: steps per coarse solve, default 2),
   -heptane_coarse_aggregation <bfs,strength>
.  -heptane_amg_global <true,false> - with -pc_type hamg (hcpr: its pressure stage) on several
   ranks: one AMG hierarchy over all ranks (dist::DistAmg; levels split over the ranks,
   smoothed through the distributed product, on the host) applied instead of each rank's AMG
   of its diagonal block; a values-only setup keeps its aggregates and P and redoes the
   Galerkin products. Not given: on for CPU ranks without -heptane_coarse, for hcpr and for hamg
   on a scalar system (Nc = 1), off otherwise; a hierarchy that is refused (a zero diagonal on a level, a
   singular coarsest level) gives each rank its own AMG/CPR until the pattern changes
.  -heptane_grid J,H,I -heptane_block Nc - the grid when the matrix has no DMDA
.  -heptane_prewarm <true,false> - set the GPU up and load the solves' device code on a
   background thread when the plugin is loaded (one rank; read at load, without prefix, with
   -heptane_device)
.  -heptane_amg_threshold <theta> -heptane_amg_smoother <auto,chebyshev,jacobi,l1jacobi,ilu0mc>
   -heptane_amg_sweeps <k> -heptane_amg_cycle <v,w> -heptane_amg_coarse_size <n>
   -heptane_amg_max_levels <L> -heptane_amg_tail_rows <n> -heptane_amg_setup <auto,host,device>
   -heptane_amg_lambda_its <N> -heptane_amg_p_max <N> -heptane_amg_aggregation <mis,box>
   -heptane_amg_box_ratio <r> -heptane_amg_p_weight <w> - AMG (-pc_type hamg, and CPR's pressure
   stage; -heptane_amg_p_max: the AMG over the ranks keeps at most N entries a row of P, default 6;
   box: boxes of the operator's grid, with -heptane_amg_p_weight 0 every level 7-point)
.  -heptane_cpr_pressure_index <p> -heptane_cpr_second <auto,bilu0,bilu0mc,bjacobi> - CPR
   (-pc_type hcpr)

.  -heptane_petsc_pc <false> - apply PETSc's own PC (PCApply) even for the PC types heptane has
.  -heptane_threads <n> - OpenMP threads per rank on the CPU (default 1; 0: OpenMP's own count)
-  -heptane_check_symmetry <true> -heptane_symmetry_tol <1e-8> - hcg: stop on a nonsymmetric matrix

   Also honours -ksp_rtol -ksp_atol -ksp_divtol -ksp_max_it -ksp_monitor -ksp_converged_reason
   -ksp_view -ksp_error_if_not_converged -ksp_initial_guess_nonzero, and -pc_type none, jacobi,
   pbjacobi, ilu, bjacobi, hamg, hcpr (applied by heptane; on several ranks ilu, hamg and hcpr
   are per rank, on the rank's diagonal block); any other PC type (lu, asm, sor, gamg, hypre,
   ilu with levels, ...) is PETSc's own, applied through PCApply inside heptane's loop. Any
   number of MPI ranks: on several, the matrix (MPIAIJ, MPIBAIJ; a DMDA split any way, renumbered
   into the grid's natural order where PETSc's numbering is not) becomes heptane's distributed
   BDIA-GH operator and ilu/bjacobi is ILU(0) of each rank's diagonal block.
M*/
PetscErrorCode KSPCreate_HBCGS(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPCreate_Heptane_Private(ksp, heptane::SolverType::bicgstab));
  PetscFunctionReturn(0);
}

/*MC
   KSPHCG - "hcg": preconditioned CG on heptane's engine, for symmetric positive definite
   systems (the pressure equation). Options as for KSPHBCGS.
M*/
PetscErrorCode KSPCreate_HCG(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPCreate_Heptane_Private(ksp, heptane::SolverType::cg));
  PetscFunctionReturn(0);
}

/*MC
   KSPHGMRES - "hgmres": heptane's restarted flexible GMRES(m) (right-preconditioned; the
   preconditioner may vary between applications, e.g. an AMG cycle), on heptane's engine, for
   nonsymmetric systems where BiCGStab's irregular convergence or breakdowns hurt. Options as
   for KSPHBCGS, plus

   Options Database Keys:
.  -ksp_gmres_restart <m> - the restart length (basis vectors per cycle; default 30); also
   KSPGMRESSetRestart()

   Compare with PETSc's -ksp_type fgmres (or gmres -ksp_pc_side right): the same stopping test
   on the unpreconditioned residual.
M*/
PetscErrorCode KSPCreate_HGMRES(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPCreate_Heptane_Private(ksp, heptane::SolverType::gmres));
  PetscFunctionReturn(0);
}
