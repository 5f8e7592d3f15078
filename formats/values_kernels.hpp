// New values into a format's value array through a slot map made once per pattern, declared
// once; values_cpu.cpp (OpenMP) and values.cu (CUDA) implement them side by side: copy_values
// (MatrixOperator::update_values, formats/matrix_operator.hpp: a source index per target) and
// scatter_values (the PETSc plugin's CSR -> BDIA-GH maps: entry k to one slot) and
// block_values_to_csr (a block CSR array, e.g. PETSc's BAIJ, into the order of its scalar CSR,
// by formula: no map).
#pragma once

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// dst[to[j]] = MT(src[from[j]]) for j < n: entry from[j] of the CSR values `src` into slot
/// to[j] of a format's value array `dst` (distinct targets; the other slots keep what they
/// hold: padding stays 0). All arrays in the executor's memory. Traffic: n·(16 + 8 + sizeof(MT))
/// bytes. MT = double or float.
template <class MT>
void copy_values(const CpuExecutor& exec, offset_t n, const offset_t* from, const offset_t* to,
                 const double* src, MT* dst);
template <class MT>
void copy_values(const CudaExecutor& exec, offset_t n, const offset_t* from, const offset_t* to,
                 const double* src, MT* dst);

/// dst[map[k]] = VT(src[k]) for k < n: the k-th CSR value into slot map[k] of another layout
/// (the targets are distinct; dst keeps what is not a target). All arrays in the executor's
/// memory. Traffic: n·(8 + sizeof(IT) + sizeof(VT)) bytes. IT = int32 or int64, VT = double
/// or float.
template <class IT, class VT>
void scatter_values(const CpuExecutor& exec, offset_t n, const IT* map, const double* src, VT* dst);
template <class IT, class VT>
void scatter_values(const CudaExecutor& exec, offset_t n, const IT* map, const double* src,
                    VT* dst);

/// The values of a block CSR matrix (bs x bs blocks stored one after the other, each
/// column-major: PETSc's BAIJ array) into the order of its scalar expansion, whose row
/// pointers are `row_ptr` (rows = block rows * bs): row r of block row ib holds, for each
/// block k of that block row in order, its bs entries of row r, columns ascending. Then
/// row_ptr[ib*bs] = (first block of ib) * bs * bs, so the source of every entry follows from
/// row_ptr alone: dst[row_ptr[R] + t] = src[row_ptr[ib*bs] + (t/bs)*bs*bs + (t%bs)*bs + r]
/// for R = ib*bs + r. All arrays in the executor's memory; nnz = row_ptr[rows] < 2^31.
/// Traffic: 16·nnz bytes and the row pointers.
void block_values_to_csr(const CpuExecutor& exec, index_t rows, index_t bs, const index_t* row_ptr,
                         const double* src, double* dst);
void block_values_to_csr(const CudaExecutor& exec, index_t rows, index_t bs, const index_t* row_ptr,
                         const double* src, double* dst);

/// The scalar pattern of a block CSR pattern (block_rows block rows, block row pointers
/// `block_ptr` from 0, block columns `block_col`, bs x bs blocks): the layout
/// block_values_to_csr reads. row_ptr[ib*bs + r] = block_ptr[ib]*bs*bs + r*(blocks of ib)*bs
/// (rows + 1 entries with row_ptr[rows] = block_ptr[block_rows]*bs*bs) and, for entry t of
/// that row, col_idx = block_col[block_ptr[ib] + t/bs]*bs + t%bs. All arrays in the executor's
/// memory; block_ptr[block_rows]*bs*bs < 2^31.
void block_pattern_to_csr(const CpuExecutor& exec, index_t block_rows, index_t bs,
                          const index_t* block_ptr, const index_t* block_col, index_t* row_ptr,
                          index_t* col_idx);
void block_pattern_to_csr(const CudaExecutor& exec, index_t block_rows, index_t bs,
                          const index_t* block_ptr, const index_t* block_col, index_t* row_ptr,
                          index_t* col_idx);

}  // namespace heptane::kernels
