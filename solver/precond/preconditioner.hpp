// Preconditioners: each is an Operator whose apply is z = M⁻¹ r (docs/design.md §3).
//
//   none          M = I. The solvers notice it and skip the copy (p̂ = p).
//   jacobi        M = diag(A).
//   block_jacobi  M = blockdiag(A) with Nc × Nc blocks, inverted at setup with partial
//                 pivoting (the natural preconditioner for GH matrices).
//   ilu0          ILU(0) for Nc = 1, block ILU(0) (BILU(0)) over Nc × Nc blocks for Nc > 1:
//                 L U ≈ A with the block pattern of A, no fill. Factorised on the host at
//                 setup; on the GPU the triangular solves are level-scheduled (rows whose
//                 dependencies are done form a level; one kernel launch per level), on the
//                 CPU they run in natural row order. The exact natural-order ILU(0) PETSc
//                 computes; J+H+I−2 levels per triangle on a 7-point grid, so on the GPU its
//                 apply is launch-bound.
//   ilu0_mc       ILU(0)/BILU(0) of A' = P A Pᵀ, P a greedy multi-colour ordering of the
//                 block graph (red-black on 7-point grids): z = Pᵀ (L'U')⁻¹ P r with one
//                 launch per colour per triangle, coalesced (thread per scalar row, factors
//                 column-major per colour), D⁻¹ blocks precomputed. Weaker than natural
//                 ILU(0) (more iterations; measured in docs and solve.hpp) but on the GPU
//                 each apply costs about as much as a few SpMVs. "ilu0-mc" on the command line.
//
// Setup takes the canonical host CSR of A in double (whatever precision the solve uses),
// the block size, and the executor the preconditioner lives on; the factors are stored in
// VT on that executor. Setup errors (thrown as InputError, naming the block row and the
// pivot): a zero diagonal (Jacobi, unless PcOptions::jacobi_zero_diagonal takes it as PETSc's
// PCJACOBI does), a singular diagonal block (block-Jacobi), a zero or
// singular pivot block (ILU(0)), a size that Nc does not divide.
//
// Setup is a symbolic part, which depends on the nonzero pattern only (the block pattern
// and where each entry goes in it, the diagonal positions, the elimination's list of block
// updates, the multi-colour ordering and layout, the level schedules), and a numeric part.
// update_values(A') redoes only the numeric part for new values on the same pattern (a
// Newton step: PETSc's SAME_NONZERO_PATTERN) and writes the new factors into the arrays the
// preconditioner already has on its executor; the result is the same, bit for bit, as
// make_preconditioner on A'.
//
// Jacobi and block Jacobi also run their numeric part where the values are:
// update_values_device(values) takes A's CSR value array in the executor's memory (a GPU's,
// for a caller that keeps the matrix there) and inverts the (block) diagonal on the executor,
// with the host's operations and roundings, so with the same bits; the host never sees the
// values. make_preconditioner(type, pattern, values, ...) sets them up that way from a
// borrowed host pattern (the symbolic part) and values on the executor.
#pragma once

#include <memory>
#include <string>

#include "core/array.hpp"
#include "core/operator.hpp"
#include "formats/csr/csr.hpp"
#include "solver/precond/amg/amg_options.hpp"

