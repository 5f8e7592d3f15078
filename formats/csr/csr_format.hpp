// CSR's entry in the format registry (formats/format.hpp; members: formats/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "formats/csr/csr.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

template <>
struct FormatTraits<Format::csr> {
    static constexpr FormatInfo info{
        Format::csr,                            // id
        "csr",                                  // name
        nullptr,                                // alias
        "compressed sparse rows: any pattern",  // summary
        false,                                  // block_size
        false,                                  // native_transpose
    };
    template <class T>
    using Matrix = Csr<T>;
    template <class T, class Opt>
    static Csr<T> build(const Coo<T>& a, const Opt& /*opt*/)
    {
        return csr_from_coo(a);
    }
    template <class T, class Opt>
    static void layout(const Csr<T>& /*m*/, Opt& /*opt*/)
    {
    }
    template <class T>
    static std::vector<Array<T>*> value_arrays(Csr<T>& m)
    {
        return {&m.values};
    }
    template <class T>
    static std::string structure(const Csr<T>& m)
    {
        return "nnz=" + std::to_string(m.nnz());
    }
    template <class T>
    static double matrix_bytes(const Csr<T>& m, double value_bytes)
    {
        return double(m.nnz()) * (value_bytes + sizeof(index_t)) +
               double(m.rows + 1) * sizeof(offset_t);
    }
};

}  // namespace heptane
