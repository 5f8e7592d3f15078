# PETSc plugin tests (label `plugin`, CPU back end). libheptane_petsc.so is loaded at run time
# (-dll_append, or PETSC_OPTIONS) into programs that link PETSc only and know nothing of heptane:
# tests/plugin_host.c and the reservoir example. tests/plugin_compare.py runs each program with a
# PETSc KSP and with heptane's and compares the numbers they print (solution norms, checksums,
# Newton residuals); tests/plugin_solves.py (${solves}), which every test that solves goes
# through, also checks every solve either run reports: its converged reason, its error against
# the known solution (plugin_host) or its true relative residual (reservoir), and its iterations
# against the reference's (--its-diff for the same method, --max-its-ratio otherwise) or a band.
# The reference runs use right preconditioning so that PETSc stops on the same unpreconditioned
# ||r|| <= rtol ||b|| as heptane.
if(NOT TARGET heptane_petsc)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "heptane: plugin tests OFF (no python3)")
  return()
endif()

add_executable(plugin_host plugin_host.c)
set_source_files_properties(plugin_host.c PROPERTIES LANGUAGE CXX)  # C, compiled as C++
target_link_libraries(plugin_host PRIVATE PkgConfig::PETSC MPI::MPI_CXX)
add_dependencies(plugin_host heptane_petsc)  # built, never linked: loaded at run time

set(plugin_so $<TARGET_FILE:heptane_petsc>)
set(compare ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/plugin_compare.py --plugin ${plugin_so})
set(host $<TARGET_FILE:plugin_host>)
set(ref_bcgs "-ksp_type bcgs -ksp_pc_side right")
# tests/plugin_solves.py: plugin_compare.py plus checks on every solve (reason, error, iterations)
set(solves ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/plugin_solves.py)
set(hep1 "-dll_append ${plugin_so}")
set(host_checks --max-error 1e-8)
# OpenMPI refuses root without these (the CI runs as root); passive OpenMP waiting keeps a
# loaded CI host from stalling in barriers.
set(plugin_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_WAIT_POLICY=passive;OMPI_MCA_rmaps_base_oversubscribe=1")

function(heptane_plugin_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "plugin;cpu" ENVIRONMENT "${plugin_env}" TIMEOUT 600)
endfunction()
# examples/petsc_solve on zero_pivot.petsc (below) with a heptane PC that cannot be set up,
# against PETSc's bcgs with block Jacobi (or pbjacobi): both KSP_DIVERGED_PC_FAILED, twice.
# Inside heptane's hbcgs (name "<pc>"; x is not compared: PETSc leaves inf in it, heptane the
# initial guess), and as the PC of PETSc's own bcgs ("petsc_bcgs_<pc>": hcpr, whose second stage
# is ILU(0), and hamg, PC_FACTOR_NUMERIC_ZEROPIVOT and Inf from PCApply as PETSc's factor PCs,
# so x is Inf in both runs). hamg on several ranks only: over the ranks each rank keeps point
# Jacobi of its rows; one AMG on one rank solves this 6 x 6 system on its coarsest level, exactly.
function(heptane_zero_pivot_tests np launcher)
  set(cases hbcgs:ilu hbcgs:pbjacobi bcgs:hcpr)
  if(launcher)
    list(APPEND cases hbcgs:hamg bcgs:hamg)
  endif()
  set(mpi "")
  if(launcher)
    set(mpi --mpiexec "${launcher}") # one string: the list was joined with spaces
  endif()
  foreach(case ${cases})
    string(REPLACE ":" ";" kp "${case}")
    list(GET kp 0 ksp)
    list(GET kp 1 pc)
    set(ref "-ksp_type bcgs -pc_type bjacobi")
    if(pc STREQUAL "pbjacobi")
      set(ref "-ksp_type bcgs -pc_type pbjacobi")
    endif()
    set(name ${pc})
    set(nan --ref-nan-ok 1)
    if(ksp STREQUAL "bcgs")
      set(name petsc_bcgs_${pc})
      set(nan --nan-ok 1)
    endif()
    heptane_plugin_test(plugin_loaded_zero_pivot_np${np}_${name}_diverged_pc_failed
      ${solves} --reason DIVERGED_PC_FAILED --its 0:0 --max-relres 10 ${nan} --solves 2 --
      --plugin ${plugin_so} ${mpi} --no-values --ref "${ref} -ksp_converged_reason"
      --heptane "-ksp_type ${ksp} -pc_type ${pc} -ksp_converged_reason -ksp_view"
      --expect "PC failed due to FACTOR_NUMERIC_ZEROPIVOT"
      --expect "heptane preconditioner setup FAILED: .*(pivot|diagonal|another rank)"
      -- $<TARGET_FILE:petsc_solve> -f ${CMAKE_CURRENT_BINARY_DIR}/zero_pivot.petsc -solves 2)
    set_tests_properties(plugin_loaded_zero_pivot_np${np}_${name}_diverged_pc_failed PROPERTIES FIXTURES_REQUIRED zero_pivot)
  endforeach()
  # -pc_type jacobi: PETSc's PCJACOBI takes the zero diagonal as 1 (-pc_jacobi_fixdiagonal, its
  # default) and converges; heptane's Jacobi inside hbcgs does the same (no fold of M^-1 into A,
  # whose diagonal would not be 1 there)
  heptane_plugin_test(plugin_loaded_zero_pivot_np${np}_jacobi_takes_one
    ${solves} --max-relres 1e-9 --solves 2 -- --plugin ${plugin_so} ${mpi}
    --ref "-ksp_type bcgs -pc_type jacobi -ksp_rtol 1e-10 -ksp_converged_reason"
    --heptane "-ksp_type hbcgs -pc_type jacobi -ksp_rtol 1e-10 -ksp_converged_reason -ksp_view"
    --expect "jacobi \\(a zero diagonal entry taken as 1\\)"
    -- $<TARGET_FILE:petsc_solve> -f ${CMAKE_CURRENT_BINARY_DIR}/zero_pivot.petsc -solves 2)
  set_tests_properties(plugin_loaded_zero_pivot_np${np}_jacobi_takes_one PROPERTIES FIXTURES_REQUIRED zero_pivot)
endfunction()

# ---- results match PETSc's own KSPs --------------------------------------------------------
heptane_plugin_test(plugin_host_bcgs_matches_petsc
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs"
  --expect "ksp=hbcgs" --reject MISMATCH -- ${host})
heptane_plugin_test(plugin_host_dmda_nc3_newton_reuses_setup
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view"
  --expect "heptane setups: 1 full \\(new pattern\\), 2 values-only"
  --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 2 values-only \\(numeric only"
  --expect "grid 12x12x12 Nc=3 from DMDA" --expect "bdiagh 5184x5184 Nc=3 D=7"
  --reject MISMATCH -- ${host} -dof 3 -solves 3)
# BAIJ without MatConvert: its scalar CSR made once per pattern (by formula), the values
# gathered at each setup; SBAIJ (upper triangle) through an AIJ copy; every solve against the known solution
heptane_plugin_test(plugin_host_baij_read_through_a_map
  ${solves} ${host_checks} --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -dm_mat_type baij" --heptane "-ksp_type hbcgs -ksp_view -dm_mat_type baij -heptane_format bdiagh"
  --expect "PETSc matrix seqbaij" --expect "heptane matrix input: BAIJ read through its scalar CSR made on the host once per pattern"
  --expect "heptane setups: 1 full \\(new pattern\\), 2 values-only" --reject MISMATCH -- ${host} -dof 3 -solves 3)
# BAIJ with (point-)block Jacobi on the CPU, the grid known, copied into BDIA-GH (fp64 with
# -heptane_format bdiagh; mixed precision always): built from its blocks (each block
# straight into its BDIA-GH slots, the PC from the diagonal blocks alone: no scalar CSR), and
# values-only refreshes read the BAIJ array in place, every position from the block pattern
# (the PC's gather map into the block array made once), no gather and no map of the entries;
# fp64 and mixed (the fp64 copy refreshed too)
foreach(v "pbjacobi;3;double;bdiagh" "jacobi;2;mixed;auto")
  list(GET v 0 pc)
  list(GET v 1 dof)
  list(GET v 2 prec)
  list(GET v 3 fmt)
  heptane_plugin_test(plugin_host_baij_values_read_in_place_${pc}_${prec}
    ${solves} ${host_checks} --its-diff 3 --solves 3 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ${pc} -dm_mat_type baij"
    --heptane "-ksp_type hbcgs -pc_type ${pc} -heptane_device cpu -heptane_precision ${prec} -heptane_format ${fmt} -ksp_view -dm_mat_type baij"
    --expect "values-only refreshes read its blocks in place, each straight into its BDIA-GH slots"
    --expect "block CSR with bs = ${dof} read block by block into the BDIA-GH slots on the host"
    --expect "heptane setups: 1 full \\(new pattern\\), 2 values-only"
    --expect "numeric part on the host, on PETSc's block values in place \\(positions by the block pattern" --reject MISMATCH -- ${host} -dof ${dof} -solves 3)
endforeach()
# BAIJ (bs >= 2) on the CPU in fp64, format auto: PETSc's arrays are the operator, read in
# place with or without a grid (nothing copied at a new pattern or a values-only update);
# every solve against PETSc's and the known solution; bs 9 takes the kernel for any block size;
# a new pattern is built again (dof 2 without a grid, a block added at the third solve: PETSc's
# BAIJ keeps its nonzero state there, the count of entries says it)
foreach(v "pbjacobi;3;-dm_mat_type baij;2;1" "jacobi;2;-dm_mat_type baij;2;1" "pbjacobi;9;-dm_mat_type baij;2;1" "pbjacobi;3;-use_dm 0 -mat_type baij;2;1" "pbjacobi;2;-use_dm 0 -mat_type baij -new_pattern_at 3;1;2")
  list(GET v 0 pc)
  list(GET v 1 dof)
  list(GET v 2 how)
  list(GET v 3 values_only)
  list(GET v 4 full)
  separate_arguments(how_args UNIX_COMMAND "${how}")
  string(REGEX REPLACE "[^a-z0-9]+" "_" tag "${how}")
  heptane_plugin_test(plugin_host_baij_arrays_are_the_operator_${pc}_dof${dof}${tag}
    ${solves} ${host_checks} --its-diff 3 --solves 3 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ${pc}"
    --heptane "-ksp_type hbcgs -pc_type ${pc} -heptane_device cpu -ksp_view"
    --expect "heptane operator: PETSc's BAIJ blocks in place [0-9]+x[0-9]+ bs=${dof} blocks=[0-9]+ fp64 on cpu"
    --expect "block CSR with bs = ${dof} read in place on the host as the operator"
    --expect "its arrays are the operator, read in place on the host: a values-only update copies nothing"
    --expect "heptane setups: ${full} full \\(new pattern\\), ${values_only} values-only"
    --reject MISMATCH -- ${host} -dof ${dof} -solves 3 ${how_args})
endforeach()
# the same with ILU(0) (the default PC): the operator is BAIJ's arrays, the PC's scalar CSR
# gathered from them at each setup
heptane_plugin_test(plugin_host_baij_arrays_are_the_operator_ilu
  ${solves} ${host_checks} --its-diff 2 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs}" --heptane "-ksp_type hbcgs -heptane_device cpu -ksp_view"
  --expect "heptane operator: PETSc's BAIJ blocks in place [0-9]+x[0-9]+ bs=3 blocks=[0-9]+ fp64 on cpu"
  --expect "heptane preconditioner: ilu0 Nc=3"
  --expect "BAIJ's arrays are the operator, read in place on the host \\(no copy\\). for the preconditioner its scalar CSR"
  --expect "heptane setups: 1 full \\(new pattern\\), 2 values-only"
  --reject MISMATCH -- ${host} -dof 3 -solves 3 -dm_mat_type baij)
# ... and with a block added at the second solve (PETSc 3.18's SeqBAIJ keeps its nonzero state for
# a block put into preallocated room: before, the preconditioner's scalar CSR kept the old pattern
# and the second solve diverged)
heptane_plugin_test(plugin_host_baij_arrays_are_the_operator_ilu_new_pattern
  ${solves} ${host_checks} --its-diff 2 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs}" --heptane "-ksp_type hbcgs -heptane_device cpu -ksp_view"
  --expect "heptane operator: PETSc's BAIJ blocks in place [0-9]+x[0-9]+ bs=2 blocks=[0-9]+ fp64 on cpu"
  --expect "heptane setups: 2 full \\(new pattern\\), 1 values-only"
  --reject MISMATCH -- ${host} -dof 2 -solves 3 -dm_mat_type baij -new_pattern_at 2)
# KSPSetOperators(ksp, Amat, Pmat) as PETSc means it: heptane's preconditioner (and the operator
# it reads) from Pmat, the Krylov loop's products Amat's MatMult. A matrix-free Amat (a MATSHELL
# with A's product, as -snes_mf_operator / PJFNK gives) with AMG from Pmat; a Pmat that is not
# Amat (A + 10 I, refreshed each solve, an entry added at the third): the answers solve A x = b (the known solution), the iterations are
# PETSc's with its PC from the same Pmat (ILU(0) of A alone takes 8, of A + 10 I 16-17)
heptane_plugin_test(plugin_host_shell_amat_hgmres_hamg_pc_from_pmat
  ${solves} ${host_checks} --its host=3:30 --ref-its host=3:30 --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type fgmres -pc_type gamg" --heptane "-ksp_type hgmres -pc_type hamg -ksp_view"
  --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type shell\\), which is not its Pmat \\(type seqaij\\)"
  --reject MISMATCH -- ${host} -dof 2 -solves 2 -shell_amat 1)
# -ksp_norm_type none (an inner solve of a fixed count; PCMG and GAMG set it on their smoothers):
# -ksp_max_it iterations with no convergence test, the answer and the reason PETSc's bcgs gives
# (KSP_DIVERGED_ITS under the default test); and hbcgs as GAMG's smoother inside PETSc's fgmres
# (before 2026-12-03: "KSP hbcgs does not support norm type NONE")
heptane_plugin_test(plugin_host_norm_none_runs_max_it_as_petsc
  ${solves} --reason DIVERGED_ITS --max-error 1e-4 --its host=5:5 --ref-its host=5:5 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -ksp_norm_type none -ksp_max_it 5" --heptane "-ksp_type hbcgs -ksp_norm_type none -ksp_max_it 5 -ksp_view"
  --expect "no convergence test \\(-ksp_norm_type none\\): -ksp_max_it iterations" -- ${host} -solves 2)
heptane_plugin_test(plugin_host_hbcgs_as_gamg_smoother
  ${solves} ${host_checks} --its-diff 2 --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type fgmres -pc_type gamg -mg_levels_ksp_type bcgs -mg_levels_pc_type jacobi -mg_levels_ksp_max_it 2"
  --heptane "-ksp_type fgmres -pc_type gamg -mg_levels_ksp_type hbcgs -mg_levels_pc_type jacobi -mg_levels_ksp_max_it 2 -ksp_view"
  --expect "heptane BiCGStab \\(fused loop\\), right-preconditioned inside heptane. no convergence test"
  --reject MISMATCH -- ${host} -solves 2 -n 16)
# The host's own convergence test (KSPSetConvergenceTest, as simulators set one; plugin_host
# -host_test): heptane's loop calls it every iteration after the monitors, with KSPGetIterationNumber
# and KSPGetResidualNorm as passed, and stops where it says with its reason -- the iterations,
# norms and reasons of PETSc's KSPs. plugin_host prints MISMATCH unless it was called once per
# iteration 0..its and the solve ended where it said (before 2026-12-03 it was not called: a
# warning, and heptane's rtol test instead). 1: a tolerance of the host's own (1e-4 ||r0||);
# 2: KSPConvergedDefault wrapped (its context, ||b|| taken by it from a nonzero initial guess),
# stopping with KSP_DIVERGED_ITS at -host_test_stop k.
foreach(v "hbcgs_jacobi;-ksp_type hbcgs -pc_type jacobi;${ref_bcgs} -pc_type jacobi"
          "hgmres_ilu;-ksp_type hgmres -pc_type ilu;-ksp_type gmres -ksp_pc_side right -pc_type ilu")
  list(GET v 0 tag)
  list(GET v 1 hep)
  list(GET v 2 ref)
  heptane_plugin_test(plugin_host_host_convergence_test_${tag}_as_petsc
    ${solves} --max-error 1e-3 --its-diff 1 --solves 2 --
    --plugin ${plugin_so} --ref "${ref}" --heptane "${hep} -ksp_view"
    --expect "stopping on the host's convergence test \\(KSPSetConvergenceTest\\)"
    --expect "host: convergence test called [0-9]+ times, last at iteration [0-9]+, said CONVERGED_RTOL"
    --reject MISMATCH -- ${host} -host_test 1 -solves 2)
