// New values into a format's value array through a slot map made once per pattern
// (MatrixOperator::update_values, formats/matrix_operator.hpp), declared once; values_cpu.cpp
// (OpenMP) and values.cu (CUDA) implement it side by side.
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

}  // namespace heptane::kernels
