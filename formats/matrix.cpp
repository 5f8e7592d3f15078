// The MatrixOperator factory: canonical host COO -> values in MT -> format built on the host
// -> moved to the executor -> an Operator<VT> whose products call the format's kernels through
// the executor dispatch (formats/spmv.hpp). Also the floor-traffic count of one product.
#include "formats/matrix.hpp"
#include "formats/matrix_operator.hpp"

#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bsr/bsr.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "formats/dia/dia.hpp"
#include "formats/ell/ell.hpp"
#include "formats/fused_dots.hpp"
#include "formats/hyb/hyb.hpp"
#include "formats/registry.hpp"
#include "formats/spmv.hpp"

namespace heptane {

namespace {

template <class T>
index_t block_size_for(const Coo<T>& a, const FormatOptions& opt)
{
    HEPTANE_ENSURE(opt.block_size >= 0, InputError,
                   "block size must be >= 1 (or 0 to detect), got " << opt.block_size);
    // 0: the largest b whose touched b x b blocks are all fully stored (formats/detect)
    return opt.block_size > 0 ? opt.block_size : detect_structure(a).block_size;
}

// Build format f from host COO `a` (the registry's build, with the block size resolved) and
// hand the host matrix and the format's traits to fn (one call, by value).
template <class T, class Fn>
auto with_built_format(const Coo<T>& a, Format f, const FormatOptions& opt, Fn&& fn)
{
    return visit_format(f, [&](auto traits) {
        using Tr = decltype(traits);
        if constexpr (Tr::info.block_size) {
            FormatOptions resolved = opt;
            resolved.block_size = block_size_for(a, opt);
            return fn(Tr::build(a, resolved), traits);
        } else {
            return fn(Tr::build(a, opt), traits);
        }
    });
}

template <class MT, class VT>
const char* precision_name()
{
    if constexpr (std::is_same_v<MT, VT>)
        return std::is_same_v<MT, double> ? "fp64" : "fp32";
    else
        return "fp32 values/fp64 vectors";
}

template <class M>
M place(M m, const std::shared_ptr<const Executor>& exec)
{
    return exec->is_cpu() ? m : m.to(exec);
}

}  // namespace

template <class MT, class VT>
std::unique_ptr<MatrixOperator<VT>> make_matrix_operator(const Coo<double>& a, Format f,
                                                         std::shared_ptr<const Executor> exec,
                                                         const FormatOptions& opt)
{
    HEPTANE_ENSURE(exec != nullptr, InputError, "make_matrix_operator: no executor given");
    // Values in MT on the host; for MT = double on the host, no copy.
    Coo<MT> converted;
    const Coo<MT>* host = &converted;
    if constexpr (std::is_same_v<MT, double>) {
        if (a.exec()->is_cpu())
            host = &a;
        else
            converted = a.to(cpu_executor());
    } else {
        converted = convert_values<MT>(a);
    }
    std::unique_ptr<Csr<MT>> at;
    if (opt.transpose == TransposeMode::stored && f != Format::bdia)
        at = std::make_unique<Csr<MT>>(place(transpose(csr_from_coo(*host)), exec));
    // m on the host (placed == false) or already on exec
    auto wrap = [&](auto m, auto traits, bool placed) -> std::unique_ptr<MatrixOperator<VT>> {
        using M = decltype(m);
        const index_t rows = a.rows, cols = a.cols;
        std::ostringstream d;
        d << to_string(f) << ' ' << rows << 'x' << cols << ' ' << traits.structure(m) << ' '
          << precision_name<MT, VT>() << " on " << exec->name();
        if (at) d << ", stored transpose";
        return std::make_unique<FormatOperator<M, MT, VT>>(
            placed ? std::move(m) : place(std::move(m), exec), rows, cols, std::move(at), exec, opt,
            d.str(), a.nnz());
    };
    // BDIA-GH for a GPU: the entries go up and are placed there (no host BDIA copy).
    if (f == Format::bdia && !exec->is_cpu() && !opt.build_on_host)
        return wrap(bdia_from_coo(*host, block_size_for(*host, opt), opt.block_offsets, exec),
                    FormatTraits<Format::bdia>{}, true);
    return with_built_format(
        *host, f, opt, [&](auto m, auto traits) { return wrap(std::move(m), traits, false); });
}

template <class MT, class VT>
std::unique_ptr<MatrixOperator<VT>> make_matrix_operator(const Csr<double>& a, Format f,
                                                         std::shared_ptr<const Executor> exec,
                                                         const FormatOptions& opt,
                                                         const Csr<double>* a_on_exec)
{
    HEPTANE_ENSURE(exec != nullptr, InputError, "make_matrix_operator: no executor given");
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "make_matrix_operator takes host CSR");
    const bool same = a_on_exec && a_on_exec->exec() == exec && a_on_exec->rows == a.rows &&
                      a_on_exec->nnz() == a.nnz();
    if constexpr (std::is_same_v<MT, double>) {
        const bool gpu = !exec->is_cpu();
        const bool plain = opt.transpose != TransposeMode::stored;
        auto describe = [&](const std::string& structure_note) {
            std::ostringstream d;
            d << to_string(f) << ' ' << a.rows << 'x' << a.cols << ' ' << structure_note << ' '
              << precision_name<MT, VT>() << " on " << exec->name();
            return d.str();
        };
        if (gpu && f == Format::bdia && !opt.build_on_host && opt.block_size > 0) {
            Bdia<double> m = bdia_from_csr(a, opt.block_size, opt.block_offsets, exec,
                                           same ? a_on_exec : nullptr);
            const std::string d = describe(FormatTraits<Format::bdia>::structure(m));
            return std::make_unique<FormatOperator<Bdia<double>, double, VT>>(
                std::move(m), a.rows, a.cols, nullptr, exec, opt, d, a.nnz());
        }
        if (gpu && f == Format::csr && plain) {
            Csr<double> m = same ? *a_on_exec : a.to(exec);  // a copy on the device, or an upload
            const std::string d = describe(FormatTraits<Format::csr>::structure(m));
            return std::make_unique<FormatOperator<Csr<double>, double, VT>>(
                std::move(m), a.rows, a.cols, nullptr, exec, opt, d, a.nnz());
        }
    }
    (void)same;
    return make_matrix_operator<MT, VT>(to_coo(a), f, std::move(exec), opt);
}

