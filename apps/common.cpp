#include "apps/common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/progress.hpp"
#include "core/error.hpp"
#include "generators/matrix_file.hpp"
#include "solver/mlem/mlem.hpp"
#include "solver/solve.hpp"

namespace heptane::cli {

std::ofstream open_output(const std::string& path)
{
    std::ofstream out(path);
    if (!out) HEPTANE_THROW(IoError, "cannot write " << path);
    return out;
}

int parse_device_name(const std::string& device)
{
    if (device == "cpu") return device_cpu;
    if (device == "auto") return device_auto;
    if (device == "gpu" || device == "cuda") return 0;
    for (const char* prefix : {"gpu:", "cuda:"}) {
        const std::string p = prefix;
        if (device.rfind(p, 0) == 0) {
            try {
                std::size_t used = 0;
                const std::string n = device.substr(p.size());
                const int id = std::stoi(n, &used);
                if (used == n.size() && id >= 0) return id;
            } catch (const std::invalid_argument&) {
            } catch (const std::out_of_range&) {  // e.g. gpu:99999999999: a usage error too
            }
        }
    }
    throw UsageError("--device must be auto, cpu, gpu or gpu:N (got '" + device + "')");
}

std::shared_ptr<const Executor> pick_executor(const std::string& device)
{
    const int d = parse_device_name(device);
    if (d == device_cpu) return cpu_executor();
    if (d == device_auto) {
        if (built_with_cuda() && CudaExecutor::device_count() > 0) return CudaExecutor::create(0);
        return cpu_executor();
    }
    return CudaExecutor::create(d);
}

std::string device_label(const Executor& exec)
{
    return exec.is_cuda()
               ? "cuda:" + std::to_string(static_cast<const CudaExecutor&>(exec).device())
               : "cpu";
}

std::vector<double> read_vector_of(const std::string& file, std::size_t n, const char* what,
                                   const char* of)
{
    std::vector<double> v = read_vector_file(file);
    HEPTANE_ENSURE(v.size() == n, DimensionMismatch,
                   what << " has " << v.size() << " entries, A has " << n << " " << of);
    return v;
}

void parse_format_and_transpose(const std::string& format, const std::string& transpose, Format& f,
                                FormatOptions& fo)
{
    try {
        f = parse_format(format);
        fo.transpose = parse_transpose_strategy(transpose);
    } catch (const InputError& e) {
        throw UsageError(e.what());
    }
}

ProjectionSystem load_projection_system(const std::vector<std::string>& files, const PetSpec& spec,
                                        const char* what, const std::string& generated_suffix)
{
    ProjectionSystem s;
    if (files.size() == 2) {
        s.a = read_matrix_file(files[0]).a;
        s.rhs = read_vector_of(files[1], std::size_t(s.a.rows), what, "rows");
        s.source = files[0];
    } else {
        PetSystem sys = make_pet_system(spec);
        s.a = std::move(sys.a);
        s.rhs = std::move(sys.counts);
        s.source = describe(spec) + generated_suffix;
    }
    return s;
}

long long expected_entries(const std::optional<std::string>& file,
                           const std::optional<std::string>& generate)
{
    try {
        if (generate) {
            const HeptaSpec s = parse_generate_spec(*generate);
            return 7LL * s.J * s.H * s.I * s.Nc * s.Nc;  // at most; fewer at the boundary
        }
        if (file) return announced_entries(*file);
    } catch (const std::exception&) {  // the read itself reports what is wrong
    }
    return -1;
}

std::shared_ptr<const Executor> pick_solve_executor(
    const std::string& device, long long nnz, std::string& why,
    std::future<std::shared_ptr<const Executor>>* warming)
{
    why.clear();
    if (device != "auto") return pick_executor(device);
    if (!built_with_cuda() || CudaExecutor::device_count() == 0) {
        why = built_with_cuda() ? "auto: the CPU (no CUDA device visible)"
                                : "auto: the CPU (this build has no CUDA back end)";
        return cpu_executor();
    }
    const auto cpu = cpu_executor();
    const long long from = auto_gpu_min_entries(cpu->threads());
    std::ostringstream o;
    if (nnz < from) {
        o << "auto: the CPU (" << nnz << " stored entries < " << from
          << ", where a GPU's start-up and setup would outweigh its faster iterations; "
          << cpu->threads() << " host threads)";
        why = o.str();
        return cpu;
    }
    auto gpu = warming && warming->valid() ? warming->get() : CudaExecutor::create(0);
    o << "auto: the GPU (" << nnz << " stored entries >= " << from << " with " << cpu->threads()
      << " host threads)";
    why = o.str();
    return gpu;
}

HeptaSpec parse_generate_spec(const std::string& s)
{
    HeptaSpec spec;
    std::string dims = s, rest;
    auto colon = s.find(':');
    if (colon != std::string::npos) {
        dims = s.substr(0, colon);
        rest = s.substr(colon + 1);
    }
    auto d = parse_dims(dims, 3, 4);  // JxHxNc (2-D) is ambiguous: ask for JxHx1xNc
    spec.J = static_cast<index_t>(d[0]);
    spec.H = static_cast<index_t>(d[1]);
    spec.I = static_cast<index_t>(d[2]);
    spec.Nc = d.size() > 3 ? static_cast<index_t>(d[3]) : 1;
    spec.model = HeptaModel::reservoir;
    spec.banded = false;
    while (!rest.empty()) {
        auto c = rest.find(':');
        std::string part = rest.substr(0, c);
        rest = c == std::string::npos ? "" : rest.substr(c + 1);
        if (part == "banded")
            spec.banded = true;
        else if (part == "grid")
            spec.banded = false;
        else
            spec.model = usage_checked([&] { return parse_model(part); });
    }
    usage_checked([&] {
        validate(spec);
        return 0;
    });
    return spec;
}

Problem load_problem(const std::optional<std::string>& file,
                     const std::optional<std::string>& generate, bool quiet)
{
    if (file && generate) throw UsageError("give a matrix file or --generate, not both");
    if (!file && !generate)
        throw UsageError("no matrix: give a Matrix Market or PETSc binary file, or --generate");
    Problem p;
    if (generate) {
        p.spec = parse_generate_spec(*generate);
        p.source = describe(*p.spec);
        Stage s(quiet, "generating " + p.source);
        p.a = generate_hepta_coo<double>(*p.spec);
        s.done(std::to_string(p.a.nnz()) + " entries");
    } else {
        p.source = *file;
        Stage s(quiet, "reading " + *file);
        MatrixFile m = read_matrix_file(*file);
        p.a = std::move(m.a);
        p.rhs_in_file = std::move(m.rhs);
        s.done(std::to_string(p.a.rows) + " x " + std::to_string(p.a.cols) + ", " +
               std::to_string(p.a.nnz()) + " entries" +
               (m.format == FileFormat::petsc_binary
                    ? std::string(" (PETSc binary") + (p.rhs_in_file ? ", with a vector)" : ")")
                    : std::string()));
    }
    return p;
}

std::string json_string(const std::string& s)
{
    std::string o = "\"";
    for (char c : s) {
        switch (c) {
            case '"':
                o += "\\\"";
                break;
            case '\\':
                o += "\\\\";
                break;
            case '\n':
                o += "\\n";
                break;
            case '\t':
                o += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    o += buf;
                } else {
                    o += c;
                }
        }
    }
    return o + "\"";
}

