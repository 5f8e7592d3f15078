#include "solver/precond/amg/amg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "solver/precond/amg/amg_kernels.hpp"
#include "solver/precond/amg/amg_level.hpp"
#include "solver/precond/amg/amg_setup.hpp"
#include "solver/precond/amg/amg_tail.hpp"
#ifdef HEPTANE_HAVE_CUDA
#include "solver/precond/amg/amg_device.hpp"
#endif
#include "solver/precond/precond_kernels.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

using amg::csr_apply;
using amg::CsrLevel;
using amg::place;
using amg::place_csr;

AmgSmoother parse_amg_smoother(const std::string& name)
{
    if (name == "chebyshev" || name == "cheby") return AmgSmoother::chebyshev;
    if (name == "jacobi") return AmgSmoother::jacobi;
    if (name == "l1jacobi" || name == "l1-jacobi") return AmgSmoother::l1jacobi;
    if (name == "ilu0mc" || name == "ilu0-mc") return AmgSmoother::ilu0mc;
    if (name == "auto" || name == "automatic") return AmgSmoother::automatic;
    HEPTANE_THROW(InputError, "unknown AMG smoother '"
                                  << name
                                  << "' (choices: auto, chebyshev, jacobi, l1jacobi, ilu0mc)");
}

const char* to_string(AmgSmoother s) noexcept
{
    switch (s) {
        case AmgSmoother::chebyshev:
            return "chebyshev";
        case AmgSmoother::jacobi:
            return "jacobi";
        case AmgSmoother::l1jacobi:
            return "l1jacobi";
        case AmgSmoother::ilu0mc:
            return "ilu0mc";
        case AmgSmoother::automatic:
            return "auto";
    }
    return "?";
}

AmgSetup parse_amg_setup(const std::string& name)
{
    if (name == "auto" || name == "automatic") return AmgSetup::automatic;
    if (name == "host") return AmgSetup::host;
    if (name == "device") return AmgSetup::device;
    HEPTANE_THROW(InputError,
                  "unknown AMG setup place '" << name << "' (choices: auto, host, device)");
}

AmgAggregation parse_amg_aggregation(const std::string& name)
{
    if (name == "mis") return AmgAggregation::mis;
    if (name == "box") return AmgAggregation::box;
    HEPTANE_THROW(InputError, "unknown AMG aggregation '" << name << "' (choices: mis, box)");
}

const char* to_string(AmgAggregation a) noexcept
{
    return a == AmgAggregation::box ? "box" : "mis";
}

OverRanks amg_over_ranks(AmgOverRanks asked, AmgSmoother smoother, bool amg, bool cpr, int ranks,
                         bool cpu, index_t nc, bool coarse)
{
    using W = OverRanksWhy;
    if (ranks < 2 || !(amg || cpr)) return {false, W::not_amg};
    if (asked == AmgOverRanks::yes) return {true, W::asked};
    if (asked == AmgOverRanks::no) return {false, W::declined};
    if (!cpu) return {false, W::gpu_ranks};
    if (coarse) return {false, W::coarse};
    if (smoother == AmgSmoother::ilu0mc) return {false, W::ilu0mc_smoother};
    if (amg && nc != 1) return {false, W::block_system};
    return {true, cpr ? W::default_cpr : W::default_scalar};
}

const char* to_string(AmgSetup s) noexcept
{
    switch (s) {
        case AmgSetup::automatic:
            return "auto";
        case AmgSetup::host:
            return "host";
        case AmgSetup::device:
            return "device";
    }
    return "?";
}

AmgCycle parse_amg_cycle(const std::string& name)
{
    if (name == "v" || name == "V") return AmgCycle::v;
    if (name == "w" || name == "W") return AmgCycle::w;
    HEPTANE_THROW(InputError, "unknown AMG cycle '" << name << "' (choices: v, w)");
}

const char* to_string(AmgCycle c) noexcept
{
    return c == AmgCycle::v ? "v" : "w";
}

std::string AmgInfo::table() const
{
    std::ostringstream os;
    os << "level        rows          nnz  nnz/row  lambda_max\n";
    for (std::size_t l = 0; l < levels.size(); ++l) {
        char line[128];
        std::snprintf(line, sizeof line, "%5zu %11lld %12lld %8.1f  %10.3g\n", l,
                      static_cast<long long>(levels[l].rows), static_cast<long long>(levels[l].nnz),
                      levels[l].rows ? double(levels[l].nnz) / levels[l].rows : 0.0,
                      levels[l].lambda_max);
        os << line;
    }
    char tail[160];
    std::snprintf(tail, sizeof tail, "operator complexity %.3f, grid complexity %.3f, coarsest: %s",
                  operator_complexity, grid_complexity, coarse_solve.c_str());
    os << tail;
    return os.str();
}

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// The host hierarchy: A_l (l ≥ 1; A_0 is the caller's), P_l and R_l = P_lᵀ.
struct HostHierarchy {
    std::vector<Csr<double>> a;  // a[0] empty (the caller's matrix)
    std::vector<Csr<double>> p, r;
    std::vector<amg::Grid> grids;  // box aggregation: every level's grid
    // plain box aggregation: A_{l+1} from A_l by box sums (amg::box_galerkin) with map[l]
    std::vector<char> box_direct;
    std::vector<amg::BoxMap> box_maps;
    bool dense_coarse = true;
    double ms[4] = {0, 0, 0, 0};  // strength, aggregation, P and R, Galerkin products
};

void check_options(const AmgOptions& o)
{
    HEPTANE_ENSURE(o.max_levels >= 1, InputError,
                   "AMG: max_levels (" << o.max_levels << ") must be >= 1");
    HEPTANE_ENSURE(o.coarse_size >= 1, InputError,
                   "AMG: coarse_size (" << o.coarse_size << ") must be >= 1");
    HEPTANE_ENSURE(o.strength_threshold >= 0, InputError,
                   "AMG: strength threshold (" << o.strength_threshold << ") must be >= 0");
    HEPTANE_ENSURE(o.tail_rows >= 0, InputError,
                   "AMG: tail_rows (" << o.tail_rows << ") must be >= 0");
}

