// MatrixEngine::build_distributed (engine.hpp): a matrix whose rows are split over MPI ranks
// becomes heptane::dist::DistributedBdia (DESIGN.md section 4).
//
// Rank p owns the global rows [r0, r1) (PETSc's ownership range) and gives them with global
// column indices. Its local block is a Bdia with rows = cols = n = r1 - r0, block size Nc, the
// global block offsets d_q (the same on every rank) and
//
//     data[k*n + r] = A(r0 + r, (r0 + r) - (r0 + r) % Nc + d_q*Nc + s)      k = q*Nc + s
//
// also when that column belongs to another rank: those are the couplings the halo multiplies.
// The pattern marks only the local columns, the convention of generate_hepta_bdia_rows
// (generators/hepta.cpp) and bdia_rows (distributed/dist_bdia.cpp), so to_coo() of the block
// is the rank's diagonal block. Every check is agreed over the ranks: all of them throw the
// same error, or none does (no rank is left waiting in a collective).
#include <cstdint>
#include <limits>

#include "core/bitset.hpp"
#include "core/error.hpp"
#include "distributed/dist_bdia.hpp"
#include "formats/bdia/bdia.hpp"
#include "plugin/engine_impl.hpp"

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

// The distinct block offsets (global block column - global block row) of this rank's entries,
// ascending; stops once there are more than `limit`.
std::vector<index_t> local_block_offsets(const CsrView &a, index_t row_begin, index_t nc, std::size_t limit)
{
  std::vector<index_t> d;
  for (index_t r = 0; r < a.rows; ++r) {
    const index_t br   = (row_begin + r) / nc;
    index_t       last = std::numeric_limits<index_t>::min();
    for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const index_t q = a.col_idx[k] / nc - br;
      if (q == last) continue; // columns are sorted: a block's Nc entries come together
      last          = q;
      const auto it = std::lower_bound(d.begin(), d.end(), q);
      if (it == d.end() || *it != q) {
        d.insert(it, q);
        if (d.size() > limit) return d;
      }
    }
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

private:
  std::shared_ptr<const Operator<VT>> op_;
  std::string                         suffix_;
};

// This rank's BDIA-GH rows as a DistributedBdia. A values-only refresh scatters the new values
// into a host block of the same structure and hands them to DistributedBdia::update_values:
// the halo exchange, its buffers and the reducer (NCCL/IPC set-up) are made once.
template <class MT, class VT>
struct DistStore final : TypedStore<VT> {
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  DistStore(const CsrView &a, index_t row_begin, index_t nc, std::vector<index_t> offsets, std::shared_ptr<const dist::Communicator> comm, dist::RowPartition part, std::shared_ptr<const Executor> exec) :
    n_(a.rows), row_begin_(row_begin), nc_(nc), offsets_(std::move(offsets)), comm_(std::move(comm)), part_(std::move(part)), exec_(std::move(exec))
  {
    // the stored entries: this rank's entries in local columns (its diagonal block)
    pattern_             = make_bitset(slots(), false);
    std::uint64_t *bits  = pattern_.data();
    const index_t  c_end = row_begin_ + n_;
    for (index_t r = 0; r < n_; ++r)
      for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        const index_t c = a.col_idx[k];
        if (c < row_begin_ || c >= c_end) continue;
        const std::size_t s = slot_of(r, c);
        if (s != npos) set_bit(bits, s, true);
      }
    make(a);
  }
  void        refresh(const CsrView &a) override { make(a); }
  std::string note() const override { return "values scattered into the local BDIA-GH block per rank and copied into the distributed operator (DistributedBdia::update_values: no communication, halo buffers kept)"; }

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
  void make(const CsrView &a)
  {
    Bdia<MT> b;
    b.rows = b.cols = n_;
    b.block_size    = nc_;
    b.block_offsets = offsets_;
    b.data          = Array<MT>(cpu_executor(), slots()); // zeros: absent entries
    MT *data        = b.data.data();
    int off         = 0;
#pragma omp parallel for schedule(static) reduction(| : off) if (n_ > 32768)
    for (index_t r = 0; r < n_; ++r)
      for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        const std::size_t s = slot_of(r, a.col_idx[k]);
        if (s == npos) off = 1;
        else data[s] = MT(a.values[k]);
      }
    agree(*comm_, off ? "an entry is not on the block offsets the operator was built with (a new pattern under the old nonzero state?)" : "");
    b.pattern = pattern_;
    if (dist_) { // same structure: new values only
      dist_->update_values(b);
      return;
    }
    dist_     = std::make_shared<dist::DistributedBdia<MT, VT>>(comm_, part_, std::move(b), exec_);
    this->op_ = std::make_shared<DescribedOperator<VT>>(dist_, std::string(" (") + precision_name<MT, VT>() + ")");
  }

  index_t                                        n_, row_begin_, nc_;
  std::vector<index_t>                           offsets_;
  std::shared_ptr<const dist::Communicator>      comm_;
  dist::RowPartition                             part_;
  std::shared_ptr<const Executor>                exec_;
  Array<std::uint64_t>                           pattern_;
  std::shared_ptr<dist::DistributedBdia<MT, VT>> dist_;
};

} // namespace

