// The CUDA SpMV kernels of every format, every kernel choice and launch shape, and the
// cuSPARSE baselines, against the CPU reference (the CSR CPU kernel in double) on the same
// matrix: y = alpha*op(A)*x + beta*y for op = A, A^T, alpha/beta in {1,0}, {-1,1}, {0.5,-2},
// {0,1.5}, {2.5,0}, and all three precisions. y holds NaN whenever beta = 0, so a kernel
// that reads y then, or leaves an entry unwritten, fails.
//
// GPU-only: this program tests CUDA code and nothing else, so without a device (or without
// HEPTANE_TEST_DEVICE=cuda) it prints why and exits 77 (skipped). tests/cuda.cmake registers
// only its _gpu variant (label gpu), and only in builds with the CUDA back end.
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda_common.hpp"
#include "formats/bdia/bdia_cuda.hpp"
#include "formats/bsr/bsr_kernels.hpp"
#include "formats/coo/coo_kernels.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/csr/cusparse_baseline.hpp"
#include "formats/dia/dia_kernels.hpp"
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"
#include "generators/hepta.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

struct GpuOnly {
    GpuOnly() { test::skip_unless_gpu("test_cuda_spmv", "CUDA kernels"); }
};

std::shared_ptr<const CudaExecutor> gpu()
{
    return std::static_pointer_cast<const CudaExecutor>(test::test_executor());
}

/// f(MT{}, VT{}) for the three instantiated pairs.
template <class F>
void for_each_precision(F&& f)
{
    f(double{}, double{});
    f(float{}, float{});
    f(float{}, double{});
}

template <class MT, class VT>
std::string prec()
{
    return std::is_same_v<MT, double> ? "double" : std::is_same_v<VT, double> ? "mixed" : "single";
}

struct AlphaBeta {
    double alpha, beta;
};
const std::vector<AlphaBeta> all_ab = {{1, 0}, {-1, 1}, {0.5, -2}, {0, 1.5}, {2.5, 0}};
const std::vector<AlphaBeta> one_ab = {{1.5, -0.5}};
const std::vector<Op> both_ops = {Op::normal, Op::transpose};

/// Run `apply(op, alpha, x, beta, y)` on the device and compare with the CPU CSR kernel on
/// `ref` (the same matrix, values in MT, double accumulation).
template <class MT, class VT, class Apply>
void check_against_csr(const std::string& what, const Csr<MT>& ref, Apply&& apply,
                       const std::vector<AlphaBeta>& abs = all_ab,
                       const std::vector<Op>& ops = both_ops)
{
    auto exec = gpu();
    auto cpu = cpu_executor();
    // float accumulation over rows of up to a few hundred terms; double elsewhere
    const double tol = std::is_same_v<VT, float> ? 2e-5 : 1e-12;
    unsigned seed = 11;
    for (Op op : ops) {
        for (const auto& ab : abs) {
            const index_t nx = op == Op::normal ? ref.cols : ref.rows;
            const index_t ny = op == Op::normal ? ref.rows : ref.cols;
            const auto x = test::random_vector<VT>(nx, seed++);
            const auto y0 = test::random_vector<VT>(ny, seed++);
            std::vector<double> xd(x.begin(), x.end()), yr(y0.begin(), y0.end());
            kernels::spmv<MT, double>(*cpu, ref, op, ab.alpha, xd.data(), ab.beta, yr.data());
            Array<VT> xdev = Array<VT>(x).to(exec);
            Array<VT> ydev =
                ab.beta == 0
                    ? Array<VT>(std::vector<VT>(ny, std::numeric_limits<VT>::quiet_NaN())).to(exec)
                    : Array<VT>(y0).to(exec);
            apply(op, VT(ab.alpha), xdev.data(), VT(ab.beta), ydev.data());
            exec->synchronize();
            const double err = test::rel_max_diff(ydev.to_vector(), yr);
            const std::string p = prec<MT, VT>();
            BOOST_TEST(err <= tol, what << " [" << p << ", " << (op == Op::normal ? "A x" : "A^T x")
                                        << ", alpha=" << ab.alpha << ", beta=" << ab.beta
                                        << "]: rel. error " << err);
        }
    }
}

