// ELL's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/ell/ell.hpp"
#include "formats/ell/ell_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::ell> {
    static constexpr FormatInfo info{
        Format::ell,                                           // id
        "ell",                                                 // name
        nullptr,                                               // alias
        "ELLPACK: rows padded to the longest (uniform rows)",  // summary
        false,                                                 // block_size
        false,                                                 // native_transpose
    };
    template <class T>
    using Matrix = Ell<T>;
    template <class T, class Opt>
    static Ell<T> build(const Coo<T>& a, const Opt& /*opt*/)
    {
        return ell_from_coo(a);
    }
    template <class T, class Opt>
    static void layout(const Ell<T>& /*m*/, Opt& /*opt*/)
    {
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Ell<T>& m)
    {
        return {&m.values};
    }
    template <class T>
    static std::string structure(const Ell<T>& m)
    {
        return "width=" + std::to_string(m.width);
    }
    template <class T>
    static double matrix_bytes(const Ell<T>& m, double value_bytes)
    {
        return double(m.slots()) * (value_bytes + sizeof(index_t));
    }
};

}  // namespace heptane