std::optional<SymmetryCheck> symmetry_of(const Coo<double>& a)
{
    if (a.nnz() >= offset_t(std::numeric_limits<index_t>::max())) return std::nullopt;
    const std::vector<offset_t> rp = canonical_row_ptr(a, "the symmetry check (--solver cg)");
    const std::vector<index_t> row_ptr(rp.begin(), rp.end());
    return check_symmetry(CsrView{a.rows, row_ptr.data(), a.col.data(), a.val.data(), a.cols},
                          cg_symmetry_tol);
}

void require_symmetric_for_cg(const std::optional<SymmetryCheck>& check, bool quiet)
{
    if (!check) {
        if (!quiet)
            std::fprintf(stderr,
                         "symmetry not checked (2^31 entries or more): --solver cg assumes A is "
                         "symmetric positive definite\n");
        return;
    }
    const SymmetryCheck& s = *check;
    HEPTANE_ENSURE(s.symmetric, InputError,
                   "A is not symmetric: a("
                       << s.i + 1 << ", " << s.j + 1 << ") = " << s.aij << " but a(" << s.j + 1
                       << ", " << s.i + 1 << ") = " << s.aji << " (relative difference " << s.worst
                       << " > " << cg_symmetry_tol
                       << "); --solver cg needs a symmetric positive "
                          "definite matrix: use --solver bicgstab or "
                          "gmres, or --no-symmetry-check to run CG anyway");
}

