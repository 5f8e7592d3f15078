// The heptane side of the PETSc plugin (docs/design.md §5), free of PETSc: a matrix borrowed as
// host CSR (PETSc SeqAIJ arrays) becomes a heptane operator in the chosen format, precision
// and device; a Newton step that keeps the nonzero pattern only moves the values; the
// preconditioner and the Krylov solver run on that operator.
//
//     MatrixEngine m;
//     m.build(csr, hint, cfg);          // pattern changed: structure, format, operator
//     m.refresh_values(csr);            // same pattern, new values: no detection, no new index work
//     KrylovEngine k;
//     k.build_preconditioner(PcType::ilu0, csr, m);   // symbolic + numeric setup
//     k.refresh_preconditioner(csr, m);               // same pattern, new values: numeric only
//     Status st = k.solve(SolverType::bicgstab, m, opts, false, b, x);
//
// On several MPI ranks (docs/design.md §4) each rank gives its rows [row_begin, row_end) with
// global column indices; the operator is heptane::dist::DistributedBdia (BDIA-GH rows per
// rank, halo exchange, global reductions) and the preconditioner is built from the rank's
// diagonal block (block Jacobi over the ranks, like PETSc's bjacobi):
//
//     m.build_distributed(rows, row_begin, comm, hint, cfg);   // collective
//     m.refresh_values(rows);                                  // collective
//     k.build_preconditioner(PcType::ilu0, diagonal_block, m);
//     k.solve(...);                                            // b, x: this rank's rows
//
// Values-only refresh. heptane's public API builds an operator from COO and has no update of
// the values alone, so the plugin keeps what it needs for one (plugin/engine.cpp):
//   - bdiagh: the map from each CSR entry to its BDIA slot (k*rows + r), computed once per
//     pattern; a refresh scatters the new values through it. On a GPU the map is kept on the
//     device, the CSR values are uploaded as they are (PinnedUpload: chunks through two
//     page-locked buffers) into a device copy and a kernel scatters them;
//   - csr: the value array is copied as is (same pattern, same order; on a GPU in fp64
//     straight from PETSc's array through PinnedUpload);
//   - other formats: the operator is built once from COO with the block size and offsets
//     known (no detection); a refresh copies the values through the operator's slot map
//     (MatrixOperator::update_values, formats/matrix_operator.hpp: one upload and one kernel
//     per value array on a GPU).
// The preconditioner keeps its symbolic setup and redoes only its numeric part. Jacobi and
// block Jacobi take it where the values are (Preconditioner::update_values_device): on a GPU
// from the operator's device copy of the CSR values (bdiagh; csr in fp64), on the CPU from
// PETSc's array in place; no host copy of the matrix, no pattern compare (the caller's
// nonzero state says the pattern is the setup's); their first setup reads the pattern from
// the CsrView and the values there too. Otherwise (ILU(0)/BILU(0), an operator without
// device values) a refresh copies the new values into the host CSR the preconditioner was
// built from (the pattern is compared, not copied; no new allocation) and redoes the numeric
// part on the host (Preconditioner::update_values), writing the factors into the arrays it
// already has on the device. KrylovEngine::numeric_path() says which.
//
// Errors are heptane's typed exceptions (core/error.hpp); the PETSc layer turns them into
// PETSc errors.
#pragma once

#include <mpi.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "core/operator.hpp"
#include "core/types.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/matrix.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/krylov.hpp"
#include "solver/solve.hpp"
#include "solver/solver.hpp"

