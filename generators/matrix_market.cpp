// Matrix Market reader and writer.
//
// Reading: the file is mapped (or read) whole; the header (banner, comments, size line) is
// parsed serially; the data section is split into pieces at line starts and the pieces are
// parsed in parallel (OpenMP) into per-piece arrays, with std::from_chars for integers and
// doubles. Each piece counts its lines and entries, so after the parallel pass a serial walk
// over the pieces in file order finds the first problem (a bad line, or the entry past the
// declared count) and its exact line number, no matter which thread saw it. Only then are
// the pieces concatenated (and symmetric files mirrored) into one COO, which canonicalize()
// sorts and de-duplicates.
//
// Writing: entries are formatted in parallel blocks with std::to_chars (shortest form that
// reads back to the same value) and written to PATH.tmp, which is renamed to PATH at the end.
#include "generators/matrix_market.hpp"

#include <fcntl.h>
#include <locale.h>  // newlocale, for strtod_l
#include <stdlib.h>  // strtod_l
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_bytes.hpp"

namespace heptane {
namespace {

enum class Field { real, integer, pattern };
enum class Symmetry { general, symmetric, skew };

constexpr std::int64_t max_dimension = std::numeric_limits<index_t>::max();
// Below this many entries a loop runs serially: waking the OpenMP team costs more than it
// saves (much more on a loaded machine).
constexpr std::int64_t small = 1 << 16;

// ---------------------------------------------------------------------------------------
// Small text helpers. '\n' ends a line; '\r' (CRLF files), tabs and other blanks separate
// tokens.

inline bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
inline bool at_eol(const char* p, const char* end)
{
    return p == end || *p == '\n';
}
inline const char* skip_blanks(const char* p, const char* end)
{
    while (p < end && is_blank(*p)) ++p;
    return p;
}
// The start of the next line (or end).
inline const char* next_line(const char* p, const char* end)
{
    const void* nl = std::memchr(p, '\n', std::size_t(end - p));
    return nl ? static_cast<const char*>(nl) + 1 : end;
}

// A token (up to the next blank or line end) quoted for a message: printable ASCII only, so
// binary junk never reaches a terminal, and at most 40 characters.
std::string quote_token(const char* p, const char* end)
{
    std::string s = "'";
    std::size_t n = 0;
    for (; p < end && !is_blank(*p) && *p != '\n'; ++p, ++n) {
        if (n == 40) {
            s += "...";
            break;
        }
        const unsigned char c = static_cast<unsigned char>(*p);
        s += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
    }
    return s + "'";
}
std::string quote(std::string_view v)
{
    return quote_token(v.data(), v.data() + v.size());
}
std::string quote_line(std::string_view v)
{
    std::string s = "'";
    for (std::size_t i = 0; i < v.size() && i < 80; ++i) {
        const unsigned char c = static_cast<unsigned char>(v[i]);
        s += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
    }
    if (v.size() > 80) s += "...";
    return s + "'";
}

std::string lower(std::string_view v)
{
    std::string s(v);
    for (auto& c : s)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return s;
}

std::vector<std::string_view> split_blanks(std::string_view line)
{
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_blank(line[i])) ++i;
        std::size_t j = i;
        while (j < line.size() && !is_blank(line[j])) ++j;
        if (j > i) out.push_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

[[noreturn]] void fail(const std::string& name, offset_t line, const std::string& problem)
{
    HEPTANE_THROW(InputError, name << ":" << line << ": " << problem);
}

// ---------------------------------------------------------------------------------------
// Numbers.

// A decimal integer token: from_chars, which rejects '+'; we accept it as C's scanf does.
inline const char* parse_int(const char* p, const char* end, std::int64_t& v, bool& overflow)
{
    const char* q = p;
    if (q < end && *q == '+') ++q;
    if (q < end && *q == '-' && q != p) return nullptr;  // "+-1"
    // up to 18 digits cannot overflow int64: those are read here, longer tokens by from_chars
    const char* d = q + (q < end && *q == '-');
    std::int64_t m = 0;
    const char* e = d;
    while (e < end && e - d < 18 && static_cast<unsigned>(*e - '0') < 10u)
        m = m * 10 + (*e++ - '0');
    if (e > d && (e == end || static_cast<unsigned>(*e - '0') >= 10u)) {
        overflow = false;
        v = d > q ? -m : m;
        return e;
    }
    const auto r = std::from_chars(q, end, v);
    overflow = r.ec == std::errc::result_out_of_range;
    if (r.ec != std::errc() && !overflow) return nullptr;
    return r.ptr;
}

// Clinger's fast path (W. D. Clinger, "How to read floating point numbers accurately", PLDI
// 1990): a decimal [-]digits[.digits][(e|E)[+|-]digits] whose digits, read as an integer m,
// are exact in T (m <= 2^53 for double, 2^24 for float) and whose power of ten 10^|k| is exact
// in T (|k| <= 22 for double, 10 for float) is m * 10^k or m / 10^-k: one correctly rounded
// operation on exact operands, so the same value as from_chars. Returns nullptr where it does
// not apply (more digits, a larger exponent, inf/nan, a 'd' exponent, a lone '.'): the caller
// then takes from_chars. Stops where from_chars stops for the tokens it takes.
template <class T>
inline const char* parse_real_fast(const char* p, const char* end, T& v)
{
    constexpr bool dbl = std::is_same<T, double>::value;
    constexpr std::uint64_t max_m = dbl ? (std::uint64_t{1} << 53) : (std::uint64_t{1} << 24);
    constexpr int max_k = dbl ? 22 : 10;
    static constexpr double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    auto digit = [](char c) { return static_cast<unsigned>(c - '0') < 10u; };
    const char* q = p;
    const bool neg = q < end && *q == '-';
    q += neg;
    std::uint64_t m = 0;
    int k = 0, n = 0;  // power of ten, digits read
    for (; q < end && digit(*q); ++q, ++n) {
        if (m >= 100000000000000000ULL) return nullptr;  // 18 digits: stay exact in uint64
        m = m * 10 + std::uint64_t(*q - '0');
    }
    if (q < end && *q == '.') {
        for (++q; q < end && digit(*q); ++q, ++n, --k) {
            if (m >= 100000000000000000ULL) return nullptr;
            m = m * 10 + std::uint64_t(*q - '0');
        }
    }
    if (n == 0) return nullptr;
    if (q < end && (*q == 'e' || *q == 'E')) {
        const char* r = q + 1;
        const bool eneg = r < end && *r == '-';
        if (r < end && (*r == '-' || *r == '+')) ++r;
        if (r == end || !digit(*r)) return nullptr;
        int e = 0;
        for (; r < end && digit(*r); ++r) {
            if (e > 10000) return nullptr;
            e = e * 10 + (*r - '0');
        }
        k += eneg ? -e : e;
        q = r;
    }
    if (q < end && (*q == 'd' || *q == 'D')) return nullptr;
    if (m > max_m || k < -max_k || k > max_k) return nullptr;
    T x = static_cast<T>(m);                            // exact
    const T t = static_cast<T>(pow10[k < 0 ? -k : k]);  // exact
    x = k < 0 ? x / t : x * t;
    v = neg ? -x : x;
    return q;
}

// The slow path of parse_real: values beyond the type's range (from_chars reports them as
// errors without a value) and Fortran 'D' exponents. strtod_l/strtof_l in the "C" locale, so
// a host program's locale cannot change the decimal point.
template <class T>
const char* parse_real_slow(const char* p, const char* end, T& v)
{
    static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
    const char* e = p;
    while (e < end && !is_blank(*e) && *e != '\n') ++e;
    std::string tok(p, e);
    for (auto& c : tok)
        if (c == 'd' || c == 'D') c = 'e';
    // strtod accepts hex and leading blanks; from_chars (what the fast path follows) does not
    if (tok.empty() || tok.find_first_of("xX") != std::string::npos) return nullptr;
    if (!c_locale) return nullptr;  // no "C" locale object: treat the token as bad
    char* stop = nullptr;
    if constexpr (std::is_same<T, float>::value)
        v = strtof_l(tok.c_str(), &stop, c_locale);
    else
        v = strtod_l(tok.c_str(), &stop, c_locale);
    if (stop != tok.c_str() + tok.size()) return nullptr;
    return e;
}

// A real token: decimal, optional sign, exponent, "inf", "infinity", "nan" (any case).
// Parsed straight into T: reading a float through a double could round twice.
template <class T>
inline const char* parse_real(const char* p, const char* end, T& v)
{
    const char* q = p;
    if (q < end && *q == '+') {
        ++q;
        if (q < end && (*q == '+' || *q == '-')) return nullptr;
    }
    if (const char* f = parse_real_fast(q, end, v)) return f;
    const auto r = std::from_chars(q, end, v);
    if (r.ec == std::errc()) {
        if (r.ptr < end && (*r.ptr == 'd' || *r.ptr == 'D')) return parse_real_slow(p, end, v);
        return r.ptr;
    }
    if (r.ec == std::errc::result_out_of_range) return parse_real_slow(p, end, v);
    return nullptr;
}

template <class T>
const char* type_name()
{
    return std::is_same<T, float>::value ? "float" : "double";
}

// Why a non-finite value is one: written as NaN/Inf, or a number beyond the type's range.
template <class T>
std::string non_finite_problem(const char* tok, const char* end, T x)
{
    const char* q = tok;
    if (q < end && (*q == '+' || *q == '-')) ++q;
    const bool spelled = q < end && (*q == 'n' || *q == 'N' || *q == 'i' || *q == 'I');
    std::string s = "value " + quote_token(tok, end);
    if (spelled || std::isnan(x)) return s + (std::isnan(x) ? " is NaN" : " is infinite");
    return s + " overflows " + type_name<T>() + " (it would be infinite)";
}

// ---------------------------------------------------------------------------------------
// The header.

struct Header {
    std::string object, format, field, symmetry;  // as written in info (lower case)
    bool coordinate = true;
    Field field_kind = Field::real;
    Symmetry sym = Symmetry::general;
    std::int64_t rows = 0, cols = 0;
    offset_t entries = 0;          // declared entries (array: implied by the size)
    offset_t size_line = 0;        // line number of the size line
    std::size_t data_begin = 0;    // byte offset of the line after the size line
    offset_t data_first_line = 0;  // its line number
    offset_t header_newlines = 0;  // '\n' before data_begin
};

// Walks lines of the header; line numbers are 1-based.
struct LineCursor {
    std::string_view data;
    std::size_t pos = 0;
    offset_t line = 0;      // number of the line last returned
    offset_t newlines = 0;  // '\n' consumed so far
    bool next(std::string_view& out)
    {
        if (pos >= data.size()) return false;
        std::size_t e = data.find('\n', pos);
        const bool has_nl = e != std::string_view::npos;
        if (!has_nl) e = data.size();
        out = data.substr(pos, e - pos);
        pos = has_nl ? e + 1 : e;
        newlines += has_nl;
        ++line;
        return true;
    }
};

constexpr const char* banner_form =
    "'%%MatrixMarket matrix coordinate|array real|integer|pattern "
    "general|symmetric|skew-symmetric'";

// Bytes the reader needs at its peak for `entries` stored entries of a rows-row matrix:
// per-piece arrays and the concatenated arrays (expanded), then canonicalize(): its
// permutation, its new arrays and four row-sized offset arrays.
template <class T>
long double bytes_needed(long double rows, long double expanded)
{
    const long double entry = 2 * sizeof(index_t) + sizeof(T);
    return expanded * (3 * entry + sizeof(offset_t)) + (rows + 1) * 4 * sizeof(offset_t);
}

std::size_t physical_memory()
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return std::numeric_limits<std::size_t>::max();
    return std::size_t(pages) * std::size_t(page);
}

std::string gib(long double bytes)
{
    char b[64];
    std::snprintf(b, sizeof b, "%.3Lg GiB", bytes / (1024.0L * 1024.0L * 1024.0L));
    return b;
}

template <class T>
Header parse_header(std::string_view data, const std::string& name, const MatrixMarketOptions& opt)
{
    Header h;
    if (data.empty())
        fail(name, 1, "the file is empty (expected the banner " + std::string(banner_form) + ")");
    LineCursor cur{data};
    std::string_view first;
    cur.next(first);
    if (first.size() >= 3 && first.substr(0, 3) == "\xEF\xBB\xBF")
        first.remove_prefix(3);  // UTF-8 BOM
    if (first.substr(0, 2) != "%%")
        fail(name, 1,
             "missing banner: the first line must be " + std::string(banner_form) + ", found " +
                 quote_line(first));
    const auto words = split_blanks(first);
    if (lower(words[0]) != "%%matrixmarket")
        fail(name, 1,
             "garbled banner: " + quote(words[0]) + " is not '%%MatrixMarket' (expected " +
                 banner_form + ")");
    if (words.size() < 5)
        fail(name, 1,
             "incomplete banner " + quote_line(first) + ": expected 5 words as in " + banner_form);
    if (words.size() > 5)
        fail(name, 1,
             "unexpected text " + quote(words[5]) + " after the banner (expected " + banner_form +
                 ")");
    h.object = lower(words[1]);
    h.format = lower(words[2]);
    h.field = lower(words[3]);
    h.symmetry = lower(words[4]);
    if (h.object == "vector")
        fail(name, 1, "object 'vector' is not supported (write vectors as an n x 1 matrix)");
    if (h.object != "matrix")
        fail(name, 1, "unknown object " + quote(words[1]) + " in the banner (expected 'matrix')");
    if (h.format == "coordinate")
        h.coordinate = true;
    else if (h.format == "array")
        h.coordinate = false;
    else
        fail(name, 1,
             "unknown format " + quote(words[2]) +
                 " in the banner (expected 'coordinate' or 'array')");
    if (h.field == "real")
        h.field_kind = Field::real;
    else if (h.field == "integer")
        h.field_kind = Field::integer;
    else if (h.field == "pattern")
        h.field_kind = Field::pattern;
    else if (h.field == "complex")
        fail(name, 1, "complex matrices are not supported (field 'complex')");
    else
        fail(name, 1,
             "unknown field " + quote(words[3]) +
                 " in the banner (expected 'real', 'integer' or 'pattern')");
    if (h.symmetry == "general")
        h.sym = Symmetry::general;
    else if (h.symmetry == "symmetric")
        h.sym = Symmetry::symmetric;
    else if (h.symmetry == "skew-symmetric")
        h.sym = Symmetry::skew;
    else if (h.symmetry == "hermitian")
        fail(name, 1, "'hermitian' needs a complex field, and complex matrices are not supported");
    else
        fail(name, 1,
             "unknown symmetry " + quote(words[4]) +
                 " in the banner (expected 'general', 'symmetric' or 'skew-symmetric')");
    if (!h.coordinate && h.field_kind == Field::pattern)
        fail(name, 1, "field 'pattern' is not valid with the 'array' format");
    if (h.field_kind == Field::pattern && h.sym == Symmetry::skew)
        fail(name, 1, "field 'pattern' is not valid with 'skew-symmetric' (no values to negate)");

    // comments and blank lines, then the size line
    std::string_view line;
    for (;;) {
        if (!cur.next(line))
            fail(name, cur.line,
                 std::string("missing size line: the file ends after the header ") +
                     (h.coordinate ? "(expected 'rows cols entries')" : "(expected 'rows cols')"));
        const char* b = skip_blanks(line.data(), line.data() + line.size());
        if (b == line.data() + line.size() || *b == '%') continue;
        break;
    }
    h.size_line = cur.line;
    const auto tok = split_blanks(line);
    const std::size_t want = h.coordinate ? 3 : 2;
    const char* form = h.coordinate ? "'rows cols entries'" : "'rows cols'";
    if (tok.size() < want)
        fail(name, h.size_line, "bad size line " + quote_line(line) + ": expected " + form);
    if (tok.size() > want)
        fail(name, h.size_line,
             "unexpected text " + quote(tok[want]) + " on the size line (expected " + form + ")");
    std::int64_t v[3] = {0, 0, 0};
    const char* what[3] = {"row count", "column count", "entry count"};
    for (std::size_t k = 0; k < want; ++k) {
        bool overflow = false;
        const char* e = parse_int(tok[k].data(), tok[k].data() + tok[k].size(), v[k], overflow);
        if (!e || e != tok[k].data() + tok[k].size())
            fail(name, h.size_line,
                 "bad size line " + quote_line(line) + ": the " + what[k] + " " + quote(tok[k]) +
                     " is not an integer (expected " + form + ")");
        if (overflow)
            fail(name, h.size_line,
                 std::string("the ") + what[k] + " " + quote(tok[k]) +
                     " on the size line is absurdly large");
        if (v[k] < 0)
            fail(name, h.size_line,
                 std::string("negative ") + what[k] + " " + std::to_string(v[k]) +
                     " on the size line");
    }
    h.rows = v[0];
    h.cols = v[1];
    for (int k = 0; k < 2; ++k)
        if (v[k] > max_dimension)
            fail(name, h.size_line,
                 std::string("the ") + what[k] + " " + std::to_string(v[k]) +
                     " exceeds the largest supported size " + std::to_string(max_dimension) +
                     " (2^31 - 1)");
    if (h.sym != Symmetry::general && h.rows != h.cols)
        fail(name, h.size_line,
             "a " + h.symmetry + " matrix must be square, but the size line says " +
                 std::to_string(h.rows) + " x " + std::to_string(h.cols));
    // entries the stored part can hold: all, the lower triangle, the strict lower triangle
    const std::int64_t n = h.rows;
    const std::int64_t capacity = h.sym == Symmetry::general     ? h.rows * h.cols
                                  : h.sym == Symmetry::symmetric ? n * (n + 1) / 2
                                                                 : n * (n - 1) / 2;
    if (h.coordinate) {
        h.entries = v[2];
        if (h.entries > capacity) {
            std::string where = h.sym == Symmetry::general
                                    ? std::to_string(h.rows) + " x " + std::to_string(h.cols) +
                                          " = " + std::to_string(capacity) + " positions"
                                    : "the " + std::to_string(capacity) + " positions of the " +
                                          (h.sym == Symmetry::skew ? "strict " : "") +
                                          "lower triangle";
            fail(name, h.size_line,
                 "the file declares " + std::to_string(h.entries) + " entries, more than " + where +
                     " hold");
        }
    } else {
        h.entries = capacity;
    }
    const long double expanded = h.sym == Symmetry::general ? h.entries : 2.0L * h.entries;
    const long double need = bytes_needed<T>(h.rows, expanded);
    // (the machine's memory is asked for only where the need could come near it)
    constexpr long double gib1 = 1024.0L * 1024.0L * 1024.0L;
    const long double limit = opt.memory_limit ? opt.memory_limit
                              : need > gib1    ? physical_memory()
                                               : gib1;
    if (need > limit)
        fail(name, h.size_line,
             "a " + std::to_string(h.rows) + " x " + std::to_string(h.cols) + " matrix with " +
                 std::to_string(h.entries) + " entries needs about " + gib(need) +
                 " of memory to read, more than the " +
                 (opt.memory_limit ? "memory limit of " : "machine's ") + gib(limit));
    h.data_begin = cur.pos;
    h.data_first_line = cur.line + 1;
    h.header_newlines = cur.newlines;
    return h;
}

// ---------------------------------------------------------------------------------------
// Parsing the data section, one piece per task.

template <class T>
struct Piece {
    const char* begin = nullptr;
    const char* end = nullptr;
    std::vector<index_t> row, col;  // coordinate only
    std::vector<T> val;
    offset_t entries = 0;  // well-formed entries parsed
    offset_t lines = 0;    // '\n' in the piece (complete only when the piece did not fail)
    offset_t diag = 0;     // entries on the diagonal (mirrors are made for the others)
    offset_t non_finite = 0;
    offset_t first_non_finite = -1;  // piece-local line index
    bool failed = false;
    bool skipped = false;     // not parsed: an earlier piece failed
    offset_t error_line = 0;  // piece-local line index
    std::string error;
    std::exception_ptr exception;

