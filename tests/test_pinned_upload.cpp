// The plugin's uploads of host arrays (plugin/pinned_upload.hpp) on a GPU: through the pinned
// buffers, and straight from a registered host array (PinnedUpload::upload_registered) — that a
// registered array is read as it is now (new values under the same key), that registration waits
// for the `after`-th call (on a background thread from the call before it), and that an array freed
// and replaced by another one at the same address (the case the plugin's key exists for) is
// registered again under its new key and read, not the old pages behind the old registration. Each
// upload is read back and compared with what the host array holds.
//
// GPU-only (CUDA code and nothing else): without a device (or without HEPTANE_TEST_DEVICE=cuda)
// it prints why and exits 77 (skipped); tests/cuda.cmake registers only its _gpu variant, and
// only in builds with the CUDA back end.
#include <sys/mman.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/array.hpp"
#include "core/cuda_common.hpp"
#include "plugin/pinned_upload.hpp"
#include "tests/test_common.hpp"

using namespace heptane;
using heptane::plugin::PinnedUpload;

namespace {

struct GpuOnly {
    GpuOnly() { test::skip_unless_gpu("test_pinned_upload", "CUDA uploads"); }
};
BOOST_TEST_GLOBAL_FIXTURE(GpuOnly);

constexpr std::size_t count = std::size_t(3) << 20;  // 24 MiB of doubles: above the 4 MiB floor
constexpr std::size_t bytes = count * sizeof(double);

// page-aligned anonymous memory at `at` (nullptr: anywhere), every value v
double* map_pages(void* at, double v)
{
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0);
    void* p = mmap(at, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    BOOST_REQUIRE(p != MAP_FAILED);
    auto* d = static_cast<double*>(p);
    for (std::size_t i = 0; i < count; ++i) d[i] = v + double(i % 7);
    return d;
}

// whether the device copy holds v + i % 7 everywhere
bool holds(const Array<double>& dev, double v)
{
    const std::vector<double> h = dev.to_vector();
    for (std::size_t i = 0; i < count; ++i)
        if (h[i] != v + double(i % 7)) return false;
    return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(registered_uploads_read_the_array_as_it_is_and_follow_the_key)
{
    auto exec = test::test_executor();
    PinnedUpload up(exec, bytes);
    Array<double> dev(exec, count);
    double* a = map_pages(nullptr, 1.0);

    // through the pinned buffers
    up.upload(a, dev.data(), bytes);
    exec->synchronize();
    BOOST_TEST(holds(dev, 1.0));
    // no key, or too small: not registered
    BOOST_TEST(!up.upload_registered(a, dev.data(), bytes, 0, 1));
    BOOST_TEST(!up.upload_registered(a, dev.data(), PinnedUpload::min_register_bytes - 8, 5, 1));
    // `after` = 3: the first two calls are refused (the caller copies), the second marking the
    // range; start_deferred() (the plugin's, after a solve) registers it on a background
    // thread (the array written meanwhile, as a host assembling its next matrix would), the
    // third call waits for it and reads the array
    up.reset_stats();
    up.start_deferred();  // nothing marked: nothing started
    BOOST_TEST(!up.upload_registered(a, dev.data(), bytes, 1, 3));
    BOOST_TEST(!up.upload_registered(a, dev.data(), bytes, 1, 3));
    exec->synchronize();
    up.start_deferred();
    for (std::size_t i = 0; i < count; ++i) a[i] = 2.0 + double(i % 7);
    BOOST_TEST(up.stats().register_ms == 0.0);
    BOOST_TEST(up.stats().register_background_ms == 0.0);
    const auto call0 = std::chrono::steady_clock::now();
    BOOST_TEST(up.upload_registered(a, dev.data(), bytes, 1, 3));
    const double call_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - call0).count();
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms == 0.0);  // not in line: on the background thread
    BOOST_TEST(up.stats().register_background_ms > 0.0);
    // the wait is part of this call (the registration's own time is the other thread's and
    // does not bound it: s54 saw 4.8 ms waited for 3.6 ms of registration, four tests side by
    // side, the wait including this thread's wake-up)
    BOOST_TEST(up.stats().register_wait_ms >= 0.0);
    BOOST_TEST(up.stats().register_wait_ms <= call_ms,
               up.stats().register_wait_ms << " > " << call_ms);
    BOOST_TEST(up.stats().registered_bytes == double(bytes));
    BOOST_TEST(holds(dev, 2.0));
    // new values under the same key: read as they are now, no new registration
    for (std::size_t i = 0; i < count; ++i) a[i] = 4.0 + double(i % 7);
    up.reset_stats();
    BOOST_TEST(up.upload_registered(a, dev.data(), bytes, 1, 3));
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms == 0.0);
    BOOST_TEST(holds(dev, 4.0));
    // marked by the (after - 1)-th call but no start_deferred() before the after-th: registered
    // there, in line, and read
    double* e = map_pages(nullptr, 6.0);
    up.reset_stats();
    BOOST_TEST(!up.upload_registered(e, dev.data(), bytes, 4, 2));
    up.upload(e, dev.data(), bytes);  // the caller's copy, as the plugin makes it
    exec->synchronize();
    BOOST_TEST(holds(dev, 6.0));
    for (std::size_t i = 0; i < count; ++i) e[i] = 3.0 + double(i % 7);
    BOOST_TEST(up.upload_registered(e, dev.data(), bytes, 4, 2));
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms > 0.0);
    BOOST_TEST(up.stats().register_background_ms == 0.0);
    BOOST_TEST(holds(dev, 3.0));
    // the array freed and new pages mapped at the same address (a new Mat whose array landed
    // where the old one was): under its new key it is registered again and its values are read,
    // not the old pages (4.0) the old registration had locked
    BOOST_REQUIRE(munmap(a, bytes) == 0);
    double* b = map_pages(a, 8.0);
    BOOST_REQUIRE(b == a);
    up.reset_stats();
    BOOST_TEST(up.upload_registered(b, dev.data(), bytes, 2, 1));
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms > 0.0);
    BOOST_TEST(holds(dev, 8.0));
    // an array beside it sharing no page: both stay registered (no refusal, no re-registration)
    double* c = map_pages(nullptr, 16.0);
    BOOST_TEST(up.upload_registered(c, dev.data(), bytes, 3, 1));
    exec->synchronize();
    BOOST_TEST(holds(dev, 16.0));
    up.reset_stats();
    BOOST_TEST(up.upload_registered(b, dev.data(), bytes, 2, 1));
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms == 0.0);
    BOOST_TEST(holds(dev, 8.0));
    // more than max_registered arrays: the least recently used is dropped, and registered again
    // (and read right) when it comes back
    std::vector<double*> more;
    for (std::size_t k = 0; k < PinnedUpload::max_registered; ++k) {
        more.push_back(map_pages(nullptr, 32.0 + double(k)));
        BOOST_TEST(up.upload_registered(more.back(), dev.data(), bytes, 10 + k, 1));
        exec->synchronize();
        BOOST_TEST(holds(dev, 32.0 + double(k)));
    }
    up.reset_stats();
    BOOST_TEST(up.upload_registered(c, dev.data(), bytes, 3, 1));
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms > 0.0);
    BOOST_TEST(holds(dev, 16.0));
    exec->synchronize();
    for (double* p : more) munmap(p, bytes);
    munmap(e, bytes);
    munmap(b, bytes);
    munmap(c, bytes);
}

