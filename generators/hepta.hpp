// General-hepta (GH) test systems (docs/design.md §1): a J x H x I grid of cells (x fastest, then
// y, then z), Nc unknowns per cell, each cell coupled to itself and to the cells at block
// offsets {-J*H, -J, -1, +1, +J, +J*H} by dense Nc x Nc blocks.
//
//   cell c = j + J*(h + H*i),   row r = c*Nc + a (a in [0, Nc)),   N = J*H*I*Nc.
//
// Two variants:
//  * banded: the seven block diagonals cut only at the matrix bounds (cell (J-1, h, i) couples
//    to (0, h+1, i)). nnz = Nc^2 * (7G - 2 - 2J - 2JH), G = J*H*I: the sizes the source thesis
//    tabulates (BENCHMARKS.md). With I = 1 the +-J*H diagonals have G - J*H = 0 blocks, so the
//    same formula holds unchanged (it gives Nc^2 * (5G - 2 - 2J)) and they are not stored.
//  * grid: a real box; a cell on a face has no neighbour across it.
//    nnz = Nc^2 * (7G - 2(H*I + J*I + J*H)). A direction whose axis has one cell (I = 1 for
//    2-D, H = I = 1 for 1-D) carries no couplings and is not stored.
//
// Every block that is present is dense: all Nc^2 entries are stored, even where a value is 0.
//
// Values are a pure function of (seed, indices) through a counter-based hash (splitmix64) and
// heptane's own uniform -> normal, log and exp built from IEEE +,-,*,/,sqrt only, so the same
// spec gives bit-identical matrices on every machine, with any number of OpenMP threads, from
// the COO and from the BDIA path. (std::*_distribution and libm's exp/log are avoided: their
// results are implementation-defined.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/coo/coo.hpp"

namespace heptane {

/// Coefficient model of a generated GH matrix.
///  * uniform: every stored entry uniform in (0, 1), as in the source thesis. NOT diagonally
///    dominant: fine for SpMV timing, not for solver tests.
///  * reservoir: a finite-volume pressure / fully-implicit stencil. Per cell a layered
///    log-normal permeability k (one log-mean per z-layer plus a per-cell perturbation),
///    anisotropic (k_z = 0.1 k_x); transmissibility T = (area/distance) * harmonic mean of the
///    two cells' permeabilities; off-diagonal block -T*C with C a coupled mobility block
///    (dominant diagonal, smaller positive couplings, shared by both cells of a connection);
///    diagonal block = accumulation (pore volume / dt) * I + sum over the present neighbours of
///    T*(C + 2 diag(off-diagonal row sums of C)). Every row is diagonally dominant with margin
///    exactly the accumulation term; with Nc = 1 the matrix is symmetric positive definite.
///    Couplings that wrap across a face in the banded variant are treated as neighbours.
///  * channelized: the reservoir model's stencil (T = area/distance * harmonic mean of the two
///    cells' k, the same mobility blocks C for Nc > 1, no-flow boundaries, no wells) and its
///    accumulation diagonal and difficulty, on a strongly heterogeneous SPE10-model-2-like
///    field (channelized_permeability below) in mD instead of the mild layered one, with
///    porosity 0.05 .. 0.30 rising with log k (pore volume / dt 0.25 .. 1.5 at difficulty 0).
///    Off-diagonal magnitudes span about 1e-4 .. 7.5e3; every row is diagonally dominant
///    with margin the accumulation term, so the Nc = 1 matrix is a symmetric M-matrix (SPD).
///    Hard for one-level methods: CG + Jacobi to rtol 1e-8 on 64x64x32 took 561 iterations
///    (reservoir: 30), CG + ILU(0) 209 (reservoir: 10), both at difficulty 0.
enum class HeptaModel { uniform, reservoir, channelized };

/// "uniform", "reservoir" or "channelized". Throws InputError naming the valid choices.
HeptaModel parse_model(const std::string& name);
const char* to_string(HeptaModel m);

struct HeptaSpec {
    index_t J = 1;       ///< cells along x (fastest)
    index_t H = 1;       ///< cells along y
    index_t I = 1;       ///< cells along z (1: a 2-D, 5-point system)
    index_t Nc = 1;      ///< unknowns per cell: the block size
    bool banded = true;  ///< banded (thesis) variant; false: grid variant
    HeptaModel model = HeptaModel::uniform;
    std::uint64_t seed = 1;
    /// Reservoir model only, >= 0. 0: well conditioned. Each +1 shrinks the accumulation term
    /// by 10^3 and widens the permeability contrast (log-std per layer 0.5 + 1.5*difficulty,
    /// per cell 0.25 + 0.5*difficulty). Rows stay (weakly) diagonally dominant at any value.
    /// For scale: unpreconditioned BiCGStab to rtol 1e-8 on a 32x32x16 grid, Nc = 1, took
    /// 28 iterations at difficulty 0, 252 at 0.5, 2013 at 1 (Nc = 4: 25, 165, 1148); at 2 it
    /// did not converge in 5000.
    /// Channelized model: each +1 shrinks the accumulation term by 10^3 as well; the
    /// permeability field does not depend on it (its contrast is fixed).
    double difficulty = 0.0;

