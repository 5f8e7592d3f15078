// The thesis-style BiCGStab, kept as the baseline the fused loop is measured against
// (docs/design.md §3): cuSPARSE generic SpMV on CSR and one cuBLAS call per vector operation,
// each dot product and norm returned to the host as it is computed (cuBLAS pointer mode
// host), so the host waits for the device several times per iteration. It stops by the
// same rules as the fused loop (solver/vector/krylov_state.hpp, evaluated on the host).
// CUDA and double only.
#pragma once

#include <memory>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "formats/csr/csr.hpp"
#include "solver/solver.hpp"

namespace heptane {

/// y = alpha A x + beta y through cusparseSpMV (CSR, CUSPARSE_SPMV_ALG_DEFAULT, work buffer
/// sized once at construction). `a` is host CSR; it is uploaded to `exec` (32-bit indices
/// while nnz < 2^31, 64-bit beyond). A^T x uses CUSPARSE_OPERATION_TRANSPOSE.
/// Throws NotSupported on the CPU executor or in a build without CUDA.
std::unique_ptr<Operator<double>> make_cusparse_csr_operator(const Csr<double>& a,
                                                             std::shared_ptr<const Executor> exec);

namespace detail {
/// The reference loop behind Bicgstab<double> with BicgstabImpl::reference. Operands are
/// checked by the caller. Throws NotSupported on the CPU and in a build without CUDA.
Status bicgstab_reference_solve(const Operator<double>& a, const Operator<double>* m,
                                const Array<double>& b, Array<double>& x,
                                const SolverOptions& opts);
}  // namespace detail

}  // namespace heptane
