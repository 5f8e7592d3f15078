// New values into a format's value array through a slot map made once per pattern, declared
// once; values_cpu.cpp (OpenMP) and values.cu (CUDA) implement them side by side: copy_values
// (MatrixOperator::update_values, formats/matrix_operator.hpp: a source index per target) and
// scatter_values (the PETSc plugin's CSR -> BDIA-GH maps: entry k to one slot).
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

}  // namespace heptane::kernels
