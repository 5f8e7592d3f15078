// The real reservoir matrices of ../shared/data (Harwell-Boeing / SuiteSparse): BiCGStab
// with the default preconditioner (ILU(0)) must bring the TRUE relative residual
// ‖b − A x‖/‖b‖ to 1e-7 or below. On the GPU run the same solve is repeated on the CPU in
// this program and both must pass.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "generators/matrix_market.hpp"
#include "solver/solve.hpp"
#include "tests/test_common.hpp"
#include "tests/test_systems.hpp"

using namespace heptane;

namespace {

using test::residual_rounding;
using test::true_relres;

struct Problem {
    std::string matrix;
    std::string rhs;  // empty: b = A·1
};

std::vector<double> ones_rhs(const Coo<double>& a)
{
    std::vector<double> b(std::size_t(a.rows), 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k) b[std::size_t(a.row[k])] += a.val[k];
    return b;
}

void solve_and_check(const Problem& p, const std::string& device,
                     std::optional<PcType> pc = std::nullopt)
{
    const auto a = read_matrix_market<double>(test::data_file(p.matrix));
    const auto b =
        p.rhs.empty() ? ones_rhs(a) : read_matrix_market_vector<double>(test::data_file(p.rhs));
    BOOST_REQUIRE_EQUAL(b.size(), std::size_t(a.rows));
    SolveConfig cfg;  // BiCGStab, default preconditioner, CSR, double
    cfg.device = device;
    cfg.pc = pc;
    cfg.options.rtol = 1e-9;
    cfg.options.max_it = 5000;
    const SolveResult res = solve_system(a, b, cfg);
    const double rel = true_relres(a, res.x, b);
    BOOST_TEST_MESSAGE(p.matrix << " on " << res.device << " with " << res.preconditioner << ": "
                                << res.status.summary() << ", host-checked true residual " << rel
                                << ", solve " << res.timings.solve_ms << " ms, "
                                << res.timings.per_iteration_ms << " ms/it");
    BOOST_TEST(res.status.converged(), p.matrix << ": " << res.status.summary());
    BOOST_TEST(rel <= 1e-7, p.matrix << ": true relative residual " << rel);
    // the solver's own ‖b − A x‖ (in double) agrees up to the rounding of that evaluation
    BOOST_TEST(std::abs(res.status.true_relative_residual - rel) <= residual_rounding(a, res.x, b));
}

const Problem problems[] = {{"sherman1.mtx", "sherman1_rhs1.mtx"},
                            {"sherman4.mtx", "sherman4_rhs1.mtx"},
                            {"orsreg_1.mtx", ""},
                            {"saylr4.mtx", ""}};

}  // namespace

BOOST_AUTO_TEST_CASE(default_preconditioner_solves_the_reservoir_matrices)
{
    const std::string device = test::testing_on_gpu() ? "cuda" : "cpu";
    for (const Problem& p : problems) {
        solve_and_check(p, device);
        if (device != "cpu") solve_and_check(p, "cpu");
    }
}

BOOST_AUTO_TEST_CASE(default_preconditioner_is_ilu0_on_the_cpu_and_amg_on_a_gpu)
{
    SolveConfig cfg;
    BOOST_TEST(!cfg.pc.has_value());  // unset: default_preconditioners() (solve.hpp)
    const auto a = read_matrix_market<double>(test::data_file("sherman4.mtx"));
    const auto b = read_matrix_market_vector<double>(test::data_file("sherman4_rhs1.mtx"));
    cfg.device = test::testing_on_gpu() ? "cuda" : "cpu";
    const SolveResult res = solve_system(a, b, cfg);
    BOOST_TEST(res.preconditioner.rfind(cfg.device == "cpu" ? "ilu0" : "amg", 0) == 0u,
               res.preconditioner);
    BOOST_TEST(res.status.converged(), res.status.summary());
}

BOOST_AUTO_TEST_CASE(multicolor_ilu0_solves_the_reservoir_matrices)
{
    // ilu0-mc (the GPU default's first fallback) on its own, without natural ILU(0) after it.
    // saylr4 is left out on the GPU: there ilu0-mc needs ~1300 iterations (natural ILU(0): 48)
    // and on the H100 (2026-11-21) it broke down, (r^, v) = 0, at |r|/|b| = 4.2e-8 after 1331
    // iterations, where the CPU's summation order converged. The GPU default falls back to
    // natural ILU(0) then, which default_preconditioner_solves_the_reservoir_matrices checks.
    const std::string device = test::testing_on_gpu() ? "cuda" : "cpu";
    for (const Problem& p : problems) {
        if (device != "cpu" && std::string(p.matrix) == "saylr4.mtx") {
            solve_and_check(p, "cpu", PcType::ilu0_mc);
            continue;
        }
        solve_and_check(p, device, PcType::ilu0_mc);
        if (device != "cpu") solve_and_check(p, "cpu", PcType::ilu0_mc);
    }
}
