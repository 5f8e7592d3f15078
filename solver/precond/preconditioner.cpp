// The preconditioners of heptane: setup on the host (double), factors in VT on the
// executor, apply through precond_kernels.hpp.
#include "solver/precond/preconditioner.hpp"

#include <chrono>
#include <cmath>
#include <sstream>

#include "solver/precond/block_utils.hpp"
#include "solver/precond/precond_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

PcType parse_pc(const std::string& name)
{
    if (name == "none") return PcType::none;
    if (name == "jacobi") return PcType::jacobi;
    if (name == "bjacobi" || name == "block_jacobi" || name == "block-jacobi")
        return PcType::block_jacobi;
    if (name == "ilu0" || name == "ilu" || name == "bilu0") return PcType::ilu0;
    HEPTANE_THROW(InputError, "unknown preconditioner '" << name
                                                         << "' (choices: none, jacobi, bjacobi, ilu0)");
}

const char* to_string(PcType t) noexcept
{
    switch (t) {
    case PcType::none: return "none";
    case PcType::jacobi: return "jacobi";
    case PcType::block_jacobi: return "bjacobi";
    case PcType::ilu0: return "ilu0";
    }
    return "?";
}

template <class VT>
void Preconditioner<VT>::apply(VT alpha, const VT* r, VT beta, VT* z) const
{
    if (alpha == VT(1) && beta == VT(0)) {
        solve(r, z);
        return;
    }
    if (tmp_.size() != std::size_t(n_) || tmp_.exec() != exec_) tmp_ = Array<VT>(exec_, std::size_t(n_));
    solve(r, tmp_.data());
    const VT* t = tmp_.data();
    const index_t n = n_;
    dispatch_executor(*exec_, [&](const auto& e) { kernels::axpby(e, n, alpha, t, beta, z); });
}

template <class VT>
void Preconditioner<VT>::apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const
{
    HEPTANE_ENSURE(symmetric_apply(), NotSupported,
                   "preconditioner " << to_string(type()) << " has no transpose apply");
    apply(alpha, r, beta, z);
}

template <class VT>
std::string Preconditioner<VT>::describe() const
{
    std::ostringstream os;
    os << to_string(type());
    if (type() == PcType::block_jacobi || type() == PcType::ilu0) os << " Nc=" << nc_;
    const std::string d = details();
    if (!d.empty()) os << " " << d;
    os << " (" << (sizeof(VT) == 8 ? "fp64" : "fp32") << ") on " << exec_->name();
    return os.str();
}

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

template <class VT>
Array<VT> upload(const std::vector<double>& v, const std::shared_ptr<const Executor>& exec)
{
    std::vector<VT> h(v.begin(), v.end());
    return Array<VT>(std::move(h)).to(exec);
}
template <class T>
Array<T> upload_same(const std::vector<T>& v, const std::shared_ptr<const Executor>& exec)
{
    return Array<T>(v).to(exec);
}

const Csr<double>& host_csr(const Csr<double>& a, Csr<double>& keep)
{
    if (a.exec()->is_cpu()) return a;
    keep = a.to(cpu_executor());
    return keep;
}

// ---- none ------------------------------------------------------------------------------

template <class VT>
class IdentityPc final : public Preconditioner<VT> {
public:
    IdentityPc(index_t n, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(n, 1, std::move(exec))
    {}
    PcType type() const noexcept override { return PcType::none; }

protected:
    void solve(const VT* r, VT* z) const override  // z = r
    {
        const index_t n = this->n_;
        dispatch_executor(*this->exec_, [&](const auto& e) { kernels::copy(e, n, r, z); });
    }
    bool symmetric_apply() const noexcept override { return true; }
};

// ---- Jacobi ------------------------------------------------------------------------------

template <class VT>
class JacobiPc final : public Preconditioner<VT> {
public:
    JacobiPc(const Csr<double>& a_in, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a_in.rows, 1, std::move(exec))
    {
        const auto t0 = clock_type::now();
        HEPTANE_ENSURE(a_in.rows == a_in.cols, DimensionMismatch,
                       "Jacobi: the matrix is " << a_in.rows << " x " << a_in.cols
                                                << ", not square");
        Csr<double> keep;
        const Csr<double>& a = host_csr(a_in, keep);
        std::vector<double> d(std::size_t(a.rows), 0.0);
        for (index_t i = 0; i < a.rows; ++i)
            for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
                if (a.col_idx[k] == i) d[std::size_t(i)] += a.values[k];
        for (index_t i = 0; i < a.rows; ++i) {
            HEPTANE_ENSURE(d[std::size_t(i)] != 0.0 && std::isfinite(d[std::size_t(i)]), InputError,
                           "Jacobi: the diagonal entry of row " << i << " is " << d[std::size_t(i)]);
            d[std::size_t(i)] = 1.0 / d[std::size_t(i)];
        }
        inv_diag_ = upload<VT>(d, this->exec_);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::jacobi; }

protected:
    void solve(const VT* r, VT* z) const override  // z_i = r_i / a_ii
    {
        const index_t n = this->n_;
        const VT* d = inv_diag_.data();
        dispatch_executor(*this->exec_, [&](const auto& e) { kernels::diag_scale(e, n, d, r, z); });
    }
    bool symmetric_apply() const noexcept override { return true; }

private:
    Array<VT> inv_diag_;
};

// ---- block-Jacobi ----------------------------------------------------------------------

template <class VT>
class BlockJacobiPc final : public Preconditioner<VT> {
public:
    BlockJacobiPc(const Csr<double>& a, index_t nc, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a.rows, nc, std::move(exec))
    {
        const auto t0 = clock_type::now();
        const detail::BlockCsrHost m = detail::block_csr_from_csr(a, nc, "block-Jacobi");
        const std::size_t nc2 = std::size_t(nc) * nc;
        std::vector<double> inv(std::size_t(m.nb) * nc2);
        for (index_t c = 0; c < m.nb; ++c) {
            const detail::PivotFailure f =
                detail::invert_block(&m.val[std::size_t(m.diag[std::size_t(c)]) * nc2],
                                     &inv[std::size_t(c) * nc2], nc);
            if (f.singular)
                HEPTANE_THROW(InputError, "block-Jacobi: singular diagonal block, "
                                              << detail::describe_pivot_failure(c, nc, f));
        }
        nblocks_ = m.nb;
        binv_ = upload<VT>(inv, this->exec_);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::block_jacobi; }

protected:
    void solve(const VT* r, VT* z) const override  // z_c = A_cc⁻¹ r_c
    {
        const index_t nb = nblocks_, nc = this->nc_;
        const VT* b = binv_.data();
        dispatch_executor(*this->exec_,
                          [&](const auto& e) { kernels::block_diag_apply(e, nb, nc, b, r, z); });
    }

private:
    index_t nblocks_ = 0;
    Array<VT> binv_;
};

// ---- ILU(0) / BILU(0) --------------------------------------------------------------------

template <class VT>
struct DeviceFactor {
    Array<offset_t> ptr;
    Array<index_t> col;
    Array<VT> val;
    Array<VT> diag_inv;
    Array<index_t> level_rows;
    std::vector<index_t> level_ptr;  // host
    index_t nb = 0, nc = 1;

