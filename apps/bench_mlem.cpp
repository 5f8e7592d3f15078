// heptane bench mlem: MLEM (and OSEM) per iteration on a PET-like system, the forward
// projection A f and the back projection Aᵀ c on their own, each next to its floor, for every
// format and Aᵀ strategy asked for (BENCHMARKS.md).
//
// Check first: every configuration runs --check-iters MLEM iterations and is compared with
// the CPU reference (CSR, fp64, stored transpose: deterministic kernels); a mismatch marks the
// row FAILED and it is not timed.
//
// Floors (bytes / the copy bandwidth measured in the same run, read + written):
//   forward  = spmv_traffic(A): the matrix as stored + f read (n) + q written (m)
//   back     = native/scatter: the same matrix bytes + c read (m) + b written (n);
//              stored: spmv_traffic of the CSR of Aᵀ
//   MLEM iteration = forward + back + (5m + 6n)·sizeof(VT)   (solver/mlem/mlem.cpp)
// Times: CUDA events around each product on a GPU, the host clock on the CPU; median of
// --reps after 2 warm-up runs. The iteration time is Mlem::solve's own clock over --iters
// iterations (log-likelihood off: for MLEM it is fused into the correlation anyway).
#include <algorithm>
#include <cstdio>

#include "apps/bench.hpp"
#include "apps/bench_projection.hpp"  // the harness both benches share (includes apps/common.hpp)
#include "solver/mlem/mlem.hpp"

