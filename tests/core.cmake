# Core helpers (core/): the scheduler's per-thread account (core/sched_probe.*) against the
# thread's own CPU clock and a child process's CPU time.
heptane_add_test(test_sched_probe SOURCES test_sched_probe.cpp)
