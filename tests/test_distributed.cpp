// The distributed operator and solvers on real MPI ranks (run by ctest under mpirun with 1, 2
// and 3 ranks; 3 gives an uneven split). Every rank generates only its rows; the answers are
// compared with the whole matrix on one process, which every rank can build for these sizes.
// With HEPTANE_TEST_DEVICE=cuda each rank uses the GPU of its node-local rank.
#include <mpi.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "distributed/coarse_space.hpp"
#include "distributed/dist_amg.hpp"
#include "distributed/dist_bdia.hpp"
#include "distributed/dist_cpr.hpp"
#include "distributed/dist_csr.hpp"
#include "distributed/gathered_rows.hpp"
#ifdef HEPTANE_HAVE_CUDA
#include "distributed/peer.hpp"
#endif
#include "distributed/symmetry.hpp"
#include "formats/bdia/bdia_kernels.hpp"
#include "formats/csr/csr.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "formats/spmv.hpp"
#include "generators/hepta.hpp"
#include "generators/pet.hpp"
#include "solver/bicgstab/bicgstab.hpp"
#include "solver/cg/cg.hpp"
#include "solver/gmres/gmres.hpp"
#include "solver/lsqr/lsqr.hpp"
#include "solver/mlem/mlem.hpp"
#include "solver/precond/amg/cpr.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/solve.hpp"
#include "tests/test_common.hpp"

using namespace heptane;
using namespace heptane::dist;