BOOST_AUTO_TEST_CASE(two_live_arrays_that_share_a_page_stay_registered_side_by_side)
{
    // arrays one after the other in one mapping, the boundary inside a page (as a heap puts two
    // matrices' arrays): each registers its own whole pages, so neither drops the other and
    // alternate uploads register nothing again; the shared page goes through the pinned
    // buffers, and every upload reads what its array holds now
    auto exec = test::test_executor();
    PinnedUpload up(exec, bytes);
    double* base = map_pages(nullptr, 0.0);  // 24 MiB
    const std::size_t n1 = count / 2 + 100, n2 = count - n1;
    double* a = base;
    double* b = base + n1;  // 800 bytes into a page
    Array<double> da(exec, n1), db(exec, n2);
    auto fill = [](double* p, std::size_t n, double v) {
        for (std::size_t i = 0; i < n; ++i) p[i] = v + double(i % 5);
    };
    auto same = [](const Array<double>& d, std::size_t n, double v) {
        const std::vector<double> h = d.to_vector();
        for (std::size_t i = 0; i < n; ++i)
            if (h[i] != v + double(i % 5)) return false;
        return true;
    };
    for (int round = 0; round < 3; ++round) {
        fill(a, n1, 100.0 * round + 1);
        fill(b, n2, 100.0 * round + 2);
        up.reset_stats();
        BOOST_TEST(up.upload_registered(a, da.data(), n1 * sizeof(double), 20, 1));
        BOOST_TEST(up.upload_registered(b, db.data(), n2 * sizeof(double), 21, 1));
        exec->synchronize();
        BOOST_TEST((up.stats().register_ms > 0.0) == (round == 0), "round " << round);
        BOOST_TEST(up.stats().registered_bytes > 0.0);
        BOOST_TEST(up.stats().bytes > up.stats().registered_bytes);  // the shared page copied
        BOOST_TEST(same(da, n1, 100.0 * round + 1));
        BOOST_TEST(same(db, n2, 100.0 * round + 2));
    }
    munmap(base, bytes);
}

