// The AMG setup on a CUDA executor; amg_device.hpp says what each step does and how it
// matches the CPU reference (amg_setup.cpp).
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/cuda_common.hpp"
#include "solver/precond/amg/amg_device.hpp"
#include "solver/precond/amg/amg_setup.hpp"

namespace heptane::amg {

namespace {

constexpr int threads = 256;

__device__ inline long long thread_index()
{
    return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// ---- kernels ---------------------------------------------------------------------------------

__global__ void to_int32(long long n, const offset_t* __restrict__ in, int* __restrict__ out)
{
    const long long i = thread_index();
    if (i < n) out[i] = static_cast<int>(in[i]);
}

__global__ void to_offset(long long n, const int* __restrict__ in, offset_t* __restrict__ out)
{
    const long long i = thread_index();
    if (i < n) out[i] = in[i];
}

template <class VT>
__global__ void convert(long long n, const double* __restrict__ in, VT* __restrict__ out)
{
    const long long i = thread_index();
    if (i < n) out[i] = static_cast<VT>(in[i]);
}

// strength, Nc = 1 (amg_setup.cpp's scalar branch, operation for operation)
__global__ void abs_diagonal(index_t n, const offset_t* __restrict__ rp,
                             const index_t* __restrict__ ci, const double* __restrict__ v,
                             double* __restrict__ d)
{
    const long long i = thread_index();
    if (i >= n) return;
    double s = 0;
    for (offset_t k = rp[i]; k < rp[i + 1]; ++k)
        if (ci[k] == i) s += fabs(v[k]);
    d[i] = s;
}

__global__ void strong_count(index_t n, const offset_t* __restrict__ rp,
                             const index_t* __restrict__ ci, const double* __restrict__ v,
                             const double* __restrict__ d, double theta, char* __restrict__ keep,
                             offset_t* __restrict__ cnt)
{
    const long long i = thread_index();
    if (i >= n) return;
    offset_t m = 0;
    for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
        const index_t j = ci[k];
        const double x = fabs(v[k]);
        const bool strong = j == i || (x > 0 && x > __dmul_rn(theta, sqrt(__dmul_rn(d[i], d[j]))));
        keep[k] = strong ? 1 : 0;
        if (strong && j != i) ++m;
    }
    cnt[i] = m;
}

__global__ void strong_fill(index_t n, const offset_t* __restrict__ rp,
                            const index_t* __restrict__ ci, const double* __restrict__ v,
                            const double* __restrict__ d, const char* __restrict__ keep,
                            const offset_t* __restrict__ sp, index_t* __restrict__ adj,
                            float* __restrict__ w)
{
    const long long i = thread_index();
    if (i >= n) return;
    offset_t q = sp[i];
    for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
        const index_t j = ci[k];
        if (j == i || !keep[k]) continue;
        const double ref = sqrt(__dmul_rn(d[i], d[j]));
        adj[q] = j;
        w[q] = ref > 0 ? static_cast<float>(fabs(v[k]) / ref) : static_cast<float>(DBL_MAX);
        ++q;
    }
}

// box aggregation: each axis' sum of |a_ij| / sqrt(|a_ii a_jj|) and count (sums[0..2],
// sums[3..5]), one thread a row, a warp's partial sums added once
__global__ void axis_sums(index_t n, index_t nx, index_t ny, const offset_t* __restrict__ rp,
                          const index_t* __restrict__ ci, const double* __restrict__ v,
                          const double* __restrict__ d, double* __restrict__ sums)
{
    const long long i = thread_index();
    double s[6] = {0, 0, 0, 0, 0, 0};
    if (i < n)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            const index_t j = ci[k];
            const int axis = j == i ? -1 : grid_axis(index_t(i), j, nx, ny);
            if (axis < 0) continue;
            const double dd = d[i] * d[j];
            s[axis] += dd > 0 ? fabs(v[k]) / sqrt(dd) : 0.0;
            s[axis + 3] += 1;
        }
    for (int q = 0; q < 6; ++q) {
        double x = s[q];
        for (int o = 16; o > 0; o /= 2) x += __shfl_down_sync(0xffffffffU, x, o);
        if ((threadIdx.x & 31) == 0 && x != 0) atomicAdd(sums + q, x);
    }
}

// T of box aggregation: row i holds a single 1 in its box's column
__global__ void tentative_rows(index_t n, const index_t* __restrict__ id,
                               offset_t* __restrict__ ptr, index_t* __restrict__ col,
                               double* __restrict__ val)
{
    const long long i = thread_index();
    if (i >= n) return;
    ptr[i] = i;
    col[i] = id[i];
    val[i] = 1;
    if (i == n - 1) ptr[n] = n;
}

__global__ void box_ids(index_t n, index_t nx, index_t ny, index_t sx, index_t sy, index_t sz,
                        index_t cx, index_t cy, index_t cz, index_t* __restrict__ id)
{
    const long long i = thread_index();
    if (i < n) id[i] = box_of(index_t(i), nx, ny, sx, sy, sz, cx, cy, cz);
}

// plain box aggregation's Galerkin product (BoxMap, amg_setup.hpp): the codes of the couplings
// (a warp's bits or-ed once), each coarse row's entry count and columns, and its values
__global__ void box_stencil_bits(index_t n, BoxMap m, const offset_t* __restrict__ rp,
                                 const index_t* __restrict__ ci, unsigned* __restrict__ mask)
{
    const long long i = thread_index();
    unsigned bits = 0;
    if (i < n)
        for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
            const int q = m.code(index_t(i), ci[k]);
            bits |= q < 0 ? box_wide : 1u << q;
        }
    for (int o = 16; o > 0; o /= 2) bits |= __shfl_xor_sync(0xffffffffU, bits, o);
    if ((threadIdx.x & 31) == 0 && bits) atomicOr(mask, bits);
}

