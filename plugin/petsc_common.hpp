// Internal header of the PETSc plugin: what the KSP types (ksp_heptane.cpp) and the Mat type
// (mat_bdiagh.cpp) share. PETSc style: PetscCall on every call, PetscCheck with the values.
// What differs between PETSc versions (3.18 and 3.25 tested) is in petsc_compat.hpp, nowhere else.
#pragma once

#include <petsc/private/kspimpl.h>
#include <petsc/private/matimpl.h>
#include <petscdmda.h>

#include "plugin/petsc_compat.hpp" /* the names that differ between PETSc versions */

#include <string>
#include <vector>

#include "core/error.hpp"
#include "plugin/big_alloc.hpp"
#include "plugin/engine.hpp"
#include "plugin/engine_impl.hpp"
#include "plugin/heptane_petsc.h"

#if defined(PETSC_USE_COMPLEX)
  #error "heptane's PETSc plugin needs a real-scalar PETSc (PetscScalar = double)"
#endif
#if defined(PETSC_USE_REAL_SINGLE) || defined(PETSC_USE_REAL___FLOAT128) || defined(PETSC_USE_REAL___FP16)
  #error "heptane's PETSc plugin needs PetscScalar = double"
#endif

/* Run C++ that may throw (heptane's typed errors, std::bad_alloc) and turn an exception into
   a PETSc error with heptane's message and the source location that raised it. */
#define HeptaneCallCXX(...) \
  do { \
    PetscErrorCode heptane_ierr_ = 0; \
    std::string    heptane_msg_; \
    try { \
      __VA_ARGS__; \
    } catch (const heptane::NotSupported &e) { \
      heptane_ierr_ = PETSC_ERR_SUP; \
      heptane_msg_  = std::string(e.what()) + " [" + e.where() + "]"; \
    } catch (const heptane::DeviceError &e) { \
      heptane_ierr_ = PETSC_ERR_GPU; \
      heptane_msg_  = std::string(e.what()) + " [" + e.where() + "]"; \
    } catch (const heptane::DimensionMismatch &e) { \
      heptane_ierr_ = PETSC_ERR_ARG_SIZ; \
      heptane_msg_  = std::string(e.what()) + " [" + e.where() + "]"; \
    } catch (const heptane::Error &e) { \
      heptane_ierr_ = PETSC_ERR_ARG_WRONG; \
      heptane_msg_  = std::string(e.what()) + " [" + e.where() + "]"; \
    } catch (const std::bad_alloc &) { \
      heptane_ierr_ = PETSC_ERR_MEM; \
      heptane_msg_  = "out of memory"; \
    } catch (const std::exception &e) { \
      heptane_ierr_ = PETSC_ERR_LIB; \
      heptane_msg_  = e.what(); \
    } \
    PetscCheck(!heptane_ierr_, PETSC_COMM_SELF, heptane_ierr_, "heptane: %s", heptane_msg_.c_str()); \
  } while (0)

/* The matrix formats -heptane_format accepts ("auto": BDIA-GH on a grid, else detected). */
extern const char *const *const HeptaneFormats; /* "auto", then formats/format.hpp's table */
extern const PetscInt           HeptaneNumFormats;
extern const char *const        HeptanePrecisions[];
extern const char *const        HeptaneCoarseSolves[];       /* -heptane_coarse_solve: "auto", "dense", "amg" */
extern const char *const        HeptaneCoarseAggregations[]; /* -heptane_coarse_aggregation: "bfs", "strength" */
extern const PetscInt           HeptaneNumPrecisions;

/* A SeqAIJ-based matrix (seqaij, bdiagh, the diagonal block of a one-rank mpiaij) borrowed as
   heptane CSR: MatGetRowIJ + MatSeqAIJGetArrayRead, restored by HeptaneCSRRestore(). */
typedef struct {
  Mat                           mat;
  PetscInt                      n;
  const PetscInt               *ia, *ja;
  const PetscScalar            *a;
  std::vector<heptane::index_t> ia32, ja32; /* only when PetscInt is 64-bit */
  heptane::plugin::CsrView      view;
  std::uint64_t                 values_key; /* mat's id and nonzero state: its value array stays where it is while they do (MatrixEngine::refresh_values) */
} HeptaneCSR;

PETSC_INTERN PetscErrorCode HeptaneCSRGet(Mat, HeptaneCSR *);
/* The key under which a sequential matrix's value array may be registered with CUDA
   (MatrixEngine::refresh_values' values_key): its id and nonzero state, between which PETSc
   keeps the array where it is (a new nonzero state, or a new Mat, may move it; ids are never
   reused). */
