#include "solver/precond/amg/cpr.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "formats/bdia/bdia_build.hpp"
#include "formats/matrix_operator.hpp"
#include "solver/precond/amg/amg_kernels.hpp"
#include "solver/precond/amg/amg_level.hpp"
#include "solver/precond/block_utils.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

const Csr<double>& on_host(const Csr<double>& a, Csr<double>& keep)
{
    if (a.exec()->is_cpu()) return a;
    keep = a.to(cpu_executor());
    return keep;
}

// The BDIA-GH matrix behind an operator of heptane's (a FormatOperator with values of
// type MT), or null.
template <class MT, class VT>
const Bdia<MT>* bdia_behind(const Operator<VT>* op)
{
    const auto* f = dynamic_cast<const FormatOperator<Bdia<MT>, MT, VT>*>(op);
    return f ? &f->matrix() : nullptr;
}

// HEPTANE_CPR_FUSED=0 keeps the unfused second stage and AMG's CSR finest level (for
// before/after measurements in one binary)
bool fusion_allowed()
{
    const char* e = std::getenv("HEPTANE_CPR_FUSED");
    return !(e && std::string(e) == "0");
}

template <class MT>
bool fill_view(const Bdia<MT>& b, index_t nc, index_t p, kernels::CprBdia<MT>& v)
{
    if (b.block_size != nc || b.rows != b.cols || b.rows % nc != 0 ||
        b.block_offsets.size() > std::size_t(kernels::CprBdia<MT>::max_offsets) || nc > 8)
        return false;
    v.cells = b.rows / nc;
    v.nc = nc;
    v.p = p;
    v.nq = index_t(b.block_offsets.size());
    for (index_t q = 0; q < v.nq; ++q) v.offsets[q] = b.block_offsets[std::size_t(q)];
    v.data = b.data.data();
    return true;
}

}  // namespace

namespace {

// Quasi-IMPES weights (nc per cell) and the pressure matrix's values (one per block of `b`,
// in b's block order) from the blocks of `b` (values in `val`, nc² per block).
void weights_and_pressure(const detail::BlockCsrHost& b, const double* val, index_t p,
                          std::vector<double>& w, std::vector<double>& ap_val)
{
    const index_t nb = b.nb, nc = b.nc;
    const std::size_t nc2 = std::size_t(nc) * nc;
    w.assign(std::size_t(nb) * nc, 0.0);
    ap_val.resize(b.col.size());
#pragma omp parallel
    {
        std::vector<double> inv(nc2);
#pragma omp for schedule(static)
        for (index_t i = 0; i < nb; ++i) {
            const double* d = val + std::size_t(b.diag[i]) * nc2;
            const detail::PivotFailure f = detail::invert_block(d, inv.data(), nc);
            for (index_t c = 0; c < nc; ++c)  // w = D⁻ᵀ e_p = row p of D⁻¹
                w[std::size_t(i) * nc + c] =
                    f.singular ? (c == p ? 1.0 : 0.0) : inv[std::size_t(p) * nc + c];
            for (offset_t q = b.ptr[i]; q < b.ptr[i + 1]; ++q) {
                const double* blk = val + std::size_t(q) * nc2;
                double s = 0;
                for (index_t c = 0; c < nc; ++c)
                    s += w[std::size_t(i) * nc + c] * blk[std::size_t(c) * nc + p];
                ap_val[std::size_t(q)] = s;
            }
        }
    }
}

Csr<double> pressure_csr(const detail::BlockCsrHost& b, std::vector<double> ap_val)
{
    Csr<double> ap;
    ap.rows = ap.cols = b.nb;
    ap.row_ptr = Array<offset_t>(std::vector<offset_t>(b.ptr.begin(), b.ptr.end()));
    ap.col_idx = Array<index_t>(std::vector<index_t>(b.col.begin(), b.col.end()));
    ap.values = Array<double>(std::move(ap_val));
    return ap;
}

}  // namespace

