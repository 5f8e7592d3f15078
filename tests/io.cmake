# Matrix Market I/O (generators/matrix_market.*): unit tests on generated files, and the real
# matrices of ../shared/data.
heptane_add_test(test_matrix_market SOURCES test_matrix_market.cpp)
heptane_add_test(test_matrix_market_data SOURCES test_matrix_market_data.cpp DATA)
