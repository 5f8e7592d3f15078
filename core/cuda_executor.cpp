// The CUDA executor (host code: runtime API only, no kernels).
#include <cstring>

#include "core/cuda_common.hpp"

namespace heptane {

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

void* CudaExecutor::alloc(std::size_t bytes) const
{
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    HEPTANE_CUDA_CHECK(cudaSetDevice(impl_->device));
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
        cudaGetLastError();
        HEPTANE_THROW(DeviceError, "cudaMalloc of " << bytes << " bytes on device " << impl_->device
                                                    << " failed: " << cudaGetErrorString(err));
    }
    return p;
}

void CudaExecutor::free(void* ptr) const noexcept
{
    if (ptr) cudaFree(ptr);
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
    auto s = cuda::stream(dev);
    HEPTANE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
}

namespace cuda {
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
