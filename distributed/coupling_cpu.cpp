// The boundary part of a distributed BDIA product and the pack of a halo on the CPU
// (coupling_kernels.hpp).
#include "distributed/coupling_kernels.hpp"

namespace heptane::kernels {

template <class MT, class VT>
void bdia_coupling(const CpuExecutor&, const Bdia<MT>& a, CouplingRows c, VT alpha, const VT* halo,
                   VT* y)
{
    const index_t n = a.rows, nc = a.block_size, nd = a.num_diagonals();
    const MT* data = a.data.data();
    const index_t nb = n - c.upper_begin;  // rows [upper_begin, n)
    const index_t total = c.lower_rows + nb;
#pragma omp parallel for schedule(static) if (total >= 4096)
    for (index_t t = 0; t < total; ++t) {
        const index_t r = t < c.lower_rows ? t : c.upper_begin + (t - c.lower_rows);
        VT sum = 0;
        for (index_t k = 0; k < nd; ++k) {
            const index_t col = r - r % nc + a.offset(k);
            index_t h;
            if (col < 0 && col >= -c.lower)
                h = c.lower + col;
            else if (col >= n && col - n < c.upper)
                h = c.lower + (col - n);
            else
                continue;
            sum += VT(data[std::size_t(k) * std::size_t(n) + std::size_t(r)]) * halo[h];
        }
        y[r] += alpha * sum;
    }
}

template void bdia_coupling<double, double>(const CpuExecutor&, const Bdia<double>&, CouplingRows,
                                            double, const double*, double*);
template void bdia_coupling<float, float>(const CpuExecutor&, const Bdia<float>&, CouplingRows,
                                          float, const float*, float*);
template void bdia_coupling<float, double>(const CpuExecutor&, const Bdia<float>&, CouplingRows,
                                           double, const double*, double*);

template <class VT>
void gather_rows(const CpuExecutor&, index_t n, const index_t* rows, const VT* x, VT* out)
{
    for (index_t k = 0; k < n; ++k) out[k] = x[rows[k]];
}

template void gather_rows<double>(const CpuExecutor&, index_t, const index_t*, const double*,
                                  double*);
template void gather_rows<float>(const CpuExecutor&, index_t, const index_t*, const float*, float*);

}  // namespace heptane::kernels
