// The CUDA executor (host code: runtime API only, no kernels).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_common.hpp"

namespace heptane {

namespace {
// Host-to-device copies of pageable memory at least this large go through pinned staging
// buffers (two of kStageChunk bytes, allocated at the first such copy): the
// driver's own pageable path ran at 5-8 GB/s on the H100 and H200 machines, against 54 GB/s
// pinned.
constexpr std::size_t kStageMin = std::size_t(8) << 20;
constexpr std::size_t kStageChunk = std::size_t(16) << 20;

// memcpy by all OpenMP threads (one thread copies at about a third of what the host can).
void parallel_memcpy(void* dst, const void* src, std::size_t bytes)
{
    constexpr std::size_t piece = std::size_t(1) << 20;
    const std::int64_t pieces = std::int64_t((bytes + piece - 1) / piece);
#pragma omp parallel for schedule(static) if (pieces > 1)
    for (std::int64_t i = 0; i < pieces; ++i) {
        const std::size_t off = std::size_t(i) * piece;
        std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off,
                    std::min(piece, bytes - off));
    }
}
// The process's pinned staging buffers for large pageable uploads, shared by every CUDA
// executor (solve_system makes an executor per call: buffers of its own would be pinned, at
// milliseconds each, on every call). Portable pinned memory: usable with any device. Made at
// the first large upload and kept for the life of the process.
struct StagePool {
    std::mutex mutex;
    void* buffer[2] = {nullptr, nullptr};
};
StagePool& stage_pool()
{
    static StagePool* pool = new StagePool;  // never destroyed: no CUDA calls at exit
    return *pool;
}

// The staging buffers held for one copy: the pool's lock, the buffers (made at the first
// copy) and an event per buffer, destroyed with it.
struct Staging {
    std::lock_guard<std::mutex> lock{stage_pool().mutex};
    void** buffer = stage_pool().buffer;
    cudaEvent_t event[2] = {nullptr, nullptr};
    Staging()
    {
        if (!buffer[0])
            for (int b = 0; b < 2; ++b)
                HEPTANE_CUDA_CHECK(cudaHostAlloc(&buffer[b], kStageChunk, cudaHostAllocPortable));
        for (auto& e : event)
            HEPTANE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    ~Staging()
    {
        for (auto& e : event)
            if (e) cudaEventDestroy(e);
    }
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
};

// dst (pageable host) = src (device), bytes >= kStageMin, on `stream`: the DMA engine copies
// chunks into the two pinned buffers while the host threads copy the previous chunk out of the
// other (the driver's own path to pageable memory copies on one thread).
void stage_download(cudaStream_t stream, void* dst, const void* src, std::size_t bytes)
{
    Staging st;
    const std::size_t chunks = (bytes + kStageChunk - 1) / kStageChunk;
    auto queue = [&](std::size_t c) {
        const std::size_t off = c * kStageChunk, n = std::min(kStageChunk, bytes - off);
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(st.buffer[c & 1], static_cast<const char*>(src) + off, n,
                                           cudaMemcpyDeviceToHost, stream));
        HEPTANE_CUDA_CHECK(cudaEventRecord(st.event[c & 1], stream));
    };
    queue(0);
    for (std::size_t c = 0; c < chunks; ++c) {
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(st.event[c & 1]));
        if (c + 1 < chunks) queue(c + 1);  // into the other buffer, emptied last round
        const std::size_t off = c * kStageChunk;
        parallel_memcpy(static_cast<char*>(dst) + off, st.buffer[c & 1],
                        std::min(kStageChunk, bytes - off));
    }
}

bool is_pinned(const void* p)
{
    cudaPointerAttributes attr{};
    const bool pinned =
        cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type == cudaMemoryTypeHost;
    cudaGetLastError();  // an unregistered pointer may leave an error behind
    return pinned;
}
}  // namespace

struct CudaExecutor::Impl {
    int device = 0;
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    cusparseHandle_t cusparse = nullptr;
    cudaDeviceProp prop{};
};

bool built_with_cuda() noexcept
{
    return true;
}

int CudaExecutor::device_count() noexcept
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return 0;
    }
    return n;
}

