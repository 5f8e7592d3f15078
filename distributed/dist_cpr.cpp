// CPR over the ranks (dist_cpr.hpp): the pressure matrix over whole rows, its AMG over the
// ranks, and the two-stage application.
#include "distributed/dist_cpr.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "core/error.hpp"
#include "distributed/dist_amg.hpp"
#include "distributed/host_stage.hpp"
#include "formats/csr/csr.hpp"
#include "solver/precond/amg/cpr.hpp"
#include "solver/precond/preconditioner.hpp"

namespace heptane::dist {

template <class VT>
DistCpr<VT>::DistCpr(MPI_Comm comm, std::shared_ptr<const Operator<VT>> a, const SplitRows& rows,
                     index_t row_begin, index_t nc, const CprOptions& opts)
    : comm_(comm),
      a_(std::move(a)),
      n_(rows.diag.rows),
      nc_(nc),
      p_(opts.pressure_index),
      row_begin_(row_begin),
      opts_(opts)
{
    int bad =
        (!a_ || nc_ < 2 || n_ % std::max<index_t>(nc_, 1) != 0 ||
         row_begin_ % std::max<index_t>(nc_, 1) != 0 || a_->rows() != n_ || p_ < 0 || p_ >= nc_)
            ? 1
            : 0;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError,
                   "CPR over the ranks: no operator, Nc = "
                       << nc_ << " < 2, rows or the first row not a multiple of Nc, or the "
                       << "pressure index " << p_ << " outside 0.." << nc_ - 1);
    setup(rows);
}

template <class VT>
DistCpr<VT>::~DistCpr() = default;

template <class VT>
void DistCpr<VT>::update_values(const SplitRows& rows)
{
    int bad = rows.diag.rows != n_ ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(bad == 0, InputError, "CPR over the ranks: new values for another size");
    setup(rows);
}

template <class VT>
void DistCpr<VT>::setup(const SplitRows& rows)
{
    const auto t0 = std::chrono::steady_clock::now();
    const index_t cells = n_ / nc_;
    const offset_t dnnz = rows.diag.nnz();
    const Csr<double> diag = n_ > 0
                                 ? Csr<double>{n_, n_,
                                               Array<offset_t>(std::vector<offset_t>(
                                                   rows.diag.row_ptr, rows.diag.row_ptr + n_ + 1)),
                                               Array<index_t>(std::vector<index_t>(
                                                   rows.diag.col_idx, rows.diag.col_idx + dnnz)),
                                               Array<double>(std::vector<double>(
                                                   rows.diag.values, rows.diag.values + dnnz))}
                                 : Csr<double>{0, 0, Array<offset_t>(std::vector<offset_t>(1, 0)),
                                               Array<index_t>(std::vector<index_t>{}),
                                               Array<double>(std::vector<double>{})};
    // weights and the diagonal block's pressure matrix
    std::vector<double> w;
    const Csr<double> apd = n_ > 0 ? cpr_pressure_matrix(diag, nc_, p_, &w)
                                   : Csr<double>{0, 0, Array<offset_t>(std::vector<offset_t>(1, 0)),
                                                 Array<index_t>(std::vector<index_t>{}),
                                                 Array<double>(std::vector<double>{})};
    // the couplings to other ranks' cells: Σ_c w_I[c] a((I, c), (J, p)), J global cells
    std::vector<index_t> op(std::size_t(cells) + 1, 0), oc;
    std::vector<double> ov;
    {
        std::vector<std::pair<index_t, double>> row;
        for (index_t I = 0; I < cells; ++I) {
            row.clear();
            if (rows.off.rows > 0 && rows.off.row_ptr)
                for (index_t c = 0; c < nc_; ++c) {
                    const index_t r = I * nc_ + c;
                    for (index_t k = rows.off.row_ptr[r]; k < rows.off.row_ptr[r + 1]; ++k) {
                        const index_t col = rows.off.col_idx[k];
                        const index_t g = rows.off_cols ? rows.off_cols[col] : col;
                        if (g % nc_ != p_) continue;
                        row.emplace_back(g / nc_, w[std::size_t(r)] * rows.off.values[k]);
                    }
                }
            std::sort(row.begin(), row.end(),
                      [](const auto& x, const auto& y) { return x.first < y.first; });
            for (std::size_t q = 0; q < row.size(); ++q) {
                if (q > 0 && row[q].first == row[q - 1].first) {
                    ov.back() += row[q].second;
                    continue;
                }
                oc.push_back(row[q].first);
                ov.push_back(row[q].second);
            }
            op[std::size_t(I) + 1] = index_t(oc.size());
        }
    }
    std::vector<index_t> dp(apd.row_ptr.size());
    for (std::size_t k = 0; k < dp.size(); ++k) dp[k] = index_t(apd.row_ptr[k]);
    SplitRows ps;
    ps.diag = CsrView{cells, dp.data(), apd.col_idx.data(), apd.values.data()};
    ps.off = CsrView{cells, op.data(), oc.data(), ov.data()};
    ps.off_cols = nullptr;  // global cells
    // the second stage of the rank's diagonal block, as CPR per rank chooses it: built first
    // (nothing is changed when it throws; a rank whose block fails stops every rank)
    const auto exec = a_->executor();
    std::shared_ptr<const Operator<VT>> m2;
    std::string why;  // this rank's failure, if any
    try {
        m2 = make_preconditioner<VT>(cpr_second_stage(opts_, *exec), diag, nc_, exec);
    } catch (const std::exception& e) {
        why = std::string(": ") + e.what();
    }
    int failed = m2 ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm_);
    HEPTANE_ENSURE(failed == 0, InputError,
                   "CPR over the ranks: the second stage's setup failed"
                       << (m2 ? std::string(" on another rank") : why));
    // the pressure stage: a new hierarchy, or (update_values) the kept one's numeric part
    // when A_p's pattern is the same (DistAmg::update_values; kept whole when it throws)
    if (amg_)
        amg_->update_values(ps);
    else
        amg_ = std::make_shared<DistAmg<double>>(comm_, cpu_executor(), ps, row_begin_ / nc_,
                                                 index_t(1), opts_.amg);
    m2_ = std::move(m2);
    second_ = m2_->describe();
    w_ = std::move(w);
    e_ = Array<VT>(exec, std::size_t(n_));
    t_ = Array<VT>(exec, std::size_t(n_));
    setup_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class VT>
