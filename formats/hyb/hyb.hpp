// HYB: an ELL part holding the first `width` entries of each row and a COO part for the
// rest. The width comes from the row-length histogram (choose_hyb_width).
#pragma once

#include "formats/coo/coo.hpp"
#include "formats/ell/ell.hpp"

namespace heptane {

template <class T>
struct Hyb {
    Ell<T> ell;
    Coo<T> coo;  ///< canonical; entries past `ell.width` in their row

    index_t rows() const noexcept { return ell.rows; }
    index_t cols() const noexcept { return ell.cols; }
    const std::shared_ptr<const Executor>& exec() const noexcept { return ell.exec(); }
    Hyb to(std::shared_ptr<const Executor> exec) const { return Hyb{ell.to(exec), coo.to(exec)}; }
};

/// ELL width from the row-length histogram: the largest K such that at least
/// max(4096, rows/3) rows have K or more entries (the rule CUSP and cuSPARSE's HYB used),
/// so ELL stays dense and the long tail goes to COO.
index_t choose_hyb_width(const std::vector<offset_t>& row_lengths);

template <class T>
Hyb<T> hyb_from_coo(const Coo<T>& a, index_t width = -1);
template <class T>
Coo<T> to_coo(const Hyb<T>& a);

}  // namespace heptane