    DeviceFactor() = default;
    DeviceFactor(const detail::BlockCsrHost& f, const std::vector<double>* dinv, bool lower,
                 const std::shared_ptr<const Executor>& exec)
        : nb(f.nb), nc(f.nc)
    {
        const detail::LevelSchedule s = detail::level_schedule(f, lower);
        ptr = upload_same(f.ptr, exec);
        col = upload_same(f.col, exec);
        val = upload<VT>(f.val, exec);
        if (dinv) diag_inv = upload<VT>(*dinv, exec);
        level_rows = upload_same(s.rows, exec);
        level_ptr = s.ptr;
    }
    kernels::TriangularFactor<VT> view() const
    {
        kernels::TriangularFactor<VT> v;
        v.block_rows = nb;
        v.nc = nc;
        v.row_ptr = ptr.data();
        v.col = col.data();
        v.val = val.data();
        v.diag_inv = diag_inv.empty() ? nullptr : diag_inv.data();
        v.level_rows = level_rows.data();
        v.level_ptr = level_ptr.data();
        v.levels = level_ptr.empty() ? 0 : index_t(level_ptr.size() - 1);
        return v;
    }
};

template <class VT>
class Ilu0Pc final : public Preconditioner<VT> {
public:
    Ilu0Pc(const Csr<double>& a, index_t nc, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a.rows, nc, std::move(exec)), scratch_(this->exec_, std::size_t(a.rows))
    {
        const auto t0 = clock_type::now();
        const detail::BlockCsrHost m = detail::block_csr_from_csr(a, nc, nc == 1 ? "ILU(0)" : "BILU(0)");
        const detail::Ilu0Factors f = detail::ilu0_factorize(m);
        lower_ = DeviceFactor<VT>(f.lower, nullptr, true, this->exec_);
        upper_ = DeviceFactor<VT>(f.upper, &f.diag_inv, false, this->exec_);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0; }

protected:
    // z = U⁻¹ L⁻¹ r: y = L⁻¹ r into the scratch vector, then z = U⁻¹ y (which overwrites
    // the scratch with its intermediate w).
    void solve(const VT* r, VT* z) const override
    {
        VT* y = scratch_.data();
        const auto lo = lower_.view();
        const auto up = upper_.view();
        dispatch_executor(*this->exec_, [&](const auto& e) {
            kernels::copy(e, this->n_, r, y);
            kernels::triangular_solve(e, lo, y, y);
            kernels::triangular_solve(e, up, y, z);
        });
    }
    std::string details() const override
    {
        std::ostringstream os;
        os << "levels=" << lower_.view().levels << "+" << upper_.view().levels;
        return os.str();
    }

private:
    DeviceFactor<VT> lower_, upper_;
    mutable Array<VT> scratch_;
};

}  // namespace

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const Csr<double>& a,
                                                        index_t block_size,
                                                        std::shared_ptr<const Executor> exec)
{
    HEPTANE_ENSURE(exec, InputError, "make_preconditioner: no executor");
    HEPTANE_ENSURE(block_size >= 1, InputError,
                   "make_preconditioner: block size " << block_size << " must be >= 1");
    switch (type) {
    case PcType::none: return std::make_unique<IdentityPc<VT>>(a.rows, std::move(exec));
    case PcType::jacobi: return std::make_unique<JacobiPc<VT>>(a, std::move(exec));
    case PcType::block_jacobi:
        return std::make_unique<BlockJacobiPc<VT>>(a, block_size, std::move(exec));
    case PcType::ilu0: return std::make_unique<Ilu0Pc<VT>>(a, block_size, std::move(exec));
    }
    HEPTANE_THROW(InputError, "make_preconditioner: unknown type");
}

template class Preconditioner<double>;
template class Preconditioner<float>;
template std::unique_ptr<Preconditioner<double>> make_preconditioner<double>(
    PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>);
template std::unique_ptr<Preconditioner<float>> make_preconditioner<float>(
    PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>);

}  // namespace heptane
