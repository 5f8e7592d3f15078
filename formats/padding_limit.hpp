// The one limit on padding for the padded formats asked for by name (ELL, DIA, BSR, BDIA-GH):
// a build that would store more than 32 values an entry, once beyond 2^24 slots, is refused
// before it allocates (docs/formats.md, "Padding limits").
#pragma once

#include <algorithm>
#include <cstddef>

#include "core/types.hpp"

namespace heptane {

/// Whether `slots` stored values for `nnz` entries are within the limit.
inline bool padding_within_limit(std::size_t slots, offset_t nnz) noexcept
{
    return slots <= (std::size_t(1) << 24) || slots <= 32 * std::size_t(std::max<offset_t>(nnz, 0));
}

}  // namespace heptane
