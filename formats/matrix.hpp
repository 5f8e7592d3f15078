// A sparse matrix in any format on any executor, as an Operator (docs/design.md §2: file or
// generator -> canonical COO -> chosen format on the chosen executor -> Operator).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/operator.hpp"
#include "formats/bdia/bdia_kernels.hpp"
#include "formats/coo/coo.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "formats/format.hpp"

namespace heptane {

/// How A^T x is computed for formats without a native transpose (CSR, COO, ELL, HYB, DIA,
/// BSR): a transpose-free atomic scatter, or a stored transpose built once at setup.
/// BDIA-GH always uses its native gather.
enum class TransposeMode { scatter, stored };

struct FormatOptions {
    index_t block_size = 0;              ///< BSR and BDIA block size (0 = detect)
    std::vector<index_t> block_offsets;  ///< BDIA block offsets (empty = from the pattern)
    index_t hyb_width = -1;              ///< HYB ELL width (-1 = from the histogram)
    TransposeMode transpose = TransposeMode::scatter;
    kernels::CsrKernel csr_kernel = kernels::CsrKernel::automatic;
    kernels::BdiaKernel bdia_kernel = kernels::BdiaKernel::automatic;
    /// BDIA-GH for a GPU executor: false (default) uploads the COO entries and places them on
    /// the device (bdia_from_coo with an executor); true builds the matrix on the host and
    /// uploads it (the earlier path, kept for comparison: `--operator-build host`).
    bool build_on_host = false;
};

/// A matrix in one of the registered formats on an executor, as an Operator: what
/// make_matrix_operator returns (formats/matrix_operator.hpp: FormatOperator implements it
/// for every format).
template <class VT>
class MatrixOperator : public Operator<VT> {
public:
    virtual Format format() const = 0;
    /// New values for the same pattern (a Newton step): values[k] is entry k of the canonical
    /// COO (or CSR: row by row, columns ascending, explicit zeros included) the operator was
    /// built from, in host memory; `count` must equal its entries. Converted to the operator's
    /// value precision. The first call makes the slot map (host work of about one build of
    /// the format, and its upload on a GPU); later calls copy through it (on a GPU: one upload
    /// of the values and one kernel per value array). Throws NotSupported for an operator
    /// with a stored transpose, DimensionMismatch for a wrong count.
    virtual void update_values(const double* values, offset_t count) = 0;
    /// update_values with `values` in the executor's memory (no upload on a GPU).
    virtual void update_values_device(const double* values, offset_t count) = 0;
};

/// Build format `f` from canonical host COO, with values converted to MT, placed on `exec`,
/// applied to vectors of VT. Instantiated for (MT, VT) = (double, double), (float, float),
/// (float, double). Throws InputError when the matrix does not fit the format (e.g. BSR
/// with a block size that does not divide the size).
template <class MT, class VT>
std::unique_ptr<MatrixOperator<VT>> make_matrix_operator(const Coo<double>& a, Format f,
                                                         std::shared_ptr<const Executor> exec,
                                                         const FormatOptions& opt = {});

/// The same from host CSR `a` (canonical, as csr_from_coo gives). `a_on_exec`: optional, `a`
/// already in exec's memory (a copy the caller keeps): BDIA-GH (MT = double) is placed from
/// it and the CSR format copies it on the device, with no upload. BDIA-GH for a GPU is built
/// there from the CSR arrays (bdia_from_csr) unless opt.build_on_host; the other formats,
/// and any format in fp32, go through canonical COO (to_coo) and the overload above.
template <class MT, class VT>
std::unique_ptr<MatrixOperator<VT>> make_matrix_operator(const Csr<double>& a, Format f,
                                                         std::shared_ptr<const Executor> exec,
                                                         const FormatOptions& opt = {},
                                                         const Csr<double>* a_on_exec = nullptr);

/// The same from a borrowed CSR view (formats/csr/csr.hpp: the caller's arrays, e.g. a host
/// program's): CSR is built straight from the arrays (row pointers widened, values converted
/// to MT; no COO); the other formats, which build from canonical COO, go through to_coo(a).
template <class MT, class VT>
std::unique_ptr<MatrixOperator<VT>> make_matrix_operator(const CsrView& a, Format f,
                                                         std::shared_ptr<const Executor> exec,
                                                         const FormatOptions& opt = {});

/// Bytes one y = A x moves at the floor (BENCHMARKS.md): the stored values and indices once,
/// x once, y once (plus y again when beta != 0, not counted here).
struct SpmvTraffic {
    double matrix_bytes = 0;  ///< values + indices as stored (padding included)
    double vector_bytes = 0;  ///< x read + y written
    double total() const { return matrix_bytes + vector_bytes; }
};

/// The floor traffic of one y = A x for format `f` built from `a` with `opt`, values and
/// vectors in precision `p` (mixed: 4-byte values, 8-byte vectors). Counts what the format
/// stores, padding included: values, column indices (COO, CSR, ELL, HYB, BSR), row/block-row
/// pointers (CSR 8 bytes each, BSR), the COO part's row indices (HYB), no indices for DIA and
/// BDIA; the pattern bitsets are not read by a product and not counted. Builds the format on
/// the host once to count (host COO; throws what make_matrix_operator throws).
SpmvTraffic spmv_traffic(const Coo<double>& a, Format f, const FormatOptions& opt, Precision p);

}  // namespace heptane
