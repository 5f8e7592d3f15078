// What the preconditioners' implementations share (internal header of solver/precond/*.cpp):
// host timing, uploads, the committer of new values, the pattern kept for values-only
// updates, and the constructors preconditioner.cpp's make_preconditioner dispatches to
// (pc_jacobi.cpp: none, Jacobi, block Jacobi; pc_ilu0.cpp: ILU(0), multi-colour ILU(0)).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "solver/precond/preconditioner.hpp"

namespace heptane::detail {

using clock_type = std::chrono::steady_clock;
inline double ms_since(clock_type::time_point t0)
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

inline const Csr<double>& host_csr(const Csr<double>& a, Csr<double>& keep)
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

inline CsrPatternView pattern_of(const Csr<double>& h)
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

// ---- the constructors of the kinds -----------------------------------------------------

template <class VT>
std::unique_ptr<Preconditioner<VT>> make_identity_pc(index_t n,
                                                     std::shared_ptr<const Executor> exec);
/// The preconditioner of a process that owns no rows: nothing to apply, of the type the other
/// processes set up (so that the solvers on every process take the same path).
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_empty_pc(PcType type,
                                                  std::shared_ptr<const Executor> exec);
/// Jacobi (nc = 1) or block Jacobi from a Csr anywhere (numeric part on the host); `zero`:
/// point Jacobi at a zero diagonal entry (PcOptions::jacobi_zero_diagonal).
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_block_diag_pc(PcType type, const Csr<double>& a,
                                                       index_t nc,
                                                       std::shared_ptr<const Executor> exec,
                                                       ZeroDiagonal zero = ZeroDiagonal::error);
/// The same from a pattern and values in the executor's memory (numeric part there).
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_block_diag_pc(PcType type, const CsrPatternView& p,
                                                       const double* values, index_t nc,
                                                       std::shared_ptr<const Executor> exec,
                                                       ZeroDiagonal zero = ZeroDiagonal::error);
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_ilu0_pc(const Csr<double>& a, index_t nc,
                                                 std::shared_ptr<const Executor> exec);
template <class VT>
std::unique_ptr<Preconditioner<VT>> make_ilu0_mc_pc(const Csr<double>& a, index_t nc,
                                                    std::shared_ptr<const Executor> exec);

}  // namespace heptane::detail