endforeach()
# A solve after KSPSetUp allocates nothing on heptane's executor: heptane's copies of b and x,
# the folded operator (pbjacobi) and the solver's workspace are made at KSPSetUp (after each
# values-only refresh too), as PETSc's KSPs make their work vectors there; with HEPTANE_PREPARE=0
# (the solve makes them, as before) the first solve's -ksp_view says it allocated. Three solves,
# new values at each, the answers PETSc's.
foreach(v "hbcgs_pbjacobi;-ksp_type hbcgs -pc_type pbjacobi;${ref_bcgs} -pc_type pbjacobi;-dof 2"
          "hcg_jacobi;-ksp_type hcg -pc_type jacobi;-ksp_type cg -pc_type jacobi;-convection 0"
          "hgmres_ilu;-ksp_type hgmres -pc_type ilu;-ksp_type gmres -ksp_pc_side right -pc_type ilu;-dof 1")
  list(GET v 0 tag)
  list(GET v 1 hep)
  list(GET v 2 ref)
  list(GET v 3 extra)
  separate_arguments(extra)
  heptane_plugin_test(plugin_host_solve_allocates_nothing_after_setup_${tag}
    ${solves} ${host_checks} --its-diff 1 --solves 3 --
    --plugin ${plugin_so} --ref "${ref}" --heptane "${hep} -ksp_view"
    --expect "heptane last solve: [0-9.]+ ms, 0 allocations on the executor \\(its vectors and workspace are made at KSPSetUp: [1-9][0-9]* allocations"
    --reject "heptane last solve: [0-9.]+ ms, [1-9][0-9]* allocations" --reject MISMATCH -- ${host} -solves 3 ${extra})
endforeach()
heptane_plugin_test(plugin_host_solve_allocates_without_prepare
  ${CMAKE_COMMAND} -E env HEPTANE_PREPARE=0
  ${solves} ${host_checks} --its-diff 1 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -ksp_view"
  --expect "heptane last solve: [0-9.]+ ms, [1-9][0-9]* allocations on the executor \\(its vectors and workspace are made at KSPSetUp: 0 allocations"
  --reject MISMATCH -- ${host} -solves 3 -dof 2)
heptane_plugin_test(plugin_host_host_convergence_test_hcg_hamg
  ${solves} --max-error 1e-3 --its host=2:30 --ref-its host=2:30 --solves 2 --
  --plugin ${plugin_so} --tol 1e-4 --ref "-ksp_type cg -pc_type gamg" --heptane "-ksp_type hcg -pc_type hamg -ksp_view"
  --expect "host: convergence test called [0-9]+ times, last at iteration [0-9]+, said CONVERGED_RTOL"
  --reject MISMATCH -- ${host} -host_test 1 -convection 0 -solves 2)
heptane_plugin_test(plugin_host_host_convergence_test_wraps_the_default_from_x0
  ${solves} ${host_checks} --its-diff 1 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ilu" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
  --expect "host: convergence test called [0-9]+ times, last at iteration [0-9]+, said CONVERGED_RTOL"
  --reject MISMATCH -- ${host} -host_test 2 -x0 1 -dof 2 -solves 2)
heptane_plugin_test(plugin_host_host_convergence_test_stops_at_its_iteration
  ${solves} --reason DIVERGED_ITS --max-error 1e-1 --its host=5:5 --ref-its host=5:5 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -ksp_view"
  --expect "host: convergence test called 6 times, last at iteration 5, said DIVERGED_ITS"
  --reject MISMATCH -- ${host} -host_test 2 -host_test_stop 5 -solves 2)
# mixed precision refined against the fp64 matrix: the test sees the iterations numbered across
# the corrections, and its verdict ends the refinement
heptane_plugin_test(plugin_host_host_convergence_test_mixed_refined
  ${solves} ${host_checks} --max-its-ratio 1.5 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_precision mixed -heptane_refine 1 -ksp_view"
  --expect "refined against the fp64 matrix" --expect "host: convergence test called [0-9]+ times, last at iteration [0-9]+, said CONVERGED_RTOL"
  --reject MISMATCH -- ${host} -host_test 2 -solves 2)
# PETSc's default test as its options set it, from a nonzero initial guess: rtol times ||b - A x0||
# (-ksp_converged_use_initial_residual_norm) or the smaller of it and ||b||, the same
# iterations as PETSc's bcgs (one more than with ||b|| here); -ksp_converged_maxits: max_it
# iterations are KSP_CONVERGED_ITS (before 2026-12-03 all three were ignored)
foreach(v "initial_residual_norm;-ksp_converged_use_initial_residual_norm" "min_initial_residual_norm;-ksp_converged_use_min_initial_residual_norm")
  list(GET v 0 tag)
  list(GET v 1 opt)
  heptane_plugin_test(plugin_host_converged_use_${tag}_as_petsc
    ${solves} ${host_checks} --its-diff 0 --solves 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} ${opt}" --heptane "-ksp_type hbcgs ${opt} -ksp_view"
    --expect "stopping on the unpreconditioned .*\\(${opt}\\)" --reject MISMATCH -- ${host} -x0 1 -solves 2)
endforeach()
heptane_plugin_test(plugin_host_converged_maxits_as_petsc
  ${solves} --reason CONVERGED_ITS --max-error 1e-4 --its host=3:3 --ref-its host=3:3 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -ksp_converged_maxits -ksp_max_it 3" --heptane "-ksp_type hbcgs -ksp_converged_maxits -ksp_max_it 3"
  -- ${host} -x0 1 -solves 2)
# KSPSetReusePreconditioner (-ksp_reuse_preconditioner; SNES sets it on the steps
# -snes_lag_preconditioner skips): new values refresh the operator only, the preconditioner is
# kept (before 2026-12-03 heptane refreshed it anyway); PETSc's bcgs with its ILU(0) reused takes the
# same iterations; on two ranks the AMG over the ranks is kept too (PETSc 3.25's GAMG reused takes
# 45 iterations at the third solve there, 3.18's 6)
heptane_plugin_test(plugin_host_reuse_preconditioner_keeps_ilu
  ${solves} ${host_checks} --its-diff 1 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ilu -ksp_reuse_preconditioner" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_reuse_preconditioner -ksp_view"
  --expect "heptane preconditioner reused: 2 values-only setups kept it as it was"
  --expect "preconditioner reused as it was \\(KSPSetReusePreconditioner\\)" --reject MISMATCH -- ${host} -dof 2 -solves 3)
# A singular system with its null space declared (MatSetNullSpace, the constants: a pure-Neumann
# pressure): PETSc removes the transpose null space from b, heptane the null space from the
# solution's correction after the solve (x = x0 + P (x - x0), PETSc's answer: x_exact, or
# x_exact + 1 with the initial guess 0.9 x_exact + 1), and hamg solves its coarsest level by a
# generalized inverse (without it: CG stopped with an indefinite preconditioner, and x carried
# an arbitrary constant); hcg + hamg, hgmres + hamg and hbcgs + ilu against PETSc's cg + gamg
foreach(v "hcg;hamg;0" "hgmres;hamg;1" "hbcgs;ilu;1")
  list(GET v 0 ksp)
  list(GET v 1 pc)
  list(GET v 2 x0)
  heptane_plugin_test(plugin_host_neumann_null_space_${ksp}_${pc}_x0_${x0}
    ${solves} ${host_checks} --its host=3:60 --ref-its host=3:30 --solves 2 --
    --plugin ${plugin_so} --ref "-ksp_type cg -pc_type gamg" --heptane "-ksp_type ${ksp} -pc_type ${pc} -ksp_view"
    --expect "heptane null space: Amat's \\(MatSetNullSpace, 1 vector\\) removed from the solution's correction"
    --reject MISMATCH -- ${host} -neumann 1 -convection 0 -solves 2 -x0 ${x0})
endforeach()
# PETSc's own matrix-free differencing (MATMFFD, what -snes_mf_operator makes) as Amat: products
# exact to ~1e-8 relative, so the answers are A's to ~1e-7 (the host's MISMATCH line, for PETSc's
# gmres too, compares with A's exact product); the same iterations as PETSc's gmres
heptane_plugin_test(plugin_host_mffd_amat_hgmres_ilu_matches_gmres
  ${solves} --max-error 1e-6 --its-diff 1 --solves 3 --
  --plugin ${plugin_so} --ref "-ksp_type gmres -ksp_pc_side right -pc_type ilu" --heptane "-ksp_type hgmres -pc_type ilu -ksp_view"
  --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type mffd\\), which is not its Pmat \\(type seqaij\\)"
  -- ${host} -dof 2 -solves 3 -mffd_amat 1)
heptane_plugin_test(plugin_host_pmat_differs_hbcgs_ilu_from_pmat
  ${solves} ${host_checks} --its-diff 1 --its host=14:20 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ilu" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
  --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type seqaij\\), which is not its Pmat"
  --expect "heptane setups: 2 full \\(new pattern\\), 1 values-only"
  --reject MISMATCH -- ${host} -solves 3 -pmat_shift 10 -new_pattern_at 3)
heptane_plugin_test(plugin_host_hcg_shell_amat_symmetry_from_pmat
  ${solves} ${host_checks} --its-diff 1 --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
  --expect "every entry equals its transpose to 1e-08 \\(relative\\) \\(Pmat's entries, standing for the KSP's Amat of type shell"
  --reject MISMATCH -- ${host} -convection 0 -solves 2 -shell_amat 1 -pmat_shift 10)
# a DMDA's matrix with an entry off its star stencil (a well's long-range coupling): detected
# as a matrix without a grid, instead of stopping
heptane_plugin_test(plugin_host_dmda_entry_off_the_stencil_is_detected
  ${solves} ${host_checks} --its-diff 1 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ilu" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
  --expect "star stencil does not hold the pattern \\(entry \\(0, 3454\\) lies on block offset 1727\\), so the structure was detected: detected: Nc=2 D=8"
  --reject MISMATCH -- ${host} -dof 2 -solves 3 -new_pattern_at 2)
# the same with BAIJ (bs = 1: its blocks go straight into the slots of the DMDA's stencil, one
# rank) -- the new pattern's entry off the stencil was an error there
heptane_plugin_test(plugin_host_dmda_entry_off_the_stencil_is_detected_baij
  ${solves} ${host_checks} --its-diff 1 --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ilu -dm_mat_type baij" --heptane "-ksp_type hbcgs -pc_type ilu -dm_mat_type baij -ksp_view"
  --expect "star stencil does not hold the pattern \\(entry \\(0, 1727\\) lies on block offset 1727\\), so the structure was detected: detected: Nc=1 D=8"
  --reject MISMATCH -- ${host} -solves 3 -new_pattern_at 2)
# -ksp_monitor_true_residual and a host's own monitor build the iterate (KSPBuildSolution,
# KSPBuildResidual): inside a monitor heptane gives x_i, the iterate of that iteration (the fused
# loops read each iteration before queueing the next; GMRES forms x0 + Z y_i aside, across its
# restarts), so ||b - A x_i|| is the KSP's norm as with PETSc's KSPs -- plugin_host's
# -true_residual_monitor prints MISMATCH otherwise (before 2026-12-03 the monitor saw the initial
# guess, with a warning; before that PETSc's default applied the held PC and stopped)
foreach(v "hbcgs_jacobi;-ksp_type hbcgs -pc_type jacobi;${ref_bcgs} -pc_type jacobi;-dof 2"
          "hcg_jacobi;-ksp_type hcg -pc_type jacobi;-ksp_type cg -pc_type jacobi;-convection 0"
          "hgmres_ilu_restart_4;-ksp_type hgmres -pc_type ilu -ksp_gmres_restart 4;-ksp_type gmres -ksp_pc_side right -pc_type ilu -ksp_gmres_restart 4;-dof 2")
  list(GET v 0 tag)
  list(GET v 1 hep)
  list(GET v 2 ref)
  list(GET v 3 sys)
  separate_arguments(sys)
  heptane_plugin_test(plugin_host_monitor_true_residual_sees_each_iterate_${tag}
    ${solves} ${host_checks} --its-diff 2 --solves 2 --
    --plugin ${plugin_so} --ref "${ref} -ksp_monitor_true_residual" --heptane "${hep} -ksp_monitor_true_residual"
    --expect "3 KSP unpreconditioned resid norm [0-9.e+-]+ true resid norm" --expect "host: true-residual monitor checked [0-9]+ iterates"
    --reject "WARNING \\(heptane\\): a monitor asked" --reject MISMATCH -- ${host} ${sys} -solves 2 -x0 1 -true_residual_monitor 1)
endforeach()
# the preconditioner folded into the operator (-heptane_fold, the default for (pb)jacobi from a zero
# guess): BiCGStab's iterate is y of A M^-1 y = b, the monitor gets x_i = M^-1 y_i
heptane_plugin_test(plugin_host_monitor_true_residual_sees_each_iterate_hbcgs_pbjacobi_folded
  ${solves} ${host_checks} --its-diff 2 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -ksp_monitor_true_residual -ksp_view"
  --expect "preconditioner folded into the operator" --expect "host: true-residual monitor checked [0-9]+ iterates"
  --reject "WARNING \\(heptane\\): a monitor asked" --reject MISMATCH -- ${host} -dof 3 -solves 2 -true_residual_monitor 1)
# mixed precision refined: the inner iterate is a correction d_i, the monitor gets x + d_i, whose
# fp64 residual is the inner recursion's up to the rounding of the fp32 matrix values (1e-8 ||b||)
heptane_plugin_test(plugin_host_monitor_true_residual_mixed_refined_sees_x_plus_correction
  ${solves} ${host_checks} --max-its-ratio 1.5 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs}" --heptane "-ksp_type hbcgs -heptane_precision mixed -heptane_refine 1 -ksp_monitor_true_residual"
  --expect "1 KSP unpreconditioned resid norm [0-9.e+-]+ true resid norm" --expect "host: true-residual monitor checked [0-9]+ iterates"
  --reject "WARNING \\(heptane\\): a monitor asked" --reject MISMATCH -- ${host} -dof 2 -solves 2 -x0 1 -true_residual_monitor 1 -true_residual_monitor_btol 1e-8)
heptane_plugin_test(plugin_host_sbaij_hcg_matches_cg
  ${solves} ${host_checks} --its-diff 2 --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
  --expect "PETSc matrix seqsbaij" --expect "heptane matrix input: SBAIJ converted to AIJ once per pattern"
  --expect "the matrix is marked symmetric" --reject MISMATCH -- ${host} -use_dm 0 -mat_type sbaij -convection 0 -solves 2)
# an SBAIJ entry added in preallocated room (PETSc 3.18's SeqSBAIJ keeps its nonzero state:
# before, the AIJ copy was converted with MAT_REUSE_MATRIX and the refresh stopped)
heptane_plugin_test(plugin_host_sbaij_entry_added_in_preallocated_room
  ${solves} ${host_checks} --its-diff 2 --solves 3 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
  --expect "heptane setups: 2 full \\(new pattern\\), 1 values-only"
  --reject MISMATCH -- ${host} -use_dm 0 -mat_type sbaij -convection 0 -solves 3 -new_pattern_at 2)
heptane_plugin_test(plugin_host_bdiagh_mat_type
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -dm_mat_type aij" --heptane "-ksp_type hbcgs -ksp_view -dm_mat_type bdiagh -mat_view ::ascii_info"
  --expect "PETSc matrix bdiagh" --expect "BDIA-GH copy: bdiagh 5184x5184 Nc=3 D=7"
  --expect "heptane setups: 1 full \\(new pattern\\), 1 values-only"
  --reject MISMATCH -- ${host} -dof 3 -solves 2)
heptane_plugin_test(plugin_host_bdiagh_with_petsc_bcgs
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -dm_mat_type aij" --heptane "${ref_bcgs} -dm_mat_type bdiagh"
  --expect "ksp=bcgs" -- ${host} -dof 2 -solves 2)
heptane_plugin_test(plugin_host_new_pattern_is_detected_again
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view -info"
  --expect "heptane setups: 2 full \\(new pattern\\), 1 values-only" --expect "detected: Nc=2"
  --reject MISMATCH -- ${host} -use_dm 0 -dof 2 -solves 3 -new_pattern_at 3)
heptane_plugin_test(plugin_host_grid_from_options
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view -heptane_grid 12,12,12 -heptane_block 2"
  --expect "grid 12x12x12 Nc=2 from -heptane_grid/-heptane_block"
  -- ${host} -use_dm 0 -dof 2 -mat_type baij)
# -heptane_device auto weighs the devices for the matrix (solver/solve.hpp's model): a system
# of 12k entries runs on the CPU with or without a GPU, and -ksp_view says so and why
heptane_plugin_test(plugin_host_device_auto_keeps_a_small_system_on_the_cpu
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view -heptane_device auto"
  --expect "heptane device: auto: the CPU \\((no CUDA device visible|[0-9]+ stored entries < [0-9]+, where a GPU.s setup would outweigh its faster iterations. [0-9]+ host threads?)\\)"
  --expect "heptane operator: .* on cpu" --reject MISMATCH -- ${host})
foreach(pc none jacobi pbjacobi ilu)
  heptane_plugin_test(plugin_host_pc_${pc}
    ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ${pc}" --heptane "-ksp_type hbcgs -pc_type ${pc} -ksp_view"
    --expect "from -pc_type ${pc}" --reject MISMATCH -- ${host} -dof 2)
endforeach()
# Jacobi and block Jacobi folded into the operator (BiCGStab on A M^-1, x = M^-1 y): the same
# answers as PETSc, made again after each values-only setup (on the CPU the preconditioner's
# numeric part then reads the operator's BDIA-GH diagonal blocks, refreshed from the same AIJ
# values just before); -heptane_fold 0, a nonzero initial guess and CG keep the preconditioner
# apart
foreach(pc jacobi pbjacobi)
  heptane_plugin_test(plugin_host_${pc}_folded_into_the_operator
    ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ${pc}" --heptane "-ksp_type hbcgs -pc_type ${pc} -ksp_view"
    --expect "preconditioner folded into the operator \\(-heptane_fold\\): BiCGStab on A M\\^-1 \\(made at KSPSetUp for this solve"
    --expect "heptane setups: 1 full \\(new pattern\\), 2 values-only"
    --expect "heptane preconditioner, last setup: numeric part on the host, from the diagonal blocks of the operator's BDIA-GH values"
    --reject MISMATCH -- ${host} -dof 3 -solves 3)
