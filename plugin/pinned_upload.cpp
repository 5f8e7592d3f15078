// Chunked, double-buffered host -> device uploads through page-locked memory (pinned_upload.hpp).
#include "plugin/pinned_upload.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include <omp.h>
#ifdef __linux__
  #include <pthread.h>
#endif
#include <sys/resource.h>

#include "core/error.hpp"
#include "core/sched_probe.hpp"
#include "core/worker_pool.hpp"

#ifdef HEPTANE_HAVE_CUDA
  #include "core/cuda_common.hpp"
#endif

namespace heptane::plugin
{

namespace
{

// Threads of the host copies: HEPTANE_UPLOAD_THREADS when set (> 0), else OpenMP's default.
[[maybe_unused]] int upload_threads()
{
  static const int n = [] {
    const char *e = std::getenv("HEPTANE_UPLOAD_THREADS");
    const int   v = e ? std::atoi(e) : 0;
    return v > 0 ? v : omp_get_max_threads();
  }();
  return n;
}

// HEPTANE_UPLOAD_SCHEDSTAT=1: each host copy of 8 MiB or more is bracketed by snapshots of the
// scheduler's account of every thread on the machine (core/sched_probe.hpp; a few ms each).
// Read at each copy (a getenv beside a copy of megabytes)
[[maybe_unused]] bool upload_schedstat()
{
  const char *e = std::getenv("HEPTANE_UPLOAD_SCHEDSTAT");
  return e && std::atoi(e) > 0;
}

// HEPTANE_UPLOAD_TEAM: who copies. "openmp" (the default): an OpenMP team of the caller's, whose
// regions end at a barrier every thread must reach -- fastest on a quiet machine, ~15x slower
// whenever one more thread wants a CPU than there are (one team thread waits a time slice while
// the others spin on their CPUs). "pool": the upload's own WorkerPool (core/worker_pool.hpp),
// whose threads sleep between copies and whose copy ends at its last piece -- unhurt by such a
// thread, but slower beside threads that spin yielding (a threaded OpenBLAS after PETSc's vector
// operations). docs/benchmarks.md, fifty-fourth session; docs/petsc.md.
[[maybe_unused]] bool upload_team_is_pool()
{
  static const bool pool = [] {
    const char *e = std::getenv("HEPTANE_UPLOAD_TEAM");
    return e && std::string(e) == "pool";
  }();
  return pool;
}

// The kernel's ids of the threads that copy: the pool's workers and the caller, or the
// caller's OpenMP team (the same team as parallel_copy's: same thread, same size)
[[maybe_unused]] std::vector<int> upload_team(const WorkerPool *pool)
{
  if (pool) {
    std::vector<int> tids = pool->worker_ids();
    tids.push_back(this_thread_id());
    return tids;
  }
  std::vector<int> tids(std::size_t(upload_threads()), 0);
#pragma omp parallel num_threads(upload_threads())
  tids[std::size_t(omp_get_thread_num())] = this_thread_id();
  return tids;
}

// dst = src, `bytes` bytes, in 1 MiB pieces over the threads (256 KiB below 8 MiB; one thread
// below 1 MiB), handed out one at a time (dynamic), so that a slow thread does not hold up its
// share of a chunk. (It did not remove the refresh-to-refresh spread seen on the H100 node, the
// same 524 MB in 10 ms in one refresh and 39-125 ms in another, 16 threads: docs/benchmarks.md.)
// A vector's pieces (PinnedUpload::upload_vector, download: ~2 MiB at 1 M rows) went through
// one thread with 1 MiB pieces, 0.7-0.9 ms for 8.4 MB each way on the H100, slower than the
// pageable copy (s43).
// With a pool, the same pieces go through it (pool->run: one at a time from a counter).
[[maybe_unused]] void parallel_copy(void *dst, const void *src, std::size_t bytes, WorkerPool *pool)
{
  const std::size_t  piece  = bytes < (std::size_t(8) << 20) ? std::size_t(256) << 10 : std::size_t(1) << 20;
  const std::int64_t pieces = std::int64_t((bytes + piece - 1) / piece);
  const auto         copy   = [&](std::int64_t p) {
    const std::size_t lo = std::size_t(p) * piece;
    std::memcpy(static_cast<char *>(dst) + lo, static_cast<const char *>(src) + lo, std::min(piece, bytes - lo));
  };
  if (pool && pieces > 4) {
    pool->run(pieces, copy);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(upload_threads()) if (pieces > 4)
  for (std::int64_t p = 0; p < pieces; ++p) copy(p);
}

} // namespace

#ifdef HEPTANE_HAVE_CUDA

PinnedUpload::PinnedUpload(std::shared_ptr<const Executor> exec, std::size_t max_bytes, std::size_t chunk_bytes) : exec_(std::move(exec))
{
  HEPTANE_ENSURE(exec_ && exec_->is_cuda(), NotSupported, "PinnedUpload: uploads to a CUDA executor only");
  const auto &dev = static_cast<const CudaExecutor &>(*exec_);
  chunk_          = std::max<std::size_t>(4096, std::min(chunk_bytes, (max_bytes + 4095) / 4096 * 4096));
  HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
  try {
    for (int b = 0; b < 2; ++b) {
      HEPTANE_CUDA_CHECK(cudaMallocHost(&buf_[b], chunk_));
      cudaEvent_t ev = nullptr;
      HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      done_[b] = ev;
    }
    if (upload_team_is_pool() && upload_threads() > 1) {
      try {
        pool_ = std::make_unique<WorkerPool>(upload_threads(), "heptane-copy");
      } catch (const std::system_error &) {
        pool_.reset(); // no threads to be had: the copies go through OpenMP
      }
    }
  } catch (...) {
    for (int b = 0; b < 2; ++b) {
      if (done_[b]) cudaEventDestroy(static_cast<cudaEvent_t>(done_[b]));
      if (buf_[b]) cudaFreeHost(buf_[b]);
    }
    throw;
  }
}

PinnedUpload::~PinnedUpload()
{
  while (!registered_.empty()) drop(registered_.size() - 1);
  for (int b = 0; b < 2; ++b) {
    if (done_[b]) {
      cudaEventSynchronize(static_cast<cudaEvent_t>(done_[b])); // no copy may still read the buffer
      cudaEventDestroy(static_cast<cudaEvent_t>(done_[b]));
    }
    if (buf_[b]) cudaFreeHost(buf_[b]);
  }
}

void PinnedUpload::upload(const void *src, void *dst, std::size_t bytes)
{
  copy_in(src, dst, bytes, chunk_, true);
}

std::size_t PinnedUpload::vector_piece(std::size_t bytes) const noexcept
{
  constexpr std::size_t page = 4096;
  const std::size_t     q    = (bytes / 4 + page - 1) / page * page;
  return std::min(chunk_, std::max(q, std::size_t(1) << 20));
}

void PinnedUpload::upload_vector(const void *src, void *dst, std::size_t bytes)
{
  copy_in(src, dst, bytes, vector_piece(bytes), false);
}

void PinnedUpload::download(const void *src, void *dst, std::size_t bytes)
{
  const auto  &dev = static_cast<const CudaExecutor &>(*exec_);
  cudaStream_t s   = cuda::stream(dev);
  HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
  const std::size_t piece = vector_piece(bytes);
  const std::size_t n     = (bytes + piece - 1) / piece;
  // piece i goes device -> buffer i % 2 on the stream; the host copies it out of the buffer
  // while piece i + 1 is on the link, then queues piece i + 2 into the buffer it emptied
  const auto queue = [&](std::size_t i) {
    const std::size_t off = i * piece;
    const int         b   = int(i % 2);
    HEPTANE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(done_[b]))); // an upload may still read it
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(buf_[b], static_cast<const char *>(src) + off, std::min(piece, bytes - off), cudaMemcpyDeviceToHost, s));
    HEPTANE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(done_[b]), s));
  };
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 2); ++i) queue(i);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t off = i * piece;
    const int         b   = int(i % 2);
    HEPTANE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(done_[b])));
    host_copy(static_cast<char *>(dst) + off, buf_[b], std::min(piece, bytes - off));
    if (i + 2 < n) queue(i + 2);
  }
}

