#include "apps/common.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/progress.hpp"
#include "core/error.hpp"
#include "generators/matrix_market.hpp"

namespace heptane::cli {

std::shared_ptr<const Executor> pick_executor(const std::string& device)
{
    if (device == "cpu") return cpu_executor();
    if (device == "auto") {
        if (built_with_cuda() && CudaExecutor::device_count() > 0) return CudaExecutor::create(0);
        return cpu_executor();
    }
    if (device == "gpu" || device == "cuda") return CudaExecutor::create(0);
    for (const char* prefix : {"gpu:", "cuda:"}) {
        const std::string p = prefix;
        if (device.rfind(p, 0) == 0) {
            try {
                return CudaExecutor::create(std::stoi(device.substr(p.size())));
            } catch (const std::invalid_argument&) {
            }
        }
    }
    throw UsageError("--device must be auto, cpu, gpu or gpu:N (got '" + device + "')");
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
            spec.model = parse_model(part);
    }
    validate(spec);
    return spec;
}

Problem load_problem(const std::optional<std::string>& file,
                     const std::optional<std::string>& generate, bool quiet)
{
    if (file && generate) throw UsageError("give a matrix file or --generate, not both");
    if (!file && !generate) throw UsageError("no matrix: give a Matrix Market file or --generate");
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
        p.a = read_matrix_market<double>(*file);
        s.done(std::to_string(p.a.rows) + " x " + std::to_string(p.a.cols) + ", " +
               std::to_string(p.a.nnz()) + " entries");
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

}  // namespace heptane::cli
