// The preconditioners of heptane: setup on the host (double), factors in VT on the
// executor, apply through precond_kernels.hpp. Each keeps its symbolic part (pattern-only)
// and the host work arrays of its numeric part, so update_values redoes only the numeric
// part and writes into the arrays it already has on the executor.
#include "solver/precond/preconditioner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "solver/precond/block_kernels.hpp"
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

template <class VT>
void Preconditioner<VT>::update_values(const Csr<double>&)
{
    HEPTANE_THROW(NotSupported, "preconditioner " << to_string(type())
                                                  << " has no values-only update; build a new one");
}

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

template <class T>
Array<T> upload_same(const std::vector<T>& v, const std::shared_ptr<const Executor>& exec)
{
    if (exec->is_cpu()) return Array<T>(v);
    Array<T> out(exec, v.size());
    copy_bytes(*cpu_executor(), v.data(), *exec, out.data(), out.bytes());
    return out;
}

const Csr<double>& host_csr(const Csr<double>& a, Csr<double>& keep)
{
    if (a.exec()->is_cpu()) return a;
    keep = a.to(cpu_executor());
    return keep;
}

constexpr index_t no_row = std::numeric_limits<index_t>::max();

/// New values, computed on the host in double, into a factor array on the executor. fp64 on
/// the CPU: the work vector and the array's storage swap (no copy; the work vector then
/// holds the old values, to be overwritten by the next update). fp64 on a device: uploaded
/// from the work vector. fp32: converted into the array (CPU) or a host copy that is then
/// uploaded.
template <class VT>
class Committer {
public:
    void commit(std::vector<double>& work, Array<VT>& dst)
    {
        if constexpr (std::is_same_v<VT, double>) {
            if (dst.on_host() && dst.size() == work.size()) {
                dst.host().swap(work);
                return;
            }
            copy_bytes(*cpu_executor(), work.data(), *dst.exec(), dst.data(), dst.bytes());
        } else {
            VT* out = begin(dst);
            const std::size_t n = work.size();
#pragma omp parallel for schedule(static) if (n > 65536)
            for (std::size_t i = 0; i < n; ++i) out[i] = VT(work[i]);
            end(dst);
        }
    }
    /// Where the host writes an array's values itself (the array on the CPU, else a host
    /// copy kept between updates: what an update does not write, e.g. padding, stays as
    /// the first upload left it); end() uploads it.
    VT* begin(Array<VT>& dst)
    {
        if (dst.on_host()) return dst.data();
        if (staging_.size() != dst.size()) staging_.assign(dst.size(), VT(0));
        return staging_.data();
    }
    void end(Array<VT>& dst) const
    {
        if (!dst.on_host())
            copy_bytes(*cpu_executor(), staging_.data(), *dst.exec(), dst.data(), dst.bytes());
    }

private:
    std::vector<VT> staging_;
};

/// The scalar nonzero pattern a preconditioner was set up from (Jacobi, block-Jacobi: their
/// numeric part reads a few entries per row, so the pattern is checked against a copy).
struct ScalarPattern {
    index_t rows = 0;
    std::vector<offset_t> row_ptr;
    std::vector<index_t> col;

    void set(const Csr<double>& h)
    {
        rows = h.rows;
        row_ptr.assign(h.row_ptr.data(), h.row_ptr.data() + h.rows + 1);
        col.assign(h.col_idx.data(), h.col_idx.data() + row_ptr.back());
    }
    void check(const Csr<double>& h, const char* who) const
    {
        HEPTANE_ENSURE(h.rows == rows && h.cols == rows, InputError,
                       who << ": values-only update with a " << h.rows << " x " << h.cols
                           << " matrix; the preconditioner was set up for " << rows << " x "
                           << rows);
        const offset_t* rp = h.row_ptr.data();
        const index_t* ci = h.col_idx.data();
        index_t bad = no_row;
        if (!std::equal(row_ptr.begin(), row_ptr.end(), rp)) {
            bad = std::max<index_t>(
                0,
                index_t(std::mismatch(row_ptr.begin(), row_ptr.end(), rp).first - row_ptr.begin()) -
                    1);
        } else if (!std::equal(col.begin(), col.end(), ci)) {
            const offset_t k = std::mismatch(col.begin(), col.end(), ci).first - col.begin();
            bad =
                index_t(std::upper_bound(row_ptr.begin(), row_ptr.end(), k) - row_ptr.begin()) - 1;
        }
        HEPTANE_ENSURE(bad == no_row, InputError,
                       who << ": values-only update with another nonzero pattern (row " << bad
                           << " differs from the one the preconditioner was set up with); set "
                              "up a new preconditioner for a new pattern");
    }
    /// update_values: `a` on the host, its pattern checked, then numeric(host a); the
    /// milliseconds it took.
    template <class Numeric>
    double update(const Csr<double>& a, const char* who, Numeric&& numeric) const
    {
        const auto t0 = clock_type::now();
        Csr<double> keep;
        const Csr<double>& h = host_csr(a, keep);
        check(h, who);
        numeric(h);
        return ms_since(t0);
    }
};