    void fail_at(offset_t line, std::string msg)
    {
        failed = true;
        error_line = line;
        error = std::move(msg);
    }
};

struct Limits {
    std::int64_t rows, cols;
    NonFinitePolicy non_finite;
};

std::string index_problem(const char* which, std::int64_t v, std::int64_t n)
{
    std::string s = std::string(which) + " index " + std::to_string(v) + " is out of range 1.." +
                    std::to_string(n);
    if (v == 0) s += " (indices are 1-based)";
    return s;
}

// Parse one index token at q; on failure record the error in pc and return nullptr.
template <class T>
const char* parse_index(Piece<T>& pc, offset_t line, const char* q, const char* end,
                        const char* which, std::int64_t n, std::int64_t& v)
{
    bool overflow = false;
    const char* r = parse_int(q, end, v, overflow);
    if (!r || !(at_eol(r, end) || is_blank(*r))) {
        pc.fail_at(line, std::string("expected an integer ") + which + " index, found " +
                             quote_token(q, end));
        return nullptr;
    }
    if (overflow || v < 1 || v > n) {
        pc.fail_at(line, overflow ? std::string(which) + " index " + quote_token(q, end) +
                                        " is out of range 1.." + std::to_string(n)
                                  : index_problem(which, v, n));
        return nullptr;
    }
    return r;
}

// Parse one value token at q into x; on failure record the error and return nullptr.
// Non-finite values are counted or, with policy error, reported.
template <class T, Field F>
const char* parse_value(Piece<T>& pc, offset_t line, const char* q, const char* end,
                        const Limits& lim, T& x)
{
    const char* r;
    if constexpr (F == Field::integer) {
        std::int64_t iv = 0;
        bool overflow = false;
        r = parse_int(q, end, iv, overflow);
        if (!r || !(at_eol(r, end) || is_blank(*r))) {
            pc.fail_at(line,
                       "expected an integer value (field 'integer'), found " + quote_token(q, end));
            return nullptr;
        }
        if (overflow) {
            pc.fail_at(line, "integer value " + quote_token(q, end) + " is out of range");
            return nullptr;
        }
        x = static_cast<T>(iv);
    } else {
        r = parse_real(q, end, x);
        if (!r || !(at_eol(r, end) || is_blank(*r))) {
            pc.fail_at(line, "expected a real value, found " + quote_token(q, end));
            return nullptr;
        }
        if (!std::isfinite(x)) {
            if (lim.non_finite == NonFinitePolicy::error) {
                pc.fail_at(line, non_finite_problem(q, end, x) +
                                     " (non-finite values are refused; see NonFinitePolicy)");
                return nullptr;
            }
            if (pc.non_finite++ == 0) pc.first_non_finite = line;
        }
    }
    return r;
}

// Reserve for the entries a piece probably holds, from the average line length seen at the
// start of the data section, so that push_back rarely reallocates.
inline std::size_t guess_entries(const char* b, const char* e, double bytes_per_line)
{
    return std::size_t(double(e - b) / bytes_per_line * 1.05) + 16;
}

template <class T, Field F, Symmetry S>
void parse_coordinate_piece(Piece<T>& pc, const Limits& lim, double bytes_per_line)
{
    const char* p = pc.begin;
    const char* const end = pc.end;
    const std::size_t guess = guess_entries(p, end, bytes_per_line);
    pc.row.reserve(guess);
    pc.col.reserve(guess);
    pc.val.reserve(guess);
    offset_t line = 0;
    while (p < end) {
        const char* q = skip_blanks(p, end);
        if (q == end) break;
        if (*q == '\n' || *q == '%') {  // blank or comment line
            p = next_line(q, end);
            line += p[-1] == '\n';
            continue;
        }
        std::int64_t i = 0, j = 0;
        q = parse_index(pc, line, q, end, "row", lim.rows, i);
        if (!q) return;
        q = skip_blanks(q, end);
        if (at_eol(q, end)) return pc.fail_at(line, "missing column index");
        q = parse_index(pc, line, q, end, "column", lim.cols, j);
        if (!q) return;
        q = skip_blanks(q, end);
        T x = T(1);
        if constexpr (F != Field::pattern) {
            if (at_eol(q, end)) return pc.fail_at(line, "missing value after the column index");
            q = parse_value<T, F>(pc, line, q, end, lim, x);
            if (!q) return;
            q = skip_blanks(q, end);
        }
        if (!at_eol(q, end))
            return pc.fail_at(line,
                              "unexpected text " + quote_token(q, end) + " after the entry" +
                                  (F == Field::pattern ? " (field 'pattern' has no values)" : ""));
        if constexpr (S == Symmetry::symmetric) {
            if (j > i)
                return pc.fail_at(line, "entry (" + std::to_string(i) + ", " + std::to_string(j) +
                                            ") lies above the diagonal, but a symmetric file "
                                            "stores only the lower triangle");
        } else if constexpr (S == Symmetry::skew) {
            if (j == i)
                return pc.fail_at(line, "diagonal entry (" + std::to_string(i) + ", " +
                                            std::to_string(j) +
                                            ") in a skew-symmetric file (its diagonal is zero "
                                            "and must not be stored)");
            if (j > i)
                return pc.fail_at(line, "entry (" + std::to_string(i) + ", " + std::to_string(j) +
                                            ") lies above the diagonal, but a skew-symmetric "
                                            "file stores only the strict lower triangle");
        }
        pc.row.push_back(index_t(i - 1));
        pc.col.push_back(index_t(j - 1));
        pc.val.push_back(x);
        pc.diag += i == j;
        ++pc.entries;
        if (q < end) {  // at '\n'
            p = q + 1;
            ++line;
        } else {
            p = end;
        }
    }
    pc.lines = line;
}

template <class T, Field F>
void parse_array_piece(Piece<T>& pc, const Limits& lim, double bytes_per_line)
{
    const char* p = pc.begin;
    const char* const end = pc.end;
    pc.val.reserve(guess_entries(p, end, bytes_per_line));
    offset_t line = 0;
    while (p < end) {
        const char* q = skip_blanks(p, end);
        if (q == end) break;
        if (*q == '\n' || *q == '%') {
            p = next_line(q, end);
            line += p[-1] == '\n';
            continue;
        }
        T x = T(0);
        q = parse_value<T, F>(pc, line, q, end, lim, x);
        if (!q) return;
        q = skip_blanks(q, end);
        if (!at_eol(q, end))
            return pc.fail_at(line,
                              "unexpected text " + quote_token(q, end) +
                                  " after the value (an array file holds one value per line)");
        pc.val.push_back(x);
        ++pc.entries;
        if (q < end) {
            p = q + 1;
            ++line;
        } else {
            p = end;
        }
    }
    pc.lines = line;
}

template <class T>
void parse_piece(Piece<T>& pc, const Header& h, const Limits& lim, double bpl)
{
    if (!h.coordinate) {
        if (h.field_kind == Field::integer)
            parse_array_piece<T, Field::integer>(pc, lim, bpl);
        else
            parse_array_piece<T, Field::real>(pc, lim, bpl);
        return;
    }
    auto by_sym = [&](auto field) {
        constexpr Field F = decltype(field)::value;
        switch (h.sym) {
            case Symmetry::general:
                return parse_coordinate_piece<T, F, Symmetry::general>(pc, lim, bpl);
            case Symmetry::symmetric:
                return parse_coordinate_piece<T, F, Symmetry::symmetric>(pc, lim, bpl);
            case Symmetry::skew:
                return parse_coordinate_piece<T, F, Symmetry::skew>(pc, lim, bpl);
        }
    };
    switch (h.field_kind) {
        case Field::real:
            return by_sym(std::integral_constant<Field, Field::real>{});
        case Field::integer:
            return by_sym(std::integral_constant<Field, Field::integer>{});
        case Field::pattern:
            return by_sym(std::integral_constant<Field, Field::pattern>{});
    }
}

// Piece-local line index of the k-th (0-based) entry line of [b, e), whose lines before it
// are known to be well formed. Classifies lines exactly as the piece parsers do.
offset_t locate_entry(const char* b, const char* e, offset_t k)
{
    offset_t line = 0, seen = 0;
    while (b < e) {
        const char* q = skip_blanks(b, e);
        if (q == e) break;
        if (*q != '\n' && *q != '%') {
            if (seen == k) return line;
            ++seen;
        }
        b = next_line(q, e);
        line += b[-1] == '\n';
    }
    return line;
}

int thread_count(const MatrixMarketOptions& opt)
{
    if (opt.threads > 0) return opt.threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// The data section split at line starts: pieces of about `chunk` bytes.
template <class T>
std::vector<Piece<T>> split_pieces(const char* b, const char* e, std::size_t chunk)
{
    std::vector<Piece<T>> pieces;
    while (b < e) {
        const char* cut = std::size_t(e - b) <= chunk ? e : next_line(b + chunk - 1, e);
        Piece<T> pc;
        pc.begin = b;
        pc.end = cut;
        pieces.push_back(std::move(pc));
        b = cut;
    }
    return pieces;
}

// Everything parsed from the data section, in file order, before building the result.
template <class T>
struct Parsed {
    std::vector<Piece<T>> pieces;
    offset_t total = 0;  // entries
    offset_t diag = 0;
    offset_t non_finite = 0;
    offset_t first_non_finite_line = 0;
};

template <class T>
Parsed<T> parse_data(std::string_view data, const std::string& name, const Header& h,
                     const MatrixMarketOptions& opt, bool force_single = false)
{
    const char* b = data.data() + h.data_begin;
    const char* e = data.data() + data.size();
    const int nt = force_single ? 1 : std::max(1, thread_count(opt));
    std::size_t chunk = opt.chunk_bytes;
    const std::size_t size = std::size_t(e - b);
    if (force_single) {
        chunk = std::max<std::size_t>(size, 1);
    } else if (chunk == 0) {
        constexpr std::size_t mib = std::size_t(1) << 20;
        chunk = size < mib ? std::max<std::size_t>(size, 1)
                           : std::clamp(size / (std::size_t(nt) * 8), mib, 16 * mib);
    }
    // average line length from a sample, to reserve the piece arrays
    double bytes_per_line = 8;
    {
        const std::size_t n = std::min<std::size_t>(size, 1 << 16);
        const auto nl = std::count(b, b + n, '\n');
        if (nl > 0) bytes_per_line = std::max(2.0, double(n) / double(nl));
    }
    Parsed<T> out;
    out.pieces = split_pieces<T>(b, e, chunk);
    auto& pieces = out.pieces;
    const Limits lim{h.rows, h.cols, opt.non_finite};
    const std::int64_t np = std::int64_t(pieces.size());
    // Pieces after one that failed are not needed: the walk below stops at the first failure.
    std::atomic<std::int64_t> first_failed{np};
    auto parse_one = [&](std::int64_t c) {
        Piece<T>& pc = pieces[std::size_t(c)];
        if (c > first_failed.load(std::memory_order_relaxed)) {
            pc.skipped = true;
            return;
        }
        try {
            parse_piece(pc, h, lim, bytes_per_line);
        } catch (...) {
            pc.exception = std::current_exception();
            pc.failed = true;
        }
        if (pc.failed) {
            std::int64_t cur = first_failed.load();
            while (c < cur && !first_failed.compare_exchange_weak(cur, c)) {
            }
        }
    };
    if (np > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (std::int64_t c = 0; c < np; ++c) parse_one(c);
    } else if (np == 1) {
        parse_one(0);  // no parallel region: even a serial one costs microseconds
    }
    // First problem in file order: an entry past the declared count or a bad line.
    offset_t running = 0;
    offset_t line_base = h.data_first_line;
    offset_t newlines = h.header_newlines;
    for (auto& pc : pieces) {
        if (pc.exception) std::rethrow_exception(pc.exception);
        if (running + pc.entries > h.entries) {
            const offset_t k = h.entries - running;
            fail(name, line_base + locate_entry(pc.begin, pc.end, k),
                 "more entries than the " + std::to_string(h.entries) +
                     " declared on the size line (line " + std::to_string(h.size_line) + ")");
        }
        if (pc.failed) fail(name, line_base + pc.error_line, pc.error);
        if (pc.non_finite > 0 && out.non_finite == 0)
            out.first_non_finite_line = line_base + pc.first_non_finite;
        out.non_finite += pc.non_finite;
        running += pc.entries;
        out.diag += pc.diag;
        line_base += pc.lines;
        newlines += pc.lines;
    }
    if (running < h.entries) {
        const offset_t end_line = newlines + (data.back() != '\n' ? 1 : 0);
        fail(name, end_line,
             "the file ends after " + std::to_string(running) + " of the " +
                 std::to_string(h.entries) + " declared entries (size line " +
                 std::to_string(h.size_line) + ")");
    }
    out.total = running;
    return out;
}

// The result's entries in file order: the stored ones, then (symmetric and skew-symmetric
// files) the mirrors of the off-diagonal ones. Frees the pieces as it goes.
template <class T>
Coo<T> assemble_coordinate(Parsed<T>& parsed, const Header& h, int nt)
{
    auto& pieces = parsed.pieces;
    const offset_t total = parsed.total;
    if (pieces.size() == 1 && h.sym == Symmetry::general) {  // the piece's arrays are the result
        Coo<T> a;
        a.rows = index_t(h.rows);
        a.cols = index_t(h.cols);
        a.row = Array<index_t>(std::move(pieces[0].row));
        a.col = Array<index_t>(std::move(pieces[0].col));
        a.val = Array<T>(std::move(pieces[0].val));
        return a;
    }
    const offset_t mirrors = h.sym == Symmetry::general ? 0 : total - parsed.diag;
    std::vector<index_t> row(std::size_t(total + mirrors)), col(row.size());
    std::vector<T> val(row.size());
    std::vector<offset_t> base(pieces.size() + 1, 0), mbase(pieces.size() + 1, total);
    for (std::size_t c = 0; c < pieces.size(); ++c) {
        base[c + 1] = base[c] + pieces[c].entries;
        mbase[c + 1] =
            mbase[c] + (h.sym == Symmetry::general ? 0 : pieces[c].entries - pieces[c].diag);
    }
    const T sign = h.sym == Symmetry::skew ? T(-1) : T(1);
    const std::int64_t np = std::int64_t(pieces.size());
    auto copy_one = [&](std::int64_t c) {
        auto& pc = pieces[std::size_t(c)];
        const std::size_t n = pc.val.size();
        std::copy_n(pc.row.data(), n, row.data() + base[c]);
        std::copy_n(pc.col.data(), n, col.data() + base[c]);
        std::copy_n(pc.val.data(), n, val.data() + base[c]);
        if (h.sym != Symmetry::general) {
            offset_t m = mbase[c];
            for (std::size_t k = 0; k < n; ++k) {
                if (pc.row[k] == pc.col[k]) continue;
                row[m] = pc.col[k];
                col[m] = pc.row[k];
                val[m] = sign * pc.val[k];
                ++m;
            }
        }
        std::vector<index_t>().swap(pc.row);
        std::vector<index_t>().swap(pc.col);
        std::vector<T>().swap(pc.val);
    };
    if (np > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (std::int64_t c = 0; c < np; ++c) copy_one(c);
    } else if (np == 1) {
        copy_one(0);
    }
    Coo<T> a;
    a.rows = index_t(h.rows);
    a.cols = index_t(h.cols);
    a.row = Array<index_t>(std::move(row));
    a.col = Array<index_t>(std::move(col));
    a.val = Array<T>(std::move(val));
    return a;
}

// Duplicates with policy error: canonicalize() merged some, so find the first entry (in file
// order) that repeats an earlier one by parsing the data again in one piece (this is the
// error path, so its cost does not matter) and name both lines.
template <class T>
[[noreturn]] void report_duplicate(std::string_view data, const std::string& name, const Header& h,
                                   const MatrixMarketOptions& opt)
{
    Parsed<T> p = parse_data<T>(data, name, h, opt, true);
    const auto& pc = p.pieces.at(0);
    std::vector<offset_t> idx(pc.row.size());
    for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = offset_t(k);
    std::sort(idx.begin(), idx.end(), [&](offset_t x, offset_t y) {
        if (pc.row[x] != pc.row[y]) return pc.row[x] < pc.row[y];
        if (pc.col[x] != pc.col[y]) return pc.col[x] < pc.col[y];
        return x < y;
    });
    offset_t first = -1, second = std::numeric_limits<offset_t>::max();
    for (std::size_t k = 1; k < idx.size(); ++k) {
        const offset_t x = idx[k - 1], y = idx[k];
        if (pc.row[x] == pc.row[y] && pc.col[x] == pc.col[y] && y < second) {
            // y is the second occurrence of its group only if x is the group's first
            if (k >= 2 && pc.row[idx[k - 2]] == pc.row[y] && pc.col[idx[k - 2]] == pc.col[y])
                continue;
            first = x;
            second = y;
        }
    }
    HEPTANE_ENSURE(first >= 0, InputError, name << ": duplicate entries (policy error)");
    const offset_t l1 = h.data_first_line + locate_entry(pc.begin, pc.end, first);
    const offset_t l2 = h.data_first_line + locate_entry(pc.begin, pc.end, second);
    fail(name, l2,
         "duplicate entry (" + std::to_string(pc.row[second] + 1) + ", " +
             std::to_string(pc.col[second] + 1) + "), first given on line " + std::to_string(l1) +
             " (duplicate policy: error)");
}

template <class T>
std::vector<T> concat_values(Parsed<T>& parsed)
{
    std::vector<T> v;
    v.reserve(std::size_t(parsed.total));
    for (auto& pc : parsed.pieces) {
        v.insert(v.end(), pc.val.begin(), pc.val.end());
        std::vector<T>().swap(pc.val);
    }
    return v;
}

// An array file as a COO matrix: all stored values (zeros too), column-major in the file.
template <class T>
Coo<T> assemble_array(Parsed<T>& parsed, const Header& h, int nt, bool& canonical)
{
    const std::vector<T> v = concat_values(parsed);
    const std::int64_t m = h.rows, n = h.cols;
    Coo<T> a;
    a.rows = index_t(m);
    a.cols = index_t(n);
    std::vector<index_t> row, col;
    std::vector<T> val;
    if (h.sym == Symmetry::general) {
        // written row by row, so the result is canonical at once
        row.resize(v.size());
        col.resize(v.size());
        val.resize(v.size());
#pragma omp parallel for num_threads(nt) if (m * n > small)
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                const std::size_t k = std::size_t(i * n + j);
                row[k] = index_t(i);
                col[k] = index_t(j);
                val[k] = v[std::size_t(j * m + i)];
            }
        canonical = true;
    } else {
        const bool skew = h.sym == Symmetry::skew;
        const T sign = skew ? T(-1) : T(1);
        std::size_t k = 0;
        for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t i = skew ? j + 1 : j; i < m; ++i, ++k) {
                row.push_back(index_t(i));
                col.push_back(index_t(j));
                val.push_back(v[k]);
                if (i != j) {
                    row.push_back(index_t(j));
                    col.push_back(index_t(i));
                    val.push_back(sign * v[k]);
                }
            }
        canonical = false;
    }
    a.row = Array<index_t>(std::move(row));
    a.col = Array<index_t>(std::move(col));
    a.val = Array<T>(std::move(val));
    return a;
}