Csr<double> cpr_pressure_matrix(const Csr<double>& a, index_t nc, index_t p,
                                std::vector<double>* weights)
{
    HEPTANE_ENSURE(
        p >= 0 && p < nc, InputError,
        "CPR: pressure index " << p << " is not an unknown of a cell (Nc = " << nc << ")");
    const detail::BlockCsrHost b = detail::block_csr_from_csr(a, nc, "CPR");
    std::vector<double> w, ap_val;
    weights_and_pressure(b, b.val.data(), p, w, ap_val);
    if (weights) *weights = std::move(w);
    return pressure_csr(b, std::move(ap_val));
}

namespace {

template <class VT>
class CprPc final : public Preconditioner<VT> {
public:
    // `a` may live in exec's memory: it is copied to the host only where a step needs it
    // there (the host setup, a second stage set up on the host, CPR's own copy of A)
    CprPc(const Csr<double>& a_any, index_t nc, std::shared_ptr<const Executor> exec,
          const CprOptions& o, std::shared_ptr<const Operator<VT>> a_op, const Csr<double>* a_exec,
          bool keep_pattern)
        : Preconditioner<VT>(a_any.rows, nc, exec),
          opts_(o),
          keep_pattern_(keep_pattern),
          ops_(exec, 0)
    {
        const auto t0 = clock_type::now();
        Csr<double> host_copy;
        auto host = [&]() -> const Csr<double>& {
            if (a_any.exec()->is_cpu()) return a_any;
            if (host_copy.rows == 0) host_copy = a_any.to(cpu_executor());
            return host_copy;
        };
        HEPTANE_ENSURE(o.pressure_index >= 0 && o.pressure_index < nc, InputError,
                       "CPR: pressure index " << o.pressure_index
                                              << " is not an unknown of a cell (Nc = " << nc
                                              << ")");
        t_phase_ = clock_type::now();
        if (!(a_exec && setup_on_executor(*a_exec, a_op.get()))) {
            // the block structure once (symbolic) on the host; a values refresh refills it
            const Csr<double>& a = host();
            pattern_ = detail::block_pattern(a, nc, "CPR");
            blocks_.resize(pattern_.blocks.col.size() * std::size_t(nc) * nc);
            detail::block_fill(pattern_, a, blocks_.data(), "CPR");
            std::vector<double> w, ap_val;
            weights_and_pressure(pattern_.blocks, blocks_.data(), o.pressure_index, w, ap_val);
            const Csr<double> ap = pressure_csr(pattern_.blocks, std::move(ap_val));
            cells_ = ap.rows;
            w_ = amg::place<VT>(w, exec);
            lap(setup_phase_[0]);
            amg_ = std::make_unique<AmgPreconditioner<VT>>(ap, 1, exec, o.amg);
        }
        lap(setup_phase_[1]);
        if (a_op) {
            a_ = std::move(a_op);
        } else {
            auto own = std::make_shared<amg::CsrLevel<VT>>(amg::place_csr<VT>(host(), exec), exec);
            own_ = own.get();
            a_ = std::move(own);
        }
        const PcType second = cpr_second_stage(o, *exec);
        try {
            if (on_exec_ && second == PcType::block_jacobi) {
                // from A where it is (on a GPU: the gather map and inverses made there)
                CsrPatternView v;
                v.rows = a_exec->rows;
                v.row_ptr64 = a_exec->row_ptr.data();
                v.col_idx = a_exec->col_idx.data();
                v.on_executor = !exec->is_cpu();
                m2_ = make_preconditioner<VT>(second, v, a_exec->values.data(), nc, exec);
                m2_on_exec_ = v.on_executor;
            } else {
                m2_ = make_preconditioner<VT>(second, host(), nc, exec);
            }
        } catch (const InputError& e) {
            if (second != PcType::ilu0_mc) throw;
            // a singular pivot in the multi-colour order: natural-order BILU(0)
            m2_ = make_preconditioner<VT>(PcType::ilu0, host(), nc, exec);
            fallback_ = std::string("ilu0-mc failed: ") + e.what();
        }
        lap(setup_phase_[2]);
        // the second stage fused into one pass where A is BDIA-GH (cpr_stage_two): only the
        // pressure column of A's blocks is read; with block Jacobi as M₂ its inverses too
        bdia64_ = bdia_behind<double>(a_.get());
        bdia32_ = bdia64_ ? nullptr : bdia_behind<float>(a_.get());
        kernels::CprBdia<double> v64;
        kernels::CprBdia<float> v32;
        fused_ =
            fusion_allowed() &&
            ((bdia64_ && fill_view(*bdia64_, nc, o.pressure_index, v64) && v64.cells == cells_) ||
             (bdia32_ && fill_view(*bdia32_, nc, o.pressure_index, v32) && v32.cells == cells_));
        xp_ = Array<VT>(exec, std::size_t(cells_));
        rp_ = Array<VT>(exec, std::size_t(cells_));
        t_ = Array<VT>(exec, std::size_t(a_any.rows));
        d_ = Array<VT>(exec, std::size_t(a_any.rows));
        lap(setup_phase_[3]);  // synchronises
        this->setup_ms_ = first_setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::cpr; }
    bool graph_safe() const override
    {
        return this->exec_->is_cuda() && a_->graph_safe() && amg_->graph_safe() &&
               m2_->graph_safe();
    }
    void update_values(const Csr<double>& a_in) override
    {
        const auto t0 = clock_type::now();
        start_refresh();
        if (on_exec_) {
            refresh_on_executor(a_in);  // ends synchronised (lap)
            this->setup_ms_ = ms_since(t0);
            return;
        }
        Csr<double> keep;
        const Csr<double>& a = on_host(a_in, keep);
        HEPTANE_ENSURE(a.rows == this->n_, InputError,
                       "CPR update_values: " << a.rows << " rows, set up with " << this->n_);
        detail::block_fill(pattern_, a, blocks_.data(), "CPR");  // checks the pattern
        std::vector<double> w, ap_val;
        weights_and_pressure(pattern_.blocks, blocks_.data(), opts_.pressure_index, w, ap_val);
        const Csr<double> ap = pressure_csr(pattern_.blocks, std::move(ap_val));
        std::vector<VT> wv(w.begin(), w.end());
        copy_bytes(*cpu_executor(), wv.data(), *this->exec_, w_.data(), wv.size() * sizeof(VT));
        lap(refresh_phase_[0]);
        amg_->update_values(ap);
        lap(refresh_phase_[1]);
        m2_->update_values(a);
        if (own_) {
            std::vector<VT> v(a.values.host().begin(), a.values.host().end());
            HEPTANE_ENSURE(v.size() == own_->matrix().values.size(), InputError,
                           "CPR update_values: the pattern changed");
            copy_bytes(*cpu_executor(), v.data(), *this->exec_, own_->matrix().values.data(),
                       v.size() * sizeof(VT));
        }
        lap(refresh_phase_[2]);
        this->setup_ms_ = ms_since(t0);
    }
    // A's new values on the executor, where the setup was made there from a pattern kept
    // for this (make_cpr's keep_pattern), the second stage refreshes there and CPR has no
    // copy of A of its own: the weights, A_p (and AMG on it) and M₂ redone there
    bool update_values_device(const double* values, offset_t nnz) override
    {
        if (!on_exec_ || !m2_on_exec_ || own_ || col_exec_.empty() || this->exec_->is_cpu())
            return false;
        HEPTANE_ENSURE(col_exec_.size() == std::size_t(nnz), InputError,
                       "CPR update_values_device: " << nnz << " values for a matrix of "
                                                    << col_exec_.size() << " entries");
        const auto t0 = clock_type::now();
        start_refresh();
        refresh_values_on_executor(ptr_exec_.data(), col_exec_.data(), values,
                                   nnz);  // ends synchronised
        this->setup_ms_ = ms_since(t0);
        return true;
    }
    const AmgPreconditioner<VT>& pressure_amg() const { return *amg_; }

protected:
    void solve(const VT* r, VT* z) const override
    {
        const index_t n = this->n_, nc = this->nc_, cells = cells_;
        const index_t p = opts_.pressure_index;
        dispatch_executor(*this->exec_, [&](const auto& e) {
            kernels::cpr_restrict(e, cells, nc, w_.data(), r, rp_.data());
        });
        amg_->apply(rp_.data(), xp_.data());
        if (fused_) {
            // z = E x_p + M₂⁻¹ (r − A E x_p) in one pass with block Jacobi's inverses, else
            // t = r − A E x_p in one pass, then M₂ and the sum
            const VT* binv = m2_->type() == PcType::block_jacobi && m2_->block_size() == nc
                                 ? m2_->block_inverse()
                                 : nullptr;
            dispatch_executor(*this->exec_, [&](const auto& e) {
                if (bdia64_) {
                    kernels::CprBdia<double> v;
                    fill_view(*bdia64_, nc, p, v);
                    kernels::cpr_stage_two(e, v, xp_.data(), r, binv, binv ? z : t_.data());
                } else {
                    kernels::CprBdia<float> v;
                    fill_view(*bdia32_, nc, p, v);
                    kernels::cpr_stage_two(e, v, xp_.data(), r, binv, binv ? z : t_.data());
                }
            });
            if (binv) return;
            m2_->apply(t_.data(), d_.data());
            dispatch_executor(*this->exec_, [&](const auto& e) {
                kernels::cpr_prolong(e, cells, nc, p, xp_.data(), z);
            });
            ops_.axpby(n, VT(1), d_.data(), VT(1), z);
            return;
        }
        dispatch_executor(*this->exec_, [&](const auto& e) {
            kernels::cpr_prolong(e, cells, nc, p, xp_.data(), z);
        });
        ops_.copy(n, r, t_.data());
        a_->apply(VT(-1), z, VT(1), t_.data());
        m2_->apply(t_.data(), d_.data());
        ops_.axpby(n, VT(1), d_.data(), VT(1), z);
    }
    std::string details() const override
    {
        std::ostringstream os;
        os << "(quasi-IMPES, pressure unknown " << opts_.pressure_index
           << (on_exec_ ? "; weights and pressure matrix made on the executor" : "")
           << "; pressure: " << amg_->describe() << "; second stage: " << m2_->describe();
        if (fused_)
            os << "; second stage fused with A's pressure columns (BDIA-GH"
               << (m2_->block_inverse() ? ", block Jacobi in the same pass)" : ")");
        if (fine_) os << "; A_p's products through BDIA-GH";
        os.setf(std::ios::fixed);
        os.precision(1);
        os << "; setup " << first_setup_ms_ << " ms (A_p and weights " << setup_phase_[0]
           << ", AMG " << setup_phase_[1] << ", second stage " << setup_phase_[2] << ", rest "
           << setup_phase_[3] << ")";
        if (refreshes_ > 0)
            os << ", last of " << refreshes_ << " values refreshes " << this->setup_ms_
               << " ms (A_p and weights " << refresh_phase_[0] << ", AMG " << refresh_phase_[1]
               << ", second stage " << refresh_phase_[2] << ")";
        if (!fallback_.empty()) os << " [" << fallback_ << "]";
        os << ")";
        return os.str();
    }

private:
    // The weights and A_p from A in the executor's memory (kernels::cpr_pressure_*): A_p is
    // made there and AMG set up from it there. False, with nothing set, where the kernels do
    // not take A (a row not sorted or with a repeated column, a column out of range, nc > 8
    // on a GPU): the host path then sets up, and says what is wrong where something is.
    bool setup_on_executor(const Csr<double>& ad, const Operator<VT>* a_op)
    {
        const auto& exec = this->exec_;
        const index_t nc = this->nc_;
        if (!same_memory(*ad.exec(), *exec) || ad.rows != this->n_ || ad.cols != this->n_ ||
            (exec->is_cuda() && nc > 8))
            return false;
        const index_t cells = ad.rows / nc;
        Csr<double> ap;
        ap.rows = ap.cols = cells;
        ap.row_ptr = Array<offset_t>(exec, std::size_t(cells) + 1);
        const int defects = dispatch_executor(*exec, [&](const auto& e) {
            return kernels::cpr_pressure_pattern(e, cells, nc, ad.row_ptr.data(), ad.col_idx.data(),
                                                 ap.row_ptr.data());
        });
        if (defects) return false;
        offset_t nnz = 0;
        copy_bytes(*exec, ap.row_ptr.data() + cells, *cpu_executor(), &nnz, sizeof(offset_t));
        ap.col_idx = Array<index_t>(exec, std::size_t(nnz));
        ap.values = Array<double>(exec, std::size_t(nnz));
        w_ = Array<VT>(exec, std::size_t(ad.rows));
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::cpr_pressure_values(e, cells, nc, opts_.pressure_index, ad.row_ptr.data(),
                                         ad.col_idx.data(), ad.values.data(), ap.row_ptr.data(),
                                         ap.col_idx.data(), ap.values.data(), w_.data());
        });
        fingerprint_ = dispatch_executor(*exec, [&](const auto& e) {
            return kernels::csr_pattern_fingerprint(e, ad.rows, ad.row_ptr.data(),
                                                    ad.col_idx.data());
        });
        if (keep_pattern_ && exec->is_cuda()) {
            ptr_exec_ = ad.row_ptr;  // device to device
            col_exec_ = ad.col_idx;
        }
        cells_ = cells;
        lap(setup_phase_[0]);
        // AMG starts from A_p where it is (it copies it to the host only where its options
        // need it there)
        amg_ = std::make_unique<AmgPreconditioner<VT>>(ap, 1, exec, opts_.amg, make_fine(a_op, ap),
                                                       &ap);
        ap_exec_ = std::move(ap);
        on_exec_ = true;
        return true;
    }

    // A_p as BDIA-GH with the block offsets of A's BDIA-GH operator (a 7-point A gives a
    // 7-point A_p), for AMG's finest level: its products then read 8 bytes an entry and no
    // column indices. Null (AMG keeps A_p as CSR) for fp32 levels, an operator that is not
    // BDIA-GH, or an entry of A_p on none of the offsets.
    std::shared_ptr<const Operator<VT>> make_fine(const Operator<VT>* a_op, const Csr<double>& ap)
    {
        if constexpr (!std::is_same_v<VT, double>) {
            return nullptr;
        } else {
            const Bdia<double>* b64 = bdia_behind<double>(a_op);
            const Bdia<float>* b32 = b64 ? nullptr : bdia_behind<float>(a_op);
            const std::vector<index_t>* offsets =
                b64 ? &b64->block_offsets : (b32 ? &b32->block_offsets : nullptr);
            const index_t bs = b64 ? b64->block_size : (b32 ? b32->block_size : 0);
            if (!offsets || bs != this->nc_ || offsets->empty() || !fusion_allowed())
                return nullptr;
            const auto& exec = this->exec_;
            Bdia<double> f;
            f.rows = f.cols = ap.rows;
            f.block_size = 1;
            f.block_offsets = *offsets;
            const std::size_t slots = offsets->size() * std::size_t(ap.rows);
            f.data = Array<double>(exec, slots);
            f.pattern = Array<std::uint64_t>(exec, (slots + 63) / 64);
            if (!place_fine(f, ap)) return nullptr;
            std::ostringstream d;
            d << "bdiagh " << ap.rows << "x" << ap.rows << " Nc=1 D=" << offsets->size()
              << " (A_p)";
            auto op = std::make_shared<FormatOperator<Bdia<double>, double, double>>(
                std::move(f), ap.rows, exec, d.str());
            fine_ = op.get();
            return op;
        }
    }
    // A_p's entries into f's slots (zeroed first); false where one lies on no offset
    bool place_fine(Bdia<double>& f, const Csr<double>& ap) const
    {
        const offset_t bad = dispatch_executor(*this->exec_, [&](const auto& e) {
            return kernels::bdia_place_entries(e, ap.rows, ap.cols, 1, f.block_offsets.data(),
                                               index_t(f.block_offsets.size()), ap.nnz(),
                                               ap.row_ptr.data(), ap.col_idx.data(),
                                               ap.values.data(), f.data.data(), f.pattern.data());
        });
        return bad < 0;
    }
    // A_p's new values into the finest level's BDIA-GH (same pattern, so every entry lands)
    void refresh_fine()
    {
        if (!fine_) return;
        HEPTANE_ENSURE(place_fine(fine_->matrix(), ap_exec_), InputError,
                       "CPR update_values: A_p has an entry on none of the block offsets");
    }

    // update_values after setup_on_executor: A to the executor (unless there already), its
    // pattern checked by fingerprint, the weights and A_p's values made again there.
    void refresh_on_executor(const Csr<double>& a_in)
    {
        const auto& exec = this->exec_;
        const index_t nc = this->nc_;
        Csr<double> keep;
        const Csr<double>& ad = same_memory(*a_in.exec(), *exec) ? a_in : (keep = a_in.to(exec));
        HEPTANE_ENSURE(ad.rows == this->n_ && ad.cols == this->n_, InputError,
                       "CPR update_values: the matrix is " << ad.rows << " x " << ad.cols
                                                           << ", set up with " << this->n_);
        const std::uint64_t f = dispatch_executor(*exec, [&](const auto& e) {
            return kernels::csr_pattern_fingerprint(e, ad.rows, ad.row_ptr.data(),
                                                    ad.col_idx.data());
        });
        HEPTANE_ENSURE(f == fingerprint_, InputError,
                       "CPR update_values: the nonzero pattern differs from the one set up "
                       "with (a values-only update keeps it; set up again)");
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::cpr_pressure_values(e, cells_, nc, opts_.pressure_index, ad.row_ptr.data(),
                                         ad.col_idx.data(), ad.values.data(),
                                         ap_exec_.row_ptr.data(), ap_exec_.col_idx.data(),
                                         ap_exec_.values.data(), w_.data());
        });
        // AMG's values refresh from A_p where it is (on the device where its hierarchy is)
        refresh_fine();
        lap(refresh_phase_[0]);
        amg_->update_values(ap_exec_);
        lap(refresh_phase_[1]);
        Csr<double> host;  // A on the host where a step needs it there
        auto on_host_once = [&]() -> const Csr<double>& {
            if (a_in.exec()->is_cpu()) return a_in;
            if (host.rows == 0) host = a_in.to(cpu_executor());
            return host;
        };
        if (m2_on_exec_) {
            if (!m2_->update_values_device(ad.values.data(), ad.nnz()))
                m2_->update_values(on_host_once());
        } else {
            m2_->update_values(on_host_once());
        }
        if (own_) {
            const Csr<double>& a = on_host_once();
            std::vector<VT> v(a.values.host().begin(), a.values.host().end());
            HEPTANE_ENSURE(v.size() == own_->matrix().values.size(), InputError,
                           "CPR update_values: the pattern changed");
            copy_bytes(*cpu_executor(), v.data(), *exec, own_->matrix().values.data(),
                       v.size() * sizeof(VT));
        }
        lap(refresh_phase_[2]);
    }

    // update_values_device: the weights, A_p's values and AMG's refresh, and M₂'s, from A's
    // values on the executor and the kept pattern (the caller guarantees it)
    void refresh_values_on_executor(const offset_t* row_ptr, const index_t* col,
                                    const double* values, offset_t nnz)
    {
        dispatch_executor(*this->exec_, [&](const auto& e) {
            kernels::cpr_pressure_values(e, cells_, this->nc_, opts_.pressure_index, row_ptr, col,
                                         values, ap_exec_.row_ptr.data(), ap_exec_.col_idx.data(),
                                         ap_exec_.values.data(), w_.data());
        });
        refresh_fine();
        lap(refresh_phase_[0]);
        amg_->update_values(ap_exec_);
        lap(refresh_phase_[1]);
        HEPTANE_ENSURE(m2_->update_values_device(values, nnz), NotSupported,
                       "CPR update_values_device: the second stage has no device refresh");
        lap(refresh_phase_[2]);
    }

    CprOptions opts_;
    bool on_exec_ = false;     // the weights and A_p made on the executor
    bool m2_on_exec_ = false;  // M₂ set up from A's pattern in device memory
    std::uint64_t fingerprint_ = 0;
    Csr<double> ap_exec_;
    bool keep_pattern_ = false;  // keep A's pattern on the device (update_values_device)
    Array<offset_t> ptr_exec_;   // … here
    Array<index_t> col_exec_;
    detail::BlockPattern pattern_;
    std::vector<double> blocks_;
    mutable VectorOps<VT> ops_;
    index_t cells_ = 0;
    Array<VT> w_;
    std::unique_ptr<AmgPreconditioner<VT>> amg_;
    std::shared_ptr<const Operator<VT>> a_;
    amg::CsrLevel<VT>* own_ = nullptr;
    std::unique_ptr<Preconditioner<VT>> m2_;
    std::string fallback_;
    mutable Array<VT> xp_, rp_, t_, d_;
    // A's BDIA-GH storage where the operator has it (the fused second stage), and A_p as
    // BDIA-GH with A's block offsets for AMG's finest level (fp64, where A_p is made on the
    // executor and every entry lies on an offset)
    const Bdia<double>* bdia64_ = nullptr;
    const Bdia<float>* bdia32_ = nullptr;
    bool fused_ = false;
    FormatOperator<Bdia<double>, double, double>* fine_ = nullptr;
    // where the setup's and the last values refresh's time went (details()): each phase ends
    // with the executor synchronised, so a phase's work is counted in it and not the next
    // (the refresh ends with a synchronisation anyway; the setup's few extra ones cost µs)
    clock_type::time_point t_phase_;
    double setup_phase_[4] = {0, 0, 0, 0};  // A_p and weights, AMG, second stage, the rest
    double refresh_phase_[3] = {0, 0, 0};   // A_p and weights, AMG, second stage
    int refreshes_ = 0;
    double first_setup_ms_ = 0;
    void lap(double& phase)
    {
        this->exec_->synchronize();
        phase += ms_since(t_phase_);
        t_phase_ = clock_type::now();
    }
    void start_refresh()
    {
        for (double& x : refresh_phase_) x = 0;
        ++refreshes_;
        t_phase_ = clock_type::now();
    }
};

}  // namespace

