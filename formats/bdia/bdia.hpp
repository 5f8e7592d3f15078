// BDIA-GH: block-diagonal storage for matrices whose Nc x Nc blocks lie on a few block
// diagonals (docs/design.md §1). For block offsets d_0..d_{D-1} and block size Nc there are
// D*Nc element diagonals k = q*Nc + s, each a column of length `rows`:
//
//     value(r, k)  = data[k*rows + r]
//     column(r, k) = r - (r mod Nc) + d_q*Nc + s        (a slot is valid if 0 <= column < cols)
//
// No column indices are stored. A^T is the BDIA matrix with offsets -d and transposed
// blocks, so A^T x is a gather over the same data (no atomics, no stored copy).
#pragma once

#include <cstdint>
#include <vector>

#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"

namespace heptane {

template <class T>
struct Bdia {
    index_t rows = 0;                    ///< multiple of block_size
    index_t cols = 0;                    ///< multiple of block_size
    index_t block_size = 1;              ///< Nc
    std::vector<index_t> block_offsets;  ///< d_q, ascending, in blocks (host copy)
    Array<T> data;                       ///< D*Nc*rows values, column-major
    Array<std::uint64_t> pattern;        ///< bitset over data: 1 = stored entry
    /// The block diagonal at offset 0 holds the identity (its stored values are exactly I).
    /// The tuned CUDA product A x for Nc = 1 with 7 block diagonals (the hepta's, offset 0
    /// in the middle) adds x there instead of reading those values (8 of a row's 56 bytes of
    /// fp64 values); every other kernel reads the stored I, so the flag never changes a
    /// result. Set by kernels::bdia_right_scale for A M⁻¹ with M A's main blocks.
    bool unit_main_block = false;

    index_t num_block_diagonals() const noexcept
    {
        return static_cast<index_t>(block_offsets.size());
    }
    /// The index q of the block diagonal at offset 0, or -1 when there is none.
    index_t main_block_diagonal() const noexcept
    {
        for (std::size_t q = 0; q < block_offsets.size(); ++q)
            if (block_offsets[q] == 0) return static_cast<index_t>(q);
        return -1;
    }
    index_t num_diagonals() const noexcept { return num_block_diagonals() * block_size; }
    /// Element offset of diagonal k: d_q*Nc + s.
    index_t offset(index_t k) const noexcept
    {
        return block_offsets[k / block_size] * block_size + k % block_size;
    }
    offset_t slots() const noexcept { return static_cast<offset_t>(num_diagonals()) * rows; }
    const std::shared_ptr<const Executor>& exec() const noexcept { return data.exec(); }
    Bdia to(std::shared_ptr<const Executor> exec) const
    {
        return Bdia{rows,           cols,          block_size,
                    block_offsets,  data.to(exec), pattern.to(exec),
                    unit_main_block};
    }
};

/// Build from canonical COO with block size Nc. With `block_offsets` empty, the distinct
/// block offsets of the pattern are used; otherwise every entry must lie on one of the
/// given block offsets (InputError naming the first that does not).
template <class T>
Bdia<T> bdia_from_coo(const Coo<T>& a, index_t block_size, std::vector<index_t> block_offsets = {});
/// The same, built on `exec`: on a GPU the entries are uploaded and placed there by one kernel
/// (kernels::bdia_place_entries), without a host BDIA copy. The checks (canonical order, the
/// offsets) run on the host first; errors as above, NotSupported for a GPU in a build without
/// CUDA.
template <class T>
Bdia<T> bdia_from_coo(const Coo<T>& a, index_t block_size, std::vector<index_t> block_offsets,
                      const std::shared_ptr<const Executor>& exec);
/// The same from host CSR `a` (columns in any order within a row, no entry stored twice) on
/// `exec`. The row pointers are checked on the host, each column where it is placed. `on_exec`:
/// optional, the same matrix already in exec's memory (a copy the caller keeps for other uses): the
/// placement reads it instead of uploading `a`. Errors as bdia_from_coo's (InputError also for a
/// malformed CSR or an `on_exec` that does not match).
template <class T>
Bdia<T> bdia_from_csr(const Csr<T>& a, index_t block_size, std::vector<index_t> block_offsets,
                      const std::shared_ptr<const Executor>& exec, const Csr<T>* on_exec = nullptr);
/// The distinct block offsets (block column - block row) of canonical host COO `a` with block
/// size Nc, ascending (what bdia_from_coo uses when none are given).
template <class T>
std::vector<index_t> bdia_block_offsets(const Coo<T>& a, index_t block_size);
template <class T>
Coo<T> to_coo(const Bdia<T>& a);

/// An all-zero BDIA matrix with the given structure, every valid slot marked as stored
/// (generators fill `data` directly for sizes too large for COO).
template <class T>
Bdia<T> bdia_zeros(index_t rows, index_t cols, index_t block_size,
                   std::vector<index_t> block_offsets);

/// bdia_zeros's stored-slot pattern on the host: every slot of block offset d_q whose column
/// lies inside the matrix (block rows b with 0 <= b + d_q < cols/Nc: one contiguous range of
/// bits per element diagonal). `block_offsets`: ascending, distinct, not checked.
Array<std::uint64_t> bdia_zeros_pattern(index_t rows, index_t cols, index_t block_size,
                                        const std::vector<index_t>& block_offsets);

}  // namespace heptane