namespace heptane::plugin
{

/// A host CSR matrix borrowed, not owned (formats/csr/csr.hpp): what PETSc's assembled SeqAIJ
/// holds. Square; for build_distributed, this rank's rows with global column indices.
using heptane::CsrView;

/// A block CSR matrix in the caller's host arrays, borrowed (PETSc's SeqBAIJ with 32-bit
/// PetscInt): block_rows block rows of bs x bs blocks, block columns ascending within a block
/// row, each block's values column-major, one block after the other. Its scalar CSR (what a
/// CsrView of it holds) takes, for row r of block row ib, row r of each of ib's blocks in turn
/// (kernels::block_pattern_to_csr).
struct BlockCsrView {
  index_t        block_rows = 0;
  index_t        block_size = 1;
  const index_t *block_ptr  = nullptr; ///< block_rows + 1 entries, from 0
  const index_t *block_col  = nullptr; ///< block_ptr[block_rows] entries
  const double  *values     = nullptr; ///< block_ptr[block_rows] * bs * bs entries
  index_t        rows() const noexcept { return block_rows * block_size; }
  offset_t       nnz() const noexcept { return block_rows > 0 ? offset_t(block_ptr[block_rows]) * block_size * block_size : 0; }
};

/// The smallest block size at which MatrixEngine::build_blocks makes a block CSR matrix on the
/// CPU (fp64, format auto) the operator itself, read in place (no copy at a new pattern or at
/// a values-only refresh), instead of copying it into BDIA-GH: the block column index costs
/// 4 bytes a block, 50 % of the values' bytes at bs = 1, 12.5 % at bs = 2. Measured on one
/// core (docs/petsc.md, "BAIJ's arrays as the operator"): at bs = 1 an iteration took 1.16x
/// BDIA-GH's, at bs = 2 and 3 the same or less, while each setup saves the copy.
inline constexpr index_t borrow_min_block_size = 2;

/// Several MPI ranks: this rank's rows of a block CSR matrix (PETSc's MPIBAIJ) as its two
/// parts, borrowed: the diagonal part (the blocks of the rank's own block columns, numbered
/// from 0) and the others, block column j of which is the global block column off_cols[j].
struct DistBlocksView {
  BlockCsrView   diag;
  BlockCsrView   off;
  const index_t *off_cols = nullptr;
};

/// What the caller knows about the grid behind the matrix (a DMDA, or -heptane_grid and
/// -heptane_block). Unknown parts are detected from the pattern.
struct GridHint {
  std::array<index_t, 3> grid{0, 0, 0};  ///< J, H, I (x fastest); 0 = unknown
  index_t                block_size = 0; ///< Nc (unknowns per cell); 0 = unknown
  /// A star stencil of width 1 (7/5/3 points): the block offsets follow from the grid.
  /// false (e.g. a DMDA box stencil): the offsets are read from the pattern.
  bool        star_stencil = true;
  std::string source; ///< "DMDA", "-heptane_grid", ... (for messages and the view)
  bool        has_grid() const noexcept { return grid[0] > 0; }
};

/// Where and how the operator lives.
struct MatrixConfig {
  std::string format    = "auto"; ///< "auto" or a heptane format name (csr, bdiagh, ell, ...)
  std::string device    = "auto"; ///< auto | cpu | gpu | gpu:N | cuda | cuda:N
  Precision   precision = Precision::double_;
  bool        operator==(const MatrixConfig &o) const { return format == o.format && device == o.device && precision == o.precision; }
  bool        operator!=(const MatrixConfig &o) const { return !(*this == o); }
};

/// Times of the matrix side in milliseconds (the last call of each kind, and totals).
struct MatrixTimings {
  double last_build_ms   = 0; ///< full build: structure, format, operator, upload
  double last_detect_ms  = 0; ///< of which detect_structure (0 when the grid was given)
  double last_refresh_ms = 0; ///< values-only refresh
  int    builds          = 0;
  int    refreshes       = 0;
};

class MatrixEngine {
public:
  MatrixEngine();
  ~MatrixEngine();
  MatrixEngine(const MatrixEngine &)            = delete;
  MatrixEngine &operator=(const MatrixEngine &) = delete;