void PinnedUpload::host_copy(void *dst, const void *src, std::size_t bytes)
{
  parallel_copy(dst, src, bytes, pool_.get());
}

namespace
{
// the process's minor page faults and involuntary context switches so far (all threads)
void faults_and_switches(long &faults, long &switches)
{
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  faults   = u.ru_minflt;
  switches = u.ru_nivcsw;
}
} // namespace

void PinnedUpload::copy_in(const void *src, void *dst, std::size_t bytes, std::size_t piece, bool count)
{
  long f0 = 0, c0 = 0;
  if (count) faults_and_switches(f0, c0);
  const bool       probe = count && bytes >= (std::size_t(8) << 20) && upload_schedstat();
  std::vector<int> team;
  SchedSnapshot    before;
  if (probe) {
    team   = upload_team(pool_.get());
    before = SchedSnapshot::take(true);
  }
  const auto  &dev = static_cast<const CudaExecutor &>(*exec_);
  cudaStream_t s   = cuda::stream(dev);
  HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
  for (std::size_t off = 0, i = 0; off < bytes; off += piece, ++i) {
    const std::size_t len = std::min(piece, bytes - off);
    const int         b   = int(i % 2);
    // buffer b is free once the copy that last read it is done (an event never recorded is)
    const auto t0 = std::chrono::steady_clock::now();
    HEPTANE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(done_[b])));
    const auto t1 = std::chrono::steady_clock::now();
    host_copy(buf_[b], static_cast<const char *>(src) + off, len);
    const auto t2 = std::chrono::steady_clock::now();
    if (count) {
      stats_.wait_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
      stats_.host_copy_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
      stats_.bytes += double(len);
      stats_.threads = pool_ ? pool_->threads() : upload_threads();
      stats_.team    = pool_ ? "heptane-copy pool" : "OpenMP team";
    }
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char *>(dst) + off, buf_[b], len, cudaMemcpyHostToDevice, s));
    HEPTANE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(done_[b]), s));
  }
  if (count) {
    long f1 = 0, c1 = 0;
    faults_and_switches(f1, c1);
    stats_.page_faults += double(f1 - f0);
    stats_.context_switches += double(c1 - c0);
  }
  if (probe) {
    const SchedSnapshot after = SchedSnapshot::take(true);
    stats_.sched              = sched_delta(before, after, team).text();
    stats_.sched_probe_ms     = before.took_ms + after.took_ms;
  }
}

