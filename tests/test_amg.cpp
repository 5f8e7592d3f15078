// Algebraic multigrid and CPR (solver/precond/amg): the setup steps against dense Eigen
// computations, the cycle as a preconditioner against Eigen's direct solution, iteration
// counts that do not grow with the grid, values-only refresh, CPR on coupled systems, and
// the errors. Runs on the CPU and (the _gpu variant) on CUDA.
#include <omp.h>
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "formats/csr/csr.hpp"
#include "formats/matrix.hpp"
#include "generators/hepta.hpp"
#include "solver/bicgstab/bicgstab.hpp"
#include "solver/cg/cg.hpp"
#include "solver/precond/amg/amg.hpp"
#include "solver/precond/amg/amg_kernels.hpp"
#include "solver/precond/amg/amg_setup.hpp"
#ifdef HEPTANE_HAVE_CUDA
#include "solver/precond/amg/amg_device.hpp"
#endif
#include "solver/precond/amg/cpr.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solve.hpp"
#include "solver/vector/vector_ops.hpp"
#include "tests/test_common.hpp"

using namespace heptane;
using heptane::test::test_executor;

namespace {

Eigen::MatrixXd dense(const Csr<double>& a)
{
    Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.rows, a.cols);
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            d(i, a.col_idx[k]) += a.values[k];
    return d;
}

Eigen::SparseMatrix<double> sparse(const Csr<double>& a)
{
    std::vector<Eigen::Triplet<double>> t;
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            t.emplace_back(i, a.col_idx[k], a.values[k]);
    Eigen::SparseMatrix<double> s(a.rows, a.cols);
    s.setFromTriplets(t.begin(), t.end());
    return s;
}

Csr<double> generated(index_t j, index_t h, index_t i, index_t nc, HeptaModel model,
                      double difficulty = 0.0, std::uint64_t seed = 1)
{
    HeptaSpec s;
    s.J = j;
    s.H = h;
    s.I = i;
    s.Nc = nc;
    s.banded = false;
    s.model = model;
    s.difficulty = difficulty;
    s.seed = seed;
    return csr_from_coo(generate_hepta_coo<double>(s));
}

// a 7-point matrix on an nx x ny x nz grid, Dirichlet: couplings -wx, -wy, -wz and the
// diagonal 2 (wx + wy + wz) + shift in every row (SPD)
Csr<double> anisotropic(index_t nx, index_t ny, index_t nz, double wx, double wy, double wz,
                        double shift = 0.0)
{
    Coo<double> c;
    c.rows = c.cols = nx * ny * nz;
    std::vector<index_t> r, col;
    std::vector<double> v;
    const double diag = 2 * (wx + wy + wz) + shift;
    for (index_t z = 0; z < nz; ++z)
        for (index_t y = 0; y < ny; ++y)
            for (index_t x = 0; x < nx; ++x) {
                const index_t i = x + nx * (y + ny * z);
                auto add = [&](index_t j, double a) {
                    r.push_back(i);
                    col.push_back(j);
                    v.push_back(a);
                };
                if (z > 0) add(i - nx * ny, -wz);
                if (y > 0) add(i - nx, -wy);
                if (x > 0) add(i - 1, -wx);
                add(i, diag);
                if (x < nx - 1) add(i + 1, -wx);
                if (y < ny - 1) add(i + nx, -wy);
                if (z < nz - 1) add(i + nx * ny, -wz);
            }
    c.row = Array<index_t>(std::move(r));
    c.col = Array<index_t>(std::move(col));
    c.val = Array<double>(std::move(v));
    return csr_from_coo(c);
}

// 3-D Poisson, 7-point, Dirichlet: SPD
Csr<double> poisson(index_t m)
{
    return anisotropic(m, m, m, 1, 1, 1);
}

// every diagonal entry minus the sum of its row's couplings: A 1 = 0 (pure Neumann)
Csr<double> neumann(Csr<double> a)
{
    for (index_t i = 0; i < a.rows; ++i) {
        double off = 0;
        offset_t d = 0;
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            if (a.col_idx[k] == i)
                d = k;
            else
                off += a.values[k];
        a.values.host()[std::size_t(d)] = -off;
    }
    return a;
}

std::vector<double> zero_mean(std::vector<double> x)
{
    double m = 0;
    for (double v : x) m += v;
    m /= double(x.size());
    for (double& v : x) v -= m;
    return x;
}

template <class VT>
std::shared_ptr<const Operator<VT>> op_of(const Csr<double>& a)
{
    Coo<double> coo = to_coo(a);
    return make_matrix_operator<VT, VT>(coo, Format::csr, test_executor());
}

struct Run {
    Status st;
    std::vector<double> x;
};

// solve A x = b (b = A·1 + noise-free) with a solver and the given preconditioner type
template <class Solver>
Run solve_with(const Csr<double>& a, const std::vector<double>& b,
               std::shared_ptr<const Operator<double>> m, double rtol = 1e-8, int max_it = 500)
{
    auto exec = test_executor();
    SolverOptions o;
    o.rtol = rtol;
    o.max_it = max_it;
    Solver s(o);
    s.set_operator(op_of<double>(a));
    s.set_preconditioner(std::move(m));
    Array<double> bd = Array<double>(b).to(exec);
    Array<double> x(exec, b.size());
    Run r;
    r.st = s.solve(bd, x);
    r.x = x.to_vector();
    return r;
}

std::vector<double> times(const Csr<double>& a, const std::vector<double>& x)
{
    std::vector<double> y(static_cast<std::size_t>(a.rows), 0.0);
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            y[i] += a.values[k] * x[a.col_idx[k]];
    return y;
}

double true_relres(const Csr<double>& a, const std::vector<double>& x, const std::vector<double>& b)
{
    const std::vector<double> ax = times(a, x);
    double rr = 0, bb = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        rr += (b[i] - ax[i]) * (b[i] - ax[i]);
        bb += b[i] * b[i];
    }
    return std::sqrt(rr / bb);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(amg_setup)

BOOST_AUTO_TEST_CASE(galerkin_matches_dense_products)
{
    const Csr<double> sq = csr_from_coo(test::random_coo<double>(45, 45, 1, 6, 9));
    const Csr<double> p = csr_from_coo(test::random_coo<double>(45, 30, 0, 5, 8));
    Csr<double> g = amg::galerkin(transpose(p), sq, p);
    const Eigen::MatrixXd expect = dense(p).transpose() * dense(sq) * dense(p);
    BOOST_CHECK_SMALL((dense(g) - expect).cwiseAbs().maxCoeff(), 1e-11);
    for (index_t i = 0; i < g.rows; ++i)  // canonical: sorted, no duplicates
        for (offset_t k = g.row_ptr[i] + 1; k < g.row_ptr[i + 1]; ++k)
            BOOST_TEST(g.col_idx[k - 1] < g.col_idx[k]);
    // the numeric part alone, on the kept pattern, for new values of A
    Csr<double> sq2 = sq;
    for (auto& v : sq2.values.host()) v = 2 * v - 1;
    amg::galerkin_numeric(transpose(p), sq2, p, g);
    BOOST_CHECK_SMALL(
        (dense(g) - dense(p).transpose() * dense(sq2) * dense(p)).cwiseAbs().maxCoeff(), 1e-11);
}

BOOST_AUTO_TEST_CASE(aggregates_cover_every_coupled_node_and_are_connected)
{
    const Csr<double> a = generated(12, 10, 6, 1, HeptaModel::reservoir);
    const amg::Strength s = amg::strength(a, 1, 0.08);
    const amg::Aggregates g = amg::aggregate(s);
    BOOST_TEST(g.count > 0);
    BOOST_TEST(g.count < a.rows / 3);  // coarsens
    std::vector<int> size(static_cast<std::size_t>(g.count), 0);
    for (index_t i = 0; i < s.nodes; ++i) {
        const bool coupled = s.ptr[i + 1] > s.ptr[i];
        BOOST_TEST((g.of_node[i] >= 0) == coupled);
        if (g.of_node[i] >= 0) ++size[std::size_t(g.of_node[i])];
    }
    for (int c : size) BOOST_TEST(c >= 1);
    // each aggregate is connected in the strong graph: a search inside it reaches all
    std::vector<int> reached(static_cast<std::size_t>(g.count), 0),
        seen(static_cast<std::size_t>(s.nodes), 0);
    for (index_t i = 0; i < s.nodes; ++i) {
        const index_t ag = g.of_node[i];
        if (ag < 0 || reached[std::size_t(ag)]) continue;
        std::vector<index_t> stack{i};
        seen[i] = 1;
        int count = 0;
        while (!stack.empty()) {
            const index_t u = stack.back();
            stack.pop_back();
            ++count;
            for (offset_t k = s.ptr[u]; k < s.ptr[u + 1]; ++k) {
                const index_t v = s.adj[k];
                if (!seen[v] && g.of_node[v] == ag) {
                    seen[v] = 1;
                    stack.push_back(v);
                }
            }
        }
        reached[std::size_t(ag)] = count;
        BOOST_TEST(count == size[std::size_t(ag)], "aggregate " << ag << " is not connected");
    }
}

BOOST_AUTO_TEST_CASE(prolongator_is_the_smoothed_tentative_one)
{
    // P = (I - w D_F^-1 A_F) T, computed densely here with theta = 0 (A_F = A)
    const Csr<double> a = generated(6, 5, 4, 1, HeptaModel::reservoir);
    const amg::Strength s = amg::strength(a, 1, 0.0);
    const amg::Aggregates g = amg::aggregate(s);
    const Csr<double> t = amg::prolongator(a, 1, s, g, 0.0);
    const Csr<double> p = amg::prolongator(a, 1, s, g, 4.0 / 3.0);
    const Eigen::MatrixXd A = dense(a), T = dense(t);
    BOOST_TEST(t.nnz() == offset_t(a.rows));  // every node aggregated, one 1 per row
    Eigen::VectorXd dinv = A.diagonal().cwiseInverse();
    double rho = 0;  // the Gershgorin bound used by the setup
    for (index_t i = 0; i < a.rows; ++i)
        rho = std::max(rho, A.row(i).cwiseAbs().sum() * std::abs(dinv(i)));
    const Eigen::MatrixXd expect = T - (4.0 / 3.0 / rho) * dinv.asDiagonal() * A * T;
    BOOST_CHECK_SMALL((dense(p) - expect).cwiseAbs().maxCoeff(), 1e-12);
}

BOOST_AUTO_TEST_CASE(aggregation_does_not_depend_on_the_thread_count)
{
    // the synchronous rounds read only the previous round: 1 thread and all give one answer
    const Csr<double> a = generated(20, 16, 8, 1, HeptaModel::channelized, 0.0, 7);
    const amg::Strength s = amg::strength(a, 1, 0.02);
    const amg::Aggregates all = amg::aggregate(s);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const amg::Aggregates one = amg::aggregate(s);
    omp_set_num_threads(threads);
    BOOST_TEST(all.count == one.count);
    BOOST_TEST(all.of_node == one.of_node);
    // every aggregate has a root: a node whose strong neighbours all joined it
    std::vector<char> has_root(static_cast<std::size_t>(all.count), 0);
    for (index_t i = 0; i < s.nodes; ++i) {
        const index_t g = all.of_node[i];
        if (g < 0) continue;
        bool root = true;
        for (offset_t k = s.ptr[i]; k < s.ptr[i + 1]; ++k)
            root = root && all.of_node[s.adj[k]] == g;
        if (root) has_root[std::size_t(g)] = 1;
    }
    for (index_t g = 0; g < all.count; ++g) BOOST_TEST(has_root[std::size_t(g)], "aggregate " << g);
}