  /// A new pattern (or a new configuration): find the block size and block offsets (from
  /// the hint, else detect_structure), choose the format ("auto": BDIA-GH for a grid,
  /// detect_structure's choice otherwise), build the operator on the device.
  /// Throws InputError when the matrix is not square, when the hint does not fit it (size,
  /// an entry off the grid's block offsets), or what the format and device throw.
  void build(const CsrView &a, const GridHint &hint, const MatrixConfig &cfg);
  /// build() from a block CSR matrix without a host copy in scalar CSR, where the operator is
  /// BDIA-GH (format auto or bdiagh) and the hint gives the grid with its star stencil. On a
  /// GPU the block pattern and values go up as they are and are expanded on the device; the
  /// engine then is as after build() from the scalar CSR of `b` (refresh_values takes that
  /// CsrView; refresh_values_permuted takes b's values with b.block_size and no pos). On the
  /// CPU, with Nc = b.block_size, every block goes straight into its slots
  /// (kernels::bdia_values_from_blocks; no slot map: refresh_values_blocks needs none,
  /// refresh_values makes it at its first call). Returns false, changing nothing, in every
  /// other case (the caller builds from the scalar CSR). Throws InputError for a block off
  /// the grid's star offsets.
  /// On the CPU in fp64 with format auto and b.block_size >= borrow_min_block_size (a grid
  /// or not) the operator is b itself, borrowed: its arrays must live, unchanged in pattern,
  /// until the next build (a values-only refresh takes refresh_values_blocks with the arrays
  /// as they are then; refresh_values from scalar CSR throws NotSupported). format() is then
  /// bsr.
  /// allow_cpu / allow_gpu: whether the caller can go on without a host CSR when the device
  /// resolves to the CPU / a GPU (its preconditioner set up without one); false: return false
  /// there.
  bool build_blocks(const BlockCsrView &b, const GridHint &hint, const MatrixConfig &cfg, bool allow_cpu = false, bool allow_gpu = true);
  /// Same pattern as the last build, new values. Throws InputError when the number of
  /// entries changed (the caller must build instead). values_key (not 0): a.values stays
  /// allocated at its address while the key is the same (the caller's promise; the plugin
  /// passes PETSc's Mat id and nonzero state): on a GPU, from the register_after-th refresh
  /// with that key on (>= 1; 0: never) it is registered with CUDA (once) and read by the copy
  /// engine, without the host copy into the pinned buffers.
  void refresh_values(const CsrView &a, std::uint64_t values_key = 0, int register_after = 0);
  /// After a build on a GPU, for register_after = 1: marks the caller's host array of the
  /// values (nnz doubles, the array a later refresh_values or refresh_values_permuted passes
  /// under values_key) so that the solve after the build registers it with CUDA on a
  /// background thread and the first values-only refresh reads it in place. Returns false,
  /// doing nothing, on the CPU, on several ranks, for a store that does not upload host
  /// values, when values_key is 0 or the array is below PinnedUpload::min_register_bytes.
  bool mark_values(const double *values, offset_t nnz, std::uint64_t values_key);
  /// refresh_values with the values in another order: the value of entry e of the last
  /// build's CsrView is values[pos[e]] (host memory), pos a permutation of 0..nnz-1 that stays
  /// the same until the next build — PETSc's BAIJ array, blocks column-major, read in place
  /// instead of gathered into CSR order first. block_size > 0 says more: the values are such a
  /// block CSR array of that block size and the last build's pattern is its scalar expansion
  /// (kernels::block_values_to_csr's layout), so that pos follows from the row pointers and
  /// may be null. Returns false, changing nothing, where the operator has no such path (only
  /// BDIA-GH has one: on the CPU it composes its slot map with pos once (pos needed); on a GPU
  /// the values go up as they are and a kernel puts them into CSR order there, by
  /// block_values_to_csr's formula where block_size > 0 and the pattern is on the device,
  /// else through pos's inverse uploaded once); the caller then gathers and calls
  /// refresh_values. values_key and register_after: as refresh_values' (on a GPU the values
  /// array is registered and read in place from the register_after-th refresh with that key).
  bool refresh_values_permuted(const double *values, const index_t *pos, offset_t nnz, index_t block_size = 0, std::uint64_t values_key = 0, int register_after = 0);
  /// A values-only refresh from a block CSR matrix of the build's pattern (PETSc's BAIJ), read
  /// by formula: where the operator is BDIA-GH on the CPU with Nc = the block size, every
  /// block goes straight into its slots (kernels::bdia_values_from_blocks: no map, nothing
  /// composed). Returns false, changing nothing, elsewhere (the caller then takes
  /// refresh_values_permuted's path). Throws InputError for a block off the operator's block
  /// offsets (a pattern that is not the build's).
  bool refresh_values_blocks(const BlockCsrView &b);
  /// A values-only refresh from CSR values (the build's pattern, CSR order, nnz of them) that
  /// are in device memory already (PETSc's aijcusparse after a device-side update): where the
  /// operator is BDIA-GH on that same GPU they are copied there and scattered, with no host
  /// copy and no upload; returns false, changing nothing, elsewhere (another device, host
  /// memory, another format, several ranks: the caller takes the host path).
  bool refresh_values_device(const double *values, offset_t nnz);
  /// Several MPI ranks, collective (every rank calls it and every rank gets the same answer or
  /// the same error): a values-only refresh of build_distributed's operator from this rank's
  /// rows as block CSR parts of the build's pattern, read by formula: on the CPU with Nc = the
  /// block size every block of both parts goes straight into its slots of the local BDIA-GH
  /// block (kernels::bdia_values_from_blocks: no scalar copy, no gather, no map). Returns false,
  /// changing nothing, elsewhere (a GPU, another Nc: the caller gathers and calls
  /// refresh_values). Throws InputError where the parts are not the build's pattern.
  bool refresh_values_blocks(const DistBlocksView &b);
  /// Several MPI ranks; collective over `comm` (every rank calls it, and every rank throws
  /// the same error, naming the rank it comes from). `a`: this rank's rows [row_begin,
  /// row_begin + a.rows) with GLOBAL column indices; the ranks' ranges follow each other in
  /// rank order and start on multiples of Nc (hint.block_size, else 1). The global numbering
  /// must be a GH one: with a grid in the hint (star stencil) every entry must lie on its
  /// seven block offsets {0, ±1, ±J, ±J·H}, else InputError (e.g. a DMDA split in x or y);
  /// without a grid the block offsets are the union of the ranks' ones and BDIA-GH must not
  /// store more than four times the entries. Format auto or bdiagh only (NotSupported
  /// otherwise). On a GPU each rank takes the GPU of its node-local rank unless
  /// cfg.device names one. refresh_values() then scatters new values (collective too).
  void build_distributed(const CsrView &a, index_t row_begin, MPI_Comm comm, const GridHint &hint, const MatrixConfig &cfg);
  /// build_distributed from this rank's rows as two block CSR parts (PETSc's MPIBAIJ), without a
  /// scalar CSR: where Nc (hint.block_size) is the block size and the device resolves to the
  /// CPU, every block goes straight into its slots of the local BDIA-GH block
  /// (kernels::bdia_values_from_blocks; the slot maps of refresh_values are made at its first
  /// call, refresh_values_blocks(DistBlocksView) needs none). Returns false on every rank,
  /// changing nothing, elsewhere (the caller builds from the scalar rows); collective, with
  /// build_distributed's checks and errors.
  bool build_distributed_blocks(const DistBlocksView &b, index_t row_begin, MPI_Comm comm, const GridHint &hint, const MatrixConfig &cfg);
  /// Several MPI ranks whose numbering is not a GH one, or cfg.format "csr": the operator is
  /// heptane's general row-split one (dist::DistributedCsr: this rank's diagonal block and its
  /// other entries over a halo of exactly the columns it reads), from `a` as build_distributed
  /// takes it (a DistRowsScope: both parts where they are; else global columns), in the
  /// precision asked for (mixed: the fp64 copy beside it for the refinement), on the rank's
  /// device (a GPU: the halo staged through the host); collective; InputError (agreed) for
  /// columns outside the matrix.
  void build_distributed_csr(const CsrView &a, index_t row_begin, index_t nc, MPI_Comm comm, const MatrixConfig &cfg);

