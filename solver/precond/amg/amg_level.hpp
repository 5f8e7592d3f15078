// Internal helpers of AMG and CPR (namespace heptane::amg): host CSR and vectors placed on an
// executor in the level precision, and a CSR matrix on an executor as an Operator.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/operator.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/spmv.hpp"

namespace heptane::amg {

template <class VT>
inline Csr<VT> place_csr(const Csr<double>& a, const std::shared_ptr<const Executor>& exec)
{
    Csr<VT> c;
    c.rows = a.rows;
    c.cols = a.cols;
    c.row_ptr = a.row_ptr.to(exec);
    c.col_idx = a.col_idx.to(exec);
    if constexpr (std::is_same_v<VT, double>) {
        c.values = a.values.to(exec);
    } else {
        std::vector<VT> v(a.values.host().begin(), a.values.host().end());
        c.values = Array<VT>(std::move(v)).to(exec);
    }
    return c;
}

template <class VT>
inline Array<VT> place(const std::vector<double>& v, const std::shared_ptr<const Executor>& exec)
{
    std::vector<VT> t(v.begin(), v.end());
    return Array<VT>(std::move(t)).to(exec);
}

template <class VT>
inline void csr_apply(const Executor& exec, const Csr<VT>& m, VT alpha, const VT* x, VT beta, VT* y)
{
#ifdef HEPTANE_HAVE_CUDA
    if (exec.is_cuda()) {
        // the vector kernel: no host wait (the automatic choice measures the longest row
        // once), so the cycle can be recorded into a CUDA graph; a thread a row where rows
        // hold about one entry (plain aggregation's P: the vector kernel's two lanes a row took
        // 19 µs for the 1 M-row P of the reservoir pressure, ~2.7x its bytes' time, ncu, H200)
        const bool single = m.nnz() <= m.rows + m.rows / 2;
        kernels::spmv(static_cast<const CudaExecutor&>(exec), m, Op::normal, alpha, x, beta, y,
                      single ? kernels::CsrKernel::scalar : kernels::CsrKernel::vector);
        return;
    }
#endif
    heptane::spmv(exec, m, Op::normal, alpha, x, beta, y);
}

/// A level's matrix as an Operator (CSR on the executor).
template <class VT>
class CsrLevel final : public Operator<VT> {
public:
    CsrLevel(Csr<VT> m, std::shared_ptr<const Executor> exec)
        : m_(std::move(m)), exec_(std::move(exec))
    {
    }
    using Operator<VT>::apply;
    index_t rows() const override { return m_.rows; }
    index_t cols() const override { return m_.cols; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override
    {
        csr_apply(*exec_, m_, alpha, x, beta, y);
    }
    void apply_transpose(VT, const VT*, VT, VT*) const override
    {
        HEPTANE_THROW(NotSupported, "AMG level: no transpose product");
    }
    std::string describe() const override { return "AMG level (csr)"; }
    bool graph_safe() const override { return exec_->is_cuda(); }
    Csr<VT>& matrix() { return m_; }

private:
    Csr<VT> m_;
    std::shared_ptr<const Executor> exec_;
};

}  // namespace heptane::amg
