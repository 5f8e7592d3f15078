// A small option parser for the heptane subcommands: --name value, --name=value, -o value,
// boolean flags, positionals. Unknown options and missing values are UsageErrors that the
// main turns into a message and exit status 2.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace heptane::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Args {
public:
    /// `flags`: options that take no value (e.g. "--json"); every other "-x"/"--xx" takes one.
    Args(int argc, char** argv, const std::set<std::string>& flags);

    bool help() const { return help_; }
    bool flag(const std::string& name);
    std::optional<std::string> get(const std::string& name);
    /// Value of the first of `names` that is present.
    std::optional<std::string> get_any(std::initializer_list<std::string> names);
    std::string get_or(const std::string& name, const std::string& def);
    double get_double(const std::string& name, double def);
    long long get_int(const std::string& name, long long def);
    const std::vector<std::string>& positionals() const { return pos_; }
    /// Throws UsageError if an option was given that nobody asked for, or if the number of
    /// positionals is outside [min_pos, max_pos].
    void finish(std::size_t min_pos, std::size_t max_pos);

private:
    std::map<std::string, std::string> opts_;
    std::set<std::string> flags_given_;
    std::set<std::string> used_;
    std::set<std::string> missing_;  // options at the end with no value after them
    std::vector<std::string> pos_;
    bool help_ = false;
};

/// Parse "16x16x32" (or "16,16,32") into integers; throws UsageError.
std::vector<long long> parse_dims(const std::string& s, std::size_t min_n, std::size_t max_n);

}  // namespace heptane::cli
