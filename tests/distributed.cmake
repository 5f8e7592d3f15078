# The distributed operator and solvers on real MPI ranks: the same program under mpirun with
# 1, 2 and 3 ranks (3: an uneven split), on the CPU and, as *_gpu, on GPUs.
if(TARGET heptane_distributed)
  heptane_add_test(test_distributed SOURCES test_distributed.cpp GPU LABELS distributed)
  target_link_libraries(test_distributed PRIVATE heptane_distributed)
  # the plain registration runs on one rank; add the multi-rank ones
  set(mpi_flags ${MPIEXEC_PREFLAGS})
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE mpi_version
    ERROR_QUIET)
  if(mpi_version MATCHES "Open MPI|OpenRTE")
    # CI runs as root in containers with fewer cores than ranks
    list(APPEND mpi_flags --oversubscribe --allow-run-as-root)
  endif()
  foreach(np 2 3)
    add_test(NAME test_distributed_np${np} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG}
      ${np} ${mpi_flags} $<TARGET_FILE:test_distributed>)
    set_tests_properties(test_distributed_np${np} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
      LABELS "cpu;distributed" ENVIRONMENT "OMP_NUM_THREADS=1;CUDA_MODULE_LOADING=EAGER")
    add_test(NAME test_distributed_np${np}_gpu COMMAND ${MPIEXEC_EXECUTABLE}
      ${MPIEXEC_NUMPROC_FLAG} ${np} ${mpi_flags} $<TARGET_FILE:test_distributed>)
    set_tests_properties(test_distributed_np${np}_gpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
      LABELS "gpu;distributed" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;OMP_NUM_THREADS=1;CUDA_MODULE_LOADING=EAGER")
  endforeach()
  # four ranks: on a machine with four GPUs each rank has its own (peer and NCCL on 4 GPUs)
  add_test(NAME test_distributed_np4_gpu COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4
    ${mpi_flags} $<TARGET_FILE:test_distributed>)
  set_tests_properties(test_distributed_np4_gpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    LABELS "gpu;distributed" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;OMP_NUM_THREADS=1;CUDA_MODULE_LOADING=EAGER")
endif()

# heptane mlem under mpirun, each rank streaming its own rows, against one process
if(TARGET heptane_distributed AND TARGET heptane_cli)
  add_test(NAME cli_mlem_mpirun COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_mlem_mpirun.sh
    $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
  set_tests_properties(cli_mlem_mpirun PROPERTIES TIMEOUT 600 LABELS "cpu;distributed;cli"
    ENVIRONMENT "OMP_NUM_THREADS=1")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_mlem_mpirun_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_mlem_mpirun.sh
      $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
    set_tests_properties(cli_mlem_mpirun_gpu PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
      LABELS "gpu;distributed;cli"
      ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;OMP_NUM_THREADS=1;CUDA_MODULE_LOADING=EAGER")
  endif()
endif()

# heptane mlem --subsets under mpirun (OSEM over the ranks) against a NumPy reference
if(TARGET heptane_distributed AND TARGET heptane_cli)
  add_test(NAME cli_osem_mpirun COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_osem_mpirun.sh
    $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
  set_tests_properties(cli_osem_mpirun PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
    LABELS "cpu;distributed;cli" ENVIRONMENT "OMP_NUM_THREADS=1")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_osem_mpirun_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_osem_mpirun.sh
      $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
    set_tests_properties(cli_osem_mpirun_gpu PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
      LABELS "gpu;distributed;cli"
      ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;OMP_NUM_THREADS=1;CUDA_MODULE_LOADING=EAGER")
  endif()
endif()

# heptane solve under mpirun against one process (tests/cli_distributed.sh)
if(TARGET heptane_distributed AND TARGET heptane_cli)
  add_test(NAME cli_solve_mpirun COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_distributed.sh
    $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
  set_tests_properties(cli_solve_mpirun PROPERTIES TIMEOUT 600 LABELS "cpu;distributed"
    ENVIRONMENT "OMP_NUM_THREADS=1")
  # --solver cg stops on a matrix that is not symmetric, on one process and on 2 ranks
  add_test(NAME cli_cg_symmetry COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_cg_symmetry.sh
    $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
  set_tests_properties(cli_cg_symmetry PROPERTIES TIMEOUT 300 LABELS "cpu;cli;distributed"
    ENVIRONMENT "OMP_NUM_THREADS=1")
  # --null-space constant on 2 ranks too (one AMG per rank, and over the ranks)
  add_test(NAME cli_null_space_mpirun COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_null_space.sh
    $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
  set_tests_properties(cli_null_space_mpirun PROPERTIES TIMEOUT 300 LABELS "cpu;distributed"
    ENVIRONMENT "OMP_NUM_THREADS=1")
  # the same on GPUs (one per rank where there are enough); skipped without a GPU
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_solve_mpirun_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_distributed.sh
      $<TARGET_FILE:heptane_cli> ${MPIEXEC_EXECUTABLE} ${mpi_flags})
    set_tests_properties(cli_solve_mpirun_gpu PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
      LABELS "gpu;distributed"
      ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;OMP_NUM_THREADS=1;CUDA_MODULE_LOADING=EAGER")
  endif()
endif()
