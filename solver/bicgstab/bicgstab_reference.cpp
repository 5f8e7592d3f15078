// The thesis-style BiCGStab baseline (see bicgstab_reference.hpp): host code only, every
// vector operation one cuBLAS call, every scalar back on the host before the next call.
//
// Per iteration: 2 SpMV, 6 dot products returned to the host (6 host waits), and
// 1 Dscal + 6 Daxpy + 2 Dcopy: 2 × matrix bytes + 31 vector passes (vs 22 fused).
#include "solver/bicgstab/bicgstab_reference.hpp"

#include <chrono>
#include <sstream>
#include <vector>

#include "solver/precond/preconditioner.hpp"
#include "solver/vector/krylov_state.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif

namespace heptane {

#ifndef HEPTANE_HAVE_CUDA

// The signature is the CUDA build's (a shared_ptr by value), hence the NOLINT.
std::unique_ptr<Operator<double>> make_cusparse_csr_operator(
    const Csr<double>&,
    std::shared_ptr<const Executor>)  // NOLINT(performance-unnecessary-value-param)
{
    HEPTANE_THROW(NotSupported, "the cuSPARSE CSR operator needs a build with CUDA");
}

namespace detail {
Status bicgstab_reference_solve(const Operator<double>&, const Operator<double>*,
                                const Array<double>&, Array<double>&, const SolverOptions&)
{
    HEPTANE_THROW(NotSupported,
                  "the reference BiCGStab (cuBLAS + cuSPARSE) needs a build with "
                  "CUDA; use BicgstabImpl::fused on the CPU");
}
}  // namespace detail

#else

namespace {

/// cusparseSpMV on a CSR matrix uploaded once; dense-vector descriptors are made per call
/// (host objects, no device work).
class CusparseCsrOperator final : public Operator<double> {
public:
    CusparseCsrOperator(const Csr<double>& a_in, std::shared_ptr<const CudaExecutor> exec)
        : exec_(std::move(exec)), rows_(a_in.rows), cols_(a_in.cols), nnz_(a_in.nnz())
    {
        const Csr<double> keep = a_in.exec()->is_cpu() ? Csr<double>{} : a_in.to(cpu_executor());
        const Csr<double>& a = a_in.exec()->is_cpu() ? a_in : keep;
        wide_ = nnz_ >= (offset_t(1) << 31);
        values_ = a.values.to(exec_);
        if (wide_) {
            std::vector<std::int64_t> ci(a.col_idx.host().begin(), a.col_idx.host().end());
            row_ptr64_ = a.row_ptr.to(exec_);
            col64_ = Array<std::int64_t>(std::move(ci)).to(exec_);
        } else {
            std::vector<std::int32_t> rp(a.row_ptr.host().begin(), a.row_ptr.host().end());
            row_ptr32_ = Array<std::int32_t>(std::move(rp)).to(exec_);
            col32_ = a.col_idx.to(exec_);
        }
        const auto it = wide_ ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
        void* rp =
            wide_ ? static_cast<void*>(row_ptr64_.data()) : static_cast<void*>(row_ptr32_.data());
        void* ci = wide_ ? static_cast<void*>(col64_.data()) : static_cast<void*>(col32_.data());
        HEPTANE_CUDA_CHECK(cudaSetDevice(exec_->device()));
        HEPTANE_CUSPARSE_CHECK(cusparseCreateCsr(&mat_, rows_, cols_, nnz_, rp, ci, values_.data(),
                                                 it, it, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
        // one work buffer, large enough for A x and A^T x
        Array<double> x(exec_, std::size_t(std::max(rows_, cols_)) + 1);
        Array<double> y(exec_, std::size_t(std::max(rows_, cols_)) + 1);
        std::size_t need = 0;
        for (auto op : {CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_TRANSPOSE}) {
            const bool t = op == CUSPARSE_OPERATION_TRANSPOSE;
            cusparseDnVecDescr_t vx = nullptr, vy = nullptr;
            HEPTANE_CUSPARSE_CHECK(
                cusparseCreateDnVec(&vx, t ? rows_ : cols_, x.data(), CUDA_R_64F));
            HEPTANE_CUSPARSE_CHECK(
                cusparseCreateDnVec(&vy, t ? cols_ : rows_, y.data(), CUDA_R_64F));
            const double one = 1, zero = 0;
            std::size_t bytes = 0;
            const cusparseStatus_t st =
                cusparseSpMV_bufferSize(cuda::cusparse(*exec_), op, &one, mat_, vx, &zero, vy,
                                        CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes);
            cusparseDestroyDnVec(vx);
            cusparseDestroyDnVec(vy);
            HEPTANE_CUSPARSE_CHECK(st);
            need = std::max(need, bytes);
        }
        buffer_ = Array<char>(exec_, need + 1);
    }
    ~CusparseCsrOperator() override
    {
        if (mat_) cusparseDestroySpMat(mat_);
    }

    index_t rows() const override { return rows_; }
    index_t cols() const override { return cols_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    void apply(double alpha, const double* x, double beta, double* y) const override
    {
        spmv(CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, x, beta, y);
    }
    void apply_transpose(double alpha, const double* x, double beta, double* y) const override
    {
        spmv(CUSPARSE_OPERATION_TRANSPOSE, alpha, x, beta, y);
    }
    std::string describe() const override
    {
        std::ostringstream os;
        os << "csr (cuSPARSE generic SpMV) " << rows_ << "x" << cols_ << " nnz=" << nnz_
           << " (fp64) on " << exec_->name();
        return os.str();
    }

private:
    void spmv(cusparseOperation_t op, double alpha, const double* x, double beta, double* y) const
    {
        const bool t = op == CUSPARSE_OPERATION_TRANSPOSE;
        cusparseConstDnVecDescr_t vx = nullptr;
        cusparseDnVecDescr_t vy = nullptr;
        HEPTANE_CUSPARSE_CHECK(cusparseCreateConstDnVec(&vx, t ? rows_ : cols_, x, CUDA_R_64F));
        HEPTANE_CUSPARSE_CHECK(cusparseCreateDnVec(&vy, t ? cols_ : rows_, y, CUDA_R_64F));
        const cusparseStatus_t st =
            cusparseSpMV(cuda::cusparse(*exec_), op, &alpha, mat_, vx, &beta, vy, CUDA_R_64F,
                         CUSPARSE_SPMV_ALG_DEFAULT, buffer_.data());
        cusparseDestroyDnVec(vx);
        cusparseDestroyDnVec(vy);
        HEPTANE_CUSPARSE_CHECK(st);
    }

    std::shared_ptr<const CudaExecutor> exec_;
    index_t rows_, cols_;
    offset_t nnz_;
    bool wide_ = false;
    Array<double> values_;
    Array<std::int32_t> row_ptr32_;
    Array<std::int32_t> col32_;
    Array<std::int64_t> row_ptr64_;
    Array<std::int64_t> col64_;
    mutable Array<char> buffer_;
    cusparseSpMatDescr_t mat_ = nullptr;
};

double ms_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::unique_ptr<Operator<double>> make_cusparse_csr_operator(const Csr<double>& a,
                                                             std::shared_ptr<const Executor> exec)
{
    HEPTANE_ENSURE(exec && exec->is_cuda(), NotSupported,
                   "the cuSPARSE CSR operator runs on a CUDA executor, not "
                       << (exec ? exec->name() : std::string("(none)")));
    return std::make_unique<CusparseCsrOperator>(
        a, std::static_pointer_cast<const CudaExecutor>(exec));
}

namespace detail {

Status bicgstab_reference_solve(const Operator<double>& A, const Operator<double>* m,
                                const Array<double>& b_arr, Array<double>& x_arr,
                                const SolverOptions& opts)
{
    HEPTANE_ENSURE(A.executor()->is_cuda(), NotSupported,
                   "the reference BiCGStab (cuBLAS + cuSPARSE) runs on CUDA only; use "
                   "BicgstabImpl::fused on "
                       << A.executor()->name());
    const auto t_setup = std::chrono::steady_clock::now();
    const auto& exec = static_cast<const CudaExecutor&>(*A.executor());
    HEPTANE_CUDA_CHECK(cudaSetDevice(exec.device()));
    cublasHandle_t h = cuda::cublas(exec);
    HEPTANE_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    const bool identity = is_identity_preconditioner(m);
    const int n = A.rows();
    const auto e = A.executor();
    Array<double> r(e, n), r_hat(e, n), p(e, n), v(e, n), s(e, n), t(e, n);
    Array<double> p_hat(e, identity ? 0 : n), s_hat(e, identity ? 0 : n);
    const double* b = b_arr.data();
    double* x = x_arr.data();
    double* ph = identity ? p.data() : p_hat.data();
    double* sh = identity ? s.data() : s_hat.data();
    const double one = 1, minus_one = -1;

    // r = b − A x0
    if (opts.nonzero_initial_guess) {
        A.apply(x, r.data());
        HEPTANE_CUBLAS_CHECK(cublasDscal(h, n, &minus_one, r.data(), 1));
        HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &one, b, 1, r.data(), 1));
    } else {
        HEPTANE_CUDA_CHECK(
            cudaMemsetAsync(x, 0, sizeof(double) * std::size_t(n), cuda::stream(exec)));
        HEPTANE_CUBLAS_CHECK(cublasDcopy(h, n, b, 1, r.data(), 1));
    }
    HEPTANE_CUBLAS_CHECK(cublasDcopy(h, n, r.data(), 1, r_hat.data(), 1));
    HEPTANE_CUDA_CHECK(
        cudaMemsetAsync(p.data(), 0, sizeof(double) * std::size_t(n), cuda::stream(exec)));
    HEPTANE_CUDA_CHECK(
        cudaMemsetAsync(v.data(), 0, sizeof(double) * std::size_t(n), cuda::stream(exec)));
    double bb = 0, rr = 0;
    HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, b, 1, b, 1, &bb));
    HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, r.data(), 1, r.data(), 1, &rr));

