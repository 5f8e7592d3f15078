// core/sched_probe: what the scheduler's per-thread account (/proc/<pid>/task/<tid>/schedstat)
// says ran between two snapshots, checked against independent clocks: the calling thread's
// CPU time (CLOCK_THREAD_CPUTIME_ID) and a child process's own CPU time (its rusage, read by
// the parent through wait4). Where /proc has no schedstat the program exits 77 (skipped).
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/sched_probe.hpp"

using heptane::sched_delta;
using heptane::SchedSnapshot;
using heptane::this_thread_id;

namespace {

double thread_cpu_ms()
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// spins on the calling thread until it has used `ms` of CPU; returns the CPU ms it used
double spin_cpu(double ms)
{
    const double t0 = thread_cpu_ms();
    volatile double x = 1;
    while (thread_cpu_ms() - t0 < ms)
        for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
    return thread_cpu_ms() - t0;
}

void skip_without_schedstat()
{
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", this_thread_id());
    if (std::FILE* f = std::fopen(path, "r")) {
        std::fclose(f);
        return;
    }
    std::printf("SKIPPED: test_sched_probe needs /proc/<pid>/task/<tid>/schedstat (Linux)\n");
    std::exit(77);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_calling_thread_is_accounted_its_own_cpu_time)
{
    skip_without_schedstat();
    const SchedSnapshot before = SchedSnapshot::take(false);
    const double t0 = thread_cpu_ms();
    spin_cpu(30);
    const double used = thread_cpu_ms() - t0;
    const SchedSnapshot after = SchedSnapshot::take(false);
    const auto d = sched_delta(before, after, {this_thread_id()});
    BOOST_TEST(d.available);
    BOOST_TEST(d.team_threads == 1);
    // the same kernel counter read two ways; the snapshots' own reading adds a little
    BOOST_TEST(d.team_run_ms >= used - 0.5);
    BOOST_TEST(d.team_run_ms <= used + 5.0);
    BOOST_TEST(d.others_ms == 0.0);  // this process only: no other process in the snapshots
    BOOST_TEST_MESSAGE(d.text());
    BOOST_TEST(d.text().find("the 1 copy threads ran") != std::string::npos);
    // the same interval with the thread outside the team: it is counted as the process's other
    // threads and named among the busiest
    const auto e = sched_delta(before, after, {});
    BOOST_TEST(e.team_threads == 0);
    BOOST_TEST(e.process_other_ms >= used - 0.5);
    const std::string me =
        "(" + std::to_string(getpid()) + "/" + std::to_string(this_thread_id()) + ")";
    BOOST_TEST(!e.top.empty());
    if (!e.top.empty()) {
        BOOST_TEST(e.top.front().first.find(me) != std::string::npos, e.top.front().first);
        BOOST_TEST(e.top.front().second >= used - 0.5);
        // a thread of this process comes with what it is doing as sched_delta reads it: this
        // one running (R), in the read of its own /proc file, and its CPU time since it
        // started from /proc's stat in clock ticks, at least the 30 ms it spun less a tick
        const std::string& entry = e.top.front().first;
        BOOST_TEST(entry.find(" [R, user ") != std::string::npos, entry);
        double user = -1, system = -1;
        const auto at = entry.find(" [R, user ");
        if (at != std::string::npos)
            BOOST_TEST(std::sscanf(entry.c_str() + at, " [R, user %lf ms, system %lf ms", &user,
                                   &system) == 2,
                       entry);
        const double tick_ms = 1000.0 / double(sysconf(_SC_CLK_TCK));
        BOOST_TEST(user + system >= used - tick_ms, entry << " against " << used << " ms spun");
        BOOST_TEST(entry.find(", in system call ") != std::string::npos, entry);
    }
}

BOOST_AUTO_TEST_CASE(another_process_that_ran_meanwhile_is_named_with_its_time)
{
    skip_without_schedstat();
    int done[2], go[2];
    BOOST_REQUIRE(pipe(done) == 0);
    BOOST_REQUIRE(pipe(go) == 0);
    const SchedSnapshot before = SchedSnapshot::take(true);
    const pid_t child = fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {  // spin 40 ms of CPU, say so, stay alive until the parent's second snapshot
        spin_cpu(40);
        char c = 1;
        if (write(done[1], &c, 1) != 1) _exit(2);
        if (read(go[0], &c, 1) != 1) _exit(3);
        _exit(0);
    }
    char c = 0;
    BOOST_REQUIRE(read(done[0], &c, 1) == 1);
    const SchedSnapshot after = SchedSnapshot::take(true);
    // every thread that ran named (other tests may run beside this one), read while it lives
    const auto d = sched_delta(before, after, {this_thread_id()}, 100000);
    BOOST_REQUIRE(write(go[1], &c, 1) == 1);
    int status = 0;
    rusage ru{};
    BOOST_REQUIRE(wait4(child, &status, 0, &ru) == child);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
    const double child_ms = (double(ru.ru_utime.tv_sec) + double(ru.ru_stime.tv_sec)) * 1e3 +
                            (double(ru.ru_utime.tv_usec) + double(ru.ru_stime.tv_usec)) * 1e-3;
    BOOST_TEST(child_ms >= 39.0);
    BOOST_TEST(d.available);
    BOOST_TEST_MESSAGE(d.text() << " (snapshots " << before.took_ms << " and " << after.took_ms
                                << " ms)");
    BOOST_TEST(d.others_ms >= 35.0);  // the child at least (other processes may add to it)
    const std::string tag = "(" + std::to_string(child) + "/" + std::to_string(child) + ")";
    bool named = false;
    for (const auto& t : d.top)
        if (t.first.find(tag) != std::string::npos) {
            named = true;
            BOOST_TEST(t.first.find("test_sched_prob") == 0, t.first);  // its comm, as the parent's
            // the scheduler's account and the child's rusage: the same CPU time, to the
            // rusage's tick accounting and the child's last lines after the snapshot
            BOOST_TEST(t.second >= 35.0);
            BOOST_TEST(t.second <= child_ms + 5.0);
        }
    BOOST_TEST(named, "the child " << tag << " among those that ran: " << d.text());
}
