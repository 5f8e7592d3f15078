// The host side of every fused Krylov loop (internal header): queue iterations in batches of
// check_every, read the KrylovState and the batch's residual norms back through pinned
// memory while the next batch is already queued, feed the history and the monitor, test
// stagnation, and assemble the Status. BiCGStab and CG differ only in `iterate`
// (run_fused_loop); the prologue and epilogue every Krylov solve shares (workspace key,
// initial and true residual, timings) are here too.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/operator.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solver.hpp"
#include "solver/vector/dots_finish.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::detail {

/// Milliseconds since construction (host clock).
class Stopwatch {
public:
    Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
    double ms() const
    {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
            .count();
    }

private:
    std::chrono::steady_clock::time_point t0_;
};

/// A product followed by the reduction of its result (Operator::apply_fused_dots): the
/// partial-sum scratch of one solve, sized once for the operator (none when it cannot fuse
/// or SolverOptions::fused_dots is off), and whether a product has fused in this solve.
class FusedDots {
public:
    /// `in_product`: the product itself finishes the step (SolverOptions::fused_finish), where
    /// `ctx` has no reducer (one process).
    template <class VT>
    FusedDots(const Operator<VT>& a, const SolverOptions& o, Array<double>& scratch,
              const kernels::StepContext& ctx)
    {
        cap_ = reserve(a, o, scratch);
        partials_ = scratch.data();
        in_product_ = o.fused_finish && !ctx.reducer;
        inputs_ =
            cap_ && o.fused_inputs != FusedInputs::none && !ctx.reducer && a.forms_step_inputs();
        state_ = ctx.state;
    }
    /// Size `scratch` for the partial sums of a's fused products (none where it cannot fuse
    /// or SolverOptions::fused_dots is off); returns its capacity in partial sums.
    template <class VT>
    static std::size_t reserve(const Operator<VT>& a, const SolverOptions& o,
                               Array<double>& scratch)
    {
        const std::size_t cap =
            o.fused_dots ? std::max(a.fused_dots_capacity(1), a.fused_dots_capacity(3)) : 0;
        if (cap > scratch.size()) scratch = Array<double>(a.executor(), cap);
        return cap;
    }
    /// y = A x with the `count` dot products of the step that follows (w as in
    /// apply_fused_dots): fused where the operator can, the product then finishing the step
    /// `kind` itself (one process, fused_finish) or finish(parts, partials) ending it; else
    /// A.apply(x, y) and then apart() reduces y on its own.
    template <class VT, class Finish, class Apart>
    void apply(const Operator<VT>& a, const VT* x, VT* y, const VT* w, int count,
               DotsFinish::Kind kind, Finish&& finish, Apart&& apart)
    {
        if (cap_) {
            const DotsFinish f{kind, state_};
            const DotsFinish* in = in_product_ ? &f : nullptr;
            if (const index_t parts = a.apply_fused_dots(x, y, w, count, partials_, cap_, in)) {
                if (!in) finish(parts, static_cast<const double*>(partials_));
                used_ = true;
                return;
            }
        }
        a.apply(x, y);
        apart();
    }
    /// Whether the products may form a BiCGStab step's inputs (apply_step): fused dot
    /// products, SolverOptions::fused_inputs, one process, Operator::forms_step_inputs.
    bool forms_inputs() const noexcept { return inputs_; }
    /// y = A z with z formed in the product from `in` (Operator::apply_step_dots; the state
    /// is filled in here) and the step's dot products, ended as in apply(). Only where
    /// forms_inputs().
    template <class VT, class Finish>
    void apply_step(const Operator<VT>& a, StepInput<VT> in, VT* y, const VT* w, int count,
                    DotsFinish::Kind kind, Finish&& finish)
    {
        in.state = state_;
        const DotsFinish f{kind, state_};
        const DotsFinish* fin = in_product_ ? &f : nullptr;
        const index_t parts = a.apply_step_dots(in, y, w, count, partials_, cap_, fin);
        if (!fin) finish(parts, static_cast<const double*>(partials_));
        used_ = true;
    }
    bool used() const noexcept { return used_; }

private:
    std::size_t cap_ = 0;
    double* partials_ = nullptr;
    bool in_product_ = false;
    bool inputs_ = false;
    KrylovState* state_ = nullptr;
    bool used_ = false;
};