    KrylovState st;
    std::vector<double> hist(std::size_t(opts.max_it) + 1);
    krylov::init_finalize(st, bb, rr, StopParams{opts.rtol, opts.atol, opts.dtol, opts.max_it},
                          hist.data());
    if (st.stop && st.bnorm == 0.0)
        HEPTANE_CUDA_CHECK(
            cudaMemsetAsync(x, 0, sizeof(double) * std::size_t(n), cuda::stream(exec)));
    auto monitor = [&](int i) {
        if (!opts.monitor && !opts.stop_test) return;  // nothing to call: no info to build
        IterationInfo info{i, hist[std::size_t(i)],
                           st.bnorm > 0 ? hist[std::size_t(i)] / st.bnorm : 0.0, nullptr};
        info.iterate = [&](double* out) {  // the host loop: x is x_i here
            copy_bytes(exec, x, *cpu_executor(), out, sizeof(double) * std::size_t(n));
        };
        if (opts.monitor) opts.monitor(info);
        if (opts.stop_test && !st.stop) {  // the caller's own test (SolverOptions::stop_test)
            const Reason r = reason_of(opts.stop_test(info));
            if (r != Reason::iterating) krylov::stop_with(st, r);
        }
    };
    monitor(0);
    Status status;
    status.timings.setup_ms = ms_since(t_setup);