template <class T>
void report_non_finite(const std::string& name, const Parsed<T>& p, const MatrixMarketOptions& opt)
{
    if (p.non_finite > 0 && opt.non_finite == NonFinitePolicy::warn)
        std::fprintf(stderr,
                     "heptane: warning: %s:%lld: %lld NaN or Inf value(s) read (the first on "
                     "this line)\n",
                     name.c_str(), static_cast<long long>(p.first_non_finite_line),
                     static_cast<long long>(p.non_finite));
}

template <class T>
Coo<T> read_matrix(std::string_view data, const std::string& name, const MatrixMarketOptions& opt,
                   MatrixMarketInfo* info)
{
    const Header h = parse_header<T>(data, name, opt);
    const int nt = std::max(1, thread_count(opt));
    Parsed<T> parsed = parse_data<T>(data, name, h, opt);
    Coo<T> a;
    bool canonical = false;
    if (h.coordinate) {
        a = assemble_coordinate(parsed, h, nt);  // canonicalize returns at once if sorted
    } else {
        a = assemble_array(parsed, h, nt, canonical);
    }
    if (!canonical) {
        if (opt.duplicates == DuplicatePolicy::error) {
            const offset_t before = a.nnz();
            canonicalize(a, DuplicatePolicy::keep_last);
            if (a.nnz() != before) report_duplicate<T>(data, name, h, opt);
        } else {
            canonicalize(a, opt.duplicates);
        }
    }
    report_non_finite(name, parsed, opt);
    if (info) {
        info->object = h.object;
        info->format = h.format;
        info->field = h.field;
        info->symmetry = h.symmetry;
        info->declared_entries = h.entries;
        info->non_finite = parsed.non_finite;
        info->bytes = data.size();
    }
    return a;
}

