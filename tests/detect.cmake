# Structure detection (formats/detect/): generated matrices, and the real matrices of
# ../shared/data (DATA: skipped with a message when the folder is missing).
heptane_add_test(test_detect SOURCES test_detect.cpp)
heptane_add_test(test_detect_data SOURCES test_detect_data.cpp DATA)