// ---- none ------------------------------------------------------------------------------

template <class VT>
class IdentityPc final : public Preconditioner<VT> {
public:
    IdentityPc(index_t n, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(n, 1, std::move(exec))
    {
    }
    PcType type() const noexcept override { return PcType::none; }
    void update_values(const Csr<double>& a) override
    {
        HEPTANE_ENSURE(a.rows == this->n_ && a.cols == this->n_, InputError,
                       "none: values-only update with a " << a.rows << " x " << a.cols
                                                          << " matrix; set up for " << this->n_
                                                          << " x " << this->n_);
        this->setup_ms_ = 0;
    }

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
        pattern_.set(a);
        // the positions of the diagonal entries of each row (one in a canonical CSR)
        dptr_.assign(std::size_t(a.rows) + 1, 0);
        for (index_t i = 0; i < a.rows; ++i) {
            dptr_[std::size_t(i) + 1] = dptr_[std::size_t(i)];
            for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
                if (a.col_idx[k] == i) {
                    dpos_.push_back(k);
                    ++dptr_[std::size_t(i) + 1];
                }
        }
        inv_diag_ = Array<VT>(this->exec_, std::size_t(a_in.rows));
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::jacobi; }
    void update_values(const Csr<double>& a) override
    {
        this->setup_ms_ = pattern_.update(a, "Jacobi", [&](const Csr<double>& h) { numeric(h); });
    }

protected:
    void solve(const VT* r, VT* z) const override  // z_i = r_i / a_ii
    {
        const index_t n = this->n_;
        const VT* d = inv_diag_.data();
        dispatch_executor(*this->exec_, [&](const auto& e) { kernels::diag_scale(e, n, d, r, z); });
    }
    bool symmetric_apply() const noexcept override { return true; }

private:
    void numeric(const Csr<double>& a)
    {
        const index_t n = this->n_;
        const double* v = a.values.data();
        work_.resize(std::size_t(n));
        index_t bad = no_row;
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > 65536)
        for (index_t i = 0; i < n; ++i) {
            double d = 0.0;
            for (offset_t e = dptr_[std::size_t(i)]; e < dptr_[std::size_t(i) + 1]; ++e)
                d += v[dpos_[std::size_t(e)]];
            if (d != 0.0 && std::isfinite(d))
                work_[std::size_t(i)] = 1.0 / d;
            else
                bad = std::min(bad, i);
        }
        if (bad != no_row) {
            double d = 0.0;
            for (offset_t e = dptr_[std::size_t(bad)]; e < dptr_[std::size_t(bad) + 1]; ++e)
                d += v[dpos_[std::size_t(e)]];
            HEPTANE_THROW(InputError, "Jacobi: the diagonal entry of row " << bad << " is " << d);
        }
        image_.commit(work_, inv_diag_);
    }

    ScalarPattern pattern_;
    std::vector<offset_t> dptr_, dpos_;  // the diagonal entries of row i: dpos_[dptr_[i] …]
    std::vector<double> work_;
    Committer<VT> image_;
    Array<VT> inv_diag_;
};

// ---- block-Jacobi ----------------------------------------------------------------------