namespace heptane::cli {

namespace {

const char* usage =
    "usage: heptane bench mlem [A.mtx g.mtx] [--detectors D] [--image N] [--rings R]\n"
    "                          [--slices Z] [--formats csr,ell,hyb,coo]\n"
    "                          [--transpose native,stored] [--precision double|single|mixed]\n"
    "                          [--device auto|cpu|gpu] [--iters N] [--subsets S]\n"
    "                          [--check-iters K] [--reps N] [--csv FILE] [--json FILE]\n\n"
    "MLEM time per iteration, and the forward (A f) and back (A^T c) projections alone, with\n"
    "their effective bandwidth next to the floor (the bytes they must move over the copy\n"
    "bandwidth measured in this run), for each format and A^T strategy. Without files, a\n"
    "PET-like system from `heptane pet` options (default: 2-D, 256 detectors, 128 x 128).\n"
    "Every configuration is first checked against the CPU reference (--check-iters MLEM\n"
    "iterations, default 5); a mismatch is reported FAILED and not timed.\n"
    "  --transpose   native (the format's own A^T: atomic scatter for CSR, COO, ELL, HYB;\n"
    "                gather for DIA, BDIA-GH), scatter (the same), stored (CSR of A^T)\n"
    "  --iters       iterations per timed MLEM run (default 20)\n"
    "  --subsets S   also time OSEM with S subsets (default 0: no)\n"
    "  --reps        timed repetitions, the median is reported (default 10)\n";

using Row = ProjectionRow;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Setup {
    const Coo<double>* a;
    const std::vector<double>* g;
    std::shared_ptr<const Executor> exec;
    int iters, check_iters, reps, subsets;
    std::vector<double> f_ref;
};

template <class MT, class VT>
void measure(const Setup& su, Format fmt, const FormatOptions& fo, double tol, Row& r)
{
    const Coo<double>& a = *su.a;
    const auto& exec = su.exec;
    std::shared_ptr<const Operator<VT>> op = make_matrix_operator<MT, VT>(a, fmt, exec, fo);
    Array<VT> g = Array<VT>(std::vector<VT>(su.g->begin(), su.g->end())).to(exec);
    Array<VT> f(exec, std::size_t(a.cols));
    // check against the CPU reference
    MlemOptions mo;
    mo.iterations = su.check_iters;
    mo.compute_loglik = false;
    Mlem<VT> em(mo);
    em.set_operator(op);
    em.solve(g, f);
    const auto fh = f.to_vector();
    if (!r.check(fh, su.f_ref, tol)) return;
    // the products alone, on the checked image and a correlation-like vector
    Array<VT> q(exec, std::size_t(a.rows)), b(exec, std::size_t(a.cols));
    const TimeStats fs = time_on(
        *exec, [&] { op->apply(f.data(), q.data()); }, su.reps);
    const TimeStats bs = time_on(
        *exec, [&] { op->apply_transpose(VT(1), g.data(), VT(0), b.data()); }, su.reps);
    r.set_products(fs, bs);
    // whole MLEM iterations
    std::vector<double> per;
    em.options().iterations = su.iters;
    em.solve(g, f);  // warm-up
    for (int k = 0; k < std::max(3, su.reps / 2); ++k)
        per.push_back(em.solve(g, f).timings.per_iteration_ms / 1e3);
    r.iter_s = median(per);
    r.iter_min = *std::min_element(per.begin(), per.end());
    if (su.subsets > 1) {
        Mlem<VT> os(mo);
        os.options().iterations = su.iters;
        os.set_subsets(make_row_block_operators<MT, VT>(a, su.subsets, fmt, exec, fo));
        os.solve(g, f);
        std::vector<double> po;
        for (int k = 0; k < std::max(3, su.reps / 2); ++k)
            po.push_back(os.solve(g, f).timings.per_iteration_ms / 1e3);
        r.osem_iter_s = median(po);
    }
}

}  // namespace

int bench_mlem(int argc, char** argv)
{
    Args args(argc, argv, {});
    if (args.help()) {
        std::printf("%s", usage);
        return 0;
    }
    const ProjectionBench pb = parse_projection_bench(args, 20, 5, true, "g");
    const std::string& prec = pb.prec;
    const Precision p = precision_option(prec);
    const double vs = p == Precision::single ? 4 : 8;  // vector bytes
    const double tol = p == Precision::double_ ? 1e-10 : 1e-4;

    // the system
    ProjectionSystem sys = load_projection_system(args.positionals(), pb.spec, "g", "");
    const Coo<double>& a = sys.a;
    const std::vector<double>& g = sys.rhs;
    const std::string& source = sys.source;
    Setup su{&a, &g, pick_executor(pb.device), pb.iters, pb.check_iters, pb.reps, pb.subsets, {}};
    const auto& exec = *su.exec;
    const std::string dev = device_label(exec);

    // the CPU reference
    {
        FormatOptions fo;
        fo.transpose = TransposeMode::stored;
        MlemOptions mo;
        mo.iterations = su.check_iters;
        mo.compute_loglik = false;
        Mlem<double> em(mo);
        em.set_operator(std::shared_ptr<const Operator<double>>(
            make_matrix_operator<double, double>(a, Format::csr, cpu_executor(), fo)));
        Array<double> gd(g), fd(cpu_executor(), std::size_t(a.cols));
        em.solve(gd, fd);
        su.f_ref = fd.to_vector();
    }
    const double copy_gbs =
        print_projection_system("MLEM", exec, prec, a, source, su.reps, su.iters);
    const Coo<double> at = transposed(a);
    const double m = a.rows, n = a.cols;
    std::printf(
        "| format | A^T | check | fwd us | fwd GB/s | fwd %%floor | back us | back GB/s | "
        "back %%floor | iter ms | floor ms | %%floor | min fwd us / back us / iter ms |%s\n",
        su.subsets > 1 ? " OSEM iter ms |" : "");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n",
                su.subsets > 1 ? "---|" : "");
    std::fflush(stdout);
    std::vector<Row> rows;
    auto measure_row = [&](Row& r, Format fmt, const FormatOptions& fo) {
        const SpmvTraffic fwd = spmv_traffic(a, fmt, fo, p);
        r.fwd_bytes = fwd.total();
        r.back_bytes = fo.transpose == TransposeMode::stored && fmt != Format::bdia
                           ? spmv_traffic(at, Format::csr, fo, p).total()
                           : fwd.total();
        r.iter_bytes = r.fwd_bytes + r.back_bytes + (5 * m + 6 * n) * vs;
        with_precision(
            p, [&](auto mt, auto vt) { measure<decltype(mt), decltype(vt)>(su, fmt, fo, tol, r); });
    };
    auto print_row = [&](const Row& r) {
        auto pct = [&](double bytes, double s) { return 100.0 * bytes / (copy_gbs * 1e9) / s; };
        if (r.status == "ok") {
            std::printf(
                "| %s | %s | %.1e | %.1f | %.1f | %.0f%% | %.1f | %.1f | %.0f%% | %.4f | "
                "%.4f | %.0f%% | %.1f / %.1f / %.4f |",
                r.format.c_str(), r.transpose.c_str(), r.check_err, r.fwd_s * 1e6,
                r.fwd_bytes / r.fwd_s / 1e9, pct(r.fwd_bytes, r.fwd_s), r.back_s * 1e6,
                r.back_bytes / r.back_s / 1e9, pct(r.back_bytes, r.back_s), r.iter_s * 1e3,
                r.iter_bytes / (copy_gbs * 1e9) * 1e3, pct(r.iter_bytes, r.iter_s), r.fwd_min * 1e6,
                r.back_min * 1e6, r.iter_min * 1e3);
            if (su.subsets > 1) std::printf(" %.4f |", r.osem_iter_s * 1e3);
            std::printf("\n");
        } else {
            std::printf("| %s | %s | %s (%.1e) | | | | | | | | | | |\n", r.format.c_str(),
                        r.transpose.c_str(), r.status.c_str(), r.check_err);
        }
    };
    const int failed = for_each_projection_case(pb, rows, measure_row, print_row);
    std::printf(
        "\nfloor bytes: forward = matrix + f + q; back = matrix (of A^T when stored) + c + "
        "b; iteration = both + (5m + 6n) x %g B. %%floor = floor time / measured time.\n",
        vs);
    write_projection_results(pb, source, dev, exec.name(), a, copy_gbs, rows, true);
    return failed ? 1 : 0;
}

}  // namespace heptane::cli
