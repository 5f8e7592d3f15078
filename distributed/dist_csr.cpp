// The general row-split operator (dist_csr.hpp).
#include "distributed/dist_csr.hpp"

#include <algorithm>
#include <sstream>
#include <type_traits>

#include "core/error.hpp"
#include "distributed/coupling_kernels.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::dist {

namespace {

constexpr int tag = 7400;

template <class T>
MPI_Datatype mpi_type()
{
    return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

/// The same answer on every rank: InputError everywhere when any rank found `bad`.
void agree(MPI_Comm comm, const std::string& bad)
{
    int mine = bad.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
    if (!bad.empty()) HEPTANE_THROW(InputError, "distributed CSR operator: " << bad);
    HEPTANE_ENSURE(any == 0, InputError,
                   "distributed CSR operator: another rank's rows were refused (its message says "
                   "why)");
}

template <class MT>
Csr<MT> host_csr(index_t rows, index_t cols, const index_t* rp, const index_t* ci, const double* v)
{
    const offset_t nnz = rows > 0 ? offset_t(rp[rows]) : 0;
    std::vector<offset_t> ptr(std::size_t(rows) + 1, 0);
    for (index_t i = 0; i <= rows && rows > 0; ++i) ptr[std::size_t(i)] = offset_t(rp[i]);
    std::vector<index_t> col(ci, ci + nnz);
    std::vector<MT> val(static_cast<std::size_t>(nnz));
    for (offset_t k = 0; k < nnz; ++k) val[std::size_t(k)] = MT(v[k]);
    return Csr<MT>{rows, cols, Array<offset_t>(std::move(ptr)), Array<index_t>(std::move(col)),
                   Array<MT>(std::move(val))};
}

}  // namespace

SplitRows OwnedSplitRows::view() const
{
    SplitRows v;
    v.diag = CsrView{index_t(dp.size()) - 1, dp.data(), dc.data(), dv.data()};
    v.off = CsrView{index_t(op.size()) - 1, op.data(), oc.data(), ov.data()};
    v.off_cols = nullptr;  // global columns
    return v;
}

OwnedSplitRows split_coo_rows(const Coo<double>& a, index_t r0, index_t r1)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "split_coo_rows needs a host matrix");
    HEPTANE_ENSURE(
        0 <= r0 && r0 <= r1 && r1 <= a.rows, InputError,
        "split_coo_rows: rows [" << r0 << ", " << r1 << ") outside [0, " << a.rows << ")");
    const index_t n = r1 - r0;
    // entries of each local row, in (column) order, duplicates summed
    std::vector<std::vector<std::pair<index_t, double>>> row(static_cast<std::size_t>(n));
    const index_t *ri = a.row.data(), *ci = a.col.data();
    const double* vi = a.val.data();
    for (offset_t k = 0; k < a.nnz(); ++k)
        if (ri[k] >= r0 && ri[k] < r1) row[std::size_t(ri[k] - r0)].emplace_back(ci[k], vi[k]);
    OwnedSplitRows s;
    for (auto& r : row) {
        std::sort(r.begin(), r.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        for (std::size_t k = 0; k < r.size();) {
            const index_t c = r[k].first;
            double v = 0;
            for (; k < r.size() && r[k].first == c; ++k) v += r[k].second;
            if (c >= r0 && c < r1) {
                s.dc.push_back(c - r0);
                s.dv.push_back(v);
            } else {
                s.oc.push_back(c);
                s.ov.push_back(v);
            }
        }
        s.dp.push_back(index_t(s.dc.size()));
        s.op.push_back(index_t(s.oc.size()));
    }
    return s;
}

