// Structure detection: see detect.hpp. Every pass is O(nnz) or O(rows) and parallel over
// rows or block rows; the only extra memory is a row pointer (rows + 1) and one flag per
// possible block offset (rows/Nc + cols/Nc).
#include "formats/detect/detect.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "formats/hyb/hyb.hpp"

namespace heptane {
namespace {

/// Below these sizes a loop runs on one thread: a parallel region costs more than the work,
/// and its barrier stalls on a loaded host.
constexpr offset_t parallel_min_entries = 65536;
constexpr index_t parallel_min_rows = 16384;

/// Thread-safe bounds check and canonical-order check in one parallel pass: the first
/// offending entry, or nnz.
offset_t first_non_canonical(index_t rows, index_t cols, offset_t nnz, const index_t* r,
                             const index_t* c)
{
    offset_t bad = nnz;
#pragma omp parallel for reduction(min : bad) if (nnz >= parallel_min_entries)
    for (offset_t k = 0; k < nnz; ++k) {
        const bool in_range = r[k] >= 0 && r[k] < rows && c[k] >= 0 && c[k] < cols;
        const bool ordered = k == 0 || r[k] > r[k - 1] || (r[k] == r[k - 1] && c[k] > c[k - 1]);
        if (!in_range || !ordered) bad = std::min(bad, k);
    }
    return bad;
}

/// CSR row pointer of sorted rows: ptr[r] = first k with row[k] >= r. Each ptr[r] is
/// written by exactly one k (the first entry at or after r), so the pass is race-free.
std::vector<offset_t> row_pointer(index_t rows, offset_t nnz, const index_t* r)
{
    std::vector<offset_t> ptr(std::size_t(rows) + 1, nnz);
#pragma omp parallel for schedule(static) if (nnz >= parallel_min_entries)
    for (offset_t k = 0; k < nnz; ++k) {
        // rows r[k-1]+1 .. r[k] start at k (none unless the row changes here)
        const index_t lo = k == 0 ? 0 : r[k - 1] + 1;
        for (index_t rr = lo; rr <= r[k]; ++rr) ptr[rr] = k;
    }
    return ptr;
}

struct RowPass {
    RowStats stats;
    offset_t gcd = 0;  // gcd of the non-zero row lengths (0 if all rows are empty)
};

RowPass row_pass(index_t rows, offset_t nnz, const std::vector<offset_t>& ptr)
{
    RowPass out;
    if (rows == 0) return out;
    // Integer reductions only, so the result does not depend on the thread count. The average
    // deviation uses sum_r |len_r - mean| = 2 sum_{len_r > mean} (len_r - mean) (the signed
    // deviations sum to 0), with len_r > mean  <=>  len_r * rows > nnz (exact in 64 bits:
    // len_r, rows < 2^31).
    offset_t mn = nnz, mx = 0, g = 0, long_sum = 0, long_count = 0;
    index_t empty = 0;
#pragma omp parallel if (rows >= parallel_min_rows)
    {
        offset_t g_local = 0;
#pragma omp for reduction(min : mn) reduction(max : mx) \
    reduction(+ : empty, long_sum, long_count) schedule(static)
        for (index_t r = 0; r < rows; ++r) {
            const offset_t len = ptr[r + 1] - ptr[r];
            mn = std::min(mn, len);
            mx = std::max(mx, len);
            empty += len == 0;
            if (len * offset_t(rows) > nnz) {
                long_sum += len;
                ++long_count;
            }
            g_local = std::gcd(g_local, len);  // gcd(x, 0) = x: empty rows drop out
        }
#pragma omp critical
        g = std::gcd(g, g_local);
    }
    const double mean = double(nnz) / rows;
    const double dev = 2.0 * (double(long_sum) - double(long_count) * mean);
    out.stats.min = mn;
    out.stats.max = mx;
    out.stats.mean = mean;
    out.stats.avg_deviation_pct = mean > 0 ? dev / rows / mean * 100.0 : 0.0;
    out.stats.empty_rows = empty;
    out.gcd = g;
    return out;
}

/// Whether every aligned b x b block that holds an entry holds b^2 of them. Equivalently,
/// for each block row: its first row's columns come in whole aligned runs of b, and its
/// other rows have exactly the same columns. (A run of b strictly increasing columns that
/// starts at a multiple of b and ends b-1 later is the whole block.)
bool blocks_are_full(index_t rows, index_t b, const std::vector<offset_t>& ptr, const index_t* col)
{
    const index_t nbr = rows / b;
    std::atomic<bool> failed{false};
    const bool parallel = ptr[rows] >= parallel_min_entries;
#pragma omp parallel for schedule(dynamic, 256) if (parallel)
    for (index_t br = 0; br < nbr; ++br) {
        if (failed.load(std::memory_order_relaxed)) continue;
        const index_t r0 = br * b;
        const offset_t len = ptr[r0 + 1] - ptr[r0];
        const index_t* c0 = col + ptr[r0];
        bool ok = len % b == 0;
        for (offset_t k = 0; ok && k < len; k += b)
            ok = c0[k] % b == 0 && c0[k + b - 1] == c0[k] + b - 1;
        for (index_t a = 1; ok && a < b; ++a)
            ok = ptr[r0 + a + 1] - ptr[r0 + a] == len &&
                 std::memcmp(col + ptr[r0 + a], c0, std::size_t(len) * sizeof(index_t)) == 0;
        if (!ok) failed.store(true, std::memory_order_relaxed);
    }
    return !failed.load();
}

index_t find_block_size(index_t rows, index_t cols, offset_t row_gcd, index_t max_b,
                        const std::vector<offset_t>& ptr, const index_t* col)
{
    // b must divide both sizes and every row length (a full block row has len = b * blocks)
    const offset_t hi = std::min<offset_t>(
        {offset_t(max_b), offset_t(rows), offset_t(cols), row_gcd > 0 ? row_gcd : offset_t(max_b)});
    for (index_t b = index_t(hi); b >= 2; --b) {
        if (rows % b || cols % b || (row_gcd > 0 && row_gcd % b)) continue;
        if (blocks_are_full(rows, b, ptr, col)) return b;
    }
    return 1;
}

/// Distinct block offsets, from the first row of each block row (the others repeat it once
/// the block size is known). One flag per possible offset d in (-nbr, nbc): flags are read
/// before they are written, so the hot, already-set flags are only read (no cache-line
/// ping-pong between threads).
std::vector<index_t> distinct_block_offsets(index_t rows, index_t cols, index_t b,
                                            const std::vector<offset_t>& ptr, const index_t* col)
{
    const index_t nbr = rows / b, nbc = cols / b;
    if (nbr == 0 || nbc == 0) return {};
    std::vector<unsigned char> seen(std::size_t(nbr) + nbc - 1, 0);
    unsigned char* flag = seen.data();
#pragma omp parallel for schedule(static) if (ptr[rows] >= parallel_min_entries)
    for (index_t br = 0; br < nbr; ++br) {
        const index_t r0 = br * b;
        for (offset_t k = ptr[r0]; k < ptr[r0 + 1]; k += b) {
            const std::size_t i = std::size_t(col[k] / b - br + nbr - 1);
            unsigned char v;
#pragma omp atomic read
            v = flag[i];
            if (!v) {
#pragma omp atomic write
                flag[i] = 1;
            }
        }
    }
    std::vector<index_t> out;
    for (std::size_t i = 0; i < seen.size(); ++i)
        if (seen[i]) out.push_back(index_t(offset_t(i) - nbr + 1));
    return out;
}

/// Slots inside the matrix for block offsets `d` and block size b: offset d is valid on
/// block rows R with max(0, -d) <= R < min(nbr, nbc - d).
offset_t bdia_slots_in_bounds(index_t rows, index_t cols, index_t b, const std::vector<index_t>& d)
{
    const offset_t nbr = rows / b, nbc = cols / b;
    offset_t blocks = 0;
    for (index_t q : d)
        blocks += std::max<offset_t>(0, std::min(nbr, nbc - q) - std::max<offset_t>(0, -q));
    return blocks * b * b;
}

/// Block couplings that cross a face of the J x H x I box: +-1 from j = J-1 / j = 0, and
/// (3-D) +-J from h = H-1 / h = 0. (+-J*H never wraps; in 2-D +-J is the outer axis.)
offset_t count_face_couplings(index_t b, int dims, index_t J, index_t H, index_t nbr,
                              const std::vector<offset_t>& ptr, const index_t* col, bool sparse)
{
    offset_t n = 0;
#pragma omp parallel for reduction(+ : n) schedule(static) if (nbr >= parallel_min_rows)
    for (index_t br = 0; br < nbr; ++br) {
        const index_t j = br % J, h = (br / J) % H;
        const index_t r0 = br * b;
        if (!sparse) {  // full blocks: the block row's first row has every block once
            for (offset_t k = ptr[r0]; k < ptr[r0 + 1]; k += b) {
                const index_t d = col[k] / b - br;
                n += (d == 1 && j == J - 1) || (d == -1 && j == 0);
                if (dims == 3) n += (d == J && h == H - 1) || (d == -J && h == 0);
            }
            continue;
        }
        // sparse blocks: any row of the block row may hold the block; count each block once
        bool seen[4] = {false, false, false, false};  // +1, -1, +J, -J
        for (offset_t k = ptr[r0]; k < ptr[r0 + b]; ++k) {
            const index_t d = col[k] / b - br;
            seen[0] = seen[0] || (d == 1 && j == J - 1);
            seen[1] = seen[1] || (d == -1 && j == 0);
            if (dims == 3) {
                seen[2] = seen[2] || (d == J && h == H - 1);
                seen[3] = seen[3] || (d == -J && h == 0);
            }
        }
        n += offset_t(seen[0]) + seen[1] + seen[2] + seen[3];
    }
    return n;
}

/// Distinct block offsets of every entry (blocks need not be full), at most `limit` + 1 of
/// them (more: the caller gives up).
std::vector<index_t> all_block_offsets(index_t rows, index_t b, const std::vector<offset_t>& ptr,
                                       const index_t* col, std::size_t limit)
{
    std::vector<index_t> out;
    for (index_t r = 0; r < rows && out.size() <= limit; ++r) {
        const index_t br = r / b;
        for (offset_t k = ptr[r]; k < ptr[r + 1]; ++k) {
            const index_t d = col[k] / b - br;
            if (std::find(out.begin(), out.end(), d) == out.end()) {
                out.push_back(d);
                if (out.size() > limit) break;
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string pct(double fraction)
{
    char buf[32];
    const double p = fraction * 100.0;
    std::snprintf(buf, sizeof buf, p != 0 && std::abs(p) < 0.1 ? "%.2g %%" : "%.1f %%", p);
    return buf;
}

std::string num(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

std::string offsets_text(const std::vector<index_t>& v, std::size_t max_shown = 12)
{
    std::ostringstream o;
    for (std::size_t i = 0; i < v.size() && i < max_shown; ++i) o << (i ? ", " : "") << v[i];
    if (v.size() > max_shown) o << ", ... (" << v.size() << " in all)";
    return o.str();
}

/// The GH analysis of the offsets (fills hepta, grid_dims, grid, grid_variant,
/// face_couplings, hepta_reason).
void analyse_grid(Structure& s, const std::vector<offset_t>& ptr, const index_t* col)
{
    const index_t b = s.block_size;
    const std::string pad = "BDIA would pad " + pct(s.bdia_padding);
    auto no = [&](const std::string& why) {
        s.hepta = false;
        s.hepta_reason = why;
    };
    if (s.rows != s.cols)
        return no("not square (" + std::to_string(s.rows) + " x " + std::to_string(s.cols) +
                  "): a GH matrix is square");
    if (s.nnz == 0) return no("empty matrix");
    const auto& d = s.block_offsets;
    const std::size_t D = d.size();
    std::vector<index_t> pos;
    for (index_t q : d)
        if (q > 0) pos.push_back(q);
    if (pos.size() > 3)
        return no(std::to_string(D) +
                  " distinct block offsets, more than the 7 of a 7-point "
                  "stencil; " +
                  pad);
    for (index_t q : d)
        if (!std::binary_search(d.begin(), d.end(), -q))
            return no("block offsets {" + offsets_text(d) + "} are not symmetric (" +
                      std::to_string(q) + " without " + std::to_string(-q) +
                      "): a GH stencil couples each neighbour pair both ways");
    if (!std::binary_search(d.begin(), d.end(), 0))
        return no("no diagonal blocks (offset 0 missing)");
    if (pos.empty())
        return no(
            "only the diagonal blocks are stored (block-diagonal matrix): no couplings "
            "between cells, so no grid to find");
    if (pos[0] != 1)
        return no("smallest positive block offset is " + std::to_string(pos[0]) +
                  ", not 1: a GH stencil couples cell c to c+1");
    const index_t G = s.rows / b;
    index_t J = G, H = 1, I = 1;
    const int dims = int(pos.size());
    if (dims >= 2) {
        J = pos[1];
        if (dims == 2) {
            if (G % J)
                return no("offsets {1, " + std::to_string(J) + "}: " + std::to_string(G) +
                          " cells are not a multiple of J = " + std::to_string(J));
            H = G / J;
        } else {
            const index_t jh = pos[2];
            if (jh % J)
                return no("offsets {1, " + std::to_string(J) + ", " + std::to_string(jh) +
                          "}: " + std::to_string(jh) +
                          " is not a multiple of J = " + std::to_string(J) + ", so it is not J*H");
            if (G % jh)
                return no("offsets {1, " + std::to_string(J) + ", " + std::to_string(jh) +
                          "}: " + std::to_string(G) +
                          " cells are not a multiple of J*H = " + std::to_string(jh));
            H = jh / J;
            I = G / jh;
        }
    }
    s.hepta = true;
    s.grid_dims = dims;
    s.grid = {J, H, I};
    s.face_couplings =
        dims >= 2 ? count_face_couplings(b, dims, J, H, G, ptr, col, s.sparse_blocks) : 0;
    s.grid_variant = s.face_couplings == 0;
    std::ostringstream o;
    const char* stencil = dims == 3 ? "7-point" : dims == 2 ? "5-point" : "3-point";
    o << stencil << " stencil on a ";
    if (dims == 1)
        o << J << "-cell line (reported as J = " << J << ", H = I = 1)";
    else if (dims == 2)
        o << J << " x " << H << " grid";
    else
        o << J << " x " << H << " x " << I << " grid";
    o << ", blocks of " << b;
    if (s.sparse_blocks) o << " (sparse: " << pct(s.block_fill) << " of their slots hold entries)";
    o << " (block offsets " << offsets_text(d) << "); ";
    if (dims == 1)
        o << "a line has no box faces";
    else if (s.grid_variant)
        o << "grid variant: no couplings across the box faces";
    else {
        // couplings a banded matrix has across faces: x: 2(H*I - 1); y (3-D): 2J(I - 1)
        const offset_t possible =
            2 * (offset_t(H) * I - 1) + (dims == 3 ? 2 * offset_t(J) * (I - 1) : 0);
        o << "banded variant: " << s.face_couplings << " of the " << possible
          << " block couplings across box faces are stored";
    }
    // entries of the complete stencil: grid variant Nc^2 (7G - 2(HI + JI + JH)) (every interior
    // face coupled both ways; with I = 1 or H = I = 1 this is the 5- or 3-point count),
    // banded: every in-bounds slot
    const offset_t bb = offset_t(b) * b;
    if (s.sparse_blocks) {  // the stencil's count of entries assumes full blocks
        o << "; " << pad;
        s.hepta_reason = o.str();
        return;
    }
    const offset_t expected =
        s.grid_variant
            ? bb * (7 * offset_t(G) - 2 * (offset_t(H) * I + offset_t(J) * I + offset_t(J) * H))
            : s.bdia_slots;
    if (s.nnz == expected)
        o << "; all couplings of the stencil are stored";
    else
        o << "; " << expected - s.nnz << " of its " << expected
          << " entries are missing (absent couplings, e.g. zero transmissibility)";
    o << "; " << pad;
    s.hepta_reason = o.str();
}

/// Sparse blocks (Structure::block_size): when the full-block Nc gives no GH stencil, every
/// b = 2 .. max_sparse_block_size dividing the size whose blocks holding an entry have at most 7
/// block offsets is analysed as a grid; the 2-D or 3-D grid variant (no couplings across the
/// box's faces) with the least padding (the smaller b on a tie) replaces the result, the first
/// reason kept after it.
void try_sparse_blocks(Structure& s, const DetectOptions& opt, const std::vector<offset_t>& ptr,
                       const index_t* col)
{
    std::optional<Structure> best;
    const index_t hi = std::min(opt.max_sparse_block_size, s.rows);
    for (index_t b = 2; b <= hi; ++b) {
        if (s.rows % b || b == s.block_size) continue;
        std::vector<index_t> d = all_block_offsets(s.rows, b, ptr, col, 7);
        if (d.size() > 7) continue;
        Structure t = s;
        t.block_size = b;
        t.sparse_blocks = true;
        t.block_offsets = std::move(d);
        t.bdia_slots = bdia_slots_in_bounds(s.rows, s.cols, b, t.block_offsets);
        t.bdia_padding = double(t.bdia_slots - s.nnz) / double(s.nnz);
        // the slots of the blocks that hold an entry: every in-bounds slot of a grid's stencil
        // when the grid variant holds them all; a lower bound on fill otherwise
        t.block_fill = double(s.nnz) / double(t.bdia_slots);
        analyse_grid(t, ptr, col);
        // a real grid only: 2-D or 3-D with nothing coupled across the box's faces (a band
        // cut into blocks would look like a narrow grid whose rows wrap)
        if (!t.hepta || t.grid_dims < 2 || !t.grid_variant) continue;
        if (!best || t.bdia_padding < best->bdia_padding) best = std::move(t);
    }
    if (!best) return;
    best->hepta_reason += "; with full blocks (Nc = " + std::to_string(s.block_size) +
                          ") it is not: " + s.hepta_reason;
    s = std::move(*best);
}

// HYB's ELL width for the row lengths of `ptr` (formats/hyb: choose_hyb_width).
index_t hyb_ell_width(const std::vector<offset_t>& ptr)
{
    std::vector<offset_t> len(ptr.size() > 0 ? ptr.size() - 1 : 0);
    for (std::size_t i = 0; i < len.size(); ++i) len[i] = ptr[i + 1] - ptr[i];
    return choose_hyb_width(len);
}

void choose_format(Structure& s, const DetectOptions& opt, const std::vector<offset_t>& ptr)
{
    const RowStats& rs = s.row_stats;
    const std::size_t D = s.block_offsets.size();
    if (s.nnz == 0) {
        s.format = Format::csr;
        s.format_reason = "empty matrix";
        return;
    }
    std::ostringstream why;
    const std::string shape = s.hepta ? s.hepta_reason.substr(0, s.hepta_reason.find(';'))
                                      : std::to_string(D) + " block diagonals of block size " +
                                            std::to_string(s.block_size);
    if (D <= std::size_t(opt.max_bdia_offsets) && s.bdia_padding <= opt.max_bdia_padding) {
        s.format = Format::bdia;
        why << shape << ": " << D << " block diagonals (<= " << opt.max_bdia_offsets
            << "), BDIA-GH pads " << pct(s.bdia_padding) << " (<= " << pct(opt.max_bdia_padding)
            << ") and stores no column indices";
        s.format_reason = why.str();
        return;
    }
    // why not BDIA
    std::ostringstream not_bdia;
    if (s.hepta) not_bdia << shape << ", but ";
    if (D > std::size_t(opt.max_bdia_offsets))
        not_bdia << "not BDIA-GH: " << D << " distinct block offsets (more than "
                 << opt.max_bdia_offsets << "); it would pad " << pct(s.bdia_padding);
    else
        not_bdia << "not BDIA-GH: it would pad " << pct(s.bdia_padding) << " (more than "
                 << pct(opt.max_bdia_padding) << ")";
    const std::string rows_text = "row lengths " + std::to_string(rs.min) + ".." +
                                  std::to_string(rs.max) + ", mean " + num(rs.mean) +
                                  ", average deviation " + num(rs.avg_deviation_pct) + " %";
    const double ell_padding = (double(s.rows) * double(rs.max) - double(s.nnz)) / double(s.nnz);
    if (rs.avg_deviation_pct <= opt.ell_max_avg_deviation_pct &&
        ell_padding <= opt.ell_max_padding) {
        s.format = Format::ell;
        why << "ell: rows are uniform (" << rows_text << "), ELL pads " << pct(ell_padding);
    } else if (s.block_size >= 2 && !s.sparse_blocks) {
        s.format = Format::bsr;
        why << "bsr: dense " << s.block_size << " x " << s.block_size << " blocks and rows too "
            << "unequal for ELL (" << rows_text << ")";
    } else if ((double(rs.max) >= opt.hyb_min_max_over_mean * rs.mean ||
                rs.avg_deviation_pct >= opt.hyb_min_avg_deviation_pct) &&
               hyb_ell_width(ptr) > 0) {
        s.format = Format::hyb;
        why << "hyb: rows are very unequal (" << rows_text << "): ELL for the common width, "
            << "COO for the long rows";
    } else if (double(rs.max) >= opt.hyb_min_max_over_mean * rs.mean ||
               rs.avg_deviation_pct >= opt.hyb_min_avg_deviation_pct) {
        // HYB's ELL part needs max(4096, rows/3) rows of a common width: none here, so HYB
        // would be COO alone (measured on the H100: CSR 1.5x faster on sherman1 and
        // tomography_spex)
        s.format = Format::csr;
        why << "csr: rows are very unequal (" << rows_text << "), but HYB's ELL part would be "
            << "empty (fewer than 4096 rows share a width), so HYB would be COO alone";
    } else {
        s.format = Format::csr;
        why << "csr: rows too unequal for ELL (ELL would pad " << pct(ell_padding)
            << "), not unequal enough for HYB (" << rows_text << ")";
    }
    s.format_reason = why.str() + "; " + not_bdia.str();
}

void json_string(std::ostringstream& o, const std::string& s)
{
    o << '"';
    for (unsigned char ch : s) {
        switch (ch) {
            case '"':
                o << "\\\"";
                break;
            case '\\':
                o << "\\\\";
                break;
            case '\n':
                o << "\\n";
                break;
            case '\t':
                o << "\\t";
                break;
            case '\r':
                o << "\\r";
                break;
            default:
                if (ch < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                    o << buf;
                } else {
                    o << ch;
                }
        }
    }
    o << '"';
}

void json_double(std::ostringstream& o, double x)
{
    if (!std::isfinite(x)) {
        o << "null";
        return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    o << buf;
}

/// Everything after the row pointer: block size, offsets, grid, format.
Structure detect_rows(index_t rows, index_t cols, const std::vector<offset_t>& ptr,
                      const index_t* c, const DetectOptions& opt)
{
    const offset_t nnz = ptr[std::size_t(rows)];
    Structure s;
    s.rows = rows;
    s.cols = cols;
    s.nnz = nnz;
    const RowPass rp = row_pass(rows, nnz, ptr);
    s.row_stats = rp.stats;
    s.block_size = nnz == 0 ? 1 : find_block_size(rows, cols, rp.gcd, opt.max_block_size, ptr, c);
    s.block_offsets = distinct_block_offsets(rows, cols, s.block_size, ptr, c);
    s.bdia_slots = bdia_slots_in_bounds(rows, cols, s.block_size, s.block_offsets);
    s.bdia_padding = nnz > 0 ? double(s.bdia_slots - nnz) / double(nnz) : 0.0;
    analyse_grid(s, ptr, c);
    if (!s.hepta && s.rows == s.cols && nnz > 0) try_sparse_blocks(s, opt, ptr, c);
    choose_format(s, opt, ptr);
    return s;
}

}  // namespace

template <class T>
Structure detect_structure(const Coo<T>& a, const DetectOptions& opt)
{
    HEPTANE_ENSURE(a.row.on_host() && a.col.on_host(), NotSupported,
                   "detect_structure works on host COO");
    HEPTANE_ENSURE(opt.max_block_size >= 1, InputError,
                   "detect_structure: max_block_size must be >= 1, got " << opt.max_block_size);
    const offset_t nnz = a.nnz();
    HEPTANE_ENSURE(offset_t(a.row.size()) == nnz && offset_t(a.col.size()) == nnz,
                   DimensionMismatch,
                   "detect_structure: COO arrays differ in length (row "
                       << a.row.size() << ", col " << a.col.size() << ", val " << nnz << ")");
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    const offset_t bad = first_non_canonical(a.rows, a.cols, nnz, r, c);
    HEPTANE_ENSURE(bad == nnz, InputError,
                   "detect_structure needs canonical COO (sorted by row and column, no "
                   "duplicates, indices inside the "
                       << a.rows << " x " << a.cols << " matrix); entry " << bad << " at ("
                       << r[bad] << ", " << c[bad] << ") (0-based) breaks it");

    return detect_rows(a.rows, a.cols, row_pointer(a.rows, nnz, r), c, opt);
}

Structure detect_structure(const CsrView& a, const DetectOptions& opt)
{
    const index_t rows = a.rows, cols = a.columns();
    HEPTANE_ENSURE(
        rows >= 0 && cols >= 0 && (rows == 0 || a.row_ptr), InputError,
        "detect_structure: a CSR view of " << rows << " x " << cols << " without row pointers");
    HEPTANE_ENSURE(
        rows == 0 || a.row_ptr[0] == 0, InputError,
        "detect_structure: the CSR view's row pointers start at " << a.row_ptr[0] << ", not 0");
    const offset_t nnz = a.nnz();
    std::vector<offset_t> ptr(std::size_t(rows) + 1, 0);
    // widen the row pointers and check every row (first offending row, or rows)
    index_t bad = rows;
#pragma omp parallel for reduction(min : bad) schedule(static) if (nnz >= parallel_min_entries)
    for (index_t r = 0; r < rows; ++r) {
        const offset_t b = a.row_ptr[r], e = a.row_ptr[r + 1];
        ptr[std::size_t(r) + 1] = e;
        bool ok = e >= b && e <= nnz;
        for (offset_t k = b; ok && k < e; ++k)
            ok = a.col_idx[k] >= 0 && a.col_idx[k] < cols &&
                 (k == b || a.col_idx[k] > a.col_idx[k - 1]);
        if (!ok) bad = std::min(bad, r);
    }
    HEPTANE_ENSURE(
        bad == rows, InputError,
        "detect_structure needs each CSR row's columns strictly ascending and inside the "
            << rows << " x " << cols << " matrix; row " << bad << " (0-based) breaks it");
    return detect_rows(rows, cols, ptr, a.col_idx, opt);
}

std::string to_json(const Structure& s)
{
    std::ostringstream o;
    o << "{\"rows\": " << s.rows << ", \"cols\": " << s.cols << ", \"nnz\": " << s.nnz
      << ", \"block_size\": " << s.block_size
      << ", \"sparse_blocks\": " << (s.sparse_blocks ? "true" : "false")
      << ", \"block_fill\": " << s.block_fill
      << ", \"num_block_offsets\": " << s.block_offsets.size() << ", \"block_offsets\": ";
    if (s.block_offsets.size() > 100) {
        o << "null";
    } else {
        o << '[';
        for (std::size_t i = 0; i < s.block_offsets.size(); ++i)
            o << (i ? ", " : "") << s.block_offsets[i];
        o << ']';
    }
    o << ", \"bdia_slots\": " << s.bdia_slots << ", \"bdia_padding\": ";
    json_double(o, s.bdia_padding);
    o << ", \"hepta\": " << (s.hepta ? "true" : "false") << ", \"hepta_reason\": ";
    json_string(o, s.hepta_reason);
    o << ", \"grid_dims\": " << s.grid_dims << ", \"grid\": ";
    if (s.grid_dims == 0) {
        o << "null";
    } else {
        o << '[';
        for (int i = 0; i < s.grid_dims; ++i) o << (i ? ", " : "") << s.grid[i];
        o << ']';
    }
    o << ", \"grid_variant\": " << (s.grid_variant ? "true" : "false")
      << ", \"face_couplings\": " << s.face_couplings
      << ", \"row_stats\": {\"min\": " << s.row_stats.min << ", \"max\": " << s.row_stats.max
      << ", \"mean\": ";
    json_double(o, s.row_stats.mean);
    o << ", \"avg_deviation_pct\": ";
    json_double(o, s.row_stats.avg_deviation_pct);
    o << ", \"empty_rows\": " << s.row_stats.empty_rows << "}, \"format\": ";
    json_string(o, to_string(s.format));
    o << ", \"format_reason\": ";
    json_string(o, s.format_reason);
    o << '}';
    return o.str();
}

std::string to_text(const Structure& s)
{
    std::ostringstream o;
    o << "size        " << s.rows << " x " << s.cols << ", " << s.nnz << " stored entries\n"
      << "blocks      " << s.block_size << " x " << s.block_size
      << (s.sparse_blocks ? " (sparse, " + pct(s.block_fill) + " filled)" : std::string()) << ", "
      << s.block_offsets.size() << " block diagonals {" << offsets_text(s.block_offsets) << "}\n"
      << "BDIA-GH     " << s.bdia_slots << " slots, padding " << pct(s.bdia_padding) << "\n"
      << "hepta       " << (s.hepta ? "yes: " : "no: ") << s.hepta_reason << "\n"
      << "rows        " << s.row_stats.min << ".." << s.row_stats.max << " entries, mean "
      << num(s.row_stats.mean) << ", average deviation " << num(s.row_stats.avg_deviation_pct)
      << " %";
    if (s.row_stats.empty_rows) o << ", " << s.row_stats.empty_rows << " empty";
    o << "\nformat      " << to_string(s.format) << " (" << s.format_reason << ")\n";
    return o.str();
}

template Structure detect_structure<double>(const Coo<double>&, const DetectOptions&);
template Structure detect_structure<float>(const Coo<float>&, const DetectOptions&);

}  // namespace heptane