  bool                            built() const noexcept;
  bool                            distributed() const noexcept; ///< built by build_distributed
  int                             ranks() const noexcept;       ///< 1 unless distributed
  index_t                         row_begin() const noexcept;   ///< first global row of this rank
  index_t                         global_rows() const noexcept;
  const MatrixConfig             &config() const noexcept;
  Precision                       precision() const noexcept;
  std::shared_ptr<const Executor> executor() const;
  /// The operator for vectors of double (precision double or mixed) or float (single).
  std::shared_ptr<const Operator<double>> operator_double() const;
  std::shared_ptr<const Operator<float>>  operator_single() const;
  /// Precision mixed: the matrix in fp64 beside the fp32 values, for the residuals of the
  /// refinement (one rank's bdiagh); nullptr otherwise.
  std::shared_ptr<const Operator<double>> operator_fp64() const;
  index_t                                 rows() const noexcept; ///< this rank's rows
  offset_t                                nnz() const noexcept;  ///< this rank's entries
  index_t                                 block_size() const noexcept;
  const std::vector<index_t>             &block_offsets() const noexcept;
  std::array<index_t, 3>                  grid() const noexcept;
  Format                                  format() const noexcept;
  /// The operator's describe(), e.g. "bdiagh 4096x4096 Nc=1 D=7 fp64 on cpu (2 threads)".
  std::string describe() const;
  /// How the structure and the format were found, one line.
  const std::string &structure_note() const noexcept;
  /// How a values-only refresh works for this format, one line.
  std::string refresh_note() const;
  /// What -heptane_device auto chose at the last build and why (resolve_device); empty when
  /// a device was named or the operator is distributed.
  const std::string &device_choice() const noexcept;
  /// The CSR values of the last build or refresh (nnz() doubles in the order of the CsrView
  /// given) in the executor's device memory, where the operator keeps a copy there (bdiagh,
  /// and csr in fp64, on a GPU); nullptr otherwise. Valid until the next build.
  const double *csr_values_on_device() const noexcept;
  /// The operator's BDIA-GH matrix in fp64 in host memory (one rank, the CPU; mixed precision:
  /// its fp64 copy) when its last build or refresh_values read `values` (a CsrView's values
  /// array); nullptr otherwise (another array, another kind of refresh, another format or
  /// device). A preconditioner refreshed after the operator reads its diagonal blocks there
  /// (KrylovEngine::refresh_preconditioner). Valid until the next build or refresh.
  const Bdia<double> *host_bdia(const double *values) const;
  /// The CSR pattern of the last build (the CsrView's row pointers and columns) in the
  /// executor's device memory (on_executor set), where the operator keeps it there (bdiagh on
  /// a GPU, slot map made on the device); a view with rows = 0 otherwise. Valid until the
  /// next build.
  CsrPatternView csr_pattern_on_device() const;
  /// Â = A M⁻¹ for a right block-Jacobi (or Jacobi) M folded into the operator: `binv` holds
  /// M⁻¹'s blocks of b (Preconditioner::block_inverse), in the operator's vector precision;
  /// the result is written into `reuse` when it is an earlier result for this build (no
  /// allocation), else into a new operator. nullptr where the operator cannot form it (one
  /// rank's bdiagh only; b must divide the block size). Valid until the next build.
  std::shared_ptr<const Operator<double>> right_scaled(const double *binv, index_t b, const std::shared_ptr<const Operator<double>> &reuse) const;
  std::shared_ptr<const Operator<float>>  right_scaled(const float *binv, index_t b, const std::shared_ptr<const Operator<float>> &reuse) const;
  const MatrixTimings                    &timings() const noexcept;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// Times of the solver side in milliseconds (the last solve).
struct KrylovTimings {
  double last_pc_ms    = 0; ///< preconditioner setup or refresh (the last one)
  double last_solve_ms = 0; ///< upload b (and x0), iterate, download x
  double last_in_ms    = 0; ///< of last_solve_ms: b (and x0) into heptane's vectors
  double last_out_ms   = 0; ///< of last_solve_ms: x back into the caller's
  int    pc_builds     = 0; ///< full setups (symbolic + numeric)
  int    pc_refreshes  = 0; ///< values-only refreshes (numeric only)
};

/// Several ranks, collective over `comm`: whether the matrix whose rows these are (MPIAIJ's
/// split, off_cols null: off's columns global; the ranks' rows consecutive from row_begin)
/// equals its transpose, relative tolerance `tol` (dist::check_symmetry, symmetry.hpp: the
/// diagonal block on the rank, the couplings between ranks by one exchange). The worst pair in
/// global indices. NotSupported in a plugin built without the distributed library.
SymmetryCheck check_symmetry_ranks(MPI_Comm comm, const CsrView &diag, const CsrView &off, const index_t *off_cols, index_t row_begin, double tol);

/// The global coarse correction's settings (dist::CoarseOptions, distributed/coarse_space.hpp).
struct GlobalCoarseOptions {
  index_t aggregates  = 0;     ///< per rank; 0: its default
  bool    symmetric   = false; ///< its symmetric form (CG)
  int     solve       = 0;     ///< 0 auto, 1 dense LU, 2 AMG on every rank (dist::CoarseOptions::Solve's order)
  int     cycles      = 2;     ///< AMG: steps of its iteration per coarse solve
  int     aggregation = 0;     ///< 0 bfs, 1 strength (dist::CoarseOptions::Aggregation's order)
  /// Instead of a coarse correction around the rank's preconditioner: one AMG hierarchy over
  /// all ranks (dist::DistAmg) with these options, which replaces it (-heptane_amg_global).
  bool       hierarchy = false;
  AmgOptions amg;
  /// With hierarchy and Nc > 1: CPR whose pressure stage is that AMG (dist::DistCpr).
  bool       cpr = false;
  CprOptions cpr_opts;
  /// A null space declared (MatSetNullSpace): a singular A_c solved by a generalized inverse
  /// (dist::CoarseOptions::singular)
  bool singular = false;
  bool operator==(const GlobalCoarseOptions &o) const noexcept
  {
    const auto same = [](const AmgOptions &a, const AmgOptions &b) {
      return a.strength_threshold == b.strength_threshold && a.prolongation_weight == b.prolongation_weight && a.prolongation_max_entries == b.prolongation_max_entries && a.coarse_size == b.coarse_size && a.max_levels == b.max_levels && a.tail_rows == b.tail_rows && a.smoother == b.smoother && a.pre_sweeps == b.pre_sweeps && a.post_sweeps == b.post_sweeps && a.singular == b.singular;
    };
    return aggregates == o.aggregates && symmetric == o.symmetric && solve == o.solve && cycles == o.cycles && aggregation == o.aggregation && singular == o.singular && hierarchy == o.hierarchy && (!hierarchy || same(amg, o.amg)) && cpr == o.cpr &&
           (!cpr || (cpr_opts.pressure_index == o.cpr_opts.pressure_index && cpr_opts.second_stage_auto == o.cpr_opts.second_stage_auto && cpr_opts.second_stage == o.cpr_opts.second_stage && same(cpr_opts.amg, o.cpr_opts.amg)));
  }
  bool operator!=(const GlobalCoarseOptions &o) const noexcept { return !(*this == o); }
};

class KrylovEngine {
public:
  KrylovEngine();
  ~KrylovEngine();
  KrylovEngine(const KrylovEngine &)            = delete;
  KrylovEngine &operator=(const KrylovEngine &) = delete;

