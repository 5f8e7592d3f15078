// heptane bench spmv --out-of-core and heptane bench mlem --out-of-core: products and MLEM with
// the matrix in host memory (formats/outofcore), on a PET-like system generated straight into
// the chunks (no COO, no file: systems larger than the device, and than a COO in host memory).
//
// Floor of one product (BENCHMARKS.md's model with the bus added): the streamed bytes over the
// pinned host-to-device bandwidth plus the resident bytes and the vectors over the device copy
// bandwidth, both measured in the same run:
//     floor = streamed / H2D + (resident + x + y) / copy
// (the copy is the floor; the products of resident chunks and the streamed chunks' kernels
// hide behind it). Every result is first checked against the CPU's product over the same
// chunks (outofcore_cpu.cpp's kernels); MLEM against MLEM with every chunk resident on the
// device (--reference resident) or on the CPU (--reference cpu).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/bench.hpp"
#include "apps/common.hpp"
#include "core/array.hpp"
#include "core/bandwidth.hpp"
#include "core/error.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/pet.hpp"
#include "solver/mlem/mlem.hpp"

namespace heptane::cli {

namespace {

const char* usage =
    "usage: heptane bench spmv --out-of-core [PET options] [--precision double,mixed]\n"
    "                          [--fractions 0,0.25,0.5,0.75,1] [--reps N]\n"
    "       heptane bench mlem --out-of-core [PET options] [--precision mixed] [--iters N]\n"
    "                          [--reference resident|cpu|none]\n"
    "       common: [--device-memory B] [--chunk-bytes B] [--buffers N] [--device gpu:N]\n"
    "               [--json FILE]\n\n"
    "The matrix of a PET-like system (heptane pet's options; default 3-D, 512 detectors x 16\n"
    "rings, 256 x 256 x 64 voxels: about 4.3e9 entries) generated straight into page-locked\n"
    "row chunks, then streamed to the GPU at every product. spmv: A x and A^T x for each\n"
    "precision and each resident fraction (the share of the chunks' bytes kept on the device,\n"
    "within --device-memory), each checked against the CPU's product over the same chunks,\n"
    "then timed (median of --reps, default 5) and set beside its floor: streamed bytes /\n"
    "pinned H2D bandwidth + (resident bytes + vectors) / device copy bandwidth, both measured\n"
    "here. mlem: --iters MLEM iterations (default 5) with the budget --device-memory, the\n"
    "image compared with MLEM over the same chunks all resident on the GPU (resident: needs\n"
    "the matrix to fit) or on the CPU (cpu: all host threads); then A f and A^T c timed\n"
    "against their floors.\n"
    "  PET options: --detectors D (512) --rings R (16) --image N (256) --slices Z (64)\n"
    "               --max-ring-diff K (all)\n"
    "  --precision   double (fp64 values and vectors), mixed (fp32 values, fp64 vectors),\n"
    "                single; spmv takes a list (default double,mixed), mlem one (mixed)\n"
    "  --fractions   resident fractions for spmv (default 0,0.25,0.5,0.75,1)\n"
    "  --chunk-bytes bytes per chunk (default 64M); --buffers stream buffers (default 3)\n";

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double rel_diff(const std::vector<double>& a, const std::vector<double>& b)
{
    double d = 0, m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double e = std::abs(a[i] - b[i]);
        d = (e > d || std::isnan(e)) ? e : d;
        m = std::max(m, std::abs(b[i]));
    }
    return d / (m > 0 ? m : 1);
}

template <class VT>
std::vector<double> to_double(const Array<VT>& a)
{
    const auto v = a.to_vector();
    return std::vector<double>(v.begin(), v.end());
}

template <class VT>
Array<VT> upload(const std::vector<double>& v, const std::shared_ptr<const Executor>& exec)
{
    return Array<VT>(std::vector<VT>(v.begin(), v.end())).to(exec);
}

struct Common {
    PetSpec spec;
    std::shared_ptr<const Executor> exec;
    OutOfCoreOptions opt;
    bool quiet = false;
    double h2d = 0, copy = 0;
};

template <class MT>
PetOocSystem<MT> generate(const Common& c)
{
    const double t0 = now_s();
    double last = t0;
    auto sys =
        make_pet_ooc_system<MT>(c.spec, c.opt.chunk_bytes, true, [&](index_t done, index_t rows) {
            const double t = now_s();
            if (!c.quiet && (t - last >= 5.0 || done == rows)) {
                std::fprintf(stderr, "  generating %s: %d of %d rows, %.1f s\n",
                             describe(c.spec).c_str(), done, rows, t - t0);
                last = t;
            }
        });
    if (!c.quiet)
        std::fprintf(stderr, "  %d x %d, %lld entries, %zu chunks, %.2f GB page-locked, %.1f s\n",
                     sys.a.rows(), sys.a.cols(), static_cast<long long>(sys.a.nnz()),
                     sys.a.chunks().size(), double(sys.a.bytes()) / 1e9, now_s() - t0);
    return sys;
}

/// Median seconds of `reps` products (host clock around apply + synchronize, after a warm-up).
template <class VT>
double time_product(const Operator<VT>& op, bool tr, const VT* x, VT* y, int reps)
{
    auto exec = op.executor();
    std::vector<double> t;
    for (int r = 0; r < reps + 1; ++r) {
        const double t0 = now_s();
        if (tr)
            op.apply_transpose(VT(1), x, VT(0), y);
        else
            op.apply(VT(1), x, VT(0), y);
        exec->synchronize();
        if (r > 0) t.push_back(now_s() - t0);
    }
    return median(t);
}

struct Timed {
    double seconds = 0, floor = 0;
};
Timed with_floor(double s, const OocLayout& L, double vec_bytes, const Common& c)
{
    Timed t;
    t.seconds = s;
    t.floor = double(L.streamed_bytes) / (c.h2d * 1e9) +
              (double(L.resident_bytes) + vec_bytes) / (c.copy * 1e9);
    return t;
}

template <class MT, class VT>
int spmv_precision(const Common& c, const std::string& prec, const std::vector<double>& fractions,
                   int reps, std::string& json)
{
    auto sys = generate<MT>(c);
    auto m = std::make_shared<const OocMatrix<MT>>(std::move(sys.a));
    const index_t rows = m->rows(), cols = m->cols();
    const double vec_bytes = double(sizeof(VT)) * (double(rows) + double(cols));
    // the reference: the CPU's products over the same chunks
    const double t_ref = now_s();
    OutOfCoreOperator<MT, VT> cpu(m, cpu_executor());
    const std::vector<VT> xh(sys.phantom.begin(), sys.phantom.end());
    const std::vector<VT> ch(sys.counts.begin(), sys.counts.end());
    std::vector<VT> yh(static_cast<std::size_t>(rows)), bh(static_cast<std::size_t>(cols));
    cpu.apply(xh.data(), yh.data());
    cpu.apply_transpose(VT(1), ch.data(), VT(0), bh.data());
    const std::vector<double> yref(yh.begin(), yh.end()), bref(bh.begin(), bh.end());
    if (!c.quiet) std::fprintf(stderr, "  CPU reference products: %.1f s\n", now_s() - t_ref);
    const double tol = std::is_same_v<VT, float> ? 1e-4 : 1e-12;

    Array<VT> x = upload<VT>(sys.phantom, c.exec), cc = upload<VT>(sys.counts, c.exec);
    Array<VT> y(c.exec, std::size_t(rows)), b(c.exec, std::size_t(cols));
    std::printf("\n%s, %s: %d x %d, %lld entries, %.3f GB in %zu chunks of <= %.1f MB\n",
                describe(c.spec).c_str(), prec.c_str(), rows, cols,
                static_cast<long long>(m->nnz()), double(m->bytes()) / 1e9, m->chunks().size(),
                double(m->max_chunk_bytes()) / 1e6);
    std::printf(
        "| resident | chunks resident | streamed GB | A x ms | floor ms | x floor | "
        "streamed GB/s (%% H2D) | A^T x ms | x floor | check |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    int failed = 0;
    for (double f : fractions) {
        OutOfCoreOptions o = c.opt;
        o.max_resident_fraction = f;
        std::unique_ptr<OutOfCoreOperator<MT, VT>> op;
        try {
            op = std::make_unique<OutOfCoreOperator<MT, VT>>(m, c.exec, o);
        } catch (const Error& e) {
            std::printf("| %.2f | - | - | - | - | - | - | - | - | %s |\n", f, e.what());
            ++failed;
            continue;
        }
        const OocLayout& L = op->layout();
        op->apply(x.data(), y.data());
        op->apply_transpose(VT(1), cc.data(), VT(0), b.data());
        const double ey = rel_diff(to_double(y), yref), eb = rel_diff(to_double(b), bref);
        const bool ok = ey <= tol && eb <= tol;
        failed += ok ? 0 : 1;
        const Timed fw =
            with_floor(time_product(*op, false, x.data(), y.data(), reps), L, vec_bytes, c);
        const Timed bw =
            with_floor(time_product(*op, true, cc.data(), b.data(), reps), L, vec_bytes, c);
        const double sgbs = double(L.streamed_bytes) / fw.seconds / 1e9;
        std::printf(
            "| %.2f | %d of %d | %.3f | %.2f | %.2f | %.3f | %.1f (%.1f %%) | %.2f | %.3f "
            "| %s (%.1e, %.1e) |\n",
            double(L.resident_bytes) / double(L.bytes), L.resident_chunks, L.chunks,
            double(L.streamed_bytes) / 1e9, fw.seconds * 1e3, fw.floor * 1e3, fw.seconds / fw.floor,
            sgbs, 100.0 * sgbs / c.h2d, bw.seconds * 1e3, bw.seconds / bw.floor,
            ok ? "ok" : "FAILED", ey, eb);
        std::fflush(stdout);
        char buf[640];
        std::snprintf(buf, sizeof buf,
                      "%s{\"precision\": \"%s\", \"fraction\": %.3f, \"resident_share\": %.4f, "
                      "\"chunks\": %d, \"resident_chunks\": %d, \"bytes\": %zu, "
                      "\"streamed_bytes\": %zu, \"resident_bytes\": %zu, \"ax_seconds\": %.6f, "
                      "\"ax_floor_seconds\": %.6f, \"atx_seconds\": %.6f, "
                      "\"atx_floor_seconds\": %.6f, \"check_ax\": %.3e, \"check_atx\": %.3e, "
                      "\"check_passed\": %s}",
                      json.empty() ? "" : ", ", prec.c_str(), f,
                      double(L.resident_bytes) / double(L.bytes), L.chunks, L.resident_chunks,
                      L.bytes, L.streamed_bytes, L.resident_bytes, fw.seconds, fw.floor, bw.seconds,
                      bw.floor, ey, eb, ok ? "true" : "false");
        json += buf;
    }
    return failed;
}

template <class MT, class VT>
int mlem_run(const Common& c, const std::string& prec, int iters, const std::string& reference,
             std::string& json)
{
    auto sys = generate<MT>(c);
    auto m = std::make_shared<const OocMatrix<MT>>(std::move(sys.a));
    const index_t rows = m->rows(), cols = m->cols();
    MlemOptions mo;
    mo.iterations = iters;
    const double t0 = now_s();
    if (!c.quiet)
        mo.progress = [t0](int k, int n) {
            std::fprintf(stderr, "  MLEM iteration %d of %d, %.1f s\n", k, n, now_s() - t0);
        };
    // out of core under the budget
    auto op = std::make_shared<const OutOfCoreOperator<MT, VT>>(m, c.exec, c.opt);
    const OocLayout L = op->layout();
    std::printf(
        "\n%s, %s: %d x %d, %lld entries, %.3f GB in %d chunks; budget %.2f GB: %d "
        "chunks (%.3f GB) resident, %.3f GB streamed per product\n",
        describe(c.spec).c_str(), prec.c_str(), rows, cols, static_cast<long long>(m->nnz()),
        double(L.bytes) / 1e9, L.chunks, double(L.budget) / 1e9, L.resident_chunks,
        double(L.resident_bytes) / 1e9, double(L.streamed_bytes) / 1e9);
    const Array<VT> g = upload<VT>(sys.counts, c.exec);
    Array<VT> f(c.exec, std::size_t(cols));
    MlemStatus st;
    {
        Mlem<VT> em(mo);
        em.set_operator(op);
        st = em.solve(g, f);
    }
    const std::vector<double> fo = to_double(f);
    std::printf("MLEM out of core: %d iterations, %.3f s per iteration, loglik %.10e -> %.10e\n",
                st.iterations, st.timings.per_iteration_ms / 1e3,
                st.loglik.empty() ? 0.0 : st.loglik.front(),
                st.loglik.empty() ? 0.0 : st.loglik.back());
    // the products alone
    const double vec_bytes = double(sizeof(VT)) * (double(rows) + double(cols));
    Array<VT> q(c.exec, std::size_t(rows)), b(c.exec, std::size_t(cols));
    const Timed fw =
        with_floor(time_product<VT>(*op, false, f.data(), q.data(), 3), L, vec_bytes, c);
    const Timed bw =
        with_floor(time_product<VT>(*op, true, g.data(), b.data(), 3), L, vec_bytes, c);
    std::printf(
        "A f   %.2f ms, floor %.2f ms (%.3fx); A^T c %.2f ms, floor %.2f ms (%.3fx); "
        "streamed %.1f GB/s (%.1f %% of %.1f GB/s H2D)\n",
        fw.seconds * 1e3, fw.floor * 1e3, fw.seconds / fw.floor, bw.seconds * 1e3, bw.floor * 1e3,
        bw.seconds / bw.floor, double(L.streamed_bytes) / fw.seconds / 1e9,
        100.0 * double(L.streamed_bytes) / fw.seconds / 1e9 / c.h2d, c.h2d);
    q = Array<VT>();
    b = Array<VT>();
    op.reset();
    // the reference
    double err = -1, ref_s = 0;
    std::vector<double> ref_loglik;
    if (reference != "none") {
        std::shared_ptr<const Executor> rexec =
            reference == "cpu" ? std::shared_ptr<const Executor>(cpu_executor()) : c.exec;
        OutOfCoreOptions ro = c.opt;
        ro.device_budget = 0;  // everything resident when it fits
        auto rop = std::make_shared<const OutOfCoreOperator<MT, VT>>(m, rexec, ro);
        HEPTANE_ENSURE(rop->layout().streamed_bytes == 0, InputError,
                       "--reference resident: the matrix does not fit the device ("
                           << double(rop->layout().bytes) / 1e9 << " GB); use --reference cpu");
        const Array<VT> rg = upload<VT>(sys.counts, rexec);
        Array<VT> rf(rexec, std::size_t(cols));
        MlemOptions rmo;
        rmo.iterations = iters;
        Mlem<VT> em(rmo);
        em.set_operator(rop);
        const double t1 = now_s();
        const MlemStatus rs = em.solve(rg, rf);
        ref_s = now_s() - t1;
        ref_loglik = rs.loglik;
        err = rel_diff(fo, to_double(rf));
        std::printf(
            "reference (%s, every chunk resident): %.3f s per iteration, loglik -> "
            "%.10e; max |f - f_ref| / max |f_ref| = %.3e\n",
            rexec->name().c_str(), ref_s / std::max(1, iters),
            rs.loglik.empty() ? 0.0 : rs.loglik.back(), err);
    }
    const double tol = std::is_same_v<VT, float> ? 1e-4 : 1e-9;
    const bool ok = reference == "none" || err <= tol;
    char buf[900];
    std::snprintf(
        buf, sizeof buf,
        "{\"precision\": \"%s\", \"rows\": %d, \"cols\": %d, \"nnz\": %lld, \"bytes\": %zu, "
        "\"budget\": %zu, \"chunks\": %d, \"resident_chunks\": %d, \"resident_bytes\": %zu, "
        "\"streamed_bytes\": %zu, \"iterations\": %d, \"seconds_per_iteration\": %.6f, "
        "\"loglik_last\": %.17g, \"ref_loglik_last\": %.17g, \"af_seconds\": %.6f, "
        "\"af_floor_seconds\": %.6f, \"atc_seconds\": %.6f, \"atc_floor_seconds\": %.6f, "
        "\"reference\": \"%s\", \"reference_seconds\": %.3f, \"f_rel_diff\": %.3e, "
        "\"check_passed\": %s}",
        prec.c_str(), rows, cols, static_cast<long long>(m->nnz()), L.bytes, L.budget, L.chunks,
        L.resident_chunks, L.resident_bytes, L.streamed_bytes, st.iterations,
        st.timings.per_iteration_ms / 1e3, st.loglik.empty() ? 0.0 : st.loglik.back(),
        ref_loglik.empty() ? 0.0 : ref_loglik.back(), fw.seconds, fw.floor, bw.seconds, bw.floor,
        reference.c_str(), ref_s, err, ok ? "true" : "false");
    json += buf;
    if (!ok)
        std::printf("FAILED: the image differs from the reference by %.3e (> %.0e)\n", err, tol);
    return ok ? 0 : 1;
}

}  // namespace

int bench_out_of_core(int argc, char** argv, bool mlem)
{
    Args args(argc, argv, {"--out-of-core", "--quiet"});
    if (args.help()) {
        std::printf("%s", usage);
        return 0;
    }
    Common c;
    c.spec.detectors = static_cast<index_t>(args.get_int("--detectors", 512));
    c.spec.rings = static_cast<index_t>(args.get_int("--rings", 16));
    c.spec.image = static_cast<index_t>(args.get_int("--image", 256));
    c.spec.slices = static_cast<index_t>(args.get_int("--slices", 64));
    c.spec.max_ring_difference = static_cast<index_t>(args.get_int("--max-ring-diff", -1));
    c.quiet = args.flag("--quiet");
    args.flag("--out-of-core");
    const std::string precs = args.get_or("--precision", mlem ? "mixed" : "double,mixed");
    const std::string fracs = args.get_or("--fractions", "0,0.25,0.5,0.75,1");
    const int reps = static_cast<int>(args.get_int("--reps", 5));
    const int iters = static_cast<int>(args.get_int("--iters", 5));
    const std::string reference = args.get_or("--reference", "resident");
    const std::string device = args.get_or("--device", "gpu");
    if (auto mb = args.get("--device-memory"))
        c.opt.device_budget = usage_checked([&] { return parse_bytes(*mb); });
    if (auto cb = args.get("--chunk-bytes"))
        c.opt.chunk_bytes = usage_checked([&] { return parse_bytes(*cb); });
    c.opt.buffers = static_cast<int>(args.get_int("--buffers", 3));
    auto jsonf = args.get("--json");
    args.finish(0, 0);
    if (reps < 1 || iters < 1) throw UsageError("--reps and --iters must be >= 1");
    if (c.opt.buffers < 2) throw UsageError("--buffers must be >= 2");
    if (reference != "resident" && reference != "cpu" && reference != "none")
        throw UsageError("--reference must be resident, cpu or none");
    usage_checked([&] {
        validate(c.spec);
        return 0;
    });
    std::vector<double> fractions;
    for (const auto& s : split_commas(fracs)) {
        char* end = nullptr;
        const double f = std::strtod(s.c_str(), &end);
        if (*end != '\0' || !(f >= 0 && f <= 1))
            throw UsageError("--fractions: '" + s + "' is not in [0, 1]");
        fractions.push_back(f);
    }
    c.exec = pick_executor(device);
    if (!c.exec->is_cuda())
        throw UsageError("bench --out-of-core streams to a GPU: run it on one (--device gpu)");
    c.h2d = measure_h2d_bandwidth(*c.exec);
    c.copy = measure_copy_bandwidth(*c.exec);
    std::printf(
        "device %s: pinned host-to-device %.2f GB/s, device copy %.1f GB/s (read + "
        "written); device memory free %.2f GB\n",
        c.exec->name().c_str(), c.h2d, c.copy, double(device_free_bytes(*c.exec)) / 1e9);
    std::string json;
    int failed = 0;
    for (const auto& p : split_commas(precs)) {
        const Precision pr = precision_option(p);
        if (mlem) {
            failed +=
                pr == Precision::double_  ? mlem_run<double, double>(c, p, iters, reference, json)
                : pr == Precision::single ? mlem_run<float, float>(c, p, iters, reference, json)
                                          : mlem_run<float, double>(c, p, iters, reference, json);
        } else {
            failed += pr == Precision::double_
                          ? spmv_precision<double, double>(c, p, fractions, reps, json)
                      : pr == Precision::single
                          ? spmv_precision<float, float>(c, p, fractions, reps, json)
                          : spmv_precision<float, double>(c, p, fractions, reps, json);
        }
    }
    if (jsonf) {
        std::ofstream out(*jsonf);
        char head[300];
        std::snprintf(head, sizeof head,
                      "{\"device\": %s, \"h2d_gb_per_s\": %.3f, \"copy_gb_per_s\": %.2f, "
                      "\"system\": %s, \"runs\": [",
                      json_string(c.exec->name()).c_str(), c.h2d, c.copy,
                      json_string(describe(c.spec)).c_str());
        out << head << json << "]}\n";
        HEPTANE_ENSURE(out.good(), IoError, "cannot write " << *jsonf);
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace heptane::cli
