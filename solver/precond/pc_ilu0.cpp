// ILU(0) / BILU(0), level-scheduled and multi-colour (docs/design.md §4): the symbolic part
// (solver/precond/ilu0.cpp, multicolor.cpp) kept for values-only updates, factors in VT on
// the executor, triangular solves through precond_kernels.hpp.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

#include "solver/precond/block_utils.hpp"
#include "solver/precond/pc_common.hpp"
#include "solver/precond/precond_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

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
                                   "multi-colour ILU(0): block rows "
                                       << std::int64_t(i) + 1 << " and " << std::int64_t(j) + 1
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

namespace detail {

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_ilu0_pc(const Csr<double>& a, index_t nc,
                                                 std::shared_ptr<const Executor> exec)
{
    return std::make_unique<Ilu0Pc<VT>>(a, nc, std::move(exec));
}
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_ilu0_mc_pc(const Csr<double>& a, index_t nc,
                                                    std::shared_ptr<const Executor> exec)
{
    return std::make_unique<Ilu0McPc<VT>>(a, nc, std::move(exec));
}

#define HEPTANE_INSTANTIATE(VT)                                        \
    template std::unique_ptr<Preconditioner<VT>> make_ilu0_pc<VT>(     \
        const Csr<double>&, index_t, std::shared_ptr<const Executor>); \
    template std::unique_ptr<Preconditioner<VT>> make_ilu0_mc_pc<VT>(  \
        const Csr<double>&, index_t, std::shared_ptr<const Executor>);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace detail
}  // namespace heptane
