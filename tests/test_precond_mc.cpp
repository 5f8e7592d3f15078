// Multi-colour ILU(0)/BILU(0) (PcType::ilu0_mc) on the executor under test (CPU, or CUDA
// with HEPTANE_TEST_DEVICE=cuda): the colouring is valid and red-black on 7-point grids, the
// apply equals an independent dense BILU(0) of P A Pᵀ mapped back, BiCGStab with it
// converges on the reservoir model, and the device agrees with the CPU.
#include <boost/test/unit_test.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>

#include "formats/csr/csr.hpp"
#include "generators/hepta.hpp"
#include "solver/precond/block_utils.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solve.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

HeptaSpec reservoir(index_t J, index_t H, index_t I, index_t nc, bool banded,
                    double difficulty = 1.0)
{
    HeptaSpec s;
    s.J = J;
    s.H = H;
    s.I = I;
    s.Nc = nc;
    s.banded = banded;
    s.model = HeptaModel::reservoir;
    s.difficulty = difficulty;
    s.seed = 11;
    return s;
}

/// Every coupling (either direction) joins two colours; perm and color_ptr agree with color.
void check_coloring(const detail::BlockCsrHost& m, const detail::MulticolorOrdering& o)
{
    BOOST_REQUIRE_EQUAL(o.color.size(), std::size_t(m.nb));
    BOOST_REQUIRE_EQUAL(o.perm.size(), std::size_t(m.nb));
    BOOST_REQUIRE_EQUAL(o.color_ptr.size(), std::size_t(o.colors) + 1);
    index_t bad = 0;
    for (index_t i = 0; i < m.nb; ++i)
        for (offset_t q = m.ptr[std::size_t(i)]; q < m.ptr[std::size_t(i) + 1]; ++q) {
            const index_t j = m.col[std::size_t(q)];
            if (j != i && o.color[std::size_t(i)] == o.color[std::size_t(j)]) ++bad;
        }
    BOOST_TEST(bad == 0, bad << " couplings inside one colour");
    std::vector<int> hit(std::size_t(m.nb), 0);
    for (index_t c = 0; c < o.colors; ++c)
        for (index_t k = o.color_ptr[std::size_t(c)]; k < o.color_ptr[std::size_t(c) + 1]; ++k) {
            const index_t old = o.perm[std::size_t(k)];
            ++hit[std::size_t(old)];
            BOOST_TEST(o.color[std::size_t(old)] == c);
        }
    BOOST_TEST(std::count(hit.begin(), hit.end(), 1) == m.nb);
}

detail::BlockCsrHost block_pattern(const Coo<double>& a, index_t nc)
{
    return detail::block_csr_from_csr(csr_from_coo(a), nc, "test");
}

/// z = Pᵀ (L'U')⁻¹ P r computed densely and independently of the library's factorisation:
/// BILU(0) of the dense A' = P A Pᵀ restricted to its block pattern (IKJ, Eigen inverses),
/// then a dense unit-lower and a block-upper solve.
std::vector<double> dense_mc_ilu0_apply(const detail::BlockCsrHost& m,
                                        const std::vector<index_t>& perm,
                                        const std::vector<double>& r)
{
    const index_t nb = m.nb, nc = m.nc, n = nb * nc;
    std::vector<index_t> inv(static_cast<std::size_t>(nb), 0);
    for (index_t i = 0; i < nb; ++i) inv[std::size_t(perm[std::size_t(i)])] = i;
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
    Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic> pat =
        Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic>::Constant(nb, nb, false);
    for (index_t i = 0; i < nb; ++i)
        for (offset_t q = m.ptr[std::size_t(i)]; q < m.ptr[std::size_t(i) + 1]; ++q) {
            const index_t pi = inv[std::size_t(i)], pj = inv[std::size_t(m.col[std::size_t(q)])];
            pat(pi, pj) = true;
            for (index_t x = 0; x < nc; ++x)
                for (index_t y = 0; y < nc; ++y)
                    a(pi * nc + x, pj * nc + y) =
                        m.val[std::size_t(q) * nc * nc + std::size_t(x * nc + y)];
        }
    for (index_t i = 0; i < nb; ++i)
        for (index_t k = 0; k < i; ++k) {
            if (!pat(i, k)) continue;
            a.block(i * nc, k * nc, nc, nc) =
                (a.block(i * nc, k * nc, nc, nc) * a.block(k * nc, k * nc, nc, nc).inverse())
                    .eval();
            for (index_t j = k + 1; j < nb; ++j)
                if (pat(i, j) && pat(k, j))
                    a.block(i * nc, j * nc, nc, nc) -=
                        a.block(i * nc, k * nc, nc, nc) * a.block(k * nc, j * nc, nc, nc);
        }
    Eigen::MatrixXd lo = Eigen::MatrixXd::Identity(n, n), up = Eigen::MatrixXd::Zero(n, n);
    for (index_t i = 0; i < nb; ++i)
        for (index_t j = 0; j < nb; ++j)
            if (pat(i, j))
                (j < i ? lo : up).block(i * nc, j * nc, nc, nc) = a.block(i * nc, j * nc, nc, nc);
    Eigen::VectorXd pr(n);
    for (index_t i = 0; i < nb; ++i)
        for (index_t x = 0; x < nc; ++x)
            pr(i * nc + x) = r[std::size_t(perm[std::size_t(i)] * nc + x)];
    const Eigen::VectorXd y = lo.triangularView<Eigen::UnitLower>().solve(pr);
    const Eigen::VectorXd zp = up.partialPivLu().solve(y);
    std::vector<double> z(static_cast<std::size_t>(n), 0.0);
    for (index_t i = 0; i < nb; ++i)
        for (index_t x = 0; x < nc; ++x)
            z[std::size_t(perm[std::size_t(i)] * nc + x)] = zp(i * nc + x);
    return z;
}