/// Throws InputError for options no solve can honour.
inline void check_options(const SolverOptions& o)
{
    HEPTANE_ENSURE(
        o.rtol >= 0 && o.atol >= 0, InputError,
        "solver options: rtol (" << o.rtol << ") and atol (" << o.atol << ") must be >= 0");
    HEPTANE_ENSURE(o.dtol > 0, InputError, "solver options: dtol (" << o.dtol << ") must be > 0");
    HEPTANE_ENSURE(o.max_it >= 0, InputError,
                   "solver options: max_it (" << o.max_it << ") must be >= 0");
    HEPTANE_ENSURE(
        o.check_every >= 0, InputError,
        "solver options: check_every (" << o.check_every << ") must be >= 0 (0: automatic)");
    HEPTANE_ENSURE(
        o.stagnation_window >= 0, InputError,
        "solver options: stagnation_window (" << o.stagnation_window << ") must be >= 0");
}

/// The misuse checks every solve makes before touching the device (docs/design.md §2: misuse is
/// an error). `who` names the solver in the messages.
template <class VT>
void check_operands(const char* who, const Operator<VT>* a, const Operator<VT>* m,
                    const Array<VT>& b, const Array<VT>& x)
{
    HEPTANE_ENSURE(a, InputError, who << "::solve: no operator (call set_operator first)");
    HEPTANE_ENSURE(
        a->rows() == a->cols(), DimensionMismatch,
        who << ": the operator is " << a->rows() << " x " << a->cols() << ", not square");
    const auto n = static_cast<std::size_t>(a->rows());
    HEPTANE_ENSURE(b.size() == n, DimensionMismatch,
                   who << ": b has " << b.size() << " entries, the operator " << n << " rows");
    HEPTANE_ENSURE(x.size() == n, DimensionMismatch,
                   who << ": x has " << x.size() << " entries, the operator " << n << " columns");
    HEPTANE_ENSURE(n == 0 || b.data() != x.data(), InputError, who << ": b and x are one array");
    const auto& ex = *a->executor();
    HEPTANE_ENSURE(same_memory(ex, *b.exec()) && same_memory(ex, *x.exec()), DimensionMismatch,
                   who << ": b (on " << b.exec()->name() << ") and x (on " << x.exec()->name()
                       << ") must be in the memory of the operator's executor " << ex.name());
    if (m) {
        HEPTANE_ENSURE(m->rows() == a->rows() && m->cols() == a->cols(), DimensionMismatch,
                       who << ": the preconditioner is " << m->rows() << " x " << m->cols()
                           << ", the operator " << a->rows() << " x " << a->cols());
        HEPTANE_ENSURE(same_executor(ex, *m->executor()), DimensionMismatch,
                       who << ": the preconditioner lives on " << m->executor()->name()
                           << ", the operator on " << ex.name()
                           << " (one executor object: its stream orders the work)");
    }
}

inline StopParams stop_params(const SolverOptions& o)
{
    return StopParams{o.rtol, o.atol, o.dtol, o.max_it};
}

/// The two pinned read-back slots of a solver's workspace (allocating page-locked memory
/// costs about a millisecond, so it is done once, not per solve).
struct CheckMirrors {
    std::unique_ptr<HostMirror> slot[2];
    /// Make sure both slots hold `bytes` on `exec`.
    void ensure(const std::shared_ptr<const Executor>& exec, std::size_t bytes)
    {
        for (auto& m : slot)
            if (!m || m->size() < bytes) m = std::make_unique<HostMirror>(exec, bytes);
    }
};

/// x (n entries on `exec`) into host memory `out` as doubles (IterationInfo::iterate).
template <class VT>
void iterate_to_host(const Executor& exec, const VT* x, index_t n, double* out)
{
    if constexpr (std::is_same_v<VT, double>) {
        copy_bytes(exec, x, *cpu_executor(), out, sizeof(double) * std::size_t(n));
    } else {
        std::vector<VT> tmp(static_cast<std::size_t>(n));
        copy_bytes(exec, x, *cpu_executor(), tmp.data(), sizeof(VT) * tmp.size());
        std::copy(tmp.begin(), tmp.end(), out);
    }
}

