// Shared helpers of the test programs: the executor under test, the real-matrix folder,
// random matrices and tolerance checks derived from the data.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr.hpp"

#ifndef HEPTANE_TEST_DATA_DIR
#define HEPTANE_TEST_DATA_DIR ""
#endif

namespace heptane::test {

/// For programs that test CUDA code only (tests/cuda.cmake): without HEPTANE_TEST_DEVICE=cuda
/// and a CUDA device, print why and exit 77 (ctest: skipped). `program` names it in the message.
inline void skip_unless_gpu(const char* program, const char* what)
{
    const char* dev = std::getenv("HEPTANE_TEST_DEVICE");
    if (!dev || std::string(dev) != "cuda" || CudaExecutor::device_count() == 0) {
        std::printf(
            "SKIPPED: %s tests %s only; it needs HEPTANE_TEST_DEVICE=cuda and a CUDA device\n",
            program, what);
        std::exit(77);
    }
}

/// The executor the tests run on: CUDA when HEPTANE_TEST_DEVICE=cuda, the CPU otherwise.
inline std::shared_ptr<const Executor> test_executor()
{
    static std::shared_ptr<const Executor> exec = [] {
        const char* dev = std::getenv("HEPTANE_TEST_DEVICE");
        if (dev && std::string(dev) == "cuda")
            return std::shared_ptr<const Executor>(CudaExecutor::create(0));
        return std::shared_ptr<const Executor>(cpu_executor());
    }();
    return exec;
}

inline bool testing_on_gpu()
{
    return test_executor()->is_cuda();
}

/// ../shared/data beside the checkout, or $HEPTANE_DATA_DIR.
inline std::string data_dir()
{
    if (const char* d = std::getenv("HEPTANE_DATA_DIR")) return d;
    return HEPTANE_TEST_DATA_DIR;
}
inline bool data_available()
{
    return std::filesystem::exists(std::filesystem::path(data_dir()) / "sherman4.mtx");
}
/// Whether this test program needs the real-matrix folder (set per program by CMake).
bool needs_data();
inline std::string data_file(const std::string& name)
{
    return (std::filesystem::path(data_dir()) / name).string();
}

/// A random canonical COO matrix: each row gets between min_len and max_len entries at
/// distinct random columns, values uniform in [-1, 1).
template <class T>
Coo<T> random_coo(index_t rows, index_t cols, int min_len, int max_len, unsigned seed);

/// A CSR matrix (host) as a block CSR matrix with bs x bs blocks, laid out as PETSc's BAIJ:
/// block row pointers from 0, block columns ascending, each block's values column-major one
/// block after the other; a block is stored where the matrix has an entry in it, its other
/// entries 0.
struct BlockCsr {
    index_t block_rows = 0, bs = 1;
    std::vector<index_t> block_ptr, block_col;
    std::vector<double> values;
};
BlockCsr block_csr_of(const Csr<double>& a, index_t bs);

/// Random vector with entries uniform in [-1, 1).
template <class T>
std::vector<T> random_vector(std::size_t n, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(d(gen));
    return v;
}

/// max_i |a_i - b_i| / (max_i |b_i| + tiny): one number to compare against a tolerance.
template <class A, class B>
double rel_max_diff(const std::vector<A>& a, const std::vector<B>& b)
{
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a[i]) - double(b[i]));
        if (!(d <= num)) num = d;  // NaN propagates
        den = std::max(den, std::abs(double(b[i])));
    }
    return num / (den + 1e-300);
}

}  // namespace heptane::test
