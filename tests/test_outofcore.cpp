// The out-of-core operator (formats/outofcore): chunking (chunk sizes that do not divide the
// rows, empty rows, a row larger than a chunk), A x and A^T x (alpha, beta in {0, 1, -1, 0.5};
// double, float, mixed) against an independent long-double product on the host and against
// the in-core operator of every format; on a GPU (test_outofcore_gpu) every residency (all
// resident, part, none; two and three stream buffers) and products queued back to back;
// MLEM and CG through the operator against the in-core operator; bad input. Chunk files
// (.hoc): written by the builder and by save_ooc_file byte for byte alike, read back entry for
// entry, products with every host budget (all blocks in memory, some, none: read from the
// file at every product) against the reference on the CPU or a GPU (with blocks streamed from
// the file), OSEM subsets over a file, and damaged files refused.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "formats/bdia/bdia.hpp"
#include "formats/matrix.hpp"
#include "formats/outofcore/outofcore.hpp"
#include "generators/hepta.hpp"
#include "generators/pet.hpp"
#include "solver/krylov.hpp"
#include "solver/mlem/mlem.hpp"
#include "solver/solve.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

/// y = alpha op(A) x + beta y in long double from the COO entries (the independent reference).
std::vector<double> reference(const Coo<double>& a, bool tr, double alpha,
                              const std::vector<double>& x, double beta,
                              const std::vector<double>& y0)
{
    const index_t ny = tr ? a.cols : a.rows;
    std::vector<long double> acc(ny, 0.0L);
    for (offset_t k = 0; k < a.nnz(); ++k) {
        const index_t i = a.row[k], j = a.col[k];
        if (tr)
            acc[j] += static_cast<long double>(a.val[k]) * x[i];
        else
            acc[i] += static_cast<long double>(a.val[k]) * x[j];
    }
    std::vector<double> y(ny);
    for (index_t i = 0; i < ny; ++i)
        y[i] = static_cast<double>(alpha * acc[i] + (beta == 0 ? 0.0L : beta * (long double)y0[i]));
    return y;
}

struct Case {
    std::string name;
    Coo<double> a;
};

std::vector<Case> cases()
{
    std::vector<Case> out;
    // rectangular, rows of 0..40 entries (empty rows included), 1237 rows: no chunk size
    // below divides it evenly
    out.push_back({"random 1237x611", test::random_coo<double>(1237, 611, 0, 40, 7)});
    HeptaSpec s;
    s.J = 9;
    s.H = 7;
    s.I = 5;
    s.Nc = 2;
    out.push_back({"hepta 9x7x5 Nc 2", generate_hepta_coo<double>(s)});
    PetSpec p;
    p.detectors = 48;
    p.image = 20;
    out.push_back({"pet 48 detectors 20x20", pet_system_matrix(p)});
    return out;
}

template <class VT>
std::vector<VT> run_product(const Operator<VT>& op, bool tr, VT alpha, const std::vector<VT>& x,
                            VT beta, const std::vector<VT>& y0)
{
    auto exec = op.executor();
    Array<VT> xd = Array<VT>(x).to(exec);
    Array<VT> yd = Array<VT>(y0).to(exec);
    if (tr)
        op.apply_transpose(alpha, xd.data(), beta, yd.data());
    else
        op.apply(alpha, xd.data(), beta, yd.data());
    return yd.to_vector();
}

