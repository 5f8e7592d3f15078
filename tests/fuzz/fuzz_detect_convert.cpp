// libFuzzer target: structure detection and every storage format on small arbitrary matrices.
//
// The input is decoded (Decoder below; bytes past the end of the input come from a generator
// seeded by the input, so a file alone reproduces a run) into a matrix of at most 64 x 64
// with one of four shapes: random entries (duplicates, empty rows and columns, up to 512
// entries), a general-hepta pattern (J x H x I cells of Nc unknowns, banded or grid, the
// couplings between cells dense blocks or one unknown to the same unknown only, sometimes with
// a few entries removed or added), dense b x b blocks at random block positions, or a few full
// diagonals. Values are either exact (small dyadic numbers, so every sum and product the
// library computes is exact in double whatever the order) or general finite numbers, and a
// stored zero (also -0.0) is an entry like any other.
//
// Checked, with anything unexpected ending in abort() so that libFuzzer records the input:
//  * canonicalize() with each duplicate policy against a std::map of the raw entries, and the
//    refusal (InputError) of an entry out of range or, under DuplicatePolicy::error, of a
//    duplicate; a raw (non-canonical) COO must be refused by detection and by every format.
//  * detect_structure() against brute force: block size (every touched aligned block full,
//    and no larger admissible size works; or, where detect.hpp has sparse blocks, a 2-D or
//    3-D GH grid of blocks that are not full, with their fill), block offsets, BDIA slots and
//    padding, row statistics, the GH grid fields; the same answer from float values; the
//    chosen format must build with the detected block size; to_json / to_text must not fail.
//  * every format of the Format enum (formats/matrix.hpp), built with the host API that
//    `heptane convert` uses (*_from_coo) and converted back with to_coo(): entry for entry,
//    bit for bit, the same canonical COO. Format options (block size, block offsets, ELL and
//    HYB width, DIA diagonal limit) come from the input; a format may refuse only by throwing
//    a heptane::Error with a message, and only when its documented precondition fails (an
//    accepted matrix that breaks it, or a refusal of a valid one, is a bug as well).
//  * make_matrix_operator() for every format in fp64, fp32 and mixed precision, apply and
//    apply_transpose (scatter or stored transpose) against a product computed here from the
//    canonical COO: exact where the arithmetic is exact (fp64 vectors on exact values), else
//    within (terms + 4) ulps of the sum of the absolute values of the terms. With beta = 0
//    y starts as NaN: the operator must not read it (core/operator.hpp). spmv_traffic()
//    (what `heptane convert` reports) must build exactly what the operator builds.
// FUZZ_VERBOSE=1 prints what detection found for each input.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/executor.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bsr/bsr.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"
#include "formats/detect/detect.hpp"
#include "formats/dia/dia.hpp"
#include "formats/ell/ell.hpp"
#include "formats/hyb/hyb.hpp"
#include "formats/matrix.hpp"

namespace {

using namespace heptane;

constexpr index_t kMaxSize = 64;
constexpr int kMaxRandomEntries = 512;

// Every storage format of the library: the Format enum of formats/matrix.hpp. Initialize()
// checks that the enum has no value past these, so a new format cannot be left out silently.
constexpr std::array<Format, 7> kFormats = {Format::coo, Format::csr, Format::ell, Format::hyb,
                                            Format::dia, Format::bsr, Format::bdia};

// The checking code here is not instrumented for coverage: its loops would cost more than the
// library's, and its branches tell libFuzzer nothing about the library.
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))

// The canonical matrix of the current input, printed when a check fails (1-based, as in a
// Matrix Market file, so it can be fed to `heptane info` / `heptane convert`).
const Coo<double>* current = nullptr;

[[noreturn]] void fail(const char* what)
{
    std::fprintf(stderr, "fuzz_detect_convert: %s\n", what);
    if (current) {
        const Coo<double>& a = *current;
        std::fprintf(stderr, "%%%%MatrixMarket matrix coordinate real general\n%d %d %lld\n",
                     a.rows, a.cols, static_cast<long long>(a.nnz()));
        for (offset_t k = 0; k < a.nnz(); ++k)
            std::fprintf(stderr, "%d %d %.17g\n", a.row[k] + 1, a.col[k] + 1, a.val[k]);
    }
    std::abort();
}
#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) fail("check failed: " #cond " (line " + std::to_string(__LINE__) + ")"); \
    } while (0)
[[noreturn]] void fail(const std::string& what)
{
    fail(what.c_str());
}

// Input bytes, then a splitmix64 stream seeded by the input once they run out.
class Decoder {
public:
    Decoder(const std::uint8_t* data, std::size_t size) : p_(data), n_(size)
    {
        state_ = 0x9e3779b97f4a7c15ull ^ size;
        for (std::size_t i = 0; i < size; ++i) state_ = state_ * 0x100000001b3ull ^ data[i];
    }
    std::uint8_t byte()
    {
        if (i_ < n_) return p_[i_++];
        state_ += 0x9e3779b97f4a7c15ull;
        std::uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return std::uint8_t(z ^ (z >> 31));
    }
    std::uint16_t u16() { return std::uint16_t(byte() | (unsigned(byte()) << 8)); }
    /// Uniform-ish in [0, n) (n >= 1).
    int below(int n) { return n <= 256 ? byte() % n : u16() % n; }
    bool bit() { return byte() & 1; }

private:
    const std::uint8_t* p_;
    std::size_t n_, i_ = 0;
    std::uint64_t state_;
};

