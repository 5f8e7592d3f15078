// MatrixEngine::build_distributed (engine.hpp): a matrix whose rows are split over MPI ranks
// becomes heptane::dist::DistributedBdia (docs/design.md section 4).
//
// Rank p owns the global rows [r0, r1) (PETSc's ownership range). Its local block is a Bdia with
// rows = cols = n = r1 - r0, block size Nc, the global block offsets d_q (the same on every
// rank) and
//
//     data[k*n + r] = A(r0 + r, (r0 + r) - (r0 + r) % Nc + d_q*Nc + s)      k = q*Nc + s
//
// also when that column belongs to another rank: those are the couplings the halo multiplies.
// The pattern marks the slots whose column is local (0 <= column < n), as bdia_zeros does for
// a whole matrix. The rows come as DistRows (engine_impl.hpp): the diagonal block (local
// columns) and the other entries, the two SeqAIJ parts of PETSc's MPIAIJ read where they are
// (the caller's DistRowsScope), or split from rows with global columns here. Each part has its
// map from entry to slot, made once per pattern: the diagonal block's by
// kernels::bdia_slots_from_csr (on a GPU, on the device: since r0 is a multiple of Nc, its
// local columns have the block offsets of the global ones), the few other entries' on the
// host. A values-only refresh scatters the new values through them straight into the
// distributed operator's block (on a GPU after an upload of the diagonal block's values as
// they are, which the preconditioner's numeric part then reads on the device too). PETSc's
// MPIBAIJ on the CPU with Nc = the block size needs neither rows nor maps: its two SeqBAIJ parts
// go block by block straight into the slots (kernels::bdia_values_from_blocks, the off-diagonal
// part's offsets through its global block columns), at the build (build_distributed_blocks)
// and at each values-only refresh (refresh_values_blocks). Every check
// is agreed over the ranks: all of them throw the same error, or none does (no rank is left
// waiting in a collective).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/bitset.hpp"
#include "core/error.hpp"
#include "distributed/coarse_space.hpp"
#include "distributed/dist_amg.hpp"
#include "distributed/dist_cpr.hpp"
#include "distributed/dist_bdia.hpp"
#include "distributed/dist_csr.hpp"
#include "distributed/reducers.hpp"
#include "distributed/symmetry.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bdia/bdia_slots.hpp"
#include "plugin/device_pool.hpp"
#include "plugin/engine_impl.hpp"
#include "plugin/pinned_upload.hpp"
#include "formats/values_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::plugin
{

using namespace detail;

namespace
{

// The first error of any rank, thrown on every rank.
void agree(const dist::Communicator &comm, const std::string &mine)
{
  int me = mine.empty() ? comm.size() : comm.rank(), first = 0;
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, comm.comm());
  if (first == comm.size()) return;
  int len = comm.rank() == first ? int(mine.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm.comm());
  std::string msg(std::size_t(len), ' ');
  if (comm.rank() == first) msg = mine;
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, comm.comm());
  HEPTANE_THROW(InputError, "rank " << first << " of " << comm.size() << ": " << msg);
}

// Rows with global columns split into DistRows (the diagonal block in local columns, the rest
// with global ones), for a caller without a DistRowsScope: copies owned here.
struct SplitCopy {
  std::vector<index_t> dptr, dcol, optr, ocol;
  std::vector<double>  dval, oval;
  DistRows             rows;
};

// The caller's DistRows (a DistRowsScope for `a`), else `a` (global columns) split into `copy`.
const DistRows &dist_rows(const CsrView &a, index_t row_begin, SplitCopy &copy)
{
  if (const DistRows *given = DistRowsScope::of(a)) return *given;
  const index_t  n = a.rows, c_end = row_begin + n;
  const offset_t nnz = a.nnz();
  copy.dptr.assign(std::size_t(n) + 1, 0);
  copy.optr.assign(std::size_t(n) + 1, 0);
  copy.dcol.clear();
  copy.ocol.clear();
  copy.dval.clear();
  copy.oval.clear();
  copy.dcol.reserve(std::size_t(nnz));
  copy.dval.reserve(std::size_t(nnz));
  for (index_t r = 0; r < n; ++r) {
    for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const index_t c = a.col_idx[k];
      if (c >= row_begin && c < c_end) {
        copy.dcol.push_back(c - row_begin);
        copy.dval.push_back(a.values[k]);
      } else {
        copy.ocol.push_back(c);
        copy.oval.push_back(a.values[k]);
      }
    }
    copy.dptr[std::size_t(r) + 1] = index_t(copy.dcol.size());
    copy.optr[std::size_t(r) + 1] = index_t(copy.ocol.size());
  }
  copy.rows.diag     = CsrView{n, copy.dptr.data(), copy.dcol.data(), copy.dval.data()};
  copy.rows.off      = CsrView{n, copy.optr.data(), copy.ocol.data(), copy.oval.data()};
  copy.rows.off_cols = nullptr;
  return copy.rows;
}

// The global column of entry k of the off-diagonal part.
inline index_t off_column(const DistRows &a, offset_t k)
{
  const index_t j = a.off.col_idx[k];
  return a.off_cols ? a.off_cols[j] : j;
}