/// The batch of a solve's host checks: SolverOptions::check_every, or for 0 (automatic) 1
/// with a multigrid preconditioner (AMG, CPR) or a host-paced operator (Operator::host_paced),
/// 8 otherwise.
template <class VT>
int effective_check_every(const SolverOptions& o, const Operator<VT>& a, const Operator<VT>* m)
{
    if (o.check_every > 0) return o.check_every;
    if (a.host_paced()) return 1;
    const auto* p = dynamic_cast<const Preconditioner<VT>*>(m);
    return p && (p->type() == PcType::amg || p->type() == PcType::cpr) ? 1 : 8;
}

/// Whether a solve may replay its iterations from a CUDA graph: asked for, on a CUDA
/// executor, and every part graph-safe (the operator, the preconditioner unless it is
/// skipped, the reducer of a distributed operator).
template <class VT>
bool graphs_allowed(const SolverOptions& o, const Operator<VT>& a, const Operator<VT>* m)
{
    return o.cuda_graphs && a.executor()->is_cuda() && a.graph_safe() && (!m || m->graph_safe()) &&
           (!a.reducer() || a.reducer()->graph_safe());
}

/// The iterations one recorded CUDA graph of a solve replays (KrylovDriver's batch: 1 with a
/// caller's stop_test or monitor_iterate, else effective_check_every); 0 where no graph is
/// recorded. A loop whose launch arguments alternate between iterations (BiCGStab forming its
/// inputs in the products) replays correctly only when this is even.
template <class VT>
int replay_batch(const SolverOptions& o, const Operator<VT>& a, const Operator<VT>* m)
{
    if (!graphs_allowed(o, a, m)) return 0;
    return o.stop_test || o.monitor_iterate ? 1 : effective_check_every(o, a, m);
}

template <class VT>
class KrylovDriver {
public:
    /// `graph`: where to record the batch for replay (null: plain launches, always on the
    /// CPU). The first batch is queued plainly and the recording made while it runs; every
    /// later full batch is one graph launch. `check_every`: the batch (effective_check_every).
    /// `ahead`: on an asynchronous executor, queue the next batch before reading this one
    /// (false for a host-paced operator: each batch is read before the next is queued).
    KrylovDriver(VectorOps<VT>& ops, CheckMirrors& mirrors, const SolverOptions& opts,
                 int check_every, BatchGraph* graph = nullptr, bool ahead = true)
        : ops_(ops),
          mirrors_(mirrors),
          opts_(opts),
          exact_(opts.stop_test || opts.monitor_iterate),
          check_every_(exact_ ? 1 : check_every),
          ahead_(ahead && !exact_),  // a caller's test stops at its own iteration
          graph_(graph)
    {
        if (graph_) graph_->reset();  // the pointers of this solve are recorded anew
    }
    /// Whether any batch of the last run() was a graph launch.
    bool used_graph() const noexcept { return graph_launches_ > 0; }
    /// x, the iterate of the solve (n entries on the executor): IterationInfo::iterate reads
    /// it when every iteration is read before the next is queued (a stop_test or
    /// SolverOptions::monitor_iterate).
    void set_iterate(const VT* x, index_t n) noexcept
    {
        x_ = x;
        n_ = n;
    }

    /// After the init kernel: read the state (waits for the executor), record ‖r_0‖.
    /// Returns true when the solve already stopped at iteration 0.
    bool start()
    {
        state_ = ops_.read_state();
        emit(0, state_.rnorm);
        if (!state_.stop && caller_stop_ != Reason::iterating) {
            ops_.request_stop(caller_stop_);
            state_ = ops_.read_state();
        }
        return state_.stop != 0;
    }
    const KrylovState& initial_state() const noexcept { return state_; }

