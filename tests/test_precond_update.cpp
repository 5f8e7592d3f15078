// Values-only updates of the preconditioners (Preconditioner::update_values) on the executor
// under test (CPU, or CUDA with HEPTANE_TEST_DEVICE=cuda): for every type, Nc = 1, 2, 3 and
// both precisions, an update with new values on the same pattern applies exactly (bit for
// bit) as a fresh setup on those values; another pattern or size is an InputError, and so are
// values that cannot be factored, after which the preconditioner keeps its previous values.
// The factorisation (symbolic + numeric, ilu0_factorize) is checked bit for bit against a
// plain IKJ elimination with a marker array, written here independently of the library.
// Jacobi and block Jacobi also update from values already on the executor
// (update_values_device, and make_preconditioner from a pattern and such values): on a GPU
// their numeric part then runs there, and must give the host setup's bits and messages; the
// values-only scatter kernel (the PETSc plugin's CSR -> BDIA-GH refresh) must give the host
// loop's bits.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>

#include "formats/bdia/bdia.hpp"
#include "formats/csr/csr.hpp"
#include "formats/values_kernels.hpp"
#include "generators/hepta.hpp"
#include "solver/precond/block_utils.hpp"
#include "solver/precond/precond_kernels.hpp"
#include "solver/precond/preconditioner.hpp"
#include "solver/vector/vector_ops.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

const PcType all_types[] = {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0,
                            PcType::ilu0_mc};

Csr<double> reservoir_csr(index_t J, index_t H, index_t I, index_t nc, bool banded,
                          std::uint64_t seed)
{
    HeptaSpec s;
    std::tie(s.J, s.H, s.I, s.Nc, s.banded, s.seed) = std::make_tuple(J, H, I, nc, banded, seed);
    s.model = HeptaModel::reservoir;
    s.difficulty = 0.5;
    return csr_from_coo(generate_hepta_coo<double>(s));
}

/// The same pattern, other values: every entry scaled by a factor in [0.8, 1.2), the
/// diagonal ones by less, so that the matrix stays diagonally dominant.
Csr<double> new_values(const Csr<double>& a, unsigned seed)
{
    Csr<double> b = a;
    const auto f = test::random_vector<double>(std::size_t(a.nnz()), seed);
    for (index_t r = 0; r < a.rows; ++r)
        for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
            b.values[std::size_t(k)] *= a.col_idx[std::size_t(k)] == r
                                            ? 1.0 + 0.05 * f[std::size_t(k)]
                                            : 1.0 + 0.2 * f[std::size_t(k)];
    return b;
}

/// `a` with entries changed through `edit(row, columns, values)` (host CSR rebuilt).
template <class F>
Csr<double> edit_pattern(const Csr<double>& a, F&& edit)
{
    std::vector<std::map<index_t, double>> rows(std::size_t(a.rows));
    for (index_t r = 0; r < a.rows; ++r)
        for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
            rows[std::size_t(r)][a.col_idx[std::size_t(k)]] = a.values[std::size_t(k)];
    edit(rows);
    Coo<double> c;
    c.rows = c.cols = a.rows;
    std::vector<index_t> ri, ci;
    std::vector<double> v;
    for (index_t r = 0; r < a.rows; ++r)
        for (const auto& [col, val] : rows[std::size_t(r)]) {
            ri.push_back(r);
            ci.push_back(col);
            v.push_back(val);
        }
    c.row = Array<index_t>(std::move(ri));
    c.col = Array<index_t>(std::move(ci));
    c.val = Array<double>(std::move(v));
    return csr_from_coo(c);
}

/// M⁻¹ r on the executor under test, back on the host.
template <class VT>
std::vector<VT> apply_pc(const Preconditioner<VT>& m, const std::vector<VT>& r)
{
    const auto exec = test::test_executor();
    const Array<VT> rd = Array<VT>(r).to(exec);
    Array<VT> z(exec, r.size());
    m.apply(rd.data(), z.data());
    return z.to_vector();
}

template <class VT>
bool same_bits(const std::vector<VT>& a, const std::vector<VT>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(VT)) == 0;
}

template <class VT>
void update_equals_fresh_setup(PcType type, index_t nc, bool banded)
{
    const auto exec = test::test_executor();
    const Csr<double> a1 = reservoir_csr(6, 5, 4, nc, banded, 3);
    const Csr<double> a2 = new_values(a1, 17);
    const auto r = test::random_vector<VT>(std::size_t(a1.rows), 5);
    auto m = make_preconditioner<VT>(type, a1.to(exec), nc, exec);
    const std::string before = m->describe();
    const auto z1 = apply_pc(*m, r);
    m->update_values(a2.to(exec));  // the matrix on the executor: copied to the host
    const auto fresh = make_preconditioner<VT>(type, a2, nc, exec);
    const auto z2 = apply_pc(*m, r);
    BOOST_TEST(same_bits(z2, apply_pc(*fresh, r)));
    if (type != PcType::none) BOOST_TEST(!same_bits(z1, z2));  // the values did change
    BOOST_TEST(m->describe() == before);
    BOOST_TEST(m->setup_ms() >= 0.0);
    // and back: the first values again, the first result again (host matrix this time)
    m->update_values(a1);
    BOOST_TEST(same_bits(apply_pc(*m, r), z1));
}

}  // namespace

BOOST_AUTO_TEST_CASE(update_values_applies_as_a_fresh_setup_bit_for_bit)
{
    for (PcType type : all_types)
        for (index_t nc : {1, 2, 3})
            for (bool banded : {false, true}) {  // banded: 3-4 colours for ilu0_mc
                BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc << " banded=" << banded)
                {
                    update_equals_fresh_setup<double>(type, nc, banded);
                    update_equals_fresh_setup<float>(type, nc, banded);
                }
            }
}

BOOST_AUTO_TEST_CASE(update_values_rejects_another_pattern_and_keeps_its_values)
{
    const auto exec = test::test_executor();
    for (PcType type : all_types)
        for (index_t nc : {1, 2, 3}) {
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc)
            {
                const Csr<double> a = reservoir_csr(5, 4, 3, nc, false, 7);
                const index_t n = a.rows;
                auto m = make_preconditioner<double>(type, a, nc, exec);
                const auto r = test::random_vector<double>(std::size_t(n), 9);
                const auto z = apply_pc(*m, r);
                auto rejected = [](const InputError& e) {
                    BOOST_TEST_MESSAGE(e.what());
                    return std::string(e.what()).find("values-only update") != std::string::npos;
                };
                // another size: every type
                const Csr<double> bigger = reservoir_csr(5, 4, 4, nc, false, 7);
                BOOST_CHECK_EXCEPTION(m->update_values(bigger), InputError, rejected);
                if (type != PcType::none) {
                    // an entry more (a new coupling), an entry less (for Nc > 1 its block
                    // stays), an entry moved to another column of the same row
                    const index_t row = n / 2;
                    const Csr<double> more = edit_pattern(a, [&](auto& rows) {
                        rows[std::size_t(row)][(row + 2 * nc + 1) % n] += 1e-3;
                    });
                    const Csr<double> fewer = edit_pattern(a, [&](auto& rows) {
                        auto& rw = rows[std::size_t(row)];
                        for (auto it = rw.begin(); it != rw.end(); ++it)
                            if (it->first != row) {
                                rw.erase(it);
                                break;
                            }
                    });
                    const Csr<double> moved = edit_pattern(a, [&](auto& rows) {
                        auto& rw = rows[std::size_t(row)];
                        const index_t last = rw.rbegin()->first;
                        const double v = rw.rbegin()->second;
                        rw.erase(last);
                        rw[last + 1 < n && !rw.count(last + 1) ? last + 1 : last - 1] = v;
                    });
                    BOOST_TEST_REQUIRE(moved.nnz() == a.nnz());
                    for (const Csr<double>* other : {&more, &fewer, &moved})
                        BOOST_CHECK_EXCEPTION(m->update_values(*other), InputError, rejected);
                } else {
                    m->update_values(new_values(a, 3));  // none has no pattern: same size is fine
                }
                BOOST_TEST(same_bits(apply_pc(*m, r), z));  // still the setup's values
            }
        }
}

