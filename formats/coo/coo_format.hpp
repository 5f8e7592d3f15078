// COO's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/coo/coo.hpp"
#include "formats/coo/coo_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::coo> {
    static constexpr FormatInfo info{
        Format::coo,                                   // id
        "coo",                                         // name
        nullptr,                                       // alias
        "coordinate triplets in (row, column) order",  // summary
        false,                                         // block_size
        false,                                         // native_transpose
    };
    template <class T>
    using Matrix = Coo<T>;
    template <class T, class Opt>
    static Coo<T> build(const Coo<T>& a, const Opt& /*opt*/)
    {
        require_canonical(a, "the COO format");
        return Coo<T>{a.rows, a.cols, a.row, a.col, a.val};
    }
    template <class T, class Opt>
    static void layout(const Coo<T>& /*m*/, Opt& /*opt*/)
    {
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Coo<T>& m)
    {
        return {&m.val};
    }
    template <class T>
    static std::string structure(const Coo<T>& m)
    {
        return "nnz=" + std::to_string(m.nnz());
    }
    template <class T>
    static double matrix_bytes(const Coo<T>& m, double value_bytes)
    {
        return double(m.nnz()) * (value_bytes + 2 * sizeof(index_t));
    }
};

}  // namespace heptane
