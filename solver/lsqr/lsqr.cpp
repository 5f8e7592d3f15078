// LSQR written once against Operator::apply / apply_transpose and solver/vector, following
// SciPy's scipy/sparse/linalg/_isolve/lsqr.py line by line (the names below are SciPy's).
//
// Vectors: u (m), v, w, x (n) on the executor. The scalar recurrences (rotations, norm
// estimates, stopping tests) are a few dozen flops and run on the host in double.
//
// Normalisation without extra passes: SciPy scales u by 1/β and v by 1/α after computing
// them. Here the vectors are kept unscaled, û = β u and v̂ = α v, and the scale is folded into
// the next product's alpha/beta and into the w update:
//
//     û ← A v̂ / α − (α / β_old) û          = β_new u_new    apply(1/α, v̂, −α/β_old, û)
//     β = ‖û‖
//     v̂ ← Aᵀ û / β − (β / α_old) v̂          = α_new v_new    apply_transpose(1/β, û, −β/α_old, v̂)
//     α = ‖v̂‖
//     x += t1 w;  w = v̂/α + t2 w;  ‖w‖²                        lsqr_update_xw
//
// (exactly SciPy's u = A v − α u, v = Aᵀu − β v, x = x + t1 w, w = v + t2 w; only the
// rounding differs). ‖w‖² of the new w is the ‖dk‖²·ρ² of the next iteration's ddnorm, so
// SciPy's separate norm(dk) costs no pass.
//
// Traffic per iteration (passes of one vector: m·sizeof(VT) or n·sizeof(VT) bytes):
//     A v̂ − c û        matrix + v̂ read (n) + û read and written (2m)
//     ‖û‖              m
//     Aᵀ û − c v̂       matrix + û read (m) + v̂ read and written (2n)
//     ‖v̂‖              n
//     x, w update      x, w read and written, v̂ read (5n)
//   = 2 x matrix bytes + (4m + 9n)·sizeof(VT)   (a scatter Aᵀ adds its atomics on top).
// Host reads: two per iteration, each waiting for the executor — β after A v̂ (it scales the
// Aᵀ product), then α (with ‖w‖² read alongside β). They are the acceptable cost of host
// scalars: two small pinned copies per iteration, negligible next to the products except for
// tiny systems on a GPU.
#include "solver/lsqr/lsqr.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double sign(double a)
{
    return a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0);
}  // np.sign

/// SciPy's _sym_ortho: a stable Givens rotation [c s; -s c] [a; b] = [r; 0].
void sym_ortho(double a, double b, double& c, double& s, double& r)
{
    if (b == 0) {
        c = sign(a);
        s = 0;
        r = std::abs(a);
    } else if (a == 0) {
        c = 0;
        s = sign(b);
        r = std::abs(b);
    } else if (std::abs(b) > std::abs(a)) {
        const double tau = a / b;
        s = sign(b) / std::sqrt(1 + tau * tau);
        c = s * tau;
        r = b / s;
    } else {
        const double tau = b / a;
        c = sign(a) / std::sqrt(1 + tau * tau);
        s = c * tau;
        r = a / c;
    }
}

// Scratch slots of the KrylovState (vector_kernels.hpp).
constexpr int slot_norm = 0;  // β or α of the step just queued
constexpr int slot_ww = 1;    // ‖w‖² after the last x, w update

}  // namespace

const char* lsqr_istop_meaning(int istop) noexcept
{
    // SciPy's msg[] without its padding.
    switch (istop) {
        case 0:
            return "The exact solution is  x = 0";
        case 1:
            return "Ax - b is small enough, given atol, btol";
        case 2:
            return "The least-squares solution is good enough, given atol";
        case 3:
            return "The estimate of cond(Abar) has exceeded conlim";
        case 4:
            return "Ax - b is small enough for this machine";
        case 5:
            return "The least-squares solution is good enough for this machine";
        case 6:
            return "Cond(Abar) seems to be too large for this machine";
        case 7:
            return "The iteration limit has been reached";
    }
    return "unknown";
}