namespace {

struct MpiFixture {
    MpiFixture()
    {
        MPI_Init(nullptr, nullptr);
        // on GPUs every rank needs its own (the peer and NCCL models this program tests run
        // only so): fewer GPUs than ranks on a node is a skip (77), not a pass without them --
        // unless HEPTANE_TEST_SHARE_GPU=1 (ranks share what there is; for the cases that run
        // through the host, chosen with --run_test)
        const char* share = std::getenv("HEPTANE_TEST_SHARE_GPU");
        if (test::testing_on_gpu() && built_with_cuda() && !(share && std::string(share) == "1")) {
            MPI_Comm node;
            int node_size = 1, rank = 0;
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
            MPI_Comm_size(node, &node_size);
            MPI_Comm_free(&node);
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            const int gpus = CudaExecutor::device_count();
            if (node_size > 1 && gpus < node_size) {
                if (rank == 0)
                    std::printf(
                        "SKIPPED: %d ranks on this node but %d GPU(s): the multi-GPU models "
                        "(one GPU per rank: peer, NCCL) cannot run here\n",
                        node_size, gpus);
                MPI_Finalize();
                std::exit(77);
            }
        }
    }
    ~MpiFixture() { MPI_Finalize(); }
};

std::shared_ptr<const Communicator> world()
{
    static auto c = std::make_shared<const Communicator>(MPI_COMM_WORLD);
    return c;
}

std::shared_ptr<const Executor> rank_executor()
{
    static std::shared_ptr<const Executor> e = [] {
        if (!test::testing_on_gpu()) return std::shared_ptr<const Executor>(cpu_executor());
        return std::shared_ptr<const Executor>(CudaExecutor::create(world()->local_device()));
    }();
    return e;
}

template <class T>
std::vector<T> to_host(const Array<T>& a)
{
    std::vector<T> h(a.size());
    if (!h.empty())
        copy_bytes(*a.exec(), a.data(), *cpu_executor(), h.data(), h.size() * sizeof(T));
    return h;
}

template <class T>
Array<T> to_exec(const std::vector<T>& v, const std::shared_ptr<const Executor>& e)
{
    return Array<T>(std::vector<T>(v)).to(e);
}

HeptaSpec spec_of(index_t J, index_t H, index_t I, index_t nc, bool banded, HeptaModel model)
{
    HeptaSpec s;
    s.J = J;
    s.H = H;
    s.I = I;
    s.Nc = nc;
    s.banded = banded;
    s.model = model;
    s.seed = 7;
    return s;
}

/// The halo models to test on this executor: host on the CPU; on GPUs the four staged ones,
/// and nccl when the build has it and every rank has a GPU of its own.
std::vector<HaloModel> halo_models()
{
    if (!test::testing_on_gpu()) return {HaloModel::host};
    std::vector<HaloModel> m{HaloModel::pinned_async, HaloModel::pinned_sync,
                             HaloModel::pageable_async, HaloModel::pageable_sync};
    if (built_with_nccl() && world()->node_size() <= CudaExecutor::device_count())
        m.push_back(HaloModel::nccl);
#ifdef HEPTANE_HAVE_CUDA
    if (peer_capable(*rank_executor(), *world())) m.push_back(HaloModel::peer);
#endif
    return m;
}

/// The reduction models to test: mpi; on GPUs nccl (every rank its own GPU) and peer.
std::vector<ReduceModel> reduce_models()
{
    std::vector<ReduceModel> m{ReduceModel::mpi};
    if (!test::testing_on_gpu()) return m;
    if (built_with_nccl() && world()->node_size() <= CudaExecutor::device_count())
        m.push_back(ReduceModel::nccl);
#ifdef HEPTANE_HAVE_CUDA
    if (peer_capable(*rank_executor(), *world())) m.push_back(ReduceModel::peer);
#endif
    return m;
}

/// This rank's rows of `s` split in whole z-planes: the partition, the rows, the local block
/// and its part of the system.
struct RankSystem {
    RowPartition part;
    index_t r0 = 0, r1 = 0;
    Bdia<double> loc;
    LinearSystem<double> sys;
};
RankSystem rank_system(const HeptaSpec& s, const Communicator& comm)
{
    RankSystem r;
    r.part = partition_planes(s.I, s.J * s.H * s.Nc, comm.size());
    r.r0 = r.part.begin(comm.rank());
    r.r1 = r.part.end(comm.rank());
    r.loc = generate_hepta_bdia_rows<double>(s, r.r0, r.r1);
    r.sys = make_rhs_rows(s, r.loc, r.r0);
    return r;
}

/// Every rank's plan, checked against each other: each receive has the matching send, and
/// the receives cover the halo exactly once.
void check_plans(const RowPartition& part, index_t w_lo, index_t w_hi)
{
    std::vector<HaloPlan> plans;
    for (int p = 0; p < part.size(); ++p) plans.push_back(make_halo_plan(part, p, w_lo, w_hi));
    const index_t N = part.global_rows();
    for (int p = 0; p < part.size(); ++p) {
        const HaloPlan& pl = plans[p];
        BOOST_TEST(pl.lower == std::min(w_lo, part.begin(p)));
        BOOST_TEST(pl.upper == std::min(w_hi, N - part.end(p)));
        std::vector<int> covered(std::size_t(pl.halo_rows()), 0);
        for (const auto& r : pl.recvs) {
            for (index_t i = 0; i < r.count; ++i) covered[std::size_t(r.offset + i)]++;
            // global rows of this piece, and the sender's matching piece
            const index_t g0 = r.tag == 1 ? part.begin(p) - pl.lower + r.offset
                                          : part.end(p) + (r.offset - pl.lower);
            int matches = 0;
            for (const auto& s : plans[r.peer].sends)
                if (s.peer == p && s.tag == r.tag) {
                    ++matches;
                    BOOST_TEST(s.count == r.count);
                    BOOST_TEST(part.begin(r.peer) + s.offset == g0);
                }
            BOOST_TEST(matches == 1);
        }
        for (int c : covered) BOOST_TEST(c == 1);
    }
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(halo_plans_cover_the_halo_for_any_contiguous_ranges)
{
    // z-planes; uneven rows; ranges smaller than the reach (a halo from several ranks)
    check_plans(partition_planes(5, 12, 3), 12, 12);
    check_plans(partition_rows(60, 3, 4), 12, 6);
    RowPartition tiny;
    tiny.starts = {0, 3, 6, 9, 30, 33, 60};
    check_plans(tiny, 12, 12);
    BOOST_CHECK_THROW(partition_planes(2, 10, 3), InputError);
}

BOOST_AUTO_TEST_CASE(row_blocks_are_the_rows_of_the_whole_matrix)
{
    for (bool banded : {true, false})
        for (index_t nc : {1, 3}) {
            const HeptaSpec s = spec_of(5, 4, 6, nc, banded, HeptaModel::reservoir);
            const Bdia<double> a = generate_hepta_bdia<double>(s);
            const LinearSystem<double> sys = make_rhs(s, a);
            const index_t n = a.rows, plane = 5 * 4 * nc;
            for (auto [r0, r1] : {std::pair<index_t, index_t>{0, plane},
                                  {plane, 3 * plane + nc},
                                  {2 * nc, n},
                                  {n - nc, n}}) {
                const Bdia<double> loc = generate_hepta_bdia_rows<double>(s, r0, r1);
                const Bdia<double> cut = bdia_rows(a, r0, r1);
                BOOST_TEST(to_host(loc.data) == to_host(cut.data));
                BOOST_TEST(to_host(loc.pattern) == to_host(cut.pattern));
                const LinearSystem<double> part = make_rhs_rows(s, loc, r0);
                BOOST_TEST(part.b == std::vector<double>(sys.b.begin() + r0, sys.b.begin() + r1));
                BOOST_TEST(part.x_true ==
                           std::vector<double>(sys.x_true.begin() + r0, sys.x_true.begin() + r1));
            }
        }
}

BOOST_AUTO_TEST_CASE(distributed_spmv_matches_the_whole_product)
{
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    for (bool banded : {true, false})
        for (index_t nc : {1, 2, 3}) {
            const HeptaSpec s = spec_of(6, 5, 2 * size + 1, nc, banded, HeptaModel::uniform);
            const Bdia<double> a = generate_hepta_bdia<double>(s);
            const index_t n = a.rows;
            const std::vector<double> x = test::random_vector<double>(std::size_t(n), 11);
            std::vector<double> y_ref(static_cast<std::size_t>(n), 0.0);
            kernels::spmv(*cpu_executor(), a, Op::normal, 1.0, x.data(), 0.0, y_ref.data());
            // whole planes, and an uneven split in cells (not planes)
            for (const RowPartition& part :
                 {partition_planes(s.I, s.J * s.H * nc, size), partition_rows(n, nc, size)})
                for (HaloModel model : halo_models()) {
                    const index_t r0 = part.begin(rank), r1 = part.end(rank);
                    DistOptions dopt;
                    dopt.halo = model;
                    DistributedBdia<double, double> op(
                        comm, part, generate_hepta_bdia_rows<double>(s, r0, r1), exec, dopt);
                    const Array<double> xl =
                        to_exec(std::vector<double>(x.begin() + r0, x.begin() + r1), exec);
                    Array<double> yl =
                        to_exec(std::vector<double>(std::size_t(r1 - r0), 2.0), exec);
                    // y = 0.5 A x - y, then a second exchange into the same buffers: y = A x
                    auto check = [&](double alpha, double shift, const char* what) {
                        const std::vector<double> y = to_host(yl);
                        double err = 0, scale = 0;
                        for (index_t i = r0; i < r1; ++i) {
                            err = std::max(err, std::abs(y[i - r0] - (alpha * y_ref[i] + shift)));
                            scale = std::max(scale, std::abs(y_ref[i]));
                        }
                        BOOST_TEST(err <= 1e-13 * (scale + 1),
                                   "rank " << rank << " " << describe(s) << " " << part.describe()
                                           << " " << to_string(model) << " " << what
                                           << ": max error " << err);
                    };
                    op.apply(0.5, xl.data(), -1.0, yl.data());
                    check(0.5, -2.0, "first product");
                    op.apply(1.0, xl.data(), 0.0, yl.data());
                    check(1.0, 0.0, "second product");
                }
        }
}

BOOST_AUTO_TEST_CASE(back_to_back_products_each_see_their_own_halo)
{
    // Six products with six different x queued without a host wait in between: a halo model
    // that reuses a buffer too early (the peer model alternates two staging buffers) would
    // give some product the neighbour's rows of another x.
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    const HeptaSpec s = spec_of(5, 4, 2 * size + 1, 2, false, HeptaModel::uniform);
    const Bdia<double> a = generate_hepta_bdia<double>(s);
    const index_t n = a.rows;
    const RowPartition part = partition_planes(s.I, s.J * s.H * s.Nc, size);
    const index_t r0 = part.begin(rank), r1 = part.end(rank);
    constexpr int count = 6;
    std::vector<std::vector<double>> xs, refs;
    for (int k = 0; k < count; ++k) {
        xs.push_back(test::random_vector<double>(std::size_t(n), 100 + unsigned(k)));
        refs.emplace_back(std::size_t(n), 0.0);
        kernels::spmv(*cpu_executor(), a, Op::normal, 1.0, xs.back().data(), 0.0,
                      refs.back().data());
    }
    for (HaloModel model : halo_models()) {
        DistOptions dopt;
        dopt.halo = model;
        DistributedBdia<double, double> op(comm, part, generate_hepta_bdia_rows<double>(s, r0, r1),
                                           exec, dopt);
        std::vector<Array<double>> xl, yl;
        for (int k = 0; k < count; ++k) {
            xl.push_back(to_exec(std::vector<double>(xs[std::size_t(k)].begin() + r0,
                                                     xs[std::size_t(k)].begin() + r1),
                                 exec));
            yl.push_back(to_exec(std::vector<double>(std::size_t(r1 - r0), 0.0), exec));
        }
        exec->synchronize();
        for (int k = 0; k < count; ++k)
            op.apply(1.0, xl[std::size_t(k)].data(), 0.0, yl[std::size_t(k)].data());
        for (int k = 0; k < count; ++k) {
            const std::vector<double> y = to_host(yl[std::size_t(k)]);
            const std::vector<double>& ref = refs[std::size_t(k)];
            double err = 0, scale = 0;
            for (index_t i = r0; i < r1; ++i) {
                err = std::max(err, std::abs(y[std::size_t(i - r0)] - ref[std::size_t(i)]));
                scale = std::max(scale, std::abs(ref[std::size_t(i)]));
            }
            BOOST_TEST(err <= 1e-13 * (scale + 1), "rank " << rank << " " << to_string(model)
                                                           << " product " << k << ": max error "
                                                           << err);
        }
    }
}

BOOST_AUTO_TEST_CASE(mixed_precision_spmv_matches_the_whole_product)
{
    // fp32 values (the float rows of the generator), fp64 vectors and accumulation
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    const HeptaSpec s = spec_of(5, 6, 2 * size + 1, 3, false, HeptaModel::reservoir);
    const Bdia<float> a = generate_hepta_bdia<float>(s);
    const index_t n = a.rows;
    const std::vector<double> x = test::random_vector<double>(std::size_t(n), 5);
    std::vector<double> y_ref(static_cast<std::size_t>(n), 0.0);
    kernels::spmv(*cpu_executor(), a, Op::normal, 1.0, x.data(), 0.0, y_ref.data());
    const RowPartition part = partition_rows(n, s.Nc, size);
    const index_t r0 = part.begin(rank), r1 = part.end(rank);
    DistributedBdia<float, double> op(comm, part, generate_hepta_bdia_rows<float>(s, r0, r1), exec);
    const Array<double> xl = to_exec(std::vector<double>(x.begin() + r0, x.begin() + r1), exec);
    Array<double> yl(exec, std::size_t(r1 - r0));
    op.apply(xl.data(), yl.data());
    const std::vector<double> y = to_host(yl);
    double err = 0, scale = 0;
    for (index_t i = r0; i < r1; ++i) {
        err = std::max(err, std::abs(y[i - r0] - y_ref[i]));
        scale = std::max(scale, std::abs(y_ref[i]));
    }
    BOOST_TEST(err <= 1e-12 * (scale + 1), "rank " << rank << ": max error " << err);
}

BOOST_AUTO_TEST_CASE(reductions_sum_over_the_ranks)
{
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    if (size == 1) return;  // one rank has no reducer
    for (ReduceModel model : reduce_models()) {
        const auto red = make_reducer(model, comm, exec);
        BOOST_TEST(red->size() == size);
        Array<double> buf(exec, 8);
        // several rounds: the sequence numbers and both slot sets of the peer reduction
        for (int round = 0; round < 5; ++round)
            for (int count : {1, 2, 8}) {
                std::vector<double> v(8, -1.0);
                for (int k = 0; k < count; ++k) v[std::size_t(k)] = 0.5 * (rank + 1) + k + round;
                copy_bytes(*cpu_executor(), v.data(), *exec, buf.data(), sizeof(double) * 8);
                red->sum(*exec, buf.data(), count);
                const std::vector<double> h = to_host(buf);
                for (int k = 0; k < 8; ++k) {
                    // exact in binary: halves and small integers
                    const double want =
                        k < count ? 0.25 * size * (size + 1) + double(size) * (k + round) : -1.0;
                    BOOST_TEST(h[std::size_t(k)] == want, to_string(model)
                                                              << " round " << round << " count "
                                                              << count << " k " << k);
                }
            }
    }
}

BOOST_AUTO_TEST_CASE(graph_replay_gives_the_same_iterations)
{
    // BiCGStab with batches replayed from a CUDA graph and with every kernel launched: the
    // same kernels in the same order, so the same history and iterations. On GPUs only.
    const auto comm = world();
    const auto exec = rank_executor();
    if (!exec->is_cuda()) return;
    const int size = comm->size();
    HeptaSpec s = spec_of(8, 7, 3 * size + 2, 2, false, HeptaModel::reservoir);
    s.difficulty = 0.5;
    const RankSystem rs = rank_system(s, *comm);
    const RowPartition& part = rs.part;
    const Bdia<double>& loc = rs.loc;
    const Array<double> b = to_exec(rs.sys.b, exec);
    std::vector<DistOptions> models{DistOptions{}};
    if (size > 1) {
        for (HaloModel h : halo_models())
            if (h == HaloModel::nccl || h == HaloModel::peer)
                models.push_back(
                    DistOptions{h, h == HaloModel::nccl ? ReduceModel::nccl : ReduceModel::peer});
        models.push_back(DistOptions{HaloModel::pinned_async, ReduceModel::mpi});
    }
    for (const DistOptions& d : models) {
        DistributedBdia<double, double> op(comm, part, loc, exec, d);
        const auto m = make_preconditioner<double>(PcType::block_jacobi, csr_from_coo(to_coo(loc)),
                                                   s.Nc, exec);
        Status st[2];
        for (int graphs = 0; graphs < 2; ++graphs) {
            SolverOptions o;
            o.rtol = 1e-10;
            o.max_it = 500;
            o.check_every = 4;
            o.cuda_graphs = graphs == 1;
            Bicgstab<double> solver(o);
            solver.set_operator(op);
            solver.set_preconditioner(*m);
            Array<double> x(exec, std::size_t(rs.r1 - rs.r0));
            st[graphs] = solver.solve(b, x);
        }
        const std::string what = op.exchange_name() + "/" + op.reduction_name();
        BOOST_TEST(st[1].converged(), what << ": " << st[1].summary());
        BOOST_TEST(st[1].iterations > 8, what);  // so that batches were replayed
        BOOST_TEST(st[1].cuda_graph == op.graph_safe(), what);
        BOOST_TEST(!st[0].cuda_graph, what);
        BOOST_TEST(st[1].iterations == st[0].iterations, what);
        BOOST_TEST(st[1].history.size() == st[0].history.size(), what);
        for (std::size_t k = 0; k < std::min(st[0].history.size(), st[1].history.size()); ++k)
            BOOST_TEST(std::abs(st[1].history[k] - st[0].history[k]) <= 1e-14 * st[0].history[k],
                       what << ": ||r_" << k << "|| " << st[1].history[k] << " with the graph, "
                            << st[0].history[k] << " without");
    }
    // the device-direct models and one rank are graph-safe, the host-staged ones are not
    const DistributedBdia<double, double> staged(
        comm, part, loc, exec, DistOptions{HaloModel::pinned_async, ReduceModel::mpi});
    BOOST_TEST(staged.graph_safe() == (size == 1));
}

namespace {

/// Solve on the ranks and on one process with the same solver and a preconditioner that
/// does not depend on the split (none, jacobi, block-Jacobi): the same iterations and x.
template <class Solver>
void compare_with_one_process(const HeptaSpec& s, PcType pc, Solver&& make_solver)
{
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    const index_t nc = s.Nc;
    // whole planes on 2 ranks, cells on 3 (an uneven split)
    const index_t n = index_t(s.rows());
    const RowPartition part =
        size == 3 ? partition_rows(n, nc, size) : partition_planes(s.I, s.J * s.H * nc, size);
    const index_t r0 = part.begin(rank), r1 = part.end(rank);

    // one process: the whole matrix
    const Bdia<double> a = generate_hepta_bdia<double>(s);
    const LinearSystem<double> sys = make_rhs(s, a);
    FormatOptions fo;
    fo.block_size = nc;
    const auto whole = make_matrix_operator<double, double>(to_coo(a), Format::bdia, exec, fo);
    const auto m1 = make_preconditioner<double>(pc, csr_from_coo(to_coo(a)), nc, exec);
    auto solver1 = make_solver();
    solver1.set_operator(*whole);
    solver1.set_preconditioner(*m1);
    const Array<double> b1 = to_exec(sys.b, exec);
    Array<double> x1(exec, std::size_t(n));
    const Status st1 = solver1.solve(b1, x1);
    const std::vector<double> x1h = to_host(x1);

    // the ranks: each its rows
    const Bdia<double> loc = generate_hepta_bdia_rows<double>(s, r0, r1);
    const LinearSystem<double> part_sys = make_rhs_rows(s, loc, r0);
    const auto mp = make_preconditioner<double>(pc, csr_from_coo(to_coo(loc)), nc, exec);
    DistributedBdia<double, double> op(comm, part, loc, exec);
    auto solver = make_solver();
    solver.set_operator(op);
    solver.set_preconditioner(*mp);
    const Array<double> b = to_exec(part_sys.b, exec);
    Array<double> x(exec, std::size_t(r1 - r0));
    const Status st = solver.solve(b, x);
    const std::vector<double> xh = to_host(x);

    // Rounding differs (the dot products are summed in another order), and BiCGStab and CG
    // amplify it over the iterations: the early residual history agrees to ~1e-12, the
    // iteration counts within 15 % (BiCGStab at difficulty 0.5 drifts most: 66 on one GPU,
    // 73 on 3 ranks sharing 2 H200s), and both answers meet the tolerance.
    BOOST_TEST(st.converged());
    BOOST_TEST(std::string(to_string(st.reason)) == to_string(st1.reason));
    BOOST_TEST(std::abs(st.iterations - st1.iterations) <= std::max(5, st1.iterations * 3 / 20),
               "iterations " << st.iterations << " on " << size << " ranks, " << st1.iterations
                             << " on one");
    const std::size_t early = std::min<std::size_t>({st.history.size(), st1.history.size(), 8});
    for (std::size_t k = 0; k < early; ++k)
        BOOST_TEST(std::abs(st.history[k] - st1.history[k]) <= 1e-9 * st1.history[k],
                   "||r_" << k << "|| " << st.history[k] << " on " << size << " ranks, "
                          << st1.history[k] << " on one");
    BOOST_TEST(st.true_relative_residual <= 2e-10);
    BOOST_TEST(st.b_norm == st1.b_norm, boost::test_tools::tolerance(1e-13));
    double err = 0, scale = 0;
    for (index_t i = r0; i < r1; ++i) {
        err = std::max(err, std::abs(xh[i - r0] - x1h[i]));
        scale = std::max(scale, std::abs(x1h[i]));
    }
    BOOST_TEST(err <= 1e-7 * scale, "rank " << rank << ": max |x_P - x_1| = " << err);
    // and both are the known solution
    double e_true = 0;
    for (index_t i = r0; i < r1; ++i)
        e_true = std::max(e_true, std::abs(xh[i - r0] - sys.x_true[i]));
    BOOST_TEST(e_true <= 1e-5);
}

}  // namespace

BOOST_AUTO_TEST_CASE(bicgstab_on_ranks_gives_the_one_process_answer)
{
    const int size = world()->size();
    for (index_t nc : {1, 3})
        for (PcType pc : {PcType::none, PcType::jacobi, PcType::block_jacobi}) {
            HeptaSpec s = spec_of(8, 6, 3 * size + 1, nc, false, HeptaModel::reservoir);
            s.difficulty = 0.5;
            SolverOptions o;
            o.rtol = 1e-10;
            o.max_it = 2000;
            compare_with_one_process(s, pc, [&] { return Bicgstab<double>(o); });
        }
}

BOOST_AUTO_TEST_CASE(cg_on_ranks_gives_the_one_process_answer)
{
    const int size = world()->size();
    for (PcType pc : {PcType::none, PcType::jacobi}) {
        HeptaSpec s = spec_of(7, 9, 2 * size + 2, 1, false, HeptaModel::reservoir);  // SPD
        s.difficulty = 0.5;
        SolverOptions o;
        o.rtol = 1e-10;
        o.max_it = 2000;
        compare_with_one_process(s, pc, [&] { return Cg<double>(o); });
    }
}

BOOST_AUTO_TEST_CASE(gmres_on_ranks_gives_the_one_process_answer)
{
    // the multi-dot sums of CGS2 (up to m + 2 per reduction) go through the Reducer in
    // calls of at most 8; a short restart exercises the restarts across ranks too
    const int size = world()->size();
    for (int m : {8, 30})
        for (PcType pc : {PcType::none, PcType::block_jacobi}) {
            HeptaSpec s = spec_of(8, 6, 3 * size + 1, 3, false, HeptaModel::reservoir);
            s.difficulty = 0.5;
            SolverOptions o;
            o.rtol = 1e-10;
            o.max_it = 2000;
            compare_with_one_process(s, pc, [&] { return Gmres<double>(o, m); });
        }
}

namespace {
/// `a` in out-of-core chunks (CSR; BDIA-GH of nc x nc blocks for nc > 1), each rank's group of
/// them (about equal bytes), the row partition they make and this rank's operator over its
/// group.
struct RankChunks {
    std::shared_ptr<const OocMatrix<double>> m;
    std::vector<index_t> bounds;
    RowPartition part;
    std::shared_ptr<const OutOfCoreOperator<double, double>> rows;
};
RankChunks rank_chunks(const Coo<double>& a, std::size_t chunk_bytes, index_t nc,
                       const Communicator& comm, const std::shared_ptr<const Executor>& exec)
{
    RankChunks r;
    r.m = std::make_shared<const OocMatrix<double>>(
        nc > 1 ? make_ooc_matrix_bdia<double>(a, nc, bdia_block_offsets(a, nc), chunk_bytes,
                                              exec->is_cuda())
               : make_ooc_matrix<double>(a, chunk_bytes, exec->is_cuda()));
    r.bounds = ooc_chunk_groups(*r.m, comm.size());
    for (int p = 0; p < comm.size(); ++p)
        r.part.starts.push_back(r.m->chunks()[std::size_t(r.bounds[p])].row0);
    r.part.starts.push_back(a.rows);
    r.rows = std::make_shared<const OutOfCoreOperator<double, double>>(
        r.m, exec, OutOfCoreOptions{}, r.bounds[comm.rank()], r.bounds[comm.rank() + 1]);
    return r;
}
}  // namespace

BOOST_AUTO_TEST_CASE(out_of_core_rows_per_rank_give_the_one_process_answer)
{
    // each rank streams its own group of out-of-core chunks (CSR and BDIA-GH), x gathered at
    // every product through host memory and (GPUs of their own, NCCL) device to device: the
    // product equals the whole matrix's, the solve the one-process solve
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    HeptaSpec s = spec_of(8, 6, 3 * size + 1, 3, false, HeptaModel::reservoir);
    s.difficulty = 0.5;
    const Coo<double> a = generate_hepta_coo<double>(s);
    const index_t n = a.rows;
    const std::vector<double> x_true = test::random_vector<double>(n, 3);
    std::vector<double> b(std::size_t(n), 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k) b[a.row[k]] += a.val[k] * x_true[a.col[k]];
    std::vector<GatherModel> gathers{GatherModel::host};
    const GatherModel best = resolve_gather_model(GatherModel::automatic, *exec, *comm);
    if (best != GatherModel::host) gathers.push_back(best);
    BOOST_TEST_MESSAGE("gather models: host" << (gathers.size() > 1 ? ", nccl" : ""));
    for (GatherModel gather : gathers) {
        for (bool bdia : {false, true}) {
            const std::string what = std::string(bdia ? "BDIA-GH" : "CSR") + " chunks, gather " +
                                     to_string(gather) + ", rank " + std::to_string(rank);
            const RankChunks rc = rank_chunks(a, 4000, bdia ? 3 : 1, *comm, exec);
            const auto& m = rc.m;
            const auto& bounds = rc.bounds;
            const RowPartition& part = rc.part;
            const auto& rows = rc.rows;
            const index_t r0 = part.begin(rank), r1 = part.end(rank);
            const GatheredRowsOperator<double> op(comm, part, rows, ReduceModel::mpi, gather);
            BOOST_TEST(op.rows() == r1 - r0);
            BOOST_TEST((op.exchange_model() == gather));
            // the host gather waits for x on the host; nccl is as paced as the rank's operator
            BOOST_TEST(op.host_paced() == (gather == GatherModel::host || rows->host_paced()));
            if (exec->is_cpu())  // the device-to-device gather on CPU ranks
                BOOST_CHECK_THROW(GatheredRowsOperator<double>(comm, part, rows, ReduceModel::mpi,
                                                               GatherModel::nccl),
                                  NotSupported);
            // y = 2 A x - y0 on this rank's rows
            const std::vector<double> y0 = test::random_vector<double>(n, 4);
            Array<double> xd =
                to_exec(std::vector<double>(x_true.begin() + r0, x_true.begin() + r1), exec);
            Array<double> yd = to_exec(std::vector<double>(y0.begin() + r0, y0.begin() + r1), exec);
            op.apply(2.0, xd.data(), -1.0, yd.data());
            const std::vector<double> y = to_host(yd);
            double err = 0;
            for (index_t i = r0; i < r1; ++i)
                err = std::max(err, std::abs(y[i - r0] - (2 * b[i] - y0[i])));
            BOOST_TEST(err <= 1e-12, what << ": " << err);
            // the solve through solve_system's row split against one process
            SolveConfig cfg;
            cfg.executor = exec;
            cfg.pc = PcType::block_jacobi;
            cfg.block_size = bdia ? 3 : 1;  // CSR chunks end on any row: ranks' rows too
            cfg.options.rtol = 1e-10;
            const SolveResult one = solve_system<double>(m, b, cfg);
            OocRowSplit split;
            split.first_chunk = bounds[rank];
            split.last_chunk = bounds[rank + 1];
            split.whole = [&](std::shared_ptr<const Operator<double>> r) {
                return std::shared_ptr<const Operator<double>>(
                    std::make_shared<GatheredRowsOperator<double>>(comm, part, std::move(r),
                                                                   ReduceModel::automatic, gather));
            };
            const SolveResult mine = solve_system<double>(
                m, std::vector<double>(b.begin() + r0, b.begin() + r1), cfg, split);
            BOOST_TEST(mine.status.converged(), what << ": " << mine.status.summary());
            BOOST_TEST(std::abs(mine.status.iterations - one.status.iterations) <= 1,
                       what << ": " << mine.status.iterations << " on " << size << " ranks, "
                            << one.status.iterations << " on one");
            double dx = 0, scale = 0;
            for (index_t i = r0; i < r1; ++i) {
                dx = std::max(dx, std::abs(mine.x[i - r0] - one.x[i]));
                scale = std::max(scale, std::abs(one.x[i]));
            }
            BOOST_TEST(dx <= 1e-8 * scale, what << ": max |x_P - x_1| = " << dx);
        }
    }
    // a rank's operator that does not have its rows' shape
    RowPartition wrong;
    for (int p = 0; p <= size; ++p) wrong.starts.push_back(index_t(p));
    auto m = std::make_shared<const OocMatrix<double>>(
        make_ooc_matrix<double>(a, 4000, exec->is_cuda()));
    BOOST_CHECK_THROW(
        GatheredRowsOperator<double>(
            comm, wrong, std::make_shared<const OutOfCoreOperator<double, double>>(m, exec)),
        DimensionMismatch);
    BOOST_CHECK_THROW(parse_gather_model("device"), InputError);
    BOOST_TEST((parse_gather_model("NCCL") == GatherModel::nccl));
}

BOOST_AUTO_TEST_CASE(lsqr_with_rows_per_rank_gives_the_one_process_answer)
{
    // each rank streams its own chunks; A^T u summed over the ranks (through host memory, and
    // device to device with NCCL where each rank has a GPU of its own): the products equal the
    // whole matrix's, LSQR stops as on one process with the same x
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    HeptaSpec s = spec_of(7, 5, 2 * size + 1, 2, false, HeptaModel::reservoir);
    const Coo<double> a = generate_hepta_coo<double>(s);
    const index_t n = a.rows;
    const std::vector<double> x_true = test::random_vector<double>(n, 7);
    const std::vector<double> u_all = test::random_vector<double>(n, 8);
    std::vector<double> b(std::size_t(n), 0.0), atu(std::size_t(n), 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k) {
        b[a.row[k]] += a.val[k] * x_true[a.col[k]];
        atu[a.col[k]] += a.val[k] * u_all[a.row[k]];
    }
    const RankChunks rc = rank_chunks(a, 3000, 1, *comm, exec);
    const auto& m = rc.m;
    const RowPartition& part = rc.part;
    const auto& rows = rc.rows;
    const index_t r0 = part.begin(rank), r1 = part.end(rank);
    // one process
    LsqrOptions lo;
    lo.atol = lo.btol = 1e-12;
    lo.iter_lim = 400;
    Lsqr<double> one(lo);
    one.set_operator(std::make_shared<const OutOfCoreOperator<double, double>>(m, exec));
    Array<double> x1(exec, std::size_t(n));
    const LsqrStatus st1 = one.solve(to_exec(b, exec), x1);
    BOOST_TEST((st1.istop == 1 || st1.istop == 2), st1.summary());
    const std::vector<double> x1h = to_host(x1);
    std::vector<GatherModel> models{GatherModel::host};
    const GatherModel best = resolve_gather_model(GatherModel::automatic, *exec, *comm);
    if (best != GatherModel::host) models.push_back(best);
    for (GatherModel model : models) {
        const std::string what = std::string("sum ") + to_string(model) + ", rank " +
                                 std::to_string(rank) + " of " + std::to_string(size);
        const RowBlockOperator<double> op(comm, part, rows, model);
        BOOST_TEST((op.exchange_model() == model));
        BOOST_TEST(op.rows() == r1 - r0);
        BOOST_TEST(op.cols() == n);
        BOOST_TEST(op.reducer() != nullptr);
        // y = 2 A^T u - y0, y0 the same on every rank
        const std::vector<double> y0 = test::random_vector<double>(n, 9);
        Array<double> ud =
            to_exec(std::vector<double>(u_all.begin() + r0, u_all.begin() + r1), exec);
        Array<double> yd = to_exec(y0, exec);
        op.apply_transpose(2.0, ud.data(), -1.0, yd.data());
        const std::vector<double> y = to_host(yd);
        double err = 0;
        for (index_t j = 0; j < n; ++j) err = std::max(err, std::abs(y[j] - (2 * atu[j] - y0[j])));
        BOOST_TEST(err <= 1e-12, what << ": A^T u off by " << err);
        Lsqr<double> mine(lo);
        mine.set_operator(op);
        Array<double> x(exec, std::size_t(n));
        const LsqrStatus st =
            mine.solve(to_exec(std::vector<double>(b.begin() + r0, b.begin() + r1), exec), x);
        BOOST_TEST(st.istop == st1.istop, what << ": " << st.summary());
        BOOST_TEST(std::abs(st.itn - st1.itn) <= 1, what << ": " << st.itn << " vs " << st1.itn);
        BOOST_TEST(std::abs(st.bnorm - st1.bnorm) <= 1e-12 * st1.bnorm, what);
        const std::vector<double> xh = to_host(x);
        double dx = 0, scale = 0;
        for (index_t j = 0; j < n; ++j) {
            dx = std::max(dx, std::abs(xh[j] - x1h[j]));
            scale = std::max(scale, std::abs(x1h[j]));
        }
        BOOST_TEST(dx <= 1e-8 * scale, what << ": max |x_P - x_1| = " << dx);
    }
    if (exec->is_cpu())
        BOOST_CHECK_THROW(RowBlockOperator<double>(comm, part, rows, GatherModel::nccl),
                          NotSupported);
}

BOOST_AUTO_TEST_CASE(osem_over_ranks_is_osem_over_every_ranks_blocks)
{
    // OSEM with the rows split over the ranks: each rank cuts its own chunks into S groups,
    // subset s is the union of every rank's group s, each group's A^T summed over the ranks
    // (through host memory, and device to device with NCCL where each rank has a GPU of its
    // own). Reference: OSEM in one process with in-core CSR blocks holding the same rows.
    const auto comm = world();
    const auto exec = rank_executor();
    const int rank = comm->rank(), size = comm->size();
    PetSpec ps;
    ps.rings = 2;
    ps.detectors = 48;
    ps.image = 16;
    ps.slices = 3;
    const PetSystem sys = make_pet_system(ps);
    const Coo<double>& a = sys.a;
    const int S = 3;
    const RankChunks rc = rank_chunks(a, 2000, 1, *comm, exec);
    const auto& ch = rc.m->chunks();
    // every rank's groups, and the rows of group s on rank p: [lo[p][s], lo[p][s + 1])
    std::vector<std::vector<index_t>> lo(static_cast<std::size_t>(size));
    for (int p = 0; p < size; ++p) {
        const auto grp = ooc_chunk_groups(*rc.m, S, rc.bounds[p], rc.bounds[p + 1]);
        for (int q = 0; q < S; ++q) lo[p].push_back(ch[std::size_t(grp[q])].row0);
        lo[p].push_back(rc.part.end(p));
    }
    // the reference's blocks: subset s = rank 0's group s, rank 1's, ... renumbered from 0
    std::vector<std::shared_ptr<const Operator<double>>> ref_blocks;
    std::vector<double> g_ref;
    for (int q = 0; q < S; ++q) {
        std::vector<index_t> row, col;
        std::vector<double> val;
        index_t rows = 0;
        for (int p = 0; p < size; ++p) {
            const index_t r0 = lo[p][q], r1 = lo[p][q + 1];
            for (offset_t k = 0; k < a.nnz(); ++k)
                if (a.row[k] >= r0 && a.row[k] < r1) {
                    row.push_back(rows + a.row[k] - r0);
                    col.push_back(a.col[k]);
                    val.push_back(a.val[k]);
                }
            g_ref.insert(g_ref.end(), sys.counts.begin() + r0, sys.counts.begin() + r1);
            rows += r1 - r0;
        }
        const Coo<double> b{rows, a.cols, Array<index_t>(std::move(row)),
                            Array<index_t>(std::move(col)), Array<double>(std::move(val))};
        ref_blocks.push_back(make_matrix_operator<double, double>(b, Format::csr, exec));
    }
    MlemOptions mo;
    mo.iterations = 4;
    Mlem<double> ref(mo);
    ref.set_subsets(ref_blocks);
    Array<double> f_ref(exec, std::size_t(a.cols));
    const MlemStatus st_ref = ref.solve(to_exec(g_ref, exec), f_ref);
    const std::vector<double> fr = to_host(f_ref);
    std::vector<GatherModel> models{GatherModel::host};
    const GatherModel best = resolve_gather_model(GatherModel::automatic, *exec, *comm);
    if (best != GatherModel::host) models.push_back(best);
    const auto sum = [&](double* v, int n) {
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, comm->comm());
    };
    // the row-block operators' sums, then plain blocks whose A^T Mlem sums through `sum`
    for (std::size_t v = 0; v <= models.size(); ++v) {
        const bool plain = v == models.size();
        const std::string what = (plain ? std::string("blocks summed by Mlem")
                                        : std::string("sum ") + to_string(models[v])) +
                                 ", rank " + std::to_string(rank) + " of " + std::to_string(size);
        const auto mine_rows = make_out_of_core_subsets<double, double>(
            rc.m, S, exec, OutOfCoreOptions{}, rc.bounds[rank], rc.bounds[rank + 1]);
        std::vector<std::shared_ptr<const Operator<double>>> blocks;
        for (int q = 0; q < S; ++q) {
            RowPartition part{{0}};
            for (int p = 0; p < size; ++p)
                part.starts.push_back(part.starts.back() + lo[p][q + 1] - lo[p][q]);
            BOOST_TEST(mine_rows[q]->rows() == lo[rank][q + 1] - lo[rank][q]);
            if (plain)
                blocks.push_back(mine_rows[q]);
            else
                blocks.push_back(std::make_shared<const RowBlockOperator<double>>(
                    comm, part, mine_rows[q], models[v]));
        }
        Mlem<double> em(mo);
        em.set_subsets(blocks);
        em.set_process_sum(sum);
        const index_t r0 = rc.part.begin(rank), r1 = rc.part.end(rank);
        Array<double> f(exec, std::size_t(a.cols));
        const MlemStatus st = em.solve(
            to_exec(std::vector<double>(sys.counts.begin() + r0, sys.counts.begin() + r1), exec),
            f);
        BOOST_TEST(st.subsets == S);
        BOOST_TEST(std::abs(st.counts - st_ref.counts) <= 1e-12 * st_ref.counts, what);
        BOOST_REQUIRE(st.loglik.size() == st_ref.loglik.size());
        for (std::size_t k = 0; k < st.loglik.size(); ++k)
            BOOST_TEST(
                std::abs(st.loglik[k] - st_ref.loglik[k]) <= 1e-11 * std::abs(st_ref.loglik[k]),
                what << ": L(f^" << k << ") " << st.loglik[k] << " vs " << st_ref.loglik[k]);
        const std::vector<double> fh = to_host(f);
        double df = 0, scale = 0;
        for (index_t j = 0; j < a.cols; ++j) {
            df = std::max(df, std::abs(fh[j] - fr[j]));
            scale = std::max(scale, std::abs(fr[j]));
        }
        BOOST_TEST(scale > 0);
        BOOST_TEST(df <= 1e-11 * scale, what << ": max |f_P - f_1| = " << df);
    }
}

BOOST_AUTO_TEST_CASE(block_ilu_per_rank_converges)
{
    // ILU(0) of each rank's diagonal block (block-Jacobi/ILU, as PETSc's bjacobi): not the
    // one-process preconditioner, but it must solve the system.
    const auto comm = world();
    const auto exec = rank_executor();
    HeptaSpec s = spec_of(10, 8, 2 * comm->size() + 3, 3, false, HeptaModel::reservoir);
    s.difficulty = 1.0;
    const RankSystem rs = rank_system(s, *comm);
    const RowPartition& part = rs.part;
    const Bdia<double>& loc = rs.loc;
    const LinearSystem<double>& sys = rs.sys;
    const index_t r0 = rs.r0, r1 = rs.r1;
    const auto m =
        make_preconditioner<double>(test::testing_on_gpu() ? PcType::ilu0_mc : PcType::ilu0,
                                    csr_from_coo(to_coo(loc)), s.Nc, exec);
    DistributedBdia<double, double> op(comm, part, loc, exec);
    SolverOptions o;
    o.rtol = 1e-9;
    o.max_it = 3000;
    Bicgstab<double> solver(o);
    solver.set_operator(op);
    solver.set_preconditioner(*m);
    const Array<double> b = to_exec(sys.b, exec);
    Array<double> x(exec, std::size_t(r1 - r0));
    const Status st = solver.solve(b, x);
    BOOST_TEST(st.converged(), st.summary());
    BOOST_TEST(st.true_relative_residual <= 1e-8);
    // every rank stopped at the same iteration with the same reason
    int its[2] = {st.iterations, -st.iterations};
    MPI_Allreduce(MPI_IN_PLACE, its, 2, MPI_INT, MPI_MAX, comm->comm());
    BOOST_TEST(its[0] == -its[1]);
}

namespace {

/// Rows [r0, r1) of a whole host CSR matrix split as MPIAIJ splits them (coarse_space.hpp's
/// SplitRows): the diagonal block in local columns, the rest through a list of global columns.
struct SplitOf {
    std::vector<index_t> dp{0}, dc, op{0}, oc, cols;
    std::vector<double> dv, ov;
    Csr<double> diag;  ///< the diagonal block as a heptane CSR (for the rank's preconditioner)
    SplitRows view() const
    {
        SplitRows v;
        v.diag.rows = index_t(dp.size()) - 1;
        v.diag.row_ptr = dp.data();
        v.diag.col_idx = dc.data();
        v.diag.values = dv.data();
        v.off.rows = v.diag.rows;
        v.off.row_ptr = op.data();
        v.off.col_idx = oc.data();
        v.off.values = ov.data();
        v.off.cols = index_t(cols.size());
        v.off_cols = cols.data();
        return v;
    }
};

SplitOf split_of(const Csr<double>& w, index_t r0, index_t r1)
{
    SplitOf s;
    const auto rp = w.row_ptr.to_vector();
    const auto ci = w.col_idx.to_vector();
    const auto va = w.values.to_vector();
    std::map<index_t, index_t> off;  // global column -> off column
    for (index_t i = r0; i < r1; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
            if (ci[k] < r0 || ci[k] >= r1) off.emplace(ci[k], 0);
    for (auto& [g, j] : off) {
        j = index_t(s.cols.size());
        s.cols.push_back(g);
    }
    Coo<double> d;
    d.rows = d.cols = r1 - r0;
    std::vector<index_t> dr, dcol;
    std::vector<double> dval;
    for (index_t i = r0; i < r1; ++i) {
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            if (ci[k] >= r0 && ci[k] < r1) {
                s.dc.push_back(ci[k] - r0);
                s.dv.push_back(va[k]);
                dr.push_back(i - r0);
                dcol.push_back(ci[k] - r0);
                dval.push_back(va[k]);
            } else {
                s.oc.push_back(off.at(ci[k]));
                s.ov.push_back(va[k]);
            }
        }
        s.dp.push_back(index_t(s.dc.size()));
        s.op.push_back(index_t(s.oc.size()));
    }
    d.row = Array<index_t>(std::move(dr));
    d.col = Array<index_t>(std::move(dcol));
    d.val = Array<double>(std::move(dval));
    s.diag = csr_from_coo(d);
    return s;
}

/// Pᵀ W P for the aggregates of every rank (gathered), from the whole matrix: the coarse
/// matrix computed apart from CoarseSpace's own assembly.
std::vector<double> galerkin_reference(const Csr<double>& w, index_t nc,
                                       const CoarseSpace<double>& q, const Communicator& comm)
{
    // every block row's global aggregate
    std::vector<int> mine;
    for (index_t a : q.aggregate_of()) mine.push_back(int(q.coarse_begin() / nc + a));
    const int size = comm.size();
    std::vector<int> counts(static_cast<std::size_t>(size)), displs(std::size_t(size) + 1, 0);
    int m = int(mine.size());
    MPI_Allgather(&m, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.comm());
    for (int p = 0; p < size; ++p)
        displs[std::size_t(p) + 1] = displs[std::size_t(p)] + counts[std::size_t(p)];
    std::vector<int> agg(std::size_t(displs.back()));
    MPI_Allgatherv(mine.data(), m, MPI_INT, agg.data(), counts.data(), displs.data(), MPI_INT,
                   comm.comm());
    const index_t nct = q.coarse_size();
    std::vector<double> ref(std::size_t(nct * nct), 0.0);
    const auto rp = w.row_ptr.to_vector();
    const auto ci = w.col_idx.to_vector();
    const auto va = w.values.to_vector();
    for (index_t i = 0; i < w.rows; ++i)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            const index_t I = agg[std::size_t(i / nc)] * nc + i % nc;
            const index_t J = agg[std::size_t(ci[k] / nc)] * nc + ci[k] % nc;
            ref[std::size_t(I * nct + J)] += va[k];
        }
    return ref;
}

/// A coarse-space case: the block size, each rank's preconditioner, CG (else BiCGStab).
struct CoarseCase {
    index_t nc;
    PcType pc;
    bool cg;
};

/// A coarse-space case's system: the reservoir model (difficulty 1) on J x H x (4 ranks + 2)
/// cells, this rank's rows, the whole matrix, its split, the distributed operator and the
/// rank's own preconditioner.
struct CoarseSystem {
    RankSystem rs;
    Csr<double> whole;
    SplitOf split;
    std::shared_ptr<const Operator<double>> op, pc;
};

CoarseSystem coarse_system(const std::shared_ptr<const Communicator>& comm,
                           const std::shared_ptr<const Executor>& exec, const CoarseCase& c,
                           index_t J, index_t H)
{
    HeptaSpec s = spec_of(J, H, 4 * comm->size() + 2, c.nc, false, HeptaModel::reservoir);
    s.difficulty = 1.0;
    CoarseSystem cs{rank_system(s, *comm),
                    csr_from_coo(to_coo(generate_hepta_bdia<double>(s))),
                    {},
                    nullptr,
                    nullptr};
    cs.split = split_of(cs.whole, cs.rs.r0, cs.rs.r1);
    cs.op = std::make_shared<DistributedBdia<double, double>>(comm, cs.rs.part, cs.rs.loc, exec);
    cs.pc = make_preconditioner<double>(c.pc, cs.split.diag, c.nc, exec);
    return cs;
}

/// BiCGStab (CG when `cg`) on the distributed operator with preconditioner m, rtol 1e-9: meets
/// the tolerance with the known solution; returns the iterations.
int solve_to_known(const Operator<double>& op, const Operator<double>& m, const RankSystem& rs,
                   const std::shared_ptr<const Executor>& exec, bool cg, const std::string& what)
{
    SolverOptions o;
    o.rtol = 1e-9;
    o.max_it = 3000;
    const Array<double> b = to_exec(rs.sys.b, exec);
    Array<double> x(exec, std::size_t(rs.r1 - rs.r0));
    Status st;
    if (cg) {
        Cg<double> solver(o);
        solver.set_operator(op);
        solver.set_preconditioner(m);
        st = solver.solve(b, x);
    } else {
        Bicgstab<double> solver(o);
        solver.set_operator(op);
        solver.set_preconditioner(m);
        st = solver.solve(b, x);
    }
    BOOST_TEST(st.converged(), what << ": " << st.summary());
    BOOST_TEST(st.true_relative_residual <= 1e-8, what);
    const std::vector<double> xh = to_host(x);
    double e = 0, xs = 0;
    for (index_t i = rs.r0; i < rs.r1; ++i) {
        e = std::max(e,
                     std::abs(xh[std::size_t(i - rs.r0)] - rs.sys.x_true[std::size_t(i - rs.r0)]));
        xs = std::max(xs, std::abs(rs.sys.x_true[std::size_t(i - rs.r0)]));
    }
    BOOST_TEST(e <= 1e-5 * std::max(1.0, xs), what << ": max error " << e);
    return st.iterations;
}

}  // namespace

