// Structure detection (docs/design.md §1, "Detection"): from any canonical COO matrix find the
// block size, the block diagonals, the padding BDIA-GH would add, a 7-point (3-D), 5-point
// (2-D) or 3-point (1-D) grid behind the pattern, row-length statistics, and the storage
// format to use with a human-readable reason. Values are never looked at: a stored explicit
// zero counts as an entry.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"
#include "formats/format.hpp"

namespace heptane {

/// Stored entries per row.
struct RowStats {
    offset_t min = 0;
    offset_t max = 0;
    double mean = 0;
    /// Average deviation as a percentage of the mean: mean_r |len_r - mean| / mean * 100
    /// (0 for an empty matrix).
    double avg_deviation_pct = 0;
    index_t empty_rows = 0;
};

/// Thresholds of the format choice (see Structure::format).
struct DetectOptions {
    index_t max_block_size = 64;  ///< largest block size tried
    /// Largest block size tried for sparse blocks (below), 1 to try none.
    index_t max_sparse_block_size = 16;
    index_t max_bdia_offsets = 27;          ///< BDIA needs D <= this (a 27-point stencil)
    double max_bdia_padding = 0.30;         ///< ... and padding <= this (fraction of nnz)
    double ell_max_avg_deviation_pct = 20;  ///< ELL needs rows this uniform ...
    double ell_max_padding = 0.30;          ///< ... and rows*max_len - nnz <= this * nnz
    double hyb_min_max_over_mean = 3;       ///< HYB when max_len >= this * mean ...
    double hyb_min_avg_deviation_pct = 30;  ///< ... or the average deviation is this large
};

struct Structure {
    index_t rows = 0;
    index_t cols = 0;
    offset_t nnz = 0;
    /// Nc: the largest b <= max_block_size dividing rows and cols such that every b x b block
    /// (aligned to multiples of b) that holds an entry holds b^2 entries. 1 at least.
    /// Sparse blocks: when that Nc gives no GH stencil, the b <= max_sparse_block_size (rows
    /// divisible by b) whose blocks holding an entry form a 2-D or 3-D grid (the grid variant:
    /// nothing coupled across the box's faces) with the least padding, even though those blocks are
    /// not full (e.g. a coupled system whose off-diagonal blocks couple each unknown only to
    /// itself); sparse_blocks is then set.
    index_t block_size = 1;
    /// block_size was found with blocks that are not full (see block_size).
    bool sparse_blocks = false;
    /// Entries over the b^2 slots of the blocks that hold any (1 for full blocks).
    double block_fill = 1;
    /// The distinct block offsets (block column - block row), ascending.
    std::vector<index_t> block_offsets;
    /// Slots BDIA-GH with these offsets and this block size would hold, counting only slots
    /// whose column lies inside the matrix: sum over offsets d of Nc^2 * (number of block rows
    /// R with 0 <= R + d < cols/Nc).
    offset_t bdia_slots = 0;
    /// (bdia_slots - nnz) / nnz: the zeros BDIA would store per stored entry (0 when nnz = 0).
    /// A banded GH matrix has 0; the grid variant has its missing face couplings.
    double bdia_padding = 0;

    /// True when the pattern is a GH stencil: square, block offsets symmetric, 0 plus one,
    /// two or three positive offsets 1 < J < J*H (in blocks) that fit the size (see grid).
    bool hepta = false;
    /// 3 (7-point, J x H x I), 2 (5-point, J x H), 1 (3-point line of J cells), 0 (no grid).
    int grid_dims = 0;
    /// J, H, I with the unused dimensions 1 ({0, 0, 0} when grid_dims = 0). A 1-D line of
    /// G cells (offsets {-1, 0, 1}) is reported as J = G, H = I = 1: the GH matrix of a
    /// G x 1 x 1 grid (e.g. opm_matr33: 3 cells of Nc = 3, grid {3, 1, 1}).
    std::array<index_t, 3> grid{0, 0, 0};
    /// For a grid: true when no entry couples two cells across a face of the box (cell
    /// (J-1, h, i) with (0, h+1, i), or (j, H-1, i) with (j, 0, i+1)): a real grid. False: the
    /// banded variant (some such couplings are stored).
    bool grid_variant = false;
    /// For a grid: stored block couplings that cross a face of the box.
    offset_t face_couplings = 0;
    /// Why the pattern is or is not a GH stencil, with the numbers.
    std::string hepta_reason;

    RowStats row_stats;
    /// The format to use: BDIA-GH when D <= max_bdia_offsets and padding <= max_bdia_padding;
    /// else ELL when the rows are uniform; else BSR when block_size >= 2; else HYB when the
    /// rows are very unequal; else CSR.
    Format format = Format::csr;
    /// Why that format, with the numbers (and, when not BDIA-GH, why not).
    std::string format_reason;
};

/// Detect the structure of canonical host COO `a` (sorted by row then column, no
/// duplicates). O(nnz) work per tried block size (a failing one usually stops at its first
/// block row), OpenMP-parallel, O(rows + cols) extra memory. Throws InputError if `a` is
/// not canonical, NotSupported if it is not on the host. T = double or float.
template <class T>
Structure detect_structure(const Coo<T>& a, const DetectOptions& opt = {});

/// The same on a borrowed CSR view (e.g. a PETSc AIJ matrix's arrays), without a copy to COO:
/// each row's columns strictly ascending and inside the matrix, row pointers non-decreasing
/// from 0 (InputError naming the first row that is not). Same result as on the view's COO.
Structure detect_structure(const CsrView& a, const DetectOptions& opt = {});

/// The structure as one JSON object with keys rows, cols, nnz, block_size, sparse_blocks,
/// block_fill, block_offsets
/// (the list, or null when there are more than 100; num_block_offsets always), bdia_slots,
/// bdia_padding, hepta, hepta_reason, grid_dims, grid ([J,H,I], [J,H], [J] or null),
/// grid_variant, face_couplings, row_stats {min, max, mean, avg_deviation_pct, empty_rows},
/// format, format_reason.
std::string to_json(const Structure& s);

/// A few lines for people: size, blocks, offsets, grid, row statistics, format and why.
std::string to_text(const Structure& s);

}  // namespace heptane
