// The preconditioners of heptane: setup on the host (double), factors in VT on the
// executor, apply through precond_kernels.hpp. Each keeps its symbolic part (pattern-only)
// and the host work arrays of its numeric part, so update_values redoes only the numeric
// part and writes into the arrays it already has on the executor. Jacobi and block Jacobi
// can also run their numeric part on the executor, from values already there
// (update_values_device; kernels::block_diag_invert).
#include "solver/precond/preconditioner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "solver/precond/amg/amg.hpp"
#include "solver/precond/amg/cpr.hpp"
#include "solver/precond/block_kernels.hpp"
#include "solver/precond/block_utils.hpp"
#include "solver/precond/precond_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

PcType parse_pc(const std::string& name)
{
    if (name == "none") return PcType::none;
    if (name == "jacobi") return PcType::jacobi;
    if (name == "bjacobi" || name == "block_jacobi" || name == "block-jacobi")
        return PcType::block_jacobi;
    if (name == "ilu0" || name == "ilu" || name == "bilu0") return PcType::ilu0;
    if (name == "ilu0-mc" || name == "ilu0_mc" || name == "mcilu0" || name == "bilu0-mc")
        return PcType::ilu0_mc;
    if (name == "amg" || name == "gamg" || name == "sa") return PcType::amg;
    if (name == "cpr") return PcType::cpr;
    HEPTANE_THROW(InputError, "unknown preconditioner '"
                                  << name
                                  << "' (choices: none, jacobi, bjacobi, ilu0, ilu0-mc, amg, cpr)");
}

const char* to_string(PcType t) noexcept
{
    switch (t) {
        case PcType::none:
            return "none";
        case PcType::jacobi:
            return "jacobi";
        case PcType::block_jacobi:
            return "bjacobi";
        case PcType::ilu0:
            return "ilu0";
        case PcType::ilu0_mc:
            return "ilu0-mc";
        case PcType::amg:
            return "amg";
        case PcType::cpr:
            return "cpr";
    }
    return "?";
}

template <class VT>
void Preconditioner<VT>::apply(VT alpha, const VT* r, VT beta, VT* z) const
{
    if (alpha == VT(1) && beta == VT(0)) {
        solve(r, z);
        return;
    }
    if (tmp_.size() != std::size_t(n_) || tmp_.exec() != exec_)
        tmp_ = Array<VT>(exec_, std::size_t(n_));
    solve(r, tmp_.data());
    const VT* t = tmp_.data();
    const index_t n = n_;
    dispatch_executor(*exec_, [&](const auto& e) { kernels::axpby(e, n, alpha, t, beta, z); });
}

template <class VT>
void Preconditioner<VT>::apply_transpose(VT alpha, const VT* r, VT beta, VT* z) const
{
    HEPTANE_ENSURE(symmetric_apply(), NotSupported,
                   "preconditioner " << to_string(type()) << " has no transpose apply");
    apply(alpha, r, beta, z);
}

template <class VT>
std::string Preconditioner<VT>::describe() const
{
    std::ostringstream os;
    os << to_string(type());
    if (type() == PcType::block_jacobi || type() == PcType::ilu0 || type() == PcType::ilu0_mc)
        os << " Nc=" << nc_;
    const std::string d = details();
    if (!d.empty()) os << " " << d;
    os << " (" << (sizeof(VT) == 8 ? "fp64" : "fp32") << ") on " << exec_->name();
    return os.str();
}

template <class VT>
void Preconditioner<VT>::update_values(const Csr<double>&)
{
    HEPTANE_THROW(NotSupported, "preconditioner " << to_string(type())
                                                  << " has no values-only update; build a new one");
}

template <class VT>
bool Preconditioner<VT>::update_values_device(const double*, offset_t)
{
    return false;
}

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

template <class T>
Array<T> upload_same(const std::vector<T>& v, const std::shared_ptr<const Executor>& exec)
{
    if (exec->is_cpu()) return Array<T>(v);
    Array<T> out(exec, v.size());
    copy_bytes(*cpu_executor(), v.data(), *exec, out.data(), out.bytes());
    return out;
}

const Csr<double>& host_csr(const Csr<double>& a, Csr<double>& keep)
{
    if (a.exec()->is_cpu()) return a;
    keep = a.to(cpu_executor());
    return keep;
}

constexpr index_t no_row = std::numeric_limits<index_t>::max();