BOOST_AUTO_TEST_CASE(global_coarse_correction_is_galerkin_and_cuts_iterations)
{
    // Each rank's own preconditioner (block Jacobi or AMG of its diagonal block) with and
    // without the global coarse correction: the coarse matrix is Pᵀ A P of the whole matrix,
    // both solves meet the tolerance with the known solution, and the coarse correction takes
    // no more iterations (fewer, on these systems, from 2 ranks on).
    const auto comm = world();
    const auto exec = rank_executor();
    for (const CoarseCase c :
         {CoarseCase{1, PcType::block_jacobi, false}, CoarseCase{1, PcType::amg, false},
          CoarseCase{3, PcType::block_jacobi, false}, CoarseCase{1, PcType::jacobi, true}}) {
        const CoarseSystem cs = coarse_system(comm, exec, c, 10, 8);
        const RankSystem& rs = cs.rs;
        const Csr<double>& whole = cs.whole;
        const SplitOf& split = cs.split;
        const std::shared_ptr<const Operator<double>>& op = cs.op;
        const std::shared_ptr<const Operator<double>>& pc = cs.pc;
        CoarseOptions co;
        co.aggregates = 6;
        co.symmetric = c.cg;
        const CoarseSpace<double> q(comm->comm(), op, pc, split.view(), c.nc, co);
        const std::string what = std::string(to_string(c.pc)) + " Nc " + std::to_string(c.nc) +
                                 (c.cg ? " cg" : " bicgstab");
        BOOST_TEST(q.coarse_size() >= comm->size() * c.nc, what);

        const std::vector<double> ref = galerkin_reference(whole, c.nc, q, *comm);
        double worst = 0, scale = 0;
        for (std::size_t k = 0; k < ref.size(); ++k) {
            worst = std::max(worst, std::abs(ref[k] - q.coarse_matrix()[k]));
            scale = std::max(scale, std::abs(ref[k]));
        }
        BOOST_TEST(worst <= 1e-12 * scale, what << ": max |A_c - P^T A P| = " << worst);
        {  // the off part with global columns (no off_cols list, as MPIBAIJ's rows come): the same
            std::vector<index_t> global(split.oc.size());
            for (std::size_t k = 0; k < global.size(); ++k)
                global[k] = split.cols[std::size_t(split.oc[k])];
            SplitRows g = split.view();
            g.off.col_idx = global.data();
            g.off.cols = -1;
            g.off_cols = nullptr;
            const CoarseSpace<double> qg(comm->comm(), op, pc, g, c.nc, co);
            BOOST_TEST(qg.coarse_matrix() == q.coarse_matrix(), what << ": global off columns");
        }

        auto solve = [&](const Operator<double>& m) {
            return solve_to_known(*op, m, rs, exec, c.cg, what);
        };
        const int without = solve(*pc);
        const int with = solve(q);
        if (comm->rank() == 0)
            std::printf(
                "coarse correction, %s, %d ranks: %d iterations without, %d with (%d coarse "
                "unknowns)\n",
                what.c_str(), comm->size(), without, with, int(q.coarse_size()));
        BOOST_TEST(with <= without, what << ": " << with
                                         << " iterations with the coarse correction, " << without
                                         << " without");
    }
}

