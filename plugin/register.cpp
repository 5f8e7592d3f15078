/*
   The one entry point of libheptane_petsc.so. PETSc calls PetscDLLibraryRegister_<name> when
   the library is loaded with -dll_append (or -dll_prepend, PetscDLLibraryAppend()); <name> is
   the file name without "lib" and the extension, so the function name must follow the file
   name: libheptane_petsc.so -> PetscDLLibraryRegister_heptane_petsc (plugin/CMakeLists.txt
   fixes the output name). A mismatch is silent: only -info says the symbol was not found.
*/
#include "plugin/petsc_common.hpp"

PetscErrorCode PetscDLLibraryRegister_heptane_petsc(void)
{
  PetscFunctionBegin;
  PetscCall(KSPRegister(KSPHBCGS, KSPCreate_HBCGS));
  PetscCall(KSPRegister(KSPHCG, KSPCreate_HCG));
  PetscCall(MatRegister(MATBDIAGH, MatCreate_BDIAGH));
  PetscCall(MatBDIAGHRegisterFactors());
  PetscCall(PetscInfo(NULL, "heptane: registered KSP types %s, %s and Mat type %s\n", KSPHBCGS, KSPHCG, MATBDIAGH));
  PetscFunctionReturn(0);
}
