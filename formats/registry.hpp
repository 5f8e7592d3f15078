// The format registry: every format's traits (formats/<name>/<name>_format.hpp) and
// visit_format, which calls a generic function with the traits of a format chosen at run
// time. Code that works on "any format" (matrix building, the floor-traffic count, heptane
// convert) visits instead of switching, so a new format needs no change there
// (docs/design.md "Add a format").
//
// FormatTraits<F> members: `info` (its FormatInfo: name, alias, help line, ...); Matrix<T> (the
// format's type); build(coo, opt) from canonical host COO (opt: FormatOptions or anything with
// hyb_width, block_size (resolved, >= 1 where the format takes one) and block_offsets);
// layout(m, opt), the options under which build gives m's layout again for m's pattern (what
// a values-only refresh needs, formats/matrix_operator.hpp); value_arrays(m), the arrays that
// hold the stored values; structure(m), a note for describe(); matrix_bytes(m, value_bytes),
// the bytes one product reads from the matrix as stored (BENCHMARKS.md's floor model).
#pragma once

#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "formats/bdia/bdia_format.hpp"
#include "formats/bsr/bsr_format.hpp"
#include "formats/coo/coo_format.hpp"
#include "formats/csr/csr_format.hpp"
#include "formats/dia/dia_format.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/format.hpp"
#include "formats/hyb/hyb_format.hpp"

namespace heptane {

namespace detail {

template <class Fn, Format F0, Format... Fs>
auto visit_format(Format f, Fn& fn, FormatList<F0, Fs...> /*list*/)
    -> std::invoke_result_t<Fn&, FormatTraits<F0>>
{
    if (f == F0) return fn(FormatTraits<F0>{});
    if constexpr (sizeof...(Fs) > 0) {
        return visit_format(f, fn, FormatList<Fs...>{});
    } else {
        HEPTANE_THROW(InputError, "unknown matrix format " << static_cast<int>(f));
    }
}

template <class M, class T, Format F0, Format... Fs>
constexpr Format format_of(FormatList<F0, Fs...> /*list*/)
{
    if constexpr (std::is_same_v<typename FormatTraits<F0>::template Matrix<T>, M>) {
        return F0;
    } else {
        static_assert(sizeof...(Fs) > 0, "not the matrix type of a registered format");
        return format_of<M, T>(FormatList<Fs...>{});
    }
}

template <class Fn, Format... Fs>
void for_each_format(Fn& fn, FormatList<Fs...> /*list*/)
{
    (fn(FormatTraits<Fs>{}), ...);
}

}  // namespace detail

/// fn(FormatTraits<F>{}) for the F equal to `f`; every call must return the same type.
template <class Fn>
decltype(auto) visit_format(Format f, Fn&& fn)
{
    return detail::visit_format(f, fn, AllFormats{});
}

/// The Format whose Matrix<T> is M (a compile error for other types).
template <class M, class T>
constexpr Format format_of()
{
    return detail::format_of<M, T>(AllFormats{});
}

/// fn(FormatTraits<F>{}) for every format in AllFormats order.
template <class Fn>
void for_each_format(Fn&& fn)
{
    detail::for_each_format(fn, AllFormats{});
}

}  // namespace heptane