BOOST_AUTO_TEST_CASE(a_singular_coarse_matrix_is_an_error_on_every_rank)
{
    // rows that sum to zero (a pure-Neumann operator): the constants are in A's kernel, so
    // A_c 1 = P^T A 1 = 0 and no coarse solve exists
    const auto comm = world();
    const auto exec = rank_executor();
    HeptaSpec s = spec_of(6, 5, 2 * comm->size() + 2, 1, false, HeptaModel::reservoir);
    const RankSystem rs = rank_system(s, *comm);
    Csr<double> whole = csr_from_coo(to_coo(generate_hepta_bdia<double>(s)));
    const SplitOf good = split_of(whole, rs.r0, rs.r1);
    auto rp = whole.row_ptr.to_vector();
    auto ci = whole.col_idx.to_vector();
    auto va = whole.values.to_vector();
    for (index_t i = 0; i < whole.rows; ++i) {
        double off = 0;
        offset_t d = -1;
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
            if (ci[k] == i)
                d = k;
            else
                off += va[k];
        BOOST_REQUIRE(d >= 0);
        va[d] = -off;
    }
    whole.values = Array<double>(std::move(va));
    const SplitOf split = split_of(whole, rs.r0, rs.r1);
    const std::shared_ptr<const Operator<double>> op =
        std::make_shared<DistributedBdia<double, double>>(comm, rs.part, rs.loc, exec);
    const std::shared_ptr<const Operator<double>> pc =
        make_preconditioner<double>(PcType::none, split.diag, 1, exec);
    BOOST_CHECK_EXCEPTION(CoarseSpace<double>(comm->comm(), op, pc, split.view(), 1), InputError,
                          [](const InputError& e) {
                              return std::string(e.what()).find("singular") != std::string::npos;
                          });
    // new values that make it singular: the same error, and the coarse space keeps the
    // matrix and factors it had (it still solves)
    CoarseSpace<double> q(comm->comm(), op, pc, good.view(), 1);
    const std::vector<double> before = q.coarse_matrix();
    BOOST_CHECK_THROW(q.update_values(split.view()), InputError);
    BOOST_TEST(q.coarse_matrix() == before);
    const Array<double> b = to_exec(rs.sys.b, exec);
    Array<double> z(exec, std::size_t(rs.r1 - rs.r0));
    q.apply(b.data(), z.data());
    double zmax = 0;
    for (double v : to_host(z)) zmax = std::max(zmax, std::abs(v));
    BOOST_TEST(std::isfinite(zmax));
    BOOST_TEST(zmax > 0);
    // its null space declared (CoarseOptions::singular): a generalized inverse of rank
    // coarse_size - 1 (the constants), dense or AMG's coarsest level, and new values too
    for (const auto how : {CoarseOptions::Solve::dense, CoarseOptions::Solve::amg}) {
        CoarseOptions co;
        co.singular = true;
        co.solve = how;
        CoarseSpace<double> qs(comm->comm(), op, pc, split.view(), 1, co);
        const std::string d = qs.describe();
        if (how == CoarseOptions::Solve::dense)
            BOOST_TEST(d.find("a generalized inverse (null space declared: rank " +
                              std::to_string(qs.coarse_size() - 1) + " of " +
                              std::to_string(qs.coarse_size()) + ")") != std::string::npos,
                       d);
        qs.update_values(split.view());
        // b - mean(b): consistent; the correction is finite and not zero
        std::vector<double> bh = rs.sys.b;
        double sum = 0, cnt = double(bh.size());
        for (double v : bh) sum += v;
        double tot[2] = {sum, cnt};
        MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_DOUBLE, MPI_SUM, comm->comm());
        for (double& v : bh) v -= tot[0] / tot[1];
        const Array<double> bc = to_exec(bh, exec);
        qs.apply(bc.data(), z.data());
        double m = 0;
        for (double v : to_host(z)) m = std::max(m, std::abs(v));
        BOOST_TEST(std::isfinite(m));
        BOOST_TEST(m > 0);
    }
}