// Box aggregation needs Nc = 1 and a grid of a's size: the caller's (AmgOptions::grid) or the
// one behind a's pattern (formats/detect, on the host). Where there is none, mis instead, and
// `note` says why.
AmgOptions resolve_aggregation(const AmgOptions& o, const Csr<double>& a, index_t nc,
                               std::string& note)
{
    AmgOptions r = o;
    if (o.aggregation != AmgAggregation::box) return r;
    const auto cells = [](const amg::Grid& g) {
        return double(g[0]) * double(g[1]) * double(g[2]);
    };
    if (nc != 1) {
        note = "box aggregation needs Nc = 1 (here " + std::to_string(nc) + "): mis";
    } else {
        if (!(r.grid[0] > 0 && r.grid[1] > 0 && r.grid[2] > 0 && cells(r.grid) == double(a.rows))) {
            if (a.exec()->is_cpu())
                r.grid = amg::find_grid(a);
            else
                r.grid = amg::find_grid(a.to(cpu_executor()));
        }
        if (r.grid[0] > 0 && cells(r.grid) == double(a.rows)) return r;
        note = "box aggregation: no grid behind A's pattern: mis";
    }
    r.aggregation = AmgAggregation::mis;
    r.grid = {0, 0, 0};
    return r;
}

// "mis" or "box, grids 128x128x64/64x64x32/…"
std::string aggregation_text(const std::vector<amg::Grid>& grids, const std::string& note)
{
    if (grids.empty()) return note.empty() ? "mis" : note;
    std::string t = "box, grids";
    for (std::size_t l = 0; l < grids.size(); ++l)
        t += (l ? "/" : " ") + std::to_string(grids[l][0]) + "x" + std::to_string(grids[l][1]) +
             "x" + std::to_string(grids[l][2]);
    return t;
}

// Whether the hierarchy is built on the device (AmgOptions::setup)
bool setup_on_device(const AmgOptions& o, index_t nc, const Executor& exec)
{
    if (o.setup == AmgSetup::host) return false;
#ifdef HEPTANE_HAVE_CUDA
    const bool can = exec.is_cuda() && nc == 1;
#else
    const bool can = false;
#endif
    if (o.setup == AmgSetup::device)
        HEPTANE_ENSURE(can, InputError,
                       "AMG: the device setup needs a GPU executor and Nc = 1 (here "
                           << (exec.is_cuda() ? "a GPU" : "the CPU") << ", Nc = " << nc
                           << "); use the host setup (--amg-setup host)");
    return can;
}

// A 64-bit fingerprint of CSR a's pattern, where a lives (kernels::csr_pattern_fingerprint,
// the same value on every executor): update_values compares it instead of a copy of the
// pattern (300 MB at 8 M rows)
std::uint64_t pattern_fingerprint(const Csr<double>& a)
{
    return dispatch_executor(*a.exec(), [&](const auto& e) {
        return kernels::csr_pattern_fingerprint(e, a.rows, a.row_ptr.data(), a.col_idx.data());
    });
}

// a_ij = a_ji to 1e-12 relative for every stored entry (rows sorted; a missing mirror
// entry counts as 0)
bool numerically_symmetric(const Csr<double>& a)
{
    if (a.rows != a.cols) return false;
    const offset_t* rp = a.row_ptr.data();
    const index_t* ci = a.col_idx.data();
    const double* v = a.values.data();
    // (a logical-or reduction: its private copies start at 0, where a max reduction's start
    // at INT_MIN, which the `!bad` below read as "already bad" and skipped every entry)
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(|| : bad)
    for (index_t i = 0; i < a.rows; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1] && !bad; ++k) {
            const index_t j = ci[k];
            if (j == i) continue;
            const index_t* b = ci + rp[j];
            const index_t* e = ci + rp[j + 1];
            const index_t* f = std::lower_bound(b, e, i);
            const double mirror = (f != e && *f == i) ? v[rp[j] + (f - b)] : 0.0;
            if (std::abs(v[k] - mirror) > 1e-12 * std::max(std::abs(v[k]), std::abs(mirror)))
                bad = 1;
        }
    return !bad;
}

// AmgInfo::coarse_solve
const char* coarse_solve_name(bool dense, bool ilu)
{
    return dense ? "dense LU"
           : ilu ? "ILU(0) sweeps (coarsening stalled)"
                 : "smoothed (coarsening stalled)";
}

HostHierarchy build_host(const Csr<double>& a0, index_t nc, const AmgOptions& o)
{
    HEPTANE_ENSURE(a0.rows == a0.cols, InputError,
                   "AMG: the matrix is " << a0.rows << " x " << a0.cols << ", not square");
    check_options(o);
    HostHierarchy h;
    h.a.emplace_back();
    const Csr<double>* cur = &a0;
    // box aggregation: the current level's grid (resolve_aggregation made sure of it)
    const bool box = o.aggregation == AmgAggregation::box;
    if (box) h.grids.push_back(o.grid);
    while (int(h.a.size()) < o.max_levels && cur->rows > amg::coarse_limit(o)) {
        auto t = clock_type::now();
        // (boxes with plain aggregation read no strength: the boxes come from the axes' mean
        // strength, T from the boxes)
        const amg::Strength s = box && o.prolongation_weight == 0
                                    ? amg::Strength{}
                                    : amg::strength(*cur, nc, o.strength_threshold);
        h.ms[0] += ms_since(t);
        t = clock_type::now();
        amg::Grid step{1, 1, 1};
        if (box) {
            step = amg::box_steps(amg::axis_strength(*cur, h.grids.back()), h.grids.back(),
                                  o.box_ratio);
            if (step[0] * step[1] * step[2] == 1) break;  // nothing left to halve
        }
        const amg::Aggregates g =
            box ? amg::box_aggregate(h.grids.back(), step) : amg::aggregate(s);
        h.ms[1] += ms_since(t);
        const index_t nc_rows = g.count * nc;
        if (g.count == 0 || double(nc_rows) * 1.2 > double(cur->rows)) break;  // stalled
        t = clock_type::now();
        Csr<double> p = amg::prolongator(*cur, nc, s, g, o.prolongation_weight);
        Csr<double> r = transpose(p);
        h.ms[2] += ms_since(t);
        t = clock_type::now();
        // plain box aggregation: the box sums where every coupling joins neighbouring boxes
        const amg::BoxMap map = box ? amg::box_map(h.grids.back(), step) : amg::BoxMap{};
        const std::uint32_t mask =
            box && o.prolongation_weight == 0 ? amg::box_stencil(*cur, map) : amg::box_wide;
        const bool direct = !(mask & amg::box_wide);
        Csr<double> ac = direct ? amg::box_galerkin(*cur, map, mask) : amg::galerkin(r, *cur, p);
        h.box_direct.push_back(char(direct));
        h.box_maps.push_back(map);
        h.ms[3] += ms_since(t);
        h.p.push_back(std::move(p));
        h.r.push_back(std::move(r));
        h.a.push_back(std::move(ac));
        if (box) h.grids.push_back(amg::box_coarse_grid(h.grids.back(), step));
        cur = &h.a.back();
    }
    h.dense_coarse = amg::dense_coarse(cur->rows, a0.nnz(), o.coarse_size);
    return h;
}

}  // namespace