PETSC_INTERN PetscErrorCode HeptaneValuesKey(Mat, std::uint64_t *);
PETSC_INTERN PetscErrorCode HeptaneCSRRestore(HeptaneCSR *);

/* A SeqBAIJ matrix (or MPIBAIJ's diagonal or off-diagonal block) as heptane's scalar CSR,
   without MatConvert: once per nonzero pattern the scalar pattern (every entry of every
   block, columns ascending; row r of a block row takes row r of each of its blocks in turn);
   then each HeptaneBAIJGet gathers the values (blocks column-major in BAIJ's array) into
   `val`, which the view points to, by formula from the row pointers
   (kernels::block_values_to_csr: one pass, no map, no allocation). `bcolmap` (MPIBAIJ's
   off-diagonal block): the global block column of each of its block columns; NULL: the
   columns as they are. `src` (each entry's position in the BAIJ array) is made only for
   HeptaneBAIJValuesGet's callers that ask for it. */
/* 64-bit PetscInt: a block CSR pattern's indices copied into heptane's 32-bit ones (made
   again at each HeptaneBAIJBlocksGet: block entries, not scalar ones), and an MPIBAIJ's garray */
struct HeptaneBlockIndex32 {
  std::vector<heptane::index_t> ptr, col, garray;
};
struct HeptaneBAIJ {
  PetscObjectId                                id      = 0;
  PetscObjectState                             nz      = -1;
  PetscObjectState                             state   = -1; /* of the values in val */
  const PetscInt                              *bcolmap = nullptr;
  PetscInt                                     bs      = 1;
  PetscBool                                    has_col = PETSC_FALSE; /* col made for this pattern (HeptaneBAIJGet) */
  heptane::plugin::BigVector<heptane::index_t> ptr, col;              /* (plugin/big_alloc.hpp: huge pages, no zero fill) */
  heptane::plugin::BigVector<heptane::index_t> src;
  heptane::plugin::BigVector<double>           val;
  HeptaneBlockIndex32                          blk32; /* HeptaneBAIJBlocksGet with 64-bit PetscInt */
};
PETSC_INTERN PetscErrorCode HeptaneBAIJGet(Mat, const PetscInt bcolmap[], HeptaneBAIJ *, heptane::plugin::CsrView *);
/* A SeqBAIJ matrix's values in place, in their own order (MatSeqBAIJGetArray): the value of
   entry e of HeptaneBAIJGet's scalar CSR is values[pos[e]] (nnz entries), with pos made
   (once per pattern) only when want_pos; *bs: the block size, with which the position follows
   from the scalar row pointers alone (kernels::block_values_to_csr, what a GPU does). No
   gather: `val` keeps the values of its last gather, and its state says so, so a later
   HeptaneBAIJGet gathers the new ones. values = NULL where the values are not doubles
   (complex PetscScalar). Restored by HeptaneBAIJValuesRestore. */
PETSC_INTERN PetscErrorCode HeptaneBAIJValuesGet(Mat, HeptaneBAIJ *, PetscBool want_pos, const double **values, const heptane::index_t **pos, PetscInt *nnz, PetscInt *bs);
PETSC_INTERN PetscErrorCode HeptaneBAIJValuesRestore(Mat, const double **values);
/* A SeqBAIJ matrix as it is, for MatrixEngine::build_blocks: its block pattern (MatGetRowIJ)
   and its values (MatSeqBAIJGetArray) in place; the HeptaneBAIJ's scalar row pointers are
   made too (once per pattern, no columns, no values: the view a preconditioner set up from the
   operator's device copies is given; not with b = NULL). blocks->block_ptr = NULL where
   the values are not doubles, or where PetscInt is 64-bit and there is nowhere to copy the block
   indices into 32 bits (`store`, else b's; NULL both) or they do not fit. Restored by
   HeptaneBAIJBlocksRestore. */
PETSC_INTERN PetscErrorCode HeptaneBAIJBlocksGet(Mat, HeptaneBAIJ *, heptane::plugin::BlockCsrView *blocks, HeptaneBlockIndex32 *store = NULL);
PETSC_INTERN PetscErrorCode HeptaneBAIJBlocksRestore(Mat, heptane::plugin::BlockCsrView *blocks);

/* An SBAIJ matrix (only its upper triangle is stored) as AIJ (seq or mpi, as the matrix is):
   MatConvert once per pattern (object, nonzero state and this rank's count of stored entries:
   PETSc 3.18's SBAIJ keeps its nonzero state for an entry put into preallocated room),
   MAT_REUSE_MATRIX for new values, nothing when neither moved. Zero-initialised (PetscNew);
   MatDestroy(&copy.aij) frees it. */
