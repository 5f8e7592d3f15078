// Internal to the plugin's engine (engine.cpp: the matrix on one rank; engine_dist.cpp: on
// several MPI ranks; engine_krylov.cpp: the preconditioner and the Krylov solve;
// engine_pc.cpp: heptane's PCs under PETSc's KSPs): the operator stores behind MatrixEngine,
// its state, and the helpers these files use.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/array.hpp"
#include "formats/csr/csr.hpp"
#include "solver/precond/amg/amg.hpp"
#include "core/error.hpp"
#include "core/reducer.hpp"
#include "plugin/engine.hpp"

namespace heptane::dist
{
class Communicator;
} // namespace heptane::dist

namespace heptane::plugin
{
namespace detail
{

using clock_type = std::chrono::steady_clock;
inline double ms_since(clock_type::time_point t0)
{
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// Host CSR in double with 64-bit row pointers (what make_preconditioner takes).
inline Csr<double> csr_from_view(const CsrView &a)
{
  Csr<double> c;
  c.rows = c.cols = a.rows;
  std::vector<offset_t> ptr(std::size_t(a.rows) + 1);
  for (index_t r = 0; r <= a.rows; ++r) ptr[std::size_t(r)] = a.row_ptr[r];
  c.row_ptr = Array<offset_t>(std::move(ptr));
  c.col_idx = Array<index_t>(std::vector<index_t>(a.col_idx, a.col_idx + a.nnz()));
  c.values  = Array<double>(std::vector<double>(a.values, a.values + a.nnz()));
  return c;
}

// The borrowed CSR into `c`: only the values when its pattern is c's (a Newton step's
// refresh: compared, not copied, and no allocation), else a new copy (whose pattern the
// preconditioner then checks against its own). A view of c's own columns and values (the
// caller wrote them there: KrylovEngine::host_csr) is neither compared nor copied; its row
// pointers still are.
inline void copy_view(const CsrView &a, Csr<double> &c)
{
  const offset_t nnz  = a.nnz();
  bool           same = c.rows == a.rows && c.nnz() == nnz && c.values.on_host();
  if (same && a.rows == 0) return; // a rank that owns no rows: nothing to copy
  if (same) {
    const offset_t *ptr = c.row_ptr.data();
    for (index_t r = 0; r <= a.rows && same; ++r) same = ptr[r] == offset_t(a.row_ptr[r]);
    same = same && (a.col_idx == c.col_idx.data() || std::memcmp(c.col_idx.data(), a.col_idx, sizeof(index_t) * std::size_t(nnz)) == 0);
  }
  if (!same) {
    c = csr_from_view(a);
    return;
  }
  if (a.values != c.values.data()) std::memcpy(c.values.data(), a.values, sizeof(double) * std::size_t(nnz));
}

// The AMG hierarchy's table of a preconditioner, or "" when it is not AMG.
template <class VT>
std::string amg_table(const std::shared_ptr<Preconditioner<VT>> &pc)
{
  const auto *amg = dynamic_cast<const AmgPreconditioner<VT> *>(pc.get());
  return amg ? amg->info().table() : std::string();
}

template <class MT, class VT>
const char *precision_name()
{
  if constexpr (std::is_same_v<MT, VT>) return std::is_same_v<MT, double> ? "fp64" : "fp32";
  else return "fp32 values/fp64 vectors";
}

inline std::string offsets_text(const std::vector<index_t> &d)
{
  std::ostringstream os;
  os << '{';
  for (std::size_t i = 0; i < d.size() && i < 30; ++i) os << (i ? "," : "") << d[i];
  if (d.size() > 30) os << ",... (" << d.size() << " in all)";
  os << '}';
  return os.str();
}

// The block offsets of a star stencil of width 1 on a J x H x I grid (x fastest): one pair
// per dimension longer than 1, plus 0.
inline std::vector<index_t> star_offsets(const std::array<index_t, 3> &g)
{
  std::vector<index_t> d{0};
  const index_t        strides[3] = {1, g[0], g[0] * g[1]};
  for (int i = 0; i < 3; ++i)
    if (g[std::size_t(i)] > 1) {
      d.push_back(strides[i]);
      d.push_back(-strides[i]);
    }
  std::sort(d.begin(), d.end());
  return d;
}

// An operator the engine owns, with the values-only refresh of its format.
struct StoreBase {
  virtual ~StoreBase()                   = default;
  virtual void refresh(const CsrView &a) = 0;
  /// During refresh() and refresh_permuted(): MatrixEngine::refresh_values' (or
  /// refresh_values_permuted's) values_key (0: none) and register_after,
  /// under which a GPU store may read the values straight from the caller's registered array
  /// (PinnedUpload::upload_registered).
  std::uint64_t values_key     = 0;
  int           register_after = 0;
  /// The values in another order (MatrixEngine::refresh_values_permuted); false: no such path.
  virtual bool refresh_permuted(const double * /*values*/, const index_t * /*pos*/, index_t /*block_size*/) { return false; }
  /// The values of a block CSR matrix of the build's pattern, read by formula
  /// (MatrixEngine::refresh_values_blocks); false: no such path.
  virtual bool refresh_blocks(const BlockCsrView & /*b*/) { return false; }
  /// The CSR values in the executor's device memory already (MatrixEngine::
  /// refresh_values_device); false: no such path.
  virtual bool refresh_device(const double * /*values*/) { return false; }
  /// A GPU store that uploads the caller's host values (PinnedUpload): marks the array
  /// (values, bytes, key) so that the solve after the build registers it and the first
  /// values-only refresh reads it in place (MatrixEngine::mark_values); false: not marked.
  virtual bool mark_values(const void * /*values*/, std::size_t /*bytes*/, std::uint64_t /*key*/) { return false; }
  /// Several ranks: the same from this rank's two block CSR parts (MatrixEngine::
  /// refresh_values_blocks(DistBlocksView)); collective; false on every rank: no such path.
  virtual bool                                    refresh_dist_blocks(const DistBlocksView                                    &/*b*/) { return false; }
  virtual std::shared_ptr<const Operator<double>> op_double() const { return nullptr; }
  virtual std::shared_ptr<const Operator<float>>  op_single() const { return nullptr; }
  virtual std::string                             note() const = 0;
  /// The CSR values of the last build or refresh (nnz doubles, CSR order) in the executor's
  /// device memory, where the store keeps them there; else nullptr.
  virtual const double *device_values() const { return nullptr; }
  /// The CSR pattern of the last build (32-bit row pointers and columns, CSR order) in the
  /// executor's device memory, where the store keeps it there (on_executor set); else a view
  /// with rows = 0.
  virtual CsrPatternView device_pattern() const { return {}; }
  /// Mixed precision: the matrix in fp64 beside the operator's fp32 values, where the store
  /// keeps one (bdiagh), for the residuals of the refinement; else nullptr.
  virtual std::shared_ptr<const Operator<double>> op_fp64() const { return nullptr; }
  /// The operator's BDIA-GH matrix in fp64 in host memory (the CPU; mixed precision: the fp64
  /// copy), as of the last build or refresh; else nullptr.
  virtual const Bdia<double> *host_bdia() const { return nullptr; }
};

template <class VT>
struct TypedStore : StoreBase {
  /// Â = A M⁻¹ with M⁻¹ block diagonal (blocks of b; `binv` as Preconditioner::block_inverse
  /// gives them), into `reuse` when it is an earlier result of this store (no allocation),
  /// else into a new operator; nullptr where the store cannot form it (formats other than
  /// BDIA-GH, b not dividing the block size).
  virtual std::shared_ptr<const Operator<VT>> right_scaled(const VT * /*binv*/, index_t /*b*/, const std::shared_ptr<const Operator<VT>> & /*reuse*/) const { return nullptr; }
  std::shared_ptr<const Operator<double>>     op_double() const override
  {
    if constexpr (std::is_same_v<VT, double>) return op_;
    return nullptr;
  }
  std::shared_ptr<const Operator<float>> op_single() const override
  {
    if constexpr (std::is_same_v<VT, float>) return op_;
    return nullptr;
  }
  std::shared_ptr<const Operator<VT>> op_;
};

// An operator applied on the host by the caller: a preconditioner (KrylovEngine::
// set_host_preconditioner) or, on several ranks, the matrix itself (MatrixEngine::
// build_distributed_callback, with the ranks' reducer): r down to the host, apply(r, z), z up;
// no copies where the vectors already are host doubles.
template <class VT>
class HostCallbackOperator final : public Operator<VT> {
public:
  HostCallbackOperator(index_t n, std::shared_ptr<const Executor> exec, std::function<void(const double *, double *)> f, std::string desc) : n_(n), exec_(std::move(exec)), f_(std::move(f)), desc_(std::move(desc)) { }
  index_t                         rows() const override { return n_; }
  index_t                         cols() const override { return n_; }
  std::shared_ptr<const Executor> executor() const override { return exec_; }
  std::string                     describe() const override { return desc_; }
  const Reducer                  *reducer() const override { return reducer_ ? reducer_.get() : borrowed_reducer_; }
  std::unique_ptr<Reducer>        reducer_;                    // several ranks: where the solver sums its dot products
  const Reducer                  *borrowed_reducer_ = nullptr; // or another operator's (KrylovEngine::set_host_operator), kept alive by its owner
  void                            apply_transpose(VT, const VT *, VT, VT *) const override { HEPTANE_THROW(NotSupported, "the transpose of an operator applied by the caller"); }
  void                            apply(VT alpha, const VT *r, VT beta, VT *z) const override
  {
    const std::size_t n = std::size_t(n_);
    if constexpr (std::is_same_v<VT, double>) {
      if (exec_->is_cpu() && alpha == VT(1) && beta == VT(0)) {
        f_(r, z); // host doubles already: in place
        return;
      }
    }
    rh_.resize(n);
    zh_.resize(n);
    down(r, rh_.data());
    f_(rh_.data(), zh_.data());
    if (beta != VT(0)) {
      std::vector<double> old(n);
      down(z, old.data());
      for (std::size_t i = 0; i < n; i++) zh_[i] = double(alpha) * zh_[i] + double(beta) * old[i];
    } else if (alpha != VT(1)) {
      for (std::size_t i = 0; i < n; i++) zh_[i] *= double(alpha);
    }
    up(zh_.data(), z);
  }

private:
  void down(const VT *d, double *h) const
  {
    if constexpr (std::is_same_v<VT, double>) {
      copy_bytes(*exec_, d, *cpu_executor(), h, std::size_t(n_) * sizeof(double));
    } else {
      stage_.resize(std::size_t(n_));
      copy_bytes(*exec_, d, *cpu_executor(), stage_.data(), std::size_t(n_) * sizeof(VT));
      std::copy(stage_.begin(), stage_.end(), h);
    }
  }
  void up(const double *h, VT *d) const
  {
    if constexpr (std::is_same_v<VT, double>) {
      copy_bytes(*cpu_executor(), h, *exec_, d, std::size_t(n_) * sizeof(double));
    } else {
      stage_.assign(h, h + n_);
      copy_bytes(*cpu_executor(), stage_.data(), *exec_, d, std::size_t(n_) * sizeof(VT));
    }
  }
  index_t                                       n_;
  std::shared_ptr<const Executor>               exec_;
  std::function<void(const double *, double *)> f_;
  std::string                                   desc_;
  mutable std::vector<double>                   rh_, zh_;
  mutable std::vector<VT>                       stage_;
};

// Several ranks: the global coarse correction around a preconditioner (dist::CoarseSpace,
// distributed/coarse_space.hpp), behind an interface so that the parts of the plugin built
// without the distributed library (engine_krylov.cpp) do not name it: engine_dist.cpp makes
// it, engine.cpp's stub throws NotSupported where that library is not built.
template <class VT>
struct GlobalCoarse {
  virtual ~GlobalCoarse()                                                                                              = default;
  virtual std::shared_ptr<const Operator<VT>> op() const                                                               = 0;
  virtual void                                update(const CsrView &diag, const CsrView &off, const index_t *off_cols) = 0;
  virtual void                                set_local(std::shared_ptr<const Operator<VT>> local)                     = 0;
};
template <class VT>
std::unique_ptr<GlobalCoarse<VT>> make_global_coarse(MPI_Comm comm, std::shared_ptr<const Operator<VT>> a, std::shared_ptr<const Operator<VT>> local, const CsrView &diag, const CsrView &off, const index_t *off_cols, index_t nc, const GlobalCoarseOptions &o);

} // namespace detail

/// Several MPI ranks: this rank's rows [row_begin, row_begin + n) of a square matrix in the two
/// parts PETSc's MPIAIJ keeps them in (MatMPIAIJGetSeqAIJ), borrowed, not owned; columns sorted
/// within each row, no duplicates:
///   diag: n x n, the entries in the rank's own columns, numbered locally (column c is global
///         column row_begin + c): the rank's diagonal block, which the preconditioner is built
///         from;
///   off:  n rows, every other entry (the couplings to other ranks' rows); its column j is the
///         global column off_cols[j] (PETSc's garray, ascending), or j itself when off_cols is
///         null.
struct DistRows {
  CsrView        diag;
  CsrView        off;
  const index_t *off_cols = nullptr;
};

/// MatrixEngine's API (engine.hpp) takes one CsrView per call. A caller that has its rows as
/// DistRows keeps a DistRowsScope for them alive around build_distributed(rows.diag, ...) and
/// refresh_values(rows.diag): the engine finds the DistRows that view belongs to (of()) and
/// reads both parts where they are, with no copy into rows with global columns; the operator's
/// device copy of the values (csr_values_on_device) is then that of rows.diag. Without a scope
/// those calls take the rows with global columns, as engine.hpp says. Per thread; scopes nest.
class DistRowsScope {
public:
  explicit DistRowsScope(const DistRows &rows) noexcept : prev_(current()) { current() = &rows; }
  ~DistRowsScope() { current() = prev_; }
  DistRowsScope(const DistRowsScope &)            = delete;
  DistRowsScope &operator=(const DistRowsScope &) = delete;
  /// The DistRows of the innermost live scope on this thread when `a` is its diag (the same
  /// object, not a copy of it), else nullptr.
  static const DistRows *of(const CsrView &a) noexcept
  {
    const DistRows *r = current();
    return r && &r->diag == &a ? r : nullptr;
  }

private:
  static const DistRows *&current() noexcept
  {
    thread_local const DistRows *rows = nullptr;
    return rows;
  }
  const DistRows *prev_;
};

struct MatrixEngine::Impl {
  MatrixConfig                       cfg;
  std::string                        device;     // resolved: "cpu", "cuda", "cuda:N"
  std::string                        device_why; // what -heptane_device auto chose and why (one rank)
  std::shared_ptr<const Executor>    exec;
  std::unique_ptr<detail::StoreBase> store;
  Format                             format = Format::csr;
  index_t                            rows   = 0; // this rank's rows
  offset_t                           nnz    = 0; // this rank's entries
  index_t                            nc     = 1;
  std::vector<index_t>               offsets;
  std::array<index_t, 3>             grid{0, 0, 0};
  std::string                        note;
  MatrixTimings                      timings;
  const double                      *csr_values = nullptr; // the CsrView values of the last build or refresh_values (nullptr after other refreshes)
  /* several ranks (build_distributed) */
  bool                                      distributed = false;
  index_t                                   row_begin   = 0;
  index_t                                   global_rows = 0;
  int                                       ranks       = 1;
  std::shared_ptr<const dist::Communicator> comm;                     // a duplicate of comm_src
  MPI_Comm                                  comm_src = MPI_COMM_NULL; // the caller's communicator
};

} // namespace heptane::plugin