  /// (Re)build the preconditioner of `type` from `a` (the values the operator of `m` holds;
  /// for a distributed `m`, this rank's diagonal block with local columns) with m's block
  /// size, on m's executor, in m's vector precision.
  /// amg and cpr: built from a host copy of `a` with `opts` (PcOptions: -heptane_amg_*,
  /// -heptane_cpr_*); on one rank whose operator is bdiagh or csr (an operator object a
  /// values-only refresh updates in place) AMG's finest level and CPR's residual run through
  /// m's operator itself instead of a copy of their own. Distributed: AMG/CPR of this rank's
  /// diagonal block (block Jacobi over the ranks).
  void build_preconditioner(PcType type, const CsrView &a, const MatrixEngine &m, const PcOptions &opts = {});
  /// New values for the preconditioner built last, on the same pattern (a Newton step):
  /// the numeric part only (Preconditioner::update_values_device where the values are, see
  /// above, else update_values). `a`: the values m holds (m.refresh_values(a) first). Throws
  /// InputError when there is none, when `a` has another size (or, on the host path,
  /// another pattern), or when the values cannot be factored; the preconditioner then keeps
  /// its previous values (build_preconditioner to start over).
  void refresh_preconditioner(const CsrView &a, const MatrixEngine &m);
  /// The host CSR the ILU(0) types are set up and refreshed from (their copy of the matrix),
  /// as writable arrays of `rows` rows and `nnz` entries: kept where they have that size (then
  /// `kept`: what the caller wrote there last is still there), else made anew. A caller that
  /// makes the matrix itself (PETSc's MPIBAIJ expanded by formula) writes it there (row
  /// pointers, columns, values) and passes a view of these columns and values (row pointers of
  /// its own) to build_preconditioner or refresh_preconditioner, which then copy nothing: one
  /// copy of the matrix on the host, not two. Valid until a preconditioner of another kind
  /// (Jacobi, AMG on a GPU, a host preconditioner) drops the copy.
  struct HostCsr {
    offset_t *row_ptr = nullptr;
    index_t  *col_idx = nullptr;
    double   *values  = nullptr;
    bool      kept    = false;
  };
  HostCsr host_csr(index_t rows, offset_t nnz);
  /// refresh_preconditioner with the values in another order (see
  /// MatrixEngine::refresh_values_permuted; m refreshed from the same values first): on the
  /// CPU through Preconditioner::update_values_permuted (none, Jacobi, block Jacobi); on a GPU
  /// from m's device copy of the values in CSR order (update_values_device: the types whose
  /// numeric part runs there, AMG and CPR included). Returns false, changing nothing, where
  /// that path does not apply; the caller then gathers and calls refresh_preconditioner.
  /// Throws as refresh_preconditioner.
  bool refresh_preconditioner_permuted(const double *values, const index_t *pos, offset_t nnz, const MatrixEngine &m);
  /// refresh_preconditioner from a block CSR matrix of the setup's pattern (PETSc's BAIJ), on
  /// the CPU through Preconditioner::update_values_blocks (none, Jacobi, block Jacobi): the
  /// positions follow from the block pattern, no map of the entries is made or read. `b` is
  /// the matrix the preconditioner was set up from: on several ranks (m distributed) this
  /// rank's diagonal blocks (PETSc's MPIBAIJ's diagonal part). Returns false, changing
  /// nothing, elsewhere (the caller then takes the permuted path, or gathers). Throws as
  /// refresh_preconditioner.
  bool refresh_preconditioner_blocks(const BlockCsrView &b, const MatrixEngine &m);
  /// A preconditioner heptane does not have, applied by the caller on host arrays (the PETSc
  /// plugin: PETSc's own PC through PCApply): apply(r, z) sets z = M^-1 r for m.rows() doubles
  /// of this rank (collective where m is distributed: every rank's solver calls it together).
  /// On a GPU r goes to the host and z back at each application. Replaces any preconditioner
  /// built before until build_preconditioner; `describe` is what preconditioner_describe() says.
  /// apply may throw to stop the solve (the exception leaves solve()).
  void set_host_preconditioner(std::function<void(const double *r, double *z)> apply, const std::string &describe);
  /// Several ranks (m distributed), collective over `comm`: a global coarse correction
  /// around the preconditioner built last (dist::CoarseSpace, distributed/coarse_space.hpp:
  /// piecewise-constant aggregates, o.aggregates per rank (0: its default), A_c = Pᵀ A P
  /// with the couplings between ranks, whole on every rank and solved there by a dense LU or
  /// AMG, o.solve), which solve() then applies instead of that preconditioner alone (no
  /// fold); o.symmetric: its symmetric form (CG).
  /// `diag`, `off`, `off_cols`: this rank's rows as MPIAIJ splits them (off_cols null: off's
  /// columns are global). Kept across setups: a values-only step assembles A_c again from
  /// the new values; a new operator build or other options `o` make it anew,
  /// and a new preconditioner (build_preconditioner, set_host_preconditioner) drops it.
  /// Throws what dist::CoarseSpace throws (InputError: a singular coarse matrix, rows that do
  /// not fit; the same on every rank; nothing kept then) and NotSupported in a plugin built
  /// without the distributed library.
  void set_global_coarse(const CsrView &diag, const CsrView &off, const index_t *off_cols, MPI_Comm comm, const MatrixEngine &m, const GlobalCoarseOptions &o);
  void clear_global_coarse() noexcept;
  bool has_global_coarse() const noexcept;
  /// Its describe(), or empty without one; the milliseconds its last build or update took.
  std::string global_coarse_describe() const;
  double      global_coarse_ms() const noexcept;
  /// Whether the preconditioner is one set by set_host_preconditioner.
  bool host_preconditioner() const noexcept;
  /// The Krylov loop's products by the caller on host arrays instead of m's operator (the
  /// PETSc plugin: the KSP's Amat through MatMult when it is not Pmat, e.g. a matrix-free one
  /// from -snes_mf_operator; m and the preconditioner are then Pmat's): apply(x, y) sets y = A x
  /// for m.rows() doubles of this rank (collective where m is distributed; the dot products
  /// still sum over m's ranks). On a GPU x goes to the host and y back at each product; no
  /// fold then, and mixed precision refines against these products. `describe` is what
  /// host_operator_describe() says. apply may throw to stop the solve. Kept until
  /// clear_host_operator().
  void               set_host_operator(std::function<void(const double *x, double *y)> apply, const std::string &describe);
  void               clear_host_operator() noexcept;
  bool               host_operator() const noexcept;
  const std::string &host_operator_describe() const noexcept;
  bool               has_preconditioner() const noexcept;
  /// Solve A x = b with the operator of `m` and the preconditioner. b and x are host arrays
  /// of m.rows() doubles (this rank's rows; collective when `m` is distributed); x is the initial guess when nonzero_guess and receives the last
  /// iterate. Numerical trouble is the Status; misuse throws.
  /// BiCGStab with Jacobi or block Jacobi M and a zero initial guess on one rank's bdiagh
  /// operator: the preconditioner folded into the operator (fold, the default), i.e.
  /// unpreconditioned BiCGStab on Â = A M⁻¹ (MatrixEngine::right_scaled, redone after every
  /// new build or refresh of A or M) for y, then x = M⁻¹ y. The same iterates and residuals
  /// as right preconditioning, to rounding, without two preconditioner applications and a
  /// vector pass per iteration; Â costs a second copy of the matrix values.
  /// The solver is made by make_solver (solver/krylov.hpp) and kept across solves (remade when
  /// the type or the GMRES restart changes).
  /// device_vectors: b and x are in the device memory of m's GPU instead (PETSc's CUDA
  /// vectors, as vectors_on_device() checked): they are copied on the device, never through
  /// the host, and the device is synchronised before b is read and after x is written.
  Status solve(SolverType solver, const MatrixEngine &m, const SolverOptions &opts, bool nonzero_guess, const double *b, double *x, bool device_vectors = false);
  /// Make now what the next solve(solver, m, opts, nonzero_guess, ...) would make at its start:
  /// b's and x's copies on the executor, Â (set_fold) where that solve folds, and the solver's
  /// workspace (Solver::prepare), so that a host's KSPSetUp pays for them instead of its first
  /// KSPSolve. Optional (solve makes whatever is missing); where the solve wraps the operator or
  /// the preconditioner anew each time (host products or preconditioner, a global coarse
  /// correction, mixed precision refined), only b and x. Returns the allocations it made.
  std::uint64_t prepare(SolverType solver, const MatrixEngine &m, const SolverOptions &opts, bool nonzero_guess);
  /// Whether the last fold (last_fold_ms) was made by prepare() rather than by a solve.
  bool fold_made_at_prepare() const noexcept;
  /// Whether solve() can take b and x where they are: both in the device memory of the GPU
  /// m's operator runs on, and m in fp64 (single and mixed precision convert on the host).
  static bool vectors_on_device(const MatrixEngine &m, const double *b, const double *x);
  /// GMRES: the restart length m (basis vectors per cycle, >= 1; default 30).
  void set_restart(int restart) noexcept;
  int  restart() const noexcept;
  /// The name of the solver of the last solve (Solver::name(), e.g. "gmres(30)"), or empty.
  const std::string &solver_name() const noexcept;
  void               set_fold(bool fold) noexcept;
  /// Precision mixed: iterative refinement (solver/refine.hpp), so that the true residual
  /// meets rtol as in double (refine, the default), against the fp64 matrix the operator keeps
  /// (MatrixEngine::operator_fp64: one rank's bdiagh), else against the caller's fp64 products
  /// (set_host_operator's, else set_fp64_product's); corrections of the last solve.
  void set_refine(bool refine) noexcept;
  /// The caller's product y = A x with the fp64 matrix, host arrays of m's rows (a PETSc
  /// MatMult on several ranks), for the refinement of a mixed solve whose operator keeps no
  /// fp64 copy (one rank's CSR, ELL, ...; the distributed operators). Only read for the
  /// residual of each correction: a few products per solve. `describe` is what
  /// last_refined_against() says. Kept until replaced.
  void set_fp64_product(std::function<void(const double *x, double *y)> apply, const std::string &describe);
  /// What the last refined solve's residuals came from ("the fp64 copy of the matrix" or the
  /// caller's description).
  const std::string &last_refined_against() const noexcept;
  int                last_corrections() const noexcept;
  /// Whether the last solve was refined so (its residuals then are the fp64 matrix's).
  bool last_solve_refined() const noexcept;
  /// Whether the last solve ran on the folded operator, and how long making it took (ms; 0
  /// when it was reused).
  bool        last_solve_folded() const noexcept;
  double      last_fold_ms() const noexcept;
  std::string preconditioner_describe() const;
  /// amg: the hierarchy (AmgInfo::table(): level, rows, nnz, nnz/row, lambda_max, the
  /// complexities), several lines; empty for the other types (CPR's pressure AMG is in its
  /// describe()).
  std::string preconditioner_hierarchy() const;
  /// Where the last setup or refresh ran the preconditioner's numeric part, one line (e.g.
  /// "numeric part on the device, from the operator's device copy of the values").
  const std::string   &numeric_path() const noexcept;
  const KrylovTimings &timings() const noexcept;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// Times and counts of a PcEngine.
struct PcTimings {
  double last_setup_ms  = 0; ///< the last build or refresh
  double apply_ms       = 0; ///< all applies together (with the copies to and from the executor)
  int    builds         = 0; ///< full setups (new pattern)
  int    refreshes      = 0; ///< values-only (numeric only: AMG keeps its aggregates, P and R)
  long   applies        = 0;
  long   device_applies = 0; ///< of them: on a CUDA Vec's device arrays where they are (apply_device)
};

/// A heptane preconditioner on its own, for PETSc's PC types hamg and hcpr under PETSc's own
/// KSPs (cg, gmres, ...): set up from a borrowed host CSR (one rank's matrix, or on several
/// ranks the rank's diagonal block: block Jacobi over the ranks), applied to host vectors,
/// which go to the executor and back (no copy on the CPU).
///
///     PcEngine p;
///     p.build(PcType::amg, csr, nc, "auto", opts);   // "auto": a GPU when one is visible
///     p.apply(r, z);                                  // z = M^-1 r, host arrays of rows()
///     p.refresh(csr);                                 // same pattern, new values
class PcEngine {
public:
  PcEngine();
  ~PcEngine();
  PcEngine(const PcEngine &)            = delete;
  PcEngine &operator=(const PcEngine &) = delete;

