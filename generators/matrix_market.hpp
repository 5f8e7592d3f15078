// Matrix Market I/O. The reader emits canonical COO (docs/design.md §2); every problem with the
// input is an InputError (or IoError when the file cannot be opened) whose message names the
// file, the 1-based line and the problem, and nothing partial is returned.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
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
    /// Size in bytes of the pieces the data section is split into for parallel parsing
    /// (0 = automatic: one piece below 1 MiB, pieces of 1 to 16 MiB above). The result does
    /// not depend on it; tests set it small to exercise the parallel path on small files.
    std::size_t chunk_bytes = 0;
    /// Refuse (InputError, at the size line) a file whose declared size would need more
    /// than this many bytes of memory to read (0 = the machine's physical memory). The
    /// estimate covers the parsed entries, the symmetric expansion and canonicalize().
    std::size_t memory_limit = 0;
};

/// What the reader saw, for `heptane info` and for warnings.
struct MatrixMarketInfo {
    std::string object;             ///< "matrix"
    std::string format;             ///< "coordinate" or "array"
    std::string field;              ///< "real", "integer" or "pattern"
    std::string symmetry;           ///< "general", "symmetric" or "skew-symmetric"
    offset_t declared_entries = 0;  ///< entries listed in the file (before symmetric expansion)
    offset_t non_finite = 0;        ///< NaN/Inf values seen (with policy warn/accept)
    std::size_t bytes = 0;          ///< file size
};

/// Read a sparse matrix (coordinate format; an array-format file is read as a dense matrix,
/// every value kept, zeros included). Fields real, integer and pattern; symmetries general,
/// symmetric and skew-symmetric. Symmetric and skew-symmetric files must store only the
/// lower triangle (a skew-symmetric one without its diagonal) and are expanded to both
/// triangles (the mirror of a skew-symmetric entry is negated); pattern files get value 1.
/// Explicit zeros are kept. Duplicates are resolved by `opt.duplicates`; NaN/Inf values by
/// `opt.non_finite` (warn prints one line to stderr; warn and accept count them in
/// `info->non_finite`). Blank lines are allowed anywhere after the banner, '%' comment lines
/// anywhere after it too. The result is canonical (sorted, no duplicates).
/// Throws IoError if the file cannot be opened or read; InputError, with a message
/// "FILE:LINE: problem" (LINE 1-based), on malformed content, on a complex or hermitian
/// file, and on a declared size beyond `opt.memory_limit`. Nothing partial is returned and
/// `*info` is written only on success.
template <class T>
Coo<T> read_matrix_market(const std::string& path, const MatrixMarketOptions& opt = {},
                          MatrixMarketInfo* info = nullptr);

/// read_matrix_market() on the bytes of a file already in memory; `name` stands for the
/// file in error messages. (Used by the fuzz target; `data` need not be NUL-terminated.)
template <class T>
Coo<T> read_matrix_market_buffer(std::string_view data, const std::string& name,
                                 const MatrixMarketOptions& opt = {},
                                 MatrixMarketInfo* info = nullptr);

/// Read a vector: array format (n x 1 or 1 x n) or coordinate format with one column or one
/// row (missing entries are 0, duplicates resolved by `opt.duplicates`). Errors as for
/// read_matrix_market(), plus InputError when the file holds a matrix of another shape.
template <class T>
std::vector<T> read_matrix_market_vector(const std::string& path,
                                         const MatrixMarketOptions& opt = {});

/// read_matrix_market_vector() on bytes in memory; `name` stands for the file in messages.
template <class T>
std::vector<T> read_matrix_market_vector_buffer(std::string_view data, const std::string& name,
                                                const MatrixMarketOptions& opt = {});

/// Write a coordinate real general file (1-based; each value in the shortest form that
/// reads back to the same double or float, so values round-trip exactly; NaN and Inf are
/// written as nan and inf). Entries are written in the order stored. Writes to PATH.tmp and
/// renames it to PATH, so a failed write leaves no partial file. Each line of `comment`
/// becomes a comment line prefixed with '%'. A device matrix is copied to the host first.
/// Throws IoError when the file cannot be created or written (e.g. its directory does not
/// exist), DimensionMismatch when the arrays differ in length, InputError when an index
/// lies outside the matrix.
template <class T>
void write_matrix_market(const std::string& path, const Coo<T>& a, const std::string& comment = "");
/// Write a vector in array real general format (n x 1), values as above, through PATH.tmp.
/// Throws IoError when the file cannot be created or written.
template <class T>
void write_matrix_market_vector(const std::string& path, const std::vector<T>& x,
                                const std::string& comment = "");

}  // namespace heptane