BOOST_AUTO_TEST_CASE(update_values_that_cannot_be_factored_throw_and_keep_the_old_factors)
{
    const auto exec = test::test_executor();
    for (PcType type : {PcType::jacobi, PcType::block_jacobi, PcType::ilu0, PcType::ilu0_mc})
        for (index_t nc : {1, 2, 3}) {
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc)
            {
                const Csr<double> a = reservoir_csr(5, 4, 3, nc, false, 7);
                auto m = make_preconditioner<double>(type, a, nc, exec);
                const auto r = test::random_vector<double>(std::size_t(a.rows), 9);
                const auto z = apply_pc(*m, r);
                // block row 0 (the first to be factorised in every order) all zero, kept as
                // stored zeros: a zero diagonal entry, a singular diagonal block, a zero pivot
                Csr<double> bad = new_values(a, 4);
                for (index_t row = 0; row < nc; ++row)
                    for (offset_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k)
                        bad.values[std::size_t(k)] = 0.0;
                auto names_block_0 = [&](const InputError& e) {
                    BOOST_TEST_MESSAGE(e.what());
                    const std::string w = e.what();
                    // 1-based, as the files count rows
                    return type == PcType::jacobi ? w.find("row 1 is") != std::string::npos
                                                  : w.find("block row 1 (") != std::string::npos;
                };
                if (type == PcType::ilu0_mc) {  // row 0 is red, so the first factorised
                    BOOST_CHECK_THROW(m->update_values(bad), InputError);
                } else {
                    BOOST_CHECK_EXCEPTION(m->update_values(bad), InputError, names_block_0);
                }
                BOOST_TEST(same_bits(apply_pc(*m, r), z));
                // and it still updates afterwards
                m->update_values(new_values(a, 8));
                BOOST_TEST(same_bits(
                    apply_pc(*m, r),
                    apply_pc(*make_preconditioner<double>(type, new_values(a, 8), nc, exec), r)));
            }
        }
}

namespace {

/// ILU(0) over Nc × Nc blocks the plain way: block rows from a map, IKJ with a marker
/// array, dense Gauss-Jordan inverses with partial pivoting (the same operation order as
/// the library's, so the same bits).
struct RefIlu {
    index_t nb, nc;
    std::vector<offset_t> ptr, diag;
    std::vector<index_t> col;
    std::vector<double> val, dinv;
};

void ref_block_mul(const double* a, const double* b, double* c, index_t nc)
{
    for (index_t i = 0; i < nc; ++i)
        for (index_t j = 0; j < nc; ++j) {
            double s = 0;
            for (index_t k = 0; k < nc; ++k) s += a[i * nc + k] * b[k * nc + j];
            c[i * nc + j] = s;
        }
}

RefIlu ref_ilu0(const Csr<double>& a, index_t nc)
{
    RefIlu f;
    f.nc = nc;
    f.nb = a.rows / nc;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    std::vector<std::map<index_t, std::vector<double>>> rows(std::size_t(f.nb));
    for (index_t I = 0; I < f.nb; ++I) rows[std::size_t(I)][I].assign(nc2, 0.0);
    for (index_t r = 0; r < a.rows; ++r)
        for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
            const index_t c = a.col_idx[std::size_t(k)];
            auto& blk = rows[std::size_t(r / nc)][c / nc];
            if (blk.empty()) blk.assign(nc2, 0.0);
            blk[std::size_t((r % nc) * nc + c % nc)] += a.values[std::size_t(k)];
        }
    f.ptr.push_back(0);
    for (index_t I = 0; I < f.nb; ++I) {
        for (const auto& [c, blk] : rows[std::size_t(I)]) {
            if (c == I) f.diag.push_back(offset_t(f.col.size()));
            f.col.push_back(c);
            f.val.insert(f.val.end(), blk.begin(), blk.end());
        }
        f.ptr.push_back(offset_t(f.col.size()));
    }
    f.dinv.assign(std::size_t(f.nb) * nc2, 0.0);
    std::vector<offset_t> marker(std::size_t(f.nb), -1);
    std::vector<double> tmp(nc2);
    for (index_t i = 0; i < f.nb; ++i) {
        for (offset_t q = f.ptr[std::size_t(i)]; q < f.ptr[std::size_t(i) + 1]; ++q)
            marker[std::size_t(f.col[std::size_t(q)])] = q;
        for (offset_t q = f.ptr[std::size_t(i)]; q < f.diag[std::size_t(i)]; ++q) {
            const index_t k = f.col[std::size_t(q)];
            double* lik = &f.val[std::size_t(q) * nc2];
            ref_block_mul(lik, &f.dinv[std::size_t(k) * nc2], tmp.data(), nc);
            std::copy(tmp.begin(), tmp.end(), lik);
            for (offset_t u = f.diag[std::size_t(k)] + 1; u < f.ptr[std::size_t(k) + 1]; ++u) {
                const offset_t t = marker[std::size_t(f.col[std::size_t(u)])];
                if (t < 0) continue;
                for (index_t x = 0; x < nc; ++x)
                    for (index_t z = 0; z < nc; ++z) {
                        const double aik = lik[x * nc + z];
                        if (aik == 0.0) continue;
                        for (index_t y = 0; y < nc; ++y)
                            f.val[std::size_t(t) * nc2 + std::size_t(x * nc + y)] -=
                                aik * f.val[std::size_t(u) * nc2 + std::size_t(z * nc + y)];
                    }
            }
        }
        const detail::PivotFailure p = detail::invert_block(
            &f.val[std::size_t(f.diag[std::size_t(i)]) * nc2], &f.dinv[std::size_t(i) * nc2], nc);
        BOOST_REQUIRE(!p.singular);
        for (offset_t q = f.ptr[std::size_t(i)]; q < f.ptr[std::size_t(i) + 1]; ++q)
            marker[std::size_t(f.col[std::size_t(q)])] = -1;
    }
    return f;
}

void check_against_reference(const Csr<double>& a, index_t nc)
{
    const RefIlu ref = ref_ilu0(a, nc);
    const detail::BlockCsrHost m = detail::block_csr_from_csr(a, nc, "test");
    BOOST_TEST(m.ptr == ref.ptr);
    BOOST_TEST(m.col == ref.col);
    BOOST_TEST(m.diag == ref.diag);
    const detail::Ilu0Factors f = detail::ilu0_factorize(m);
    BOOST_TEST(same_bits(f.diag_inv, ref.dinv));
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    std::vector<double> lower, upper;  // the reference's factors, split
    for (index_t i = 0; i < ref.nb; ++i)
        for (offset_t q = ref.ptr[std::size_t(i)]; q < ref.ptr[std::size_t(i) + 1]; ++q) {
            if (q == ref.diag[std::size_t(i)]) continue;
            auto& out = q < ref.diag[std::size_t(i)] ? lower : upper;
            out.insert(out.end(), ref.val.begin() + std::ptrdiff_t(std::size_t(q) * nc2),
                       ref.val.begin() + std::ptrdiff_t(std::size_t(q + 1) * nc2));
        }
    BOOST_TEST(same_bits(f.lower.val, lower));
    BOOST_TEST(same_bits(f.upper.val, upper));
}

}  // namespace

