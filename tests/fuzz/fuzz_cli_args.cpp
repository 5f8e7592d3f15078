// libFuzzer target: the command-line parsing of `heptane` on arbitrary argument arrays.
//
// Input: byte 0 picks a command profile (the options one subcommand of apps/ asks for; the
// table below mirrors apps/cmd_*.cpp and apps/bench_*.cpp), byte 1 how the options are
// queried; the rest is split at NUL and newline bytes into the arguments (at most 32; empty
// ones kept). Nothing here reads or writes a file or runs a command's work:
//  1. Args (apps/args.hpp), the parser of every subcommand: construction with the profile's
//     boolean flags, then flag/get/get_or/get_int/get_double/get_any on the profile's names,
//     on names taken from the arguments and on unknown ones, then finish(). Compared with a
//     model of the grammar that apps/args.hpp documents (--name value, --name=value, -o value,
//     flags, -h/--help, negative numbers are positionals): help, positionals, values, and
//     which calls fail. The only exception allowed is UsageError, with a message.
//  2. The parse functions that return a value: parse_dims, parse_generate_spec (the spec must
//     hold exactly the numbers written and pass validate()), parse_pc_options (within the
//     documented ranges) and pick_executor (CPU-only builds: "cpu" and "auto" give the host,
//     GPU names a heptane::Error, anything else a UsageError). Again nothing but UsageError
//     (or, for a GPU asked of a CPU-only build, heptane::Error) may escape: anything else
//     would reach main() as an unexpected exception, exit status 1 instead of 2.
//  3. The real main() of apps/heptane.cpp (compiled in as heptane_cli_main), only with
//     argument arrays that stop at a help request or a usage error before any work: no
//     command, an unknown command or benchmark, or -h/--help as the first argument after the
//     command (a subcommand parses all its arguments, then prints its usage). Exit status 0
//     with the usage on stdout, or 2 with a message on stderr (README: 2 = usage error),
//     as the model predicts; stdout and stderr are captured while it runs.
#include <sanitizer/common_interface_defs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/common.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"
#include "generators/hepta.hpp"

int heptane_cli_main(int argc, char** argv);  // apps/heptane.cpp, main renamed

namespace {

using heptane::cli::Args;
using heptane::cli::UsageError;

[[noreturn]] void fail(const std::string& what, const std::vector<std::string>& argv)
{
    std::string shown;
    for (const auto& a : argv) {
        shown += " '";
        for (char c : a) {
            char buf[8];
            if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
                shown += c;
            } else {
                std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(static_cast<unsigned char>(c)));
                shown += buf;
            }
        }
        shown += "'";
    }
    std::fprintf(stderr, "fuzz_cli_args: %s\n  arguments:%s\n", what.c_str(), shown.c_str());
    std::abort();
}

// ---- the commands: boolean flags and the options they ask for ----------------------------

struct Profile {
    const char* command;  // main()'s command
    const char* bench;    // for `heptane bench`: the benchmark, else nullptr
    std::set<std::string> flags;
    std::vector<std::string> options;  // asked with get*
    bool pc_options;                   // also parse_pc_options (solve, info, bench precond)
};

const std::vector<std::string> kPcOptions = {
    "--amg-threshold",   "--amg-smoother",   "--amg-sweeps", "--amg-cycle",
    "--amg-coarse-size", "--amg-max-levels", "--amg-setup",  "--cpr-pressure-index",
    "--cpr-second",      "--amg-lambda-its", "--amg-p-max"};