struct Entry {
    index_t r, c;
    double v;
};

// Values. Exact: k * 2^-s with |k| < 2^11, s <= 3, so with x = m * 2^-t (|m| < 2^7, t <= 3),
// alpha, beta in {+-2^-2 .. +-2}, up to 512 duplicates summed and 64 terms per row, every
// intermediate has fewer than 53 significant bits: fp64 results are exact in any order.
struct ValueMaker {
    bool exact = true;
    int scale = 0;
    double value(Decoder& d) const
    {
        const std::uint16_t raw = d.u16();
        if (exact) {
            switch (raw & 15) {
                case 14:
                    return 0.0;
                case 15:
                    return -0.0;
                default:
                    return std::ldexp(double(std::int16_t(raw) >> 5), -scale);
            }
        }
        // general: 1.m * 2^e, e in [-30, 30], a 16-bit mantissa (exact in float too)
        if ((raw & 31) == 31) return (raw & 32) ? -0.0 : 0.0;
        const double m = 1.0 + double(raw) / 65536.0;
        const int e = d.below(61) - 30;
        return (d.bit() ? -1 : 1) * std::ldexp(m, e);
    }
    double vector_value(Decoder& d) const
    {
        if (exact) return std::ldexp(double(std::int8_t(d.byte())), -(d.byte() & 3));
        const double m = 1.0 + double(d.u16()) / 65536.0;
        return (d.bit() ? -1 : 1) * std::ldexp(m, d.below(41) - 20);
    }
    double scalar(Decoder& d) const
    {
        static const double exact_choices[] = {1, -1, 2, -2, 0.5, -0.5, 0.25, 0, 1, 1};
        const std::uint8_t b = d.byte();
        if (exact || b < 128) return exact_choices[b % 10];
        return (b & 1 ? -1 : 1) * std::ldexp(1.0 + double(d.byte()) / 256.0, d.below(9) - 4);
    }
};

// ---- the matrix ------------------------------------------------------------------------

struct Generated {
    index_t rows = 0, cols = 0;
    std::vector<Entry> raw;  // in generation order: unsorted, maybe with duplicates
    bool hepta = false;
};

void add_random(Generated& g, Decoder& d, const ValueMaker& vm, int count)
{
    if (g.rows == 0 || g.cols == 0) return;
    for (int k = 0; k < count; ++k) {
        const index_t r = index_t(d.below(g.rows)), c = index_t(d.below(g.cols));
        g.raw.push_back({r, c, vm.value(d)});
    }
}

void remove_some(Generated& g, Decoder& d, int count)
{
    for (int k = 0; k < count && !g.raw.empty(); ++k)
        g.raw.erase(g.raw.begin() + d.below(int(g.raw.size())));
}

// A general-hepta (GH) pattern: J x H x I cells, Nc unknowns each, dense Nc x Nc blocks at the
// cell itself and its neighbours (grid: inside the box; banded: block offsets +-1, +-J, +-J*H
// cut only at the matrix bounds), as generators/hepta.hpp builds them.
void make_hepta(Generated& g, Decoder& d, const ValueMaker& vm)
{
    index_t J = 1 + d.below(5), H = 1 + d.below(4), I = 1 + d.below(4), nc = 1 + d.below(4);
    const std::uint8_t variant = d.byte();
    const bool banded = variant & 1;
    // off-diagonal blocks that couple each unknown only to itself (sparse blocks)
    const bool diagonal_couplings = variant & 2;
    while (J * H * I * nc > kMaxSize) {
        if (I > 1)
            --I;
        else if (H > 1)
            --H;
        else if (nc > 1)
            --nc;
        else
            --J;
    }
    const index_t G = J * H * I;
    g.rows = g.cols = G * nc;
    g.hepta = true;
    std::set<index_t> seen;
    for (index_t c = 0; c < G; ++c) {
        const index_t j = c % J, h = (c / J) % H, i = c / (J * H);
        std::vector<index_t> nb{c};
        if (banded) {
            for (index_t off : {1, J, J * H})
                for (index_t s : {-1, 1})
                    if (c + s * off >= 0 && c + s * off < G) nb.push_back(c + s * off);
        } else {
            if (j > 0) nb.push_back(c - 1);
            if (j + 1 < J) nb.push_back(c + 1);
            if (h > 0) nb.push_back(c - J);
            if (h + 1 < H) nb.push_back(c + J);
            if (i > 0) nb.push_back(c - J * H);
            if (i + 1 < I) nb.push_back(c + J * H);
        }
        std::sort(nb.begin(), nb.end());
        nb.erase(std::unique(nb.begin(), nb.end()), nb.end());
        for (index_t n : nb)
            for (index_t a = 0; a < nc; ++a)
                for (index_t b = 0; b < nc; ++b)
                    if (n == c || a == b || !diagonal_couplings)
                        g.raw.push_back({c * nc + a, n * nc + b, vm.value(d)});
    }
    // Usually intact; otherwise a few entries removed (absent couplings) or added.
    const std::uint8_t edit = d.byte();
    if (edit & 0x30) return;
    remove_some(g, d, edit & 3);
    add_random(g, d, vm, (edit >> 2) & 3);
}

