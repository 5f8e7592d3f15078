/*
   The one entry point of libheptane_petsc.so. PETSc calls PetscDLLibraryRegister_<name> when
   the library is loaded with -dll_append (or -dll_prepend, PetscDLLibraryAppend()); <name> is
   the file name without "lib" and the extension, so the function name must follow the file
   name: libheptane_petsc.so -> PetscDLLibraryRegister_heptane_petsc (plugin/CMakeLists.txt
   fixes the output name). A mismatch is silent: only -info says the symbol was not found.

   Loading also starts the GPU's set-up on a background thread (plugin/device_pool.hpp: the
   CUDA context, the stream, the library handles, the pinned upload buffers), so that it runs
   while the host program builds its grid and assembles its matrix instead of inside the first
   KSPSetUp: -heptane_prewarm (default true) on one MPI rank with -heptane_device (no prefix)
   auto or a GPU. Several ranks take their GPU by node-local rank at the first distributed
   setup and are not prewarmed.
*/
#include <cstdlib>
#include <cstring>
#include <vector>

#include "plugin/device_pool.hpp"
#include "plugin/petsc_common.hpp"

static PetscErrorCode HeptaneReleaseDevices(void)
{
  PetscFunctionBegin;
  HeptaneCallCXX(heptane::plugin::release_devices());
  PetscFunctionReturn(0);
}

static PetscErrorCode HeptanePrewarm(void)
{
  char        device[64] = "auto";
  PetscBool   prewarm    = PETSC_TRUE, set;
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-heptane_prewarm", &prewarm, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-heptane_device", device, sizeof(device), &set));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscRegisterFinalize(HeptaneReleaseDevices));
  if (!prewarm || size > 1) PetscFunctionReturn(0);
  /* AMG's and CPR's device code too where an option names them (their first setup would
     otherwise load cuSPARSE's and heptane's setup kernels: 45-75 ms on an H100) */
  char *all = NULL;
  PetscCall(PetscOptionsGetAll(NULL, &all));
  heptane::plugin::PrewarmWork work;
  work.multigrid = all && (strstr(all, "hamg") || strstr(all, "hcpr"));
  /* the Krylov solves' device code (their first solve would otherwise load it: ~5-7 ms on an
     H100): the heptane KSPs the options name, BiCGStab where they name none (a host may set
     its KSP type in code); Nc 1, 2 and 3, or 1 and -heptane_block's (with any prefix) */
  if (all && strstr(all, "hbcgs")) work.solvers.push_back(heptane::SolverType::bicgstab);
  if (all && strstr(all, "hcg")) work.solvers.push_back(heptane::SolverType::cg);
  if (all && strstr(all, "hgmres")) work.solvers.push_back(heptane::SolverType::gmres);
  if (work.solvers.empty()) work.solvers.push_back(heptane::SolverType::bicgstab);
  work.block_sizes = {1, 2, 3};
  if (const char *blk = all ? strstr(all, "heptane_block ") : NULL) {
    const long nc = strtol(blk + strlen("heptane_block "), NULL, 10);
    if (nc >= 1 && nc <= 8) work.block_sizes = nc == 1 ? std::vector<heptane::index_t>{1} : std::vector<heptane::index_t>{1, (heptane::index_t)nc};
  }
  PetscCall(PetscFree(all));
  HeptaneCallCXX(heptane::plugin::prewarm_device(device, work));
  PetscCall(PetscInfo(NULL, "heptane: setting up device '%s' on a background thread (-heptane_prewarm)\n", device));
  PetscFunctionReturn(0);
}

PetscErrorCode PetscDLLibraryRegister_heptane_petsc(void)
{
  PetscFunctionBegin;
  PetscCall(KSPRegister(KSPHBCGS, KSPCreate_HBCGS));
  PetscCall(KSPRegister(KSPHCG, KSPCreate_HCG));
  PetscCall(KSPRegister(KSPHGMRES, KSPCreate_HGMRES));
  PetscCall(PCRegister(PCHAMG, PCCreate_HAMG));
  PetscCall(PCRegister(PCHCPR, PCCreate_HCPR));
  PetscCall(MatRegister(MATBDIAGH, MatCreate_BDIAGH));
  PetscCall(MatBDIAGHRegisterFactors());
  PetscCall(PetscInfo(NULL, "heptane: registered KSP types %s, %s, %s, PC types %s, %s and Mat type %s\n", KSPHBCGS, KSPHCG, KSPHGMRES, PCHAMG, PCHCPR, MATBDIAGH));
  PetscCall(HeptanePrewarm());
  PetscFunctionReturn(0);
}