    /// Queue `iterate()` until the device stops or max_it iterations are queued.
    template <class Iterate>
    void run(Iterate&& iterate)
    {
        const int k = ops_.asynchronous() ? check_every_ : 1;
        mirrors_.ensure(ops_.exec(), sizeof(KrylovState) + sizeof(double) * std::size_t(k));
        HostMirror* mirrors[2] = {mirrors_.slot[0].get(), mirrors_.slot[1].get()};
        struct Batch {
            int slot = 0;
            int first = 0;  // first iteration of the batch
            int count = 0;
            bool valid = false;
        } prev;
        int launched = 0, slot = 0;
        bool stopped = false;
        while (launched < opts_.max_it && !stopped) {
            const int batch = std::min(k, opts_.max_it - launched);
            if (graph_ && batch == k && graph_->recorded()) {
                graph_->launch(*ops_.exec());
                ++graph_launches_;
            } else {
                for (int j = 0; j < batch; ++j) iterate();
            }
            Batch cur{slot, launched + 1, batch, true};
            launched += batch;
            HostMirror& m = *mirrors[slot];
            m.copy_async(ops_.state_address(), 0, sizeof(KrylovState));
            m.copy_async(ops_.history_address() + cur.first, sizeof(KrylovState),
                         sizeof(double) * std::size_t(batch));
            m.record();
            slot ^= 1;
            // record the batch while the device runs the first one, when a full batch follows
            if (graph_ && !graph_->recorded() && launched + k <= opts_.max_it)
                graph_->record(*ops_.exec(), [&] {
                    for (int j = 0; j < k; ++j) iterate();
                });
            if (ops_.asynchronous() && ahead_) {
                // wait for the batch before this one; the device works on this one meanwhile
                if (prev.valid) stopped = process(*mirrors[prev.slot], prev.first, prev.count);
                prev = cur;
            } else {
                stopped = process(m, cur.first, cur.count);
            }
        }
        // The final state is authoritative (a stop seen at a check, or requested by the
        // stagnation test, is reached by the device after what was already queued).
        state_ = ops_.read_state();
        const int last = state_.iter;
        if (last > seen_) {
            std::vector<double> tail(std::size_t(last - seen_));
            copy_bytes(*ops_.exec(), ops_.history_address() + seen_ + 1, *cpu_executor(),
                       tail.data(), sizeof(double) * tail.size());
            for (int i = seen_ + 1; i <= last; ++i) emit(i, tail[std::size_t(i - seen_ - 1)]);
        }
    }

    /// Fill reason, iterations, norms and history of `st` from the last state read.
    void finish(Status& st)
    {
        st.reason = static_cast<Reason>(state_.reason);
        if (st.reason == Reason::iterating) st.reason = Reason::diverged_max_it;  // defensive
        st.iterations = state_.iter;
        st.b_norm = state_.bnorm;
        st.initial_residual_norm = state_.r0norm;
        st.residual_norm = state_.rnorm;
        st.relative_residual = state_.bnorm > 0 ? state_.rnorm / state_.bnorm : 0.0;
        if (opts_.record_history)
            st.history = std::move(history_);
        else
            st.history.clear();
    }

private:
    /// Handle one batch read back into `m`; returns true when the loop should stop queueing.
    bool process(HostMirror& m, int first, int count)
    {
        m.wait();
        KrylovState s;
        std::memcpy(&s, m.data(), sizeof(KrylovState));
        const double* seg = reinterpret_cast<const double*>(static_cast<const char*>(m.data()) +
                                                            sizeof(KrylovState));
        const int last = std::min(s.iter, first + count - 1);
        for (int i = std::max(seen_ + 1, first); i <= last; ++i) emit(i, seg[i - first]);
        if (s.stop) return true;
        if (caller_stop_ != Reason::iterating) {  // batches of 1, none queued behind: exact
            ops_.request_stop(caller_stop_);
            return true;
        }
        if (stagnated()) {
            ops_.request_stop(Reason::stagnation);
            return true;
        }
        return false;
    }

    void emit(int i, double rnorm)
    {
        history_.push_back(rnorm);
        prefix_min_.push_back(prefix_min_.empty() ? rnorm : std::min(prefix_min_.back(), rnorm));
        seen_ = i;
        const bool test = opts_.stop_test && caller_stop_ == Reason::iterating && !state_.stop;
        if (!opts_.monitor && !test) return;
        IterationInfo info;
        info.iteration = i;
        info.residual_norm = rnorm;
        info.relative_residual = state_.bnorm > 0 ? rnorm / state_.bnorm : 0.0;
        if (exact_ && x_)  // nothing queued behind this iteration: x is x_i
            info.iterate = [this](double* out) { iterate_to_host(*ops_.exec(), x_, n_, out); };
        if (opts_.monitor) opts_.monitor(info);
        if (test) caller_stop_ = reason_of(opts_.stop_test(info));
    }

