// The preconditioners without a factorisation: none (the identity) and Jacobi / block
// Jacobi (docs/design.md §4), set up on the host or, from values already there, on the
// executor; values-only updates keep the pattern they were set up with.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "formats/bdia/bdia.hpp"
#include "solver/precond/block_kernels.hpp"
#include "solver/precond/pc_common.hpp"
#include "solver/precond/precond_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

// ---- none ------------------------------------------------------------------------------

// `as`: the type it stands for -- none, or, on a process that owns no rows, the type the other
// processes set up (an empty Jacobi, ILU(0), AMG...), so that every process's solver takes
// the same path (a preconditioned CG, the AMG's check of every iteration) and meets the others
// in each reduction; with no rows its apply does nothing either way.
template <class VT>
class IdentityPc final : public Preconditioner<VT> {
public:
    IdentityPc(index_t n, std::shared_ptr<const Executor> exec, PcType as = PcType::none)
        : Preconditioner<VT>(n, 1, std::move(exec)), as_(as)
    {
    }
    PcType type() const noexcept override { return as_; }
    void update_values(const Csr<double>& a) override
    {
        HEPTANE_ENSURE(a.rows == this->n_ && a.cols == this->n_, InputError,
                       "none: values-only update with a " << a.rows << " x " << a.cols
                                                          << " matrix; set up for " << this->n_
                                                          << " x " << this->n_);
        this->setup_ms_ = 0;
    }
    bool update_values_device(const double*, offset_t) override
    {
        this->setup_ms_ = 0;
        return true;
    }
    bool update_values_permuted(const double*, const index_t*, offset_t) override
    {
        this->setup_ms_ = 0;
        return true;
    }
    bool update_values_blocks(const double*, index_t, index_t, const index_t*,
                              const index_t*) override
    {
        this->setup_ms_ = 0;
        return true;
    }
    bool update_values_bdia(const Bdia<double>&) override
    {
        this->setup_ms_ = 0;
        return true;
    }

protected:
    void solve(const VT* r, VT* z) const override  // z = r
    {
        const index_t n = this->n_;
        dispatch_executor(*this->exec_, [&](const auto& e) { kernels::copy(e, n, r, z); });
    }
    bool symmetric_apply() const noexcept override { return true; }

private:
    PcType as_;
};

// ---- Jacobi and block-Jacobi -------------------------------------------------------------
//
// Jacobi is the case nc = 1 (M = diag(A)), block-Jacobi M = blockdiag(A). Symbolic part: the
// gather map, for block c and entry s = a·nc + b of it the position in A's CSR values of
// entry (c·nc + a, c·nc + b), −1 where A has none. Numeric part: kernels::block_diag_invert,
// on the host from host values (setup from a Csr, update_values) or on the executor from
// values already there (update_values_device): the same operations either way. The new
// inverses go to a second array, which replaces the live one only when every block inverted,
// so a failure keeps the previous values.

