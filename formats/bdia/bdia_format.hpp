// BDIA-GH's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/bdia/bdia.hpp"
#include "formats/bdia/bdia_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::bdia> {
    static constexpr FormatInfo info{
        Format::bdia,                                      // id
        "bdiagh",                                          // name
        "bdia",                                            // alias
        "Nc x Nc block diagonals (BDIA-GH): hepta grids",  // summary
        true,                                              // block_size
        true,                                              // native_transpose
    };
    template <class T>
    using Matrix = Bdia<T>;
    template <class T, class Opt>
    static Bdia<T> build(const Coo<T>& a, const Opt& opt)
    {
        return bdia_from_coo(a, opt.block_size, opt.block_offsets);
    }
    template <class T, class Opt>
    static void layout(const Bdia<T>& m, Opt& opt)
    {
        opt.block_size = m.block_size;
        opt.block_offsets = m.block_offsets;
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Bdia<T>& m)
    {
        return {&m.data};
    }
    template <class T>
    static std::string structure(const Bdia<T>& m)
    {
        return "Nc=" + std::to_string(m.block_size) +
               " D=" + std::to_string(m.num_block_diagonals());
    }
    template <class T>
    static double matrix_bytes(const Bdia<T>& m, double value_bytes)
    {
        return double(m.slots()) * value_bytes + double(m.num_block_diagonals()) * sizeof(index_t);
    }
};

}  // namespace heptane