// Dense b x b blocks at random aligned positions (BSR, block detection).
void make_blocks(Generated& g, Decoder& d, const ValueMaker& vm)
{
    const index_t b = 1 + d.below(16);
    g.rows = b * d.below(kMaxSize / b + 1);
    g.cols = d.bit() ? g.rows : b * d.below(kMaxSize / b + 1);
    const int nblocks = g.rows && g.cols ? d.below(17) : 0;
    for (int k = 0; k < nblocks; ++k) {
        const index_t br = index_t(d.below(g.rows / b)), bc = index_t(d.below(g.cols / b));
        for (index_t a = 0; a < b; ++a)
            for (index_t c = 0; c < b; ++c) g.raw.push_back({br * b + a, bc * b + c, vm.value(d)});
        if (g.raw.size() >= 1024) break;
    }
    const std::uint8_t edit = d.byte();
    if (edit & 0x30) return;
    remove_some(g, d, edit & 3);
    add_random(g, d, vm, (edit >> 2) & 3);
}

// A few full diagonals (DIA, BDIA with block size 1).
void make_diagonals(Generated& g, Decoder& d, const ValueMaker& vm)
{
    g.rows = index_t(d.below(kMaxSize + 1));
    g.cols = d.bit() ? g.rows : index_t(d.below(kMaxSize + 1));
    const int nd = d.below(6);
    for (int k = 0; k < nd && g.rows > 0 && g.cols > 0; ++k) {
        const index_t off = index_t(d.below(g.rows + g.cols - 1)) - (g.rows - 1);
        for (index_t r = 0; r < g.rows; ++r)
            if (r + off >= 0 && r + off < g.cols) g.raw.push_back({r, r + off, vm.value(d)});
    }
    add_random(g, d, vm, d.below(4));
}

void make_random(Generated& g, Decoder& d, const ValueMaker& vm)
{
    g.rows = index_t(d.below(kMaxSize + 1));
    g.cols = d.bit() ? g.rows : index_t(d.below(kMaxSize + 1));
    add_random(g, d, vm, d.below(kMaxRandomEntries + 1));
}

NO_COVERAGE Coo<double> to_coo_arrays(index_t rows, index_t cols, const std::vector<Entry>& e)
{
    std::vector<index_t> r, c;
    std::vector<double> v;
    for (const Entry& x : e) {
        r.push_back(x.r);
        c.push_back(x.c);
        v.push_back(x.v);
    }
    return Coo<double>{rows, cols, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                       Array<double>(std::move(v))};
}