namespace heptane {

template <class T>
struct Bdia;  // formats/bdia/bdia.hpp

enum class PcType { none, jacobi, block_jacobi, ilu0, ilu0_mc, amg, cpr };

/// A square host CSR nonzero pattern, borrowed, not owned (e.g. PETSc's SeqAIJ arrays):
/// 0-based, columns sorted within each row. Row pointers 32-bit (row_ptr32, as PETSc's) or
/// 64-bit (row_ptr64): set one of the two.
struct CsrPatternView {
    index_t rows = 0;
    const index_t* row_ptr32 = nullptr;   ///< rows + 1 entries, or
    const offset_t* row_ptr64 = nullptr;  ///< rows + 1 entries
    const index_t* col_idx = nullptr;     ///< nnz() entries
    /// The arrays live in the executor's memory (a GPU's), not the
    /// host's: make_preconditioner's values overload then makes the Jacobi/block-Jacobi
    /// gather map there and keeps no host copy of the pattern (row_begin and nnz() must not
    /// be called on such a view from the host).
    bool on_executor = false;
    offset_t row_begin(index_t r) const noexcept
    {
        return row_ptr64 ? row_ptr64[r] : offset_t(row_ptr32[r]);
    }
    offset_t nnz() const noexcept { return rows > 0 ? row_begin(rows) : 0; }
};

/// "none", "jacobi", "bjacobi" (also "block_jacobi", "block-jacobi"), "ilu0" (also "ilu",
/// "bilu0"), "ilu0-mc" (also "ilu0_mc", "mcilu0", "bilu0-mc"), "amg" (smoothed-aggregation
/// multigrid, solver/precond/amg/amg.hpp), "cpr" (two-stage CPR for Nc > 1,
/// solver/precond/amg/cpr.hpp). Throws InputError naming the choices.
PcType parse_pc(const std::string& name);
const char* to_string(PcType t) noexcept;

/// Base of heptane's preconditioners. apply(alpha, r, beta, z) = alpha·M⁻¹ r + beta·z, with
/// r and z in the executor's memory; r and z must not alias.
template <class VT>
class Preconditioner : public Operator<VT> {
public:
    index_t rows() const override { return n_; }
    index_t cols() const override { return n_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    using Operator<VT>::apply;  // z = M⁻¹ r
    void apply(VT alpha, const VT* r, VT beta, VT* z) const override;
    /// M⁻ᵀ r: none and jacobi only (NotSupported for the others).
    void apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const override;
    std::string describe() const override;
    /// On a GPU every apply is kernel launches and device copies on the executor's stream.
    bool graph_safe() const override { return exec_->is_cuda(); }

    virtual PcType type() const noexcept = 0;
    bool is_identity() const noexcept { return type() == PcType::none; }
    index_t block_size() const noexcept { return nc_; }
    /// Wall-clock milliseconds the setup, or the last update_values, took (host work and
    /// the upload).
    double setup_ms() const noexcept { return setup_ms_; }

    /// New values for the matrix the preconditioner was set up from: `a` must have the same
    /// size and nonzero pattern (the same row pointers and column indices; the block size
    /// stays). Redoes the numeric part only (see above) and uploads the new factors into
    /// the existing arrays. Throws InputError when the pattern differs (none: when the size
    /// differs; it has no pattern) and what the setup throws for values that cannot be
    /// factored (a zero or singular pivot); the preconditioner then keeps its previous
    /// values. The default throws NotSupported (every preconditioner of heptane has one).
    virtual void update_values(const Csr<double>& a);
    /// update_values with A's new CSR values where the preconditioner lives: `values` holds
    /// nnz doubles in the executor's memory (device memory on a GPU, host memory on the CPU)
    /// in the CSR order of the matrix the preconditioner was set up from, whose pattern the
    /// caller guarantees (only nnz is checked: InputError). The numeric part runs on the
    /// executor, the values are not copied to the host and the pattern is not compared.
    /// Returns false, changing nothing, where the preconditioner has no such path: the ILU(0)
    /// types (their factorisation runs on the host: use update_values), and on a GPU block
    /// sizes above 8 or a pattern with an entry stored twice. none: true. Jacobi and block
    /// Jacobi on the CPU: always true (the host numeric part on the pointer). Throws as
    /// update_values for values that cannot be factored (the message names the block; the
    /// preconditioner keeps its previous values) and DeviceError for a failed launch.
    virtual bool update_values_device(const double* values, offset_t nnz);
    /// update_values_device with the values in another order: the value of CSR entry e (in
    /// the order of the matrix the preconditioner was set up from) is values[pos[e]], pos a
    /// permutation of 0..nnz-1 in host memory that stays the same (the same pointer, the same
    /// contents) until the next setup — e.g. PETSc's BAIJ storage, blocks column-major, read
    /// in place instead of gathered into CSR order first. The first call composes the
    /// preconditioner's own gather map with pos, later ones only read. Returns false, changing
    /// nothing, where there is no such path: every type but none, Jacobi and block Jacobi;
    /// Jacobi and block Jacobi on a GPU or with an entry stored twice. none: true (nothing to
    /// update). Throws as update_values_device.
    virtual bool update_values_permuted(const double* values, const index_t* pos, offset_t nnz);
    /// update_values_permuted with the values of a block CSR matrix (PETSc's BAIJ: block_rows
    /// block rows of bs x bs blocks, block k in block column block_col[k], each stored
    /// column-major one after the other, block_ptr from 0) whose scalar expansion has the
    /// pattern set up from, in host memory: the positions follow from the block pattern, so
    /// nothing of nnz size is made or read (the gather map into the block array is made once
    /// per block_col pointer). Returns false, changing nothing, where there is no such path:
    /// every type but none, Jacobi and block Jacobi; those on a GPU, with an entry stored twice
    /// or set up from a pattern the blocks do not hold. Throws as update_values_device.
    virtual bool update_values_blocks(const double* values, index_t block_rows, index_t bs,
                                      const index_t* block_ptr, const index_t* block_col);
    /// update_values_device with A itself as a BDIA-GH matrix `a` in host memory, holding the
    /// values of the matrix the preconditioner was set up from (the caller guarantees it: an
    /// operator refreshed from the same values). Jacobi and block Jacobi on the CPU read their
    /// blocks off a's main block diagonal, a contiguous stretch per element diagonal, instead
    /// of gathering them from CSR values spread over nnz entries. Returns false, changing
    /// nothing, where there is no such path: every type but none, Jacobi and block Jacobi;
    /// those on a GPU, with an entry stored twice, for another size, a block size that does
    /// not divide a's or an `a` without a block diagonal at offset 0 (or with it marked as the
    /// identity: Bdia::unit_main_block). none: true. Throws as update_values_device.
    virtual bool update_values_bdia(const Bdia<double>& a);
    /// Jacobi and block Jacobi: M⁻¹'s diagonal blocks as the apply uses them, n/b blocks of
    /// b × b values, row-major, in the executor's memory (b = block_size(); Jacobi: b = 1,
    /// 1/a_ii), for a caller that folds M⁻¹ into the operator (kernels::bdia_right_scale).
    /// Valid until the next update_values or update_values_device. nullptr for the others, and
    /// for Jacobi after a zero diagonal entry taken as PcOptions::jacobi_zero_diagonal says.
    virtual const VT* block_inverse() const noexcept { return nullptr; }

protected:
    Preconditioner(index_t n, index_t nc, std::shared_ptr<const Executor> exec)
        : n_(n), nc_(nc), exec_(std::move(exec))
    {
    }
    /// z = M⁻¹ r (z and r do not alias).
    virtual void solve(const VT* r, VT* z) const = 0;
    virtual bool symmetric_apply() const noexcept { return false; }
    virtual std::string details() const { return {}; }

    index_t n_;
    index_t nc_;
    std::shared_ptr<const Executor> exec_;
    double setup_ms_ = 0;

private:
    mutable Array<VT> tmp_;  // for alpha != 1 or beta != 0 (not used by the solvers)
};

/// What point Jacobi does at a zero (or unstored) diagonal entry a_ii.
enum class ZeroDiagonal {
    error,  ///< SingularError naming the row (the default: a zero diagonal is usually a bug)
    one,    ///< (M⁻¹)_ii = 1: PETSc's PCJACOBI with -pc_jacobi_fixdiagonal (its default)
    zero,   ///< (M⁻¹)_ii = 0: PETSc's PCJACOBI without it (VecReciprocal leaves 0)
};

/// Options of the preconditioners that have any (Jacobi, AMG, CPR).
struct PcOptions {
    AmgOptions amg;
    CprOptions cpr;
    ZeroDiagonal jacobi_zero_diagonal = ZeroDiagonal::error;  ///< point Jacobi only
};

/// Build a preconditioner from host CSR `a` (double) with block size `block_size` (≥ 1;
/// used by block_jacobi, ilu0, AMG's aggregation and CPR) on `exec`. Instantiated for VT =
/// double and float.
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const Csr<double>& a,
                                                        index_t block_size,
                                                        std::shared_ptr<const Executor> exec);
/// The same with options; `a_op`, when given, is A itself as an operator on `exec` (the
/// solver's): AMG uses it for the finest level's products and CPR for its residual, instead
/// of a copy of their own. `a_on_exec`, when given, is `a` already in exec's memory (a copy
/// the caller made): on a GPU, AMG's device setup starts from it instead of uploading `a`
/// again, and Jacobi, block Jacobi and CPR are set up there from it (the pattern path of the
/// CsrPatternView overload below; CPR: cpr.hpp), so that a values-only update of Jacobi and
/// block Jacobi must then come through update_values_device.
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(
    PcType type, const Csr<double>& a, index_t block_size, std::shared_ptr<const Executor> exec,
    const PcOptions& options, std::shared_ptr<const Operator<VT>> a_op = nullptr,
    const Csr<double>* a_on_exec = nullptr);

/// A preconditioner set up from a borrowed host pattern and its CSR values already in the
/// memory of `exec` (nnz doubles in the pattern's order; device memory on a GPU): none,
/// jacobi and block_jacobi only (NotSupported for the ILU(0) types: their numeric part runs
/// on the host, use the Csr overload). The symbolic part is made from the pattern on the
/// host, the numeric part runs where the values are (update_values_device; where that path
/// is missing, e.g. nc > 8 on a GPU, the values are copied to the host first). Bit for bit
/// make_preconditioner on the same matrix; the same errors. A pattern in the executor's memory
/// (pattern.on_executor, a GPU): the symbolic part runs there too (kernels::block_diag_map),
/// nothing of the matrix is copied to the host, and later values-only updates must come
/// through update_values_device (update_values throws InputError: no host pattern to compare
/// with); where the device path does not apply (an entry stored twice, nc > 8) the pattern
/// is copied to the host and set up as above.
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const CsrPatternView& pattern,
                                                        const double* values, index_t block_size,
                                                        std::shared_ptr<const Executor> exec);