template <class VT>
struct AmgPreconditioner<VT>::Impl {
    struct Level {
        index_t n = 0;
        std::shared_ptr<const Operator<VT>> a;  // the level's matrix
        CsrLevel<VT>* own = nullptr;            // a, when AMG owns it (values refresh)
        Csr<VT> p, r;                           // to the next level (not on the coarsest)
        Array<VT> dinv;
        double lambda = 0;
        std::unique_ptr<Preconditioner<VT>> ilu;  // ilu0mc smoother
        std::vector<double> step_a, step_b;       // smoothing step k's (a_k, b_k), per numeric()
        mutable Array<VT> x, b, res, d, b2, e2;
    };
    std::shared_ptr<const Executor> exec;
    AmgOptions opts;
    index_t nc = 1;
    std::vector<Level> levels;
    Array<VT> coarse_inv;      // dense, on the coarsest level when dense_coarse
    index_t coarse_rank = -1;  // its rank (opts.singular: a generalized inverse)
    bool dense_coarse = true;
    bool coarse_ilu = false;  // a stalled, non-symmetric coarsest level: ILU(0) sweeps
    bool user_fine = false;
    bool symmetric = false;  // A_0 (numerically, to 1e-12 relative)
    HostHierarchy host;      // the hierarchy when built on the host
#ifdef HEPTANE_HAVE_CUDA
    std::unique_ptr<amg::DeviceHierarchy> dev;  // … or on the device
#endif
    std::uint64_t pattern = 0;  // A_0's pattern fingerprint, for update_values' check
    // the levels from tail_start on run as one launch (amg_tail.hpp); -1: none
    int tail_start = -1;
    kernels::AmgTail<VT> tail;
    AmgInfo info;
    std::unique_ptr<VectorOps<VT>> ops;

    template <class F>
    void on_exec(F&& f) const
    {
        dispatch_executor(*exec, std::forward<F>(f));
    }

    // level l's fp64 matrix: on the host (a0 = the caller's host matrix for l = 0) or, with
    // the device setup, on the device
    const Csr<double>& level_matrix(int l, const Csr<double>& a0) const
    {
#ifdef HEPTANE_HAVE_CUDA
        if (dev) return dev->a(l);
#endif
        return l == 0 ? a0 : host.a[std::size_t(l)];
    }

    // smoother data and coarse inverse of every level
    void numeric(const Csr<double>& a0)
    {
        const auto t0 = clock_type::now();
        const bool l1 = opts.smoother == AmgSmoother::l1jacobi;
        const int nl = int(levels.size());
        for (int l = 0; l < nl; ++l) {
            Level& L = levels[l];
            const Csr<double>& a = level_matrix(l, a0);
            const bool coarsest = l == nl - 1;
            Csr<double> keep;  // a host copy where the host needs the matrix
            auto host_matrix = [&]() -> const Csr<double>& {
                return a.exec()->is_cpu() ? a : (keep = a.to(cpu_executor()));
            };
            if (coarsest && dense_coarse) {
                coarse_inv = place<VT>(
                    amg::dense_inverse(host_matrix(), l, opts.singular, &coarse_rank), exec);
                continue;
            }
            if (opts.smoother == AmgSmoother::ilu0mc || (coarsest && coarse_ilu)) {
                const Csr<double>& ah = host_matrix();
                if (L.ilu)
                    L.ilu->update_values(ah);
                else
                    L.ilu = make_preconditioner<VT>(PcType::ilu0_mc, ah, nc, exec);
                continue;
            }
#ifdef HEPTANE_HAVE_CUDA
            if (!a.exec()->is_cpu()) {
                L.dinv = amg::inverse_diagonal_device<VT>(a, l1, l, exec);
                if (opts.smoother == AmgSmoother::chebyshev) L.lambda = timed_lambda(L, a);
                continue;
            }
#endif
            const std::vector<double> dinv = amg::inverse_diagonal(a, l1, l);
            if (L.dinv.size() == dinv.size()) {
                std::vector<VT> t(dinv.begin(), dinv.end());
                copy_bytes(*cpu_executor(), t.data(), *exec, L.dinv.data(), t.size() * sizeof(VT));
            } else {
                L.dinv = place<VT>(dinv, exec);
            }
            if (opts.smoother == AmgSmoother::chebyshev) L.lambda = timed_lambda(L, a);
        }
        // every visit's smoothing steps (at most pre + post, on a smoothed coarsest level;
        // both are checked >= 0)
        const int steps = std::max(1, opts.pre_sweeps + opts.post_sweeps);
        for (Level& L : levels) {
            if (L.dinv.size() == 0) continue;  // a dense coarsest level, ILU(0) smoothing
            L.step_a.assign(std::size_t(steps), 0.0);
            L.step_b.assign(std::size_t(steps), 0.0);
            smoothing_steps(L, steps, L.step_a.data(), L.step_b.data());
        }
        build_tail();
        exec->synchronize();
        info.device_ms += ms_since(t0);
        for (int l = 0; l < nl; ++l) info.levels[l].lambda_max = levels[l].lambda;
    }

