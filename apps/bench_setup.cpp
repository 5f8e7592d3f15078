// heptane bench setup: the BDIA-GH operator's setup stage by stage -- from host COO (what the
// reader and the generators give) to a matrix on the executor -- next to one product, the
// host build it replaced and the cuSPARSE CSR reference's setup (issue #22's "setup in
// SpMV-equivalents").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/bench.hpp"
#include "apps/common.hpp"
#include "core/error.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bdia/bdia_build.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "formats/matrix.hpp"
#include "solver/bicgstab/bicgstab_reference.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::cli {

namespace {

const char* setup_usage =
    "usage: heptane bench setup [--generate SPEC[,SPEC...]] [FILE...] [--device D] [--reps N]\n"
    "                           [--csv FILE] [--json FILE]\n\n"
    "The BDIA-GH operator's setup from host COO, stage by stage, for every system (each\n"
    "JxHxIxNc[:model] of --generate, default 128x128x64x1:channelized, and every Matrix\n"
    "Market FILE; the block size is detected), median of --reps (default 5) runs, in ms:\n"
    "  rowptr     row pointers from the COO rows and the canonical-order check (host)\n"
    "  offsets    the distinct block offsets (host; includes another canonical check)\n"
    "  upload     row pointers, columns and values to the device (pageable copies); GB/s\n"
    "  place      the entries into BDIA-GH storage on the device (kernels::bdia_place_entries)\n"
    "  build      the whole bdia_from_coo(a, Nc, {}, exec) call: the stages above together\n"
    "  from csr   bdia_from_csr(csr, Nc, {}, exec, copy) with the CSR already on the device\n"
    "             (solve_system's path: it uploads A's CSR once for the operator and AMG):\n"
    "             the CSR checks and offsets on the host, the placement on the device\n"
    "  host build the former path: BDIA-GH built on the host, then uploaded\n"
    "  csr        csr_from_coo on the host (what solve_system makes for the preconditioners)\n"
    "  cusparse   the cuSPARSE CSR reference operator from that host CSR (upload, descriptor)\n"
    "  spmv       one y = A x of the built operator (median of 20 after a warm-up)\n"
    "and place/spmv and build/spmv: the setup in SpMV-equivalents. --device: auto (default),\n"
    "cpu, gpu (on the CPU there is no upload; place is the host placement). Exit status 1\n"
    "when the matrix has no BDIA-GH structure worth building (not hepta).\n";

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// Median over reps of fn's time; fn synchronizes what it starts.
double median_ms(int reps, const std::function<void()>& fn)
{
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = clock_type::now();
        fn();
        t.push_back(ms_since(t0));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Row {
    std::string system, device;
    index_t rows = 0, nc = 1, offsets = 0;
    offset_t nnz = 0;
    double upload_mb = 0;
    double rowptr_ms = 0, offsets_ms = 0, upload_ms = 0, place_ms = 0, build_ms = 0,
           from_csr_ms = 0;
    double host_build_ms = 0, csr_ms = 0, cusparse_ms = -1, spmv_ms = 0;
};

}  // namespace

int bench_setup(int argc, char** argv)
{
    Args args(argc, argv, {});
    if (args.help()) {
        std::printf("%s", setup_usage);
        return 0;
    }
    std::vector<std::string> gens;
    if (auto g = args.get("--generate")) gens = split_commas(*g);
    const std::string device = args.get_or("--device", "auto");
    const long long reps = args.get_int("--reps", 5);
    const auto csv = args.get("--csv");
    const auto json = args.get("--json");
    args.finish(0, 64);
    if (reps < 1 || reps > 1000) throw UsageError("--reps must be in 1..1000");
    const auto exec = pick_executor(device);
    if (gens.empty() && args.positionals().empty()) gens.push_back("128x128x64x1:channelized");

    std::vector<Row> rows;
    int status = 0;
    auto run_system = [&](const Problem& p) {
        const Coo<double>& a = p.a;
        const Structure s = detect_structure(a);
        if (!s.hepta) {
            std::fprintf(stderr, "bench setup: %s is not hepta (%s); skipped\n", p.source.c_str(),
                         s.hepta_reason.c_str());
            status = 1;
            return;
        }
        Row row;
        row.system = p.source;
        row.device = exec->name();
        row.rows = a.rows;
        row.nnz = a.nnz();
        row.nc = s.block_size;
        const index_t nc = s.block_size;
        const int n = int(reps);
        std::vector<offset_t> ptr;
        row.rowptr_ms = median_ms(n, [&] { ptr = canonical_row_ptr(a, "bench setup"); });
        std::vector<index_t> offsets;
        row.offsets_ms = median_ms(n, [&] { offsets = bdia_block_offsets(a, nc); });
        row.offsets = index_t(offsets.size());
        const std::size_t slots = offsets.size() * std::size_t(nc) * std::size_t(a.rows);
        Array<offset_t> dptr;
        Array<index_t> dcol;
        Array<double> dval;
        if (exec->is_cpu()) {
            row.upload_ms = 0;
        } else {
            row.upload_mb =
                double(ptr.size() * sizeof(offset_t) + a.col.bytes() + a.val.bytes()) / 1e6;
            row.upload_ms = median_ms(n, [&] {
                dptr = Array<offset_t>(ptr).to(exec);
                dcol = a.col.to(exec);
                dval = a.val.to(exec);
                exec->synchronize();
            });
        }
        const offset_t* rp = exec->is_cpu() ? ptr.data() : dptr.data();
        const index_t* cp = exec->is_cpu() ? a.col.data() : dcol.data();
        const double* vp = exec->is_cpu() ? a.val.data() : dval.data();
        Array<double> data(exec, slots);
        Array<std::uint64_t> pattern(exec, (slots + 63) / 64);
        row.place_ms = median_ms(n, [&] {
            const offset_t bad = dispatch_executor(*exec, [&](const auto& e) {
                return kernels::bdia_place_entries(e, a.rows, a.cols, nc, offsets.data(),
                                                   row.offsets, a.nnz(), rp, cp, vp, data.data(),
                                                   pattern.data());
            });
            HEPTANE_ENSURE(bad < 0, InputError, "bench setup: entry " << bad << " off the offsets");
            exec->synchronize();
        });
        dptr = {};
        dcol = {};
        dval = {};
        Bdia<double> built;
        row.build_ms = median_ms(n, [&] {
            built = {};
            built = bdia_from_coo(a, nc, {}, exec);
            exec->synchronize();
        });
        row.host_build_ms = median_ms(n, [&] {
            Bdia<double> h = bdia_from_coo(a, nc);
            if (!exec->is_cpu()) {
                h = h.to(exec);
                exec->synchronize();
            }
        });
        Csr<double> csr;
        row.csr_ms = median_ms(n, [&] { csr = csr_from_coo(a); });
        {
            const Csr<double> copy = csr.to(exec);
            row.from_csr_ms = median_ms(n, [&] {
                built = {};
                built = bdia_from_csr(csr, nc, {}, exec, &copy);
                exec->synchronize();
            });
        }
        if (exec->is_cuda()) {
            row.cusparse_ms = median_ms(n, [&] {
                auto op = make_cusparse_csr_operator(csr, exec);
                exec->synchronize();
            });
        }
        FormatOptions fo;
        fo.block_size = nc;
        fo.block_offsets = offsets;
        const auto op = make_matrix_operator<double, double>(a, Format::bdia, exec, fo);
        Array<double> x(std::vector<double>(std::size_t(a.cols), 1.0));
        x = x.to(exec);
        Array<double> y(exec, std::size_t(a.rows));
        op->apply(x.data(), y.data());
        exec->synchronize();
        std::vector<double> t;
        for (int r = 0; r < 20; ++r) {
            const auto t0 = clock_type::now();
            op->apply(x.data(), y.data());
            exec->synchronize();
            t.push_back(ms_since(t0));
        }
        std::sort(t.begin(), t.end());
        row.spmv_ms = t[t.size() / 2];
        char cusparse[32];
        std::snprintf(cusparse, sizeof cusparse, "%.2f", row.cusparse_ms);
        std::printf(
            "| %s | %d | %d | %lld | %d | %.2f | %.2f | %.2f (%.1f GB/s) | %.3f | %.2f | %.2f | "
            "%.2f | %.2f | %s | %.4f | %.1f | %.1f |\n",
            row.system.c_str(), int(row.rows), int(row.nc), static_cast<long long>(row.nnz),
            int(row.offsets), row.rowptr_ms, row.offsets_ms, row.upload_ms,
            row.upload_ms > 0 ? row.upload_mb / row.upload_ms : 0.0, row.place_ms, row.build_ms,
            row.from_csr_ms, row.host_build_ms, row.csr_ms, row.cusparse_ms >= 0 ? cusparse : "-",
            row.spmv_ms, row.place_ms / row.spmv_ms, row.build_ms / row.spmv_ms);
        std::fflush(stdout);
        rows.push_back(row);
    };
    std::printf(
        "| system | N | Nc | nnz | offsets | rowptr ms | offsets ms | upload ms | place ms | "
        "build ms | from csr ms | host build ms | csr ms | cusparse ms | spmv ms | place/spmv | "
        "build/spmv |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& g : gens) run_system(load_problem(std::nullopt, g, true));
    for (const auto& f : args.positionals()) run_system(load_problem(f, std::nullopt, true));
    std::printf("device: %s\n", exec->name().c_str());
    auto num = [](double v) { return v < 0 ? std::string("null") : std::to_string(v); };
    if (csv) {
        std::ofstream out = open_output(*csv);
        out << "system,device,rows,nc,nnz,offsets,rowptr_ms,offsets_ms,upload_mb,upload_ms,place_"
               "ms,"
               "build_ms,host_build_ms,csr_ms,cusparse_ms,spmv_ms\n";
        for (const Row& r : rows)
            out << '"' << r.system << "\",\"" << r.device << "\"," << r.rows << ',' << r.nc << ','
                << r.nnz << ',' << r.offsets << ',' << r.rowptr_ms << ',' << r.offsets_ms << ','
                << r.upload_mb << ',' << r.upload_ms << ',' << r.place_ms << ',' << r.build_ms
                << ',' << r.from_csr_ms << ',' << r.host_build_ms << ',' << r.csr_ms << ','
                << (r.cusparse_ms < 0 ? std::string() : std::to_string(r.cusparse_ms)) << ','
                << r.spmv_ms << '\n';
    }
    if (json)
        write_json_array(*json, rows, [&](std::ofstream& out, const Row& r) {
            out << "{\"system\": " << json_string(r.system)
                << ", \"device\": " << json_string(r.device) << ", \"rows\": " << r.rows
                << ", \"nc\": " << r.nc << ", \"nnz\": " << r.nnz << ", \"offsets\": " << r.offsets
                << ", \"rowptr_ms\": " << r.rowptr_ms << ", \"offsets_ms\": " << r.offsets_ms
                << ", \"upload_mb\": " << r.upload_mb << ", \"upload_ms\": " << r.upload_ms
                << ", \"place_ms\": " << r.place_ms << ", \"build_ms\": " << r.build_ms
                << ", \"from_csr_ms\": " << r.from_csr_ms
                << ", \"host_build_ms\": " << r.host_build_ms << ", \"csr_ms\": " << r.csr_ms
                << ", \"cusparse_ms\": " << num(r.cusparse_ms) << ", \"spmv_ms\": " << r.spmv_ms
                << "}";
        });
    return status;
}

}  // namespace heptane::cli
