// "Vector operations on an executor": the one object a solver talks to for its vector work.
// Each call dispatches to the CPU or the CUDA implementation declared in vector_kernels.hpp,
// so BiCGStab and CG are written once, not once per backend. A CPU-only build never
// references the CUDA side (it is absent, not stubbed).
#pragma once

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "core/array.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"
#include "solver/vector/vector_kernels.hpp"

namespace heptane {

/// Call f(cpu_executor) or f(cuda_executor) for `exec`. Throws NotSupported for a CUDA
/// executor in a build without CUDA (which cannot have one).
template <class F>
decltype(auto) dispatch_executor(const Executor& exec, F&& f)
{
    if (exec.is_cpu()) return f(static_cast<const CpuExecutor&>(exec));
#ifdef HEPTANE_HAVE_CUDA
    return f(static_cast<const CudaExecutor&>(exec));
#else
    HEPTANE_THROW(NotSupported, "CUDA executor in a build without CUDA");
#endif
}

/// Whether two executors may share operands in one solve: both the host, or the same CUDA
/// executor object (one stream orders all the work; a second executor on the same device
/// has its own stream, which would race).
inline bool same_executor(const Executor& a, const Executor& b)
{
    if (a.is_cpu() && b.is_cpu()) return true;
    return &a == &b;
}
/// Whether an array on `array_exec` may be used by kernels on `exec`: memory of the same
/// device (or both host).
inline bool same_memory(const Executor& exec, const Executor& array_exec)
{
    if (exec.is_cpu() || array_exec.is_cpu()) return exec.is_cpu() && array_exec.is_cpu();
    return static_cast<const CudaExecutor&>(exec).device() ==
           static_cast<const CudaExecutor&>(array_exec).device();
}

/// Pinned host memory for asynchronous reads of small device regions (the residual every
/// check_every iterations). On the CPU a plain buffer, and copies are immediate.
class HostMirror {
public:
    HostMirror(std::shared_ptr<const Executor> exec, std::size_t bytes);
    ~HostMirror();
    HostMirror(const HostMirror&) = delete;
    HostMirror& operator=(const HostMirror&) = delete;

    /// Queue a copy of `bytes` from `src` (executor memory) to data() + offset.
    void copy_async(const void* src, std::size_t offset, std::size_t bytes);
    /// Mark the end of the copies queued so far; wait() returns when they have landed.
    void record();
    void wait();
    void* data() noexcept { return host_; }
    std::size_t size() const noexcept { return bytes_; }

private:
    std::shared_ptr<const Executor> exec_;
    void* host_ = nullptr;
    void* event_ = nullptr;  // cudaEvent_t
    std::size_t bytes_ = 0;
};

/// A batch of solver iterations recorded once into a CUDA graph and replayed: one launch for
/// the batch instead of tens per iteration, which is what a small system, or a system split
/// over many GPUs, is bound by. Recording runs nothing; what was recorded must be
/// graph-safe (Operator::graph_safe). A new recording of the same shape updates the
/// instantiated graph in place (cudaGraphExecUpdate), so a solver can record once per solve.
class BatchGraph {
public:
    BatchGraph() = default;
    ~BatchGraph();
    BatchGraph(const BatchGraph&) = delete;
    BatchGraph& operator=(const BatchGraph&) = delete;

