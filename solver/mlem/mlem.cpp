// MLEM / OSEM written once against Operator::apply / apply_transpose and the fused vector
// kernels of solver/vector (mlem_correlate, mlem_update, mlem_sensitivity).
//
// One MLEM iteration (S = 1), m rows, n columns, passes of m·sizeof(VT) or n·sizeof(VT):
//     q = A f                     forward projection   matrix + f read (n) + q written (m)
//     q = g / q, L(f)             mlem_correlate       g, q read, q written (3m)
//     b = Aᵀ q                    back projection      matrix + q read (m) + b written (n)
//     f = f · b · (1/norm)        mlem_update          f, b, 1/norm read, f written (4n)
//   = 2 x matrix bytes + (5m + 6n)·sizeof(VT); 4 launches plus the products; no host wait.
// The correlation is fused with the log-likelihood reduction (its value goes to a history
// slot on the executor, read once at the end) and the update with the division by the
// sensitivity (stored inverted once). Fusing them into the products themselves would need a
// kernel per format (the Operator applies any format); the vector steps are a small share of
// the traffic next to a PET matrix (nnz ≫ m + n).
//
// OSEM (S > 1) runs the same four steps per row block s (q_s, g_s: the block's slices of q
// and g; b and the block's 1/norm_s of length n): 2 x matrix bytes + (5m + 6n·S)·sizeof(VT)
// per iteration, plus, for the log-likelihood, one forward projection of all rows and a
// 2m-pass reduction (A f and L(f) after the pass over all subsets).
#include "solver/mlem/mlem.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

template <class VT>
struct Mlem<VT>::Workspace {
    Workspace(std::shared_ptr<const Executor> e, index_t m_, index_t n_, int subsets_)
        : exec(e),
          m(m_),
          n(n_),
          subsets(subsets_),
          q(e, m_),
          b(e, n_),
          inv_norm(e, std::size_t(n_) * subsets_),
          norm(e, n_)
    {
    }
    bool fits(const std::shared_ptr<const Executor>& e, index_t m_, index_t n_, int subsets_) const
    {
        return e.get() == exec.get() && m_ == m && n_ == n && subsets_ == subsets;
    }
    std::shared_ptr<const Executor> exec;
    index_t m, n;
    int subsets;
    Array<VT> q;         // projections and correlations (m)
    Array<VT> b;         // back projection (n)
    Array<VT> inv_norm;  // 1/norm_s per subset (S·n), 0 where norm_s = 0
    Array<VT> norm;      // Σ_s norm_s = Aᵀ·1 (n)
    bool sensitivity_ready = false;
    double norm_sum = 0;  // Σ_j norm_j
    index_t unseen = 0;   // #{j : norm_j = 0}
};

template <class VT>
Mlem<VT>::Mlem(MlemOptions options) : opts_(std::move(options))
{
}
template <class VT>
Mlem<VT>::~Mlem() = default;
template <class VT>
Mlem<VT>::Mlem(Mlem&&) noexcept = default;
template <class VT>
Mlem<VT>& Mlem<VT>::operator=(Mlem&&) noexcept = default;

template <class VT>
void Mlem<VT>::set_operator(std::shared_ptr<const Operator<VT>> a)
{
    HEPTANE_ENSURE(a, InputError, "Mlem::set_operator: null operator");
    set_subsets({std::move(a)});
}
template <class VT>
void Mlem<VT>::set_operator(const Operator<VT>& a)
{
    set_operator(std::shared_ptr<const Operator<VT>>(&a, [](const Operator<VT>*) {}));
}
template <class VT>
void Mlem<VT>::set_subsets(std::vector<std::shared_ptr<const Operator<VT>>> blocks)
{
    HEPTANE_ENSURE(!blocks.empty(), InputError, "Mlem::set_subsets: no blocks");
    for (std::size_t s = 0; s < blocks.size(); ++s) {
        HEPTANE_ENSURE(blocks[s], InputError, "Mlem::set_subsets: block " << s << " is null");
        HEPTANE_ENSURE(blocks[s]->cols() == blocks[0]->cols(), DimensionMismatch,
                       "Mlem::set_subsets: block " << s << " has " << blocks[s]->cols()
                                                   << " columns, block 0 " << blocks[0]->cols());
        HEPTANE_ENSURE(
            same_executor(*blocks[s]->executor(), *blocks[0]->executor()), DimensionMismatch,
            "Mlem::set_subsets: block " << s << " lives on " << blocks[s]->executor()->name()
                                        << ", block 0 on " << blocks[0]->executor()->name());
    }
    blocks_ = std::move(blocks);
    ws_.reset();  // new sensitivities at the next solve
}