BOOST_AUTO_TEST_CASE(an_array_marked_at_the_build_is_read_in_place_from_the_first_refresh)
{
    // after = 1 (the plugin's -heptane_register_after 1): mark() at the build, start_deferred()
    // after the solve registers it on a background thread, the first upload_registered(.., 1)
    // waits for it and reads the array as it is then; a second array marked with no
    // start_deferred() before its first refresh is registered there, in line; nothing is marked
    // under key 0, below the size floor, or once registered
    auto exec = test::test_executor();
    PinnedUpload up(exec, bytes);
    Array<double> dev(exec, count);
    double* a = map_pages(nullptr, 1.0);
    BOOST_TEST(!up.mark(a, bytes, 0));
    BOOST_TEST(!up.mark(a, PinnedUpload::min_register_bytes - 8, 30));
    BOOST_TEST(up.mark(a, bytes, 30));
    up.upload(a, dev.data(), bytes);  // the build's own upload, through the pinned buffers
    exec->synchronize();
    BOOST_TEST(holds(dev, 1.0));
    up.start_deferred();
    for (std::size_t i = 0; i < count; ++i)
        a[i] = 5.0 + double(i % 7);  // written while it registers
    up.reset_stats();
    BOOST_TEST(up.upload_registered(a, dev.data(), bytes, 30, 1));
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms == 0.0);  // not in line
    BOOST_TEST(up.stats().register_background_ms > 0.0);
    BOOST_TEST(up.stats().registered_bytes == double(bytes));
    BOOST_TEST(holds(dev, 5.0));
    BOOST_TEST(!up.mark(a, bytes, 30));  // registered already
    double* b = map_pages(nullptr, 2.0);
    BOOST_TEST(up.mark(b, bytes, 31));
    up.reset_stats();
    BOOST_TEST(up.upload_registered(b, dev.data(), bytes, 31, 1));  // no solve came: in line
    exec->synchronize();
    BOOST_TEST(up.stats().register_ms > 0.0);
    BOOST_TEST(up.stats().register_background_ms == 0.0);
    BOOST_TEST(holds(dev, 2.0));
    munmap(a, bytes);
    munmap(b, bytes);
}

