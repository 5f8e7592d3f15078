// The MatrixOperator factory: canonical host COO -> values in MT -> format built on the host
// -> moved to the executor -> an Operator<VT> whose products call the format's kernels through
// the executor dispatch (formats/spmv.hpp). Also the floor-traffic count of one product.
#include "formats/matrix.hpp"

#include <algorithm>
#include <cctype>
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
#include "formats/spmv.hpp"

namespace heptane {

Format parse_format(const std::string& name)
{
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (n == "coo") return Format::coo;
    if (n == "csr") return Format::csr;
    if (n == "ell") return Format::ell;
    if (n == "hyb") return Format::hyb;
    if (n == "dia") return Format::dia;
    if (n == "bsr") return Format::bsr;
    if (n == "bdiagh" || n == "bdia") return Format::bdia;
    HEPTANE_THROW(InputError, "unknown matrix format '"
                                  << name << "'; valid: coo, csr, ell, hyb, dia, bsr, bdiagh");
}

const char* to_string(Format f)
{
    switch (f) {
        case Format::coo:
            return "coo";
        case Format::csr:
            return "csr";
        case Format::ell:
            return "ell";
        case Format::hyb:
            return "hyb";
        case Format::dia:
            return "dia";
        case Format::bsr:
            return "bsr";
        case Format::bdia:
            return "bdiagh";
    }
    return "?";
}

namespace {

template <class T>
index_t block_size_for(const Coo<T>& a, const FormatOptions& opt)
{
    HEPTANE_ENSURE(opt.block_size >= 0, InputError,
                   "block size must be >= 1 (or 0 to detect), got " << opt.block_size);
    // 0: the largest b whose touched b x b blocks are all fully stored (formats/detect)
    return opt.block_size > 0 ? opt.block_size : detect_structure(a).block_size;
}

// Build format f from host COO `a` and hand the host matrix to fn (one call, by value).
template <class T, class Fn>
auto with_built_format(const Coo<T>& a, Format f, const FormatOptions& opt, Fn&& fn)
{
    switch (f) {
        case Format::coo:
            HEPTANE_ENSURE(is_canonical(a), InputError,
                           "the COO format needs canonical COO (sorted, no duplicates)");
            return fn(Coo<T>{a.rows, a.cols, a.row, a.col, a.val});
        case Format::csr:
            return fn(csr_from_coo(a));
        case Format::ell:
            return fn(ell_from_coo(a));
        case Format::hyb:
            return fn(hyb_from_coo(a, opt.hyb_width));
        case Format::dia:
            return fn(dia_from_coo(a));
        case Format::bsr:
            return fn(bsr_from_coo(a, block_size_for(a, opt)));
        case Format::bdia:
            return fn(bdia_from_coo(a, block_size_for(a, opt), opt.block_offsets));
    }
    HEPTANE_THROW(InputError, "unknown format " << int(f));
}

// Sizes, a short structure note for describe(), and the bytes a product reads from the
// matrix (vs: bytes per value).
template <class M>
index_t rows_of(const M& m)
{
    return m.rows;
}
template <class T>
index_t rows_of(const Hyb<T>& m)
{
    return m.rows();
}

template <class T>
std::string structure(const Coo<T>& m)
{
    return "nnz=" + std::to_string(m.nnz());
}
template <class T>
std::string structure(const Csr<T>& m)
{
    return "nnz=" + std::to_string(m.nnz());
}
template <class T>
std::string structure(const Ell<T>& m)
{
    return "width=" + std::to_string(m.width);
}
template <class T>
std::string structure(const Hyb<T>& m)
{
    return "width=" + std::to_string(m.ell.width) + " coo=" + std::to_string(m.coo.nnz());
}
template <class T>
std::string structure(const Dia<T>& m)
{
    return "D=" + std::to_string(m.num_diagonals());
}
template <class T>
std::string structure(const Bsr<T>& m)
{
    return "b=" + std::to_string(m.block_size) + " blocks=" + std::to_string(m.nnz_blocks());
}
template <class T>
std::string structure(const Bdia<T>& m)
{
    return "Nc=" + std::to_string(m.block_size) + " D=" + std::to_string(m.num_block_diagonals());
}

template <class T>
double matrix_bytes(const Coo<T>& m, double vs)
{
    return double(m.nnz()) * (vs + 2 * sizeof(index_t));
}
template <class T>
double matrix_bytes(const Csr<T>& m, double vs)
{
    return double(m.nnz()) * (vs + sizeof(index_t)) + double(m.rows + 1) * sizeof(offset_t);
}
template <class T>
double matrix_bytes(const Ell<T>& m, double vs)
{
    return double(m.slots()) * (vs + sizeof(index_t));
}
template <class T>
double matrix_bytes(const Hyb<T>& m, double vs)
{
    return matrix_bytes(m.ell, vs) + matrix_bytes(m.coo, vs);
}
template <class T>
double matrix_bytes(const Dia<T>& m, double vs)
{
    return double(m.num_diagonals()) * (double(m.rows) * vs + sizeof(index_t));
}
template <class T>
double matrix_bytes(const Bsr<T>& m, double vs)
{
    const double bb = double(m.block_size) * m.block_size;
    return double(m.nnz_blocks()) * (bb * vs + sizeof(index_t)) +
           double(m.block_rows() + 1) * sizeof(offset_t);
}
template <class T>
double matrix_bytes(const Bdia<T>& m, double vs)
{
    return double(m.slots()) * vs + double(m.num_block_diagonals()) * sizeof(index_t);
}

template <class MT, class VT>
const char* precision_name()
{
    if constexpr (std::is_same_v<MT, VT>)
        return std::is_same_v<MT, double> ? "fp64" : "fp32";
    else
        return "fp32 values/fp64 vectors";
}

// A format on an executor as an Operator. A^T x uses the stored CSR transpose when there is
// one (TransposeMode::stored), otherwise the format's own transpose kernel.
template <class M, class MT, class VT>
class MatrixOperator final : public Operator<VT> {
public:
    MatrixOperator(M a, index_t rows, index_t cols, std::unique_ptr<Csr<MT>> at,
                   std::shared_ptr<const Executor> exec, FormatOptions opt, std::string desc)
        : a_(std::move(a)),
          at_(std::move(at)),
          rows_(rows),
          cols_(cols),
          exec_(std::move(exec)),
          opt_(std::move(opt)),
          desc_(std::move(desc))
    {
    }
    using Operator<VT>::apply;
    index_t rows() const override { return rows_; }
    index_t cols() const override { return cols_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override
    {
        run(a_, Op::normal, alpha, x, beta, y);
    }
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override
    {
        if (at_)
            run(*at_, Op::normal, alpha, x, beta, y);
        else
            run(a_, Op::transpose, alpha, x, beta, y);
    }
    std::string describe() const override { return desc_; }
    /// Every CUDA format kernel is launch-only, except CSR's (the vector kernel measures the
    /// longest row once, with a host wait, and the merge kernel allocates per call).
    bool graph_safe() const override
    {
        return exec_->is_cuda() && !std::is_same_v<M, Csr<MT>> && !at_;
    }
    index_t apply_fused_dots(const VT* x, VT* y, const VT* w, int count, double* partials,
                             std::size_t capacity) const override
    {
        return heptane::apply_fused_dots(*exec_, a_, opt_.bdia_kernel, x, y, w, count, partials,
                                         capacity);
    }
    std::size_t fused_dots_capacity(int count) const override
    {
        return heptane::fused_dots_capacity(*exec_, a_, opt_.bdia_kernel, count);
    }

private:
    template <class Matrix>
    void run(const Matrix& m, Op op, VT alpha, const VT* x, VT beta, VT* y) const
    {
#ifdef HEPTANE_HAVE_CUDA
        // The CUDA CSR and BDIA kernels take the kernel choice of the options.
        if (exec_->is_cuda()) {
            const auto& cuda = static_cast<const CudaExecutor&>(*exec_);
            if constexpr (std::is_same_v<Matrix, Csr<MT>>) {
                kernels::spmv(cuda, m, op, alpha, x, beta, y, opt_.csr_kernel);
                return;
            } else if constexpr (std::is_same_v<Matrix, Bdia<MT>>) {
                kernels::spmv(cuda, m, op, alpha, x, beta, y, opt_.bdia_kernel);
                return;
            }
        }
#endif
        heptane::spmv(*exec_, m, op, alpha, x, beta, y);
    }

    M a_;
    std::unique_ptr<Csr<MT>> at_;
    index_t rows_, cols_;
    std::shared_ptr<const Executor> exec_;
    FormatOptions opt_;
    std::string desc_;
};

template <class M>
M place(M m, const std::shared_ptr<const Executor>& exec)
{
    return exec->is_cpu() ? m : m.to(exec);
}

}  // namespace

template <class MT, class VT>
std::unique_ptr<Operator<VT>> make_matrix_operator(const Coo<double>& a, Format f,
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
    auto wrap = [&](auto m, bool placed) -> std::unique_ptr<Operator<VT>> {
        using M = decltype(m);
        const index_t rows = rows_of(m), cols = a.cols;
        std::ostringstream d;
        d << to_string(f) << ' ' << rows << 'x' << cols << ' ' << structure(m) << ' '
          << precision_name<MT, VT>() << " on " << exec->name();
        if (at) d << ", stored transpose";
        return std::make_unique<MatrixOperator<M, MT, VT>>(
            placed ? std::move(m) : place(std::move(m), exec), rows, cols, std::move(at), exec, opt,
            d.str());
    };
    // BDIA-GH for a GPU: the entries go up and are placed there (no host BDIA copy).
    if (f == Format::bdia && !exec->is_cpu() && !opt.build_on_host)
        return wrap(bdia_from_coo(*host, block_size_for(*host, opt), opt.block_offsets, exec),
                    true);
    return with_built_format(*host, f, opt, [&](auto m) { return wrap(std::move(m), false); });
}

template <class MT, class VT>
std::unique_ptr<Operator<VT>> make_matrix_operator(const Csr<double>& a, Format f,
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
            const std::string d = describe(structure(m));
            return std::make_unique<MatrixOperator<Bdia<double>, double, VT>>(
                std::move(m), a.rows, a.cols, nullptr, exec, opt, d);
        }
        if (gpu && f == Format::csr && plain) {
            Csr<double> m = same ? *a_on_exec : a.to(exec);  // a copy on the device, or an upload
            const std::string d = describe(structure(m));
            return std::make_unique<MatrixOperator<Csr<double>, double, VT>>(
                std::move(m), a.rows, a.cols, nullptr, exec, opt, d);
        }
    }
    (void)same;
    return make_matrix_operator<MT, VT>(to_coo(a), f, std::move(exec), opt);
}

SpmvTraffic spmv_traffic(const Coo<double>& a, Format f, const FormatOptions& opt, Precision p)
{
    const double vs = p == Precision::double_ ? 8 : 4;  // matrix value bytes
    const double xs = p == Precision::single ? 4 : 8;   // vector value bytes
    // Counting needs only the structure: build in fp32 to halve the memory.
    const Coo<float> host = convert_values<float>(a);
    return with_built_format(host, f, opt, [&](const auto& m) {
        SpmvTraffic t;
        t.matrix_bytes = matrix_bytes(m, vs);
        t.vector_bytes = (double(rows_of(m)) + double(a.cols)) * xs;
        return t;
    });
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                         \
    template std::unique_ptr<Operator<VT>> make_matrix_operator<MT, VT>(                    \
        const Coo<double>&, Format, std::shared_ptr<const Executor>, const FormatOptions&); \
    template std::unique_ptr<Operator<VT>> make_matrix_operator<MT, VT>(                    \
        const Csr<double>&, Format, std::shared_ptr<const Executor>, const FormatOptions&,  \
        const Csr<double>*);
HEPTANE_INSTANTIATE(double, double)
HEPTANE_INSTANTIATE(float, float)
HEPTANE_INSTANTIATE(float, double)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
