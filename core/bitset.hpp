// Bit helpers over Array<std::uint64_t>: the stored-entry pattern of padded formats.
#pragma once

#include <cstdint>

#include "core/array.hpp"

namespace heptane {

inline Array<std::uint64_t> make_bitset(std::size_t bits, bool value)
{
    Array<std::uint64_t> b(cpu_executor(), (bits + 63) / 64);
    if (value)
        for (auto& w : b.host()) w = ~std::uint64_t{0};
    return b;
}
inline bool test_bit(const std::uint64_t* words, std::size_t i) noexcept
{
    return (words[i >> 6] >> (i & 63)) & 1u;
}
/// Not thread-safe for two bits of one word: parallel writers must own whole words.
inline void set_bit(std::uint64_t* words, std::size_t i, bool v) noexcept
{
    const std::uint64_t m = std::uint64_t{1} << (i & 63);
    if (v)
        words[i >> 6] |= m;
    else
        words[i >> 6] &= ~m;
}

/// Set bit i where other threads may set bits of the same word (an atomic OR).
inline void set_bit_atomic(std::uint64_t* words, std::size_t i) noexcept
{
    const std::uint64_t m = std::uint64_t{1} << (i & 63);
#pragma omp atomic
    words[i >> 6] |= m;
}

}  // namespace heptane