__global__ void box_row_counts(index_t nc, BoxMap m, std::uint32_t mask, offset_t* __restrict__ cnt)
{
    const long long r = thread_index();
    if (r >= nc) return;
    offset_t c = 0;
    for (int q = 0; q < 27; ++q)
        if ((mask >> q & 1u) && m.column(index_t(r), q) >= 0) ++c;
    cnt[r] = c;
}

__global__ void box_row_columns(index_t nc, BoxMap m, std::uint32_t mask,
                                const offset_t* __restrict__ ptr, index_t* __restrict__ col)
{
    const long long r = thread_index();
    if (r >= nc) return;
    offset_t k = ptr[r];
    for (int q = 0; q < 27; ++q) {
        const index_t j = (mask >> q & 1u) ? m.column(index_t(r), q) : -1;
        if (j >= 0) col[k++] = j;
    }
}

__global__ void box_row_values(index_t nc, BoxMap m, const offset_t* __restrict__ rp,
                               const index_t* __restrict__ ci, const double* __restrict__ v,
                               const offset_t* __restrict__ cp, const index_t* __restrict__ cc,
                               double* __restrict__ cv)
{
    const long long r = thread_index();
    if (r >= nc) return;
    double acc[27];
    m.sum_row(index_t(r), rp, ci, v, acc);  // the pattern holds every code (box_stencil_bits)
    for (offset_t k = cp[r]; k < cp[r + 1]; ++k) cv[k] = acc[m.coarse_code(index_t(r), cc[k])];
}

// the distance-2 independent set: one synchronous round = keys, max over distance 1, max over
// distance 2 and the new states
__global__ void mis_init(index_t n, const offset_t* __restrict__ sp, std::uint8_t* __restrict__ st)
{
    const long long i = thread_index();
    if (i < n) st[i] = sp[i] == sp[i + 1] ? mis_out : mis_undecided;
}

__global__ void mis_keys(index_t n, const std::uint8_t* __restrict__ st,
                         std::uint64_t* __restrict__ key)
{
    const long long i = thread_index();
    if (i < n) key[i] = mis_key(st[i], index_t(i));
}

__global__ void mis_max(index_t n, const offset_t* __restrict__ sp, const index_t* __restrict__ adj,
                        const std::uint64_t* __restrict__ in, std::uint64_t* __restrict__ out)
{
    const long long i = thread_index();
    if (i >= n) return;
    std::uint64_t m = in[i];
    for (offset_t k = sp[i]; k < sp[i + 1]; ++k) m = max(m, in[adj[k]]);
    out[i] = m;
}

__global__ void mis_update(index_t n, const offset_t* __restrict__ sp,
                           const index_t* __restrict__ adj, const std::uint64_t* __restrict__ m1,
                           const std::uint64_t* __restrict__ key, std::uint8_t* __restrict__ st,
                           unsigned long long* __restrict__ undecided)
{
    const long long i = thread_index();
    if (i >= n || st[i] != mis_undecided) return;
    std::uint64_t m = m1[i];
    for (offset_t k = sp[i]; k < sp[i + 1]; ++k) m = max(m, m1[adj[k]]);
    const std::uint8_t s = mis_next_state(m, key[i]);
    st[i] = s;
    if (s == mis_undecided) atomicAdd(undecided, 1ULL);
}

__global__ void flag_roots(index_t n, const std::uint8_t* __restrict__ st,
                           offset_t* __restrict__ flag)
{
    const long long i = thread_index();
    if (i < n) flag[i] = st[i] == mis_root ? 1 : 0;
}

__global__ void number_roots(index_t n, const std::uint8_t* __restrict__ st,
                             const offset_t* __restrict__ pos, index_t* __restrict__ id)
{
    const long long i = thread_index();
    if (i < n) id[i] = st[i] == mis_root ? index_t(pos[i]) : -1;
}

// next[i] for a node without an aggregate yet: the strongest aggregated neighbour's
__global__ void join(index_t n, const offset_t* __restrict__ sp, const index_t* __restrict__ adj,
                     const float* __restrict__ w, const index_t* __restrict__ id,
                     index_t* __restrict__ next, int* __restrict__ changed)
{
    const long long i = thread_index();
    if (i >= n) return;
    if (id[i] >= 0 || sp[i] == sp[i + 1]) {
        next[i] = id[i];
        return;
    }
    const index_t g = strongest_aggregated(sp, adj, w, index_t(i), id);
    next[i] = g;
    if (g >= 0) *changed = 1;
}

__global__ void flag_leftovers(index_t n, const offset_t* __restrict__ sp,
                               const index_t* __restrict__ id, offset_t* __restrict__ flag)
{
    const long long i = thread_index();
    if (i < n) flag[i] = (id[i] < 0 && sp[i] < sp[i + 1]) ? 1 : 0;
}

__global__ void number_leftovers(index_t n, index_t base, const offset_t* __restrict__ flag_pos,
                                 const offset_t* __restrict__ sp, index_t* __restrict__ id)
{
    const long long i = thread_index();
    if (i < n && id[i] < 0 && sp[i] < sp[i + 1]) id[i] = base + index_t(flag_pos[i]);
}

// prolongator: the filtered diagonal and the Gershgorin bound (max by the bits of a
// non-negative double)
__global__ void filtered_diagonal(index_t n, const offset_t* __restrict__ rp,
                                  const index_t* __restrict__ ci, const double* __restrict__ v,
                                  const char* __restrict__ keep, double* __restrict__ dF,
                                  unsigned long long* __restrict__ rho_bits)
{
    const long long i = thread_index();
    if (i >= n) return;
    double d = 0, off = 0;
    for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
        if (ci[k] == i)
            d += v[k];
        else if (!keep[k])
            d += v[k];
        else
            off += fabs(v[k]);
    }
    dF[i] = d;
    if (d != 0)
        atomicMax(rho_bits,
                  static_cast<unsigned long long>(__double_as_longlong(1.0 + off / fabs(d))));
}