template <class VT>
class BlockDiagPc final : public Preconditioner<VT> {
public:
    /// Setup from a Csr (anywhere): symbolic and numeric part on the host.
    static std::unique_ptr<Preconditioner<VT>> from_csr(PcType type, const Csr<double>& a_in,
                                                        index_t nc,
                                                        std::shared_ptr<const Executor> exec,
                                                        ZeroDiagonal zero)
    {
        const auto t0 = clock_type::now();
        HEPTANE_ENSURE(
            a_in.rows == a_in.cols, DimensionMismatch,
            name(type) << ": the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
        Csr<double> keep;
        const Csr<double>& a = host_csr(a_in, keep);
        auto pc = std::make_unique<BlockDiagPc>(type, pattern_of(a), nc, std::move(exec));
        pc->zero_ = zero;
        pc->numeric_host(a.values.data());
        pc->setup_ms_ = ms_since(t0);
        return pc;
    }
    /// Setup from a host pattern and the values on the executor (make_preconditioner's
    /// CsrPatternView overload).
    static std::unique_ptr<Preconditioner<VT>> from_values(PcType type, const CsrPatternView& p,
                                                           const double* values, index_t nc,
                                                           std::shared_ptr<const Executor> exec,
                                                           ZeroDiagonal zero)
    {
        const auto t0 = clock_type::now();
        if (p.on_executor && !exec->is_cpu()) {
            if (auto pc = from_device_pattern(type, p, values, nc, exec, zero)) {
                pc->setup_ms_ = ms_since(t0);
                return pc;
            }
            // no such path (an entry stored twice, nc > 8): the pattern to the host
            CsrPatternView h;
            h.rows = p.rows;
            std::vector<index_t> ptr32;
            std::vector<offset_t> ptr64;
            offset_t nnz = 0;
            if (p.row_ptr32) {
                ptr32.resize(std::size_t(p.rows) + 1);
                copy_bytes(*exec, p.row_ptr32, *cpu_executor(), ptr32.data(),
                           ptr32.size() * sizeof(index_t));
                h.row_ptr32 = ptr32.data();
                nnz = ptr32.back();
            } else {
                ptr64.resize(std::size_t(p.rows) + 1);
                copy_bytes(*exec, p.row_ptr64, *cpu_executor(), ptr64.data(),
                           ptr64.size() * sizeof(offset_t));
                h.row_ptr64 = ptr64.data();
                nnz = ptr64.back();
            }
            std::vector<index_t> col(static_cast<std::size_t>(nnz));
            copy_bytes(*exec, p.col_idx, *cpu_executor(), col.data(), col.size() * sizeof(index_t));
            h.col_idx = col.data();
            return from_values(type, h, values, nc, std::move(exec), zero);
        }
        auto pc = std::make_unique<BlockDiagPc>(type, p, nc, std::move(exec));
        pc->zero_ = zero;
        if (!pc->numeric_on_executor(values)) {  // no path there: the values to the host
            std::vector<double> h(std::size_t(p.nnz()));
            copy_bytes(*pc->exec_, values, *cpu_executor(), h.data(), h.size() * sizeof(double));
            pc->numeric_host(h.data());
        }
        pc->setup_ms_ = ms_since(t0);
        return pc;
    }
    /// The symbolic part; a numeric part must follow (from_csr, from_values).
    BlockDiagPc(PcType type, const CsrPatternView& p, index_t nc,
                std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(p.rows, nc, std::move(exec)), type_(type)
    {
        HEPTANE_ENSURE(p.rows % nc == 0, InputError,
                       who() << ": block size " << nc << " does not divide the size " << p.rows);
        pattern_.set(p);
        nnz_ = pattern_.nnz();
        symbolic();
        binv_ = Array<VT>(this->exec_, map_.size());
    }

    /// Setup from a pattern and values both in a GPU's memory: the gather map is made there
    /// (kernels::block_diag_map), no host copy of the pattern is kept (update_values then
    /// refuses: it has nothing to compare with). nullptr where that path does not apply (nc >
    /// 8, an entry stored twice): the caller takes the host pattern.
    static std::unique_ptr<BlockDiagPc> from_device_pattern(
        PcType type, const CsrPatternView& p, const double* values, index_t nc,
        const std::shared_ptr<const Executor>& exec, ZeroDiagonal zero)
    {
        HEPTANE_ENSURE(p.rows % nc == 0, InputError,
                       (type == PcType::jacobi ? "Jacobi" : "block-Jacobi")
                           << ": block size " << nc << " does not divide the size " << p.rows);
        HEPTANE_ENSURE((p.row_ptr32 != nullptr) != (p.row_ptr64 != nullptr), InputError,
                       "a pattern view needs one of 32- or 64-bit row pointers");
        if (nc > 8) return nullptr;
        offset_t nnz = 0;
        if (p.row_ptr32) {
            index_t nnz32 = 0;
            copy_bytes(*exec, p.row_ptr32 + p.rows, *cpu_executor(), &nnz32, sizeof(index_t));
            nnz = nnz32;
        } else {
            copy_bytes(*exec, p.row_ptr64 + p.rows, *cpu_executor(), &nnz, sizeof(offset_t));
        }
        // the map holds positions < nnz: 32 bits
        if (nnz > offset_t(std::numeric_limits<std::int32_t>::max())) return nullptr;
        std::unique_ptr<BlockDiagPc> pc(new BlockDiagPc(type, p.rows, nc, nnz, exec));
        pc->zero_ = zero;
        const index_t nb = pc->nblocks();
        const std::size_t len = std::size_t(nb) * pc->nc2();
        pc->map32_ = Array<std::int32_t>(exec, len);
        const offset_t repeats = dispatch_executor(*exec, [&](const auto& e) {
            return p.row_ptr32 ? kernels::block_diag_map(e, nb, nc, p.row_ptr32, p.col_idx,
                                                         pc->map32_.data())
                               : kernels::block_diag_map(e, nb, nc, p.row_ptr64, p.col_idx,
                                                         pc->map32_.data());
        });
        if (repeats > 0) return nullptr;
        pc->binv_ = Array<VT>(exec, len);
        if (!pc->numeric_on_executor(values)) return nullptr;
        return pc;
    }

    PcType type() const noexcept override { return type_; }
    void update_values(const Csr<double>& a) override
    {
        const auto t0 = clock_type::now();
        HEPTANE_ENSURE(!map_.empty() || map32_.empty(), InputError,
                       who() << ": set up from a pattern in device memory, so there is no host "
                                "copy of it to compare a values-only update with; use "
                                "update_values_device, or set up again");
        Csr<double> keep;
        const Csr<double>& h = host_csr(a, keep);
        pattern_.check(h, who());
        numeric_host(h.values.data());
        this->setup_ms_ = ms_since(t0);
    }
    bool update_values_device(const double* values, offset_t nnz) override
    {
        HEPTANE_ENSURE(nnz == nnz_, InputError,
                       who() << ": values-only update with " << nnz
                             << " values; the preconditioner was set up for " << nnz_
                             << " entries");
        const auto t0 = clock_type::now();
        if (!numeric_on_executor(values)) return false;
        this->setup_ms_ = ms_since(t0);
        return true;
    }
    bool update_values_permuted(const double* values, const index_t* pos, offset_t nnz) override
    {
        HEPTANE_ENSURE(nnz == nnz_, InputError,
                       who() << ": values-only update with " << nnz
                             << " values; the preconditioner was set up for " << nnz_
                             << " entries");
        if (!this->exec_->is_cpu() || !dups_.empty() || map_.empty()) return false;
        const auto t0 = clock_type::now();
        if (pos != permuted_from_) {  // the gather map through pos, once (pos: 32-bit)
            permuted_.resize(map_.size());
            const std::int64_t len = std::int64_t(map_.size());
#pragma omp parallel for schedule(static) if (len > (1 << 16))
            for (std::int64_t i = 0; i < len; ++i) {
                const offset_t k = map_[std::size_t(i)];
                permuted_[std::size_t(i)] = k < 0 ? std::int32_t(-1) : std::int32_t(pos[k]);
            }
            permuted_from_ = pos;
        }
        numeric_through(permuted_, values);
        this->setup_ms_ = ms_since(t0);
        return true;
    }

    bool update_values_blocks(const double* values, index_t block_rows, index_t bs,
                              const index_t* block_ptr, const index_t* block_col) override
    {
        if (!this->exec_->is_cpu() || !dups_.empty() || map_.empty() || bs < 1 ||
            offset_t(block_rows) * bs != this->n_ ||
            offset_t(block_ptr[block_rows]) * bs * bs >
                offset_t(std::numeric_limits<std::int32_t>::max()))
            return false;
        const auto t0 = clock_type::now();
        if (type_ == PcType::block_jacobi && bs == this->nc_ &&
            diagonal_blocks(values, block_rows, bs, block_ptr, block_col)) {
            this->setup_ms_ = ms_since(t0);
            return true;
        }
        if (block_col != blocks_from_) {  // the gather map into the block array, once
            const index_t nc = this->nc_, nb = nblocks();
            const std::size_t n2 = nc2();
            const offset_t bb = offset_t(bs) * bs;
            blocks_map_.resize(map_.size());
            bool missing = false;
#pragma omp parallel for schedule(static) if (nb > 16384) reduction(|| : missing)
            for (index_t c = 0; c < nb; ++c)
                for (index_t a = 0; a < nc; ++a) {
                    index_t ib = -1, jb = -1;  // the block searched last and where it is
                    offset_t kb = -1;
                    for (index_t b = 0; b < nc; ++b) {
                        const std::size_t s = std::size_t(c) * n2 + std::size_t(a * nc + b);
                        const index_t r = c * nc + a, col = c * nc + b;
                        if (r / bs != ib || col / bs != jb) {
                            ib = r / bs;
                            jb = col / bs;
                            kb = -1;
                            for (offset_t k = block_ptr[ib]; k < block_ptr[ib + 1] && kb < 0; ++k)
                                if (block_col[k] == jb) kb = k;
                        }
                        const offset_t at =
                            kb < 0 ? -1 : kb * bb + offset_t(col % bs) * bs + r % bs;
                        if (map_[s] >= 0 && at < 0) missing = true;  // not the setup's pattern
                        blocks_map_[s] = map_[s] < 0 ? std::int32_t(-1) : std::int32_t(at);
                    }
                }
            if (missing) {
                blocks_map_.clear();
                blocks_from_ = nullptr;
                return false;
            }
            blocks_from_ = block_col;
        }
        numeric_through(blocks_map_, values);
        this->setup_ms_ = ms_since(t0);
        return true;
    }

    bool update_values_bdia(const Bdia<double>& a) override
    {
        const index_t nc = this->nc_, q0 = a.main_block_diagonal();
        if (!this->exec_->is_cpu() || !a.data.on_host() || !dups_.empty() || map_.empty() ||
            q0 < 0 || a.unit_main_block || a.rows != this->n_ || a.cols != this->n_ ||
            a.block_size % nc != 0 || a.data.size() != std::size_t(a.slots()))
            return false;
        if (full_blocks_ < 0)  // the setup's pattern held every entry of every diagonal block
            full_blocks_ = std::none_of(map_.begin(), map_.end(), [](offset_t k) { return k < 0; });
        if (full_blocks_ == 0) return false;  // (the gather map's path says which entry is 0)
        const auto t0 = clock_type::now();
        // PC block c, entry (i, j): row c·nc + i, column c·nc + j, which lies in a's main block
        // (nc divides a's block size): element diagonal q0·Nc + column mod Nc of a's values,
        // contiguous in the row; read by formula (no map)
        const index_t big = a.block_size;
        const double* d = a.data.data();
        const offset_t rows = a.rows;
        invert_blocks_of([=](index_t c, index_t i, index_t j) {
            const index_t col = c * nc + j;
            return d[std::size_t(offset_t(q0 * big + col % big) * rows + offset_t(c) * nc + i)];
        });
        this->setup_ms_ = ms_since(t0);
        return true;
    }

private:
    // update_values_blocks where the blocks are the preconditioner's (bs = Nc) and the setup's
    // pattern held every entry of each diagonal block: block row c's diagonal block is one
    // block of the array, found once per block pattern (diag_at_), read whole (column-major)
    // and inverted as the gather map's path would (0 + value, the same inverse): no map of the
    // entries. False where the setup's blocks lacked an entry or a block row has no diagonal
    // block (the caller takes the map's path, which says which).
    bool diagonal_blocks(const double* values, index_t nb, index_t bs, const index_t* block_ptr,
                         const index_t* block_col)
    {
        if (block_col != diag_from_) {
            diag_at_.clear();
            diag_from_ = nullptr;
            if (std::any_of(map_.begin(), map_.end(), [](offset_t k) { return k < 0; }))
                return false;
            diag_at_.resize(std::size_t(nb));
            bool missing = false;
#pragma omp parallel for schedule(static) if (nb > 16384) reduction(|| : missing)
            for (index_t c = 0; c < nb; ++c) {
                offset_t at = -1;
                for (index_t k = block_ptr[c]; k < block_ptr[c + 1] && at < 0; ++k)
                    if (block_col[k] == c) at = k;
                diag_at_[std::size_t(c)] = at;
                missing = missing || at < 0;
            }
            if (missing) {
                diag_at_.clear();
                return false;
            }
            diag_from_ = block_col;
        }
        const std::size_t n2 = nc2();
        const offset_t* at = diag_at_.data();
        invert_blocks_of([=](index_t c, index_t i, index_t j) {  // column-major blocks
            return values[std::size_t(at[c]) * n2 + std::size_t(j * bs + i)];
        });
        return true;
    }

    // The inverse of every diagonal block, entry (i, j) of block c being value(c, i, j), into
    // binv_ (through next_, swapped in only when every block inverted: a singular one throws
    // the setup's message and keeps the previous values). 0 + value and invert_block_core, as
    // the gather map's path (block_diag_invert): the same bits.
    template <class Value>
    void invert_blocks_of(const Value& value)
    {
        if (next_.size() != binv_.size()) next_ = Array<VT>(this->exec_, binv_.size());
        const index_t nb = nblocks(), nc = this->nc_;
        const std::size_t n2 = nc2();
        VT* inv = next_.data();
        constexpr index_t none = std::numeric_limits<index_t>::max();
        index_t bad = none;
        detail::dispatch_block_size(nc, [&](auto NC) {
            constexpr int B = decltype(NC)::value;
            const std::size_t n = B > 0 ? std::size_t(B) : std::size_t(nc);
#pragma omp parallel reduction(min : bad) if (nb * nc >= 65536)
            {
                std::vector<double> scratch(3 * n2);
                double* b = scratch.data();
                double* out = b + n2;
#pragma omp for schedule(static)
                for (index_t c = 0; c < nb; ++c) {
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t j = 0; j < n; ++j) {
                            double x = 0.0;
                            x += value(c, index_t(i), index_t(j));
                            b[i * n + j] = x;
                        }
                    if (detail::invert_block_core<B>(b, out, index_t(n), out + n2).singular) {
                        if (fixes_zero()) inv[std::size_t(c)] = zero_inverse();  // a_ii = 0
                        bad = std::min(bad, c);
                        continue;
                    }
                    VT* dst = inv + n2 * std::size_t(c);
                    for (std::size_t k = 0; k < n2; ++k) dst[k] = VT(out[k]);
                }
            }
        });
        zero_met_ = fixes_zero() && bad != none;
        if (bad != none && !fixes_zero())
            fail(bad, [&](std::size_t s, offset_t) {
                return value(bad, index_t(s / std::size_t(nc)), index_t(s % std::size_t(nc)));
            });
        binv_.swap(next_);
    }

protected:
    std::string details() const override
    {
        if (!fixes_zero()) return {};
        return zero_ == ZeroDiagonal::one ? "(a zero diagonal entry taken as 1)"
                                          : "(a zero diagonal entry: 0 in M^-1)";
    }
    void solve(const VT* r, VT* z) const override  // z_c = A_cc⁻¹ r_c
    {
        const VT* b = binv_.data();
        const index_t n = this->n_, nc = this->nc_;
        dispatch_executor(*this->exec_, [&](const auto& e) {
            if (type_ == PcType::jacobi)
                kernels::diag_scale(e, n, b, r, z);
            else
                kernels::block_diag_apply(e, n / nc, nc, b, r, z);
        });
    }
    bool symmetric_apply() const noexcept override
    {
        return type_ == PcType::jacobi;
    }

public:
    const VT* block_inverse() const noexcept override
    {
        // not after a zero diagonal taken as 1 or 0 (ZeroDiagonal): a_ii (M⁻¹)_ii is not 1
        // there, which a caller folding M⁻¹ into A may assume (its main diagonal written as I)
        return zero_met_ ? nullptr : binv_.data();
    }

private:
    static const char* name(PcType t)
    {
        return t == PcType::jacobi ? "Jacobi" : "block-Jacobi";
    }
    const char* who() const
    {
        return name(type_);
    }
    index_t nblocks() const
    {
        return this->n_ / this->nc_;
    }
    std::size_t nc2() const
    {
        return std::size_t(this->nc_) * std::size_t(this->nc_);
    }

    // map_ (and dups_: the entries of a block position after its first, (position, k) in CSR
    // order; none in a canonical CSR)
    void symbolic()
    {
        const index_t nc = this->nc_, nb = nblocks();
        const offset_t nc2s = offset_t(nc2());
        map_.assign(std::size_t(nb) * nc2(), -1);
        const offset_t* rp = pattern_.row_ptr.data();
        const index_t* ci = pattern_.col.get();
#pragma omp parallel if (nb > 16384)
        {
            std::vector<std::pair<offset_t, offset_t>> dups;
#pragma omp for schedule(static)
            for (index_t c = 0; c < nb; ++c)
                for (index_t r = c * nc; r < (c + 1) * nc; ++r)
                    for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
                        const index_t col = ci[k];
                        if (col < 0 || col / nc != c) continue;
                        const offset_t s = offset_t(c) * nc2s + (r % nc) * nc + col % nc;
                        if (map_[std::size_t(s)] < 0)
                            map_[std::size_t(s)] = k;
                        else
                            dups.emplace_back(s, k);
                    }
#pragma omp critical
            dups_.insert(dups_.end(), dups.begin(), dups.end());
        }
        std::sort(dups_.begin(), dups_.end());
    }

