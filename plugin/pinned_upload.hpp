// Host -> device copies of large pageable host arrays (PETSc's CSR values, the plugin's slot
// maps) through two page-locked buffers: the host copies chunk i+1 into one buffer (OpenMP
// memcpy) while chunk i's cudaMemcpyAsync runs from the other. A pageable cudaMemcpy stages
// through the driver's small pinned buffers one after the other on one thread; this keeps the
// copy engine and the host cores busy together. CUDA executors only (plugin/engine.cpp uses it
// for the BDIA-GH and CSR stores on a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.hpp"
#include "core/worker_pool.hpp"

namespace heptane::plugin
{

class PinnedUpload {
public:
  /// Two buffers of min(chunk_bytes, max_bytes) page-locked host bytes (cudaMallocHost, once),
  /// for uploads of up to any size on exec's stream; max_bytes: the largest upload expected
  /// (a small matrix gets small buffers). Throws NotSupported for a CPU executor or in a build
  /// without CUDA, DeviceError when the allocation fails.
  PinnedUpload(std::shared_ptr<const Executor> exec, std::size_t max_bytes, std::size_t chunk_bytes = std::size_t(32) << 20);
  ~PinnedUpload();
  PinnedUpload(const PinnedUpload &)            = delete;
  PinnedUpload &operator=(const PinnedUpload &) = delete;

  /// dst (exec's device memory) = src (host memory), `bytes` bytes, queued on exec's stream:
  /// work queued on that stream afterwards sees the data. src may be reused once this
  /// returns (its last chunk has been copied into a pinned buffer); the last device copy may
  /// still be running (exec->synchronize() waits for it).
  void upload(const void *src, void *dst, std::size_t bytes);

  /// A vector's copies (the plugin's b in, x out): in pieces of a quarter of `bytes` (1 MiB at
  /// least, the buffers' size at most) through the two buffers, so the host copies of one
  /// piece overlap the link's transfer of the next; not counted in stats() (the matrix's
  /// uploads are). upload_vector queues as upload() does; download waits: dst (host memory)
  /// holds src (exec's device memory, after the work queued on exec's stream before it) when
  /// it returns. Measured on the H100 for a 1 M-row vector (8.4 MB): see docs/petsc.md.
  void upload_vector(const void *src, void *dst, std::size_t bytes);
  void download(const void *src, void *dst, std::size_t bytes);

  /// As upload(), but the copy engine reads src itself (no host copy) once (src, bytes, key)
  /// has come `after` times (>= 1): its whole pages are then registered with CUDA
  /// (cudaHostRegister, page-locked in place; the partial first and last pages, which a
  /// neighbouring array may share, go through the pinned buffers) and stay registered while the
  /// same key comes back, so a values-only refresh costs the link's time alone. The caller promises that the array stays allocated at
  /// src while `key` (not 0) names it: the plugin's key is PETSc's Mat id with its nonzero state
  /// (a new Mat, or new nonzeros that may move the array, give a new key; whatever was kept at
  /// or beside src under an old key is dropped first, as its pages may belong to a freed array).
  /// At most max_registered ranges are kept (the least recently used dropped). With after >= 2
  /// the (after - 1)-th call (which returns false: the caller copies) marks the range (with
  /// after = 1, mark() at the build does), and the
  /// next start_deferred() registers it on a background thread; the after-th call waits for it
  /// if it is still running, or registers in line if no start_deferred() came. Registering
  /// costs about as much as 3-4 host copies (30-86 ms for 524 MB on the H100 machine), and the
  /// caller's own CUDA calls wait while it runs (measured on the H100 when the thread started
  /// inside the (after - 1)-th refresh: that refresh took its copies plus the whole
  /// registration), so the caller starts it where it makes no CUDA calls for a while: the
  /// plugin after a solve, while the host assembles its next matrix. Returns false, doing
  /// nothing (or only marking the range), when key is 0,
  /// bytes < min_register_bytes, the range has not come `after` times yet, or CUDA refuses it
  /// (then upload()). The copy is queued on exec's stream: src must not change until
  /// exec->synchronize().
  bool upload_registered(const void *src, void *dst, std::size_t bytes, std::uint64_t key, int after);
  /// Marks (src, bytes, key) for the next start_deferred() as the (after - 1)-th call does, for
  /// after = 1: the plugin calls it at a matrix's build (the values' first upload), so the solve
  /// after the build registers the array and the first values-only refresh (after = 1) reads it
  /// in place. Returns whether it marked: false when key is 0, bytes < min_register_bytes, or the
  /// range is registered, refused or registering already.
  bool mark(const void *src, std::size_t bytes, std::uint64_t key);
  /// Starts the registrations that upload_registered (after >= 2) or mark() marked on a background
  /// thread each, and returns at once; nothing when none is marked.
  void                         start_deferred();
  static constexpr std::size_t min_register_bytes = std::size_t(4) << 20;
  static constexpr std::size_t max_registered     = 4;

