# Formats: conversions COO <-> every format, SpMV and A^T x of every format against the CSR
# kernel and Eigen, the MatrixOperator factory. The same sources run on the CPU and, as
# NAME_gpu, on a CUDA device (tests/CMakeLists.txt).
find_package(Eigen3 3.3 REQUIRED NO_MODULE)

heptane_add_test(test_formats SOURCES test_formats.cpp GPU)
target_link_libraries(test_formats PRIVATE Eigen3::Eigen)

heptane_add_test(test_formats_data SOURCES test_formats_data.cpp GPU DATA)
target_link_libraries(test_formats_data PRIVATE Eigen3::Eigen)
