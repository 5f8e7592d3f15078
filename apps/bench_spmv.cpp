// heptane bench spmv: y = A x and y = A^T x on one CUDA device for every format, kernel and
// precision, next to the device's copy bandwidth and cuSPARSE measured in the same run
// (BENCHMARKS.md). Every result is first checked against the CPU reference (the CSR CPU
// kernel, double accumulation); a mismatch marks the row FAILED and is not timed.
//
// Timing: CUDA events around each product, after warm-up; median, min and max of --reps.
// Before each timed product the L2 cache is flushed by reading a buffer of 3x its size
// (read-only, so no dirty lines are left to write back during the product): the numbers are
// DRAM numbers, also for matrices that would fit in L2 (--no-flush times warm caches).
// Copy bandwidth: a 1 GiB device-to-device cudaMemcpyAsync, bytes read + written.
// Effective bandwidth of a row: the bytes its format must move (values, indices and
// pointers as stored, padding included, x once, y written once) over its time; %floor:
// the floor of the matrix (sizeof(value)*nnz + x + y, no indices, no padding) over the
// copy bandwidth, divided by the time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/args.hpp"
#include "apps/bench.hpp"
#include "apps/common.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"

#ifdef HEPTANE_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/cuda_common.hpp"
#include "formats/bdia/bdia_cuda.hpp"
#include "formats/bsr/bsr_kernels.hpp"
#include "formats/coo/coo_kernels.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/csr/cusparse_baseline.hpp"
#include "formats/detect/detect.hpp"
#include "formats/dia/dia_kernels.hpp"
#include "formats/ell/ell_kernels.hpp"
#include "formats/hyb/hyb_kernels.hpp"
#include "formats/registry.hpp"
#include "generators/hepta.hpp"
#include "generators/matrix_market.hpp"
#endif

namespace heptane::cli {

namespace {

const char* spmv_usage =
    "usage: heptane bench spmv [options] [FILE.mtx ...]\n\n"
    "SpMV (y = A x) and A^T x on one CUDA device, per format, kernel and precision, checked\n"
    "against the CPU reference, timed with CUDA events (median of --reps after warm-up, L2\n"
    "flushed before each product), next to the device-to-device copy bandwidth and cuSPARSE\n"
    "(CSR ALG1/ALG2, BSR, SELL) measured in the same run.\n\n"
    "options:\n"
    "  --sizes thesis|large|all|none  banded GH systems: the ten of BENCHMARKS.md (thesis),\n"
    "                        H100-sized ones (large: up to 940 M nonzeros), or both.\n"
    "                        Default: thesis, or none when matrix files are given.\n"
    "  --matrix FILE[,FILE]  Matrix Market files (also as positionals)\n"
    "  --formats LIST        any of coo,csr,ell,hyb,dia,bsr,bdiagh (bdia) and cusparse\n"
    "                        (default: all)\n"
    "  --precision LIST      double,mixed,single (default: all; mixed = fp32 values, fp64\n"
    "                        vectors and accumulation)\n"
    "  --reps N              timed repetitions (default 50)\n"
    "  --warmup N            untimed runs first (default 5)\n"
    "  --device N            CUDA device (default 0)\n"
    "  --quick               3 thesis systems, 10 repetitions\n"
    "  --no-transpose        skip A^T x\n"
    "  --no-flush            do not flush L2 between repetitions (warm-cache numbers)\n"
    "  --tune                also time BDIA launch shapes (threads, rows per thread, staging)\n"
    "  --no-probes           skip the probe row (an empty kernel: the fixed cost of one\n"
    "                        timed launch, to read the small systems' times against)\n"
    "  --csv FILE            all rows as CSV\n"
    "  --json FILE           all rows and the run's context as JSON\n\n"
    "Exit status: 0 all checks passed, 1 a check failed or the work failed, 2 usage.\n";

}  // namespace

#ifndef HEPTANE_HAVE_CUDA

int bench_spmv(int argc, char** argv)
{
    Args args(argc, argv, {"--quick", "--no-transpose", "--no-flush", "--tune", "--no-probes"});
    if (args.help()) {
        std::printf("%s", spmv_usage);
        return 0;
    }
    std::fprintf(stderr, "heptane bench spmv: this build has no CUDA back end\n");
    return 1;
}

#else

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Options {
    std::vector<std::string> files;
    std::string sizes;
    std::set<std::string> formats;
    std::vector<Precision> precisions;
    int reps = 50;
    int warmup = 5;
    int device = 0;
    bool quick = false;
    bool transpose = true;
    bool flush = true;
    bool tune = false;
    bool probes = true;
    std::string csv, json, command;
    bool want(const char* f) const { return formats.count(f) > 0; }
};

struct System {
    std::string name;
    bool gh = false;
    HeptaSpec spec;
    std::string path;
};

struct Result {
    std::string system;
    long long n = 0, nnz = 0;
    int nc = 1;
    std::string precision, op, format, kernel;
    double bytes = 0, floor_bytes = 0;
    double t_med = NAN, t_min = NAN, t_max = NAN;  // seconds
    double speedup_csr = NAN, speedup_bsr = NAN;
    std::string status;
    double err = NAN;
    std::string note;
    int order = 0;
};

// ---- the device context: executor, events, L2 flush, copy bandwidth ----------------------
class Bench {
public:
    Bench(const Options& o) : opt(o)
    {
        exec = CudaExecutor::create(o.device);
        int l2 = 0;
        HEPTANE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, exec->device()));
        flush_n = std::max<std::size_t>(std::size_t(3) * l2 / sizeof(double), 1 << 22);
        flush_buf = Array<double>(exec, flush_n);
        HEPTANE_CUDA_CHECK(
            cudaMemsetAsync(flush_buf.data(), 0, flush_n * sizeof(double), cuda::stream(*exec)));
        flush_out = Array<double>(exec, 1);
        const int n_ev = 2 * std::max(o.reps, 1);
        events.resize(n_ev);
        for (auto& e : events) HEPTANE_CUDA_CHECK(cudaEventCreate(&e));
        exec->synchronize();
    }
    ~Bench()
    {
        for (auto& e : events) cudaEventDestroy(e);
    }
    Bench(const Bench&) = delete;
    Bench& operator=(const Bench&) = delete;

    /// Read the flush buffer (cublasDasum, result on the device): evicts A, x, y from L2
    /// without leaving dirty lines.
    void flush()
    {
        auto h = cuda::cublas(*exec);
        HEPTANE_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
        HEPTANE_CUBLAS_CHECK(
            cublasDasum(h, static_cast<int>(flush_n), flush_buf.data(), 1, flush_out.data()));
        HEPTANE_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    }

    struct Stats {
        double med, min, max;
    };
    Stats time(const std::function<void()>& f)
    {
        auto s = cuda::stream(*exec);
        for (int i = 0; i < opt.warmup; ++i) f();
        const int reps = std::max(opt.reps, 1);
        for (int i = 0; i < reps; ++i) {
            if (opt.flush) flush();
            HEPTANE_CUDA_CHECK(cudaEventRecord(events[2 * i], s));
            f();
            HEPTANE_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], s));
        }
        HEPTANE_CUDA_CHECK(cudaStreamSynchronize(s));
        std::vector<double> t(reps);
        for (int i = 0; i < reps; ++i) {
            float ms = 0;
            HEPTANE_CUDA_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
            t[i] = ms * 1e-3;
        }
        std::sort(t.begin(), t.end());
        const double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        return {med, t.front(), t.back()};
    }

    /// Device-to-device copy of 1 GiB: (bytes read + bytes written) / median time.
    double copy_bandwidth()
    {
        const std::size_t bytes = std::size_t(1) << 30;
        Array<char> a(exec, bytes), b(exec, bytes);
        auto s = cuda::stream(*exec);
        HEPTANE_CUDA_CHECK(cudaMemsetAsync(a.data(), 1, bytes, s));
        const bool keep = opt.flush;
        opt.flush = false;  // 2 GiB already thrash the L2
        const Stats st = time([&] {
            HEPTANE_CUDA_CHECK(
                cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, s));
        });
        opt.flush = keep;
        return 2.0 * bytes / st.med;
    }

    Options opt;
    std::shared_ptr<const CudaExecutor> exec;
    std::size_t flush_n = 0;
    Array<double> flush_buf, flush_out;
    std::vector<cudaEvent_t> events;
    double copy_bw = 0;
};