  /// Where the time of the uploads since the last reset_stats() went: bytes moved, host
  /// copies into the pinned buffers (ms, wall clock of the parallel copies), and waits for
  /// the copy engine to free a buffer (ms); bytes read straight from registered host memory
  /// and the time of new registrations (cudaHostRegister: register_ms in line, or
  /// register_background_ms on the background thread, of which register_wait_ms this call
  /// waited for). For -ksp_view (a slow upload: which side).
  struct Stats {
    double      bytes = 0, host_copy_ms = 0, wait_ms = 0;
    int         threads          = 0;  // of the host copies (HEPTANE_UPLOAD_THREADS, else OpenMP's default)
    const char *team             = ""; // who copied: "heptane-copy pool" or "OpenMP team" (HEPTANE_UPLOAD_TEAM)
    double      registered_bytes = 0, register_ms = 0;
    double      register_background_ms = 0, register_wait_ms = 0;
    // during the host copies, the whole process's (getrusage): minor page faults (e.g. the
    // kernel's NUMA balancing unmapping pages to sample them) and involuntary context switches
    // (a copy thread preempted): what a slow host copy ran into
    double page_faults = 0, context_switches = 0;
    // HEPTANE_UPLOAD_SCHEDSTAT=1: the scheduler's account of the last host copy of 8 MiB or
    // more (core/sched_probe.hpp: how long the copy threads waited for a CPU, who else ran),
    // and the time that copy's /proc snapshots took (outside the copy's time)
    std::string sched;
    double      sched_probe_ms = 0;
  };
  const Stats &stats() const noexcept { return stats_; }
  void         reset_stats() noexcept { stats_ = Stats{}; }

private:
  struct Registered {
    const void    *p     = nullptr;
    std::size_t    bytes = 0;
    std::uint64_t  key = 0, used = 0;
    std::uintptr_t lo = 0, hi = 0;     // the whole pages inside [p, p + bytes): what is registered
    int            seen       = 0;     // times this range came with this key
    bool           registered = false; // with CUDA (else not yet, or refused)
    bool           refused    = false; // CUDA did not register it: upload() for this key
    bool           deferred   = false; // marked by the (after - 1)-th call or mark() for start_deferred()
    // a registration running on a background thread (started by start_deferred()): its result (registered or
    // not, and the milliseconds it took) once joined
    std::shared_ptr<std::future<std::pair<bool, double>>> pending;
  };
  // the kept range (src, bytes, key), or a new one (seen 0) after dropping any kept range that
  // shares its whole pages under another key and, at max_registered, the least recently used
  Registered                     *find_or_add(const void *src, std::size_t bytes, std::uint64_t key);
  void                            take_pending(Registered &r, bool count);
  void                            drop(std::size_t i);
  void                            copy_in(const void *src, void *dst, std::size_t bytes, std::size_t piece, bool count);
  std::size_t                     vector_piece(std::size_t bytes) const noexcept;
  std::vector<Registered>         registered_;
  std::uint64_t                   uses_ = 0;
  Stats                           stats_;
  std::shared_ptr<const Executor> exec_;
  std::size_t                     chunk_   = 0;
  void                           *buf_[2]  = {nullptr, nullptr};
  void                           *done_[2] = {nullptr, nullptr}; // cudaEvent_t: the copy that last read buf_[i]
  std::unique_ptr<WorkerPool>     pool_;                         // the host copies' threads (null: OpenMP)
  // one host copy of `bytes` into or out of the pinned buffers: the pool's threads, or OpenMP's
  void host_copy(void *dst, const void *src, std::size_t bytes);
};

/// `bytes` bytes of exec's device memory at dst set to zero, queued on exec's stream.
void zero_device_bytes(const Executor &exec, void *dst, std::size_t bytes);
/// dst = src, `bytes` bytes, both in the device memory of the CUDA executor `exec`, on its
/// stream (not waited for). Returns false, copying nothing, where src is not memory of that
/// device (another GPU's, host memory, or not CUDA's at all): the caller takes its host path.
bool copy_device_bytes(const Executor &exec, void *dst, const void *src, std::size_t bytes);
/// Whether p is device memory of the CUDA executor `exec`'s GPU (false for host memory, another
/// GPU's, memory CUDA does not know, and on a build without CUDA).
bool is_device_memory_of(const Executor &exec, const void *p);
/// Waits for all work on exec's GPU, every stream (the caller's, e.g. PETSc's, included).
void synchronize_device(const Executor &exec);

} // namespace heptane::plugin
