#include "solver/warm_up.hpp"

#include <chrono>
#include <string>

#include "core/error.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bdia/bdia_kernels.hpp"
#include "formats/matrix_operator.hpp"
#include "generators/hepta.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solver.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane {

namespace {

using BdiaOp = FormatOperator<Bdia<double>, double, double>;

void check(const Status& st, const std::string& what, index_t nc)
{
    HEPTANE_ENSURE(
        st.converged(), Error,
        "warm-up: " << what << " at Nc = " << nc << " did not converge: " << st.summary());
}

// the plugin's options: a monitor (its KSP monitors), CUDA graphs, fused products, the true
// residual at the end
SolverOptions warm_up_options(bool nonzero_guess)
{
    SolverOptions o;
    o.rtol = 1e-6;
    o.max_it = 500;
    o.nonzero_initial_guess = nonzero_guess;
    o.monitor = [](const IterationInfo&) {};
    return o;
}

}  // namespace

WarmUpReport warm_up_krylov(const std::shared_ptr<const Executor>& exec,
                            const std::vector<SolverType>& solvers,
                            const std::vector<index_t>& block_sizes)
{
    const auto t0 = std::chrono::steady_clock::now();
    WarmUpReport rep;
    for (const index_t nc : block_sizes) {
        HEPTANE_ENSURE(nc >= 1 && nc <= 8, InputError,
                       "warm-up: block size " << nc << " is not in 1..8");
        HeptaSpec spec;
        spec.J = 16;
        spec.H = 16;
        spec.I = 8;
        spec.Nc = nc;
        spec.model = HeptaModel::reservoir;
        const Csr<double> host = csr_from_coo(generate_hepta_coo<double>(spec));
        const Csr<double> dev = host.to(exec);
        const index_t n = host.rows;
        // the preconditioner's symbolic part from a 32-bit pattern in exec's memory (PETSc's
        // row pointers, as the plugin's operator keeps them), its numeric part from the values
        // there
        std::vector<index_t> ptr32(host.row_ptr.size());
        for (std::size_t i = 0; i < ptr32.size(); ++i) ptr32[i] = index_t(host.row_ptr[i]);
        const Array<index_t> ptr = Array<index_t>(std::move(ptr32)).to(exec);
        CsrPatternView p;
        p.rows = n;
        p.row_ptr32 = ptr.data();
        p.col_idx = dev.col_idx.data();
        p.on_executor = true;
        std::shared_ptr<Preconditioner<double>> pc =
            make_preconditioner<double>(nc == 1 ? PcType::jacobi : PcType::block_jacobi, p,
                                        dev.values.data(), nc, exec, PcOptions{});
        auto a = std::make_shared<BdiaOp>(
            bdia_from_csr(host, nc, hepta_block_offsets(spec), exec, &dev), n, exec, "warm-up");
        // Â = A M⁻¹ with M's blocks the main ones (its main diagonal exactly 1 at Nc = 1)
        const Bdia<double>& am = a->matrix();
        Bdia<double> f;
        f.rows = am.rows;
        f.cols = am.cols;
        f.block_size = am.block_size;
        f.block_offsets = am.block_offsets;
        f.data = Array<double>(exec, am.data.size());
        dispatch_executor(*exec, [&](const auto& e) {
            kernels::bdia_right_scale(e, am, pc->block_size(), pc->block_inverse(), f, nc == 1);
        });
        auto folded = std::make_shared<BdiaOp>(std::move(f), n, exec, "warm-up, folded");

        Array<double> b(exec, std::size_t(n)), x(exec, std::size_t(n)), y(exec, std::size_t(n));
        VectorOps<double> ops(exec, 0);
        ops.fill(n, 1.0, b.data());
        for (const SolverType type : solvers) {
            if (type == SolverType::bicgstab) {
                // folded, from zero: A M⁻¹ y = b, x = M⁻¹ y
                auto s = make_solver<double>(type, warm_up_options(false));
                s->set_operator(folded);
                s->prepare();
                check(s->solve(b, y), "BiCGStab on A M^-1", nc);
                pc->apply(y.data(), x.data());
                // unfolded, from that x
                auto u = make_solver<double>(type, warm_up_options(true));
                u->set_operator(a);
                u->set_preconditioner(pc);
                check(u->solve(b, x), "BiCGStab with the preconditioner", nc);
                rep.solves += 2;
                continue;
            }
            auto s = make_solver<double>(type, warm_up_options(false));
            s->set_operator(a);
            s->set_preconditioner(pc);
            s->prepare();
            check(s->solve(b, x), to_string(type), nc);
            ++rep.solves;
        }
    }
    exec->synchronize();
    rep.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return rep;
}

}  // namespace heptane
