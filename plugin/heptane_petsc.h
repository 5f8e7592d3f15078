/*
   heptane's PETSc plugin (docs/design.md section 5): the names it registers from its one entry point
   PetscDLLibraryRegister_heptane_petsc, called by PETSc when the library is loaded with

       -dll_append /path/libheptane_petsc.so      (or in PETSC_OPTIONS)

   A host program needs neither this header nor a link against the plugin: it selects the
   types by name (-ksp_type hbcgs, -mat_type bdiagh, -dm_mat_type bdiagh).
*/
#pragma once

#include <petscksp.h>

/* BiCGStab, CG and (flexible, restarted) GMRES on heptane's engine (CPU or GPU). */
#define KSPHBCGS  "hbcgs"
#define KSPHCG    "hcg"
#define KSPHGMRES "hgmres"
/* heptane's smoothed-aggregation AMG and CPR: inside heptane's loop with hbcgs/hcg/hgmres,
   an ordinary PC (PCSetUp/PCApply on the executor) with PETSc's own KSPs. */
#define PCHAMG "hamg"
#define PCHCPR "hcpr"
/* An AIJ matrix that also keeps a BDIA-GH copy (on the GPU when one is used), rebuilt at
   assembly end when the nonzero pattern changed and refreshed (values only) otherwise. */
#define MATBDIAGH "bdiagh"

PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_heptane_petsc(void);
PETSC_EXTERN PetscErrorCode KSPCreate_HBCGS(KSP);
PETSC_EXTERN PetscErrorCode KSPCreate_HCG(KSP);
PETSC_EXTERN PetscErrorCode KSPCreate_HGMRES(KSP);
PETSC_EXTERN PetscErrorCode PCCreate_HAMG(PC);
PETSC_EXTERN PetscErrorCode PCCreate_HCPR(PC);
PETSC_EXTERN PetscErrorCode MatCreate_BDIAGH(Mat);