// ---- host matrices --------------------------------------------------------------------------

/// The host matrix of one system, in double: CSR always, BDIA-GH when the pattern allows.
struct HostMatrix {
    Csr<double> csr;
    std::optional<Bdia<double> > bdia;
    index_t block_size = 1;
    std::string note;
};

/// CSR straight from BDIA-GH (every stored slot, by the pattern bits), rows in parallel:
/// for sizes whose COO would be too large to build and sort.
template <class T>
Csr<T> csr_from_bdia(const Bdia<T>& a)
{
    const index_t n = a.rows, nc = a.block_size, nk = a.num_diagonals();
    const std::uint64_t* pat = a.pattern.data();
    const T* data = a.data.data();
    std::vector<index_t> off(nk);
    for (index_t k = 0; k < nk; ++k) off[k] = a.offset(k);
    auto stored = [&](index_t r, index_t k) {
        const long long c = static_cast<long long>(r - r % nc) + off[k];
        if (c < 0 || c >= a.cols) return false;
        const std::size_t slot = std::size_t(k) * n + r;
        return ((pat[slot >> 6] >> (slot & 63)) & 1u) != 0;
    };
    std::vector<offset_t> ptr(std::size_t(n) + 1, 0);
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < n; ++r) {
        offset_t c = 0;
        for (index_t k = 0; k < nk; ++k) c += stored(r, k);
        ptr[r + 1] = c;
    }
    for (index_t r = 0; r < n; ++r) ptr[r + 1] += ptr[r];
    std::vector<index_t> col(ptr[n]);
    std::vector<T> val(ptr[n]);
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < n; ++r) {
        offset_t e = ptr[r];
        // offsets ascend with k (block offsets ascending, then s), so columns come sorted
        for (index_t k = 0; k < nk; ++k)
            if (stored(r, k)) {
                col[e] = r - r % nc + off[k];
                val[e] = data[std::size_t(k) * n + r];
                ++e;
            }
    }
    Csr<T> out;
    out.rows = a.rows;
    out.cols = a.cols;
    out.row_ptr = Array<offset_t>(std::move(ptr));
    out.col_idx = Array<index_t>(std::move(col));
    out.values = Array<T>(std::move(val));
    return out;
}