BOOST_AUTO_TEST_CASE(factorisation_equals_a_plain_ikj_elimination_bit_for_bit)
{
    for (index_t nc : {1, 2, 3, 5})
        for (bool banded : {false, true}) {
            BOOST_TEST_CONTEXT("Nc=" << nc << " banded=" << banded)
            check_against_reference(reservoir_csr(6, 5, 4, nc, banded, 21), nc);
        }
    // Nc = 1 without some diagonal entries (the pattern is then not the block pattern: the
    // factorisation stores a zero diagonal block, which the elimination fills), and a row
    // with an entry inside a block of Nc = 3 that is missing from the other rows of the block
    const Csr<double> a = reservoir_csr(6, 5, 4, 1, false, 23);
    const Csr<double> holes = edit_pattern(a, [](auto& rows) {
        for (index_t r : {7, 30, 77}) rows[std::size_t(r)].erase(r);
    });
    BOOST_TEST_CONTEXT("Nc=1 without diagonal entries") check_against_reference(holes, 1);
    const Csr<double> b = reservoir_csr(6, 5, 4, 3, false, 23);
    const Csr<double> partial = edit_pattern(b, [](auto& rows) {
        rows[40].erase(41);
        rows[42].erase(40);
    });
    BOOST_TEST_CONTEXT("Nc=3 with partial blocks") check_against_reference(partial, 3);
    // values-only update of a natural ILU(0) on the pattern without diagonal entries
    const auto exec = test::test_executor();
    auto m = make_preconditioner<double>(PcType::ilu0, holes, 1, exec);
    const Csr<double> holes2 = new_values(holes, 31);
    m->update_values(holes2);
    const auto r = test::random_vector<double>(std::size_t(a.rows), 2);
    BOOST_TEST(same_bits(apply_pc(*m, r),
                         apply_pc(*make_preconditioner<double>(PcType::ilu0, holes2, 1, exec), r)));
}

// ---- values already on the executor: Jacobi and block Jacobi -------------------------------

namespace {

/// The pattern of host CSR `a`, with 64-bit row pointers or (rp32 given) 32-bit ones.
CsrPatternView pattern_of(const Csr<double>& a, std::vector<index_t>* rp32 = nullptr)
{
    CsrPatternView p;
    p.rows = a.rows;
    p.col_idx = a.col_idx.data();
    if (rp32) {
        rp32->assign(a.row_ptr.host().begin(), a.row_ptr.host().end());
        p.row_ptr32 = rp32->data();
    } else {
        p.row_ptr64 = a.row_ptr.data();
    }
    return p;
}

/// The pattern of host CSR `a` in the memory of `exec` (32-bit row pointers), and a view of
/// it that says so (on_executor).
struct ExecPattern {
    Array<index_t> ptr, col;
    CsrPatternView view;
};
ExecPattern pattern_on_executor(const Csr<double>& a, const std::shared_ptr<const Executor>& exec)
{
    ExecPattern p;
    p.ptr = Array<index_t>(std::vector<index_t>(a.row_ptr.host().begin(), a.row_ptr.host().end()))
                .to(exec);
    p.col = a.col_idx.to(exec);
    p.view.rows = a.rows;
    p.view.row_ptr32 = p.ptr.data();
    p.view.col_idx = p.col.data();
    p.view.on_executor = true;
    return p;
}

/// The message of the InputError f() throws ("" when it throws none).
template <class F>
std::string input_error_of(F&& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return {};
}

template <class VT>
void device_update_equals_host_setup(PcType type, index_t nc)
{
    const auto exec = test::test_executor();
    const Csr<double> a1 = reservoir_csr(6, 5, 4, nc, false, 3);
    const Csr<double> a2 = new_values(a1, 17);
    const auto r = test::random_vector<VT>(std::size_t(a1.rows), 5);
    auto m = make_preconditioner<VT>(type, a1, nc, exec);  // numeric part on the host
    const auto z1 = apply_pc(*m, r);
    const Array<double> v2 = a2.values.to(exec);
    BOOST_TEST_REQUIRE(m->update_values_device(v2.data(), a2.nnz()));
    const auto fresh = make_preconditioner<VT>(type, a2, nc, exec);  // on the host
    const auto z2 = apply_pc(*m, r);
    BOOST_TEST(same_bits(z2, apply_pc(*fresh, r)));
    BOOST_TEST(!same_bits(z1, z2));  // the values did change
    // set up from the pattern and the values on the executor (32- and 64-bit row pointers)
    std::vector<index_t> rp32;
    for (bool narrow : {false, true}) {
        const auto p = make_preconditioner<VT>(type, pattern_of(a2, narrow ? &rp32 : nullptr),
                                               v2.data(), nc, exec);
        BOOST_TEST(same_bits(apply_pc(*p, r), z2));
        BOOST_TEST(p->describe() == fresh->describe());
    }
    // ... and from a pattern in the executor's memory (on a GPU the gather map is made there)
    {
        const ExecPattern ep = pattern_on_executor(a2, exec);
        auto p = make_preconditioner<VT>(type, ep.view, v2.data(), nc, exec);
        BOOST_TEST(same_bits(apply_pc(*p, r), z2));
        BOOST_TEST(p->describe() == fresh->describe());
        const Array<double> v1 = a1.values.to(exec);
        BOOST_TEST_REQUIRE(p->update_values_device(v1.data(), a1.nnz()));
        BOOST_TEST(same_bits(apply_pc(*p, r), z1));
        if (exec->is_cpu()) {  // executor memory is host memory: the host pattern is kept
            p->update_values(a2);
            BOOST_TEST(same_bits(apply_pc(*p, r), z2));
        } else {  // no host copy of the pattern to compare with: refused, values kept
            BOOST_CHECK_THROW(p->update_values(a2), InputError);
            BOOST_TEST(same_bits(apply_pc(*p, r), z1));
        }
    }
    // a host update after a device one, and a device one again
    m->update_values(a1);
    BOOST_TEST(same_bits(apply_pc(*m, r), z1));
    BOOST_TEST_REQUIRE(m->update_values_device(v2.data(), a2.nnz()));
    BOOST_TEST(same_bits(apply_pc(*m, r), z2));
}

}  // namespace

BOOST_AUTO_TEST_CASE(update_values_device_applies_as_a_fresh_host_setup_bit_for_bit)
{
    // Nc = 5: the block size at run time (NC = 0) in the kernels
    for (PcType type : {PcType::jacobi, PcType::block_jacobi})
        for (index_t nc : {1, 2, 3, 4, 5}) {
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc)
            {
                device_update_equals_host_setup<double>(type, nc);
                device_update_equals_host_setup<float>(type, nc);
            }
        }
}