template <class MT, class VT>
DistributedCsr<MT, VT>::DistributedCsr(std::shared_ptr<const Communicator> comm,
                                       const SplitRows& rows, std::shared_ptr<const Executor> exec)
    : comm_(std::move(comm)), exec_(std::move(exec))
{
    HEPTANE_ENSURE(comm_ && exec_, InputError, "DistributedCsr: no communicator or executor");
    n_ = rows.diag.rows;
    part_ = partition_from_local(*comm_, n_);
    const long long begin = part_.begin(comm_->rank()), end = begin + n_;
    const long long global = part_.global_rows();
    // checks first, so that every rank throws or none does
    std::ostringstream bad;
    const index_t off_rows = rows.off.rows;
    if (off_rows != n_ && !(off_rows == 0 && rows.off.nnz() == 0))
        bad << "rank " << comm_->rank() << ": the diagonal block has " << n_
            << " rows, the off-diagonal part " << off_rows;
    for (offset_t k = 0; bad.str().empty() && k < rows.diag.nnz(); ++k)
        if (rows.diag.col_idx[k] < 0 || rows.diag.col_idx[k] >= n_)
            bad << "rank " << comm_->rank() << ": diagonal-block column " << rows.diag.col_idx[k]
                << " outside its " << n_ << " rows";
    std::vector<long long> gcol(std::size_t(rows.off.nnz()));
    for (offset_t k = 0; bad.str().empty() && k < rows.off.nnz(); ++k) {
        const index_t j = rows.off.col_idx[k];
        if (j < 0 && rows.off_cols) {
            bad << "rank " << comm_->rank() << ": off-diagonal column position " << j;
            break;
        }
        const long long c = rows.off_cols ? (long long)rows.off_cols[j] : (long long)j;
        if (c < 0 || c >= global || (c >= begin && c < end))
            bad << "rank " << comm_->rank() << ": off-diagonal column " << c
                << (c < 0 || c >= global ? " outside the matrix's " : " inside its own rows of ")
                << global << (c < 0 || c >= global ? " columns" : "");
        gcol[std::size_t(k)] = c;
    }
    agree(comm_->comm(), bad.str());

    diag_ = host_csr<MT>(n_, n_, rows.diag.row_ptr, rows.diag.col_idx, rows.diag.values);
    // the halo: the distinct off columns ascending, and each entry's position in it. Columns
    // given through an ascending off_cols (PETSc's garray) are positions already.
    index_t width = 0;
    for (offset_t k = 0; k < rows.off.nnz(); ++k) width = std::max(width, rows.off.col_idx[k] + 1);
    bool positions = rows.off_cols != nullptr;
    for (index_t j = 0; positions && j < width; ++j) {
        const long long c = rows.off_cols[j];
        positions =
            (j == 0 || rows.off_cols[j - 1] < c) && c >= 0 && c < global && (c < begin || c >= end);
    }
    std::vector<index_t> local;
    if (positions) {
        halo_.assign(rows.off_cols, rows.off_cols + width);
        local.assign(rows.off.col_idx, rows.off.col_idx + rows.off.nnz());
    } else {
        halo_ = gcol;
        std::sort(halo_.begin(), halo_.end());
        halo_.erase(std::unique(halo_.begin(), halo_.end()), halo_.end());
        local.resize(gcol.size());
        for (std::size_t k = 0; k < gcol.size(); ++k)
            local[k] =
                index_t(std::lower_bound(halo_.begin(), halo_.end(), gcol[k]) - halo_.begin());
    }
    if (rows.off.nnz() > 0)
        off_ = host_csr<MT>(n_, index_t(halo_.size()), rows.off.row_ptr, local.data(),
                            rows.off.values);
    else  // no couplings (or no off part given): an empty one
        off_ = Csr<MT>{n_, 0, Array<offset_t>(std::vector<offset_t>(std::size_t(n_) + 1, 0)),
                       Array<index_t>(std::vector<index_t>{}), Array<MT>(std::vector<MT>{})};
    plan_ =
        make_column_plan(comm_->comm(), halo_,
                         std::vector<long long>(part_.starts.begin(), part_.starts.end()), begin);
    hx_.resize(halo_.size());
    if (!exec_->is_cpu()) {  // the operator on the device, the halo's rows packed there
        diag_ = diag_.to(exec_);
        off_ = off_.to(exec_);
        std::vector<index_t> rows_out;
        for (const auto& r : plan_.send_rows) rows_out.insert(rows_out.end(), r.begin(), r.end());
        sbuf_.resize(rows_out.size());
        send_rows_dev_ = Array<index_t>(std::move(rows_out)).to(exec_);
        sbuf_dev_ = Array<VT>(exec_, sbuf_.size());
        hx_dev_ = Array<VT>(exec_, hx_.size());
    }
    if (comm_->size() > 1) reducer_ = make_reducer(ReduceModel::mpi, comm_, exec_);
}

template <class MT, class VT>
DistributedCsr<MT, VT>::~DistributedCsr() = default;