template <class MT>
Csr<MT> csr_of(const Coo<double>& a)
{
    return csr_from_coo(convert_values<MT>(a));
}

/// Rows of very unequal length: most with 0..4 entries, a run of empty rows, and a few rows
/// spanning several merge-path tiles (1024 items each).
Coo<double> irregular_coo(index_t rows, index_t cols, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<index_t> col(0, cols - 1);
    std::uniform_int_distribution<int> len(0, 4);
    std::uniform_real_distribution<double> val(-1, 1);
    Coo<double> a;
    a.rows = rows;
    a.cols = cols;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < rows; ++i) {
        int n = len(gen);
        if (i >= 100 && i < 160) n = 0;  // empty rows
        if (i == 17 || i == rows / 2 || i == rows - 1) n = std::min<int>(cols, 3000);
        for (int k = 0; k < n; ++k) {
            r.push_back(i);
            c.push_back(n == std::min<int>(cols, 3000) ? k : col(gen));
            v.push_back(val(gen));
        }
    }
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<double>(std::move(v));
    canonicalize(a);  // sums the duplicate random columns
    return a;
}

/// Entries on a few diagonals (offsets may exceed the matrix on one side).
Coo<double> diagonals_coo(index_t rows, index_t cols, const std::vector<index_t>& offs,
                          unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> val(-1, 1);
    std::bernoulli_distribution keep(0.9);
    Coo<double> a;
    a.rows = rows;
    a.cols = cols;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < rows; ++i)
        for (index_t d : offs) {
            const long long j = static_cast<long long>(i) + d;
            if (j < 0 || j >= cols || !keep(gen)) continue;
            r.push_back(i);
            c.push_back(static_cast<index_t>(j));
            v.push_back(val(gen));
        }
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<double>(std::move(v));
    canonicalize(a);
    return a;
}

/// Dense nc x nc blocks on the given block diagonals (about 10 % of the entries left out).
Coo<double> block_diagonals_coo(index_t brows, index_t bcols, index_t nc,
                                const std::vector<index_t>& offs, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> val(-1, 1);
    std::bernoulli_distribution keep(0.9);
    Coo<double> a;
    a.rows = brows * nc;
    a.cols = bcols * nc;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < a.rows; ++i)
        for (index_t d : offs) {
            const long long cb = static_cast<long long>(i / nc) + d;
            if (cb < 0 || cb >= bcols) continue;
            for (index_t s = 0; s < nc; ++s)
                if (keep(gen)) {
                    r.push_back(i);
                    c.push_back(static_cast<index_t>(cb * nc + s));
                    v.push_back(val(gen));
                }
        }
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<double>(std::move(v));
    canonicalize(a);
    return a;
}

