// WorkerPool (core/worker_pool.hpp).
#include "core/worker_pool.hpp"

#include <atomic>
#include <exception>

#include "core/sched_probe.hpp"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace heptane {

struct WorkerPool::Job {
    std::int64_t n = 0;
    const std::function<void(std::int64_t)>* f = nullptr;  // called only for i < n (job not done)
    std::atomic<std::int64_t> next{0};
    std::atomic<std::int64_t> done{0};
    std::mutex mutex;  // the caller's wait for the last piece
    std::condition_variable finished;
    std::mutex error_mutex;
    std::exception_ptr error;

    // takes pieces until none is left
    void work()
    {
        for (;;) {
            const std::int64_t i = next.fetch_add(1);
            if (i >= n) return;
            try {
                (*f)(i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
            }
            if (done.fetch_add(1) + 1 == n) {
                std::lock_guard<std::mutex> lock(mutex);
                finished.notify_one();
            }
        }
    }
};

WorkerPool::WorkerPool(int threads, const char* name)
{
    const int workers = threads > 1 ? threads - 1 : 0;
    ids_.assign(std::size_t(workers), 0);
    try {
        workers_.reserve(std::size_t(workers));
        for (int w = 0; w < workers; ++w) {
            workers_.emplace_back([this, w] { work_loop(std::size_t(w)); });
#if defined(__linux__)
            pthread_setname_np(workers_.back().native_handle(), name);
#else
            (void)name;
#endif
        }
    } catch (...) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : workers_) t.join();
        throw;
    }
    // every worker's id known before the first job (worker_ids(): the scheduler's account of a
    // job names its team by them)
    std::unique_lock<std::mutex> lock(mutex_);
    started_cv_.wait(lock, [&] { return started_ == workers_.size(); });
}

WorkerPool::~WorkerPool()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

void WorkerPool::work_loop(std::size_t index)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ids_[index] = this_thread_id();
        ++started_;
    }
    started_cv_.notify_one();
    std::uint64_t seen = 0;
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
        }
        // a worker that wakes late finds the job's counter past its end (and a later job's
        // generation under the mutex): it calls nothing of a finished job
        job->work();
    }
}

void WorkerPool::run(std::int64_t n, const std::function<void(std::int64_t)>& f)
{
    if (n <= 0) return;
    if (workers_.empty() || n == 1) {
        for (std::int64_t i = 0; i < n; ++i) f(i);
        return;
    }
    std::lock_guard<std::mutex> turn(run_mutex_);
    auto job = std::make_shared<Job>();
    job->n = n;
    job->f = &f;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = job;
        ++generation_;
    }
    wake_.notify_all();
    job->work();
    {
        std::unique_lock<std::mutex> lock(job->mutex);
        job->finished.wait(lock, [&] { return job->done.load() == n; });
    }
    if (job->error) std::rethrow_exception(job->error);
}

std::vector<int> WorkerPool::worker_ids() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_;
}

}  // namespace heptane