    // λ_max(D⁻¹A) of level L (matrix a, where it lives) for the Chebyshev interval, its time
    // added to info.lambda_ms (each way ends with a value read on the host, so the work is
    // done when it returns): with power_iterations > 0 the estimate below, else Gershgorin's
    // bound max_i Σ_j |a_ij| / |a_ii| (an upper bound, one pass over the level, amgcl's default)
    double timed_lambda(Level& L, const Csr<double>& a)
    {
        const auto t = clock_type::now();
        const double lambda =
            opts.power_iterations > 0
                ? estimate_lambda(L)
                : dispatch_executor(*a.exec(), [&](const auto& e) {
                      return kernels::gershgorin_bound(e, a.rows, a.row_ptr.data(),
                                                       a.col_idx.data(), a.values.data());
                  });
        info.lambda_ms += ms_since(t);
        return lambda;
    }

    // λ_max(D⁻¹A) for the Chebyshev interval: the larger of two estimates through the level's
    // product on the executor, from the same fixed pseudo-random start (deterministic):
    //  - power iterations, ‖D⁻¹A v‖ for unit v (any matrix);
    //  - for a symmetric A (then every level is), Lanczos from as many Jacobi-preconditioned
    //    CG steps (as PETSc's Chebyshev estimate does): the largest eigenvalue of the CG
    //    tridiagonal matrix, which finds an isolated top eigenvalue that 10 power iterations
    //    fall short of (seen on an 8 M-cell channelized system: the cycle became indefinite
    //    and CG stopped)
    double estimate_lambda(Level& L)
    {
        const index_t n = L.n;
        Array<VT> start(exec, std::size_t(n));
        on_exec([&](const auto& e) { kernels::start_vector(e, n, start.data()); });
        Array<VT> v(exec, std::size_t(n));
        ops->copy(n, start.data(), v.data());
        Array<VT>& w = L.res;
        double norm = ops->norm2(n, v.data());
        double power = 0;
        const int iters = std::max(1, opts.power_iterations);
        for (int k = 0; k < iters && norm > 0; ++k) {
            ops->axpby(n, VT(1.0 / norm), v.data(), VT(0), v.data());
            L.a->apply(v.data(), w.data());
            on_exec([&](const auto& e) {
                kernels::diag_scale(e, n, L.dinv.data(), w.data(), v.data());
            });
            norm = ops->norm2(n, v.data());
            power = norm;
        }
        return symmetric ? std::max(power, lanczos_lambda(L, start, iters + 2)) : power;
    }

    // The largest Ritz value of `steps` CG steps on A x = start with the Jacobi
    // preconditioner (0 when A is not positive definite along the way)
    double lanczos_lambda(Level& L, const Array<VT>& start, int steps)
    {
        const index_t n = L.n;
        Array<VT> r(exec, std::size_t(n)), z(exec, std::size_t(n)), p(exec, std::size_t(n));
        Array<VT>& q = L.res;
        ops->copy(n, start.data(), r.data());
        on_exec(
            [&](const auto& e) { kernels::diag_scale(e, n, L.dinv.data(), r.data(), z.data()); });
        ops->copy(n, z.data(), p.data());
        double rho = ops->dot(n, r.data(), z.data());
        std::vector<double> diag, off;  // the tridiagonal Lanczos matrix
        double alpha_prev = 0, beta_prev = 0;
        for (int j = 0; j < steps && rho > 0; ++j) {
            L.a->apply(p.data(), q.data());
            const double pq = ops->dot(n, p.data(), q.data());
            if (!(pq > 0)) break;
            const double alpha = rho / pq;
            diag.push_back(1.0 / alpha + (j > 0 ? beta_prev / alpha_prev : 0.0));
            ops->axpby(n, VT(-alpha), q.data(), VT(1), r.data());
            on_exec([&](const auto& e) {
                kernels::diag_scale(e, n, L.dinv.data(), r.data(), z.data());
            });
            const double rho_new = ops->dot(n, r.data(), z.data());
            const double beta = rho_new / rho;
            if (!(beta > 0) || j + 1 == steps) break;
            off.push_back(std::sqrt(beta) / alpha);
            ops->axpby(n, VT(1), z.data(), VT(beta), p.data());
            rho = rho_new;
            alpha_prev = alpha;
            beta_prev = beta;
        }
        return tridiagonal_max_eigenvalue(diag, off);
    }

    // The largest eigenvalue of the symmetric tridiagonal matrix (diag, off) by bisection
    // on its Sturm sequence (Gershgorin interval)
    static double tridiagonal_max_eigenvalue(const std::vector<double>& d,
                                             const std::vector<double>& e)
    {
        const std::size_t m = d.size();
        if (m == 0) return 0;
        double lo = d[0], hi = d[0];
        for (std::size_t i = 0; i < m; ++i) {
            const double r =
                (i > 0 ? std::abs(e[i - 1]) : 0.0) + (i + 1 < m ? std::abs(e[i]) : 0.0);
            lo = std::min(lo, d[i] - r);
            hi = std::max(hi, d[i] + r);
        }
        // eigenvalues below x: sign changes of the LDLᵀ pivots of T − x I
        auto below = [&](double x) {
            std::size_t c = 0;
            double piv = d[0] - x;
            for (std::size_t i = 0;; ++i) {
                if (piv < 0) ++c;
                if (i + 1 == m) break;
                if (piv == 0) piv = 1e-300;
                piv = d[i + 1] - x - e[i] * e[i] / piv;
            }
            return c;
        };
        for (int it = 0; it < 100 && hi - lo > 1e-10 * std::max(1.0, std::abs(hi)); ++it) {
            const double mid = 0.5 * (lo + hi);
            if (below(mid) == m)
                hi = mid;
            else
                lo = mid;
        }
        return hi;
    }