/// New values, computed on the host in double, into a factor array on the executor. fp64 on
/// the CPU: the work vector and the array's storage swap (no copy; the work vector then
/// holds the old values, to be overwritten by the next update). fp64 on a device: uploaded
/// from the work vector. fp32: converted into the array (CPU) or a host copy that is then
/// uploaded.
template <class VT>
class Committer {
public:
    void commit(std::vector<double>& work, Array<VT>& dst)
    {
        if constexpr (std::is_same_v<VT, double>) {
            if (dst.on_host() && dst.size() == work.size()) {
                dst.host().swap(work);
                return;
            }
            copy_bytes(*cpu_executor(), work.data(), *dst.exec(), dst.data(), dst.bytes());
        } else {
            VT* out = begin(dst);
            const std::size_t n = work.size();
#pragma omp parallel for schedule(static) if (n > 65536)
            for (std::size_t i = 0; i < n; ++i) out[i] = VT(work[i]);
            end(dst);
        }
    }
    /// Where the host writes an array's values itself (the array on the CPU, else a host
    /// copy kept between updates: what an update does not write, e.g. padding, stays as
    /// the first upload left it); end() uploads it.
    VT* begin(Array<VT>& dst)
    {
        if (dst.on_host()) return dst.data();
        if (staging_.size() != dst.size()) staging_.assign(dst.size(), VT(0));
        return staging_.data();
    }
    void end(Array<VT>& dst) const
    {
        if (!dst.on_host())
            copy_bytes(*cpu_executor(), staging_.data(), *dst.exec(), dst.data(), dst.bytes());
    }

private:
    std::vector<VT> staging_;
};

/// The first i < n with a[i] != b[i], or n (OpenMP over chunks for long arrays).
template <class T>
std::size_t first_mismatch(const T* a, const T* b, std::size_t n)
{
    constexpr std::size_t chunk = std::size_t(1) << 16;
    const std::int64_t chunks = std::int64_t((n + chunk - 1) / chunk);
    std::size_t first = n;
#pragma omp parallel for schedule(static) reduction(min : first) if (chunks > 16)
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::size_t lo = std::size_t(c) * chunk, hi = std::min(n, lo + chunk);
        const std::size_t i = std::size_t(std::mismatch(a + lo, a + hi, b + lo).first - a);
        if (i < hi) first = std::min(first, i);
    }
    return first;
}

CsrPatternView pattern_of(const Csr<double>& h)
{
    CsrPatternView p;
    p.rows = h.rows;
    p.row_ptr64 = h.row_ptr.data();
    p.col_idx = h.col_idx.data();
    return p;
}

/// The scalar nonzero pattern a preconditioner was set up from (Jacobi, block-Jacobi: their
/// numeric part reads a few entries per row, so the pattern is checked against a copy).
struct ScalarPattern {
    index_t rows = 0;
    std::vector<offset_t> row_ptr;
    // the columns: not a std::vector, whose resize would zero the (up to GBs of) memory on one
    // thread before the parallel copy; here the copy's threads touch their pages first
    std::unique_ptr<index_t[]> col;

    offset_t nnz() const noexcept { return row_ptr.empty() ? 0 : row_ptr.back(); }
    void set(const CsrPatternView& p)
    {
        rows = p.rows;
        row_ptr.resize(std::size_t(rows) + 1);
#pragma omp parallel for schedule(static) if (rows > 65536)
        for (index_t r = 0; r <= rows; ++r) row_ptr[std::size_t(r)] = p.row_begin(r);
        const std::int64_t nz = nnz();
        col.reset(new index_t[std::size_t(nz)]);  // default-initialised: no zeroing pass
        index_t* c = col.get();
#pragma omp parallel for schedule(static) if (nz > (1 << 20))
        for (std::int64_t k = 0; k < nz; ++k) c[k] = p.col_idx[k];
    }
    void check(const Csr<double>& h, const char* who) const
    {
        HEPTANE_ENSURE(h.rows == rows && h.cols == rows, InputError,
                       who << ": values-only update with a " << h.rows << " x " << h.cols
                           << " matrix; the preconditioner was set up for " << rows << " x "
                           << rows);
        const std::size_t np = row_ptr.size();
        std::size_t i = first_mismatch(row_ptr.data(), h.row_ptr.data(), np);
        index_t bad = no_row;
        if (i < np) {
            bad = std::max<index_t>(0, index_t(i) - 1);
        } else if ((i = first_mismatch(col.get(), h.col_idx.data(), std::size_t(nnz()))) <
                   std::size_t(nnz())) {
            bad = index_t(std::upper_bound(row_ptr.begin(), row_ptr.end(), offset_t(i)) -
                          row_ptr.begin()) -
                  1;
        }
        HEPTANE_ENSURE(bad == no_row, InputError,
                       who << ": values-only update with another nonzero pattern (row "
                           << std::int64_t(bad) + 1
                           << " differs from the one the preconditioner was set up with); set "
                              "up a new preconditioner for a new pattern");
    }
};

