// Matrix Market I/O. The reader emits canonical COO (DESIGN.md §2); every problem with the
// input is an InputError (or IoError when the file cannot be opened) whose message names the
// file, the 1-based line and the problem, and nothing partial is returned.
#pragma once

#include <string>
#include <vector>

#include "formats/coo/coo.hpp"

namespace heptane {

/// What to do with NaN or Inf values in a file.
enum class NonFinitePolicy { error, warn, accept };

struct MatrixMarketOptions {
    DuplicatePolicy duplicates = DuplicatePolicy::sum;
    NonFinitePolicy non_finite = NonFinitePolicy::error;
    /// Threads for parsing (0 = all OpenMP threads). Large files are split at line starts
    /// and parsed in parallel.
    int threads = 0;
};

/// What the reader saw, for `heptane info` and for warnings.
struct MatrixMarketInfo {
    std::string object;    ///< "matrix"
    std::string format;    ///< "coordinate" or "array"
    std::string field;     ///< "real", "integer" or "pattern"
    std::string symmetry;  ///< "general", "symmetric" or "skew-symmetric"
    offset_t declared_entries = 0;  ///< entries listed in the file (before symmetric expansion)
    offset_t non_finite = 0;        ///< NaN/Inf values seen (with policy warn/accept)
    std::size_t bytes = 0;          ///< file size
};

/// Read a sparse matrix (coordinate format; an array-format file is read as a dense matrix).
/// Symmetric and skew-symmetric files are expanded to both triangles; pattern files get
/// value 1. Throws IoError if the file cannot be read, InputError on malformed content.
template <class T>
Coo<T> read_matrix_market(const std::string& path, const MatrixMarketOptions& opt = {},
                          MatrixMarketInfo* info = nullptr);

/// Read a vector: array format (n x 1) or coordinate format with one column (missing
/// entries are 0). Also accepts a 1 x n array.
template <class T>
std::vector<T> read_matrix_market_vector(const std::string& path,
                                         const MatrixMarketOptions& opt = {});

/// Write a coordinate real general file (1-based, 17 significant digits for double, 9 for
/// float, so values round-trip exactly). Writes to a temporary file and renames it, so a
/// failed write leaves no partial file. `comment` lines are prefixed with '%'.
template <class T>
void write_matrix_market(const std::string& path, const Coo<T>& a,
                         const std::string& comment = "");
/// Write a vector in array real general format.
template <class T>
void write_matrix_market_vector(const std::string& path, const std::vector<T>& x,
                                const std::string& comment = "");

}  // namespace heptane
