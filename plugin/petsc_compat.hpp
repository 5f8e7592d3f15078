/*
   The one place where the plugin meets differences between PETSc versions (issue #18). Built
   and tested against PETSc 3.18 (Debian's) and 3.25 (docs/petsc.md, "PETSc versions"); the rest of
   the plugin uses the names below instead of #if on PETSC_VERSION.

   What differs between 3.18 and 3.25 for the calls the plugin makes:
     - the options context of the XXXSetFromOptions methods (ops->setfromoptions, and
       PetscOptionsObject in PetscOptionsHeadBegin/PetscOptionsReal/...): `PetscOptionItems *`
       in 3.18, `PetscOptionItems` in 3.25, where it is itself a pointer type. HeptaneOptionItems
       is that parameter's type, read off PETSc's own KSP ops table (untested versions in
       between get theirs, whichever release made the change);
     - PetscBool: an int-sized enum up to 3.23, a C bool since 3.24, whose MPI datatype is
       MPI_C_BOOL; MPIU_BOOL became a deprecated alias of it (a warning) in 3.24.
       HEPTANE_MPIU_BOOL is the datatype of a PetscBool for MPI_Allreduce;
     - not a version but a configuration: a PETSc with a device back end (CUDA, HIP, Kokkos)
       keeps a Mat's offload mask, one without has none; HeptaneMatNewestOnDevice reads it;
     - KSPSetFromOptions() calls PCSetFromOptions() before the KSP type's setfromoptions in
       3.18 and after it in 3.25: no name here, the KSP types take the PC's type at KSPSetUp
       (ksp_heptane.cpp, KSPHeptaneTakePC), where both orders are over.
   Everything else the plugin calls compiles unchanged against both: PetscCall/PetscCheck,
   PetscOptionsHeadBegin/End, KSPRegister/PCRegister/MatRegister, the KSPConvergedReason values
   it sets, MatGetRowIJ/MatSeqAIJGetArrayRead/MatMPIAIJGetSeqAIJ/MatGetRow, MatSeqAIJGetCSRAndMemType
   (with PetscMemTypeDevice), MatSolverTypeRegister,
   PetscObjectComposeFunction, PetscViewerASCIIPrintf, the private KSP/PC/Mat fields it reads
   (ksp->rtol, ->guess_zero, ->setupnewmatrix, ->rnorm0, pc->pmat, A->spptr, A->ops->...).
*/
#pragma once

#include <petscversion.h>
#include <petsc/private/kspimpl.h>
#include <petsc/private/matimpl.h>
#include <petsc/private/pcimpl.h>

#include <type_traits>

#if PETSC_VERSION_LT(3, 18, 0)
  #error "heptane's PETSc plugin needs PETSc 3.18 or newer (PetscCall, PetscCheck, PetscOptionsHeadBegin)"
#endif

namespace heptane_petsc_compat
{
template <class>
struct second_parameter;
template <class R, class A, class B>
struct second_parameter<R (*)(A, B)> {
  typedef B type;
};
} // namespace heptane_petsc_compat

/* The options context of KSPSetFromOptions_XXX/PCSetFromOptions_XXX (PetscOptionItems * in
   3.18, PetscOptionItems in 3.25). */
typedef heptane_petsc_compat::second_parameter<decltype(_KSPOps::setfromoptions)>::type HeptaneOptionItems;
static_assert(std::is_same<HeptaneOptionItems, heptane_petsc_compat::second_parameter<decltype(_PCOps::setfromoptions)>::type>::value, "KSP and PC setfromoptions take the same options context");

/* The MPI datatype of a PetscBool. */
#if PETSC_VERSION_GE(3, 24, 0)
  #define HEPTANE_MPIU_BOOL MPI_C_BOOL
#else
  #define HEPTANE_MPIU_BOOL MPIU_BOOL
#endif

/* Whether a matrix's newest values are in device memory (its offload mask GPU or both: e.g. an
   aijcusparse matrix updated on the device); PETSC_FALSE in a PETSc without a device back end. */
static inline PetscBool HeptaneMatNewestOnDevice(Mat A)
{
#if defined(PETSC_HAVE_DEVICE)
  return (PetscBool)(A->offloadmask == PETSC_OFFLOAD_GPU || A->offloadmask == PETSC_OFFLOAD_BOTH);
#else
  (void)A;
  return PETSC_FALSE;
#endif
}
