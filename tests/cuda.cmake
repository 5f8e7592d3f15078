# CUDA SpMV kernels and cuSPARSE baselines (formats/*/*.cu, formats/csr/cusparse_baseline.*).
#
# test_cuda_spmv is GPU-only: it compares every CUDA kernel, kernel choice and launch shape
# with the CPU reference and has nothing to test on the CPU. So, unlike heptane_add_test, only
# its _gpu variant is registered (label gpu, HEPTANE_TEST_DEVICE=cuda), and only in builds with
# the CUDA back end (it calls the CUDA overloads directly); test_pinned_upload (the plugin's
# uploads) likewise. Without a device, or run by hand without HEPTANE_TEST_DEVICE=cuda, the
# program prints why and exits 77 (skipped).
if(HEPTANE_HAVE_CUDA)
  function(heptane_add_gpu_only_test name)
    add_executable(${name} ${ARGN} $<TARGET_OBJECTS:heptane_test_main0>)
    target_link_libraries(${name} PRIVATE heptane)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_definitions(${name} PRIVATE HEPTANE_TEST_DATA_DIR="${HEPTANE_TEST_DATA_DIR}")
    add_test(NAME ${name}_gpu COMMAND ${name})
    set_tests_properties(${name}_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;cuda"
      ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endfunction()
  heptane_add_gpu_only_test(test_cuda_spmv test_cuda_spmv.cpp)
  # the plugin's host-to-device uploads (plugin/pinned_upload.cpp, no PETSc in it)
  heptane_add_gpu_only_test(test_pinned_upload test_pinned_upload.cpp
    ${PROJECT_SOURCE_DIR}/plugin/pinned_upload.cpp)
  # the same cases with the host copies on the upload's own thread pool (HEPTANE_UPLOAD_TEAM=pool;
  # the default is the OpenMP team)
  add_test(NAME test_pinned_upload_pool_gpu COMMAND test_pinned_upload)
  set_tests_properties(test_pinned_upload_pool_gpu PROPERTIES SKIP_RETURN_CODE 77
    LABELS "gpu;cuda" ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda;HEPTANE_UPLOAD_TEAM=pool")
endif()