    // The (a_k, b_k) of smoothing step k (d = a_k d + b_k (dinv ∘ r); x += d), k < steps, on
    // level L: Chebyshev's recurrence on [λ/ratio, λ] (an estimate of λ gets 10 % of room,
    // Gershgorin's bound none), or (0, ω) for Jacobi, (0, 1) for l1-Jacobi
    void smoothing_steps(const Level& L, int steps, double* a, double* b) const
    {
        if (opts.smoother == AmgSmoother::jacobi || opts.smoother == AmgSmoother::l1jacobi) {
            const double w = opts.smoother == AmgSmoother::jacobi ? opts.jacobi_weight : 1.0;
            for (int k = 0; k < steps; ++k) {
                a[k] = 0;
                b[k] = w;
            }
            return;
        }
        const double hi = (opts.power_iterations > 0 ? 1.1 : 1.0) * L.lambda;
        const double lo = L.lambda / opts.chebyshev_ratio;
        const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo);
        const double sigma = theta / delta;
        double rho = 1.0 / sigma;
        for (int k = 0; k < steps; ++k) {
            if (k == 0) {
                a[k] = 0;
                b[k] = 1.0 / theta;
                continue;
            }
            const double rho_new = 1.0 / (2.0 * sigma - rho);
            a[k] = rho_new * rho;
            b[k] = 2.0 * rho_new / delta;
            rho = rho_new;
        }
    }

    // The tail (amg_tail.hpp): the last levels of at most opts.tail_rows rows, where the
    // smoother and the levels allow it; made again after every numeric setup (the smoother
    // data may have moved)
    void build_tail()
    {
        using kernels::amg_tail_max_levels;
        using kernels::amg_tail_max_steps;
        tail_start = -1;
        tail = kernels::AmgTail<VT>{};
        const int nl = int(levels.size());
        const bool point_smoother = opts.smoother == AmgSmoother::chebyshev ||
                                    opts.smoother == AmgSmoother::jacobi ||
                                    opts.smoother == AmgSmoother::l1jacobi;
        const int coarse_steps = std::max(1, opts.pre_sweeps + opts.post_sweeps);
        if (opts.tail_rows <= 0 || nl < 2 || !point_smoother || coarse_ilu ||
            std::max(opts.pre_sweeps, opts.post_sweeps) > amg_tail_max_steps ||
            (!dense_coarse && coarse_steps > amg_tail_max_steps))
            return;
        auto fits = [&](int l) {
            const Level& L = levels[std::size_t(l)];
            if (L.n > opts.tail_rows) return false;
            return (l == nl - 1 && dense_coarse) || L.own != nullptr;
        };
        int s = nl - 1;
        if (!fits(s)) return;
        while (s > 0 && fits(s - 1) && nl - (s - 1) <= amg_tail_max_levels) --s;
        if (nl - s < 2) return;  // the coarsest alone is one launch already
        kernels::AmgTail<VT>& g = tail;
        g.levels = nl - s;
        g.pre = opts.pre_sweeps;
        g.post = opts.post_sweeps;
        g.coarse_steps = coarse_steps;
        g.chebyshev = opts.smoother == AmgSmoother::chebyshev;
        g.w_cycle = opts.cycle == AmgCycle::w;
        g.coarse_inv = dense_coarse ? coarse_inv.data() : nullptr;
        auto csr = [](const Csr<VT>& m) {
            return kernels::AmgTailCsr<VT>{m.row_ptr.data(), m.col_idx.data(), m.values.data()};
        };
        for (int l = s; l < nl; ++l) {
            const Level& L = levels[std::size_t(l)];
            kernels::AmgTailLevel<VT>& T = g.lv[l - s];
            T.n = L.n;
            if (L.own) T.a = csr(L.own->matrix());
            if (l < nl - 1) {
                T.r = csr(L.r);
                T.p = csr(L.p);
            }
            T.dinv = L.dinv.data();
            T.res = L.res.data();
            T.d = L.d.data();
            T.b = L.b.data();
            T.x = L.x.data();
            T.b2 = L.b2.data();
            T.e2 = L.e2.data();
            const bool coarsest = l == nl - 1;
            if (coarsest && dense_coarse) continue;
            const int steps = coarsest ? coarse_steps : std::max(opts.pre_sweeps, opts.post_sweeps);
            for (int k = 0; k < steps; ++k) {
                T.step_a[k] = VT(L.step_a[std::size_t(k)]);
                T.step_b[k] = VT(L.step_b[std::size_t(k)]);
            }
        }
        tail_start = s;
    }

    // ---- the cycle ------------------------------------------------------------------------

    void residual(const Level& L, const VT* b, const VT* x, VT* r) const
    {
        ops->copy(L.n, b, r);
        L.a->apply(VT(-1), x, VT(1), r);
    }

    // `sweeps` smoothing steps on A x = b; zero: x is taken as 0 on entry (not read)
    void smooth(const Level& L, const VT* b, VT* x, int sweeps, bool zero) const
    {
        const index_t n = L.n;
        if (sweeps <= 0) {
            if (zero) ops->fill(n, VT(0), x);
            return;
        }
        // zero: the first step writes x = d (no fill, x not read)
        switch (opts.smoother) {
            case AmgSmoother::automatic:  // resolved by the constructor: never here
            case AmgSmoother::chebyshev: {
                const std::vector<double>&ca = L.step_a, &cb = L.step_b;  // numeric() made them
                const VT* r = b;
                if (!zero) {
                    residual(L, b, x, L.res.data());
                    r = L.res.data();
                }
                on_exec([&](const auto& e) {
                    kernels::smooth_step(e, n, VT(0), VT(cb[0]), L.dinv.data(), r, L.d.data(), x,
                                         zero);
                });
                for (int k = 1; k < sweeps; ++k) {
                    if (r == b) {
                        residual(L, b, x, L.res.data());
                        r = L.res.data();
                    } else {
                        L.a->apply(VT(-1), L.d.data(), VT(1), L.res.data());  // r −= A d
                    }
                    on_exec([&](const auto& e) {
                        kernels::smooth_step(e, n, VT(ca[std::size_t(k)]), VT(cb[std::size_t(k)]),
                                             L.dinv.data(), L.res.data(), L.d.data(), x);
                    });
                }
                return;
            }
            case AmgSmoother::jacobi:
            case AmgSmoother::l1jacobi: {
                const VT w = opts.smoother == AmgSmoother::jacobi ? VT(opts.jacobi_weight) : VT(1);
                for (int k = 0; k < sweeps; ++k) {
                    const VT* r = b;
                    if (!(zero && k == 0)) {
                        residual(L, b, x, L.res.data());
                        r = L.res.data();
                    }
                    on_exec([&](const auto& e) {
                        kernels::smooth_step(e, n, VT(0), w, L.dinv.data(), r, L.d.data(), x,
                                             zero && k == 0);
                    });
                }
                return;
            }
            case AmgSmoother::ilu0mc:
                ilu_sweeps(L, b, x, sweeps, zero);
                return;
        }
    }

    // x += M⁻¹ (b − A x), `sweeps` times, M = the level's ILU(0) (x = 0 first when `zero`)
    void ilu_sweeps(const Level& L, const VT* b, VT* x, int sweeps, bool zero) const
    {
        if (zero) ops->fill(L.n, VT(0), x);
        for (int k = 0; k < sweeps; ++k) {
            const VT* r = b;
            if (!(zero && k == 0)) {
                residual(L, b, x, L.res.data());
                r = L.res.data();
            }
            L.ilu->apply(r, L.d.data());
            ops->axpby(L.n, VT(1), L.d.data(), VT(1), x);
        }
    }

    // x ≈ A_l⁻¹ b from x = 0
    void cycle(int l, const VT* b, VT* x) const
    {
        if (l == tail_start) {  // this level and every coarser one in one launch
            on_exec([&](const auto& e) { kernels::amg_tail(e, tail, b, x); });
            return;
        }
        const Level& L = levels[l];
        const int nl = int(levels.size());
        if (l == nl - 1) {
            if (dense_coarse) {
                on_exec(
                    [&](const auto& e) { kernels::dense_apply(e, L.n, coarse_inv.data(), b, x); });
            } else if (coarse_ilu) {
                ilu_sweeps(L, b, x, std::max(1, opts.pre_sweeps + opts.post_sweeps), true);
            } else {
                smooth(L, b, x, std::max(1, opts.pre_sweeps + opts.post_sweeps), true);
            }
            return;
        }
        const Level& C = levels[l + 1];
        smooth(L, b, x, opts.pre_sweeps, true);
        residual(L, b, x, L.res.data());
        csr_apply(*exec, L.r, VT(1), L.res.data(), VT(0), C.b.data());
        cycle(l + 1, C.b.data(), C.x.data());
        if (opts.cycle == AmgCycle::w && l + 1 < nl - 1) {
            // a second visit for the remaining coarse residual
            residual(C, C.b.data(), C.x.data(), C.b2.data());
            cycle(l + 1, C.b2.data(), C.e2.data());
            ops->axpby(C.n, VT(1), C.e2.data(), VT(1), C.x.data());
        }
        csr_apply(*exec, L.p, VT(1), C.x.data(), VT(1), x);
        smooth(L, b, x, opts.post_sweeps, false);
    }
};

