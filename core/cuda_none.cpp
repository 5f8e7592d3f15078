// CPU-only build: the CUDA executor is absent. Asking for it is a clear error, never a
// silent fallback (docs/design.md §2).
#include "core/error.hpp"
#include "core/executor.hpp"

#include <cstring>

namespace heptane {

struct CudaExecutor::Impl {};

bool built_with_cuda() noexcept
{
    return false;
}
int CudaExecutor::device_count() noexcept
{
    return 0;
}

std::shared_ptr<const CudaExecutor> CudaExecutor::create(int)
{
    HEPTANE_THROW(NotSupported,
                  "this build of heptane has no CUDA back end (configure with "
                  "-DHEPTANE_WITH_CUDA=ON on a machine with nvcc)");
}

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaExecutor::~CudaExecutor() = default;
std::string CudaExecutor::name() const
{
    return "cuda (absent)";
}
void* CudaExecutor::alloc(std::size_t) const
{
    HEPTANE_THROW(NotSupported, "no CUDA back end");
}
void CudaExecutor::free(void*) const noexcept {}
void CudaExecutor::synchronize() const {}
void CudaExecutor::release_cached() const {}
int CudaExecutor::device() const noexcept
{
    return -1;
}
void* CudaExecutor::stream_handle() const noexcept
{
    return nullptr;
}
void* CudaExecutor::cublas_handle() const noexcept
{
    return nullptr;
}
void* CudaExecutor::cusparse_handle() const noexcept
{
    return nullptr;
}
int CudaExecutor::multiprocessors() const noexcept
{
    return 0;
}
std::size_t CudaExecutor::persist_l2(const void*, std::size_t) const
{
    return 0;
}
void CudaExecutor::release_l2() const noexcept {}

void copy_bytes(const Executor& src_exec, const void* src, const Executor& dst_exec, void* dst,
                std::size_t bytes)
{
    HEPTANE_ENSURE(src_exec.is_cpu() && dst_exec.is_cpu(), NotSupported,
                   "device copy requested in a build without CUDA");
    if (bytes) std::memcpy(dst, src, bytes);
}

}  // namespace heptane