BOOST_AUTO_TEST_CASE(device_setup_matches_the_host_reference)
{
    // On a GPU: the device setup finds the CPU's aggregates and P bit for bit, and R A P to
    // rounding (cuSPARSE's SpGEMM sums in its own order); its refresh equals the host's
    // numeric Galerkin product; the whole preconditioner applies as the host-built one. On
    // the CPU: asking for the device setup is a clear error.
    const Csr<double> a = generated(24, 20, 10, 1, HeptaModel::channelized, 0.0, 3);
    auto exec = test_executor();
    AmgOptions o;
    o.coarse_size = 40;
    o.setup = AmgSetup::device;
    if (!exec->is_cuda()) {
        BOOST_CHECK_THROW(AmgPreconditioner<double>(a, 1, exec, o), InputError);
        return;
    }
#ifdef HEPTANE_HAVE_CUDA
    const amg::DeviceHierarchy dh(a, o, exec);
    BOOST_REQUIRE(dh.levels() >= 3);
    const amg::Strength s = amg::strength(a, 1, o.strength_threshold);
    const amg::Aggregates g = amg::aggregate(s);
    BOOST_TEST(dh.aggregates(0) == g.of_node);
    const Csr<double> p = amg::prolongator(a, 1, s, g, o.prolongation_weight);
    const Csr<double> pd = dh.p(0).to(cpu_executor());
    BOOST_TEST(pd.row_ptr.host() == p.row_ptr.host());
    BOOST_TEST(pd.col_idx.host() == p.col_idx.host());
    BOOST_TEST(pd.values.host() == p.values.host());  // bit for bit
    const Csr<double> r = transpose(p);
    const Csr<double> rd = dh.r(0).to(cpu_executor());
    BOOST_TEST(rd.col_idx.host() == r.col_idx.host());
    const Csr<double> c = amg::galerkin(r, a, p);
    const Csr<double> cd = dh.a(1).to(cpu_executor());
    BOOST_TEST(cd.row_ptr.host() == c.row_ptr.host());
    BOOST_TEST(cd.col_idx.host() == c.col_idx.host());  // sorted rows, the same pattern
    BOOST_CHECK_SMALL(test::rel_max_diff(cd.values.host(), c.values.host()), 1e-12);
    // values-only refresh on the device against the host's numeric product
    Csr<double> a3 = a;
    for (std::size_t k = 0; k < a3.values.size(); ++k)
        a3.values.host()[k] *= 1.0 + 0.25 * double(k % 7);
    const_cast<amg::DeviceHierarchy&>(dh).refresh(a3);
    Csr<double> c3 = c;
    amg::galerkin_numeric(r, a3, p, c3);
    BOOST_CHECK_SMALL(
        test::rel_max_diff(dh.a(1).to(cpu_executor()).values.host(), c3.values.host()), 1e-12);
    // the preconditioners built on the device and on the host apply alike
    AmgOptions oh = o;
    oh.setup = AmgSetup::host;
    AmgPreconditioner<double> md(a, 1, exec, o), mh(a, 1, exec, oh);
    BOOST_TEST(md.info().setup_on == "device");
    BOOST_TEST(mh.info().setup_on == "host");
    BOOST_TEST(md.info().levels.size() == mh.info().levels.size());
    for (std::size_t l = 0; l < md.info().levels.size(); ++l)
        BOOST_TEST(md.info().levels[l].nnz == mh.info().levels[l].nnz);
    const std::vector<double> rv = test::random_vector<double>(static_cast<std::size_t>(a.rows), 5);
    Array<double> rdv = Array<double>(rv).to(exec), z1(exec, rv.size()), z2(exec, rv.size());
    md.apply(rdv.data(), z1.data());
    mh.apply(rdv.data(), z2.data());
    BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-9);
    // Nc > 1 is the host's
    BOOST_CHECK_THROW(
        AmgPreconditioner<double>(generated(8, 6, 4, 3, HeptaModel::reservoir), 3, exec, o),
        InputError);
#endif
}