template <class VT>
class BlockJacobiPc final : public Preconditioner<VT> {
public:
    BlockJacobiPc(const Csr<double>& a_in, index_t nc, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a_in.rows, nc, std::move(exec))
    {
        const auto t0 = clock_type::now();
        // the checks and messages of the block pattern (block_csr_from_csr)
        HEPTANE_ENSURE(
            a_in.rows == a_in.cols, DimensionMismatch,
            "block-Jacobi: the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
        HEPTANE_ENSURE(
            a_in.rows % nc == 0, InputError,
            "block-Jacobi: block size " << nc << " does not divide the size " << a_in.rows);
        Csr<double> keep;
        const Csr<double>& a = host_csr(a_in, keep);
        pattern_.set(a);
        nblocks_ = a.rows / nc;
        // per scalar row: the entries inside its diagonal block and where they go in it
        dptr_.assign(std::size_t(a.rows) + 1, 0);
        for (index_t r = 0; r < a.rows; ++r) {
            dptr_[std::size_t(r) + 1] = dptr_[std::size_t(r)];
            for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
                if (a.col_idx[k] / nc == r / nc) {
                    dpos_.push_back(k);
                    dslot_.push_back((r % nc) * nc + a.col_idx[k] % nc);
                    ++dptr_[std::size_t(r) + 1];
                }
        }
        binv_ = Array<VT>(this->exec_, std::size_t(nblocks_) * std::size_t(nc) * std::size_t(nc));
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::block_jacobi; }
    void update_values(const Csr<double>& a) override
    {
        this->setup_ms_ =
            pattern_.update(a, "block-Jacobi", [&](const Csr<double>& h) { numeric(h); });
    }

protected:
    void solve(const VT* r, VT* z) const override  // z_c = A_cc⁻¹ r_c
    {
        const index_t nb = nblocks_, nc = this->nc_;
        const VT* b = binv_.data();
        dispatch_executor(*this->exec_,
                          [&](const auto& e) { kernels::block_diag_apply(e, nb, nc, b, r, z); });
    }

private:
    template <int NC>
    void invert_blocks(const double* v, detail::PivotFailure& fail, index_t& fail_block)
    {
        const index_t nc = NC > 0 ? index_t(NC) : this->nc_, nb = nblocks_;
        const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
        index_t bad = no_row;
#pragma omp parallel reduction(min : bad) if (nb > 16384)
        {
            std::vector<double> blk(2 * nc2);
#pragma omp for schedule(static)
            for (index_t c = 0; c < nb; ++c) {
                std::fill(blk.begin(), blk.begin() + std::ptrdiff_t(nc2), 0.0);
                for (index_t r = c * nc; r < (c + 1) * nc; ++r)
                    for (offset_t e = dptr_[std::size_t(r)]; e < dptr_[std::size_t(r) + 1]; ++e)
                        blk[std::size_t(dslot_[std::size_t(e)])] += v[dpos_[std::size_t(e)]];
                const detail::PivotFailure f = detail::invert_block_nc<NC>(
                    blk.data(), &work_[std::size_t(c) * nc2], nc, blk.data() + nc2);
                if (f.singular) bad = std::min(bad, c);
            }
        }
        fail_block = bad;
        if (bad == no_row) return;
        std::vector<double> blk(nc2, 0.0), inv(nc2);  // the message: the first failing block
        for (index_t r = bad * nc; r < (bad + 1) * nc; ++r)
            for (offset_t e = dptr_[std::size_t(r)]; e < dptr_[std::size_t(r) + 1]; ++e)
                blk[std::size_t(dslot_[std::size_t(e)])] += v[dpos_[std::size_t(e)]];
        fail = detail::invert_block(blk.data(), inv.data(), nc);
    }
    void numeric(const Csr<double>& a)
    {
        const index_t nc = this->nc_;
        work_.resize(std::size_t(nblocks_) * std::size_t(nc) * std::size_t(nc));
        detail::PivotFailure f;
        index_t c = no_row;
        detail::dispatch_block_size(
            nc, [&](auto NC) { invert_blocks<decltype(NC)::value>(a.values.data(), f, c); });
        if (c != no_row)
            HEPTANE_THROW(InputError, "block-Jacobi: singular diagonal block, "
                                          << detail::describe_pivot_failure(c, nc, f));
        image_.commit(work_, binv_);
    }

    ScalarPattern pattern_;
    index_t nblocks_ = 0;
    // the entries of scalar row r inside its diagonal block: dpos_[dptr_[r] …], at
    // dslot_[…] = (r mod nc)·nc + c mod nc in the block
    std::vector<offset_t> dptr_, dpos_;
    std::vector<index_t> dslot_;
    std::vector<double> work_;
    Committer<VT> image_;
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
    /// The pattern of factor f (val not used) on exec, with room for its values and, for
    /// the upper factor, D⁻¹ (written by the numeric part). The level schedule only where
    /// the solves use it (a GPU; the CPU solves in natural row order).
    DeviceFactor(const detail::BlockCsrHost& f, bool with_diag_inv, bool lower,
                 const std::shared_ptr<const Executor>& exec)
        : nb(f.nb), nc(f.nc)
    {
        const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
        ptr = upload_same(f.ptr, exec);
        col = upload_same(f.col, exec);
        val = Array<VT>(exec, f.col.size() * nc2);
        if (with_diag_inv) diag_inv = Array<VT>(exec, std::size_t(nb) * nc2);
        if (exec->is_cpu()) return;
        const detail::LevelSchedule s = detail::level_schedule(f, lower);
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
        pattern_ = detail::block_pattern(a, nc, who());
        sym_ = detail::ilu0_symbolic(pattern_.blocks);
        lower_ = DeviceFactor<VT>(sym_.lower, false, true, this->exec_);
        upper_ = DeviceFactor<VT>(sym_.upper, true, false, this->exec_);
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0; }
    void update_values(const Csr<double>& a) override
    {
        const auto t0 = clock_type::now();
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }

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
        if (this->exec_->is_cpu()) return "natural order";
        std::ostringstream os;
        os << "levels=" << lower_.view().levels << "+" << upper_.view().levels;
        return os.str();
    }

private:
    const char* who() const { return this->nc_ == 1 ? "ILU(0)" : "BILU(0)"; }
    // the values into the factor layout (pattern checked), factorised in place, then into
    // the arrays on the executor (only once the factorisation succeeded)
    void numeric(const Csr<double>& a)
    {
        const std::size_t nc2 = std::size_t(this->nc_) * std::size_t(this->nc_);
        lower_w_.resize(std::size_t(sym_.nl()) * nc2);
        upper_w_.resize(std::size_t(sym_.nu()) * nc2);
        diag_w_.resize(std::size_t(pattern_.blocks.nb) * nc2);
        dinv_w_.resize(diag_w_.size());
        detail::block_fill_factors(pattern_, sym_, a, lower_w_.data(), upper_w_.data(),
                                   diag_w_.data(), who());
        detail::ilu0_numeric(sym_, lower_w_.data(), upper_w_.data(), diag_w_.data(),
                             dinv_w_.data());
        lower_c_.commit(lower_w_, lower_.val);
        upper_c_.commit(upper_w_, upper_.val);
        dinv_c_.commit(dinv_w_, upper_.diag_inv);
    }

