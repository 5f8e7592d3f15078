// GMRES block kernels on the CPU (OpenMP): the multi-dot h = V^T w and the multi-axpy
// w += alpha V h of classical Gram-Schmidt. Rows are taken in blocks of row_block, so w (and
// the running sums of a block) stay in cache while the k columns stream past. Sums
// accumulate in double; the per-thread partials are added in thread order over a static
// schedule (run-to-run reproducible for a fixed thread count).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "solver/gmres/gmres_kernels.hpp"

namespace heptane::kernels {

namespace {
/// Below this length a loop runs on one thread (as in vector_cpu.cpp).
constexpr index_t parallel_min = 1 << 15;
constexpr index_t row_block = 256;
}  // namespace

std::size_t gmres_scratch_size(const CpuExecutor&, index_t, int)
{
    return 0;  // the per-thread partials live on the host, sized per call
}

template <class VT>
void gmres_multi_dot(const CpuExecutor&, index_t n, int k, const VT* V, const VT* w, bool with_norm,
                     double* out, double*)
{
    const int kk = k + (with_norm ? 1 : 0);
    if (kk <= 0) return;
    const std::size_t ld = std::size_t(n > 0 ? n : 0);
    const index_t blocks = n > 0 ? (n + row_block - 1) / row_block : 0;
    // the sums of one block of rows added to acc[0..kk)
    auto block_sums = [&](index_t blk, double* acc) {
        const index_t i0 = blk * row_block, i1 = std::min(n, i0 + row_block);
        for (int c = 0; c < k; ++c) {
            const VT* v = V + std::size_t(c) * ld;
            double s = 0;
            for (index_t i = i0; i < i1; ++i) s += double(v[i]) * double(w[i]);
            acc[c] += s;
        }
        if (with_norm) {
            double s = 0;
            for (index_t i = i0; i < i1; ++i) s += double(w[i]) * double(w[i]);
            acc[k] += s;
        }
    };
    const int threads = n >= parallel_min ? omp_get_max_threads() : 1;
    std::vector<double> part(std::size_t(threads) * std::size_t(kk), 0.0);
    if (threads == 1) {
        for (index_t blk = 0; blk < blocks; ++blk) block_sums(blk, part.data());
    } else {
#pragma omp parallel num_threads(threads)
        {
            double* acc = part.data() + std::size_t(omp_get_thread_num()) * std::size_t(kk);
#pragma omp for schedule(static)
            for (index_t blk = 0; blk < blocks; ++blk) block_sums(blk, acc);
        }
    }
    for (int c = 0; c < kk; ++c) {
        double s = 0;
        for (int t = 0; t < threads; ++t) s += part[std::size_t(t) * std::size_t(kk) + c];
        out[c] = s;
    }
}

template <class VT>
void gmres_multi_axpy(const CpuExecutor&, index_t n, int k, const VT* V, const double* coef,
                      double alpha, VT* w, double* norm_out, double*)
{
    const std::size_t ld = std::size_t(n > 0 ? n : 0);
    std::vector<double> a(std::size_t(k > 0 ? k : 0));
    for (int c = 0; c < k; ++c) a[std::size_t(c)] = alpha * coef[c];
    const index_t blocks = n > 0 ? (n + row_block - 1) / row_block : 0;
    double nrm = 0;
#pragma omp parallel for schedule(static) reduction(+ : nrm) if (n >= parallel_min)
    for (index_t blk = 0; blk < blocks; ++blk) {
        const index_t i0 = blk * row_block;
        const index_t len = std::min(row_block, n - i0);
        double tmp[row_block];
        for (index_t i = 0; i < len; ++i) tmp[i] = double(w[i0 + i]);
        for (int c = 0; c < k; ++c) {
            const double ac = a[std::size_t(c)];
            const VT* v = V + std::size_t(c) * ld + std::size_t(i0);
            for (index_t i = 0; i < len; ++i) tmp[i] += ac * double(v[i]);
        }
        for (index_t i = 0; i < len; ++i) {
            const VT wi = VT(tmp[i]);
            w[i0 + i] = wi;
            nrm += double(wi) * double(wi);
        }
    }
    if (norm_out) *norm_out = nrm;
}

template <class VT>
void gmres_scale_next(const CpuExecutor&, index_t n, const double* az_norm2, const double* w_norm2,
                      double ratio, VT* w)
{
    const double h = std::sqrt(std::max(*w_norm2, 0.0));
    const VT s = (h > ratio * std::sqrt(*az_norm2) && std::isfinite(h)) ? VT(1.0 / h) : VT(0);
#pragma omp parallel for schedule(static) if (n >= parallel_min)
    for (index_t i = 0; i < n; ++i) w[i] = s * w[i];
}

#define HEPTANE_INSTANTIATE(VT)                                                                    \
    template void gmres_multi_dot<VT>(const CpuExecutor&, index_t, int, const VT*, const VT*,      \
                                      bool, double*, double*);                                     \
    template void gmres_multi_axpy<VT>(const CpuExecutor&, index_t, int, const VT*, const double*, \
                                       double, VT*, double*, double*);                             \
    template void gmres_scale_next<VT>(const CpuExecutor&, index_t, const double*, const double*,  \
                                       double, VT*);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane::kernels