const char* LsqrStatus::meaning() const noexcept
{
    return lsqr_istop_meaning(istop);
}

std::string LsqrStatus::summary() const
{
    std::ostringstream o;
    o.precision(3);
    o << std::scientific << "istop " << istop << " (" << meaning() << ") after " << itn
      << " iterations: r1norm " << r1norm << ", r2norm " << r2norm << ", arnorm " << arnorm
      << ", anorm " << anorm << ", acond " << acond << ", xnorm " << xnorm;
    return o.str();
}

template <class VT>
struct Lsqr<VT>::Workspace {
    Workspace(std::shared_ptr<const Executor> e, index_t m_, index_t n_, const Reducer* r)
        : exec(e), m(m_), n(n_), reducer(r), ops(e, 0), u(e, m_), v(e, n_), w(e, n_)
    {
        if (r) row_ops = std::make_unique<VectorOps<VT>>(e, 0, r);
    }
    bool fits(const std::shared_ptr<const Executor>& e, index_t m_, index_t n_,
              const Reducer* r) const
    {
        return e.get() == exec.get() && m_ == m && n_ == n && r == reducer;
    }
    std::shared_ptr<const Executor> exec;
    index_t m, n;
    const Reducer* reducer;
    VectorOps<VT> ops;  ///< the column vectors (length n), and the row vectors on one process
    /// Rows split over processes (the operator's reducer): the row vectors' norms, summed
    std::unique_ptr<VectorOps<VT>> row_ops;
    Array<VT> u, v, w;
};

template <class VT>
Lsqr<VT>::Lsqr(LsqrOptions options) : opts_(options)
{
}
template <class VT>
Lsqr<VT>::~Lsqr() = default;
template <class VT>
Lsqr<VT>::Lsqr(Lsqr&&) noexcept = default;
template <class VT>
Lsqr<VT>& Lsqr<VT>::operator=(Lsqr&&) noexcept = default;

template <class VT>
void Lsqr<VT>::set_operator(std::shared_ptr<const Operator<VT>> a)
{
    a_ = std::move(a);
}
template <class VT>
void Lsqr<VT>::set_operator(const Operator<VT>& a)
{
    a_ = std::shared_ptr<const Operator<VT>>(&a, [](const Operator<VT>*) {});
}