    detail::BlockPattern pattern_;
    detail::Ilu0Symbolic sym_;
    // the factorisation, in double on the host: L, U, D, D⁻¹ (ilu0_numeric)
    std::vector<double> lower_w_, upper_w_, diag_w_, dinv_w_;
    Committer<VT> lower_c_, upper_c_, dinv_c_;
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
        pattern_ = detail::block_pattern(a, nc, who());
        const detail::MulticolorOrdering o = detail::multicolor_ordering(pattern_.blocks);
        {
            std::vector<offset_t> src;
            const detail::BlockCsrHost permuted =
                detail::permute_pattern(pattern_.blocks, o.perm, src);
            sym_ = detail::ilu0_symbolic(permuted);
            map_ = detail::ilu0_block_map(permuted, sym_, src);
        }
        nb_ = pattern_.blocks.nb;
        colors_ = o.colors;
        color_ptr_ = o.color_ptr;
        perm_ = upload_same(o.perm, this->exec_);
        layout(sym_.lower, lower_);
        layout(sym_.upper, upper_);
        diag_inv_ = Array<VT>(this->exec_, std::size_t(nb_) * std::size_t(nc) * std::size_t(nc));
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0_mc; }
    index_t colors() const noexcept { return colors_; }
    void update_values(const Csr<double>& a) override
    {
        const auto t0 = clock_type::now();
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }

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
        Committer<VT> values;
        kernels::ColorTriangle<VT> view() const
        {
            return {width.data(), col_off.data(), val_off.data(), col.data(), val.data()};
        }
    };

    const char* who() const
    {
        return this->nc_ == 1 ? "ILU(0), multi-colour" : "BILU(0), multi-colour";
    }

    // the per-colour block-ELL layout of precond_kernels.hpp for factor pattern f (a factor
    // row of colour c may only reference other colours: checked, the ordering guarantees
    // it); the values are written by numeric()
    void layout(const detail::BlockCsrHost& f, Triangle& t) const
    {
        t.width.assign(std::size_t(colors_), 0);
        t.col_off.assign(std::size_t(colors_), 0);
        t.val_off.assign(std::size_t(colors_), 0);
        const std::size_t nc2 = std::size_t(this->nc_) * std::size_t(this->nc_);
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
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            const std::size_t rows_c = std::size_t(p1 - p0);
            for (index_t i = p0; i < p1; ++i)
                for (offset_t q = f.ptr[std::size_t(i)]; q < f.ptr[std::size_t(i) + 1]; ++q) {
                    const std::size_t k = std::size_t(q - f.ptr[std::size_t(i)]);
                    const index_t j = f.col[std::size_t(q)];
                    HEPTANE_ENSURE(j < p0 || j >= p1, InputError,
                                   "multi-colour ILU(0): block rows " << i << " and " << j
                                                                      << " share colour " << c);
                    col[std::size_t(t.col_off[std::size_t(c)]) + k * rows_c + std::size_t(i - p0)] =
                        j;
                }
        }
        t.col = upload_same(col, this->exec_);
        // zeros in the padding: the host side (Committer::begin) starts from zeros and
        // numeric() writes the factor blocks only
        t.val = Array<VT>(this->exec_, std::size_t(cols) * nc2);
    }

    // values straight into the factor layout of P A Pᵀ (pattern checked), factorised colour
    // by colour (the rows of a colour in parallel), then scattered into the per-colour
    // layouts on the executor
    void numeric(const Csr<double>& a)
    {
        const index_t nc = this->nc_;
        const std::size_t ncs = std::size_t(nc), nc2 = ncs * ncs;
        lower_w_.resize(std::size_t(sym_.nl()) * nc2);
        upper_w_.resize(std::size_t(sym_.nu()) * nc2);
        diag_w_.resize(std::size_t(nb_) * nc2);
        dinv_w_.resize(diag_w_.size());
        detail::block_fill_factors(pattern_, sym_, a, lower_w_.data(), upper_w_.data(),
                                   diag_w_.data(), who(), &map_);
        detail::ilu0_numeric(sym_, lower_w_.data(), upper_w_.data(), diag_w_.data(), dinv_w_.data(),
                             &color_ptr_);

        VT* lo = lower_.values.begin(lower_.val);
        VT* up = upper_.values.begin(upper_.val);
        VT* di = dinv_values_.begin(diag_inv_);
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            const std::size_t rows_cs = std::size_t(p1 - p0) * ncs;
            VT* lo_c = lo + lower_.val_off[std::size_t(c)];
            VT* up_c = up + upper_.val_off[std::size_t(c)];
            VT* di_c = di + std::size_t(p0) * nc2;
#pragma omp parallel for schedule(static) if (p1 - p0 > 4096)
            for (index_t i = p0; i < p1; ++i) {
                const std::size_t li = std::size_t(i - p0) * ncs;
                // block (x, y) of slot k: out[(k·nc + y)·rows_cs + li + x]
                auto put = [&](const double* blk, VT* out, std::size_t k) {
                    for (std::size_t x = 0; x < ncs; ++x)
                        for (std::size_t y = 0; y < ncs; ++y)
                            out[(k * ncs + y) * rows_cs + li + x] = VT(blk[x * ncs + y]);
                };
                for (int tri = 0; tri < 2; ++tri) {
                    const detail::BlockCsrHost& f = tri == 0 ? sym_.lower : sym_.upper;
                    const std::vector<double>& w = tri == 0 ? lower_w_ : upper_w_;
                    const offset_t f0 = f.ptr[std::size_t(i)], f1 = f.ptr[std::size_t(i) + 1];
                    for (offset_t l = f0; l < f1; ++l)
                        put(&w[std::size_t(l) * nc2], tri == 0 ? lo_c : up_c, std::size_t(l - f0));
                }
                put(&dinv_w_[std::size_t(i) * nc2], di_c, 0);  // D⁻¹ column-major too
            }
        }
        lower_.values.end(lower_.val);
        upper_.values.end(upper_.val);
        dinv_values_.end(diag_inv_);
    }

    detail::BlockPattern pattern_;  // the scalar entries into A's blocks
    detail::Ilu0Symbolic sym_;      // of P A Pᵀ
    std::vector<offset_t> map_;     // A's block q is factor block map_[q] of P A Pᵀ
    // the factorisation of P A Pᵀ, in double on the host: L, U, D, D⁻¹
    std::vector<double> lower_w_, upper_w_, diag_w_, dinv_w_;
    index_t nb_ = 0, colors_ = 0;
    std::vector<index_t> color_ptr_;  // host
    Array<index_t> perm_;
    Triangle lower_, upper_;
    Array<VT> diag_inv_;
    Committer<VT> dinv_values_;
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
