// What heptane bench lsqr and bench mlem share: the options (a PET-like system or files, the
// formats and A^T strategies, precision, device, iterations), the system and its transpose,
// the rows of the table, the loop over formats x A^T strategies and the CSV/JSON output. Each
// benchmark keeps its own measurement, floors and table columns.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.hpp"
#include "apps/common.hpp"
#include "core/timing.hpp"
#include "formats/format.hpp"
#include "formats/matrix.hpp"
#include "generators/pet.hpp"

namespace heptane::cli {

struct ProjectionBench {
    PetSpec spec;
    std::string formats, transposes, prec, device;
    int iters = 0, check_iters = 0, reps = 0;
    int subsets = 0;  ///< OSEM subsets (bench mlem; 0: none)
    std::optional<std::string> csv, json;
};

/// The options both benchmarks take; --subsets only when `subsets` (bench mlem). Default
/// iterations and check iterations as given. Finishes `args` (0 or 2 positional files: A and
/// `rhs`) and throws UsageError for what is wrong.
ProjectionBench parse_projection_bench(Args& args, int iters, int check_iters, bool subsets,
                                       const char* rhs);

/// One row of the table: a format and A^T strategy, its check and its times (medians; the
/// minima too) and floor bytes.
struct ProjectionRow {
    std::string format, transpose, status;
    double check_err = 0;
    double fwd_s = 0, fwd_bytes = 0, back_s = 0, back_bytes = 0;  // medians
    double fwd_min = 0, back_min = 0, iter_min = 0;               // minima
    double iter_s = 0, iter_bytes = 0;
    double osem_iter_s = 0;  // bench mlem with --subsets

    /// check_err = max |got − ref| / max |ref| (divided by 1 where ref is 0); status "ok"
    /// within tol, else "FAILED". Returns whether it is ok.
    template <class VT>
    bool check(const std::vector<VT>& got, const std::vector<double>& ref, double tol)
    {
        double num = 0, den = 0;
        for (std::size_t j = 0; j < got.size(); ++j) {
            num = std::max(num, std::abs(double(got[j]) - ref[j]));
            den = std::max(den, std::abs(ref[j]));
        }
        return check_value(num / (den > 0 ? den : 1), tol);
    }
    /// check_err = err (a check computed elsewhere); status "ok" within tol, else "FAILED".
    bool check_value(double err, double tol)
    {
        check_err = err;
        status = check_err <= tol ? "ok" : "FAILED";
        return status == "ok";
    }
    /// The products' medians and minima.
    void set_products(const TimeStats& fwd, const TimeStats& back)
    {
        fwd_s = fwd.med;
        fwd_min = fwd.min;
        back_s = back.med;
        back_min = back.min;
    }
};

/// f(MT{}, VT{}) with the value and vector types of precision p: double/double, float/float
/// (single), float/double (mixed).
template <class F>
void with_precision(Precision p, F&& f)
{
    if (p == Precision::double_)
        f(double{}, double{});
    else if (p == Precision::single)
        f(float{}, float{});
    else
        f(float{}, double{});
}

/// A^T as canonical COO (the stored-transpose floor's matrix).
Coo<double> transposed(const Coo<double>& a);

/// Measure the copy bandwidth of `exec` (the floor's reference) and print the system's two
/// header lines ("LSQR on DEVICE (PREC): m x n, ..." and "system ...; copy bandwidth ...").
/// Returns the bandwidth in GB/s.
double print_projection_system(const char* method, const Executor& exec, const std::string& prec,
                               const Coo<double>& a, const std::string& source, int reps,
                               int iters);

/// For every format x A^T strategy of `b`: a row with its names, measured by `measure` (an
/// heptane::Error makes it "n/a: ..."), printed by `print`, kept in `rows`. Returns the number
/// of rows whose check FAILED.
int for_each_projection_case(
    const ProjectionBench& b, std::vector<ProjectionRow>& rows,
    const std::function<void(ProjectionRow&, Format, const FormatOptions&)>& measure,
    const std::function<void(const ProjectionRow&)>& print);

/// The rows as CSV and JSON (when b.csv / b.json name files), with the system's header fields;
/// `osem`: the OSEM columns (osem_subsets, osem_iter_s) too. IoError when a file cannot be
/// written.
void write_projection_results(const ProjectionBench& b, const std::string& source,
                              const std::string& dev, const std::string& device_name,
                              const Coo<double>& a, double copy_gbs,
                              const std::vector<ProjectionRow>& rows, bool osem);

}  // namespace heptane::cli
