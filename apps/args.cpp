#include "apps/args.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace heptane::cli {

Args::Args(int argc, char** argv, const std::set<std::string>& flags)
{
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            help_ = true;
            continue;
        }
        if (a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.') {
            std::string name = a, value;
            auto eq = a.find('=');
            if (eq != std::string::npos) {
                name = a.substr(0, eq);
                value = a.substr(eq + 1);
                if (flags.count(name)) throw UsageError("option " + name + " takes no value");
                opts_[name] = value;
            } else if (flags.count(name)) {
                flags_given_.insert(name);
            } else {
                if (i + 1 >= argc) {  // unknown (finish) or missing its value (get)
                    missing_.insert(name);
                    continue;
                }
                opts_[name] = argv[++i];
            }
        } else {
            pos_.push_back(a);
        }
    }
}

bool Args::flag(const std::string& name)
{
    used_.insert(name);
    return flags_given_.count(name) > 0;
}

std::optional<std::string> Args::get(const std::string& name)
{
    used_.insert(name);
    if (missing_.count(name)) throw UsageError("option " + name + " needs a value");
    auto it = opts_.find(name);
    if (it == opts_.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> Args::get_any(std::initializer_list<std::string> names)
{
    std::optional<std::string> r;
    for (const auto& n : names) {
        auto v = get(n);
        if (v && !r) r = v;
    }
    return r;
}

std::string Args::get_or(const std::string& name, const std::string& def)
{
    auto v = get(name);
    return v ? *v : def;
}

double Args::get_double(const std::string& name, double def)
{
    auto v = get(name);
    if (!v) return def;
    char* end = nullptr;
    double d = std::strtod(v->c_str(), &end);
    if (end == v->c_str() || *end != '\0')
        throw UsageError("option " + name + " expects a number, got '" + *v + "'");
    return d;
}

long long Args::get_int(const std::string& name, long long def)
{
    auto v = get(name);
    if (!v) return def;
    char* end = nullptr;
    long long d = std::strtoll(v->c_str(), &end, 10);
    if (end == v->c_str() || *end != '\0')
        throw UsageError("option " + name + " expects an integer, got '" + *v + "'");
    return d;
}

void Args::finish(std::size_t min_pos, std::size_t max_pos)
{
    for (const auto& [k, v] : opts_)
        if (!used_.count(k)) throw UsageError("unknown option " + k);
    for (const auto& k : flags_given_)
        if (!used_.count(k)) throw UsageError("unknown option " + k);
    for (const auto& k : missing_)
        if (!used_.count(k)) throw UsageError("unknown option " + k);
    if (pos_.size() < min_pos) throw UsageError("missing argument (see --help)");
    if (pos_.size() > max_pos) throw UsageError("unexpected argument '" + pos_[max_pos] + "'");
}

std::vector<long long> parse_dims(const std::string& s, std::size_t min_n, std::size_t max_n)
{
    std::vector<long long> out;
    std::size_t i = 0;
    while (i <= s.size()) {
        std::size_t j = s.find_first_of("x,X", i);
        if (j == std::string::npos) j = s.size();
        std::string part = s.substr(i, j - i);
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(part.c_str(), &end, 10);
        if (part.empty() || *end != '\0' || v <= 0)
            throw UsageError("bad dimensions '" + s +
                             "': expected positive integers like 16x16x32");
        // heptane's indices are 32-bit: a larger extent must not wrap into a small one
        if (errno == ERANGE || v > std::numeric_limits<std::int32_t>::max()) {
            std::string msg = "bad dimensions '";
            msg += s;
            msg += "': ";
            msg += part;
            msg += " is larger than ";
            msg += std::to_string(std::numeric_limits<std::int32_t>::max());
            throw UsageError(msg);
        }
        out.push_back(v);
        i = j + 1;
    }
    if (out.size() < min_n || out.size() > max_n)
        throw UsageError("bad dimensions '" + s + "': expected " + std::to_string(min_n) +
                         (min_n == max_n ? "" : " to " + std::to_string(max_n)) + " numbers");
    return out;
}

}  // namespace heptane::cli
