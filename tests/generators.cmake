# Generators: general-hepta systems (generators/hepta.*).
heptane_add_test(test_generators SOURCES test_generators.cpp)

# heptane gen --model channelized end to end: help text, a small system written and read back.
if(TARGET heptane_cli)
  add_test(NAME cli_gen_channelized COMMAND sh -c [=[
set -e
"$1" gen --help | grep -q channelized
"$1" gen --grid 16x12x8 --nc 1 --model channelized --seed 3 --quiet -o "$2/ch_A.mtx" --rhs "$2/ch_b.mtx"
grep -q "channelized (difficulty 0), seed 3" "$2/ch_A.mtx"
"$1" info "$2/ch_A.mtx" | grep -q "1536"
if "$1" gen --grid 4x4x4 --model channel -o "$2/ch_bad.mtx" 2>"$2/ch_err.txt"; then exit 1; fi
grep -q "uniform, reservoir or channelized" "$2/ch_err.txt"
]=] sh $<TARGET_FILE:heptane_cli> ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(cli_gen_channelized PROPERTIES LABELS "cpu;generators" TIMEOUT 120)
endif()