const std::vector<Profile>& profiles()
{
    static const std::vector<Profile> p = {
        {"gen",
         nullptr,
         {"--banded", "--quiet", "--petsc-int64"},
         {"--grid", "--nc", "--model", "--difficulty", "--seed", "-o", "--rhs", "--xtrue"},
         false},
        {"info", nullptr, {"--json", "--quiet", "--verbose"}, {"--generate"}, true},
        {"convert",
         nullptr,
         {"--json", "--quiet", "--petsc-int64"},
         {"--generate", "-o", "--format", "--block-size"},
         false},
        {"spmv",
         nullptr,
         {"--transpose", "--json", "--quiet"},
         {"--generate", "--format", "--block-size", "--device", "--precision", "--reps", "-x",
          "-o"},
         false},
        {"solve",
         nullptr,
         {"--monitor", "--json", "--quiet", "--no-graphs", "--no-fused-dots", "--no-refine",
          "--coarse", "--amg-global", "--amg-per-rank", "--no-symmetry-check"},
         {"--halo",     "--reduce",    "--split",   "--coarse-aggregates",
          "--generate", "-b",          "--x0",      "-o",
          "--history",  "--solver",    "--restart", "--pc",
          "--format",   "--precision", "--device",  "--impl",
          "--rtol",     "--atol",      "--max-it",  "--check-every"},
         true},
        {"mlem",
         nullptr,
         {"--json", "--quiet", "--no-loglik"},
         {"--iters", "--subsets", "--phantom", "--format", "--precision", "--device", "--transpose",
          "-o"},
         false},
        {"lsqr",
         nullptr,
         {"--json", "--quiet"},
         {"--damp", "--atol", "--btol", "--conlim", "--iter-lim", "--x0", "--format", "--precision",
          "--device", "--transpose", "-o"},
         false},
        {"pet",
         nullptr,
         {"--json", "--quiet"},
         {"--fov", "--phantom", "--counts", "--counts-per-lor", "--seed", "-o"},
         false},
        {"bench", "mmread", {"--no-eigen", "--json"}, {"--threads", "--reps"}, false},
        {"bench",
         "spmv",
         {"--quick", "--no-transpose", "--no-flush", "--tune", "--no-probes"},
         {"--sizes", "--matrix", "--formats", "--precision", "--device", "--reps", "--warmup",
          "--csv", "--json"},
         false},
        {"bench",
         "solve",
         {},
         {"--sizes", "--model", "--formats", "--solver", "--restart", "--pc", "--impl", "--device",
          "--rtol", "--max-it", "--steady-its", "--reps", "--copy-gbs", "--csv", "--json"},
         false},
        {"bench",
         "precond",
         {},
         {"--generate", "--pcs", "--format", "--solver", "--device", "--rtol", "--max-it", "--reps",
          "--csv", "--json", "--operator-build"},
         true},
        {"bench", "setup", {}, {"--generate", "--device", "--reps", "--csv", "--json"}, false},
        {"bench",
         "mlem",
         {},
         {"--rings", "--detectors", "--slices", "--image", "--formats", "--precision", "--device",
          "--iters", "--subsets", "--check-iters", "--transpose", "--reps", "--csv", "--json"},
         false},
        {"bench",
         "lsqr",
         {},
         {"--rings", "--detectors", "--slices", "--image", "--formats", "--precision", "--device",
          "--iters", "--check-iters", "--transpose", "--reps", "--csv", "--json"},
         false},
    };
    return p;
}

const Profile* find_profile(const std::string& command, const char* bench)
{
    for (const Profile& p : profiles())
        if (command == p.command && ((bench == nullptr) == (p.bench == nullptr)) &&
            (bench == nullptr || std::string(bench) == p.bench))
            return &p;
    return nullptr;
}

// ---- a model of the grammar of apps/args.hpp ---------------------------------------------

struct Model {
    bool error = false;  // the constructor throws (a flag given a value with =)
    bool help = false;
    std::map<std::string, std::string> opts;  // last value wins
    std::set<std::string> flags_given, missing;
    std::vector<std::string> pos;
};

bool looks_like_option(const std::string& a)
{
    // "-x", "--name", but not "-" alone or a negative number ("-5", "-.5")
    return a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.';
}

Model model(const std::vector<std::string>& t, const std::set<std::string>& flags)
{
    Model m;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const std::string& a = t[i];
        if (a == "-h" || a == "--help") {
            m.help = true;
        } else if (looks_like_option(a)) {
            const auto eq = a.find('=');
            if (eq != std::string::npos) {
                if (flags.count(a.substr(0, eq))) {
                    m.error = true;
                    return m;
                }
                m.opts[a.substr(0, eq)] = a.substr(eq + 1);
            } else if (flags.count(a)) {
                m.flags_given.insert(a);
            } else if (i + 1 >= t.size()) {
                m.missing.insert(a);
            } else {
                m.opts[a] = t[++i];
            }
        } else {
            m.pos.push_back(a);
        }
    }
    return m;
}