template <class T>
NO_COVERAGE bool bits_equal(const std::vector<T>& a, const std::vector<T>& b)
{
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Exactly the same matrix: sizes, indices, and values bit for bit (a -0.0 stays -0.0).
template <class T>
NO_COVERAGE bool same_bits(const Coo<T>& a, const Coo<T>& b)
{
    return a.rows == b.rows && a.cols == b.cols && a.row.host() == b.row.host() &&
           a.col.host() == b.col.host() && bits_equal(a.val.host(), b.val.host());
}

void check_message(const Error& e)
{
    if (std::string(e.what()).empty()) fail("a heptane::Error without a message");
}

// ---- canonicalize ----------------------------------------------------------------------

// canonicalize() against a std::map; returns the canonical matrix (duplicates summed).
NO_COVERAGE Coo<double> check_canonicalize(const Generated& g, bool exact)
{
    std::map<std::pair<index_t, index_t>, std::vector<double>> groups;
    for (const Entry& e : g.raw) groups[{e.r, e.c}].push_back(e.v);
    bool has_dup = false;
    for (const auto& [k, v] : groups) has_dup |= v.size() > 1;

    for (DuplicatePolicy policy :
         {DuplicatePolicy::sum, DuplicatePolicy::error, DuplicatePolicy::keep_last}) {
        Coo<double> a = to_coo_arrays(g.rows, g.cols, g.raw);
        try {
            canonicalize(a, policy);
        } catch (const InputError& e) {
            check_message(e);
            if (policy == DuplicatePolicy::error && has_dup) continue;
            fail(std::string("canonicalize refused a valid matrix: ") + e.what());
        } catch (...) {
            fail("canonicalize threw something other than InputError");
        }
        if (policy == DuplicatePolicy::error && has_dup)
            fail("canonicalize(error) accepted duplicates");
        CHECK(is_canonical(a));
        CHECK(a.nnz() == offset_t(groups.size()));
        std::size_t k = 0;
        for (const auto& [rc, vals] : groups) {
            CHECK(a.row[k] == rc.first && a.col[k] == rc.second);
            const double got = a.val[k];
            if (policy == DuplicatePolicy::keep_last) {
                CHECK(std::memcmp(&got, &vals.back(), sizeof got) == 0);
            } else if (vals.size() == 1) {
                CHECK(std::memcmp(&got, &vals[0], sizeof got) == 0);
            } else {
                long double sum = 0, mag = 0;
                for (double v : vals) sum += v, mag += std::fabs(v);
                if (exact)
                    CHECK(got == double(sum));
                else
                    CHECK(std::fabs(got - double(sum)) <= (vals.size() + 2) * 0x1p-52 * mag);
            }
            ++k;
        }
    }
    Coo<double> a = to_coo_arrays(g.rows, g.cols, g.raw);
    canonicalize(a, DuplicatePolicy::sum);
    return a;
}

// ---- detection ---------------------------------------------------------------------------

// Dense pattern of a canonical matrix.
struct Pattern {
    index_t rows, cols;
    std::vector<char> p;
    NO_COVERAGE explicit Pattern(const Coo<double>& a)
        : rows(a.rows), cols(a.cols), p(std::size_t(rows) * cols)
    {
        for (offset_t k = 0; k < a.nnz(); ++k) p[std::size_t(a.row[k]) * cols + a.col[k]] = 1;
    }
    NO_COVERAGE bool at(index_t r, index_t c) const { return p[std::size_t(r) * cols + c]; }
    NO_COVERAGE bool blocks_full(index_t b) const
    {
        for (index_t br = 0; br < rows / b; ++br)
            for (index_t bc = 0; bc < cols / b; ++bc) {
                int n = 0;
                for (index_t i = 0; i < b; ++i)
                    for (index_t j = 0; j < b; ++j) n += at(br * b + i, bc * b + j);
                if (n != 0 && n != b * b) return false;
            }
        return true;
    }
};

// Structure::sparse_blocks / block_fill where this version of detect.hpp has them (blocks
// found by their GH stencil though not full), else full blocks only.
template <class S>
auto sparse_blocks_of(const S& s, int) -> decltype(bool(s.sparse_blocks))
{
    return s.sparse_blocks;
}
template <class S>
bool sparse_blocks_of(const S&, long)
{
    return false;
}
template <class S>
auto block_fill_of(const S& s, int) -> decltype(double(s.block_fill))
{
    return s.block_fill;
}
template <class S>
double block_fill_of(const S&, long)
{
    return 1;
}

NO_COVERAGE void check_structure(const Coo<double>& a, const Structure& s, const DetectOptions& opt)
{
    const Pattern pat(a);
    CHECK(s.rows == a.rows && s.cols == a.cols && s.nnz == a.nnz());
    // block size: admissible, and no larger one is
    const index_t b = s.block_size;
    const bool sparse = sparse_blocks_of(s, 0);
    CHECK(b >= 1);
    if (a.nnz() == 0) {
        CHECK(b == 1 && !sparse);
    } else if (sparse) {
        // blocks of a GH stencil that are not full: square, b divides the size, a 2-D or 3-D
        // grid (checked below), never BSR
        CHECK(b >= 2 && a.rows == a.cols && a.rows % b == 0);
        CHECK(s.hepta && s.grid_dims >= 2 && s.format != Format::bsr);
    } else {
        CHECK(block_fill_of(s, 0) == 1);
        CHECK(b <= opt.max_block_size && a.rows % b == 0 && a.cols % b == 0);
        CHECK(pat.blocks_full(b));
        for (index_t c = b + 1; c <= std::min({opt.max_block_size, a.rows, a.cols}); ++c)
            if (a.rows % c == 0 && a.cols % c == 0 && pat.blocks_full(c))
                fail("detect_structure missed a larger block size " + std::to_string(c) +
                     " (found " + std::to_string(b) + ")");
    }
    // block offsets
    std::set<index_t> offs;
    for (offset_t k = 0; k < a.nnz(); ++k) offs.insert(a.col[k] / b - a.row[k] / b);
    CHECK(std::vector<index_t>(offs.begin(), offs.end()) == s.block_offsets);
    // BDIA slots inside the matrix
    offset_t slots = 0;
    for (index_t d : offs)
        for (index_t R = 0; R < a.rows / b; ++R)
            if (R + d >= 0 && R + d < a.cols / b) slots += offset_t(b) * b;
    CHECK(s.bdia_slots == slots);
    CHECK(s.bdia_slots >= s.nnz);
    if (sparse) CHECK(block_fill_of(s, 0) == double(a.nnz()) / double(slots));
    if (a.nnz() > 0)
        CHECK(s.bdia_padding == double(slots - a.nnz()) / double(a.nnz()));
    else
        CHECK(s.bdia_padding == 0);
    // row statistics
    const RowStats& rs = s.row_stats;
    if (a.rows == 0) {
        CHECK(rs.min == 0 && rs.max == 0 && rs.mean == 0 && rs.empty_rows == 0);
    } else {
        std::vector<offset_t> len(a.rows, 0);
        for (offset_t k = 0; k < a.nnz(); ++k) ++len[a.row[k]];
        const offset_t mn = *std::min_element(len.begin(), len.end());
        const offset_t mx = *std::max_element(len.begin(), len.end());
        const index_t empty = index_t(std::count(len.begin(), len.end(), 0));
        CHECK(rs.min == mn && rs.max == mx && rs.empty_rows == empty);
        const double mean = double(a.nnz()) / a.rows;
        CHECK(rs.mean == mean);
        double dev = 0;
        for (offset_t l : len) dev += std::fabs(double(l) - mean);
        const double pct = mean > 0 ? dev / a.rows / mean * 100 : 0;
        CHECK(std::fabs(rs.avg_deviation_pct - pct) <= 1e-9 * (1 + pct));
    }
    // GH grid
    CHECK(!s.hepta_reason.empty());
    if (s.hepta) {
        CHECK(a.rows == a.cols && a.nnz() > 0);
        CHECK(s.grid_dims >= 1 && s.grid_dims <= 3);
        CHECK(offs.count(0));
        std::vector<index_t> pos;
        for (index_t d : offs) {
            CHECK(offs.count(-d));
            if (d > 0) pos.push_back(d);
        }
        CHECK(int(pos.size()) == s.grid_dims && pos[0] == 1);
        const auto& gr = s.grid;
        CHECK(gr[0] >= 1 && gr[1] >= 1 && gr[2] >= 1);
        CHECK(offset_t(gr[0]) * gr[1] * gr[2] * b == a.rows);
        if (s.grid_dims >= 2) CHECK(pos[1] == gr[0]);
        if (s.grid_dims == 3) CHECK(pos[2] == gr[0] * gr[1]);
        if (s.grid_dims == 1) CHECK(gr[1] == 1 && gr[2] == 1 && s.face_couplings == 0);
        CHECK(s.grid_variant == (s.face_couplings == 0));
    } else {
        CHECK(s.grid_dims == 0 && s.face_couplings == 0);
    }
    // the chosen format is a real one
    CHECK(!s.format_reason.empty());
    const Format f = s.format;
    CHECK(parse_format(to_string(f)) == f);
    if (f == Format::bdia)
        CHECK(s.block_offsets.size() <= std::size_t(opt.max_bdia_offsets) &&
              s.bdia_padding <= opt.max_bdia_padding);
    if (f == Format::bsr) CHECK(b >= 2);
    CHECK(!to_json(s).empty() && to_json(s).front() == '{' && to_json(s).back() == '}');
    CHECK(!to_text(s).empty());
}

NO_COVERAGE bool same_structure(const Structure& x, const Structure& y)
{
    return x.rows == y.rows && x.cols == y.cols && x.nnz == y.nnz && x.block_size == y.block_size &&
           x.block_offsets == y.block_offsets && x.bdia_slots == y.bdia_slots &&
           x.hepta == y.hepta && x.grid_dims == y.grid_dims && x.grid == y.grid &&
           x.grid_variant == y.grid_variant && x.face_couplings == y.face_couplings &&
           x.hepta_reason == y.hepta_reason && x.format == y.format &&
           x.format_reason == y.format_reason;
}

// ---- formats: build from COO and back ----------------------------------------------------

struct Options {
    index_t bsr_b = 1, bdia_b = 1;  // block sizes for the host round trip
    std::vector<index_t> bdia_offsets;
    index_t ell_width = -1, hyb_width = -1, dia_max = 1024;
};

std::string describe(const Options& o)
{
    std::string t = " (BSR block size " + std::to_string(o.bsr_b) + ", BDIA block size " +
                    std::to_string(o.bdia_b) + ", BDIA offsets {";
    for (std::size_t i = 0; i < o.bdia_offsets.size(); ++i)
        t += (i ? ", " : "") + std::to_string(o.bdia_offsets[i]);
    return t + "}, ELL width " + std::to_string(o.ell_width) + ", HYB width " +
           std::to_string(o.hyb_width) + ", DIA limit " + std::to_string(o.dia_max) + ")";
}

// Whether the format's documented precondition holds for canonical `a` with `o`.
NO_COVERAGE bool should_build(const Coo<double>& a, Format f, const Options& o, const Pattern& pat)
{
    auto divides = [&](index_t b) { return b >= 1 && a.rows % b == 0 && a.cols % b == 0; };
    switch (f) {
        case Format::coo:
        case Format::csr:
        case Format::hyb:
            return true;
        case Format::ell: {
            offset_t longest = 0;
            for (index_t r = 0; r < a.rows; ++r) {
                offset_t n = 0;
                for (index_t c = 0; c < a.cols; ++c) n += pat.at(r, c);
                longest = std::max(longest, n);
            }
            return o.ell_width < 0 || longest <= o.ell_width;
        }
        case Format::dia: {
            std::set<index_t> d;
            for (offset_t k = 0; k < a.nnz(); ++k) d.insert(a.col[k] - a.row[k]);
            return index_t(d.size()) <= o.dia_max;
        }
        case Format::bsr:
            return divides(o.bsr_b);
        case Format::bdia: {
            const index_t b = o.bdia_b;
            if (!divides(b)) return false;
            if (o.bdia_offsets.empty()) return true;
            for (index_t d : o.bdia_offsets)
                if (d < -(a.rows / b) || d > a.cols / b) return false;
            for (offset_t k = 0; k < a.nnz(); ++k)
                if (std::find(o.bdia_offsets.begin(), o.bdia_offsets.end(),
                              a.col[k] / b - a.row[k] / b) == o.bdia_offsets.end())
                    return false;
            return true;
        }
    }
    fail("unknown format");
}

// Build format f from `a` with the host API of `heptane convert` and convert it back.
template <class T>
Coo<T> round_trip(const Coo<T>& a, Format f, const Options& o)
{
    switch (f) {
        case Format::coo:
            HEPTANE_ENSURE(is_canonical(a), InputError, "COO round trip needs canonical COO");
            return a;
        case Format::csr:
            return to_coo(csr_from_coo(a));
        case Format::ell:
            return to_coo(ell_from_coo(a, o.ell_width));
        case Format::hyb:
            return to_coo(hyb_from_coo(a, o.hyb_width));
        case Format::dia:
            return to_coo(dia_from_coo(a, o.dia_max));
        case Format::bsr:
            return to_coo(bsr_from_coo(a, o.bsr_b));
        case Format::bdia:
            return to_coo(bdia_from_coo(a, o.bdia_b, o.bdia_offsets));
    }
    fail("unknown format");
}

template <class T>
void check_round_trip(const Coo<T>& a, Format f, const Options& o, bool expect_ok)
{
    Coo<T> back;
    try {
        back = round_trip(a, f, o);
    } catch (const Error& e) {
        check_message(e);
        if (expect_ok)
            fail(std::string("format ") + to_string(f) + describe(o) +
                 " refused a valid matrix: " + e.what());
        return;
    } catch (const std::exception& e) {
        fail(std::string("format ") + to_string(f) + " threw a non-heptane exception: " + e.what());
    } catch (...) {
        fail(std::string("format ") + to_string(f) + " threw a non-exception");
    }
    if (!expect_ok)
        fail(std::string("format ") + to_string(f) + describe(o) +
             " accepted a matrix it must refuse");
    if (!same_bits(back, a))
        fail(std::string("round trip through ") + to_string(f) + " changed the matrix");
}

// A raw (non-canonical) COO: every format and detection must refuse it with an Error.
void check_refused(const Coo<double>& raw, const Options& o)
{
    for (Format f : kFormats) {
        try {
            (void)round_trip(raw, f, o);
            fail(std::string("format ") + to_string(f) + " accepted a non-canonical COO");
        } catch (const Error& e) {
            check_message(e);
        } catch (...) {
            fail(std::string("format ") + to_string(f) + " threw a non-heptane exception");
        }
        try {
            (void)make_matrix_operator<double, double>(raw, f, cpu_executor());
            fail(std::string("operator ") + to_string(f) + " accepted a non-canonical COO");
        } catch (const Error& e) {
            check_message(e);
        } catch (...) {
            fail(std::string("operator ") + to_string(f) + " threw a non-heptane exception");
        }
    }
    try {
        (void)detect_structure(raw);
        fail("detect_structure accepted a non-canonical COO");
    } catch (const Error& e) {
        check_message(e);
    } catch (...) {
        fail("detect_structure threw a non-heptane exception");
    }
}

// ---- operators: y = alpha op(A) x + beta y against a reference ----------------------------

template <class VT>
constexpr double unit_roundoff()
{
    return std::is_same_v<VT, float> ? 0x1p-23 : 0x1p-52;
}

// The product from the canonical entries (values as the operator stores them, in MT), in
// long double, with the sum of the magnitudes of the terms for the error bound.
template <class MT, class VT>
NO_COVERAGE void check_product(const Coo<double>& a, const Operator<VT>& op, bool transpose,
                               double alpha, double beta, const std::vector<double>& x64,
                               const std::vector<double>& y64, bool exact, const char* what)
{
    const index_t m = transpose ? a.cols : a.rows, n = transpose ? a.rows : a.cols;
    std::vector<VT> x(x64.begin(), x64.begin() + n);
    std::vector<VT> y(m, std::numeric_limits<VT>::quiet_NaN());
    if (beta != 0)
        for (index_t i = 0; i < m; ++i) y[i] = VT(y64[i]);
    std::vector<long double> ref(m, 0), mag(m, 0);
    std::vector<int> terms(m, 2);
    for (offset_t k = 0; k < a.nnz(); ++k) {
        const index_t i = transpose ? a.col[k] : a.row[k], j = transpose ? a.row[k] : a.col[k];
        const long double t = (long double)VT(alpha) * (long double)(MT(a.val[k])) * x[j];
        ref[i] += t;
        mag[i] += std::fabs(t);
        ++terms[i];
    }
    for (index_t i = 0; i < m; ++i)
        if (beta != 0) {
            ref[i] += (long double)VT(beta) * y[i];
            mag[i] += std::fabs((long double)VT(beta) * y[i]);
        }
    if (transpose)
        op.apply_transpose(VT(alpha), x.data(), VT(beta), y.data());
    else
        op.apply(VT(alpha), x.data(), VT(beta), y.data());
    // exact where every operation is: fp64 vectors (and accumulation) on exact values
    const bool exact_here = exact && std::is_same_v<VT, double>;
    for (index_t i = 0; i < m; ++i) {
        const long double err = std::fabs((long double)y[i] - ref[i]);
        const long double tol = exact_here ? 0
                                           : (terms[i] + 4) * unit_roundoff<VT>() * mag[i] +
                                                 std::numeric_limits<VT>::min();
        if (!(std::isfinite(y[i]) && err <= tol))
            fail(std::string(what) + (transpose ? " A^T x" : " A x") + ": y[" + std::to_string(i) +
                 "] = " + std::to_string(double(y[i])) + ", expected " +
                 std::to_string(double(ref[i])) + " (beta " + std::to_string(beta) + ")");
    }
}

template <class MT, class VT>
void check_operator(const Coo<double>& a, Format f, const FormatOptions& fo, const Options& expect,
                    bool expect_ok, double alpha, double beta, const std::vector<double>& x,
                    const std::vector<double>& y, bool exact)
{
    std::unique_ptr<Operator<VT>> op;
    try {
        op = make_matrix_operator<MT, VT>(a, f, cpu_executor(), fo);
    } catch (const Error& e) {
        check_message(e);
        if (expect_ok)
            fail(std::string("make_matrix_operator(") + to_string(f) + ")" + describe(expect) +
                 " refused a valid matrix: " + e.what());
        return;
    } catch (const std::exception& e) {
        fail(std::string("make_matrix_operator(") + to_string(f) +
             ") threw a non-heptane exception: " + e.what());
    }
    if (!expect_ok)
        fail(std::string("make_matrix_operator(") + to_string(f) + ")" + describe(expect) +
             " accepted a matrix it must refuse: " + op->describe());
    CHECK(op->rows() == a.rows && op->cols() == a.cols && !op->describe().empty());
    const std::string what = std::string(to_string(f)) + " " + op->describe();
    try {
        check_product<MT, VT>(a, *op, false, alpha, beta, x, y, exact, what.c_str());
        check_product<MT, VT>(a, *op, true, alpha, beta, x, y, exact, what.c_str());
    } catch (const Error& e) {
        fail(std::string("product through ") + what + " threw: " + e.what());
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    // The format list above must be the whole enum: the next value has no name.
    if (std::string(to_string(static_cast<Format>(int(kFormats.size())))) != "?")
        fail("formats/matrix.hpp has a format this fuzzer does not know: add it to kFormats");
    for (Format f : kFormats)
        if (parse_format(to_string(f)) != f) fail("parse_format(to_string(f)) != f");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Decoder d(data, size);
    const std::uint8_t head = d.byte();
    ValueMaker vm;
    vm.exact = !(head & 0x04);
    vm.scale = (head >> 3) & 3;

    Generated g;
    switch (head & 3) {
        case 0:
            make_random(g, d, vm);
            break;
        case 1:
            make_hepta(g, d, vm);
            break;
        case 2:
            make_blocks(g, d, vm);
            break;
        default:
            make_diagonals(g, d, vm);
            break;
    }

    // 1. canonical COO, and the refusal of a raw one (unsorted, duplicates, out of range)
    Coo<double> a = check_canonicalize(g, vm.exact);
    current = &a;
    const std::uint8_t raw_mode = d.byte();
    Coo<double> raw = to_coo_arrays(g.rows, g.cols, g.raw);
    if ((raw_mode & 7) == 1 && g.rows > 0 && g.cols > 0) {  // an entry outside the matrix
        const bool bad_col = raw_mode & 8;
        const index_t n = bad_col ? g.cols : g.rows;
        const index_t bad[] = {n, -1, index_t(n + 1000)};
        raw.row.host().push_back(bad_col ? 0 : bad[(raw_mode >> 4) % 3]);
        raw.col.host().push_back(bad_col ? bad[(raw_mode >> 4) % 3] : 0);
        raw.val.host().push_back(1.0);
        for (DuplicatePolicy p :
             {DuplicatePolicy::sum, DuplicatePolicy::error, DuplicatePolicy::keep_last}) {
            Coo<double> c = raw;
            try {
                canonicalize(c, p);
                fail("canonicalize accepted an entry outside the matrix");
            } catch (const InputError& e) {
                check_message(e);
            } catch (...) {
                fail("canonicalize threw something other than InputError");
            }
        }
    }
    Options o;
    if (!is_canonical(raw)) check_refused(raw, o);

    // 2. detection
    DetectOptions dopt;
    if (d.byte() < 64) dopt.max_block_size = 1 + d.below(16);
    Structure s;
    try {
        s = detect_structure(a, dopt);
    } catch (const Error& e) {
        fail(std::string("detect_structure refused a canonical matrix: ") + e.what());
    }
    check_structure(a, s, dopt);
    static const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "%s", to_text(s).c_str());
    if (!same_structure(s, detect_structure(convert_values<float>(a), dopt)))
        fail("detect_structure gives another answer for float values");
    const Pattern pat(a);
    {
        // the chosen format builds with the detected block size
        Options chosen;
        chosen.bsr_b = chosen.bdia_b = s.block_size;
        check_round_trip(a, s.format, chosen, true);
    }

    // 3. every format, host round trip (options from the input)
    auto pick_block = [&](std::uint8_t sel) -> index_t {
        switch (sel & 3) {
            case 0:
                return s.block_size;  // detected
            case 1:
                return 1;
            default:
                return index_t(1 + d.below(32));  // anything, often not dividing
        }
    };
    const std::uint8_t osel = d.byte();
    o.bsr_b = pick_block(osel);
    o.bdia_b = pick_block(osel >> 2);
    switch ((osel >> 4) & 3) {
        case 0:
        case 1:
            break;  // from the pattern
        case 2:
            if (o.bdia_b == s.block_size) o.bdia_offsets = s.block_offsets;
            break;
        default:
            for (int k = d.below(5); k > 0; --k) o.bdia_offsets.push_back(d.below(9) - 4);
            break;
    }
    if (osel & 0x40) o.ell_width = index_t(d.below(9));
    if (osel & 0x80) o.hyb_width = index_t(d.below(9));
    if (d.byte() < 32) o.dia_max = index_t(d.below(8));
    for (Format f : kFormats) {
        check_round_trip(a, f, o, should_build(a, f, o, pat));
        check_round_trip(a, f, Options{}, should_build(a, f, Options{}, pat));
    }

    // 4. operators in every precision, A x and A^T x
    const double alpha = vm.scalar(d), beta = vm.scalar(d);
    std::vector<double> x(kMaxSize), y(kMaxSize);
    for (auto& v : x) v = vm.vector_value(d);
    for (auto& v : y) v = vm.vector_value(d);
    const std::uint8_t fsel = d.byte();
    FormatOptions fo;
    Options expect;  // what make_matrix_operator will build with fo
    switch (fsel & 3) {
        case 0:
        case 1:
            break;  // detected block size
        case 2:
            fo.block_size = 1;
            break;
        default:
            fo.block_size = index_t(1 + d.below(32));
            break;
    }
    // block size 0: make_matrix_operator detects it, with the default options
    const index_t detected = dopt.max_block_size == DetectOptions{}.max_block_size
                                 ? s.block_size
                                 : detect_structure(a).block_size;
    expect.bsr_b = expect.bdia_b = fo.block_size > 0 ? fo.block_size : detected;
    if ((fsel & 0x0c) == 0x0c) {
        for (int k = d.below(5); k > 0; --k) fo.block_offsets.push_back(d.below(9) - 4);
        expect.bdia_offsets = fo.block_offsets;
    }
    if (fsel & 0x10) fo.hyb_width = index_t(d.below(9));
    fo.transpose = (fsel & 0x20) ? TransposeMode::stored : TransposeMode::scatter;
    fo.csr_kernel = static_cast<kernels::CsrKernel>(d.below(4));
    fo.bdia_kernel = static_cast<kernels::BdiaKernel>(d.below(3));
    const int precisions = d.byte() % 4;  // fp64, fp32, mixed, or all three
    for (Format f : kFormats) {
        const bool ok = should_build(a, f, expect, pat);
        if (precisions == 0 || precisions == 3)
            check_operator<double, double>(a, f, fo, expect, ok, alpha, beta, x, y, vm.exact);
        if (precisions == 1 || precisions == 3)
            check_operator<float, float>(a, f, fo, expect, ok, alpha, beta, x, y, vm.exact);
        if (precisions == 2 || precisions == 3)
            check_operator<float, double>(a, f, fo, expect, ok, alpha, beta, x, y, vm.exact);
        // the floor-traffic count builds the same format
        try {
            const SpmvTraffic t = spmv_traffic(a, f, fo, Precision::double_);
            CHECK(ok && t.matrix_bytes >= 0 && std::isfinite(t.matrix_bytes));
            CHECK(t.vector_bytes == 8.0 * (double(a.rows) + a.cols));
        } catch (const Error& e) {
            check_message(e);
            if (ok) fail(std::string("spmv_traffic refused a valid matrix: ") + e.what());
        }
    }
    current = nullptr;
    return 0;
}