void PinnedUpload::take_pending(Registered &r, bool count)
{
  if (!r.pending) return;
  const auto t0  = std::chrono::steady_clock::now();
  const auto res = r.pending->get();
  r.pending.reset();
  r.registered = res.first;
  r.refused    = !res.first;
  if (count) {
    stats_.register_wait_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    stats_.register_background_ms += res.second;
  }
}

void PinnedUpload::drop(std::size_t i)
{
  Registered r = registered_[i];
  registered_.erase(registered_.begin() + std::ptrdiff_t(i));
  take_pending(r, false); // a registration still running: its pages are unregistered below
  if (!r.registered) return;
  // no copy may still read it; its pages may already be unmapped (a freed array): CUDA's
  // answer does not matter then, nothing of it is used again
  cudaStreamSynchronize(cuda::stream(static_cast<const CudaExecutor &>(*exec_)));
  if (cudaHostUnregister(reinterpret_cast<void *>(r.lo)) != cudaSuccess) (void)cudaGetLastError();
}

PinnedUpload::Registered *PinnedUpload::find_or_add(const void *src, std::size_t bytes, std::uint64_t key)
{
  // the whole pages inside [src, src + bytes) are registered; the partial first and last pages,
  // which another live array may share, go through the pinned buffers. Two live arrays so never
  // overlap in what they register, and a range that overlaps a kept one is a freed array's: it
  // is dropped before the new one is registered
  constexpr std::uintptr_t page = 4096;
  const std::uintptr_t     lo = reinterpret_cast<std::uintptr_t>(src), hi = lo + bytes;
  const std::uintptr_t     plo = (lo + page - 1) / page * page, phi = hi / page * page;
  for (std::size_t i = registered_.size(); i-- > 0;) {
    Registered &r = registered_[i];
    if (r.p == src && r.bytes == bytes && r.key == key) return &r;
    if (r.lo < phi && plo < r.hi) drop(i); // the same pages under another key: a freed array's
  }
  while (registered_.size() >= max_registered) {
    std::size_t lru = 0;
    for (std::size_t i = 1; i < registered_.size(); ++i)
      if (registered_[i].used < registered_[lru].used) lru = i;
    drop(lru);
  }
  registered_.push_back(Registered{src, bytes, key, 0, plo, phi, 0, false, false, false, nullptr});
  return &registered_.back();
}

