// The CSR lane-group kernels (a group of G = 1..32 lanes per row), shared by the in-core CSR
// SpMV (formats/csr/csr.cu: 64-bit row pointers, 32-bit columns) and the out-of-core chunks
// (formats/outofcore/outofcore.cu: 32-bit chunk-local row pointers and columns): PT is the
// row-pointer type, CT the column type. Include only from .cu files.
#pragma once

#include <cstdlib>
#include <string>

#include "formats/cuda_spmv_common.cuh"

namespace heptane::kernels::cuda_detail {

// ---- vector: G lanes per row, strided over the row, then a shuffle reduction ---------------
template <int G, class PT, class CT, class MT, class VT>
__global__ void __launch_bounds__(256)
    csr_vector_kernel(index_t rows, const PT* __restrict__ ptr, const CT* __restrict__ ci,
                      const MT* __restrict__ v, VT alpha, const VT* __restrict__ x, VT beta,
                      VT* __restrict__ y)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long r = t / G;
    const int lane = static_cast<int>(t % G);
    VT sum = 0;
    if (r < rows) {
        const PT e = ptr[r + 1];
        PT k = ptr[r] + lane;
        VT sum2 = 0;  // two independent chains: two loads in flight per lane
        for (; k + G < e; k += 2 * G) {
            sum += VT(ldcs(v + k)) * ldg(x + ldg(ci + k));
            sum2 += VT(ldcs(v + k + G)) * ldg(x + ldg(ci + k + G));
        }
        if (k < e) sum += VT(ldcs(v + k)) * ldg(x + ldg(ci + k));
        sum += sum2;
    }
    sum = group_sum<G>(sum);  // every lane takes part: the shuffles use the full mask
    if (lane == 0 && r < rows) store_result(y, r, alpha, sum, beta);
}

// ---- A^T x: y_j += alpha * a_ij * x_i, G lanes per row i (y already scaled by beta) --------
// Atomic adds to one address serialise, and neighbouring rows add into the same entries of y
// (a PET scanner's neighbouring lines of response cross the same voxels; a stencil's rows share
// columns). The lane groups can therefore take rows far apart: group g takes row
// (g mod S) * span + g / S, S stripes of span rows, every row once, each row's entries still
// read by its G lanes together. Measured on the H100 (docs/benchmarks.md, "A^T x from
// stripes of rows"): with 4096 stripes, a warp a row (G = 32) gained 3.5-7.7 % (PET back
// projection, GH Nc = 16), shorter rows lost up to 20 % at 0.5-2 M rows (GH Nc = 4, 8), so the
// stripes are taken for G = 32 only.
struct ScatterStripes {
    long long span = 0;  // rows a stripe; 0: group g takes row g
    int stripes = 1;
    /// lane groups to launch: stripes * span (>= rows), or rows
    long long groups(long long rows) const { return span > 0 ? stripes * span : rows; }
};

/// The stripes for `rows` rows of `lanes` lanes each: 4096 for lanes = 32, none otherwise;
/// HEPTANE_CSR_SCATTER=plain (none) or =N (N stripes whatever the lanes) overrides it. None
/// with fewer than 4 rows a stripe.
inline ScatterStripes scatter_stripes(long long rows, int lanes)
{
    static const int forced = [] {  // 0: the rule above
        const char* e = std::getenv("HEPTANE_CSR_SCATTER");
        if (!e || !*e) return 0;
        if (std::string(e) == "plain") return 1;
        const int n = std::atoi(e);
        return n > 1 ? n : 0;
    }();
    const int count = forced > 0 ? forced : (lanes == 32 ? 4096 : 1);
    ScatterStripes st;
    if (count > 1 && rows >= 4LL * count) {
        st.stripes = count;
        st.span = (rows + count - 1) / count;
    }
    return st;
}

template <int G, class PT, class CT, class MT, class VT>
__global__ void __launch_bounds__(256)
    csr_scatter_kernel(index_t rows, ScatterStripes st, const PT* __restrict__ ptr,
                       const CT* __restrict__ ci, const MT* __restrict__ v, VT alpha,
                       const VT* __restrict__ x, VT* __restrict__ y)
{
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long g = t / G;
    const long long r = st.span > 0 ? (g % st.stripes) * st.span + g / st.stripes : g;
    const int lane = static_cast<int>(t % G);
    if (r >= rows) return;
    const VT xr = alpha * x[r];
    const PT e = ptr[r + 1];
    for (PT k = ptr[r] + lane; k < e; k += G) atomicAdd(y + ci[k], VT(ldcs(v + k)) * xr);
}

}  // namespace heptane::kernels::cuda_detail