BOOST_AUTO_TEST_CASE(update_values_device_declines_where_it_has_no_path_and_changes_nothing)
{
    const auto exec = test::test_executor();
    // the ILU(0) types factorise on the host; block Jacobi with Nc = 9 on a GPU (its blocks do
    // not fit the kernel's registers: the host numeric part, on the CPU the in-place one)
    struct Case {
        PcType type;
        index_t nc;
        bool in_place;
    };
    const Case cases[] = {{PcType::ilu0, 1, false},
                          {PcType::ilu0, 3, false},
                          {PcType::ilu0_mc, 2, false},
                          {PcType::none, 1, true},
                          {PcType::block_jacobi, 9, exec->is_cpu()}};
    for (const Case& c : cases) {
        BOOST_TEST_CONTEXT(to_string(c.type) << " Nc=" << c.nc)
        {
            const Csr<double> a1 = reservoir_csr(4, 3, 3, c.nc, false, 5);
            const Csr<double> a2 = new_values(a1, 6);
            const auto r = test::random_vector<double>(std::size_t(a1.rows), 7);
            auto m = make_preconditioner<double>(c.type, a1, c.nc, exec);
            const auto z1 = apply_pc(*m, r);
            const Array<double> v2 = a2.values.to(exec);
            BOOST_TEST(m->update_values_device(v2.data(), a2.nnz()) == c.in_place);
            const auto expect = c.in_place ? make_preconditioner<double>(c.type, a2, c.nc, exec)
                                           : make_preconditioner<double>(c.type, a1, c.nc, exec);
            BOOST_TEST(same_bits(apply_pc(*m, r), apply_pc(*expect, r)));
            if (c.type == PcType::block_jacobi) {  // the setup from values there still works
                const auto p =
                    make_preconditioner<double>(c.type, pattern_of(a2), v2.data(), c.nc, exec);
                BOOST_TEST(
                    same_bits(apply_pc(*p, r),
                              apply_pc(*make_preconditioner<double>(c.type, a2, c.nc, exec), r)));
            }
        }
    }
    // ILU(0) has no setup from values on the executor; the wrong count of values is an error
    const Csr<double> a = reservoir_csr(4, 3, 3, 2, false, 5);
    const Array<double> v = a.values.to(exec);
    BOOST_CHECK_THROW(make_preconditioner<double>(PcType::ilu0, pattern_of(a), v.data(), 2, exec),
                      NotSupported);
    auto m = make_preconditioner<double>(PcType::block_jacobi, a, 2, exec);
    BOOST_CHECK_THROW(m->update_values_device(v.data(), a.nnz() - 1), InputError);
}

namespace {

// The checks shared by the values-in-another-layout paths (update_values_permuted,
// update_values_blocks): update(m, a) hands m the values of a (same pattern as a1) in the
// layout under test and returns what m returned. Where the path exists (none; Jacobi and
// block Jacobi on the CPU) m must apply as a fresh setup on a's CSR values, bit for bit, twice
// (the second reuses what the first made); a singular block is the host setup's message and the
// previous values are kept. Elsewhere false and nothing changed.
template <class Update>
void check_values_path(PcType type, index_t nc, const Csr<double>& a1, const Update& update)
{
    const auto exec = test::test_executor();
    const Csr<double> a2 = new_values(a1, 12);
    const Csr<double> a3 = new_values(a1, 13);
    const auto r = test::random_vector<double>(std::size_t(a1.rows), 3);
    auto m = make_preconditioner<double>(type, a1, nc, exec);
    const auto z1 = apply_pc(*m, r);
    const bool path = type == PcType::none || (exec->is_cpu() && type != PcType::ilu0);
    BOOST_TEST(update(*m, a2) == path);
    if (!path) {
        BOOST_TEST(same_bits(apply_pc(*m, r), z1));
        return;
    }
    BOOST_TEST(
        same_bits(apply_pc(*m, r), apply_pc(*make_preconditioner<double>(type, a2, nc, exec), r)));
    BOOST_TEST_REQUIRE(update(*m, a3));
    BOOST_TEST(
        same_bits(apply_pc(*m, r), apply_pc(*make_preconditioner<double>(type, a3, nc, exec), r)));
    if (type == PcType::none) return;
    // a zero diagonal entry (row 2); block Jacobi: a zero block row, singular for any Nc
    Csr<double> bad = a3;
    for (offset_t k = bad.row_ptr[2]; k < bad.row_ptr[3]; ++k)
        if (bad.col_idx[std::size_t(k)] == 2) bad.values[std::size_t(k)] = 0;
    if (type == PcType::block_jacobi)
        for (index_t row = 0; row < nc; ++row)
            for (offset_t k = bad.row_ptr[row]; k < bad.row_ptr[row + 1]; ++k)
                if (bad.col_idx[std::size_t(k)] < nc) bad.values[std::size_t(k)] = 0;
    const std::string host =
        input_error_of([&] { make_preconditioner<double>(type, bad, nc, exec); });
    BOOST_TEST_REQUIRE(!host.empty());
    BOOST_TEST(input_error_of([&] { update(*m, bad); }) == host);
    BOOST_TEST(same_bits(apply_pc(*m, r),  // the previous values kept
                         apply_pc(*make_preconditioner<double>(type, a3, nc, exec), r)));
}

}  // namespace

// Values in another order (update_values_permuted: PETSc's BAIJ array read in place): the
// values scattered through a random permutation pos (value of CSR entry e at pos[e]), checked
// by check_values_path; the wrong count is an error.
BOOST_AUTO_TEST_CASE(update_values_permuted_applies_as_a_fresh_setup_bit_for_bit)
{
    for (PcType type : {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0})
        for (index_t nc : {1, 3, 5}) {
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc)
            {
                const Csr<double> a1 = reservoir_csr(5, 4, 3, nc, false, 11);
                const std::size_t nnz = std::size_t(a1.nnz());
                std::vector<index_t> pos(nnz);
                std::iota(pos.begin(), pos.end(), index_t(0));
                std::shuffle(pos.begin(), pos.end(), std::mt19937_64(nnz));
                check_values_path(type, nc, a1, [&](auto& m, const Csr<double>& a) {
                    std::vector<double> v(nnz);
                    for (std::size_t e = 0; e < nnz; ++e) v[std::size_t(pos[e])] = a.values[e];
                    return m.update_values_permuted(v.data(), pos.data(), a.nnz());
                });
                if (type == PcType::none || type == PcType::ilu0 ||
                    !test::test_executor()->is_cpu())
                    continue;
                auto m = make_preconditioner<double>(type, a1, nc, test::test_executor());
                BOOST_CHECK_THROW(
                    m->update_values_permuted(a1.values.data(), pos.data(), a1.nnz() - 1),
                    InputError);
            }
        }
}

// Values of a block CSR matrix (update_values_blocks: PETSc's BAIJ read in place, positions
// from the block pattern), checked by check_values_path for a block size equal to the
// preconditioner's and not (Jacobi of a bs = 3 matrix, block Jacobi Nc = 3 of bs = 1, i.e.
// AIJ); blocks that miss an entry of the setup's pattern: false, nothing changed.
BOOST_AUTO_TEST_CASE(update_values_blocks_applies_as_a_fresh_setup_bit_for_bit)
{
    const auto exec = test::test_executor();
    for (PcType type : {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0})
        for (auto [nc, bs] : {std::pair<index_t, index_t>{1, 1}, {1, 3}, {3, 3}, {3, 1}, {2, 2}}) {
            if (type == PcType::jacobi && nc != 1) continue;
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc << " bs=" << bs)
            {
                const Csr<double> a1 = reservoir_csr(5, 4, 3, std::max(nc, bs), false, 21);
                const auto update = [&](auto& m, const test::BlockCsr& b) {
                    return m.update_values_blocks(b.values.data(), b.block_rows, b.bs,
                                                  b.block_ptr.data(), b.block_col.data());
                };
                check_values_path(type, nc, a1, [&](auto& m, const Csr<double>& a) {
                    return update(m, test::block_csr_of(a, bs));
                });
                if (type == PcType::none || type == PcType::ilu0 || !exec->is_cpu()) continue;
                // blocks that lack the setup's diagonal block of row 0: declined (a fresh
                // preconditioner: the map into the blocks is kept per block pattern)
                auto m = make_preconditioner<double>(type, a1, nc, exec);
                const auto r = test::random_vector<double>(std::size_t(a1.rows), 3);
                const auto z1 = apply_pc(*m, r);
                test::BlockCsr holed = test::block_csr_of(new_values(a1, 14), bs);
                const auto first = holed.block_col.begin();
                const auto diag = std::find(first, first + holed.block_ptr[1], 0);
                BOOST_TEST_REQUIRE((diag != first + holed.block_ptr[1]));
                *diag = holed.block_rows - 1;  // block (0, 0) moved far off
                BOOST_TEST(!update(*m, holed));
                BOOST_TEST(same_bits(apply_pc(*m, r), z1));
            }
        }
}