    /// min ‖r‖ over the last `window` iterations not below (1 − stagnation_rtol)·(min before).
    bool stagnated() const
    {
        const int w = opts_.stagnation_window;
        if (w <= 0 || seen_ < w) return false;
        double recent = history_[std::size_t(seen_)];
        for (int i = seen_ - w + 1; i <= seen_; ++i)
            recent = std::min(recent, history_[std::size_t(i)]);
        const double before = prefix_min_[std::size_t(seen_ - w)];
        return !(recent < (1.0 - opts_.stagnation_rtol) * before);
    }

    VectorOps<VT>& ops_;
    CheckMirrors& mirrors_;
    const SolverOptions& opts_;
    bool exact_ = false;  // every iteration read before the next is queued
    int check_every_ = 8;
    bool ahead_ = true;
    BatchGraph* graph_ = nullptr;
    int graph_launches_ = 0;
    KrylovState state_{};
    std::vector<double> history_;
    std::vector<double> prefix_min_;
    int seen_ = -1;                           // last iteration emitted
    Reason caller_stop_ = Reason::iterating;  // what SolverOptions::stop_test said
    const VT* x_ = nullptr;                   // the iterate (set_iterate)
    index_t n_ = 0;
};

/// How many of BiCGStab's most-used vectors (p, r, v, r̂, in that order) a CUDA solve keeps
/// in the L2 cache (L2Window): HEPTANE_L2=k in the environment, 0 to 4 (read once; default 0,
/// none: a measurement switch until the window is shown to pay).
int hot_l2_vectors();

/// For the life of the object, [base, base + bytes) persisting in the L2 cache of a CUDA
/// executor's stream (CudaExecutor::persist_l2); nothing on the CPU or for 0 bytes.
class L2Window {
public:
    L2Window(const Executor& exec, const void* base, std::size_t bytes);
    ~L2Window();
    L2Window(const L2Window&) = delete;
    L2Window& operator=(const L2Window&) = delete;

private:
    const CudaExecutor* cuda_ = nullptr;
};

/// What decides whether a solver's workspace serves the next solve: the executor, the size,
/// `extent` (the iteration limit of BiCGStab and CG: their history; GMRES's restart m), whether
/// M is applied, and the reducer of a distributed operator.
struct WorkspaceKey {
    std::shared_ptr<const Executor> exec;
    index_t n = 0;
    int extent = 0;
    bool precond = false;
    const Reducer* reducer = nullptr;
    bool operator==(const WorkspaceKey& o) const noexcept
    {
        return exec.get() == o.exec.get() && n == o.n && extent == o.extent &&
               precond == o.precond && reducer == o.reducer;
    }
};

/// The solver's workspace for `key`: the one it has when the key is the same, else a new one.
template <class W>
W& workspace_for(std::unique_ptr<W>& ws, const WorkspaceKey& key)
{
    if (!ws || !(ws->key == key)) ws = std::make_unique<W>(key);
    return *ws;
}

/// What the workspaces of the fused solvers (BiCGStab, CG) share: the key, the vector steps
/// (with the history of max_it = key.extent residual norms), the pinned read-back slots, the
/// recorded batch and a fused product's partial sums (Operator::apply_fused_dots).
template <class VT>
struct FusedWorkspace {
    explicit FusedWorkspace(const WorkspaceKey& k) : key(k), ops(k.exec, k.extent, k.reducer) {}
    WorkspaceKey key;
    VectorOps<VT> ops;
    CheckMirrors mirrors;
    BatchGraph graph;
    Array<double> partials;
};

/// The preconditioner a solve applies: null where it is skipped (none, or the identity).
template <class VT>
const Operator<VT>* applied_preconditioner(const std::shared_ptr<const Operator<VT>>& m)
{
    return is_identity_preconditioner(m.get()) ? nullptr : m.get();
}

/// The start of a fused solve (BiCGStab, CG): the operator, the preconditioner it applies
/// (null where skipped), n, and the workspace W for them with its vector steps.
template <class VT, class W>
struct FusedFrame {
    FusedFrame(const Operator<VT>& a, const std::shared_ptr<const Operator<VT>>& m,
               const SolverOptions& o, std::unique_ptr<W>& ws)
        : A(a),
          M(applied_preconditioner(m)),
          n(a.rows()),
          w(workspace_for(ws, WorkspaceKey{a.executor(), n, o.max_it, M != nullptr, a.reducer()})),
          ops(w.ops)
    {
    }
    const Operator<VT>& A;
    const Operator<VT>* M;
    const index_t n;
    W& w;
    VectorOps<VT>& ops;
};

