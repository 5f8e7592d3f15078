// The smoothed-aggregation setup on a CUDA executor (internal; namespace heptane::amg), for
// scalar systems (Nc = 1: pressure systems, CPR's pressure stage): the steps of
// amg_setup.hpp on the device, level by level, with nothing but sizes coming back to the host:
//
//   strength     one thread per row (the CPU rule and operations: the same strong set)
//   aggregate    the distance-2 independent set in synchronous rounds and the two joining
//                passes with the rules of amg_setup.hpp (the same aggregates as the CPU's);
//                or boxes of the level's grid (AmgAggregation::box: the axes' mean strengths
//                summed on the device, the boxes by box_of, as the CPU's)
//   prolongator  one thread per row, the entries summed in the CPU's order with unfused
//                multiplies (the same P, bit for bit)
//   R = Pᵀ       cuSPARSE csr2csc
//   R A P        cuSPARSE SpGEMM with reuse: A P, then R (A P); the patterns, buffers and
//                descriptors are kept, so refresh() (new values of A_0, same pattern) redoes
//                only the numeric products, on the device
//
// The coarse matrices are CSR in fp64 on the device, rows sorted (amg.cpp places them in the
// solver's precision). Limits: Nc = 1, and every level's nnz below 2^31 (cuSPARSE's SpGEMM takes
// 32-bit indices); InputError otherwise, naming the host setup as the way out. Built only with
// the CUDA back end (solver/CMakeLists.txt compiles *.cu files then).
#pragma once

#include <memory>
#include <vector>

#include "formats/csr/csr.hpp"
#include "solver/precond/amg/amg_options.hpp"
#include "solver/precond/amg/amg_setup.hpp"

namespace heptane::amg {

class DeviceHierarchy {
public:
    /// The hierarchy of `a` (host or device CSR, Nc = 1) on `exec` (a CUDA executor).
    DeviceHierarchy(const Csr<double>& a, const AmgOptions& o,
                    std::shared_ptr<const Executor> exec);
    ~DeviceHierarchy();
    DeviceHierarchy(const DeviceHierarchy&) = delete;
    DeviceHierarchy& operator=(const DeviceHierarchy&) = delete;

    /// Matrices A_0 … A_{L−1} (A_0: a copy of the input), on the device.
    int levels() const noexcept;
    const Csr<double>& a(int l) const;
    /// P_l and R_l = P_lᵀ between level l and l + 1 (l < levels() − 1).
    const Csr<double>& p(int l) const;
    const Csr<double>& r(int l) const;
    /// Level l's aggregate of each node (−1: none), copied to the host (tests).
    std::vector<index_t> aggregates(int l) const;
    /// Box aggregation (AmgOptions::aggregation): every level's grid; empty with mis.
    const std::vector<Grid>& grids() const noexcept;
    /// Whether the coarsest level is small enough for the dense inverse.
    bool dense_coarse() const noexcept;
    /// Milliseconds of the phases: strength, aggregation, P and R, Galerkin products.
    const double* phase_ms() const noexcept;
    /// New values of A_0 (host or device, A_0's pattern; the caller checks it): the Galerkin
    /// products again into the kept coarse patterns.
    void refresh(const Csr<double>& a);
    /// The same from A_0's new values alone: nnz doubles in the memory of `where` (the
    /// device's or the host's), in A_0's CSR order.
    void refresh_values(const double* values, offset_t nnz, const Executor& where);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// As inverse_diagonal (amg_setup.hpp) for a CSR matrix on a CUDA executor, on the device.
template <class VT>
Array<VT> inverse_diagonal_device(const Csr<double>& a, bool l1, int level,
                                  const std::shared_ptr<const Executor>& exec);

/// A device CSR matrix in precision VT (values converted on the device), and its values alone
/// into `dst` (same pattern).
template <class VT>
Csr<VT> device_copy(const Csr<double>& a, const std::shared_ptr<const Executor>& exec);
template <class VT>
void device_copy_values(const Csr<double>& a, Csr<VT>& dst,
                        const std::shared_ptr<const Executor>& exec);

}  // namespace heptane::amg