BOOST_AUTO_TEST_CASE(global_coarse_correction_with_the_amg_coarse_solve)
{
    // Many aggregates per rank, the coarse matrix solved on every rank by AMG's iteration
    // (CoarseOptions::Solve::amg) instead of its dense LU: the same A_c = P^T A P (checked
    // against the product of the whole matrix), the automatic choice takes AMG above the dense
    // limit, the AMG iteration with many cycles gives the dense LU's correction, and with the
    // default 2 cycles BiCGStab (CG: the symmetric form) meets the tolerance with the known
    // solution in no more iterations than each rank's preconditioner alone.
    const auto comm = world();
    const auto exec = rank_executor();
    for (const CoarseCase c : {CoarseCase{1, PcType::amg, false}, CoarseCase{1, PcType::amg, true},
                               CoarseCase{3, PcType::block_jacobi, false}}) {
        const CoarseSystem cs = coarse_system(comm, exec, c, 12, 10);
        const RankSystem& rs = cs.rs;
        const Csr<double>& whole = cs.whole;
        const SplitOf& split = cs.split;
        const std::shared_ptr<const Operator<double>>& op = cs.op;
        const std::shared_ptr<const Operator<double>>& pc = cs.pc;
        const std::string what = std::string(to_string(c.pc)) + " Nc " + std::to_string(c.nc) +
                                 (c.cg ? " cg" : " bicgstab");
        CoarseOptions co;
        co.aggregates = 60;  // about 8 cells each
        co.symmetric = c.cg;
        co.solve = CoarseOptions::Solve::dense;
        const CoarseSpace<double> qd(comm->comm(), op, pc, split.view(), c.nc, co);
        co.solve = CoarseOptions::Solve::automatic;
        co.dense_limit = 16;
        const CoarseSpace<double> qa(comm->comm(), op, pc, split.view(), c.nc, co);
        BOOST_TEST((qa.solve_kind() == CoarseOptions::Solve::amg), what);
        BOOST_TEST((qd.solve_kind() == CoarseOptions::Solve::dense), what);
        BOOST_TEST(qa.coarse_size() > 16, what);
        const std::vector<double> ref = galerkin_reference(whole, c.nc, qa, *comm);
        const std::vector<double> got = qa.coarse_matrix();
        double worst = 0, scale = 0;
        for (std::size_t k = 0; k < ref.size(); ++k) {
            worst = std::max(worst, std::abs(ref[k] - got[k]));
            scale = std::max(scale, std::abs(ref[k]));
        }
        BOOST_TEST(worst <= 1e-12 * scale, what << ": max |A_c - P^T A P| = " << worst);
        BOOST_TEST(qd.coarse_matrix() == got, what << ": dense and amg assemble the same A_c");
        BOOST_TEST(qa.describe().find("AMG (2 cycles") != std::string::npos, qa.describe());

        {  // many cycles: the dense LU's correction
            co.cycles = 60;
            const CoarseSpace<double> q60(comm->comm(), op, pc, split.view(), c.nc, co);
            co.cycles = 2;
            const Array<double> b = to_exec(rs.sys.b, exec);
            const index_t n = rs.r1 - rs.r0;
            Array<double> zd(exec, std::size_t(n)), za(exec, std::size_t(n));
            qd.apply(b.data(), zd.data());
            q60.apply(b.data(), za.data());
            const std::vector<double> hd = to_host(zd), ha = to_host(za);
            double diff = 0, size = 0;
            for (std::size_t i = 0; i < hd.size(); ++i) {
                diff = std::max(diff, std::abs(hd[i] - ha[i]));
                size = std::max(size, std::abs(hd[i]));
            }
            MPI_Allreduce(MPI_IN_PLACE, &diff, 1, MPI_DOUBLE, MPI_MAX, comm->comm());
            MPI_Allreduce(MPI_IN_PLACE, &size, 1, MPI_DOUBLE, MPI_MAX, comm->comm());
            BOOST_TEST(size > 0, what);
            BOOST_TEST(diff <= 1e-8 * size,
                       what << ": 60 AMG cycles vs the dense LU: max difference " << diff << " of "
                            << size);
        }

        auto solve = [&](const Operator<double>& m) {
            return solve_to_known(*op, m, rs, exec, c.cg, what);
        };
        // the aggregates of the strong couplings (level by level): A_c is still P^T A P, and
        // every block row has an aggregate of this rank
        co.aggregation = CoarseOptions::Aggregation::strength;
        co.aggregates = 20;
        const CoarseSpace<double> qs(comm->comm(), op, pc, split.view(), c.nc, co);
        BOOST_TEST(qs.describe().find("(strength)") != std::string::npos, qs.describe());
        for (index_t g : qs.aggregate_of())
            BOOST_TEST((g >= 0 && g < qs.local_aggregates()), what << ": aggregate " << g);
        {
            const std::vector<double> sref = galerkin_reference(whole, c.nc, qs, *comm);
            const std::vector<double> sgot = qs.coarse_matrix();
            double sworst = 0;
            for (std::size_t k = 0; k < sref.size(); ++k)
                sworst = std::max(sworst, std::abs(sref[k] - sgot[k]));
            BOOST_TEST(sworst <= 1e-12 * scale,
                       what << ": strength: max |A_c - P^T A P| = " << sworst);
        }

        const int without = solve(*pc);
        const int dense = solve(qd);
        const int amg = solve(qa);
        const int strong = solve(qs);
        if (comm->rank() == 0)
            std::printf(
                "coarse correction, %s, %d ranks, %d coarse unknowns: %d iterations without, %d "
                "with the dense LU, %d with 2 AMG cycles; strength aggregates (%d unknowns): %d\n",
                what.c_str(), comm->size(), int(qa.coarse_size()), without, dense, amg,
                int(qs.coarse_size()), strong);
        BOOST_TEST(amg <= without, what << ": " << amg << " iterations with the AMG coarse solve, "
                                        << without << " without");
        BOOST_TEST(strong <= without, what << ": " << strong
                                           << " iterations with strength aggregates, " << without
                                           << " without");
    }
}

namespace {

/// Every rank's triplets (global indices) on every rank, as a dense rows x cols matrix.
std::vector<double> gather_dense(const Communicator& comm, const std::vector<long long>& i,
                                 const std::vector<long long>& j, const std::vector<double>& v,
                                 long long rows, long long cols)
{
    const int size = comm.size();
    std::vector<int> counts(static_cast<std::size_t>(size)), displs(std::size_t(size) + 1, 0);
    int m = int(i.size());
    MPI_Allgather(&m, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.comm());
    for (int p = 0; p < size; ++p)
        displs[std::size_t(p) + 1] = displs[std::size_t(p)] + counts[std::size_t(p)];
    std::vector<long long> ai(std::size_t(displs.back())), aj(ai.size());
    std::vector<double> av(ai.size());
    MPI_Allgatherv(i.data(), m, MPI_LONG_LONG, ai.data(), counts.data(), displs.data(),
                   MPI_LONG_LONG, comm.comm());
    MPI_Allgatherv(j.data(), m, MPI_LONG_LONG, aj.data(), counts.data(), displs.data(),
                   MPI_LONG_LONG, comm.comm());
    MPI_Allgatherv(v.data(), m, MPI_DOUBLE, av.data(), counts.data(), displs.data(), MPI_DOUBLE,
                   comm.comm());
    std::vector<double> d(std::size_t(rows * cols), 0.0);
    for (std::size_t k = 0; k < ai.size(); ++k) d[std::size_t(ai[k] * cols + aj[k])] += av[k];
    return d;
}

double global_dot(const Communicator& comm, const std::vector<double>& a,
                  const std::vector<double>& b)
{
    double s = 0;
    for (std::size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, comm.comm());
    return s;
}

}  // namespace

