// The plugin's KrylovEngine (engine.hpp): heptane's preconditioner built from the borrowed
// CSR (on the device where the operator's copy is there), its values-only refresh, and the
// Krylov solve (BiCGStab, CG, GMRES; folding, mixed-precision refinement).
#include "plugin/engine_impl.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>

#include "plugin/device_pool.hpp"
#include "plugin/pinned_upload.hpp"
#include "solver/refine.hpp"

namespace heptane::plugin
{

using namespace detail;

// ---- KrylovEngine ------------------------------------------------------------------------------

namespace
{

template <class VT>
struct Typed {
  std::shared_ptr<Preconditioner<VT>> pc;
  std::shared_ptr<const Operator<VT>> host_pc; // set_host_preconditioner's (pc is then null)
  std::unique_ptr<Solver<VT>>         solver;  // make_solver's, kept across solves
  SolverType                          solver_type    = SolverType::bicgstab;
  int                                 solver_restart = 0;
  Array<VT>                           b, x, y;
  Array<VT>                           xi;         // folded: x_i = M^-1 y_i for IterationInfo::iterate
  std::vector<VT>                     staging;    // float vectors: conversion on the host
  MixedRefinement                     refinement; // mixed: its vectors, kept across solves
  // Â = A M⁻¹ (KrylovEngine::set_fold) and what it was made from
  std::shared_ptr<const Operator<VT>> folded;
  const MatrixEngine                 *folded_m = nullptr;
  std::array<int, 4>                  folded_for{-1, -1, -1, -1};
  double                              in_ms = 0, out_ms = 0; // the last solve's b/x in and x out
  // several ranks: the global coarse correction around pc (set_global_coarse), for this
  // operator build (MatrixEngine::timings().builds) and with these options
  std::unique_ptr<GlobalCoarse<VT>> coarse;
  int                               coarse_of_build = -1;
  GlobalCoarseOptions               coarse_opts;

  // Â for this solve: made again when A or M has changed since (their build and refresh
  // counts); nullptr when the operator cannot form it. `made_ms`: the time it took, 0 if reused.
  std::shared_ptr<const Operator<VT>> fold(const MatrixEngine &m, const KrylovTimings &t, double &made_ms)
  {
    made_ms                      = 0;
    const std::array<int, 4> key = {m.timings().builds, m.timings().refreshes, t.pc_builds, t.pc_refreshes};
    if (folded_m == &m && folded_for == key) return folded;
    const auto t0 = clock_type::now();
    folded        = m.right_scaled(pc->block_inverse(), pc->block_size(), folded_m == &m ? folded : nullptr);
    folded_m      = &m;
    folded_for    = key;
    if (folded) folded->executor()->synchronize();
    made_ms = ms_since(t0);
    return folded;
  }

