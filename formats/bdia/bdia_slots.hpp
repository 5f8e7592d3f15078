// Where each entry of a CSR matrix goes in a BDIA-GH value array, declared once;
// bdia_slots_cpu.cpp (OpenMP) and bdia_slots.cu (CUDA) implement it side by side. What builds a
// BDIA-GH matrix straight from CSR and later refreshes only its values (the PETSc plugin)
// computes this map once per pattern and scatters through it.
//
//     slot[k] = (q * Nc + c mod Nc) * n + r     for entry k = (r, c), c/Nc - r/Nc = offsets[q]
//
// (the layout of Bdia::data: block diagonal q, column c mod Nc inside the block, row r).
#pragma once

#include <cstdint>
#include <vector>

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// Fills slot[0, row_ptr[n]) for the CSR pattern (row_ptr, col) of an n x n matrix with block
/// size nc and the nq block offsets `offsets` (host memory, any order, no repeats). row_ptr,
/// col and slot live in the executor's memory; ST is std::int32_t (when nq * nc * n < 2^31)
/// or std::int64_t. Returns -1, or the index of an entry that lies on none of the block
/// offsets (its slot is left unset: the caller reports it; the lowest such index on the CPU,
/// one of them on a GPU).
template <class ST>
offset_t bdia_slots_from_csr(const CpuExecutor& exec, index_t n, index_t nc, const index_t* row_ptr,
                             const index_t* col, const index_t* offsets, index_t nq, ST* slot);
template <class ST>
offset_t bdia_slots_from_csr(const CudaExecutor& exec, index_t n, index_t nc,
                             const index_t* row_ptr, const index_t* col, const index_t* offsets,
                             index_t nq, ST* slot);

/// The values of a block CSR matrix with bs = Nc (PETSc's BAIJ array: block k of block row ib,
/// block column block_col[k], stored column-major one block after the other) straight into a
/// BDIA-GH value array `dst` of n = block_rows * nc rows and the nq block offsets `offsets`:
///
///     dst[(q * Nc + c) * n + ib * Nc + r] = values[k * Nc * Nc + c * Nc + r]
///
/// for block_col[k] - ib = offsets[q]: no map, the offset found once per block. Slots of no
/// block keep what they hold. Returns -1, or a block on none of the offsets (the lowest;
/// its values are left out: the caller reports it). CPU only: on a GPU the plugin keeps the
/// values in CSR order too (the preconditioner's numeric part reads them there), so they go
/// through kernels::block_values_to_csr and the slot map instead. MT = double or float.
///
/// One MPI rank's part of a row-distributed matrix (PETSc's MPIBAIJ: block rows from the
/// global block row first_block_row on): with col_map (the global block column of each
/// block column: MPIBAIJ's garray for its off-diagonal part) the block offset of block k is
/// col_map[block_col[k]] - (first_block_row + ib), and its columns are not checked against
/// block_rows (they are another rank's); without, block_col[k] - ib as above, first_block_row
/// unused (the diagonal part: its local block columns have the global block offsets, the
/// rank's rows starting on a block).
template <class MT>
offset_t bdia_values_from_blocks(const CpuExecutor& exec, index_t block_rows, index_t nc,
                                 const index_t* block_ptr, const index_t* block_col,
                                 const double* values, const index_t* offsets, index_t nq, MT* dst,
                                 const index_t* col_map = nullptr, index_t first_block_row = 0);

/// A values-only CSR -> BDIA-GH copy on the CPU that reads no map for most rows. A row is
/// full when it holds every slot of the block offsets in slot order, slot[row_ptr[r] + j] =
/// j * n + r for j < width = nq * Nc (every column the offsets give, ascending: an interior
/// cell of a stencil); a run of consecutive full rows is a (rows x width) array whose
/// transpose is the run's part of dst, copied in tiles that stay in L1; the other rows' entries
/// keep their slots here and are copied after the run before them, in row order (the lines
/// they write are the ones just written). Made once per pattern from the slot map
/// (bdia_slots_from_csr); the copy needs only the values then, in the pattern's order. With no full
/// rows it is the slot map's scatter.
struct BdiaCsrCopyPlan {
    struct Run {
        index_t first = 0, last = 0;  // full rows [first, last), then other rows up to the next
        offset_t entry = 0;           // row_ptr[first]; the other rows' entries follow the run's
        offset_t other_first = 0, other_last = 0;  // their slots in other_slot
    };
    index_t n = 0, width = 0;
    std::vector<Run> runs;                   // in row order, covering every row
    std::vector<offset_t> other_slot;        // the slots of the other rows' entries, in entry order
    offset_t full_entries() const noexcept;  // entries in the runs
};

/// The plan for the n x n pattern row_ptr with the slot map `slot` (bdia_slots_from_csr's,
/// every entry on an offset) and width = nq * Nc.
BdiaCsrCopyPlan bdia_csr_copy_plan(index_t n, index_t width, const index_t* row_ptr,
                                   const offset_t* slot);

/// dst[slot of entry k] = values[k] for every entry of the plan's pattern (MT = double or
/// float); slots of no entry keep what they hold. The same result as scatter_values through
/// the slot map.
template <class MT>
void bdia_values_from_csr(const CpuExecutor& exec, const BdiaCsrCopyPlan& plan,
                          const double* values, MT* dst);

/// The most block offsets bdia_slots_from_csr takes on a GPU (a 27-point box stencil has 27).
constexpr index_t bdia_slots_max_offsets = 64;

}  // namespace heptane::kernels