// Arguments as main() gets them: writable, NUL-terminated, argv[argc] = nullptr.
struct Argv {
    std::vector<std::vector<char>> store;
    std::vector<char*> ptrs;
    explicit Argv(const std::vector<std::string>& args)
    {
        for (const auto& a : args) store.emplace_back(a.c_str(), a.c_str() + a.size() + 1);
        for (auto& s : store) ptrs.push_back(s.data());
        ptrs.push_back(nullptr);
    }
    int argc() const { return int(store.size()); }
    char** argv() { return ptrs.data(); }
};

// How the options are asked: bytes of the input, then zeros.
struct Plan {
    const std::uint8_t* p;
    std::size_t n, i = 0;
    std::uint8_t byte() { return i < n ? p[i++] : 0; }
};

// A C string stops at the first NUL: what the parser can see of an argument.
std::string as_c_string(const std::string& s)
{
    return std::string(s.c_str());
}

// ---- 1. Args --------------------------------------------------------------------------

void check_args(const Profile& prof, const std::vector<std::string>& args, Plan& plan)
{
    const Model m = model(args, prof.flags);
    Argv av(args);
    std::optional<Args> parsed;
    try {
        parsed.emplace(av.argc(), av.argv(), prof.flags);
    } catch (const UsageError& e) {
        if (!m.error) fail(std::string("Args refused the arguments: ") + e.what(), args);
        if (!*e.what()) fail("a UsageError without a message", args);
        return;
    } catch (...) {
        fail("Args threw something other than UsageError", args);
    }
    if (m.error) fail("Args accepted a flag given a value (--flag=value)", args);
    Args& a = *parsed;
    if (a.help() != m.help) fail("help() differs from the model", args);
    if (a.positionals() != m.pos) fail("positionals() differ from the model", args);
    if (a.help()) {
        bool asked = false;
        for (const auto& s : args) asked |= s == "-h" || s == "--help";
        if (!asked) fail("help() without -h or --help", args);
    }

    // Names to ask: the profile's, and those of the arguments (some of them unknown).
    std::vector<std::string> names(prof.options);
    for (const auto& s : args)
        if (looks_like_option(s)) names.push_back(s.substr(0, s.find('=')));
    names.push_back("--not-an-option");
    std::set<std::string> asked;
    auto expect_value = [&](const std::string& name) -> std::optional<std::string> {
        auto it = m.opts.find(name);
        if (it == m.opts.end()) return std::nullopt;
        return it->second;
    };
    for (const std::string& name : prof.flags) {
        if (plan.byte() & 1) continue;  // not asked: finish() must then object if it is given
        asked.insert(name);
        if (a.flag(name) != (m.flags_given.count(name) > 0))
            fail("flag(" + name + ") differs from the model", args);
    }
    for (std::size_t k = 0; k < names.size(); ++k) {
        const std::string& name = names[k];
        if (prof.flags.count(name)) continue;
        const std::uint8_t how = plan.byte();
        const int method = how & 7;  // 0, 1 get; 2 get_or; 3 get_int; 4 get_double; 5, 6 get_any
        if (method == 7) continue;   // not asked: finish() must then object if it is given
        asked.insert(name);
        const auto want = expect_value(name);
        // get_any's second name
        const std::string& other = names[(k + 1 + how / 8) % names.size()];
        const bool any = method >= 5 && !prof.flags.count(other);
        // get_any asks its names in order and stops at the first without its value
        if (any && !m.missing.count(name)) asked.insert(other);
        const bool missing = m.missing.count(name) || (any && m.missing.count(other));
        // a value that is not all a number
        auto not_a_number = [&](bool integer) {
            if (!want) return false;
            const char* v = want->c_str();
            char* end = nullptr;
            if (integer)
                (void)std::strtoll(v, &end, 10);
            else
                (void)std::strtod(v, &end);
            return end == v || *end != '\0';
        };
        const bool bad_number =
            (method == 3 && not_a_number(true)) || (method == 4 && not_a_number(false));
        try {
            if (method <= 1) {
                if (a.get(name) != want) fail("get(" + name + ") differs from the model", args);
            } else if (method == 2) {
                if (a.get_or(name, "default") != want.value_or("default"))
                    fail("get_or(" + name + ") differs from the model", args);
            } else if (method == 3) {
                const long long got = a.get_int(name, -42);
                if (got != (want ? std::strtoll(want->c_str(), nullptr, 10) : -42))
                    fail("get_int(" + name + ") differs from the model", args);
            } else if (method == 4) {
                const double got = a.get_double(name, 0.5);
                const double v = want ? std::strtod(want->c_str(), nullptr) : 0.5;
                if (!(got == v || (got != got && v != v)))
                    fail("get_double(" + name + ") differs from the model", args);
            } else if (any) {
                const auto got = a.get_any({name, other});
                if (got != (want ? want : expect_value(other)))
                    fail("get_any(" + name + ", " + other + ") differs from the model", args);
            } else if (a.get(name) != want) {  // the other name is a flag
                fail("get(" + name + ") differs from the model", args);
            }
            if (missing) fail("get*(" + name + ") did not object to a missing value", args);
            if (bad_number) fail("get_int/get_double(" + name + ") accepted '" + *want + "'", args);
        } catch (const UsageError& e) {
            if (!*e.what()) fail("a UsageError without a message", args);
            if (!missing && !bad_number)
                fail("get*(" + name + ") refused a good value: " + e.what(), args);
        } catch (...) {
            fail("get*(" + name + ") threw something other than UsageError", args);
        }
    }

    // finish(): unknown (given, never asked) options, then the positional count
    bool unknown = false;
    for (const auto& [k, v] : m.opts) unknown |= !asked.count(k);
    for (const auto& k : m.flags_given) unknown |= !asked.count(k);
    for (const auto& k : m.missing) unknown |= !asked.count(k);
    const std::size_t lo = plan.byte() % 4, hi = lo + plan.byte() % 3;
    const bool count_bad = m.pos.size() < lo || m.pos.size() > hi;
    try {
        a.finish(lo, hi);
        if (unknown || count_bad) fail("finish() accepted unknown options or positionals", args);
    } catch (const UsageError& e) {
        if (!*e.what()) fail("a UsageError without a message", args);
        if (!unknown && !count_bad) fail(std::string("finish() refused: ") + e.what(), args);
    } catch (...) {
        fail("finish() threw something other than UsageError", args);
    }
}