template <class VT>
AmgPreconditioner<VT>::AmgPreconditioner(const Csr<double>& a_in, index_t nc,
                                         std::shared_ptr<const Executor> exec,
                                         const AmgOptions& opts,
                                         std::shared_ptr<const Operator<VT>> fine,
                                         const Csr<double>* a_on_exec)
    : Preconditioner<VT>(a_in.rows, nc, exec), impl_(std::make_unique<Impl>())
{
    const auto t_start = clock_type::now();
    // A in the executor's memory stays there when the hierarchy is built there and nothing
    // needs it on the host: the pattern's fingerprint is taken where it is, and the symmetry
    // check (only the λ estimate's Lanczos steps ask it) is not needed with Gershgorin's bound
    const bool stays = !a_in.exec()->is_cpu() && same_memory(*exec, *a_in.exec()) &&
                       opts.power_iterations <= 0 && setup_on_device(opts, nc, *exec);
    Csr<double> keep;
    const Csr<double>& a = a_in.exec()->is_cpu() || stays ? a_in : (keep = a_in.to(cpu_executor()));
    (void)a_on_exec;  // used by the device setup (CUDA builds)
    HEPTANE_ENSURE(nc >= 1 && a.rows % nc == 0, InputError,
                   "AMG: block size " << nc << " does not divide the " << a.rows << " rows");
    HEPTANE_ENSURE(opts.pre_sweeps >= 0 && opts.post_sweeps >= 0, InputError,
                   "AMG: sweeps must be >= 0");
    HEPTANE_ENSURE(
        (opts.smoother != AmgSmoother::chebyshev && opts.smoother != AmgSmoother::automatic) ||
            opts.chebyshev_ratio > 1,
        InputError, "AMG: the Chebyshev ratio (" << opts.chebyshev_ratio << ") must be > 1");
    if (fine) {
        HEPTANE_ENSURE(fine->rows() == a.rows && fine->cols() == a.cols, DimensionMismatch,
                       "AMG: the fine operator is " << fine->rows() << " x " << fine->cols()
                                                    << ", A " << a.rows << " x " << a.cols);
    }
    // A's numerical symmetry, checked on the host once and only when something asks: the
    // automatic smoother (Nc > 1), the Lanczos estimate, a stalled coarsest level
    int symmetry = -1;
    auto symmetric_a = [&] {
        if (symmetry < 0)
            symmetry = (a.exec()->is_cpu() ? numerically_symmetric(a)
                                           : numerically_symmetric(a.to(cpu_executor())))
                           ? 1
                           : 0;
        return symmetry == 1;
    };
    Impl& m = *impl_;
    m.exec = exec;
    std::string aggregation_note;
    m.opts = resolve_aggregation(opts, a, nc, aggregation_note);
    if (m.opts.smoother == AmgSmoother::automatic)
        m.opts.smoother = nc > 1 && !symmetric_a() ? AmgSmoother::ilu0mc : AmgSmoother::chebyshev;
    m.nc = nc;
    m.ops = std::make_unique<VectorOps<VT>>(exec, 0);
    check_options(opts);
    int nl = 0;
    if (setup_on_device(opts, nc, *exec)) {
#ifdef HEPTANE_HAVE_CUDA
        HEPTANE_ENSURE(a.rows == a.cols, InputError,
                       "AMG: the matrix is " << a.rows << " x " << a.cols << ", not square");
        const bool reuse = a_on_exec && a_on_exec->exec() == exec && a_on_exec->rows == a.rows &&
                           a_on_exec->nnz() == a.nnz();
        m.dev = std::make_unique<amg::DeviceHierarchy>(reuse ? *a_on_exec : a_in, m.opts, exec);
        m.info.aggregation = aggregation_text(m.dev->grids(), aggregation_note);
        m.dense_coarse = m.dev->dense_coarse();
        nl = m.dev->levels();
        std::copy(m.dev->phase_ms(), m.dev->phase_ms() + 4, m.info.phase_ms);
        m.info.setup_on = "device";
#endif
    } else {
        m.host = build_host(a, nc, m.opts);
        m.info.aggregation = aggregation_text(m.host.grids, aggregation_note);
        m.dense_coarse = m.host.dense_coarse;
        nl = int(m.host.a.size());
        std::copy(m.host.ms, m.host.ms + 4, m.info.phase_ms);
        m.info.setup_on = "host";
    }
    m.info.hierarchy_ms = ms_since(t_start);
    // the fingerprint where A is (the caller's copy on the executor when there is one)
    const bool on_exec_copy = a_on_exec && same_memory(*exec, *a_on_exec->exec()) &&
                              a_on_exec->rows == a.rows && a_on_exec->nnz() == a.nnz();
    m.pattern = pattern_fingerprint(on_exec_copy ? *a_on_exec : a);
    // a stalled coarsest level of a non-symmetric A gets ILU(0) sweeps (point smoothing of a
    // coupled block whose couplings are all weak does not converge); a symmetric one keeps the
    // smoother, which keeps the cycle symmetric for CG
    m.symmetric = opts.power_iterations > 0 && symmetric_a();
    m.coarse_ilu = !m.dense_coarse && !symmetric_a();

    const auto t_dev = clock_type::now();
    // a level's fp64 matrix in the solver's precision on the executor
    auto placed = [&](const Csr<double>& x) {
#ifdef HEPTANE_HAVE_CUDA
        if (!x.exec()->is_cpu()) return amg::device_copy<VT>(x, exec);
#endif
        return place_csr<VT>(x, exec);
    };
    m.levels.resize(static_cast<std::size_t>(nl));
    for (int l = 0; l < nl; ++l) {
        auto& L = m.levels[std::size_t(l)];
        const Csr<double>& al = m.level_matrix(l, a);
        L.n = al.rows;
        if (l == 0 && fine) {
            L.a = fine;
            m.user_fine = true;
        } else if (!(l == nl - 1 && m.dense_coarse)) {
            auto own = std::make_shared<CsrLevel<VT>>(placed(al), exec);
            L.own = own.get();
            L.a = std::move(own);
        }
        if (l < nl - 1) {
#ifdef HEPTANE_HAVE_CUDA
            if (m.dev) {
                L.p = placed(m.dev->p(l));
                L.r = placed(m.dev->r(l));
            }
#endif
            if (!L.p.rows) {
                L.p = placed(m.host.p[std::size_t(l)]);
                L.r = placed(m.host.r[std::size_t(l)]);
            }
        }
        const std::size_t n = std::size_t(L.n);
        L.res = Array<VT>(exec, n);
        L.d = Array<VT>(exec, n);
        if (l > 0) {
            L.x = Array<VT>(exec, n);
            L.b = Array<VT>(exec, n);
            if (opts.cycle == AmgCycle::w) {
                L.b2 = Array<VT>(exec, n);
                L.e2 = Array<VT>(exec, n);
            }
        }
        m.info.levels.push_back({al.rows, al.nnz(), 0.0});
    }
    m.info.device_ms = ms_since(t_dev);
    double nnz = 0, rows = 0;
    for (const auto& li : m.info.levels) {
        nnz += double(li.nnz);
        rows += double(li.rows);
    }
    m.info.operator_complexity = a.nnz() ? nnz / double(a.nnz()) : 1.0;
    m.info.grid_complexity = a.rows ? rows / double(a.rows) : 1.0;
    m.info.coarse_solve = coarse_solve_name(m.dense_coarse, m.coarse_ilu);
    m.numeric(a);
    this->setup_ms_ = ms_since(t_start);
}