namespace {

// a 1-D chain of n cells with nc unknowns each: diagonal blocks 4 on the diagonal and 1
// elsewhere, -I to the neighbours (diagonally dominant, so every setup step runs)
Csr<double> warm_up_chain(index_t n, index_t nc)
{
    std::vector<offset_t> ptr{0};
    std::vector<index_t> col;
    std::vector<double> val;
    for (index_t i = 0; i < n; ++i)
        for (index_t a = 0; a < nc; ++a) {
            if (i > 0) {
                col.push_back((i - 1) * nc + a);
                val.push_back(-1.0);
            }
            for (index_t b = 0; b < nc; ++b) {
                col.push_back(i * nc + b);
                val.push_back(a == b ? 4.0 : 1.0);
            }
            if (i + 1 < n) {
                col.push_back((i + 1) * nc + a);
                val.push_back(-1.0);
            }
            ptr.push_back(offset_t(col.size()));
        }
    Csr<double> m;
    m.rows = m.cols = n * nc;
    m.row_ptr = Array<offset_t>(std::move(ptr));
    m.col_idx = Array<index_t>(std::move(col));
    m.values = Array<double>(std::move(val));
    return m;
}

}  // namespace

PcType cpr_second_stage(const CprOptions& o, const Executor& exec)
{
    // auto: natural BILU(0) on the CPU; block Jacobi on a GPU, whose setup and refresh are ms
    // where the multi-colour BILU(0)'s host factorisation took ~1 s per Newton step at 1 M
    // cells, Nc = 3, for 30 against 32 iterations over four solves (H100)
    if (o.second_stage_auto) return exec.is_cuda() ? PcType::block_jacobi : PcType::ilu0;
    if (o.second_stage == CprSmoother::bilu0mc) return PcType::ilu0_mc;
    if (o.second_stage == CprSmoother::bjacobi) return PcType::block_jacobi;
    return PcType::ilu0;
}