template <class MT, class VT>
void DistributedCsr<MT, VT>::apply_staged(VT alpha, const VT* x, VT beta, VT* y) const
{
    const auto& cpu = *cpu_executor();
    const std::size_t bytes = sizeof(VT);
    req_.clear();
    if (comm_->size() > 1) {  // pack on the device, down, post the messages
        dispatch_executor(*exec_, [&](const auto& e) {
            kernels::gather_rows(e, index_t(sbuf_.size()), send_rows_dev_.data(), x,
                                 sbuf_dev_.data());
        });
        copy_bytes(*exec_, sbuf_dev_.data(), cpu, sbuf_.data(), sbuf_.size() * bytes);
        post_exchange(comm_->comm(), plan_, sbuf_.data(), hx_.data(), mpi_type<VT>(), tag, req_);
    }
    dispatch_executor(*exec_, [&](const auto& e) {  // queued: runs while the messages fly
        if (n_ > 0) kernels::spmv(e, diag_, Op::normal, alpha, x, beta, y);
    });
    if (!req_.empty()) MPI_Waitall(int(req_.size()), req_.data(), MPI_STATUSES_IGNORE);
    if (n_ > 0 && off_.nnz() > 0) {
        copy_bytes(cpu, hx_.data(), *exec_, hx_dev_.data(), hx_.size() * bytes);
        dispatch_executor(*exec_, [&](const auto& e) {
            kernels::spmv(e, off_, Op::normal, alpha, hx_dev_.data(), VT(1), y);
        });
    }
}

template <class MT, class VT>
void DistributedCsr<MT, VT>::apply(VT alpha, const VT* x, VT beta, VT* y) const
{
    if (!exec_->is_cpu()) return apply_staged(alpha, x, beta, y);
    const auto& cpu = static_cast<const CpuExecutor&>(*exec_);
    req_.clear();
    if (comm_->size() > 1)
        start_exchange(comm_->comm(), plan_, x, hx_.data(), mpi_type<VT>(), tag, sbuf_, req_);
    if (n_ > 0) kernels::spmv(cpu, diag_, Op::normal, alpha, x, beta, y);
    if (!req_.empty()) MPI_Waitall(int(req_.size()), req_.data(), MPI_STATUSES_IGNORE);
    if (n_ > 0 && off_.nnz() > 0) kernels::spmv(cpu, off_, Op::normal, alpha, hx_.data(), VT(1), y);
}

template <class MT, class VT>
void DistributedCsr<MT, VT>::apply_transpose(VT, const VT*, VT, VT*) const
{
    HEPTANE_THROW(NotSupported, "the distributed CSR operator has no transposed product");
}

template <class MT, class VT>
void DistributedCsr<MT, VT>::update_values(const SplitRows& rows)
{
    HEPTANE_ENSURE(
        rows.diag.rows == n_ && rows.diag.nnz() == diag_.nnz() && rows.off.nnz() == off_.nnz(),
        InputError,
        "distributed CSR operator: new values for "
            << rows.diag.rows << " rows, " << rows.diag.nnz() << " + " << rows.off.nnz()
            << " entries, where the pattern has " << n_ << " rows, " << diag_.nnz() << " + "
            << off_.nnz());
    // rounded to MT on the host, then copied to the operator's executor (a memcpy on the CPU)
    std::vector<MT> v;
    for (auto [part, from] : {std::pair<Csr<MT>*, const double*>{&diag_, rows.diag.values},
                              std::pair<Csr<MT>*, const double*>{&off_, rows.off.values}}) {
        v.assign(from, from + part->nnz());
        copy_bytes(*cpu_executor(), v.data(), *exec_, part->values.data(), v.size() * sizeof(MT));
    }
}

template <class MT, class VT>
std::string DistributedCsr<MT, VT>::describe() const
{
    std::ostringstream o;
    o << "csr rows [" << part_.begin(comm_->rank()) << ", " << part_.end(comm_->rank()) << ") of "
      << part_.global_rows() << " on rank " << comm_->rank() << "/" << comm_->size() << ", "
      << diag_.nnz() << " + " << off_.nnz() << " entries, halo " << halo_.size() << " columns from "
      << plan_.recv_peer.size() << " ranks by " << exchange_name() << ", reductions by "
      << reduction_name() << ", "
      << (std::is_same_v<MT, double>   ? "fp64"
          : std::is_same_v<VT, double> ? "fp32 values/fp64 vectors"
                                       : "fp32")
      << " on " << exec_->name();
    return o.str();
}

template class DistributedCsr<double, double>;
template class DistributedCsr<float, float>;
template class DistributedCsr<float, double>;

}  // namespace heptane::dist