bool PinnedUpload::mark(const void *src, std::size_t bytes, std::uint64_t key)
{
  if (key == 0 || bytes < min_register_bytes) return false;
  HEPTANE_CUDA_CHECK(cudaSetDevice(static_cast<const CudaExecutor &>(*exec_).device()));
  Registered *r = find_or_add(src, bytes, key);
  r->used       = ++uses_;
  if (r->registered || r->refused || r->pending) return false;
  r->deferred = true;
  return true;
}

bool PinnedUpload::upload_registered(const void *src, void *dst, std::size_t bytes, std::uint64_t key, int after)
{
  if (key == 0 || after < 1 || bytes < min_register_bytes) return false;
  const auto &dev = static_cast<const CudaExecutor &>(*exec_);
  HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(src), hi = lo + bytes;
  Registered          *hit = find_or_add(src, bytes, key);
  const std::uintptr_t plo = hit->lo, phi = hit->hi;
  hit->used = ++uses_;
  ++hit->seen;
  if (hit->pending && hit->seen >= after) take_pending(*hit, true);
  if (!hit->registered && !hit->refused && !hit->pending && after >= 2 && hit->seen == after - 1) {
    hit->deferred = true; // registered by the next start_deferred(), else in line at the after-th call
    return false;
  }
  hit->deferred = false;
  if (!hit->registered && !hit->refused && !hit->pending && hit->seen >= after) {
    const auto t0 = std::chrono::steady_clock::now();
    if (cudaHostRegister(reinterpret_cast<void *>(plo), phi - plo, cudaHostRegisterDefault) == cudaSuccess) hit->registered = true;
    else {
      (void)cudaGetLastError();
      hit->refused = true;
    }
    stats_.register_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  if (!hit->registered) return false;
  char *d = static_cast<char *>(dst);
  if (plo > lo) upload(src, d, plo - lo);
  HEPTANE_CUDA_CHECK(cudaMemcpyAsync(d + (plo - lo), reinterpret_cast<const void *>(plo), phi - plo, cudaMemcpyHostToDevice, cuda::stream(dev)));
  if (hi > phi) upload(reinterpret_cast<const void *>(phi), d + (phi - lo), hi - phi);
  stats_.bytes += double(phi - plo);
  stats_.registered_bytes += double(phi - plo);
  return true;
}

void PinnedUpload::start_deferred()
{
  const int device = static_cast<const CudaExecutor &>(*exec_).device();
  for (Registered &r : registered_) {
    if (!r.deferred) continue;
    r.deferred = false;
    if (r.registered || r.refused || r.pending) continue;
    // on a background thread: the caller's CUDA calls would wait while it runs (docs/petsc.md)
    const std::uintptr_t from = r.lo, to = r.hi;
    try {
      r.pending = std::make_shared<std::future<std::pair<bool, double>>>(std::async(std::launch::async, [device, from, to] {
  #ifdef __linux__
        pthread_setname_np(pthread_self(), "heptane-reg"); // by name in the scheduler's account
  #endif
        const auto t0 = std::chrono::steady_clock::now();
        bool       ok = cudaSetDevice(device) == cudaSuccess && cudaHostRegister(reinterpret_cast<void *>(from), to - from, cudaHostRegisterDefault) == cudaSuccess;
        if (!ok) (void)cudaGetLastError();
        return std::make_pair(ok, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }));
    } catch (const std::system_error &) {
      r.pending.reset(); // no thread to be had: registered in line at the after-th call
    }
  }
}

void zero_device_bytes(const Executor &exec, void *dst, std::size_t bytes)
{
  HEPTANE_ENSURE(exec.is_cuda(), NotSupported, "zero_device_bytes: CUDA executors only");
  HEPTANE_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cuda::stream(static_cast<const CudaExecutor &>(exec))));
}

