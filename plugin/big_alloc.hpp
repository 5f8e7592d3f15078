// An allocator for the plugin's large per-pattern host arrays (BAIJ's scalar pattern, its
// positions and values, the composed slot maps): elements are left uninitialised — every one is written
// before it is read — so a new array costs its first touch only, not a zero fill before it.
// Measured on the development VM (examples/reservoir, BAIJ, 33 M entries, one thread): the
// zero-filled std::vector arrays of the map took 0.70 s before the 0.06 s of writes that fill
// them (page faults and the fill); with this allocator the BAIJ input's six setups went from
// 1.2 s more than AIJ's to the same time (docs/logs/baij-inplace-cpu-2026-11-30.log). Marking
// the arrays for transparent huge pages (madvise) was slower there (compaction on fault).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace heptane::plugin
{

template <class T>
struct BigAlloc : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = BigAlloc<U>;
  };
  BigAlloc() = default;
  template <class U>
  BigAlloc(const BigAlloc<U> &) noexcept
  {
  }
  template <class U>
  void construct(U *p) noexcept
  {
    ::new (static_cast<void *>(p)) U; // default-initialised: no zero fill
  }
  template <class U, class... A>
  void construct(U *p, A &&...a)
  {
    ::new (static_cast<void *>(p)) U(std::forward<A>(a)...);
  }
};

/// A std::vector of trivially-copyable T on BigAlloc.
template <class T>
using BigVector = std::vector<T, BigAlloc<T>>;

} // namespace heptane::plugin
