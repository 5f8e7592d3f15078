// The preconditioners of heptane: setup on the host (double), factors in VT on the
// executor, apply through precond_kernels.hpp. Each keeps its symbolic part (pattern-only)
// and the host work arrays of its numeric part, so update_values redoes only the numeric
// part and writes into the arrays it already has on the executor. Jacobi and block Jacobi
// can also run their numeric part on the executor, from values already there
// (update_values_device; kernels::block_diag_invert). This file: the base class, the names
// and make_preconditioner; the kinds live in pc_jacobi.cpp, pc_ilu0.cpp and amg/.
#include "solver/precond/preconditioner.hpp"

#include <sstream>
#include <utility>
#include <vector>

#include "solver/precond/amg/cpr.hpp"
#include "solver/precond/pc_common.hpp"
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

template <class VT>
bool Preconditioner<VT>::update_values_permuted(const double*, const index_t*, offset_t)
{
    return false;
}

template <class VT>
bool Preconditioner<VT>::update_values_blocks(const double*, index_t, index_t, const index_t*,
                                              const index_t*)
{
    return false;
}

template <class VT>
bool Preconditioner<VT>::update_values_bdia(const Bdia<double>&)
{
    return false;
}

namespace {

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
    // no rows (a rank that owns none of a distributed matrix): nothing to precondition
    if (a.rows == 0) return detail::make_empty_pc<VT>(type, std::move(exec));  // no rows
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
        return detail::make_block_diag_pc<VT>(type, v, a_on_exec->values.data(),
                                              type == PcType::jacobi ? 1 : block_size,
                                              std::move(exec), options.jacobi_zero_diagonal);
    }
    switch (type) {
        case PcType::none:
            return detail::make_identity_pc<VT>(a.rows, std::move(exec));
        case PcType::jacobi:
            return detail::make_block_diag_pc<VT>(type, a, 1, std::move(exec),
                                                  options.jacobi_zero_diagonal);
        case PcType::block_jacobi:
            return detail::make_block_diag_pc<VT>(type, a, block_size, std::move(exec));
        case PcType::ilu0:
            return detail::make_ilu0_pc<VT>(a, block_size, std::move(exec));
        case PcType::ilu0_mc:
            return detail::make_ilu0_mc_pc<VT>(a, block_size, std::move(exec));
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
    if (pattern.rows == 0) return detail::make_empty_pc<VT>(type, std::move(exec));  // no rows
    switch (type) {
        case PcType::none:
            return detail::make_identity_pc<VT>(pattern.rows, std::move(exec));
        case PcType::jacobi:
            return detail::make_block_diag_pc<VT>(type, pattern, values, 1, std::move(exec));
        case PcType::block_jacobi:
            return detail::make_block_diag_pc<VT>(type, pattern, values, block_size,
                                                  std::move(exec));
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
    if (type == PcType::jacobi && pattern.rows > 0)
        return detail::make_block_diag_pc<VT>(type, pattern, values, 1, std::move(exec),
                                              options.jacobi_zero_diagonal);
    if ((type != PcType::amg && type != PcType::cpr) || pattern.rows == 0)
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
