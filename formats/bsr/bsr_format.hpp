// BSR's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/bsr/bsr.hpp"
#include "formats/bsr/bsr_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::bsr> {
    static constexpr FormatInfo info{
        Format::bsr,                                             // id
        "bsr",                                                   // name
        nullptr,                                                 // alias
        "dense b x b blocks in block CSR (b = Nc unless told)",  // summary
        true,                                                    // block_size
        false,                                                   // native_transpose
    };
    template <class T>
    using Matrix = Bsr<T>;
    template <class T, class Opt>
    static Bsr<T> build(const Coo<T>& a, const Opt& opt)
    {
        return bsr_from_coo(a, opt.block_size);
    }
    template <class T, class Opt>
    static void layout(const Bsr<T>& m, Opt& opt)
    {
        opt.block_size = m.block_size;
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Bsr<T>& m)
    {
        return {&m.values};
    }
    template <class T>
    static std::string structure(const Bsr<T>& m)
    {
        return "b=" + std::to_string(m.block_size) + " blocks=" + std::to_string(m.nnz_blocks());
    }
    template <class T>
    static double matrix_bytes(const Bsr<T>& m, double value_bytes)
    {
        return double(m.nnz_blocks()) *
                   (double(m.block_size) * m.block_size * value_bytes + sizeof(index_t)) +
               double(m.block_rows() + 1) * sizeof(offset_t);
    }
};

}  // namespace heptane
