// The chunk kernels of the out-of-core operator (outofcore.hpp), declared once;
// outofcore_cpu.cpp (OpenMP) and outofcore.cu (CUDA, on the executor's stream) implement them
// side by side. Instantiated for (MT, VT) = (double, double), (float, float), (float, double);
// sums are accumulated in VT.
#pragma once

#include <cstdint>

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// One chunk block in some memory: rows, entries and the three arrays inside the block.
template <class MT>
struct OocChunkView {
    index_t rows = 0;
    offset_t nnz = 0;
    const std::uint32_t* row_ptr = nullptr;
    const std::uint32_t* col = nullptr;
    const MT* val = nullptr;
    int lanes = 1;
    /// BDIA-GH chunks (nc > 0): val holds D*nc*rows values, column-major; offsets the D block
    /// offsets; row0 the chunk's first row in the matrix (columns follow from it), cols the
    /// matrix's columns. row_ptr and col are unused.
    int nc = 0;
    int block_diagonals = 0;
    const std::int32_t* offsets = nullptr;
    index_t row0 = 0;
    index_t cols = 0;
    /// BDIA-GH chunks on CUDA: the D block offsets in host memory (the in-core BDIA kernels
    /// run the chunk, formats/bdia/bdia_cuda.hpp); the CPU kernels read `offsets`.
    const std::int32_t* host_offsets = nullptr;
};

/// y[0, rows) = alpha * A_c x + beta * y[0, rows) (y points at the chunk's first row; beta == 0:
/// y is only written).
template <class MT, class VT>
void ooc_chunk_apply(const CpuExecutor& exec, const OocChunkView<MT>& c, VT alpha, const VT* x,
                     VT beta, VT* y);
/// CUDA: queued on `stream` (a cudaStream_t of the executor's device; null: the executor's).
template <class MT, class VT>
void ooc_chunk_apply(const CudaExecutor& exec, const OocChunkView<MT>& c, VT alpha, const VT* x,
                     VT beta, VT* y, void* stream = nullptr);

/// y += alpha * A_c^T x[0, rows) (x points at the chunk's first row; y has the matrix's cols).
template <class MT, class VT>
void ooc_chunk_apply_transpose(const CpuExecutor& exec, const OocChunkView<MT>& c, VT alpha,
                               const VT* x, VT* y);
template <class MT, class VT>
void ooc_chunk_apply_transpose(const CudaExecutor& exec, const OocChunkView<MT>& c, VT alpha,
                               const VT* x, VT* y, void* stream = nullptr);

/// y[0, n) *= beta (beta == 0: y = 0, NaN or not).
template <class VT>
void ooc_scale(const CpuExecutor& exec, index_t n, VT beta, VT* y);
template <class VT>
void ooc_scale(const CudaExecutor& exec, index_t n, VT beta, VT* y);

}  // namespace heptane::kernels
