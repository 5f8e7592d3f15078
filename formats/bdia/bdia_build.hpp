// Placing the entries of a CSR matrix (canonical: sorted rows) into BDIA-GH storage, declared once;
// bdia.cpp (OpenMP) and bdia_build.cu (CUDA) implement it side by side. bdia_from_coo(a, Nc,
// offsets, exec) calls the CUDA one to build a matrix on a GPU from the uploaded entries: no host
// BDIA copy (whose fresh pages and fill cost more than the upload of the entries), one kernel.
//
//     entry e = (r, c, v) of row r, q with c/Nc - r/Nc = offsets[q]:
//     data[(q * Nc + c mod Nc) * rows + r] = v,  pattern bit of that slot set
#pragma once

#include <cstdint>

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// Zeroes data[0, nq * nc * rows) and pattern[0, ceil(that / 64)), then writes the entries
/// of a rows x cols CSR matrix (row_ptr[0, rows], non-decreasing; col and val of its nnz =
/// row_ptr[rows] entries, in any order within a row, in the executor's memory) into them.
/// `offsets`: the nq block offsets, ascending, in host memory. Returns -1, or the index of an entry
/// whose column lies outside the matrix or on none of the offsets (the lowest such index; not
/// stored).
template <class T>
offset_t bdia_place_entries(const CpuExecutor& exec, index_t rows, index_t cols, index_t nc,
                            const index_t* offsets, index_t nq, offset_t nnz,
                            const offset_t* row_ptr, const index_t* col, const T* val, T* data,
                            std::uint64_t* pattern);
template <class T>
offset_t bdia_place_entries(const CudaExecutor& exec, index_t rows, index_t cols, index_t nc,
                            const index_t* offsets, index_t nq, offset_t nnz,
                            const offset_t* row_ptr, const index_t* col, const T* val, T* data,
                            std::uint64_t* pattern);

/// The same from CSR arrays in host memory (CUDA only: on the CPU bdia_place_entries reads
/// them where they are): the row pointers go up at once, the entries in chunks of whole rows of
/// about `chunk_entries`, each placed while the next one is uploaded, so the placement hides
/// behind the upload and no device copy of the whole CSR is made.
template <class T>
offset_t bdia_place_entries_from_host(const CudaExecutor& exec, index_t rows, index_t cols,
                                      index_t nc, const index_t* offsets, index_t nq,
                                      const offset_t* row_ptr, const index_t* col, const T* val,
                                      T* data, std::uint64_t* pattern, offset_t chunk_entries);

}  // namespace heptane::kernels