/// BSR (block size Nc) straight from BDIA-GH: block row c holds the blocks (c, c + d_q)
/// inside the matrix, B(a, s) = data[(q*Nc + s)*N + c*Nc + a]. The pattern is left empty
/// (only products are run on it here).
template <class T>
Bsr<T> bsr_from_bdia(const Bdia<T>& a)
{
    const index_t nc = a.block_size, nbr = a.rows / nc, nbc = a.cols / nc;
    const index_t nd = a.num_block_diagonals();
    const std::size_t n = a.rows, bb = std::size_t(nc) * nc;
    std::vector<offset_t> ptr(std::size_t(nbr) + 1, 0);
    for (index_t c = 0; c < nbr; ++c) {
        offset_t k = 0;
        for (index_t q = 0; q < nd; ++q) {
            const long long cb = static_cast<long long>(c) + a.block_offsets[q];
            k += cb >= 0 && cb < nbc;
        }
        ptr[c + 1] = ptr[c] + k;
    }
    std::vector<index_t> col(ptr[nbr]);
    std::vector<T> val(ptr[nbr] * bb);
    const T* data = a.data.data();
#pragma omp parallel for schedule(static)
    for (index_t c = 0; c < nbr; ++c) {
        offset_t e = ptr[c];
        for (index_t q = 0; q < nd; ++q) {
            const long long cb = static_cast<long long>(c) + a.block_offsets[q];
            if (cb < 0 || cb >= nbc) continue;
            col[e] = static_cast<index_t>(cb);
            T* blk = val.data() + e * bb;
            for (index_t r = 0; r < nc; ++r)
                for (index_t s = 0; s < nc; ++s)
                    blk[r * nc + s] = data[(std::size_t(q) * nc + s) * n + std::size_t(c) * nc + r];
            ++e;
        }
    }
    Bsr<T> out;
    out.rows = a.rows;
    out.cols = a.cols;
    out.block_size = nc;
    out.row_ptr = Array<offset_t>(std::move(ptr));
    out.col_idx = Array<index_t>(std::move(col));
    out.values = Array<T>(std::move(val));
    return out;
}

template <class U, class T>
Array<U> convert_array(const Array<T>& a)
{
    const std::vector<T>& in = a.host();
    std::vector<U> out(in.size());
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<U>(in[i]);
    return Array<U>(std::move(out));
}

template <class U>
Csr<U> csr_values_as(const Csr<double>& a)
{
    return Csr<U>{a.rows, a.cols, a.row_ptr, a.col_idx, convert_array<U>(a.values)};
}
template <class U>
Bdia<U> bdia_values_as(const Bdia<double>& a)
{
    return Bdia<U>{a.rows,   a.cols, a.block_size, a.block_offsets, convert_array<U>(a.data),
                   a.pattern};
}

HostMatrix load_system(const System& sys)
{
    HostMatrix hm;
    const auto t0 = Clock::now();
    if (sys.gh) {
        hm.block_size = sys.spec.Nc;
        hm.bdia = generate_hepta_bdia<double>(sys.spec);
        hm.csr = csr_from_bdia(*hm.bdia);
    } else {
        Coo<double> coo = read_matrix_market<double>(sys.path);
        const Structure st = detect_structure(coo);
        hm.block_size = st.block_size;
        const bool fits = st.rows == st.cols && !st.block_offsets.empty() &&
                          st.block_offsets.size() <= 64 && st.bdia_padding <= 1.0;
        if (fits) {
            hm.bdia = bdia_from_coo(coo, st.block_size, st.block_offsets);
        } else {
            hm.note = "no BDIA: " + std::to_string(st.block_offsets.size()) +
                      " block offsets, padding " + std::to_string(st.bdia_padding);
        }
        hm.csr = csr_from_coo(coo);
    }
    std::fprintf(stderr, "  built %s on the host in %.1f s\n", sys.name.c_str(), seconds_since(t0));
    return hm;
}

// ---- one system, one precision -------------------------------------------------------------

template <class VT>
double rel_error(const std::vector<VT>& y, const std::vector<double>& ref)
{
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double v = double(y[i]);
        if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
        num = std::max(num, std::abs(v - ref[i]));
        den = std::max(den, std::abs(ref[i]));
    }
    return num / (den > 0 ? den : 1.0);
}

/// Deterministic x in [-1, 1) (splitmix64 of the index): never zeros.
template <class VT>
std::vector<VT> make_x(std::size_t n)
{
    std::vector<VT> x(n);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t z = i + 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = static_cast<VT>(double(z >> 11) * 0x1.0p-52 - 1.0);
    }
    return x;
}

template <class MT, class VT>
class PrecisionRun {
public:
    PrecisionRun(Bench& b, const System& sys, const HostMatrix& hm, std::vector<Result>& out)
        : b_(b), sys_(sys), hm_(hm), out_(out)
    {
    }