// A itself as BDIA-GH in host memory (update_values_bdia: the PETSc plugin's operator,
// refreshed from the same values just before): Jacobi and block Jacobi on the CPU read their
// blocks off its main block diagonal, checked by check_values_path for a BDIA block size equal
// to the preconditioner's and a multiple of it; a block size the preconditioner's does not
// divide, a matrix of another size or one whose main block diagonal is marked as the identity:
// false, nothing changed.
BOOST_AUTO_TEST_CASE(update_values_bdia_applies_as_a_fresh_setup_bit_for_bit)
{
    const auto exec = test::test_executor();
    const auto bdia_of = [](const Csr<double>& a, index_t bs) {
        return bdia_from_coo(to_coo(a), bs);
    };
    for (PcType type : {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0})
        for (auto [nc, bs] : {std::pair<index_t, index_t>{1, 1}, {1, 3}, {3, 3}, {2, 2}, {2, 4}}) {
            if (type == PcType::jacobi && nc != 1) continue;
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc << " BDIA block size " << bs)
            {
                const Csr<double> a1 = reservoir_csr(5, 4, 3, bs, false, 31);
                check_values_path(type, nc, a1, [&](auto& m, const Csr<double>& a) {
                    return m.update_values_bdia(bdia_of(a, bs));
                });
                if (type == PcType::none || type == PcType::ilu0 || !exec->is_cpu()) continue;
                auto m = make_preconditioner<double>(type, a1, nc, exec);
                const auto r = test::random_vector<double>(std::size_t(a1.rows), 3);
                const auto z1 = apply_pc(*m, r);
                const Csr<double> a2 = new_values(a1, 15);
                if (bs % 3 != 0 && nc == 1) {  // a BDIA block size this one does not divide
                    const Csr<double> a3 = reservoir_csr(5, 4, 3, 3, false, 31);
                    auto m3 = make_preconditioner<double>(PcType::block_jacobi, a3, 3, exec);
                    const auto z3 = apply_pc(*m3, test::random_vector<double>(a3.rows, 4));
                    BOOST_TEST(!m3->update_values_bdia(bdia_of(new_values(a3, 16), 1)));
                    BOOST_TEST(
                        same_bits(apply_pc(*m3, test::random_vector<double>(a3.rows, 4)), z3));
                }
                Bdia<double> marked = bdia_of(a2, bs);
                marked.unit_main_block = true;
                BOOST_TEST(!m->update_values_bdia(marked));
                BOOST_TEST(
                    !m->update_values_bdia(bdia_of(reservoir_csr(5, 4, 4, bs, false, 31), bs)));
                BOOST_TEST(same_bits(apply_pc(*m, r), z1));
            }
        }
}

BOOST_AUTO_TEST_CASE(update_values_device_that_cannot_be_factored_throws_the_host_message)
{
    const auto exec = test::test_executor();
    for (PcType type : {PcType::jacobi, PcType::block_jacobi})
        for (index_t nc : {1, 2, 3, 4}) {
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc)
            {
                const index_t bnc = type == PcType::jacobi ? 1 : nc;  // the preconditioner's
                const Csr<double> a = reservoir_csr(5, 4, 3, nc, false, 7);
                auto m = make_preconditioner<double>(type, a, bnc, exec);
                const auto r = test::random_vector<double>(std::size_t(a.rows), 9);
                const auto z = apply_pc(*m, r);
                // block 7: its diagonal block with two equal rows (Nc = 1: a zero), and, for
                // `first`, block 3 all zero: the message names the lowest failing block
                for (index_t first : {7, 3}) {
                    Csr<double> bad = new_values(a, 4);
                    for (index_t blk : {index_t(7), first})
                        for (index_t row = blk * bnc; row < (blk + 1) * bnc; ++row)
                            for (offset_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
                                const index_t col = a.col_idx[std::size_t(k)];
                                if (col / bnc != blk) continue;
                                double& v = bad.values[std::size_t(k)];
                                if (blk == first && first == 3) {
                                    v = 0.0;
                                } else if (row == blk * bnc + 1) {  // row 1 = row 0 of the block
                                    const index_t r0 = blk * bnc;
                                    const auto b0 = a.col_idx.host().begin();
                                    const offset_t k0 =
                                        std::lower_bound(b0 + a.row_ptr[r0], b0 + a.row_ptr[r0 + 1],
                                                         col) -
                                        b0;
                                    v = bad.values[std::size_t(k0)];
                                } else if (bnc == 1) {
                                    v = 0.0;
                                }
                            }
                    const std::string host = input_error_of([&] { m->update_values(bad); });
                    const Array<double> vb = bad.values.to(exec);
                    const std::string device =
                        input_error_of([&] { m->update_values_device(vb.data(), bad.nnz()); });
                    BOOST_TEST_MESSAGE(device);
                    BOOST_TEST(!host.empty());
                    BOOST_TEST(device == host);
                    // set up from a pattern in executor memory: the same message (the
                    // failing block's map read back from there)
                    const ExecPattern ep = pattern_on_executor(a, exec);
                    const std::string setup = input_error_of(
                        [&] { make_preconditioner<double>(type, ep.view, vb.data(), bnc, exec); });
                    BOOST_TEST(setup == host);
                    const std::string names = type == PcType::jacobi
                                                  ? "row " + std::to_string(first + 1) + " is 0"
                                                  : "block row " + std::to_string(first + 1) + " (";
                    BOOST_TEST(device.find(names) != std::string::npos);
                    BOOST_TEST(same_bits(apply_pc(*m, r), z));  // the previous values kept
                }
                // and it still updates afterwards
                const Csr<double> good = new_values(a, 8);
                const Array<double> vg = good.values.to(exec);
                BOOST_TEST_REQUIRE(m->update_values_device(vg.data(), good.nnz()));
                BOOST_TEST(
                    same_bits(apply_pc(*m, r),
                              apply_pc(*make_preconditioner<double>(type, good, bnc, exec), r)));
            }
        }
}

