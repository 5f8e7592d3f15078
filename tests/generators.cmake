# Generators: general-hepta systems (generators/hepta.*).
heptane_add_test(test_generators SOURCES test_generators.cpp)
