// SchedSnapshot, sched_delta (core/sched_probe.hpp).
#include "core/sched_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#if defined(__linux__)
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace heptane {

namespace {

#if defined(__linux__)
// The numeric entries of a /proc folder (process or thread ids).
template <class F>
void each_number(const char* dir, F&& f)
{
    DIR* d = ::opendir(dir);
    if (!d) return;
    while (const dirent* e = ::readdir(d)) {
        char* end = nullptr;
        const long v = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && v > 0) f(int(v));
    }
    ::closedir(d);
}

// /proc/<pid>/task/<tid>/<name>, opened for reading (null where it cannot be)
std::FILE* open_task_file(int pid, int tid, const char* name)
{
    char path[96];
    std::snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid, tid, name);
    return std::fopen(path, "re");
}

bool read_schedstat(int pid, int tid, TaskSched& t)
{
    std::FILE* f = open_task_file(pid, tid, "schedstat");
    if (!f) return false;
    unsigned long long run = 0, wait = 0;
    const bool ok = std::fscanf(f, "%llu %llu", &run, &wait) == 2;
    std::fclose(f);
    if (!ok) return false;
    t = TaskSched{pid, tid, run, wait};
    return true;
}

void add_process(int pid, std::vector<TaskSched>& out)
{
    char dir[48];
    std::snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
    each_number(dir, [&](int tid) {
        TaskSched t;
        if (read_schedstat(pid, tid, t)) out.push_back(t);
    });
}

std::string comm_of(int pid, int tid)
{
    std::FILE* f = open_task_file(pid, tid, "comm");
    if (!f) return "?";
    char buf[64] = {};
    const bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
    std::fclose(f);
    if (!ok) return "?";
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s.empty() ? "?" : s;
}
// What a thread is doing as sched_delta reads it: its state, its CPU time since it started,
// user and system (/proc/<pid>/task/<tid>/stat, clock ticks), and its system call
// (/proc/<pid>/task/<tid>/syscall: the call's number, "running" in user space; readable for
// this process's own threads): " [R, user 130 ms, system 0 ms, running]"; "" where unreadable.
std::string state_of(int pid, int tid)
{
    std::FILE* f = open_task_file(pid, tid, "stat");
    if (!f) return "";
    char buf[1024] = {};
    const std::size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[got] = '\0';
    // after the command's closing parenthesis: state (field 3) ... utime (14), stime (15)
    const char* p = std::strrchr(buf, ')');
    if (!p) return "";
    char state = '?';
    unsigned long long utime = 0, stime = 0;
    if (std::sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &state, &utime,
                    &stime) != 3)
        return "";
    const double tick_ms = 1000.0 / double(::sysconf(_SC_CLK_TCK));
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(0);
    o << " [" << state << ", user " << double(utime) * tick_ms << " ms, system "
      << double(stime) * tick_ms << " ms since it started";
    if (std::FILE* g = open_task_file(pid, tid, "syscall")) {
        char call[64] = {};
        if (std::fgets(call, sizeof(call), g)) {
            std::string c(call);
            c = c.substr(0, c.find_first_of(" \n"));
            o << (c == "running" ? ", running" : ", in system call " + c);
        }
        std::fclose(g);
    }
    o << "]";
    return o.str();
}
#else
std::string comm_of(int, int)
{
    return "?";
}
std::string state_of(int, int)
{
    return "";
}
#endif

}  // namespace

int this_thread_id()
{
#if defined(__linux__)
    return int(::syscall(SYS_gettid));
#else
    return 0;
#endif
}

SchedSnapshot SchedSnapshot::take(bool all_processes)
{
    const auto t0 = std::chrono::steady_clock::now();
    SchedSnapshot s;
#if defined(__linux__)
    const int self = int(::getpid());
    if (all_processes)
        each_number("/proc", [&](int pid) { add_process(pid, s.tasks); });
    else
        add_process(self, s.tasks);
    std::sort(s.tasks.begin(), s.tasks.end(), [](const TaskSched& a, const TaskSched& b) {
        return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
    });
#else
    (void)all_processes;
#endif
    s.took_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return s;
}

SchedDelta sched_delta(const SchedSnapshot& before, const SchedSnapshot& after,
                       const std::vector<int>& team, std::size_t top_n)
{
    SchedDelta d;
#if defined(__linux__)
    const int self = int(::getpid());
#else
    const int self = -1;
#endif
    const auto has_self = [&](const SchedSnapshot& s) {
        return std::any_of(s.tasks.begin(), s.tasks.end(),
                           [&](const TaskSched& t) { return t.pid == self; });
    };
    d.available = has_self(before) && has_self(after);
    if (!d.available) return d;
    std::map<std::pair<int, int>, const TaskSched*> old;
    for (const TaskSched& t : before.tasks) old[{t.pid, t.tid}] = &t;
    std::vector<std::pair<double, const TaskSched*>> rest;
    for (const TaskSched& t : after.tasks) {
        const auto it = old.find({t.pid, t.tid});
        const bool seen = it != old.end();
        // a counter that went back is another thread under a reused id: counted from zero
        const bool same =
            seen && it->second->run_ns <= t.run_ns && it->second->wait_ns <= t.wait_ns;
        const double run = double(t.run_ns - (same ? it->second->run_ns : 0)) * 1e-6;
        const double wait = double(t.wait_ns - (same ? it->second->wait_ns : 0)) * 1e-6;
        const bool mine = t.pid == self;
        if (mine && std::find(team.begin(), team.end(), t.tid) != team.end()) {
            if (!seen) continue;  // not the team's thread during the work
            ++d.team_threads;
            d.team_run_ms += run;
            d.team_wait_ms += wait;
            continue;
        }
        if (mine)
            d.process_other_ms += run;
        else
            d.others_ms += run;
        if (run >= 0.1) rest.emplace_back(run, &t);  // the busiest: 0.1 ms or more
    }
    std::sort(rest.begin(), rest.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < rest.size() && i < top_n; ++i) {
        const TaskSched& t = *rest[i].second;
        std::ostringstream name;
        name << comm_of(t.pid, t.tid) << " (" << t.pid << "/" << t.tid << ")";
        if (t.pid == self) name << state_of(t.pid, t.tid);  // this process's: what it is doing
        d.top.emplace_back(name.str(), rest[i].first);
    }
    return d;
}

std::string SchedDelta::text() const
{
    std::ostringstream o;
    if (!available) return "no scheduler statistics here (/proc/<pid>/task/<tid>/schedstat)";
    o.setf(std::ios::fixed);
    o.precision(1);
    o << "the " << team_threads << " copy threads ran " << team_run_ms << " ms and waited "
      << team_wait_ms << " ms for a CPU; this process's other threads ran " << process_other_ms
      << " ms, other processes " << others_ms << " ms";
    if (!top.empty()) {
        o << "; busiest:";
        for (std::size_t i = 0; i < top.size(); ++i)
            o << (i ? "," : "") << " " << top[i].first << " " << top[i].second << " ms";
    }
    return o.str();
}

}  // namespace heptane