endforeach()
heptane_plugin_test(plugin_host_fold_off_keeps_the_preconditioner_apart
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_fold 0 -ksp_view"
  "--expect=-heptane_fold FALSE" --reject "folded into the operator" --reject MISMATCH -- ${host} -dof 3 -solves 2)
heptane_plugin_test(plugin_host_initial_guess_nonzero_is_not_folded
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi -ksp_initial_guess_nonzero" --heptane "-ksp_type hbcgs -pc_type pbjacobi -ksp_initial_guess_nonzero -ksp_view"
  --reject "folded into the operator" --reject MISMATCH -- ${host} -dof 2 -x0 1)
foreach(fmt csr ell hyb dia bsr coo)
  heptane_plugin_test(plugin_host_format_${fmt}
    ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -heptane_format ${fmt} -ksp_view"
    --expect "heptane operator: ${fmt} " --reject MISMATCH -- ${host} -dof 2 -solves 2)
endforeach()
heptane_plugin_test(plugin_host_ilu_multicolor
  ${solves} ${host_checks} --its host=8:20 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -heptane_ilu multicolor -ksp_view"
  --expect "heptane preconditioner: ilu0-mc Nc=3"
  --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 1 values-only"
  --reject MISMATCH -- ${host} -dof 3 -solves 2)
# mixed precision is refined against an fp64 copy of the matrix: PETSc's answer at its rtol;
# -heptane_refine 0 stops on the fp32 matrix's residual
heptane_plugin_test(plugin_host_mixed_precision
  ${solves} --max-error 1e-4 --its-diff 3 --
  --plugin ${plugin_so} --tol 1e-5 --ref "${ref_bcgs} -ksp_rtol 1e-6" --heptane "-ksp_type hbcgs -heptane_precision mixed -ksp_rtol 1e-6 -ksp_view"
  --expect "fp32 values/fp64 vectors" --expect "refined against the fp64 matrix \\(-heptane_refine\\), corrections: [1-9]"
  -- ${host} -dof 2)
heptane_plugin_test(plugin_host_mixed_precision_unrefined
  ${solves} --max-error 1e-3 --
  --plugin ${plugin_so} --tol 1e-4 --ref "${ref_bcgs} -ksp_rtol 1e-6" --heptane "-ksp_type hbcgs -heptane_precision mixed -heptane_refine 0 -ksp_rtol 1e-6 -ksp_view"
  --expect "fp32 values/fp64 vectors" --reject "refined against" -- ${host} -dof 2)
# mixed precision on an operator without an fp64 copy (one rank's ELL/CSR of a numbering that
# is no grid's): refined against PETSc's MatMult, so the true residual meets rtol 1e-9 as in
# double (before 2026-12-05: KSP_DIVERGED_BREAKDOWN)
heptane_plugin_test(plugin_host_mixed_refined_through_petsc_matmult
  ${solves} --max-error 1e-7 --its-diff 3 --solves 2 --
  --plugin ${plugin_so} --tol 1e-6 --ref "${ref_bcgs} -ksp_rtol 1e-9" --heptane "-ksp_type hbcgs -heptane_precision mixed -ksp_rtol 1e-9 -ksp_view"
  --expect "fp32 values/fp64 vectors" --expect "refined against the fp64 matrix \\(-heptane_refine\\), corrections: [1-9]. residuals of the fp64 matrix, from PETSc's MatMult"
  -- ${host} -use_dm 0 -permute 1 -solves 2)
# single precision stops on its fp32 recurrence; the true residual is checked after the solve
# with PETSc's fp64 MatMult: met at a loose rtol (converged, the view gives it), out of reach
# of fp32 values at 1e-9 (KSP_DIVERGED_BREAKDOWN and a warning instead of CONVERGED_RTOL)
heptane_plugin_test(plugin_host_single_precision_true_residual_met
  ${solves} --max-error 1e-3 --
  --plugin ${plugin_so} --tol 1e-4 --ref "${ref_bcgs} -pc_type pbjacobi -ksp_rtol 1e-5" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_precision single -ksp_rtol 1e-5 -ksp_view"
  --expect "true residual \\|\\|b - A x\\|\\| = [0-9.e+-]+ with PETSc's fp64 MatMult" --reject "WARNING" -- ${host} -dof 3)
heptane_plugin_test(plugin_host_single_precision_true_residual_missed_is_not_converged
  ${compare} --tol 1e-4 --ref "${ref_bcgs} -pc_type pbjacobi -ksp_rtol 1e-9" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_precision single -ksp_rtol 1e-9 -ksp_view"
  --expect "reason=DIVERGED_BREAKDOWN" --expect "WARNING \\(heptane\\): KSP hbcgs: -heptane_precision single stopped on the residual of its fp32 recurrence, but the true residual"
  --reject "reason=CONVERGED" -- ${host} -dof 3)
heptane_plugin_test(plugin_host_hcg_matches_cg
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi"
  --expect "ksp=hcg" --reject MISMATCH -- ${host} -convection 0)
heptane_plugin_test(plugin_host_initial_guess_nonzero
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -ksp_initial_guess_nonzero" --heptane "-ksp_type hbcgs -ksp_initial_guess_nonzero"
  --reject MISMATCH -- ${host} -x0 1)

# ---- PETSc binary files: heptane's writer and reader against PETSc's MatLoad/MatView, and a
# system loaded from a file (examples/petsc_solve) solved by options alone -------------------
if(HEPTANE_BUILD_EXAMPLES AND TARGET heptane_cli)
  # a PETSc built with 64-bit indices (--with-64-bit-indices) reads binary files whose integers
  # are 64-bit: heptane gen writes those with --petsc-int64
  get_target_property(petsc_inc PkgConfig::PETSC INTERFACE_INCLUDE_DIRECTORIES)
  find_file(heptane_petscconf petscconf.h PATHS ${petsc_inc} NO_DEFAULT_PATH)
  set(petsc_int_flag "")
  if(heptane_petscconf)
    file(STRINGS "${heptane_petscconf}" petsc_int64_line REGEX "^#define PETSC_USE_64BIT_INDICES 1")
    if(petsc_int64_line)
      set(petsc_int_flag --petsc-int64)
    endif()
  endif()
  add_test(NAME cli_petsc_binary COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_petsc_binary.sh
    $<TARGET_FILE:heptane_cli> $<TARGET_FILE:petsc_solve> ${petsc_int_flag})
  set_tests_properties(cli_petsc_binary PROPERTIES LABELS "plugin;cpu" ENVIRONMENT "${plugin_env}" TIMEOUT 300)
  # the channelized model (contrast 1e7) written by heptane gen, loaded by MatLoad: heptane's CG
  # + AMG against PETSc's CG + GAMG, both to rtol 1e-9 on the true residual, 3 solves each from
  # a new KSP (setup included); GAMG needs 21 iterations here, hamg 20 (at most 1.5x GAMG's,
  # issue #17's bound)
  set(loaded ${CMAKE_CURRENT_BINARY_DIR}/loaded_)
  add_test(NAME plugin_loaded_system_written
    COMMAND $<TARGET_FILE:heptane_cli> gen --grid 24x24x12 --model channelized -o ${loaded}A.petsc
      --rhs ${loaded}b.petsc --quiet ${petsc_int_flag})
  set_tests_properties(plugin_loaded_system_written PROPERTIES LABELS "plugin;cpu" FIXTURES_SETUP loaded_system)
  heptane_plugin_test(plugin_loaded_system_hcg_hamg_matches_gamg
    ${solves} --its loaded=12:28 --ref-its loaded=14:30 --max-its-ratio 1.5 --max-relres 1e-9 --solves 3 --
    --plugin ${plugin_so} --ref "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg"
    --heptane "-ksp_type hcg -pc_type hamg -ksp_view" --expect "loaded: .*loaded_A.petsc: 6912 x 6912"
    --expect "heptane preconditioner: amg \\(smoothed aggregation"
    -- $<TARGET_FILE:petsc_solve> -f ${loaded}A.petsc -rhs ${loaded}b.petsc -ksp_rtol 1e-9 -solves 3)
  set_tests_properties(plugin_loaded_system_hcg_hamg_matches_gamg PROPERTIES FIXTURES_REQUIRED loaded_system)
  # a matrix heptane's preconditioners cannot factor (a stored zero diagonal in row 1; rows 2-6
  # are fine): PETSc's KSPs stop with KSP_DIVERGED_PC_FAILED ("PC failed due to
  # FACTOR_NUMERIC_ZEROPIVOT") and the host goes on (a simulator cuts its step); heptane's KSPs
  # stop the same way, on every rank when only one rank's block is singular (before 2026-12-05:
  # a PETSc error that ended the host)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/zero_pivot.mtx "%%MatrixMarket matrix coordinate real general
6 6 14
1 1 0
1 2 1
2 1 1
2 2 4
2 3 -1
3 2 -1
3 3 4
3 4 -1
4 3 -1
4 4 4
4 5 -1
5 5 4
5 6 -1
6 6 4
")
  add_test(NAME plugin_zero_pivot_written
    COMMAND $<TARGET_FILE:heptane_cli> convert ${CMAKE_CURRENT_BINARY_DIR}/zero_pivot.mtx -o
      ${CMAKE_CURRENT_BINARY_DIR}/zero_pivot.petsc ${petsc_int_flag})
  set_tests_properties(plugin_zero_pivot_written PROPERTIES LABELS "plugin;cpu" FIXTURES_SETUP zero_pivot)
  heptane_zero_pivot_tests(1 "")
endif()

# ---- the reservoir example: same solution to the tolerance, by options alone ---------------
# (examples/ is configured after tests/: the target is known at generation time)
if(HEPTANE_BUILD_EXAMPLES)
  set(reservoir $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 2 -newton 2 -ksp_rtol 1e-9)
  heptane_plugin_test(plugin_reservoir_hbcgs_matches_bcgs
    ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs"
    --expect "pressure: ksp hbcgs" --expect "coupled: ksp hbcgs" -- ${reservoir})
  heptane_plugin_test(plugin_reservoir_through_petsc_options
    ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --via-env --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type ilu"
    --expect "coupled: ksp hbcgs" -- ${reservoir})
  heptane_plugin_test(plugin_reservoir_bdiagh_matrices
    ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -dm_mat_type bdiagh"
    --expect "coupled: ksp hbcgs" -- ${reservoir})
  heptane_plugin_test(plugin_reservoir_hcg_pressure
    ${solves} --max-relres 1e-8 --max-its-ratio 1.2 --
    --plugin ${plugin_so} --ref "-ksp_type cg" --heptane "-ksp_type hcg"
    --expect "pressure: ksp hcg" -- ${reservoir} -system pressure)
endif()