namespace {

/// The largest |level 0 - whole| of m (gathered, dense) and, for every coarser level, of
/// |A_{l+1} - Pᵀ A_l P| relative to its largest entry, with m's own P and A_l gathered.
void check_levels_are_galerkin(const Communicator& comm, const DistAmg<double>& m,
                               const Csr<double>& whole, const std::string& what)
{
    const auto& lv = m.levels();
    std::vector<long long> i, j;
    std::vector<double> v;
    m.level_triplets(0, i, j, v);
    std::vector<double> a = gather_dense(comm, i, j, v, lv[0].rows, lv[0].rows);
    {  // level 0 is the whole matrix
        const auto rp = whole.row_ptr.to_vector();
        const auto ci = whole.col_idx.to_vector();
        const auto va = whole.values.to_vector();
        double worst = 0;
        std::vector<double> w(a.size(), 0.0);
        for (index_t r = 0; r < whole.rows; ++r)
            for (offset_t k = rp[r]; k < rp[r + 1]; ++k)
                w[std::size_t(r * whole.rows + ci[k])] += va[k];
        for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - w[k]));
        BOOST_TEST(worst == 0.0, what << ": level 0 differs from the matrix by " << worst);
    }
    for (std::size_t l = 0; l + 1 < lv.size(); ++l) {
        const long long n = lv[l].rows, nc = lv[l + 1].rows;
        std::vector<long long> pi, pj;
        std::vector<double> pv;
        m.prolongator_triplets(int(l), pi, pj, pv);
        std::vector<long long> ci2, cj2;
        std::vector<double> cv2;
        m.level_triplets(int(l) + 1, ci2, cj2, cv2);
        const std::vector<double> p = gather_dense(comm, pi, pj, pv, n, nc);
        const std::vector<double> got = gather_dense(comm, ci2, cj2, cv2, nc, nc);
        // reference: Pᵀ (A P), dense
        std::vector<double> ap(std::size_t(n * nc), 0.0), ref(std::size_t(nc * nc), 0.0);
        for (long long r = 0; r < n; ++r)
            for (long long k = 0; k < n; ++k) {
                const double x = a[std::size_t(r * n + k)];
                if (x == 0) continue;
                for (long long J = 0; J < nc; ++J)
                    ap[std::size_t(r * nc + J)] += x * p[std::size_t(k * nc + J)];
            }
        double scale = 0;
        for (long long r = 0; r < n; ++r)
            for (long long I = 0; I < nc; ++I) {
                const double x = p[std::size_t(r * nc + I)];
                if (x == 0) continue;
                for (long long J = 0; J < nc; ++J)
                    ref[std::size_t(I * nc + J)] += x * ap[std::size_t(r * nc + J)];
            }
        double worst = 0;
        for (std::size_t k = 0; k < ref.size(); ++k) {
            worst = std::max(worst, std::abs(ref[k] - got[k]));
            scale = std::max(scale, std::abs(ref[k]));
        }
        BOOST_TEST(worst <= 1e-11 * scale,
                   what << ": level " << l + 1 << " max |A_c - P^T A P| = " << worst);
        a = got;
    }
}

/// (w, B u) = (u, B w) for the cycle B of m on two vectors of this rank's rows [r0, r1).
void check_cycle_is_symmetric(const Communicator& comm, const std::shared_ptr<const Executor>& exec,
                              const DistAmg<double>& m, index_t r0, index_t r1,
                              const std::string& what)
{
    const index_t n = r1 - r0;
    std::vector<double> u(static_cast<std::size_t>(n)), w(static_cast<std::size_t>(n));
    for (index_t k = 0; k < n; ++k) {
        const double g = double(r0 + k);
        u[std::size_t(k)] = std::sin(0.37 * g) + 0.1;
        w[std::size_t(k)] = std::cos(0.11 * g * g);
    }
    const Array<double> du = to_exec(u, exec), dw = to_exec(w, exec);
    Array<double> bu(exec, static_cast<std::size_t>(n)), bw(exec, static_cast<std::size_t>(n));
    m.apply(du.data(), bu.data());
    m.apply(dw.data(), bw.data());
    const double wbu = global_dot(comm, w, to_host(bu));
    const double ubw = global_dot(comm, u, to_host(bw));
    BOOST_TEST(std::abs(wbu - ubw) <= 1e-10 * std::max(std::abs(wbu), std::abs(ubw)),
               what << ": (w, B u) = " << wbu << ", (u, B w) = " << ubw);
}