BOOST_AUTO_TEST_CASE(block_aggregation_keeps_the_block_size)
{
    const Csr<double> a = generated(8, 6, 4, 3, HeptaModel::reservoir);
    const AmgInfo info = amg_hierarchy(a, 3, AmgOptions{});
    BOOST_TEST(info.levels.size() >= 2u);
    for (const auto& l : info.levels) BOOST_TEST(l.rows % 3 == 0);
    BOOST_TEST(info.operator_complexity > 1.0);
    BOOST_TEST(info.operator_complexity < 3.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(amg_box)

BOOST_AUTO_TEST_CASE(box_steps_halve_only_the_strongly_coupled_axes)
{
    const amg::Grid g{12, 10, 8};
    auto steps = [&](const Csr<double>& a, const amg::Grid& grid) {
        return amg::box_steps(amg::axis_strength(a, grid), grid, 0.25);
    };
    BOOST_TEST((steps(anisotropic(12, 10, 8, 1, 1, 1), g) == amg::Grid{2, 2, 2}));
    // z coupled 100x more strongly than x and y: semi-coarsening in z alone
    BOOST_TEST((steps(anisotropic(12, 10, 8, 1, 1, 100), g) == amg::Grid{1, 1, 2}));
    // x weak (a tenth): y and z only
    BOOST_TEST((steps(anisotropic(12, 10, 8, 0.1, 1, 1), g) == amg::Grid{1, 2, 2}));
    // a 2-D grid: the third axis has one cell and stays
    BOOST_TEST(
        (steps(anisotropic(12, 10, 1, 1, 1, 1), amg::Grid{12, 10, 1}) == amg::Grid{2, 2, 1}));
    // the grid behind the pattern
    BOOST_TEST((amg::find_grid(anisotropic(12, 10, 8, 1, 1, 1)) == g));
    BOOST_TEST(
        (amg::find_grid(generated(9, 7, 5, 1, HeptaModel::reservoir)) == amg::Grid{9, 7, 5}));
}

BOOST_AUTO_TEST_CASE(box_aggregates_are_boxes_and_plain_galerkin_keeps_the_seven_point_grid)
{
    // 13 x 10 x 7: odd sizes, so the last cells of an axis join the box before them
    const Csr<double> a = generated(13, 10, 7, 1, HeptaModel::reservoir, 0.0, 4);
    const amg::Grid g = amg::find_grid(a);
    BOOST_TEST((g == amg::Grid{13, 10, 7}));
    const amg::Grid step = amg::box_steps(amg::axis_strength(a, g), g, 0.25);
    const amg::Aggregates agg = amg::box_aggregate(g, step);
    const amg::Grid cg = amg::box_coarse_grid(g, step);
    BOOST_TEST(agg.count == cg[0] * cg[1] * cg[2]);
    // every aggregate is a box: its cells fill their bounding box, at most 3 cells an axis
    // (2 where halved, 3 at an odd end), 1 where the axis is not halved
    const std::size_t nagg = std::size_t(agg.count);
    std::vector<std::array<index_t, 6>> bb(nagg, {1 << 30, 1 << 30, 1 << 30, -1, -1, -1});
    std::vector<index_t> cells(nagg, 0);
    for (index_t i = 0; i < a.rows; ++i) {
        const index_t q = agg.of_node[std::size_t(i)];
        BOOST_REQUIRE(q >= 0);
        BOOST_REQUIRE(q < agg.count);
        const index_t xyz[3] = {i % g[0], (i / g[0]) % g[1], i / (g[0] * g[1])};
        for (int d = 0; d < 3; ++d) {
            bb[std::size_t(q)][std::size_t(d)] =
                std::min(bb[std::size_t(q)][std::size_t(d)], xyz[d]);
            bb[std::size_t(q)][std::size_t(d + 3)] =
                std::max(bb[std::size_t(q)][std::size_t(d + 3)], xyz[d]);
        }
        ++cells[std::size_t(q)];
    }
    for (std::size_t q = 0; q < nagg; ++q) {
        index_t vol = 1;
        for (int d = 0; d < 3; ++d) {
            const index_t ext = bb[q][std::size_t(d + 3)] - bb[q][std::size_t(d)] + 1;
            BOOST_TEST(ext <= (step[std::size_t(d)] == 2 ? 3 : 1));
            vol *= ext;
        }
        BOOST_TEST(vol == cells[q]);
    }
    // the plain Galerkin product against the entries summed box by box (dense, independent of
    // galerkin()): a_c(I, J) = sum of a_ij over i in box I, j in box J
    const Csr<double> p = amg::prolongator(a, 1, amg::Strength{}, agg, 0.0);
    const Csr<double> c = amg::galerkin(transpose(p), a, p);
    Eigen::MatrixXd ref = Eigen::MatrixXd::Zero(agg.count, agg.count);
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            ref(agg.of_node[std::size_t(i)], agg.of_node[std::size_t(a.col_idx[k])]) += a.values[k];
    BOOST_CHECK_SMALL((dense(c) - ref).norm() / ref.norm(), 1e-13);
    // ... a 7-point matrix on the coarse grid again
    BOOST_TEST((amg::find_grid(c) == cg));
    // the whole hierarchy: grids down to the coarsest, operator complexity of 7-point levels
    AmgOptions o;
    o.aggregation = AmgAggregation::box;
    o.prolongation_weight = 0;
    o.coarse_size = 20;
    const AmgInfo info = amg_hierarchy(a, 1, o);
    BOOST_TEST(info.aggregation.rfind("box, grids 13x10x7/", 0) == 0, info.aggregation);
    BOOST_TEST(info.levels.size() >= 3u);
    BOOST_TEST(info.operator_complexity < 1.25);
}

// a nonsymmetric matrix on an nx x ny x nz grid whose couplings reach `reach` cells along
// each axis (1: a 27-point stencil), each kept with probability 3/4 (a random pattern inside
// the stencil), random values; the diagonal always
Csr<double> stencil(index_t nx, index_t ny, index_t nz, index_t reach, std::uint64_t seed)
{
    Coo<double> c;
    c.rows = c.cols = nx * ny * nz;
    std::vector<index_t> r, col;
    std::vector<double> v;
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
    auto next = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return double(state >> 11) / double(1ULL << 53);
    };
    for (index_t z = 0; z < nz; ++z)
        for (index_t y = 0; y < ny; ++y)
            for (index_t x = 0; x < nx; ++x)
                for (index_t dz = -reach; dz <= reach; ++dz)
                    for (index_t dy = -reach; dy <= reach; ++dy)
                        for (index_t dx = -reach; dx <= reach; ++dx) {
                            const index_t X = x + dx, Y = y + dy, Z = z + dz;
                            if (X < 0 || X >= nx || Y < 0 || Y >= ny || Z < 0 || Z >= nz) continue;
                            const bool self = dx == 0 && dy == 0 && dz == 0;
                            if (!self && next() < 0.25) continue;
                            r.push_back(x + nx * (y + ny * z));
                            col.push_back(X + nx * (Y + ny * Z));
                            v.push_back(self ? 30.0 : next() - 0.5);
                        }
    c.row = Array<index_t>(std::move(r));
    c.col = Array<index_t>(std::move(col));
    c.val = Array<double>(std::move(v));
    return csr_from_coo(c);
}

BOOST_AUTO_TEST_CASE(box_galerkin_sums_the_boxes_without_a_matrix_product)
{
    // box_galerkin (plain box aggregation's A_c = T^T A T, row by row) against the entries
    // summed box by box (dense) and against the general product galerkin(R, A, P): 7-point
    // matrices, random 27-point patterns, odd sizes and every kind of step
    struct Case {
        Csr<double> a;
        amg::Grid g, step;
    };
    const std::vector<Case> cases = {
        {generated(13, 10, 7, 1, HeptaModel::reservoir, 0.0, 4), {13, 10, 7}, {2, 2, 2}},
        {anisotropic(9, 8, 5, 1, 1, 100), {9, 8, 5}, {1, 1, 2}},
        {stencil(7, 6, 5, 1, 3), {7, 6, 5}, {2, 2, 2}},
        {stencil(5, 9, 4, 1, 4), {5, 9, 4}, {2, 1, 2}},
        {stencil(6, 3, 1, 1, 5), {6, 3, 1}, {2, 2, 1}},
    };
    for (const Case& k : cases) {
        const amg::BoxMap map = amg::box_map(k.g, k.step);
        const std::uint32_t mask = amg::box_stencil(k.a, map);
        BOOST_REQUIRE(!(mask & amg::box_wide));
        const Csr<double> c = amg::box_galerkin(k.a, map, mask);
        const amg::Aggregates agg = amg::box_aggregate(k.g, k.step);
        BOOST_TEST(c.rows == agg.count);
        Eigen::MatrixXd ref = Eigen::MatrixXd::Zero(agg.count, agg.count);
        for (index_t i = 0; i < k.a.rows; ++i)
            for (offset_t q = k.a.row_ptr[i]; q < k.a.row_ptr[i + 1]; ++q)
                ref(agg.of_node[std::size_t(i)], agg.of_node[std::size_t(k.a.col_idx[q])]) +=
                    k.a.values[q];
        BOOST_CHECK_SMALL((dense(c) - ref).norm() / ref.norm(), 1e-14);
        const Csr<double> p = amg::prolongator(k.a, 1, amg::Strength{}, agg, 0.0);
        const Csr<double> g = amg::galerkin(transpose(p), k.a, p);
        BOOST_CHECK_SMALL((dense(c) - dense(g)).norm() / ref.norm(), 1e-14);
        // rows sorted, at most 27 entries, the general product's pattern inside its own
        BOOST_TEST(g.nnz() <= c.nnz());
        for (index_t i = 0; i < c.rows; ++i) {
            BOOST_TEST(c.row_ptr[i + 1] - c.row_ptr[i] <= 27);
            for (offset_t q = c.row_ptr[i] + 1; q < c.row_ptr[i + 1]; ++q)
                BOOST_TEST(c.col_idx[q - 1] < c.col_idx[q]);
        }
        // new values, same pattern: the numeric part alone gives the full product's values
        Csr<double> a2 = k.a;
        for (std::size_t q = 0; q < a2.values.size(); ++q)
            a2.values.host()[q] *= 1.0 + 0.1 * double(q % 7);
        Csr<double> c2 = c;
        amg::box_galerkin_numeric(a2, map, c2);
        const Csr<double> c3 = amg::box_galerkin(a2, map, amg::box_stencil(a2, map));
        BOOST_TEST(c2.values.to_vector() == c3.values.to_vector());
        // a pattern that does not fit is refused: c's from a 7-point matrix for a 27-point one
        if (k.a.nnz() > 7 * k.a.rows) {
            const Csr<double> a7 = anisotropic(k.g[0], k.g[1], k.g[2], 1, 1, 1);
            Csr<double> c7 = amg::box_galerkin(a7, map, amg::box_stencil(a7, map));
            BOOST_CHECK_THROW(amg::box_galerkin_numeric(k.a, map, c7), InputError);
        }
    }
    // couplings two cells away do not join neighbouring boxes: the general product is needed
    const amg::BoxMap wide = amg::box_map({8, 8, 8}, {2, 2, 2});
    BOOST_TEST((amg::box_stencil(stencil(8, 8, 8, 3, 7), wide) & amg::box_wide) != 0u);
    BOOST_TEST((amg::box_stencil(poisson(8), wide) & amg::box_wide) == 0u);
    BOOST_CHECK_THROW(amg::box_galerkin(stencil(8, 8, 8, 3, 7), wide, amg::box_wide), InputError);
    // and the hierarchy with such a matrix still solves (box aggregates, the general product)
    AmgOptions o;
    o.aggregation = AmgAggregation::box;
    o.prolongation_weight = 0;
    o.grid = {8, 8, 8};
    o.coarse_size = 20;
    const AmgInfo info = amg_hierarchy(stencil(8, 8, 8, 3, 7), 1, o);
    BOOST_TEST(info.aggregation.rfind("box, grids 8x8x8/", 0) == 0, info.aggregation);
}

BOOST_AUTO_TEST_CASE(box_amg_solves_the_reservoir_pressure_as_the_mis_one_does)
{
    // CG with plain box aggregation, smoothed box aggregation and the default (mis): each
    // meets the true residual; box within a band of mis' iterations (64x64x32 here: 6 = 6)
    const Csr<double> a = generated(24, 24, 12, 1, HeptaModel::reservoir, 0.0, 2);
    const std::vector<double> b = times(a, test::random_vector<double>(std::size_t(a.rows), 9));
    auto exec = test_executor();
    AmgOptions mis;
    AmgOptions box = mis;
    box.aggregation = AmgAggregation::box;
    AmgOptions plain = box;
    plain.prolongation_weight = 0;
    int its[3] = {0, 0, 0};
    const AmgOptions* opts[3] = {&mis, &box, &plain};
    for (int k = 0; k < 3; ++k) {
        auto m = std::make_shared<AmgPreconditioner<double>>(a, 1, exec, *opts[k]);
        BOOST_TEST((k == 0 ? m->info().aggregation == "mis"
                           : m->info().aggregation.rfind("box, grids 24x24x12/", 0) == 0),
                   m->info().aggregation);
        const Run r = solve_with<Cg<double>>(a, b, m, 1e-8, 200);
        BOOST_TEST(r.st.converged(), r.st.summary());
        BOOST_TEST(true_relres(a, r.x, b) < 1e-7);
        its[k] = r.st.iterations;
    }
    BOOST_TEST(its[2] <= 2 * its[0] + 2, its[0] << " (mis) vs " << its[2] << " (plain box)");
    BOOST_TEST(its[1] <= 2 * its[0] + 2, its[0] << " (mis) vs " << its[1] << " (smoothed box)");
}

BOOST_AUTO_TEST_CASE(box_aggregation_without_a_grid_falls_back_to_mis_and_says_why)
{
    auto exec = test_executor();
    AmgOptions o;
    o.aggregation = AmgAggregation::box;
    o.prolongation_weight = 0;
    // a coupled system (Nc = 3)
    const Csr<double> ab = generated(8, 6, 4, 3, HeptaModel::reservoir);
    const AmgInfo ib = amg_hierarchy(ab, 3, o);
    BOOST_TEST(ib.aggregation.find("Nc = 1") != std::string::npos, ib.aggregation);
    // a pattern with a long-range coupling: no grid behind it; the AMG still solves it
    Csr<double> a = poisson(10);
    {
        Coo<double> c = to_coo(a);
        std::vector<index_t> r = c.row.to_vector(), col = c.col.to_vector();
        std::vector<double> v = c.val.to_vector();
        r.push_back(0), col.push_back(a.rows - 1), v.push_back(-0.5);
        r.push_back(a.rows - 1), col.push_back(0), v.push_back(-0.5);
        Coo<double> d;
        d.rows = d.cols = a.rows;
        d.row = Array<index_t>(std::move(r));
        d.col = Array<index_t>(std::move(col));
        d.val = Array<double>(std::move(v));
        canonicalize(d);
        a = csr_from_coo(d);
    }
    BOOST_TEST((amg::find_grid(a) == amg::Grid{0, 0, 0}));
    auto m = std::make_shared<AmgPreconditioner<double>>(a, 1, exec, o);
    BOOST_TEST(m->info().aggregation.find("no grid") != std::string::npos, m->info().aggregation);
    BOOST_TEST(m->describe().find("no grid") != std::string::npos);
    const std::vector<double> b(std::size_t(a.rows), 1.0);
    const Run r = solve_with<Cg<double>>(a, b, m);
    BOOST_TEST(r.st.converged(), r.st.summary());
    // a grid given by the caller that does not match A's rows is not used: the pattern's is
    o.grid = {3, 3, 3};
    const AmgInfo ig = amg_hierarchy(poisson(8), 1, o);
    BOOST_TEST(ig.aggregation.rfind("box, grids 8x8x8/", 0) == 0, ig.aggregation);
}

BOOST_AUTO_TEST_CASE(box_setup_on_the_device_equals_the_host_one)
{
    // On a GPU: the device's boxes are the host's, its levels have the host's sizes, both
    // preconditioners apply alike, and a values-only refresh equals a fresh setup. On the CPU
    // the host setup is the one there is (the same checks against amg:: functions).
    const Csr<double> a = generated(20, 18, 10, 1, HeptaModel::channelized, 0.0, 5);
    auto exec = test_executor();
    AmgOptions o;
    o.aggregation = AmgAggregation::box;
    o.prolongation_weight = 0;
    o.coarse_size = 40;
    AmgOptions oh = o;
    oh.setup = AmgSetup::host;
    AmgPreconditioner<double> md(a, 1, exec, o), mh(a, 1, exec, oh);
    BOOST_TEST(md.info().aggregation == mh.info().aggregation);
    BOOST_TEST(md.info().levels.size() == mh.info().levels.size());
    for (std::size_t l = 0; l < md.info().levels.size(); ++l) {
        BOOST_TEST(md.info().levels[l].rows == mh.info().levels[l].rows);
        BOOST_TEST(md.info().levels[l].nnz == mh.info().levels[l].nnz);
    }
#ifdef HEPTANE_HAVE_CUDA
    if (exec->is_cuda()) {
        BOOST_TEST(md.info().setup_on == "device");
        const amg::DeviceHierarchy dh(
            a,
            [&] {
                AmgOptions d = o;
                d.grid = amg::find_grid(a);
                return d;
            }(),
            exec);
        const amg::Grid g = amg::find_grid(a);
        const amg::Aggregates agg =
            amg::box_aggregate(g, amg::box_steps(amg::axis_strength(a, g), g, o.box_ratio));
        BOOST_TEST(dh.aggregates(0) == agg.of_node);
        BOOST_TEST(dh.grids().size() == std::size_t(dh.levels()));
        // every coarse level is the host's box sums of the level above, bit for bit
        for (int l = 1; l < dh.levels(); ++l) {
            const Csr<double> fine = dh.a(l - 1).to(cpu_executor());
            const Csr<double> dev = dh.a(l).to(cpu_executor());
            const amg::Grid& gl = dh.grids()[std::size_t(l - 1)];
            const amg::Grid& gc = dh.grids()[std::size_t(l)];
            amg::Grid step{};
            for (std::size_t d = 0; d < 3; ++d) step[d] = gc[d] == gl[d] ? 1 : 2;
            const amg::BoxMap map = amg::box_map(gl, step);
            const Csr<double> host = amg::box_galerkin(fine, map, amg::box_stencil(fine, map));
            BOOST_TEST(dev.row_ptr.to_vector() == host.row_ptr.to_vector());
            BOOST_TEST(dev.col_idx.to_vector() == host.col_idx.to_vector());
            BOOST_TEST(dev.values.to_vector() == host.values.to_vector());
        }
    }
#endif
    const std::vector<double> rv = test::random_vector<double>(static_cast<std::size_t>(a.rows), 6);
    Array<double> r = Array<double>(rv).to(exec), z1(exec, rv.size()), z2(exec, rv.size());
    md.apply(r.data(), z1.data());
    mh.apply(r.data(), z2.data());
    BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-9);
    // new values, same pattern: the refresh equals a fresh setup
    Csr<double> a2 = a;
    for (std::size_t k = 0; k < a2.values.size(); ++k)
        a2.values.host()[k] *= 1.0 + 0.1 * double(k % 5);
    const Csr<double>& a3 = a2;
    md.update_values(a3);
    AmgPreconditioner<double> fresh(a3, 1, exec, o);
    md.apply(r.data(), z1.data());
    fresh.apply(r.data(), z2.data());
    BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-9);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(amg_cycle)

