# Solver layer: vector kernels and fused steps, preconditioners, BiCGStab and CG, the
# one-call solve_system, and the real matrices. Each program also runs on the GPU (_gpu).
find_package(Eigen3 3.3 REQUIRED NO_MODULE)

heptane_add_test(test_solver_kernels SOURCES test_solver_kernels.cpp GPU LABELS solver)
heptane_add_test(test_solver SOURCES test_solver.cpp GPU LABELS solver)
target_link_libraries(test_solver PRIVATE Eigen3::Eigen)
# the same program with BiCGStab's L2 window on (HEPTANE_L2=3: p, r, v persisting; kernel
# nodes of the recorded graphs carry it): the same answers as without it
add_test(NAME test_solver_l2_gpu COMMAND test_solver)
set_tests_properties(test_solver_l2_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;solver"
  ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;HEPTANE_L2=3")
# and with the paired Nc = 1 forms at every size (HEPTANE_PAIRS=1; by default only from 2^20
# rows, above these tests' systems): CUDA graphs and plain launches still agree bit for bit
add_test(NAME test_solver_pairs_gpu COMMAND test_solver)
set_tests_properties(test_solver_pairs_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;solver"
  ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;HEPTANE_PAIRS=1")
heptane_add_test(test_solver_data SOURCES test_solver_data.cpp DATA GPU LABELS solver)
heptane_add_test(test_precond_mc SOURCES test_precond_mc.cpp GPU LABELS solver)
target_link_libraries(test_precond_mc PRIVATE Eigen3::Eigen)
# values-only updates of every preconditioner (update_values) and the factorisation's bits
heptane_add_test(test_precond_update SOURCES test_precond_update.cpp GPU LABELS solver)
# the CPU triangular solves: natural order and level schedule agree (CPU kernels only)
heptane_add_test(test_precond_cpu SOURCES test_precond_cpu.cpp LABELS solver)
# algebraic multigrid and CPR against dense Eigen products and solutions
heptane_add_test(test_amg SOURCES test_amg.cpp GPU LABELS solver)
target_link_libraries(test_amg PRIVATE Eigen3::Eigen)
# GMRES(m) against SparseLU, BiCGStab and itself, the Solver interface (make_solver)
heptane_add_test(test_gmres SOURCES test_gmres.cpp GPU LABELS solver)
target_link_libraries(test_gmres PRIVATE Eigen3::Eigen)
# GMRES(m)'s floor traffic model (gmres_traffic.hpp): hand counts, and its product counts
# against a solve
heptane_add_test(test_gmres_traffic SOURCES test_gmres_traffic.cpp LABELS solver)
# heptane solve --solver gmres: converged, and the JSON report names the restart
if(TARGET heptane_cli)
  add_test(NAME cli_solve_gmres COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_gmres.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_solve_gmres PROPERTIES TIMEOUT 300 LABELS "cpu;solver")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_solve_gmres_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_gmres.sh
      $<TARGET_FILE:heptane_cli>)
    set_tests_properties(cli_solve_gmres_gpu PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
      LABELS "gpu;solver" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endif()
endif()
# heptane solve --pc amg | cpr, info --verbose, bench precond, end to end
if(TARGET heptane_cli)
  add_test(NAME cli_amg COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_amg.sh $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_amg PROPERTIES TIMEOUT 300 LABELS "cpu;solver")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_amg_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_amg.sh
      $<TARGET_FILE:heptane_cli>)
    set_tests_properties(cli_amg_gpu PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
      LABELS "gpu;solver" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endif()
endif()
# heptane solve --null-space constant on a pure-Neumann Laplacian (tests/cli_null_space.sh;
# under mpirun: cli_null_space_mpirun in distributed.cmake)
if(TARGET heptane_cli)
  add_test(NAME cli_null_space COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_null_space.sh $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_null_space PROPERTIES TIMEOUT 300 LABELS "cpu;solver")
endif()
# AMG and CPR on the real matrices (needs ../shared/data)
heptane_add_test(test_amg_data SOURCES test_amg_data.cpp DATA GPU LABELS solver)