    void run()
    {
        auto exec = b_.exec;
        const Csr<double>& csr64 = hm_.csr;
        rows_ = csr64.rows;
        cols_ = csr64.cols;
        nnz_ = csr64.nnz();
        const std::size_t nv = std::max(rows_, cols_);
        // host matrices in MT, the reference products in double (CPU CSR kernel)
        Csr<MT> csr_h = csr_values_as<MT>(csr64);
        const std::vector<VT> x = make_x<VT>(nv);
        {
            std::vector<double> xd(x.begin(), x.end());
            auto cpu = cpu_executor();
            ref_[0].assign(rows_, 0.0);
            kernels::spmv<MT, double>(*cpu, csr_h, Op::normal, 1.0, xd.data(), 0.0, ref_[0].data());
            if (b_.opt.transpose) {
                ref_[1].assign(cols_, 0.0);
                kernels::spmv<MT, double>(*cpu, csr_h, Op::transpose, 1.0, xd.data(), 0.0,
                                          ref_[1].data());
            }
        }
        xd_ = Array<VT>(x).to(exec);
        yd_ = Array<VT>(exec, nv);
        empty_.rows = empty_.cols = 1;
        empty_.row_ptr = Array<offset_t>(std::vector<offset_t>{0, 0}).to(exec);
        empty_.col_idx = Array<index_t>(exec, 0);
        empty_.values = Array<MT>(exec, 0);
        const double vec_ax = double(sizeof(VT)) * (rows_ + cols_);
        floor_bytes_ = double(sizeof(MT)) * nnz_ + vec_ax;
        const VT* x_ = xd_.data();
        VT* y_ = yd_.data();

        // BDIA-GH
        if (b_.opt.want("bdiagh") && hm_.bdia) {
            Bdia<MT> bh = bdia_values_as<MT>(*hm_.bdia);
            const double bytes = FormatTraits<Format::bdia>::matrix_bytes(bh, sizeof(MT)) + vec_ax;
            if (fits(double(sizeof(MT)) * bh.slots())) {
                const Bdia<MT> bd = bh.to(exec);
                bh = Bdia<MT>{};
                for (Op op : ops()) {
                    add("bdia", "thesis", op, bytes, [&, op] {
                        kernels::spmv(*exec, bd, op, VT(1), x_, VT(0), y_,
                                      kernels::BdiaKernel::thesis);
                    });
                    add("bdia", "optimized", op, bytes, [&, op] {
                        kernels::spmv(*exec, bd, op, VT(1), x_, VT(0), y_,
                                      kernels::BdiaKernel::optimized);
                    });
                    if (b_.opt.tune) {
                        // launch shapes: threads per CTA, rows per thread, staging (bdia_cuda.hpp)
                        const int shapes[5][3] = {
                            {256, 1, 1}, {256, 2, 1}, {256, 1, 2}, {256, 2, 2}, {128, 1, 1}};
                        for (const auto& sh : shapes) {
                            if (op == Op::transpose && (sh[1] == 2 || sh[2] == 2)) continue;
                            const kernels::BdiaLaunch l{sh[0], sh[1], sh[2]};
                            add("bdia",
                                "opt[b" + std::to_string(sh[0]) + ",r" + std::to_string(sh[1]) +
                                    ",s" + std::to_string(sh[2]) + "]",
                                op, bytes, [&, op, l] {
                                    kernels::spmv_bdia(*exec, bd, op, VT(1), x_, VT(0), y_,
                                                       kernels::BdiaKernel::optimized, l);
                                });
                        }
                    }
                }
                if (b_.opt.probes) {
                    // an instrument, not a product: an empty kernel, the fixed cost of one
                    // timed launch, to read the small systems' times against
                    add_probe("empty kernel", 0.0, [&] {
                        kernels::spmv(*exec, empty_, Op::normal, VT(1), x_, VT(0), y_);
                    });
                }
                flush_runs();  // bd is freed at the end of this scope
            } else {
                skip("bdia", "no device memory");
            }
        } else if (b_.opt.want("bdiagh") && !hm_.note.empty()) {
            skip("bdia", hm_.note);
        }

        // CSR: heptane kernels, cuSPARSE CSR ALG1/ALG2 and SELL, stored transposes. Above
        // 200 M nonzeros only the vector kernel and CSR ALG1 (host setup time)
        const bool huge = nnz_ > 200'000'000;
        const double csr_bytes =
            FormatTraits<Format::csr>::matrix_bytes(csr_h, sizeof(MT)) + vec_ax;
        if ((b_.opt.want("csr") || b_.opt.want("cusparse")) &&
            fits((double(sizeof(MT)) + 4) * nnz_ * (b_.opt.transpose ? 2 : 1))) {
            const Csr<MT> cd = csr_h.to(exec);
            if (b_.opt.want("csr"))
                add("csr", "vector", Op::normal, csr_bytes, [&] {
                    kernels::spmv(*exec, cd, Op::normal, VT(1), x_, VT(0), y_,
                                  kernels::CsrKernel::vector);
                });
            if (b_.opt.want("csr") && !huge) {
                add("csr", "scalar", Op::normal, csr_bytes, [&] {
                    kernels::spmv(*exec, cd, Op::normal, VT(1), x_, VT(0), y_,
                                  kernels::CsrKernel::scalar);
                });
                add("csr", "merge", Op::normal, csr_bytes, [&] {
                    kernels::spmv(*exec, cd, Op::normal, VT(1), x_, VT(0), y_,
                                  kernels::CsrKernel::merge);
                });
                if (b_.opt.transpose)
                    add("csr", "scatter", Op::transpose, csr_bytes + double(sizeof(VT)) * cols_,
                        [&] { kernels::spmv(*exec, cd, Op::transpose, VT(1), x_, VT(0), y_); });
            }
            if (b_.opt.want("cusparse")) {
                for (auto alg : {cusparse::Baseline::csr_alg1, cusparse::Baseline::csr_alg2}) {
                    if (huge && alg == cusparse::Baseline::csr_alg2) continue;
                    auto base = std::shared_ptr<cusparse::SpmvBaseline<MT, VT> >(
                        cusparse::SpmvBaseline<MT, VT>::from_csr(exec, cd, alg));
                    for (Op op : ops())
                        add("cusparse", cusparse::to_string(alg), op, base->matrix_bytes() + vec_ax,
                            [base, op, x_, y_] { base->apply(op, VT(1), x_, VT(0), y_); });
                }
                if (!huge && fits((double(sizeof(MT)) + 4) * nnz_ * 1.5)) {
                    try {
                        auto sell = std::shared_ptr<cusparse::SpmvBaseline<MT, VT> >(
                            cusparse::SpmvBaseline<MT, VT>::from_csr(exec, cd,
                                                                     cusparse::Baseline::sell));
                        add("cusparse", "cusparse-sell", Op::normal, sell->matrix_bytes() + vec_ax,
                            [sell, x_, y_] { sell->apply(Op::normal, VT(1), x_, VT(0), y_); });
                    } catch (const NotSupported& e) {
                        skip("cusparse", e.what(), "cusparse-sell");
                    }
                }
            }
            if (b_.opt.transpose && !huge) {
                // the "stored" A^T x strategy: A^T built once on the device (Csr2cscEx2)
                const Csr<MT> ct = cusparse::transpose_on_device(exec, cd);
                if (b_.opt.want("csr"))
                    add("csr", "stored", Op::transpose, csr_bytes, [&] {
                        kernels::spmv(*exec, ct, Op::normal, VT(1), x_, VT(0), y_,
                                      kernels::CsrKernel::vector);
                    });
                if (b_.opt.want("cusparse")) {
                    auto base = std::shared_ptr<cusparse::SpmvBaseline<MT, VT> >(
                        cusparse::SpmvBaseline<MT, VT>::from_csr(exec, ct,
                                                                 cusparse::Baseline::csr_alg1));
                    add("cusparse", "cusparse-csr-alg1-stored", Op::transpose,
                        base->matrix_bytes() + vec_ax,
                        [base, x_, y_] { base->apply(Op::normal, VT(1), x_, VT(0), y_); });
                }
                flush_runs();  // ct is freed at the end of this scope
            }
            flush_runs();
        } else if (b_.opt.want("csr") || b_.opt.want("cusparse")) {
            skip("csr", "no device memory");
        }

        // BSR (block size Nc): heptane and cuSPARSE
        const index_t nb = hm_.block_size;
        if ((b_.opt.want("bsr") || b_.opt.want("cusparse")) && rows_ % nb == 0 && cols_ % nb == 0) {
            Bsr<MT> bh = hm_.bdia ? bsr_from_bdia(bdia_values_as<MT>(*hm_.bdia))
                                  : bsr_from_coo(to_coo(csr_h), nb);
            const double bsr_bytes =
                FormatTraits<Format::bsr>::matrix_bytes(bh, sizeof(MT)) + vec_ax;
            if (fits(double(bh.values.bytes()))) {
                const Bsr<MT> bd = bh.to(exec);
                bh = Bsr<MT>{};
                if (b_.opt.want("bsr"))
                    for (Op op : ops())
                        if (op == Op::normal || !huge)
                            add("bsr", "warp", op, bsr_bytes,
                                [&, op] { kernels::spmv(*exec, bd, op, VT(1), x_, VT(0), y_); });
                if (b_.opt.want("cusparse")) {
                    try {
                        auto base = std::shared_ptr<cusparse::SpmvBaseline<MT, VT> >(
                            cusparse::SpmvBaseline<MT, VT>::from_bsr(exec, bd));
                        // (cuSPARSE's BSR SpMV takes no transpose: A x only)
                        add("cusparse", "cusparse-bsr", Op::normal, base->matrix_bytes() + vec_ax,
                            [base, x_, y_] { base->apply(Op::normal, VT(1), x_, VT(0), y_); });
                    } catch (const NotSupported& e) {
                        skip("cusparse", e.what(), "cusparse-bsr");
                    }
                }
                flush_runs();
            } else {
                skip("bsr", "no device memory");
            }
        }

        // COO, ELL, HYB, DIA: built from canonical COO (thesis-size systems)
        const bool small = nnz_ <= 200'000'000;
        if (small && (b_.opt.want("coo") || b_.opt.want("ell") || b_.opt.want("hyb") ||
                      b_.opt.want("dia"))) {
            const Coo<MT> coo = to_coo(csr_h);
            if (b_.opt.want("coo")) {
                const Coo<MT> d = coo.to(exec);
                const double bytes =
                    FormatTraits<Format::coo>::matrix_bytes(d, sizeof(MT)) + vec_ax;
                for (Op op : ops())
                    add("coo", "segmented", op, bytes,
                        [&, op] { kernels::spmv(*exec, d, op, VT(1), x_, VT(0), y_); });
                flush_runs();
            }
            if (b_.opt.want("ell")) {
                try {
                    const Ell<MT> d = ell_from_coo(coo).to(exec);
                    const double bytes =
                        FormatTraits<Format::ell>::matrix_bytes(d, sizeof(MT)) + vec_ax;
                    for (Op op : ops())
                        add("ell", "row", op, bytes,
                            [&, op] { kernels::spmv(*exec, d, op, VT(1), x_, VT(0), y_); });
                    flush_runs();
                } catch (const InputError& e) {
                    skip("ell", e.what());
                }
            }
            if (b_.opt.want("hyb")) {
                const Hyb<MT> d = hyb_from_coo(coo).to(exec);
                const double bytes =
                    FormatTraits<Format::hyb>::matrix_bytes(d, sizeof(MT)) + vec_ax;
                for (Op op : ops())
                    add("hyb", "ell+coo", op, bytes,
                        [&, op] { kernels::spmv(*exec, d, op, VT(1), x_, VT(0), y_); });
                flush_runs();
            }
            if (b_.opt.want("dia")) {
                try {
                    const Dia<MT> d = dia_from_coo(coo).to(exec);
                    const double bytes =
                        FormatTraits<Format::dia>::matrix_bytes(d, sizeof(MT)) + vec_ax;
                    for (Op op : ops())
                        add("dia", "row", op, bytes,
                            [&, op] { kernels::spmv(*exec, d, op, VT(1), x_, VT(0), y_); });
                    flush_runs();
                } catch (const InputError& e) {
                    skip("dia", e.what());
                }
            }
        }
        flush_runs();
    }

private:
    struct Run {
        std::string format, kernel;
        Op op;
        double bytes;
        std::function<void()> fn;
    };

