// heptane lsqr: least squares min ‖A x − b‖² + damp²‖x − x0‖² with LSQR on the CPU or a GPU;
// SciPy's parameters, stopping tests and results (solver/lsqr/lsqr.hpp).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/args.hpp"
#include "apps/commands.hpp"
#include "apps/common.hpp"
#include "apps/projection_cli.hpp"
#include "core/error.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/matrix_file.hpp"
#include "solver/lsqr/lsqr.hpp"
#include "solver/mlem/mlem.hpp"

namespace heptane::cli {

namespace {
const char* lsqr_usage =
    "usage: heptane lsqr A.mtx b.mtx [options]   (Matrix Market or PETSc binary; A.hoc: a\n"
    "                                             chunk file, out of core)\n\n"
    "Least squares with LSQR (Paige & Saunders): minimise ||A x - b||^2 + damp^2 ||x - x0||^2\n"
    "for any m x n A. Same algorithm, parameters, stopping tests and results as\n"
    "scipy.sparse.linalg.lsqr (its optional `var` is not computed).\n"
    "  --damp D          damping (default 0)\n"
    "  --atol A          stop when ||A^T r|| <= A ||A|| ||r|| (default 1e-6, SciPy's)\n"
    "  --btol B          or when ||r|| <= B ||b|| + A ||A|| ||x|| (default 1e-6)\n"
    "  --conlim C        or when the estimate of cond(A) exceeds C (default 1e8; 0 = none)\n"
    "  --iter-lim N      iteration limit (default 2 x columns, SciPy's)\n"
    "  --x0 FILE         initial guess (a vector file, n entries)\n"
    "  --format F        csr (default) or one of:\n%s"
    "  --transpose T     A^T x: native (default: the format's own kernel; for CSR an atomic\n"
    "                    scatter, for BDIA-GH and DIA a gather) | scatter (the same) |\n"
    "                    stored (a CSR copy of A^T built once: no atomics, 2x the memory)\n"
    "  --precision P     double (default) | single | mixed (fp32 matrix, fp64 vectors)\n"
    "  --device D        auto | cpu | gpu | gpu:N (default auto: the GPU when there is one\n"
    "                    and the matrix has enough stored entries for it to win, by heptane\n"
    "                    solve's measured model (scripts/device-crossover.sh); the choice is\n"
    "                    printed)\n"
    "  -o FILE           write x (Matrix Market vector; PETSc binary for FILE.petsc)\n"
    "  --json            one JSON object on stdout: istop, istop_meaning, itn, r1norm, r2norm,\n"
    "                    anorm, acond, arnorm, xnorm, bnorm, seconds (the iterations),\n"
    "                    setup_seconds, per_iteration_ms, format, transpose, precision, device,\n"
    "                    rows, cols, nnz\n"
    "  --quiet           no progress on stderr\n"
    "%s"
    "istop: 0 x = 0 is exact; 1 Ax - b small enough (atol, btol); 2 least-squares solution good\n"
    "enough (atol); 3 cond(A) > conlim; 4, 5, 6 as 1, 2, 3 at machine precision; 7 iteration\n"
    "limit.\n"
    "Under mpirun (mpirun -np P heptane lsqr ...; a build with MPI) each rank streams its own\n"
    "rows out of core (of A.hoc: a group of its chunks of about equal bytes, reading only those\n"
    "chunks; of a Matrix Market / PETSc file: a block of rows of about equal entries); A x\n"
    "needs no exchange, A^T u and the norms of b and u are summed over the ranks (device to\n"
    "device with NCCL where each rank has a GPU of its own and the build has NCCL, else\n"
    "MPI_Allreduce through host memory), so x is the same on every rank and rank 0 prints and\n"
    "writes it; the JSON's \"ranks\" says how many.\n"
    "Exit status: 0 for istop 0, 1, 2, 4, 5; 1 for istop 3, 6, 7 (the reason is printed) or a\n"
    "failure; 2 usage error.\n";

struct Result {
    LsqrStatus status;
    std::vector<double> x;
    std::string op;
    double operator_ms = 0;
};

template <class MT, class VT>
Result run(const Coo<double>& a, const std::string& hoc, const OocFileOptions& fopt,
           const std::vector<double>& b_all, const std::vector<double>* x0, Format format,
           const FormatOptions& fo, const LsqrOptions& lo,
           const std::shared_ptr<const Executor>& exec, const OutOfCoreOptions* ooc,
           const ProcessGroup& g)
{
    Result r;
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<const Operator<VT>> op;
    std::vector<double> b_rank;  // under mpirun: this rank's rows of b
    if (g.size > 1) {
        index_t row0 = 0;
        op = rank_rows<MT, VT>(a, hoc, fopt, exec, *ooc, g, row0);
        b_rank.assign(b_all.begin() + row0, b_all.begin() + row0 + op->rows());
    } else if (!hoc.empty())  // a chunk file (a holds only its shape)
        op = std::make_shared<const OutOfCoreOperator<MT, VT>>(
            std::make_shared<const OocMatrix<MT>>(open_ooc_file<MT>(hoc, fopt)), exec, *ooc);
    else if (ooc)
        op = make_out_of_core_operator<MT, VT>(a, exec, *ooc);
    else
        op = make_matrix_operator<MT, VT>(a, format, exec, fo);
    r.operator_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.op = op->describe();
    const std::vector<double>& b = g.size > 1 ? b_rank : b_all;
    const std::vector<VT> bv(b.begin(), b.end());
    Array<VT> bd = Array<VT>(bv).to(exec);
    std::vector<VT> xv(std::size_t(a.cols), VT(0));
    if (x0) xv.assign(x0->begin(), x0->end());
    Array<VT> xd = Array<VT>(xv).to(exec);
    Lsqr<VT> solver(lo);
    solver.options().nonzero_initial_guess = x0 != nullptr;
    solver.set_operator(op);
    r.status = solver.solve(bd, xd);
    const std::vector<VT> xh = xd.to_vector();
    r.x.assign(xh.begin(), xh.end());
    return r;
}
}  // namespace

int cmd_lsqr(int argc, char** argv)
{
    Args args(argc, argv, {"--json", "--quiet"});
    if (args.help()) {
        std::printf(lsqr_usage, format_help(20).c_str(),
                    (std::string(out_of_core_help) + chunk_file_help).c_str());
        return 0;
    }
    const bool json = args.flag("--json");
    bool quiet = args.flag("--quiet") || json;
    LsqrOptions lo;
    lo.damp = args.get_double("--damp", lo.damp);
    lo.atol = args.get_double("--atol", lo.atol);
    lo.btol = args.get_double("--btol", lo.btol);
    lo.conlim = args.get_double("--conlim", lo.conlim);
    const bool has_iter_lim = args.get("--iter-lim").has_value();
    const long long iter_lim = args.get_int("--iter-lim", -1);
    auto x0file = args.get("--x0");
    auto xfile = args.get("-o");
    ProjectionCli pc(args);
    args.finish(2, 2);
    if (lo.damp < 0 || lo.atol < 0 || lo.btol < 0 || lo.conlim < 0)
        throw UsageError("--damp, --atol, --btol and --conlim must be >= 0");
    if (iter_lim > 2147483647LL) throw UsageError("--iter-lim is too large");
    if (has_iter_lim && iter_lim < 0) throw UsageError("--iter-lim must be >= 0");
    lo.iter_lim = static_cast<int>(iter_lim < 0 ? -1 : iter_lim);
    pc.resolve();
    // under mpirun: each rank streams its own rows out of core, A^T u summed over the ranks
    ProcessGroup group = projection_ranks(pc, quiet, "lsqr");
    const std::string& afile = args.positionals()[0];
    const std::string& bfile = args.positionals()[1];
    const auto t_read = std::chrono::steady_clock::now();
    const ProjectionInput sys = read_projection_input(afile);
    const Coo<double>& a = sys.a;
    const offset_t a_nnz = sys.nnz;
    const bool hoc = sys.chunk_file;
    const std::vector<double> b = read_vector_of(bfile, std::size_t(a.rows), "b", "rows");
    std::vector<double> x0;
    if (x0file) x0 = read_vector_of(*x0file, std::size_t(a.cols), "x0", "columns");
    const double read_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
    if (!quiet)
        std::fprintf(stderr, "read %s (%d x %d, %lld entries) and %s in %.3f s\n", afile.c_str(),
                     a.rows, a.cols, static_cast<long long>(a_nnz), bfile.c_str(), read_s);

    // out of core: LSQR's u, v, w, x, b and scratch as 6 vectors
    pc.place(sys, 6, quiet);
    const std::string hoc_path = hoc ? afile : std::string();
    const OocFileOptions fopt = hoc ? pc.file_options() : OocFileOptions{};
    const std::vector<double>* x0p = x0file ? &x0 : nullptr;
    const OutOfCoreOptions* po = pc.out_of_core ? &*pc.out_of_core : nullptr;
    Result r =
        pc.precision == Precision::double_
            ? run<double, double>(a, hoc_path, fopt, b, x0p, pc.format, pc.fo, lo, pc.exec, po,
                                  group)
        : pc.precision == Precision::single
            ? run<float, float>(a, hoc_path, fopt, b, x0p, pc.format, pc.fo, lo, pc.exec, po, group)
            : run<float, double>(a, hoc_path, fopt, b, x0p, pc.format, pc.fo, lo, pc.exec, po,
                                 group);
    const LsqrStatus& st = r.status;
    const bool ok =
        st.istop == 0 || st.istop == 1 || st.istop == 2 || st.istop == 4 || st.istop == 5;
    if (group.rank != 0) return ok ? 0 : 1;  // x and the status are the same on every rank
    if (xfile) write_vector_file(*xfile, r.x, "x from heptane lsqr: " + st.summary());
    const double setup_s = (r.operator_ms + st.timings.setup_ms) / 1e3;
    if (json) {
        std::printf(
            "{\"istop\": %d, \"istop_meaning\": %s, \"itn\": %d, \"r1norm\": %.17g, "
            "\"r2norm\": %.17g, \"anorm\": %.17g, \"acond\": %.17g, \"arnorm\": %.17g, "
            "\"xnorm\": %.17g, \"bnorm\": %.17g, \"seconds\": %.6f, \"setup_seconds\": %.6f, "
            "\"per_iteration_ms\": %.6f, \"format\": \"%s\", \"transpose\": \"%s\", "
            "\"operator\": %s, \"precision\": \"%s\", \"device\": \"%s\", \"rows\": %d, "
            "\"cols\": %d, \"nnz\": %lld, \"ranks\": %d}\n",
            st.istop, json_string(st.meaning()).c_str(), st.itn, st.r1norm, st.r2norm, st.anorm,
            st.acond, st.arnorm, st.xnorm, st.bnorm, st.timings.solve_ms / 1e3, setup_s,
            st.timings.per_iteration_ms, to_string(pc.format),
            describe_transpose(pc.format, pc.fo.transpose), json_string(r.op).c_str(),
            pc.prec.c_str(), pc.dev.c_str(), a.rows, a.cols, static_cast<long long>(a_nnz),
            group.size);
    } else {
        std::printf("system    %s: %d x %d, %lld entries; b %s\n", afile.c_str(), a.rows, a.cols,
                    static_cast<long long>(a_nnz), bfile.c_str());
        if (group.size > 1)
            std::printf("ranks     %d (mpirun), each streaming its own rows out of core\n",
                        group.size);
        std::printf("operator  %s (A^T: %s)\n", r.op.c_str(),
                    describe_transpose(pc.format, pc.fo.transpose));
        std::printf("result    istop %d: %s\n", st.istop, st.meaning());
        std::printf("          %d iterations; r1norm %.6e, r2norm %.6e, arnorm %.6e\n", st.itn,
                    st.r1norm, st.r2norm, st.arnorm);
        std::printf("          anorm %.6e, acond %.6e, xnorm %.6e\n", st.anorm, st.acond, st.xnorm);
        std::printf("time      setup %.3f s, iterations %.3f s, %.4f ms per iteration\n", setup_s,
                    st.timings.solve_ms / 1e3, st.timings.per_iteration_ms);
    }
    return ok ? 0 : 1;
}

}  // namespace heptane::cli