template <class MT, class VT>
std::unique_ptr<MatrixOperator<VT>> make_matrix_operator(const CsrView& a, Format f,
                                                         std::shared_ptr<const Executor> exec,
                                                         const FormatOptions& opt)
{
    HEPTANE_ENSURE(exec != nullptr, InputError, "make_matrix_operator: no executor given");
    if (f != Format::csr || opt.transpose == TransposeMode::stored)
        return make_matrix_operator<MT, VT>(to_coo(a), f, std::move(exec), opt);
    const offset_t nnz = a.nnz();
    Csr<MT> m;
    m.rows = a.rows;
    m.cols = a.columns();
    std::vector<offset_t> ptr(std::size_t(a.rows) + 1);
    for (index_t r = 0; r <= a.rows; ++r) ptr[std::size_t(r)] = a.row_ptr[r];
    std::vector<MT> val(static_cast<std::size_t>(nnz));
#pragma omp parallel for schedule(static) if (nnz > 65536)
    for (offset_t k = 0; k < nnz; ++k) val[std::size_t(k)] = static_cast<MT>(a.values[k]);
    m.row_ptr = Array<offset_t>(std::move(ptr));
    m.col_idx = Array<index_t>(std::vector<index_t>(a.col_idx, a.col_idx + nnz));
    m.values = Array<MT>(std::move(val));
    std::ostringstream d;
    d << "csr " << m.rows << 'x' << m.cols << ' ' << FormatTraits<Format::csr>::structure(m) << ' '
      << precision_name<MT, VT>() << " on " << exec->name();
    return std::make_unique<FormatOperator<Csr<MT>, MT, VT>>(
        place(std::move(m), exec), a.rows, a.columns(), nullptr, exec, opt, d.str(), nnz);
}

SpmvTraffic spmv_traffic(const Coo<double>& a, Format f, const FormatOptions& opt, Precision p)
{
    const double vs = p == Precision::double_ ? 8 : 4;  // matrix value bytes
    const double xs = p == Precision::single ? 4 : 8;   // vector value bytes
    // Counting needs only the structure: build in fp32 to halve the memory.
    const Coo<float> host = convert_values<float>(a);
    return with_built_format(host, f, opt, [&](const auto& m, auto traits) {
        SpmvTraffic t;
        t.matrix_bytes = traits.matrix_bytes(m, vs);
        t.vector_bytes = (double(a.rows) + double(a.cols)) * xs;
        return t;
    });
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                         \
    template std::unique_ptr<MatrixOperator<VT>> make_matrix_operator<MT, VT>(              \
        const Coo<double>&, Format, std::shared_ptr<const Executor>, const FormatOptions&); \
    template std::unique_ptr<MatrixOperator<VT>> make_matrix_operator<MT, VT>(              \
        const Csr<double>&, Format, std::shared_ptr<const Executor>, const FormatOptions&,  \
        const Csr<double>*);                                                                \
    template std::unique_ptr<MatrixOperator<VT>> make_matrix_operator<MT, VT>(              \
        const CsrView&, Format, std::shared_ptr<const Executor>, const FormatOptions&);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