bool is_device_memory_of(const Executor &exec, const void *p)
{
  if (!exec.is_cuda() || !p) return false;
  cudaPointerAttributes at{};
  if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
    (void)cudaGetLastError(); // not CUDA's memory: clear the error
    return false;
  }
  return at.type == cudaMemoryTypeDevice && at.device == static_cast<const CudaExecutor &>(exec).device();
}

void synchronize_device(const Executor &exec)
{
  if (!exec.is_cuda()) return;
  HEPTANE_CUDA_CHECK(cudaSetDevice(static_cast<const CudaExecutor &>(exec).device()));
  HEPTANE_CUDA_CHECK(cudaDeviceSynchronize());
}

bool copy_device_bytes(const Executor &exec, void *dst, const void *src, std::size_t bytes)
{
  if (!is_device_memory_of(exec, src)) return false; // another device, host memory: the caller's host path
  const auto &dev = static_cast<const CudaExecutor &>(exec);
  HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
  HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda::stream(dev)));
  return true;
}
#else // a build without CUDA: no CUDA executor can exist

PinnedUpload::PinnedUpload(std::shared_ptr<const Executor> exec, std::size_t, std::size_t) : exec_(std::move(exec))
{
  HEPTANE_THROW(NotSupported, "PinnedUpload: this build of heptane has no CUDA back end");
}
PinnedUpload::~PinnedUpload() = default;
void PinnedUpload::upload(const void *, void *, std::size_t)
{
  HEPTANE_THROW(NotSupported, "PinnedUpload: this build of heptane has no CUDA back end");
}
bool PinnedUpload::upload_registered(const void *, void *, std::size_t, std::uint64_t, int)
{
  return false;
}
bool PinnedUpload::mark(const void *, std::size_t, std::uint64_t)
{
  return false;
}
void PinnedUpload::upload_vector(const void *, void *, std::size_t)
{
  HEPTANE_THROW(NotSupported, "PinnedUpload: this build of heptane has no CUDA back end");
}
void PinnedUpload::download(const void *, void *, std::size_t)
{
  HEPTANE_THROW(NotSupported, "PinnedUpload: this build of heptane has no CUDA back end");
}
void        PinnedUpload::copy_in(const void *, void *, std::size_t, std::size_t, bool) { }
std::size_t PinnedUpload::vector_piece(std::size_t) const noexcept
{
  return 0;
}
void PinnedUpload::drop(std::size_t) { }
void PinnedUpload::start_deferred() { }
void zero_device_bytes(const Executor &, void *, std::size_t)
{
  HEPTANE_THROW(NotSupported, "zero_device_bytes: this build of heptane has no CUDA back end");
}
bool copy_device_bytes(const Executor &, void *, const void *, std::size_t)
{
  return false;
}
bool is_device_memory_of(const Executor &, const void *)
{
  return false;
}
void synchronize_device(const Executor &) { }

#endif

} // namespace heptane::plugin