    std::vector<Op> ops() const
    {
        if (b_.opt.transpose) return {Op::normal, Op::transpose};
        return {Op::normal};
    }
    /// Whether `bytes` more fit on the device (1 GiB kept free).
    bool fits(double bytes) const
    {
        std::size_t free_b = 0, total = 0;
        b_.exec->release_cached();  // what the allocator's pool keeps counts as free
        HEPTANE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
        return bytes + double(1u << 30) < double(free_b);
    }
    void add(const std::string& format, const std::string& kernel, Op op, double bytes,
             std::function<void()> fn)
    {
        if (op == Op::transpose && !b_.opt.transpose) return;
        runs_.push_back({format, kernel, op, bytes, std::move(fn)});
    }
    Result base_result(const std::string& format, const std::string& kernel, Op op) const
    {
        Result r;
        r.system = sys_.name;
        r.n = rows_;
        r.nnz = nnz_;
        r.nc = hm_.block_size;
        r.precision = std::is_same_v<MT, double>   ? "double"
                      : std::is_same_v<VT, double> ? "mixed"
                                                   : "single";
        r.op = op == Op::normal ? "Ax" : "ATx";
        r.format = format;
        r.kernel = kernel;
        r.floor_bytes = floor_bytes_;
        return r;
    }
    void add_probe(const std::string& kernel, double bytes, std::function<void()> fn)
    {
        runs_.push_back({"probe", kernel, Op::normal, bytes, std::move(fn)});
    }
    void skip(const std::string& format, const std::string& why, const std::string& kernel = "-")
    {
        Result r = base_result(format, kernel, Op::normal);
        r.status = "n/a";
        r.note = why;
        r.order = order_++;
        out_.push_back(r);
        std::fprintf(stderr, "  %-9s %-26s skipped: %s\n", format.c_str(), kernel.c_str(),
                     why.c_str());
    }
    /// Check, then time, every queued run (while its device matrix is alive).
    void flush_runs()
    {
        auto s = cuda::stream(*b_.exec);
        const double tol = std::is_same_v<VT, float> ? 1e-4 : 1e-10;
        for (auto& run : runs_) {
            Result r = base_result(run.format, run.kernel, run.op);
            r.bytes = run.bytes;
            r.order = order_++;
            const int t = run.op == Op::normal ? 0 : 1;
            if (run.format == "probe") {
                const auto st = b_.time(run.fn);
                r.status = "probe";
                r.t_med = st.med;
                r.t_min = st.min;
                r.t_max = st.max;
                out_.push_back(r);
                continue;
            }
            try {
                // poison y (all-ones bytes: NaN) so that an unwritten entry fails the check
                HEPTANE_CUDA_CHECK(cudaMemsetAsync(yd_.data(), 0xFF, yd_.bytes(), s));
                run.fn();
                b_.exec->synchronize();
                std::vector<VT> y = yd_.to_vector();
                y.resize(ref_[t].size());
                r.err = rel_error(y, ref_[t]);
                if (!(r.err <= tol)) {
                    r.status = "FAILED";
                    r.note = "max |y - ref| / max |ref| = " + std::to_string(r.err);
                } else {
                    r.status = "ok";
                    const auto st = b_.time(run.fn);
                    r.t_med = st.med;
                    r.t_min = st.min;
                    r.t_max = st.max;
                }
            } catch (const NotSupported& e) {
                r.status = "n/a";
                r.note = e.what();
            }
            std::fprintf(stderr, "  %-6s %-3s %-9s %-26s %-6s %9.1f us\n", r.precision.c_str(),
                         r.op.c_str(), r.format.c_str(), r.kernel.c_str(), r.status.c_str(),
                         r.t_med * 1e6);
            out_.push_back(r);
        }
        runs_.clear();
    }