  // The solver of `type` (make_solver), made again when the type or GMRES's restart changes.
  Solver<VT> &get_solver(SolverType type, int restart)
  {
    if (!solver || solver_type != type || (type == SolverType::gmres && solver_restart != restart)) {
      SolverExtras ex;
      ex.restart     = restart;
      solver         = make_solver<VT>(type, SolverOptions{}, ex);
      solver_type    = type;
      solver_restart = restart;
    }
    return *solver;
  }
  // The solver solve_on runs for these arguments, set up as it runs it (options, operator,
  // preconditioner; the monitor and stop test not yet wrapped): folded, BiCGStab on Â with no
  // preconditioner and y (its iterate) made for Â's rows.
  Solver<VT> &setup_solver(SolverType type, int restart, const std::shared_ptr<const Operator<VT>> &op, const std::shared_ptr<const Operator<VT>> &folded_op, const SolverOptions &o)
  {
    if (folded_op) {
      const std::size_t n = std::size_t(folded_op->rows());
      if (y.size() != n || y.exec() != folded_op->executor()) y = Array<VT>(folded_op->executor(), n);
      Solver<VT> &s = get_solver(SolverType::bicgstab, restart);
      s.options()   = o;
      s.set_operator(folded_op);
      s.set_preconditioner(std::shared_ptr<const Operator<VT>>());
      return s;
    }
    Solver<VT> &s = get_solver(type, restart);
    s.options()   = o;
    s.set_operator(op);
    if (host_pc) s.set_preconditioner(host_pc);
    else if (coarse) s.set_preconditioner(coarse->op());
    else s.set_preconditioner(pc);
    return s;
  }
  // One solve on device arrays (x: the initial guess when o.nonzero_initial_guess). folded:
  // BiCGStab on Â y = b (zero initial guess), then x = M⁻¹ y.
  Status solve_on(SolverType type, int restart, const std::shared_ptr<const Operator<VT>> &op, const std::shared_ptr<const Operator<VT>> &folded_op, const SolverOptions &o, const Array<VT> &bd, Array<VT> &xd)
  {
    Solver<VT> &s = setup_solver(type, restart, op, folded_op, o);
    if (!folded_op) return s.solve(bd, xd);
    // the solver's iterate is y_i of A M^-1 y = b: the caller's is x_i = M^-1 y_i (y itself
    // is y_i whenever the solver gives an iterate: nothing queued behind it)
    const auto x_of = [this](const IterationInfo &i) -> std::function<void(double *)> {
      if (!i.iterate) return nullptr;
      return [this](double *out) {
        if (xi.size() != y.size() || xi.exec() != y.exec()) xi = Array<VT>(y.exec(), y.size());
        pc->apply(y.data(), xi.data());
        download(xi, out);
      };
    };
    if (o.monitor)
      s.options().monitor = [&o, x_of](const IterationInfo &i) {
        IterationInfo j = i;
        j.iterate       = x_of(i);
        o.monitor(j);
      };
    if (o.stop_test)
      s.options().stop_test = [&o, x_of](const IterationInfo &i) {
        IterationInfo j = i;
        j.iterate       = x_of(i);
        return o.stop_test(j);
      };
    const Status st = s.solve(bd, y);
    pc->apply(y.data(), xd.data()); // x = M⁻¹ y
    return st;
  }
  // solve_on's solver, set up as solve_on sets it, with its workspace made (Solver::prepare)
  void prepare_on(SolverType type, int restart, const std::shared_ptr<const Operator<VT>> &op, const std::shared_ptr<const Operator<VT>> &folded_op, const SolverOptions &o) { setup_solver(type, restart, op, folded_op, o).prepare(); }
  // b and x on op's executor (solve's)
  void prepare_vectors(const Operator<VT> &op)
  {
    const auto        exec = op.executor();
    const std::size_t n    = std::size_t(op.rows());
    if (b.size() != n || b.exec() != exec) b = Array<VT>(exec, n);
    if (x.size() != n || x.exec() != exec) x = Array<VT>(exec, n);
  }
  // the refinement's inner solver: one correction A32 d = r (MixedRefinement)
  struct Correction {
    Typed                              &t;
    SolverType                          solver;
    int                                 restart;
    std::shared_ptr<const Operator<VT>> op, folded;
    SolverOptions                       opts;
    SolverOptions                      &options() noexcept { return opts; }
    Status                              solve(const Array<VT> &r, Array<VT> &d) { return t.solve_on(solver, restart, op, folded, opts, r, d); }
  };