template <class T>
std::vector<T> read_vector(std::string_view data, const std::string& name,
                           const MatrixMarketOptions& opt)
{
    const Header h = parse_header<T>(data, name, opt);
    if (h.rows != 1 && h.cols != 1)
        fail(name, h.size_line,
             "expected a vector (n x 1 or 1 x n), but the file holds a " + std::to_string(h.rows) +
                 " x " + std::to_string(h.cols) + " matrix");
    if (!h.coordinate && h.sym == Symmetry::general) {
        Parsed<T> parsed = parse_data<T>(data, name, h, opt);
        report_non_finite(name, parsed, opt);
        return concat_values(parsed);  // column-major: the vector's order either way
    }
    const Coo<T> a = read_matrix<T>(data, name, opt, nullptr);
    std::vector<T> x(std::size_t(std::max(h.rows, h.cols)), T(0));
    const bool column = h.cols == 1;
    for (offset_t k = 0; k < a.nnz(); ++k) x[std::size_t(column ? a.row[k] : a.col[k])] = a.val[k];
    return x;
}

// ---------------------------------------------------------------------------------------
// Files.

std::string comment_lines(const std::string& comment)
{
    std::string out;
    std::size_t i = 0;
    while (i < comment.size()) {
        std::size_t e = comment.find('\n', i);
        if (e == std::string::npos) e = comment.size();
        std::string line = comment.substr(i, e - i);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        out += line.empty() || line[0] == '%' ? "%" : "% ";
        out += line + "\n";
        i = e + 1;
    }
    return out;
}

