// The storage formats and the one place that lists them (docs/design.md §2, "Add a format").
//
// A format is its folder (formats/<name>/: the data structure, CPU kernels in *.cpp, CUDA kernels
// in *.cu, side by side) plus a FormatTraits specialisation in formats/<name>/<name>_format.hpp
// (name, help text, build from canonical COO, bytes model, structure note). This header holds
// the enum and AllFormats; formats/registry.hpp includes every traits header and visits them.
// Everything that lists formats (parsing, help texts, heptane convert, bench spmv, the PETSc
// plugin's option list) reads format_table() or visits AllFormats; nothing else names them all.
#pragma once

#include <string>
#include <vector>

namespace heptane {

enum class Format { coo, csr, ell, hyb, dia, bsr, bdia };

template <Format... Fs>
struct FormatList {
};

/// Every format, in the order help texts and tables list them.
using AllFormats = FormatList<Format::coo, Format::csr, Format::ell, Format::hyb, Format::dia,
                              Format::bsr, Format::bdia>;

/// Specialised in formats/<name>/<name>_format.hpp; see formats/registry.hpp for the members.
template <Format F>
struct FormatTraits;

/// What a format is, read from its FormatTraits (format_table(), format_info()).
struct FormatInfo {
    Format id;
    const char* name;       ///< the name options take and outputs print ("bdiagh")
    const char* alias;      ///< another accepted spelling ("bdia"), or nullptr
    const char* summary;    ///< one line for help texts
    bool block_size;        ///< takes a block size (BSR's b, BDIA-GH's Nc; 0 = detect)
    bool native_transpose;  ///< A^T x by a gather of its own (no atomics, no stored transpose)
};

/// Every format's info, in AllFormats order.
const std::vector<FormatInfo>& format_table();
const FormatInfo& format_info(Format f);

/// A format's name or alias, any case. Throws InputError naming the valid choices.
Format parse_format(const std::string& name);
/// The format's name; "?" for a value that is not a registered format.
const char* to_string(Format f);

/// The names in AllFormats order, joined by `sep` ("coo, csr, ell, hyb, dia, bsr, bdiagh").
std::string format_names(const std::string& sep = ", ");

/// One line per format for --help: "  name   summary\n", names padded to `indent` columns.
std::string format_help(int indent = 10);

}  // namespace heptane