// The entries of row i of P before merging, in the CPU's order: q = −1 is T's 1, then A's
// row; false where the entry does not exist.
struct PEntries {
    const offset_t* rp;
    const index_t* ci;
    const double* v;
    const char* keep;
    const index_t* agg;
    const double* dF;
    double omega;

    __device__ bool get(index_t i, double f, offset_t q, index_t& col, double& val) const
    {
        if (q < 0) {
            col = agg[i];
            val = 1.0;
            return col >= 0;
        }
        if (dF[i] == 0) return false;
        const offset_t k = rp[i] + q;
        const index_t j = ci[k];
        if (j != i && !keep[k]) return false;
        col = agg[j];
        if (col < 0) return false;
        val = __dmul_rn(-f, j == i ? dF[i] : v[k]);
        return true;
    }
};

// count (out_col == nullptr) or fill row i of P: each column once, summed in entry order,
// exact zeros dropped; then the row sorted by column
__global__ void prolongator_rows(index_t n, PEntries e, const offset_t* __restrict__ pp,
                                 offset_t* __restrict__ cnt, index_t* __restrict__ out_col,
                                 double* __restrict__ out_val)
{
    const long long ii = thread_index();
    if (ii >= n) return;
    const index_t i = index_t(ii);
    const double f = e.dF[i] != 0 ? e.omega / e.dF[i] : 0.0;
    const offset_t len = e.rp[i + 1] - e.rp[i];
    offset_t c = 0;
    const offset_t base = out_col ? pp[i] : 0;
    for (offset_t q = -1; q < len; ++q) {
        index_t col;
        double val;
        if (!e.get(i, f, q, col, val)) continue;
        bool first = true;
        for (offset_t t = -1; t < q && first; ++t) {
            index_t c2;
            double v2;
            if (e.get(i, f, t, c2, v2) && c2 == col) first = false;
        }
        if (!first) continue;
        double s = val;
        for (offset_t t = q + 1; t < len; ++t) {
            index_t c2;
            double v2;
            if (e.get(i, f, t, c2, v2) && c2 == col) s = __dadd_rn(s, v2);
        }
        if (s == 0) continue;
        if (out_col) {
            out_col[base + c] = col;
            out_val[base + c] = s;
        }
        ++c;
    }
    if (!out_col) {
        cnt[i] = c;
        return;
    }
    for (offset_t a = 1; a < c; ++a) {  // insertion sort of the row (short)
        const index_t kc = out_col[base + a];
        const double kv = out_val[base + a];
        offset_t b = a - 1;
        while (b >= 0 && out_col[base + b] > kc) {
            out_col[base + b + 1] = out_col[base + b];
            out_val[base + b + 1] = out_val[base + b];
            --b;
        }
        out_col[base + b + 1] = kc;
        out_val[base + b + 1] = kv;
    }
}

// rows whose columns are not increasing (cuSPARSE's SpGEMM output order is not promised)
__global__ void count_unsorted(index_t n, const int* __restrict__ rp,
                               const index_t* __restrict__ ci, unsigned long long* __restrict__ bad)
{
    const long long i = thread_index();
    if (i >= n) return;
    for (int k = rp[i] + 1; k < rp[i + 1]; ++k)
        if (ci[k - 1] >= ci[k]) {
            atomicAdd(bad, 1ULL);
            return;
        }
}

// perm[k] for the sorted order of each row (insertion sort of positions)
__global__ void sort_permutation(index_t n, const int* __restrict__ rp,
                                 const index_t* __restrict__ ci, int* __restrict__ perm)
{
    const long long i = thread_index();
    if (i >= n) return;
    const int b = rp[i], e = rp[i + 1];
    for (int k = b; k < e; ++k) perm[k] = k;
    for (int a = b + 1; a < e; ++a) {
        const int key = perm[a];
        int q = a - 1;
        while (q >= b && ci[perm[q]] > ci[key]) {
            perm[q + 1] = perm[q];
            --q;
        }
        perm[q + 1] = key;
    }
}

template <class T>
__global__ void gather(long long n, const int* __restrict__ perm, const T* __restrict__ in,
                       T* __restrict__ out)
{
    const long long k = thread_index();
    if (k < n) out[k] = perm ? in[perm[k]] : in[k];
}

template <class VT>
__global__ void inverse_diagonal_kernel(index_t n, const offset_t* __restrict__ rp,
                                        const index_t* __restrict__ ci,
                                        const double* __restrict__ v, bool l1, VT* __restrict__ d,
                                        int* __restrict__ bad)
{
    const long long i = thread_index();
    if (i >= n) return;
    double diag = 0, sum = 0;
    for (offset_t k = rp[i]; k < rp[i + 1]; ++k) {
        if (ci[k] == i)
            diag += v[k];
        else
            sum += fabs(v[k]);
    }
    const double x = l1 ? fabs(diag) + sum : diag;
    if (x == 0 || !isfinite(x)) {
        atomicMin(bad, int(i));
        d[i] = 0;
    } else {
        d[i] = static_cast<VT>(1.0 / x);
    }
}

// ---- host helpers ----------------------------------------------------------------------------

const CudaExecutor& cuda_of(const std::shared_ptr<const Executor>& e)
{
    HEPTANE_ENSURE(e && e->is_cuda(), InputError, "AMG device setup: the executor is not CUDA");
    return static_cast<const CudaExecutor&>(*e);
}

using cuda::read_back;

template <class T>
void zero(const CudaExecutor& e, T* p, std::size_t n = 1)
{
    HEPTANE_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(T), cuda::stream(e)));
}