template <class VT>
LsqrStatus Lsqr<VT>::solve(const Array<VT>& b_arr, Array<VT>& x_arr)
{
    const auto t_setup = std::chrono::steady_clock::now();
    HEPTANE_ENSURE(a_, InputError, "Lsqr::solve: no operator (call set_operator first)");
    const Operator<VT>& A = *a_;
    const index_t m = A.rows(), n = A.cols();
    HEPTANE_ENSURE(b_arr.size() == std::size_t(m), DimensionMismatch,
                   "Lsqr: b has " << b_arr.size() << " entries, the operator " << m << " rows");
    HEPTANE_ENSURE(x_arr.size() == std::size_t(n), DimensionMismatch,
                   "Lsqr: x has " << x_arr.size() << " entries, the operator " << n << " columns");
    HEPTANE_ENSURE(m == 0 || n == 0 || b_arr.data() != x_arr.data(), InputError,
                   "Lsqr: b and x are one array");
    const auto& ex = *A.executor();
    HEPTANE_ENSURE(
        same_memory(ex, *b_arr.exec()) && same_memory(ex, *x_arr.exec()), DimensionMismatch,
        "Lsqr: b (on " << b_arr.exec()->name() << ") and x (on " << x_arr.exec()->name()
                       << ") must be in the memory of the operator's executor " << ex.name());
    const LsqrOptions& o = opts_;
    HEPTANE_ENSURE(o.damp >= 0 && o.atol >= 0 && o.btol >= 0 && o.conlim >= 0, InputError,
                   "Lsqr options: damp (" << o.damp << "), atol (" << o.atol << "), btol ("
                                          << o.btol << ") and conlim (" << o.conlim
                                          << ") must be >= 0");
    const int iter_lim = o.iter_lim < 0 ? 2 * n : o.iter_lim;

    if (!ws_ || !ws_->fits(A.executor(), m, n, A.reducer()))
        ws_ = std::make_unique<Workspace>(A.executor(), m, n, A.reducer());
    Workspace& ws = *ws_;
    VectorOps<VT>& ops = ws.ops;
    // Rows split over processes (A.reducer(): e.g. dist::RowBlockOperator): the row vectors
    // b and u are split, their norms summed; the column vectors v, w and x are the same on
    // every process (A^T u arrives summed), their norms need no sum
    VectorOps<VT>& rops = ws.row_ops ? *ws.row_ops : ops;
    const VT* b = b_arr.data();
    VT* x = x_arr.data();
    VT *u = ws.u.data(), *v = ws.v.data(), *w = ws.w.data();

    LsqrStatus st;
    const double eps = std::numeric_limits<double>::epsilon();  // SciPy: float64 eps
    int itn = 0, istop = 0;
    const double ctol = o.conlim > 0 ? 1 / o.conlim : 0.0;
    double anorm = 0, acond = 0;
    const double damp = o.damp, dampsq = damp * damp;
    double ddnorm = 0, res2 = 0, xnorm = 0, xxnorm = 0, z = 0, cs2 = -1, sn2 = 0;

    // First vectors of the bidiagonalisation: β u = b − A x0, α v = Aᵀ u.
    ops.copy(m, b, u);
    const double bnorm = rops.norm2(m, b);
    double beta;
    if (o.nonzero_initial_guess) {
        A.apply(VT(-1), x, VT(1), u);  // u = b − A x0
        beta = rops.norm2(m, u);
    } else {
        ops.fill(n, VT(0), x);
        beta = bnorm;
    }
    double su = 1, sv = 1;  // u = û / su, v = v̂ / sv
    double alfa = 0;
    if (beta > 0) {
        su = beta;
        A.apply_transpose(VT(1 / su), u, VT(0), v);  // v̂ = Aᵀ u
        alfa = ops.norm2(n, v);
    } else {
        ops.copy(n, x, v);  // SciPy: v = x.copy(), alfa = 0
    }
    if (alfa > 0) sv = alfa;
    ops.lsqr_update_xw(n, VT(0), VT(0), VT(1 / sv), v, w, nullptr, slot_ww);  // w = v, ‖w‖²

    double rhobar = alfa, phibar = beta, rnorm = beta;
    double r1norm = rnorm, r2norm = rnorm;
    double arnorm = alfa * beta;
    if (o.record_history) st.history.push_back(r2norm);
    st.bnorm = bnorm;
    st.timings.setup_ms = ms_since(t_setup);

    const auto t_solve = std::chrono::steady_clock::now();
    if (arnorm != 0) {
        while (itn < iter_lim) {
            ++itn;
            // β u = A v − α u
            A.apply(VT(1 / sv), v, VT(-alfa / su), u);
            rops.norm2_async(m, u, slot_norm);
            const KrylovState s1 =
                rops.read_state();  // host read 1: β, and ‖w‖² of the last update
            beta = s1.scratch[slot_norm];
            const double ww = (&rops == &ops ? s1 : ops.read_state()).scratch[slot_ww];
            if (beta > 0) {
                su = beta;
                anorm = std::sqrt(anorm * anorm + alfa * alfa + beta * beta + dampsq);
                // α v = Aᵀ u − β v
                A.apply_transpose(VT(1 / su), u, VT(-beta / sv), v);
                ops.norm2_async(n, v, slot_norm);
                alfa = ops.read_state().scratch[slot_norm];  // host read 2: α
                sv = alfa > 0 ? alfa : 1.0;
            } else {
                su = 1;  // SciPy leaves u = A v − α u unscaled
            }

            // Eliminate the damping parameter with a plane rotation.
            double rhobar1, psi;
            if (damp > 0) {
                rhobar1 = std::sqrt(rhobar * rhobar + dampsq);
                const double cs1 = rhobar / rhobar1;
                const double sn1 = damp / rhobar1;
                psi = sn1 * phibar;
                phibar = cs1 * phibar;
            } else {
                rhobar1 = rhobar;
                psi = 0;
            }

            // Eliminate the subdiagonal element β: lower- to upper-bidiagonal.
            double cs, sn, rho;
            sym_ortho(rhobar1, beta, cs, sn, rho);
            const double theta = sn * alfa;
            rhobar = -cs * alfa;
            const double phi = cs * phibar;
            phibar = sn * phibar;
            const double tau = sn * phi;

            // Update x and w; dk = w / ρ (w before the update), ddnorm += ‖dk‖².
            const double t1 = phi / rho;
            const double t2 = -theta / rho;
            ddnorm += ww / (rho * rho);
            ops.lsqr_update_xw(n, VT(t1), VT(t2), VT(1 / sv), v, w, x, slot_ww);

            // Rotation on the right to eliminate θ; estimate ‖x‖.
            const double delta = sn2 * rho;
            const double gambar = -cs2 * rho;
            const double rhs = phi - delta * z;
            const double zbar = rhs / gambar;
            xnorm = std::sqrt(xxnorm + zbar * zbar);
            const double gamma = std::sqrt(gambar * gambar + theta * theta);
            cs2 = gambar / gamma;
            sn2 = theta / gamma;
            z = rhs / gamma;
            xxnorm = xxnorm + z * z;

            // cond(Ā), ‖r̄‖ and ‖Āᵀr̄‖.
            acond = anorm * std::sqrt(ddnorm);
            const double res1 = phibar * phibar;
            res2 = res2 + psi * psi;
            rnorm = std::sqrt(res1 + res2);
            arnorm = alfa * std::abs(tau);

            // r1norm = ‖b − A x‖ from r2norm² − damp²‖x − x0‖² (with its cancellation).
            if (damp > 0) {
                const double r1sq = rnorm * rnorm - dampsq * xxnorm;
                r1norm = std::sqrt(std::abs(r1sq));
                if (r1sq < 0) r1norm = -r1norm;
            } else {
                r1norm = rnorm;
            }
            r2norm = rnorm;
            if (o.record_history) st.history.push_back(r2norm);

            // The stopping tests, in SciPy's order (a later one overrides an earlier one).
            const double test1 = rnorm / bnorm;
            const double test2 = arnorm / (anorm * rnorm + eps);
            const double test3 = 1 / (acond + eps);
            const double t1b = test1 / (1 + anorm * xnorm / bnorm);
            const double rtol = o.btol + o.atol * anorm * xnorm / bnorm;
            if (itn >= iter_lim) istop = 7;
            if (1 + test3 <= 1) istop = 6;
            if (1 + test2 <= 1) istop = 5;
            if (1 + t1b <= 1) istop = 4;
            if (test3 <= ctol) istop = 3;
            if (test2 <= o.atol) istop = 2;
            if (test1 <= rtol) istop = 1;
            if (istop != 0) break;
        }
    }
    ex.synchronize();
    st.timings.solve_ms = ms_since(t_solve);
    st.timings.per_iteration_ms = itn > 0 ? st.timings.solve_ms / itn : 0.0;

    st.istop = istop;
    st.itn = itn;
    st.r1norm = r1norm;
    st.r2norm = r2norm;
    st.anorm = anorm;
    st.acond = acond;
    st.arnorm = arnorm;
    st.xnorm = xnorm;
    return st;
}

template class Lsqr<double>;
template class Lsqr<float>;

}  // namespace heptane