# ---- multigrid: -pc_type hamg / hcpr, -ksp_type hgmres ---------------------------------------
# tests/plugin_solves.py runs plugin_compare.py (the same comparison of the printed numbers) and
# checks every solve either run reports: the converged reason, the error against the known
# solution (plugin_host: rel_error) or the true relative residual (reservoir), and for the heptane
# run the iterations against a band (--its), or against the reference run's (--max-its-ratio,
# --its-diff). Bands measured on the CPU at these sizes (2026-11-25), with room for rounding.
if(HEPTANE_BUILD_EXAMPLES)
  set(res_p $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 3 -ksp_rtol 1e-9 -system pressure)
  set(res_c $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 2 -newton 3 -ksp_rtol 1e-9 -system coupled)
  set(amg_view "heptane preconditioner: amg \\(smoothed aggregation, [2-9] levels")
  # (a) heptane's BiCGStab with its AMG on the pressure system: 7 iterations a solve (PETSc's bcgs
  # with GAMG: 9-10), PETSc's solution to the tolerance; the hierarchy in -ksp_view; the finest
  # level's products through heptane's own operator (BDIA-GH); Newton steps refresh values only
  heptane_plugin_test(plugin_reservoir_hamg_matches_gamg
    ${solves} --its pressure=4:12 --ref-its pressure=5:16 --max-relres 1e-8 --solves 3 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hbcgs -pc_type hamg -ksp_view"
    --expect "${amg_view}.*from -pc_type hamg" --expect "finest level through the solver's operator"
    --expect "heptane AMG hierarchy:\\n +level +rows +nnz +nnz/row +lambda_max\\n +0 +1536 +9920"
    --expect "heptane AMG options: -heptane_amg_threshold 0.02 -heptane_amg_smoother auto -heptane_amg_sweeps 2 -heptane_amg_cycle v"
    --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 2 values-only"
    --reject DIVERGED -- ${res_p})
  # ... and far fewer iterations than Jacobi (93-98 a solve): at most a fifth, solve by solve
  heptane_plugin_test(plugin_reservoir_hamg_far_fewer_iterations_than_jacobi
    ${solves} --its pressure=4:12 --ref-its pressure=60:140 --max-its-ratio 0.2 --max-relres 1e-8 --solves 3 --
    --plugin ${plugin_so} --ref "${hep1} -ksp_type hbcgs -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type hamg" -- ${res_p})
  # (b) PETSc's CG with heptane's AMG as an ordinary PC (PCSetUp/PCApply; 11-12 iterations, GAMG
  # 15-16), values-only setups on the Newton steps, the view of the PC
  heptane_plugin_test(plugin_reservoir_petsc_cg_with_hamg_pc
    ${solves} --its pressure=6:18 --ref-its pressure=8:24 --max-relres 1e-8 --solves 3 --
    --plugin ${plugin_so} --ref "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg"
    --heptane "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type hamg -ksp_view"
    --expect "type: hamg" --expect "${amg_view}" --expect "heptane AMG hierarchy:" --expect "heptane block size Nc=1 from the DMDA's dof, PETSc matrix seqaij"
    --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 2 values-only \\(numeric only, hierarchy kept\\)"
    --expect "heptane applications: [0-9]+, [0-9.]+ ms in all. 0 on PETSc's CUDA vectors where they are \\(their device arrays, no host copy\\), [1-9][0-9]* through the host arrays"
    --reject "finest level through" -- ${res_p})
  # heptane's CG with its AMG (Chebyshev smoothing: a symmetric cycle)
  heptane_plugin_test(plugin_reservoir_hcg_hamg_matches_cg
    ${solves} --its pressure=6:18 --max-relres 1e-8 --solves 3 --
    --plugin ${plugin_so} --ref "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg" --heptane "-ksp_type hcg -pc_type hamg"
    --expect "pressure: ksp hcg" -- ${res_p})
  # (c) CPR on the coupled (Nc = 3) system: 9-10 iterations (BILU(0): 18-22, block Jacobi 58-70)
  heptane_plugin_test(plugin_reservoir_hcpr_coupled
    ${solves} --its coupled=5:15 --ref-its coupled=14:30 --max-relres 1e-8 --solves 6 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type hcpr -ksp_view"
    --expect "heptane preconditioner: cpr \\(quasi-IMPES, pressure unknown 0[^)]*pressure: amg \\(smoothed aggregation.*second stage: (ilu0|ilu0-mc|bjacobi) Nc=3"
    --expect "heptane CPR options: .* -heptane_cpr_pressure_index 0 -heptane_cpr_second auto"
    --expect "coupled: ksp hbcgs" -- ${res_c})
  # ... as an ordinary PC under PETSc's FGMRES, on bdiagh matrices (15-16 iterations)
  heptane_plugin_test(plugin_reservoir_petsc_fgmres_with_hcpr_pc
    ${solves} --its coupled=9:24 --max-relres 1e-8 --solves 6 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type fgmres -pc_type hcpr -dm_mat_type bdiagh -ksp_view"
    --expect "type: hcpr" --expect "heptane block size Nc=3 from the DMDA's dof, PETSc matrix bdiagh"
    --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 5 values-only" -- ${res_c})
  # (d) the values-only refresh over a run of Newton steps (3 steps x 3): one full setup, then
  # only the numeric part (AMG's aggregates, P and R kept), every solve in the band
  heptane_plugin_test(plugin_reservoir_hcpr_newton_values_only
    ${solves} --its coupled=5:15 --max-relres 1e-8 --solves 9 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type hcpr -ksp_view"
    --expect "heptane setups: 1 full \\(new pattern\\), 8 values-only"
    --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 8 values-only"
    --expect "preconditioner refactored \\(numeric only, symbolic setup kept\\)"
    --expect "AMG keeps its aggregates, P and R" -- ${res_c} -steps 3)
  # ... and with the bdiagh matrix's own BDIA-GH copy as AMG's finest level (refreshed at assembly)
  heptane_plugin_test(plugin_reservoir_hamg_bdiagh_newton_values_only
    ${solves} --its pressure=4:12 --max-relres 1e-8 --solves 5 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hbcgs -pc_type hamg -dm_mat_type bdiagh -ksp_view"
    --expect "PETSc matrix bdiagh" --expect "finest level through the solver's operator"
    --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 4 values-only" -- ${res_p} -steps 5)
  # hgmres: heptane's flexible GMRES(30) is PETSc's FGMRES: the same iterations (BILU(0): 26-30;
  # CPR: 15-16) and solution
  heptane_plugin_test(plugin_reservoir_hgmres_matches_fgmres
    ${solves} --its coupled=18:40 --its-diff 1 --max-relres 1e-8 --solves 6 --
    --plugin ${plugin_so} --ref "-ksp_type fgmres" --heptane "-ksp_type hgmres -heptane_ilu natural -ksp_view"
    --expect "heptane GMRES\\(30\\) \\(flexible, restarted" --expect "coupled: ksp hgmres" -- ${res_c})
  heptane_plugin_test(plugin_reservoir_hgmres_hcpr_matches_fgmres_hcpr
    ${solves} --its coupled=9:24 --its-diff 1 --max-relres 1e-8 --solves 6 --
    --plugin ${plugin_so} --ref "${hep1} -ksp_type fgmres -pc_type hcpr" --heptane "-ksp_type hgmres -pc_type hcpr"
    --expect "coupled: ksp hgmres" -- ${res_c})
endif()
# PETSc's GMRES with heptane's AMG on BAIJ matrices (converted to AIJ once per pattern, values
# after), Nc = 2 from the DMDA
heptane_plugin_test(plugin_host_petsc_gmres_with_hamg_pc_baij
  ${solves} --its host=6:20 ${host_checks} --solves 3 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -dm_mat_type baij" --heptane "-ksp_type gmres -pc_type hamg -dm_mat_type baij -ksp_view"
  --expect "heptane block size Nc=2 from the DMDA's dof, PETSc matrix seqbaij"
  --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 2 values-only" --reject MISMATCH -- ${host} -dof 2 -solves 3)
# ... and on SBAIJ (its upper triangle through an AIJ copy), under PETSc's CG
heptane_plugin_test(plugin_host_petsc_cg_with_hamg_pc_sbaij
  ${solves} --its host=5:20 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type cg -pc_type hamg -ksp_view"
  --expect "PETSc matrix seqsbaij" --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 1 values-only"
  --reject MISMATCH -- ${host} -use_dm 0 -mat_type sbaij -convection 0 -solves 2)
# any other assembled type (here SELL and dense; since 2026-12-05, before refused): an AIJ copy
# once per pattern, MAT_REUSE_MATRIX at each values-only step, under heptane's KSP and PC
heptane_plugin_test(plugin_host_sell_through_an_aij_copy
  ${solves} ${host_checks} --its-diff 1 --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -ksp_view"
  --expect "PETSc matrix seqsell" --expect "heptane matrix input: converted to AIJ once per pattern \\(MatConvert\\)"
  --expect "heptane setups: 1 full \\(new pattern\\), 1 values-only" --reject MISMATCH -- ${host} -use_dm 0 -mat_type sell -dof 2 -solves 2)
heptane_plugin_test(plugin_host_petsc_cg_with_hamg_pc_dense
  ${solves} --its host=3:20 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type cg -pc_type hamg -ksp_view"
  --expect "PETSc matrix seqdense" --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 1 values-only"
  --reject MISMATCH -- ${host} -use_dm 0 -n 8 -mat_type dense -convection 0 -solves 2)
# a new pattern in the Newton loop: the PC is set up again from scratch
heptane_plugin_test(plugin_host_petsc_cg_hamg_pc_new_pattern
  ${solves} --its host=5:20 ${host_checks} --solves 3 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type cg -pc_type hamg -ksp_view"
  --expect "heptane preconditioner setups: 2 full \\(new pattern\\), 1 values-only" --reject MISMATCH
  -- ${host} -use_dm 0 -convection 0 -solves 3 -new_pattern_at 3)
# every -heptane_amg_ option reaches the hierarchy and the cycle
heptane_plugin_test(plugin_host_hcg_hamg_options
  ${solves} --its host=4:16 ${host_checks} --solves 1 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi"
  --heptane "-ksp_type hcg -pc_type hamg -heptane_amg_smoother l1jacobi -heptane_amg_sweeps 3 -heptane_amg_cycle w -heptane_amg_coarse_size 50 -heptane_amg_threshold 0.02 -heptane_amg_max_levels 3 -ksp_view"
  --expect "amg \\(smoothed aggregation, 3 levels, rows 4096/[0-9]+/[0-9]+, .*l1jacobi\\(3,3\\), W-cycle, theta 0.02"
  --reject MISMATCH -- ${host} -convection 0 -n 16)
# box aggregation on the DMDA's 16^3 grid (the operator's grid, no detection): plain, every
# level a 7-point box grid, down to 64 rows
heptane_plugin_test(plugin_host_hcg_hamg_box
  ${solves} --its host=4:24 ${host_checks} --solves 1 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi"
  --heptane "-ksp_type hcg -pc_type hamg -heptane_amg_aggregation box -heptane_amg_p_weight 0 -ksp_view"
  --expect "amg \\(plain aggregation, 3 levels, rows 4096/512/64, .*aggregates box, grids 16x16x16/8x8x8/4x4x4"
  --expect "heptane AMG options: .*aggregation box -heptane_amg_box_ratio 0.25 -heptane_amg_p_weight 0"
  --reject MISMATCH -- ${host} -convection 0 -n 16)
heptane_plugin_test(plugin_host_hgmres_restart
  ${solves} --its host=8:30 --its-diff 1 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type fgmres -ksp_gmres_restart 5 -pc_type ilu" --heptane "-ksp_type hgmres -ksp_gmres_restart 5 -pc_type ilu -heptane_ilu natural -ksp_view"
  --expect "heptane GMRES\\(5\\)" --reject MISMATCH -- ${host} -dof 2 -solves 2)
# CPR's options: another pressure unknown, block Jacobi as the second stage (22 iterations;
# BILU(0): 8)
heptane_plugin_test(plugin_host_hcpr_hbcgs
  ${solves} --its host=12:32 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type hcpr -heptane_cpr_second bjacobi -heptane_cpr_pressure_index 1 -ksp_view"
  --expect "pressure unknown 1. .*second stage: bjacobi Nc=3" --reject MISMATCH -- ${host} -dof 3 -solves 2)
# (e) -help lists the multigrid options, for heptane's KSPs and for the PC types (PETSc 3.18 prints
# "-opt <now v : formerly v>", "-opt <0.02 : 0.02>" for reals and "-opt: <TRUE : TRUE>" for bools;
# 3.25 "-opt: <now v : formerly v>" for all)
heptane_plugin_test(plugin_host_help_lists_amg_options
  ${solves} --its host=3:16 ${host_checks} --
  --plugin ${plugin_so} --heptane "-ksp_type hbcgs -pc_type hamg -help"
  "--expect=KSP hbcgs options" "--expect=-heptane_amg_threshold:? <(now )?0.02" "--expect=-heptane_amg_smoother:? <now auto : formerly auto> AMG smoother[^\\n]*choose one of. chebyshev jacobi l1jacobi ilu0mc auto"
  "--expect=-heptane_amg_sweeps:? <now 2" "--expect=-heptane_amg_cycle:? <now v" "--expect=-heptane_amg_coarse_size:? <now 300" "--expect=-heptane_amg_max_levels:? <now 20"
  "--expect=-heptane_amg_setup:? <now auto : formerly auto> AMG: where the hierarchy is built"
  "--expect=-heptane_amg_lambda_its:? <now 0"
  "--expect=-heptane_cpr_pressure_index:? <now 0" "--expect=-heptane_cpr_second:? <now auto" -- ${host})
heptane_plugin_test(plugin_host_help_lists_pc_options
  ${solves} --its host=3:24 ${host_checks} --
  --plugin ${plugin_so} --heptane "-ksp_type gmres -pc_type hcpr -heptane_device cpu -help"
  "--expect=PC hcpr options \\(heptane CPR\\)" "--expect=-heptane_amg_smoother:? <now auto" "--expect=-heptane_cpr_second:? <now auto" "--expect=-heptane_block:? <now 0"
  "--expect=-heptane_device:? <now cpu" -- ${host} -dof 3)
heptane_plugin_test(plugin_host_hgmres_help
  ${solves} --its host=3:24 ${host_checks} --
  --plugin ${plugin_so} --heptane "-ksp_type hgmres -help" "--expect=KSP hgmres options \\(heptane GMRES\\)" "--expect=-ksp_gmres_restart:? <now 30" -- ${host})
heptane_plugin_test(plugin_host_hcpr_pressure_index_is_an_error
  ${compare} --heptane "-ksp_type hbcgs -pc_type hcpr -heptane_cpr_pressure_index 5"
  --expect-error "CPR: pressure index 5 is not an unknown of a cell \\(Nc = 3\\)" -- ${host} -dof 3)

# ---- PETSc's KSP machinery: monitor, reason, view, -help, errors ---------------------------
heptane_plugin_test(plugin_host_monitor_and_reason
  ${solves} ${host_checks} --
    --plugin ${plugin_so} --heptane "-ksp_type hbcgs -ksp_monitor -ksp_converged_reason"
  --expect "  0 KSP Residual norm" --expect "Linear solve converged due to CONVERGED_RTOL iterations"
  -- ${host})
heptane_plugin_test(plugin_host_help_lists_options
  ${solves} ${host_checks} --
    --plugin ${plugin_so} --heptane "-ksp_type hbcgs -help"
  "--expect=KSP hbcgs options" "--expect=-heptane_format:? <now auto : formerly auto>.*choose one of. auto coo csr ell hyb dia bsr bdiagh"
  "--expect=-heptane_device:? <now auto" "--expect=-heptane_precision:? <now double" "--expect=-heptane_check_every:? <now 0" "--expect=-heptane_ilu:? <now auto"
  "--expect=-heptane_grid" "--expect=-heptane_block" "--expect=-heptane_prewarm: <(now )?TRUE" -- ${host})
heptane_plugin_test(plugin_host_error_if_not_converged
  ${compare} --heptane "-ksp_type hbcgs -ksp_max_it 2 -ksp_error_if_not_converged"
  --expect-error "KSPSolve(\\(\\))? has not converged, reason DIVERGED_ITS" -- ${host})
# ---- PC types heptane does not have: PETSc's own PC, set up by PCSetUp and applied through
# PCApply inside heptane's loop; every solve against the known solution, and the iterations
# against PETSc's own bcgs with the same PC (right-preconditioned: the same method)
foreach(pc lu sor asm)
  heptane_plugin_test(plugin_host_petsc_pc_${pc}_through_pcapply
    ${solves} --its-diff 1 ${host_checks} --solves 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ${pc}" --heptane "-ksp_type hbcgs -pc_type ${pc} -ksp_view"
    --expect "heptane preconditioner: PETSc's own PC ${pc}, applied through PCApply at every iteration \\(heptane has no PC type ${pc}\\)"
    --expect "type: ${pc}" --reject "applied by heptane inside the KSP" --reject MISMATCH -- ${host} -dof 2 -solves 2)
endforeach()
heptane_plugin_test(plugin_host_ilu_levels_through_pcapply
  ${solves} --its-diff 1 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_factor_levels 1" --heptane "-ksp_type hbcgs -pc_factor_levels 1 -ksp_view"
  --expect "PETSc's own PC ilu, applied through PCApply at every iteration \\(-pc_factor_levels 1 \\(heptane has ILU\\(0\\)\\)\\)"
  --expect "1 level of fill|levels of fill: 1" --reject MISMATCH -- ${host} -dof 2 -solves 2)
heptane_plugin_test(plugin_host_hgmres_petsc_pc_asm
  ${solves} --its-diff 1 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type fgmres -pc_type asm" --heptane "-ksp_type hgmres -pc_type asm"
  --reject MISMATCH -- ${host} -dof 3 -solves 2)
# -heptane_petsc_pc: PETSc's own ILU(0) through PCApply is heptane's ILU(0): the same iterations
heptane_plugin_test(plugin_host_heptane_petsc_pc_forced
  ${solves} --its-diff 1 ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "${hep1} -ksp_type hbcgs -pc_type ilu" --heptane "-ksp_type hbcgs -pc_type ilu -heptane_petsc_pc -ksp_view"
  --expect "PETSc's own PC ilu, applied through PCApply at every iteration \\(-heptane_petsc_pc\\)" -- ${host} -dof 2 -solves 2)
# a PC heptane applies keeps its type in PCGetType and -ksp_view, its own setup not run
heptane_plugin_test(plugin_host_held_pc_keeps_its_type
  ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
  --expect "heptane preconditioner: ilu0 Nc=2.*from -pc_type ilu. applied by heptane inside its loop"
  --expect "PC Object: 1 MPI process(es)?\\n +type: ilu\\n +applied by heptane inside the KSP"
  --reject MISMATCH -- ${host} -dof 2)
# options heptane's ILU(0) cannot honour are named in a warning, not dropped
heptane_plugin_test(plugin_host_ilu_shift_is_warned
  ${solves} ${host_checks} --
    --plugin ${plugin_so} --heptane "-ksp_type hbcgs -pc_factor_shift_type inblocks"
  --expect "WARNING \\(heptane\\): KSP hbcgs: the ILU zero-pivot shift INBLOCKS \\(-pc_factor_shift_type\\) is not applied by heptane's ILU\\(0\\)"
  -- ${host} -dof 2)
heptane_plugin_test(plugin_host_ilu_zeropivot_is_warned
  ${solves} ${host_checks} --
    --plugin ${plugin_so} --heptane "-ksp_type hbcgs -pc_factor_zeropivot 1e-8"
  --expect "WARNING \\(heptane\\): KSP hbcgs: -pc_factor_zeropivot 1e-08 is not applied by heptane's ILU\\(0\\), whose pivot test is relative"
  -- ${host} -dof 2)
# ---- hcg on a matrix that is not symmetric: stopped before iterating, with a warning that
# points to hbcgs; a symmetric one passes the check
heptane_plugin_test(plugin_host_hcg_nonsymmetric_stops
  ${solves} --reason DIVERGED_INDEFINITE_MAT --its host=0:0 --solves 2 --
  --plugin ${plugin_so} --heptane "-ksp_type hcg -ksp_view"
  --expect "WARNING \\(heptane\\): KSP hcg: the matrix is not symmetric \\(NOT symmetric: a\\([0-9]+, [0-9]+\\) = .*CG needs a symmetric positive definite matrix.*Use -ksp_type hbcgs"
  --expect "heptane symmetry check \\(-heptane_check_symmetry TRUE\\): NOT symmetric" -- ${host} -solves 2)
heptane_plugin_test(plugin_host_hcg_symmetric_passes_the_check
  ${solves} ${host_checks} --solves 2 --
  --plugin ${plugin_so} --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
  --expect "heptane symmetry check \\(-heptane_check_symmetry TRUE\\): every entry equals its transpose"
  --reject WARNING -- ${host} -convection 0 -solves 2)
heptane_plugin_test(plugin_host_hcg_symmetry_check_off
  ${solves} --reason ".*" --solves 1 --
  --plugin ${plugin_so} --heptane "-ksp_type hcg -heptane_check_symmetry 0 -ksp_max_it 50"
  --reject WARNING -- ${host})
# ---- a host whose KSP has an options prefix: heptane's options follow it; unprefixed ones are
# ignored, as PETSc's rule is (the KSP stays PETSc's default gmres)
heptane_plugin_test(plugin_host_options_follow_the_ksp_prefix
  ${solves} ${host_checks} --its-diff 2 --
  --plugin ${plugin_so} --ref "-flow_ksp_type bcgs -flow_ksp_pc_side right -flow_pc_type pbjacobi"
  --heptane "-flow_ksp_type hbcgs -flow_pc_type pbjacobi -flow_heptane_threads 2 -flow_heptane_device cpu -flow_ksp_view"
  --expect "ksp=hbcgs" --expect "heptane threads: 2 OpenMP threads per rank \\(-heptane_threads\\)"
  --expect "heptane preconditioner: bjacobi Nc=2" --reject MISMATCH -- ${host} -dof 2 -prefix flow_)
heptane_plugin_test(plugin_host_unprefixed_options_are_ignored
  ${solves} ${host_checks} --
  --plugin ${plugin_so} --heptane "-ksp_type hbcgs" --expect "ksp=gmres" -- ${host} -prefix flow_)
# ---- threads: one OpenMP thread per rank unless told (OMP_NUM_THREADS or -heptane_threads)
heptane_plugin_test(plugin_host_one_thread_per_rank_by_default
  env -u OMP_NUM_THREADS ${solves} ${host_checks} --
    --plugin ${plugin_so} --heptane "-ksp_type hbcgs -heptane_device cpu -ksp_view"
  --expect "heptane threads: 1 OpenMP thread per rank \\(the default" --expect "on cpu \\(1 threads\\)" -- ${host})
heptane_plugin_test(plugin_host_threads_option
  ${solves} ${host_checks} --
    --plugin ${plugin_so} --heptane "-ksp_type hbcgs -heptane_device cpu -heptane_threads 2 -ksp_view"
  --expect "heptane threads: 2 OpenMP threads per rank \\(-heptane_threads\\)" --expect "on cpu \\(2 threads\\)" -- ${host})
heptane_plugin_test(plugin_host_wrong_grid_is_an_error
  ${compare} --heptane "-ksp_type hbcgs -heptane_grid 12,12,11"
  --expect-error "the grid 12x12x11 with Nc = 1 \\(-heptane_grid\\) has 1584 unknowns, the matrix 1728 rows" -- ${host} -use_dm 0)
# the right size but another shape: the z couplings (offset 144) lie off the 12x144x1 grid's
# star offsets; the first such entry is named (the slot map on the CPU, or on the GPU there)
heptane_plugin_test(plugin_host_entry_off_the_grid_is_an_error
  ${compare} --heptane "-ksp_type hbcgs -heptane_grid 12,144,1"
  --expect-error "entry \\(0, 144\\) lies on block offset 144, not one of the block offsets \\{-12,-1,0,1,12\\} \\(-heptane_grid\\)" -- ${host} -use_dm 0)
# the same from BAIJ's blocks on the CPU (no scalar pattern made): the block's first entry named
heptane_plugin_test(plugin_host_baij_entry_off_the_grid_is_an_error
  ${compare} --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device cpu -heptane_grid 12,144,1"
  --expect-error "entry \\(0, 144\\) lies on block offset 144, not one of the block offsets \\{-12,-1,0,1,12\\} \\(-heptane_grid\\)" -- ${host} -use_dm 0 -mat_type baij)
# a host that frees its matrix and makes a new one of the same pattern (KSPReset first): a new
# build, then values-only refreshes of the new matrix, every solve's answer checked
heptane_plugin_test(plugin_host_new_matrix_after_reset_same_pattern
  ${solves} ${host_checks} --solves 5 --
  --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -ksp_view"
  --expect "heptane_register_after 2" --reject MISMATCH -- ${host} -solves 5 -recreate_mat_every 2)
if(NOT HEPTANE_HAVE_CUDA)
  heptane_plugin_test(plugin_host_gpu_without_cuda_is_an_error
    ${compare} --heptane "-ksp_type hbcgs -heptane_device gpu"
    --expect-error "this build of heptane has no CUDA back end" -- ${host})
endif()
# ---- on a GPU (label gpu; skipped, exit 77, where nvidia-smi lists none) ----------------------
# Jacobi and block Jacobi take their numeric part on the device, from the operator's device
# copy of the CSR values (bdiagh; csr in fp64), first setup and values-only refreshes alike;
# the ILU(0) types keep the host path. Results against PETSc's KSP on the CPU, as above.
if(HEPTANE_HAVE_CUDA)
  function(heptane_plugin_gpu_test name)
    add_test(NAME ${name} COMMAND sh -c "nvidia-smi -L 2>/dev/null | grep -q '^GPU' || exit 77 && exec \"$@\"" sh ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "plugin;gpu" ENVIRONMENT "${plugin_env}" TIMEOUT 600 SKIP_RETURN_CODE 77)
  endfunction()
  set(on_device "heptane preconditioner, last setup: numeric part on the device")
  set(two_refreshes "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 2 values-only")
  # ... and their symbolic part from the pattern the operator keeps on the device (bdiagh);
  # the GPU was set up on a background thread when the plugin was loaded (-heptane_prewarm)
  # BAIJ on the device: at the first setup its blocks and values uploaded as they are and
  # expanded to scalar CSR there (no host map, no gather); values-only refreshes upload the BAIJ
  # array as it is and put it into CSR order there; the preconditioner's numeric part from those
  # device values (hamg on a scalar system: its hierarchy then lives on the device,
  # -heptane_amg_setup auto)
  foreach(v "pbjacobi;3" "hamg;1")
    list(GET v 0 pc)
    list(GET v 1 dof)
    heptane_plugin_gpu_test(plugin_host_gpu_baij_values_read_in_place_${pc}
      ${solves} ${host_checks} --solves 3 --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi -dm_mat_type baij" --heptane "-ksp_type hbcgs -pc_type ${pc} -heptane_device gpu -ksp_view -dm_mat_type baij"
      --expect "on a GPU uploaded as they are and put into CSR order there" --expect "${on_device}" --expect "${two_refreshes}"
      --expect "block CSR with bs = ${dof} expanded on the device"
      --reject MISMATCH -- ${host} -dof ${dof} -solves 3)
  endforeach()
  # ... and, above 4 MiB of values (30^3 cells, bs 3), BAIJ's array registered with CUDA and
  # read in place from the second values-only refresh on, as AIJ's (the registration started
  # after the solve that follows the first refresh); every solve's answer checked
  heptane_plugin_gpu_test(plugin_host_gpu_baij_values_read_from_the_registered_array
    ${solves} ${host_checks} --solves 4 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi -dm_mat_type baij" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -ksp_view -dm_mat_type baij"
    --expect "on a GPU uploaded as they are and put into CSR order there" --expect "read by the copy engine straight from PETSc's array"
    --expect "on a background thread since the solve before"
    --reject MISMATCH -- ${host} -dof 3 -n 30 -solves 4)
  # the same with -heptane_register_after 1: the build from BAIJ's blocks marks its value array,
  # the first refresh reads it in place
  heptane_plugin_gpu_test(plugin_host_gpu_baij_values_register_after_one
    ${solves} ${host_checks} --solves 3 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi -dm_mat_type baij" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -ksp_view -dm_mat_type baij -heptane_register_after 1"
    --expect "BAIJ's blocks and values uploaded as they are" --expect "on a background thread since the solve before"
    --reject "ms this time" --reject MISMATCH -- ${host} -dof 3 -n 30 -solves 3)
  # BAIJ built from its blocks on the device: an entry off the grid's star offsets is named as
  # on the CPU (from the scalar pattern made there)
  heptane_plugin_gpu_test(plugin_host_gpu_baij_entry_off_the_grid_is_an_error
    ${compare} --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -heptane_grid 12,144,1"
    --expect-error "entry \\(0, 144\\) lies on block offset 144, not one of the block offsets \\{-12,-1,0,1,12\\} \\(-heptane_grid\\)" -- ${host} -use_dm 0 -mat_type baij)
  foreach(pc jacobi pbjacobi)
    heptane_plugin_gpu_test(plugin_host_gpu_${pc}_numeric_on_device
      ${solves} ${host_checks} --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ${pc}" --heptane "-ksp_type hbcgs -pc_type ${pc} -heptane_device gpu -ksp_view"
      --expect "${on_device}" --expect "${two_refreshes}" --expect "on the device, after a pinned, chunked upload"
      --expect "symbolic part on the device, from the operator's device copy of the pattern"
      --expect "cuda:0 made on a background thread at load" --expect "preconditioner folded into the operator"
      --expect "ms loading the Krylov solves' device code \\(6 tiny solves: bicgstab at Nc 1, 2, 3\\)"
      --expect "heptane vectors: b and x from PETSc's host arrays"
      --reject MISMATCH -- ${host} -dof 3 -solves 3)
  endforeach()
  # AIJ values-only refreshes from PETSc's value array registered with CUDA (above 4 MiB: a
  # 50^3 grid), each solve's answer checked. The default (-heptane_register_after 2): the first
  # refresh of a matrix copies, the solve after it starts the registration on a background
  # thread as it returns, the second refresh waits for it (if still running) and reads the
  # registered array, as the third does. At
  # every refresh (1), with a new matrix of the same pattern every two solves, made after the
  # old one was freed: each new matrix registered under its own key and read. (PETSc put the new
  # arrays elsewhere in a trial on the CPU; the same address, an array freed and new pages mapped
  # there, is test_pinned_upload's case, tests/cuda.cmake.) 0: the pinned copies always.
  heptane_plugin_gpu_test(plugin_host_gpu_aij_values_read_from_the_registered_array
    ${solves} ${host_checks} --solves 4 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view"
    --expect "read by the copy engine straight from PETSc's array" --expect "heptane_register_after 2"
    --expect "on a background thread since the solve before"
    --reject MISMATCH -- ${host} -n 50 -solves 4)
  heptane_plugin_gpu_test(plugin_host_gpu_aij_values_registered_new_matrix_every_two_solves
    ${solves} ${host_checks} --solves 6 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view -heptane_register_after 1"
    --expect "read by the copy engine straight from PETSc's array" --reject MISMATCH -- ${host} -n 50 -solves 6 -recreate_mat_every 2)
  # -heptane_register_after 1: the build marks PETSc's array, the first solve registers it as
  # it returns, and the first refresh already reads it in place (it waited for that thread)
  heptane_plugin_gpu_test(plugin_host_gpu_aij_values_register_after_one_reads_from_the_first_refresh
    ${solves} ${host_checks} --solves 3 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view -heptane_register_after 1"
    --expect "on a background thread since the solve before" --expect "heptane_register_after 1"
    --reject "ms this time" --reject MISMATCH -- ${host} -n 50 -solves 3)
  heptane_plugin_gpu_test(plugin_host_gpu_aij_values_register_never_copies
    ${solves} ${host_checks} --solves 4 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view -heptane_register_after 0"
    --expect "host copies into the pinned buffers" --reject "straight from PETSc's array"
    --reject MISMATCH -- ${host} -n 50 -solves 4)
  # PETSc with its own CUDA back end (the GPU machine's 3.25.4): an aijcusparse matrix whose
  # newest values are on the GPU (plugin_host's MatMult for b put them there) is refreshed from
  # PETSc's device array, device to device, and pbjacobi's numeric part from that copy
  get_target_property(petsc_inc PkgConfig::PETSC INTERFACE_INCLUDE_DIRECTORIES)
  find_file(heptane_petscconf petscconf.h PATHS ${petsc_inc} NO_DEFAULT_PATH)
  set(petsc_has_cuda OFF)
  if(heptane_petscconf)
    file(STRINGS "${heptane_petscconf}" petsc_cuda_line REGEX "^#define PETSC_HAVE_CUDA 1")
    if(petsc_cuda_line)
      set(petsc_has_cuda ON)
    endif()
  endif()
  if(petsc_has_cuda)
    heptane_plugin_gpu_test(plugin_host_gpu_aijcusparse_values_read_on_device
      ${solves} ${host_checks} --solves 3 --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -ksp_view -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0"
      --expect "PETSc matrix seqaijcusparse" --expect "values-only refreshes copy PETSc's device CSR values on the device"
      --expect "after a device-to-device copy of the caller's CSR values" --expect "${on_device}" --expect "${two_refreshes}"
      --expect "heptane vectors: b and x read and written on the GPU where PETSc keeps them"
      --reject MISMATCH -- ${host} -dof 3 -solves 3)
    # PETSc's own KSP on its GPU path (aijcusparse, CUDA vectors) with heptane's AMG as its PC:
    # applied on the Vecs' device arrays where they are (before 2026-12-03: through their host
    # arrays, two copies an application); every solve against the known solution. CPR's second
    # stage is block Jacobi on a GPU (ILU(0) on the CPU): 41 iterations here on the H200, the
    # count and the norms of the CPU with -heptane_cpr_second bjacobi
    foreach(v "cg_hamg;-ksp_type cg -pc_type hamg;-ksp_type cg -pc_type gamg;-convection 0"
              "fgmres_hcpr;-ksp_type fgmres -pc_type hcpr;-ksp_type fgmres -pc_type gamg;-dof 3")
      list(GET v 0 tag)
      list(GET v 1 hep)
      list(GET v 2 ref)
      list(GET v 3 sys)
      separate_arguments(sys)
      heptane_plugin_gpu_test(plugin_host_gpu_cuda_vectors_petsc_${tag}_pc_on_the_device
        ${solves} ${host_checks} --its host=2:60 --ref-its host=2:80 --solves 2 --
        --plugin ${plugin_so} --ref "${ref} -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0" --heptane "${hep} -heptane_device gpu -ksp_view -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0"
        --expect "heptane applications: [0-9]+, [0-9.]+ ms in all. [1-9][0-9]* on PETSc's CUDA vectors where they are" --expect "on PETSc's CUDA vectors where they are \\(their device arrays, no host copy\\), 0 through the host arrays"
        --reject MISMATCH -- ${host} ${sys} -solves 2 -n 16)
    endforeach()
    # PETSc's CUDA vectors (MatCreateVecs of an aijcusparse matrix): b, and x as the initial
    # guess, read on the GPU and x written there (device to device); every solve checked
    # against the known solution
    heptane_plugin_gpu_test(plugin_host_gpu_cuda_vectors_initial_guess_on_the_device
      ${solves} ${host_checks} --solves 3 --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0"
      --expect "heptane vectors: b and x read and written on the GPU where PETSc keeps them" --reject MISMATCH -- ${host} -dof 2 -solves 3 -x0 1)
    # ... with a matrix-free Amat and another Pmat: Amat's MatMult on PETSc's CUDA vectors
    heptane_plugin_gpu_test(plugin_host_gpu_cuda_vectors_shell_amat_pmat_differs
      ${solves} ${host_checks} --its-diff 1 --solves 3 --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0"
      --expect "heptane vectors: b and x read and written on the GPU where PETSc keeps them" --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type shell\\)"
      --reject MISMATCH -- ${host} -dof 2 -solves 3 -x0 1 -shell_amat 1 -pmat_shift 10)
    # a declared null space with PETSc's CUDA vectors: the constant removed on the GPU
    # (MatNullSpaceRemove of a CUDA Vec), heptane's AMG on the device with its generalized inverse
    heptane_plugin_gpu_test(plugin_host_gpu_cuda_vectors_neumann_null_space_hcg_hamg
      ${solves} ${host_checks} --its host=3:60 --ref-its host=3:30 --solves 2 --
      --plugin ${plugin_so} --ref "-ksp_type cg -pc_type gamg -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0" --heptane "-ksp_type hcg -pc_type hamg -heptane_device gpu -ksp_view -dm_mat_type aijcusparse -dm_vec_type cuda -use_gpu_aware_mpi 0"
      --expect "heptane vectors: b and x read and written on the GPU where PETSc keeps them" --expect "heptane null space: Amat's \\(MatSetNullSpace, 1 vector\\) removed"
      --expect "generalized inverse, rank" --reject MISMATCH -- ${host} -neumann 1 -convection 0 -solves 2 -x0 1 -n 16)
  endif()
  # Amat a MATSHELL, Pmat A + 10 I, heptane on the GPU: its operator and ILU(0) from Pmat on the
  # device, the Krylov loop's products Amat's MatMult on the host (the vector down and up each
  # time): the known solution of A x = b, PETSc's iterations with its ILU(0) from the same Pmat
  heptane_plugin_gpu_test(plugin_host_gpu_shell_amat_pmat_differs
    ${solves} ${host_checks} --its-diff 1 --solves 3 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type ilu" --heptane "-ksp_type hbcgs -pc_type ilu -heptane_ilu natural -heptane_device gpu -ksp_view"
    --expect "heptane operator: bdiagh [0-9x]+ Nc=2 D=7 fp64 on cuda" --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type shell\\), which is not its Pmat"
    --reject MISMATCH -- ${host} -dof 2 -solves 3 -shell_amat 1 -pmat_shift 10)
  # a declared null space, heptane's AMG on the device (the generalized inverse placed there)
  heptane_plugin_gpu_test(plugin_host_gpu_neumann_null_space_hcg_hamg
    ${solves} ${host_checks} --its host=3:60 --ref-its host=3:30 --solves 2 --
    --plugin ${plugin_so} --ref "-ksp_type cg -pc_type gamg" --heptane "-ksp_type hcg -pc_type hamg -heptane_device gpu -ksp_view"
    --expect "heptane null space: Amat's \\(MatSetNullSpace, 1 vector\\) removed" --expect "generalized inverse, rank"
    --expect "fp64 on cuda" --reject MISMATCH -- ${host} -neumann 1 -convection 0 -solves 2 -x0 1 -n 16)
  # the host's own convergence test on the GPU: the residual read back every iteration before
  # the next is queued, so the solve stops exactly where the test says, as PETSc's bcgs
  heptane_plugin_gpu_test(plugin_host_gpu_host_convergence_test_stops_at_its_iteration
    ${solves} --reason DIVERGED_ITS --max-error 1e-1 --its host=5:5 --ref-its host=5:5 --solves 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view"
    --expect "fp64 on cuda" --expect "host: convergence test called 6 times, last at iteration 5, said DIVERGED_ITS"
    --reject MISMATCH -- ${host} -host_test 2 -host_test_stop 5 -solves 2)
  foreach(v "hbcgs_jacobi;-ksp_type hbcgs -pc_type jacobi;${ref_bcgs} -pc_type jacobi"
            "hgmres_ilu;-ksp_type hgmres -pc_type ilu -heptane_ilu natural;-ksp_type gmres -ksp_pc_side right -pc_type ilu")
    list(GET v 0 tag)
    list(GET v 1 hep)
    list(GET v 2 ref)
    heptane_plugin_gpu_test(plugin_host_gpu_host_convergence_test_${tag}_as_petsc
      ${solves} --max-error 1e-3 --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --ref "${ref}" --heptane "${hep} -heptane_device gpu -ksp_view"
      --expect "fp64 on cuda" --expect "host: convergence test called [0-9]+ times, last at iteration [0-9]+, said CONVERGED_RTOL"
      --reject MISMATCH -- ${host} -host_test 1 -dof 2 -solves 2)
  endforeach()
  # the iterate inside a monitor on the GPU: read after each iteration, before the next is queued
  # (pbjacobi from a zero guess: folded into the operator, x_i = M^-1 y_i made on the device)
  heptane_plugin_gpu_test(plugin_host_gpu_monitor_true_residual_sees_each_iterate_hbcgs_pbjacobi_folded
    ${solves} ${host_checks} --its-diff 2 --solves 2 --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -ksp_view"
    --expect "fp64 on cuda" --expect "preconditioner folded into the operator" --expect "host: true-residual monitor checked [0-9]+ iterates"
    --reject "WARNING \\(heptane\\): a monitor asked" --reject MISMATCH -- ${host} -dof 3 -solves 2 -true_residual_monitor 1)
  foreach(v "hbcgs_jacobi;-ksp_type hbcgs -pc_type jacobi;${ref_bcgs} -pc_type jacobi"
            "hgmres_ilu_restart_4;-ksp_type hgmres -pc_type ilu -heptane_ilu natural -ksp_gmres_restart 4;-ksp_type gmres -ksp_pc_side right -pc_type ilu -ksp_gmres_restart 4")
    list(GET v 0 tag)
    list(GET v 1 hep)
    list(GET v 2 ref)
    heptane_plugin_gpu_test(plugin_host_gpu_monitor_true_residual_sees_each_iterate_${tag}
      ${solves} ${host_checks} --its-diff 2 --solves 2 --
      --plugin ${plugin_so} --ref "${ref}" --heptane "${hep} -heptane_device gpu -ksp_view"
      --expect "fp64 on cuda" --expect "host: true-residual monitor checked [0-9]+ iterates"
      --reject "WARNING \\(heptane\\): a monitor asked" --reject MISMATCH -- ${host} -dof 2 -solves 2 -x0 1 -true_residual_monitor 1)
  endforeach()
  heptane_plugin_gpu_test(plugin_host_gpu_without_prewarm
    ${solves} ${host_checks} --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -heptane_prewarm 0 -ksp_view"
    --expect "${on_device}" --reject "background thread" --reject MISMATCH -- ${host} -dof 2 -solves 2)
  heptane_plugin_gpu_test(plugin_host_gpu_pbjacobi_csr_numeric_on_device
    ${solves} ${host_checks} --
    --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -heptane_format csr -ksp_view"
    --expect "${on_device}" --expect "${two_refreshes}" --reject MISMATCH -- ${host} -dof 3 -solves 3)
  heptane_plugin_gpu_test(plugin_host_gpu_pbjacobi_mixed_numeric_on_device
    ${solves} --max-error 1e-4 --
    --plugin ${plugin_so} --tol 1e-5 --ref "${ref_bcgs} -pc_type pbjacobi -ksp_rtol 1e-6" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -heptane_precision mixed -ksp_rtol 1e-6 -ksp_view"
    --expect "${on_device}" --expect "fp32 values/fp64 vectors" --expect "refined against the fp64 matrix"
    --expect "preconditioner folded into the operator" -- ${host} -dof 3 -solves 2)
  heptane_plugin_gpu_test(plugin_host_gpu_ilu_numeric_on_the_host
    ${solves} ${host_checks} --
    --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -heptane_device gpu -heptane_ilu natural -ksp_view"
    --expect "numeric part on the host, from a host copy of the matrix \\(pattern compared\\), factors uploaded"
    --expect "${two_refreshes}" --reject MISMATCH -- ${host} -dof 3 -solves 3)
  if(HEPTANE_BUILD_EXAMPLES)
    heptane_plugin_gpu_test(plugin_reservoir_gpu_pbjacobi_matches_bcgs
      ${solves} --max-relres 1e-8 --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu"
      --expect "coupled: ksp hbcgs" -- $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 2 -newton 2 -ksp_rtol 1e-9)
    # AMG and CPR on the GPU: inside hbcgs (the hierarchy placed on the device, the finest level
    # through the device's BDIA-GH operator), and as PETSc's PC (the Vec's array up and back at
    # each application); bands as on the CPU, a little wider (not yet run on a GPU: no PETSc on
    # the device machine when they were written)
    heptane_plugin_gpu_test(plugin_reservoir_gpu_hamg_matches_gamg
      ${solves} --its pressure=4:14 --max-relres 1e-8 --solves 3 --
      --plugin ${plugin_so} --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hbcgs -pc_type hamg -heptane_device gpu -ksp_view"
      --expect "heptane preconditioner: amg \\(smoothed aggregation.* on cuda" --expect "heptane AMG hierarchy:" -- ${res_p})
    heptane_plugin_gpu_test(plugin_reservoir_gpu_petsc_cg_with_hamg_pc
      ${solves} --its pressure=6:20 --max-relres 1e-8 --solves 3 --
      --plugin ${plugin_so} --ref "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg"
      --heptane "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type hamg -heptane_device gpu -ksp_view"
      --expect "type: hamg" --expect "heptane preconditioner: amg .* on cuda" --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 2 values-only" -- ${res_p})
    heptane_plugin_gpu_test(plugin_reservoir_gpu_hcpr_coupled
      ${solves} --its coupled=5:18 --max-relres 1e-8 --solves 6 --
      --plugin ${plugin_so} --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type hcpr -heptane_device gpu -ksp_view"
      --expect "heptane preconditioner: cpr .* on cuda" -- ${res_c})
  endif()
endif()
# ---- several MPI ranks ------------------------------------------------------------------------
# The example under mpirun -np 2 (its DMDA is split along z only, so PETSc's global numbering
# is the grid's natural one): heptane's distributed operator against PETSc's bcgs on the same
# ranks (PETSc's default PC there is bjacobi with ILU(0) blocks, which is heptane's ILU(0) of
# each rank's block), and 2 ranks against 1; plus the errors for numberings it cannot take.
if(HEPTANE_PETSC_MPIEXEC)
  # the launcher's flags as tests/distributed.cmake finds them: Open MPI needs --oversubscribe
  # (CI has fewer cores than ranks) and --allow-run-as-root (CI containers run as root)
  set(np2 ${HEPTANE_PETSC_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS})
  set(np3 ${HEPTANE_PETSC_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 3 ${MPIEXEC_PREFLAGS})
  set(np4 ${HEPTANE_PETSC_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 4 ${MPIEXEC_PREFLAGS})
  execute_process(COMMAND ${HEPTANE_PETSC_MPIEXEC} --version OUTPUT_VARIABLE mpi_version ERROR_QUIET)
  if(mpi_version MATCHES "Open MPI|OpenRTE")
    list(APPEND np2 --oversubscribe --allow-run-as-root)
    list(APPEND np3 --oversubscribe --allow-run-as-root)
    list(APPEND np4 --oversubscribe --allow-run-as-root)
  endif()
  list(JOIN np2 " " np2)
  list(JOIN np3 " " np3)
  list(JOIN np4 " " np4)
  if(TEST plugin_zero_pivot_written) # only rank 0's block is singular: every rank stops alike
    heptane_zero_pivot_tests(2 "${np2}")
    heptane_zero_pivot_tests(3 "${np3}")
  endif()
  set(hep "-dll_append ${plugin_so}")
  if(TARGET heptane_distributed)
    if(HEPTANE_BUILD_EXAMPLES)
      set(reservoir2 $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 2 -newton 2 -ksp_rtol 1e-10)
      # solution norms, sums and Newton residuals within 1e-6 (relative) of PETSc's bcgs (the
      # ranks take a GPU where there is one: there bjacobi is the multi-colour ILU(0))
      heptane_plugin_test(plugin_reservoir_two_ranks_hbcgs_matches_bcgs
        ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view"
        --expect "2 MPI rank" --expect "pressure: ksp hbcgs" --expect "coupled: ksp hbcgs"
        --expect "heptane preconditioner: ilu0(-mc)? Nc=3.*from -pc_type bjacobi"
        --expect "bdiagh rows .0, 2304\\) of 4608 on rank 0/2, Nc=3 D=7"
        --expect "heptane setups: 1 full \\(new pattern\\), 3 values-only"
        --expect "this rank's rows read in place from the MPIAIJ's diagonal and off-diagonal blocks"
        --expect "values-only update: .* into the distributed operator's local block"
        --reject DIVERGED -- ${reservoir2})
      # 3 ranks: 8 z-planes split 3/3/2, a middle rank with halos on both sides
      heptane_plugin_test(plugin_reservoir_three_ranks_hbcgs_matches_bcgs
        ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --mpiexec "${np3}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view"
        --expect "3 MPI rank" --expect "coupled: ksp hbcgs" --expect "3 ranks, rows 0:.0,1728\\) 1:.1728,3456\\) 2:.3456,4608\\)"
        --expect "heptane setups: 1 full \\(new pattern\\), 3 values-only" --reject DIVERGED -- ${reservoir2})
      # 2 ranks against 1: the same answers (pbjacobi does not depend on the split; ILU is
      # block Jacobi over the ranks there, so the iterations differ, not the solution)
      foreach(pc pbjacobi ilu)
        heptane_plugin_test(plugin_reservoir_two_ranks_match_one_rank_${pc}
          ${solves} --max-relres 1e-8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref-mpiexec= --ref "${hep} -ksp_type hbcgs -pc_type ${pc}"
          --heptane "-ksp_type hbcgs -pc_type ${pc}" --expect "2 MPI rank" --expect "coupled: ksp hbcgs"
          --reject DIVERGED -- ${reservoir2})
      endforeach()
      heptane_plugin_test(plugin_reservoir_two_ranks_hcg_matches_cg
        ${solves} --max-relres 1e-8 --max-its-ratio 1.2 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
        --expect "pressure: ksp hcg" --expect "symmetry check .*: every entry equals its transpose to 1e-08 \\(relative. over the ranks\\)"
        --reject DIVERGED -- ${reservoir2} -system pressure)
      # bdiagh is an MPIAIJ by another name: its blocks are read in place; MPIBAIJ is copied
      set(rows_bdiagh "rows read in place from the MPIAIJ's diagonal and off-diagonal blocks")
      # (on the CPU, Nc = the block size: each values-only setup reads MPIBAIJ's two SeqBAIJ
      # blocks straight into the operator's slots, nothing gathered)
      set(rows_baij "rows read from the MPIBAIJ's two SeqBAIJ blocks \\(MatMPIBAIJGetSeqBAIJ\\) straight into the operator's slots.*the preconditioner's rows \\(ILU\\(0\\)\\): the diagonal SeqBAIJ expanded into scalar CSR by formula")
      foreach(type bdiagh baij)
        heptane_plugin_test(plugin_reservoir_two_ranks_${type}_matrices
          ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -dm_mat_type ${type} -heptane_device cpu -ksp_view"
          --expect "PETSc matrix mpi${type}|PETSc matrix ${type}" --expect "coupled: ksp hbcgs" --expect "${rows_${type}}"
          --expect "heptane setups: 1 full \\(new pattern\\), 3 values-only" --reject DIVERGED -- ${reservoir2})
      endforeach()
      # MPIBAIJ's blocks in place, at the build and at each Newton step, operator and block
      # Jacobi alike (this rank's diagonal blocks; then the PC's gather map into BAIJ's array):
      # PETSc's answers
      heptane_plugin_test(plugin_reservoir_two_ranks_baij_blocks_in_place_pbjacobi
        ${solves} --max-relres 1e-8 --max-its-ratio 1.2 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type pbjacobi -dm_mat_type baij"
        --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device cpu -dm_mat_type baij -ksp_view"
        --expect "PETSc matrix mpibaij" --expect "values-only update: this rank's two block CSR parts \\(PETSc's MPIBAIJ"
        --expect "rows read from the MPIBAIJ's two SeqBAIJ blocks \\(MatMPIBAIJGetSeqBAIJ\\) straight into the operator's slots, at a new pattern and at each values-only setup"
        --expect "heptane preconditioner, last setup: numeric part on the host, on PETSc's block values in place"
        --expect "heptane setups: 1 full \\(new pattern\\), 3 values-only" --reject DIVERGED -- ${reservoir2})
      # -heptane_coarse: the global coarse correction around each rank's preconditioner,
      # against the same plugin run without it (--ref loads the plugin too): every solve meets
      # the tolerance with the same solution and takes at most 0.8x the iterations (measured
      # here: ILU(0) on 2 ranks 59 against 145 over the 8 solves; hcg + Jacobi, symmetric form,
      # 16 aggregates a rank, on 3 ranks 117 against 265)
      heptane_plugin_test(plugin_reservoir_two_ranks_coarse_correction_ilu
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${hep} -ksp_type hbcgs -pc_type ilu -heptane_device cpu"
        --heptane "-ksp_type hbcgs -pc_type ilu -heptane_device cpu -heptane_coarse -ksp_view"
        --expect "heptane global coarse correction \\(-heptane_coarse\\): global coarse correction \\([0-9]+ coarse unknowns"
        --expect "A-DEF2: Q then M" --reject DIVERGED --reject WARNING -- ${reservoir2})
      heptane_plugin_test(plugin_reservoir_three_ranks_coarse_correction_hcg
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np3}" --ref "${hep} -ksp_type hcg -pc_type jacobi -heptane_device cpu"
        --heptane "-ksp_type hcg -pc_type jacobi -heptane_device cpu -heptane_coarse -heptane_coarse_aggregates 16 -ksp_view"
        --expect "[0-9]+ coarse unknowns: 1[0-9] aggregates on this rank" --expect "symmetric: Q, M, Q" --reject DIVERGED
        -- ${reservoir2} -system pressure)
      # and under PETSc's own KSP: cg + hamg (symmetric form; measured 35 against 70 iterations)
      heptane_plugin_test(plugin_reservoir_three_ranks_coarse_correction_petsc_cg_hamg
        ${solves} --max-relres 1e-8 --max-its-ratio 0.85 --
    --plugin ${plugin_so} --mpiexec "${np3}"
        --ref "${hep} -ksp_type cg -pc_type hamg -heptane_device cpu -ksp_norm_type unpreconditioned -heptane_amg_coarse_size 50 -heptane_amg_global false"
        --heptane "-ksp_type cg -pc_type hamg -heptane_device cpu -ksp_norm_type unpreconditioned -heptane_amg_coarse_size 50 -heptane_coarse -ksp_view"
        --expect "global coarse correction \\(-heptane_coarse\\): global coarse correction .*symmetric: Q, M, Q" --reject DIVERGED
        -- ${reservoir2} -system pressure)
      # -heptane_coarse_solve amg: many aggregates per rank, the coarse matrix solved on every
      # rank by AMG's iteration (measured here: hbcgs + hamg on 2 ranks 46 against 81 iterations
      # over the 6 solves; cg + hamg, 3 cycles, on 3 ranks 36 against 70)
      heptane_plugin_test(plugin_reservoir_two_ranks_coarse_correction_amg_solve_hamg
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${hep} -ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_amg_global false"
        --heptane "-ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_coarse -heptane_coarse_solve amg -heptane_coarse_aggregates 100 -ksp_view"
        --expect "[0-9]+ coarse unknowns: [0-9]+ aggregates on this rank x Nc [13] \\(bfs\\), [0-9]+ entries. AMG \\(2 cycles, [0-9]+ levels\\) on every rank"
        --expect "A-DEF2: Q then M" --reject DIVERGED --reject WARNING -- ${reservoir2})
      # -heptane_coarse_aggregation strength: AMG's aggregates of the strong couplings on the
      # pressure system; on the coupled one they stall and the aggregates are grown
      # breadth-first after all, which -ksp_view names
      heptane_plugin_test(plugin_reservoir_two_ranks_coarse_correction_strength_aggregates
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${hep} -ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_amg_global false"
        --heptane "-ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_coarse -heptane_coarse_aggregation strength -ksp_view"
        --expect "aggregates on this rank x Nc 1 \\(strength\\)" --expect "aggregates on this rank x Nc 3 \\(bfs: strength stalled\\)"
        --reject DIVERGED --reject WARNING -- ${reservoir2})
      # -heptane_amg_global: one AMG hierarchy over the ranks in place of each rank's AMG,
      # against the per-rank AMG (the plugin in both runs): every solve meets the tolerance
      # with the same solution in at most 0.8x the iterations (measured here: hbcgs on 2 ranks
      # 14 against 19 over the 2 solves, PETSc's cg on 3 ranks 24 against 70)
      heptane_plugin_test(plugin_reservoir_two_ranks_amg_over_the_ranks_hbcgs
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${hep} -ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_amg_global false"
        --heptane "-ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_amg_global -ksp_view"
        --expect "heptane AMG over the ranks \\(-heptane_amg_global: asked for\\), applied instead of each rank's AMG: AMG over 2 ranks \\([0-9]+ levels"
        --expect "chebyshev degree 2/2 through the distributed product" --reject DIVERGED --reject WARNING
        -- ${reservoir2} -system pressure)
      heptane_plugin_test(plugin_reservoir_three_ranks_amg_over_the_ranks_petsc_cg
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np3}"
        --ref "${hep} -ksp_type cg -pc_type hamg -heptane_device cpu -ksp_norm_type unpreconditioned -heptane_amg_global false"
        --heptane "-ksp_type cg -pc_type hamg -heptane_device cpu -ksp_norm_type unpreconditioned -heptane_amg_global -ksp_view"
        --expect "heptane AMG over the ranks \\(-heptane_amg_global: asked for\\), applied instead of each rank's AMG: AMG over 3 ranks"
        --reject DIVERGED --reject WARNING -- ${reservoir2} -system pressure)
      # hcpr with -heptane_amg_global: CPR whose pressure stage is the AMG over the ranks
      # (dist::DistCpr), against CPR of each rank's block, on the coupled system: the same
      # answers in at most 0.8x the iterations (measured here: 39 against 80 over the 4 solves)
      heptane_plugin_test(plugin_reservoir_three_ranks_cpr_over_the_ranks_hbcgs
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np3}" --ref "${hep} -ksp_type hbcgs -pc_type hcpr -heptane_device cpu -heptane_amg_global false"
        --heptane "-ksp_type hbcgs -pc_type hcpr -heptane_device cpu -heptane_amg_global -ksp_view"
        --expect "heptane CPR over the ranks \\(-heptane_amg_global: asked for\\), applied instead of each rank's CPR: CPR over the ranks \\(quasi-IMPES weights, pressure index 0 of Nc 3. pressure: AMG over 3 ranks"
        --reject DIVERGED --reject WARNING -- ${reservoir2} -system coupled)
      # a smoother the AMG over the ranks does not have (ilu0mc): a warning that says so, and
      # each rank's own AMG instead (its hierarchy in -ksp_view); the solves meet the tolerance
      heptane_plugin_test(plugin_reservoir_two_ranks_amg_over_the_ranks_refused_warns
        ${solves} --max-relres 1e-8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${hep} -ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_amg_global false"
        --heptane "-ksp_type hbcgs -pc_type hamg -heptane_device cpu -heptane_amg_global -heptane_amg_smoother ilu0mc -ksp_view"
        --expect "heptane_amg_global: no AMG.CPR over the ranks, each rank's own instead \\(distributed AMG: the ilu0mc smoother is not built over the ranks"
        --expect "AMG of each rank's diagonal block .*not over the ranks: refused at this pattern \\(distributed AMG: the ilu0mc smoother"
        --expect "heptane AMG hierarchy:" --reject DIVERGED
        -- ${reservoir2} -system pressure)
      heptane_plugin_test(plugin_reservoir_three_ranks_coarse_correction_amg_solve_petsc_cg_hamg
        ${solves} --max-relres 1e-8 --max-its-ratio 0.8 --
    --plugin ${plugin_so} --mpiexec "${np3}"
        --ref "${hep} -ksp_type cg -pc_type hamg -heptane_device cpu -ksp_norm_type unpreconditioned -heptane_amg_global false"
        --heptane "-ksp_type cg -pc_type hamg -heptane_device cpu -ksp_norm_type unpreconditioned -heptane_coarse -heptane_coarse_solve amg -heptane_coarse_aggregates 60 -heptane_coarse_cycles 3 -ksp_view"
        --expect "AMG \\(3 cycles, [0-9]+ levels\\) on every rank. symmetric: Q, M, Q" --reject DIVERGED --reject WARNING
        -- ${reservoir2} -system pressure)
      # on GPUs (one per rank: skipped, exit 77, where nvidia-smi lists fewer than 2): the
      # Newton step on the device -- MPIAIJ's diagonal block up as it is, scattered there, and
      # pbjacobi's numeric part from that device copy; ILU keeps its host numeric part
      if(HEPTANE_HAVE_CUDA)
        # (no ';' in the command: heptane_plugin_test's ARGN would split it there)
        set(on_two_gpus "[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') -ge 2 ] || exit 77 && exec \"$@\"")
        set(up_on_device "values-only update: the diagonal block's [0-9]+ values up as they are .* scattered on the device")
        heptane_plugin_test(plugin_reservoir_two_ranks_gpu_pbjacobi_numeric_on_device
          sh -c "${on_two_gpus}" sh ${solves} --max-relres 1e-8 -- --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type pbjacobi"
          --heptane "-ksp_type hbcgs -pc_type pbjacobi -heptane_device gpu -ksp_view" --expect "${up_on_device}"
          --expect "heptane preconditioner, last setup: numeric part on the device"
          --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 3 values-only"
          --reject DIVERGED -- ${reservoir2})
        heptane_plugin_test(plugin_reservoir_two_ranks_gpu_ilu_numeric_on_the_host
          sh -c "${on_two_gpus}" sh ${solves} --max-relres 1e-8 -- --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs}
          --heptane "-ksp_type hbcgs -heptane_device gpu -heptane_ilu natural -ksp_view" --expect "${up_on_device}"
          --expect "numeric part on the host, from a host copy of the matrix" --reject DIVERGED -- ${reservoir2})
        # -heptane_device auto with two ranks on one GPU (skipped where there is none, or one
        # per rank): the model weighs the ranks sharing it (these small systems: the CPU), and
        # -ksp_view says so
        set(on_one_gpu "[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') -eq 1 ] || exit 77 && exec \"$@\"")
        heptane_plugin_test(plugin_reservoir_two_ranks_sharing_a_gpu_auto_weighs_the_sharing
          sh -c "${on_one_gpu}" sh ${compare} --mpiexec "${np2}" --heptane "-ksp_type hbcgs -pc_type hamg -heptane_device auto -ksp_view"
          --expect "heptane device: auto: the CPU \\([0-9]+ stored entries a rank, 2 MPI ranks sharing each GPU of the node < [0-9]+"
          --reject DIVERGED -- ${reservoir2} -system pressure)
        set_tests_properties(plugin_reservoir_two_ranks_gpu_pbjacobi_numeric_on_device plugin_reservoir_two_ranks_gpu_ilu_numeric_on_the_host
          plugin_reservoir_two_ranks_sharing_a_gpu_auto_weighs_the_sharing
          PROPERTIES LABELS "plugin;gpu" SKIP_RETURN_CODE 77)
      endif()
      # PETSc's own DMDA split (in x or y too): PETSc numbers the unknowns rank by rank, so the
      # matrix is renumbered into the grid's natural order once per pattern (values gathered
      # again each Newton step) and b and x scattered; the same answers as PETSc's bcgs
      set(renumbered "heptane numbering: the DMDA is split")
      heptane_plugin_test(plugin_reservoir_two_ranks_x_split_matches_bcgs
        ${solves} --max-relres 1e-8 --max-its-ratio 1.2 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -da_processors_x 2" --heptane "-ksp_type hbcgs -da_processors_x 2 -ksp_view"
        --expect "${renumbered} 2 x 1 x 1 over the ranks" --expect "coupled: ksp hbcgs"
        --expect "heptane setups: 1 full \\(new pattern\\), 3 values-only" --reject DIVERGED -- ${reservoir2})
      # (the example splits its DMDA along z unless -z_split_only 0: then PETSc chooses, 2 x 2 x 1 here)
      heptane_plugin_test(plugin_reservoir_four_ranks_default_split_matches_bcgs
        ${solves} --max-relres 1e-8 --max-its-ratio 1.2 --
    --plugin ${plugin_so} --mpiexec "${np4}" --ref "${ref_bcgs} -z_split_only 0" --heptane "-ksp_type hbcgs -z_split_only 0 -ksp_view"
        --expect "4 MPI rank" --expect "${renumbered} 2 x 2 x 1 over the ranks" --expect "coupled: ksp hbcgs" --reject DIVERGED -- ${reservoir2})
      heptane_plugin_test(plugin_reservoir_three_ranks_y_split_baij_matches_bcgs
        ${solves} --max-relres 1e-8 --its-diff 2 --
    --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -da_processors_y 3 -dm_mat_type baij" --heptane "-ksp_type hbcgs -da_processors_y 3 -dm_mat_type baij -ksp_view"
        --expect "${renumbered} 1 x 3 x 1 over the ranks" --expect "PETSc matrix mpibaij" --expect "coupled: ksp hbcgs" --reject DIVERGED -- ${reservoir2})
      # ... with PETSc's own PC through PCApply (its vectors in PETSc's numbering) and with AMG
      heptane_plugin_test(plugin_reservoir_two_ranks_x_split_petsc_asm
        ${solves} --max-relres 1e-9 --solves 6 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type asm -da_processors_x 2" --heptane "-ksp_type hbcgs -pc_type asm -da_processors_x 2 -ksp_view"
        --expect "${renumbered} 2 x 1 x 1" --expect "PETSc's own PC asm, applied through PCApply" -- ${reservoir2})
      heptane_plugin_test(plugin_reservoir_two_ranks_x_split_hamg
        ${solves} --its pressure=4:20 --max-relres 1e-9 --solves 3 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type gamg -da_processors_x 2" --heptane "-ksp_type hbcgs -pc_type hamg -da_processors_x 2 -ksp_view"
        --expect "${renumbered} 2 x 1 x 1" -- $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 3 -ksp_rtol 1e-10 -system pressure)
      heptane_plugin_test(plugin_reservoir_two_ranks_other_format_is_an_error
        ${compare} --mpiexec "${np2}" --heptane "-ksp_type hbcgs -heptane_format ell"
        --expect-error "on several MPI ranks heptane's operator is the distributed BDIA-GH \\(auto or bdiagh\\) or the distributed CSR \\(csr\\)" -- ${reservoir2})
      # (f) AMG per rank (block Jacobi over the ranks, each rank's diagonal block), inside
      # heptane's BiCGStab (9 iterations a solve; PETSc's bcgs with GAMG on 2 ranks: 12) and as
      # PETSc's CG's PC; CPR per rank on the coupled system (10-12; bjacobi/ILU: 19-23)
      set(res2_p $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 3 -ksp_rtol 1e-10 -system pressure)
      set(res2_c $<TARGET_FILE:reservoir> -nx 16 -ny 12 -nz 8 -steps 2 -newton 3 -ksp_rtol 1e-10 -system coupled)
      set(per_rank "heptane preconditioner on 2 ranks: AMG of each rank's diagonal block \\(block Jacobi over the ranks")
      heptane_plugin_test(plugin_reservoir_two_ranks_hamg_matches_gamg
        ${solves} --its pressure=5:15 --ref-its pressure=6:20 --max-relres 1e-9 --solves 3 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hbcgs -pc_type hamg -heptane_amg_global false -ksp_view"
        --expect "2 MPI rank" --expect "${per_rank}" --expect "heptane AMG hierarchy:\\n +level +rows +nnz +nnz/row +lambda_max\\n +0 +768 "
        --expect "heptane preconditioner setups: 1 full \\(symbolic \\+ numeric\\), 2 values-only" --reject "finest level through" -- ${res2_p})
      heptane_plugin_test(plugin_reservoir_two_ranks_petsc_cg_with_hamg_pc
        ${solves} --its pressure=8:24 --max-relres 1e-9 --solves 3 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg"
        --heptane "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type hamg -heptane_amg_global false -ksp_view"
        --expect "type: hamg" --expect "${per_rank}" --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 2 values-only" -- ${res2_p})
      # (g) the default on CPU ranks: hamg on a scalar system is the AMG over the ranks without
      # -heptane_amg_global (heptane's BiCGStab, and PETSc's CG with hamg as its PC), its
      # values-only setups on the kept hierarchy; hcpr is CPR over the ranks (below)
      set(default_over "over the ranks \\(-heptane_amg_global: not given. the default for a scalar system on CPU ranks")
      heptane_plugin_test(plugin_reservoir_two_ranks_hamg_default_is_over_the_ranks
        ${solves} --its pressure=3:15 --ref-its pressure=6:20 --max-relres 1e-9 --solves 3 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hbcgs -pc_type hamg -ksp_view"
        --expect "heptane AMG ${default_over}.*AMG over 2 ranks \\([0-9]+ levels" --expect "1 values-only update on the kept aggregates and P|2 values-only updates on the kept aggregates and P"
        --reject "heptane AMG hierarchy:" --reject WARNING -- ${res2_p})
      heptane_plugin_test(plugin_reservoir_two_ranks_petsc_cg_hamg_pc_default_is_over_the_ranks
        ${solves} --its pressure=4:24 --max-relres 1e-9 --solves 3 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type gamg"
        --heptane "-ksp_type cg -ksp_norm_type unpreconditioned -pc_type hamg -ksp_view"
        --expect "type: hamg" --expect "heptane AMG ${default_over}" --expect "heptane preconditioner setups: 1 full \\(new pattern\\), 2 values-only" --reject WARNING -- ${res2_p})
      heptane_plugin_test(plugin_reservoir_two_ranks_hcpr
        ${solves} --its coupled=6:16 --ref-its coupled=14:30 --max-relres 1e-9 --solves 6 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type hcpr -heptane_amg_global false -ksp_view"
        --expect "heptane preconditioner on 2 ranks: CPR of each rank's diagonal block.*not over the ranks: -heptane_amg_global false" --expect "coupled: ksp hbcgs" -- ${res2_c})
      heptane_plugin_test(plugin_reservoir_two_ranks_hcpr_default_is_over_the_ranks
        ${solves} --its coupled=4:16 --ref-its coupled=14:30 --max-relres 1e-9 --solves 6 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -pc_type hcpr -ksp_view"
        --expect "heptane CPR over the ranks \\(-heptane_amg_global: not given. the default for CPR on CPU ranks.*pressure: AMG over 2 ranks"
        --expect "coupled: ksp hbcgs" --reject WARNING -- ${res2_c})
      heptane_plugin_test(plugin_reservoir_petsc_bcgs_two_ranks
        ${solves} --max-relres 1e-8 --
    --plugin ${plugin_so} --mpiexec "${np2}" --heptane "-ksp_type bcgs -pc_type bjacobi" --expect "2 MPI rank"
        --expect "coupled: ksp bcgs" -- ${reservoir})
    endif()
    # a matrix without a DMDA: Nc from its block size, the block offsets from the pattern
    heptane_plugin_test(plugin_host_two_ranks_plain_matrix
      ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view"
      --expect "Nc=2 \\(matrix block size\\), block offsets of the pattern over the ranks \\{-144,-12,-1,0,1,12,144\\}"
      --expect "heptane setups: 1 full \\(new pattern\\), 1 values-only" --reject MISMATCH
      -- ${host} -use_dm 0 -dof 2 -solves 2)
    # a new pattern in the Newton loop (entries added far off the diagonal, among the couplings to
    # other ranks): every rank builds again, with new slot maps, then refreshes values only
    heptane_plugin_test(plugin_host_three_ranks_new_pattern_in_newton_loop
      ${solves} ${host_checks} --its-diff 2 --
    --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -ksp_view"
      --expect "heptane setups: 2 full \\(new pattern\\), 1 values-only" --reject MISMATCH
      -- ${host} -use_dm 0 -dof 2 -solves 3 -new_pattern_at 2)
    foreach(np 2 3)
      heptane_plugin_test(plugin_host_${np}_ranks_mpibaij_matches_bcgs
        ${solves} ${host_checks} --solves 2 --
        --plugin ${plugin_so} --mpiexec "${np${np}}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view"
        --expect "PETSc matrix mpibaij" --expect "rows read from the MPIBAIJ's two SeqBAIJ blocks"
        --expect "heptane setups: 1 full \\(new pattern\\), 1 values-only" --reject MISMATCH -- ${host} -use_dm 0 -mat_type baij -dof 2 -solves 2)
      heptane_plugin_test(plugin_host_${np}_ranks_mpisbaij_hcg_matches_cg
        ${solves} ${host_checks} --its-diff 2 --solves 2 --
        --plugin ${plugin_so} --mpiexec "${np${np}}" --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
        --expect "PETSc matrix mpisbaij" --expect "symmetry check .*: the matrix is marked symmetric" --reject MISMATCH
        -- ${host} -use_dm 0 -mat_type sbaij -convection 0 -solves 2)
    endforeach()
    heptane_plugin_test(plugin_host_two_ranks_hcg_nonsymmetric_stops
      ${solves} --reason DIVERGED_INDEFINITE_MAT --its host=0:0 --solves 1 --
      --plugin ${plugin_so} --mpiexec "${np2}" --heptane "-ksp_type hcg -ksp_view"
      --expect "KSP hcg: the matrix is not symmetric \\(NOT symmetric: a\\([0-9]+, [0-9]+\\) = .* but a\\([0-9]+, [0-9]+\\) = .* \\(relative difference .* > -heptane_symmetry_tol 1e-08\\)\\)" -- ${host} -use_dm 0)
    # a numbering that is no grid's and no DMDA to renumber by: heptane's loop and preconditioner
    # around heptane's distributed CSR operator (CPU ranks; before 2026-12-05 PETSc's own
    # MatMult, which GPU ranks keep), the same iterations as PETSc's bcgs with the same PC, in
    # every precision
    set(dcsr "heptane structure: the global numbering is not a grid's, so the operator is heptane's distributed CSR")
    heptane_plugin_test(plugin_host_two_ranks_any_numbering_on_distributed_csr
      ${solves} ${host_checks} --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref ${ref_bcgs} --heptane "-ksp_type hbcgs -ksp_view"
      --expect "${dcsr}" --expect "heptane operator: csr rows .0, [0-9]+\\) of [0-9]+ on rank 0/2, [0-9]+ \\+ [0-9]+ entries, halo [0-9]+ columns from 1 ranks by host, reductions by mpi, fp64 on cpu \\([0-9]+ threads\\) \\(PETSc matrix mpiaij\\)"
      --expect "heptane values-only update: values copied into the distributed CSR operator's arrays"
      --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -dof 2 -solves 2)
    heptane_plugin_test(plugin_host_three_ranks_any_numbering_baij_pbjacobi
      ${solves} ${host_checks} --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type pbjacobi" --heptane "-ksp_type hbcgs -pc_type pbjacobi -ksp_view"
      --expect "${dcsr}" --expect "heptane operator: csr rows .* from 2 ranks by host, reductions by mpi, fp64 on cpu \\([0-9]+ threads\\) \\(PETSc matrix mpibaij\\)"
      --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -mat_type baij -dof 3 -solves 2)
    foreach(prec single mixed)
      set(refined "")
      if(prec STREQUAL "mixed")
        set(refined --expect "refined against the fp64 matrix \\(-heptane_refine\\), corrections: [1-9]")
      endif()
      heptane_plugin_test(plugin_host_two_ranks_any_numbering_distributed_csr_${prec}
        ${solves} --max-error 1e-3 --its-diff 3 --solves 2 --
        --plugin ${plugin_so} --tol 1e-4 --mpiexec "${np2}" --ref "${ref_bcgs} -ksp_rtol 1e-5" --heptane "-ksp_type hbcgs -ksp_rtol 1e-5 -heptane_precision ${prec} -ksp_view"
        --expect "${dcsr}" --expect "heptane operator: csr rows .*, fp32( values/fp64 vectors)? on cpu" ${refined}
        --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -dof 2 -solves 2)
    endforeach()
    # ... on GPUs (ranks share one where there are fewer GPUs than ranks; skipped without a GPU):
    # the operator on the device, the rows the other ranks read packed there and staged through
    # the host (before 2026-12-05 GPU ranks ran PETSc's MatMult on the host instead); fp64 and
    # mixed, and three ranks of which one owns no rows
    if(HEPTANE_HAVE_CUDA)
      set(any_gpu "nvidia-smi -L 2>/dev/null | grep -q '^GPU' || exit 77 && exec \"$@\"")
      set(dcsr_gpu "heptane operator: csr rows .0, [0-9]+\\) of [0-9]+ on rank 0/[23], [0-9]+ \\+ [0-9]+ entries, halo [0-9]+ columns from [12] ranks by staged, reductions by mpi, fp")
      heptane_plugin_test(plugin_host_two_ranks_any_numbering_distributed_csr_gpu
        sh -c "${any_gpu}" sh ${solves} ${host_checks} --its-diff 1 --solves 2 --
        --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view"
        --expect "${dcsr}" --expect "${dcsr_gpu}64 on cuda"
        --expect "heptane values-only update: values copied into the distributed CSR operator's arrays"
        --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -dof 2 -solves 2)
      heptane_plugin_test(plugin_host_two_ranks_any_numbering_distributed_csr_gpu_mixed
        sh -c "${any_gpu}" sh ${solves} --max-error 1e-3 --its-diff 3 --solves 2 --
        --plugin ${plugin_so} --tol 1e-4 --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type jacobi -ksp_rtol 1e-5" --heptane "-ksp_type hbcgs -pc_type jacobi -ksp_rtol 1e-5 -heptane_precision mixed -heptane_device gpu -ksp_view"
        --expect "${dcsr}" --expect "${dcsr_gpu}32 values/fp64 vectors on cuda"
        --expect "refined against the fp64 matrix \\(-heptane_refine\\), corrections: [1-9]"
        --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -dof 2 -solves 2)
      heptane_plugin_test(plugin_host_three_ranks_rank_1_owns_no_rows_distributed_csr_gpu
        sh -c "${any_gpu}" sh ${solves} ${host_checks} --its-diff 1 --solves 2 --
        --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_device gpu -ksp_view"
        --expect "${dcsr}" --expect "${dcsr_gpu}64 on cuda"
        --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -dof 2 -solves 2 -empty_rank 1)
      set_tests_properties(plugin_host_two_ranks_any_numbering_distributed_csr_gpu
        plugin_host_two_ranks_any_numbering_distributed_csr_gpu_mixed
        plugin_host_three_ranks_rank_1_owns_no_rows_distributed_csr_gpu
        PROPERTIES LABELS "plugin;gpu" SKIP_RETURN_CODE 77)
    endif()
    # ... with a rank that owns no rows
    heptane_plugin_test(plugin_host_three_ranks_rank_1_owns_no_rows_distributed_csr
      ${solves} ${host_checks} --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "${dcsr}" --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -dof 2 -solves 2 -empty_rank 1)
    # hcg with a preconditioner on a rank that owns no rows: that rank's preconditioner is an
    # empty one of the same kind, so its CG takes the preconditioned path with the others
    # (before 2026-12-05 it was the identity there, its CG skipped a reduction the others made,
    # and the solve hung); -convection 0 -dof 1: symmetric
    heptane_plugin_test(plugin_host_two_ranks_rank_0_owns_no_rows_hcg_jacobi
      ${solves} ${host_checks} --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -ksp_view"
      --expect "${dcsr}" --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -convection 0 -solves 2 -empty_rank 0)
    heptane_plugin_test(plugin_host_two_ranks_rank_0_owns_no_rows_hcg_hamg
      ${solves} ${host_checks} --max-its-ratio 2 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --tol 1e-4 --ref "-ksp_type cg -pc_type gamg" --heptane "-ksp_type hcg -pc_type hamg -ksp_view"
      --expect "${dcsr}" --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -convection 0 -solves 2 -empty_rank 0)
    # PETSc's own PC (asm) failing on the rank that owns rows (a zero pivot: every pivot below
    # -sub_pc_factor_zeropivot 1e3) and not on the rank that owns none: KSP_DIVERGED_PC_FAILED on
    # both, as PETSc's bcgs says (before 2026-12-05 the rank with rows stopped, the other went on
    # into the solve's reductions alone and the run hung)
    heptane_plugin_test(plugin_host_two_ranks_rank_1_owns_no_rows_petsc_pc_fails
      ${solves} --reason DIVERGED_PC_FAILED --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --heptane "-ksp_type hbcgs -pc_type asm -sub_pc_factor_zeropivot 1e3"
      --expect "solve 2 N=81 its=0 reason=DIVERGED_PC_FAILED" --reject MISMATCH
      -- ${host} -n 9 -dim 2 -use_dm 0 -permute 1 -solves 2 -empty_rank 1)
    # the global coarse correction, a rank that owns no rows, a Newton loop of three solves: kept
    # or made anew on every rank alike (before 2026-12-05 the empty rank kept it and the others
    # made it anew at the second solve: a hang)
    heptane_plugin_test(plugin_host_three_ranks_rank_0_owns_no_rows_coarse_newton
      ${solves} ${host_checks} --max-its-ratio 2 --solves 3 --
      --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type jacobi" --heptane "-ksp_type hbcgs -pc_type jacobi -heptane_coarse -ksp_view"
      --expect "heptane global coarse correction" --reject MISMATCH -- ${host} -use_dm 0 -dof 3 -mat_type baij -solves 3 -empty_rank 0)
    # an MPISBAIJ whose new pattern is new on one rank only (-new_pattern_at: an entry in rank
    # 0's rows): every rank makes its AIJ copy anew together (before 2026-12-05 rank 1 reused its
    # copy while rank 0 made a new one, inside a collective MatConvert: the solve hung)
    heptane_plugin_test(plugin_host_two_ranks_sbaij_new_pattern_on_one_rank
      ${solves} ${host_checks} --its-diff 1 --solves 3 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type none" --heptane "-ksp_type hbcgs -pc_type none -ksp_view"
      --expect "${dcsr}" --reject MISMATCH -- ${host} -use_dm 0 -permute 1 -convection 0 -mat_type sbaij -solves 3 -new_pattern_at 2)
    # ... mixed precision refined there: the ranks' norms summed in the refinement (before
    # 2026-12-05 each rank's own: the rank without rows said "converged" at once and the others
    # waited in the next product -- a segmentation fault)
    heptane_plugin_test(plugin_host_three_ranks_empty_rank_mixed_refined
      ${solves} --max-error 1e-7 --its-diff 3 --solves 2 --
      --plugin ${plugin_so} --tol 1e-6 --mpiexec "${np3}" --ref "${ref_bcgs} -ksp_rtol 1e-9" --heptane "-ksp_type hbcgs -heptane_precision mixed -ksp_rtol 1e-9 -ksp_view"
      --expect "fp32 values/fp64 vectors" --expect "refined against the fp64 matrix \\(-heptane_refine\\), corrections: [1-9]"
      -- ${host} -use_dm 0 -permute 1 -empty_rank 1 -solves 2)
    # asked for on a grid's natural numbering (a DMDA split along z): -heptane_format csr
    heptane_plugin_test(plugin_host_two_ranks_heptane_format_csr
      ${solves} ${host_checks} --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -heptane_format csr -ksp_view"
      --expect "heptane structure: -heptane_format csr: the operator is heptane's distributed CSR" --expect "heptane operator: csr rows"
      --reject MISMATCH -- ${host} -dof 2 -solves 2)
    # a layout where one rank owns no rows (MatSetSizes with a local size of 0): every rank's
    # part of the setup, the products and the preconditioners take the empty rank in their
    # stride; the same iterations and solution as PETSc's own bcgs with the same PC
    foreach(empty 0 1)
      heptane_plugin_test(plugin_host_three_ranks_rank_${empty}_owns_no_rows_ilu
        ${solves} ${host_checks} --its-diff 1 --solves 2 --
        --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
        --expect "heptane setups: 1 full \\(new pattern\\), 1 values-only" --reject MISMATCH
        -- ${host} -use_dm 0 -dof 2 -solves 2 -empty_rank ${empty})
    endforeach()
    heptane_plugin_test(plugin_host_three_ranks_one_owns_no_rows_hgmres_hamg_coarse
      ${solves} ${host_checks} --its host=5:30 --ref-its host=3:30 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hgmres -pc_type hamg -heptane_coarse -ksp_view"
      --expect "heptane global coarse correction" --reject MISMATCH -- ${host} -use_dm 0 -dof 2 -solves 2 -empty_rank 2)
    # the AMG and CPR over the ranks with a rank that owns no rows (its levels empty, its
    # messages none): the known solution, as with PETSc's gamg
    foreach(pc hamg hcpr)
      heptane_plugin_test(plugin_host_three_ranks_one_owns_no_rows_hgmres_${pc}_global
        ${solves} ${host_checks} --its host=3:30 --ref-its host=3:30 --solves 2 --
        --plugin ${plugin_so} --mpiexec "${np3}" --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type hgmres -pc_type ${pc} -heptane_amg_global -ksp_view"
        --expect "over the ranks \\(-heptane_amg_global: asked for\\), applied instead of each rank's" --reject MISMATCH --reject WARNING
        -- ${host} -use_dm 0 -dof 2 -solves 2 -empty_rank 1)
    endforeach()
    heptane_plugin_test(plugin_host_three_ranks_one_owns_no_rows_petsc_cg_hamg_pc
      ${solves} ${host_checks} --its host=3:30 --ref-its host=3:30 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np3}" --ref "-ksp_type cg -pc_type gamg" --heptane "-ksp_type cg -pc_type hamg"
      --reject MISMATCH -- ${host} -use_dm 0 -convection 0 -solves 2 -empty_rank 0)
    # a matrix-free Amat (a MATSHELL with A's product; Pmat assembled, as -snes_mf_operator gives):
    # heptane's KSPs build their operator and preconditioner from Pmat and multiply by Amat
    # (PETSc's MatMult); under the natural map (a DMDA split in x) Amat's products are scattered
    # to PETSc's numbering and back. PETSc's KSP with heptane's PC, built from Pmat, solves as with gamg
    heptane_plugin_test(plugin_host_two_ranks_shell_amat_hbcgs_ilu
      ${solves} ${host_checks} --its-diff 2 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type shell\\)"
      --reject MISMATCH -- ${host} -use_dm 0 -dof 2 -solves 2 -shell_amat 1)
    heptane_plugin_test(plugin_host_two_ranks_reuse_preconditioner_keeps_hamg
      ${solves} ${host_checks} --its host=3:30 --ref-its host=3:60 --solves 3 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type gamg -ksp_reuse_preconditioner" --heptane "-ksp_type hbcgs -pc_type hamg -ksp_reuse_preconditioner -ksp_view"
      --expect "heptane preconditioner reused: 2 values-only setups kept it as it was" --reject MISMATCH -- ${host} -solves 3)
    # a declared null space on two ranks (the DMDA split in y: the natural map): the AMG over
    # the ranks with its coarsest level by a generalized inverse, the constant removed over the ranks
    heptane_plugin_test(plugin_host_two_ranks_neumann_null_space_hcg_hamg
      ${solves} ${host_checks} --its host=3:60 --ref-its host=3:30 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type cg -pc_type gamg" --heptane "-ksp_type hcg -pc_type hamg -ksp_view"
      --expect "heptane null space: Amat's \\(MatSetNullSpace, 1 vector\\) removed from the solution's correction"
      --expect "a null space declared \\(MatSetNullSpace\\): the coarsest level by a generalized inverse"
      --reject MISMATCH -- ${host} -neumann 1 -convection 0 -solves 2 -x0 1)
    heptane_plugin_test(plugin_host_two_ranks_host_convergence_test_hbcgs_ilu
      ${solves} --max-error 1e-3 --its-diff 1 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "host: convergence test called [0-9]+ times, last at iteration [0-9]+, said CONVERGED_RTOL"
      --reject MISMATCH -- ${host} -host_test 1 -solves 2)
    # the iterate inside a monitor on two ranks split in x (PETSc's order is not the grid's:
    # x_i scattered from the natural order)
    heptane_plugin_test(plugin_host_two_ranks_monitor_true_residual_sees_each_iterate
      ${solves} ${host_checks} --its-diff 2 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "host: true-residual monitor checked [0-9]+ iterates" --expect "heptane numbering: " --expect "heptane monitors: one may build the iterate"
      --reject "WARNING \\(heptane\\): a monitor asked" --reject MISMATCH -- ${host} -dof 2 -solves 2 -x0 1 -da_processors_x 2 -true_residual_monitor 1)
    # -heptane_coarse around each rank's jacobi with the null space declared: the singular A_c
    # solved by a generalized inverse (before 2026-12-03: refused, a warning, no coarse correction)
    heptane_plugin_test(plugin_host_two_ranks_neumann_null_space_coarse_hcg_jacobi
      ${solves} ${host_checks} --its host=3:60 --ref-its host=3:120 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type cg -pc_type jacobi" --heptane "-ksp_type hcg -pc_type jacobi -heptane_coarse -ksp_view"
      --expect "a generalized inverse \\(null space declared: rank [0-9]+ of [0-9]+\\) on every rank"
      --reject "WARNING \\(heptane\\): -heptane_coarse" --reject MISMATCH -- ${host} -neumann 1 -convection 0 -solves 2 -x0 1)
    heptane_plugin_test(plugin_host_two_ranks_mffd_amat_hgmres_ilu_matches_gmres
      ${solves} --max-error 1e-6 --its-diff 2 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "-ksp_type gmres -ksp_pc_side right -pc_type bjacobi" --heptane "-ksp_type hgmres -pc_type ilu -ksp_view"
      --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat \\(type mffd\\), which is not its Pmat \\(type mpiaij\\)"
      -- ${host} -dof 2 -solves 2 -mffd_amat 1)
    heptane_plugin_test(plugin_host_two_ranks_x_split_shell_amat_pmat_differs
      ${solves} ${host_checks} --its-diff 2 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "heptane numbering: the DMDA is split 2 x 1 x 1" --expect "heptane Krylov products: PETSc's MatMult of the KSP's Amat"
      --reject MISMATCH -- ${host} -dof 2 -da_processors_x 2 -solves 2 -shell_amat 1 -pmat_shift 10)
    # a block added in preallocated room (PETSc 3.18's MPIBAIJ keeps its nonzero state: this
    # rank's count of entries says it; before, the values-only refresh stopped) and a DMDA's
    # matrix off its stencil (the operator PETSc's MatMult then, instead of stopping)
    heptane_plugin_test(plugin_host_two_ranks_mpibaij_block_added_in_preallocated_room
      ${solves} ${host_checks} --its-diff 2 --solves 3 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "heptane setups: 2 full \\(new pattern\\), 1 values-only"
      --reject MISMATCH -- ${host} -dof 2 -solves 3 -dm_mat_type baij -new_pattern_at 2)
    heptane_plugin_test(plugin_host_two_ranks_dmda_entry_off_the_stencil_distributed_csr
      ${solves} ${host_checks} --its-diff 2 --solves 3 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type bjacobi" --heptane "-ksp_type hbcgs -pc_type ilu -ksp_view"
      --expect "the matrix is not on its DMDA's stencil, so the operator is heptane's distributed CSR"
      --reject MISMATCH -- ${host} -dof 2 -solves 3 -new_pattern_at 2)
    heptane_plugin_test(plugin_host_two_ranks_shell_amat_petsc_bcgs_hamg_pc
      ${solves} ${host_checks} --its host=3:30 --ref-its host=3:30 --solves 2 --
      --plugin ${plugin_so} --mpiexec "${np2}" --ref "${ref_bcgs} -pc_type gamg" --heptane "-ksp_type bcgs -pc_type hamg"
      --reject MISMATCH -- ${host} -use_dm 0 -dof 2 -solves 2 -shell_amat 1)
    heptane_plugin_test(plugin_host_two_ranks_not_natural_order_is_an_error
      ${compare} --mpiexec "${np2}" --heptane "-ksp_type hbcgs -heptane_grid 24,6,12"
      --expect-error "block offset -12, which is not one of the 7 of the 24x6x12 grid.*not the grid's natural order"
      -- ${host} -use_dm 0)
    heptane_plugin_test(plugin_host_two_ranks_rows_not_on_blocks_is_an_error
      ${compare} --mpiexec "${np2}" --heptane "-ksp_type hbcgs -heptane_block 5"
      --expect-error "rank 0 of 2: it owns rows .0, 1332\\), not whole blocks of Nc = 5"
      -- ${host} -use_dm 0 -dof 2 -n 11)
  else()
    heptane_plugin_test(plugin_two_ranks_fail_with_a_clear_message
      ${compare} --mpiexec "${np2}" --heptane "-ksp_type hbcgs"
      --expect-error "this build of the plugin has no distributed operator" -- ${host})
  endif()
endif()
