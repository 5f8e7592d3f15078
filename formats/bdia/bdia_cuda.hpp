// BDIA-GH CUDA products with an explicit launch shape, for benchmarks that compare shapes
// (heptane bench spmv). kernels::spmv(const CudaExecutor&, const Bdia&, ...) calls this with
// the tuned defaults; user code should call that one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/bdia/bdia_kernels.hpp"

namespace heptane {
struct DotsFinish;  // solver/vector/dots_finish.hpp
template <class VT>
struct StepInput;  // solver/vector/dots_finish.hpp
}  // namespace heptane

namespace heptane::kernels {

/// The most block diagonals the CUDA BDIA-GH kernels take (their offsets travel in the
/// kernels' parameter space).
constexpr int bdia_max_block_diagonals = 64;

/// Launch shape of the optimized BDIA kernels (0 = the tuned default).
struct BdiaLaunch {
    int block = 0;            ///< threads per CTA: 64, 128 or 256
    int rows_per_thread = 0;  ///< 1 or 2 (2: 2-wide vector loads where Nc and N are even)
    /// Loads staged per thread before use: 1 = primary (all D block diagonals for Nc <= 4,
    /// one for Nc >= 8), 2 = alternative (about 16 loads; compiled for Nc = 3, 4, 8; the
    /// primary one elsewhere).
    int stage = 0;
};

/// y = alpha * op(A) * x + beta * y with `kernel` and `launch` (thesis ignores `launch`).
/// Throws NotSupported when A has more than 64 block diagonals, DimensionMismatch when A is
/// not on this executor or block_size does not divide its sizes, InputError for a bad
/// launch shape.
template <class MT, class VT>
void spmv_bdia(const CudaExecutor& exec, const Bdia<MT>& a, Op op, VT alpha, const VT* x, VT beta,
               VT* y, BdiaKernel kernel, const BdiaLaunch& launch);

/// Rows [row0, row0 + rows) of a BDIA-GH matrix with `cols` columns, in memory of their own
/// (an out-of-core chunk): value (row0 + i, q*Nc + s) at data[(q*Nc + s)*rows + i], block
/// offsets in host memory. row0, rows and cols are multiples of block_size.
template <class MT>
struct BdiaRows {
    index_t row0 = 0, rows = 0, cols = 0;
    index_t block_size = 1;
    index_t block_diagonals = 0;
    const std::int32_t* block_offsets = nullptr;  ///< host memory, ascending
    const MT* data = nullptr;                     ///< device memory
    /// Op::transpose: these rows are all that add into y[c0, c1) (the block columns they
    /// touch): y = alpha * A_b^T x + beta * y there, stored rather than added atomically;
    /// y outside [c0, c1) untouched. The caller scales it (or knows [c0, c1) is all of y).
    bool exclusive = false;
};

/// The optimized BDIA kernels on one row block, queued on `stream` (a cudaStream_t of the
/// executor's device; null: the executor's), tuned launch shape:
///   Op::normal:    y[0, rows) = alpha * A_b x + beta * y[0, rows)   (x: all cols)
///   Op::transpose: y[0, cols) += alpha * A_b^T x[0, rows), added atomically (row blocks on
///                  other streams may add into the same entries); beta unused
///                  (b.exclusive: y = alpha * A_b^T x + beta * y over the block's columns).
/// DimensionMismatch when the sizes are not multiples of block_size, NotSupported for more
/// than 64 block diagonals.
template <class MT, class VT>
void spmv_bdia_rows(const CudaExecutor& exec, const BdiaRows<MT>& b, Op op, VT alpha, const VT* x,
                    VT beta, VT* y, void* stream = nullptr);

/// y = A x (beta = 0) with the dot products a Krylov step needs next computed in the same
/// pass, while each y_r is in a register (formats/bdia/bdia_dots.cuh):
///     count = 1: (w, y);     count = 3: (w, y), (y, y), (w, w)
/// accumulated in double, one partial per CTA: partials[k * parts + b] for sum k < count and
/// CTA b < parts, where parts is the return value; their sum in order b = 0, 1, ... is the dot
/// product (reproducible run to run). w may be x (the product's own input: no extra pass);
/// y must alias neither. A must be square. Returns 0, computing nothing, where there is no
/// fused kernel (an empty matrix, more than 64 block diagonals): the caller then applies and
/// reduces separately. Throws InputError when count is not 1 or 3 or `capacity` (doubles at
/// partials) is below count * parts (spmv_dots_capacity gives enough), DimensionMismatch as
/// spmv does. The tuned launch shape; the bytes of the product plus one read of w (none when
/// w is x). `finish` (non-null): the last CTA to finish (a ticket in finish->state) also
/// adds up the partials, each thread a fixed stride of them and then the block sum, and runs
/// finish_dots on the totals (solver/vector/dots_finish.hpp), so the step needs no
/// reduction kernel; the partials are still written.
template <class MT, class VT>
index_t spmv_dots(const CudaExecutor& exec, const Bdia<MT>& a, const VT* x, VT* y, const VT* w,
                  int count, double* partials, std::size_t capacity,
                  const DotsFinish* finish = nullptr);

/// spmv_dots whose input the product forms itself from a BiCGStab step's vectors (StepInput,
/// solver/vector/dots_finish.hpp): y = A z with z = r + β (a − ω b) (bicgstab_p, count 1,
/// (w, y)) or z = r − α b (bicgstab_s, count 3 with w = z: (z, y), (y, y), (z, z)), each
/// row's own z entry written to input.z; the scalars from input.state, nothing done once it
/// has stopped. Saves the vector kernel that wrote z and its pass over z. Throws InputError
/// for a kind that does not match count, missing vectors or a z that aliases r, a, b or y,
/// NotSupported where spmv_dots would return 0 (the caller must then not form inputs);
/// otherwise as spmv_dots. Instantiated for (double, double), (float, float) and (float,
/// double) (formats/bdia/bdia_step_*.cu).
template <class MT, class VT>
index_t spmv_step_dots(const CudaExecutor& exec, const Bdia<MT>& a, const StepInput<VT>& input,
                       VT* y, const VT* w, int count, double* partials, std::size_t capacity,
                       const DotsFinish* finish = nullptr);

/// Whether spmv_dots and spmv_step_dots have a kernel for `a` (not empty, at most
/// bdia_max_block_diagonals block diagonals).
template <class MT>
bool spmv_dots_fuses(const Bdia<MT>& a)
{
    return a.rows > 0 && a.num_block_diagonals() > 0 &&
           a.num_block_diagonals() <= bdia_max_block_diagonals;
}

/// Doubles of `partials` that spmv_dots needs for `count` sums over a matrix of `rows` rows
/// (one per 256 rows, rounded up, per sum).
inline std::size_t spmv_dots_capacity(index_t rows, int count)
{
    return std::size_t(count) * ((std::size_t(rows > 0 ? rows : 0) + 255) / 256 + 1);
}

}  // namespace heptane::kernels