/// Random block-sparse matrix with b x b blocks, some of them partial (fill-in zeros).
Coo<double> blocks_coo(index_t brows, index_t bcols, index_t b, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<index_t> bc(0, bcols - 1);
    std::uniform_int_distribution<int> nblk(0, 6);
    std::uniform_real_distribution<double> val(-1, 1);
    std::bernoulli_distribution keep(0.85);
    Coo<double> a;
    a.rows = brows * b;
    a.cols = bcols * b;
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (index_t i = 0; i < brows; ++i) {
        const int n = nblk(gen);
        for (int k = 0; k < n; ++k) {
            const index_t j = bc(gen);
            for (index_t ii = 0; ii < b; ++ii)
                for (index_t jj = 0; jj < b; ++jj)
                    if (keep(gen)) {
                        r.push_back(i * b + ii);
                        c.push_back(j * b + jj);
                        v.push_back(val(gen));
                    }
        }
    }
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<double>(std::move(v));
    canonicalize(a);
    return a;
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(GpuOnly);

// ---- CSR ---------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(csr_every_kernel_matches_cpu_reference)
{
    struct Shape {
        index_t rows, cols;
        int lo, hi;
    };
    const std::vector<Shape> shapes = {{3000, 3000, 0, 3},
                                       {2500, 2500, 5, 40},
                                       {700, 700, 100, 300},
                                       {1500, 900, 0, 20},
                                       {900, 1500, 0, 20},
                                       // a warp a row and more than 4 x 4096 rows: A^T x takes
                                       // the rows from 4096 stripes of 5 rows (the last 96
                                       // stripes empty: 480 lane groups find no row)
                                       {20000, 6000, 60, 100}};
    unsigned seed = 1;
    std::vector<Coo<double>> mats;
    for (const auto& s : shapes)
        mats.push_back(test::random_coo<double>(s.rows, s.cols, s.lo, s.hi, seed++));
    mats.push_back(irregular_coo(4000, 5000, 7));
    for (const auto& coo : mats) {
        for_each_precision([&](auto mt, auto vt) {
            using MT = decltype(mt);
            using VT = decltype(vt);
            const Csr<MT> h = csr_of<MT>(coo);
            const Csr<MT> d = h.to(gpu());
            const std::string shape = std::to_string(h.rows) + "x" + std::to_string(h.cols) +
                                      " nnz " + std::to_string(h.nnz());
            for (auto k : {kernels::CsrKernel::automatic, kernels::CsrKernel::scalar,
                           kernels::CsrKernel::vector, kernels::CsrKernel::merge}) {
                check_against_csr<MT, VT>(
                    "CSR kernel " + std::to_string(int(k)) + " " + shape, h,
                    [&](Op op, VT al, const VT* x, VT be, VT* y) {
                        kernels::spmv(*gpu(), d, op, al, x, be, y, k);
                    },
                    all_ab,
                    k == kernels::CsrKernel::automatic ? both_ops : std::vector<Op>{Op::normal});
            }
        });
    }
}

BOOST_AUTO_TEST_CASE(csr_without_entries_scales_y)
{
    Coo<double> a;
    a.rows = 50;
    a.cols = 40;
    const Csr<double> h = csr_from_coo(a);
    const Csr<double> d = h.to(gpu());
    check_against_csr<double, double>("empty CSR", h,
                                      [&](Op op, double al, const double* x, double be, double* y) {
                                          kernels::spmv(*gpu(), d, op, al, x, be, y);
                                      });
}

BOOST_AUTO_TEST_CASE(cuda_kernels_reject_a_host_matrix)
{
    const Csr<double> h = csr_from_coo(test::random_coo<double>(10, 10, 1, 3, 3));
    Array<double> x(gpu(), 10), y(gpu(), 10);
    BOOST_CHECK_THROW(kernels::spmv(*gpu(), h, Op::normal, 1.0, x.data(), 0.0, y.data()),
                      DimensionMismatch);
}

// ---- COO, ELL, HYB, DIA, BSR -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(coo_ell_hyb_match_cpu_reference)
{
    const std::vector<Coo<double>> mats = {test::random_coo<double>(2000, 2000, 0, 12, 21),
                                           test::random_coo<double>(1200, 700, 1, 30, 22),
                                           irregular_coo(3000, 3500, 23)};
    for (const auto& coo : mats) {
        for_each_precision([&](auto mt, auto vt) {
            using MT = decltype(mt);
            using VT = decltype(vt);
            const Coo<MT> c = convert_values<MT>(coo);
            const Csr<MT> ref = csr_from_coo(c);
            const Coo<MT> cd = c.to(gpu());
            check_against_csr<MT, VT>("COO", ref, [&](Op op, VT al, const VT* x, VT be, VT* y) {
                kernels::spmv(*gpu(), cd, op, al, x, be, y);
            });
            const Ell<MT> ed = ell_from_coo(c).to(gpu());
            check_against_csr<MT, VT>("ELL", ref, [&](Op op, VT al, const VT* x, VT be, VT* y) {
                kernels::spmv(*gpu(), ed, op, al, x, be, y);
            });
            const Hyb<MT> hh = hyb_from_coo(c);
            const Hyb<MT> hd = hh.to(gpu());
            check_against_csr<MT, VT>("HYB (COO part " + std::to_string(hh.coo.nnz()) + ")", ref,
                                      [&](Op op, VT al, const VT* x, VT be, VT* y) {
                                          kernels::spmv(*gpu(), hd, op, al, x, be, y);
                                      });
        });
    }
}

BOOST_AUTO_TEST_CASE(hyb_with_both_parts_matches_cpu_reference)
{
    // rows of 0-4 entries and three of 3,000: HYB's ELL part has width 3 (its width needs
    // >= 4096 rows that long, so the matrices above have none) and its COO part the rest;
    // ELL alone refuses the matrix (its padding limit)
    const Coo<double> coo = irregular_coo(20000, 15000, 24);
    const Hyb<double> both = hyb_from_coo(coo);
    BOOST_TEST(both.ell.width == 3);
    BOOST_TEST(both.coo.nnz() > 0);
    BOOST_CHECK_THROW(ell_from_coo(coo), InputError);
    for_each_precision([&](auto mt, auto vt) {
        using MT = decltype(mt);
        using VT = decltype(vt);
        const Coo<MT> c = convert_values<MT>(coo);
        const Hyb<MT> hd = hyb_from_coo(c).to(gpu());
        check_against_csr<MT, VT>("HYB (ELL width 3 and COO)", csr_from_coo(c),
                                  [&](Op op, VT al, const VT* x, VT be, VT* y) {
                                      kernels::spmv(*gpu(), hd, op, al, x, be, y);
                                  });
    });
}

BOOST_AUTO_TEST_CASE(dia_matches_cpu_reference)
{
    const std::vector<Coo<double>> mats = {
        diagonals_coo(1000, 1000, {-50, -7, -1, 0, 1, 3, 60}, 31),
        diagonals_coo(800, 1000, {-900, -2, 0, 5, 400, 999}, 32),
        diagonals_coo(1000, 600, {-700, -1, 0, 2, 599}, 33)};
    for (const auto& coo : mats) {
        for_each_precision([&](auto mt, auto vt) {
            using MT = decltype(mt);
            using VT = decltype(vt);
            const Coo<MT> c = convert_values<MT>(coo);
            const Dia<MT> dd = dia_from_coo(c).to(gpu());
            check_against_csr<MT, VT>("DIA", csr_from_coo(c),
                                      [&](Op op, VT al, const VT* x, VT be, VT* y) {
                                          kernels::spmv(*gpu(), dd, op, al, x, be, y);
                                      });
        });
    }
}

BOOST_AUTO_TEST_CASE(bsr_every_block_size_matches_cpu_reference)
{
    for (index_t b : {1, 2, 3, 4, 5, 8, 16, 17}) {
        const index_t nbr = b > 8 ? 20 : 60;
        const Coo<double> coo = blocks_coo(nbr, nbr + 7, b, 40 + b);
        for_each_precision([&](auto mt, auto vt) {
            using MT = decltype(mt);
            using VT = decltype(vt);
            const Coo<MT> c = convert_values<MT>(coo);
            const Bsr<MT> bd = bsr_from_coo(c, b).to(gpu());
            check_against_csr<MT, VT>("BSR b=" + std::to_string(b), csr_from_coo(c),
                                      [&](Op op, VT al, const VT* x, VT be, VT* y) {
                                          kernels::spmv(*gpu(), bd, op, al, x, be, y);
                                      });
        });
    }
}

// ---- BDIA-GH -----------------------------------------------------------------------------------

namespace {

template <class MT, class VT>
void check_bdia(const std::string& what, const Bdia<double>& a64, bool shapes)
{
    Bdia<MT> h{a64.rows, a64.cols, a64.block_size, a64.block_offsets, Array<MT>(), a64.pattern};
    {
        std::vector<MT> v(a64.data.host().begin(), a64.data.host().end());
        h.data = Array<MT>(std::move(v));
    }
    const Csr<MT> ref = csr_from_coo(to_coo(h));
    const Bdia<MT> d = h.to(gpu());
    for (auto k : {kernels::BdiaKernel::thesis, kernels::BdiaKernel::optimized}) {
        check_against_csr<MT, VT>(
            what + (k == kernels::BdiaKernel::thesis ? " thesis" : " optimized"), ref,
            [&](Op op, VT al, const VT* x, VT be, VT* y) {
                kernels::spmv(*gpu(), d, op, al, x, be, y, k);
            });
    }
    if (!shapes) return;
    for (int block : {64, 128, 256})
        for (int rpt : {1, 2})
            for (int stage : {1, 2}) {
                const kernels::BdiaLaunch l{block, rpt, stage};
                check_against_csr<MT, VT>(
                    what + " block " + std::to_string(block) + " rows/thread " +
                        std::to_string(rpt) + " staging " + std::to_string(stage),
                    ref,
                    [&](Op op, VT al, const VT* x, VT be, VT* y) {
                        kernels::spmv_bdia(*gpu(), d, op, al, x, be, y,
                                           kernels::BdiaKernel::optimized, l);
                    },
                    one_ab);
            }
}

}  // namespace

namespace {

// A BDIA-GH matrix whose main block diagonal is the identity and says so
// (Bdia::unit_main_block, what kernels::bdia_right_scale makes of A M⁻¹): the tuned product
// for Nc = 1 with the hepta's 7 block diagonals adds x there instead of reading those values.
// There the device copy stores 7s in their place, so a product that read them would be off;
// elsewhere (other block sizes, which read the stored I) it stores the identity and the flag
// must change nothing. A x by the tuned default and every launch shape, and the fused product
// with its dot products, against the CPU reference of the matrix with its identity. (A^T x
// and the thesis kernel read the stored values: not run with the 7s.)
template <class MT, class VT>
void check_unit_main(const std::string& what, const Bdia<double>& a64)
{
    const index_t q0 = a64.main_block_diagonal();
    BOOST_TEST_REQUIRE(q0 >= 0, what);
    const index_t nc = a64.block_size;
    const bool skipped = nc == 1 && a64.num_block_diagonals() == 7 && q0 == 3;
    const std::size_t n = std::size_t(a64.rows);
    std::vector<MT> v(a64.data.host().begin(), a64.data.host().end());
    std::vector<MT> stored = v;
    for (index_t s = 0; s < nc; ++s)
        for (std::size_t r = 0; r < n; ++r) {
            const std::size_t k = std::size_t(q0 * nc + s) * n + r;
            v[k] = index_t(r % std::size_t(nc)) == s ? MT(1) : MT(0);
            stored[k] = skipped ? MT(7) : v[k];
        }
    const Bdia<MT> h{a64.rows,   a64.cols, nc, a64.block_offsets, Array<MT>(std::move(v)),
                     a64.pattern};
    const Csr<MT> ref = csr_from_coo(to_coo(h));
    const Bdia<MT> g{a64.rows,    a64.cols, nc, a64.block_offsets, Array<MT>(std::move(stored)),
                     a64.pattern, true};
    const Bdia<MT> d = g.to(gpu());
    BOOST_TEST(d.unit_main_block, what);
    const std::vector<Op> normal = {Op::normal};
    check_against_csr<MT, VT>(
        what + " identity main blocks, tuned", ref,
        [&](Op op, VT al, const VT* x, VT be, VT* y) {
            kernels::spmv(*gpu(), d, op, al, x, be, y);
        },
        all_ab, normal);
    for (int block : {64, 256})
        for (int rpt : {1, 2})
            for (int stage : {1, 2}) {
                const kernels::BdiaLaunch l{block, rpt, stage};
                check_against_csr<MT, VT>(
                    what + " identity main blocks, block " + std::to_string(block) +
                        " rows/thread " + std::to_string(rpt) + " staging " + std::to_string(stage),
                    ref,
                    [&](Op op, VT al, const VT* x, VT be, VT* y) {
                        kernels::spmv_bdia(*gpu(), d, op, al, x, be, y,
                                           kernels::BdiaKernel::optimized, l);
                    },
                    one_ab, normal);
            }
    // the fused product (y = A x and (x, y), (y, y), (x, x))
    check_against_csr<MT, VT>(
        what + " identity main blocks, fused with its dot products", ref,
        [&](Op, VT, const VT* x, VT, VT* y) {
            const std::size_t cap = kernels::spmv_dots_capacity(d.rows, 3);
            Array<double> partials(gpu(), cap);
            BOOST_TEST(kernels::spmv_dots(*gpu(), d, x, y, x, 3, partials.data(), cap) > 0);
        },
        std::vector<AlphaBeta>{AlphaBeta{1, 0}}, normal);
}

}  // namespace

BOOST_AUTO_TEST_CASE(bdia_identity_main_blocks_give_the_product_read_or_not)
{
    // every block size with a compiled kernel and the generic one (5), 3-D (D = 7) grids; a
    // 2-D one at Nc = 1 (D = 5: the generic kernel, which reads the identity)
    struct Case {
        index_t nc, I;
    };
    // (Nc = 1, I = 40: 2520 rows, interior tiles of the fused product's two rows a thread;
    // I = 41: 2583 rows, odd, one row a thread)
    for (Case c : {Case{1, 6}, Case{1, 1}, Case{1, 40}, Case{1, 41}, Case{2, 6}, Case{3, 6},
                   Case{4, 6}, Case{5, 3}, Case{8, 3}, Case{16, 3}})
        for (bool banded : {true, false}) {
            HeptaSpec s;
            s.J = 9;
            s.H = 7;
            s.I = c.I;
            s.Nc = c.nc;
            s.banded = banded;
            s.seed = 50 + c.nc;
            const Bdia<double> a = generate_hepta_bdia<double>(s);
            const std::string what = describe(s);
            check_unit_main<double, double>(what, a);
            check_unit_main<float, float>(what, a);
            check_unit_main<float, double>(what, a);
        }
}

BOOST_AUTO_TEST_CASE(bdia_generated_gh_every_block_size_matches_cpu_reference)
{
    // tiny grids (few or no interior rows: the checked path) and larger ones (both paths),
    // banded and grid variants, 3-D (D = 7: the templated kernels) and 2-D (D = 5: generic)
    struct Grid {
        index_t J, H, I;
    };
    for (index_t nc : {1, 2, 3, 4, 5, 8, 16}) {
        for (Grid g : {Grid{3, 2, 2}, Grid{9, 7, 6}, Grid{11, 6, 1}}) {
            for (bool banded : {true, false}) {
                HeptaSpec s;
                s.J = g.J;
                s.H = g.H;
                s.I = g.I;
                s.Nc = nc;
                s.banded = banded;
                s.seed = 5 + nc;
                const Bdia<double> a = generate_hepta_bdia<double>(s);
                const std::string what = describe(s);
                const bool shapes = g.J == 9;
                check_bdia<double, double>(what, a, shapes);
                check_bdia<float, float>(what, a, shapes);
                check_bdia<float, double>(what, a, shapes);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(bdia_general_offsets_and_rectangular_match_cpu_reference)
{
    // D = 4 with irregular offsets, Nc = 3, square and rectangular (30 x 36 blocks)
    for (auto dims : {std::pair<index_t, index_t>{30, 30}, {30, 36}, {36, 30}}) {
        const index_t nc = 3;
        const std::vector<index_t> offs = {-9, -2, 0, 4};
        const Bdia<double> a =
            bdia_from_coo(block_diagonals_coo(dims.first, dims.second, nc, offs, 77), nc, offs);
        check_bdia<double, double>("BDIA D=4 Nc=3 " + std::to_string(dims.first) + "x" +
                                       std::to_string(dims.second) + " blocks",
                                   a, true);
        check_bdia<float, double>("BDIA D=4 Nc=3 mixed", a, false);
    }
}

BOOST_AUTO_TEST_CASE(bdia_more_than_64_block_diagonals_is_not_supported)
{
    std::vector<index_t> offs(65);
    std::iota(offs.begin(), offs.end(), -32);
    const Bdia<double> h = bdia_zeros<double>(200, 200, 1, offs);
    const Bdia<double> d = h.to(gpu());
    Array<double> x(gpu(), 200), y(gpu(), 200);
    BOOST_CHECK_THROW(kernels::spmv(*gpu(), d, Op::normal, 1.0, x.data(), 0.0, y.data()),
                      NotSupported);
}

// ---- cuSPARSE baselines ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(cusparse_baselines_match_cpu_reference)
{
    const std::vector<Coo<double>> mats = {test::random_coo<double>(1500, 1500, 3, 40, 51),
                                           test::random_coo<double>(900, 1300, 0, 20, 52)};
    for (const auto& coo : mats) {
        for_each_precision([&](auto mt, auto vt) {
            using MT = decltype(mt);
            using VT = decltype(vt);
            const Csr<MT> h = csr_of<MT>(coo);
            const Csr<MT> d = h.to(gpu());
            for (auto alg : {cusparse::Baseline::csr_alg1, cusparse::Baseline::csr_alg2,
                             cusparse::Baseline::sell}) {
                auto base = cusparse::SpmvBaseline<MT, VT>::from_csr(gpu(), d, alg);
                check_against_csr<MT, VT>(
                    cusparse::to_string(alg), h,
                    [&](Op op, VT al, const VT* x, VT be, VT* y) { base->apply(op, al, x, be, y); },
                    all_ab,
                    alg == cusparse::Baseline::csr_alg1 ? both_ops : std::vector<Op>{Op::normal});
            }
        });
    }
    for (index_t b : {2, 3, 4, 8}) {
        const Coo<double> coo = blocks_coo(50, 50, b, 60 + b);
        for_each_precision([&](auto mt, auto vt) {
            using MT = decltype(mt);
            using VT = decltype(vt);
            const Coo<MT> c = convert_values<MT>(coo);
            const Bsr<MT> bd = bsr_from_coo(c, b).to(gpu());
            auto base = cusparse::SpmvBaseline<MT, VT>::from_bsr(gpu(), bd);
            check_against_csr<MT, VT>(
                "cusparse BSR b=" + std::to_string(b), csr_from_coo(c),
                [&](Op op, VT al, const VT* x, VT be, VT* y) { base->apply(op, al, x, be, y); },
                all_ab, {Op::normal});
        });
    }
}

BOOST_AUTO_TEST_CASE(cusparse_transpose_equals_host_transpose)
{
    const Csr<double> h = csr_from_coo(test::random_coo<double>(1100, 700, 0, 25, 61));
    const Csr<double> t = cusparse::transpose_on_device(gpu(), h.to(gpu()));
    const Csr<double> expect = transpose(h);
    BOOST_TEST(t.rows == expect.rows);
    BOOST_TEST(t.cols == expect.cols);
    BOOST_TEST(t.row_ptr.to_vector() == expect.row_ptr.host(), boost::test_tools::per_element());
    BOOST_TEST(t.col_idx.to_vector() == expect.col_idx.host(), boost::test_tools::per_element());
    BOOST_TEST(t.values.to_vector() == expect.values.host(), boost::test_tools::per_element());
}

// The executor's memory is stream-ordered (core/executor.hpp): a freed block is reused by the
// next allocation without the driver, data of live blocks survives the reuse, and
// release_cached() gives the pool's memory back. Read from the device pool's own counter of
// memory reserved from the driver (this process's), not cudaMemGetInfo: that is the device's free
// memory, which other processes on the GPU (ctest -j) move by gigabytes between two reads.
BOOST_AUTO_TEST_CASE(executor_memory_is_reused_in_stream_order_and_released)
{
    const auto e = gpu();
    const char* malloc_env = std::getenv("HEPTANE_CUDA_MALLOC");
    if (malloc_env && std::string(malloc_env) == "sync") {
        BOOST_TEST_MESSAGE("skipped: HEPTANE_CUDA_MALLOC=sync (no pool)");
        return;
    }
    const std::size_t n = std::size_t(256) << 20;  // 2 GiB of doubles
    const double block = double(n * sizeof(double));
    cudaMemPool_t pool = nullptr;
    HEPTANE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, e->device()));
    auto reserved = [&] {
        e->synchronize();
        std::uint64_t r = 0;
        HEPTANE_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &r));
        return double(r);
    };
    std::vector<double> h(1000);
    std::iota(h.begin(), h.end(), 1.0);
    const Array<double> kept = Array<double>(h).to(e);
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(Array<double>(e, 8).data(), 0, 64, cuda::stream(*e)));
    e->release_cached();
    const double reserved0 = reserved();
    BOOST_TEST(reserved0 < block);  // only kept's block (and the pool's granularity) is held
    double reserved1 = 0;
    {
        Array<double> a(e, n);
        HEPTANE_CUDA_CHECK(cudaMemsetAsync(a.data(), 0xff, n * sizeof(double), cuda::stream(*e)));
        reserved1 = reserved();
    }
    BOOST_TEST(reserved1 >= reserved0 + block);  // the block came from the device
    BOOST_TEST(reserved() == reserved1);         // freed into the pool, kept there
    {
        Array<double> b(e, n);  // the block a left, in stream order
        HEPTANE_CUDA_CHECK(cudaMemsetAsync(b.data(), 0, n * sizeof(double), cuda::stream(*e)));
        BOOST_TEST(reserved() == reserved1);  // reused, not a second block
    }
    BOOST_TEST(kept.to_vector() == h, boost::test_tools::per_element());
    e->release_cached();
    BOOST_TEST(reserved() == reserved0);  // given back
}

