// The block kernels of GMRES's classical Gram-Schmidt (solver/gmres/gmres.cpp), declared
// once; gmres_cpu.cpp (OpenMP) and gmres.cu (CUDA) implement them side by side, dispatched
// through dispatch_executor (solver/vector/vector_ops.hpp). Instantiated for VT = double and
// float; sums accumulate in double.
//
// V is a block of k columns of length n stored one after the other (column c at V + c·n),
// as the Krylov basis V_j and the preconditioned basis Z_j are kept. Results and
// coefficients are doubles in the executor's memory; nothing here waits for the executor,
// and nothing is summed over processes (the caller hands the sums to its Reducer).
#pragma once

#include <cstddef>

#include "core/executor.hpp"
#include "core/types.hpp"

namespace heptane::kernels {

/// Doubles of reduction scratch gmres_multi_dot and gmres_multi_axpy need on this executor
/// for vectors of length n and at most `max_sums` sums per call (k + 1 for a multi-dot with
/// the norm).
std::size_t gmres_scratch_size(const CpuExecutor& exec, index_t n, int max_sums);
std::size_t gmres_scratch_size(const CudaExecutor& exec, index_t n, int max_sums);

/// out[c] = (V_c, w) for c < k, and with `with_norm` also out[k] = (w, w): k (+ 1) dot
/// products in one pass over w and V (CUDA: one pass over w per gmres_cuda_dot_tile columns,
/// gmres_traffic.hpp), each summed in a fixed order (reproducible run to run for a given thread
/// count or device).
///                                                                  k + 1 passes
template <class VT>
void gmres_multi_dot(const CpuExecutor& exec, index_t n, int k, const VT* V, const VT* w,
                     bool with_norm, double* out, double* scratch);
template <class VT>
void gmres_multi_dot(const CudaExecutor& exec, index_t n, int k, const VT* V, const VT* w,
                     bool with_norm, double* out, double* scratch);

/// w += alpha · Σ_{c<k} coef[c] V_c (accumulated in double, rounded to VT once), and when
/// norm_out is not null, *norm_out = (w, w) of the updated w, in the same pass.
///                                                                  k + 2 passes
template <class VT>
void gmres_multi_axpy(const CpuExecutor& exec, index_t n, int k, const VT* V, const double* coef,
                      double alpha, VT* w, double* norm_out, double* scratch);
template <class VT>
void gmres_multi_axpy(const CudaExecutor& exec, index_t n, int k, const VT* V, const double* coef,
                      double alpha, VT* w, double* norm_out, double* scratch);

/// The scaling of the next basis vector with the norm where it is: h = √max(*w_norm2, 0)
/// (‖w‖² after the second pass) and a = √*az_norm2 (‖A z_j‖², the first pass's); w *= 1/h
/// where h > ratio · a and h is finite, else w = 0 (an invariant space: the column is not
/// used). No value comes back to the host, so the next step can be queued before the host
/// has read this column. 2 passes.
template <class VT>
void gmres_scale_next(const CpuExecutor& exec, index_t n, const double* az_norm2,
                      const double* w_norm2, double ratio, VT* w);
template <class VT>
void gmres_scale_next(const CudaExecutor& exec, index_t n, const double* az_norm2,
                      const double* w_norm2, double ratio, VT* w);

}  // namespace heptane::kernels