    // An entry stored twice: its values summed in CSR order into the first one's place (the
    // host setup's sum into zero, the same bits), in a copy of the values.
    const double* with_duplicates(const double* v)
    {
        if (dups_.empty()) return v;
        combined_.assign(v, v + pattern_.nnz());
        for (const auto& [s, k] : dups_) combined_[std::size_t(map_[std::size_t(s)])] += v[k];
        return combined_.data();
    }

    // the numeric part on the host from host values
    void numeric_host(const double* values)
    {
        const double* v = with_duplicates(values);
        const bool on_host = this->exec_->is_cpu();
        if (on_host && next_.size() != binv_.size()) next_ = Array<VT>(this->exec_, binv_.size());
        if (!on_host) staging_.resize(binv_.size());
        VT* out = on_host ? next_.data() : staging_.data();
        const index_t bad = invert_or_fix(
            [&] {
                return kernels::block_diag_invert(*cpu_executor(), nblocks(), this->nc_,
                                                  map_.data(), v, out, nullptr);
            },
            [&] { std::fill(out, out + binv_.size(), zero_inverse()); });
        if (bad >= 0) fail(bad, [&](std::size_t, offset_t k) { return v[k]; });
        if (on_host)
            binv_.swap(next_);
        else
            copy_bytes(*cpu_executor(), out, *this->exec_, binv_.data(), binv_.bytes());
    }