std::shared_ptr<const CudaExecutor> CudaExecutor::create(int device)
{
    const int n = device_count();
    HEPTANE_ENSURE(n > 0, DeviceError, "no CUDA device is visible (cudaGetDeviceCount gave 0)");
    HEPTANE_ENSURE(device >= 0 && device < n, DeviceError,
                   "CUDA device " << device << " requested but only " << n << " visible");
    auto impl = std::make_unique<Impl>();
    impl->device = device;
    HEPTANE_CUDA_CHECK(cudaSetDevice(device));
    HEPTANE_CUDA_CHECK(cudaGetDeviceProperties(&impl->prop, device));
    HEPTANE_CUDA_CHECK(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
    HEPTANE_CUBLAS_CHECK(cublasCreate(&impl->cublas));
    HEPTANE_CUBLAS_CHECK(cublasSetStream(impl->cublas, impl->stream));
    HEPTANE_CUSPARSE_CHECK(cusparseCreate(&impl->cusparse));
    HEPTANE_CUSPARSE_CHECK(cusparseSetStream(impl->cusparse, impl->stream));
    return std::shared_ptr<const CudaExecutor>(new CudaExecutor(std::move(impl)));
}

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudaExecutor::~CudaExecutor()
{
    if (!impl_) return;
    cudaSetDevice(impl_->device);
    if (impl_->cusparse) cusparseDestroy(impl_->cusparse);
    if (impl_->cublas) cublasDestroy(impl_->cublas);
    if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

std::string CudaExecutor::name() const
{
    return "cuda:" + std::to_string(impl_->device) + " (" + impl_->prop.name + ")";
}

// Device memory comes from the device's stream-ordered pool (cudaMallocAsync / cudaFreeAsync on
// the executor's stream): a free does not wait for the device as cudaFree does, and a later
// allocation reuses the memory without a call into the driver. AMG's setup makes and drops
// hundreds of temporaries; with cudaMalloc/cudaFree each free stalled the host until the device
// was idle. The pool keeps what it holds (release threshold: no limit) until release_cached()
// or an allocation that fails, which trims it and tries once more. HEPTANE_CUDA_MALLOC=sync
// selects plain cudaMalloc / cudaFree instead.
namespace {
bool use_pool()
{
    static const bool pool = [] {
        const char* v = std::getenv("HEPTANE_CUDA_MALLOC");
        return !(v && std::string(v) == "sync");
    }();
    return pool;
}
// once per device: the default pool keeps freed memory instead of returning it at every
// synchronisation
void keep_pool_memory(int device)
{
    static std::mutex m;
    static std::vector<int> done;
    std::lock_guard<std::mutex> lock(m);
    if (std::find(done.begin(), done.end(), device) != done.end()) return;
    cudaMemPool_t pool = nullptr;
    HEPTANE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    std::uint64_t keep = UINT64_MAX;
    HEPTANE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    done.push_back(device);
}
}  // namespace

void* CudaExecutor::alloc(std::size_t bytes) const
{
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    HEPTANE_CUDA_CHECK(cudaSetDevice(impl_->device));
    cudaError_t err = cudaSuccess;
    if (use_pool()) {
        keep_pool_memory(impl_->device);
        err = cudaMallocAsync(&p, bytes, impl_->stream);
        if (err == cudaErrorMemoryAllocation) {  // memory the pool holds for other streams
            cudaGetLastError();
            release_cached();
            err = cudaMallocAsync(&p, bytes, impl_->stream);
        }
    } else {
        err = cudaMalloc(&p, bytes);
    }
    if (err != cudaSuccess) {
        cudaGetLastError();
        HEPTANE_THROW(DeviceError, "allocation of " << bytes << " bytes on device " << impl_->device
                                                    << " failed: " << cudaGetErrorString(err));
    }
    count_allocation();
    return p;
}

void CudaExecutor::free(void* ptr) const noexcept
{
    if (!ptr) return;
    if (use_pool())
        cudaFreeAsync(ptr, impl_->stream);
    else
        cudaFree(ptr);
}

void CudaExecutor::release_cached() const
{
    if (!use_pool()) return;
    HEPTANE_CUDA_CHECK(cudaSetDevice(impl_->device));
    HEPTANE_CUDA_CHECK(cudaDeviceSynchronize());  // frees queued on every stream are done
    cudaMemPool_t pool = nullptr;
    HEPTANE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, impl_->device));
    HEPTANE_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
}

