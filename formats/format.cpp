// The format table (formats/format.hpp), read from the registry's traits.
#include "formats/format.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/error.hpp"
#include "formats/registry.hpp"

namespace heptane {

const std::vector<FormatInfo>& format_table()
{
    static const std::vector<FormatInfo> table = [] {
        std::vector<FormatInfo> t;
        for_each_format([&t](auto traits) { t.push_back(decltype(traits)::info); });
        return t;
    }();
    return table;
}

const FormatInfo& format_info(Format f)
{
    for (const FormatInfo& i : format_table())
        if (i.id == f) return i;
    HEPTANE_THROW(InputError, "unknown matrix format " << static_cast<int>(f));
}

Format parse_format(const std::string& name)
{
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (const FormatInfo& i : format_table())
        if (n == i.name || (i.alias != nullptr && n == i.alias)) return i.id;
    HEPTANE_THROW(InputError, "unknown matrix format '" << name << "'; valid: " << format_names());
}

const char* to_string(Format f)
{
    for (const FormatInfo& i : format_table())
        if (i.id == f) return i.name;
    return "?";  // not a registered format (a value cast from an integer)
}

std::string format_names(const std::string& sep)
{
    std::string s;
    for (const FormatInfo& i : format_table()) s += (s.empty() ? "" : sep) + i.name;
    return s;
}

std::string format_help(int indent)
{
    std::string s;
    for (const FormatInfo& i : format_table()) {
        char line[256];
        std::snprintf(line, sizeof line, "%*s%-8s %s\n", indent, "", i.name, i.summary);
        s += line;
    }
    return s;
}

}  // namespace heptane
