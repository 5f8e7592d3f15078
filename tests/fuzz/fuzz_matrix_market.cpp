// libFuzzer target: the Matrix Market reader on arbitrary bytes.
//
// Any input must either read or throw a heptane::Error; anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug. The input is also read a second time split
// into tiny pieces parsed by several threads, and both reads must agree exactly: the same
// matrix, or the same error message (so the same line number). Vectors and float are read
// too. The memory limit keeps a tiny file that declares a huge matrix from being honoured.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "generators/matrix_market.hpp"

namespace {

using namespace heptane;

constexpr std::size_t fuzz_memory_limit = std::size_t(64) << 20;

// What one read gave: the error message, or the matrix.
template <class T>
struct Outcome {
    bool ok = false;
    std::string error;
    Coo<T> a;
    MatrixMarketInfo info;
};

template <class T>
Outcome<T> read(std::string_view text, const MatrixMarketOptions& opt)
{
    Outcome<T> o;
    try {
        o.a = read_matrix_market_buffer<T>(text, "fuzz.mtx", opt, &o.info);
        o.ok = true;
    } catch (const Error& e) {
        o.error = e.what();
    }
    return o;
}

template <class T>
bool same(const Outcome<T>& x, const Outcome<T>& y)
{
    if (x.ok != y.ok) return false;
    if (!x.ok) return x.error == y.error;
    return x.a.rows == y.a.rows && x.a.cols == y.a.cols && x.a.row.host() == y.a.row.host() &&
           x.a.col.host() == y.a.col.host() && x.a.val.bytes() == y.a.val.bytes() &&
           (x.a.val.empty() || std::memcmp(x.a.val.data(), y.a.val.data(), x.a.val.bytes()) == 0) &&
           x.info.non_finite == y.info.non_finite &&
           x.info.declared_entries == y.info.declared_entries;
}

template <class T>
void check(std::string_view text, MatrixMarketOptions serial, std::size_t chunk)
{
    serial.threads = 1;
    serial.memory_limit = fuzz_memory_limit;
    MatrixMarketOptions parallel = serial;
    parallel.threads = 3;
    parallel.chunk_bytes = chunk;
    const auto a = read<T>(text, serial);
    const auto b = read<T>(text, parallel);
    if (!same(a, b)) std::abort();  // the pieces changed the result or the error
    if (a.ok && !is_canonical(a.a)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // piece size from the input, so a crash reproduces from the file alone
    const std::size_t chunk = size > 0 ? 1 + data[size - 1] % 16 : 1;
    MatrixMarketOptions opt;
    check<double>(text, opt, chunk);
    opt.duplicates = DuplicatePolicy::error;
    opt.non_finite = NonFinitePolicy::accept;
    check<float>(text, opt, chunk);
    opt.duplicates = DuplicatePolicy::keep_last;
    opt.memory_limit = fuzz_memory_limit;
    try {
        (void)read_matrix_market_vector_buffer<double>(text, "fuzz.mtx", opt);
    } catch (const Error&) {
    }
    return 0;
}