template <class VT>
AmgPreconditioner<VT>::~AmgPreconditioner() = default;

template <class VT>
void AmgPreconditioner<VT>::update_values(const Csr<double>& a_in)
{
    const auto t_start = clock_type::now();
    Impl& m = *impl_;
    // A on the device stays there where the hierarchy lives there (its fingerprint is taken
    // there; the smoother data come from the device levels)
    bool stays = false;
#ifdef HEPTANE_HAVE_CUDA
    stays = m.dev && !a_in.exec()->is_cpu() && same_memory(*a_in.exec(), *m.exec);
#endif
    Csr<double> keep;
    const Csr<double>& a = a_in.exec()->is_cpu() || stays ? a_in : (keep = a_in.to(cpu_executor()));
    HEPTANE_ENSURE(a.rows == this->n_ && a.cols == this->n_ && pattern_fingerprint(a) == m.pattern,
                   InputError,
                   "AMG update_values: the matrix does not have the pattern of the one the "
                   "hierarchy was built from");
    refresh(a, nullptr, t_start);
}

template <class VT>
bool AmgPreconditioner<VT>::update_values_device(const double* values, offset_t nnz)
{
#ifdef HEPTANE_HAVE_CUDA
    Impl& m = *impl_;
    if (!m.dev) return false;
    const auto t_start = clock_type::now();
    HEPTANE_ENSURE(nnz == m.dev->a(0).nnz(), InputError,
                   "AMG update_values_device: " << nnz << " values for a matrix of "
                                                << m.dev->a(0).nnz() << " entries");
    refresh(m.dev->a(0), values, t_start);
    return true;
#else
    (void)values;
    (void)nnz;
    return false;
#endif
}