    // the numeric part on the host through a 32-bit gather map m into `values` (map_ composed
    // with where the caller's layout keeps each entry: update_values_permuted, _blocks)
    void numeric_through(const std::vector<std::int32_t>& m, const double* values)
    {
        if (next_.size() != binv_.size()) next_ = Array<VT>(this->exec_, binv_.size());
        const index_t bad = invert_or_fix(
            [&] {
                return kernels::block_diag_invert(*cpu_executor(), nblocks(), this->nc_, m.data(),
                                                  values, next_.data(), nullptr);
            },
            [&] { std::fill(next_.data(), next_.data() + next_.size(), zero_inverse()); });
        if (bad >= 0)
            fail(bad,
                 [&](std::size_t s, offset_t) { return values[m[std::size_t(bad) * nc2() + s]]; });
        binv_.swap(next_);
    }

    // the numeric part on the executor from values in its memory; false where there is no
    // such path (on a GPU: an entry stored twice, or nc > 8)
    bool numeric_on_executor(const double* v)
    {
        if (this->exec_->is_cpu()) {
            numeric_host(v);
            return true;
        }
        if (!dups_.empty() || this->nc_ > 8) return false;
        if (map32_.empty() && map64_.empty() && !map_.empty()) upload_map();
        if (next_.size() != binv_.size()) next_ = Array<VT>(this->exec_, binv_.size());
        if (flag_.empty()) flag_ = Array<index_t>(this->exec_, 1);
        const index_t nb = nblocks(), nc = this->nc_;
        const index_t bad = invert_or_fix(
            [&] {
                return dispatch_executor(*this->exec_, [&](const auto& e) {
                    return map32_.empty() ? kernels::block_diag_invert(e, nb, nc, map64_.data(), v,
                                                                       next_.data(), flag_.data())
                                          : kernels::block_diag_invert(e, nb, nc, map32_.data(), v,
                                                                       next_.data(), flag_.data());
                });
            },
            [&] {
                dispatch_executor(*this->exec_, [&](const auto& e) {
                    kernels::fill(e, index_t(next_.size()), zero_inverse(), next_.data());
                });
            });
        if (bad >= 0) {
            fail(bad, [&](std::size_t, offset_t k) {  // the failing block's few values, one by one
                double x = 0;
                copy_bytes(*this->exec_, v + k, *cpu_executor(), &x, sizeof(double));
                return x;
            });
        }
        binv_.swap(next_);
        return true;
    }