/// The same with options, for every type: AMG and CPR are set up from a CSR copy of
/// (pattern, values) made in the executor's memory (device to device where the pattern is
/// there; 32-bit row pointers widened there), which is released after the setup: nothing of
/// A crosses the bus where AMG's hierarchy and CPR's setup run on the device. Their values
/// refresh then goes through update_values_device (CPR keeps A's pattern on the device for
/// it); `a_op` as in the Csr overload. The ILU(0) types: NotSupported, as above.
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(
    PcType type, const CsrPatternView& pattern, const double* values, index_t block_size,
    std::shared_ptr<const Executor> exec, const PcOptions& options,
    std::shared_ptr<const Operator<VT>> a_op = nullptr);

/// A square CSR matrix in exec's memory from a pattern view (host or, on_executor, exec's
/// memory) and nnz values in exec's memory.
Csr<double> csr_in_memory_of(const CsrPatternView& pattern, const double* values,
                             const std::shared_ptr<const Executor>& exec);

/// True when `m` is null or a heptane preconditioner of type none.
template <class VT>
bool is_identity_preconditioner(const Operator<VT>* m)
{
    if (!m) return true;
    const auto* p = dynamic_cast<const Preconditioner<VT>*>(m);
    return p && p->is_identity();
}

}  // namespace heptane