void print_result(const Status& st, double err)
{
    std::printf("result    %s after %d iterations\n",
                st.converged() ? "CONVERGED" : "NOT CONVERGED", st.iterations);
    std::printf("          reason %s\n", to_string(st.reason));
    std::printf("          ||r||/||b|| recursive %.3e, true %.3e\n", st.relative_residual,
                st.true_relative_residual);
    if (err >= 0) std::printf("          max|x - x_true| / max|x_true| = %.3e\n", err);
}

void write_history_csv(const std::string& path, const Status& st)
{
    std::ofstream h(path);
    HEPTANE_ENSURE(h.good(), IoError, "cannot write " << path);
    h << "iteration,residual,relative\n";
    for (std::size_t i = 0; i < st.history.size(); ++i)
        h << i << ',' << st.history[i] << ',' << st.history[i] / (st.b_norm > 0 ? st.b_norm : 1)
          << '\n';
}

bool launched_by_mpirun()
{
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
        const char* s = std::getenv(v);
        if (s && std::atoi(s) > 1) return true;
    }
    return false;
}

std::vector<std::string> split_commas(const std::string& s)
{
    std::vector<std::string> v;
    std::size_t i = 0;
    while (i <= s.size()) {
        std::size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        if (j > i) v.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return v;
}

Precision precision_option(const std::string& value)
{
    Precision p = Precision::double_;
    if (!parse_precision(value, p))
        throw UsageError("--precision must be double, single or mixed, not '" + value + "'");
    return p;
}

std::string json_number(double v)
{
    if (v < 0 || !std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6e", v);
    return buf;
}

bool first_rank_of_launch()
{
    for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
        if (const char* r = std::getenv(v)) return std::string(r) == "0";
    return true;
}

const char* pc_options_help =
    "  --amg-threshold T     strength of connection: |a_ij| > T sqrt(|a_ii a_jj|) (default 0.02;\n"
    "                        0 keeps every coupling)\n"
    "  --amg-smoother S      auto (default: ilu0mc for a non-symmetric block system, Nc > 1,\n"
    "                        else chebyshev), chebyshev, jacobi, l1jacobi, ilu0mc\n"
    "  --amg-sweeps N        Chebyshev degree / smoothing sweeps before and after (default 2)\n"
    "  --amg-cycle C         v (default) or w\n"
    "  --amg-coarse-size N   coarsest level at most N rows, solved by dense LU (default 300;\n"
    "                        box aggregation: at most min(N, 64))\n"
    "  --amg-max-levels N    at most N levels (default 20)\n"
    "  --amg-tail-rows N     the levels of at most N rows, down to the coarsest, run as one\n"
    "                        launch (one CTA on a GPU; smoothers chebyshev, jacobi,\n"
    "                        l1jacobi; default 0: every step its own launch)\n"
    "  --amg-setup W         where the hierarchy is built: auto (default: the device for a GPU\n"
    "                        and Nc = 1, else the host), host, device\n"
    "  --amg-lambda-its N    Chebyshev's lambda_max(D^-1 A): 0 (default) Gershgorin's bound, one\n"
    "                        pass; N > 0: estimated by N power and N + 2 Lanczos steps\n"
    "  --amg-aggregation A   mis (default: smoothed aggregation's independent sets, any\n"
    "                        pattern) or box (2 cells a box along each strongly coupled axis\n"
    "                        of the matrix's grid, Nc = 1; mis where there is no grid)\n"
    "  --amg-box-ratio R     box: an axis is halved when its mean strength is >= R times the\n"
    "                        strongest axis' (default 0.25)\n"
    "  --amg-p-weight W      prolongator smoothing weight over rho(D^-1 A) (default 4/3; 0:\n"
    "                        plain aggregation, whose coarse levels keep a 7-point stencil)\n"
    "  --amg-p-max N         with --amg-global: at most N entries a row of the smoothed P, the\n"
    "                        largest, the row's sum kept (default 6; 0: all)\n"
    "  --cpr-pressure-index P  the pressure unknown of each cell for --pc cpr (default 0)\n"
    "  --cpr-second M        CPR's second stage: bilu0, bilu0mc or bjacobi (default: bilu0 on\n"
    "                        the CPU, bjacobi on a GPU)\n";

const char* null_space_help =
    "  --null-space N    none (default) | constant: A 1 = 0 (a pure-Neumann pressure, a closed\n"
    "                    domain with no accumulation term or well), as PETSc's\n"
    "                    MatSetNullSpace says it: AMG's (and CPR's) coarsest level and\n"
    "                    --coarse's coarse matrix (mpirun) are solved by a generalized inverse\n"
    "                    instead of refused as singular, and the\n"
    "                    constant is removed from the solution's correction, x = x0 + P(x -\n"
    "                    x0) (the answer PETSc's KSPs give). b must be consistent (for a\n"
    "                    symmetric A: zero mean). An error if a row of A does not sum to ~0\n"
    "                    (one process; not checked under mpirun)\n";

bool parse_null_space(Args& args)
{
    const std::string v = args.get_or("--null-space", "none");
    if (v == "none") return false;
    if (v == "constant") return true;
    throw UsageError("--null-space " + v + ": the choices are none and constant");
}

PcOptions parse_pc_options(Args& args)
{
    PcOptions o;
    AmgOptions& a = o.amg;
    a.strength_threshold = args.get_double("--amg-threshold", a.strength_threshold);
    if (!(a.strength_threshold >= 0 && a.strength_threshold < 1))
        throw UsageError("--amg-threshold must be in [0, 1)");
    if (auto s = args.get("--amg-smoother"))
        a.smoother = usage_checked([&] { return parse_amg_smoother(*s); });
    const long long sweeps = args.get_int("--amg-sweeps", a.pre_sweeps);
    if (sweeps < 1 || sweeps > 20) throw UsageError("--amg-sweeps must be in 1..20");
    a.pre_sweeps = a.post_sweeps = int(sweeps);
    if (auto c = args.get("--amg-cycle"))
        a.cycle = usage_checked([&] { return parse_amg_cycle(*c); });
    const long long cs = args.get_int("--amg-coarse-size", a.coarse_size);
    if (cs < 1 || cs > 4000) throw UsageError("--amg-coarse-size must be in 1..4000");
    a.coarse_size = index_t(cs);
    const long long ml = args.get_int("--amg-max-levels", a.max_levels);
    if (ml < 1 || ml > 50) throw UsageError("--amg-max-levels must be in 1..50");
    a.max_levels = int(ml);
    const long long tr = args.get_int("--amg-tail-rows", a.tail_rows);
    if (tr < 0 || tr > 1000000) throw UsageError("--amg-tail-rows must be in 0..1000000");
    a.tail_rows = index_t(tr);
    if (auto w = args.get("--amg-setup"))
        a.setup = usage_checked([&] { return parse_amg_setup(*w); });
    const long long li = args.get_int("--amg-lambda-its", a.power_iterations);
    if (li < 0 || li > 100) throw UsageError("--amg-lambda-its must be in 0..100");
    a.power_iterations = int(li);
    const long long pm = args.get_int("--amg-p-max", a.prolongation_max_entries);
    if (pm < 0 || pm > 1000) throw UsageError("--amg-p-max must be in 0..1000");
    a.prolongation_max_entries = int(pm);
    if (auto g = args.get("--amg-aggregation"))
        a.aggregation = usage_checked([&] { return parse_amg_aggregation(*g); });
    a.box_ratio = args.get_double("--amg-box-ratio", a.box_ratio);
    if (!(a.box_ratio > 0 && a.box_ratio <= 1))
        throw UsageError("--amg-box-ratio must be in (0, 1]");
    a.prolongation_weight = args.get_double("--amg-p-weight", a.prolongation_weight);
    if (!(a.prolongation_weight >= 0 && a.prolongation_weight < 2))
        throw UsageError("--amg-p-weight must be in [0, 2)");
    o.cpr.amg = a;
    const long long p = args.get_int("--cpr-pressure-index", 0);
    if (p < 0) throw UsageError("--cpr-pressure-index must be >= 0");
    o.cpr.pressure_index = index_t(p);
    if (auto s = args.get("--cpr-second")) {
        o.cpr.second_stage_auto = false;
        if (*s == "bilu0")
            o.cpr.second_stage = CprSmoother::bilu0;
        else if (*s == "bilu0mc")
            o.cpr.second_stage = CprSmoother::bilu0mc;
        else if (*s == "bjacobi")
            o.cpr.second_stage = CprSmoother::bjacobi;
        else
            throw UsageError("unknown --cpr-second '" + *s +
                             "' (choices: bilu0, bilu0mc, bjacobi)");
    }
    return o;
}

const char* out_of_core_help =
    "  --out-of-core M   auto (default) | on | off: keep the matrix in host memory (page-locked)\n"
    "                    in row chunks and stream them to the GPU at every product, the copy of\n"
    "                    one chunk beside the product of the last; as many chunks as the device\n"
    "                    memory allows stay resident. auto: when the matrix does not fit the\n"
    "                    device memory. The chunks are BDIA-GH where the format is (solve and\n"
    "                    spmv: a hepta matrix, --format auto or bdia; no column indices\n"
    "                    streamed), else CSR (32-bit local indices). On the CPU, on computes\n"
    "                    from the chunks in memory.\n"
    "  --device-memory B device memory the run may use, bytes (e.g. 8G, 512M; default: all the\n"
    "                    device has free): the budget for resident chunks and stream buffers\n"
    "  --chunk-bytes B   bytes per streamed chunk (default 64M)\n";

const char* chunk_file_help =
    "  --host-memory B   A given as a chunk file (.hoc: heptane convert or pet -o A.hoc): host\n"
    "                    memory its chunks may take (default: what the host has available\n"
    "                    less max(4 GiB, 20 %)); the trailing chunks are read into memory once,\n"
    "                    the others from the file at every product (always out of core)\n";

OutOfCoreChoice parse_out_of_core(Args& args, bool chunk_files)
{
    OutOfCoreChoice c;
    c.mode = args.get_or("--out-of-core", "auto");
    if (c.mode != "auto" && c.mode != "on" && c.mode != "off")
        throw UsageError("--out-of-core must be auto, on or off, not '" + c.mode + "'");
    if (auto m = args.get("--device-memory"))
        c.device_memory = usage_checked([&] { return parse_bytes(*m); });
    if (auto b = args.get("--chunk-bytes")) {
        c.chunk_bytes = usage_checked([&] { return parse_bytes(*b); });
        if (c.chunk_bytes < 4096) throw UsageError("--chunk-bytes must be at least 4k");
    }
    if (auto h = chunk_files ? args.get("--host-memory") : std::nullopt) {
        const std::string v = *h;  // 0: every block from the file
        c.host_memory = v == "0" ? 0 : usage_checked([&] { return parse_bytes(v); });
    }
    return c;
}

std::size_t host_memory_budget(const OutOfCoreChoice& c)
{
    if (c.host_memory) return *c.host_memory;
    std::ifstream in("/proc/meminfo");
    std::string key;
    unsigned long long kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit)
        if (key == "MemAvailable:") {
            const double avail = double(kb) * 1024.0;
            const double keep = std::max(4.0 * (1ull << 30), 0.2 * avail);
            return avail > keep ? static_cast<std::size_t>(avail - keep) : 0;
        }
    return std::size_t(1) << 30;  // no /proc/meminfo: 1 GiB
}

std::optional<OutOfCoreOptions> out_of_core_choice(const OutOfCoreChoice& c, const Executor& exec,
                                                   index_t rows, index_t cols, offset_t nnz,
                                                   Precision p, int vectors, bool quiet,
                                                   double vector_entries)
{
    if (c.mode == "off" || (c.mode == "auto" && !exec.is_cuda())) return std::nullopt;
    const double value_bytes = p == Precision::double_ ? 8 : 4;
    const std::size_t vector_bytes = p == Precision::single ? 4 : 8;
    const double v =
        (vector_entries >= 0 ? vector_entries : double(vectors) * double(std::max(rows, cols))) *
        double(vector_bytes);
    std::string why = "out of core: --out-of-core on";
    if (c.mode == "auto") {
        const double in_core = 8.0 * (double(rows) + 1) + (4 + value_bytes) * double(nnz) + v;
        const double budget =
            c.device_memory ? double(c.device_memory) : double(device_free_bytes(exec)) * 0.95;
        if (in_core <= budget) return std::nullopt;
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "out of core: the matrix and vectors need %.2f GB of device memory, %s "
                      "%.2f GB",
                      in_core / 1e9, c.device_memory ? "--device-memory allows" : "the device has",
                      budget / 1e9);
        why = buf;
    }
    OutOfCoreOptions o;
    o.chunk_bytes = c.chunk_bytes;
    if (c.device_memory) {
        if (v >= double(c.device_memory))
            throw UsageError("--device-memory " + std::to_string(c.device_memory) +
                             " bytes cannot even hold the " + std::to_string(vectors) +
                             " vectors (" + std::to_string(static_cast<long long>(v)) + " bytes)");
        o.device_budget = c.device_memory - static_cast<std::size_t>(v);
    }
    if (!quiet) std::fprintf(stderr, "%s\n", why.c_str());
    return o;
}

void check_chunk_file_choices(const OutOfCoreChoice& c, const std::string& fmt_name)
{
    if (fmt_name != "auto")
        throw UsageError(
            "--format: a chunk file's chunks are its format (heptane convert --chunk-format "
            "rewrites them)");
    if (c.mode == "off")
        throw UsageError("a chunk file (.hoc) is always read out of core: drop --out-of-core off");
}

Precision chunk_file_precision(const OocFileInfo& f, std::string& prec, bool given)
{
    if (!given) {
        prec = f.value_bytes == 4 ? "mixed" : "double";
        return precision_option(prec);
    }
    const Precision p = precision_option(prec);
    if ((f.value_bytes == 4) != (p != Precision::double_))
        throw UsageError("--precision " + prec + " does not fit the chunk file's fp" +
                         std::to_string(8 * f.value_bytes) + " values (use " +
                         (f.value_bytes == 4 ? "single or mixed" : "double") + ")");
    return p;
}

}  // namespace heptane::cli