// Longest text of one value written by std::to_chars (shortest round-trip form), e.g.
// "-2.2250738585072014e-308" (24 characters).
constexpr std::size_t max_value_chars = 32;
constexpr std::size_t max_index_chars = 11;

// Format entries [0, n) in parallel blocks and write them in order. `put(k, p)` writes
// entry k at p and returns the end of what it wrote (at most `line_chars` characters).
template <class Put>
void write_entries(AtomicFile& f, offset_t n, std::size_t line_chars, const Put& put)
{
    constexpr offset_t block = offset_t(1) << 15;
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    std::vector<std::vector<char>> buf(std::size_t(nt),
                                       std::vector<char>(std::size_t(block) * line_chars));
    std::vector<std::size_t> len(static_cast<std::size_t>(nt));
    for (offset_t start = 0; start < n; start += block * nt) {
        const int nb = int(std::min<offset_t>(nt, (n - start + block - 1) / block));
#pragma omp parallel for schedule(static, 1) num_threads(nt) if (nb > 1)
        for (int b = 0; b < nb; ++b) {
            char* p = buf[std::size_t(b)].data();
            char* const p0 = p;
            const offset_t lo = start + offset_t(b) * block, hi = std::min(n, lo + block);
            for (offset_t k = lo; k < hi; ++k) p = put(k, p);
            len[std::size_t(b)] = std::size_t(p - p0);
        }
        for (int b = 0; b < nb; ++b) f.write(buf[std::size_t(b)].data(), len[std::size_t(b)]);
    }
}