    /// Forget the recording (the next solve records its own; the instance is kept).
    void reset() noexcept { recorded_ = false; }
    bool recorded() const noexcept { return recorded_; }
    /// Record what `queue` launches on the stream of `exec` (a CUDA executor). If `queue`
    /// throws, the recording is abandoned, the stream left usable, and the error rethrown.
    template <class Queue>
    void record(const Executor& exec, Queue&& queue)
    {
        begin(exec);
        try {
            queue();
        } catch (...) {
            abandon(exec);
            throw;
        }
        end(exec);
    }
    /// Queue the recorded batch on the stream of `exec`.
    void launch(const Executor& exec);

private:
    void release() noexcept;
    void begin(const Executor& exec);
    void end(const Executor& exec);
    void abandon(const Executor& exec) noexcept;
    void* instance_ = nullptr;  // cudaGraphExec_t
    bool recorded_ = false;
};

/// Vector kernels on one executor, with the KrylovState, the history buffer and the
/// reduction scratch of one solve.
template <class VT>
class VectorOps {
public:
    /// `max_it`: history entries kept on the executor (max_it + 1). `reducer`: sums dot
    /// products over processes (null: one process; see core/reducer.hpp).
    VectorOps(std::shared_ptr<const Executor> exec, int max_it, const Reducer* reducer = nullptr)
        : exec_(std::move(exec)),
          reducer_(reducer),
          state_(exec_, sizeof(KrylovState) / sizeof(double) + 1),
          history_(exec_, std::size_t(max_it > 0 ? max_it : 0) + 1),
          partials_(exec_, dispatch_executor(*exec_, [](const auto& e) {
                        return kernels::reduce_partials_size(e);
                    }))
    {
        static_assert(sizeof(KrylovState) % sizeof(double) == 0, "KrylovState padding");
        KrylovState zero{};
        copy_bytes(*cpu_executor(), &zero, *exec_, state_.data(), sizeof(KrylovState));
    }

    const std::shared_ptr<const Executor>& exec() const noexcept { return exec_; }
    bool asynchronous() const noexcept { return exec_->is_cuda(); }
    kernels::StepContext context() noexcept
    {
        return {reinterpret_cast<KrylovState*>(state_.data()), history_.data(), partials_.data(),
                reducer_};
    }
    const void* state_address() noexcept { return state_.data(); }
    const double* history_address() noexcept { return history_.data(); }
    std::size_t history_capacity() const noexcept { return history_.size(); }

    /// The state, copied to the host now (waits for the executor).
    KrylovState read_state()
    {
        KrylovState s;
        copy_bytes(*exec_, state_.data(), *cpu_executor(), &s, sizeof(KrylovState));
        return s;
    }

    void fill(index_t n, VT v, VT* x) const
    {
        call([&](const auto& e) { kernels::fill(e, n, v, x); });
    }
    void copy(index_t n, const VT* x, VT* y) const
    {
        call([&](const auto& e) { kernels::copy(e, n, x, y); });
    }
    void axpby(index_t n, VT a, const VT* x, VT b, VT* y) const
    {
        call([&](const auto& e) { kernels::axpby(e, n, a, x, b, y); });
    }
    /// (x, y), returned to the host (waits).
    double dot(index_t n, const VT* x, const VT* y)
    {
        call([&](const auto& e) { kernels::dot(e, n, x, y, context(), 0); });
        return read_state().scratch[0];
    }
    /// ‖x‖₂, returned to the host (waits).
    double norm2(index_t n, const VT* x)
    {
        call([&](const auto& e) { kernels::norm2(e, n, x, context(), 0); });
        return read_state().scratch[0];
    }
    void request_stop(Reason reason)
    {
        call([&](const auto& e) { kernels::request_stop(e, context(), reason); });
    }

    void bicgstab_init(index_t n, const VT* b, const VT* r, VT* r_hat, VT* p, VT* v,
                       StopParams params)
    {
        call([&](const auto& e) {
            kernels::bicgstab_init(e, n, b, r, r_hat, p, v, params, context());
        });
    }
    void bicgstab_update_p(index_t n, const VT* r, const VT* v, VT* p)
    {
        call([&](const auto& e) { kernels::bicgstab_update_p(e, n, r, v, p, context()); });
    }
    void bicgstab_alpha(index_t n, const VT* r_hat, const VT* v)
    {
        call([&](const auto& e) { kernels::bicgstab_alpha(e, n, r_hat, v, context()); });
    }
    void bicgstab_update_s(index_t n, const VT* r, const VT* v, VT* s)
    {
        call([&](const auto& e) { kernels::bicgstab_update_s(e, n, r, v, s, context()); });
    }
    void bicgstab_omega(index_t n, const VT* t, const VT* s)
    {
        call([&](const auto& e) { kernels::bicgstab_omega(e, n, t, s, context()); });
    }
    void bicgstab_update_xr(index_t n, const VT* p_hat, const VT* s_hat, const VT* s, const VT* t,
                            const VT* r_hat, VT* x, VT* r)
    {
        call([&](const auto& e) {
            kernels::bicgstab_update_xr(e, n, p_hat, s_hat, s, t, r_hat, x, r, context());
        });
    }