#define HEPTANE_LAUNCH(kernel, n, ...)                                                           \
    do {                                                                                         \
        if ((n) > 0) {                                                                           \
            kernel<<<cuda::grid_for((n), threads), threads, 0, cuda::stream(ce)>>>(__VA_ARGS__); \
            HEPTANE_CUDA_LAUNCH_CHECK();                                                         \
        }                                                                                        \
    } while (0)

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// 32-bit row pointers of a device CSR matrix, for cuSPARSE
Array<int> ptr32(const std::shared_ptr<const Executor>& exec, const Csr<double>& a)
{
    const CudaExecutor& ce = cuda_of(exec);
    HEPTANE_ENSURE(a.nnz() < offset_t(std::numeric_limits<int>::max()), InputError,
                   "AMG device setup: a level has "
                       << a.nnz()
                       << " entries, more than cuSPARSE's SpGEMM takes "
                          "(2^31); use the host setup (--amg-setup host)");
    Array<int> p(exec, std::size_t(a.rows) + 1);
    HEPTANE_LAUNCH(to_int32, static_cast<long long>(a.rows) + 1, static_cast<long long>(a.rows) + 1,
                   a.row_ptr.data(), p.data());
    return p;
}

cusparseSpMatDescr_t describe(const Csr<double>& a, int* ptr)
{
    cusparseSpMatDescr_t d = nullptr;
    HEPTANE_CUSPARSE_CHECK(
        cusparseCreateCsr(&d, a.rows, a.cols, a.nnz(), ptr, const_cast<index_t*>(a.col_idx.data()),
                          const_cast<double*>(a.values.data()), CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    return d;
}

/// C = A B with cuSPARSE's SpGEMM reuse API: the pattern once, compute() for new values.
struct SpGemm {
    const CudaExecutor* ce = nullptr;
    cusparseSpMatDescr_t a = nullptr, b = nullptr, c = nullptr;
    cusparseSpGEMMDescr_t desc = nullptr;
    Array<char> buf4, buf5;
    Array<int> c_ptr;
    Array<index_t> c_col;
    Array<double> c_val;
    index_t rows = 0, cols = 0;

    SpGemm(const std::shared_ptr<const Executor>& exec, cusparseSpMatDescr_t a_,
           cusparseSpMatDescr_t b_, index_t m, index_t n)
        : ce(&cuda_of(exec)), a(a_), b(b_), rows(m), cols(n)
    {
        cusparseHandle_t h = cuda::cusparse(*ce);
        const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
        const auto alg = CUSPARSE_SPGEMM_DEFAULT;
        c_ptr = Array<int>(exec, std::size_t(m) + 1);
        HEPTANE_CUSPARSE_CHECK(cusparseCreateCsr(&c, m, n, 0, c_ptr.data(), nullptr, nullptr,
                                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
        HEPTANE_CUSPARSE_CHECK(cusparseSpGEMM_createDescr(&desc));
        std::size_t s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
        HEPTANE_CUSPARSE_CHECK(
            cusparseSpGEMMreuse_workEstimation(h, op, op, a, b, c, alg, desc, &s1, nullptr));
        Array<char> buf1(exec, std::max<std::size_t>(s1, 1));
        HEPTANE_CUSPARSE_CHECK(
            cusparseSpGEMMreuse_workEstimation(h, op, op, a, b, c, alg, desc, &s1, buf1.data()));
        HEPTANE_CUSPARSE_CHECK(cusparseSpGEMMreuse_nnz(h, op, op, a, b, c, alg, desc, &s2, nullptr,
                                                       &s3, nullptr, &s4, nullptr));
        Array<char> buf2(exec, std::max<std::size_t>(s2, 1)),
            buf3(exec, std::max<std::size_t>(s3, 1));
        buf4 = Array<char>(exec, std::max<std::size_t>(s4, 1));
        HEPTANE_CUSPARSE_CHECK(cusparseSpGEMMreuse_nnz(
            h, op, op, a, b, c, alg, desc, &s2, buf2.data(), &s3, buf3.data(), &s4, buf4.data()));
        std::int64_t r = 0, cc = 0, nnz = 0;
        HEPTANE_CUSPARSE_CHECK(cusparseSpMatGetSize(c, &r, &cc, &nnz));
        HEPTANE_ENSURE(nnz < std::int64_t(std::numeric_limits<int>::max()), InputError,
                       "AMG device setup: a Galerkin product has "
                           << nnz
                           << " entries, more than cuSPARSE's SpGEMM takes (2^31); use the "
                              "host setup (--amg-setup host)");
        c_col = Array<index_t>(exec, std::size_t(nnz));
        c_val = Array<double>(exec, std::size_t(nnz));
        HEPTANE_CUSPARSE_CHECK(cusparseCsrSetPointers(c, c_ptr.data(), c_col.data(), c_val.data()));
        HEPTANE_CUSPARSE_CHECK(
            cusparseSpGEMMreuse_copy(h, op, op, a, b, c, alg, desc, &s5, nullptr));
        buf5 = Array<char>(exec, std::max<std::size_t>(s5, 1));
        HEPTANE_CUSPARSE_CHECK(
            cusparseSpGEMMreuse_copy(h, op, op, a, b, c, alg, desc, &s5, buf5.data()));
        compute();  // buf1-3 are freed in stream order after it (core/executor.hpp)
    }
    void compute()
    {
        const double one = 1, zero_v = 0;
        HEPTANE_CUSPARSE_CHECK(cusparseSpGEMMreuse_compute(
            cuda::cusparse(*ce), CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
            &one, a, b, &zero_v, c, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, desc));
    }
    ~SpGemm()
    {
        if (desc) cusparseSpGEMM_destroyDescr(desc);
        if (c) cusparseDestroySpMat(c);
    }
    SpGemm(const SpGemm&) = delete;
    SpGemm& operator=(const SpGemm&) = delete;
};

}  // namespace

struct DeviceHierarchy::Impl {
    std::shared_ptr<const Executor> exec;
    const CudaExecutor* ce = nullptr;
    struct Level {
        Csr<double> a;       // the level matrix (sorted rows)
        Array<int> a_ptr32;  // its 32-bit row pointers (cuSPARSE)
        cusparseSpMatDescr_t a_desc = nullptr;
        Array<index_t> agg;  // of each node, on the device
        Csr<double> p, r;    // to the next level
        Array<int> p_ptr32, r_ptr32;
        cusparseSpMatDescr_t p_desc = nullptr, r_desc = nullptr;
        std::unique_ptr<SpGemm> ap, rap;         // A P and R (A P)
        cusparseSpMatDescr_t ap_desc = nullptr;  // A P as an input of the second product
        Array<int> perm;                         // the next level's sorted order of rap's output
        bool permuted = false;
        bool box_direct = false;  // plain box aggregation: the next level by box sums (map)
        BoxMap map{};
        ~Level()
        {
            if (a_desc) cusparseDestroySpMat(a_desc);
            if (p_desc) cusparseDestroySpMat(p_desc);
            if (r_desc) cusparseDestroySpMat(r_desc);
            if (ap_desc) cusparseDestroySpMat(ap_desc);
        }
    };
    std::vector<std::unique_ptr<Level>> levels;
    std::vector<Grid> grids;  // box aggregation: every level's grid
    bool dense_coarse = true;
    double ms[4] = {0, 0, 0, 0};
    Array<char> scan_tmp;

    offset_t scan(Array<offset_t>& counts, Array<offset_t>& out, std::size_t n)  // n + 1 entries
    {
        std::size_t bytes = 0;
        HEPTANE_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.data(), out.data(),
                                                         static_cast<long long>(n) + 1,
                                                         cuda::stream(*ce)));
        if (scan_tmp.size() < bytes) scan_tmp = Array<char>(exec, bytes);
        HEPTANE_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_tmp.data(), bytes, counts.data(),
                                                         out.data(), static_cast<long long>(n) + 1,
                                                         cuda::stream(*ce)));
        return read_back(*ce, out.data() + n);
    }

    // the smoothed-aggregation aggregates of the strong graph (sp, adj, w) into id; their count
    index_t mis_aggregates(const Csr<double>& a, const Array<offset_t>& sp,
                           const Array<index_t>& adj, const Array<float>& w, Array<offset_t>& cnt,
                           Array<index_t>& id)
    {
        const CudaExecutor& ce = *this->ce;
        const index_t n = a.rows;
        const std::size_t nn = std::size_t(n);
        Array<std::uint8_t> st(exec, nn);
        Array<std::uint64_t> key(exec, nn), m1(exec, nn);
        Array<unsigned long long> counter(exec, 1);
        HEPTANE_LAUNCH(mis_init, n, n, sp.data(), st.data());
        for (unsigned long long undecided = 1; undecided > 0;) {
            zero(ce, counter.data());
            HEPTANE_LAUNCH(mis_keys, n, n, st.data(), key.data());
            HEPTANE_LAUNCH(mis_max, n, n, sp.data(), adj.data(), key.data(), m1.data());
            HEPTANE_LAUNCH(mis_update, n, n, sp.data(), adj.data(), m1.data(), key.data(),
                           st.data(), counter.data());
            undecided = n > 0 ? read_back(ce, counter.data()) : 0;
        }
        HEPTANE_LAUNCH(flag_roots, n, n, st.data(), cnt.data());
        Array<offset_t> pos(exec, nn + 1);
        index_t count = index_t(scan(cnt, pos, nn));
        Array<index_t> next(exec, nn);
        HEPTANE_LAUNCH(number_roots, n, n, st.data(), pos.data(), id.data());
        Array<int> changed(exec, 1);
        for (int pass = 0;; ++pass) {  // pass 0: the roots' neighbours; then the rest
            zero(ce, changed.data());
            HEPTANE_LAUNCH(join, n, n, sp.data(), adj.data(), w.data(), id.data(), next.data(),
                           changed.data());
            id.swap(next);
            if (pass > 0 && (n == 0 || read_back(ce, changed.data()) == 0)) break;
        }
        HEPTANE_LAUNCH(flag_leftovers, n, n, sp.data(), id.data(), cnt.data());
        const index_t left = index_t(scan(cnt, pos, nn));
        if (left > 0)
            HEPTANE_LAUNCH(number_leftovers, n, n, count, pos.data(), sp.data(), id.data());
        count += left;
        return count;
    }

    // plain box aggregation: the next level by box sums when every coupling of L.a joins
    // neighbouring boxes (false: it does not, the general product instead)
    bool box_galerkin(Level& L, const Grid& step)
    {
        const CudaExecutor& ce = *this->ce;
        const Csr<double>& a = L.a;
        const index_t n = a.rows;
        const BoxMap map = box_map(grids[grids.size() - 2], step);
        Array<unsigned> bits(exec, 1);
        const unsigned self = 1u << box_self;
        HEPTANE_CUDA_CHECK(cudaMemcpyAsync(bits.data(), &self, sizeof self, cudaMemcpyHostToDevice,
                                           cuda::stream(ce)));
        HEPTANE_LAUNCH(box_stencil_bits, n, n, map, a.row_ptr.data(), a.col_idx.data(),
                       bits.data());
        const std::uint32_t mask = read_back(ce, bits.data());
        if (mask & box_wide) return false;
        const index_t nc = map.cx * map.cy * map.cz;
        const std::size_t ncs = std::size_t(nc);
        auto next_level = std::make_unique<Level>();
        Csr<double>& c = next_level->a;
        c.rows = c.cols = nc;
        Array<offset_t> cnt(exec, ncs + 1);
        HEPTANE_LAUNCH(box_row_counts, nc, nc, map, mask, cnt.data());
        c.row_ptr = Array<offset_t>(exec, ncs + 1);
        const offset_t cnnz = scan(cnt, c.row_ptr, ncs);
        c.col_idx = Array<index_t>(exec, std::size_t(cnnz));
        c.values = Array<double>(exec, std::size_t(cnnz));
        HEPTANE_LAUNCH(box_row_columns, nc, nc, map, mask, c.row_ptr.data(), c.col_idx.data());
        HEPTANE_LAUNCH(box_row_values, nc, nc, map, a.row_ptr.data(), a.col_idx.data(),
                       a.values.data(), c.row_ptr.data(), c.col_idx.data(), c.values.data());
        next_level->a_ptr32 = ptr32(exec, c);
        next_level->a_desc = describe(c, next_level->a_ptr32.data());
        L.box_direct = true;
        L.map = map;
        levels.push_back(std::move(next_level));
        return true;
    }

    // level l's coarsening: false when it stalls (then level l is the coarsest)
    bool coarsen(Level& L, const AmgOptions& o)
    {
        const CudaExecutor& ce = *this->ce;
        const Csr<double>& a = L.a;
        const index_t n = a.rows;
        const std::size_t nn = std::size_t(n);
        auto t = clock_type::now();
        // strength (boxes with plain aggregation need only |a_ii|: the boxes come from the
        // axes' mean strength, T from the boxes)
        const bool plain_box = o.aggregation == AmgAggregation::box && o.prolongation_weight == 0;
        Array<double> d(exec, nn);
        Array<char> keep;
        Array<offset_t> cnt(exec, nn + 1), sp;
        Array<index_t> adj;
        Array<float> w;
        HEPTANE_LAUNCH(abs_diagonal, n, n, a.row_ptr.data(), a.col_idx.data(), a.values.data(),
                       d.data());
        if (!plain_box) {
            keep = Array<char>(exec, std::size_t(a.nnz()));
            sp = Array<offset_t>(exec, nn + 1);
            zero(ce, cnt.data() + n);
            HEPTANE_LAUNCH(strong_count, n, n, a.row_ptr.data(), a.col_idx.data(), a.values.data(),
                           d.data(), o.strength_threshold, keep.data(), cnt.data());
            const offset_t strong = scan(cnt, sp, nn);
            adj = Array<index_t>(exec, std::size_t(strong));
            w = Array<float>(exec, std::size_t(strong));
            HEPTANE_LAUNCH(strong_fill, n, n, a.row_ptr.data(), a.col_idx.data(), a.values.data(),
                           d.data(), keep.data(), sp.data(), adj.data(), w.data());
        }
        HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
        ms[0] += ms_since(t);
        // aggregation
        t = clock_type::now();
        Array<index_t> id(exec, nn);
        index_t count = 0;
        Grid step{1, 1, 1};
        if (o.aggregation == AmgAggregation::box) {
            const Grid& g = grids.back();
            Array<double> sums(exec, 6);
            zero(ce, sums.data(), 6);
            HEPTANE_LAUNCH(axis_sums, n, n, g[0], g[1], a.row_ptr.data(), a.col_idx.data(),
                           a.values.data(), d.data(), sums.data());
            double h[6];
            HEPTANE_CUDA_CHECK(cudaMemcpyAsync(h, sums.data(), sizeof h, cudaMemcpyDeviceToHost,
                                               cuda::stream(ce)));
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
            std::array<double, 3> mean{};
            for (int q = 0; q < 3; ++q) mean[std::size_t(q)] = h[q + 3] > 0 ? h[q] / h[q + 3] : 0.0;
            step = box_steps(mean, g, o.box_ratio);
            if (step[0] * step[1] * step[2] == 1) return false;  // nothing left to halve
            const Grid c = box_coarse_grid(g, step);
            HEPTANE_LAUNCH(box_ids, n, n, g[0], g[1], step[0], step[1], step[2], c[0], c[1], c[2],
                           id.data());
            count = c[0] * c[1] * c[2];
        } else {
            count = mis_aggregates(a, sp, adj, w, cnt, id);
        }
        ms[1] += ms_since(t);
        if (count == 0 || double(count) * 1.2 > double(n)) return false;  // stalled
        if (o.aggregation == AmgAggregation::box)
            grids.push_back(box_coarse_grid(grids.back(), step));
        // P = (I − ω D_F⁻¹ A_F) T and R = Pᵀ
        t = clock_type::now();
        Csr<double>& p = L.p;
        p.rows = n;
        p.cols = count;
        p.row_ptr = Array<offset_t>(exec, nn + 1);
        offset_t pnnz = n;
        if (plain_box) {  // T: every cell in its box
            p.col_idx = Array<index_t>(exec, nn);
            p.values = Array<double>(exec, nn);
            HEPTANE_LAUNCH(tentative_rows, n, n, id.data(), p.row_ptr.data(), p.col_idx.data(),
                           p.values.data());
        } else {
            Array<double> dF(exec, nn);
            Array<unsigned long long> rho_bits(exec, 1);
            zero(ce, rho_bits.data());
            HEPTANE_LAUNCH(filtered_diagonal, n, n, a.row_ptr.data(), a.col_idx.data(),
                           a.values.data(), keep.data(), dF.data(), rho_bits.data());
            const unsigned long long rb = read_back(ce, rho_bits.data());
            double rho = 0;
            std::memcpy(&rho, &rb, sizeof rho);
            const double omega = rho > 0 ? o.prolongation_weight / rho : 0.0;
            PEntries e{a.row_ptr.data(),
                       a.col_idx.data(),
                       a.values.data(),
                       keep.data(),
                       id.data(),
                       dF.data(),
                       omega};
            HEPTANE_LAUNCH(prolongator_rows, n, n, e, nullptr, cnt.data(), nullptr, nullptr);
            pnnz = scan(cnt, p.row_ptr, nn);
            p.col_idx = Array<index_t>(exec, std::size_t(pnnz));
            p.values = Array<double>(exec, std::size_t(pnnz));
            HEPTANE_LAUNCH(prolongator_rows, n, n, e, p.row_ptr.data(), nullptr, p.col_idx.data(),
                           p.values.data());
        }
        L.p_ptr32 = ptr32(exec, p);
        Csr<double>& r = L.r;
        r.rows = count;
        r.cols = n;
        L.r_ptr32 = Array<int>(exec, std::size_t(count) + 1);
        r.col_idx = Array<index_t>(exec, std::size_t(pnnz));
        r.values = Array<double>(exec, std::size_t(pnnz));
        {
            cusparseHandle_t h = cuda::cusparse(ce);
            std::size_t bytes = 0;
            HEPTANE_CUSPARSE_CHECK(cusparseCsr2cscEx2_bufferSize(
                h, n, count, int(pnnz), p.values.data(), L.p_ptr32.data(), p.col_idx.data(),
                r.values.data(), L.r_ptr32.data(), r.col_idx.data(), CUDA_R_64F,
                CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &bytes));
            Array<char> buf(exec, std::max<std::size_t>(bytes, 1));
            HEPTANE_CUSPARSE_CHECK(
                cusparseCsr2cscEx2(h, n, count, int(pnnz), p.values.data(), L.p_ptr32.data(),
                                   p.col_idx.data(), r.values.data(), L.r_ptr32.data(),
                                   r.col_idx.data(), CUDA_R_64F, CUSPARSE_ACTION_NUMERIC,
                                   CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, buf.data()));
        }
        r.row_ptr = Array<offset_t>(exec, std::size_t(count) + 1);
        HEPTANE_LAUNCH(to_offset, static_cast<long long>(count) + 1,
                       static_cast<long long>(count) + 1, L.r_ptr32.data(), r.row_ptr.data());
        L.agg = std::move(id);
        HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
        ms[2] += ms_since(t);
        t = clock_type::now();
        if (plain_box && box_galerkin(L, step)) {
            HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
            ms[3] += ms_since(t);
            return true;
        }
        // A_c = R (A P)
        L.p_desc = describe(p, L.p_ptr32.data());
        L.r_desc = describe(r, L.r_ptr32.data());
        L.ap = std::make_unique<SpGemm>(exec, L.a_desc, L.p_desc, n, count);
        HEPTANE_CUSPARSE_CHECK(
            cusparseCreateCsr(&L.ap_desc, n, count, L.ap->c_val.size(), L.ap->c_ptr.data(),
                              L.ap->c_col.data(), L.ap->c_val.data(), CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
        L.rap = std::make_unique<SpGemm>(exec, L.r_desc, L.ap_desc, count, count);
        auto next_level = std::make_unique<Level>();
        Csr<double>& c = next_level->a;
        const SpGemm& g = *L.rap;
        c.rows = c.cols = count;
        const long long cnnz = static_cast<long long>(g.c_val.size());
        Array<unsigned long long> bad(exec, 1);
        zero(ce, bad.data());
        HEPTANE_LAUNCH(count_unsorted, count, count, g.c_ptr.data(), g.c_col.data(), bad.data());
        L.permuted = read_back(ce, bad.data()) > 0;
        if (L.permuted) {
            L.perm = Array<int>(exec, std::size_t(cnnz));
            HEPTANE_LAUNCH(sort_permutation, count, count, g.c_ptr.data(), g.c_col.data(),
                           L.perm.data());
        }
        const int* perm = L.permuted ? L.perm.data() : nullptr;
        c.row_ptr = Array<offset_t>(exec, std::size_t(count) + 1);
        HEPTANE_LAUNCH(to_offset, static_cast<long long>(count) + 1,
                       static_cast<long long>(count) + 1, g.c_ptr.data(), c.row_ptr.data());
        c.col_idx = Array<index_t>(exec, std::size_t(cnnz));
        c.values = Array<double>(exec, std::size_t(cnnz));
        HEPTANE_LAUNCH(gather<index_t>, cnnz, cnnz, perm, g.c_col.data(), c.col_idx.data());
        HEPTANE_LAUNCH(gather<double>, cnnz, cnnz, perm, g.c_val.data(), c.values.data());
        next_level->a_ptr32 = ptr32(exec, c);
        next_level->a_desc = describe(c, next_level->a_ptr32.data());
        HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
        ms[3] += ms_since(t);
        levels.push_back(std::move(next_level));
        return true;
    }
};

DeviceHierarchy::DeviceHierarchy(const Csr<double>& a0, const AmgOptions& o,
                                 std::shared_ptr<const Executor> exec)
    : impl_(std::make_unique<Impl>())
{
    Impl& m = *impl_;
    m.exec = std::move(exec);
    m.ce = &cuda_of(m.exec);
    HEPTANE_ENSURE(a0.rows == a0.cols, InputError,
                   "AMG: the matrix is " << a0.rows << " x " << a0.cols << ", not square");
    HEPTANE_CUDA_CHECK(cudaSetDevice(m.ce->device()));
    auto first = std::make_unique<Impl::Level>();
    first->a = a0.to(m.exec);
    first->a_ptr32 = ptr32(m.exec, first->a);
    first->a_desc = describe(first->a, first->a_ptr32.data());
    m.levels.push_back(std::move(first));
    if (o.aggregation == AmgAggregation::box) m.grids.push_back(o.grid);
    while (int(m.levels.size()) < o.max_levels && m.levels.back()->a.rows > coarse_limit(o))
        if (!m.coarsen(*m.levels.back(), o)) break;
    m.dense_coarse =
        amg::dense_coarse(m.levels.back()->a.rows, m.levels.front()->a.nnz(), o.coarse_size);
}

DeviceHierarchy::~DeviceHierarchy() = default;

int DeviceHierarchy::levels() const noexcept
{
    return int(impl_->levels.size());
}
const Csr<double>& DeviceHierarchy::a(int l) const
{
    return impl_->levels.at(std::size_t(l))->a;
}
const Csr<double>& DeviceHierarchy::p(int l) const
{
    return impl_->levels.at(std::size_t(l))->p;
}
const Csr<double>& DeviceHierarchy::r(int l) const
{
    return impl_->levels.at(std::size_t(l))->r;
}
std::vector<index_t> DeviceHierarchy::aggregates(int l) const
{
    return impl_->levels.at(std::size_t(l))->agg.to_vector();
}
bool DeviceHierarchy::dense_coarse() const noexcept
{
    return impl_->dense_coarse;
}
const std::vector<Grid>& DeviceHierarchy::grids() const noexcept
{
    return impl_->grids;
}

const double* DeviceHierarchy::phase_ms() const noexcept
{
    return impl_->ms;
}

void DeviceHierarchy::refresh(const Csr<double>& a0)
{
    HEPTANE_ENSURE(a0.rows == impl_->levels.front()->a.rows, InputError,
                   "AMG refresh: the matrix does not have the pattern of the one the hierarchy "
                   "was built from");
    refresh_values(a0.values.data(), a0.nnz(), *a0.exec());
}

void DeviceHierarchy::refresh_values(const double* values, offset_t nnz, const Executor& where)
{
    Impl& m = *impl_;
    const CudaExecutor& ce = *m.ce;
    HEPTANE_CUDA_CHECK(cudaSetDevice(ce.device()));
    Csr<double>& first = m.levels.front()->a;
    HEPTANE_ENSURE(nnz == first.nnz(), InputError,
                   "AMG refresh: " << nnz << " values for a matrix of " << first.nnz()
                                   << " entries (the pattern the hierarchy was built from)");
    copy_bytes(where, values, *m.exec, first.values.data(), std::size_t(nnz) * sizeof(double));
    for (std::size_t l = 0; l + 1 < m.levels.size(); ++l) {
        Impl::Level& L = *m.levels[l];
        if (L.box_direct) {
            const Csr<double>& a = L.a;
            Csr<double>& c = m.levels[l + 1]->a;
            HEPTANE_LAUNCH(box_row_values, c.rows, c.rows, L.map, a.row_ptr.data(),
                           a.col_idx.data(), a.values.data(), c.row_ptr.data(), c.col_idx.data(),
                           c.values.data());
            continue;
        }
        L.ap->compute();
        L.rap->compute();
        Csr<double>& c = m.levels[l + 1]->a;
        const long long cnnz = static_cast<long long>(c.values.size());
        HEPTANE_LAUNCH(gather<double>, cnnz, cnnz, L.permuted ? L.perm.data() : nullptr,
                       L.rap->c_val.data(), c.values.data());
    }
    HEPTANE_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(ce)));
}

