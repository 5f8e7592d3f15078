# MLEM / OSEM, LSQR and the PET generator. test_mlem and test_lsqr also run on the GPU (_gpu).
#
# test_lsqr_scipy compares LSQR with scipy.sparse.linalg.lsqr on illc1033 and well1033: ctest
# runs tests/lsqr_reference.py with the system interpreter (/usr/bin/python3, which has
# python3-scipy; the python3 first on PATH may be a build without it), which computes SciPy's
# results at test time and then runs the test program on them. Without that interpreter,
# without scipy or without ../shared/data the test is reported as skipped (exit 77), never
# as passed.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)

heptane_add_test(test_pet SOURCES test_pet.cpp LABELS generators pet)
heptane_add_test(test_mlem SOURCES test_mlem.cpp GPU LABELS solver mlem)
heptane_add_test(test_lsqr SOURCES test_lsqr.cpp GPU LABELS solver lsqr)
target_link_libraries(test_lsqr PRIVATE Eigen3::Eigen)

# The SciPy comparison: built like a DATA test, registered by hand (it runs under the script).
add_executable(test_lsqr_scipy test_lsqr_scipy.cpp $<TARGET_OBJECTS:heptane_test_main1>)
target_link_libraries(test_lsqr_scipy PRIVATE heptane)
target_include_directories(test_lsqr_scipy PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(test_lsqr_scipy PRIVATE
  HEPTANE_TEST_DATA_DIR="${HEPTANE_TEST_DATA_DIR}")
find_program(HEPTANE_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(variant cpu gpu)
  set(name test_lsqr_scipy)
  if(variant STREQUAL "gpu")
    set(name test_lsqr_scipy_gpu)
  endif()
  if(HEPTANE_SYSTEM_PYTHON)
    add_test(NAME ${name} COMMAND ${HEPTANE_SYSTEM_PYTHON}
      ${CMAKE_CURRENT_SOURCE_DIR}/lsqr_reference.py --data ${HEPTANE_TEST_DATA_DIR}
      --out ${CMAKE_CURRENT_BINARY_DIR}/lsqr_reference_${variant}.txt
      --run $<TARGET_FILE:test_lsqr_scipy>)
  else()
    add_test(NAME ${name} COMMAND sh -c
      "echo 'SKIPPED: /usr/bin/python3 not found (install python3-scipy)'; exit 77")
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${variant};solver;lsqr")
  if(variant STREQUAL "gpu")
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "HEPTANE_TEST_DEVICE=cuda")
  endif()
endforeach()

# heptane bench lsqr checks every configuration against the fp64 CPU reference before timing
# it and exits 1 when one FAILED: each precision on a small PET system (fp32 LSQR drifts from
# fp64 on ill-posed systems, so single/mixed are checked on the fitted data after 3 iterations;
# apps/bench_lsqr.cpp).
foreach(prec double single mixed)
  add_test(NAME cli_bench_lsqr_${prec}
    COMMAND $<TARGET_FILE:heptane_cli> bench lsqr --detectors 64 --image 48 --precision ${prec}
      --device cpu --formats csr,coo --reps 1 --iters 3)
  set_tests_properties(cli_bench_lsqr_${prec} PROPERTIES TIMEOUT 120 LABELS "cpu;cli;lsqr")
endforeach()