    const auto t_solve = std::chrono::steady_clock::now();
    double prefix_min = st.rnorm;
    std::vector<double> prefix(1, prefix_min);
    while (!st.stop) {
        // p = r + β (p − ω v)
        const double mw = -st.omega;
        HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &mw, v.data(), 1, p.data(), 1));
        HEPTANE_CUBLAS_CHECK(cublasDscal(h, n, &st.beta, p.data(), 1));
        HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &one, r.data(), 1, p.data(), 1));
        if (!identity) m->apply(p.data(), ph);  // p̂ = M⁻¹ p
        A.apply(ph, v.data());                  // v = A p̂
        double rv = 0;
        HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, r_hat.data(), 1, v.data(), 1, &rv));
        krylov::bicgstab_alpha_finalize(st, rv);
        if (st.stop) break;
        // s = r − α v
        const double ma = -st.alpha;
        HEPTANE_CUBLAS_CHECK(cublasDcopy(h, n, r.data(), 1, s.data(), 1));
        HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &ma, v.data(), 1, s.data(), 1));
        double ss = 0;
        HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, s.data(), 1, s.data(), 1, &ss));
        krylov::bicgstab_s_finalize(st, ss);
        if (st.stop) break;
        double ts = 0, tt = 0;
        if (!st.half) {
            if (!identity) m->apply(s.data(), sh);  // ŝ = M⁻¹ s
            A.apply(sh, t.data());                  // t = A ŝ
            HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, t.data(), 1, s.data(), 1, &ts));
            HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, t.data(), 1, t.data(), 1, &tt));
        }
        krylov::bicgstab_omega_finalize(st, ts, tt);
        if (st.stop) break;
        // x += α p̂ + ω ŝ;  r = s − ω t
        HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &st.alpha, ph, 1, x, 1));
        HEPTANE_CUBLAS_CHECK(cublasDcopy(h, n, s.data(), 1, r.data(), 1));
        if (st.omega != 0.0) {
            const double mo = -st.omega;
            HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &st.omega, sh, 1, x, 1));
            HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &mo, t.data(), 1, r.data(), 1));
        }
        double rhat_r = 0, rr_new = 0;
        HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, r_hat.data(), 1, r.data(), 1, &rhat_r));
        HEPTANE_CUBLAS_CHECK(cublasDdot(h, n, r.data(), 1, r.data(), 1, &rr_new));
        krylov::bicgstab_xr_finalize(st, rhat_r, rr_new, hist.data());
        monitor(st.iter);
        prefix_min = std::min(prefix_min, st.rnorm);
        prefix.push_back(prefix_min);
        const int w = opts.stagnation_window;
        if (!st.stop && w > 0 && st.iter >= w) {
            double recent = hist[std::size_t(st.iter)];
            for (int i = st.iter - w + 1; i <= st.iter; ++i)
                recent = std::min(recent, hist[std::size_t(i)]);
            if (!(recent < (1.0 - opts.stagnation_rtol) * prefix[std::size_t(st.iter - w)]))
                krylov::stop_with(st, Reason::stagnation);
        }
    }
    exec.synchronize();
    status.timings.solve_ms = ms_since(t_solve);
    status.reason = static_cast<Reason>(st.reason);
    status.iterations = st.iter;
    status.b_norm = st.bnorm;
    status.initial_residual_norm = st.r0norm;
    status.residual_norm = st.rnorm;
    status.relative_residual = st.bnorm > 0 ? st.rnorm / st.bnorm : 0.0;
    status.timings.per_iteration_ms = st.iter > 0 ? status.timings.solve_ms / st.iter : 0.0;
    if (opts.record_history) status.history.assign(hist.begin(), hist.begin() + st.iter + 1);

    if (opts.compute_true_residual) {
        const auto t0 = std::chrono::steady_clock::now();
        A.apply(x, t.data());
        HEPTANE_CUBLAS_CHECK(cublasDscal(h, n, &minus_one, t.data(), 1));
        HEPTANE_CUBLAS_CHECK(cublasDaxpy(h, n, &one, b, 1, t.data(), 1));
        double tn = 0;
        HEPTANE_CUBLAS_CHECK(cublasDnrm2(h, n, t.data(), 1, &tn));
        status.true_residual_norm = tn;
        status.true_relative_residual = st.bnorm > 0 ? tn / st.bnorm : tn;
        status.timings.true_residual_ms = ms_since(t0);
    }
    return status;
}

}  // namespace detail

#endif  // HEPTANE_HAVE_CUDA

}  // namespace heptane