namespace {

/// x = B⁻¹ y for the dense nc × nc block B (row-major): Gaussian elimination with partial
/// pivoting, written here independently of the library's Gauss-Jordan inverse.
std::vector<double> ref_block_solve(std::vector<double> b, std::vector<double> y, index_t nc)
{
    const std::size_t n = std::size_t(nc);
    for (std::size_t k = 0; k < n; ++k) {
        std::size_t p = k;
        for (std::size_t i = k + 1; i < n; ++i)
            if (std::abs(b[i * n + k]) > std::abs(b[p * n + k])) p = i;
        for (std::size_t j = 0; j < n; ++j) std::swap(b[k * n + j], b[p * n + j]);
        std::swap(y[k], y[p]);
        for (std::size_t i = k + 1; i < n; ++i) {
            const double f = b[i * n + k] / b[k * n + k];
            for (std::size_t j = k; j < n; ++j) b[i * n + j] -= f * b[k * n + j];
            y[i] -= f * y[k];
        }
    }
    std::vector<double> x(n);
    for (std::size_t i = n; i-- > 0;) {
        double s = y[i];
        for (std::size_t j = i + 1; j < n; ++j) s -= b[i * n + j] * x[j];
        x[i] = s / b[i * n + i];
    }
    return x;
}

template <class VT>
void block_jacobi_against_reference(PcType type, index_t nc)
{
    const auto exec = test::test_executor();
    const index_t bnc = type == PcType::jacobi ? 1 : nc;
    const Csr<double> a = new_values(reservoir_csr(5, 4, 3, nc, false, 31), 32);
    const auto r = test::random_vector<VT>(std::size_t(a.rows), 33);
    const Array<double> v = a.values.to(exec);
    const auto z = apply_pc(*make_preconditioner<VT>(type, pattern_of(a), v.data(), bnc, exec), r);
    const double eps = std::numeric_limits<VT>::epsilon();
    const std::size_t n2 = std::size_t(bnc) * std::size_t(bnc);
    for (index_t c = 0; c < a.rows / bnc; ++c) {
        std::vector<double> blk(n2, 0.0), rc(static_cast<std::size_t>(bnc));
        for (index_t i = 0; i < bnc; ++i) {
            const index_t row = c * bnc + i;
            rc[std::size_t(i)] = double(r[std::size_t(row)]);
            for (offset_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k)
                if (a.col_idx[std::size_t(k)] / bnc == c)
                    blk[std::size_t(i) * std::size_t(bnc) +
                        std::size_t(a.col_idx[std::size_t(k)] % bnc)] += a.values[std::size_t(k)];
        }
        // tolerance from the block: ‖B‖∞ ‖B⁻¹‖∞ (the reference's inverse, column by column)
        double norm_b = 0, norm_inv = 0;
        std::vector<double> inv_rows(std::size_t(bnc), 0.0);
        for (index_t j = 0; j < bnc; ++j) {
            std::vector<double> e(std::size_t(bnc), 0.0);
            e[std::size_t(j)] = 1.0;
            const auto col = ref_block_solve(blk, e, bnc);
            for (index_t i = 0; i < bnc; ++i)
                inv_rows[std::size_t(i)] += std::abs(col[std::size_t(i)]);
        }
        for (index_t i = 0; i < bnc; ++i) {
            double row = 0;
            for (index_t j = 0; j < bnc; ++j) row += std::abs(blk[std::size_t(i * bnc + j)]);
            norm_b = std::max(norm_b, row);
            norm_inv = std::max(norm_inv, inv_rows[std::size_t(i)]);
        }
        const auto x = ref_block_solve(blk, rc, bnc);
        double err = 0, scale = 0;
        for (index_t i = 0; i < bnc; ++i) {
            err = std::max(err, std::abs(double(z[std::size_t(c * bnc + i)]) - x[std::size_t(i)]));
            scale = std::max(scale, std::abs(x[std::size_t(i)]));
        }
        const double tol = 16.0 * bnc * eps * norm_b * norm_inv * scale;
        BOOST_TEST_REQUIRE(err <= tol, "block " << c << ": |z - B⁻¹r| = " << err << " > " << tol);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(jacobi_and_block_jacobi_apply_the_inverse_of_each_diagonal_block)
{
    // against Gaussian elimination on the diagonal blocks gathered here from the CSR: the
    // gather map and the inverse of the setup from values on the executor, independently
    for (PcType type : {PcType::jacobi, PcType::block_jacobi})
        for (index_t nc : {1, 2, 3, 4, 5}) {
            BOOST_TEST_CONTEXT(to_string(type) << " Nc=" << nc)
            {
                block_jacobi_against_reference<double>(type, nc);
                block_jacobi_against_reference<float>(type, nc);
            }
        }
}

BOOST_AUTO_TEST_CASE(jacobi_and_block_jacobi_sum_an_entry_stored_twice)
{
    // every diagonal entry stored as two entries (columns sorted, the pair adjacent): the
    // same preconditioner, bit for bit, as the matrix with their sums; on a GPU the in-place
    // update declines (the host one sums)
    const auto exec = test::test_executor();
    for (PcType type : {PcType::jacobi, PcType::block_jacobi}) {
        const index_t nc = 2, bnc = type == PcType::jacobi ? 1 : nc;
        BOOST_TEST_CONTEXT(to_string(type))
        {
            const Csr<double> a = reservoir_csr(4, 3, 3, nc, false, 11);
            const auto part = test::random_vector<double>(std::size_t(a.rows), 12);
            Csr<double> twice, summed = a;
            twice.rows = twice.cols = a.rows;
            std::vector<offset_t> rp{0};
            std::vector<index_t> ci;
            std::vector<double> v;
            for (index_t row = 0; row < a.rows; ++row) {
                for (offset_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
                    const index_t col = a.col_idx[std::size_t(k)];
                    const double x = a.values[std::size_t(k)];
                    ci.push_back(col);
                    if (col != row) {
                        v.push_back(x);
                        continue;
                    }
                    const double p = part[std::size_t(row)];
                    v.push_back(x - p);
                    ci.push_back(col);
                    v.push_back(p);
                    summed.values[std::size_t(k)] = (x - p) + p;
                }
                rp.push_back(offset_t(ci.size()));
            }
            twice.row_ptr = Array<offset_t>(std::move(rp));
            twice.col_idx = Array<index_t>(std::move(ci));
            twice.values = Array<double>(std::move(v));
            const auto r = test::random_vector<double>(std::size_t(a.rows), 13);
            const auto z = apply_pc(*make_preconditioner<double>(type, summed, bnc, exec), r);
            auto m = make_preconditioner<double>(type, twice, bnc, exec);
            BOOST_TEST(same_bits(apply_pc(*m, r), z));
            m->update_values(twice);
            BOOST_TEST(same_bits(apply_pc(*m, r), z));
            const Array<double> vt = twice.values.to(exec);
            BOOST_TEST(m->update_values_device(vt.data(), twice.nnz()) == exec->is_cpu());
            BOOST_TEST(same_bits(apply_pc(*m, r), z));
            const auto p =
                make_preconditioner<double>(type, pattern_of(twice), vt.data(), bnc, exec);
            BOOST_TEST(same_bits(apply_pc(*p, r), z));
            // from the pattern in executor memory: the map there finds the repeat and the
            // setup takes the host pattern, which sums it
            const ExecPattern ep = pattern_on_executor(twice, exec);
            const auto q = make_preconditioner<double>(type, ep.view, vt.data(), bnc, exec);
            BOOST_TEST(same_bits(apply_pc(*q, r), z));
        }
    }
}

namespace {

/// kernels::block_diag_map on the executor under test against the map built here: the
/// position of each diagonal-block entry, -1 where none; repeats counted.
template <class IT>
void block_diag_map_equals_reference(const Csr<double>& a, index_t nc, offset_t repeats)
{
    const auto exec = test::test_executor();
    const index_t nb = a.rows / nc;
    const std::size_t nc2 = std::size_t(nc) * std::size_t(nc);
    std::vector<IT> expect(std::size_t(nb) * nc2, IT(-1));
    for (index_t r = 0; r < a.rows; ++r)
        for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
            const index_t c = a.col_idx[std::size_t(k)];
            if (c / nc != r / nc) continue;
            IT& e = expect[std::size_t(r / nc) * nc2 + std::size_t(r % nc * nc + c % nc)];
            if (e < 0) e = IT(k);
        }
    const ExecPattern ep = pattern_on_executor(a, exec);
    Array<IT> map(exec, expect.size());
    const offset_t got = dispatch_executor(*exec, [&](const auto& e) {
        return kernels::block_diag_map(e, nb, nc, ep.ptr.data(), ep.col.data(), map.data());
    });
    BOOST_TEST(got == repeats);
    BOOST_TEST(map.to_vector() == expect, boost::test_tools::per_element());
}

}  // namespace

BOOST_AUTO_TEST_CASE(block_diag_map_equals_the_gather_map_built_here)
{
    for (index_t nc : {1, 2, 3, 5}) {
        BOOST_TEST_CONTEXT("Nc=" << nc)
        {
            const Csr<double> a = reservoir_csr(5, 4, 3, nc, false, 23);
            block_diag_map_equals_reference<std::int32_t>(a, nc, 0);
            block_diag_map_equals_reference<std::int64_t>(a, nc, 0);
            // holes in the diagonal blocks (-1 there) and one column stored twice in row 4
            Csr<double> holes = edit_pattern(a, [&](auto& rows) {
                for (index_t r = 0; r < a.rows; r += 3)
                    if (r % nc != 0 || nc == 1) rows[std::size_t(r)].erase(r - r % nc);
            });
            block_diag_map_equals_reference<std::int32_t>(holes, nc, 0);
            Csr<double> twice = holes;
            {
                std::vector<index_t> ci(holes.col_idx.host().begin(), holes.col_idx.host().end());
                std::vector<offset_t> rp(holes.row_ptr.host().begin(), holes.row_ptr.host().end());
                const offset_t k = rp[4];
                ci.insert(ci.begin() + std::ptrdiff_t(k), ci[std::size_t(k)]);
                for (std::size_t r = 5; r < rp.size(); ++r) ++rp[r];
                std::vector<double> v(holes.values.host().begin(), holes.values.host().end());
                v.insert(v.begin() + std::ptrdiff_t(k), 1.0);
                twice.row_ptr = Array<offset_t>(std::move(rp));
                twice.col_idx = Array<index_t>(std::move(ci));
                twice.values = Array<double>(std::move(v));
            }
            block_diag_map_equals_reference<std::int32_t>(twice, nc, 1);
        }
    }
}

namespace {

template <class IT, class VT>
void scatter_equals_host_loop(offset_t n, offset_t slots)
{
    const auto exec = test::test_executor();
    std::vector<offset_t> targets(static_cast<std::size_t>(slots));
    std::iota(targets.begin(), targets.end(), offset_t(0));
    std::shuffle(targets.begin(), targets.end(), std::mt19937_64(21));
    std::vector<IT> map(static_cast<std::size_t>(n));
    for (offset_t k = 0; k < n; ++k) map[std::size_t(k)] = IT(targets[std::size_t(k)]);
    auto src = test::random_vector<double>(std::size_t(n), 22);
    // the sign of zero, a value fp32 rounds, one it cannot hold (as many as n has room for:
    // n = 1 wrote past the end, found by AddressSanitizer, scripts/sanitize.sh)
    const double special[] = {-0.0, 1.0 / 3.0, 1e-310};
    for (std::size_t k = 0; k < 3 && k < src.size(); ++k) src[k] = special[k];
    std::vector<VT> expect(std::size_t(slots), VT(7));  // not a target: kept
    for (offset_t k = 0; k < n; ++k)
        expect[std::size_t(map[std::size_t(k)])] = VT(src[std::size_t(k)]);
    const Array<IT> dmap = Array<IT>(map).to(exec);
    const Array<double> dsrc = Array<double>(src).to(exec);
    Array<VT> dst = Array<VT>(std::vector<VT>(std::size_t(slots), VT(7))).to(exec);
    dispatch_executor(*exec, [&](const auto& e) {
        kernels::scatter_values(e, n, dmap.data(), dsrc.data(), dst.data());
    });
    exec->synchronize();
    BOOST_TEST(same_bits(dst.to_vector(), expect));
}

}  // namespace

BOOST_AUTO_TEST_CASE(scatter_values_through_a_map_equals_the_host_loop)
{
    for (offset_t n : {offset_t(1), offset_t(1000), offset_t(300007)}) {
        BOOST_TEST_CONTEXT("n=" << n)
        {
            scatter_equals_host_loop<std::int32_t, double>(n, 3 * n + 5);
            scatter_equals_host_loop<std::int32_t, float>(n, 3 * n + 5);
            scatter_equals_host_loop<std::int64_t, double>(n, 3 * n + 5);
            scatter_equals_host_loop<std::int64_t, float>(n, 3 * n + 5);
        }
    }
}

// kernels::block_pattern_to_csr and block_values_to_csr against the expansion written out here
// block by block: a random block pattern (empty block rows included), bs = 1..4, values in
// BAIJ's order (each block column-major); the kernels' row pointers, columns and values in
// scalar CSR order must be the loop's, bit for bit.
BOOST_AUTO_TEST_CASE(block_values_to_csr_equals_the_block_by_block_expansion)
{
    const auto exec = test::test_executor();
    std::mt19937_64 rng(31);
    for (index_t bs : {1, 2, 3, 4}) {
        for (index_t nb : {1, 7, 5000}) {
            BOOST_TEST_CONTEXT("bs=" << bs << " block rows=" << nb)
            {
                // block pattern: per block row a sorted set of block columns (some empty)
                std::vector<std::vector<index_t>> bcols(static_cast<std::size_t>(nb));
                for (index_t ib = 0; ib < nb; ++ib) {
                    if (nb > 1 && rng() % 11 == 0) continue;  // an empty block row
                    std::vector<index_t> c;
                    const int want = 1 + int(rng() % 7);
                    for (int k = 0; k < want; ++k) c.push_back(index_t(rng() % std::uint64_t(nb)));
                    std::sort(c.begin(), c.end());
                    c.erase(std::unique(c.begin(), c.end()), c.end());
                    bcols[std::size_t(ib)] = c;
                }
                offset_t nblocks = 0;
                for (const auto& c : bcols) nblocks += offset_t(c.size());
                const std::size_t bs2 = std::size_t(bs) * std::size_t(bs);
                const auto baij = test::random_vector<double>(std::size_t(nblocks) * bs2, 32);
                // the expansion: row r of block row ib takes row r of each of its blocks
                std::vector<index_t> ptr{0}, col, bptr{0}, bcol;
                for (const auto& c : bcols) {
                    bcol.insert(bcol.end(), c.begin(), c.end());
                    bptr.push_back(index_t(bcol.size()));
                }
                std::vector<double> expect;
                std::size_t first = 0;  // the block row's first block
                for (index_t ib = 0; ib < nb; ++ib) {
                    const std::size_t nk = bcols[std::size_t(ib)].size();
                    for (index_t r = 0; r < bs; ++r) {
                        for (std::size_t k = 0; k < nk; ++k)
                            for (index_t c = 0; c < bs; ++c) {
                                expect.push_back(
                                    baij[(first + k) * bs2 + std::size_t(c) * std::size_t(bs) +
                                         std::size_t(r)]);
                                col.push_back(bcols[std::size_t(ib)][k] * bs + c);
                            }
                        ptr.push_back(index_t(expect.size()));
                    }
                    first += nk;
                }
                const index_t rows = nb * bs;
                const Array<index_t> dbptr = Array<index_t>(bptr).to(exec);
                const Array<index_t> dbcol = Array<index_t>(bcol).to(exec);
                Array<index_t> dptr = Array<index_t>(std::vector<index_t>(ptr.size(), -1)).to(exec);
                Array<index_t> dcol = Array<index_t>(std::vector<index_t>(col.size(), -1)).to(exec);
                const Array<double> dsrc = Array<double>(baij).to(exec);
                Array<double> dst = Array<double>(std::vector<double>(expect.size(), 7.0)).to(exec);
                dispatch_executor(*exec, [&](const auto& e) {
                    kernels::block_pattern_to_csr(e, nb, bs, dbptr.data(), dbcol.data(),
                                                  dptr.data(), dcol.data());
                    kernels::block_values_to_csr(e, rows, bs, dptr.data(), dsrc.data(), dst.data());
                });
                exec->synchronize();
                BOOST_TEST(dptr.to_vector() == ptr, boost::test_tools::per_element());
                BOOST_TEST(dcol.to_vector() == col, boost::test_tools::per_element());
                BOOST_TEST(same_bits(dst.to_vector(), expect));
            }
        }
    }
}

// A rank that owns no rows of a distributed matrix asks for its preconditioner of a 0 x 0
// block: every type gives one that sets up, refreshes and applies without touching memory.
BOOST_AUTO_TEST_CASE(a_block_with_no_rows_gets_a_preconditioner_that_does_nothing)
{
    const auto exec = test::test_executor();
    Csr<double> e;
    e.rows = e.cols = 0;
    e.row_ptr = Array<offset_t>(std::vector<offset_t>{0});
    for (const PcType type : {PcType::none, PcType::jacobi, PcType::block_jacobi, PcType::ilu0,
                              PcType::ilu0_mc, PcType::amg, PcType::cpr}) {
        const index_t nc = type == PcType::cpr ? 3 : 1;
        auto m = make_preconditioner<double>(type, e, nc, exec);
        BOOST_REQUIRE(m);
        BOOST_TEST(m->rows() == 0);
        m->update_values(e);
        Array<double> r(exec, 0), z(exec, 0);
        m->apply(r.data(), z.data());
        CsrPatternView p;
        p.rows = 0;
        const offset_t zero = 0;
        p.row_ptr64 = &zero;
        BOOST_TEST(make_preconditioner<double>(type, p, nullptr, nc, exec, PcOptions{})->rows() ==
                   0);
    }
}

// A square matrix with rows but no stored entries (a Matrix Market file with nnz 0): every
// factorising type refuses it with an InputError naming the first singular row, as for a
// stored zero diagonal -- the block pattern of such a matrix is not "every block dense" (its
// slot map is empty because there are no entries, not because the blocks are full), which
// once read past the column indices and crashed ILU(0).
BOOST_AUTO_TEST_CASE(a_matrix_with_no_stored_entries_is_refused_not_read_past_its_end)
{
    const auto exec = test::test_executor();
    for (const index_t nc : {1, 2, 3}) {
        Csr<double> e;
        e.rows = e.cols = 3 * nc;
        e.row_ptr = Array<offset_t>(std::vector<offset_t>(std::size_t(e.rows) + 1, 0));
        const detail::BlockPattern p = detail::block_pattern(e, nc, "test");
        BOOST_TEST(!p.dense());
        for (const PcType type :
             {PcType::jacobi, PcType::block_jacobi, PcType::ilu0, PcType::ilu0_mc}) {
            BOOST_TEST_CONTEXT("nc " << nc << ", " << to_string(type))
            {
                BOOST_CHECK_THROW(make_preconditioner<double>(type, e, nc, exec), InputError);
            }
        }
    }
}

// Point Jacobi at a zero diagonal entry (a stored zero in row 3, no entry at all in row 7):
// by default a SingularError naming the row; with PcOptions::jacobi_zero_diagonal as PETSc's
// PCJACOBI (one: -pc_jacobi_fixdiagonal, its default; zero: without it) M⁻¹ holds 1 or 0 there
// and 1/a_ii elsewhere -- from a host Csr, from values on the executor, and after values-only
// updates (host and executor), each against 1/a_ii computed here. block_inverse() is not
// offered after such a row (a caller folding M⁻¹ into A writes A's diagonal times it as 1),
// and is again once the values have no zero diagonal. Block Jacobi ignores the option.
BOOST_AUTO_TEST_CASE(jacobi_takes_a_zero_diagonal_as_petsc_does_when_told_to)
{
    const auto exec = test::test_executor();
    const Csr<double> good = reservoir_csr(4, 3, 3, 1, false, 21);
    const Csr<double> bad = edit_pattern(good, [](std::vector<std::map<index_t, double>>& rows) {
        rows[3][3] = 0.0;
        rows[7].erase(7);
    });
    const Csr<double> bad2 = new_values(bad, 22);  // the same pattern, other values
    const auto r = test::random_vector<double>(std::size_t(good.rows), 23);
    BOOST_CHECK_THROW(make_preconditioner<double>(PcType::jacobi, bad, 1, exec), SingularError);
    for (const ZeroDiagonal zd : {ZeroDiagonal::one, ZeroDiagonal::zero}) {
        BOOST_TEST_CONTEXT((zd == ZeroDiagonal::one ? "one" : "zero"))
        {
            PcOptions o;
            o.jacobi_zero_diagonal = zd;
            const auto expect = [&](const Csr<double>& a) {
                std::vector<double> z(r.size());
                for (index_t i = 0; i < a.rows; ++i) {
                    double d = 0;
                    for (offset_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
                        if (a.col_idx[std::size_t(k)] == i) d += a.values[std::size_t(k)];
                    const double inv = d != 0 ? 1.0 / d : (zd == ZeroDiagonal::one ? 1.0 : 0.0);
                    z[std::size_t(i)] = inv * r[std::size_t(i)];
                }
                return z;
            };
            const auto close = [](const std::vector<double>& x, const std::vector<double>& y) {
                for (std::size_t i = 0; i < x.size(); ++i)
                    if (!(std::abs(x[i] - y[i]) <= 1e-14 * std::max(1.0, std::abs(y[i]))))
                        return false;
                return x.size() == y.size();
            };
            auto m = make_preconditioner<double>(PcType::jacobi, bad, 1, exec, o);
            BOOST_TEST(close(apply_pc(*m, r), expect(bad)));
            BOOST_TEST(m->block_inverse() == nullptr);
            BOOST_TEST(m->describe().find("zero diagonal entry") != std::string::npos);
            m->update_values(bad2);
            BOOST_TEST(close(apply_pc(*m, r), expect(bad2)));
            // from the values on the executor (the pattern on the host)
            const Csr<double> on_exec = bad.to(exec);
            CsrPatternView p;
            p.rows = bad.rows;
            p.row_ptr64 = bad.row_ptr.data();
            p.col_idx = bad.col_idx.data();
            auto mv =
                make_preconditioner<double>(PcType::jacobi, p, on_exec.values.data(), 1, exec, o);
            BOOST_TEST(close(apply_pc(*mv, r), expect(bad)));
            const Csr<double> on_exec2 = bad2.to(exec);
            BOOST_TEST(mv->update_values_device(on_exec2.values.data(), bad2.nnz()));
            BOOST_TEST(close(apply_pc(*mv, r), expect(bad2)));
            // no zero diagonal any more: the inverse is 1/a_ii everywhere, offered again
            const Csr<double> fixed =
                edit_pattern(bad, [](std::vector<std::map<index_t, double>>& rows) {
                    rows[3][3] = 6.0;
                    rows[7][7] = 6.0;
                });
            auto mf = make_preconditioner<double>(PcType::jacobi, fixed, 1, exec, o);
            BOOST_TEST(mf->block_inverse() != nullptr);
            BOOST_TEST(close(apply_pc(*mf, r), expect(fixed)));
            // block Jacobi (Nc = 1 blocks) keeps its error
            BOOST_CHECK_THROW(make_preconditioner<double>(PcType::block_jacobi, bad, 1, exec, o),
                              SingularError);
        }
    }
}