double max_abs(const std::vector<double>& v)
{
    double m = 0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(coloring_is_valid_and_red_black_on_7_point_grids)
{
    for (index_t nc : {1, 3}) {
        // grid variant: any sizes are bipartite
        for (auto [J, H, I] : {std::array<index_t, 3>{8, 6, 4}, std::array<index_t, 3>{7, 5, 3}}) {
            const auto a = generate_hepta_coo<double>(reservoir(J, H, I, nc, false));
            const auto m = block_pattern(a, nc);
            const auto o = detail::multicolor_ordering(m);
            check_coloring(m, o);
            BOOST_TEST(o.colors == 2, "grid " << J << "x" << H << "x" << I << " Nc=" << nc);
        }
        // banded variant: bipartite when J and H are odd (index parity) ...
        {
            const auto a = generate_hepta_coo<double>(reservoir(7, 5, 4, nc, true));
            const auto m = block_pattern(a, nc);
            const auto o = detail::multicolor_ordering(m);
            check_coloring(m, o);
            BOOST_TEST(o.colors == 2);
        }
        // ... otherwise the wrap-around couplings close odd cycles: greedy needs 3-4, still valid
        {
            const auto a = generate_hepta_coo<double>(reservoir(8, 6, 4, nc, true));
            const auto m = block_pattern(a, nc);
            const auto o = detail::multicolor_ordering(m);
            check_coloring(m, o);
            BOOST_TEST((o.colors >= 3 && o.colors <= 4), o.colors << " colours");
        }
    }
    // a general (structurally nonsymmetric) matrix: more colours, still valid
    const auto g = test::random_coo<double>(300, 300, 2, 9, 5);
    Coo<double> gd = g;
    const auto m = block_pattern(gd, 1);
    const auto o = detail::multicolor_ordering(m);
    check_coloring(m, o);
    BOOST_TEST(o.colors > 2);
}

BOOST_AUTO_TEST_CASE(multicolor_apply_equals_dense_bilu0_of_the_permuted_matrix)
{
    for (index_t nc : {1, 3}) {
        for (bool banded : {false, true}) {
            const auto a = generate_hepta_coo<double>(reservoir(6, 5, 4, nc, banded));
            const Csr<double> csr = csr_from_coo(a);
            const auto m = block_pattern(a, nc);
            const auto o = detail::multicolor_ordering(m);
            std::vector<double> r(std::size_t(a.rows));
            for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::sin(0.37 * double(i) + 1.0);
            const auto z_ref = dense_mc_ilu0_apply(m, o.perm, r);
            auto pc = make_preconditioner<double>(PcType::ilu0_mc, csr, nc, test::test_executor());
            BOOST_TEST(
                pc->describe().find("colors=" + std::to_string(o.colors)) != std::string::npos,
                pc->describe());
            const Array<double> rd = Array<double>(r).to(test::test_executor());
            Array<double> zd(test::test_executor(), r.size());
            pc->apply(rd.data(), zd.data());
            const auto z = zd.to_vector();
            double diff = 0;
            for (std::size_t i = 0; i < z.size(); ++i)
                diff = std::max(diff, std::abs(z[i] - z_ref[i]));
            BOOST_TEST(diff <= 1e-11 * max_abs(z_ref), "Nc=" << nc << (banded ? " banded" : " grid")
                                                             << ": max diff " << diff << " of "
                                                             << max_abs(z_ref));
            // r is left untouched
            BOOST_TEST(rd.to_vector() == r, boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(float_multicolor_apply_matches_double)
{
    const auto a = generate_hepta_coo<double>(reservoir(6, 5, 4, 2, false));
    const Csr<double> csr = csr_from_coo(a);
    std::vector<double> r(std::size_t(a.rows));
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::cos(0.11 * double(i));
    auto pd = make_preconditioner<double>(PcType::ilu0_mc, csr, 2, test::test_executor());
    auto pf = make_preconditioner<float>(PcType::ilu0_mc, csr, 2, test::test_executor());
    const Array<double> rd = Array<double>(r).to(test::test_executor());
    const Array<float> rf =
        Array<float>(std::vector<float>(r.begin(), r.end())).to(test::test_executor());
    Array<double> zd(test::test_executor(), r.size());
    Array<float> zf(test::test_executor(), r.size());
    pd->apply(rd.data(), zd.data());
    pf->apply(rf.data(), zf.data());
    const auto zdh = zd.to_vector();
    const auto zfh = zf.to_vector();
    double diff = 0;
    for (std::size_t i = 0; i < zdh.size(); ++i)
        diff = std::max(diff, std::abs(zdh[i] - double(zfh[i])));
    BOOST_TEST(diff <= 1e-4 * max_abs(zdh));
}

BOOST_AUTO_TEST_CASE(bicgstab_with_ilu0_mc_converges_on_the_reservoir_model_and_matches_the_cpu)
{
    for (index_t nc : {1, 3}) {
        const HeptaSpec spec = reservoir(16, 12, 8, nc, false);
        const auto a = generate_hepta_coo<double>(spec);
        const auto b = make_rhs(spec, a).b;
        SolveConfig cfg;
        cfg.block_size = nc;
        cfg.options.rtol = 1e-9;
        cfg.options.max_it = 3000;
        cfg.device = test::testing_on_gpu() ? "cuda" : "cpu";
        cfg.pc = PcType::ilu0_mc;
        const SolveResult mc = solve_system(a, b, cfg);
        cfg.pc = PcType::ilu0;
        const SolveResult nat = solve_system(a, b, cfg);
        BOOST_TEST_MESSAGE("Nc=" << nc << " N=" << a.rows << " on " << mc.device << ": ilu0-mc "
                                 << mc.status.iterations << " it, " << mc.timings.per_iteration_ms
                                 << " ms/it; ilu0 " << nat.status.iterations << " it, "
                                 << nat.timings.per_iteration_ms << " ms/it");
        BOOST_TEST(mc.status.converged(), mc.status.summary());
        BOOST_TEST(mc.status.true_relative_residual <= 1e-7);
        BOOST_TEST(
            mc.preconditioner.rfind("ilu0-mc Nc=" + std::to_string(nc) + " colors=2", 0) == 0u,
            mc.preconditioner);
        BOOST_TEST(nat.status.converged(), nat.status.summary());
        // the device solve equals the CPU solve (on the CPU run: a determinism check)
        cfg.pc = PcType::ilu0_mc;
        cfg.device = "cpu";
        const SolveResult host = solve_system(a, b, cfg);
        // a different summation order on the device changes the iteration count on this
        // harder (difficulty 1) problem: 8 iterations apart were seen on an H100
        const int slack = std::max(2, host.status.iterations / 4);
        BOOST_TEST(std::abs(host.status.iterations - mc.status.iterations) <= slack);
        double diff = 0;
        for (std::size_t i = 0; i < b.size(); ++i)
            diff = std::max(diff, std::abs(host.x[i] - mc.x[i]));
        BOOST_TEST(diff <= 1e-6 * max_abs(host.x), "max diff " << diff);
    }
}

BOOST_AUTO_TEST_CASE(parse_pc_names_ilu0_mc)
{
    BOOST_TEST((parse_pc("ilu0-mc") == PcType::ilu0_mc));
    BOOST_TEST((parse_pc("mcilu0") == PcType::ilu0_mc));
    BOOST_TEST(std::string(to_string(PcType::ilu0_mc)) == "ilu0-mc");
    BOOST_CHECK_THROW(parse_pc("ilu0-xx"), InputError);
}