// The distinct block offsets (global block column - global block row) of this rank's entries,
// ascending; stops once there are more than `limit`.
std::vector<index_t> local_block_offsets(const DistRows &a, index_t row_begin, index_t nc, std::size_t limit)
{
  std::vector<index_t> d;
  const auto           add = [&](index_t q) {
    const auto it = std::lower_bound(d.begin(), d.end(), q);
    if (it == d.end() || *it != q) d.insert(it, q);
    return d.size() <= limit;
  };
  for (index_t r = 0; r < a.diag.rows; ++r) {
    const index_t br   = (row_begin + r) / nc;
    index_t       last = std::numeric_limits<index_t>::min();
    // columns are sorted: a block's Nc entries come together
    for (offset_t k = a.diag.row_ptr[r]; k < a.diag.row_ptr[r + 1]; ++k) {
      const index_t q = (row_begin + a.diag.col_idx[k]) / nc - br;
      if (q != last && !add(last = q)) return d;
    }
    last = std::numeric_limits<index_t>::min();
    for (offset_t k = a.off.row_ptr[r]; k < a.off.row_ptr[r + 1]; ++k) {
      const index_t q = off_column(a, k) / nc - br;
      if (q != last && !add(last = q)) return d;
    }
  }
  return d;
}

// The same from this rank's two block CSR parts (Nc = the block size): block k of block row ib
// lies on block offset (its global block column) - (first_block_row + ib).
std::vector<index_t> local_block_offsets(const DistBlocksView &b, index_t first_block_row, std::size_t limit)
{
  std::vector<index_t> d;
  for (index_t ib = 0; ib < b.diag.block_rows; ++ib) {
    for (index_t k = b.diag.block_ptr[ib]; k < b.diag.block_ptr[ib + 1]; ++k) {
      const index_t q  = b.diag.block_col[k] - ib;
      const auto    it = std::lower_bound(d.begin(), d.end(), q);
      if (it == d.end() || *it != q) d.insert(it, q);
    }
    for (index_t k = b.off.block_ptr[ib]; k < b.off.block_ptr[ib + 1]; ++k) {
      const index_t q  = b.off_cols[b.off.block_col[k]] - (first_block_row + ib);
      const auto    it = std::lower_bound(d.begin(), d.end(), q);
      if (it == d.end() || *it != q) d.insert(it, q);
    }
    if (d.size() > limit) break;
  }
  return d;
}

// The union of every rank's offsets, ascending (the same on every rank).
std::vector<index_t> union_offsets(const dist::Communicator &comm, const std::vector<index_t> &mine)
{
  static_assert(sizeof(index_t) == sizeof(int), "index_t is MPI_INT");
  const int        count = int(mine.size());
  std::vector<int> counts(std::size_t(comm.size())), displs(std::size_t(comm.size()) + 1, 0);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.comm());
  for (int p = 0; p < comm.size(); ++p) displs[std::size_t(p) + 1] = displs[std::size_t(p)] + counts[std::size_t(p)];
  std::vector<index_t> all(std::size_t(displs.back()));
  MPI_Allgatherv(mine.data(), count, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, comm.comm());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// The distributed operator with the plugin's description (precision, as on one rank).
template <class VT>
class DescribedOperator final : public Operator<VT> {
public:
  DescribedOperator(std::shared_ptr<const Operator<VT>> op, std::string suffix) : op_(std::move(op)), suffix_(std::move(suffix)) { }
  using Operator<VT>::apply;
  index_t                         rows() const override { return op_->rows(); }
  index_t                         cols() const override { return op_->cols(); }
  std::shared_ptr<const Executor> executor() const override { return op_->executor(); }
  void                            apply(VT alpha, const VT *x, VT beta, VT *y) const override { op_->apply(alpha, x, beta, y); }
  void                            apply_transpose(VT alpha, const VT *x, VT beta, VT *y) const override { op_->apply_transpose(alpha, x, beta, y); }
  std::string                     describe() const override { return op_->describe() + suffix_; }
  const Reducer                  *reducer() const override { return op_->reducer(); }
  bool                            graph_safe() const override { return op_->graph_safe(); }
  index_t     apply_fused_dots(const VT *x, VT *y, const VT *w, int count, double *partials, std::size_t capacity, const DotsFinish *finish = nullptr) const override { return op_->apply_fused_dots(x, y, w, count, partials, capacity, finish); }
  std::size_t fused_dots_capacity(int count) const override { return op_->fused_dots_capacity(count); }
  bool        forms_step_inputs() const override { return op_->forms_step_inputs(); }
  index_t     apply_step_dots(const StepInput<VT> &input, VT *y, const VT *w, int count, double *partials, std::size_t capacity, const DotsFinish *finish = nullptr) const override
  {
    return op_->apply_step_dots(input, y, w, count, partials, capacity, finish);
  }

private:
  std::shared_ptr<const Operator<VT>> op_;
  std::string                         suffix_;
};

// The local block's stored-slot pattern: every slot whose column is local, one contiguous range
// of bits per element diagonal (bdia_zeros' pattern, here also for block offsets that reach
// past the rank's rows), on exec.
Array<std::uint64_t> local_pattern(index_t n, index_t nc, const std::vector<index_t> &offsets, const std::shared_ptr<const Executor> &exec)
{
  Array<std::uint64_t> bits = bdia_zeros_pattern(n, n, nc, offsets);
  return exec->is_cpu() ? std::move(bits) : bits.to(exec);
}

