#include "distributed/dist_bdia.hpp"

#include <algorithm>
#include <sstream>

#include "core/bitset.hpp"
#include "core/error.hpp"
#include "distributed/coupling_kernels.hpp"

namespace heptane::dist {

namespace {

/// Which local rows reach below / above the range, from the block offsets.
kernels::CouplingRows coupling_rows(index_t n, index_t nc, const std::vector<index_t>& offsets,
                                    const HaloPlan& plan)
{
    kernels::CouplingRows c;
    c.lower = plan.lower;
    c.upper = plan.upper;
    const index_t dmin = offsets.empty() ? 0 : std::min<index_t>(0, offsets.front());
    const index_t dmax = offsets.empty() ? 0 : std::max<index_t>(0, offsets.back());
    // block row br reaches below iff br + dmin < 0, above iff br + dmax >= n/nc
    c.lower_rows = plan.lower > 0 ? std::min<index_t>(n, -dmin * nc) : 0;
    c.upper_begin = plan.upper > 0 ? std::max<index_t>(c.lower_rows, n - dmax * nc) : n;
    return c;
}

}  // namespace

template <class MT, class VT>
DistributedBdia<MT, VT>::DistributedBdia(std::shared_ptr<const Communicator> comm,
                                         RowPartition part, Bdia<MT> local,
                                         std::shared_ptr<const Executor> exec, DistOptions opts)
    : comm_(std::move(comm)), part_(std::move(part)), exec_(std::move(exec)), opts_(opts)
{
    HEPTANE_ENSURE(comm_ && exec_, InputError, "DistributedBdia: no communicator or executor");
    HEPTANE_ENSURE(
        part_.size() == comm_->size(), InputError,
        "DistributedBdia: a " << part_.size() << "-way partition on " << comm_->size() << " ranks");
    const int rank = comm_->rank();
    const index_t nc = local.block_size;
    HEPTANE_ENSURE(local.rows == part_.rows(rank) && local.cols == local.rows, DimensionMismatch,
                   "DistributedBdia: rank " << rank << " owns rows [" << part_.begin(rank) << ", "
                                            << part_.end(rank) << ") but its block is "
                                            << local.rows << " x " << local.cols);
    for (int p = 0; p < part_.size(); ++p)
        HEPTANE_ENSURE(part_.begin(p) % nc == 0, InputError,
                       "DistributedBdia: rank " << p << "'s rows start at " << part_.begin(p)
                                                << ", not on a block of Nc = " << nc);
    const index_t dmin = local.block_offsets.empty() ? 0 : local.block_offsets.front();
    const index_t dmax = local.block_offsets.empty() ? 0 : local.block_offsets.back();
    plan_ = make_halo_plan(part_, rank, std::max<index_t>(0, -dmin) * nc,
                           std::max<index_t>(0, dmax) * nc);
    local_ = local.exec().get() == exec_.get() || (local.exec()->is_cpu() && exec_->is_cpu())
                 ? std::move(local)
                 : local.to(exec_);
    // the models must suit the executor, on one rank too
    HEPTANE_ENSURE(
        opts_.halo == HaloModel::automatic || (opts_.halo == HaloModel::host) == exec_->is_cpu(),
        InputError,
        "halo model '" << to_string(opts_.halo) << "' is for " << (exec_->is_cpu() ? "GPU" : "CPU")
                       << " vectors; this operator's are on " << exec_->name());
    HEPTANE_ENSURE(opts_.reduce == ReduceModel::automatic || opts_.reduce == ReduceModel::mpi ||
                       exec_->is_cuda(),
                   InputError,
                   "reduction model '" << to_string(opts_.reduce) << "' is for GPU vectors");
    if (comm_->size() == 1) return;  // one rank: no halo, no reductions (a plain operator)
    halo_ = make_halo_exchange<VT>(opts_.halo, plan_, comm_, exec_);
    reduce_model_ = resolve_reduce_model(opts_.reduce, *exec_, *comm_);
    reducer_ = make_reducer(reduce_model_, comm_, exec_);
}

template <class MT, class VT>
DistributedBdia<MT, VT>::~DistributedBdia() = default;

template <class MT, class VT>
std::string DistributedBdia<MT, VT>::exchange_name() const
{
    return halo_ ? to_string(halo_->model()) : "none";
}

template <class MT, class VT>
std::string DistributedBdia<MT, VT>::reduction_name() const
{
    return reducer_ ? to_string(reduce_model_) : "none";
}

template <class MT, class VT>
void DistributedBdia<MT, VT>::apply_local_scaled(VT alpha, const VT* x, VT beta, VT* y) const
{
    if (exec_->is_cpu()) {
        kernels::spmv(static_cast<const CpuExecutor&>(*exec_), local_, Op::normal, alpha, x, beta,
                      y);
    } else {
#ifdef HEPTANE_HAVE_CUDA
        kernels::spmv(static_cast<const CudaExecutor&>(*exec_), local_, Op::normal, alpha, x, beta,
                      y, opts_.kernel);
#endif
    }
}

template <class MT, class VT>
void DistributedBdia<MT, VT>::apply_local(const VT* x, VT* y) const
{
    apply_local_scaled(VT(1), x, VT(0), y);
}

template <class MT, class VT>
void DistributedBdia<MT, VT>::exchange(const VT* x) const
{
    if (!halo_) return;
    halo_->start(x);
    halo_->finish();
}

template <class MT, class VT>
void DistributedBdia<MT, VT>::apply(VT alpha, const VT* x, VT beta, VT* y) const
{
    if (!halo_) {
        apply_local_scaled(alpha, x, beta, y);
        return;
    }
    halo_->start(x);  // posted/queued; overlaps the local product
    const kernels::CouplingRows rows =
        coupling_rows(local_.rows, local_.block_size, local_.block_offsets, plan_);
    if (exec_->is_cpu()) {
        const auto& e = static_cast<const CpuExecutor&>(*exec_);
        kernels::spmv(e, local_, Op::normal, alpha, x, beta, y);
        halo_->finish();
        if (plan_.halo_rows() > 0) kernels::bdia_coupling(e, local_, rows, alpha, halo_->halo(), y);
    } else {
#ifdef HEPTANE_HAVE_CUDA
        const auto& e = static_cast<const CudaExecutor&>(*exec_);
        kernels::spmv(e, local_, Op::normal, alpha, x, beta, y, opts_.kernel);
        halo_->finish();
        if (plan_.halo_rows() > 0) kernels::bdia_coupling(e, local_, rows, alpha, halo_->halo(), y);
#endif
    }
}

template <class MT, class VT>
bool DistributedBdia<MT, VT>::graph_safe() const
{
    return exec_->is_cuda() && (!halo_ || halo_->graph_safe()) &&
           (!reducer_ || reducer_->graph_safe());
}

template <class MT, class VT>
void DistributedBdia<MT, VT>::update_values(const Bdia<MT>& values)
{
    HEPTANE_ENSURE(values.rows == local_.rows && values.cols == local_.cols &&
                       values.block_size == local_.block_size &&
                       values.block_offsets == local_.block_offsets &&
                       values.data.size() == local_.data.size(),
                   InputError,
                   "DistributedBdia::update_values: the new block is "
                       << values.rows << " x " << values.cols << " Nc=" << values.block_size
                       << " with " << values.block_offsets.size()
                       << " block offsets, the operator's " << local_.rows << " x " << local_.cols
                       << " Nc=" << local_.block_size << " with " << local_.block_offsets.size());
    if (values.data.empty()) return;
    exec_->synchronize();  // no product still reads the old values
    copy_bytes(*values.data.exec(), values.data.data(), *exec_, local_.data.data(),
               values.data.size() * sizeof(MT));
}

template <class MT, class VT>
void DistributedBdia<MT, VT>::apply_transpose(VT, const VT*, VT, VT*) const
{
    HEPTANE_THROW(NotSupported, "DistributedBdia: A^T x over ranks is not implemented");
}

template <class MT, class VT>
std::string DistributedBdia<MT, VT>::describe() const
{
    std::ostringstream o;
    o << "bdiagh rows [" << row_begin() << ", " << row_begin() + local_.rows << ") of "
      << part_.global_rows() << " on rank " << comm_->rank() << "/" << comm_->size()
      << ", Nc=" << local_.block_size << " D=" << local_.num_block_diagonals() << ", halo "
      << plan_.lower << "+" << plan_.upper << " rows by " << exchange_name() << ", reductions by "
      << reduction_name() << " on " << exec_->name();
    return o.str();
}

template <class T>
Bdia<T> bdia_rows(const Bdia<T>& a, index_t row_begin, index_t row_end)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "bdia_rows needs a host matrix");
    HEPTANE_ENSURE(
        0 <= row_begin && row_begin <= row_end && row_end <= a.rows, InputError,
        "bdia_rows: rows [" << row_begin << ", " << row_end << ") outside [0, " << a.rows << ")");
    const index_t nc = a.block_size;
    HEPTANE_ENSURE(row_begin % nc == 0 && row_end % nc == 0, InputError,
                   "bdia_rows: rows [" << row_begin << ", " << row_end
                                       << ") do not start and end on a block of Nc = " << nc);
    Bdia<T> out;
    const index_t n = row_end - row_begin;
    out.rows = out.cols = n;
    out.block_size = nc;
    out.block_offsets = a.block_offsets;
    const index_t nd = a.num_diagonals();
    const std::size_t slots = std::size_t(nd) * std::size_t(n);
    out.data = Array<T>(cpu_executor(), slots);
    out.pattern = make_bitset(slots, false);
    const T* src = a.data.data();
    T* dst = out.data.data();
    const std::uint64_t* ps = a.pattern.data();
    std::uint64_t* pd = out.pattern.data();
    for (index_t k = 0; k < nd; ++k) {
        const std::size_t s0 = std::size_t(k) * std::size_t(a.rows) + std::size_t(row_begin);
        const std::size_t d0 = std::size_t(k) * std::size_t(n);
        std::copy(src + s0, src + s0 + n, dst + d0);
        const index_t off = a.offset(k);
        for (index_t r = 0; r < n; ++r) {
            const index_t col = r - r % nc + off;  // local column
            if (col >= 0 && col < n && test_bit(ps, s0 + std::size_t(r)))
                set_bit(pd, d0 + std::size_t(r), true);
        }
    }
    return out;
}

template class DistributedBdia<double, double>;
template class DistributedBdia<float, float>;
template class DistributedBdia<float, double>;
template Bdia<double> bdia_rows<double>(const Bdia<double>&, index_t, index_t);
template Bdia<float> bdia_rows<float>(const Bdia<float>&, index_t, index_t);

}  // namespace heptane::dist
