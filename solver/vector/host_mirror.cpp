// HostMirror: page-locked host memory and one event, so that a solver can queue the read of
// its residual behind the iterations already queued and keep the device busy while it waits.
#include <cstdlib>
#include <cstring>

#include "solver/vector/vector_ops.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif

namespace heptane {

HostMirror::HostMirror(std::shared_ptr<const Executor> exec, std::size_t bytes)
    : exec_(std::move(exec)), bytes_(bytes)
{
    if (exec_->is_cpu()) {
        host_ = std::calloc(bytes_ ? bytes_ : 1, 1);
        HEPTANE_ENSURE(host_, DeviceError, "host allocation of " << bytes_ << " bytes failed");
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    const auto& dev = static_cast<const CudaExecutor&>(*exec_);
    HEPTANE_CUDA_CHECK(cudaSetDevice(dev.device()));
    host_ = cuda::pinned_acquire(bytes_);  // a cached block: no cudaMallocHost per solver
    std::memset(host_, 0, bytes_);
    cudaEvent_t ev = nullptr;
    const cudaError_t err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err != cudaSuccess) {
        cuda::pinned_release(host_, bytes_);
        HEPTANE_THROW(DeviceError, "cudaEventCreateWithFlags failed: " << cudaGetErrorString(err));
    }
    event_ = ev;
#else
    HEPTANE_THROW(NotSupported, "CUDA executor in a build without CUDA");
#endif
}

HostMirror::~HostMirror()
{
    if (exec_->is_cpu()) {
        std::free(host_);
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    if (event_) {
        // the block goes back to the cache: the copies recorded into it must have landed
        cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
        cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    }
    cuda::pinned_release(host_, bytes_);
#endif
}

void HostMirror::copy_async(const void* src, std::size_t offset, std::size_t bytes)
{
    HEPTANE_ENSURE(
        offset + bytes <= bytes_, DimensionMismatch,
        "HostMirror: copy of " << bytes << " bytes at " << offset << " passes its size " << bytes_);
    if (bytes == 0) return;
    char* dst = static_cast<char*>(host_) + offset;
    if (exec_->is_cpu()) {
        std::memcpy(dst, src, bytes);
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    const auto& dev = static_cast<const CudaExecutor&>(*exec_);
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cuda::stream(dev)));
#endif
}

void HostMirror::record()
{
#ifdef HEPTANE_HAVE_CUDA
    if (exec_->is_cuda()) {
        const auto& dev = static_cast<const CudaExecutor&>(*exec_);
        HEPTANE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), cuda::stream(dev)));
    }
#endif
}

void HostMirror::wait()
{
#ifdef HEPTANE_HAVE_CUDA
    if (exec_->is_cuda())
        HEPTANE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
#endif
}

}  // namespace heptane
