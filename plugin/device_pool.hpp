// The plugin's executors, one per device for the whole process, and their page-locked upload
// buffers; optionally made ahead of time on a background thread.
//
// A GPU's first use in a process creates its CUDA context, the executor's stream and its
// cuBLAS/cuSPARSE handles, and pins the upload buffers: ~0.15 s on an H100, which the first
// KSPSetUp of a simulator would otherwise wait for. prewarm_device starts that work when the
// plugin is loaded (PetscInitialize with -dll_append), so it overlaps what the host program
// does before its first solve (building its grid, assembling its matrix). Every matrix and
// KSP of the process then shares the one executor of its device (one stream: PETSc's solves
// run one after the other), and the stores on it share one pair of pinned buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "plugin/pinned_upload.hpp"
#include "solver/krylov.hpp"

namespace heptane::plugin
{

/// "auto" -> "cuda" when a CUDA device is visible, else "cpu"; "gpu[:N]" -> "cuda[:N]".
/// Other strings are returned as they are (make_executor checks them). With the matrix's
/// stored entries known (nnz >= 0), "auto" weighs the devices by the measured model of
/// heptane solve's --device auto (auto_gpu_min_entries, solver/solve.hpp) for `threads` host
/// threads: "cpu" below its threshold. ranks_per_gpu > 1 (several MPI ranks of a node share
/// each of its GPUs; nnz per rank): the same model with the sharing (auto_gpu_min_entries'
/// ranks_per_gpu). `why`, when given, says what auto chose and why.
std::string resolve_device(const std::string &device, long long nnz = -1, int threads = 1, std::string *why = nullptr, int ranks_per_gpu = 1);

/// Starts making the executor of `device` (as -heptane_device takes it: auto, cpu, gpu,
/// cuda, cuda:N, gpu:N) and its pinned buffers on a background thread, and returns at once.
/// Nothing for cpu, for auto without a GPU, or when a device is already made or in the
/// making. Errors on the thread are kept, not thrown: shared_executor then makes the
/// executor itself and reports its own error.
/// What else the thread loads once the device is set up, so that the first setup and solve
/// do not load it (CUDA loads a kernel at its first launch).
struct PrewarmWork {
  /// the device code of AMG and CPR (warm_up_multigrid, cpr.hpp): options name hamg or hcpr
  bool multigrid = false;
  /// the device code of these Krylov solves with Jacobi/block Jacobi, folded and not, at these
  /// block sizes (warm_up_krylov, solver/warm_up.hpp); none: nothing
  std::vector<SolverType> solvers;
  std::vector<index_t>    block_sizes;
};
void prewarm_device(const std::string &device, const PrewarmWork &work = PrewarmWork{});

/// The process's executor for `device` (resolve_device's names: cpu, cuda, cuda:N): the one
/// prewarm_device made (waiting for it if it is still in the making), the one an earlier
/// call made, or a new one, kept for the later calls.
std::shared_ptr<const Executor> shared_executor(const std::string &device);

/// The pinned upload buffers of `exec` (a CUDA executor), made once per executor and shared
/// by whoever uploads on it (one host thread: the uploads do not overlap).
std::shared_ptr<PinnedUpload> shared_pinned_upload(const std::shared_ptr<const Executor> &exec);

/// PinnedUpload::start_deferred on exec's pinned upload buffers, where they were made (nothing
/// otherwise): the plugin calls it after a solve, when no CUDA call of its own follows until the
/// host hands over its next matrix.
void start_deferred_registrations(const std::shared_ptr<const Executor> &exec);

/// Milliseconds the background thread took (0 when it did not run), and whether it was
/// still running when the first shared_executor call for its device came (that call waited).
struct PrewarmReport {
  double      ms            = 0;
  double      multigrid_ms  = 0; // of ms: AMG's and CPR's device code loaded (warm_up_multigrid)
  double      krylov_ms     = 0; // of ms: the Krylov solves' device code loaded (warm_up_krylov)
  int         krylov_solves = 0;
  std::string krylov_what; // "BiCGStab, CG at Nc 1, 2, 3"
  bool        waited = false;
  std::string device; // what it made ("cuda:0"), or empty
  std::string error;  // what it could not make (its exception's message), or empty
};
PrewarmReport prewarm_report();

/// Drops the process's executors and buffers (PetscFinalize; before the CUDA runtime shuts
/// down): waits for a thread still running. Engines alive keep theirs (shared ownership).
void release_devices();

} // namespace heptane::plugin
