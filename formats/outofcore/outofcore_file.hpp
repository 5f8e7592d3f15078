// Internal to formats/outofcore: the chunk file writer shared by OocBuilder (chunks written as
// they are sealed) and save_ooc_file. The layout (all integers little-endian u64 unless said):
//
//     [header, 4096 B: "HEPTHOC1", u32 version = 1, u32 value bytes (8 or 4), zeros]
//     [chunk blocks: each at a multiple of 4096 bytes, padded with zeros to one]
//     [table: a record of 10 u64 per chunk: offset, bytes, col_off, val_off, row0, rows, nnz,
//      lanes, nc (0: CSR), block diagonals (BDIA-GH)]
//     [trailer, 64 B: "HEPTHOCT", table offset, chunks, rows, cols, nnz, FNV-1a of the table,
//      value bytes]
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "formats/outofcore/outofcore.hpp"

namespace heptane::detail {

constexpr std::size_t hoc_align = 4096;
constexpr std::size_t hoc_header_bytes = 4096;
constexpr std::size_t hoc_record_words = 10;
constexpr std::size_t hoc_trailer_bytes = 64;

inline std::size_t hoc_round(std::size_t n)
{
    return (n + hoc_align - 1) / hoc_align * hoc_align;
}

/// Writes a chunk file: the header at construction, blocks one by one, the table and trailer
/// at finish() (then the file is renamed into place; destroyed unfinished, nothing is left).
class HocWriter {
public:
    HocWriter(const std::string& path, int value_bytes);
    /// Append one block; returns its offset in the file.
    std::uint64_t write_block(const void* data, std::size_t bytes);
    /// Table, trailer, rename. `chunks` carry the offsets write_block returned.
    void finish(const std::vector<OocChunk>& chunks, index_t rows, index_t cols, offset_t nnz);
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    AtomicFile f_;
    std::uint64_t at_ = 0;
    int value_bytes_;
};

}  // namespace heptane::detail
