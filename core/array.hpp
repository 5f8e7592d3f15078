// Array<T>: a contiguous buffer owned by an executor (RAII). On the host it is a std::vector,
// so readers and generators can build data with push_back and hand it over without a copy; on
// a CUDA device it is one block from the executor (stream-ordered, core/executor.hpp).
// Copies between executors go through to().
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/executor.hpp"

namespace heptane {

/// v.resize(n) for a vector about to be overwritten whole: a large one (4 MB or more) is
/// backed by huge pages where the OS offers them, so that resize's zero-fill faults in 2 MB
/// pieces, not 4 KB ones (67 MB: 35 -> 11 ms measured on a 2-core VM; a solution vector of
/// 8.4 M rows took 67-87 ms to download on the H100 machine, mostly these faults).
template <class T>
void resize_for_overwrite(std::vector<T>& v, std::size_t n)
{
    if (n > v.capacity() && n * sizeof(T) >= (std::size_t(4) << 20)) {
        v.reserve(n);
        advise_huge_pages(v.data(), n * sizeof(T));
    }
    v.resize(n);
}

template <class T>
class Array {
public:
    Array() : exec_(cpu_executor()) {}
    /// n elements on `exec`: value-initialised on the host, uninitialised on a device.
    Array(std::shared_ptr<const Executor> exec, std::size_t n) : exec_(std::move(exec))
    {
        if (exec_->is_cpu()) {
            host_.resize(n);
            if (n) exec_->count_allocation();
        } else {
            allocate_device(n);
        }
    }
    /// Take over a host vector (no copy).
    Array(std::vector<T>&& v) : exec_(cpu_executor()), host_(std::move(v)) {}  // NOLINT
    Array(const std::vector<T>& v) : exec_(cpu_executor()), host_(v)           // NOLINT
    {
        if (!v.empty()) exec_->count_allocation();
    }

    Array(const Array& other) : exec_(other.exec_)
    {
        if (exec_->is_cpu()) {
            host_ = other.host_;
            if (!host_.empty()) exec_->count_allocation();
        } else {
            allocate_device(other.size_);
            copy_bytes(*exec_, other.dev_, *exec_, dev_, bytes());
        }
    }
    Array(Array&& other) noexcept
        : exec_(std::move(other.exec_)),
          host_(std::move(other.host_)),
          dev_(other.dev_),
          size_(other.size_)
    {
        other.exec_ = cpu_executor();
        other.dev_ = nullptr;
        other.size_ = 0;
    }
    Array& operator=(Array other) noexcept
    {
        swap(other);
        return *this;
    }
    ~Array() { release(); }

    void swap(Array& o) noexcept
    {
        std::swap(exec_, o.exec_);
        host_.swap(o.host_);
        std::swap(dev_, o.dev_);
        std::swap(size_, o.size_);
    }

    /// A copy of this array on `exec` (a plain copy when it already lives there).
    Array to(std::shared_ptr<const Executor> exec) const
    {
        if (exec_->is_cpu() && exec->is_cpu()) {  // a plain copy: no zero fill before it
            Array out(*this);
            out.exec_ = std::move(exec);
            return out;
        }
        Array out(exec, size());
        copy_bytes(*exec_, data(), *out.exec_, out.data(), bytes());
        return out;
    }
    /// The contents as a host vector.
    std::vector<T> to_vector() const
    {
        if (exec_->is_cpu()) return host_;
        std::vector<T> v;
        resize_for_overwrite(v, size_);
        copy_bytes(*exec_, dev_, *cpu_executor(), v.data(), bytes());
        return v;
    }

    std::size_t size() const noexcept { return exec_->is_cpu() ? host_.size() : size_; }
    std::size_t bytes() const noexcept { return size() * sizeof(T); }
    bool empty() const noexcept { return size() == 0; }
    T* data() noexcept { return exec_->is_cpu() ? host_.data() : dev_; }
    const T* data() const noexcept { return exec_->is_cpu() ? host_.data() : dev_; }
    const std::shared_ptr<const Executor>& exec() const noexcept { return exec_; }
    bool on_host() const noexcept { return exec_->is_cpu(); }

    /// Host-only access. Throws NotSupported on a device array.
    std::vector<T>& host()
    {
        HEPTANE_ENSURE(on_host(), NotSupported, "host access to an array on " << exec_->name());
        return host_;
    }
    const std::vector<T>& host() const
    {
        HEPTANE_ENSURE(on_host(), NotSupported, "host access to an array on " << exec_->name());
        return host_;
    }
    T& operator[](std::size_t i) { return host_[i]; }  // host only (unchecked, hot loops)
    const T& operator[](std::size_t i) const { return host_[i]; }

private:
    void allocate_device(std::size_t n)
    {
        size_ = n;
        dev_ = static_cast<T*>(exec_->alloc(n * sizeof(T)));
    }
    void release() noexcept
    {
        if (dev_) exec_->free(dev_);
        dev_ = nullptr;
        size_ = 0;
    }

    std::shared_ptr<const Executor> exec_;
    std::vector<T> host_;
    T* dev_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace heptane