    // the gather map on the executor, 32-bit where the positions fit
    void upload_map()
    {
        if (nnz_ > offset_t(std::numeric_limits<std::int32_t>::max())) {
            map64_ = upload_same(map_, this->exec_);
            return;
        }
        std::vector<std::int32_t> m(map_.size());
        const std::int64_t len = std::int64_t(m.size());
#pragma omp parallel for schedule(static) if (len > (1 << 20))
        for (std::int64_t i = 0; i < len; ++i)
            m[std::size_t(i)] = std::int32_t(map_[std::size_t(i)]);
        map32_ = upload_same(m, this->exec_);
    }

    // InputError for block c, whose inversion failed: its values (fetch(k): CSR value k) and
    // the failing pivot recomputed on the host, where the setup's message comes from
    template <class Fetch>
    [[noreturn]] void fail(index_t c, Fetch&& fetch) const
    {
        const std::size_t n2 = nc2();
        std::vector<offset_t> local(n2, -1);  // the block's map into vals
        std::vector<double> vals(n2, 0.0), blk(n2), inv(n2);
        const std::vector<offset_t> map = block_map(c);
        for (std::size_t s = 0; s < n2; ++s) {
            const offset_t k = map[s];
            if (k < 0) continue;
            local[s] = offset_t(s);
            vals[s] = fetch(s, k);
        }
        detail::gather_block<0>(local.data(), vals.data(), this->nc_, blk.data());
        if (type_ == PcType::jacobi)
            HEPTANE_THROW(SingularError, "Jacobi: the diagonal entry of row " << std::int64_t(c) + 1
                                                                              << " is " << blk[0]);
        const detail::PivotFailure f = detail::invert_block(blk.data(), inv.data(), this->nc_);
        HEPTANE_THROW(SingularError, "block-Jacobi: singular diagonal block, "
                                         << detail::describe_pivot_failure(c, this->nc_, f));
    }