// This rank's BDIA-GH rows as a DistributedBdia (the halo exchange, its buffers and the reducer
// -- NCCL/IPC set-up -- made once per pattern). Per pattern: the entry-to-slot maps of the two
// parts. Per values-only refresh: a scatter of each part through its map into the operator's
// local block (DistributedBdia::local_values), on the executor:
//   CPU: from the caller's host arrays (PETSc's, read in place);
//   GPU: the diagonal block's values up as they are (PinnedUpload) into a device copy, which
//        the preconditioner's numeric part reads as well (device_values), scattered through
//        its slot map made on the device (32-bit where the slots fit); the off-diagonal part's
//        few values up as well, scattered through a 64-bit map made on the host.
template <class MT, class VT>
struct DistStore final : TypedStore<VT> {
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  // `given`: the rows are the caller's DistRows (the diagonal block's values on the device are
  // then those of the CsrView it refreshes with).
  DistStore(const DistRows &a, bool given, index_t row_begin, index_t nc, std::vector<index_t> offsets, std::shared_ptr<const dist::Communicator> comm, dist::RowPartition part, std::shared_ptr<const Executor> exec) :
    n_(a.diag.rows), row_begin_(row_begin), nc_(nc), nnz_diag_(a.diag.nnz()), nnz_off_(a.off.nnz()), given_(given), offsets_(std::move(offsets)), comm_(std::move(comm)), part_(std::move(part)), exec_(std::move(exec))
  {
    make_operator([&](Bdia<MT> &block) {
      std::string err = make_slot_maps(a);
      if (!err.empty()) return err;
      const auto t0 = clock_type::now();
      scatter(a, block.data.data());
      exec_->synchronize();
      values_ms_ = ms_since(t0);
      return err;
    });
  }
  // CPU, Nc = the block size: built from this rank's two block CSR parts, every block straight
  // into its slots (no scalar CSR, no slot map: refresh makes those at its first call)
  DistStore(const DistBlocksView &b, index_t row_begin, index_t nc, std::vector<index_t> offsets, std::shared_ptr<const dist::Communicator> comm, dist::RowPartition part, std::shared_ptr<const Executor> exec) :
    n_(b.diag.rows()), row_begin_(row_begin), nc_(nc), nnz_diag_(b.diag.nnz()), nnz_off_(b.off.nnz()), given_(true), offsets_(std::move(offsets)), comm_(std::move(comm)), part_(std::move(part)), exec_(std::move(exec))
  {
    make_operator([&](Bdia<MT> &block) {
      HEPTANE_ENSURE(exec_->is_cpu() && b.diag.block_size == nc_ && b.off.block_size == nc_, InputError, "heptane: a distributed operator from block CSR parts needs the CPU and Nc = the block size");
      const auto        t0  = clock_type::now();
      const std::string err = put_blocks(b, block.data.data(), "");
      values_ms_            = ms_since(t0);
      return err;
    });
    blocks_       = true;
    maps_missing_ = true;
  }
  // The local block (its pattern, values 0) filled by fill(block) -- an error message or "" --,
  // then the distributed operator on it. Every step that can fail on one rank alone comes
  // before the agreement, so that no rank enters the operator's collective set-up alone (an
  // exception there, a device allocation that fails say, becomes the InputError agree throws
  // on every rank, its message kept).
  template <class Fill>
  void make_operator(Fill fill)
  {
    std::string err;
    Bdia<MT>    block;
    try {
      block.rows = block.cols = n_;
      block.block_size        = nc_;
      block.block_offsets     = offsets_;
      block.pattern           = local_pattern(n_, nc_, offsets_, exec_);
      block.data              = Array<MT>(exec_, slots()); // zeros: absent entries
      if (!exec_->is_cpu()) zero_device_bytes(*exec_, block.data.data(), block.data.bytes());
      err = fill(block);
    } catch (const std::exception &e) {
      err = e.what();
    }
    agree(*comm_, err);
    dist_     = std::make_shared<dist::DistributedBdia<MT, VT>>(comm_, part_, std::move(block), exec_);
    this->op_ = std::make_shared<DescribedOperator<VT>>(dist_, std::string(" (") + precision_name<MT, VT>() + ")");
  }
  void refresh(const CsrView &view) override
  {
    SplitCopy          copy;
    std::ostringstream what;
    try {
      const DistRows &a = dist_rows(view, row_begin_, copy);
      if (a.diag.rows != n_ || a.off.rows != n_ || a.diag.nnz() != nnz_diag_ || a.off.nnz() != nnz_off_)
        what << "values-only refresh: " << a.diag.rows << " rows with " << a.diag.nnz() << " + " << a.off.nnz() << " entries (diagonal block + the others), the pattern had " << n_ << " rows with " << nnz_diag_ << " + " << nnz_off_;
      else if (maps_missing_) { // built from blocks: the slot maps at the first refresh from rows
        what << make_slot_maps(a);
        maps_missing_ = !what.str().empty();
      }
      if (what.str().empty()) scatter(a, dist_->local_values()); // the same slots as before: the others stay 0
    } catch (const std::exception &e) {
      what << e.what();
    }
    agree(*comm_, what.str());
    blocks_ = false;
  }
  // CPU, Nc = the block size: both block CSR parts straight into the local block's slots
  // (bdia_values_from_blocks; the off-diagonal part's offsets through its global block
  // columns): no scalar copy, no map. The choice and any error are agreed over the ranks.
  bool refresh_dist_blocks(const DistBlocksView &b) override
  {
    int ok = exec_->is_cpu() && b.diag.block_size == nc_ && b.off.block_size == nc_ && b.diag.block_ptr && b.off.block_ptr && (b.off.nnz() == 0 || b.off_cols), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm_->comm());
    if (!all) return false;
    std::ostringstream what;
    try {
      if (b.diag.rows() != n_ || b.off.rows() != n_ || b.diag.nnz() != nnz_diag_ || b.off.nnz() != nnz_off_)
        what << "values-only refresh: " << b.diag.rows() << " rows with " << b.diag.nnz() << " + " << b.off.nnz() << " entries (diagonal blocks + the others), the pattern had " << n_ << " rows with " << nnz_diag_ << " + " << nnz_off_;
      else what << put_blocks(b, dist_->local_values(), " (values-only refresh: the pattern is not the build's)");
    } catch (const std::exception &e) {
      what << e.what();
    }
    agree(*comm_, what.str());
    blocks_ = true;
    return true;
  }
  // Both block CSR parts (Nc = the block size) into dst, the local block's values on the host;
  // an error message naming the first block off the offsets (with `where` after it), or "".
  std::string put_blocks(const DistBlocksView &b, MT *dst, const char *where) const
  {
    const index_t  nq  = index_t(offsets_.size());
    const auto    &e   = *cpu_executor();
    const offset_t bad = kernels::bdia_values_from_blocks(e, b.diag.block_rows, nc_, b.diag.block_ptr, b.diag.block_col, b.diag.values, offsets_.data(), nq, dst);
    const offset_t bo  = bad >= 0 ? -1 : kernels::bdia_values_from_blocks(e, b.off.block_rows, nc_, b.off.block_ptr, b.off.block_col, b.off.values, offsets_.data(), nq, dst, b.off_cols, row_begin_ / nc_);
    const auto     at  = [](const BlockCsrView &p, offset_t k) { return index_t(std::upper_bound(p.block_ptr, p.block_ptr + p.block_rows + 1, index_t(k)) - p.block_ptr) - 1; };
    if (bad >= 0) return off_offsets(at(b.diag, bad) * nc_, row_begin_ + b.diag.block_col[bad] * nc_) + where;
    if (bo >= 0) return off_offsets(at(b.off, bo) * nc_, b.off_cols[b.off.block_col[bo]] * nc_) + where;
    return "";
  }
  std::string note() const override
  {
    std::ostringstream o;
    if (exec_->is_cpu() && blocks_) {
      o << "this rank's two block CSR parts (PETSc's MPIBAIJ: the diagonal blocks' " << nnz_diag_ << " entries and the " << nnz_off_ << " others) read straight into the distributed operator's local block on the host (Nc = the block size, the offset found once per block: no scalar copy, no map)";
    } else if (exec_->is_cpu()) {
      o << "values scattered on the host, through entry-to-slot maps made once per pattern, from the " << nnz_diag_ << " entries of the diagonal block and the " << nnz_off_ << " others into the distributed operator's local block";
    } else {
      o << "the diagonal block's " << nnz_diag_ << " values up as they are (pinned, chunked) into a device copy and scattered on the device through a slot map made there (" << (slot32_.empty() ? "64" : "32") << "-bit), the " << nnz_off_ << " other entries (halo couplings) through a map made on the host, into the distributed operator's local block on the device; at the build the slot maps took " << slot_ms_ << " ms, the values " << values_ms_ << " ms";
    }
    o << " (no communication, halo buffers kept)";
    if (!given_ && !blocks_) o << "; rows split on the host first";
    return o.str();
  }
  const double *device_values() const override { return given_ && !diag_values_.empty() ? diag_values_.data() : nullptr; }

  std::size_t slots() const { return std::size_t(offsets_.size()) * std::size_t(nc_) * std::size_t(n_); }
  // slot of (local row r, global column c), npos when c is on none of the block offsets
  std::size_t slot_of(index_t r, index_t c) const
  {
    const index_t d  = c / nc_ - (row_begin_ + r) / nc_;
    const auto    it = std::lower_bound(offsets_.begin(), offsets_.end(), d);
    if (it == offsets_.end() || *it != d) return npos;
    const std::size_t k = std::size_t(it - offsets_.begin()) * std::size_t(nc_) + std::size_t(c % nc_);
    return k * std::size_t(n_) + std::size_t(r);
  }
  // (row, global column) of an entry that lies on none of the block offsets, for the message
  std::string off_offsets(index_t r, index_t c) const
  {
    std::ostringstream o;
    o << "entry (" << row_begin_ + r << ", " << c << ") lies on block offset " << c / nc_ - (row_begin_ + r) / nc_ << ", not one of the block offsets " << offsets_text(offsets_) << " the operator was built with";
    return o.str();
  }
  // The entry-to-slot maps of both parts; an error message, or "".
  std::string make_slot_maps(const DistRows &a)
  {
    // the few other entries (halo couplings): on the host, with their global columns
    std::vector<std::int64_t> off_slot(static_cast<std::size_t>(nnz_off_));
    for (index_t r = 0; r < n_; ++r)
      for (offset_t k = a.off.row_ptr[r]; k < a.off.row_ptr[r + 1]; ++k) {
        const index_t     c = off_column(a, k);
        const std::size_t s = slot_of(r, c);
        if (s == npos) return off_offsets(r, c);
        off_slot[std::size_t(k)] = std::int64_t(s);
      }
    const index_t nq  = index_t(offsets_.size());
    offset_t      bad = -1;
    if (exec_->is_cpu()) {
      off_slot_  = Array<std::int64_t>(std::move(off_slot));
      diag_slot_ = Array<std::int64_t>(exec_, std::size_t(nnz_diag_));
      bad        = kernels::bdia_slots_from_csr(*cpu_executor(), n_, nc_, a.diag.row_ptr, a.diag.col_idx, offsets_.data(), nq, diag_slot_.data());
    } else {
      const auto t0 = clock_type::now();
      upload_       = std::make_unique<PinnedUpload>(exec_, sizeof(double) * std::size_t(std::max(nnz_diag_, nnz_off_)));
      diag_values_  = Array<double>(exec_, std::size_t(nnz_diag_));
      off_values_   = Array<double>(exec_, std::size_t(nnz_off_));
      off_slot_     = Array<std::int64_t>(exec_, off_slot.size());
      upload_->upload(off_slot.data(), off_slot_.data(), off_slot_.bytes());
      if (nq <= kernels::bdia_slots_max_offsets) {
        // the diagonal block's pattern goes up and its slot map is computed there: no host pass
        // over its entries, no host map
        Array<index_t> ptr(exec_, std::size_t(n_) + 1), col(exec_, std::size_t(nnz_diag_));
        upload_->upload(a.diag.row_ptr, ptr.data(), ptr.bytes());
        upload_->upload(a.diag.col_idx, col.data(), col.bytes());
        dispatch_executor(*exec_, [&](const auto &e) {
          if (double(slots()) < 2147483648.0) { // 32-bit slots: half the map's traffic per refresh
            slot32_ = Array<std::int32_t>(exec_, std::size_t(nnz_diag_));
            bad     = kernels::bdia_slots_from_csr(e, n_, nc_, ptr.data(), col.data(), offsets_.data(), nq, slot32_.data());
          } else {
            diag_slot_ = Array<std::int64_t>(exec_, std::size_t(nnz_diag_));
            bad        = kernels::bdia_slots_from_csr(e, n_, nc_, ptr.data(), col.data(), offsets_.data(), nq, diag_slot_.data());
          }
        });
      } else { // more block offsets than the device kernel takes: the map is made on the host
        std::vector<std::int64_t> slot(static_cast<std::size_t>(nnz_diag_));
        bad        = kernels::bdia_slots_from_csr(*cpu_executor(), n_, nc_, a.diag.row_ptr, a.diag.col_idx, offsets_.data(), nq, slot.data());
        diag_slot_ = Array<std::int64_t>(exec_, slot.size());
        upload_->upload(slot.data(), diag_slot_.data(), diag_slot_.bytes());
      }
      exec_->synchronize(); // the host maps above are freed on return
      slot_ms_ = ms_since(t0);
    }
    if (bad < 0) return "";
    const index_t r = index_t(std::upper_bound(a.diag.row_ptr, a.diag.row_ptr + n_ + 1, index_t(bad)) - a.diag.row_ptr) - 1;
    return off_offsets(r, row_begin_ + a.diag.col_idx[bad]);
  }
  // Both parts' values through their maps into dst (the local block's values, on the executor).
  void scatter(const DistRows &a, MT *dst)
  {
    if (exec_->is_cpu()) {
      const auto &e = *cpu_executor();
      kernels::scatter_values(e, nnz_diag_, diag_slot_.data(), a.diag.values, dst);
      kernels::scatter_values(e, nnz_off_, off_slot_.data(), a.off.values, dst);
      return;
    }
    upload_->upload(a.diag.values, diag_values_.data(), diag_values_.bytes());
    upload_->upload(a.off.values, off_values_.data(), off_values_.bytes());
    dispatch_executor(*exec_, [&](const auto &e) {
      if (slot32_.empty()) kernels::scatter_values(e, nnz_diag_, diag_slot_.data(), diag_values_.data(), dst);
      else kernels::scatter_values(e, nnz_diag_, slot32_.data(), diag_values_.data(), dst);
      kernels::scatter_values(e, nnz_off_, off_slot_.data(), off_values_.data(), dst);
    });
  }

  index_t                                        n_, row_begin_, nc_;
  offset_t                                       nnz_diag_, nnz_off_;
  bool                                           given_;
  std::vector<index_t>                           offsets_;
  std::shared_ptr<const dist::Communicator>      comm_;
  dist::RowPartition                             part_;
  std::shared_ptr<const Executor>                exec_;
  Array<std::int64_t>                            diag_slot_;            // the diagonal block's slot map (64-bit), or
  Array<std::int32_t>                            slot32_;               // GPU: the same, 32-bit
  Array<std::int64_t>                            off_slot_;             // the other entries' slot map
  Array<double>                                  diag_values_;          // GPU: the diagonal block's values of the last build/refresh
  Array<double>                                  off_values_;           // GPU: the other entries' values
  std::unique_ptr<PinnedUpload>                  upload_;               // GPU
  double                                         slot_ms_      = 0;     // GPU, build: pattern up + slot maps
  double                                         values_ms_    = 0;     // build: values (up and) scattered
  bool                                           blocks_       = false; // the build or last refresh read block CSR parts
  bool                                           maps_missing_ = false; // built from blocks: no slot maps yet
  std::shared_ptr<dist::DistributedBdia<MT, VT>> dist_;
};

} // namespace

