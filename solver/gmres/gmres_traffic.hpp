// The floor traffic of flexible GMRES(m) (solver/gmres/gmres.cpp), per iteration: the bytes
// one inner iteration moves, averaged over a whole cycle of m iterations with the restart,
// counted from what gmres.cpp, gmres_kernels.hpp (gmres_cpu.cpp, gmres.cu) and the vector
// kernels read and write. It is the floor `heptane bench solve --solver gmres` compares the
// time per iteration with (docs/benchmarks.md, "GMRES(m) floor model").
//
// One pass = n values read or written once (8N bytes in double). Inner iteration j of a
// cycle (0-based), k = j + 1 basis vectors v_0 .. v_j:
//
//     z_j = M⁻¹ v_j                      P bytes (its data, v_j read, z_j written; none for M = I)
//     w = A z_j                          matrix bytes + 2 passes (z_j read, w written)
//     multi-dot  V_j^T w, (w, w)         k + 1 (k columns and w, one pass; gmres_multi_dot)
//     multi-axpy w −= V_j h              k + 2 (k columns read, w read and written)
//     multi-dot  V_j^T w                 k + 1
//     multi-axpy w −= V_j h', (w, w)     k + 2 (the norm in the same pass)
//     v_{j+1} = w / h_{j+1,j}            2     (axpby in place, beta = 0: w read, written;
//                                               only for j < m − 1: the last v_m is never used)
//
// so 4k + 8 passes (+ 2 for the scaling) per inner iteration. Once per cycle:
//
//     v_0 = r / β                        2     (axpby in place)
//     x += Z_m y                         m + 2 (multi-axpy: m columns, x read and written)
//     r = b − A x, β = ‖r‖ (restart)     matrix bytes + 2 + 3 (axpby: b, r read, r written) + 1
//
// A cycle: Σ_{k=1..m} (4k + 8) + 2(m − 1) + 2 + (m + 2) + 6 = 2m² + 13m + 8 passes and m + 1
// products, so per iteration, with N rows, 8-byte values and the matrix bytes of
// spmv_traffic (values and indices as stored, x and y not included):
//
//     bytes/it = (1 + 1/m) · matrix bytes + P + k(m) · 8N,    k(m) = 2m + 13 + 8/m
//
// k(1) = 23, k(30) = 73.27 (1099/15). Without a preconditioner Z is V (z_j = v_j) and P = 0;
// with one, the product reads z_j and x += Z y reads Z instead of V: the same passes.
//
// CUDA's multi-dot (gmres.cu) reduces at most 8 columns per pass over w (its tile, this
// file's gmres_cuda_dot_tile), so for k > 8 it reads w ⌈k/8⌉ times; `dot_tile` counts that
// (k(m) above holds for m ≤ 8; GMRES(30) on CUDA: 84 more passes a cycle, k = 76.07). A tile
// of 8 was measured against 16 and 32 on the H100 (docs/benchmarks.md): the extra reads of w
// cost less than the registers of 32 running sums (98 per thread, 2 blocks per SM). The CPU
// kernel keeps w in cache across the columns
// (dot_tile = 0: one pass for any k). Left out: CUDA's multi-axpy takes at most 4096 columns
// per launch (one more pass over w per 4096 columns, for m > 4096), the reduction partials
// and the Hessenberg column read back (O(m) doubles), the steps of the first residual
// (solve's setup, not its iterations).
#pragma once

namespace heptane {

/// Columns per pass over w of gmres.cu's multi-dot (its `tile` is this constant).
inline constexpr int gmres_cuda_dot_tile = 8;

/// GMRES(m) traffic per iteration, averaged over a whole cycle with its restart.
struct GmresTraffic {
    double products = 0;         ///< products A z per iteration: (m + 1) / m
    double precond_applies = 0;  ///< preconditioner applications per iteration: 1 (0 for none)
    double vector_passes = 0;    ///< k(m): passes of n values per iteration

    /// Bytes per iteration: products · matrix_bytes + precond_applies · precond_bytes +
    /// vector_passes · n · value_size.
    double bytes(double matrix_bytes, double n, double value_size = 8,
                 double precond_bytes = 0) const
    {
        return products * matrix_bytes + precond_applies * precond_bytes +
               vector_passes * n * value_size;
    }
};

/// Passes over w of one multi-dot against k columns: 1, or ⌈k / dot_tile⌉ when dot_tile > 0.
constexpr int gmres_multi_dot_w_passes(int k, int dot_tile)
{
    return dot_tile > 0 && k > dot_tile ? (k + dot_tile - 1) / dot_tile : 1;
}

/// Vector passes of one whole cycle of GMRES(m), m ≥ 1 (the restart included): the sum of
/// the counts above; 2m² + 13m + 8 when m ≤ dot_tile or dot_tile = 0.
constexpr long long gmres_cycle_passes(int m, int dot_tile = 0)
{
    long long p = 0;
    for (int j = 0; j < m; ++j) {
        const int k = j + 1;
        const int w_dot = gmres_multi_dot_w_passes(k, dot_tile);
        p += 2;                  // product: z_j read, w written
        p += 2LL * (k + w_dot);  // two multi-dots: k columns, w
        p += 2LL * (k + 2);      // two multi-axpys: k columns, w read and written
        if (j < m - 1) p += 2;   // v_{j+1} = w / h_{j+1,j}
    }
    p += 2;          // v_0 = r / β
    p += m + 2;      // x += Z_m y
    p += 2 + 3 + 1;  // restart: A x (x read, r written), r = b − r, ‖r‖
    return p;
}

/// GMRES(m)'s traffic per iteration (m ≥ 1; see the model at the top of this file).
/// `preconditioned`: one preconditioner application per iteration. `dot_tile`: 0 on the
/// CPU, gmres_cuda_dot_tile on CUDA (the same for m ≤ gmres_cuda_dot_tile).
constexpr GmresTraffic gmres_traffic(int m, bool preconditioned = false, int dot_tile = 0)
{
    GmresTraffic t;
    t.products = double(m + 1) / double(m);
    t.precond_applies = preconditioned ? 1.0 : 0.0;
    t.vector_passes = double(gmres_cycle_passes(m, dot_tile)) / double(m);
    return t;
}

}  // namespace heptane