    // the device-pattern setup (from_device_pattern): no host pattern, no host map
    BlockDiagPc(PcType type, index_t n, index_t nc, offset_t nnz,
                std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(n, nc, std::move(exec)), type_(type), nnz_(nnz)
    {
    }

    // the gather map of block c (nc² positions, -1 where none), from wherever it is kept
    std::vector<offset_t> block_map(index_t c) const
    {
        const std::size_t n2 = nc2(), at = std::size_t(c) * n2;
        std::vector<offset_t> m(n2);
        if (!map_.empty()) {
            std::copy(map_.begin() + std::ptrdiff_t(at), map_.begin() + std::ptrdiff_t(at + n2),
                      m.begin());
        } else if (!map32_.empty()) {
            std::vector<std::int32_t> d(n2);
            copy_bytes(*this->exec_, map32_.data() + at, *cpu_executor(), d.data(),
                       n2 * sizeof(std::int32_t));
            std::copy(d.begin(), d.end(), m.begin());
        } else {
            copy_bytes(*this->exec_, map64_.data() + at, *cpu_executor(), m.data(),
                       n2 * sizeof(std::int64_t));
        }
        return m;
    }

    // point Jacobi told to take a zero diagonal entry (the only 1 x 1 block that fails to
    // invert: |a_ii| <= eps |a_ii|) as PETSc's PCJACOBI does, not to stop
    bool fixes_zero() const noexcept
    {
        return type_ == PcType::jacobi && this->nc_ == 1 && zero_ != ZeroDiagonal::error;
    }
    VT zero_inverse() const noexcept
    {
        return zero_ == ZeroDiagonal::one ? VT(1) : VT(0);
    }
    // invert() (kernels::block_diag_invert into the next inverses: their lowest failing block,
    // -1 for none; failed blocks are not written). Where it fails and fixes_zero(), every
    // failure is an a_ii = 0: fill() sets all the next inverses to zero_inverse() and invert()
    // runs again, writing every other entry, so only a failed setup pays the second pass.
    // Returns the block the setup must stop at, -1 for none.
    template <class Invert, class Fill>
    index_t invert_or_fix(Invert&& invert, Fill&& fill)
    {
        const index_t bad = invert();
        zero_met_ = bad >= 0 && fixes_zero();
        if (!zero_met_) return bad;
        fill();
        invert();
        return -1;
    }

    PcType type_;
    ZeroDiagonal zero_ = ZeroDiagonal::error;
    bool zero_met_ = false;  // the last numeric part met a_ii = 0 (and took it as zero_ says)
    offset_t nnz_ = 0;       // the entries of the pattern set up from
    ScalarPattern pattern_;
    std::vector<offset_t> map_;  // the gather map, host (none after from_device_pattern)
    std::vector<std::pair<offset_t, offset_t>> dups_;
    std::vector<double> combined_;
    std::vector<std::int32_t> permuted_;      // map_ through update_values_permuted's pos
    const index_t* permuted_from_ = nullptr;  // that pos
    std::vector<std::int32_t> blocks_map_;    // map_ into update_values_blocks's block array
    int full_blocks_ = -1;  // update_values_bdia: map_ has every entry (1), not (0), not known (-1)
    const index_t* blocks_from_ = nullptr;  // that array's block columns
    std::vector<offset_t> diag_at_;         // bs = Nc: each block row's diagonal block there
    const index_t* diag_from_ = nullptr;    // that array's block columns
    Array<std::int32_t> map32_;             // the gather map on a GPU (one of the two)
    Array<std::int64_t> map64_;
    Array<VT> binv_;           // the live inverses (nc² per block; Jacobi: 1 / a_ii)
    Array<VT> next_;           // the next ones, swapped in when all inverted
    std::vector<VT> staging_;  // host numeric part for a GPU: the inverses before the upload
    Array<index_t> flag_;      // the lowest failing block (GPU)
};

}  // namespace