inline char* put_value(char* p, double v)
{
    return std::to_chars(p, p + max_value_chars, v).ptr;
}
inline char* put_value(char* p, float v)
{
    return std::to_chars(p, p + max_value_chars, v).ptr;
}
inline char* put_index(char* p, std::int64_t v)
{
    return std::to_chars(p, p + max_index_chars, v).ptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The API.

template <class T>
Coo<T> read_matrix_market_buffer(std::string_view data, const std::string& name,
                                 const MatrixMarketOptions& opt, MatrixMarketInfo* info)
{
    return read_matrix<T>(data, name, opt, info);
}

template <class T>
Coo<T> read_matrix_market(const std::string& path, const MatrixMarketOptions& opt,
                          MatrixMarketInfo* info)
{
    const FileBytes file(path);
    return read_matrix<T>(file.view(), path, opt, info);
}

template <class T>
std::vector<T> read_matrix_market_vector_buffer(std::string_view data, const std::string& name,
                                                const MatrixMarketOptions& opt)
{
    return read_vector<T>(data, name, opt);
}

template <class T>
std::vector<T> read_matrix_market_vector(const std::string& path, const MatrixMarketOptions& opt)
{
    const FileBytes file(path);
    return read_vector<T>(file.view(), path, opt);
}

template <class T>
void write_matrix_market(const std::string& path, const Coo<T>& a_in, const std::string& comment)
{
    // a device matrix is written from a host copy
    Coo<T> copy;
    const bool host = a_in.row.on_host() && a_in.col.on_host() && a_in.val.on_host();
    if (!host)
        copy = Coo<T>{a_in.rows, a_in.cols, a_in.row.to(cpu_executor()),
                      a_in.col.to(cpu_executor()), a_in.val.to(cpu_executor())};
    const Coo<T>& a = host ? a_in : copy;
    const offset_t nnz = a.nnz();
    HEPTANE_ENSURE(
        offset_t(a.row.size()) == nnz && offset_t(a.col.size()) == nnz, DimensionMismatch,
        "write_matrix_market('" << path << "'): COO arrays differ in length: row " << a.row.size()
                                << ", col " << a.col.size() << ", val " << nnz);
    HEPTANE_ENSURE(
        a.rows >= 0 && a.cols >= 0, InputError,
        "write_matrix_market('" << path << "'): negative size " << a.rows << " x " << a.cols);
    const index_t* r = a.row.data();
    const index_t* c = a.col.data();
    offset_t bad = nnz;
#pragma omp parallel for reduction(min : bad) if (nnz > small)
    for (offset_t k = 0; k < nnz; ++k)
        if (r[k] < 0 || r[k] >= a.rows || c[k] < 0 || c[k] >= a.cols) bad = std::min(bad, k);
    HEPTANE_ENSURE(bad == nnz, InputError,
                   "write_matrix_market('" << path << "'): entry " << bad << " at (" << r[bad]
                                           << ", " << c[bad] << ") (0-based) lies outside the "
                                           << a.rows << " x " << a.cols << " matrix");
    AtomicFile f(path);
    f.write("%%MatrixMarket matrix coordinate real general\n" + comment_lines(comment) +
            std::to_string(a.rows) + " " + std::to_string(a.cols) + " " + std::to_string(nnz) +
            "\n");
    const T* v = a.val.data();
    write_entries(f, nnz, 2 * max_index_chars + max_value_chars + 3, [&](offset_t k, char* p) {
        p = put_index(p, std::int64_t(r[k]) + 1);
        *p++ = ' ';
        p = put_index(p, std::int64_t(c[k]) + 1);
        *p++ = ' ';
        p = put_value(p, v[k]);
        *p++ = '\n';
        return p;
    });
    f.commit();
}

template <class T>
void write_matrix_market_vector(const std::string& path, const std::vector<T>& x,
                                const std::string& comment)
{
    HEPTANE_ENSURE(x.size() <= std::size_t(max_dimension), InputError,
                   "write_matrix_market_vector('" << path << "'): " << x.size()
                                                  << " entries exceed the largest size");
    AtomicFile f(path);
    f.write("%%MatrixMarket matrix array real general\n" + comment_lines(comment) +
            std::to_string(x.size()) + " 1\n");
    write_entries(f, offset_t(x.size()), max_value_chars + 1, [&](offset_t k, char* p) {
        p = put_value(p, x[std::size_t(k)]);
        *p++ = '\n';
        return p;
    });
    f.commit();
}

#define HEPTANE_INSTANTIATE(T)                                                                   \
    template Coo<T> read_matrix_market<T>(const std::string&, const MatrixMarketOptions&,        \
                                          MatrixMarketInfo*);                                    \
    template Coo<T> read_matrix_market_buffer<T>(std::string_view, const std::string&,           \
                                                 const MatrixMarketOptions&, MatrixMarketInfo*); \
    template std::vector<T> read_matrix_market_vector<T>(const std::string&,                     \
                                                         const MatrixMarketOptions&);            \
    template std::vector<T> read_matrix_market_vector_buffer<T>(                                 \
        std::string_view, const std::string&, const MatrixMarketOptions&);                       \
    template void write_matrix_market<T>(const std::string&, const Coo<T>&, const std::string&); \
    template void write_matrix_market_vector<T>(const std::string&, const std::vector<T>&,       \
                                                const std::string&);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
