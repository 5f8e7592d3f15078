# Matrix Market and PETSc binary I/O (generators/matrix_market.*, petsc_binary.*,
# matrix_file.*): unit tests on generated and hand-made files, and the real matrices of
# ../shared/data.
heptane_add_test(test_matrix_market SOURCES test_matrix_market.cpp)
heptane_add_test(test_matrix_market_data SOURCES test_matrix_market_data.cpp DATA)
heptane_add_test(test_petsc_binary SOURCES test_petsc_binary.cpp)