  // b and x from and to the host; op64 (mixed): refined against the fp64 matrix
  // bh, xh: host arrays, or (device) device memory of op's GPU in fp64 (KrylovEngine::
  // vectors_on_device), copied there
  Status solve(SolverType solver, int restart, std::shared_ptr<const Operator<VT>> op, const std::shared_ptr<const Operator<VT>> &folded_op, const std::shared_ptr<const Operator<double>> &op64, const SolverOptions &opts, bool nonzero_guess, const double *bh, double *xh, int &corrections, bool device)
  {
    const auto        exec = op->executor();
    const std::size_t n    = std::size_t(op->rows());
    const auto        t_in = clock_type::now();
    if (b.size() != n || b.exec() != exec) b = Array<VT>(exec, n);
    if (x.size() != n || x.exec() != exec) x = Array<VT>(exec, n);
    if (device) {
      if constexpr (std::is_same_v<VT, double>) {
        synchronize_device(*exec); // the caller's work on b and x (another stream) done
        HEPTANE_ENSURE(is_device_memory_of(*exec, xh) && copy_device_bytes(*exec, b.data(), bh, n * sizeof(double)) && (!nonzero_guess || copy_device_bytes(*exec, x.data(), xh, n * sizeof(double))), InputError,
                       "solve: b or x is not in the device memory of " << exec->name());
      } else {
        HEPTANE_THROW(InputError, "solve: vectors in device memory need the fp64 operator");
      }
    } else {
      upload(bh, b);
      if (nonzero_guess) upload(xh, x);
    }
    in_ms                   = ms_since(t_in);
    SolverOptions o         = opts;
    o.nonzero_initial_guess = nonzero_guess;
    Status st;
    corrections  = 0;
    bool refined = false;
    if constexpr (std::is_same_v<VT, double>) {
      if (op64) {
        Correction c{*this, solver, restart, op, folded_op, o};
        st          = refinement.solve(c, *op64, b, x, o);
        corrections = refinement.corrections();
        refined     = true;
      }
    }
    if (!refined) st = solve_on(solver, restart, op, folded_op, o, b, x);
    const auto t_out = clock_type::now();
    if constexpr (std::is_same_v<VT, double>) {
      if (device) {
        copy_bytes(*exec, x.data(), *exec, xh, n * sizeof(double)); // xh checked above
        exec->synchronize();                                        // x written before the caller uses it
        out_ms = ms_since(t_out);
        return st;
      }
    }
    download(x, xh);
    out_ms = ms_since(t_out);
    return st;
  }
  // fp64 vectors of 1 MiB or more to and from a GPU go through the pinned buffers in pieces
  // (PinnedUpload::upload_vector, download): on the H100 a pageable copy of 8.4 MB took
  // 0.49-0.63 ms in and 0.36-0.45 ms out (docs/petsc.md); smaller ones as they are.
  // HEPTANE_PINNED_VECTORS=0 in the environment: the pageable copies (comparisons; read once).
  static bool pinned_path(const Array<VT> &d)
  {
    static const bool on = [] {
      const char *e = std::getenv("HEPTANE_PINNED_VECTORS");
      return !(e && std::strcmp(e, "0") == 0);
    }();
    return on && std::is_same_v<VT, double> && d.exec()->is_cuda() && d.bytes() >= (std::size_t(1) << 20);
  }
  void upload(const double *h, Array<VT> &d)
  {
    const std::size_t n = d.size();
    if constexpr (std::is_same_v<VT, double>) {
      if (pinned_path(d)) {
        shared_pinned_upload(d.exec())->upload_vector(h, d.data(), d.bytes());
        return;
      }
      copy_bytes(*cpu_executor(), h, *d.exec(), d.data(), n * sizeof(double));
    } else {
      staging.assign(h, h + n);
      copy_bytes(*cpu_executor(), staging.data(), *d.exec(), d.data(), n * sizeof(VT));
    }
  }
  void download(const Array<VT> &d, double *h)
  {
    const std::size_t n = d.size();
    if constexpr (std::is_same_v<VT, double>) {
      if (pinned_path(d)) {
        shared_pinned_upload(d.exec())->download(d.data(), h, d.bytes());
        return;
      }
      copy_bytes(*d.exec(), d.data(), *cpu_executor(), h, n * sizeof(double));
    } else {
      staging.resize(n);
      copy_bytes(*d.exec(), d.data(), *cpu_executor(), staging.data(), n * sizeof(VT));
      std::copy(staging.begin(), staging.end(), h);
    }
  }
};

} // namespace

struct KrylovEngine::Impl {
  Typed<double> d;
  Typed<float>  f;
  Csr<double>   csr; // the host CSR of the last setup or refresh (its arrays are reused)
  std::string   pc_desc;
  std::string   pc_path; // where the last numeric part ran
  KrylovTimings timings;
  // the preconditioner takes its numeric part where the values are (update_values_device),
  // from this engine's values as of this build of it
  bool                in_place          = false;
  bool                pattern_on_device = false; // its symbolic part made on the device
  const MatrixEngine *values_from       = nullptr;
  int                 values_of         = -1; // values_from->timings().builds
  offset_t            setup_nnz         = -1; // the entries of the matrix it was set up from (a part of m's: PETSc's BAIJ diagonal blocks)
  // the preconditioner folded into the operator (set_fold) and what the last solve did
  bool   fold    = true;
  bool   folded  = false;
  double fold_ms = 0;
  // a fold prepare() made for the next solve (its time), and whether the last solve's was one
  bool   fold_pending    = false;
  double fold_pending_ms = 0;
  bool   fold_prepared   = false;
  // mixed precision refined against the fp64 matrix (set_refine)
  bool                                          refine      = true;
  bool                                          refined     = false; // the last solve was refined against the fp64 matrix
  int                                           corrections = 0;
  std::function<void(const double *, double *)> fp64_mult; // set_fp64_product's
  std::string                                   fp64_mult_desc;
  std::string                                   refined_against; // the last refined solve's residuals
  // GMRES's restart (set_restart) and the last solver's name
  int         restart = 30;
  std::string solver_name;
  // set_host_preconditioner's
  std::function<void(const double *, double *)> host_apply;
  // set_host_operator's
  std::function<void(const double *, double *)> host_mult;
  std::string                                   host_mult_desc;
  // the global coarse correction (set_global_coarse): what it is, its last setup's time
  std::string coarse_desc;
  double      coarse_ms = 0;
};

namespace
{

// The CSR values of `a` in the memory of m's executor, for a numeric part there: PETSc's host
// array itself on the CPU, the device copy m's operator keeps on a GPU; nullptr when there is
// none (the preconditioner then works on a host copy of the matrix).
const double *values_on_executor(const CsrView &a, const MatrixEngine &m)
{
  return m.executor()->is_cpu() ? a.values : m.csr_values_on_device();
}

CsrPatternView pattern_view(const CsrView &a)
{
  CsrPatternView p;
  p.rows      = a.rows;
  p.row_ptr32 = a.row_ptr;
  p.col_idx   = a.col_idx;
  return p;
}

std::string numeric_path_note(bool in_place, bool pattern_on_device, const MatrixEngine &m)
{
  const bool gpu = !m.executor()->is_cpu();
  if (in_place) {
    if (!gpu) return "numeric part on the host, on PETSc's values in place";
    std::string note = "numeric part on the device, from the operator's device copy of the values";
    if (pattern_on_device) note += "; symbolic part on the device, from the operator's device copy of the pattern";
    return note;
  }
  return gpu ? "numeric part on the host, from a host copy of the matrix (pattern compared), factors uploaded" : "numeric part on the host, from a copy of the matrix (pattern compared)";
}

} // namespace

KrylovEngine::KrylovEngine() : impl_(std::make_unique<Impl>()) { }
KrylovEngine::~KrylovEngine() = default;

void KrylovEngine::build_preconditioner(PcType type, const CsrView &a, const MatrixEngine &m, const PcOptions &opts_in)
{
  const auto t0 = clock_type::now();
  // the operator's grid for box aggregation (-heptane_amg_aggregation box: AMG's and CPR's
  // pressure matrices have a cell a row), so that AMG need not find it again
  PcOptions opts = opts_in;
  if (!m.distributed() && m.rows() == a.rows) opts.amg.grid = opts.cpr.amg.grid = m.grid();
  Impl &k = *impl_;
  HEPTANE_ENSURE(m.built(), InputError, "preconditioner requested before the operator");
  k.d.pc.reset();
  k.f.pc.reset();
  k.d.host_pc.reset();
  k.f.host_pc.reset();
  k.d.coarse.reset();
  k.f.coarse.reset();
  k.host_apply     = nullptr;
  const index_t nc = type == PcType::jacobi || type == PcType::none ? 1 : m.block_size();
  // Jacobi and block Jacobi: symbolic part from PETSc's pattern, numeric part where the
  // values are, no host copy of the matrix; the ILU(0) types factorise a host copy
  const double *values = values_on_executor(a, m);
  // AMG/CPR on a GPU, one rank: set up from the operator's device copy of the values (and
  // of the pattern, where it keeps one) with nothing of A crossing the bus; the finest
  // level's products (AMG) or the second stage's residual (CPR) through m's operator where a
  // values-only refresh updates that object in place (bdiagh, csr), so no second copy of A
  const bool multigrid = type == PcType::amg || type == PcType::cpr;
  const bool stable    = !m.distributed() && (m.format() == Format::bdia || m.format() == Format::csr) && m.rows() == a.rows;
  if (multigrid && values && !m.executor()->is_cpu() && !m.distributed() && m.rows() == a.rows) {
    k.in_place          = true;
    k.csr               = Csr<double>();
    CsrPatternView p    = m.csr_pattern_on_device();
    k.pattern_on_device = p.on_executor && p.rows == a.rows;
    if (!k.pattern_on_device) p = pattern_view(a);
    if (m.precision() == Precision::single) k.f.pc = make_preconditioner<float>(type, p, values, nc, m.executor(), opts, stable ? m.operator_single() : nullptr);
    else k.d.pc = make_preconditioner<double>(type, p, values, nc, m.executor(), opts, stable ? m.operator_double() : nullptr);
    k.pc_desc     = k.f.pc ? k.f.pc->describe() : k.d.pc->describe();
    k.pc_path     = numeric_path_note(true, k.pattern_on_device, m);
    k.values_from = &m;
    k.values_of   = m.timings().builds;
    k.setup_nnz   = a.nnz();
    m.executor()->synchronize();
    k.timings.last_pc_ms = ms_since(t0);
    ++k.timings.pc_builds;
    return;
  }
  k.in_place = values && (type == PcType::none || type == PcType::jacobi || type == PcType::block_jacobi);
  if (k.in_place) {
    k.csr = Csr<double>(); // nothing to keep
    // the symbolic part from the pattern the operator keeps on the device, where it does
    // (the same arrays PETSc gave: no host pass over the pattern), else from PETSc's
    CsrPatternView p    = m.csr_pattern_on_device();
    k.pattern_on_device = p.on_executor && p.rows == a.rows && type != PcType::none;
    if (!k.pattern_on_device) p = pattern_view(a);
    if (m.precision() == Precision::single) k.f.pc = make_preconditioner<float>(type, p, values, nc, m.executor(), opts);
    else k.d.pc = make_preconditioner<double>(type, p, values, nc, m.executor(), opts);
  } else if (multigrid) {
    // AMG/CPR on the CPU or from a distributed operator: set up from a host copy; m's
    // operator as above where it is A itself, otherwise (other formats are rebuilt on a
    // refresh; a distributed operator is not this rank's diagonal block) a copy of their own
    copy_view(a, k.csr);
    if (m.precision() == Precision::single) k.f.pc = make_preconditioner<float>(type, k.csr, nc, m.executor(), opts, stable ? m.operator_single() : nullptr);
    else k.d.pc = make_preconditioner<double>(type, k.csr, nc, m.executor(), opts, stable ? m.operator_double() : nullptr);
  } else {
    copy_view(a, k.csr);
    if (m.precision() == Precision::single) k.f.pc = make_preconditioner<float>(type, k.csr, nc, m.executor(), opts);
    else k.d.pc = make_preconditioner<double>(type, k.csr, nc, m.executor(), opts);
  }
  k.pc_desc     = k.f.pc ? k.f.pc->describe() : k.d.pc->describe();
  k.pc_path     = numeric_path_note(k.in_place, k.pattern_on_device, m);
  k.values_from = &m;
  k.values_of   = m.timings().builds;
  k.setup_nnz   = a.nnz();
  m.executor()->synchronize();
  k.timings.last_pc_ms = ms_since(t0);
  ++k.timings.pc_builds;
}

void KrylovEngine::refresh_preconditioner(const CsrView &a, const MatrixEngine &m)
{
  const auto t0 = clock_type::now();
  Impl      &k  = *impl_;
  HEPTANE_ENSURE(has_preconditioner(), InputError, "values-only preconditioner refresh before the first setup");
  HEPTANE_ENSURE((m.precision() == Precision::single) == (k.f.pc != nullptr), InputError, "values-only preconditioner refresh in another precision than the setup's");
  // in place: the pattern is the setup's (the caller's nonzero state says so), so neither a
  // host copy nor a pattern compare; else (or where the preconditioner has no such path) the
  // values into the kept host CSR, the pattern compared
  const double *values = k.in_place && k.values_from == &m && k.values_of == m.timings().builds ? values_on_executor(a, m) : nullptr;
  bool          done   = false;
  // the CPU, the operator refreshed from these very values (BDIA-GH in fp64): Jacobi and block
  // Jacobi read their blocks off its main block diagonal (contiguous), not from the CSR values
  // spread over every entry
  const Bdia<double> *bdia = values && k.d.pc && k.setup_nnz == a.nnz() ? m.host_bdia(a.values) : nullptr;
  if (bdia && k.d.pc->update_values_bdia(*bdia)) {
    k.pc_path            = "numeric part on the host, from the diagonal blocks of the operator's BDIA-GH values (refreshed from the same matrix just before)";
    k.pc_desc            = k.d.pc->describe();
    k.timings.last_pc_ms = ms_since(t0);
    ++k.timings.pc_refreshes;
    return;
  }
  if (values) done = k.f.pc ? k.f.pc->update_values_device(values, a.nnz()) : k.d.pc->update_values_device(values, a.nnz());
  if (!done) {
    copy_view(a, k.csr);
    if (k.f.pc) k.f.pc->update_values(k.csr);
    else k.d.pc->update_values(k.csr);
  }
  k.pc_path = numeric_path_note(done, done && k.pattern_on_device, m);
  k.pc_desc = k.f.pc ? k.f.pc->describe() : k.d.pc->describe();
  m.executor()->synchronize();
  k.timings.last_pc_ms = ms_since(t0);
  ++k.timings.pc_refreshes;
}

KrylovEngine::HostCsr KrylovEngine::host_csr(index_t rows, offset_t nnz)
{
  Csr<double> &c = impl_->csr;
  HostCsr      h;
  h.kept = c.rows == rows && c.cols == rows && c.nnz() == nnz && c.row_ptr.size() == std::size_t(rows) + 1 && c.col_idx.size() == std::size_t(nnz) && c.values.on_host();
  if (!h.kept) {
    c      = Csr<double>();
    c.rows = c.cols = rows;
    c.row_ptr       = Array<offset_t>(cpu_executor(), std::size_t(rows) + 1);
    c.col_idx       = Array<index_t>(cpu_executor(), std::size_t(nnz));
    c.values        = Array<double>(cpu_executor(), std::size_t(nnz));
  }
  h.row_ptr = c.row_ptr.data();
  h.col_idx = c.col_idx.data();
  h.values  = c.values.data();
  return h;
}

bool KrylovEngine::refresh_preconditioner_blocks(const BlockCsrView &b, const MatrixEngine &m)
{
  const auto t0 = clock_type::now();
  Impl      &k  = *impl_;
  HEPTANE_ENSURE(has_preconditioner(), InputError, "values-only preconditioner refresh before the first setup");
  HEPTANE_ENSURE((m.precision() == Precision::single) == (k.f.pc != nullptr), InputError, "values-only preconditioner refresh in another precision than the setup's");
  if (!(k.in_place && k.values_from == &m && k.values_of == m.timings().builds) || !m.executor()->is_cpu()) return false;
  const bool done = k.f.pc ? k.f.pc->update_values_blocks(b.values, b.block_rows, b.block_size, b.block_ptr, b.block_col) : k.d.pc->update_values_blocks(b.values, b.block_rows, b.block_size, b.block_ptr, b.block_col);
  if (!done) return false;
  k.pc_path            = "numeric part on the host, on PETSc's block values in place (positions by the block pattern, no map of the entries)";
  k.pc_desc            = k.f.pc ? k.f.pc->describe() : k.d.pc->describe();
  k.timings.last_pc_ms = ms_since(t0);
  ++k.timings.pc_refreshes;
  return true;
}

bool KrylovEngine::refresh_preconditioner_permuted(const double *values, const index_t *pos, offset_t nnz, const MatrixEngine &m)
{
  const auto t0 = clock_type::now();
  Impl      &k  = *impl_;
  HEPTANE_ENSURE(has_preconditioner(), InputError, "values-only preconditioner refresh before the first setup");
  HEPTANE_ENSURE((m.precision() == Precision::single) == (k.f.pc != nullptr), InputError, "values-only preconditioner refresh in another precision than the setup's");
  // as refresh_preconditioner's in-place path: the pattern is the setup's
  // (pos and the device copy are m's entries: not for a preconditioner set up from a part of them)
  if (!(k.in_place && k.values_from == &m && k.values_of == m.timings().builds) || m.distributed() || nnz != k.setup_nnz) return false;
  bool        done = false;
  std::string path;
  if (m.executor()->is_cpu()) {
    done = k.f.pc ? k.f.pc->update_values_permuted(values, pos, nnz) : k.d.pc->update_values_permuted(values, pos, nnz);
    path = "numeric part on the host, on PETSc's values in place (in their own order)";
  } else if (const double *dv = m.csr_values_on_device()) { // m refreshed from these values: its device copy, CSR order
    done = k.f.pc ? k.f.pc->update_values_device(dv, nnz) : k.d.pc->update_values_device(dv, nnz);
    path = numeric_path_note(true, k.pattern_on_device, m);
  }
  if (!done) return false;
  k.pc_path            = path;
  k.pc_desc            = k.f.pc ? k.f.pc->describe() : k.d.pc->describe();
  k.timings.last_pc_ms = ms_since(t0);
  ++k.timings.pc_refreshes;
  return true;
}

void KrylovEngine::set_host_preconditioner(std::function<void(const double *r, double *z)> apply, const std::string &describe)
{
  Impl &k = *impl_;
  k.d.pc.reset();
  k.f.pc.reset();
  k.d.host_pc.reset();
  k.f.host_pc.reset();
  k.d.coarse.reset();
  k.f.coarse.reset();
  k.csr        = Csr<double>();
  k.host_apply = std::move(apply);
  k.pc_desc    = describe;
  k.pc_path    = "applied by the caller on the host";
  k.in_place   = false;
}

bool KrylovEngine::host_preconditioner() const noexcept
{
  return impl_->host_apply != nullptr;
}

void KrylovEngine::set_host_operator(std::function<void(const double *x, double *y)> apply, const std::string &describe)
{
  Impl &k          = *impl_;
  k.host_mult      = std::move(apply);
  k.host_mult_desc = describe;
}
void KrylovEngine::clear_host_operator() noexcept
{
  Impl &k     = *impl_;
  k.host_mult = nullptr;
  k.host_mult_desc.clear();
}
bool KrylovEngine::host_operator() const noexcept
{
  return impl_->host_mult != nullptr;
}
const std::string &KrylovEngine::host_operator_describe() const noexcept
{
  return impl_->host_mult_desc;
}

void KrylovEngine::set_global_coarse(const CsrView &diag, const CsrView &off, const index_t *off_cols, MPI_Comm comm, const MatrixEngine &m, const GlobalCoarseOptions &o)
{
  const auto t0 = clock_type::now();
  Impl      &k  = *impl_;
  HEPTANE_ENSURE(m.distributed(), InputError, "a global coarse correction needs an operator over several ranks");
  HEPTANE_ENSURE(k.d.pc || k.f.pc, InputError, "a global coarse correction needs heptane's own preconditioner, set up first");
  const auto go = [&](auto &t, auto op) {
    // kept only where every rank keeps it: making it is collective (a rank that owns no rows may
    // count its operator's builds differently from the others)
    int keep = t.coarse && t.coarse_of_build == m.timings().builds && t.coarse_opts == o ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &keep, 1, MPI_INT, MPI_MIN, comm);
    if (keep) {
      t.coarse->set_local(t.pc);
      t.coarse->update(diag, off, off_cols);
      return;
    }
    t.coarse.reset();
    t.coarse          = make_global_coarse(comm, op, std::shared_ptr<const std::remove_reference_t<decltype(*op)>>(t.pc), diag, off, off_cols, m.block_size(), o);
    t.coarse_of_build = m.timings().builds;
    t.coarse_opts     = o;
  };
  if (k.f.pc) go(k.f, m.operator_single());
  else go(k.d, m.operator_double());
  k.coarse_desc = k.f.coarse ? k.f.coarse->op()->describe() : k.d.coarse->op()->describe();
  k.coarse_ms   = ms_since(t0);
}
void KrylovEngine::clear_global_coarse() noexcept
{
  impl_->d.coarse.reset();
  impl_->f.coarse.reset();
}
bool KrylovEngine::has_global_coarse() const noexcept
{
  return impl_->d.coarse || impl_->f.coarse;
}
std::string KrylovEngine::global_coarse_describe() const
{
  return has_global_coarse() ? impl_->coarse_desc : std::string();
}
double KrylovEngine::global_coarse_ms() const noexcept
{
  return impl_->coarse_ms;
}

