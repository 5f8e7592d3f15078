// DIA's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/dia/dia.hpp"
#include "formats/dia/dia_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::dia> {
    static constexpr FormatInfo info{
        Format::dia,                           // id
        "dia",                                 // name
        nullptr,                               // alias
        "scalar diagonals (banded matrices)",  // summary
        false,                                 // block_size
        true,                                  // native_transpose
    };
    template <class T>
    using Matrix = Dia<T>;
    template <class T, class Opt>
    static Dia<T> build(const Coo<T>& a, const Opt& /*opt*/)
    {
        return dia_from_coo(a);
    }
    template <class T, class Opt>
    static void layout(const Dia<T>& /*m*/, Opt& /*opt*/)
    {
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Dia<T>& m)
    {
        return {&m.data};
    }
    template <class T>
    static std::string structure(const Dia<T>& m)
    {
        return "D=" + std::to_string(m.num_diagonals());
    }
    template <class T>
    static double matrix_bytes(const Dia<T>& m, double value_bytes)
    {
        return double(m.num_diagonals()) * (double(m.rows) * value_bytes + sizeof(index_t));
    }
};

}  // namespace heptane