    /// G = J*H*I (64-bit: valid only after validate()).
    offset_t cells() const noexcept { return offset_t(J) * H * I; }
    /// N = G*Nc.
    offset_t rows() const noexcept { return cells() * Nc; }
};

/// Throws InputError unless J, H, I, Nc >= 1, N = J*H*I*Nc < 2^31, difficulty is finite and
/// >= 0, and, for the banded variant, the stored offsets are distinct: J >= 2, and H >= 2
/// when I > 1 (with J = 1 the +-1 and +-J diagonals coincide, with H = 1 +-J and +-J*H do).
void validate(const HeptaSpec& spec);

/// "banded GH 16x16x32, Nc=8, uniform, seed 1" (difficulty shown for the reservoir and
/// channelized models).
std::string describe(const HeptaSpec& spec);

/// Clip range of the channelized model's horizontal permeability kx = ky (mD): every cell
/// lies in [min, max].
inline constexpr double channelized_k_min = 1e-3;
inline constexpr double channelized_k_max = 1e4;
/// The channelized model's vertical anisotropy: kz = channelized_kz_ratio * kx in every cell.
inline constexpr double channelized_kz_ratio = 0.1;

/// Per-cell permeability (mD), cell c = j + J*(h + H*i) as in the matrices.
struct PermeabilityField {
    std::vector<double> kx, ky, kz;
};

/// The channelized model's permeability on a J x H x I grid (cells 1 x 1 x 0.5, z-layer
/// i = 0 on top), after SPE10 model 2: a function of (J, H, I, seed) only, bit-identical on
/// every machine and for any thread count, and for the rows of generate_hepta_bdia_rows.
///  * log k = layer log-mean + sigma * g + nugget: g a spatially correlated standard Gaussian
///    field (spectral method: 32 random Fourier modes of a Gaussian covariance, correlation
///    lengths Lx = 2 Ly, Ly = max(2, min(J, H)/10) cells, Lz = one layer), the nugget white
///    noise of std 0.3. Each layer's log-mean is drawn around its family's (layer-to-layer
///    variation).
///  * Layer families: the top round(35 I / 85) layers (Tarbert-like, shallow marine):
///    sand, median ~50 mD, sigma 1.2; each of them is instead a shale barrier (median
///    ~0.01 mD, sigma 1) with probability 0.15. The other layers (Upper Ness-like, fluvial):
///    shale, median ~0.02 mD, sigma 1.5, cut by sinuous sand channels (meandering centre
///    lines of two harmonics, wavelength 8-14 widths, random tilt; widths max(3, H/16) x
///    [0.7, 1.3) cells; about a quarter of a layer, 17-39% at 256 x 256), median ~1500 mD
///    on the channel axis falling by e^-1.5 towards the banks, sigma 0.8. A channel set
///    persists through a bed of 3 layers, narrowing downwards and shifting sideways. With
///    I = 1 the one layer is fluvial.
///  * kx = ky = exp(log k) clipped to [channelized_k_min, channelized_k_max] = [1e-3, 1e4]
///    (contrast 1e7; at 128 x 128 x 64 and up about 2-3% of the cells sit at 1e-3 and 0.1%
///    at 1e4; small grids reach >= 1e6 wherever a fluvial layer has a channel); kz = 0.1 kx.
/// OpenMP-parallel. Throws InputError unless J, H, I >= 1 and J*H*I < 2^31.
PermeabilityField channelized_permeability(index_t J, index_t H, index_t I, std::uint64_t seed);

/// The block offsets that carry couplings, ascending: a subset of {-JH, -J, -1, 0, 1, J, JH}
/// (banded: +-d is kept when d < G; grid: when its axis has more than one cell). These are
/// the BDIA-GH offsets of generate_hepta_bdia. Validates the spec.
std::vector<index_t> hepta_block_offsets(const HeptaSpec& spec);

/// Stored entries of the generated matrix, by the closed formulas above (nothing is
/// generated). Validates the spec.
offset_t hepta_nnz(const HeptaSpec& spec);

/// The matrix as canonical COO on the host (sorted by row, then column; no duplicates).
/// OpenMP-parallel; identical for any thread count. Validates the spec. T = double or float
/// (float entries are the double values rounded once).
template <class T>
Coo<T> generate_hepta_coo(const HeptaSpec& spec);

/// The same matrix written straight into BDIA-GH (block size Nc, offsets
/// hepta_block_offsets(spec)), for sizes whose COO would not fit in memory: D*Nc*N values,
/// no index arrays. Slots of the grid variant whose neighbour is missing hold 0 and have their
/// pattern bit cleared, so to_coo(generate_hepta_bdia(s)) == generate_hepta_coo(s) exactly.
/// OpenMP-parallel; identical for any thread count. Validates the spec.
template <class T>
Bdia<T> generate_hepta_bdia(const HeptaSpec& spec);

/// A known solution and its right-hand side.
template <class T>
struct LinearSystem {
    std::vector<T> x_true;  ///< length N
    std::vector<T> b;       ///< A * x_true, accumulated in double, rounded once to T
};

/// x_true for `spec`: smooth over the grid, not constant. For cell (j, h, i), component a,
/// with u = (j + 1/2)/J, v = (h + 1/2)/H, w = (i + 1/2)/I:
///     x = 1 + 0.5 * 16 u(1-u) v(1-v) + 0.25 w + 0.1 a/Nc + 0.02 (noise in [-1/2, 1/2)),
/// the noise hashed from (spec.seed, row). Validates the spec.
template <class T>
std::vector<T> hepta_x_true(const HeptaSpec& spec);

/// x_true = hepta_x_true(spec) and b = A x_true by a plain host loop (rows in parallel, each
/// row summed in ascending column order in double). Throws DimensionMismatch if `a` is not
/// N x N for `spec`, NotSupported if `a` is not on the host. The COO and the BDIA overloads
/// give bit-identical b for the same matrix.
template <class T>
LinearSystem<T> make_rhs(const HeptaSpec& spec, const Coo<T>& a);
template <class T>
LinearSystem<T> make_rhs(const HeptaSpec& spec, const Bdia<T>& a);

/// Rows [row_begin, row_end) of generate_hepta_bdia(spec) (both multiples of Nc), for one
/// process of a distributed solve: a Bdia with rows = cols = row_end - row_begin and the
/// same block offsets, column c standing for global column row_begin + c. Every block of the
/// rows is in `data`, also those whose columns lie outside [row_begin, row_end) (the
/// couplings to other processes' rows, which distributed/ multiplies with the halo); the
/// pattern marks only the local ones, so to_coo gives the local diagonal block. Per-cell
/// data is computed only near the rows: the cost is O(rows), not O(N). Bit-identical to the
/// same rows of generate_hepta_bdia.
template <class T>
Bdia<T> generate_hepta_bdia_rows(const HeptaSpec& spec, index_t row_begin, index_t row_end);

/// x_true and b = A x_true on the rows of `local` (from generate_hepta_bdia_rows(spec,
/// row_begin, ...)): bit-identical to the same rows of make_rhs(spec, whole matrix).
template <class T>
LinearSystem<T> make_rhs_rows(const HeptaSpec& spec, const Bdia<T>& local, index_t row_begin);

}  // namespace heptane
