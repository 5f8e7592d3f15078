// heptane bench lsqr: LSQR time per iteration next to its floor, for every format and Aᵀ
// strategy asked for, on a PET-like system (b = the counts) or on given files.
//
// Check first, against the CPU reference (CSR, fp64, stored transpose); a mismatch marks the
// row FAILED and it is not timed. In fp64: --check-iters iterations (tolerances 0, so exactly
// that many), x itself compared. In single and mixed precision x after 10 iterations is no
// usable check: on these ill-posed systems LSQR amplifies rounding in the ill-determined
// directions of x from one iteration to the next (fp32 against fp64 on the 256-detector
// system, the fitted data ||A (x - x_ref)|| / ||b|| differ by 7e-8, 3e-7, 1e-5 and 3e-2
// after 1, 3, 5 and 10 iterations, whatever the format; two fp32 runs that only sum in another
// order drift apart the same way). So there: min(--check-iters, 3) iterations and the fitted
// data's difference ||A (x - x_ref)|| / ||b|| (in fp64 with the fp64 matrix), where a wrong
// product is off by far more than rounding.
//
// Floor of one iteration (solver/lsqr/lsqr.cpp): the matrix twice (A, and Aᵀ: the CSR of Aᵀ
// when stored) + (4m + 9n)·sizeof(VT) of vector traffic, over the copy bandwidth measured in
// this run. The products alone are timed too (A v with y read, Aᵀ u with y read: their floors
// are the matrix + x + 2 y). Times: CUDA events on a GPU, the host clock on the CPU, median of
// --reps after 2 warm-ups; the iteration time is Lsqr::solve's own clock over --iters
// iterations (it includes LSQR's two small host reads per iteration).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "apps/bench.hpp"
#include "apps/bench_projection.hpp"  // the harness both benches share (includes apps/common.hpp)
#include "solver/lsqr/lsqr.hpp"