template <class VT>
Array<VT> inverse_diagonal_device(const Csr<double>& a, bool l1, int level,
                                  const std::shared_ptr<const Executor>& exec)
{
    const CudaExecutor& ce = cuda_of(exec);
    const index_t n = a.rows;
    Array<VT> d(exec, std::size_t(n));
    Array<int> bad(exec, 1);
    const int none = std::numeric_limits<int>::max();
    HEPTANE_CUDA_CHECK(
        cudaMemcpyAsync(bad.data(), &none, sizeof none, cudaMemcpyHostToDevice, cuda::stream(ce)));
    HEPTANE_LAUNCH(inverse_diagonal_kernel<VT>, n, n, a.row_ptr.data(), a.col_idx.data(),
                   a.values.data(), l1, d.data(), bad.data());
    const int first = read_back(ce, bad.data());
    HEPTANE_ENSURE(
        first == none, SingularError,
        "AMG: level " << level + 1 << " has a zero diagonal entry in row " << first + 1
                      << (level == 0 ? " of the matrix" : "") << " (its smoother divides by a_ii"
                      << (level > 0 ? "; a Galerkin product gave it: for a coupled system, CPR "
                                      "(--pc cpr, -pc_type hcpr) applies AMG to the pressure alone"
                                    : "")
                      << ")");
    return d;
}