void CudaExecutor::synchronize() const
{
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}
int CudaExecutor::device() const noexcept
{
    return impl_->device;
}
void* CudaExecutor::stream_handle() const noexcept
{
    return impl_->stream;
}
void* CudaExecutor::cublas_handle() const noexcept
{
    return impl_->cublas;
}
void* CudaExecutor::cusparse_handle() const noexcept
{
    return impl_->cusparse;
}
int CudaExecutor::multiprocessors() const noexcept
{
    return impl_->prop.multiProcessorCount;
}

std::size_t CudaExecutor::persist_l2(const void* base, std::size_t bytes) const
{
    const cudaDeviceProp& prop = impl_->prop;
    if (!base || bytes == 0 || prop.persistingL2CacheMaxSize <= 0 ||
        prop.accessPolicyMaxWindowSize <= 0)
        return 0;
    const std::size_t window = std::min(bytes, std::size_t(prop.accessPolicyMaxWindowSize));
    HEPTANE_CUDA_CHECK(cudaSetDevice(impl_->device));  // the limit is the current device's
    std::size_t aside = 0;
    HEPTANE_CUDA_CHECK(cudaDeviceGetLimit(&aside, cudaLimitPersistingL2CacheSize));
    const std::size_t want = std::min(window, std::size_t(prop.persistingL2CacheMaxSize));
    if (aside < want) {  // raised once to what the largest window asked (never lowered)
        HEPTANE_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want));
        HEPTANE_CUDA_CHECK(cudaDeviceGetLimit(&aside, cudaLimitPersistingL2CacheSize));
    }
    if (aside == 0) return 0;
    cudaStreamAttrValue v{};
    v.accessPolicyWindow.base_ptr = const_cast<void*>(base);
    v.accessPolicyWindow.num_bytes = window;
    // the share of the window's lines that may persist: all of them where the set-aside holds
    // the window, else the fraction it holds, the others streaming (such partial windows lost
    // 16-93 % an iteration in BiCGStab on the H100: docs/benchmarks.md, s46)
    v.accessPolicyWindow.hitRatio =
        static_cast<float>(std::min(1.0, double(aside) / double(window)));
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    HEPTANE_CUDA_CHECK(
        cudaStreamSetAttribute(impl_->stream, cudaStreamAttributeAccessPolicyWindow, &v));
    return std::min(aside, window);
}

void CudaExecutor::release_l2() const noexcept
{
    cudaStreamAttrValue v{};
    v.accessPolicyWindow.num_bytes = 0;
    cudaStreamSetAttribute(impl_->stream, cudaStreamAttributeAccessPolicyWindow, &v);
    cudaSetDevice(impl_->device);
    cudaCtxResetPersistingL2Cache();  // the persisting lines back to normal ones (this device)
    cudaGetLastError();
}

void copy_bytes(const Executor& src_exec, const void* src, const Executor& dst_exec, void* dst,
                std::size_t bytes)
{
    if (bytes == 0) return;
    if (src_exec.is_cpu() && dst_exec.is_cpu()) {
        std::memcpy(dst, src, bytes);
        return;
    }
    // Queue on the stream of the device side (the destination when both are devices), then
    // wait: callers of copy_bytes expect the data to be there on return.
    const auto& dev = static_cast<const CudaExecutor&>(dst_exec.is_cuda() ? dst_exec : src_exec);
    HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
    // large copies between the device and pageable host memory: through the pinned staging
    // buffers
    if (src_exec.is_cpu()) {
        cuda::upload(cuda::stream(dev), dst, src, bytes);
        return;
    }
    if (dst_exec.is_cpu() && bytes >= kStageMin && !is_pinned(dst)) {
        stage_download(cuda::stream(dev), dst, src, bytes);
        return;
    }
    auto s = cuda::stream(dev);
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
}

