# The command line as a whole: every subcommand's usage errors exit 2, failed work 1, and no
# result claims what the true residual denies (README's exit-status promise).
if(TARGET heptane_cli)
  add_test(NAME cli_exit_codes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli_exit_codes.sh
    $<TARGET_FILE:heptane_cli>)
  set_tests_properties(cli_exit_codes PROPERTIES TIMEOUT 300 LABELS "cpu;cli")
endif()