// ---- 2. the parse functions that return values --------------------------------------------

void check_parse_dims(const std::string& s, std::size_t lo, std::size_t hi,
                      const std::vector<std::string>& args)
{
    try {
        const auto d = heptane::cli::parse_dims(s, lo, hi);
        if (d.size() < lo || d.size() > hi) fail("parse_dims: wrong count of numbers", args);
        std::size_t parts = 1;
        for (char c : as_c_string(s)) parts += c == 'x' || c == 'X' || c == ',';
        if (d.size() != parts) fail("parse_dims: numbers and separators disagree", args);
        for (long long v : d)
            if (v <= 0) fail("parse_dims returned a number <= 0", args);
    } catch (const UsageError& e) {
        if (!*e.what()) fail("a UsageError without a message", args);
    } catch (...) {
        fail("parse_dims threw something other than UsageError", args);
    }
}

void check_generate_spec(const std::string& s, const std::vector<std::string>& args)
{
    heptane::HeptaSpec spec;
    try {
        spec = heptane::cli::parse_generate_spec(s);
    } catch (const UsageError& e) {
        if (!*e.what()) fail("a UsageError without a message", args);
        return;
    } catch (const std::exception& e) {
        fail(std::string("parse_generate_spec threw something other than UsageError: ") + e.what(),
             args);
    } catch (...) {
        fail("parse_generate_spec threw a non-exception", args);
    }
    try {
        heptane::validate(spec);
    } catch (const heptane::Error& e) {
        fail(std::string("parse_generate_spec returned a spec validate() refuses: ") + e.what(),
             args);
    }
    // the spec holds the numbers as written (the part before the first ':')
    const std::string c = as_c_string(s);
    std::vector<long long> d;
    try {
        d = heptane::cli::parse_dims(c.substr(0, c.find(':')), 3, 4);
    } catch (const UsageError& e) {
        fail(std::string("parse_generate_spec accepted dimensions parse_dims refuses: ") + e.what(),
             args);
    }
    const long long nc = d.size() > 3 ? d[3] : 1;
    if (spec.J != d[0] || spec.H != d[1] || spec.I != d[2] || spec.Nc != nc)
        fail("parse_generate_spec: the spec " + std::to_string(spec.J) + "x" +
                 std::to_string(spec.H) + "x" + std::to_string(spec.I) + "x" +
                 std::to_string(spec.Nc) + " is not the grid written (" + std::to_string(d[0]) +
                 "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]) + "x" +
                 std::to_string(nc) + ")",
             args);
}