BOOST_AUTO_TEST_CASE(cg_with_amg_solves_poisson_to_eigens_solution_in_few_iterations)
{
    const Csr<double> a = poisson(20);
    const std::vector<double> b = test::random_vector<double>(static_cast<std::size_t>(a.rows), 3);
    AmgOptions o;
    o.coarse_size = 50;
    auto m = std::make_shared<AmgPreconditioner<double>>(a, 1, test_executor(), o);
    BOOST_TEST(m->info().levels.size() >= 3u);
    const Run r = solve_with<Cg<double>>(a, b, m);
    BOOST_TEST(r.st.converged(), r.st.summary());
    BOOST_TEST(r.st.iterations <= 20, r.st.iterations);
    // against Eigen's direct solution
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(sparse(a));
    const Eigen::VectorXd xe = ldlt.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), a.rows));
    const std::vector<double> xv(xe.data(), xe.data() + a.rows);
    BOOST_CHECK_SMALL(test::rel_max_diff(r.x, xv), 1e-6);
    BOOST_CHECK_LE(true_relres(a, r.x, b), 1e-8 * 1.01);
}

BOOST_AUTO_TEST_CASE(chebyshev_interval_top_bounds_every_levels_spectrum)
{
    // Gershgorin's bound (the default) on the executor equals the formula on the host and is
    // >= λ_max(D⁻¹A) from Eigen's dense eigenvalues, on every level; the estimate
    // (lambda_its 10) lies below it; CG converges with either
    const Csr<double> a = generated(12, 10, 8, 1, HeptaModel::channelized, 0.5, 4);
    const std::vector<double> b = test::random_vector<double>(static_cast<std::size_t>(a.rows), 6);
    auto exec = test_executor();
    {
        const Csr<double> ad = a.to(exec);
        const double got = dispatch_executor(*exec, [&](const auto& e) {
            return kernels::gershgorin_bound(e, ad.rows, ad.row_ptr.data(), ad.col_idx.data(),
                                             ad.values.data());
        });
        double want = 0;
        for (index_t i = 0; i < a.rows; ++i) {
            double sum = 0, diag = 0;
            for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
                sum += std::abs(a.values[k]);
                if (a.col_idx[k] == i) diag += a.values[k];
            }
            want = std::max(want, sum / std::abs(diag));
        }
        BOOST_TEST(got == want);
    }
    AmgOptions bound, estimate;
    bound.coarse_size = estimate.coarse_size = 30;
    estimate.power_iterations = 10;
    auto mb = std::make_shared<AmgPreconditioner<double>>(a, 1, exec, bound);
    auto me = std::make_shared<AmgPreconditioner<double>>(a, 1, exec, estimate);
    BOOST_REQUIRE(mb->info().levels.size() >= 3u);
    BOOST_REQUIRE(mb->info().levels.size() == me->info().levels.size());
    for (std::size_t l = 0; l + 1 < mb->info().levels.size(); ++l) {
        const double lb = mb->info().levels[l].lambda_max, le = me->info().levels[l].lambda_max;
        BOOST_TEST_MESSAGE("level " << l << ": bound " << lb << ", estimate " << le);
        BOOST_TEST(le <= lb * (1 + 1e-12));
        if (l == 0) {  // the dense spectrum of D^-1/2 A D^-1/2
            const Eigen::MatrixXd d = dense(a);
            const Eigen::VectorXd s = d.diagonal().cwiseAbs().cwiseSqrt().cwiseInverse();
            const Eigen::MatrixXd sym = s.asDiagonal() * d * s.asDiagonal();
            const double top =
                Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(sym).eigenvalues().maxCoeff();
            BOOST_TEST(lb >= top * (1 - 1e-12));
            BOOST_TEST(le <= top * (1 + 1e-9));
        }
    }
    for (const auto& m : {mb, me}) {
        const Run r = solve_with<Cg<double>>(a, b, m);
        BOOST_TEST(r.st.converged(), r.st.summary());
        BOOST_CHECK_LE(true_relres(a, r.x, b), 1e-8 * 1.01);
    }
}

BOOST_AUTO_TEST_CASE(a_stalled_coarsest_level_is_inverted_densely_only_where_that_is_cheap)
{
    // max_levels = 1 stops the hierarchy above coarse_size at A itself, as a stalled
    // aggregation does (a coupled block whose couplings are all weak). 343 rows: a dense
    // inverse is cheap, CG then converges at once. 1728 rows with 11 K entries: the inverse
    // (2·1728³ flops, 1728² entries read each cycle) would dwarf everything else, so the level
    // is smoothed and CG still reaches Eigen's solution.
    for (const index_t m : {7, 12}) {
        const Csr<double> a = poisson(m);
        const std::vector<double> b =
            test::random_vector<double>(static_cast<std::size_t>(a.rows), 5);
        AmgOptions o;
        o.max_levels = 1;
        o.coarse_size = 100;
        auto pc = std::make_shared<AmgPreconditioner<double>>(a, 1, test_executor(), o);
        BOOST_TEST(pc->info().levels.size() == 1u);
        const bool cheap = m == 7;
        BOOST_TEST(
            pc->info().coarse_solve == (cheap ? "dense LU" : "smoothed (coarsening stalled)"),
            a.rows << " rows: " << pc->info().coarse_solve);
        const Run r = solve_with<Cg<double>>(a, b, pc);
        BOOST_TEST(r.st.converged(), r.st.summary());
        if (cheap) BOOST_TEST(r.st.iterations <= 2, r.st.iterations);
        Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(sparse(a));
        const Eigen::VectorXd xe = ldlt.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), a.rows));
        const std::vector<double> xv(xe.data(), xe.data() + a.rows);
        BOOST_CHECK_SMALL(test::rel_max_diff(r.x, xv), 1e-6);
    }
    // a non-symmetric coupled block (Nc = 3) stalled above the budget: ILU(0) sweeps, not
    // point smoothing, and BiCGStab reaches Eigen's LU solution
    {
        const Csr<double> a = generated(10, 8, 6, 3, HeptaModel::reservoir);
        const Eigen::SparseMatrix<double> as = sparse(a);
        const Eigen::SparseMatrix<double> at = as.transpose();
        BOOST_REQUIRE_MESSAGE((as - at).norm() > 1e-6 * as.norm(), (as - at).norm() / as.norm());
        const std::vector<double> b =
            test::random_vector<double>(static_cast<std::size_t>(a.rows), 6);
        AmgOptions o;
        o.max_levels = 1;
        auto pc = std::make_shared<AmgPreconditioner<double>>(a, 3, test_executor(), o);
        BOOST_TEST(pc->info().coarse_solve == "ILU(0) sweeps (coarsening stalled)");
        const Run r = solve_with<Bicgstab<double>>(a, b, pc);
        BOOST_TEST(r.st.converged(), r.st.summary());
        Eigen::SparseLU<Eigen::SparseMatrix<double>> lu(as);
        const Eigen::VectorXd xe = lu.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), a.rows));
        const std::vector<double> xv(xe.data(), xe.data() + a.rows);
        BOOST_CHECK_SMALL(test::rel_max_diff(r.x, xv), 1e-6);
        BOOST_TEST(amg_hierarchy(a, 3, o).coarse_solve == pc->info().coarse_solve);
    }
    // the rule itself at its edges: coarse_size always, dense_limit never, the n³ budget
    BOOST_TEST(amg::dense_coarse(5000, 1, 6000));
    BOOST_TEST(!amg::dense_coarse(amg::dense_limit + 1, offset_t(1) << 40, 300));
    BOOST_TEST(amg::dense_coarse(amg::dense_free, 1, 300));
    BOOST_TEST(!amg::dense_coarse(amg::dense_free + 1, 1, 300));
    BOOST_TEST(amg::dense_coarse(1000, 10'000'000, 300));  // 1e9 <= 100 · 1e7
    BOOST_TEST(!amg::dense_coarse(1001, 10'000'000, 300));
}

BOOST_AUTO_TEST_CASE(the_automatic_smoother_is_block_ilu_only_for_a_non_symmetric_block_system)
{
    // the default: ILU(0) for a coupled (Nc = 3, non-symmetric) system, Chebyshev for a
    // scalar one and for a symmetric one read in blocks of 2; the choice is the options' own
    BOOST_TEST((AmgOptions{}.smoother == AmgSmoother::automatic));
    BOOST_TEST((parse_amg_smoother("auto") == AmgSmoother::automatic));
    struct Case {
        Csr<double> a;
        index_t nc;
        AmgSmoother want;
    };
    const Case cases[] = {{generated(10, 8, 6, 3, HeptaModel::reservoir), 3, AmgSmoother::ilu0mc},
                          {poisson(8), 1, AmgSmoother::chebyshev},
                          {poisson(8), 2, AmgSmoother::chebyshev}};
    for (const Case& c : cases) {
        AmgOptions o;
        o.coarse_size = 40;
        auto pc = std::make_shared<AmgPreconditioner<double>>(c.a, c.nc, test_executor(), o);
        BOOST_TEST((pc->options().smoother == c.want), "Nc " << c.nc);
        const std::vector<double> b =
            test::random_vector<double>(static_cast<std::size_t>(c.a.rows), 8);
        const Run r = solve_with<Bicgstab<double>>(c.a, b, pc);
        BOOST_TEST(r.st.converged(), r.st.summary());
        Eigen::SparseLU<Eigen::SparseMatrix<double>> lu(sparse(c.a));
        const Eigen::VectorXd xe = lu.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), c.a.rows));
        const std::vector<double> xv(xe.data(), xe.data() + c.a.rows);
        BOOST_CHECK_SMALL(test::rel_max_diff(r.x, xv), 1e-6);
    }
}

BOOST_AUTO_TEST_CASE(iterations_do_not_grow_with_the_grid)
{
    int its[2] = {0, 0};
    const index_t sizes[2] = {16, 32};
    for (int k = 0; k < 2; ++k) {
        const Csr<double> a = poisson(sizes[k]);
        const std::vector<double> b(static_cast<std::size_t>(a.rows), 1.0);
        auto m = std::make_shared<AmgPreconditioner<double>>(a, 1, test_executor(), AmgOptions{});
        const Run r = solve_with<Cg<double>>(a, b, m);
        BOOST_TEST(r.st.converged(), r.st.summary());
        its[k] = r.st.iterations;
    }
    // Jacobi would need about 2x the iterations on the 2x finer grid
    BOOST_TEST(double(its[1]) <= 1.4 * double(its[0]) + 1, its[0] << " -> " << its[1]);
}

