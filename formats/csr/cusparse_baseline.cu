// cuSPARSE baselines: generic cusparseSpMV on CSR / BSR / SELL, and the cusparseCsr2cscEx2
// transpose. Mostly host API code; a .cu file for the two index-conversion kernels.
#include "formats/csr/cusparse_baseline.hpp"

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "formats/cuda_spmv_common.cuh"

namespace heptane::cusparse {

namespace {

using kernels::cuda_detail::ensure_on_device;
using kernels::cuda_detail::make_current;

template <class T>
constexpr cudaDataType data_type()
{
    return std::is_same_v<T, double> ? CUDA_R_64F : CUDA_R_32F;
}

template <class To, class From>
__global__ void convert_kernel(long long n, const From* __restrict__ in, To* __restrict__ out)
{
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += stride)
        out[i] = static_cast<To>(in[i]);
}

/// out[i] = To(in[i]) on the device (index-type conversion for cuSPARSE).
template <class To, class From>
Array<To> convert(const std::shared_ptr<const CudaExecutor>& exec, const From* in, long long n)
{
    Array<To> out(exec, static_cast<std::size_t>(n));
    if (n == 0) return out;
    const unsigned grid = std::min<unsigned>(cuda::grid_for(n, 256),
                                             8u * static_cast<unsigned>(exec->multiprocessors()));
    convert_kernel<To, From><<<grid, 256, 0, cuda::stream(*exec)>>>(n, in, out.data());
    HEPTANE_CUDA_LAUNCH_CHECK();
    return out;
}

/// A cuSPARSE status that means "this operation/shape is not offered" becomes NotSupported;
/// everything else a DeviceError (as HEPTANE_CUSPARSE_CHECK does).
#define HEPTANE_CUSPARSE_CHECK_SUPPORTED(call, what)                                             \
    do {                                                                                         \
        cusparseStatus_t st_ = (call);                                                           \
        if (st_ == CUSPARSE_STATUS_NOT_SUPPORTED || st_ == CUSPARSE_STATUS_INVALID_VALUE)        \
            HEPTANE_THROW(NotSupported,                                                          \
                          what << ": " << #call << " refused: " << cusparseGetErrorString(st_)); \
        HEPTANE_CUSPARSE_CHECK(st_);                                                             \
    } while (0)

}  // namespace

const char* to_string(Baseline b)
{
    switch (b) {
        case Baseline::csr_alg1:
            return "cusparse-csr-alg1";
        case Baseline::csr_alg2:
            return "cusparse-csr-alg2";
        case Baseline::bsr:
            return "cusparse-bsr";
        case Baseline::sell:
            return "cusparse-sell";
    }
    return "?";
}

template <class MT, class VT>
struct SpmvBaseline<MT, VT>::Impl {
    std::shared_ptr<const CudaExecutor> exec;
    Baseline alg = Baseline::csr_alg1;
    index_t rows = 0, cols = 0;
    double bytes = 0;
    cusparseSpMatDescr_t mat = nullptr;
    // converted index arrays and SELL storage (owned here; the heptane arrays are borrowed)
    Array<std::int32_t> ptr32;
    Array<std::int64_t> col64;
    Array<std::int32_t> sell_offsets, sell_cols;
    Array<MT> sell_values;
    struct PerOp {
        bool ready = false;
        Array<char> buffer;
    } ops[2];

