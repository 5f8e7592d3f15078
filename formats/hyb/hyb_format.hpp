// HYB's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/format.hpp"
#include "formats/hyb/hyb.hpp"
#include "formats/hyb/hyb_kernels.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::hyb> {
    static constexpr FormatInfo info{
        Format::hyb,                                                 // id
        "hyb",                                                       // name
        nullptr,                                                     // alias
        "ELL up to a width from the row lengths, COO for the rest",  // summary
        false,                                                       // block_size
        false,                                                       // native_transpose
    };
    template <class T>
    using Matrix = Hyb<T>;
    template <class T, class Opt>
    static Hyb<T> build(const Coo<T>& a, const Opt& opt)
    {
        return hyb_from_coo(a, opt.hyb_width);
    }
    template <class T, class Opt>
    static void layout(const Hyb<T>& m, Opt& opt)
    {
        opt.hyb_width = m.ell.width;
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Hyb<T>& m)
    {
        return {&m.ell.values, &m.coo.val};
    }
    template <class T>
    static std::string structure(const Hyb<T>& m)
    {
        return "width=" + std::to_string(m.ell.width) + " coo=" + std::to_string(m.coo.nnz());
    }
    template <class T>
    static double matrix_bytes(const Hyb<T>& m, double value_bytes)
    {
        return double(m.ell.slots()) * (value_bytes + sizeof(index_t)) +
               double(m.coo.nnz()) * (value_bytes + 2 * sizeof(index_t));
    }
};

}  // namespace heptane