/// f(case, system, name, options) for Nc 1 (CG) and Nc 2 (BiCGStab) on the 12 x 10 systems,
/// the options' coarse size 40 (several levels).
template <class F>
void for_amg_cases(F f)
{
    const auto comm = world();
    const auto exec = rank_executor();
    for (const CoarseCase c :
         {CoarseCase{1, PcType::amg, true}, CoarseCase{2, PcType::amg, false}}) {
        const CoarseSystem cs = coarse_system(comm, exec, c, 12, 10);
        AmgOptions o;
        o.coarse_size = 40;
        f(c, cs, "Nc " + std::to_string(c.nc), o);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(amg_over_the_ranks_is_galerkin_level_by_level_and_beats_amg_per_rank)
{
    // One AMG hierarchy over the ranks (dist::DistAmg): level 0 is the whole matrix, every
    // coarser level is Pᵀ A P of the level above computed from the gathered whole (dense,
    // apart from the distributed assembly, P smoothed across the ranks), the V-cycle is
    // symmetric (CG: its restriction is its prolongation's transpose over the ranks), and
    // CG/BiCGStab meet the tolerance with the known solution in no more iterations than with each
    // rank's own AMG of its diagonal block (block Jacobi over the ranks).
    const auto comm = world();
    const auto exec = rank_executor();
    for (const CoarseCase c : {CoarseCase{1, PcType::amg, true}, CoarseCase{1, PcType::amg, false},
                               CoarseCase{2, PcType::amg, false}}) {
        const CoarseSystem cs = coarse_system(comm, exec, c, 12, 10);
        const std::string what = "Nc " + std::to_string(c.nc) + (c.cg ? " cg" : " bicgstab");
        AmgOptions o;
        o.coarse_size = 40;  // several levels on these small systems
        const DistAmg<double> m(comm->comm(), exec, cs.split.view(), cs.rs.r0, c.nc, o);
        const auto& lv = m.levels();
        BOOST_TEST_REQUIRE(lv.size() >= 3u, what << ": " << m.describe());
        BOOST_TEST(lv[0].rows == cs.whole.rows, what);
        BOOST_TEST(m.describe().find("AMG over") != std::string::npos, m.describe());
        check_levels_are_galerkin(*comm, m, cs.whole, what);
        // the V-cycle of a symmetric matrix is symmetric: (w, B u) = (u, B w)
        if (c.cg) check_cycle_is_symmetric(*comm, exec, m, cs.rs.r0, cs.rs.r1, what);
        const int per_rank = solve_to_known(*cs.op, *cs.pc, cs.rs, exec, c.cg, what);
        const int over = solve_to_known(*cs.op, m, cs.rs, exec, c.cg, what);
        if (comm->rank() == 0)
            std::printf(
                "AMG over %d ranks, %s: %d iterations (%zu levels, complexity %.2f); "
                "AMG per rank: %d\n",
                comm->size(), what.c_str(), over, lv.size(), m.operator_complexity(), per_rank);
        // one rank: the same method as AMG per rank (whose coarsest level and, for Nc > 1,
        // smoother differ); several: fewer iterations for a pressure system
        if (comm->size() == 1)
            BOOST_TEST(over <= per_rank + 3, what << ": " << over << " iterations, " << per_rank
                                                  << " with the one-rank AMG");
        else if (c.nc == 1)
            BOOST_TEST(over <= per_rank, what << ": " << over << " iterations over the ranks, "
                                              << per_rank << " with AMG per rank");
        // new values (scaled by 2): the hierarchy again, and the cycle halves
        DistAmg<double> mu(comm->comm(), exec, cs.split.view(), cs.rs.r0, c.nc, o);
        SplitOf twice = cs.split;
        for (double& x : twice.dv) x *= 2;
        for (double& x : twice.ov) x *= 2;
        mu.update_values(twice.view());
        const Array<double> b = to_exec(cs.rs.sys.b, exec);
        Array<double> z1(exec, std::size_t(cs.rs.r1 - cs.rs.r0)), z2(exec, z1.size());
        m.apply(b.data(), z1.data());
        mu.apply(b.data(), z2.data());
        const std::vector<double> h1 = to_host(z1), h2 = to_host(z2);
        double diff = 0, size = 0;
        for (std::size_t k = 0; k < h1.size(); ++k) {
            diff = std::max(diff, std::abs(h1[k] - 2 * h2[k]));
            size = std::max(size, std::abs(h1[k]));
        }
        BOOST_TEST(diff <= 1e-10 * size, what << ": after update_values(2 A): " << diff);
    }
}

BOOST_AUTO_TEST_CASE(amg_over_the_ranks_values_only_update_keeps_p_and_redoes_the_galerkin_products)
{
    // A Newton step's update (dist::DistAmg::update_values, same pattern, new values: the
    // diagonal scaled row by row, the couplings by 0.7): P is kept exactly, level 0 is the new
    // matrix and every coarser level is Pᵀ A' P of the gathered level above with that P; the
    // cycle stays symmetric. Another pattern (one coupling gone on both sides): the whole
    // setup again (no refresh counted), again Galerkin level by level.
    const auto comm = world();
    const auto exec = rank_executor();
    for_amg_cases(
        [&](const CoarseCase& c, const CoarseSystem& cs, const std::string& what, AmgOptions o) {
            DistAmg<double> m(comm->comm(), exec, cs.split.view(), cs.rs.r0, c.nc, o);
            BOOST_TEST_REQUIRE(m.levels().size() >= 3u, what << ": " << m.describe());
            std::vector<std::vector<long long>> pi0(m.levels().size() - 1), pj0(pi0.size());
            std::vector<std::vector<double>> pv0(pi0.size());
            for (std::size_t l = 0; l < pi0.size(); ++l)
                m.prolongator_triplets(int(l), pi0[l], pj0[l], pv0[l]);
            // A': the same pattern, other values (symmetric where A is)
            auto rp = cs.whole.row_ptr.to_vector();
            auto ci = cs.whole.col_idx.to_vector();
            auto va = cs.whole.values.to_vector();
            for (index_t r = 0; r < cs.whole.rows; ++r)
                for (offset_t k = rp[r]; k < rp[r + 1]; ++k)
                    va[std::size_t(k)] *= ci[k] == r ? 1.5 + 0.5 * std::sin(0.3 * double(r)) : 0.7;
            const Csr<double> next{cs.whole.rows, cs.whole.cols, Array<offset_t>(rp),
                                   Array<index_t>(ci), Array<double>(va)};
            const SplitOf sn = split_of(next, cs.rs.r0, cs.rs.r1);
            m.update_values(sn.view());
            BOOST_TEST(m.refreshes() == 1, what << ": " << m.describe());
            BOOST_TEST(m.describe().find("values-only update") != std::string::npos, m.describe());
            for (std::size_t l = 0; l < pi0.size(); ++l) {
                std::vector<long long> pi, pj;
                std::vector<double> pv;
                m.prolongator_triplets(int(l), pi, pj, pv);
                BOOST_TEST((pi == pi0[l] && pj == pj0[l] && pv == pv0[l]),
                           what << ": P of level " << l << " changed at a values-only update");
            }
            check_levels_are_galerkin(*comm, m, next, what + " after the values-only update");
            if (c.cg) check_cycle_is_symmetric(*comm, exec, m, cs.rs.r0, cs.rs.r1, what);
            // another pattern: the coupling between the middle row and the next, both ways
            const index_t a = cs.whole.rows / 2, b = a + 1;
            std::vector<offset_t> rp2{0};
            std::vector<index_t> ci2;
            std::vector<double> va2;
            for (index_t r = 0; r < next.rows; ++r) {
                for (offset_t k = rp[r]; k < rp[r + 1]; ++k) {
                    if ((r == a && ci[k] == b) || (r == b && ci[k] == a)) continue;
                    ci2.push_back(ci[k]);
                    va2.push_back(va[std::size_t(k)]);
                }
                rp2.push_back(offset_t(ci2.size()));
            }
            BOOST_TEST_REQUIRE(ci2.size() + 2 == ci.size(), what << ": no coupling (a, a + 1)");
            const Csr<double> other{next.rows, next.cols, Array<offset_t>(rp2), Array<index_t>(ci2),
                                    Array<double>(va2)};
            const SplitOf so = split_of(other, cs.rs.r0, cs.rs.r1);
            m.update_values(so.view());
            BOOST_TEST(m.refreshes() == 1, what << ": another pattern was refreshed on the kept P");
            check_levels_are_galerkin(*comm, m, other, what + " after a pattern change");
        });
}

BOOST_AUTO_TEST_CASE(cpr_over_the_ranks_has_the_whole_pressure_matrix_and_beats_cpr_per_rank)
{
    // CPR whose pressure stage is the AMG over the ranks (dist::DistCpr) on the coupled
    // reservoir system (Nc = 2 and 3): its pressure matrix, gathered, is cpr_pressure_matrix
    // of the whole matrix (the weights are each cell's own), and BiCGStab meets the tolerance
    // with the known solution in no more iterations than with CPR of each rank's block (on
    // one rank within 3 of it: the same method with the AMG over the ranks).
    const auto comm = world();
    const auto exec = rank_executor();
    for (const index_t nc : {index_t(2), index_t(3)}) {
        const CoarseSystem cs =
            coarse_system(comm, exec, CoarseCase{nc, PcType::cpr, false}, 12, 10);
        const std::string what = "Nc " + std::to_string(nc);
        CprOptions o;
        o.amg.coarse_size = 40;
        const DistCpr<double> m(comm->comm(), cs.op, cs.split.view(), cs.rs.r0, nc, o);
        BOOST_TEST(m.describe().find("CPR over the ranks") != std::string::npos, m.describe());
        std::vector<long long> i, j;
        std::vector<double> v;
        m.pressure_amg().level_triplets(0, i, j, v);
        const long long cells = cs.whole.rows / nc;
        const std::vector<double> got = gather_dense(*comm, i, j, v, cells, cells);
        const Csr<double> ref = cpr_pressure_matrix(cs.whole, nc, 0);
        std::vector<double> want(got.size(), 0.0);
        for (index_t r = 0; r < ref.rows; ++r)
            for (offset_t k = ref.row_ptr[r]; k < ref.row_ptr[r + 1]; ++k)
                want[std::size_t(r * cells + ref.col_idx[k])] += ref.values[k];
        double worst = 0, scale = 0;
        for (std::size_t k = 0; k < want.size(); ++k) {
            worst = std::max(worst, std::abs(want[k] - got[k]));
            scale = std::max(scale, std::abs(want[k]));
        }
        BOOST_TEST(worst <= 1e-12 * scale, what << ": max |A_p - whole A_p| = " << worst);
        const int per_rank = solve_to_known(*cs.op, *cs.pc, cs.rs, exec, false, what);
        const int over = solve_to_known(*cs.op, m, cs.rs, exec, false, what);
        if (comm->rank() == 0)
            std::printf("CPR over %d ranks, %s: %d iterations; CPR per rank: %d\n", comm->size(),
                        what.c_str(), over, per_rank);
        if (comm->size() == 1)
            BOOST_TEST(over <= per_rank + 3, what << ": " << over << " against " << per_rank);
        else
            BOOST_TEST(over <= per_rank, what << ": " << over << " iterations over the ranks, "
                                              << per_rank << " with CPR per rank");
        // new values, same pattern: the pressure matrix of the new whole, its AMG refreshed on
        // the kept P (no new hierarchy)
        auto rp = cs.whole.row_ptr.to_vector();
        auto ci = cs.whole.col_idx.to_vector();
        auto va = cs.whole.values.to_vector();
        for (index_t r = 0; r < cs.whole.rows; ++r)
            for (offset_t k = rp[r]; k < rp[r + 1]; ++k)
                va[std::size_t(k)] *= ci[k] / nc == r / nc ? 1.2 + 0.3 * std::cos(double(r)) : 0.8;
        const Csr<double> next{cs.whole.rows, cs.whole.cols, Array<offset_t>(rp),
                               Array<index_t>(ci), Array<double>(va)};
        const SplitOf sn = split_of(next, cs.rs.r0, cs.rs.r1);
        DistCpr<double> mu(comm->comm(), cs.op, cs.split.view(), cs.rs.r0, nc, o);
        mu.update_values(sn.view());
        BOOST_TEST(mu.pressure_amg().refreshes() == 1, what << ": " << mu.describe());
        mu.pressure_amg().level_triplets(0, i, j, v);
        const std::vector<double> got2 = gather_dense(*comm, i, j, v, cells, cells);
        const Csr<double> ref2 = cpr_pressure_matrix(next, nc, 0);
        std::vector<double> want2(got2.size(), 0.0);
        for (index_t r = 0; r < ref2.rows; ++r)
            for (offset_t k = ref2.row_ptr[r]; k < ref2.row_ptr[r + 1]; ++k)
                want2[std::size_t(r * cells + ref2.col_idx[k])] += ref2.values[k];
        double worst2 = 0;
        for (std::size_t k = 0; k < want2.size(); ++k)
            worst2 = std::max(worst2, std::abs(want2[k] - got2[k]));
        BOOST_TEST(worst2 <= 1e-12 * scale,
                   what << ": after update_values: max |A_p - whole A_p| = " << worst2);
    }
}

BOOST_AUTO_TEST_CASE(amg_over_the_ranks_truncates_p_to_its_largest_entries_keeping_row_sums)
{
    // AmgOptions::prolongation_max_entries (hypre's P_max_elmts): every row of the smoothed P
    // keeps at most that many entries, the largest in magnitude of the untruncated row (the
    // aggregates, made before P, are the same), scaled so that the row's sum stays; the
    // coarser levels are still Pᵀ A P with that P, the cycle symmetric, and the solves meet the
    // tolerance with the known solution.
    const auto comm = world();
    const auto exec = rank_executor();
    for_amg_cases(
        [&](const CoarseCase& c, const CoarseSystem& cs, const std::string& what, AmgOptions o) {
            o.prolongation_max_entries = 0;
            const DistAmg<double> all(comm->comm(), exec, cs.split.view(), cs.rs.r0, c.nc, o);
            o.prolongation_max_entries = 2;
            const DistAmg<double> cut(comm->comm(), exec, cs.split.view(), cs.rs.r0, c.nc, o);
            BOOST_TEST(all.describe().find("P at most") == std::string::npos, all.describe());
            BOOST_TEST(cut.describe().find("P at most 2 entries a row") != std::string::npos,
                       cut.describe());
            const long long n = all.levels()[0].rows;
            BOOST_TEST_REQUIRE(all.levels().size() >= 2u, what);
            BOOST_TEST_REQUIRE(cut.levels()[1].rows == all.levels()[1].rows, what);
            const long long nc = all.levels()[1].rows;
            std::vector<long long> i, j;
            std::vector<double> v;
            all.prolongator_triplets(0, i, j, v);
            const std::vector<double> p0 = gather_dense(*comm, i, j, v, n, nc);
            cut.prolongator_triplets(0, i, j, v);
            const std::vector<double> p2 = gather_dense(*comm, i, j, v, n, nc);
            long long cut_rows = 0;
            for (long long r = 0; r < n; ++r) {
                const double* a = p0.data() + r * nc;
                const double* b = p2.data() + r * nc;
                int kept = 0, had = 0;
                double sum_a = 0, sum_b = 0, kept_a = 0, least_kept = 1e300, most_dropped = 0;
                for (long long J = 0; J < nc; ++J) {
                    sum_a += a[J];
                    sum_b += b[J];
                    if (a[J] != 0) ++had;
                    if (b[J] != 0) {
                        ++kept;
                        kept_a += a[J];
                        least_kept = std::min(least_kept, std::abs(a[J]));
                        BOOST_TEST(a[J] != 0.0, what << ": row " << r << " gained column " << J);
                    } else if (a[J] != 0)
                        most_dropped = std::max(most_dropped, std::abs(a[J]));
                }
                BOOST_TEST(kept <= 2, what << ": row " << r << " keeps " << kept << " entries");
                if (had <= 2) {
                    for (long long J = 0; J < nc; ++J)
                        BOOST_TEST(b[J] == a[J], what << ": row " << r << " changed");
                    continue;
                }
                ++cut_rows;
                BOOST_TEST(std::abs(sum_b - sum_a) <= 1e-12 * std::max(1.0, std::abs(sum_a)),
                           what << ": row " << r << " sums to " << sum_b << ", was " << sum_a);
                BOOST_TEST(least_kept >= most_dropped, what << ": row " << r << " dropped "
                                                            << most_dropped << " and kept "
                                                            << least_kept);
                for (long long J = 0; J < nc; ++J)  // the kept entries, scaled alike
                    if (b[J] != 0)
                        BOOST_TEST(std::abs(b[J] - a[J] * sum_a / kept_a) <= 1e-12 * std::abs(b[J]),
                                   what << ": row " << r << " column " << J);
            }
            BOOST_TEST(cut_rows > 0, what << ": no row of P had more than 2 entries");
            check_levels_are_galerkin(*comm, cut, cs.whole, what + " truncated");
            if (c.cg) check_cycle_is_symmetric(*comm, exec, cut, cs.rs.r0, cs.rs.r1, what);
            solve_to_known(*cs.op, cut, cs.rs, exec, c.cg, what + " truncated");
        });
}

BOOST_AUTO_TEST_CASE(amg_over_the_ranks_refuses_a_zero_diagonal_on_every_rank)
{
    const auto comm = world();
    const auto exec = rank_executor();
    const CoarseSystem cs = coarse_system(comm, exec, CoarseCase{1, PcType::amg, true}, 6, 5);
    SplitOf bad = cs.split;
    if (comm->rank() == comm->size() - 1)  // the last row of the last rank
        for (index_t k = bad.dp[bad.dp.size() - 2]; k < bad.dp.back(); ++k)
            if (bad.dc[std::size_t(k)] == index_t(bad.dp.size()) - 2) bad.dv[std::size_t(k)] = 0;
    const long long last = cs.whole.rows;
    BOOST_CHECK_EXCEPTION(DistAmg<double>(comm->comm(), exec, bad.view(), cs.rs.r0, 1), InputError,
                          [last](const InputError& e) {
                              const std::string w = e.what();
                              return w.find("zero diagonal") != std::string::npos &&
                                     w.find("row " + std::to_string(last)) != std::string::npos;
                          });
    // new values with the zero diagonal: the same error, and the hierarchy it had stays (the
    // same cycle as before)
    DistAmg<double> m(comm->comm(), exec, cs.split.view(), cs.rs.r0, 1);
    const Array<double> b = to_exec(cs.rs.sys.b, exec);
    Array<double> z1(exec, std::size_t(cs.rs.r1 - cs.rs.r0)), z2(exec, z1.size());
    m.apply(b.data(), z1.data());
    BOOST_CHECK_THROW(m.update_values(bad.view()), InputError);
    m.apply(b.data(), z2.data());
    BOOST_TEST(to_host(z1) == to_host(z2));
    AmgOptions o;
    o.smoother = AmgSmoother::ilu0mc;
    BOOST_CHECK_THROW(DistAmg<double>(comm->comm(), exec, cs.split.view(), cs.rs.r0, 1, o),
                      InputError);
}

BOOST_AUTO_TEST_CASE(symmetry_over_the_ranks_agrees_with_the_whole_matrix)
{
    // dist::check_symmetry from each rank's split rows against check_symmetry of the whole
    // matrix on one process: the symmetric pressure matrix (Nc = 1), the coupled one (Nc = 3),
    // and the pressure matrix with one coupling between ranks changed on one side only
    const auto comm = world();
    for (int c = 0; c < 3; ++c) {
        const index_t nc = c == 1 ? 3 : 1;
        HeptaSpec s = spec_of(6, 5, 2 * comm->size() + 2, nc, false, HeptaModel::reservoir);
        const RankSystem rs = rank_system(s, *comm);
        Csr<double> whole = csr_from_coo(to_coo(generate_hepta_bdia<double>(s)));
        if (c == 2) {  // a(i, i + plane) of the last row of rank 0's rows, its mirror left as it is
            const index_t i = comm->size() > 1 ? rs.part.begin(1) - 1 : whole.rows / 2;
            const index_t j = std::min(whole.rows - 1, i + 6 * 5);
            auto rp = whole.row_ptr.to_vector();
            auto ci = whole.col_idx.to_vector();
            auto va = whole.values.to_vector();
            for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
                if (ci[k] == j) va[k] *= 1.5;
            whole.values = Array<double>(std::move(va));
        }
        const SplitOf split = split_of(whole, rs.r0, rs.r1);
        const SymmetryCheck got = dist::check_symmetry(comm->comm(), split.view(), rs.r0, 1e-8);
        const std::vector<offset_t> rp64 = whole.row_ptr.to_vector();
        const std::vector<index_t> rp(rp64.begin(), rp64.end());
        CsrView wv;
        wv.rows = whole.rows;
        wv.cols = whole.cols;
        wv.row_ptr = rp.data();
        wv.col_idx = whole.col_idx.data();
        wv.values = whole.values.data();
        const SymmetryCheck ref = check_symmetry(wv, 1e-8);
        const std::string what =
            "case " + std::to_string(c) + ", " + std::to_string(comm->size()) + " ranks";
        BOOST_TEST(got.symmetric == ref.symmetric, what);
        if (c == 0) BOOST_TEST(got.symmetric, what);
        if (c == 2) BOOST_TEST(!got.symmetric, what);
        if (!ref.symmetric) {
            BOOST_TEST(std::abs(got.worst - ref.worst) <= 1e-12 * ref.worst, what);
            // the pair (either order) holds the values found
            BOOST_TEST(std::abs(std::abs(got.aij - got.aji) /
                                    std::max(std::abs(got.aij), std::abs(got.aji)) -
                                got.worst) <= 1e-12,
                       what);
        }
        if (c == 2 && comm->size() > 1) {
            const index_t i = rs.part.begin(1) - 1;
            BOOST_TEST(((got.i == i && got.j == i + 30) || (got.j == i && got.i == i + 30)),
                       what << ": the pair (" << got.i << ", " << got.j << ")");
        }
    }
}

BOOST_AUTO_TEST_CASE(bad_partitions_are_errors)
{
    const auto comm = world();
    const auto exec = rank_executor();
    const HeptaSpec s = spec_of(4, 4, 2 * comm->size(), 2, true, HeptaModel::uniform);
    const RowPartition part = partition_planes(s.I, 32, comm->size());
    const index_t r0 = part.begin(comm->rank());
    // a block that is not this rank's rows
    BOOST_CHECK_THROW((DistributedBdia<double, double>(
                          comm, part, generate_hepta_bdia_rows<double>(s, r0, r0 + 2), exec)),
                      DimensionMismatch);
    BOOST_CHECK_THROW(generate_hepta_bdia_rows<double>(s, 1, 4), InputError);  // not on a cell
    BOOST_CHECK_THROW(parse_halo_model("carrier-pigeon"), InputError);
    if (exec->is_cpu())  // a GPU model for CPU vectors
        BOOST_CHECK_THROW(
            (DistributedBdia<double, double>(
                comm, part, generate_hepta_bdia_rows<double>(s, r0, part.end(comm->rank())), exec,
                DistOptions{HaloModel::nccl})),
            Error);
}

// ---- the general row-split operator (DistributedCsr): a matrix that is no hepta grid's ----

namespace {

/// y = alpha A x + beta y0 on rows [r0, r1) of the whole host COO a, in long double: the
/// reference, independent of the split, the plans and the CSR kernels.
std::vector<long double> whole_product(const Coo<double>& a, const std::vector<double>& x,
                                       double alpha, double beta, const std::vector<double>& y0,
                                       index_t r0, index_t r1)
{
    std::vector<long double> y(std::size_t(r1 - r0), 0.0L);
    for (offset_t k = 0; k < a.nnz(); ++k)
        if (a.row[k] >= r0 && a.row[k] < r1)
            y[std::size_t(a.row[k] - r0)] += (long double)a.val[k] * x[std::size_t(a.col[k])];
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = alpha * y[i] + beta * y0[i];
    return y;
}

/// A hepta system whose unknowns are numbered in a random order: no grid's numbering, as a
/// host without a DMDA (or an unstructured grid) hands it over.
Coo<double> scrambled_hepta(const HeptaSpec& s, unsigned seed)
{
    const Coo<double> g = generate_hepta_coo<double>(s);
    std::vector<index_t> perm(std::size_t(g.rows));
    for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = index_t(i);
    std::mt19937 gen(seed);
    std::shuffle(perm.begin(), perm.end(), gen);
    std::vector<index_t> r(std::size_t(g.nnz())), c(std::size_t(g.nnz()));
    for (offset_t k = 0; k < g.nnz(); ++k) {
        r[std::size_t(k)] = perm[std::size_t(g.row[k])];
        c[std::size_t(k)] = perm[std::size_t(g.col[k])];
    }
    return Coo<double>{g.rows, g.cols, Array<index_t>(std::move(r)), Array<index_t>(std::move(c)),
                       Array<double>(g.val.to_vector())};
}

/// Uneven contiguous ranges, rank 0 without rows on more than one rank: [0, 0), then the rest
/// split as partition_rows does over the other ranks.
std::pair<index_t, index_t> uneven_rows(index_t n, const Communicator& comm)
{
    if (comm.size() == 1) return {0, n};
    if (comm.rank() == 0) return {0, 0};
    const RowPartition p = partition_rows(n, 1, comm.size() - 1);
    return {p.begin(comm.rank() - 1), p.end(comm.rank() - 1)};
}

template <class MT, class VT>
void check_distributed_csr_product(const Coo<double>& a, index_t r0, index_t r1, double tol)
{
    const auto comm = world();
    const auto exec = rank_executor();  // a GPU's with HEPTANE_TEST_DEVICE=cuda
    const OwnedSplitRows s = split_coo_rows(a, r0, r1);
    DistributedCsr<MT, VT> op(comm, s.view(), exec);
    BOOST_TEST(op.rows() == r1 - r0);
    // y = 1.5 A x - 0.5 y on the operator's executor, back on the host
    const auto product = [&](const DistributedCsr<MT, VT>& o, const std::vector<VT>& xv,
                             std::vector<VT>& yv) {
        Array<VT> xd = to_exec(xv, exec), yd = to_exec(yv, exec);
        o.apply(VT(1.5), xd.data(), VT(-0.5), yd.data());
        yv = to_host(yd);
    };
    BOOST_TEST(op.partition().global_rows() == a.rows);
    std::vector<double> x(std::size_t(a.rows)), y0(std::size_t(r1 - r0));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * double(i) + 0.1);
    for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = std::cos(0.21 * double(i + r0));
    // the operator rounds its values to MT and reads x as VT: the reference sees the same
    const std::vector<VT> xl(x.begin() + r0, x.begin() + r1);
    std::vector<VT> y(y0.begin(), y0.end());
    product(op, xl, y);
    Coo<double> ar = a;  // the values as the operator holds them
    std::vector<double> av = a.val.to_vector();
    for (double& v : av) v = double(MT(v));
    ar.val = Array<double>(std::move(av));
    std::vector<double> xr(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) xr[i] = double(VT(x[i]));
    const std::vector<long double> ref = whole_product(ar, xr, 1.5, -0.5, y0, r0, r1);
    long double scale = 1, worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        scale = std::max(scale, std::abs(ref[i]));
        worst = std::max(worst, std::abs((long double)y[i] - ref[i]));
    }
    BOOST_TEST(double(worst / scale) <= tol, "rank " << comm->rank() << ": " << op.describe());
    // the same rows with the off part's columns as positions in an ascending list of global
    // columns (PETSc's garray): the same halo, the same product bit for bit
    std::vector<index_t> garray(s.oc.begin(), s.oc.end());
    std::sort(garray.begin(), garray.end());
    garray.erase(std::unique(garray.begin(), garray.end()), garray.end());
    std::vector<index_t> pos(s.oc.size());
    for (std::size_t k = 0; k < pos.size(); ++k)
        pos[k] = index_t(std::lower_bound(garray.begin(), garray.end(), s.oc[k]) - garray.begin());
    SplitRows g = s.view();
    g.off.col_idx = pos.data();
    g.off_cols = garray.data();
    DistributedCsr<MT, VT> opg(comm, g, exec);
    BOOST_TEST(opg.halo_size() == op.halo_size());
    std::vector<VT> yg(y0.begin(), y0.end());
    product(opg, xl, yg);
    BOOST_TEST(yg == y);
}

}  // namespace