BOOST_AUTO_TEST_CASE(every_smoother_and_cycle_converges_on_the_reservoir_model)
{
    const Csr<double> a = generated(24, 20, 10, 1, HeptaModel::reservoir, 1.0);
    const std::vector<double> b = test::random_vector<double>(static_cast<std::size_t>(a.rows), 5);
    const Run jac = solve_with<Bicgstab<double>>(
        a, b, make_preconditioner<double>(PcType::jacobi, a, 1, test_executor()), 1e-8, 3000);
    for (AmgSmoother sm :
         {AmgSmoother::chebyshev, AmgSmoother::jacobi, AmgSmoother::l1jacobi, AmgSmoother::ilu0mc})
        for (AmgCycle cy : {AmgCycle::v, AmgCycle::w}) {
            AmgOptions o;
            o.smoother = sm;
            o.cycle = cy;
            o.coarse_size = 40;
            auto m = std::make_shared<AmgPreconditioner<double>>(a, 1, test_executor(), o);
            const Run r = solve_with<Bicgstab<double>>(a, b, m);
            BOOST_TEST(r.st.converged(), to_string(sm)
                                             << "/" << to_string(cy) << ": " << r.st.summary());
            BOOST_CHECK_LE(true_relres(a, r.x, b), 1.1e-8);
            BOOST_TEST(r.st.iterations * 4 < jac.st.iterations,
                       to_string(sm)
                           << ": " << r.st.iterations << " vs Jacobi " << jac.st.iterations);
        }
}

BOOST_AUTO_TEST_CASE(the_tail_in_one_launch_applies_as_the_cycle_step_by_step)
{
    // AmgOptions::tail_rows: the coarse levels' cycle as one launch (amg_tail.hpp) takes the
    // steps of the cycle launched step by step (tail_rows = 0) in the same order: on the CPU
    // the same sums (to 1e-14), on a GPU to rounding (the launched CSR product sums a row in a
    // warp's order). Every point smoother, V and W, mis and box aggregates, smoothed and plain
    // P, a dense and a smoothed coarsest level, tails from the finest level and from the
    // middle, fp64 and fp32, and after a values-only refresh.
    auto exec = test_executor();
    const bool gpu = exec->is_cuda();
    struct Case {
        AmgSmoother sm;
        AmgCycle cy;
        AmgAggregation ag;
        double p_weight;
        int sweeps;
        int max_levels;
        bool big;  // a 24^3 Poisson matrix stopped at 2 levels: a smoothed coarsest level
    };
    const Case cases[] = {
        {AmgSmoother::chebyshev, AmgCycle::v, AmgAggregation::mis, 4.0 / 3.0, 2, 20, false},
        {AmgSmoother::chebyshev, AmgCycle::w, AmgAggregation::mis, 4.0 / 3.0, 3, 20, false},
        {AmgSmoother::jacobi, AmgCycle::v, AmgAggregation::mis, 4.0 / 3.0, 2, 20, false},
        {AmgSmoother::l1jacobi, AmgCycle::w, AmgAggregation::mis, 4.0 / 3.0, 1, 20, false},
        {AmgSmoother::chebyshev, AmgCycle::v, AmgAggregation::box, 0.0, 2, 20, false},
        {AmgSmoother::chebyshev, AmgCycle::w, AmgAggregation::box, 0.0, 2, 20, false},
        {AmgSmoother::chebyshev, AmgCycle::v, AmgAggregation::mis, 4.0 / 3.0, 2, 2, true},
        {AmgSmoother::jacobi, AmgCycle::v, AmgAggregation::mis, 4.0 / 3.0, 2, 2, true},
    };
    const Csr<double> small = generated(24, 20, 10, 1, HeptaModel::channelized, 0.0, 3);
    const Csr<double> big = poisson(24);
    int tails = 0;
    for (const Case& c : cases) {
        const Csr<double>& a = c.big ? big : small;
        AmgOptions o;
        o.smoother = c.sm;
        o.cycle = c.cy;
        o.aggregation = c.ag;
        o.prolongation_weight = c.p_weight;
        o.pre_sweeps = o.post_sweeps = c.sweeps;
        o.max_levels = c.max_levels;
        o.coarse_size = 20;
        o.tail_rows = 0;
        const AmgPreconditioner<double> steps(a, 1, exec, o);
        const std::string what = std::string(to_string(c.sm)) + "/" +
                                 (c.cy == AmgCycle::v ? "V" : "W") + "/" + to_string(c.ag) +
                                 (c.big ? " (smoothed coarsest)" : "");
        BOOST_TEST(steps.describe().find("in one launch") == std::string::npos, what);
        if (c.big) BOOST_TEST(steps.info().coarse_solve == "smoothed (coarsening stalled)", what);
        const std::size_t nl = steps.info().levels.size();
        BOOST_REQUIRE_MESSAGE(nl >= 2, what);
        const std::vector<double> r = test::random_vector<double>(std::size_t(a.rows), 17);
        Array<double> rd = Array<double>(r).to(exec), z0(exec, r.size()), z1(exec, r.size());
        steps.apply(rd.data(), z0.data());
        const std::vector<double> ref = z0.to_vector();
        // a tail from the finest level (every level) and one from level 1 (where that leaves
        // two levels or more: the coarsest alone is no tail)
        std::vector<index_t> from_rows{a.rows};
        if (nl >= 3) from_rows.push_back(steps.info().levels[1].rows);
        for (const index_t rows : from_rows) {
            o.tail_rows = rows;
            AmgPreconditioner<double> tail(a, 1, exec, o);
            const std::string from = rows == a.rows ? "levels 0-" : "levels 1-";
            BOOST_TEST(tail.describe().find(from + std::to_string(nl - 1) + " (at most " +
                                            std::to_string(rows) + " rows) in one launch") !=
                           std::string::npos,
                       what << ": " << tail.describe());
            tail.apply(rd.data(), z1.data());
            BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), ref), gpu ? 1e-11 : 1e-14);
            ++tails;
            if (rows != a.rows || c.big) continue;
            // a values-only refresh rebuilds the tail from the new smoother data
            Csr<double> a2 = a;
            for (std::size_t k = 0; k < a2.values.size(); ++k)
                a2.values.host()[k] *= 1.0 + 0.5 * double(k % 3 == 0);
            AmgOptions o0 = o;
            o0.tail_rows = 0;
            AmgPreconditioner<double> steps2(a, 1, exec, o0);
            steps2.update_values(a2);
            tail.update_values(a2);
            steps2.apply(rd.data(), z0.data());
            tail.apply(rd.data(), z1.data());
            BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z0.to_vector()),
                              gpu ? 1e-11 : 1e-14);
        }
    }
    BOOST_TEST(tails == 14);
    // fp32 levels: the same steps in float
    {
        AmgOptions o;
        o.coarse_size = 20;
        o.tail_rows = 0;
        const AmgPreconditioner<float> steps(small, 1, exec, o);
        o.tail_rows = small.rows;
        const AmgPreconditioner<float> tail(small, 1, exec, o);
        BOOST_TEST(tail.describe().find("in one launch") != std::string::npos);
        const std::vector<double> r = test::random_vector<double>(std::size_t(small.rows), 18);
        const std::vector<float> rf(r.begin(), r.end());
        Array<float> rd = Array<float>(rf).to(exec), z0(exec, rf.size()), z1(exec, rf.size());
        steps.apply(rd.data(), z0.data());
        tail.apply(rd.data(), z1.data());
        const std::vector<float> f0 = z0.to_vector(), f1 = z1.to_vector();
        BOOST_CHECK_SMALL(test::rel_max_diff(std::vector<double>(f1.begin(), f1.end()),
                                             std::vector<double>(f0.begin(), f0.end())),
                          gpu ? 1e-4 : 1e-6);
    }
    // ILU(0) smoothing is not a point smoother: no tail
    AmgOptions o;
    o.smoother = AmgSmoother::ilu0mc;
    o.tail_rows = small.rows;
    BOOST_TEST(AmgPreconditioner<double>(small, 1, exec, o).describe().find("in one launch") ==
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(float_amg_matches_double_iterations)
{
    const Csr<double> a = poisson(16);
    const std::vector<double> b(static_cast<std::size_t>(a.rows), 1.0);
    auto md = std::make_shared<AmgPreconditioner<double>>(a, 1, test_executor(), AmgOptions{});
    const Run rd = solve_with<Cg<double>>(a, b, md, 1e-5);
    auto exec = test_executor();
    SolverOptions o;
    o.rtol = 1e-5;
    Cg<float> s(o);
    s.set_operator(op_of<float>(a));
    s.set_preconditioner(std::make_shared<AmgPreconditioner<float>>(a, 1, exec, AmgOptions{}));
    const std::vector<float> bf(b.begin(), b.end());
    Array<float> bd = Array<float>(bf).to(exec), x(exec, bf.size());
    const Status st = s.solve(bd, x);
    BOOST_TEST(st.converged(), st.summary());
    BOOST_TEST(std::abs(st.iterations - rd.st.iterations) <= 2);
}

BOOST_AUTO_TEST_CASE(values_refresh_equals_a_fresh_setup)
{
    // scaling A by 2 leaves strength, aggregates and P unchanged: the refreshed hierarchy
    // must apply as a fresh setup on 2A does
    // (also a coupled Nc = 3 system, whose automatic smoother is ILU(0), refreshed too, and a
    // stalled one, whose coarsest level takes ILU(0) sweeps)
    auto exec = test_executor();
    struct Case {
        index_t nc;
        int max_levels;
    };
    for (const Case c : {Case{1, 20}, Case{3, 20}, Case{3, 1}}) {
        Csr<double> a = generated(12, 10, 8, c.nc, HeptaModel::reservoir, 0.5);
        AmgOptions o;
        o.coarse_size = 30;
        o.max_levels = c.max_levels;
        AmgPreconditioner<double> m(a, c.nc, exec, o);
        Csr<double> a2 = a;
        for (auto& v : a2.values.host()) v *= 2;
        m.update_values(a2);
        AmgPreconditioner<double> fresh(a2, c.nc, exec, o);
        const std::vector<double> r =
            test::random_vector<double>(static_cast<std::size_t>(a.rows), 11);
        Array<double> rd = Array<double>(r).to(exec), z1(exec, r.size()), z2(exec, r.size());
        m.apply(rd.data(), z1.data());
        fresh.apply(rd.data(), z2.data());
        BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-10);
        BOOST_TEST(m.info().coarse_solve == fresh.info().coarse_solve);
        if (c.max_levels == 1)
            BOOST_TEST(m.info().coarse_solve == "ILU(0) sweeps (coarsening stalled)");
    }
    // a different pattern is refused
    AmgOptions o;
    o.coarse_size = 30;
    AmgPreconditioner<double> m(generated(12, 10, 8, 1, HeptaModel::reservoir, 0.5), 1, exec, o);
    Csr<double> other = generated(12, 10, 8, 1, HeptaModel::reservoir, 0.5);
    other.col_idx.host()[1] = other.col_idx.host()[0];
    BOOST_CHECK_THROW(m.update_values(other), InputError);
}