    Bench& b_;
    const System& sys_;
    const HostMatrix& hm_;
    std::vector<Result>& out_;
    std::vector<Run> runs_;
    std::vector<double> ref_[2];
    Array<VT> xd_, yd_;
    Csr<MT> empty_;  // 1 x 1 without entries: its product is one tiny kernel
    index_t rows_ = 0, cols_ = 0;
    offset_t nnz_ = 0;
    double floor_bytes_ = 0;
    int order_ = 0;
};

// ---- output ----------------------------------------------------------------------------------

void add_speedups(std::vector<Result>& rs)
{
    for (auto& r : rs) {
        if (r.status != "ok") continue;
        for (const auto& o : rs) {
            if (o.status != "ok" || o.system != r.system || o.precision != r.precision ||
                o.op != r.op)
                continue;
            if (o.kernel == "cusparse-csr-alg1") r.speedup_csr = o.t_med / r.t_med;
            if (o.kernel == "cusparse-bsr") r.speedup_bsr = o.t_med / r.t_med;
        }
    }
}

std::string fmt(const char* f, double v)
{
    if (std::isnan(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

void print_header()
{
    std::printf(
        "| system | N | nnz | prec | op | format | kernel | median us | min-max us | "
        "GFLOP/s | GB/s | %%copy | %%floor | x cuSP CSR | x cuSP BSR | check |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

void print_rows(std::vector<Result>::const_iterator first, std::vector<Result>::const_iterator last,
                double copy_bw)
{
    for (auto it = first; it != last; ++it) {
        const Result& r = *it;
        const double gbs = r.bytes / r.t_med / 1e9;
        const double floor_t = r.floor_bytes / copy_bw;
        const bool probe = r.status == "probe";
        std::printf(
            "| %s | %lld | %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
            "%s | %s |\n",
            r.system.c_str(), r.n, r.nnz, r.precision.c_str(), r.op.c_str(), r.format.c_str(),
            r.kernel.c_str(), fmt("%.1f", r.t_med * 1e6).c_str(),
            (fmt("%.1f", r.t_min * 1e6) + "-" + fmt("%.1f", r.t_max * 1e6)).c_str(),
            probe ? "-" : fmt("%.1f", 2.0 * r.nnz / r.t_med / 1e9).c_str(),
            fmt("%.0f", gbs).c_str(), fmt("%.1f", 100.0 * gbs * 1e9 / copy_bw).c_str(),
            probe ? "-" : fmt("%.1f", 100.0 * floor_t / r.t_med).c_str(),
            fmt("%.2f", r.speedup_csr).c_str(), fmt("%.2f", r.speedup_bsr).c_str(),
            (r.status + (r.note.empty() || r.status == "ok" ? "" : " (" + r.note + ")")).c_str());
    }
    std::fflush(stdout);
}

std::string csv_escape(const std::string& s)
{
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}
std::string json_escape(const std::string& s)
{
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += std::string("\\") + c;
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out + "\"";
}
std::string num(double v)
{
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

void write_csv(const std::string& path, const std::vector<Result>& rs, double copy_bw)
{
    std::ofstream f(path);
    HEPTANE_ENSURE(f.good(), IoError, "cannot write " << path);
    f << "system,n,nnz,nc,precision,op,format,kernel,bytes,floor_bytes,median_s,min_s,max_s,"
         "gflops,gbs,pct_copy,pct_floor,speedup_cusparse_csr_alg1,speedup_cusparse_bsr,status,"
         "rel_error,note\n";
    for (const auto& r : rs) {
        const double gbs = r.bytes / r.t_med / 1e9;
        f << csv_escape(r.system) << ',' << r.n << ',' << r.nnz << ',' << r.nc << ',' << r.precision
          << ',' << r.op << ',' << r.format << ',' << csv_escape(r.kernel) << ',' << num(r.bytes)
          << ',' << num(r.floor_bytes) << ',' << num(r.t_med) << ',' << num(r.t_min) << ','
          << num(r.t_max) << ',' << num(2.0 * r.nnz / r.t_med / 1e9) << ',' << num(gbs) << ','
          << num(100.0 * gbs * 1e9 / copy_bw) << ','
          << num(100.0 * r.floor_bytes / copy_bw / r.t_med) << ',' << num(r.speedup_csr) << ','
          << num(r.speedup_bsr) << ',' << r.status << ',' << num(r.err) << ',' << csv_escape(r.note)
          << '\n';
    }
}

void write_json(const std::string& path, const std::vector<Result>& rs, const Bench& b)
{
    std::ofstream f(path);
    HEPTANE_ENSURE(f.good(), IoError, "cannot write " << path);
    const std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    f << "{\n  \"benchmark\": \"spmv\",\n  \"command\": " << json_escape(b.opt.command)
      << ",\n  \"date\": \"" << date << "\",\n  \"device\": " << json_escape(b.exec->name())
      << ",\n  \"copy_bandwidth_Bps\": " << num(b.copy_bw) << ",\n  \"reps\": " << b.opt.reps
      << ",\n  \"warmup\": " << b.opt.warmup
      << ",\n  \"l2_flush\": " << (b.opt.flush ? "true" : "false") << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < rs.size(); ++i) {
        const auto& r = rs[i];
        const double gbs = r.bytes / r.t_med / 1e9;
        f << "    {\"system\": " << json_escape(r.system) << ", \"n\": " << r.n
          << ", \"nnz\": " << r.nnz << ", \"nc\": " << r.nc << ", \"precision\": \"" << r.precision
          << "\", \"op\": \"" << r.op << "\", \"format\": \"" << r.format
          << "\", \"kernel\": " << json_escape(r.kernel) << ", \"bytes\": " << num(r.bytes)
          << ", \"floor_bytes\": " << num(r.floor_bytes) << ", \"median_s\": " << num(r.t_med)
          << ", \"min_s\": " << num(r.t_min) << ", \"max_s\": " << num(r.t_max)
          << ", \"gflops\": " << num(2.0 * r.nnz / r.t_med / 1e9) << ", \"gbs\": " << num(gbs)
          << ", \"pct_copy\": " << num(100.0 * gbs * 1e9 / b.copy_bw)
          << ", \"pct_floor\": " << num(100.0 * r.floor_bytes / b.copy_bw / r.t_med)
          << ", \"speedup_cusparse_csr_alg1\": " << num(r.speedup_csr)
          << ", \"speedup_cusparse_bsr\": " << num(r.speedup_bsr) << ", \"status\": \"" << r.status
          << "\", \"rel_error\": " << num(r.err) << ", \"note\": " << json_escape(r.note) << "}"
          << (i + 1 < rs.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
}

std::vector<System> gh_systems(const std::string& which, bool quick)
{
    // (J, H, I, Nc): the ten banded GH systems of the source thesis (BENCHMARKS.md)
    const int thesis[10][4] = {{16, 16, 32, 8},  {16, 32, 32, 8}, {16, 16, 32, 16}, {32, 64, 64, 4},
                               {16, 32, 32, 16}, {32, 32, 64, 8}, {32, 128, 64, 4}, {32, 64, 64, 8},
                               {32, 32, 64, 16}, {32, 128, 64, 8}};
    // H100-sized: the bar table's extra shapes, then >= 500 M nonzeros (the thesis' largest
    // multi-GPU system, N = 33.5 M, nnz = 939 M, and 128^3 with Nc = 8)
    const int large[5][4] = {{128, 128, 128, 1},
                             {64, 64, 64, 3},
                             {512, 256, 256, 1},
                             {256, 256, 128, 4},
                             {128, 128, 128, 8}};
    std::vector<System> out;
    auto push = [&](const int* d) {
        System s;
        s.gh = true;
        s.spec.J = d[0];
        s.spec.H = d[1];
        s.spec.I = d[2];
        s.spec.Nc = d[3];
        s.spec.banded = true;
        s.spec.model = HeptaModel::uniform;
        s.name = std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]) +
                 " Nc=" + std::to_string(d[3]);
        out.push_back(s);
    };
    if (which == "thesis" || which == "all") {
        for (int i = 0; i < 10; ++i)
            if (!quick || i == 0 || i == 3 || i == 9) push(thesis[i]);
    }
    if (which == "large" || which == "all") {
        for (int i = 0; i < 5; ++i)
            if (!quick || i < 2) push(large[i]);
    }
    return out;
}

template <class MT, class VT>
void run_precision(Bench& b, const System& sys, const HostMatrix& hm, std::vector<Result>& out)
{
    PrecisionRun<MT, VT>(b, sys, hm, out).run();
}

}  // namespace

int bench_spmv(int argc, char** argv)
{
    Args args(argc, argv, {"--quick", "--no-transpose", "--no-flush", "--tune", "--no-probes"});
    if (args.help()) {
        std::printf("%s", spmv_usage);
        return 0;
    }
    Options opt;
    opt.command = "heptane bench spmv";
    for (int i = 0; i < argc; ++i) opt.command += std::string(" ") + argv[i];
    opt.quick = args.flag("--quick");
    opt.transpose = !args.flag("--no-transpose");
    opt.flush = !args.flag("--no-flush");
    opt.tune = args.flag("--tune");
    opt.probes = !args.flag("--no-probes");
    opt.reps = static_cast<int>(args.get_int("--reps", opt.quick ? 10 : 50));
    opt.warmup = static_cast<int>(args.get_int("--warmup", opt.quick ? 2 : 5));
    opt.device = static_cast<int>(args.get_int("--device", 0));
    if (auto m = args.get("--matrix"))
        for (auto& f : split_commas(*m)) opt.files.push_back(f);
    // every registered format (names or aliases) and the cuSPARSE baselines
    for (auto& f : split_commas(args.get_or("--formats", format_names(",") + ",cusparse"))) {
        if (f == "cusparse") {
            opt.formats.insert(f);
            continue;
        }
        try {
            opt.formats.insert(to_string(parse_format(f)));
        } catch (const InputError&) {
            throw UsageError("unknown format '" + f +
                             "' in --formats; valid: " + format_names(",") + ",cusparse");
        }
    }
    for (auto& p : split_commas(args.get_or("--precision", "double,mixed,single")))
        opt.precisions.push_back(precision_option(p));
    opt.csv = args.get_or("--csv", "");
    opt.json = args.get_or("--json", "");
    const auto sizes = args.get("--sizes");
    args.finish(0, 1000);
    for (const auto& p : args.positionals()) opt.files.push_back(p);
    opt.sizes = sizes ? *sizes : (opt.files.empty() ? "thesis" : "none");
    if (opt.sizes != "thesis" && opt.sizes != "large" && opt.sizes != "all" && opt.sizes != "none")
        throw UsageError("--sizes must be thesis, large, all or none");
    if (opt.reps < 1 || opt.reps > 100000) throw UsageError("--reps must be in 1..100000");

    std::vector<System> systems = gh_systems(opt.sizes, opt.quick);
    for (const auto& f : opt.files) {
        System s;
        s.name = f.substr(f.find_last_of('/') + 1);
        s.path = f;
        systems.push_back(s);
    }

    const auto t_all = Clock::now();
    Bench b(opt);
    b.copy_bw = b.copy_bandwidth();
    std::fprintf(stderr,
                 "heptane bench spmv on %s: copy bandwidth %.0f GB/s (1 GiB D2D, read + "
                 "write), L2 flush %s, %d reps\n",
                 b.exec->name().c_str(), b.copy_bw / 1e9, opt.flush ? "on" : "off", opt.reps);
    std::printf(
        "heptane bench spmv, %s, copy bandwidth %.0f GB/s (1 GiB device-to-device, read + "
        "write), median of %d after %d warm-up runs, L2 %s before each\n\n",
        b.exec->name().c_str(), b.copy_bw / 1e9, opt.reps, opt.warmup,
        opt.flush ? "flushed" : "not flushed");
    print_header();
    std::vector<Result> results;
    for (const auto& sys : systems) {
        std::fprintf(stderr, "%s\n", sys.name.c_str());
        const auto t_sys = Clock::now();
        const std::size_t sys_first = results.size();
        const HostMatrix hm = load_system(sys);
        for (Precision p : opt.precisions) {
            const std::size_t first = results.size();
            switch (p) {
                case Precision::double_:
                    run_precision<double, double>(b, sys, hm, results);
                    break;
                case Precision::mixed:
                    run_precision<float, double>(b, sys, hm, results);
                    break;
                case Precision::single:
                    run_precision<float, float>(b, sys, hm, results);
                    break;
            }
            // within one system and precision: A x rows first, then A^T x, each as run
            std::stable_sort(
                results.begin() + first, results.end(),
                [](const Result& a, const Result& c) { return (a.op == "Ax") > (c.op == "Ax"); });
        }
        add_speedups(results);
        print_rows(results.begin() + sys_first, results.end(), b.copy_bw);
        // the files hold every finished system, so a run cut short keeps what it measured
        if (!opt.csv.empty()) write_csv(opt.csv, results, b.copy_bw);
        if (!opt.json.empty()) write_json(opt.json, results, b);
        std::fprintf(stderr, "  %s done in %.1f s\n", sys.name.c_str(), seconds_since(t_sys));
    }
    std::printf("\n%zu rows in %.0f s\n", results.size(), seconds_since(t_all));
    if (!opt.csv.empty()) write_csv(opt.csv, results, b.copy_bw);
    if (!opt.json.empty()) write_json(opt.json, results, b);
    int failed = 0;
    for (const auto& r : results) failed += r.status == "FAILED";
    if (failed) std::fprintf(stderr, "heptane bench spmv: %d checks FAILED\n", failed);
    return failed ? 1 : 0;
}

#endif  // HEPTANE_HAVE_CUDA

}  // namespace heptane::cli