// ---- none ------------------------------------------------------------------------------

template <class VT>
class IdentityPc final : public Preconditioner<VT> {
public:
    IdentityPc(index_t n, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(n, 1, std::move(exec))
    {
    }
    PcType type() const noexcept override { return PcType::none; }
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

protected:
    void solve(const VT* r, VT* z) const override  // z = r
    {
        const index_t n = this->n_;
        dispatch_executor(*this->exec_, [&](const auto& e) { kernels::copy(e, n, r, z); });
    }
    bool symmetric_apply() const noexcept override { return true; }
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
                                                        std::shared_ptr<const Executor> exec)
    {
        const auto t0 = clock_type::now();
        HEPTANE_ENSURE(
            a_in.rows == a_in.cols, DimensionMismatch,
            name(type) << ": the matrix is " << a_in.rows << " x " << a_in.cols << ", not square");
        Csr<double> keep;
        const Csr<double>& a = host_csr(a_in, keep);
        auto pc = std::make_unique<BlockDiagPc>(type, pattern_of(a), nc, std::move(exec));
        pc->numeric_host(a.values.data());
        pc->setup_ms_ = ms_since(t0);
        return pc;
    }
    /// Setup from a host pattern and the values on the executor (make_preconditioner's
    /// CsrPatternView overload).
    static std::unique_ptr<Preconditioner<VT>> from_values(PcType type, const CsrPatternView& p,
                                                           const double* values, index_t nc,
                                                           std::shared_ptr<const Executor> exec)
    {
        const auto t0 = clock_type::now();
        if (p.on_executor && !exec->is_cpu()) {
            if (auto pc = from_device_pattern(type, p, values, nc, exec)) {
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
            return from_values(type, h, values, nc, std::move(exec));
        }
        auto pc = std::make_unique<BlockDiagPc>(type, p, nc, std::move(exec));
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
        const std::shared_ptr<const Executor>& exec)
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

protected:
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
    bool symmetric_apply() const noexcept override { return type_ == PcType::jacobi; }

public:
    const VT* block_inverse() const noexcept override { return binv_.data(); }

private:
    static const char* name(PcType t) { return t == PcType::jacobi ? "Jacobi" : "block-Jacobi"; }
    const char* who() const { return name(type_); }
    index_t nblocks() const { return this->n_ / this->nc_; }
    std::size_t nc2() const { return std::size_t(this->nc_) * std::size_t(this->nc_); }

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
        const index_t bad = kernels::block_diag_invert(*cpu_executor(), nblocks(), this->nc_,
                                                       map_.data(), v, out, nullptr);
        if (bad >= 0) fail(bad, [&](offset_t k) { return v[k]; });
        if (on_host)
            binv_.swap(next_);
        else
            copy_bytes(*cpu_executor(), out, *this->exec_, binv_.data(), binv_.bytes());
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
        const index_t bad = dispatch_executor(*this->exec_, [&](const auto& e) {
            return map32_.empty() ? kernels::block_diag_invert(e, nb, nc, map64_.data(), v,
                                                               next_.data(), flag_.data())
                                  : kernels::block_diag_invert(e, nb, nc, map32_.data(), v,
                                                               next_.data(), flag_.data());
        });
        if (bad >= 0) {
            fail(bad, [&](offset_t k) {  // the failing block's few values, one by one
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
            vals[s] = fetch(k);
        }
        detail::gather_block<0>(local.data(), vals.data(), this->nc_, blk.data());
        if (type_ == PcType::jacobi)
            HEPTANE_THROW(InputError, "Jacobi: the diagonal entry of row " << std::int64_t(c) + 1
                                                                           << " is " << blk[0]);
        const detail::PivotFailure f = detail::invert_block(blk.data(), inv.data(), this->nc_);
        HEPTANE_THROW(InputError, "block-Jacobi: singular diagonal block, "
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

    PcType type_;
    offset_t nnz_ = 0;  // the entries of the pattern set up from
    ScalarPattern pattern_;
    std::vector<offset_t> map_;  // the gather map, host (none after from_device_pattern)
    std::vector<std::pair<offset_t, offset_t>> dups_;
    std::vector<double> combined_;
    Array<std::int32_t> map32_;  // the gather map on a GPU (one of the two)
    Array<std::int64_t> map64_;
    Array<VT> binv_;           // the live inverses (nc² per block; Jacobi: 1 / a_ii)
    Array<VT> next_;           // the next ones, swapped in when all inverted
    std::vector<VT> staging_;  // host numeric part for a GPU: the inverses before the upload
    Array<index_t> flag_;      // the lowest failing block (GPU)
};

// ---- ILU(0) / BILU(0) --------------------------------------------------------------------

template <class VT>
struct DeviceFactor {
    Array<offset_t> ptr;
    Array<index_t> col;
    Array<VT> val;
    Array<VT> diag_inv;
    Array<index_t> level_rows;
    std::vector<index_t> level_ptr;  // host
    index_t nb = 0, nc = 1;

    DeviceFactor() = default;
    /// The pattern of factor f (val not used) on exec, with room for its values and, for
    /// the upper factor, D⁻¹ (written by the numeric part). The level schedule only where
    /// the solves use it (a GPU; the CPU solves in natural row order).
    DeviceFactor(const detail::BlockCsrHost& f, bool with_diag_inv, bool lower,
                 const std::shared_ptr<const Executor>& exec)
        : nb(f.nb), nc(f.nc)
    {
        const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
        ptr = upload_same(f.ptr, exec);
        col = upload_same(f.col, exec);
        val = Array<VT>(exec, f.col.size() * nc2);
        if (with_diag_inv) diag_inv = Array<VT>(exec, std::size_t(nb) * nc2);
        if (exec->is_cpu()) return;
        const detail::LevelSchedule s = detail::level_schedule(f, lower);
        level_rows = upload_same(s.rows, exec);
        level_ptr = s.ptr;
    }
    kernels::TriangularFactor<VT> view() const
    {
        kernels::TriangularFactor<VT> v;
        v.block_rows = nb;
        v.nc = nc;
        v.row_ptr = ptr.data();
        v.col = col.data();
        v.val = val.data();
        v.diag_inv = diag_inv.empty() ? nullptr : diag_inv.data();
        v.level_rows = level_rows.data();
        v.level_ptr = level_ptr.data();
        v.levels = level_ptr.empty() ? 0 : index_t(level_ptr.size() - 1);
        return v;
    }
};

template <class VT>
class Ilu0Pc final : public Preconditioner<VT> {
public:
    Ilu0Pc(const Csr<double>& a, index_t nc, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a.rows, nc, std::move(exec)),
          scratch_(this->exec_, std::size_t(a.rows))
    {
        const auto t0 = clock_type::now();
        pattern_ = detail::block_pattern(a, nc, who());
        sym_ = detail::ilu0_symbolic(pattern_.blocks);
        lower_ = DeviceFactor<VT>(sym_.lower, false, true, this->exec_);
        upper_ = DeviceFactor<VT>(sym_.upper, true, false, this->exec_);
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0; }
    void update_values(const Csr<double>& a) override
    {
        const auto t0 = clock_type::now();
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }

protected:
    // z = U⁻¹ L⁻¹ r: y = L⁻¹ r into the scratch vector (the lower solve with in != out does
    // not write r), then z = U⁻¹ y (which may overwrite the scratch with its intermediate w).
    void solve(const VT* r, VT* z) const override
    {
        VT* y = scratch_.data();
        const auto lo = lower_.view();
        const auto up = upper_.view();
        dispatch_executor(*this->exec_, [&](const auto& e) {
            kernels::triangular_solve(e, lo, const_cast<VT*>(r), y);  // r: not written
            kernels::triangular_solve(e, up, y, z);
        });
    }
    std::string details() const override
    {
        if (this->exec_->is_cpu()) return "natural order";
        std::ostringstream os;
        os << "levels=" << lower_.view().levels << "+" << upper_.view().levels;
        return os.str();
    }

private:
    const char* who() const { return this->nc_ == 1 ? "ILU(0)" : "BILU(0)"; }
    // the values into the factor layout (pattern checked), factorised in place, then into
    // the arrays on the executor (only once the factorisation succeeded)
    void numeric(const Csr<double>& a)
    {
        const std::size_t nc2 = std::size_t(this->nc_) * std::size_t(this->nc_);
        lower_w_.resize(std::size_t(sym_.nl()) * nc2);
        upper_w_.resize(std::size_t(sym_.nu()) * nc2);
        diag_w_.resize(std::size_t(pattern_.blocks.nb) * nc2);
        dinv_w_.resize(diag_w_.size());
        detail::block_fill_factors(pattern_, sym_, a, lower_w_.data(), upper_w_.data(),
                                   diag_w_.data(), who());
        detail::ilu0_numeric(sym_, lower_w_.data(), upper_w_.data(), diag_w_.data(),
                             dinv_w_.data());
        lower_c_.commit(lower_w_, lower_.val);
        upper_c_.commit(upper_w_, upper_.val);
        dinv_c_.commit(dinv_w_, upper_.diag_inv);
    }

    detail::BlockPattern pattern_;
    detail::Ilu0Symbolic sym_;
    // the factorisation, in double on the host: L, U, D, D⁻¹ (ilu0_numeric)
    std::vector<double> lower_w_, upper_w_, diag_w_, dinv_w_;
    Committer<VT> lower_c_, upper_c_, dinv_c_;
    DeviceFactor<VT> lower_, upper_;
    mutable Array<VT> scratch_;
};

// ---- multi-colour ILU(0) / BILU(0) ---------------------------------------------------------

template <class VT>
class Ilu0McPc final : public Preconditioner<VT> {
public:
    Ilu0McPc(const Csr<double>& a, index_t nc, std::shared_ptr<const Executor> exec)
        : Preconditioner<VT>(a.rows, nc, std::move(exec)),
          scratch_(this->exec_, std::size_t(a.rows))
    {
        const auto t0 = clock_type::now();
        pattern_ = detail::block_pattern(a, nc, who());
        const detail::MulticolorOrdering o = detail::multicolor_ordering(pattern_.blocks);
        {
            std::vector<offset_t> src;
            const detail::BlockCsrHost permuted =
                detail::permute_pattern(pattern_.blocks, o.perm, src);
            sym_ = detail::ilu0_symbolic(permuted);
            map_ = detail::ilu0_block_map(permuted, sym_, src);
        }
        nb_ = pattern_.blocks.nb;
        colors_ = o.colors;
        color_ptr_ = o.color_ptr;
        perm_ = upload_same(o.perm, this->exec_);
        layout(sym_.lower, lower_);
        layout(sym_.upper, upper_);
        diag_inv_ = Array<VT>(this->exec_, std::size_t(nb_) * std::size_t(nc) * std::size_t(nc));
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }
    PcType type() const noexcept override { return PcType::ilu0_mc; }
    index_t colors() const noexcept { return colors_; }
    void update_values(const Csr<double>& a) override
    {
        const auto t0 = clock_type::now();
        numeric(a);
        this->setup_ms_ = ms_since(t0);
    }

protected:
    void solve(const VT* r, VT* z) const override  // z = Pᵀ (L'U')⁻¹ P r
    {
        kernels::MulticolorFactor<VT> v;
        v.block_rows = nb_;
        v.nc = this->nc_;
        v.colors = colors_;
        v.color_ptr = color_ptr_.data();
        v.perm = perm_.data();
        v.lower = lower_.view();
        v.upper = upper_.view();
        v.diag_inv = diag_inv_.data();
        VT* y = scratch_.data();
        dispatch_executor(*this->exec_,
                          [&](const auto& e) { kernels::multicolor_solve(e, v, r, y, z); });
    }
    std::string details() const override
    {
        std::ostringstream os;
        os << "colors=" << colors_;
        return os.str();
    }

private:
    struct Triangle {
        std::vector<index_t> width;
        std::vector<offset_t> col_off, val_off;
        Array<index_t> col;
        Array<VT> val;
        Committer<VT> values;
        kernels::ColorTriangle<VT> view() const
        {
            return {width.data(), col_off.data(), val_off.data(), col.data(), val.data()};
        }
    };

    const char* who() const
    {
        return this->nc_ == 1 ? "ILU(0), multi-colour" : "BILU(0), multi-colour";
    }

    // the per-colour block-ELL layout of precond_kernels.hpp for factor pattern f (a factor
    // row of colour c may only reference other colours: checked, the ordering guarantees
    // it); the values are written by numeric()
    void layout(const detail::BlockCsrHost& f, Triangle& t) const
    {
        t.width.assign(std::size_t(colors_), 0);
        t.col_off.assign(std::size_t(colors_), 0);
        t.val_off.assign(std::size_t(colors_), 0);
        const std::size_t nc2 = std::size_t(this->nc_) * std::size_t(this->nc_);
        offset_t cols = 0;
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            index_t w = 0;
            for (index_t i = p0; i < p1; ++i)
                w = std::max(w, index_t(f.ptr[std::size_t(i) + 1] - f.ptr[std::size_t(i)]));
            t.width[std::size_t(c)] = w;
            t.col_off[std::size_t(c)] = cols;
            t.val_off[std::size_t(c)] = cols * offset_t(nc2);
            cols += offset_t(w) * (p1 - p0);
        }
        std::vector<index_t> col(std::size_t(cols), -1);
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            const std::size_t rows_c = std::size_t(p1 - p0);
            for (index_t i = p0; i < p1; ++i)
                for (offset_t q = f.ptr[std::size_t(i)]; q < f.ptr[std::size_t(i) + 1]; ++q) {
                    const std::size_t k = std::size_t(q - f.ptr[std::size_t(i)]);
                    const index_t j = f.col[std::size_t(q)];
                    HEPTANE_ENSURE(j < p0 || j >= p1, InputError,
                                   "multi-colour ILU(0): block rows "
                                       << std::int64_t(i) + 1 << " and " << std::int64_t(j) + 1
                                       << " share colour " << c);
                    col[std::size_t(t.col_off[std::size_t(c)]) + k * rows_c + std::size_t(i - p0)] =
                        j;
                }
        }
        t.col = upload_same(col, this->exec_);
        // zeros in the padding: the host side (Committer::begin) starts from zeros and
        // numeric() writes the factor blocks only
        t.val = Array<VT>(this->exec_, std::size_t(cols) * nc2);
    }

    // values straight into the factor layout of P A Pᵀ (pattern checked), factorised colour
    // by colour (the rows of a colour in parallel), then scattered into the per-colour
    // layouts on the executor
    void numeric(const Csr<double>& a)
    {
        const index_t nc = this->nc_;
        const std::size_t ncs = std::size_t(nc), nc2 = ncs * ncs;
        lower_w_.resize(std::size_t(sym_.nl()) * nc2);
        upper_w_.resize(std::size_t(sym_.nu()) * nc2);
        diag_w_.resize(std::size_t(nb_) * nc2);
        dinv_w_.resize(diag_w_.size());
        detail::block_fill_factors(pattern_, sym_, a, lower_w_.data(), upper_w_.data(),
                                   diag_w_.data(), who(), &map_);
        detail::ilu0_numeric(sym_, lower_w_.data(), upper_w_.data(), diag_w_.data(), dinv_w_.data(),
                             &color_ptr_);

        VT* lo = lower_.values.begin(lower_.val);
        VT* up = upper_.values.begin(upper_.val);
        VT* di = dinv_values_.begin(diag_inv_);
        for (index_t c = 0; c < colors_; ++c) {
            const index_t p0 = color_ptr_[std::size_t(c)], p1 = color_ptr_[std::size_t(c) + 1];
            const std::size_t rows_cs = std::size_t(p1 - p0) * ncs;
            VT* lo_c = lo + lower_.val_off[std::size_t(c)];
            VT* up_c = up + upper_.val_off[std::size_t(c)];
            VT* di_c = di + std::size_t(p0) * nc2;
#pragma omp parallel for schedule(static) if (p1 - p0 > 4096)
            for (index_t i = p0; i < p1; ++i) {
                const std::size_t li = std::size_t(i - p0) * ncs;
                // block (x, y) of slot k: out[(k·nc + y)·rows_cs + li + x]
                auto put = [&](const double* blk, VT* out, std::size_t k) {
                    for (std::size_t x = 0; x < ncs; ++x)
                        for (std::size_t y = 0; y < ncs; ++y)
                            out[(k * ncs + y) * rows_cs + li + x] = VT(blk[x * ncs + y]);
                };
                for (int tri = 0; tri < 2; ++tri) {
                    const detail::BlockCsrHost& f = tri == 0 ? sym_.lower : sym_.upper;
                    const std::vector<double>& w = tri == 0 ? lower_w_ : upper_w_;
                    const offset_t f0 = f.ptr[std::size_t(i)], f1 = f.ptr[std::size_t(i) + 1];
                    for (offset_t l = f0; l < f1; ++l)
                        put(&w[std::size_t(l) * nc2], tri == 0 ? lo_c : up_c, std::size_t(l - f0));
                }
                put(&dinv_w_[std::size_t(i) * nc2], di_c, 0);  // D⁻¹ column-major too
            }
        }
        lower_.values.end(lower_.val);
        upper_.values.end(upper_.val);
        dinv_values_.end(diag_inv_);
    }

    detail::BlockPattern pattern_;  // the scalar entries into A's blocks
    detail::Ilu0Symbolic sym_;      // of P A Pᵀ
    std::vector<offset_t> map_;     // A's block q is factor block map_[q] of P A Pᵀ
    // the factorisation of P A Pᵀ, in double on the host: L, U, D, D⁻¹
    std::vector<double> lower_w_, upper_w_, diag_w_, dinv_w_;
    index_t nb_ = 0, colors_ = 0;
    std::vector<index_t> color_ptr_;  // host
    Array<index_t> perm_;
    Triangle lower_, upper_;
    Array<VT> diag_inv_;
    Committer<VT> dinv_values_;
    mutable Array<VT> scratch_;
};

void check_setup(const Executor* exec, index_t block_size)
{
    HEPTANE_ENSURE(exec, InputError, "make_preconditioner: no executor");
    HEPTANE_ENSURE(block_size >= 1, InputError,
                   "make_preconditioner: block size " << block_size << " must be >= 1");
}

}  // namespace

Csr<double> csr_in_memory_of(const CsrPatternView& p, const double* values,
                             const std::shared_ptr<const Executor>& exec)
{
    const index_t n = p.rows;
    HEPTANE_ENSURE(n >= 0 && (p.row_ptr32 || p.row_ptr64 || n == 0), InputError,
                   "a CSR pattern view without row pointers");
    Csr<double> a;
    a.rows = a.cols = n;
    a.row_ptr = Array<offset_t>(exec, std::size_t(n) + 1);
    offset_t nnz = 0;
    if (p.on_executor) {
        if (p.row_ptr64)
            copy_bytes(*exec, p.row_ptr64, *exec, a.row_ptr.data(), a.row_ptr.bytes());
        else
            dispatch_executor(*exec, [&](const auto& e) {
                kernels::widen_row_ptr(e, n, p.row_ptr32, a.row_ptr.data());
            });
        copy_bytes(*exec, a.row_ptr.data() + n, *cpu_executor(), &nnz, sizeof nnz);
    } else {
        std::vector<offset_t> ptr(std::size_t(n) + 1);
        for (index_t r = 0; r <= n; ++r) ptr[std::size_t(r)] = p.row_begin(r);
        nnz = ptr.back();
        copy_bytes(*cpu_executor(), ptr.data(), *exec, a.row_ptr.data(), a.row_ptr.bytes());
    }
    HEPTANE_ENSURE(nnz >= 0, InputError, "a CSR pattern view with " << nnz << " entries");
    a.col_idx = Array<index_t>(exec, std::size_t(nnz));
    a.values = Array<double>(exec, std::size_t(nnz));
    copy_bytes(p.on_executor ? *exec : *cpu_executor(), p.col_idx, *exec, a.col_idx.data(),
               a.col_idx.bytes());
    copy_bytes(*exec, values, *exec, a.values.data(), a.values.bytes());
    return a;
}

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const Csr<double>& a,
                                                        index_t block_size,
                                                        std::shared_ptr<const Executor> exec)
{
    return make_preconditioner<VT>(type, a, block_size, std::move(exec), PcOptions{});
}

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const Csr<double>& a,
                                                        index_t block_size,
                                                        std::shared_ptr<const Executor> exec,
                                                        const PcOptions& options,
                                                        std::shared_ptr<const Operator<VT>> a_op,
                                                        const Csr<double>* a_on_exec)
{
    check_setup(exec.get(), block_size);
    // Jacobi and block Jacobi from A already on a GPU: the gather map and the inverses are
    // made there (nothing of A crosses the bus; 126 ms on the host at 1 M cells, Nc = 3)
    const bool on_device = a_on_exec && exec->is_cuda() && a_on_exec->exec() == exec &&
                           a_on_exec->rows == a.rows && a_on_exec->nnz() == a.nnz();
    if (on_device && (type == PcType::jacobi || type == PcType::block_jacobi)) {
        HEPTANE_ENSURE(a.rows == a.cols, DimensionMismatch,
                       to_string(type)
                           << ": the matrix is " << a.rows << " x " << a.cols << ", not square");
        CsrPatternView v;
        v.rows = a_on_exec->rows;
        v.row_ptr64 = a_on_exec->row_ptr.data();
        v.col_idx = a_on_exec->col_idx.data();
        v.on_executor = true;
        return BlockDiagPc<VT>::from_values(type, v, a_on_exec->values.data(),
                                            type == PcType::jacobi ? 1 : block_size,
                                            std::move(exec));
    }
    switch (type) {
        case PcType::none:
            return std::make_unique<IdentityPc<VT>>(a.rows, std::move(exec));
        case PcType::jacobi:
            return BlockDiagPc<VT>::from_csr(type, a, 1, std::move(exec));
        case PcType::block_jacobi:
            return BlockDiagPc<VT>::from_csr(type, a, block_size, std::move(exec));
        case PcType::ilu0:
            return std::make_unique<Ilu0Pc<VT>>(a, block_size, std::move(exec));
        case PcType::ilu0_mc:
            return std::make_unique<Ilu0McPc<VT>>(a, block_size, std::move(exec));
        case PcType::amg:
            return std::make_unique<AmgPreconditioner<VT>>(a, block_size, std::move(exec),
                                                           options.amg, std::move(a_op), a_on_exec);
        case PcType::cpr:
            return make_cpr<VT>(a, block_size, std::move(exec), options.cpr, std::move(a_op),
                                on_device ? a_on_exec : nullptr);
    }
    HEPTANE_THROW(InputError, "make_preconditioner: unknown type");
}

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const CsrPatternView& pattern,
                                                        const double* values, index_t block_size,
                                                        std::shared_ptr<const Executor> exec)
{
    check_setup(exec.get(), block_size);
    switch (type) {
        case PcType::none:
            return std::make_unique<IdentityPc<VT>>(pattern.rows, std::move(exec));
        case PcType::jacobi:
            return BlockDiagPc<VT>::from_values(type, pattern, values, 1, std::move(exec));
        case PcType::block_jacobi:
            return BlockDiagPc<VT>::from_values(type, pattern, values, block_size, std::move(exec));
        default:
            HEPTANE_THROW(NotSupported, "make_preconditioner from values on the executor: "
                                            << to_string(type)
                                            << " factorises on the host; use the Csr overload");
    }
}

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_preconditioner(PcType type, const CsrPatternView& pattern,
                                                        const double* values, index_t block_size,
                                                        std::shared_ptr<const Executor> exec,
                                                        const PcOptions& options,
                                                        std::shared_ptr<const Operator<VT>> a_op)
{
    check_setup(exec.get(), block_size);
    if (type != PcType::amg && type != PcType::cpr)
        return make_preconditioner<VT>(type, pattern, values, block_size, std::move(exec));
    // A as CSR in the executor's memory (device to device on a GPU where the pattern is
    // there), set up from there; released when the setup is done
    const Csr<double> a = csr_in_memory_of(pattern, values, exec);
    if (type == PcType::amg)
        return std::make_unique<AmgPreconditioner<VT>>(a, block_size, std::move(exec), options.amg,
                                                       std::move(a_op), &a);
    return make_cpr<VT>(a, block_size, std::move(exec), options.cpr, std::move(a_op), &a,
                        /*keep_pattern=*/true);
}