void DistCpr<VT>::apply(VT alpha, const VT* r, VT beta, VT* z) const
{
    const Executor& exec = *a_->executor();
    const index_t cells = n_ / nc_;
    // x_p = AMG (Wᵀ r), e = E x_p
    to_host(exec, r, n_, stage_, hr_);
    rp_.assign(std::size_t(cells), 0.0);
    for (index_t I = 0; I < cells; ++I) {
        double s = 0;
        const std::size_t base = std::size_t(I) * std::size_t(nc_);
        for (std::size_t c = 0; c < std::size_t(nc_); ++c) s += w_[base + c] * hr_[base + c];
        rp_[std::size_t(I)] = s;
    }
    xp_.assign(std::size_t(cells), 0.0);
    amg_->apply(rp_.data(), xp_.data());
    he_.assign(std::size_t(n_), 0.0);
    for (index_t I = 0; I < cells; ++I)
        he_[std::size_t(I) * std::size_t(nc_) + std::size_t(p_)] = xp_[std::size_t(I)];
    from_host(he_, stage_, exec, e_.data());
    // t = r − A e; e += M₂ t; z = alpha e + beta z
    a_->apply(VT(-1), e_.data(), VT(0), t_.data());
    axpby_on(exec, n_, VT(1), r, VT(1), t_.data());
    m2_->apply(VT(1), t_.data(), VT(1), e_.data());
    axpby_on(exec, n_, alpha, e_.data(), beta, z);
}

template <class VT>
void DistCpr<VT>::apply_transpose(VT, const VT*, VT, VT*) const
{
    HEPTANE_THROW(NotSupported, "CPR over the ranks: no transpose");
}

template <class VT>
std::string DistCpr<VT>::describe() const
{
    std::ostringstream s;
    s << "CPR over the ranks (quasi-IMPES weights, pressure index " << p_ << " of Nc " << nc_
      << "; pressure: " << amg_->describe() << "; second stage of each rank's rows: " << second_
      << "; setup " << setup_ms_ << " ms)";
    return s.str();
}

template class DistCpr<double>;
template class DistCpr<float>;

}  // namespace heptane::dist