namespace heptane::cli {

namespace {

const char* usage =
    "usage: heptane bench lsqr [A.mtx b.mtx] [--detectors D] [--image N] [--rings R]\n"
    "                          [--slices Z] [--formats csr,ell,hyb,coo]\n"
    "                          [--transpose native,stored] [--precision double|single|mixed]\n"
    "                          [--device auto|cpu|gpu] [--iters N] [--check-iters K]\n"
    "                          [--reps N] [--csv FILE] [--json FILE]\n\n"
    "LSQR time per iteration next to its floor (2 matrix reads + (4m + 9n) vector values), and\n"
    "the two products alone, per format and A^T strategy. Without files, a PET-like system\n"
    "from `heptane pet` options (default: 2-D, 256 detectors, 128 x 128) with b = its counts.\n"
    "Every configuration is first checked against the CPU reference in fp64 (--check-iters\n"
    "iterations, default 10): x itself in double precision (max error / max |x| <= 1e-7); in\n"
    "single and mixed the fitted data after min(K, 3) iterations (||A (x - x_ref)|| / ||b||\n"
    "<= 1e-4: LSQR on ill-posed systems amplifies fp32 rounding from one iteration to the\n"
    "next); a mismatch is reported FAILED and not timed. The check column shows that error.\n"
    "  --iters   iterations per timed run (default 50)\n"
    "  --reps    timed repetitions, the median is reported (default 10)\n";

using Row = ProjectionRow;

struct Setup {
    const Coo<double>* a;
    const std::vector<double>* b;
    std::shared_ptr<const Executor> exec;
    int iters, check_iters, reps;
    std::vector<double> x_ref;        // fp64, check_iters iterations
    std::vector<double> x_ref_short;  // fp64, short_check_iters() iterations
    int short_check_iters() const { return std::min(check_iters, 3); }
};

/// ||A (x - x_ref)|| / ||b|| in fp64 on the host, A the fp64 COO matrix: how far apart the two
/// iterates' fitted data lie, relative to the data.
template <class VT>
double data_difference(const Coo<double>& a, const std::vector<double>& b, const std::vector<VT>& x,
                       const std::vector<double>& x_ref)
{
    std::vector<double> d(b.size(), 0.0);
    for (std::size_t k = 0; k < a.row.size(); ++k) {
        const std::size_t j = std::size_t(a.col[k]);
        d[std::size_t(a.row[k])] += a.val[k] * (double(x[j]) - x_ref[j]);
    }
    double s = 0, sb = 0;
    for (double v : d) s += v * v;
    for (double v : b) sb += v * v;
    return std::sqrt(s) / (sb > 0 ? std::sqrt(sb) : 1);
}

LsqrOptions fixed_iterations(int n)
{
    LsqrOptions o;  // tolerances 0: exactly n iterations (unless b or Aᵀb is 0)
    o.atol = o.btol = o.conlim = 0;
    o.iter_lim = n;
    o.record_history = false;
    return o;
}

template <class MT, class VT>
void measure(const Setup& su, Format fmt, const FormatOptions& fo, double tol, Row& r)
{
    const Coo<double>& a = *su.a;
    const auto& exec = su.exec;
    auto op = make_matrix_operator<MT, VT>(a, fmt, exec, fo);
    Array<VT> b = Array<VT>(std::vector<VT>(su.b->begin(), su.b->end())).to(exec);
    Array<VT> x(exec, std::size_t(a.cols));
    constexpr bool fp64 = std::is_same_v<MT, double> && std::is_same_v<VT, double>;
    Lsqr<VT> solver(fixed_iterations(fp64 ? su.check_iters : su.short_check_iters()));
    solver.set_operator(*op);
    solver.solve(b, x);
    const auto xh = x.to_vector();
    if constexpr (fp64) {
        if (!r.check(xh, su.x_ref, tol)) return;
    } else {
        const double err = data_difference(a, *su.b, xh, su.x_ref_short);
        if (!r.check_value(err, tol)) return;  // NaN compares false: FAILED
    }
    // the products as LSQR calls them: y read and written
    Array<VT> u = Array<VT>(b), v(exec, std::size_t(a.cols));
    op->apply_transpose(VT(1), b.data(), VT(0), v.data());
    const TimeStats fs = time_on(
        *exec, [&] { op->apply(VT(1), v.data(), VT(-0.5), u.data()); }, su.reps);
    const TimeStats bs = time_on(
        *exec, [&] { op->apply_transpose(VT(1), u.data(), VT(-0.5), v.data()); }, su.reps);
    r.set_products(fs, bs);
    solver.options() = fixed_iterations(su.iters);
    solver.solve(b, x);  // warm-up
    std::vector<double> per;
    for (int k = 0; k < std::max(3, su.reps / 2); ++k)
        per.push_back(solver.solve(b, x).timings.per_iteration_ms / 1e3);
    std::sort(per.begin(), per.end());
    r.iter_s = per[per.size() / 2];
    r.iter_min = per.front();
}

}  // namespace

int bench_lsqr(int argc, char** argv)
{
    Args args(argc, argv, {});
    if (args.help()) {
        std::printf("%s", usage);
        return 0;
    }
    const ProjectionBench pb = parse_projection_bench(args, 50, 10, false, "b");
    const std::string& prec = pb.prec;
    const Precision p = precision_option(prec);
    const double vs = p == Precision::single ? 4 : 8;
    // LSQR amplifies rounding (PET systems are ill-posed): different summation orders (an
    // atomic scatter against the reference's gather) already differ by up to ~1e-8 in x after
    // 10 iterations in fp64; a wrong kernel is off by far more. Single and mixed: the
    // fitted data's difference (see the top of this file).
    const double tol = p == Precision::double_ ? 1e-7 : 1e-4;

    ProjectionSystem sys = load_projection_system(args.positionals(), pb.spec, "b", ", b = counts");
    const Coo<double>& a = sys.a;
    const std::vector<double>& b = sys.rhs;
    const std::string& source = sys.source;
    Setup su{&a, &b, pick_executor(pb.device), pb.iters, pb.check_iters, pb.reps, {}};
    const auto& exec = *su.exec;
    const std::string dev = device_label(exec);
    {
        FormatOptions fo;
        fo.transpose = TransposeMode::stored;
        auto op = make_matrix_operator<double, double>(a, Format::csr, cpu_executor(), fo);
        Lsqr<double> s(fixed_iterations(su.check_iters));
        s.set_operator(*op);
        Array<double> bd(b), xd(cpu_executor(), std::size_t(a.cols));
        s.solve(bd, xd);
        su.x_ref = xd.to_vector();
        s.options() = fixed_iterations(su.short_check_iters());
        s.solve(bd, xd);
        su.x_ref_short = xd.to_vector();
    }
    const double copy_gbs =
        print_projection_system("LSQR", exec, prec, a, source, su.reps, su.iters);
    const Coo<double> at = transposed(a);
    const double m = a.rows, n = a.cols;
    std::printf(
        "| format | A^T | check | Av-cu us | %%floor | A^Tu-cv us | %%floor | iter ms | "
        "floor ms | %%floor | products share | min Av us / A^Tu us / iter ms |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
    std::vector<Row> rows;
    auto measure_row = [&](Row& r, Format fmt, const FormatOptions& fo) {
        const SpmvTraffic fwd = spmv_traffic(a, fmt, fo, p);
        const double back_matrix = fo.transpose == TransposeMode::stored && fmt != Format::bdia
                                       ? spmv_traffic(at, Format::csr, fo, p).matrix_bytes
                                       : fwd.matrix_bytes;
        r.fwd_bytes = fwd.matrix_bytes + (n + 2 * m) * vs;
        r.back_bytes = back_matrix + (m + 2 * n) * vs;
        r.iter_bytes = fwd.matrix_bytes + back_matrix + (4 * m + 9 * n) * vs;
        with_precision(
            p, [&](auto mt, auto vt) { measure<decltype(mt), decltype(vt)>(su, fmt, fo, tol, r); });
    };
    auto print_row = [&](const Row& r) {
        auto pct = [&](double bytes, double s) { return 100.0 * bytes / (copy_gbs * 1e9) / s; };
        if (r.status == "ok")
            std::printf(
                "| %s | %s | %.1e | %.1f | %.0f%% | %.1f | %.0f%% | %.4f | %.4f | "
                "%.0f%% | %.0f%% | %.1f / %.1f / %.4f |\n",
                r.format.c_str(), r.transpose.c_str(), r.check_err, r.fwd_s * 1e6,
                pct(r.fwd_bytes, r.fwd_s), r.back_s * 1e6, pct(r.back_bytes, r.back_s),
                r.iter_s * 1e3, r.iter_bytes / (copy_gbs * 1e9) * 1e3, pct(r.iter_bytes, r.iter_s),
                100.0 * (r.fwd_s + r.back_s) / r.iter_s, r.fwd_min * 1e6, r.back_min * 1e6,
                r.iter_min * 1e3);
        else
            std::printf("| %s | %s | %s (%.1e) | | | | | | | | | |\n", r.format.c_str(),
                        r.transpose.c_str(), r.status.c_str(), r.check_err);
    };
    const int failed = for_each_projection_case(pb, rows, measure_row, print_row);
    std::printf(
        "\nfloor bytes: iteration = matrix of A + matrix of A^T (the stored CSR when stored)"
        " + (4m + 9n) x %g B; products: matrix + x + y read and written. %%floor = floor "
        "time / measured time; products share = (Av + A^Tu) / iteration.\n",
        vs);
    write_projection_results(pb, source, dev, exec.name(), a, copy_gbs, rows, false);
    return failed ? 1 : 0;
}

}  // namespace heptane::cli
