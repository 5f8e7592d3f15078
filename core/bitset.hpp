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

/// Sets bit i of `words` to pred(i) for every i < bits, a whole 64-bit word per step: the
/// threads own whole words, so plain stores are safe. Parallel from `parallel_min` words on.
template <class Pred>
void assign_bits(std::uint64_t* words, std::uint64_t bits, const Pred& pred,
                 std::int64_t parallel_min)
{
    const std::int64_t nw = std::int64_t((bits + 63) / 64);
#pragma omp parallel for schedule(static) if (nw >= parallel_min)
    for (std::int64_t w = 0; w < nw; ++w) {
        std::uint64_t word = 0;
        const std::uint64_t b0 = std::uint64_t(w) * 64;
        const std::uint64_t b1 = b0 + 64 < bits ? b0 + 64 : bits;
        for (std::uint64_t bit = b0; bit < b1; ++bit)
            if (pred(bit)) word |= std::uint64_t{1} << (bit - b0);
        words[w] = word;
    }
}

}  // namespace heptane
