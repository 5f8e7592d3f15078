// A team of threads for host work split into pieces (the plugin's host copies into pinned
// buffers), which ends a job when its pieces are done, not when every thread has checked in.
//
// Why not an OpenMP team: a parallel region ends at a barrier that every thread of the team
// must reach, and libgomp's threads spin there (and between regions) before they sleep. When
// one more thread wants a CPU than there are CPUs -- another thread of the program, a daemon --
// one team thread waits behind it for a time slice while the others spin on their CPUs, so no
// CPU frees up for it to move to: every region then lasts a slice (milliseconds) instead of its
// work (a fraction of one). The H100 machine showed a 524 MB copy in 16 regions taking 125.8 ms
// instead of 4.9, its 16 threads on a CPU the whole time and one of them always waiting
// (docs/benchmarks.md, fifty-fourth session). Here idle threads sleep (a condition variable),
// the pieces are handed out one at a time from a counter, the caller takes pieces too, and
// run() returns once the last piece is done: a thread that never got a CPU during the job
// finds nothing left when it does and holds nothing up.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace heptane {

class WorkerPool {
public:
    /// `threads` in all: threads - 1 workers (named `name`, at most 15 characters) and the
    /// caller of run(). Throws std::system_error when a thread cannot be started.
    explicit WorkerPool(int threads, const char* name = "heptane-pool");
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    int threads() const { return int(workers_.size()) + 1; }

    /// f(i) for every i in [0, n), on the workers and the calling thread, each i once; returns
    /// when every f(i) has returned (the first exception an f threw is rethrown then). One job
    /// at a time: concurrent callers take turns.
    void run(std::int64_t n, const std::function<void(std::int64_t)>& f);

    /// The kernel's ids (gettid) of the workers (all started when the constructor returns).
    std::vector<int> worker_ids() const;

    struct Job;

private:
    void work_loop(std::size_t index);

    std::vector<std::thread> workers_;
    std::vector<int> ids_;
    std::size_t started_ = 0;   // workers that have written their id
    mutable std::mutex mutex_;  // guards job_, generation_, stop_, ids_, started_
    std::condition_variable started_cv_;
    std::condition_variable wake_;  // a new job, or stop
    std::shared_ptr<Job> job_;      // the latest job (kept alive for late workers)
    std::uint64_t generation_ = 0;
    bool stop_ = false;
    std::mutex run_mutex_;  // one run() at a time
};

}  // namespace heptane
