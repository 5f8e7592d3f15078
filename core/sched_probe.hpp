// Who ran on the machine's CPUs over a stretch of work, by the Linux scheduler's own account of
// each thread (/proc/<pid>/task/<tid>/schedstat: nanoseconds on a CPU, nanoseconds runnable but
// waiting for one). A snapshot before the work and one after tell how long the work's own
// threads waited to run and which other threads -- of this process or of others -- ran
// meanwhile. A diagnostic (the plugin's host copies, HEPTANE_UPLOAD_SCHEDSTAT): where /proc has
// no schedstat (not Linux, or a kernel without CONFIG_SCHED_INFO) the snapshots are empty and
// the report says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace heptane {

struct TaskSched {
    int pid = 0, tid = 0;
    std::uint64_t run_ns = 0, wait_ns = 0;  // on a CPU; runnable, waiting for one
};

struct SchedSnapshot {
    std::vector<TaskSched> tasks;  // sorted by (pid, tid)
    double took_ms = 0;            // the time reading /proc took
    /// This process's threads, and every process's threads when all_processes (a few ms on a
    /// machine with ~1000 threads). Empty where /proc gives no schedstat.
    static SchedSnapshot take(bool all_processes);
};

struct SchedDelta {
    bool available = false;       // both snapshots had this process's threads
    int team_threads = 0;         // of `team` found in both snapshots
    double team_run_ms = 0;       // the team's threads: on a CPU,
    double team_wait_ms = 0;      //   runnable but waiting for a CPU
    double process_other_ms = 0;  // this process's other threads, on a CPU
    double others_ms = 0;         // other processes' threads, on a CPU (all_processes snapshots)
    /// The busiest threads outside the team (0.1 ms or more), most first, at most top_n: "comm
    /// (pid/tid)" and ms; comm "?" for a thread gone by the time sched_delta reads it; for this
    /// process's threads also what it is doing then: " [state, user and system CPU ms since it
    /// started, running or in system call N]".
    std::vector<std::pair<std::string, double>> top;
    /// One line for a person: "the N copy threads ran X ms and waited Y ms for a CPU; this
    /// process's other threads ran Z ms, other processes W ms; busiest: ...".
    std::string text() const;
};

/// What ran between two snapshots; `team`: thread ids (this_thread_id) of this process's
/// threads doing the work; top_n: how many of the busiest other threads SchedDelta::top names.
/// A thread in `after` only (started in between) counts from zero.
SchedDelta sched_delta(const SchedSnapshot& before, const SchedSnapshot& after,
                       const std::vector<int>& team, std::size_t top_n = 4);

/// The calling thread's id as the kernel numbers it (gettid), 0 where there is none.
int this_thread_id();

}  // namespace heptane
