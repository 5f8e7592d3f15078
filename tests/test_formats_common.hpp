// Shared checks of the format tests (test_formats.cpp, test_formats_data.cpp): run one
// product of a format placed on the executor under test and compare it with the CSR CPU
// kernel and with Eigen, within a tolerance derived from the data.
#pragma once

#include <boost/test/unit_test.hpp>

#include <Eigen/Sparse>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "formats/bdia/bdia_kernels.hpp"
#include "formats/bsr/bsr_kernels.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/dia/dia_kernels.hpp"
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"
#include "formats/spmv.hpp"
#include "tests/test_common.hpp"

namespace heptane::test {

/// alpha and beta of every product check (Kokkos' choice: 0, 1, -1 and something else).
inline const std::vector<double>& scalars()
{
    static const std::vector<double> s{0.0, 1.0, -1.0, 0.5};
    return s;
}

inline const char* op_name(Op op)
{
    return op == Op::normal ? "A x" : "A^T x";
}

template <class MT, class VT>
const char* precision_label()
{
    if constexpr (std::is_same_v<MT, VT>)
        return std::is_same_v<MT, double> ? "double" : "float";
    else
        return "mixed";
}

/// op(A) x by Eigen in double for one x (values of `a`, already rounded to MT), and the
/// pieces of the error bound; computed once and reused for every alpha and beta.
template <class MT, class VT>
struct Reference {
    Op op;
    std::vector<VT> x;
    std::vector<double> ax;      ///< op(A) x
    std::vector<double> abs_ax;  ///< sum_j |a_ij x_j| for each output i
    std::vector<double> count;   ///< entries of each output

    Reference(const Coo<MT>& a, Op op_, unsigned seed)
        : op(op_), x(random_vector<VT>(op_ == Op::normal ? a.cols : a.rows, seed))
    {
        using Sparse = Eigen::SparseMatrix<double, Eigen::RowMajor, std::int64_t>;
        std::vector<Eigen::Triplet<double, std::int64_t>> trip;
        trip.reserve(a.nnz());
        for (offset_t k = 0; k < a.nnz(); ++k)
            trip.emplace_back(a.row[k], a.col[k], double(a.val[k]));
        Sparse m(a.rows, a.cols);
        m.setFromTriplets(trip.begin(), trip.end());
        Eigen::VectorXd xe(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) xe[Eigen::Index(i)] = double(x[i]);
        const Eigen::VectorXd ye =
            op == Op::normal ? Eigen::VectorXd(m * xe) : Eigen::VectorXd(m.transpose() * xe);
        ax.assign(ye.data(), ye.data() + ye.size());
        abs_ax.assign(ax.size(), 0.0);
        count.assign(ax.size(), 0.0);
        for (offset_t k = 0; k < a.nnz(); ++k) {
            const index_t out = op == Op::normal ? a.row[k] : a.col[k];
            const index_t in = op == Op::normal ? a.col[k] : a.row[k];
            abs_ax[out] += std::abs(double(a.val[k]) * double(x[in]));
            count[out] += 1;
        }
    }

    /// alpha * op(A) x + beta * y0; beta == 0 ignores y0 (which may be NaN).
    std::vector<double> product(double alpha, double beta, const std::vector<VT>& y0) const
    {
        std::vector<double> y(ax.size());
        for (std::size_t i = 0; i < y.size(); ++i)
            y[i] = alpha * ax[i] + (beta == 0 ? 0.0 : beta * double(y0[i]));
        return y;
    }

    /// Per-entry error bound of the product accumulated in VT: (n_i + 4) * eps(VT) *
    /// (|alpha| sum_j |a_ij x_j| + |beta y0_i|), n_i the entries of output i (a sum of n
    /// terms in any order is off by at most (n-1) u sum |terms|; 4 covers alpha, beta and the
    /// final add, with a factor 2 to spare), plus the smallest normal number.
    std::vector<double> bound(double alpha, double beta, const std::vector<VT>& y0) const
    {
        const double eps = std::numeric_limits<VT>::epsilon();
        std::vector<double> b(ax.size());
        for (std::size_t i = 0; i < b.size(); ++i)
            b[i] = (count[i] + 4) * eps *
                       (std::abs(alpha) * abs_ax[i] +
                        (beta == 0 ? 0.0 : std::abs(beta * double(y0[i])))) +
                   std::numeric_limits<double>::min();
        return b;
    }
};

/// Worst |y_i - ref_i| / bound_i (NaN or Inf in y gives infinity).
template <class VT>
double worst_ratio(const std::vector<VT>& y, const std::vector<double>& ref,
                   const std::vector<double>& bound)
{
    double w = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (!std::isfinite(double(y[i]))) return std::numeric_limits<double>::infinity();
        w = std::max(w, std::abs(double(y[i]) - ref[i]) / bound[i]);
    }
    return w;
}

