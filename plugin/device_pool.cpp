// One executor per device for the process, its pinned buffers, and the background prewarm
// (device_pool.hpp).
#include "plugin/device_pool.hpp"

#include <omp.h>
#ifdef __linux__
  #include <pthread.h>
#endif

#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "solver/precond/amg/cpr.hpp"
#include "solver/solve.hpp"
#include "solver/warm_up.hpp"

namespace heptane::plugin
{

namespace
{

struct Pool {
  std::mutex                                                mutex;
  std::map<std::string, std::shared_ptr<const Executor>>    execs;
  std::map<const Executor *, std::shared_ptr<PinnedUpload>> pinned;
  std::thread                                               worker;      // the prewarm, joined by whoever needs its result
  std::atomic<bool>                                         done{false}; // the worker has finished
  PrewarmReport                                             report;
};

// Never destroyed: executors must not outlive the CUDA runtime, so they go in
// release_devices() (PetscFinalize), and what is left at exit is left to the driver.
Pool &pool()
{
  static Pool *p = new Pool;
  return *p;
}

// the most one upload of the pinned buffers is sized for: two chunks of 32 MiB (PinnedUpload)
constexpr std::size_t upload_bytes = std::size_t(64) << 20;

// "cuda" and "cuda:0" are the same device
std::string canonical(const std::string &resolved)
{
  return resolved == "cuda" ? std::string("cuda:0") : resolved;
}

// joins a running prewarm (the caller holds the mutex; the worker does not take it)
void join_worker(Pool &p)
{
  if (p.worker.joinable()) p.worker.join();
}

} // namespace

void prewarm_device(const std::string &device, const PrewarmWork &work)
{
  Pool                       &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.worker.joinable() || !p.execs.empty()) return;
  p.worker = std::thread([&p, device, work] {
#ifdef __linux__
    pthread_setname_np(pthread_self(), "heptane-prewarm"); // by name in the scheduler's account
#endif
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const std::string name = canonical(resolve_device(device));
      if (name == "cpu") {
        p.done = true;
        return;
      }
      auto exec = make_executor(name);
      auto up   = std::make_shared<PinnedUpload>(exec, upload_bytes);
      // the thread owns these until joined; the joiner moves them into the pool
      p.report.device      = name;
      p.execs[name]        = exec;
      p.pinned[exec.get()] = std::move(up);
      // one OpenMP thread here: a team of this thread's own would compete with the host
      // program's (the warm-up's host work is a few microseconds)
      omp_set_num_threads(1);
      if (work.multigrid) p.report.multigrid_ms = warm_up_multigrid(exec);
      if (!work.solvers.empty() && !work.block_sizes.empty()) {
        const WarmUpReport k   = warm_up_krylov(exec, work.solvers, work.block_sizes);
        p.report.krylov_ms     = k.ms;
        p.report.krylov_solves = k.solves;
        std::ostringstream o;
        for (std::size_t i = 0; i < work.solvers.size(); ++i) o << (i ? ", " : "") << to_string(work.solvers[i]);
        o << " at Nc";
        for (std::size_t i = 0; i < work.block_sizes.size(); ++i) o << (i ? ", " : " ") << work.block_sizes[i];
        p.report.krylov_what = o.str();
      }
    } catch (const std::exception &e) {
      p.report.error = e.what();
    }
    p.report.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    p.done      = true;
  });
}

std::shared_ptr<const Executor> shared_executor(const std::string &device)
{
  Pool                       &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  const std::string           name = canonical(device);
  if (name == "cpu") return make_executor(name);
  if (p.worker.joinable()) {
    // the worker writes the pool without the mutex: nothing else reads it until joined
    p.report.waited = !p.done;
    join_worker(p);
  }
  auto it = p.execs.find(name);
  if (it != p.execs.end()) return it->second;
  auto exec     = make_executor(name);
  p.execs[name] = exec;
  return exec;
}

std::shared_ptr<PinnedUpload> shared_pinned_upload(const std::shared_ptr<const Executor> &exec)
{
  Pool                       &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  join_worker(p);
  auto &up = p.pinned[exec.get()];
  if (!up) up = std::make_shared<PinnedUpload>(exec, upload_bytes);
  return up;
}

void start_deferred_registrations(const std::shared_ptr<const Executor> &exec)
{
  std::shared_ptr<PinnedUpload> up;
  {
    Pool                       &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto                        it = p.pinned.find(exec.get());
    if (it == p.pinned.end() || !it->second) return;
    up = it->second;
  }
  up->start_deferred();
}

PrewarmReport prewarm_report()
{
  Pool                       &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.worker.joinable()) return PrewarmReport{}; // still running: nothing to say yet
  return p.report;
}

void release_devices()
{
  Pool                       &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  join_worker(p);
  p.pinned.clear();
  p.execs.clear();
}

std::string resolve_device(const std::string &device, long long nnz, int threads, std::string *why, int ranks_per_gpu)
{
  if (device == "auto") {
    std::ostringstream o;
    std::string        d = "cpu";
    if (CudaExecutor::device_count() == 0) o << "auto: the CPU (no CUDA device visible)";
    else if (nnz < 0 && ranks_per_gpu > 1) o << "auto: the CPU (" << ranks_per_gpu << " MPI ranks share each GPU of the node; the matrix's entries unknown)";
    else if (nnz < 0) {
      d = "cuda";
      o << "auto: the GPU (a CUDA device is visible)";
    } else {
      const long long from  = auto_gpu_min_entries(threads, ranks_per_gpu);
      d                     = nnz < from ? "cpu" : "cuda";
      const std::string per = ranks_per_gpu > 1 ? " a rank, " + std::to_string(ranks_per_gpu) + " MPI ranks sharing each GPU of the node" : "";
      if (nnz < from) o << "auto: the CPU (" << nnz << " stored entries" << per << " < " << from << ", where a GPU's setup would outweigh its faster iterations; " << threads << " host thread" << (threads == 1 ? "" : "s") << ")";
      else o << "auto: the GPU (" << nnz << " stored entries" << per << " >= " << from << " with " << threads << " host thread" << (threads == 1 ? "" : "s") << ")";
    }
    if (why) *why = o.str();
    return d;
  }
  if (why) why->clear();
  if (device == "gpu") return "cuda";
  if (device.rfind("gpu:", 0) == 0) return "cuda" + device.substr(3);
  return device;
}

} // namespace heptane::plugin