    ~Impl()
    {
        if (mat) cusparseDestroySpMat(mat);
    }
    cusparseSpMVAlg_t spmv_alg() const
    {
        switch (alg) {
            case Baseline::csr_alg1:
                return CUSPARSE_SPMV_CSR_ALG1;
            case Baseline::csr_alg2:
                return CUSPARSE_SPMV_CSR_ALG2;
            case Baseline::bsr:
                return CUSPARSE_SPMV_BSR_ALG1;
            case Baseline::sell:
                return CUSPARSE_SPMV_SELL_ALG1;
        }
        return CUSPARSE_SPMV_ALG_DEFAULT;
    }
};

template <class MT, class VT>
SpmvBaseline<MT, VT>::SpmvBaseline(std::unique_ptr<Impl> impl) : impl_(std::move(impl))
{
}
template <class MT, class VT>
SpmvBaseline<MT, VT>::~SpmvBaseline() = default;

template <class MT, class VT>
std::unique_ptr<SpmvBaseline<MT, VT>> SpmvBaseline<MT, VT>::from_csr(
    std::shared_ptr<const CudaExecutor> exec, const Csr<MT>& a, Baseline alg)
{
    HEPTANE_ENSURE(alg != Baseline::bsr, NotSupported, "cuSPARSE BSR needs a Bsr matrix");
    ensure_on_device(*exec, *a.exec(), "CSR");
    ensure_on_device(*exec, *a.row_ptr.exec(), "CSR");
    make_current(*exec);
    auto im = std::make_unique<Impl>();
    im->exec = exec;
    im->alg = alg;
    im->rows = a.rows;
    im->cols = a.cols;
    const offset_t nnz = a.nnz();
    const bool small = nnz < std::numeric_limits<std::int32_t>::max();
    if (alg != Baseline::sell) {
        void* ptr = nullptr;
        void* col = const_cast<index_t*>(a.col_idx.data());
        cusparseIndexType_t itype = CUSPARSE_INDEX_32I;
        if (small) {
            im->ptr32 = convert<std::int32_t>(exec, a.row_ptr.data(), a.rows + 1LL);
            ptr = im->ptr32.data();
            im->bytes = double(nnz) * (sizeof(MT) + 4) + 4.0 * (a.rows + 1);
        } else {
            im->col64 = convert<std::int64_t>(exec, a.col_idx.data(), nnz);
            ptr = const_cast<offset_t*>(a.row_ptr.data());
            col = im->col64.data();
            itype = CUSPARSE_INDEX_64I;
            im->bytes = double(nnz) * (sizeof(MT) + 8) + 8.0 * (a.rows + 1);
        }
        HEPTANE_CUSPARSE_CHECK(cusparseCreateCsr(&im->mat, a.rows, a.cols, nnz, ptr, col,
                                                 const_cast<MT*>(a.values.data()), itype, itype,
                                                 CUSPARSE_INDEX_BASE_ZERO, data_type<MT>()));
    } else {
        // sliced ELL, slice size 32: each slice padded to its longest row, column-major
        // inside the slice, padding column -1 (cuSPARSE's convention)
        HEPTANE_ENSURE(small, NotSupported, "cuSPARSE SELL baseline: nnz >= 2^31");
        constexpr int slice = 32;
        const Csr<MT> h = a.to(cpu_executor());
        const index_t nslices = (a.rows + slice - 1) / slice;
        std::vector<std::int32_t> offs(std::size_t(nslices) + 1, 0);
        for (index_t sl = 0; sl < nslices; ++sl) {
            offset_t w = 0;
            for (index_t r = sl * slice; r < std::min<index_t>(a.rows, (sl + 1) * slice); ++r)
                w = std::max<offset_t>(w, h.row_ptr[r + 1] - h.row_ptr[r]);
            const offset_t next = offs[sl] + w * slice;
            HEPTANE_ENSURE(next < std::numeric_limits<std::int32_t>::max(), NotSupported,
                           "cuSPARSE SELL baseline: padded size passes 2^31");
            offs[sl + 1] = static_cast<std::int32_t>(next);
        }
        const std::size_t total = offs[nslices];
        std::vector<std::int32_t> cols(total, -1);
        std::vector<MT> vals(total, MT(0));
#pragma omp parallel for schedule(dynamic, 64)
        for (index_t sl = 0; sl < nslices; ++sl) {
            for (index_t r = sl * slice; r < std::min<index_t>(a.rows, (sl + 1) * slice); ++r) {
                const int lane = r - sl * slice;
                offset_t k = 0;
                for (offset_t e = h.row_ptr[r]; e < h.row_ptr[r + 1]; ++e, ++k) {
                    const std::size_t at = offs[sl] + k * slice + lane;
                    cols[at] = h.col_idx[e];
                    vals[at] = h.values[e];
                }
            }
        }
        im->sell_offsets = Array<std::int32_t>(std::move(offs)).to(exec);
        im->sell_cols = Array<std::int32_t>(std::move(cols)).to(exec);
        im->sell_values = Array<MT>(std::move(vals)).to(exec);
        im->bytes = double(total) * (sizeof(MT) + 4) + 4.0 * (nslices + 1);
        HEPTANE_CUSPARSE_CHECK(cusparseCreateSlicedEll(
            &im->mat, a.rows, a.cols, nnz, static_cast<std::int64_t>(total), slice,
            im->sell_offsets.data(), im->sell_cols.data(), im->sell_values.data(),
            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, data_type<MT>()));
    }
    return std::unique_ptr<SpmvBaseline>(new SpmvBaseline(std::move(im)));
}

template <class MT, class VT>
std::unique_ptr<SpmvBaseline<MT, VT>> SpmvBaseline<MT, VT>::from_bsr(
    std::shared_ptr<const CudaExecutor> exec, const Bsr<MT>& a)
{
    ensure_on_device(*exec, *a.exec(), "BSR");
    ensure_on_device(*exec, *a.row_ptr.exec(), "BSR");
    make_current(*exec);
    auto im = std::make_unique<Impl>();
    im->exec = exec;
    im->alg = Baseline::bsr;
    im->rows = a.rows;
    im->cols = a.cols;
    const offset_t nnzb = a.nnz_blocks();
    HEPTANE_ENSURE(nnzb < std::numeric_limits<std::int32_t>::max(), NotSupported,
                   "cuSPARSE BSR baseline: " << nnzb << " blocks (>= 2^31)");
    im->ptr32 = convert<std::int32_t>(exec, a.row_ptr.data(), a.block_rows() + 1LL);
    const double b2 = double(a.block_size) * a.block_size;
    im->bytes = double(nnzb) * (b2 * sizeof(MT) + 4) + 4.0 * (a.block_rows() + 1);
    HEPTANE_CUSPARSE_CHECK_SUPPORTED(
        cusparseCreateBsr(&im->mat, a.block_rows(), a.block_cols(), nnzb, a.block_size,
                          a.block_size, im->ptr32.data(), const_cast<index_t*>(a.col_idx.data()),
                          const_cast<MT*>(a.values.data()), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, data_type<MT>(), CUSPARSE_ORDER_ROW),
        "cuSPARSE BSR baseline (block size " << a.block_size << ")");
    return std::unique_ptr<SpmvBaseline>(new SpmvBaseline(std::move(im)));
}

template <class MT, class VT>
void SpmvBaseline<MT, VT>::apply(Op op, VT alpha, const VT* x, VT beta, VT* y)
{
    Impl& im = *impl_;
    make_current(*im.exec);
    auto h = cuda::cusparse(*im.exec);
    const bool t = op == Op::transpose;
    const index_t nx = t ? im.rows : im.cols;
    const index_t ny = t ? im.cols : im.rows;
    cusparseConstDnVecDescr_t vx = nullptr;
    cusparseDnVecDescr_t vy = nullptr;
    HEPTANE_CUSPARSE_CHECK(cusparseCreateConstDnVec(&vx, nx, x, data_type<VT>()));
    try {
        HEPTANE_CUSPARSE_CHECK(cusparseCreateDnVec(&vy, ny, y, data_type<VT>()));
        const auto cop = t ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
        auto& per = im.ops[t ? 1 : 0];
        if (!per.ready) {
            std::size_t size = 0;
            HEPTANE_CUSPARSE_CHECK_SUPPORTED(
                cusparseSpMV_bufferSize(h, cop, &alpha, im.mat, vx, &beta, vy, data_type<VT>(),
                                        im.spmv_alg(), &size),
                to_string(im.alg) << (t ? " A^T x" : " A x"));
            per.buffer = Array<char>(im.exec, size);
            HEPTANE_CUSPARSE_CHECK_SUPPORTED(
                cusparseSpMV_preprocess(h, cop, &alpha, im.mat, vx, &beta, vy, data_type<VT>(),
                                        im.spmv_alg(), per.buffer.data()),
                to_string(im.alg) << (t ? " A^T x" : " A x"));
            per.ready = true;
        }
        HEPTANE_CUSPARSE_CHECK_SUPPORTED(
            cusparseSpMV(h, cop, &alpha, im.mat, vx, &beta, vy, data_type<VT>(), im.spmv_alg(),
                         per.buffer.data()),
            to_string(im.alg) << (t ? " A^T x" : " A x"));
    } catch (...) {
        cusparseDestroyDnVec(vx);
        if (vy) cusparseDestroyDnVec(vy);
        throw;
    }
    HEPTANE_CUSPARSE_CHECK(cusparseDestroyDnVec(vx));
    HEPTANE_CUSPARSE_CHECK(cusparseDestroyDnVec(vy));
}

template <class MT, class VT>
Baseline SpmvBaseline<MT, VT>::baseline() const noexcept
{
    return impl_->alg;
}
template <class MT, class VT>
index_t SpmvBaseline<MT, VT>::rows() const noexcept
{
    return impl_->rows;
}
template <class MT, class VT>
index_t SpmvBaseline<MT, VT>::cols() const noexcept
{
    return impl_->cols;
}
template <class MT, class VT>
double SpmvBaseline<MT, VT>::matrix_bytes() const noexcept
{
    return impl_->bytes;
}

template <class T>
Csr<T> transpose_on_device(std::shared_ptr<const CudaExecutor> exec, const Csr<T>& a)
{
    ensure_on_device(*exec, *a.exec(), "CSR");
    ensure_on_device(*exec, *a.row_ptr.exec(), "CSR");
    make_current(*exec);
    const offset_t nnz = a.nnz();
    HEPTANE_ENSURE(nnz < std::numeric_limits<std::int32_t>::max(), NotSupported,
                   "cusparseCsr2cscEx2 takes int32 indices; nnz = " << nnz);
    auto h = cuda::cusparse(*exec);
    const Array<std::int32_t> ptr32 = convert<std::int32_t>(exec, a.row_ptr.data(), a.rows + 1LL);
    Array<std::int32_t> cptr(exec, std::size_t(a.cols) + 1);
    Array<index_t> rind(exec, static_cast<std::size_t>(nnz));
    Array<T> vals(exec, static_cast<std::size_t>(nnz));
    std::size_t size = 0;
    HEPTANE_CUSPARSE_CHECK(cusparseCsr2cscEx2_bufferSize(
        h, a.rows, a.cols, static_cast<int>(nnz), a.values.data(), ptr32.data(), a.col_idx.data(),
        vals.data(), cptr.data(), rind.data(), data_type<T>(), CUSPARSE_ACTION_NUMERIC,
        CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &size));
    Array<char> buffer(exec, size);
    HEPTANE_CUSPARSE_CHECK(cusparseCsr2cscEx2(
        h, a.rows, a.cols, static_cast<int>(nnz), a.values.data(), ptr32.data(), a.col_idx.data(),
        vals.data(), cptr.data(), rind.data(), data_type<T>(), CUSPARSE_ACTION_NUMERIC,
        CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, buffer.data()));
    Csr<T> out;
    out.rows = a.cols;
    out.cols = a.rows;
    out.row_ptr = convert<offset_t>(exec, cptr.data(), a.cols + 1LL);
    out.col_idx = std::move(rind);
    out.values = std::move(vals);
    exec->synchronize();  // the temporaries above are freed on return
    return out;
}

#define HEPTANE_INSTANTIATE(MT, VT) template class SpmvBaseline<MT, VT>;
HEPTANE_FOR_EACH_SPMV_TYPES(HEPTANE_INSTANTIATE)
#undef HEPTANE_INSTANTIATE
template Csr<double> transpose_on_device<double>(std::shared_ptr<const CudaExecutor>,
                                                 const Csr<double>&);
template Csr<float> transpose_on_device<float>(std::shared_ptr<const CudaExecutor>,
                                               const Csr<float>&);

}  // namespace heptane::cusparse