typedef struct {
  Mat              aij;
  PetscObjectId    id;
  PetscObjectState nz, state;
  PetscLogDouble   entries;
} HeptaneAIJCopy;
PETSC_INTERN PetscErrorCode HeptaneAIJCopyGet(Mat, HeptaneAIJCopy *, Mat *);

/* Several ranks: this rank's rows [rstart, rend) of a parallel matrix as heptane's DistRows
   (engine_impl.hpp): its diagonal block (the columns of its own rows, local indices: what the
   preconditioner is built from) and its other entries (global columns through off_cols).
   An MPIAIJ matrix (bdiagh on several ranks, an MPIAIJ by another name; the mpiaij types of
   PETSc's GPU back ends) lends its two SeqAIJ blocks in place (MatMPIAIJGetSeqAIJ: Ad, Ao and
   garray; MatGetRowIJ, MatSeqAIJGetArrayRead: no copy) until HeptaneRowsRestore. An MPIBAIJ
   gives its two SeqBAIJ blocks (MatMPIBAIJGetSeqBAIJ) through HeptaneBAIJGet: the pattern once
   per nonzero state, the values gathered at each call. Any other type is copied row by row
   (MatGetRow) into arrays kept here, refilled by every HeptaneRowsGet; HeptaneRowsRestore
   leaves them. */
typedef struct {
  PetscInt                      rstart, rend;
  PetscBool                     inplace;                /* the last HeptaneRowsGet lent MPIAIJ's blocks */
  HeptaneCSR                    ad, ao;                 /* lent: MPIAIJ's diagonal and off-diagonal blocks */
  std::vector<heptane::index_t> garray32;               /* lent, 64-bit PetscInt: garray in 32 bits */
  std::vector<heptane::index_t> dptr, dcol, optr, ocol; /* copied */
  std::vector<double>           dval, oval;
  HeptaneBAIJ                   bd, bo; /* MPIBAIJ: its two SeqBAIJ blocks through HeptaneBAIJGet */
  PetscBool                     baij;   /* the last HeptaneRowsGet read an MPIBAIJ's blocks */
  heptane::plugin::DistRows     split;  /* both parts (valid until HeptaneRowsRestore when lent) */
} HeptaneRows;

PETSC_INTERN PetscErrorCode HeptaneRowsGet(Mat, HeptaneRows *);

/* An error (PETSC_ERR_SUP, on the object's communicator) unless heptane can read the matrix's
   entries: its own bdiagh, or any type with MatGetRow (aij, baij, sbaij and their variants). A
   matrix-free one (MATSHELL, MATMFFD: a Jacobian-free host's -snes_mf_operator) has none;
   `who` ("KSP hbcgs", "PC hamg") and `advice` name what to do instead. */
PETSC_INTERN PetscErrorCode HeptaneCheckEntriesReadable(PetscObject, Mat, const char who[], const char advice[]);
PETSC_INTERN PetscErrorCode HeptaneRowsRestore(HeptaneRows *);

/* The grid behind a matrix: -heptane_grid J,H,I / -heptane_block Nc from the options database
   (with the given prefix), else the DMDA the matrix was created from. *found = PETSC_FALSE
   when neither says anything (the structure is then detected). */
PETSC_INTERN PetscErrorCode HeptaneGridHintFromOptions(PetscOptions, const char[], heptane::plugin::GridHint *, PetscBool *);
PETSC_INTERN PetscErrorCode HeptaneGridHintFromDM(DM, heptane::plugin::GridHint *, PetscBool *);

/* "auto", "cpu", "gpu", "gpu:N", "cuda", "cuda:N" */
PETSC_INTERN PetscErrorCode HeptaneCheckDevice(const char[]);

/* The options of heptane's AMG and CPR (-pc_type hamg, hcpr), read inside the caller's
   PetscOptionsHeadBegin/End (so with its object's prefix) into *opts, listed by -help:
     -heptane_amg_threshold theta      strength of connection (AmgOptions::strength_threshold)
     -heptane_amg_smoother auto|chebyshev|jacobi|l1jacobi|ilu0mc
     -heptane_amg_sweeps k             pre- and post-smoothing sweeps (Chebyshev degree)
     -heptane_amg_cycle v|w
     -heptane_amg_coarse_size n        stop coarsening at n rows or fewer
     -heptane_amg_max_levels L
     -heptane_amg_tail_rows n          the levels of at most n rows in one launch (0: none)
   and with cpr also
     -heptane_cpr_pressure_index p     the pressure unknown of each cell
     -heptane_cpr_second auto|bilu0|bilu0mc|bjacobi   the second stage (auto: BILU(0) on the
                                       CPU, block Jacobi on a GPU)
   -heptane_amg_global sets opts->amg.over_ranks to yes or no; not given, it stays as it was
   (automatic as the KSP and PC make their options: HeptaneAmgOverRanks decides).
   opts->cpr.amg is set to opts->amg. */