  /// `device`: as -heptane_device (auto, cpu, gpu, gpu:N, cuda, cuda:N); the process's
  /// executor of it (device_pool.hpp). Throws what make_preconditioner throws.
  void build(PcType type, const CsrView &a, index_t nc, const std::string &device, const PcOptions &opts);
  /// Same pattern, new values: Preconditioner::update_values (host CSR path). Throws
  /// InputError when there is none, or the pattern or size differs (build instead).
  void refresh(const CsrView &a);
  /// z = M^-1 r; r and z host arrays of rows() doubles.
  void apply(const double *r, double *z);
  /// Whether r and z are device memory of the preconditioner's GPU (a PETSc CUDA Vec's
  /// arrays), so that apply_device can run on them where they are.
  bool on_device(const double *r, const double *z) const;
  /// z = M^-1 r with r and z in the preconditioner's GPU memory (on_device): after a
  /// device-wide synchronisation (the caller's work on them, on its own stream, done), on
  /// the arrays themselves, no copy; synchronised before it returns.
  void        apply_device(const double *r, double *z);
  bool        built() const noexcept;
  index_t     rows() const noexcept;
  PcType      type() const noexcept;
  index_t     block_size() const noexcept;
  std::string describe() const;
  /// AMG: AmgInfo::table(); empty for CPR.
  std::string                     hierarchy() const;
  std::shared_ptr<const Executor> executor() const;
  const PcTimings                &timings() const noexcept;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace heptane::plugin
