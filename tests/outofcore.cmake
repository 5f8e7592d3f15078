# Out-of-core operator: chunking, products against a long-double reference and every in-core
# format, residencies and buffer reuse on a GPU, MLEM and CG through it.
heptane_add_test(test_outofcore SOURCES test_outofcore.cpp GPU)
# --out-of-core on the command line (spmv, mlem, lsqr, solve) against in-core runs
if(TARGET heptane_cli)
  add_test(NAME cli_outofcore COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_outofcore.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_outofcore PROPERTIES TIMEOUT 300 LABELS "cpu;cli")
  if(HEPTANE_HAVE_CUDA)
    add_test(NAME cli_outofcore_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_outofcore.sh
      $<TARGET_FILE:heptane_cli>)
    set_tests_properties(cli_outofcore_gpu PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
      LABELS "gpu;cli" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endif()
endif()