template class Preconditioner<double>;
template class Preconditioner<float>;
template std::unique_ptr<Preconditioner<double>> make_preconditioner<double>(
    PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>);
template std::unique_ptr<Preconditioner<float>> make_preconditioner<float>(
    PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>);
template std::unique_ptr<Preconditioner<double>> make_preconditioner<double>(
    PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>, const PcOptions&,
    std::shared_ptr<const Operator<double>>, const Csr<double>*);
template std::unique_ptr<Preconditioner<float>> make_preconditioner<float>(
    PcType, const Csr<double>&, index_t, std::shared_ptr<const Executor>, const PcOptions&,
    std::shared_ptr<const Operator<float>>, const Csr<double>*);
template std::unique_ptr<Preconditioner<double>> make_preconditioner<double>(
    PcType, const CsrPatternView&, const double*, index_t, std::shared_ptr<const Executor>);
template std::unique_ptr<Preconditioner<float>> make_preconditioner<float>(
    PcType, const CsrPatternView&, const double*, index_t, std::shared_ptr<const Executor>);
template std::unique_ptr<Preconditioner<double>> make_preconditioner<double>(
    PcType, const CsrPatternView&, const double*, index_t, std::shared_ptr<const Executor>,
    const PcOptions&, std::shared_ptr<const Operator<double>>);
template std::unique_ptr<Preconditioner<float>> make_preconditioner<float>(
    PcType, const CsrPatternView&, const double*, index_t, std::shared_ptr<const Executor>,
    const PcOptions&, std::shared_ptr<const Operator<float>>);

}  // namespace heptane