BOOST_AUTO_TEST_CASE(the_scheduler_account_of_a_host_copy_is_kept_when_asked_for)
{
    // HEPTANE_UPLOAD_SCHEDSTAT=1 (read at each copy): Stats::sched names the copy threads'
    // time; without /proc's schedstat it says there are none
    setenv("HEPTANE_UPLOAD_SCHEDSTAT", "1", 1);
    auto exec = test::test_executor();
    PinnedUpload up(exec, bytes);
    Array<double> dev(exec, count);
    double* a = map_pages(nullptr, 9.0);
    up.reset_stats();
    up.upload(a, dev.data(), bytes);
    exec->synchronize();
    BOOST_TEST(holds(dev, 9.0));
    BOOST_TEST_MESSAGE(up.stats().sched);
    const bool copy_threads = up.stats().sched.find(" copy threads ran ") != std::string::npos;
    const bool none = up.stats().sched.find("no scheduler statistics here") != std::string::npos;
    BOOST_TEST((copy_threads || none), up.stats().sched);
    // who copied: the OpenMP team, or the upload's pool with HEPTANE_UPLOAD_TEAM=pool (this
    // program runs both ways, tests/cuda.cmake); and every thread of that team found in the
    // account
    const char* choice = std::getenv("HEPTANE_UPLOAD_TEAM");
    const bool pool = choice && std::string(choice) == "pool" && up.stats().threads > 1;
    BOOST_TEST(std::string(up.stats().team) == (pool ? "heptane-copy pool" : "OpenMP team"));
    if (copy_threads)
        BOOST_TEST(up.stats().sched.find("the " + std::to_string(up.stats().threads) +
                                         " copy threads ran ") == 0,
                   up.stats().sched << " (" << up.stats().threads << " threads)");
    BOOST_TEST(up.stats().sched_probe_ms > 0.0);
    unsetenv("HEPTANE_UPLOAD_SCHEDSTAT");
    up.reset_stats();
    up.upload(a, dev.data(), bytes);
    exec->synchronize();
    BOOST_TEST(up.stats().sched.empty());
    munmap(a, bytes);
}

BOOST_AUTO_TEST_CASE(vectors_go_up_and_come_down_in_pieces_as_they_are)
{
    // the plugin's b in and x out (PinnedUpload::upload_vector, download): sizes of 0 bytes to
    // several pieces, with buffers of 1 MiB and of 32 MiB, a last piece of any length; each copy
    // compared with the host's values, the other direction through Array (a plain copy); the
    // matrix uploads' statistics untouched
    auto exec = test::test_executor();
    for (const std::size_t buffer : {std::size_t(1) << 20, std::size_t(32) << 20}) {
        PinnedUpload up(exec, buffer);
        for (const std::size_t n :
             {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(131072),
              std::size_t(655361), std::size_t(3) << 20}) {
            BOOST_TEST_CONTEXT("buffer " << buffer << ", " << n << " doubles")
            {
                std::vector<double> h(n);
                for (std::size_t i = 0; i < n; ++i) h[i] = 0.5 + double(i % 11) + 1e-3 * double(i);
                Array<double> d(exec, n);
                up.reset_stats();
                up.upload_vector(h.data(), d.data(), n * sizeof(double));
                exec->synchronize();
                BOOST_TEST(d.to_vector() == h, boost::test_tools::per_element());
                BOOST_TEST(up.stats().bytes == 0.0);
                // the device copy changed, then downloaded into a host array holding other values
                std::vector<double> g(n);
                for (std::size_t i = 0; i < n; ++i) g[i] = -h[i] - 1.0;
                d = Array<double>(g).to(exec);
                std::vector<double> back(n, 7.0);
                up.download(d.data(), back.data(), n * sizeof(double));
                BOOST_TEST(back == g, boost::test_tools::per_element());
            }
        }
    }
}
