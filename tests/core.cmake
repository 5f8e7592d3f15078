# Core helpers (core/): the scheduler's per-thread account (core/sched_probe.*) against the
# thread's own CPU clock and a child process's CPU time.
heptane_add_test(test_sched_probe SOURCES test_sched_probe.cpp)
# The host copies' thread pool (core/worker_pool.*): every piece once, exceptions, callers
# taking turns, the caller finishing a job while its workers are held.
heptane_add_test(test_worker_pool SOURCES test_worker_pool.cpp)