namespace
{
// This rank's device and executor: on a GPU the GPU of the rank's node-local rank unless
// cfg.device names one; the engine's executor again when the device did not change. "auto"
// with the global stored entries known (nnz >= 0, the same on every rank): the model of
// resolve_device on the entries per rank, so that every rank makes the same choice.
std::pair<std::string, std::shared_ptr<const Executor>> rank_device(MatrixEngine::Impl &m, const dist::Communicator &C, const MatrixConfig &cfg, long long nnz = -1)
{
  std::string device = resolve_device(cfg.device, nnz < 0 ? -1 : nnz / C.size(), cpu_executor()->threads(), &m.device_why);
  if (!m.device_why.empty() && nnz >= 0) m.device_why += ", per rank of " + std::to_string(C.size());
  if (device == "cuda") device = "cuda:" + std::to_string(std::max(0, C.local_device()));
  return {device, m.exec && device == m.device ? m.exec : make_executor(device)};
}
} // namespace

namespace
{
// The communicator of the engine: one duplicate of the caller's for its life.
const dist::Communicator &engine_comm(MatrixEngine::Impl &m, MPI_Comm comm)
{
  if (!m.comm || m.comm_src != comm) {
    m.comm     = std::make_shared<const dist::Communicator>(comm);
    m.comm_src = comm;
  }
  return *m.comm;
}

// What build_distributed and build_distributed_blocks share, collective: the checks (agreed over
// the ranks), the block offsets (local_offsets(nc, limit): this rank's, ascending), the
// partition and the device; then make(offsets, part, exec) makes the store. cpu_only: return
// false, changing nothing, where the device resolves to a GPU (the same on every rank).
bool build_dist(MatrixEngine::Impl &m, index_t n, index_t off_rows, long long nnz_local, index_t row_begin, MPI_Comm comm, const GridHint &hint, const MatrixConfig &cfg, const std::function<std::vector<index_t>(index_t, std::size_t)> &local_offsets, const std::function<std::unique_ptr<StoreBase>(const std::vector<index_t> &, const dist::RowPartition &, const std::shared_ptr<const Executor> &)> &make, bool cpu_only)
{
  const auto t0 = clock_type::now();
  HEPTANE_ENSURE(cfg.format == "auto" || cfg.format == "bdiagh", NotSupported, "-heptane_format " << cfg.format << ": on several MPI ranks heptane's operator is the distributed BDIA-GH (auto or bdiagh) or the distributed CSR (csr); the other formats run on one rank");
  const dist::Communicator &C  = engine_comm(m, comm);
  const index_t             nc = hint.block_size > 0 ? hint.block_size : 1;
  std::ostringstream        err;

  // whole blocks of Nc on every rank
  if (off_rows != n) err << "its diagonal block has " << n << " rows, its other entries " << off_rows;
  else if (row_begin % nc != 0 || n % nc != 0)
    err << "it owns rows [" << row_begin << ", " << row_begin + n << "), not whole blocks of Nc = " << nc << " (" << (hint.source.empty() ? std::string("block size") : hint.source) << "); heptane's distributed operator needs every rank's rows to start on a block: give the matrix block size Nc (MatSetBlockSize, or a DMDA with dof = Nc) so that PETSc splits the rows on blocks";
  agree(C, err.str());
  const dist::RowPartition part = dist::partition_from_local(C, n);
  const index_t            N    = part.global_rows();

  // the block offsets: the grid's seven, or the union of the ranks' ones
  const std::size_t          limit = 4096;
  const std::vector<index_t> found = union_offsets(C, local_offsets(nc, limit));
  std::vector<index_t>       offsets;
  std::array<index_t, 3>     grid{0, 0, 0};
  std::ostringstream         note;
  if (hint.has_grid()) {
    grid                 = hint.grid;
    const offset_t cells = offset_t(grid[0]) * grid[1] * grid[2];
    HEPTANE_ENSURE(cells * nc == offset_t(N), InputError, "the grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " with Nc = " << nc << " (" << hint.source << ") has " << cells * nc << " unknowns, the matrix " << N << " rows");
    if (hint.star_stencil) {
      offsets = star_offsets(grid);
      for (index_t d : found)
        HEPTANE_ENSURE(std::binary_search(offsets.begin(), offsets.end(), d), InputError,
                       "the matrix has entries at block offset " << d << ", which is not one of the " << offsets.size() << " of the " << grid[0] << "x" << grid[1] << "x" << grid[2] << " grid " << offsets_text(offsets) << " (" << hint.source << ", all offsets found: " << offsets_text(found) << "): entries off the grid's star stencil (a well's long-range coupling, say), or a global numbering over the " << C.size() << " ranks that is not the grid's natural order (x fastest; heptane renumbers a DMDA split in x or y, not a plain matrix). BDIA-GH cannot hold them: "
                                                                 << (hint.source == "DMDA" ? "-heptane_format auto (the default) runs such a matrix on heptane's distributed CSR operator" : "leave out " + hint.source + " to have the structure detected (heptane's distributed CSR operator where it is no grid's)"));
    } else {
      offsets = found;
    }
    note << "grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " Nc=" << nc << " from " << hint.source << " (" << (hint.star_stencil ? "star stencil" : "offsets from the pattern") << ")";
  } else {
    offsets = found;
    note << "Nc=" << nc << " (" << (hint.source.empty() ? std::string("default") : hint.source) << "), block offsets of the pattern over the ranks " << offsets_text(offsets);
  }
  // BDIA-GH stores D·Nc·N slots: far more than the entries means the numbering is not GH
  long long nnz = 0;
  MPI_Allreduce(&nnz_local, &nnz, 1, MPI_LONG_LONG, MPI_SUM, C.comm());
  const double slots = double(offsets.size()) * double(nc) * double(N);
  HEPTANE_ENSURE(offsets.size() <= limit && slots <= 4.0 * double(nnz) + double(N), InputError,
                 "BDIA-GH would store " << slots << " values for " << nnz << " entries (" << offsets.size() << " block offsets " << offsets_text(offsets) << ", Nc = " << nc
                                        << "): the global numbering over the ranks is not a GH (grid) one. heptane's distributed operator needs every rank to own whole z-planes of the grid in natural order (a DMDA split along z only: "
                                           "-da_processors_x 1 -da_processors_y 1)");
  note << "; " << C.size() << " ranks, rows " << part.describe();

  std::string why           = m.device_why;
  const auto [device, exec] = rank_device(m, C, cfg, nnz);
  if (cpu_only && !exec->is_cpu()) {
    m.device_why = why; // nothing changed
    return false;
  }
  m.store.reset(); // free the old operator (device memory) before building the new one
  m.store = make(offsets, part, exec);
  exec->synchronize();
  m.cfg                    = cfg;
  m.device                 = device;
  m.exec                   = exec;
  m.format                 = Format::bdia;
  m.rows                   = n;
  m.nc                     = nc;
  m.offsets                = std::move(offsets);
  m.grid                   = grid;
  m.note                   = note.str();
  m.distributed            = true;
  m.row_begin              = row_begin;
  m.global_rows            = N;
  m.ranks                  = C.size();
  m.timings.last_detect_ms = 0;
  m.timings.last_build_ms  = ms_since(t0);
  ++m.timings.builds;
  return true;
}

// A DistStore of the configured precision from the constructor's arguments.
template <class... Args>
std::unique_ptr<StoreBase> dist_store(Precision p, const Args &...args)
{
  switch (p) {
  case Precision::double_:
    return std::make_unique<DistStore<double, double>>(args...);
  case Precision::single:
    return std::make_unique<DistStore<float, float>>(args...);
  case Precision::mixed:
    return std::make_unique<DistStore<float, double>>(args...);
  }
  return nullptr;
}
} // namespace

void MatrixEngine::build_distributed(const CsrView &a, index_t row_begin, MPI_Comm comm, const GridHint &hint, const MatrixConfig &cfg)
{
  Impl &m = *impl_;
  // the caller's two parts where they are, or `a` (global columns) split here
  SplitCopy       copy;
  const bool      given = DistRowsScope::of(a) != nullptr;
  const DistRows &rows  = dist_rows(a, row_begin, copy);
  build_dist(
    m, rows.diag.rows, rows.off.rows, (long long)(rows.diag.nnz() + rows.off.nnz()), row_begin, comm, hint, cfg, [&](index_t nc, std::size_t limit) { return local_block_offsets(rows, row_begin, nc, limit); },
    [&](const std::vector<index_t> &offsets, const dist::RowPartition &part, const std::shared_ptr<const Executor> &exec) {
      const index_t nc = hint.block_size > 0 ? hint.block_size : 1;
      return dist_store(cfg.precision, rows, given, row_begin, nc, offsets, m.comm, part, exec);
    },
    false);
  m.nnz = a.nnz(); // what refresh_values is given: the diagonal block's with a DistRowsScope
}

bool MatrixEngine::build_distributed_blocks(const DistBlocksView &b, index_t row_begin, MPI_Comm comm, const GridHint &hint, const MatrixConfig &cfg)
{
  Impl         &m  = *impl_;
  const index_t nc = hint.block_size > 0 ? hint.block_size : 1;
  // the same answer on every rank: Nc = the block size and the parts lent
  int ok = b.diag.block_size == nc && b.off.block_size == nc && b.diag.block_ptr && b.off.block_ptr && (b.off.block_ptr[b.off.block_rows] == 0 || b.off_cols), all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
  if (!all) return false;
  const bool built = build_dist(
    m, b.diag.rows(), b.off.rows(), (long long)(b.diag.nnz() + b.off.nnz()), row_begin, comm, hint, cfg, [&](index_t, std::size_t limit) { return local_block_offsets(b, row_begin / nc, limit); },
    [&](const std::vector<index_t> &offsets, const dist::RowPartition &part, const std::shared_ptr<const Executor> &exec) { return dist_store(cfg.precision, b, row_begin, nc, offsets, m.comm, part, exec); }, true);
  if (built) m.nnz = b.diag.nnz();
  return built;
}

namespace
{
// What a distributed CSR build records (build_distributed_csr): the store, device, sizes (nnz: the diagonal block's, what
// refresh_values is given with a DistRowsScope), no grid, the note and the timing.
void record_distributed_csr(MatrixEngine::Impl &m, std::unique_ptr<StoreBase> store, const std::string &device, std::shared_ptr<const Executor> exec, const MatrixConfig &cfg, const CsrView &a, index_t row_begin, index_t nc, const std::string &what, clock_type::time_point t0)
{
  const dist::RowPartition part = dist::partition_from_local(*m.comm, a.rows);
  m.store                       = std::move(store);
  m.cfg                         = cfg;
  m.device                      = device;
  m.exec                        = std::move(exec);
  m.format                      = Format::csr;
  m.rows                        = a.rows;
  m.nnz                         = a.nnz();
  m.nc                          = nc > 0 ? nc : 1;
  m.offsets.clear();
  m.grid                   = {0, 0, 0};
  m.note                   = what + "; " + std::to_string(m.comm->size()) + " ranks, rows " + part.describe();
  m.distributed            = true;
  m.row_begin              = row_begin;
  m.global_rows            = part.global_rows();
  m.ranks                  = m.comm->size();
  m.csr_values             = nullptr;
  m.timings.last_detect_ms = 0;
  m.timings.last_build_ms  = ms_since(t0);
  ++m.timings.builds;
}

dist::SplitRows split_of(const DistRows &r)
{
  return dist::SplitRows{r.diag, r.off, r.off_cols};
}

// heptane's general row-split operator (build_distributed_csr): values copied at each refresh.
template <class MT, class VT>
struct DistCsrStore final : detail::TypedStore<VT> {
  DistCsrStore(const std::shared_ptr<const dist::Communicator> &comm, const DistRows &rows, index_t row_begin, const std::shared_ptr<const Executor> &exec, bool fp64_too) : row_begin_(row_begin)
  {
    op_csr_   = std::make_shared<dist::DistributedCsr<MT, VT>>(comm, split_of(rows), exec);
    this->op_ = op_csr_;
    if (fp64_too) op64_ = std::make_shared<dist::DistributedCsr<double, double>>(comm, split_of(rows), exec);
  }
  void refresh(const CsrView &a) override
  {
    SplitCopy       copy;
    const DistRows &rows = dist_rows(a, row_begin_, copy);
    op_csr_->update_values(split_of(rows));
    if (op64_) op64_->update_values(split_of(rows));
  }
  std::shared_ptr<const Operator<double>> op_fp64() const override { return op64_; }
  std::string                             note() const override { return "values copied into the distributed CSR operator's arrays in their order (the pattern kept)"; }

