// libFuzzer target: the PETSc binary reader (generators/petsc_binary.*) on arbitrary bytes.
//
// Any input must either read or throw a heptane::Error; anything else (a crash, a sanitizer
// report, another exception, a hang, an allocation the input's size cannot back) is a bug.
// What it reads must hold together: a canonical matrix inside its declared size, the index
// width 4 or 8, as many objects as the matrix and vectors returned, and reading the same bytes
// again gives the same result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "generators/petsc_binary.hpp"

namespace {

using namespace heptane;

std::string digest(std::string_view bytes)
{
    try {
        const PetscBinaryContents c = read_petsc_binary_buffer(bytes, "fuzz.petsc");
        std::string d = "ok " + std::to_string(c.index_bytes) + " " + std::to_string(c.objects);
        if (c.matrix) {
            const Coo<double>& a = *c.matrix;
            if (!is_canonical(a) || a.rows < 0 || a.cols < 0) std::abort();
            if (a.row.size() != a.val.size() || a.col.size() != a.val.size()) std::abort();
            d += " m " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " " +
                 std::to_string(a.nnz());
            if (!a.val.empty())
                d.append(reinterpret_cast<const char*>(a.val.data()), a.val.bytes());
        }
        if (c.index_bytes != 4 && c.index_bytes != 8) std::abort();
        if (c.objects != int(c.vectors.size()) + (c.matrix ? 1 : 0)) std::abort();
        for (const auto& v : c.vectors) d += " v " + std::to_string(v.size());
        return d;
    } catch (const Error& e) {
        return std::string("error ") + e.what();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::string first = digest(bytes);
    if (digest(bytes) != first) std::abort();
    return 0;
}