BOOST_AUTO_TEST_CASE(bad_input_gets_a_clear_error)
{
    auto exec = test_executor();
    // not square
    const Csr<double> rect = csr_from_coo(test::random_coo<double>(20, 30, 1, 3, 1));
    BOOST_CHECK_THROW(AmgPreconditioner<double>(rect, 1, exec, AmgOptions{}), InputError);
    // a zero diagonal entry: named by its 1-based row
    Csr<double> z = poisson(6);
    for (offset_t k = z.row_ptr[4]; k < z.row_ptr[5]; ++k)
        if (z.col_idx[k] == 4) z.values.host()[std::size_t(k)] = 0;
    try {
        AmgOptions small;
        small.coarse_size = 20;
        AmgPreconditioner<double> m(z, 1, exec, small);
        BOOST_ERROR("no error for a zero diagonal");
    } catch (const InputError& e) {
        BOOST_TEST(std::string(e.what()).find("row 5") != std::string::npos, e.what());
    }
    // a singular coarsest level: the pure Neumann Laplacian (rows sum to zero)
    const Csr<double> neu = neumann(poisson(5));
    AmgOptions o;
    o.coarse_size = 200;
    try {
        AmgPreconditioner<double> m(neu, 1, exec, o);
        BOOST_ERROR("no error for a singular coarse level");
    } catch (const InputError& e) {
        BOOST_TEST(std::string(e.what()).find("singular") != std::string::npos, e.what());
    }
    // a block size that does not divide the rows
    BOOST_CHECK_THROW(AmgPreconditioner<double>(poisson(5), 2, exec, AmgOptions{}), InputError);
    BOOST_CHECK_THROW(parse_amg_smoother("sor"), InputError);
    BOOST_CHECK_THROW(parse_amg_setup("gpu"), InputError);
    BOOST_TEST((parse_amg_setup("device") == AmgSetup::device));
    BOOST_TEST((parse_pc("amg") == PcType::amg));
    BOOST_TEST((parse_pc("cpr") == PcType::cpr));
}

// amg::generalized_inverse against Eigen: A⁻¹ at full rank; on singular matrices (a pure
// Neumann Laplacian, two disconnected ones, a non-symmetric one with A 1 = 0) the rank, A G A
// = A, x = G b solving every consistent b, and for the symmetric ones G symmetric positive
// semidefinite (what CG needs of the cycle)
BOOST_AUTO_TEST_CASE(generalized_inverse_solves_consistent_singular_systems)
{
    auto check = [](const Eigen::MatrixXd& a, index_t want_rank, bool symmetric) {
        const index_t n = index_t(a.rows());
        Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> ar = a, g(n, n);
        const index_t rank = amg::generalized_inverse(ar.data(), g.data(), n, 1e-11);
        BOOST_TEST(rank == want_rank);
        const double scale = a.cwiseAbs().maxCoeff();
        const Eigen::MatrixXd gm = g;
        BOOST_CHECK_SMALL((a * gm * a - a).cwiseAbs().maxCoeff() / scale, 1e-9);
        // a consistent b (in A's range): A (G b) = b
        const Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(n, -1.0, 2.0).array().sin();
        const Eigen::VectorXd b = a * x;
        BOOST_CHECK_SMALL((a * (gm * b) - b).norm() / b.norm(), 1e-9);
        if (want_rank == n)
            BOOST_CHECK_SMALL((gm - a.inverse()).norm() / a.inverse().norm(), 1e-10);
        if (symmetric) {
            BOOST_CHECK_SMALL(
                (gm - gm.transpose()).cwiseAbs().maxCoeff() / gm.cwiseAbs().maxCoeff(), 1e-10);
            const Eigen::MatrixXd gs = 0.5 * (gm + gm.transpose());
            Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(gs);
            BOOST_TEST(es.eigenvalues().minCoeff() >= -1e-10 * es.eigenvalues().maxCoeff());
        }
    };
    // full rank, non-symmetric
    const Eigen::MatrixXd r = dense(csr_from_coo(test::random_coo<double>(30, 30, 1, 8, 4))) +
                              10.0 * Eigen::MatrixXd::Identity(30, 30);
    check(r, 30, false);
    // a pure Neumann Laplacian: rank n - 1
    const Eigen::MatrixXd l = dense(neumann(poisson(4)));
    check(l, 63, true);
    // two of them, not coupled: rank n - 2
    Eigen::MatrixXd two = Eigen::MatrixXd::Zero(128, 128);
    two.topLeftCorner(64, 64) = l;
    two.bottomRightCorner(64, 64) = 2.5 * l;
    check(two, 126, true);
    // non-symmetric, A 1 = 0 (upwind convection added to the couplings in x)
    Csr<double> c = poisson(4);
    for (index_t i = 0; i < c.rows; ++i)
        for (offset_t k = c.row_ptr[i]; k < c.row_ptr[i + 1]; ++k)
            if (c.col_idx[k] == i - 1) c.values.host()[std::size_t(k)] -= 0.7;
    check(dense(neumann(c)), 63, false);
}

// AmgOptions::singular (a declared null space) on the pure Neumann Laplacian: the coarsest
// level by a generalized inverse, so the cycle stays symmetric positive semidefinite and CG
// converges in few iterations; x with its mean removed is the zero-mean solution. Without
// the option the same hierarchy is refused (bad_input_gets_a_clear_error).
BOOST_AUTO_TEST_CASE(a_declared_null_space_makes_the_neumann_laplacian_solvable_by_cg)
{
    const Csr<double> a = neumann(poisson(16));
    const std::vector<double> xe =
        zero_mean(test::random_vector<double>(static_cast<std::size_t>(a.rows), 7));
    const std::vector<double> b = times(a, xe);
    AmgOptions o;
    o.coarse_size = 200;
    o.singular = true;
    auto m = std::make_shared<AmgPreconditioner<double>>(a, 1, test_executor(), o);
    BOOST_TEST(m->info().levels.size() >= 2u);
    BOOST_TEST(m->describe().find("generalized inverse, rank") != std::string::npos, m->describe());
    const Run r = solve_with<Cg<double>>(a, b, m);
    BOOST_TEST(r.st.converged(), r.st.summary());
    BOOST_TEST(r.st.iterations <= 25, r.st.iterations);
    BOOST_CHECK_LE(true_relres(a, r.x, b), 1e-8 * 1.01);
    BOOST_CHECK_SMALL(test::rel_max_diff(zero_mean(r.x), xe), 1e-6);
}

// solve_system with null_space_constant: the answer is x0 + a correction with no constant in
// it (PETSc's), with AMG, Jacobi and the default chain; a matrix whose rows do not sum to zero
// is refused with the row named
BOOST_AUTO_TEST_CASE(solve_system_with_a_constant_null_space_keeps_the_initial_guess_constant)
{
    const Csr<double> a = neumann(poisson(12));
    const std::size_t n = static_cast<std::size_t>(a.rows);
    const std::vector<double> xe = zero_mean(test::random_vector<double>(n, 11));
    const std::vector<double> b = times(a, xe);
    for (int with_x0 = 0; with_x0 < 2; ++with_x0)
        for (const char* pc : {"amg", "jacobi", ""}) {
            SolveConfig cfg;
            cfg.solver = SolverType::cg;
            cfg.executor = test_executor();
            cfg.options.rtol = 1e-10;
            cfg.options.max_it = 2000;
            if (*pc) cfg.pc = parse_pc(pc);
            cfg.null_space_constant = true;
            std::vector<double> want = xe;
            if (with_x0) {  // x0 = 0.5 x_e + 3: the answer keeps x0's constant, x_e + 3
                cfg.x0.resize(n);
                for (std::size_t i = 0; i < n; ++i) cfg.x0[i] = 0.5 * xe[i] + 3.0;
                for (double& v : want) v += 3.0;
            }
            const SolveResult res = solve_system(to_coo(a), b, cfg);
            BOOST_TEST(res.status.converged(), pc << ": " << res.status.summary());
            BOOST_TEST(res.null_space_removed >= 0);
            BOOST_CHECK_SMALL(test::rel_max_diff(res.x, want), 1e-7);
        }
    // not singular: refused, the row named (1-based)
    SolveConfig cfg;
    cfg.executor = test_executor();
    cfg.null_space_constant = true;
    try {
        solve_system(to_coo(poisson(4)), std::vector<double>(64, 1.0), cfg);
        BOOST_ERROR("no error for a declared null space that is none");
    } catch (const InputError& e) {
        BOOST_TEST(std::string(e.what()).find("row 1 sums to") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cpr)

BOOST_AUTO_TEST_CASE(pressure_matrix_is_the_weighted_pressure_columns)
{
    const Csr<double> a = generated(5, 4, 3, 3, HeptaModel::reservoir);
    std::vector<double> w;
    const Csr<double> ap = cpr_pressure_matrix(a, 3, 0, &w);
    const Eigen::MatrixXd A = dense(a), Ap = dense(ap);
    const index_t cells = a.rows / 3;
    for (index_t i = 0; i < cells; ++i) {
        // w = D^-T e_0: w^T D = e_0^T
        const Eigen::MatrixXd d = A.block(3 * i, 3 * i, 3, 3);
        const Eigen::Vector3d wi(w[3 * i], w[3 * i + 1], w[3 * i + 2]);
        const Eigen::RowVector3d e = wi.transpose() * d;
        BOOST_CHECK_SMALL(std::abs(e(0) - 1.0), 1e-12);
        BOOST_CHECK_SMALL(std::abs(e(1)) + std::abs(e(2)), 1e-12);
        for (index_t j = 0; j < cells; ++j) {
            double s = 0;
            for (int c = 0; c < 3; ++c) s += wi(c) * A(3 * i + c, 3 * j);
            BOOST_CHECK_SMALL(std::abs(Ap(i, j) - s), 1e-12);
        }
    }
}

// A coupled two-unknown system whose pressure part is the hard channelized pressure matrix:
// A[(i,0),(j,0)] = Ap_ij, A[(i,1),(j,0)] = 0.1 Ap_ij (transport driven by pressure),
// A[(i,0),(i,1)] = 0.3 and A[(i,1),(i,1)] = 1 (accumulation of the second unknown).
Csr<double> coupled_from_pressure(const Csr<double>& ap)
{
    Coo<double> c;
    c.rows = c.cols = 2 * ap.rows;
    std::vector<index_t> r, col;
    std::vector<double> v;
    for (index_t i = 0; i < ap.rows; ++i)
        for (int a = 0; a < 2; ++a) {
            for (offset_t k = ap.row_ptr[i]; k < ap.row_ptr[i + 1]; ++k) {
                const index_t j = ap.col_idx[k];
                r.push_back(2 * i + a);
                col.push_back(2 * j);
                v.push_back(a == 0 ? ap.values[k] : 0.1 * ap.values[k]);
                if (j == i) {
                    r.push_back(2 * i + a);
                    col.push_back(2 * j + 1);
                    v.push_back(a == 0 ? 0.3 : 1.0);
                }
            }
        }
    c.row = Array<index_t>(std::move(r));
    c.col = Array<index_t>(std::move(col));
    c.val = Array<double>(std::move(v));
    return csr_from_coo(c);
}

BOOST_AUTO_TEST_CASE(cpr_beats_block_ilu0_when_the_pressure_is_hard)
{
    const Csr<double> a =
        coupled_from_pressure(generated(24, 20, 10, 1, HeptaModel::channelized, 0.5));
    const std::vector<double> b = test::random_vector<double>(std::size_t(a.rows), 4);
    auto exec = test_executor();
    const Run ilu = solve_with<Bicgstab<double>>(
        a, b, make_preconditioner<double>(PcType::ilu0, a, 2, exec), 1e-8, 3000);
    PcOptions po;  // the same natural-order BILU(0) as the reference, on a GPU too
    po.cpr.second_stage_auto = false;
    po.cpr.second_stage = CprSmoother::bilu0;
    auto m = make_preconditioner<double>(PcType::cpr, a, 2, exec, po);
    const Run cpr = solve_with<Bicgstab<double>>(a, b, std::move(m), 1e-8, 3000);
    BOOST_TEST_MESSAGE("coupled channelized 24x20x10 Nc=2: CPR "
                       << cpr.st.iterations << ", BILU(0) " << ilu.st.iterations << " ("
                       << ilu.st.summary() << ")");
    BOOST_TEST(cpr.st.converged(), cpr.st.summary());
    BOOST_CHECK_LE(true_relres(a, cpr.x, b), 1.1e-8);
    // at most half BILU(0)'s (measured 29 vs 72 with Gershgorin's bound, the default; 34
    // with the Lanczos λ estimate; 25 with the power iterations alone, whose low estimate
    // made AMG indefinite on an 8 M-cell system)
    BOOST_TEST(cpr.st.iterations * 2 <= ilu.st.iterations,
               "CPR " << cpr.st.iterations << " vs BILU(0) " << ilu.st.iterations);
    // against Eigen's LU
    Eigen::SparseLU<Eigen::SparseMatrix<double>> lu(sparse(a));
    const Eigen::VectorXd xe = lu.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), a.rows));
    BOOST_CHECK_SMALL(test::rel_max_diff(cpr.x, std::vector<double>(xe.data(), xe.data() + a.rows)),
                      1e-5);
}