/// Check one product y = alpha*op(A)*x + beta*y computed by `run(alpha, x, beta, y)` on the
/// executor under test (x, y in its memory) against the CSR CPU kernel and Eigen (`ref`
/// holds op and x). y starts as NaN when beta == 0, to prove that the kernel does not read it.
template <class MT, class VT, class Run>
void check_run(const std::string& what, const Reference<MT, VT>& ref, const Csr<MT>& csr,
               double alpha, double beta, unsigned seed, Run&& run)
{
    const auto exec = test_executor();
    const Op op = ref.op;
    const std::size_t nout = ref.ax.size();
    const std::vector<VT> y0 = beta == 0
                                   ? std::vector<VT>(nout, std::numeric_limits<VT>::quiet_NaN())
                                   : random_vector<VT>(nout, seed);
    const Array<VT> xd = Array<VT>(ref.x).to(exec);
    Array<VT> yd = Array<VT>(y0).to(exec);
    run(VT(alpha), xd.data(), VT(beta), yd.data());
    exec->synchronize();
    const std::vector<VT> y = yd.to_vector();

    std::vector<VT> ycsr = y0;
    kernels::spmv(*cpu_executor(), csr, op, VT(alpha), ref.x.data(), VT(beta), ycsr.data());

    const std::vector<double> expect = ref.product(alpha, beta, y0);
    const std::vector<double> bound = ref.bound(alpha, beta, y0);
    const double vs_eigen = worst_ratio(y, expect, bound);
    const double csr_vs_eigen = worst_ratio(ycsr, expect, bound);
    // the format against the CSR kernel: both within the bound of Eigen, so within twice it
    const std::vector<double> csr_d(ycsr.begin(), ycsr.end());
    const double vs_csr = worst_ratio(y, csr_d, bound);
    std::ostringstream where;
    where << what << ", " << precision_label<MT, VT>() << ", " << op_name(op) << ", alpha=" << alpha
          << " beta=" << beta << ", on " << exec->name();
    BOOST_TEST(vs_eigen <= 1.0, where.str() << ": off Eigen by " << vs_eigen << " x the bound");
    BOOST_TEST(vs_csr <= 2.0, where.str()
                                  << ": off the CSR kernel by " << vs_csr << " x the bound");
    BOOST_TEST(csr_vs_eigen <= 1.0, where.str() << ": the reference CSR kernel is off Eigen by "
                                                << csr_vs_eigen << " x the bound");
}

/// Where a device back end documents a limit (e.g. the CUDA BDIA kernels take at most 64
/// block diagonals) it throws NotSupported. With `device_may_refuse`, a NotSupported from the
/// device is reported as a message and the case is left out; everywhere else it fails the test.
/// Returns whether `run` (one product with beta = 0) was accepted.
template <class VT, class Run>
bool device_accepts(const std::string& what, std::size_t nin, std::size_t nout,
                    bool device_may_refuse, Run&& run)
{
    if (!device_may_refuse || !testing_on_gpu()) return true;
    const auto exec = test_executor();
    const Array<VT> x = Array<VT>(std::vector<VT>(nin, VT(1))).to(exec);
    Array<VT> y(exec, nout);
    try {
        run(VT(1), x.data(), VT(0), y.data());
    } catch (const NotSupported& e) {
        BOOST_TEST_MESSAGE(what << ": left out on " << exec->name() << ": " << e.what());
        return false;
    }
    return true;
}

/// (alpha, beta) pairs: every pair of scalars(), or two (beta = 0 with y = NaN, and beta != 0)
/// for the larger matrices.
using Scalars = std::vector<std::pair<double, double>>;
inline Scalars all_pairs()
{
    Scalars p;
    for (double alpha : scalars())
        for (double beta : scalars()) p.emplace_back(alpha, beta);
    return p;
}
inline Scalars two_pairs()
{
    return {{1.0, 0.0}, {-0.5, 1.0}};
}

/// Build with `build` (host COO in MT -> host format), place on the executor under test and
/// check op(A) for every (alpha, beta) in `pairs`.
template <class MT, class VT, class Build>
void check_format_precision(const std::string& what, const Coo<double>& a64, Build&& build, Op op,
                            bool device_may_refuse, const Scalars& pairs)
{
    const auto exec = test_executor();
    const Coo<MT> a = convert_values<MT>(a64);
    const Csr<MT> csr = csr_from_coo(a);
    const auto m = build(a).to(exec);
    auto run = [&](VT al, const VT* x, VT be, VT* y) { heptane::spmv(*exec, m, op, al, x, be, y); };
    const std::size_t nin = op == Op::normal ? a.cols : a.rows;
    const std::size_t nout = op == Op::normal ? a.rows : a.cols;
    if (!device_accepts<VT>(what, nin, nout, device_may_refuse, run)) return;
    const Reference<MT, VT> ref(a, op, 1);
    unsigned seed = 2;
    for (auto [alpha, beta] : pairs) check_run(what, ref, csr, alpha, beta, seed++, run);
}

/// check_format_precision for double, float and mixed (fp32 values, fp64 vectors).
template <class Build>
void check_format(const std::string& what, const Coo<double>& a, Build&& build, Op op,
                  bool device_may_refuse = false, const Scalars& pairs = all_pairs())
{
    check_format_precision<double, double>(what, a, build, op, device_may_refuse, pairs);
    check_format_precision<float, float>(what, a, build, op, device_may_refuse, pairs);
    check_format_precision<float, double>(what, a, build, op, device_may_refuse, pairs);
}

/// Exact equality of two COO matrices (same entries, same order, same values).
template <class T>
bool same_coo(const Coo<T>& a, const Coo<T>& b, std::string& why)
{
    std::ostringstream s;
    if (a.rows != b.rows || a.cols != b.cols) {
        s << "size " << a.rows << "x" << a.cols << " vs " << b.rows << "x" << b.cols;
    } else if (a.nnz() != b.nnz()) {
        s << "nnz " << a.nnz() << " vs " << b.nnz();
    } else {
        for (offset_t k = 0; k < a.nnz(); ++k)
            if (a.row[k] != b.row[k] || a.col[k] != b.col[k] || !(a.val[k] == b.val[k])) {
                s << "entry " << k << ": (" << a.row[k] << ", " << a.col[k] << ", " << a.val[k]
                  << ") vs (" << b.row[k] << ", " << b.col[k] << ", " << b.val[k] << ")";
                break;
            }
    }
    why = s.str();
    return why.empty();
}

}  // namespace heptane::test