bool KrylovEngine::has_preconditioner() const noexcept
{
  return impl_->d.pc || impl_->f.pc || impl_->host_apply;
}

bool KrylovEngine::vectors_on_device(const MatrixEngine &m, const double *b, const double *x)
{
  return m.built() && m.precision() == Precision::double_ && m.executor() && m.executor()->is_cuda() && is_device_memory_of(*m.executor(), b) && is_device_memory_of(*m.executor(), x);
}

namespace
{

// Whether a solve (and prepare() for it) runs BiCGStab on Â = A M⁻¹ (set_fold): M a (block)
// Jacobi with its inverse blocks, no caller's product around A, no global coarse correction,
// and a zero initial guess -- or a refined mixed solve, whose corrections start from zero.
template <class T>
bool folds(const KrylovEngine::Impl &k, const T &t, SolverType solver, bool nonzero_guess, bool refined)
{
  return k.fold && !k.host_mult && solver == SolverType::bicgstab && (refined || !nonzero_guess) && t.pc && t.pc->block_inverse() && !t.coarse;
}

} // namespace

Status KrylovEngine::solve(SolverType solver, const MatrixEngine &m, const SolverOptions &opts, bool nonzero_guess, const double *b, double *x, bool device_vectors)
{
  const auto t0 = clock_type::now();
  Impl      &k  = *impl_;
  HEPTANE_ENSURE(m.built(), InputError, "solve before the operator was built");
  // mixed: refined against the fp64 matrix where the operator keeps one; the preconditioner
  // folded into the operator where that is the same method (the refinement's corrections
  // always start from zero)
  std::shared_ptr<const Operator<double>> op64 = k.refine && m.precision() == Precision::mixed ? m.operator_fp64() : nullptr;
  k.refined_against                            = "the fp64 copy of the matrix";
  if (k.refine && m.precision() == Precision::mixed && (k.host_mult || (!op64 && k.fp64_mult))) {
    // refined against the caller's products, in fp64: Amat's (set_host_operator), or, where
    // the operator keeps no fp64 copy, the matrix's (set_fp64_product); the rows, executor and
    // ranks' sums of the operator
    const auto &base     = op64 ? *op64 : static_cast<const Operator<double> &>(*m.operator_double());
    const bool  amat     = k.host_mult != nullptr;
    auto        h        = std::make_shared<detail::HostCallbackOperator<double>>(base.rows(), base.executor(), amat ? k.host_mult : k.fp64_mult, amat ? k.host_mult_desc : k.fp64_mult_desc);
    h->borrowed_reducer_ = base.reducer();
    k.refined_against    = amat ? k.host_mult_desc : k.fp64_mult_desc;
    op64                 = std::move(h);
  }
  const auto run = [&](auto &t, auto op) {
    using VT = std::remove_const_t<std::remove_pointer_t<decltype(t.b.data())>>;
    if (k.host_apply && (!t.host_pc || t.host_pc->rows() != op->rows() || t.host_pc->executor() != op->executor())) t.host_pc = std::make_shared<detail::HostCallbackOperator<VT>>(op->rows(), op->executor(), k.host_apply, k.pc_desc);
    if (k.host_mult) { // the caller's products around m's operator: its rows, executor and
                       // ranks' sums (made at each solve: m's operator may be new)
      auto h               = std::make_shared<detail::HostCallbackOperator<VT>>(op->rows(), op->executor(), k.host_mult, k.host_mult_desc);
      h->borrowed_reducer_ = op->reducer();
      op                   = std::move(h);
    }
    std::decay_t<decltype(op)> folded;
    if (folds(k, t, solver, nonzero_guess, op64 != nullptr)) folded = t.fold(m, k.timings, k.fold_ms);
    k.folded              = folded != nullptr;
    const Status st       = t.solve(solver, k.restart, op, folded, op64, opts, nonzero_guess, b, x, k.corrections, device_vectors);
    k.solver_name         = t.solver->name();
    k.timings.last_in_ms  = t.in_ms;
    k.timings.last_out_ms = t.out_ms;
    return st;
  };
  // a fold prepare() made for this solve is reported as this solve's, made before it
  const bool   pending    = k.fold_pending;
  const double pending_ms = k.fold_pending_ms;
  k.fold_pending          = false;
  k.fold_pending_ms       = 0;
  k.fold_ms               = 0;
  k.refined               = op64 != nullptr;
  Status st               = m.precision() == Precision::single ? run(k.f, m.operator_single()) : run(k.d, m.operator_double());
  k.fold_prepared         = k.folded && k.fold_ms == 0 && pending;
  if (k.fold_prepared) k.fold_ms = pending_ms;
  k.timings.last_solve_ms = ms_since(t0);
  // the solve's device work is done and x is back: a registration of the matrix's host values
  // that the last refresh asked for runs now, while the host assembles its next matrix
  // (PinnedUpload::start_deferred: the caller's CUDA calls would wait for it)
  if (m.executor()->is_cuda()) start_deferred_registrations(m.executor());
  return st;
}
std::uint64_t KrylovEngine::prepare(SolverType solver, const MatrixEngine &m, const SolverOptions &opts, bool nonzero_guess)
{
  Impl &k = *impl_;
  if (!m.built()) return 0;
  const auto go = [&](auto &t, auto op) -> std::uint64_t {
    const auto          exec   = op->executor();
    const std::uint64_t before = exec->allocations();
    t.prepare_vectors(*op);
    // solve() wraps these anew at every solve, or refines through MixedRefinement: b and x only
    const bool wrapped = k.host_apply || k.host_mult || t.coarse || (k.refine && m.precision() == Precision::mixed);
    if (!wrapped) {
      std::decay_t<decltype(op)> folded;
      if (folds(k, t, solver, nonzero_guess, false)) {
        double made_ms = 0;
        folded         = t.fold(m, k.timings, made_ms);
        if (made_ms > 0) { // made here for the next solve, which reports it
          k.fold_pending    = true;
          k.fold_pending_ms = made_ms;
        }
      }
      SolverOptions o         = opts;
      o.nonzero_initial_guess = nonzero_guess;
      t.prepare_on(solver, k.restart, op, folded, o);
    }
    return exec->allocations() - before;
  };
  return m.precision() == Precision::single ? go(k.f, m.operator_single()) : go(k.d, m.operator_double());
}
bool KrylovEngine::fold_made_at_prepare() const noexcept
{
  return impl_->fold_prepared;
}
void KrylovEngine::set_restart(int restart) noexcept
{
  impl_->restart = restart;
}
int KrylovEngine::restart() const noexcept
{
  return impl_->restart;
}
const std::string &KrylovEngine::solver_name() const noexcept
{
  return impl_->solver_name;
}
void KrylovEngine::set_fold(bool fold) noexcept
{
  impl_->fold = fold;
}
void KrylovEngine::set_fp64_product(std::function<void(const double *x, double *y)> apply, const std::string &describe)
{
  impl_->fp64_mult      = std::move(apply);
  impl_->fp64_mult_desc = describe;
}
const std::string &KrylovEngine::last_refined_against() const noexcept
{
  return impl_->refined_against;
}
void KrylovEngine::set_refine(bool refine) noexcept
{
  impl_->refine = refine;
}
bool KrylovEngine::last_solve_refined() const noexcept
{
  return impl_->refined;
}
int KrylovEngine::last_corrections() const noexcept
{
  return impl_->corrections;
}
bool KrylovEngine::last_solve_folded() const noexcept
{
  return impl_->folded;
}
double KrylovEngine::last_fold_ms() const noexcept
{
  return impl_->fold_ms;
}

std::string KrylovEngine::preconditioner_describe() const
{
  return impl_->pc_desc;
}
std::string KrylovEngine::preconditioner_hierarchy() const
{
  return impl_->f.pc ? amg_table(impl_->f.pc) : amg_table(impl_->d.pc);
}
const std::string &KrylovEngine::numeric_path() const noexcept
{
  return impl_->pc_path;
}
const KrylovTimings &KrylovEngine::timings() const noexcept
{
  return impl_->timings;
}

} // namespace heptane::plugin