void MatrixEngine::build_distributed(const CsrView &a, index_t row_begin, MPI_Comm comm, const GridHint &hint, const MatrixConfig &cfg)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  m.store.reset(); // free the old operator (device memory) before building the new one
  HEPTANE_ENSURE(cfg.format == "auto" || cfg.format == "bdiagh", NotSupported, "-heptane_format " << cfg.format << ": on several MPI ranks heptane's operator is the distributed BDIA-GH (auto or bdiagh); the other formats run on one rank");
  // one duplicate of the caller's communicator for the life of the engine
  if (!m.comm || m.comm_src != comm) {
    m.comm     = std::make_shared<const dist::Communicator>(comm);
    m.comm_src = comm;
  }
  const dist::Communicator &C  = *m.comm;
  const index_t             n  = a.rows;
  const index_t             nc = hint.block_size > 0 ? hint.block_size : 1;
  std::ostringstream        err;

  // whole blocks of Nc on every rank
  if (row_begin % nc != 0 || n % nc != 0)
    err << "it owns rows [" << row_begin << ", " << row_begin + n << "), not whole blocks of Nc = " << nc << " (" << (hint.source.empty() ? std::string("block size") : hint.source) << "); heptane's distributed operator needs every rank's rows to start on a block: give the matrix block size Nc (MatSetBlockSize, or a DMDA with dof = Nc) so that PETSc splits the rows on blocks";
  agree(C, err.str());
  const dist::RowPartition part = dist::partition_from_local(C, n);
  const index_t            N    = part.global_rows();

  // the block offsets: the grid's seven, or the union of the ranks' ones
  const std::size_t          limit = 4096;
  const std::vector<index_t> found = union_offsets(C, local_block_offsets(a, row_begin, nc, limit));
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
                       "the matrix has entries at block offset " << d << ", which is not one of the " << offsets.size() << " of the " << grid[0] << "x" << grid[1] << "x" << grid[2] << " grid " << offsets_text(offsets) << " (" << hint.source << ", all offsets found: " << offsets_text(found) << "): the global numbering over the " << C.size() << " ranks is not the grid's natural order (x fastest). heptane's distributed operator needs every rank to own whole z-planes in natural order: split a DMDA along z only (-da_processors_x 1 -da_processors_y 1)");
    } else {
      offsets = found;
    }
    note << "grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " Nc=" << nc << " from " << hint.source << " (" << (hint.star_stencil ? "star stencil" : "offsets from the pattern") << ")";
  } else {
    offsets = found;
    note << "Nc=" << nc << " (" << (hint.source.empty() ? std::string("default") : hint.source) << "), block offsets of the pattern over the ranks " << offsets_text(offsets);
  }
  // BDIA-GH stores D·Nc·N slots: far more than the entries means the numbering is not GH
  long long nnz_local = (long long)a.nnz(), nnz = 0;
  MPI_Allreduce(&nnz_local, &nnz, 1, MPI_LONG_LONG, MPI_SUM, C.comm());
  const double slots = double(offsets.size()) * double(nc) * double(N);
  HEPTANE_ENSURE(offsets.size() <= limit && slots <= 4.0 * double(nnz) + double(N), InputError,
                 "BDIA-GH would store " << slots << " values for " << nnz << " entries (" << offsets.size() << " block offsets " << offsets_text(offsets) << ", Nc = " << nc
                                        << "): the global numbering over the ranks is not a GH (grid) one. heptane's distributed operator needs every rank to own whole z-planes of the grid in natural order (a DMDA split along z only: "
                                           "-da_processors_x 1 -da_processors_y 1)");
  note << "; " << C.size() << " ranks, rows " << part.describe();

  // the device: on a GPU, each rank the GPU of its node-local rank unless one is named
  std::string device = resolve_device(cfg.device);
  if (device == "cuda") device = "cuda:" + std::to_string(std::max(0, C.local_device()));
  const auto exec = m.exec && device == m.device ? m.exec : make_executor(device);
  switch (cfg.precision) {
  case Precision::double_:
    m.store = std::make_unique<DistStore<double, double>>(a, row_begin, nc, offsets, m.comm, part, exec);
    break;
  case Precision::single:
    m.store = std::make_unique<DistStore<float, float>>(a, row_begin, nc, offsets, m.comm, part, exec);
    break;
  case Precision::mixed:
    m.store = std::make_unique<DistStore<float, double>>(a, row_begin, nc, offsets, m.comm, part, exec);
    break;
  }
  exec->synchronize();
  m.cfg                    = cfg;
  m.device                 = device;
  m.exec                   = exec;
  m.format                 = Format::bdia;
  m.rows                   = n;
  m.nnz                    = a.nnz();
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
}

} // namespace heptane::plugin