namespace cuda {

// Large pageable copies: chunks copied into the two pinned buffers by the host threads while the
// DMA engine copies the previous chunk out of the other, the buffers alternating over every
// copy of the object (the pipeline does not drain between copies).
struct StagedUpload::Impl {
    cudaStream_t stream;
    Staging staging;  // the pool's lock and buffers, an event per buffer
    std::size_t chunk = 0;
    explicit Impl(cudaStream_t s) : stream(s) {}
};

StagedUpload::StagedUpload(cudaStream_t stream) : impl_(std::make_unique<Impl>(stream)) {}

StagedUpload::~StagedUpload()
{
    cudaStreamSynchronize(impl_->stream);  // nothing may still read the staging buffers
}

void StagedUpload::copy(void* dst, const void* src, std::size_t bytes)
{
    if (bytes == 0) return;
    Impl& u = *impl_;
    if (bytes < kStageMin || is_pinned(src)) {  // the driver stages small pageable copies
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, u.stream));
        return;
    }
    for (std::size_t off = 0; off < bytes; off += kStageChunk, ++u.chunk) {
        const int b = int(u.chunk & 1);
        const std::size_t n = std::min(kStageChunk, bytes - off);
        // the copy out of this buffer two chunks ago is done (an event not yet recorded
        // counts as done)
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(u.staging.event[b]));
        parallel_memcpy(u.staging.buffer[b], static_cast<const char*>(src) + off, n);
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + off, u.staging.buffer[b], n,
                                           cudaMemcpyHostToDevice, u.stream));
        HEPTANE_CUDA_CHECK(cudaEventRecord(u.staging.event[b], u.stream));
    }
}

void StagedUpload::finish()
{
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}

void upload(cudaStream_t stream, void* dst, const void* src, std::size_t bytes)
{
    if (bytes == 0) return;
    StagedUpload u(stream);
    u.copy(dst, src, bytes);
    u.finish();
}

namespace {
// The released small pinned blocks, by size (a multiple of the page), never freed: the
// process's solvers reuse them (as the staging buffers, no CUDA calls at exit).
struct PinnedCache {
    std::mutex mutex;
    std::vector<std::pair<std::size_t, void*>> free;
};
PinnedCache& pinned_cache()
{
    static PinnedCache* cache = new PinnedCache;
    return *cache;
}
std::size_t pinned_class(std::size_t bytes)
{
    constexpr std::size_t page = 4096;
    return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
}
}  // namespace

void* pinned_acquire(std::size_t bytes)
{
    const std::size_t size = pinned_class(bytes);
    if (size <= kPinnedCacheMax) {
        PinnedCache& c = pinned_cache();
        std::lock_guard<std::mutex> lock(c.mutex);
        for (auto it = c.free.begin(); it != c.free.end(); ++it)
            if (it->first == size) {
                void* p = it->second;
                c.free.erase(it);
                return p;
            }
    }
    void* p = nullptr;
    HEPTANE_CUDA_CHECK(cudaHostAlloc(&p, size, cudaHostAllocPortable));
    return p;
}

void pinned_release(void* p, std::size_t bytes) noexcept
{
    if (!p) return;
    const std::size_t size = pinned_class(bytes);
    if (size > kPinnedCacheMax) {
        cudaFreeHost(p);
        return;
    }
    PinnedCache& c = pinned_cache();
    try {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.free.emplace_back(size, p);
    } catch (...) {  // no memory for the list: free it instead
        cudaFreeHost(p);
    }
}

const char* cublas_status_string(cublasStatus_t s) noexcept
{
    switch (s) {
        case CUBLAS_STATUS_SUCCESS:
            return "success";
        case CUBLAS_STATUS_NOT_INITIALIZED:
            return "not initialized";
        case CUBLAS_STATUS_ALLOC_FAILED:
            return "allocation failed";
        case CUBLAS_STATUS_INVALID_VALUE:
            return "invalid value";
        case CUBLAS_STATUS_ARCH_MISMATCH:
            return "architecture mismatch";
        case CUBLAS_STATUS_MAPPING_ERROR:
            return "mapping error";
        case CUBLAS_STATUS_EXECUTION_FAILED:
            return "execution failed";
        case CUBLAS_STATUS_INTERNAL_ERROR:
            return "internal error";
        case CUBLAS_STATUS_NOT_SUPPORTED:
            return "not supported";
        default:
            return "unknown cuBLAS status";
    }
}
}  // namespace cuda

}  // namespace heptane