template <class VT>
void Mlem<VT>::set_process_sum(std::function<void(double*, int)> sum)
{
    psum_ = std::move(sum);
    ws_.reset();  // the sensitivities are the sums over the processes
}

template <class VT>
MlemStatus Mlem<VT>::solve(const Array<VT>& g_arr, Array<VT>& f_arr)
{
    const auto t_setup = std::chrono::steady_clock::now();
    HEPTANE_ENSURE(!blocks_.empty(), InputError,
                   "Mlem::solve: no operator (call set_operator or set_subsets first)");
    HEPTANE_ENSURE(opts_.iterations >= 0, InputError,
                   "Mlem options: iterations (" << opts_.iterations << ") must be >= 0");
    const int S = static_cast<int>(blocks_.size());
    // an operator whose A^T x arrives summed over the processes (dist::RowBlockOperator):
    // the vectors need no sum of their own, the host scalars still go through psum_
    const bool summed_transpose = blocks_[0]->reducer() != nullptr;
    for (const auto& blk : blocks_)
        HEPTANE_ENSURE(
            (blk->reducer() != nullptr) == summed_transpose && (!summed_transpose || psum_),
            NotSupported,
            "Mlem: operators with their rows split over processes (every block or "
            "none) need set_process_sum for the host sums");
    const index_t n = blocks_[0]->cols();
    std::vector<index_t> offset(S + 1, 0);  // first row of each block
    for (int s = 0; s < S; ++s) offset[s + 1] = offset[s] + blocks_[s]->rows();
    const index_t m = offset[S];
    HEPTANE_ENSURE(g_arr.size() == std::size_t(m), DimensionMismatch,
                   "Mlem: g has " << g_arr.size() << " entries, the system " << m << " rows");
    HEPTANE_ENSURE(f_arr.size() == std::size_t(n), DimensionMismatch,
                   "Mlem: f has " << f_arr.size() << " entries, the system " << n << " columns");
    const auto exec = blocks_[0]->executor();
    HEPTANE_ENSURE(
        same_memory(*exec, *g_arr.exec()) && same_memory(*exec, *f_arr.exec()), DimensionMismatch,
        "Mlem: g (on " << g_arr.exec()->name() << ") and f (on " << f_arr.exec()->name()
                       << ") must be in the memory of the operators' executor " << exec->name());

    const int iters = opts_.iterations;
    if (!ws_ || !ws_->fits(exec, m, n, S)) ws_ = std::make_unique<Workspace>(exec, m, n, S);
    Workspace& w = *ws_;
    VectorOps<VT> ops(exec, iters);  // history: L(f^k), k = 0..iters
    const VT* g = g_arr.data();
    VT* f = f_arr.data();
    VT *q = w.q.data(), *b = w.b.data(), *inv = w.inv_norm.data(), *norm = w.norm.data();
    auto inv_of = [&](int s) { return inv + std::size_t(s) * n; };
    // over the processes: a vector in the executor's memory through host memory, host scalars
    std::vector<VT> stage_v;
    std::vector<double> stage_d;
    const auto all_sum = [&](VT* v, index_t len) {
        if (!psum_ || summed_transpose) return;
        stage_v.resize(std::size_t(len));
        stage_d.resize(std::size_t(len));
        copy_bytes(*exec, v, *cpu_executor(), stage_v.data(), std::size_t(len) * sizeof(VT));
        for (index_t j = 0; j < len; ++j) stage_d[j] = double(stage_v[j]);
        psum_(stage_d.data(), static_cast<int>(len));
        for (index_t j = 0; j < len; ++j) stage_v[j] = VT(stage_d[j]);
        copy_bytes(*cpu_executor(), stage_v.data(), *exec, v, std::size_t(len) * sizeof(VT));
    };
    const auto all_sum_host = [&](double* v, int len) {
        if (psum_) psum_(v, len);
    };

    if (!w.sensitivity_ready) {
        // norm_s = A_sᵀ·1 (q = 1 serves as the ones vector), norm = Σ_s norm_s
        ops.fill(m, VT(1), q);
        for (int s = 0; s < S; ++s) {
            blocks_[s]->apply_transpose(VT(1), q + offset[s], VT(0), inv_of(s));
            all_sum(inv_of(s), n);  // over the processes
        }
        ops.copy(n, inv_of(0), norm);
        for (int s = 1; s < S; ++s) ops.axpby(n, VT(1), inv_of(s), VT(1), norm);
        // checks: no negative column sum; Σ norm; #{norm_j > 0} = #{−norm_j < 0}
        ops.axpby(n, VT(-1), norm, VT(0), b);
        ops.count_negative_async(n, norm, 0);
        ops.sum_async(n, norm, 1);
        ops.count_negative_async(n, b, 2);
        const KrylovState st = ops.read_state();
        HEPTANE_ENSURE(st.scratch[0] == 0, InputError,
                       "Mlem: " << st.scratch[0]
                                << " column sums of A are negative or NaN; MLEM needs a system "
                                   "matrix with a_ij >= 0");
        w.norm_sum = st.scratch[1];
        w.unseen = n - static_cast<index_t>(st.scratch[2]);
        for (int s = 0; s < S; ++s)
            ops.mlem_sensitivity(n, inv_of(s), inv_of(s), nullptr, VT(0));  // 1/norm_s in place
        w.sensitivity_ready = true;
    }

    MlemStatus status;
    status.subsets = S;
    status.sensitivity_sum = w.norm_sum;
    status.unseen_voxels = w.unseen;

    // counts ≥ 0 (and the initial image, when given); Σ g for f⁰
    ops.count_negative_async(m, g, 0);
    ops.sum_async(m, g, 1);
    if (opts_.nonzero_initial_guess) ops.count_negative_async(n, f, 2);
    KrylovState cs = ops.read_state();
    all_sum_host(cs.scratch, 2);  // the counts' checks and Σ g over the processes
    HEPTANE_ENSURE(cs.scratch[0] == 0, InputError,
                   "Mlem: g has " << cs.scratch[0] << " negative or NaN counts");
    HEPTANE_ENSURE(!opts_.nonzero_initial_guess || cs.scratch[2] == 0, InputError,
                   "Mlem: the initial image has " << cs.scratch[2] << " negative or NaN voxels");
    status.counts = cs.scratch[1];
    if (!opts_.nonzero_initial_guess) {
        // f⁰ = Σg / Σnorm where norm_j > 0, else 0 (b takes the unused inverse)
        status.initial_value = w.norm_sum > 0 ? status.counts / w.norm_sum : 0.0;
        ops.mlem_sensitivity(n, norm, b, f, VT(status.initial_value));
    }
    exec->synchronize();
    status.timings.setup_ms = ms_since(t_setup);

    const auto t_solve = std::chrono::steady_clock::now();
    const bool ll = opts_.compute_loglik;
    if (S == 1) {
        const Operator<VT>& A = *blocks_[0];
        for (int k = 0; k < iters; ++k) {
            A.apply(f, q);                                // q = A f
            ops.mlem_correlate(m, g, q, q, ll ? k : -1);  // q = g / q;  L(f^k)
            A.apply_transpose(VT(1), q, VT(0), b);        // b = Aᵀ q
            all_sum(b, n);                                // over the processes
            ops.mlem_update(n, b, inv, f);                // f = f · b / norm
            if (opts_.progress) {
                exec->synchronize();
                opts_.progress(k + 1, iters);
            }
        }
        if (ll) {
            A.apply(f, q);
            ops.mlem_correlate(m, g, q, nullptr, iters);  // L(f^iters)
        }
    } else {
        auto loglik = [&](int k) {
            for (int s = 0; s < S; ++s) blocks_[s]->apply(f, q + offset[s]);
            ops.mlem_correlate(m, g, q, nullptr, k);
        };
        if (ll) loglik(0);
        for (int k = 0; k < iters; ++k) {
            for (int s = 0; s < S; ++s) {
                const Operator<VT>& As = *blocks_[s];
                const index_t ms = As.rows();
                VT* qs = q + offset[s];
                As.apply(f, qs);                                    // q_s = A_s f
                ops.mlem_correlate(ms, g + offset[s], qs, qs, -1);  // q_s = g_s / q_s
                As.apply_transpose(VT(1), qs, VT(0), b);            // b = A_sᵀ q_s
                all_sum(b, n);                                      // over the processes
                ops.mlem_update(n, b, inv_of(s), f);                // f = f · b / norm_s
            }
            if (ll) loglik(k + 1);
            if (opts_.progress) {
                exec->synchronize();
                opts_.progress(k + 1, iters);
            }
        }
    }
    if (ll) {
        status.loglik = ops.read_history(std::size_t(iters) + 1);  // waits
        all_sum_host(status.loglik.data(), static_cast<int>(status.loglik.size()));
    }
    exec->synchronize();
    status.iterations = iters;
    status.timings.solve_ms = ms_since(t_solve);
    status.timings.per_iteration_ms = iters > 0 ? status.timings.solve_ms / iters : 0.0;
    return status;
}

