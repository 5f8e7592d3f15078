// cuSPARSE baselines (BENCHMARKS.md: the vendor SpMV measured in the same run, on the same
// matrix and vectors): generic cusparseSpMV on CSR (CSR_ALG1, CSR_ALG2), BSR and sliced ELL,
// with the work buffer allocated and cusparseSpMV_preprocess run once per operation; and a
// device transpose (cusparseCsr2cscEx2) for the "stored" A^T x strategy.
//
// Index types: heptane CSR/BSR row pointers are int64 and column indices int32, while
// cuSPARSE wants one index type for both. When nnz (nnzb for BSR) < 2^31 the row pointers
// are copied to int32 on the device (rows + 1 entries, once, at construction); otherwise
// the column indices are widened to int64 (nnz entries, once). Either way the heptane
// matrix is not modified, and must outlive the baseline (its arrays are used in place).
//
// This header is free of CUDA types; it is usable only in builds with the CUDA back end
// (the definitions are in cusparse_baseline.cu).
#pragma once

#include <memory>
#include <string>

#include "core/executor.hpp"
#include "core/types.hpp"
#include "formats/bsr/bsr.hpp"
#include "formats/csr/csr.hpp"

namespace heptane::cusparse {

enum class Baseline { csr_alg1, csr_alg2, bsr, sell };

/// "cusparse-csr-alg1", "cusparse-csr-alg2", "cusparse-bsr", "cusparse-sell".
const char* to_string(Baseline b);

/// One matrix in cuSPARSE's generic API with its SpMV work buffers. MT/VT as in the heptane
/// kernels: (double, double), (float, float), (float, double) (cuSPARSE's mixed mode: fp32
/// matrix, fp64 vectors and compute type).
template <class MT, class VT>
class SpmvBaseline {
public:
    /// CSR_ALG1 / CSR_ALG2 on `a` (on exec's device), or SELL (slice size 32) built from
    /// `a` (its host copy is used to build the slices; the SELL arrays live on the device).
    /// Throws NotSupported for Baseline::bsr, DimensionMismatch if `a` is not on `exec`.
    static std::unique_ptr<SpmvBaseline> from_csr(std::shared_ptr<const CudaExecutor> exec,
                                                  const Csr<MT>& a, Baseline alg);
    /// Generic-API BSR (row-major blocks). cuSPARSE rejects some shapes (block size 1): the
    /// first apply() then throws NotSupported.
    static std::unique_ptr<SpmvBaseline> from_bsr(std::shared_ptr<const CudaExecutor> exec,
                                                  const Bsr<MT>& a);
    ~SpmvBaseline();
    SpmvBaseline(const SpmvBaseline&) = delete;
    SpmvBaseline& operator=(const SpmvBaseline&) = delete;

    /// y = alpha * op(A) * x + beta * y on the executor's stream. The first call for an
    /// operation sizes the buffer and runs cusparseSpMV_preprocess (synchronous setup cost,
    /// outside any timing that warms up first). Throws NotSupported where cuSPARSE refuses
    /// the operation for this format/algorithm, DeviceError on other failures.
    void apply(Op op, VT alpha, const VT* x, VT beta, VT* y);

    Baseline baseline() const noexcept;
    index_t rows() const noexcept;
    index_t cols() const noexcept;
    /// Bytes of the matrix as cuSPARSE reads it (values, indices, pointers, padding), for
    /// the effective bandwidth.
    double matrix_bytes() const noexcept;

    struct Impl;

private:
    explicit SpmvBaseline(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// A^T as a heptane CSR matrix on `exec`, built on the device with cusparseCsr2cscEx2 (CSC of
/// A = CSR of A^T, rows sorted within each column). Needs nnz < 2^31 (the conversion takes
/// int32 indices; NotSupported otherwise). `a` must be on `exec`.
template <class T>
Csr<T> transpose_on_device(std::shared_ptr<const CudaExecutor> exec, const Csr<T>& a);

}  // namespace heptane::cusparse