BOOST_AUTO_TEST_CASE(distributed_csr_product_matches_the_whole_matrix)
{
    const auto comm = world();
    // random pattern: couplings anywhere, rows of 1 to 9 entries; and a hepta grid in a random
    // numbering; each split evenly and unevenly (one rank without rows)
    const Coo<double> r = test::random_coo<double>(157, 157, 1, 9, 11);
    const Coo<double> h = scrambled_hepta(spec_of(6, 5, 4, 2, false, HeptaModel::reservoir), 5);
    for (const Coo<double>* a : {&r, &h}) {
        const RowPartition even = partition_rows(a->rows, 1, comm->size());
        const auto [u0, u1] = uneven_rows(a->rows, *comm);
        for (const auto& [r0, r1] :
             {std::pair<index_t, index_t>{even.begin(comm->rank()), even.end(comm->rank())},
              std::pair<index_t, index_t>{u0, u1}}) {
            check_distributed_csr_product<double, double>(*a, r0, r1, 1e-14);
            check_distributed_csr_product<float, double>(*a, r0, r1, 1e-14);
            check_distributed_csr_product<float, float>(*a, r0, r1, 2e-6);
        }
    }
}

BOOST_AUTO_TEST_CASE(distributed_csr_solves_a_system_in_no_grid_numbering)
{
    const auto comm = world();
    const HeptaSpec spec = spec_of(8, 6, 5, 2, false, HeptaModel::reservoir);
    const Coo<double> a = scrambled_hepta(spec, 3);
    const RowPartition part = partition_rows(a.rows, 1, comm->size());
    const index_t r0 = part.begin(comm->rank()), r1 = part.end(comm->rank());
    const OwnedSplitRows s = split_coo_rows(a, r0, r1);
    const auto exec = rank_executor();
    DistributedCsr<double, double> op(comm, s.view(), exec);
    // b = A x_true with x_true known, over the whole matrix
    std::vector<double> xt(std::size_t(a.rows));
    for (std::size_t i = 0; i < xt.size(); ++i) xt[i] = 1.0 + 0.5 * std::sin(double(i));
    const std::vector<long double> bl =
        whole_product(a, xt, 1.0, 0.0, std::vector<double>(std::size_t(r1 - r0), 0.0), r0, r1);
    const std::vector<double> b(bl.begin(), bl.end());
    // the rank's preconditioner from its diagonal block, as on one process
    const Csr<double> diag{
        r1 - r0, r1 - r0, Array<offset_t>(std::vector<offset_t>(s.dp.begin(), s.dp.end())),
        Array<index_t>(std::vector<index_t>(s.dc)), Array<double>(std::vector<double>(s.dv))};
    for (SolverType st : {SolverType::bicgstab, SolverType::gmres}) {
        const auto m = make_preconditioner<double>(
            test::testing_on_gpu() ? PcType::ilu0_mc : PcType::ilu0, diag, 1, exec);
        SolverOptions opts;
        opts.rtol = 1e-10;
        opts.max_it = 2000;
        const std::unique_ptr<Solver<double>> solver = make_solver<double>(st, opts, {});
        solver->set_operator(op);
        solver->set_preconditioner(*m);
        const Array<double> bb = to_exec(b, exec);
        Array<double> x = to_exec(std::vector<double>(std::size_t(r1 - r0), 0.0), exec);
        const Status status = solver->solve(bb, x);
        BOOST_TEST(status.converged(), solver->name() << ": " << status.summary());
        // the error against x_true over all ranks
        const std::vector<double> xh = to_host(x);
        double err = 0;
        for (std::size_t i = 0; i < xh.size(); ++i)
            err = std::max(err, std::abs(xh[i] - xt[std::size_t(r0) + i]));
        MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, comm->comm());
        BOOST_TEST(err < 1e-6, solver->name() << ": max error " << err);
    }
}

BOOST_AUTO_TEST_CASE(distributed_csr_new_values_and_bad_input)
{
    const auto comm = world();
    const Coo<double> a = test::random_coo<double>(64, 64, 2, 6, 23);
    const RowPartition part = partition_rows(a.rows, 1, comm->size());
    const index_t r0 = part.begin(comm->rank()), r1 = part.end(comm->rank());
    OwnedSplitRows s = split_coo_rows(a, r0, r1);
    const auto exec = rank_executor();  // a GPU's with HEPTANE_TEST_DEVICE=cuda
    DistributedCsr<double, double> op(comm, s.view(), exec);
    const Array<double> xd = to_exec(std::vector<double>(std::size_t(r1 - r0), 1.0), exec);
    Array<double> yd(exec, xd.size());
    const auto product = [&] {
        op.apply(xd.data(), yd.data());
        return to_host(yd);
    };
    const std::vector<double> y1 = product();
    for (double& v : s.dv) v *= 2;
    for (double& v : s.ov) v *= 2;
    op.update_values(s.view());
    const std::vector<double> y2 = product();
    for (std::size_t i = 0; i < y1.size(); ++i) BOOST_TEST(y2[i] == 2 * y1[i]);
    // another pattern's values: refused, the operator unchanged
    OwnedSplitRows fewer = s;
    if (!fewer.dv.empty()) {
        fewer.dv.pop_back();
        fewer.dc.pop_back();
        fewer.dp.back() -= 1;
        BOOST_CHECK_THROW(op.update_values(fewer.view()), InputError);
    }
    BOOST_TEST(product() == y2);
    // a column of the rank's own rows in the off part (on the last rank only): InputError on
    // every rank, none left waiting
    OwnedSplitRows wrong = s;
    if (comm->rank() == comm->size() - 1 && r1 > r0) {
        wrong.oc.insert(wrong.oc.begin(), r0);
        wrong.ov.insert(wrong.ov.begin(), 1.0);
        for (std::size_t i = 1; i < wrong.op.size(); ++i) wrong.op[i] += 1;
    }
    BOOST_CHECK_THROW((DistributedCsr<double, double>(comm, wrong.view(), exec)), InputError);
    // a diagonal-block column outside the rank's rows
    OwnedSplitRows far = s;
    if (!far.dc.empty()) far.dc.front() = r1 - r0;
    BOOST_CHECK_THROW((DistributedCsr<double, double>(comm, far.view(), exec)), InputError);
}