double warm_up_multigrid(const std::shared_ptr<const Executor>& exec)
{
    if (!exec->is_cuda()) return 0;
    const auto t0 = clock_type::now();
    AmgOptions o;
    o.coarse_size = 8;
    const Csr<double> a = warm_up_chain(256, 1);
    const Csr<double> ad = a.to(exec);
    AmgPreconditioner<double> amg(ad, 1, exec, o, nullptr, &ad);
    Array<double> r(exec, std::size_t(a.rows)), z(exec, std::size_t(a.rows));
    VectorOps<double>(exec, 0).fill(a.rows, 1.0, r.data());
    amg.apply(r.data(), z.data());
    amg.update_values_device(ad.values.data(), ad.nnz());
    CprOptions c;
    c.amg = o;
    const Csr<double> b = warm_up_chain(256, 2);
    const Csr<double> bd = b.to(exec);
    auto cpr = make_cpr<double>(bd, 2, exec, c, nullptr, &bd);
    Array<double> rb(exec, std::size_t(b.rows)), zb(exec, std::size_t(b.rows));
    VectorOps<double>(exec, 0).fill(b.rows, 1.0, rb.data());
    cpr->apply(rb.data(), zb.data());
    exec->synchronize();
    return ms_since(t0);
}

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_cpr(const Csr<double>& a_in, index_t nc,
                                             std::shared_ptr<const Executor> exec,
                                             const CprOptions& opts,
                                             std::shared_ptr<const Operator<VT>> a_op,
                                             const Csr<double>* a_exec, bool keep_pattern)
{
    HEPTANE_ENSURE(a_in.rows == a_in.cols, InputError,
                   "CPR: the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
    HEPTANE_ENSURE(nc >= 1 && a_in.rows % nc == 0, InputError,
                   "CPR: block size " << nc << " does not divide the " << a_in.rows << " rows");
    return std::make_unique<CprPc<VT>>(a_in, nc, std::move(exec), opts, std::move(a_op), a_exec,
                                       keep_pattern);
}

template std::unique_ptr<Preconditioner<double>> make_cpr<double>(
    const Csr<double>&, index_t, std::shared_ptr<const Executor>, const CprOptions&,
    std::shared_ptr<const Operator<double>>, const Csr<double>*, bool);
template std::unique_ptr<Preconditioner<float>> make_cpr<float>(
    const Csr<double>&, index_t, std::shared_ptr<const Executor>, const CprOptions&,
    std::shared_ptr<const Operator<float>>, const Csr<double>*, bool);

}  // namespace heptane