template <class MT, class VT>
void check_against_reference(const Coo<double>& a, const OutOfCoreOperator<MT, VT>& op,
                             const std::string& what, double tol)
{
    const double coef[4][2] = {{1, 0}, {-1, 1}, {0.5, -1}, {0, 0.5}};
    for (bool tr : {false, true}) {
        const index_t nx = tr ? a.rows : a.cols, ny = tr ? a.cols : a.rows;
        const auto xd = test::random_vector<double>(nx, 11);
        auto y0d = test::random_vector<double>(ny, 12);
        const std::vector<VT> x(xd.begin(), xd.end()), y0(y0d.begin(), y0d.end());
        const std::vector<double> xr(x.begin(), x.end()), y0r(y0.begin(), y0.end());
        for (const auto& c : coef) {
            const auto got = run_product<VT>(op, tr, VT(c[0]), x, VT(c[1]), y0);
            const auto want = reference(a, tr, c[0], xr, c[1], y0r);
            const double err = test::rel_max_diff(got, want);
            BOOST_TEST(err <= tol, what << (tr ? " A^T x" : " A x") << " alpha " << c[0] << " beta "
                                        << c[1] << ": rel. error " << err);
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(outofcore)

BOOST_AUTO_TEST_CASE(chunks_cover_the_rows_in_order_within_the_chunk_size)
{
    for (const auto& c : cases()) {
        for (std::size_t chunk :
             {std::size_t(100), std::size_t(1000), std::size_t(4097), std::size_t(1) << 20}) {
            const OocMatrix<double> m = make_ooc_matrix<double>(c.a, chunk, false);
            BOOST_TEST(m.rows() == c.a.rows);
            BOOST_TEST(m.cols() == c.a.cols);
            BOOST_TEST(m.nnz() == c.a.nnz());
            index_t next = 0;
            offset_t nnz = 0;
            std::size_t bytes = 0, largest = 0;
            for (const auto& k : m.chunks()) {
                BOOST_TEST(k.row0 == next, c.name << " chunk " << chunk);
                BOOST_TEST(k.rows >= 1);
                // a chunk past the size holds one row only (a row larger than a chunk)
                BOOST_TEST((k.bytes <= chunk || k.rows == 1), c.name << " chunk " << chunk);
                next += k.rows;
                nnz += k.nnz;
                bytes += k.bytes;
                largest = std::max(largest, k.bytes);
                // the block holds exactly the rows' entries, in order
                const auto* rp = static_cast<const std::uint32_t*>(k.data);
                const auto* col = reinterpret_cast<const std::uint32_t*>(
                    static_cast<const char*>(k.data) + k.col_off);
                const auto* val =
                    reinterpret_cast<const double*>(static_cast<const char*>(k.data) + k.val_off);
                BOOST_REQUIRE(rp[0] == 0u);
                BOOST_REQUIRE(rp[k.rows] == std::uint32_t(k.nnz));
                const offset_t first = nnz - k.nnz;
                for (offset_t e = 0; e < k.nnz; ++e) {
                    BOOST_REQUIRE(c.a.col[first + e] == index_t(col[e]));
                    BOOST_REQUIRE(c.a.val[first + e] == val[e]);
                    BOOST_REQUIRE(c.a.row[first + e] >= k.row0);
                    BOOST_REQUIRE(c.a.row[first + e] < k.row0 + k.rows);
                }
            }
            BOOST_TEST(next == c.a.rows);
            BOOST_TEST(nnz == c.a.nnz());
            BOOST_TEST(bytes == m.bytes());
            BOOST_TEST(largest == m.max_chunk_bytes());
            if (chunk == 100) BOOST_TEST(m.chunks().size() > 10u);
        }
    }
}

BOOST_AUTO_TEST_CASE(products_match_the_reference_for_every_chunk_size_and_residency)
{
    auto exec = test::test_executor();
    for (const auto& c : cases()) {
        for (std::size_t chunk : {std::size_t(300), std::size_t(4097), std::size_t(1) << 20}) {
            auto m = std::make_shared<OocMatrix<double>>(
                make_ooc_matrix<double>(c.a, chunk, exec->is_cuda()));
            for (double frac : {1.0, 0.4, 0.0})
                for (int buffers : {2, 3}) {
                    OutOfCoreOptions o;
                    o.max_resident_fraction = frac;
                    o.buffers = buffers;
                    OutOfCoreOperator<double, double> op(m, exec, o);
                    const OocLayout& L = op.layout();
                    BOOST_TEST(L.resident_bytes + L.streamed_bytes == m->bytes());
                    if (exec->is_cuda() && frac == 0.0) BOOST_TEST(L.resident_chunks == 0);
                    if (exec->is_cuda() && frac == 0.4 && m->chunks().size() > 3)
                        BOOST_TEST((L.resident_chunks > 0 && L.streamed_bytes > 0));
                    check_against_reference(c.a, op,
                                            c.name + ", chunk " + std::to_string(chunk) +
                                                ", resident " + std::to_string(frac) + ", " +
                                                std::to_string(buffers) + " buffers",
                                            1e-13);
                }
        }
    }
}

BOOST_AUTO_TEST_CASE(fp32_and_mixed_values)
{
    auto exec = test::test_executor();
    for (const auto& c : cases()) {
        OutOfCoreOptions o;
        o.chunk_bytes = 2000;
        o.max_resident_fraction = 0.5;
        auto mixed = make_out_of_core_operator<float, double>(c.a, exec, o);
        auto single = make_out_of_core_operator<float, float>(c.a, exec, o);
        // fp32 values: the reference with the values rounded to fp32 for mixed (exact products
        // in double), a loose bound for all-fp32
        Coo<double> rounded = c.a;
        for (offset_t k = 0; k < rounded.nnz(); ++k) rounded.val[k] = float(rounded.val[k]);
        check_against_reference(rounded, *mixed, c.name + " mixed", 1e-13);
        check_against_reference(c.a, *single, c.name + " single", 2e-5);
    }
}

BOOST_AUTO_TEST_CASE(products_match_every_in_core_format)
{
    auto exec = test::test_executor();
    for (const auto& c : cases()) {
        OutOfCoreOptions o;
        o.chunk_bytes = 777;
        o.max_resident_fraction = 0.3;
        auto ooc = make_out_of_core_operator<double, double>(c.a, exec, o);
        const auto x = test::random_vector<double>(c.a.cols, 3);
        const auto xt = test::random_vector<double>(c.a.rows, 4);
        const std::vector<double> y0r(c.a.rows, 0.0), y0c(c.a.cols, 0.0);
        const auto y = run_product<double>(*ooc, false, 1.0, x, 0.0, y0r);
        const auto yt = run_product<double>(*ooc, true, 1.0, xt, 0.0, y0c);
        int compared = 0;
        for (Format f : {Format::coo, Format::csr, Format::ell, Format::hyb, Format::dia,
                         Format::bsr, Format::bdia}) {
            std::vector<double> yi, yti;
            try {
                auto in = make_matrix_operator<double, double>(c.a, f, exec);
                yi = run_product<double>(*in, false, 1.0, x, 0.0, y0r);
                yti = run_product<double>(*in, true, 1.0, xt, 0.0, y0c);
            } catch (const InputError&) {
                continue;  // the matrix does not fit this format (e.g. BSR's block size)
            } catch (const NotSupported&) {
                continue;  // nor this format's kernels on this device (BDIA-GH off a grid)
            }
            ++compared;
            BOOST_TEST(test::rel_max_diff(y, yi) <= 1e-13, c.name << " A x vs " << to_string(f));
            BOOST_TEST(test::rel_max_diff(yt, yti) <= 1e-13,
                       c.name << " A^T x vs " << to_string(f));
        }
        BOOST_TEST(compared >= 4, c.name << ": " << compared << " formats compared");
    }
}

BOOST_AUTO_TEST_CASE(products_queued_back_to_back_reuse_the_buffers_safely)
{
    // Many products without a host wait between them: on a GPU each buffer is refilled only
    // after the product that read it (events), so every result must be right.
    auto exec = test::test_executor();
    const Coo<double> a = test::random_coo<double>(3001, 2003, 1, 30, 21);
    OutOfCoreOptions o;
    o.chunk_bytes = 4000;
    o.max_resident_fraction = 0.25;
    o.buffers = 2;
    auto op = make_out_of_core_operator<double, double>(a, exec, o);
    BOOST_TEST(op->layout().chunks > 20);
    const int n = 6;
    std::vector<Array<double>> xs, ys;
    for (int k = 0; k < n; ++k) {
        xs.push_back(
            Array<double>(test::random_vector<double>(k % 2 ? a.rows : a.cols, 40 + k)).to(exec));
        ys.emplace_back(exec, std::size_t(k % 2 ? a.cols : a.rows));
    }
    for (int k = 0; k < n; ++k) {
        if (k % 2)
            op->apply_transpose(1.0, xs[k].data(), 0.0, ys[k].data());
        else
            op->apply(1.0, xs[k].data(), 0.0, ys[k].data());
    }
    for (int k = 0; k < n; ++k) {
        const auto x = xs[k].to_vector();
        const auto want = reference(a, k % 2, 1.0, x, 0.0, std::vector<double>(ys[k].size()));
        BOOST_TEST(test::rel_max_diff(ys[k].to_vector(), want) <= 1e-13, "product " << k);
    }
}

BOOST_AUTO_TEST_CASE(mlem_and_cg_through_the_operator_match_in_core)
{
    auto exec = test::test_executor();
    PetSpec p;
    p.detectors = 64;
    p.image = 24;
    const PetSystem sys = make_pet_system(p);
    OutOfCoreOptions o;
    o.chunk_bytes = 5000;
    o.max_resident_fraction = 0.5;
    std::shared_ptr<const Operator<double>> ooc =
        make_out_of_core_operator<double, double>(sys.a, exec, o);
    std::shared_ptr<const Operator<double>> in =
        make_matrix_operator<double, double>(sys.a, Format::csr, exec);
    MlemOptions mo;
    mo.iterations = 8;
    std::vector<double> f[2];
    for (int k = 0; k < 2; ++k) {
        Mlem<double> em(mo);
        em.set_operator(k ? in : ooc);
        Array<double> g = Array<double>(sys.counts).to(exec);
        Array<double> fd(exec, std::size_t(sys.a.cols));
        em.solve(g, fd);
        f[k] = fd.to_vector();
    }
    BOOST_TEST(test::rel_max_diff(f[0], f[1]) <= 1e-10);

    // CG on an SPD hepta matrix (Nc 1, the reservoir model), out of core against in core
    HeptaSpec s;
    s.J = 12;
    s.H = 10;
    s.I = 8;
    s.Nc = 1;
    s.model = HeptaModel::reservoir;
    const Coo<double> a = generate_hepta_coo<double>(s);
    OutOfCoreOptions oc;
    oc.chunk_bytes = 3000;
    oc.max_resident_fraction = 0.3;
    std::shared_ptr<const Operator<double>> aooc =
        make_out_of_core_operator<double, double>(a, exec, oc);
    std::shared_ptr<const Operator<double>> ain =
        make_matrix_operator<double, double>(a, Format::csr, exec);
    SolverOptions so;
    so.rtol = 1e-10;
    so.max_it = 2000;
    std::vector<double> x[2];
    int its[2] = {0, 0};
    const auto b = test::random_vector<double>(a.rows, 5);
    for (int k = 0; k < 2; ++k) {
        auto cg = make_solver<double>(SolverType::cg, so);
        cg->set_operator(k ? ain : aooc);
        Array<double> bd = Array<double>(b).to(exec);
        Array<double> xd(exec, std::size_t(a.rows));
        const Status st = cg->solve(bd, xd);
        BOOST_TEST(st.converged());
        its[k] = st.iterations;
        x[k] = xd.to_vector();
    }
    BOOST_TEST(std::abs(its[0] - its[1]) <= 2);
    BOOST_TEST(test::rel_max_diff(x[0], x[1]) <= 1e-8);
}

BOOST_AUTO_TEST_CASE(osem_subsets_match_in_core_row_blocks)
{
    // OSEM over out-of-core subsets (groups of chunks) against OSEM over in-core CSR operators
    // of the same row blocks; every subset's products against the reference on its rows
    auto exec = test::test_executor();
    PetSpec p;
    p.detectors = 64;
    p.image = 24;
    const PetSystem sys = make_pet_system(p);
    auto m = std::make_shared<const OocMatrix<double>>(
        make_ooc_matrix<double>(sys.a, 3000, exec->is_cuda()));
    OutOfCoreOptions o;
    o.max_resident_fraction = 0.5;
    const int S = 4;
    BOOST_CHECK_THROW(
        (make_out_of_core_subsets<double, double>(m, int(m->chunks().size()) + 1, exec, o)),
        InputError);
    const auto blocks = make_out_of_core_subsets<double, double>(m, S, exec, o);
    BOOST_REQUIRE(blocks.size() == std::size_t(S));
    std::vector<std::shared_ptr<const Operator<double>>> in;
    index_t r0 = 0;
    for (const auto& b : blocks) {
        BOOST_TEST(b->rows() > 0);
        BOOST_TEST(b->cols() == sys.a.cols);
        // the block's rows of A as their own COO
        std::vector<index_t> r, c;
        std::vector<double> v;
        for (offset_t k = 0; k < sys.a.nnz(); ++k)
            if (sys.a.row[k] >= r0 && sys.a.row[k] < r0 + b->rows()) {
                r.push_back(sys.a.row[k] - r0);
                c.push_back(sys.a.col[k]);
                v.push_back(sys.a.val[k]);
            }
        const Coo<double> slice{b->rows(), sys.a.cols, Array<index_t>(std::move(r)),
                                Array<index_t>(std::move(c)), Array<double>(std::move(v))};
        const auto x = test::random_vector<double>(slice.cols, 8);
        const auto xt = test::random_vector<double>(slice.rows, 9);
        const auto y0 = test::random_vector<double>(slice.rows, 10);
        const auto y0t = test::random_vector<double>(slice.cols, 11);
        BOOST_TEST(test::rel_max_diff(run_product<double>(*b, false, 0.5, x, -1.0, y0),
                                      reference(slice, false, 0.5, x, -1.0, y0)) <= 1e-13);
        BOOST_TEST(test::rel_max_diff(run_product<double>(*b, true, 0.5, xt, -1.0, y0t),
                                      reference(slice, true, 0.5, xt, -1.0, y0t)) <= 1e-13);
        in.push_back(make_matrix_operator<double, double>(slice, Format::csr, exec));
        r0 += b->rows();
    }
    BOOST_TEST(r0 == sys.a.rows);
    MlemOptions mo;
    mo.iterations = 4;
    std::vector<double> f[2];
    for (int k = 0; k < 2; ++k) {
        Mlem<double> em(mo);
        em.set_subsets(k ? in : blocks);
        Array<double> g = Array<double>(sys.counts).to(exec);
        Array<double> fd(exec, std::size_t(sys.a.cols));
        const MlemStatus st = em.solve(g, fd);
        BOOST_TEST(st.subsets == S);
        f[k] = fd.to_vector();
    }
    BOOST_TEST(test::rel_max_diff(f[0], f[1]) <= 1e-10);
}

BOOST_AUTO_TEST_CASE(pet_system_straight_into_chunks_is_make_pet_system)
{
    PetSpec p;
    p.rings = 3;
    p.detectors = 40;
    p.image = 12;
    p.slices = 4;
    const PetSystem ref = make_pet_system(p);
    const PetOocSystem<double> sys = make_pet_ooc_system<double>(p, 3000, false);
    BOOST_TEST(sys.a.rows() == ref.a.rows);
    BOOST_TEST(sys.a.cols() == ref.a.cols);
    BOOST_TEST(sys.a.nnz() == ref.a.nnz());
    BOOST_TEST(sys.a.chunks().size() > 5u);
    BOOST_TEST(sys.scale == ref.scale);
    BOOST_TEST((sys.counts == ref.counts));
    BOOST_TEST((sys.expected == ref.expected));
    BOOST_TEST((sys.phantom == ref.phantom));
    // the same entries, row by row
    const OocMatrix<double> direct = make_ooc_matrix<double>(ref.a, 3000, false);
    BOOST_REQUIRE(direct.chunks().size() == sys.a.chunks().size());
    for (std::size_t k = 0; k < direct.chunks().size(); ++k) {
        const OocChunk &x = direct.chunks()[k], &y = sys.a.chunks()[k];
        BOOST_REQUIRE(x.bytes == y.bytes);
        BOOST_TEST(std::memcmp(x.data, y.data, x.bytes) == 0, "chunk " << k);
    }
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused)
{
    const Coo<double> a = test::random_coo<double>(50, 40, 1, 5, 2);
    BOOST_CHECK_THROW(OocBuilder<double>(10, 8, false), InputError);  // chunk below 64 bytes
    OocBuilder<double> b(10, 1000, false);
    const index_t cols[2] = {3, 10};
    const double vals[2] = {1, 2};
    BOOST_CHECK_THROW(b.append_row(cols, vals, 2), InputError);  // column 11 of 10
    OutOfCoreOptions o;
    o.buffers = 1;
    BOOST_CHECK_THROW((make_out_of_core_operator<double, double>(a, test::test_executor(), o)),
                      InputError);
    o.buffers = 2;
    o.max_resident_fraction = 1.5;
    BOOST_CHECK_THROW((make_out_of_core_operator<double, double>(a, test::test_executor(), o)),
                      InputError);
    if (test::testing_on_gpu()) {
        // a budget that cannot hold the two stream buffers
        OutOfCoreOptions t;
        t.chunk_bytes = 256;
        t.device_budget = 300;
        BOOST_CHECK_THROW((make_out_of_core_operator<double, double>(a, test::test_executor(), t)),
                          InputError);
        // unpinned chunks on a GPU
        auto m = std::make_shared<OocMatrix<double>>(make_ooc_matrix<double>(a, 1000, false));
        BOOST_CHECK_THROW((OutOfCoreOperator<double, double>(m, test::test_executor())),
                          InputError);
    }
}

namespace {
/// A fresh path under the temporary directory, removed (with its .tmp) when it goes.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string& name)
    {
        static int n = 0;
        path = (std::filesystem::temp_directory_path() /
                ("heptane_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + "_" +
                 name))
                   .string();
    }
    ~TempFile()
    {
        std::remove(path.c_str());
        std::remove((path + ".tmp").c_str());
    }
};
std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}
}  // namespace

BOOST_AUTO_TEST_CASE(chunk_files_round_trip_and_stream_from_the_file)
{
    auto exec = test::test_executor();
    for (const auto& c : cases()) {
        for (std::size_t chunk : {std::size_t(700), std::size_t(4097)}) {
            const OocMatrix<double> mem = make_ooc_matrix<double>(c.a, chunk, false);
            TempFile saved("saved.hoc"), built("built.hoc");
            save_ooc_file(mem, saved.path);
            // the builder writing as it seals: the same file, byte for byte
            {
                OocBuilder<double> b(c.a.cols, chunk, built.path);
                const std::vector<offset_t> ptr = canonical_row_ptr(c.a, "test");
                for (index_t i = 0; i < c.a.rows; ++i)
                    b.append_row(c.a.col.data() + ptr[i], c.a.val.data() + ptr[i],
                                 index_t(ptr[i + 1] - ptr[i]));
                BOOST_TEST(!std::filesystem::exists(built.path), "visible before finish()");
                const OocMatrix<double> f = b.finish();
                BOOST_TEST(f.host_bytes() == 0u);
                BOOST_TEST(f.file() == built.path);
            }
            BOOST_TEST((slurp(saved.path) == slurp(built.path)), c.name << " chunk " << chunk);
            const OocFileInfo info = ooc_file_info(saved.path);
            BOOST_TEST(info.rows == c.a.rows);
            BOOST_TEST(info.cols == c.a.cols);
            BOOST_TEST(info.nnz == c.a.nnz());
            BOOST_TEST(info.value_bytes == 8);
            BOOST_TEST(std::size_t(info.chunks) == mem.chunks().size());
            BOOST_TEST(info.bytes == mem.bytes());
            // entry for entry, blocks read from the file
            const Coo<double> back = to_coo(open_ooc_file<double>(saved.path, {0, false}));
            BOOST_TEST((back.row.host() == c.a.row.host()));
            BOOST_TEST((back.col.host() == c.a.col.host()));
            BOOST_TEST((back.val.host() == c.a.val.host()));
            // products with every host budget: none, about half, all
            for (std::size_t host : {std::size_t(0), mem.bytes() / 2, ~std::size_t(0)}) {
                OocFileOptions fo;
                fo.host_memory = host;
                fo.pinned = exec->is_cuda();
                auto m = std::make_shared<const OocMatrix<double>>(
                    open_ooc_file<double>(saved.path, fo));
                if (host == 0) BOOST_TEST(m->host_bytes() == 0u);
                if (host == ~std::size_t(0)) BOOST_TEST(m->host_bytes() == m->bytes());
                for (double frac : {0.0, 0.5}) {
                    OutOfCoreOptions o;
                    o.max_resident_fraction = frac;
                    OutOfCoreOperator<double, double> op(m, exec, o);
                    const OocLayout& L = op.layout();
                    if (host == 0 && (exec->is_cpu() || frac == 0.0))
                        BOOST_TEST(L.file_chunks == index_t(mem.chunks().size()));
                    if (host == ~std::size_t(0)) BOOST_TEST(L.file_chunks == 0);
                    check_against_reference(c.a, op,
                                            c.name + " from file, chunk " + std::to_string(chunk) +
                                                ", host " + std::to_string(host) + ", resident " +
                                                std::to_string(frac),
                                            1e-13);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(chunk_file_fp32_values_and_osem_subsets)
{
    auto exec = test::test_executor();
    PetSpec p;
    p.rings = 2;
    p.detectors = 40;
    p.image = 12;
    p.slices = 3;
    const PetSystem ref = make_pet_system(p);
    TempFile f("pet.hoc");
    const PetOocSystem<float> sys = write_pet_ooc_system<float>(p, 3000, f.path);
    BOOST_TEST((sys.counts == ref.counts));
    BOOST_TEST(sys.a.host_bytes() == 0u);
    BOOST_CHECK_THROW(open_ooc_file<double>(f.path), InputError);  // fp32 values in the file
    Coo<double> rounded = ref.a;
    for (offset_t k = 0; k < rounded.nnz(); ++k) rounded.val[k] = float(rounded.val[k]);
    OocFileOptions fo;
    fo.host_memory = 0;
    fo.pinned = exec->is_cuda();
    auto m = std::make_shared<const OocMatrix<float>>(open_ooc_file<float>(f.path, fo));
    OutOfCoreOptions o;
    o.max_resident_fraction = 0;
    check_against_reference(rounded, OutOfCoreOperator<float, double>(m, exec, o),
                            "pet fp32 from file", 1e-13);
    // OSEM over the file against OSEM over the same chunks in memory
    const auto run_osem = [&](const std::shared_ptr<const OocMatrix<float>>& mm) {
        MlemOptions mo;
        mo.iterations = 3;
        Mlem<double> em(mo);
        em.set_subsets(make_out_of_core_subsets<float, double>(mm, 3, exec, o));
        Array<double> g = Array<double>(ref.counts).to(exec);
        Array<double> x(exec, std::size_t(ref.a.cols));
        em.solve(g, x);
        return x.to_vector();
    };
    auto mem = std::make_shared<const OocMatrix<float>>(
        make_ooc_matrix<float>(ref.a, 3000, exec->is_cuda()));
    const auto xf = run_osem(m), xm = run_osem(mem);
    const double err = test::rel_max_diff(xf, xm);
    BOOST_TEST(err <= 1e-12, "OSEM from the file vs in memory: " << err);
}

BOOST_AUTO_TEST_CASE(damaged_chunk_files_are_refused)
{
    const Coo<double> a = test::random_coo<double>(300, 90, 1, 9, 5);
    TempFile good("good.hoc"), bad("bad.hoc");
    save_ooc_file(make_ooc_matrix<double>(a, 1000, false), good.path);
    const std::string bytes = slurp(good.path);
    BOOST_CHECK_THROW(ooc_file_info(good.path + ".missing"), IoError);
    // truncated: the trailer is gone
    spit(bad.path, bytes.substr(0, bytes.size() - 100));
    BOOST_CHECK_THROW(ooc_file_info(bad.path), InputError);
    // not a chunk file
    spit(bad.path, std::string(8192, 'x'));
    BOOST_CHECK_THROW(ooc_file_info(bad.path), InputError);
    // a table entry changed: the checksum
    std::string t = bytes;
    t[t.size() - 64 - 8 * 8 + 8] ^= 1;  // the last record's bytes
    spit(bad.path, t);
    BOOST_CHECK_THROW(ooc_file_info(bad.path), InputError);
    // a column index past the columns inside the first block: refused when the block is read
    std::string c = bytes;
    const OocChunk first = open_ooc_file<double>(good.path, {0, false}).chunks()[0];
    const std::uint32_t huge = 1000000;
    std::memcpy(&c[first.file_offset + first.col_off], &huge, 4);
    spit(bad.path, c);
    BOOST_CHECK_THROW(open_ooc_file<double>(bad.path), InputError);  // into memory: checked
    auto m = std::make_shared<const OocMatrix<double>>(open_ooc_file<double>(bad.path, {0, false}));
    OutOfCoreOperator<double, double> op(m, cpu_executor());
    std::vector<double> x(std::size_t(a.cols), 1.0), y(std::size_t(a.rows), 0.0);
    BOOST_CHECK_THROW(op.apply(1.0, x.data(), 0.0, y.data()), InputError);
}

BOOST_AUTO_TEST_CASE(bdia_chunks_of_hepta_matrices)
{
    auto exec = test::test_executor();
    std::vector<Case> hepta;
    for (index_t nc : {1, 2, 3, 4}) {
        HeptaSpec s;
        s.J = 7;
        s.H = 5;
        s.I = 4;
        s.Nc = nc;
        s.banded = false;  // the grid variant: BDIA-GH pads the missing face couplings
        hepta.push_back(
            {"grid hepta 7x5x4 Nc " + std::to_string(nc), generate_hepta_coo<double>(s)});
    }
    {  // one layer: 5 block diagonals (the GPU's generic BDIA path; 7 take the tuned one)
        HeptaSpec s;
        s.J = 9;
        s.H = 6;
        s.I = 1;
        s.Nc = 2;
        s.banded = false;
        hepta.push_back({"grid hepta 9x6x1 Nc 2", generate_hepta_coo<double>(s)});
    }
    HeptaSpec b;
    b.J = 6;
    b.H = 4;
    b.I = 3;
    b.Nc = 2;
    b.banded = true;
    hepta.push_back({"banded hepta 6x4x3 Nc 2", generate_hepta_coo<double>(b)});
    for (const auto& c : hepta) {
        const index_t nc = c.name.back() - '0';
        const std::vector<index_t> offs = bdia_block_offsets(c.a, nc);
        if (c.name.find("x1 ") != std::string::npos) BOOST_TEST(offs.size() == 5u);
        for (std::size_t chunk : {std::size_t(1000), std::size_t(4097), std::size_t(1) << 20}) {
            auto m = std::make_shared<const OocMatrix<double>>(
                make_ooc_matrix_bdia<double>(c.a, nc, offs, chunk, exec->is_cuda()));
            BOOST_TEST(m->nnz() == c.a.nnz());
            index_t next = 0;
            for (const auto& ch : m->chunks()) {
                BOOST_TEST(ch.row0 == next);
                BOOST_TEST(ch.rows % nc == 0);
                BOOST_TEST(ch.nc == nc);
                next += ch.rows;
            }
            BOOST_TEST(next == c.a.rows);
            if (chunk == 1000) BOOST_TEST(m->chunks().size() > 3u);
            for (double frac : {1.0, 0.4, 0.0}) {
                OutOfCoreOptions o;
                o.max_resident_fraction = frac;
                OutOfCoreOperator<double, double> op(m, exec, o);
                BOOST_TEST(op.describe().find("bdia-gh") != std::string::npos);
                check_against_reference(c.a, op,
                                        c.name + " bdia chunks " + std::to_string(chunk) +
                                            ", resident " + std::to_string(frac),
                                        1e-13);
            }
            if (chunk == 1000) {  // a row block in the middle (an OSEM subset), all resident
                const index_t k1 = static_cast<index_t>(m->chunks().size()) - 1;
                const index_t r0 = m->chunks()[1].row0, r1 = m->chunks()[k1].row0;
                std::vector<index_t> ri, ci;
                std::vector<double> vi;
                for (offset_t k = 0; k < c.a.nnz(); ++k)
                    if (c.a.row[k] >= r0 && c.a.row[k] < r1) {
                        ri.push_back(c.a.row[k] - r0);
                        ci.push_back(c.a.col[k]);
                        vi.push_back(c.a.val[k]);
                    }
                const Coo<double> sub{r1 - r0, c.a.cols, Array<index_t>(ri), Array<index_t>(ci),
                                      Array<double>(vi)};
                for (double frac : {1.0, 0.5}) {
                    OutOfCoreOptions o;
                    o.max_resident_fraction = frac;
                    check_against_reference(sub,
                                            OutOfCoreOperator<double, double>(m, exec, o, 1, k1),
                                            c.name + " bdia chunks [1, " + std::to_string(k1) +
                                                "), resident " + std::to_string(frac),
                                            1e-13);
                }
            }
            // entries back, and through a chunk file with every block read from it
            const Coo<double> back = to_coo(*m);
            BOOST_TEST((back.row.host() == c.a.row.host()));
            BOOST_TEST((back.col.host() == c.a.col.host()));
            BOOST_TEST((back.val.host() == c.a.val.host()));
            TempFile f("bdia.hoc");
            save_ooc_file(*m, f.path);
            OocFileOptions fo;
            fo.host_memory = 0;
            fo.pinned = exec->is_cuda();
            auto mf = std::make_shared<const OocMatrix<double>>(open_ooc_file<double>(f.path, fo));
            OutOfCoreOptions o;
            o.max_resident_fraction = 0.3;
            check_against_reference(c.a, OutOfCoreOperator<double, double>(mf, exec, o),
                                    c.name + " bdia chunks from a file", 1e-13);
        }
        // fp32 values; fewer bytes than CSR chunks where BDIA-GH pads nothing
        auto mixed = make_out_of_core_operator<float, double>(c.a, exec, [&] {
            OutOfCoreOptions o;
            o.chunk_bytes = 3000;
            o.max_resident_fraction = 0.5;
            o.bdia_block_size = nc;
            o.bdia_block_offsets = offs;
            return o;
        }());
        Coo<double> rounded = c.a;
        for (offset_t k = 0; k < rounded.nnz(); ++k) rounded.val[k] = float(rounded.val[k]);
        check_against_reference(rounded, *mixed, c.name + " bdia chunks mixed", 1e-13);
        if (c.name.rfind("banded", 0) == 0) {
            const auto csr = make_ooc_matrix<double>(c.a, std::size_t(1) << 20, false);
            const auto bd =
                make_ooc_matrix_bdia<double>(c.a, nc, offs, std::size_t(1) << 20, false);
            BOOST_TEST(bd.bytes() < csr.bytes(), bd.bytes() << " vs CSR " << csr.bytes());
        }
    }
    // an entry off the block offsets
    const Coo<double> r = test::random_coo<double>(40, 40, 2, 6, 3);
    BOOST_CHECK_THROW(make_ooc_matrix_bdia<double>(r, 1, {-1, 0, 1}, 1000, false), InputError);
    BOOST_CHECK_THROW(make_ooc_matrix_bdia<double>(r, 3, {0}, 1000, false), InputError);  // 3 ∤ 40
}

BOOST_AUTO_TEST_CASE(reference_product_from_the_chunks_equals_the_coo_product)
{
    // heptane spmv A.hoc checks against ooc_reference_product: A x and A^T x summed from the
    // entries of the chunks (CSR and BDIA-GH, fp64 and fp32 values, blocks from the file and
    // from memory) against the same sums over the source COO
    HeptaSpec s;
    s.J = 7;
    s.H = 5;
    s.I = 6;
    s.Nc = 3;
    s.banded = false;
    s.model = HeptaModel::reservoir;
    const Coo<double> a = generate_hepta_coo<double>(s);
    const std::vector<index_t> offs = bdia_block_offsets(a, 3);
    const std::vector<double> x = test::random_vector<double>(a.rows, 11);
    for (bool tr : {false, true}) {
        std::vector<double> want(a.rows, 0.0), want_scale(a.rows, 0.0);
        for (offset_t k = 0; k < a.nnz(); ++k) {
            const index_t i = tr ? a.col[k] : a.row[k], j = tr ? a.row[k] : a.col[k];
            want[i] += a.val[k] * x[j];
            want_scale[i] += std::abs(a.val[k] * x[j]);
        }
        auto check = [&](const auto& m, double tol, const std::string& what) {
            std::vector<double> y(a.rows, -1.0), scale(a.rows, -1.0);
            ooc_reference_product(m, tr, x.data(), y.data(), scale.data());
            double e = 0, es = 0;
            for (index_t i = 0; i < a.rows; ++i) {
                e = std::max(e, std::abs(y[i] - want[i]) / want_scale[i]);
                es = std::max(es, std::abs(scale[i] - want_scale[i]) / want_scale[i]);
            }
            BOOST_TEST(e <= tol, what << (tr ? ", A^T x: " : ", A x: ") << e);
            BOOST_TEST(es <= tol, what << ", the scale: " << es);
        };
        for (bool bdia : {false, true}) {
            const std::string what = bdia ? "BDIA-GH chunks" : "CSR chunks";
            const OocMatrix<double> m = bdia ? make_ooc_matrix_bdia<double>(a, 3, offs, 2000, false)
                                             : make_ooc_matrix<double>(a, 2000, false);
            BOOST_TEST(m.chunks().size() > 3u);
            check(m, 1e-15, what + " in memory");
            TempFile f("ref.hoc");
            save_ooc_file(m, f.path);
            check(open_ooc_file<double>(f.path, {0, false}), 1e-15, what + " from the file");
            const OocMatrix<float> m32 = bdia ? make_ooc_matrix_bdia<float>(a, 3, offs, 2000, false)
                                              : make_ooc_matrix<float>(a, 2000, false);
            check(m32, 1e-7, what + ", fp32 values");
        }
    }
}

BOOST_AUTO_TEST_CASE(diagonal_blocks_and_solves_from_a_chunk_file)
{
    auto exec = test::test_executor();
    HeptaSpec s;
    s.J = 8;
    s.H = 6;
    s.I = 5;
    s.Nc = 3;
    s.banded = false;
    s.model = HeptaModel::reservoir;  // diagonally dominant: Jacobi and block Jacobi converge
    const Coo<double> a = generate_hepta_coo<double>(s);
    const index_t nc = 3;
    const std::vector<index_t> offs = bdia_block_offsets(a, nc);
    auto chunks = [&](bool bdia) {
        return bdia ? make_ooc_matrix_bdia<double>(a, nc, offs, 3000, exec->is_cuda())
                    : make_ooc_matrix<double>(a, 3000, exec->is_cuda());
    };
    // the diagonal blocks, every block read from the file, against the COO's own entries
    for (bool bdia : {false, true}) {
        const OocMatrix<double> m = chunks(bdia);
        BOOST_TEST(m.chunks().size() > 3u);
        BOOST_TEST(ooc_block_size(m.chunks()) == (bdia ? nc : 1));
        TempFile f("diag.hoc");
        save_ooc_file(m, f.path);
        for (index_t bs : {index_t(1), nc}) {
            const Csr<double> d = ooc_block_diagonal(open_ooc_file<double>(f.path, {0, false}), bs);
            std::vector<std::tuple<index_t, index_t, double>> want, got;
            for (offset_t k = 0; k < a.nnz(); ++k)
                if (a.row[k] / bs == a.col[k] / bs && a.val[k] != 0)
                    want.emplace_back(a.row[k], a.col[k], a.val[k]);
            for (index_t i = 0; i < d.rows; ++i)
                for (offset_t q = d.row_ptr[i]; q < d.row_ptr[i + 1]; ++q)
                    if (d.values[q] != 0) got.emplace_back(i, d.col_idx[q], d.values[q]);
            BOOST_TEST((got == want), (bdia ? "BDIA-GH" : "CSR") << " chunks, blocks of " << bs);
        }
        BOOST_CHECK_THROW(ooc_block_diagonal(m, 7), InputError);  // 7 does not divide the rows
    }
    // solves from the file: in core's iterations and x with the same preconditioner
    const std::vector<double> x_true = test::random_vector<double>(a.rows, 5);
    std::vector<double> b(a.rows, 0.0);
    for (offset_t k = 0; k < a.nnz(); ++k) b[a.row[k]] += a.val[k] * x_true[a.col[k]];
    for (PcType pc : {PcType::jacobi, PcType::block_jacobi})
        for (SolverType solver : {SolverType::bicgstab, SolverType::gmres}) {
            SolveConfig cfg;
            cfg.executor = exec;
            cfg.pc = pc;
            cfg.block_size = nc;
            cfg.solver = solver;
            cfg.options.rtol = 1e-10;
            cfg.format = Format::csr;
            const SolveResult in = solve_system(a, b, cfg);
            BOOST_TEST(in.status.converged());
            for (bool bdia : {false, true}) {
                TempFile f("solve.hoc");
                save_ooc_file(chunks(bdia), f.path);
                OocFileOptions fo;
                fo.host_memory = 0;
                fo.pinned = exec->is_cuda();
                auto m =
                    std::make_shared<const OocMatrix<double>>(open_ooc_file<double>(f.path, fo));
                SolveConfig oc = cfg;
                oc.out_of_core = OutOfCoreOptions{};
                oc.out_of_core->max_resident_fraction = 0.5;
                const SolveResult r = solve_system<double>(m, b, oc);
                const std::string what = std::string(to_string(pc)) + " " + to_string(solver) +
                                         (bdia ? ", BDIA-GH chunks" : ", CSR chunks");
                BOOST_TEST(r.status.converged(), what << ": " << r.status.summary());
                BOOST_TEST(
                    std::abs(r.status.iterations - in.status.iterations) <= 1,
                    what << ": " << r.status.iterations << " vs in core " << in.status.iterations);
                BOOST_TEST(test::rel_max_diff(r.x, in.x) <= 1e-8, what);
                BOOST_TEST(test::rel_max_diff(r.x, x_true) <= 1e-7, what);
                BOOST_TEST(r.format.find("out-of-core") != std::string::npos, r.format);
            }
        }
    // fp32 chunks: mixed (fp64 vectors) converges on the rounded matrix; the precision must fit
    auto m32 =
        std::make_shared<const OocMatrix<float>>(make_ooc_matrix<float>(a, 3000, exec->is_cuda()));
    SolveConfig cfg;
    cfg.executor = exec;
    cfg.options.rtol = 1e-8;
    cfg.precision = Precision::mixed;
    const SolveResult r = solve_system<float>(m32, b, cfg);
    BOOST_TEST(r.status.converged(), r.status.summary());
    BOOST_TEST(test::rel_max_diff(r.x, x_true) <= 1e-5);
    cfg.precision = Precision::double_;
    BOOST_CHECK_THROW(solve_system<float>(m32, b, cfg), InputError);
    cfg.precision = Precision::mixed;
    cfg.pc = PcType::ilu0;
    BOOST_CHECK_THROW(solve_system<float>(m32, b, cfg), NotSupported);
}

BOOST_AUTO_TEST_CASE(byte_counts_parse)
{
    BOOST_TEST(parse_bytes("1000") == 1000u);
    BOOST_TEST(parse_bytes("8G") == std::size_t(8) << 30);
    BOOST_TEST(parse_bytes("8GiB") == std::size_t(8) << 30);
    BOOST_TEST(parse_bytes("512M") == std::size_t(512) << 20);
    BOOST_TEST(parse_bytes("64k") == std::size_t(64) << 10);
    BOOST_TEST(parse_bytes("1.5G") == std::size_t(3) << 29);
    BOOST_TEST(parse_bytes("8e9") == std::size_t(8000000000ULL));
    for (const char* bad : {"", "G", "-1", "0", "12X", "1.5 G", "nan"})
        BOOST_CHECK_THROW(parse_bytes(bad), InputError);
}

BOOST_AUTO_TEST_SUITE_END()
