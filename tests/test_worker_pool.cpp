// core/worker_pool: every piece once, run() returning only after the last one (and its writes
// seen), exceptions carried to the caller, callers taking turns, the workers' names and ids, and
// the caller finishing a job alone while its workers are held (a job ends when its pieces are
// done, not when every worker has come).
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/sched_probe.hpp"
#include "core/worker_pool.hpp"

using heptane::WorkerPool;

namespace {

std::string comm_of(int tid)
{
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    std::FILE* f = std::fopen(path, "re");
    if (!f) return "";
    char buf[32] = {};
    const bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
    std::fclose(f);
    std::string s = ok ? buf : "";
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_piece_runs_once_for_every_team_size)
{
    for (int threads : {1, 2, 3, 8}) {
        WorkerPool pool(threads);
        BOOST_TEST(pool.threads() == threads);
        for (std::int64_t n : {0, 1, 2, 7, 1000, 100000}) {
            std::vector<std::atomic<int>> hits(std::size_t(n > 0 ? n : 1));
            for (auto& h : hits) h = 0;
            pool.run(n, [&](std::int64_t i) { hits[std::size_t(i)].fetch_add(1); });
            int wrong = 0;
            for (std::int64_t i = 0; i < n; ++i) wrong += hits[std::size_t(i)].load() != 1;
            BOOST_TEST(wrong == 0, "threads " << threads << ", n " << n << ": " << wrong
                                              << " pieces not run exactly once");
        }
    }
}

BOOST_AUTO_TEST_CASE(run_returns_after_the_last_piece_and_its_writes_are_seen)
{
    WorkerPool pool(4);
    for (int rep = 0; rep < 20; ++rep) {
        const std::int64_t n = 64;
        std::vector<double> out(std::size_t(n), -1.0);  // plain writes, read after run()
        pool.run(n, [&](std::int64_t i) {
            if (i % 16 == 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));
            out[std::size_t(i)] = double(i) * 0.5 + rep;
        });
        int wrong = 0;
        for (std::int64_t i = 0; i < n; ++i) wrong += out[std::size_t(i)] != double(i) * 0.5 + rep;
        BOOST_TEST(wrong == 0, "rep " << rep << ": " << wrong << " pieces unwritten at return");
    }
}

BOOST_AUTO_TEST_CASE(an_exception_reaches_the_caller_and_the_pool_goes_on)
{
    WorkerPool pool(3);
    std::atomic<int> ran{0};
    BOOST_CHECK_THROW(pool.run(500,
                               [&](std::int64_t i) {
                                   ran.fetch_add(1);
                                   if (i == 123) throw std::runtime_error("piece 123");
                               }),
                      std::runtime_error);
    BOOST_TEST(ran.load() == 500);  // the other pieces still ran
    std::atomic<std::int64_t> sum{0};
    pool.run(1000, [&](std::int64_t i) { sum.fetch_add(i); });
    BOOST_TEST(sum.load() == 999 * 1000 / 2);
}

BOOST_AUTO_TEST_CASE(callers_on_several_threads_take_turns)
{
    WorkerPool pool(4);
    std::atomic<int> bad{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c)
        callers.emplace_back([&, c] {
            for (int rep = 0; rep < 50; ++rep) {
                std::vector<int> v(std::size_t(300 + c), 0);
                pool.run(std::int64_t(v.size()),
                         [&](std::int64_t i) { v[std::size_t(i)] += c + 1; });
                for (int x : v) bad += x != c + 1;
            }
        });
    for (auto& t : callers) t.join();
    BOOST_TEST(bad.load() == 0);
}

BOOST_AUTO_TEST_CASE(workers_are_named_and_their_ids_are_this_process_threads)
{
    WorkerPool pool(4, "heptane-test");
    pool.run(64, [](std::int64_t) { std::this_thread::sleep_for(std::chrono::microseconds(50)); });
    const std::vector<int> ids = pool.worker_ids();
    BOOST_TEST(ids.size() == 3u);
    for (int id : ids) {
        BOOST_TEST(id != 0);
        BOOST_TEST(id != heptane::this_thread_id());
#if defined(__linux__)
        BOOST_TEST(comm_of(id) == "heptane-test");
#endif
    }
}

BOOST_AUTO_TEST_CASE(the_caller_finishes_a_job_while_every_worker_is_held)
{
    // Each worker that takes a piece is held inside it until all 1000 pieces are taken; the
    // caller must do the rest itself. A pool whose caller only waited for its workers (or
    // waited for every worker to check in) would never get there: the test would hang.
    WorkerPool pool(4);
    const int caller = heptane::this_thread_id();
    std::atomic<int> held{0};
    std::atomic<std::int64_t> by_caller{0};
    std::atomic<bool> release{false};
    const auto all_taken = [&] { return by_caller.load() + held.load() == 1000; };
    pool.run(1000, [&](std::int64_t) {
        if (heptane::this_thread_id() == caller) {
            by_caller.fetch_add(1);
            if (all_taken()) release = true;
            return;
        }
        held.fetch_add(1);  // a worker: one piece, then held until every piece is taken
        if (all_taken()) release = true;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    BOOST_TEST(by_caller.load() + held.load() == 1000);
    BOOST_TEST(held.load() <= 3);  // each worker held on its first piece
    BOOST_TEST(by_caller.load() >= 997);
}