/// Solver::prepare of a fused solver (BiCGStab, CG): the workspace W of the next solve, the
/// partial sums of its fused products and the read-back slots of its checks, as the solve's
/// start (FusedFrame, FusedDots, KrylovDriver::run) would make them.
template <class VT, class W>
void prepare_fused(const Operator<VT>& a, const std::shared_ptr<const Operator<VT>>& m,
                   const SolverOptions& o, std::unique_ptr<W>& ws)
{
    FusedFrame<VT, W> frame(a, m, o, ws);
    FusedDots::reserve(a, o, frame.w.partials);
    frame.w.mirrors.ensure(
        a.executor(),
        sizeof(KrylovState) +
            sizeof(double) * std::size_t(std::max(1, effective_check_every(o, a, frame.M))));
}

/// r = b − A x0 with the guess in x (SolverOptions::nonzero_initial_guess), else x = 0, r = b.
template <class VT>
void initial_residual(const Operator<VT>& a, VectorOps<VT>& ops, const SolverOptions& o,
                      const VT* b, VT* x, VT* r)
{
    const index_t n = a.rows();
    if (o.nonzero_initial_guess) {
        a.apply(x, r);
        ops.axpby(n, VT(1), b, VT(-1), r);
    } else {
        ops.fill(n, VT(0), x);
        ops.copy(n, b, r);
    }
}

/// Status::timings.solve_ms and per_iteration_ms from the solve's clock.
inline void set_solve_time(Status& st, const Stopwatch& solve_clock)
{
    st.timings.solve_ms = solve_clock.ms();
    st.timings.per_iteration_ms = st.iterations > 0 ? st.timings.solve_ms / st.iterations : 0.0;
}

/// The loop of a fused solver (BiCGStab, CG) after its init kernel: the driver over
/// `iterate` (batched host checks, CUDA graphs where allowed), x = 0 for b = 0, and the
/// Status with the setup time (setup_clock), the solve time and whether graphs and fused
/// products were used. `m`: the preconditioner, null where it is skipped (identity).
template <class VT, class Iterate>
Status run_fused_loop(const Operator<VT>& a, const Operator<VT>* m, VectorOps<VT>& ops,
                      CheckMirrors& mirrors, BatchGraph& graph, const SolverOptions& o,
                      const FusedDots& fused, VT* x, const Stopwatch& setup_clock,
                      Iterate&& iterate)
{
    KrylovDriver<VT> driver(ops, mirrors, o, effective_check_every(o, a, m),
                            graphs_allowed(o, a, m) ? &graph : nullptr, !a.host_paced());
    driver.set_iterate(x, a.rows());
    const bool stopped = driver.start();
    if (stopped && driver.initial_state().bnorm == 0.0) ops.fill(a.rows(), VT(0), x);
    Status st;
    st.timings.setup_ms = setup_clock.ms();
    const Stopwatch solve_clock;
    if (!stopped) driver.run(iterate);
    driver.finish(st);
    st.cuda_graph = driver.used_graph();
    st.fused_dots = fused.used();
    set_solve_time(st, solve_clock);
    return st;
}

/// With SolverOptions::compute_true_residual: ‖b − A x‖ and its relative value into st
/// (`scratch`: n entries the solve no longer needs).
template <class VT>
void true_residual(const Operator<VT>& a, VectorOps<VT>& ops, const SolverOptions& o, const VT* b,
                   const VT* x, VT* scratch, Status& st)
{
    if (!o.compute_true_residual) return;
    const Stopwatch clock;
    const index_t n = a.rows();
    a.apply(x, scratch);                      // scratch = A x
    ops.axpby(n, VT(1), b, VT(-1), scratch);  // scratch = b − A x
    st.true_residual_norm = ops.norm2(n, scratch);
    st.true_relative_residual =
        st.b_norm > 0 ? st.true_residual_norm / st.b_norm : st.true_residual_norm;
    st.timings.true_residual_ms = clock.ms();
}

}  // namespace heptane::detail
