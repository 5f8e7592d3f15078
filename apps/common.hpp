// Helpers shared by the subcommands: choosing the executor, loading a matrix from a file or a
// generator spec, small JSON output helpers.
#pragma once

#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/hepta.hpp"
#include "generators/pet.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solver.hpp"

namespace heptane::cli {

/// "auto" (a CUDA device when this build has CUDA and one is visible, else the CPU), "cpu",
/// "gpu" / "cuda" (device 0) or "gpu:N". Throws UsageError on other names, DeviceError/
/// NotSupported when a GPU is asked for and there is none.
std::shared_ptr<const Executor> pick_executor(const std::string& device);
/// --device's name: device_cpu, device_auto or the CUDA device's number ("gpu" / "cuda": 0).
/// Throws UsageError on other names; makes nothing.
constexpr int device_cpu = -1, device_auto = -2;
int parse_device_name(const std::string& device);
/// "cuda:N" or "cpu": the device an executor runs on, as the JSON and the tables print it.
std::string device_label(const Executor& exec);

/// A Matrix Market vector that must have `n` entries: DimensionMismatch "<what> has K entries,
/// A has n <of>" otherwise (what: "b", "g", "x0", ...; of: "rows" or "columns").
std::vector<double> read_vector_of(const std::string& file, std::size_t n, const char* what,
                                   const char* of);

/// --format and --transpose of mlem, lsqr and their benches: a usage error for bad names.
void parse_format_and_transpose(const std::string& format, const std::string& transpose, Format& f,
                                FormatOptions& fo);

/// The system of bench mlem and bench lsqr: A and its right-hand vector (b, or the counts g) from
/// two Matrix Market files, or A and the Poisson counts of the PET model `spec` when no files
/// are given; `source` names it (the generated one: describe(spec) + `generated_suffix`).
struct ProjectionSystem {
    Coo<double> a;
    std::vector<double> rhs;
    std::string source;
};
ProjectionSystem load_projection_system(const std::vector<std::string>& files, const PetSpec& spec,
                                        const char* what, const std::string& generated_suffix = "");
/// The stored entries a matrix will have, known before it is read: a generator spec's bound
/// (7 Nc^2 per cell) or a Matrix Market file's size line (symmetric files: the stored half);
/// -1 when unknown (the read reports any error).
long long expected_entries(const std::optional<std::string>& file,
                           const std::optional<std::string>& generate);

/// --device of solve, spmv, lsqr and mlem: as pick_executor, except that "auto" weighs the devices
/// for a matrix of `nnz` stored entries by a measured model (auto_gpu_min_entries) instead of
/// taking any GPU there is. `why` says what was chosen and why (empty unless "auto"). `warming`,
/// when valid, is a CUDA executor for device 0 already being made (started beside the read when
/// expected_entries() passed the model): taken when the GPU is chosen.
std::shared_ptr<const Executor> pick_solve_executor(
    const std::string& device, long long nnz, std::string& why,
    std::future<std::shared_ptr<const Executor>>* warming = nullptr);
/// (auto_gpu_min_entries, the model behind it: solver/solve.hpp)

/// A matrix to work on: read from a Matrix Market file, or generated from
/// "JxHxIxNc[:model]" (e.g. 64x64x64x3:reservoir, banded with "...:uniform:banded").
struct Problem {
    Coo<double> a;
    std::string source;             ///< file name or generator description
    std::optional<HeptaSpec> spec;  ///< set when generated
    /// A PETSc binary file's vector after its matrix (-ksp_view_mat binary -ksp_view_rhs
    /// binary write both): the right-hand side when none is named.
    std::optional<std::vector<double>> rhs_in_file;
};
/// Parse "JxHxIxNc[:model[:banded|grid]]"; throws UsageError.
HeptaSpec parse_generate_spec(const std::string& s);
Problem load_problem(const std::optional<std::string>& file,
                     const std::optional<std::string>& generate, bool quiet);

/// --solver cg: the relative tolerance of the symmetry check (as the plugin's
/// -heptane_symmetry_tol), and the check itself on canonical host COO (check_symmetry; none,
/// nullopt, for a matrix of 2^31 entries or more, which its 32-bit row pointers cannot hold).
constexpr double cg_symmetry_tol = 1e-8;
std::optional<SymmetryCheck> symmetry_of(const Coo<double>& a);
/// --solver cg on a matrix that is not symmetric: InputError (exit 1) naming the worst pair
/// (1-based, as in a Matrix Market file) and what to use instead; nothing when symmetric, a
/// line on stderr (unless quiet) when the check could not run.
void require_symmetric_for_cg(const std::optional<SymmetryCheck>& s, bool quiet);

/// The "result" lines of heptane solve: converged or not after how many iterations, the
/// reason, recursive and true relative residuals, and the error against x_true when err >= 0.
void print_result(const Status& st, double err);

/// A solve's residual history as CSV (iteration,residual,relative); IoError when the file
/// cannot be written.
void write_history_csv(const std::string& path, const Status& st);

/// f() with an InputError (a bad name or value the library refuses) turned into a UsageError,
/// for command-line values: exit status 2, not 1.
template <class F>
auto usage_checked(F&& f) -> decltype(f())
{
    try {
        return f();
    } catch (const InputError& e) {
        throw UsageError(e.what());
    }
}

/// False on the ranks other than 0 of an MPI launch (OpenMPI, MPICH/PMI, Slurm environment
/// variables; MPI need not be initialised), so that --help prints once under mpirun.
bool first_rank_of_launch();

class Args;
/// The multigrid and CPR options of solve, info and bench precond (--amg-threshold,
/// --amg-smoother, --amg-sweeps, --amg-cycle, --amg-coarse-size, --amg-max-levels,
/// --amg-tail-rows, --amg-setup, --amg-lambda-its, --amg-p-max, --amg-aggregation, --amg-box-ratio,
/// --amg-p-weight, --cpr-pressure-index, --cpr-second); UsageError for
/// bad values.
PcOptions parse_pc_options(Args& args);

/// --null-space none (default) | constant: true for constant (UsageError for another value).
bool parse_null_space(Args& args);
/// heptane solve --help's lines for --null-space.
extern const char* null_space_help;
/// Their --help lines.
extern const char* pc_options_help;

/// A JSON number with 6 significant digits after the point (%.6e), or null for a negative
/// value (the "not computed" of the reports).
std::string json_number(double v);

/// JSON string literal with escapes.
std::string json_string(const std::string& s);

/// "a,b,,c" -> {"a", "b", "c"}: the non-empty items of a comma-separated list (option values
/// such as --formats, --pcs, --generate).
std::vector<std::string> split_commas(const std::string& s);

/// `path` opened for writing; IoError "cannot write PATH" when it cannot be.
std::ofstream open_output(const std::string& path);

/// `rows` as a JSON array in `path`, one object a line: object(out, row) writes "{...}".
template <class Row, class Object>
void write_json_array(const std::string& path, const std::vector<Row>& rows, Object&& object)
{
    std::ofstream out = open_output(path);
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        out << "  ";
        object(out, rows[i]);
        out << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "]\n";
}

/// The value of --precision: double, single or mixed; UsageError naming them otherwise.
Precision precision_option(const std::string& value);

/// --out-of-core MODE, --device-memory BYTES, --chunk-bytes BYTES (spmv, solve, mlem, lsqr).
struct OutOfCoreChoice {
    std::string mode = "auto";      ///< off | on | auto
    std::size_t device_memory = 0;  ///< 0: what the device has free
    std::size_t chunk_bytes = std::size_t(64) << 20;
    std::optional<std::size_t> host_memory;  ///< chunk files: --host-memory (0: none), if given
};
/// --host-memory, or what the host has available (MemAvailable) less max(4 GiB, 20 %).
std::size_t host_memory_budget(const OutOfCoreChoice& c);
/// Parse the three options (and --host-memory with `chunk_files`); UsageError for bad values.
OutOfCoreChoice parse_out_of_core(Args& args, bool chunk_files = false);
/// Their --help lines; chunk_file_help: --host-memory's.
extern const char* out_of_core_help;
extern const char* chunk_file_help;
/// Whether to run out of core: "on" (on the CPU too: the chunked product straight from host
/// memory), "off", or "auto": on a GPU when the in-core matrix (CSR at the precision's value
/// bytes) and `vectors` vectors of max(rows, cols) values exceed --device-memory (or the memory
/// the device has free). Returns the operator's options when out of core (the chunk size; a
/// budget of --device-memory less the vectors, 0 without it: what the device has free), and
/// prints why on stderr unless `quiet`. `vector_entries` >= 0: the vectors' entries in all
/// instead of vectors * max(rows, cols) (a rank that holds only its rows of some of them).
std::optional<OutOfCoreOptions> out_of_core_choice(const OutOfCoreChoice& c, const Executor& exec,
                                                   index_t rows, index_t cols, offset_t nnz,
                                                   Precision p, int vectors, bool quiet,
                                                   double vector_entries = -1);
/// A chunk file (.hoc) is its own format and always out of core: UsageError for a --format
/// other than auto and for --out-of-core off.
void check_chunk_file_choices(const OutOfCoreChoice& c, const std::string& fmt_name = "auto");
/// The precision a chunk file runs in: --precision `prec` when `given` and it fits the file's
/// values (fp64: double; fp32: single or mixed; UsageError otherwise), else double or mixed
/// by the values, `prec` then set to that name.
Precision chunk_file_precision(const OocFileInfo& f, std::string& prec, bool given);
/// Under mpirun, rank `rank` of `ranks` streams chunks [first, last) of a chunk file (groups of
/// about equal bytes, ooc_chunk_groups); `starts`: every rank's first row, then the row count.
struct ChunkFileSplit {
    index_t first = 0, last = -1;
    std::vector<index_t> starts;
};
template <class MT>
ChunkFileSplit chunk_file_split(const std::string& path, int ranks, int rank)
{
    OocFileOptions table_only;  // the table only: no block is read
    table_only.host_memory = 0;
    const OocMatrix<MT> t = open_ooc_file<MT>(path, table_only);
    const std::vector<index_t> bounds = ooc_chunk_groups(t, ranks);
    ChunkFileSplit s;
    for (int p = 0; p < ranks; ++p) s.starts.push_back(t.chunks()[std::size_t(bounds[p])].row0);
    s.starts.push_back(t.rows());
    s.first = bounds[std::size_t(rank)];
    s.last = bounds[std::size_t(rank) + 1];
    return s;
}

}  // namespace heptane::cli
