// Basic scalar and index types shared by every layer of heptane.
#pragma once

#include <cstdint>
#include <string>

/// Marks a function usable both in host code and in CUDA kernels (nvcc), plain elsewhere.
#ifdef __CUDACC__
#define HEPTANE_HD __host__ __device__
#else
#define HEPTANE_HD
#endif

/// X(MT, VT) for the three precisions (docs/design.md): double (fp64 values and vectors),
/// single (fp32 both) and mixed (fp32 values, fp64 vectors): one instantiation list for the
/// kernels and operators of every format, on the CPU and in CUDA.
#define HEPTANE_PRECISION_TYPES(X) X(double, double) X(float, float) X(float, double)

/// X(IT, VT) for the index types of slot and gather maps (int32, int64) times the value
/// types (double, float): one instantiation list for the CPU and the CUDA files of a kernel
/// that takes both (scatter_values, block_diag_invert).
#define HEPTANE_INDEX_VALUE_TYPES(X) \
    X(std::int32_t, double) X(std::int32_t, float) X(std::int64_t, double) X(std::int64_t, float)

namespace heptane {

/// Row and column indices. A matrix has fewer than 2^31 rows and columns.
using index_t = std::int32_t;
/// Counts of stored entries and CSR row pointers: nnz may pass 2^31.
using offset_t = std::int64_t;

/// Which product a kernel computes: y = alpha*A*x + beta*y or y = alpha*A^T*x + beta*y.
enum class Op { normal, transpose };

/// Value precision of a matrix/vector pair: double (fp64 values and vectors), single (fp32
/// values and vectors) or mixed (fp32 matrix values, fp64 vectors and accumulation).
enum class Precision { double_, single, mixed };

/// "double", "single" or "mixed" (to_string's words) into `out`; false for anything else.
inline bool parse_precision(const std::string& s, Precision& out)
{
    if (s == "double")
        out = Precision::double_;
    else if (s == "single")
        out = Precision::single;
    else if (s == "mixed")
        out = Precision::mixed;
    else
        return false;
    return true;
}

inline const char* to_string(Precision p)
{
    switch (p) {
        case Precision::double_:
            return "double";
        case Precision::single:
            return "single";
        case Precision::mixed:
            return "mixed";
    }
    return "?";
}

}  // namespace heptane