namespace detail {

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_identity_pc(index_t n,
                                                     std::shared_ptr<const Executor> exec)
{
    return std::make_unique<IdentityPc<VT>>(n, std::move(exec));
}
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_empty_pc(PcType type, std::shared_ptr<const Executor> exec)
{
    return std::make_unique<IdentityPc<VT>>(0, std::move(exec), type);
}
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_block_diag_pc(PcType type, const Csr<double>& a,
                                                       index_t nc,
                                                       std::shared_ptr<const Executor> exec,
                                                       ZeroDiagonal zero)
{
    return BlockDiagPc<VT>::from_csr(type, a, nc, std::move(exec), zero);
}
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_block_diag_pc(PcType type, const CsrPatternView& p,
                                                       const double* values, index_t nc,
                                                       std::shared_ptr<const Executor> exec,
                                                       ZeroDiagonal zero)
{
    return BlockDiagPc<VT>::from_values(type, p, values, nc, std::move(exec), zero);
}

#define HEPTANE_INSTANTIATE(VT)                                                                 \
    template std::unique_ptr<Preconditioner<VT>> make_identity_pc<VT>(                          \
        index_t, std::shared_ptr<const Executor>);                                              \
    template std::unique_ptr<Preconditioner<VT>> make_empty_pc<VT>(                             \
        PcType, std::shared_ptr<const Executor>);                                               \
    template std::unique_ptr<Preconditioner<VT>> make_block_diag_pc<VT>(                        \
        PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>, ZeroDiagonal);    \
    template std::unique_ptr<Preconditioner<VT>> make_block_diag_pc<VT>(                        \
        PcType, const CsrPatternView&, const double*, index_t, std::shared_ptr<const Executor>, \
        ZeroDiagonal);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace detail
}  // namespace heptane