BOOST_AUTO_TEST_CASE(cpr_converges_on_the_generated_coupled_reservoir_system)
{
    const Csr<double> a = generated(16, 12, 8, 3, HeptaModel::channelized, 1.0);
    const std::vector<double> b = test::random_vector<double>(std::size_t(a.rows), 4);
    auto exec = test_executor();
    const Run ilu = solve_with<Bicgstab<double>>(
        a, b, make_preconditioner<double>(PcType::ilu0, a, 3, exec), 1e-8, 3000);
    PcOptions po;
    po.cpr.second_stage_auto = false;
    po.cpr.second_stage = CprSmoother::bilu0;
    const Run cpr = solve_with<Bicgstab<double>>(
        a, b, make_preconditioner<double>(PcType::cpr, a, 3, exec, po));
    BOOST_TEST(cpr.st.converged(), cpr.st.summary());
    BOOST_CHECK_LE(true_relres(a, cpr.x, b), 1.1e-8);
    BOOST_TEST(cpr.st.iterations <= 2 * ilu.st.iterations,
               "CPR " << cpr.st.iterations << " vs BILU(0) " << ilu.st.iterations);
}

BOOST_AUTO_TEST_CASE(cpr_values_refresh_and_every_second_stage)
{
    Csr<double> a = generated(10, 8, 6, 2, HeptaModel::reservoir, 0.5);
    const std::vector<double> b = test::random_vector<double>(static_cast<std::size_t>(a.rows), 2);
    auto exec = test_executor();
    for (CprSmoother s2 : {CprSmoother::bilu0, CprSmoother::bilu0mc, CprSmoother::bjacobi}) {
        PcOptions po;
        po.cpr.second_stage_auto = false;
        po.cpr.second_stage = s2;
        std::shared_ptr<Preconditioner<double>> m =
            make_preconditioner<double>(PcType::cpr, a, 2, exec, po);
        const Run r = solve_with<Bicgstab<double>>(a, b, m);
        BOOST_TEST(r.st.converged(), r.st.summary());
        Csr<double> a2 = a;
        for (auto& v : a2.values.host()) v *= 3;
        m->update_values(a2);
        const Run r2 = solve_with<Bicgstab<double>>(a2, b, m);
        BOOST_TEST(r2.st.converged(), r2.st.summary());
        BOOST_CHECK_LE(true_relres(a2, r2.x, b), 1.1e-8);
    }
    PcOptions bad;
    bad.cpr.pressure_index = 2;
    BOOST_CHECK_THROW(make_preconditioner<double>(PcType::cpr, a, 2, exec, bad), InputError);
}

// A without the entries of cell `cell`'s diagonal block (nc × nc): its rows keep their
// other entries, so the kernels must insert the diagonal block themselves
Csr<double> without_diagonal_block(const Csr<double>& a, index_t nc, index_t cell)
{
    Coo<double> c;
    c.rows = a.rows;
    c.cols = a.cols;
    std::vector<index_t> r, col;
    std::vector<double> v;
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
            if (i / nc == cell && a.col_idx[k] / nc == cell) continue;
            r.push_back(i);
            col.push_back(a.col_idx[k]);
            v.push_back(a.values[k]);
        }
    c.row = Array<index_t>(std::move(r));
    c.col = Array<index_t>(std::move(col));
    c.val = Array<double>(std::move(v));
    return csr_from_coo(c);
}

// A with cell `cell`'s nc rows coupled to every unknown of cells [0, span) (entries added
// where none is stored, small values): a well's cell, rows far longer than the rest, so the
// CUDA kernels' block of cells around it does not fit the shared memory sized for the
// average row and reads global memory, the other blocks staged
Csr<double> with_long_cell(const Csr<double>& a, index_t nc, index_t cell, index_t span)
{
    Coo<double> c;
    c.rows = a.rows;
    c.cols = a.cols;
    std::vector<index_t> r, col;
    std::vector<double> v;
    for (index_t i = 0; i < a.rows; ++i) {
        std::vector<std::pair<index_t, double>> row;
        for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
            row.emplace_back(a.col_idx[k], a.values[k]);
        if (i / nc == cell) {
            std::vector<bool> stored(std::size_t(a.cols), false);
            for (const auto& e : row) stored[std::size_t(e.first)] = true;
            for (index_t j = 0; j < span * nc; ++j)
                if (!stored[std::size_t(j)])
                    row.emplace_back(j, 1e-3 * double(1 + (i + 3 * j) % 7));
            std::sort(row.begin(), row.end());
        }
        for (const auto& e : row) {
            r.push_back(i);
            col.push_back(e.first);
            v.push_back(e.second);
        }
    }
    c.row = Array<index_t>(std::move(r));
    c.col = Array<index_t>(std::move(col));
    c.val = Array<double>(std::move(v));
    return csr_from_coo(c);
}

// kernels::cpr_pressure_pattern / _values on the test executor, back on the host
struct CprKernelResult {
    int defects = 0;
    Csr<double> ap;
    std::vector<double> w;
    index_t singular = 0;
};

CprKernelResult cpr_kernels_on(const Csr<double>& a, index_t nc, index_t p)
{
    auto exec = test_executor();
    const Csr<double> ad = a.to(exec);
    const index_t cells = a.rows / nc;
    CprKernelResult res;
    Array<offset_t> ptr(exec, std::size_t(cells) + 1);
    res.defects = dispatch_executor(*exec, [&](const auto& e) {
        return kernels::cpr_pressure_pattern(e, cells, nc, ad.row_ptr.data(), ad.col_idx.data(),
                                             ptr.data());
    });
    if (res.defects) return res;
    const std::vector<offset_t> hp = ptr.to_vector();
    Array<index_t> col(exec, std::size_t(hp.back()));
    Array<double> val(exec, std::size_t(hp.back()));
    Array<double> w(exec, std::size_t(a.rows));
    res.singular = dispatch_executor(*exec, [&](const auto& e) {
        return kernels::cpr_pressure_values(e, cells, nc, p, ad.row_ptr.data(), ad.col_idx.data(),
                                            ad.values.data(), ptr.data(), col.data(), val.data(),
                                            w.data());
    });
    res.ap.rows = res.ap.cols = cells;
    res.ap.row_ptr = Array<offset_t>(std::vector<offset_t>(hp));
    res.ap.col_idx = Array<index_t>(col.to_vector());
    res.ap.values = Array<double>(val.to_vector());
    res.w = w.to_vector();
    return res;
}

BOOST_AUTO_TEST_CASE(cpr_kernels_match_the_host_reference_bit_for_bit)
{
    // The executor's kernels (CPU here, CUDA in the _gpu variant) against the host
    // reference (detail::block_pattern, block_fill, invert_block): the same pattern, the same
    // bits; on coupled systems, a singular diagonal block and one that no row stores.
    Csr<double> r3 = generated(6, 5, 4, 3, HeptaModel::reservoir, 0.5, 2);
    Csr<double> singular = r3;  // cell 5's diagonal block zeroed: singular, w = e_p
    for (index_t i = 15; i < 18; ++i)
        for (offset_t k = singular.row_ptr[i]; k < singular.row_ptr[i + 1]; ++k)
            if (singular.col_idx[k] / 3 == 5) singular.values.host()[std::size_t(k)] = 0.0;
    const struct {
        const char* name;
        Csr<double> a;
        index_t nc;
    } cases[] = {
        {"reservoir Nc=3", r3, 3},
        {"channelized Nc=4", generated(5, 4, 4, 4, HeptaModel::channelized, 1.0, 7), 4},
        {"coupled Nc=2", coupled_from_pressure(generated(6, 5, 4, 1, HeptaModel::channelized)), 2},
        {"a singular diagonal block", singular, 3},
        {"a diagonal block not stored", without_diagonal_block(r3, 3, 7), 3},
        {"Nc=1", generated(6, 5, 4, 1, HeptaModel::reservoir), 1},
        {"Nc=5 (the CUDA kernels' block size at run time)",
         generated(4, 4, 3, 5, HeptaModel::reservoir, 0.5, 3), 5},
        // many blocks of cells on CUDA, the last one partial
        {"770 cells Nc=3", generated(11, 10, 7, 3, HeptaModel::reservoir, 0.5, 4), 3},
        {"770 cells Nc=1", generated(11, 10, 7, 1, HeptaModel::channelized, 1.0, 5), 1},
        // one cell's rows far longer than the rest, in the middle of a block of cells
        {"a long cell", with_long_cell(generated(11, 10, 7, 3, HeptaModel::reservoir), 3, 40, 300),
         3},
    };
    for (const auto& c : cases)
        for (index_t p : {index_t(0), c.nc - 1}) {
            BOOST_TEST_CONTEXT(c.name << ", pressure unknown " << p)
            {
                std::vector<double> w_ref;
                const Csr<double> ref = cpr_pressure_matrix(c.a, c.nc, p, &w_ref);
                const CprKernelResult k = cpr_kernels_on(c.a, c.nc, p);
                BOOST_TEST(k.defects == 0);
                BOOST_TEST(k.ap.row_ptr.host() == ref.row_ptr.host());
                BOOST_TEST(k.ap.col_idx.host() == ref.col_idx.host());
                BOOST_TEST(k.ap.values.host() == ref.values.host());  // bit for bit
                BOOST_TEST(k.w == w_ref);
                const index_t expect_singular =
                    std::string(c.name).find("diagonal") != std::string::npos;
                BOOST_TEST(k.singular == expect_singular);
            }
        }
}

BOOST_AUTO_TEST_CASE(cpr_kernels_report_what_they_cannot_take)
{
    // unsorted or repeated columns (bit 0), a column out of range (bit 1): the callers then
    // take the host path
    const Csr<double> a = generated(4, 3, 3, 2, HeptaModel::reservoir);
    Csr<double> unsorted = a;
    auto& c = unsorted.col_idx.host();
    std::swap(c[std::size_t(unsorted.row_ptr[5])], c[std::size_t(unsorted.row_ptr[5]) + 1]);
    BOOST_TEST(cpr_kernels_on(unsorted, 2, 0).defects == 1);
    Csr<double> repeated = a;
    repeated.col_idx.host()[std::size_t(a.row_ptr[6]) + 1] = a.col_idx[a.row_ptr[6]];
    BOOST_TEST((cpr_kernels_on(repeated, 2, 0).defects & 1) == 1);
    Csr<double> out = a;
    out.col_idx.host()[std::size_t(a.row_ptr[a.rows] - 1)] = a.cols;
    BOOST_TEST(cpr_kernels_on(out, 2, 0).defects == 2);
    // and CPR set up from such an A on the executor takes the host path, which says what is
    // wrong (a column out of range)
    auto exec = test_executor();
    const Csr<double> od = out.to(exec);
    BOOST_CHECK_THROW(make_cpr<double>(out, 2, exec, CprOptions{}, nullptr, &od), Error);
}

