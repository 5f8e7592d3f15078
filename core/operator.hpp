// The one interface that formats, preconditioners, solvers and the distributed operator
// share (docs/design.md §2). A solver is written once against it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/executor.hpp"
#include "core/reducer.hpp"
#include "core/types.hpp"

namespace heptane {

struct DotsFinish;  // solver/vector/dots_finish.hpp
template <class VT>
struct StepInput;  // solver/vector/dots_finish.hpp

/// A linear map y = alpha * op(A) * x + beta * y on vectors of value type VT that live in the
/// memory of executor(). When beta == 0, y is not read.
template <class VT>
class Operator {
public:
    virtual ~Operator() = default;
    virtual index_t rows() const = 0;
    virtual index_t cols() const = 0;
    virtual std::shared_ptr<const Executor> executor() const = 0;
    /// y = alpha*A*x + beta*y
    virtual void apply(VT alpha, const VT* x, VT beta, VT* y) const = 0;
    /// y = alpha*A^T*x + beta*y. Throws NotSupported where the operator has no transpose.
    virtual void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const = 0;
    /// y = A x
    void apply(const VT* x, VT* y) const { apply(VT(1), x, VT(0), y); }
    /// Short description, e.g. "bdiagh 65536x65536 Nc=8 D=7 (fp64) on cuda:0".
    virtual std::string describe() const = 0;
    /// Where the solver sums its dot products over the processes that share the vectors:
    /// null for an operator on one process (the default), the communicator's Reducer for a
    /// distributed operator (rows() is then the local row count).
    virtual const Reducer* reducer() const { return nullptr; }
    /// Whether apply() may be recorded into a CUDA graph and replayed later: it only queues
    /// device work on the executor's stream (or on streams forked from it and joined back
    /// before it returns), with no host synchronisation, no host-side communication and no
    /// state that changes from call to call on the host. The solvers then replay a batch of
    /// iterations as one graph launch. False (the default) keeps plain launches.
    virtual bool graph_safe() const { return false; }
    /// Whether a product costs far more than a host round trip because the host paces it: it
    /// streams the matrix from host memory or a file, or exchanges with other processes through
    /// the host (the out-of-core and gathered-rows operators). The Krylov solvers then read
    /// their residual on the host after every iteration (check_every 0) and queue no work
    /// ahead of that check: an iteration queued past the stop would cost whole products.
    /// False (the default): the checks are batched and run one batch ahead.
    virtual bool host_paced() const { return false; }
    /// y = A x together with the dot products of y that a Krylov step takes next, in the same
    /// pass over y (the step then reads neither y nor w again): count = 1: (w, y); count = 3:
    /// (w, y), (y, y), (w, w). Writes partial sums, accumulated in double, to
    /// partials[k * parts + b] for k < count, b < parts, and returns parts: the sum over b in
    /// order is the dot product. Returns 0, computing nothing, where this operator cannot fuse
    /// (the default): the caller applies and reduces separately. w may be x; y aliases
    /// neither. `capacity`: doubles at `partials` (fused_dots_capacity(count) is enough).
    /// `finish` (one process only): the product also adds up the partial sums, in an order
    /// fixed by its launch shape, and runs the step's finalize on them (DotsFinish), so no
    /// reduction is left to the caller; null: the caller reduces the partials.
    /// Device work only, like apply (graph-safe where apply is).
    virtual index_t apply_fused_dots(const VT* /*x*/, VT* /*y*/, const VT* /*w*/, int /*count*/,
                                     double* /*partials*/, std::size_t /*capacity*/,
                                     const DotsFinish* /*finish*/ = nullptr) const
    {
        return 0;
    }
    /// Doubles apply_fused_dots needs at `partials` for `count` sums; 0 when it never fuses.
    virtual std::size_t fused_dots_capacity(int /*count*/) const { return 0; }
    /// Whether apply_step_dots works here (BDIA-GH on one GPU; false by default).
    virtual bool forms_step_inputs() const { return false; }
    /// apply_fused_dots on an input that the product forms itself from a BiCGStab step's
    /// vectors (StepInput: p = r + β (p − ω v) or s = r − α v, each row's own entry written to
    /// input.z; for s, w is the input): the vector kernel that formed it and its pass over
    /// the input are saved. Returns the partial sums' count as apply_fused_dots does. Only
    /// where forms_step_inputs() (else NotSupported); one process (the input's entries of
    /// neighbouring rows are formed, never exchanged). Device work only.
    virtual index_t apply_step_dots(const StepInput<VT>& /*input*/, VT* /*y*/, const VT* /*w*/,
                                    int /*count*/, double* /*partials*/, std::size_t /*capacity*/,
                                    const DotsFinish* /*finish*/ = nullptr) const
    {
        HEPTANE_THROW(NotSupported,
                      describe() << ": no product that forms a BiCGStab step's input itself");
    }
};

}  // namespace heptane
