// The boundary part of a distributed BDIA product, declared once; coupling_cpu.cpp and
// coupling.cu implement it side by side:
//
//     y[r] += alpha * sum over slots k of row r whose column c = r - r%Nc + offset(k) is not
//             local (c < 0 or c >= n) and lies in the halo: data[k*n + r] * halo(c)
//
// with halo(c) = halo[lower + c] for -lower <= c < 0 and halo[lower + c - n] for
// n <= c < n + upper (slots beyond the halo are outside the global matrix: skipped). Only
// the rows [0, lower_rows) and [upper_begin, n) can have such slots.
//
// And the pack of a halo of arbitrary rows (the distributed CSR operator, dist_csr.hpp):
//
//     out[k] = x[rows[k]],  k < n
#pragma once

#include "core/executor.hpp"
#include "formats/bdia/bdia.hpp"

namespace heptane::kernels {

struct CouplingRows {
    index_t lower = 0;        ///< halo rows below (L)
    index_t upper = 0;        ///< halo rows above (U)
    index_t lower_rows = 0;   ///< rows [0, lower_rows) may reach below
    index_t upper_begin = 0;  ///< rows [upper_begin, n) may reach above (>= lower_rows)
};

template <class MT, class VT>
void bdia_coupling(const CpuExecutor& exec, const Bdia<MT>& a, CouplingRows rows, VT alpha,
                   const VT* halo, VT* y);
template <class MT, class VT>
void bdia_coupling(const CudaExecutor& exec, const Bdia<MT>& a, CouplingRows rows, VT alpha,
                   const VT* halo, VT* y);

template <class VT>
void gather_rows(const CpuExecutor& exec, index_t n, const index_t* rows, const VT* x, VT* out);
template <class VT>
void gather_rows(const CudaExecutor& exec, index_t n, const index_t* rows, const VT* x, VT* out);

}  // namespace heptane::kernels