// Copies between the device and pageable host memory of 8 MB or more go through the pinned
// staging buffers (two of 16 MB, core/executor.hpp): sizes below, at and around the chunk
// boundaries, and an odd byte count, both ways, against the data itself.
BOOST_AUTO_TEST_CASE(staged_uploads_and_downloads_round_trip)
{
    const auto e = gpu();
    const std::size_t mb = std::size_t(1) << 20;
    for (std::size_t bytes : {8 * mb - 1, 8 * mb, 16 * mb, 16 * mb + 8, 32 * mb, 40 * mb + 3}) {
        std::vector<unsigned char> h(bytes);
        for (std::size_t i = 0; i < bytes; ++i)
            h[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
        Array<unsigned char> d(e, bytes);
        copy_bytes(*cpu_executor(), h.data(), *e, d.data(), bytes);
        std::vector<unsigned char> back(bytes, 0);
        copy_bytes(*e, d.data(), *cpu_executor(), back.data(), bytes);
        BOOST_TEST_CONTEXT(bytes << " bytes")
        {
            std::size_t first_bad = bytes;
            for (std::size_t i = 0; i < bytes && first_bad == bytes; ++i)
                if (back[i] != h[i]) first_bad = i;
            BOOST_TEST(first_bad == bytes, "first difference at byte " << first_bad);
        }
    }
}
