// The preconditioners of heptane: setup on the host (double), factors in VT on the
// executor, apply through precond_kernels.hpp.
#include "solver/precond/preconditioner.hpp"

#include <algorithm>
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
    if (name == "ilu0-mc" || name == "ilu0_mc" || name == "mcilu0" || name == "bilu0-mc")
        return PcType::ilu0_mc;
    HEPTANE_THROW(InputError, "unknown preconditioner '"
                                  << name << "' (choices: none, jacobi, bjacobi, ilu0, ilu0-mc)");
}

const char* to_string(PcType t) noexcept
{
    switch (t) {
        case PcType::none:
            return "none";
        case PcType::jacobi:
            return "jacobi";
        case PcType::block_jacobi:
            return "bjacobi";
        case PcType::ilu0:
            return "ilu0";
        case PcType::ilu0_mc:
            return "ilu0-mc";
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
    if (tmp_.size() != std::size_t(n_) || tmp_.exec() != exec_)
        tmp_ = Array<VT>(exec_, std::size_t(n_));
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
    if (type() == PcType::block_jacobi || type() == PcType::ilu0 || type() == PcType::ilu0_mc)
        os << " Nc=" << nc_;
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
    {
    }
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
        HEPTANE_ENSURE(
            a_in.rows == a_in.cols, DimensionMismatch,
            "Jacobi: the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
        Csr<double> keep;
        const Csr<double>& a = host_csr(a_in, keep);
        std::vector<double> d(std::size_t(a.rows), 0.0);
        for (index_t i = 0; i < a.rows; ++i)
            for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
                if (a.col_idx[k] == i) d[std::size_t(i)] += a.values[k];
        for (index_t i = 0; i < a.rows; ++i) {
            HEPTANE_ENSURE(
                d[std::size_t(i)] != 0.0 && std::isfinite(d[std::size_t(i)]), InputError,
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
            const detail::PivotFailure f = detail::invert_block(
                &m.val[std::size_t(m.diag[std::size_t(c)]) * nc2], &inv[std::size_t(c) * nc2], nc);
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
        : Preconditioner<VT>(a.rows, nc, std::move(exec)),
          scratch_(this->exec_, std::size_t(a.rows))
    {
        const auto t0 = clock_type::now();
        const detail::BlockCsrHost m =
            detail::block_csr_from_csr(a, nc, nc == 1 ? "ILU(0)" : "BILU(0)");
        const detail::Ilu0Factors f = detail::ilu0_factorize(m);
        lower_ = DeviceFactor<VT>(f.lower, nullptr, true, this->exec_);
        upper_ = DeviceFactor<VT>(f.upper, &f.diag_inv, false, this->exec_);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0; }

protected:
    // z = U⁻¹ L⁻¹ r: y = L⁻¹ r into the scratch vector (the lower solve with in != out does
    // not write r), then z = U⁻¹ y (which may overwrite the scratch with its intermediate w).
    void solve(const VT* r, VT* z) const override
    {
        VT* y = scratch_.data();
        const auto lo = lower_.view();
        const auto up = upper_.view();
        dispatch_executor(*this->exec_, [&](const auto& e) {
            kernels::triangular_solve(e, lo, const_cast<VT*>(r), y);  // r: not written
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

// ---- multi-colour ILU(0) / BILU(0) ---------------------------------------------------------

template <class VT>
class Ilu0McPc final : public Preconditioner<VT> {
public:
    Ilu0McPc(const Csr<double>& a, index_t nc, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a.rows, nc, std::move(exec)),
          scratch_(this->exec_, std::size_t(a.rows))
    {
        const auto t0 = clock_type::now();
        const detail::BlockCsrHost m = detail::block_csr_from_csr(
            a, nc, nc == 1 ? "ILU(0), multi-colour" : "BILU(0), multi-colour");
        const detail::MulticolorOrdering o = detail::multicolor_ordering(m);
        const detail::Ilu0Factors f = detail::ilu0_factorize(detail::permute_symmetric(m, o.perm));
        nb_ = m.nb;
        colors_ = o.colors;
        color_ptr_ = o.color_ptr;
        perm_ = upload_same(o.perm, this->exec_);
        build(f.lower, lower_);
        build(f.upper, upper_);
        // D⁻¹ column-major per colour: diag_inv[p0·nc² + b·rows_cs + s]
        const std::size_t ncs = std::size_t(nc), nc2 = ncs * ncs;
        std::vector<double> dinv(f.diag_inv.size());
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)],
                          rows_c = color_ptr_[std::size_t(c) + 1] - p0;
            const std::size_t rows_cs = std::size_t(rows_c) * ncs;
            double* out = dinv.data() + std::size_t(p0) * nc2;
            for (index_t li = 0; li < rows_c; ++li)
                for (index_t aa = 0; aa < nc; ++aa)
                    for (index_t b = 0; b < nc; ++b)
                        out[std::size_t(b) * rows_cs + std::size_t(li) * ncs + std::size_t(aa)] =
                            f.diag_inv[std::size_t(p0 + li) * nc2 + std::size_t(aa) * ncs +
                                       std::size_t(b)];
        }
        diag_inv_ = upload<VT>(dinv, this->exec_);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0_mc; }
    index_t colors() const noexcept { return colors_; }

protected:
    void solve(const VT* r, VT* z) const override  // z = Pᵀ (L'U')⁻¹ P r
    {
        kernels::MulticolorFactor<VT> v;
        v.block_rows = nb_;
        v.nc = this->nc_;
        v.colors = colors_;
        v.color_ptr = color_ptr_.data();
        v.perm = perm_.data();
        v.lower = lower_.view();
        v.upper = upper_.view();
        v.diag_inv = diag_inv_.data();
        VT* y = scratch_.data();
        dispatch_executor(*this->exec_,
                          [&](const auto& e) { kernels::multicolor_solve(e, v, r, y, z); });
    }
    std::string details() const override
    {
        std::ostringstream os;
        os << "colors=" << colors_;
        return os.str();
    }

private:
    struct Triangle {
        std::vector<index_t> width;
        std::vector<offset_t> col_off, val_off;
        Array<index_t> col;
        Array<VT> val;
        kernels::ColorTriangle<VT> view() const
        {
            return {width.data(), col_off.data(), val_off.data(), col.data(), val.data()};
        }
    };

    // the per-colour block-ELL layout of precond_kernels.hpp; a factor row of colour c may
    // only reference other colours (checked: the ordering guarantees it)
    void build(const detail::BlockCsrHost& f, Triangle& t) const
    {
        const index_t nc = this->nc_;
        const std::size_t ncs = std::size_t(nc), nc2 = ncs * ncs;
        t.width.assign(std::size_t(colors_), 0);
        t.col_off.assign(std::size_t(colors_), 0);
        t.val_off.assign(std::size_t(colors_), 0);
        offset_t cols = 0;
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            index_t w = 0;
            for (index_t i = p0; i < p1; ++i)
                w = std::max(w, index_t(f.ptr[std::size_t(i) + 1] - f.ptr[std::size_t(i)]));
            t.width[std::size_t(c)] = w;
            t.col_off[std::size_t(c)] = cols;
            t.val_off[std::size_t(c)] = cols * offset_t(nc2);
            cols += offset_t(w) * (p1 - p0);
        }
        std::vector<index_t> col(std::size_t(cols), -1);
        std::vector<double> val(std::size_t(cols) * nc2, 0.0);
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            const std::size_t rows_c = std::size_t(p1 - p0), rows_cs = rows_c * ncs;
            for (index_t i = p0; i < p1; ++i) {
                const std::size_t li = std::size_t(i - p0);
                for (offset_t q = f.ptr[std::size_t(i)]; q < f.ptr[std::size_t(i) + 1]; ++q) {
                    const std::size_t k = std::size_t(q - f.ptr[std::size_t(i)]);
                    const index_t j = f.col[std::size_t(q)];
                    HEPTANE_ENSURE(j < p0 || j >= p1, InputError,
                                   "multi-colour ILU(0): block rows " << i << " and " << j
                                                                      << " share colour " << c);
                    col[std::size_t(t.col_off[std::size_t(c)]) + k * rows_c + li] = j;
                    const double* blk = &f.val[std::size_t(q) * nc2];
                    double* out = &val[std::size_t(t.val_off[std::size_t(c)])];
                    for (index_t aa = 0; aa < nc; ++aa)
                        for (index_t b = 0; b < nc; ++b)
                            out[(k * ncs + std::size_t(b)) * rows_cs + li * ncs + std::size_t(aa)] =
                                blk[std::size_t(aa) * ncs + std::size_t(b)];
                }
            }
        }
        t.col = upload_same(col, this->exec_);
        t.val = upload<VT>(val, this->exec_);
    }

    index_t nb_ = 0, colors_ = 0;
    std::vector<index_t> color_ptr_;  // host
    Array<index_t> perm_;
    Triangle lower_, upper_;
    Array<VT> diag_inv_;
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
        case PcType::none:
            return std::make_unique<IdentityPc<VT>>(a.rows, std::move(exec));
        case PcType::jacobi:
            return std::make_unique<JacobiPc<VT>>(a, std::move(exec));
        case PcType::block_jacobi:
            return std::make_unique<BlockJacobiPc<VT>>(a, block_size, std::move(exec));
        case PcType::ilu0:
            return std::make_unique<Ilu0Pc<VT>>(a, block_size, std::move(exec));
        case PcType::ilu0_mc:
            return std::make_unique<Ilu0McPc<VT>>(a, block_size, std::move(exec));
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