  index_t                                               row_begin_;
  std::shared_ptr<dist::DistributedCsr<MT, VT>>         op_csr_;
  std::shared_ptr<dist::DistributedCsr<double, double>> op64_;
};
} // namespace

void MatrixEngine::build_distributed_csr(const CsrView &a, index_t row_begin, index_t nc, MPI_Comm comm, const MatrixConfig &cfg)
{
  const auto                t0 = clock_type::now();
  Impl                     &m  = *impl_;
  const dist::Communicator &C  = engine_comm(m, comm);
  const auto [device, exec]    = rank_device(m, C, cfg);
  SplitCopy                  copy;
  const DistRows            &rows = dist_rows(a, row_begin, copy);
  std::unique_ptr<StoreBase> store;
  if (cfg.precision == Precision::single) store = std::make_unique<DistCsrStore<float, float>>(m.comm, rows, row_begin, exec, false);
  else if (cfg.precision == Precision::mixed) store = std::make_unique<DistCsrStore<float, double>>(m.comm, rows, row_begin, exec, true);
  else store = std::make_unique<DistCsrStore<double, double>>(m.comm, rows, row_begin, exec, false);
  const std::string what = "heptane's distributed CSR operator (" + (cfg.precision == Precision::single ? store->op_single()->describe() : store->op_double()->describe()) + ")";
  record_distributed_csr(m, std::move(store), device, exec, cfg, a, row_begin, nc, what, t0);
}

SymmetryCheck check_symmetry_ranks(MPI_Comm comm, const CsrView &diag, const CsrView &off, const index_t *off_cols, index_t row_begin, double tol)
{
  return dist::check_symmetry(comm, dist::SplitRows{diag, off, off_cols}, row_begin, tol);
}

namespace detail
{

namespace
{

template <class VT>
class CoarseHolder final : public GlobalCoarse<VT> {
public:
  explicit CoarseHolder(std::shared_ptr<dist::CoarseSpace<VT>> q) : q_(std::move(q)) { }
  std::shared_ptr<const Operator<VT>> op() const override { return q_; }
  void                                update(const CsrView &diag, const CsrView &off, const index_t *off_cols) override { q_->update_values(dist::SplitRows{diag, off, off_cols}); }
  void                                set_local(std::shared_ptr<const Operator<VT>> local) override { q_->set_local(std::move(local)); }

private:
  std::shared_ptr<dist::CoarseSpace<VT>> q_;
};

/// -heptane_amg_global: the AMG (or CPR) over the ranks in the rank preconditioner's place.
template <class VT, class M>
class HierarchyHolder final : public GlobalCoarse<VT> {
public:
  explicit HierarchyHolder(std::shared_ptr<M> m) : m_(std::move(m)) { }
  std::shared_ptr<const Operator<VT>> op() const override { return m_; }
  void                                update(const CsrView &diag, const CsrView &off, const index_t *off_cols) override { m_->update_values(dist::SplitRows{diag, off, off_cols}); }
  void                                set_local(std::shared_ptr<const Operator<VT>>) override { }

private:
  std::shared_ptr<M> m_;
};

} // namespace

template <class VT>
std::unique_ptr<GlobalCoarse<VT>> make_global_coarse(MPI_Comm comm, std::shared_ptr<const Operator<VT>> a, std::shared_ptr<const Operator<VT>> local, const CsrView &diag, const CsrView &off, const index_t *off_cols, index_t nc, const GlobalCoarseOptions &g)
{
  if (g.hierarchy) {
    int n = diag.rows, begin = 0;
    MPI_Exscan(&n, &begin, 1, MPI_INT, MPI_SUM, comm);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) begin = 0; // MPI_Exscan leaves rank 0's result undefined
    if (g.cpr && nc > 1) return std::make_unique<HierarchyHolder<VT, dist::DistCpr<VT>>>(std::make_shared<dist::DistCpr<VT>>(comm, std::move(a), dist::SplitRows{diag, off, off_cols}, (index_t)begin, nc, g.cpr_opts));
    return std::make_unique<HierarchyHolder<VT, dist::DistAmg<VT>>>(std::make_shared<dist::DistAmg<VT>>(comm, a->executor(), dist::SplitRows{diag, off, off_cols}, (index_t)begin, nc, g.amg));
  }
  dist::CoarseOptions o;
  o.aggregates  = g.aggregates;
  o.symmetric   = g.symmetric;
  o.singular    = g.singular;
  o.solve       = g.solve == 1 ? dist::CoarseOptions::Solve::dense : g.solve == 2 ? dist::CoarseOptions::Solve::amg : dist::CoarseOptions::Solve::automatic;
  o.cycles      = g.cycles;
  o.aggregation = g.aggregation == 1 ? dist::CoarseOptions::Aggregation::strength : dist::CoarseOptions::Aggregation::bfs;
  return std::make_unique<CoarseHolder<VT>>(std::make_shared<dist::CoarseSpace<VT>>(comm, std::move(a), std::move(local), dist::SplitRows{diag, off, off_cols}, nc, o));
}
template std::unique_ptr<GlobalCoarse<double>> make_global_coarse<double>(MPI_Comm, std::shared_ptr<const Operator<double>>, std::shared_ptr<const Operator<double>>, const CsrView &, const CsrView &, const index_t *, index_t, const GlobalCoarseOptions &);
template std::unique_ptr<GlobalCoarse<float>> make_global_coarse<float>(MPI_Comm, std::shared_ptr<const Operator<float>>, std::shared_ptr<const Operator<float>>, const CsrView &, const CsrView &, const index_t *, index_t, const GlobalCoarseOptions &);

} // namespace detail

} // namespace heptane::plugin
