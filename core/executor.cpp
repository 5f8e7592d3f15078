#include "core/executor.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.hpp"

namespace heptane {

std::shared_ptr<const CpuExecutor> CpuExecutor::create()
{
    return std::make_shared<const CpuExecutor>();
}

std::shared_ptr<const CpuExecutor> cpu_executor()
{
    static const auto exec = CpuExecutor::create();
    return exec;
}

int CpuExecutor::threads() const noexcept
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

std::string CpuExecutor::name() const
{
    return "cpu (" + std::to_string(threads()) + " threads)";
}

void* CpuExecutor::alloc(std::size_t bytes) const
{
    if (bytes == 0) return nullptr;
    // 64-byte alignment: whole cache lines, and AVX-512 friendly.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) HEPTANE_THROW(DeviceError, "host allocation of " << bytes << " bytes failed");
    count_allocation();
    return p;
}

void CpuExecutor::free(void* ptr) const noexcept
{
    std::free(ptr);
}

void advise_huge_pages(void* p, std::size_t bytes) noexcept
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t huge = std::uintptr_t(2) << 20;
    const auto first = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t begin = (first + huge - 1) & ~(huge - 1);
    const std::uintptr_t end = (first + bytes) & ~(huge - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

}  // namespace heptane