template <class VT>
void AmgPreconditioner<VT>::refresh(const Csr<double>& a, const double* device_values,
                                    clock_type::time_point t_start)
{
    Impl& m = *impl_;
    const int nl = int(m.levels.size());
    const double first_hierarchy_ms = m.info.hierarchy_ms, first_device_ms = m.info.device_ms,
                 first_lambda_ms = m.info.lambda_ms;
    m.info.device_ms = 0;
    // the Galerkin products with the kept P and R into the kept coarse patterns, where the
    // hierarchy lives
    const auto t_hier = clock_type::now();
#ifdef HEPTANE_HAVE_CUDA
    if (m.dev) {
        if (device_values)
            m.dev->refresh_values(device_values, a.nnz(), *m.exec);
        else
            m.dev->refresh(a);
    }
#else
    (void)device_values;
#endif
    if (m.info.setup_on == "host")
        for (int l = 1; l < nl; ++l) {
            const std::size_t f = std::size_t(l - 1);
            const Csr<double>& prev = l == 1 ? a : m.host.a[f];
            if (m.host.box_direct[f])
                amg::box_galerkin_numeric(prev, m.host.box_maps[f], m.host.a[std::size_t(l)]);
            else
                amg::galerkin_numeric(m.host.r[f], prev, m.host.p[f], m.host.a[std::size_t(l)]);
        }
    m.info.hierarchy_ms = ms_since(t_hier);
    const auto t_dev = clock_type::now();
    for (int l = 0; l < nl; ++l) {
        auto& L = m.levels[std::size_t(l)];
        if (!L.own) continue;
        const Csr<double>& al = m.level_matrix(l, a);
        Csr<VT>& dst = L.own->matrix();
#ifdef HEPTANE_HAVE_CUDA
        if (!al.exec()->is_cpu()) {
            amg::device_copy_values<VT>(al, dst, m.exec);
            continue;
        }
#endif
        std::vector<VT> t(al.values.host().begin(), al.values.host().end());
        copy_bytes(*cpu_executor(), t.data(), *m.exec, dst.values.data(), t.size() * sizeof(VT));
    }
    m.info.device_ms = ms_since(t_dev);
    m.numeric(a);
    m.info.refresh_hierarchy_ms = m.info.hierarchy_ms;
    m.info.refresh_device_ms = m.info.device_ms;
    m.info.hierarchy_ms = first_hierarchy_ms;
    m.info.device_ms = first_device_ms;
    m.info.lambda_ms = first_lambda_ms;
    ++m.info.refreshes;
    this->setup_ms_ = ms_since(t_start);
}

template <class VT>
bool AmgPreconditioner<VT>::graph_safe() const
{
    const Impl& m = *impl_;
    if (!m.exec->is_cuda()) return false;
    for (const auto& L : m.levels) {
        if (L.a && !L.a->graph_safe()) return false;
        if (L.ilu && !L.ilu->graph_safe()) return false;
    }
    return true;
}

template <class VT>
const AmgInfo& AmgPreconditioner<VT>::info() const noexcept
{
    return impl_->info;
}

template <class VT>
const AmgOptions& AmgPreconditioner<VT>::options() const noexcept
{
    return impl_->opts;
}

template <class VT>
void AmgPreconditioner<VT>::solve(const VT* r, VT* z) const
{
    impl_->cycle(0, r, z);
}

template <class VT>
bool AmgPreconditioner<VT>::symmetric_apply() const noexcept
{
    return impl_->opts.smoother != AmgSmoother::ilu0mc && !impl_->coarse_ilu &&
           impl_->opts.pre_sweeps == impl_->opts.post_sweeps;
}

template <class VT>
std::string AmgPreconditioner<VT>::details() const
{
    const Impl& m = *impl_;
    std::ostringstream os;
    os << "(" << (m.opts.prolongation_weight > 0 ? "smoothed" : "plain") << " aggregation, "
       << m.levels.size() << " levels, rows";
    for (std::size_t l = 0; l < m.info.levels.size(); ++l)
        os << (l ? "/" : " ") << m.info.levels[l].rows;
    char c[64];
    std::snprintf(c, sizeof c, ", operator complexity %.2f", m.info.operator_complexity);
    os << c << ", " << to_string(m.opts.smoother) << "(" << m.opts.pre_sweeps << ","
       << m.opts.post_sweeps << "), " << (m.opts.cycle == AmgCycle::v ? "V" : "W")
       << "-cycle, theta " << m.opts.strength_threshold << ", coarsest " << m.info.coarse_solve;
    if (m.info.aggregation != "mis") os << ", aggregates " << m.info.aggregation;
    if (m.tail_start >= 0)
        os << ", levels " << m.tail_start << "-" << m.levels.size() - 1 << " (at most "
           << m.opts.tail_rows << " rows) in one launch";
    if (m.opts.singular && m.dense_coarse && !m.levels.empty())
        os << " (null space declared: a generalized inverse, rank " << m.coarse_rank << " of "
           << m.info.levels.back().rows << ")";
    os << (m.user_fine ? ", finest level through the solver's operator" : "");
    char t[240];
    const double* ph = m.info.phase_ms;
    std::snprintf(t, sizeof t,
                  "; setup on the %s: hierarchy %.1f ms (strength %.1f, aggregation %.1f, P %.1f, "
                  "Galerkin %.1f), smoother data and levels %.1f ms (lambda estimates %.1f)",
                  m.info.setup_on.c_str(), m.info.hierarchy_ms, ph[0], ph[1], ph[2], ph[3],
                  m.info.device_ms, m.info.lambda_ms);
    os << t;
    if (m.info.refreshes > 0) {
        std::snprintf(t, sizeof t,
                      "; last of %d values refreshes: Galerkin %.1f ms, smoother data and levels "
                      "%.1f ms",
                      m.info.refreshes, m.info.refresh_hierarchy_ms, m.info.refresh_device_ms);
        os << t;
    }
    os << ")";
    return os.str();
}

AmgInfo amg_hierarchy(const Csr<double>& a, index_t nc, const AmgOptions& opts)
{
    HEPTANE_ENSURE(nc >= 1 && a.rows % nc == 0, InputError,
                   "AMG: block size " << nc << " does not divide the " << a.rows << " rows");
    const auto t0 = clock_type::now();
    std::string note;
    const HostHierarchy h = build_host(a, nc, resolve_aggregation(opts, a, nc, note));
    AmgInfo info;
    info.aggregation = aggregation_text(h.grids, note);
    info.hierarchy_ms = ms_since(t0);
    std::copy(h.ms, h.ms + 4, info.phase_ms);
    double nnz = 0, rows = 0;
    for (std::size_t l = 0; l < h.a.size(); ++l) {
        const Csr<double>& al = l == 0 ? a : h.a[l];
        info.levels.push_back({al.rows, al.nnz(), 0.0});
        nnz += double(al.nnz());
        rows += double(al.rows);
    }
    info.operator_complexity = a.nnz() ? nnz / double(a.nnz()) : 1.0;
    info.grid_complexity = a.rows ? rows / double(a.rows) : 1.0;
    info.coarse_solve =
        coarse_solve_name(h.dense_coarse, !h.dense_coarse && !numerically_symmetric(a));
    return info;
}

template class AmgPreconditioner<double>;
template class AmgPreconditioner<float>;

}  // namespace heptane
