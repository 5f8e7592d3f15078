// Executors: where data lives and kernels run (docs/design.md §2). Every kernel takes one.
// This header is free of CUDA so that CPU-only code and CPU-only builds can include it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace heptane {

enum class ExecKind { cpu, cuda };

class Executor : public std::enable_shared_from_this<Executor> {
public:
    virtual ~Executor() = default;
    virtual ExecKind kind() const noexcept = 0;
    /// Human-readable name, e.g. "cpu (16 threads)" or "cuda:0 (NVIDIA H100 80GB HBM3)".
    virtual std::string name() const = 0;
    /// Raw allocation of `bytes` on this executor; throws DeviceError on failure.
    virtual void* alloc(std::size_t bytes) const = 0;
    virtual void free(void* ptr) const noexcept = 0;
    /// Wait until all work queued on this executor is done.
    virtual void synchronize() const = 0;
    bool is_cpu() const noexcept { return kind() == ExecKind::cpu; }
    bool is_cuda() const noexcept { return kind() == ExecKind::cuda; }
    /// Allocations of one byte or more on this executor so far: alloc()'s, and an Array's host
    /// storage on the CPU (a diagnostic: e.g. a solve after Solver::prepare allocates nothing,
    /// which the tests and the plugin's -info check).
    std::uint64_t allocations() const noexcept
    {
        return allocations_.load(std::memory_order_relaxed);
    }
    /// Count one allocation (alloc() and Array's host storage call it).
    void count_allocation() const noexcept { allocations_.fetch_add(1, std::memory_order_relaxed); }

private:
    mutable std::atomic<std::uint64_t> allocations_{0};
};

/// Host executor; kernels are OpenMP-parallel over omp_get_max_threads() threads.
class CpuExecutor final : public Executor {
public:
    static std::shared_ptr<const CpuExecutor> create();
    ExecKind kind() const noexcept override { return ExecKind::cpu; }
    std::string name() const override;
    void* alloc(std::size_t bytes) const override;
    void free(void* ptr) const noexcept override;
    void synchronize() const override {}
    int threads() const noexcept;
};

/// One CUDA device with its own stream, cuBLAS handle and cuSPARSE handle. All kernels and
/// transfers of this executor are queued on its stream. Memory is stream-ordered on that stream
/// (cudaMallocAsync / cudaFreeAsync from the device's default pool, which keeps freed memory for
/// reuse; HEPTANE_CUDA_MALLOC=sync: plain cudaMalloc / cudaFree); no managed memory. Work queued
/// on another stream that uses this executor's memory must be ordered before the memory is
/// freed (an event the executor's stream waits for), as the halo exchanges do.
class CudaExecutor final : public Executor {
public:
    /// Throws NotSupported in a build without CUDA and DeviceError when the device is absent.
    static std::shared_ptr<const CudaExecutor> create(int device = 0);
    /// Number of CUDA devices visible; 0 in a CPU-only build or on a machine without a GPU.
    static int device_count() noexcept;
    ~CudaExecutor() override;
    ExecKind kind() const noexcept override { return ExecKind::cuda; }
    std::string name() const override;
    void* alloc(std::size_t bytes) const override;
    void free(void* ptr) const noexcept override;
    void synchronize() const override;
    /// Wait for the device, then return the memory the pool keeps for reuse to the driver (so
    /// that cudaMemGetInfo and allocations outside the pool see it free).
    void release_cached() const;
    int device() const noexcept;
    /// Opaque handles (cudaStream_t, cublasHandle_t, cusparseHandle_t); core/cuda_common.hpp
    /// gives typed accessors for CUDA code.
    void* stream_handle() const noexcept;
    void* cublas_handle() const noexcept;
    void* cusparse_handle() const noexcept;
    /// Device properties used by kernels to size their grids.
    int multiprocessors() const noexcept;
    /// Keep [base, base + bytes) in the L2 cache across the kernels of this executor's stream
    /// (CUDA's access policy window, its lines "persisting"; the device's persisting set-aside
    /// raised to cover it as far as the device allows): the bytes of the window that the
    /// set-aside holds, 0 where the device has none or bytes is 0. Kernels recorded into a graph
    /// from this stream carry the window (BatchGraph). release_l2 ends it and returns the
    /// persisting lines to normal ones. For vectors read and written several times an
    /// iteration that fit the L2 together (solver/bicgstab).
    std::size_t persist_l2(const void* base, std::size_t bytes) const;
    void release_l2() const noexcept;

    struct Impl;

private:
    explicit CudaExecutor(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The process-wide host executor.
std::shared_ptr<const CpuExecutor> cpu_executor();

/// Copy `bytes` from `src` on `src_exec` to `dst` on `dst_exec` (host↔host, host↔device,
/// device↔device); returns when the copy is complete. Copies of 8 MB or more between the device
/// and pageable host memory go through the process's two pinned 16 MB staging buffers
/// (allocated at the first such copy, kept for the life of the process), the host threads
/// filling or emptying one while the other is copied.
void copy_bytes(const Executor& src_exec, const void* src, const Executor& dst_exec, void* dst,
                std::size_t bytes);

/// Ask the OS to back the whole 2 MB pages inside [p, p + bytes) with huge pages (Linux's
/// madvise(MADV_HUGEPAGE); nothing elsewhere). Memory not yet touched then faults in 512 times
/// fewer pieces.
void advise_huge_pages(void* p, std::size_t bytes) noexcept;

/// True when this build of heptane contains the CUDA back end.
bool built_with_cuda() noexcept;

}  // namespace heptane