PETSC_INTERN PetscErrorCode HeptanePcOptionsFromOptions(HeptaneOptionItems, heptane::PcOptions *, PetscBool cpr, const char man[]);
/* The same options as one line for the views ("-heptane_amg_threshold 0.02 ..."). */
std::string HeptanePcOptionsText(const heptane::PcOptions &, PetscBool cpr);
/* Whether AMG (type amg) or CPR's pressure AMG (cpr) runs as one hierarchy over the ranks
   (-heptane_amg_global): never on one rank, nor where it was refused at this pattern (then
   each rank's own); as given where -heptane_amg_global was given; not given, over the ranks on
   CPU ranks (cpu) without -heptane_coarse (coarse) and with a smoother that is built over the
   ranks, for cpr and for amg on a scalar system (nc 1). Measured on the H200 machine's CPU
   (docs/benchmarks.md): the reservoir pressure at 1 M cells ahead of AMG per rank on 2-16 ranks
   with BiCGStab and CG; the coupled system on 16 ranks ahead of CPR per rank with BiCGStab and
   GMRES. *why (may be NULL): what decided, for -ksp_view (left as it is where refused: the
   caller wrote why). */
bool HeptaneAmgOverRanks(const heptane::AmgOptions &, heptane::PcType type, int ranks, bool cpu, heptane::index_t nc, bool coarse, bool refused, std::string *why);
/* A's stored entries per rank of `comm` (MatGetInfo's nz_used summed over the ranks, divided
   by their number; the same on every rank; collective), or -1 for a matrix type without
   MatGetInfo: what -heptane_device auto weighs (resolve_device). */
PetscErrorCode HeptaneEntriesPerRank(Mat A, MPI_Comm comm, long long *nnz);
/* The most MPI ranks of `comm` that share one GPU of their node (node-local ranks over the
   visible CUDA devices, rounded up; the largest over the nodes, the same on every rank; 1 on
   one rank or without a GPU): what -heptane_device auto weighs on several ranks. Collective. */
PetscErrorCode HeptaneRanksPerGpu(MPI_Comm comm, int *k);
/* A text of several lines to an ASCII viewer, each line after `indent` (the AMG hierarchy). */
PetscErrorCode HeptaneViewLines(PetscViewer, const char indent[], const std::string &);
/* Whether two PcOptions ask for the same preconditioner (the fields the options set). */
PetscBool HeptanePcOptionsEqual(const heptane::PcOptions &, const heptane::PcOptions &);
/* A null space declared on Amat or Pmat (MatSetNullSpace; either may be NULL): AMG's and CPR's
   coarsest level by a generalized inverse (AmgOptions::singular) in o. */
PetscErrorCode HeptanePcOptionsNullSpace(Mat Amat, Mat Pmat, heptane::PcOptions *o);

/* ---- the Mat type bdiagh (mat_bdiagh.cpp) ---- */
typedef struct {
  heptane::plugin::MatrixEngine *engine;
  heptane::plugin::MatrixConfig  cfg;        /* format bdiagh; device and precision */
  PetscObjectState               nzstate;    /* nonzero state the engine was built for */
  PetscObjectState               state;      /* object state whose values the engine holds */
  PetscBool                      cfg_locked; /* a KSP chose device/precision: keep them */
  PetscErrorCode (*assemblyend)(Mat, MatAssemblyType);
  PetscErrorCode (*destroy)(Mat);
  PetscErrorCode (*view)(Mat, PetscViewer);
} Mat_BDIAGH;

/* The BDIA-GH engine of a bdiagh matrix, brought up to date with its values and configured as
   asked (a KSP with another device or precision rebuilds it once; later assemblies keep it).
   *updated tells what was done: 0 nothing, 1 values refreshed, 2 rebuilt. */
PETSC_INTERN PetscErrorCode MatBDIAGHRegisterFactors(void);
PETSC_INTERN PetscErrorCode MatBDIAGHGetEngine(Mat, const heptane::plugin::MatrixConfig *, heptane::plugin::MatrixEngine **, PetscInt *);