void check_pc_options(const std::vector<std::string>& args)
{
    Argv av(args);
    try {
        Args a(av.argc(), av.argv(), {});
        const heptane::PcOptions o = heptane::cli::parse_pc_options(a);
        const auto& amg = o.amg;
        if (!(amg.strength_threshold >= 0 && amg.strength_threshold < 1) || amg.pre_sweeps < 1 ||
            amg.pre_sweeps > 20 || amg.post_sweeps != amg.pre_sweeps || amg.coarse_size < 1 ||
            amg.coarse_size > 4000 || amg.max_levels < 1 || amg.max_levels > 50 ||
            o.cpr.pressure_index < 0)
            fail("parse_pc_options returned options outside their documented ranges", args);
    } catch (const UsageError& e) {
        if (!*e.what()) fail("a UsageError without a message", args);
    } catch (const std::exception& e) {
        fail(std::string("parse_pc_options threw something other than UsageError: ") + e.what(),
             args);
    } catch (...) {
        fail("parse_pc_options threw a non-exception", args);
    }
}

void check_pick_executor(const std::string& device, const std::vector<std::string>& args)
{
    if (heptane::built_with_cuda()) return;  // would start a device
    try {
        const auto e = heptane::cli::pick_executor(device);
        if (!e || !e->is_cpu()) fail("pick_executor gave no host executor", args);
        if (device != "cpu" && device != "auto")
            fail("pick_executor accepted '" + device + "'", args);
    } catch (const UsageError& e) {
        if (!*e.what()) fail("a UsageError without a message", args);
    } catch (const heptane::Error& e) {
        // a GPU asked of a CPU-only build (NotSupported): the work fails, exit status 1
        if (!*e.what()) fail("a heptane::Error without a message", args);
    } catch (const std::exception& e) {
        fail(std::string("pick_executor('") + device +
                 "') threw something other than UsageError or heptane::Error: " + e.what(),
             args);
    } catch (...) {
        fail("pick_executor threw a non-exception", args);
    }
}

// ---- 3. main() on help requests and usage errors ------------------------------------------

int saved_stdout = -1, saved_stderr = -1, out_fd = -1, err_fd = -1;

std::string read_all(int fd)
{
    std::string s;
    char buf[4096];
    off_t at = 0;
    for (;;) {
        const ssize_t n = pread(fd, buf, sizeof buf, at);
        if (n <= 0) break;
        s.append(buf, std::size_t(n));
        at += n;
    }
    return s;
}