BOOST_AUTO_TEST_CASE(cpr_set_up_on_the_executor_equals_the_host_setup)
{
    // make_cpr with A in the executor's memory (the solver's path on a GPU) against the host
    // path: the same preconditioner, after the setup and after a values refresh; a refresh
    // with another pattern is refused
    const Csr<double> a = generated(12, 10, 6, 3, HeptaModel::channelized, 1.0, 5);
    auto exec = test_executor();
    const std::vector<double> rv = test::random_vector<double>(std::size_t(a.rows), 9);
    const Array<double> r = Array<double>(rv).to(exec);
    for (bool auto_second : {true, false}) {
        CprOptions o;
        o.second_stage_auto = auto_second;
        o.second_stage = CprSmoother::bjacobi;
        const Csr<double> ad = a.to(exec);
        auto me = make_cpr<double>(a, 3, exec, o, nullptr, &ad);
        auto mh = make_cpr<double>(a, 3, exec, o);
        BOOST_TEST(me->describe().find("made on the executor") != std::string::npos,
                   me->describe());
        BOOST_TEST(mh->describe().find("made on the executor") == std::string::npos);
        Array<double> z1(exec, rv.size()), z2(exec, rv.size());
        me->apply(r.data(), z1.data());
        mh->apply(r.data(), z2.data());
        BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-12);
        Csr<double> a2 = a;
        for (std::size_t k = 0; k < a2.values.size(); ++k)
            a2.values.host()[k] *= 1.0 + 0.1 * double(k % 5);
        me->update_values(a2);
        mh->update_values(a2);
        me->apply(r.data(), z1.data());
        mh->apply(r.data(), z2.data());
        BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-12);
        // the refresh was not a no-op
        auto m1 = make_cpr<double>(a, 3, exec, o);
        Array<double> z3(exec, rv.size());
        m1->apply(r.data(), z3.data());
        BOOST_TEST(test::rel_max_diff(z1.to_vector(), z3.to_vector()) > 1e-6);
        BOOST_CHECK_THROW(me->update_values(without_diagonal_block(a, 3, 4)), InputError);
    }
}

BOOST_AUTO_TEST_CASE(cpr_through_a_bdia_operator_equals_the_csr_path)
{
    // With A's operator in BDIA-GH, CPR fuses its second stage into one pass over A's
    // pressure columns (kernels::cpr_stage_two; with block Jacobi, its inverses in the same
    // pass) and AMG's finest level runs A_p as BDIA-GH: the same preconditioner as with a CSR
    // operator (prolongation, full product, M₂, sum), after the setup and after a values
    // refresh of A, of its operator and of CPR; fp32 operator values (mixed) too
    const Csr<double> a = generated(12, 10, 6, 3, HeptaModel::channelized, 1.0, 5);
    auto exec = test_executor();
    const std::vector<double> rv = test::random_vector<double>(std::size_t(a.rows), 9);
    const Array<double> r = Array<double>(rv).to(exec);
    const Coo<double> coo = to_coo(a);
    FormatOptions fo;
    fo.block_size = 3;
    Csr<double> a2 = a;
    for (std::size_t k = 0; k < a2.values.size(); ++k)
        a2.values.host()[k] *= 1.0 + 0.1 * double(k % 5);
    for (CprSmoother s2 : {CprSmoother::bjacobi, CprSmoother::bilu0}) {
        for (bool fp32_values : {false, true}) {
            CprOptions o;
            o.second_stage_auto = false;
            o.second_stage = s2;
            std::shared_ptr<MatrixOperator<double>> bdia =
                fp32_values ? make_matrix_operator<float, double>(coo, Format::bdia, exec, fo)
                            : make_matrix_operator<double, double>(coo, Format::bdia, exec, fo);
            std::shared_ptr<MatrixOperator<double>> csr =
                fp32_values ? make_matrix_operator<float, double>(coo, Format::csr, exec, fo)
                            : make_matrix_operator<double, double>(coo, Format::csr, exec, fo);
            const Csr<double> ad = a.to(exec);
            auto mb = make_cpr<double>(a, 3, exec, o, bdia, &ad);
            auto mc = make_cpr<double>(a, 3, exec, o, csr, &ad);
            const std::string db = mb->describe(), dc = mc->describe();
            BOOST_TEST(db.find("second stage fused") != std::string::npos, db);
            BOOST_TEST((db.find("block Jacobi in the same pass") != std::string::npos) ==
                           (s2 == CprSmoother::bjacobi),
                       db);
            // A_p through BDIA-GH on fp64 levels; not with a CSR operator
            BOOST_TEST(db.find("A_p's products through BDIA-GH") != std::string::npos, db);
            BOOST_TEST(dc.find("fused") == std::string::npos, dc);
            BOOST_TEST(dc.find("A_p's products") == std::string::npos, dc);
            Array<double> z1(exec, rv.size()), z2(exec, rv.size());
            mb->apply(r.data(), z1.data());
            mc->apply(r.data(), z2.data());
            BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-10);
            // the operators and CPR refreshed with new values: still the same, and not the old
            bdia->update_values(a2.values.host().data(), a2.nnz());
            csr->update_values(a2.values.host().data(), a2.nnz());
            const std::vector<double> before = z1.to_vector();
            mb->update_values(a2);
            mc->update_values(a2);
            mb->apply(r.data(), z1.data());
            mc->apply(r.data(), z2.data());
            BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-10);
            BOOST_TEST(test::rel_max_diff(z1.to_vector(), before) > 1e-6);
            // and a solve through them converges to the true residual
            SolverOptions so;
            so.rtol = 1e-8;
            so.max_it = 200;
            Bicgstab<double> s(so);
            s.set_operator(bdia);
            s.set_preconditioner(std::shared_ptr<const Operator<double>>(std::move(mb)));
            const std::vector<double> b = times(a2, std::vector<double>(rv.size(), 1.0));
            Array<double> bd = Array<double>(b).to(exec), x(exec, b.size());
            const Status st = s.solve(bd, x);
            BOOST_TEST(st.converged(), st.summary());
            BOOST_CHECK_LE(true_relres(a2, x.to_vector(), b), fp32_values ? 1e-5 : 1.1e-8);
        }
    }
}

BOOST_AUTO_TEST_CASE(warm_up_runs_on_a_gpu_and_leaves_the_executor_usable)
{
    // the plugin's prewarm: AMG and CPR on tiny systems (a GPU; nothing on the CPU), after
    // which a setup on the same executor gives what a setup on a fresh one gives
    auto exec = test_executor();
    const double ms = warm_up_multigrid(exec);
    if (exec->is_cuda())
        BOOST_TEST(ms > 0);
    else
        BOOST_TEST(ms == 0);
    const Csr<double> a = poisson(10);
    AmgOptions o;
    o.coarse_size = 30;
    const std::vector<double> b = times(a, std::vector<double>(std::size_t(a.rows), 1.0));
    const Run ra = solve_with<Cg<double>>(
        a, b, std::make_shared<AmgPreconditioner<double>>(a, 1, exec, o), 1e-8);
    BOOST_TEST(ra.st.converged(), ra.st.summary());
    BOOST_TEST(true_relres(a, ra.x, b) < 1e-7);
    BOOST_TEST(ra.st.iterations <= 20, ra.st.iterations);
}

BOOST_AUTO_TEST_CASE(amg_and_cpr_from_a_pattern_view_equal_the_csr_setup_and_refresh_in_place)
{
    // make_preconditioner from (pattern view, values) in the executor's memory (the PETSc
    // plugin's path on a GPU: the operator's device copies) against the Csr overload from the
    // host: the same preconditioner after the setup and after a values refresh through
    // update_values_device (on a GPU it must take that path: nothing crosses the bus; on the
    // CPU it declines and update_values does it); 32- and 64-bit row pointers
    auto exec = test_executor();
    for (const index_t nc : {index_t(1), index_t(3)}) {
        const PcType type = nc == 1 ? PcType::amg : PcType::cpr;
        const Csr<double> a = generated(12, 10, 6, nc, HeptaModel::channelized, 1.0, 7);
        const Csr<double> ad = a.to(exec);
        std::vector<index_t> p32(a.row_ptr.host().begin(), a.row_ptr.host().end());
        const Array<index_t> ptr32 = Array<index_t>(p32).to(exec);
        PcOptions o;
        o.amg.coarse_size = 30;
        o.cpr.amg.coarse_size = 30;
        // CPR's residual through an operator of A (as the plugin's), shared by both
        const std::shared_ptr<const Operator<double>> a_op = op_of<double>(a);
        const std::vector<double> rv = test::random_vector<double>(std::size_t(a.rows), 5);
        const Array<double> r = Array<double>(rv).to(exec);
        Array<double> z1(exec, rv.size()), z2(exec, rv.size());
        for (const bool wide : {false, true}) {
            BOOST_TEST_CONTEXT("nc " << nc << ", 64-bit row pointers " << wide)
            {
                CsrPatternView v;
                v.rows = a.rows;
                if (wide)
                    v.row_ptr64 = ad.row_ptr.data();
                else
                    v.row_ptr32 = ptr32.data();
                v.col_idx = ad.col_idx.data();
                v.on_executor = !exec->is_cpu();
                if (!v.on_executor) {  // a host view: host arrays
                    v.row_ptr64 = wide ? a.row_ptr.data() : nullptr;
                    v.row_ptr32 = wide ? nullptr : p32.data();
                    v.col_idx = a.col_idx.data();
                }
                const Csr<double> copy = csr_in_memory_of(v, ad.values.data(), exec);
                BOOST_TEST(copy.exec() == exec);
                BOOST_TEST(copy.row_ptr.to_vector() == a.row_ptr.to_vector());
                BOOST_TEST(copy.col_idx.to_vector() == a.col_idx.to_vector());
                BOOST_TEST(copy.values.to_vector() == a.values.to_vector());

                auto mv = make_preconditioner<double>(type, v, ad.values.data(), nc, exec, o,
                                                      nc > 1 ? a_op : nullptr);
                auto mc =
                    make_preconditioner<double>(type, a, nc, exec, o, nc > 1 ? a_op : nullptr);
                BOOST_TEST((mv->type() == type));
                mv->apply(r.data(), z1.data());
                mc->apply(r.data(), z2.data());
                BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-12);

                Csr<double> a2 = a;
                for (std::size_t k = 0; k < a2.values.size(); ++k)
                    a2.values.host()[k] *= 1.0 + 0.05 * double(k % 3);
                const Csr<double> a2d = a2.to(exec);
                const bool in_place = mv->update_values_device(a2d.values.data(), a2d.nnz());
                BOOST_TEST(in_place == exec->is_cuda());
                if (!in_place) mv->update_values(a2);
                mc->update_values(a2);
                mv->apply(r.data(), z1.data());
                mc->apply(r.data(), z2.data());
                BOOST_CHECK_SMALL(test::rel_max_diff(z1.to_vector(), z2.to_vector()), 1e-12);
                // not a no-op: a fresh setup on A gives another result
                auto m1 =
                    make_preconditioner<double>(type, a, nc, exec, o, nc > 1 ? a_op : nullptr);
                Array<double> z3(exec, rv.size());
                m1->apply(r.data(), z3.data());
                BOOST_TEST(test::rel_max_diff(z1.to_vector(), z3.to_vector()) > 1e-6);
                if (in_place)
                    BOOST_CHECK_THROW(mv->update_values_device(a2d.values.data(), a2d.nnz() - 1),
                                      InputError);
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
