// Global sums for solvers whose vectors are split across processes (docs/design.md §4). A
// distributed operator hands one to the solver (Operator::reducer()); the vector kernels then
// stop after their local partial sums, call sum() once per reduction point with all the
// sums of that point in one small buffer, and finish (alpha, beta, the stopping tests) from
// the global values. A single-process operator has none, and nothing changes.
//
// No MPI here: distributed/ implements it (MPI_Allreduce on host scalars, ncclAllReduce on
// the device), so the core library stays free of MPI.
#pragma once

#include "core/executor.hpp"

namespace heptane {

class Reducer {
public:
    virtual ~Reducer() = default;
    /// values[0..count) <- their sum over every process of the operator. `values` is in the
    /// memory of `exec` (count <= 8). On a CPU executor the sums are there when the call
    /// returns; on a CUDA executor they are there in the order of the executor's stream
    /// (the call may return before the device has them).
    virtual void sum(const Executor& exec, double* values, int count) const = 0;
    /// Number of processes taking part.
    virtual int size() const noexcept = 0;
    /// Whether sum() may be recorded into a CUDA graph (see Operator::graph_safe): device
    /// work only, no host wait. False by default (e.g. MPI_Allreduce on host scalars).
    virtual bool graph_safe() const noexcept { return false; }
};

}  // namespace heptane
