# The command line as a whole: every subcommand's usage errors exit 2, failed work 1, and no
# result claims what the true residual denies (README's exit-status promise).
if(TARGET heptane_cli)
  add_test(NAME cli_exit_codes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_exit_codes.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_exit_codes PROPERTIES TIMEOUT 300 LABELS "cpu;cli")
endif()
# heptane bench solve --solver gmres on the CPU: runs, and prints the floor of GMRES(m)'s
# traffic model given --copy-gbs (no speed thresholds)
if(TARGET heptane_cli)
  add_test(NAME cli_bench_solve_gmres COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_bench_solve_gmres.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_bench_solve_gmres PROPERTIES TIMEOUT 300 LABELS "cpu;cli")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_bench_solve_gmres_gpu
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_bench_solve_gmres.sh $<TARGET_FILE:heptane_cli>)
    set_tests_properties(cli_bench_solve_gmres_gpu PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
      LABELS "gpu;cli" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endif()
endif()
# CI's test summary (scripts/ctest_summary.py): skips counted apart and named, a missing test
# group fails
add_test(NAME ctest_summary COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ctest_summary_test.sh
  ${PROJECT_SOURCE_DIR}/scripts/ctest_summary.py)
set_tests_properties(ctest_summary PROPERTIES TIMEOUT 60 LABELS "cpu;cli")
# heptane solve --device auto: small systems on the CPU, the choice printed; on a GPU machine a
# large one on the GPU (apps/common.hpp's measured model)
if(TARGET heptane_cli)
  add_test(NAME cli_device_auto COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_device_auto.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_device_auto PROPERTIES TIMEOUT 300 LABELS "cpu;cli")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_device_auto_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_device_auto.sh
      $<TARGET_FILE:heptane_cli>)
    set_tests_properties(cli_device_auto_gpu PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
      LABELS "gpu;cli" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endif()
endif()
# --solver cg stops on a matrix that is not symmetric (with MPI: tests/distributed.cmake runs
# the same script on 2 ranks too)
if(TARGET heptane_cli AND NOT TARGET heptane_distributed)
  add_test(NAME cli_cg_symmetry COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_cg_symmetry.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_cg_symmetry PROPERTIES TIMEOUT 300 LABELS "cpu;cli")
endif()