    /// The α and ω steps from a fused product's partial sums (Operator::apply_fused_dots).
    void bicgstab_alpha_partials(index_t parts, const double* partials)
    {
        call([&](const auto& e) {
            kernels::bicgstab_alpha_partials(e, parts, partials, context());
        });
    }
    void bicgstab_omega_partials(index_t parts, const double* partials)
    {
        call([&](const auto& e) {
            kernels::bicgstab_omega_partials(e, parts, partials, context());
        });
    }
    void cg_alpha_partials(index_t parts, const double* partials)
    {
        call([&](const auto& e) { kernels::cg_alpha_partials(e, parts, partials, context()); });
    }

    void cg_init(index_t n, const VT* b, const VT* r, StopParams params)
    {
        call([&](const auto& e) { kernels::cg_init(e, n, b, r, params, context()); });
    }
    void cg_start(index_t n, const VT* r, const VT* z, VT* p)
    {
        call([&](const auto& e) { kernels::cg_start(e, n, r, z, p, context()); });
    }
    void cg_alpha(index_t n, const VT* p, const VT* q)
    {
        call([&](const auto& e) { kernels::cg_alpha(e, n, p, q, context()); });
    }
    void cg_update_xr(index_t n, const VT* p, const VT* q, VT* x, VT* r, bool identity_pc)
    {
        call([&](const auto& e) {
            kernels::cg_update_xr(e, n, p, q, x, r, identity_pc, context());
        });
    }
    void cg_beta(index_t n, const VT* r, const VT* z)
    {
        call([&](const auto& e) { kernels::cg_beta(e, n, r, z, context()); });
    }
    void cg_update_p(index_t n, const VT* z, VT* p)
    {
        call([&](const auto& e) { kernels::cg_update_p(e, n, z, p, context()); });
    }

    // ---- LSQR and MLEM (host scalars; results land in the state or the history) ----------

    /// state.scratch[slot] = ‖x‖₂, not waited for (read it with read_state()).
    void norm2_async(index_t n, const VT* x, int slot)
    {
        call([&](const auto& e) { kernels::norm2(e, n, x, context(), slot); });
    }
    /// state.scratch[slot] = Σ x, not waited for.
    void sum_async(index_t n, const VT* x, int slot)
    {
        call([&](const auto& e) { kernels::sum(e, n, x, context(), slot); });
    }
    /// state.scratch[slot] = number of entries < 0 or NaN, not waited for.
    void count_negative_async(index_t n, const VT* x, int slot)
    {
        call([&](const auto& e) { kernels::count_negative(e, n, x, context(), slot); });
    }
    void lsqr_update_xw(index_t n, VT t1, VT t2, VT s, const VT* v, VT* w, VT* x, int slot)
    {
        call([&](const auto& e) {
            kernels::lsqr_update_xw(e, n, t1, t2, s, v, w, x, context(), slot);
        });
    }
    void mlem_correlate(index_t m, const VT* g, const VT* q, VT* c, int index)
    {
        call([&](const auto& e) { kernels::mlem_correlate(e, m, g, q, c, context(), index); });
    }
    void mlem_sensitivity(index_t n, const VT* norm, VT* inv_norm, VT* f, VT f0)
    {
        call([&](const auto& e) { kernels::mlem_sensitivity(e, n, norm, inv_norm, f, f0); });
    }
    void mlem_update(index_t n, const VT* b, const VT* inv_norm, VT* f)
    {
        call([&](const auto& e) { kernels::mlem_update(e, n, b, inv_norm, f); });
    }
    /// The first `count` history entries, copied to the host now (waits for the executor).
    std::vector<double> read_history(std::size_t count)
    {
        std::vector<double> h(std::min(count, history_.size()));
        if (!h.empty())
            copy_bytes(*exec_, history_.data(), *cpu_executor(), h.data(),
                       h.size() * sizeof(double));
        return h;
    }

private:
    template <class F>
    void call(F&& f) const
    {
        dispatch_executor(*exec_, std::forward<F>(f));
    }

    std::shared_ptr<const Executor> exec_;
    const Reducer* reducer_ = nullptr;
    Array<double> state_;  // one KrylovState (as doubles, for alignment)
    Array<double> history_;
    Array<double> partials_;
};

}  // namespace heptane