template class Mlem<double>;
template class Mlem<float>;

std::vector<index_t> row_block_bounds(const Coo<double>& a, int subsets)
{
    HEPTANE_ENSURE(
        subsets >= 1 && subsets <= std::max<index_t>(a.rows, 1), InputError,
        "OSEM: " << subsets << " subsets for " << a.rows << " rows (need 1 <= subsets <= rows)");
    const std::vector<offset_t> len = row_lengths(a);
    std::vector<offset_t> start(std::size_t(a.rows) + 1, 0);  // prefix sums of nnz
    for (index_t i = 0; i < a.rows; ++i) start[i + 1] = start[i] + len[i];
    const offset_t nnz = start[a.rows];
    std::vector<index_t> bounds(std::size_t(subsets) + 1, 0);
    bounds[subsets] = a.rows;
    index_t r = 0;
    for (int s = 1; s < subsets; ++s) {
        // first row whose prefix reaches s/S of the entries, leaving each block >= 1 row
        const offset_t target = nnz * s / subsets;
        while (r < a.rows && start[r] < target) ++r;
        r = std::max<index_t>(r, bounds[s - 1] + 1);
        r = std::min<index_t>(r, a.rows - (subsets - s));
        bounds[s] = r;
    }
    return bounds;
}

template <class MT, class VT>
std::vector<std::shared_ptr<const Operator<VT>>> make_row_block_operators(
    const Coo<double>& a, int subsets, Format f, std::shared_ptr<const Executor> exec,
    const FormatOptions& opt)
{
    HEPTANE_ENSURE(a.exec()->is_cpu(), InputError, "make_row_block_operators: host COO only");
    HEPTANE_ENSURE(is_canonical(a), InputError,
                   "make_row_block_operators: the COO must be canonical (sorted by row)");
    const std::vector<index_t> bounds = row_block_bounds(a, subsets);
    std::vector<std::shared_ptr<const Operator<VT>>> ops;
    offset_t k = 0;
    for (int s = 0; s < subsets; ++s) {
        const index_t r0 = bounds[s], r1 = bounds[s + 1];
        offset_t k1 = k;
        while (k1 < a.nnz() && a.row[k1] < r1) ++k1;
        std::vector<index_t> row, col;
        std::vector<double> val;
        row.reserve(std::size_t(k1 - k));
        col.reserve(std::size_t(k1 - k));
        val.reserve(std::size_t(k1 - k));
        for (offset_t e = k; e < k1; ++e) {
            row.push_back(a.row[e] - r0);
            col.push_back(a.col[e]);
            val.push_back(a.val[e]);
        }
        Coo<double> block{r1 - r0, a.cols, Array<index_t>(std::move(row)),
                          Array<index_t>(std::move(col)), Array<double>(std::move(val))};
        ops.push_back(make_matrix_operator<MT, VT>(block, f, exec, opt));
        k = k1;
    }
    return ops;
}

#define HEPTANE_INSTANTIATE(MT, VT)                                                             \
    template std::vector<std::shared_ptr<const Operator<VT>>> make_row_block_operators<MT, VT>( \
        const Coo<double>&, int, Format, std::shared_ptr<const Executor>, const FormatOptions&);
HEPTANE_PRECISION_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE

TransposeMode parse_transpose_strategy(const std::string& name)
{
    if (name == "native" || name == "scatter") return TransposeMode::scatter;
    if (name == "stored") return TransposeMode::stored;
    HEPTANE_THROW(InputError,
                  "unknown transpose strategy '" << name << "'; valid: native, stored, scatter");
}

const char* describe_transpose(Format f, TransposeMode t)
{
    if (f == Format::bdia || (f == Format::dia && t == TransposeMode::scatter)) return "gather";
    return t == TransposeMode::stored ? "stored CSR" : "atomic scatter";
}

}  // namespace heptane
