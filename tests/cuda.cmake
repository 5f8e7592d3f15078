# CUDA SpMV kernels and cuSPARSE baselines (formats/*/*.cu, formats/csr/cusparse_baseline.*).
#
# test_cuda_spmv is GPU-only: it compares every CUDA kernel, kernel choice and launch shape
# with the CPU reference and has nothing to test on the CPU. So, unlike heptane_add_test, only
# its _gpu variant is registered (label gpu, HEPTANE_TEST_DEVICE=cuda), and only in builds with
# the CUDA back end (it calls the CUDA overloads directly). Without a device, or run by hand
# without HEPTANE_TEST_DEVICE=cuda, the program prints why and exits 77 (skipped).
if(HEPTANE_HAVE_CUDA)
  add_executable(test_cuda_spmv test_cuda_spmv.cpp $<TARGET_OBJECTS:heptane_test_main0>)
  target_link_libraries(test_cuda_spmv PRIVATE heptane)
  target_include_directories(test_cuda_spmv PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(test_cuda_spmv PRIVATE
    HEPTANE_TEST_DATA_DIR="${HEPTANE_TEST_DATA_DIR}")
  add_test(NAME test_cuda_spmv_gpu COMMAND test_cuda_spmv)
  set_tests_properties(test_cuda_spmv_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;cuda"
    ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
endif()