template <class VT>
Csr<VT> device_copy(const Csr<double>& a, const std::shared_ptr<const Executor>& exec)
{
    Csr<VT> c;
    c.rows = a.rows;
    c.cols = a.cols;
    c.row_ptr = a.row_ptr.to(exec);
    c.col_idx = a.col_idx.to(exec);
    c.values = Array<VT>(exec, a.values.size());
    device_copy_values<VT>(a, c, exec);
    return c;
}

template <class VT>
void device_copy_values(const Csr<double>& a, Csr<VT>& dst,
                        const std::shared_ptr<const Executor>& exec)
{
    const CudaExecutor& ce = cuda_of(exec);
    const long long n = static_cast<long long>(a.values.size());
    HEPTANE_LAUNCH(convert<VT>, n, n, a.values.data(), dst.values.data());
}

template Array<double> inverse_diagonal_device<double>(const Csr<double>&, bool, int,
                                                       const std::shared_ptr<const Executor>&);
template Array<float> inverse_diagonal_device<float>(const Csr<double>&, bool, int,
                                                     const std::shared_ptr<const Executor>&);
template Csr<double> device_copy<double>(const Csr<double>&,
                                         const std::shared_ptr<const Executor>&);
template Csr<float> device_copy<float>(const Csr<double>&, const std::shared_ptr<const Executor>&);
template void device_copy_values<double>(const Csr<double>&, Csr<double>&,
                                         const std::shared_ptr<const Executor>&);
template void device_copy_values<float>(const Csr<double>&, Csr<float>&,
                                        const std::shared_ptr<const Executor>&);

}  // namespace heptane::amg