// Run main() with stdout and stderr going to memory files; returns the exit status.
int run_main(const std::vector<std::string>& args, std::string& out, std::string& err)
{
    Argv av(args);
    std::fflush(stdout);
    std::fflush(stderr);
    // empty, and written from the start (the offset is shared with the dup2'ed 1 and 2)
    if (ftruncate(out_fd, 0) != 0 || ftruncate(err_fd, 0) != 0 || lseek(out_fd, 0, SEEK_SET) != 0 ||
        lseek(err_fd, 0, SEEK_SET) != 0)
        std::abort();
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int rc = -1;
    try {
        rc = heptane_cli_main(av.argc(), av.argv());
    } catch (...) {
        rc = -2;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(saved_stdout, 1);
    dup2(saved_stderr, 2);
    out = read_all(out_fd);
    err = read_all(err_fd);
    return rc;
}

const char* kCommands[] = {"gen",  "info", "convert", "spmv", "solve",
                           "mlem", "lsqr", "pet",     "bench"};
const char* kBenchmarks[] = {"mmread", "spmv", "solve", "precond", "setup", "mlem", "lsqr"};

bool is_help(const std::string& s)
{
    return s == "-h" || s == "--help";
}

// The exit status main() must give for `heptane args...`, or -1 when it would do work (the
// call is then not made).
int expected_status(const std::vector<std::string>& args)
{
    // args[0] is the program name
    if (args.size() < 2) return 2;  // no command: usage on stderr
    const std::string cmd = as_c_string(args[1]);
    if (cmd == "-h" || cmd == "--help" || cmd == "help") return 0;
    bool known = false;
    for (const char* c : kCommands) known |= cmd == c;
    if (!known) return 2;
    std::size_t first = 2;  // the command's first argument
    const Profile* prof = nullptr;
    if (cmd == "bench") {
        if (args.size() < 3) return 2;  // bench usage on stderr
        const std::string what = as_c_string(args[2]);
        if (is_help(what)) return 0;
        bool bench_known = false;
        for (const char* b : kBenchmarks) bench_known |= what == b;
        if (!bench_known) return 2;  // unknown, or comm/scale without MPI: UsageError
        prof = find_profile("bench", what.c_str());
        first = 3;
    } else {
        prof = find_profile(cmd, nullptr);
    }
    if (!prof) std::abort();
    if (args.size() <= first || !is_help(as_c_string(args[first]))) return -1;  // would work
    std::vector<std::string> rest;
    for (std::size_t i = first; i < args.size(); ++i) rest.push_back(as_c_string(args[i]));
    // bench spmv and bench mlem hand an argument list with --out-of-core anywhere to the
    // out-of-core benchmark (apps/cmd_bench.cpp), whose flags are its own
    if (cmd == "bench" &&
        (std::string(prof->bench) == "spmv" || std::string(prof->bench) == "mlem"))
        for (const std::string& a : rest)
            if (a == "--out-of-core")
                return model(rest, {"--out-of-core", "--quiet"}).error ? 2 : 0;
    return model(rest, prof->flags).error ? 2 : 0;
}

void check_main(const std::vector<std::string>& args)
{
    const int want = expected_status(args);
    if (want < 0) return;
    std::string out, err;
    const int rc = run_main(args, out, err);
    if (rc == -2) fail("main() let an exception escape", args);
    if (rc != want)
        fail("main() returned " + std::to_string(rc) + ", expected " + std::to_string(want) +
                 "\n  stdout: " + out.substr(0, 300) + "\n  stderr: " + err.substr(0, 300),
             args);
    if (rc == 0 && out.find("usage") == std::string::npos)
        fail("main() returned 0 without printing a usage", args);
    if (rc == 2 && err.empty()) fail("main() returned 2 without a message on stderr", args);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    // The sanitizers keep reporting to the real stderr while main() runs with its output
    // captured.
    saved_stdout = dup(1);
    saved_stderr = dup(2);
    out_fd = memfd_create("fuzz_cli_stdout", 0);
    err_fd = memfd_create("fuzz_cli_stderr", 0);
    if (saved_stdout < 0 || saved_stderr < 0 || out_fd < 0 || err_fd < 0) {
        std::perror("fuzz_cli_args: setting up the output capture");
        std::abort();
    }
    __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<std::intptr_t>(saved_stderr)));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size < 2) return 0;
    const Profile& prof = profiles()[data[0] % profiles().size()];
    const std::uint8_t form = data[1];

    // the arguments: the rest split at NUL and newline
    std::vector<std::string> args;
    std::string cur;
    for (std::size_t i = 2; i < size && args.size() < 32; ++i) {
        const char c = char(data[i]);
        if (c == '\0' || c == '\n') {
            args.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (args.size() < 32 && (size > 2 || !cur.empty())) args.push_back(cur);
    // the plan bytes (how options are asked) come from the arguments' bytes, backwards
    std::vector<std::uint8_t> plan_bytes(data + 1, data + size);
    std::reverse(plan_bytes.begin(), plan_bytes.end());
    Plan plan{plan_bytes.data(), plan_bytes.size()};

    // 1. Args with the profile's flags
    check_args(prof, args, plan);

    // 2. the value parsers, on the first arguments
    for (std::size_t i = 0; i < args.size() && i < 3; ++i) {
        check_parse_dims(args[i], 1 + form % 3, 1 + form % 3 + (form >> 2) % 3, args);
        check_generate_spec(args[i], args);
        check_pick_executor(args[i], args);
    }
    if (prof.pc_options) check_pc_options(args);

    // 3. main(): as given, with --help after the command, or after a benchmark
    std::vector<std::string> argv{"heptane"};
    switch ((form >> 4) & 3) {
        case 0:
            break;
        case 1:
        case 2:
            argv.push_back(prof.command);
            if (prof.bench) argv.push_back(prof.bench);
            argv.push_back((form & 0x40) ? "-h" : "--help");
            break;
        default:
            argv.push_back("bench");
            break;
    }
    argv.insert(argv.end(), args.begin(), args.end());
    check_main(argv);
    return 0;
}
