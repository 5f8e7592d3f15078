// General-hepta generators: see hepta.hpp for the matrices and their formulas.
//
// One routine, HeptaFiller::block_row, computes the seven blocks of one cell; the COO and
// the BDIA paths both call it and only differ in where they write, so they cannot disagree.
// Every value is a pure function of (seed, indices), which makes the generators trivially
// parallel and independent of the thread count.
#include "generators/hepta.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/bitset.hpp"
#include "core/error.hpp"

// Bit-identical values on every machine need every a*b+c rounded twice, never fused.
// (GCC in ISO C++ mode does not contract across statements by default; clang needs this.)
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace heptane {
namespace {

// ---- counter-based random numbers --------------------------------------------------------

/// splitmix64's finaliser: a bijection of 64-bit words with good avalanche.
inline std::uint64_t mix64(std::uint64_t z) noexcept
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Roles of the random numbers: the same indices in two roles give independent values.
enum Stream : std::uint64_t {
    stream_uniform_entry = 1,  // (row, col): uniform model
    stream_layer = 2,          // (i): log-mean permeability of z-layer i
    stream_cell_perm = 3,      // (c): per-cell log-permeability perturbation
    stream_porosity = 4,       // (c)
    stream_mobility = 5,       // (lower cell of a connection, axis, a*Nc+s)
    stream_x_true = 6,         // (row)
    // channelized model (channelized_permeability)
    stream_ch_modes = 7,      // (m): Fourier modes of the correlated field
    stream_ch_layer = 8,      // (tag, i): layer family and log-means
    stream_ch_bed = 9,        // (bed, channel): channel geometry
    stream_ch_nugget = 10,    // (c): per-cell white noise
    stream_ch_porosity = 11,  // (c)
};

/// Random numbers form a tree of keys: key(seed, stream) = mix64(mix64(seed) ^ stream), and
/// the value at index path (x_1, ..., x_m) is h_m with h_0 = key, h_k = mix64(h_{k-1} ^ x_k).
/// Each step is a bijection, so distinct paths collide only by chance (2^-64); a loop over
/// the last index costs one mix64 per value (the prefix is hoisted).
inline std::uint64_t stream_key(std::uint64_t seed, std::uint64_t stream) noexcept
{
    return mix64(mix64(seed) ^ stream);
}
inline std::uint64_t hash(std::uint64_t key, std::uint64_t x) noexcept
{
    return mix64(key ^ x);
}

/// The top 53 bits as a double in the open interval (0, 1): (m + 1/2) * 2^-53.
inline double unit(std::uint64_t h) noexcept
{
    return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// ---- deterministic log and exp (IEEE +,-,*,/ and exact frexp/ldexp only) ----------------

constexpr double ln2 = 0.69314718055994530942;
constexpr double ln10 = 2.30258509299404568402;

/// log x for finite x > 0. x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(t),
/// t = (m-1)/(m+1), |t| <= 0.172, series 2(t + t^3/3 + ... + t^25/25): error < 1e-19.
double det_log(double x) noexcept
{
    int e = 0;
    double m = std::frexp(x, &e);  // m in [0.5, 1)
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    const double t = (m - 1.0) / (m + 1.0);
    const double t2 = t * t;
    double s = 1.0 / 25.0;
    for (int k = 23; k >= 1; k -= 2) s = 1.0 / double(k) + t2 * s;
    return 2.0 * t * s + double(e) * ln2;
}

/// exp x, x clamped to [-700, 700]. x = k ln2 + r with |r| <= ln2/2 (Cody-Waite split of
/// ln2 so that k*ln2_hi is exact); exp r by its Taylor series to r^16/16! (< 2e-21).
double det_exp(double x) noexcept
{
    x = std::min(700.0, std::max(-700.0, x));
    const double k = std::floor(x / ln2 + 0.5);
    constexpr double ln2_hi = 0.693145751953125;  // 45425 / 2^16: k * ln2_hi is exact
    constexpr double ln2_lo = 1.42860682030941723212e-6;
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    double p = 1.0;
    for (int n = 16; n >= 1; --n) p = 1.0 + p * r / double(n);
    return std::ldexp(p, int(k));
}

/// Standard normal number a of stream `key`, by Marsaglia's polar method: attempt n draws
/// the pair at paths (a, 2n) and (a, 2n+1). Accepts with probability pi/4 per attempt.
double normal(std::uint64_t key, std::uint64_t a) noexcept
{
    const std::uint64_t ka = hash(key, a);
    for (std::uint64_t n = 0; n < 64; ++n) {
        const double u = 2.0 * unit(hash(ka, 2 * n)) - 1.0;
        const double v = 2.0 * unit(hash(ka, 2 * n + 1)) - 1.0;
        const double s = u * u + v * v;
        if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * det_log(s) / s);
    }
    return 0.0;  // (1 - pi/4)^64 < 1e-42
}

/// exp x for x in [-30, 30], a faster deterministic twin of det_exp for per-cell use (no
/// divisions): x = k ln2 + r, |r| <= ln2/2; exp r by Horner on the Taylor coefficients to
/// r^13/13! (error < 1e-17 relative); 2^k assembled from its bits (|k| <= 44).
double det_exp30(double x) noexcept
{
    constexpr double inv_fact[14] = {1.0,
                                     1.0,
                                     1.0 / 2,
                                     1.0 / 6,
                                     1.0 / 24,
                                     1.0 / 120,
                                     1.0 / 720,
                                     1.0 / 5040,
                                     1.0 / 40320,
                                     1.0 / 362880,
                                     1.0 / 3628800,
                                     1.0 / 39916800,
                                     1.0 / 479001600,
                                     1.0 / 6227020800.0};
    x = std::min(30.0, std::max(-30.0, x));
    const double k = std::floor(x * (1.0 / ln2) + 0.5);
    constexpr double ln2_hi = 0.693145751953125;  // as in det_exp: k * ln2_hi is exact
    constexpr double ln2_lo = 1.42860682030941723212e-6;
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    double p = inv_fact[13];
    for (int n = 12; n >= 0; --n) p = p * r + inv_fact[n];
    const std::uint64_t bits = std::uint64_t(static_cast<long long>(k) + 1023) << 52;
    double two_k;
    std::memcpy(&two_k, &bits, sizeof two_k);
    return p * two_k;
}

/// sin x and cos x for |x| < 2^50 (deterministic, like det_exp). x = n pi/2 + r with
/// |r| <= pi/4 (two-part Cody-Waite split of pi/2: n * pio2_hi is exact for |n| < 2^20, and
/// the result stays deterministic beyond); Taylor series of sin r to r^17 and cos r to r^16.
void det_sincos(double x, double& sin_x, double& cos_x) noexcept
{
    constexpr double two_over_pi = 0.63661977236758134308;
    constexpr double pio2_hi = 1.57079632673412561417;  // first 33 bits of pi/2
    constexpr double pio2_lo = 6.07710050650619224932e-11;
    x = std::min(1e15, std::max(-1e15, x));
    const double n = std::floor(x * two_over_pi + 0.5);
    const double r = (x - n * pio2_hi) - n * pio2_lo;
    const double r2 = r * r;
    double ps = 1.0, pc = 1.0;
    for (int k = 8; k >= 1; --k) {
        ps = 1.0 - ps * r2 / (double(2 * k) * double(2 * k + 1));
        pc = 1.0 - pc * r2 / (double(2 * k - 1) * double(2 * k));
    }
    const double sr = r * ps, cr = pc;
    switch (static_cast<long long>(n) & 3) {
        case 0:
            sin_x = sr;
            cos_x = cr;
            break;
        case 1:
            sin_x = cr;
            cos_x = -sr;
            break;
        case 2:
            sin_x = -sr;
            cos_x = -cr;
            break;
        default:
            sin_x = -cr;
            cos_x = sr;
            break;
    }
}

// ---- parallel thresholds -------------------------------------------------------------------

/// Below these sizes a loop runs on one thread: a parallel region costs more than the work,
/// and its barrier stalls on a loaded host. (Values never depend on the thread count.)
constexpr index_t parallel_min_cells = 4096;
constexpr index_t parallel_min_rows = 32768;

// ---- geometry ----------------------------------------------------------------------------

/// Directions q = 0..6 in ascending block offset: -JH, -J, -1, 0, +1, +J, +JH.
constexpr int num_dirs = 7;
constexpr int self_dir = 3;
/// Axis of each direction (x = 0, y = 1, z = 2; -1 for the cell itself).
constexpr int axis_of[num_dirs] = {2, 1, 0, -1, 0, 1, 2};

struct Geometry {
    index_t J, H, I, G;
    bool banded;
    std::array<index_t, num_dirs> d;    // block offsets
    std::array<bool, num_dirs> active;  // direction carries couplings somewhere

    explicit Geometry(const HeptaSpec& s)
        : J(s.J), H(s.H), I(s.I), G(index_t(s.cells())), banded(s.banded)
    {
        const index_t jh = J * H;
        d = {-jh, -J, -1, 0, 1, J, jh};
        for (int q = 0; q < num_dirs; ++q) {
            if (q == self_dir)
                active[q] = true;
            else if (banded)
                active[q] = std::abs(d[q]) < G;  // a diagonal of G - |d| blocks
            else
                active[q] = (axis_of[q] == 0 ? J : axis_of[q] == 1 ? H : I) > 1;
        }
    }

    /// Whether cell c = j + J(h + H i) couples to c + d[q].
    bool present(index_t c, int q, index_t j, index_t h, index_t i) const noexcept
    {
        if (!active[q]) return false;
        if (banded) {
            const offset_t n = offset_t(c) + d[q];
            return n >= 0 && n < G;
        }
        switch (q) {
            case 0:
                return i > 0;
            case 1:
                return h > 0;
            case 2:
                return j > 0;
            case 4:
                return j < J - 1;
            case 5:
                return h < H - 1;
            case 6:
                return i < I - 1;
            default:
                return true;
        }
    }
    bool present(index_t c, int q) const noexcept
    {
        const index_t j = c % J, h = (c / J) % H, i = c / (J * H);
        return present(c, q, j, h, i);
    }
};

// ---- channelized permeability field (hepta.hpp: channelized_permeability) -----------------

/// Fraction of the layers in the upper (Tarbert-like, shallow-marine) family: 35 of SPE10's 85.
constexpr int ch_top_layers = 35, ch_all_layers = 85;
constexpr int ch_modes = 32;              // Fourier modes of the correlated Gaussian field
constexpr double ch_nugget = 0.3;         // std of the per-cell white noise in log k
constexpr int ch_bed_layers = 3;          // fluvial layers sharing one set of channels
constexpr double ch_barrier_prob = 0.15;  // a marine layer is a shale barrier
constexpr double ch_two_pi = 6.28318530717958647693;

class ChannelizedField {
public:
    /// Everything cells of z-layers [i_lo, i_hi) need.
    ChannelizedField(index_t J, index_t H, index_t I, std::uint64_t seed, index_t i_lo,
                     index_t i_hi)
        : J_(J), H_(H), I_(I), nugget_key_(stream_key(seed, stream_ch_nugget))
    {
        // correlated field: g(x) = sqrt(2/M) sum_m cos(k_m . x + phi_m), k_m ~ N(0, L^-2)
        // per axis (a Gaussian covariance of lengths Lx, Ly, Lz), x at cell centres
        const double ly = std::max(2.0, double(std::min(J, H)) / 10.0);
        const double len[3] = {2.0 * ly, ly, 0.5};
        const double cell[3] = {1.0, 1.0, 0.5};
        const index_t n[3] = {J, H, I};
        const std::uint64_t mode_key = stream_key(seed, stream_ch_modes);
        const double amp = std::sqrt(2.0 / ch_modes);
        for (int ax = 0; ax < 3; ++ax) {
            tab_re_[ax].resize(std::size_t(ch_modes) * n[ax]);
            tab_im_[ax].resize(tab_re_[ax].size());
        }
        for (int m = 0; m < ch_modes; ++m) {
            const double phase = ch_two_pi * unit(hash(hash(mode_key, 3), std::uint64_t(m)));
            for (int ax = 0; ax < 3; ++ax) {
                const double k = normal(hash(mode_key, std::uint64_t(ax)), std::uint64_t(m)) /
                                 len[ax] * cell[ax];
                for (index_t t = 0; t < n[ax]; ++t) {
                    double sn, cs;
                    det_sincos(k * (double(t) + 0.5) + (ax == 0 ? phase : 0.0), sn, cs);
                    const std::size_t at = std::size_t(m) * n[ax] + t;
                    tab_re_[ax][at] = ax == 0 ? amp * cs : cs;
                    tab_im_[ax][at] = ax == 0 ? amp * sn : sn;
                }
            }
        }
        // layer families and log-means (all layers: cheap)
        const index_t n_top =
            index_t((offset_t(ch_top_layers) * I + ch_all_layers / 2) / ch_all_layers);
        const std::uint64_t layer_key = stream_key(seed, stream_ch_layer);
        layers_.resize(I);
        for (index_t i = 0; i < I; ++i) {
            Layer& L = layers_[i];
            const double z1 = normal(hash(layer_key, 0), std::uint64_t(i));
            const double z2 = normal(hash(layer_key, 1), std::uint64_t(i));
            if (i < n_top) {
                if (unit(hash(hash(layer_key, 2), std::uint64_t(i))) < ch_barrier_prob) {
                    L.mu = det_log(0.01) + 0.5 * z1;  // shale barrier
                    L.sigma = 1.0;
                } else {
                    L.mu = det_log(50.0) + 0.7 * z1;  // shallow-marine sand
                    L.sigma = 1.2;
                }
            } else {
                L.mu = det_log(0.02) + 0.5 * z1;  // fluvial shale background
                L.sigma = 1.5;
                L.mu_channel = det_log(1500.0) + 0.3 * z2;
            }
        }
        // channels of the fluvial layers in [i_lo, i_hi): centre line yc(x) and vertical
        // half-width hw(x) (the half-width across the channel, over cos of its angle) per x
        const std::uint64_t bed_key = stream_key(seed, stream_ch_bed);
        const double w0 = std::max(3.0, double(H) / 16.0);
        const index_t n_ch = std::max<index_t>(1, index_t(std::floor(0.3 * double(H) / w0 + 0.5)));
        const double width_of[ch_bed_layers] = {1.0, 0.8, 0.55};  // top of a bed widest
        for (index_t i = std::max<index_t>(i_lo, n_top); i < std::min(i_hi, I); ++i) {
            Layer& L = layers_[i];
            const index_t f = i - n_top, bed = f / ch_bed_layers, t = f % ch_bed_layers;
            L.ch_begin = index_t(center_.size() / std::size_t(J));
            for (index_t ch = 0; ch < n_ch; ++ch) {
                const std::uint64_t key =
                    hash(hash(bed_key, std::uint64_t(bed)), std::uint64_t(ch));
                auto u = [&](std::uint64_t tag) { return unit(hash(key, tag)); };
                const double width = w0 * (0.7 + 0.6 * u(1));
                const double wave = width * (8.0 + 6.0 * u(2));  // meander wavelength
                const double a1 = wave * (0.1 + 0.15 * u(3)), p1 = ch_two_pi * u(4);
                const double wave2 = wave / 2.3, a2 = 0.25 * a1, p2 = ch_two_pi * u(5);
                const double slope = 0.4 * (u(6) - 0.5);
                const double drift = (u(7) < 0.5 ? -0.3 : 0.3) * width * double(t);
                const double y0 = double(H) * u(0) + drift;
                const double half = 0.5 * width * width_of[t];
                for (index_t j = 0; j < J; ++j) {
                    const double x = double(j) + 0.5;
                    double s1, c1, s2, c2;
                    det_sincos(ch_two_pi * x / wave + p1, s1, c1);
                    det_sincos(ch_two_pi * x / wave2 + p2, s2, c2);
                    const double dy =
                        slope + a1 * (ch_two_pi / wave) * c1 + a2 * (ch_two_pi / wave2) * c2;
                    center_.push_back(y0 + slope * (x - 0.5 * double(J)) + a1 * s1 + a2 * s2);
                    half_.push_back(half * std::sqrt(1.0 + dy * dy));
                }
            }
            L.ch_end = index_t(center_.size() / std::size_t(J));
        }
    }

    /// kx of cells [c0, c1) into k[0 .. c1 - c0) and, if s is not null, the normalised log
    /// permeability (log k - log k_min) / (log k_max - log k_min) in [0, 1] into s.
    void fill(index_t c0, index_t c1, double* k, double* s) const
    {
        if (c1 <= c0) return;
        const index_t J = J_, l0 = c0 / J, l1 = (c1 - 1) / J + 1;
#pragma omp parallel if (c1 - c0 >= parallel_min_cells)
        {
            std::vector<double> g(static_cast<std::size_t>(J));
#pragma omp for schedule(static)
            for (index_t l = l0; l < l1; ++l) {
                const index_t j0 = std::max<index_t>(0, c0 - l * J);
                const index_t j1 = std::min<index_t>(J, c1 - l * J);
                line(l % H_, l / H_, j0, j1, g.data(), k, s, l * J - c0);
            }
        }
    }

private:
    struct Layer {
        double mu = 0, sigma = 0;          // background log-mean and log-std
        double mu_channel = 0;             // fluvial layers: log-mean on the channel axis
        index_t ch_begin = 0, ch_end = 0;  // its channels' rows in center_ / half_
    };

    /// Cells j in [j0, j1) of line (h, i) into k[base + j] (and s[base + j]), as fill.
    void line(index_t h, index_t i, index_t j0, index_t j1, double* g, double* k, double* s,
              index_t base) const
    {
        const index_t J = J_;
        for (index_t j = j0; j < j1; ++j) g[j] = 0.0;
        for (int m = 0; m < ch_modes; ++m) {
            // Re(X_m[j] Y_m[h] Z_m[i]) = cos(k_m . x + phi_m), amplitude folded into X
            const std::size_t ah = std::size_t(m) * H_ + h, ai = std::size_t(m) * I_ + i;
            const double yr = tab_re_[1][ah], yi = tab_im_[1][ah];
            const double zr = tab_re_[2][ai], zi = tab_im_[2][ai];
            const double yz_re = yr * zr - yi * zi, yz_im = yr * zi + yi * zr;
            const double* xr = tab_re_[0].data() + std::size_t(m) * J;
            const double* xi = tab_im_[0].data() + std::size_t(m) * J;
            for (index_t j = j0; j < j1; ++j) g[j] += xr[j] * yz_re - xi[j] * yz_im;
        }
        const Layer& L = layers_[i];
        const double y = double(h) + 0.5;
        const double log_min = det_log(channelized_k_min), log_max = det_log(channelized_k_max);
        const index_t row = J * (h + H_ * i);
        for (index_t j = j0; j < j1; ++j) {
            // nugget: triangular (sum of two uniforms), std ch_nugget
            const std::uint64_t z = hash(nugget_key_, std::uint64_t(row) + std::uint64_t(j));
            const double u1 = (double(z >> 32) + 0.5) * (1.0 / 4294967296.0);
            const double u2 = (double(z & 0xffffffffULL) + 0.5) * (1.0 / 4294967296.0);
            const double nugget = ch_nugget * 2.44948974278317809820 * (u1 + u2 - 1.0);
            double logk = L.mu + L.sigma * g[j] + nugget;
            // channels: r = distance to the nearest centre line / half-width
            double r = 1.0;
            for (index_t ch = L.ch_begin; ch < L.ch_end; ++ch) {
                const std::size_t at = std::size_t(ch) * J + j;
                r = std::min(r, std::abs(y - center_[at]) / half_[at]);
            }
            if (r < 1.0) logk = L.mu_channel - 1.5 * r * r + 0.8 * g[j] + nugget;
            logk = std::min(30.0, std::max(-30.0, logk));
            k[base + j] = std::min(channelized_k_max, std::max(channelized_k_min, det_exp30(logk)));
            if (s)
                s[base + j] = std::min(1.0, std::max(0.0, (logk - log_min) / (log_max - log_min)));
        }
    }

    index_t J_, H_, I_;
    std::uint64_t nugget_key_;
    std::vector<double> tab_re_[3], tab_im_[3];  // [m * n_axis + t]: e^{i k_m,axis x_t}
    std::vector<Layer> layers_;
    std::vector<double> center_, half_;  // [channel row * J + j]
};

// ---- coefficient models ------------------------------------------------------------------

/// Reservoir model constants. Cells are 1 x 1 x 0.5 (x, y, z), so the area/distance factor
/// of a face is 0.5 across x and y faces and 2 across z faces; k_z = 0.1 k_x.
constexpr double geometric_factor[3] = {0.5, 0.5, 2.0};
constexpr double anisotropy[3] = {1.0, 1.0, 0.1};
/// Pore volume / dt at porosity 0.2 and difficulty 0: comparable to a cell's sum of
/// transmissibilities (about 2.4 at the median permeability 1), so the matrix is well
/// conditioned at difficulty 0.
constexpr double accumulation_ref = 1.0;

class HeptaFiller {
public:
    /// Cells [cell_lo, cell_hi) are the block rows that will be asked for (default: all);
    /// per-cell data is kept for them and one plane on either side.
    explicit HeptaFiller(const HeptaSpec& spec, index_t cell_lo = 0, index_t cell_hi = -1)
        : spec_(spec),
          geo_(spec),
          nc_(spec.Nc),
          uniform_key_(stream_key(spec.seed, stream_uniform_entry)),
          mobility_key_(stream_key(spec.seed, stream_mobility))
    {
        if (spec.model == HeptaModel::uniform) return;
        const index_t G = geo_.G;
        const index_t jh = spec.J * spec.H;
        if (cell_hi < 0) cell_hi = G;
        c0_ = std::max<index_t>(0, cell_lo - jh);
        const index_t c1 = std::min<index_t>(G, cell_hi + jh);
        const double d = spec.difficulty;
        const double acc_scale = accumulation_ref * det_exp(-3.0 * d * ln10);  // 10^(-3d)
        if (spec.model == HeptaModel::channelized) {
            channelized_cells(c1, acc_scale);
            return;
        }
        const double sigma_layer = 0.5 + 1.5 * d;
        const double sigma_cell = 0.25 + 0.5 * d;
        perm_.resize(std::size_t(std::max<index_t>(0, c1 - c0_)));
        acc_.resize(perm_.size());
        std::vector<double> layer(spec.I);
        for (index_t i = 0; i < spec.I; ++i)
            layer[i] = sigma_layer * normal(stream_key(spec.seed, stream_layer), std::uint64_t(i));
        const std::uint64_t perm_key = stream_key(spec.seed, stream_cell_perm);
        const std::uint64_t phi_key = stream_key(spec.seed, stream_porosity);
#pragma omp parallel for schedule(static) if (c1 - c0_ >= parallel_min_cells)
        for (index_t c = c0_; c < c1; ++c) {
            // log k = layer log-mean + per-cell perturbation; k_x has median 1.
            const double logk = layer[c / jh] + sigma_cell * normal(perm_key, std::uint64_t(c));
            perm_[c - c0_] = det_exp(std::min(30.0, std::max(-30.0, logk)));
            const double phi = 0.1 + 0.2 * unit(hash(phi_key, std::uint64_t(c)));
            acc_[c - c0_] = acc_scale * (phi / 0.2);
        }
    }

    const Geometry& geometry() const noexcept
    {
        return geo_;
    }
    /// Doubles needed by block_row's buffer.
    std::size_t buffer_size() const noexcept
    {
        return std::size_t(num_dirs) * nc_ * nc_;
    }

    /// The block row of cell c: present[q] for each direction, and for each present one its
    /// block in buf[(q*Nc + a)*Nc + s] (row a, column s of the block). Blocks that are not
    /// present are left untouched.
    void block_row(index_t c, std::array<bool, num_dirs>& present, double* buf) const
    {
        const index_t J = geo_.J, H = geo_.H;
        const index_t j = c % J, h = (c / J) % H, i = c / (J * H);
        for (int q = 0; q < num_dirs; ++q) present[q] = geo_.present(c, q, j, h, i);
        if (spec_.model == HeptaModel::uniform)
            uniform_row(c, present, buf);
        else
            reservoir_row(c, present, buf);
    }

private:
    /// Channelized model: k_x from channelized_permeability's field on cells [c0_, c1), and
    /// the accumulation with a porosity that follows log k (0.05 in the tightest shale to
    /// 0.25 in the best sand, plus uniform noise in [0, 0.05)).
    void channelized_cells(index_t c1, double acc_scale)
    {
        const index_t n = std::max<index_t>(0, c1 - c0_);
        perm_.resize(std::size_t(n));
        acc_.resize(perm_.size());
        if (n == 0) return;
        const index_t jh = spec_.J * spec_.H;
        const ChannelizedField field(spec_.J, spec_.H, spec_.I, spec_.seed, c0_ / jh,
                                     (c1 - 1) / jh + 1);
        field.fill(c0_, c1, perm_.data(), acc_.data());  // acc_ <- normalised log k first
        const std::uint64_t phi_key = stream_key(spec_.seed, stream_ch_porosity);
#pragma omp parallel for schedule(static) if (n >= parallel_min_cells)
        for (index_t c = c0_; c < c1; ++c) {
            const double phi =
                0.05 + 0.2 * acc_[c - c0_] + 0.05 * unit(hash(phi_key, std::uint64_t(c)));
            acc_[c - c0_] = acc_scale * (phi / 0.2);
        }
    }

    /// Thesis-like: every entry of every present block uniform in (0, 1), hashed from its
    /// (row, column).
    void uniform_row(index_t c, const std::array<bool, num_dirs>& present, double* buf) const
    {
        for (int q = 0; q < num_dirs; ++q) {
            if (!present[q]) continue;
            const index_t nb = c + geo_.d[q];
            for (index_t a = 0; a < nc_; ++a) {
                const std::uint64_t row_key = hash(uniform_key_, std::uint64_t(c) * nc_ + a);
                for (index_t s = 0; s < nc_; ++s) {
                    const std::uint64_t col = std::uint64_t(nb) * nc_ + s;
                    buf[(std::size_t(q) * nc_ + a) * nc_ + s] = unit(hash(row_key, col));
                }
            }
        }
    }

    /// Finite-volume block row (hepta.hpp). For each present neighbour n across axis x:
    ///   T = geometric_factor[x] * anisotropy[x] * 2 k_c k_n / (k_c + k_n)   (harmonic mean)
    ///   block(c, n) = -T C,     C = mobility block of the connection {c, n}
    ///   block(c, c) += T (C + 2 diag(R)),   R_a = sum_{s != a} C_as
    /// and block(c, c) starts as acc_c I. Row (c, a) then has
    ///   |a_ii| - sum_{j != i} |a_ij| = acc_c + sum_n T(C_aa + 2R_a) - sum_n T(C_aa + R_a)
    ///                                         - sum_n T R_a = acc_c >= 0.
    void reservoir_row(index_t c, const std::array<bool, num_dirs>& present, double* buf) const
    {
        const std::size_t bb = std::size_t(nc_) * nc_;
        double* diag = buf + self_dir * bb;
        std::fill(diag, diag + bb, 0.0);
        for (index_t a = 0; a < nc_; ++a) diag[a * nc_ + a] = acc_[c - c0_];
        for (int q = 0; q < num_dirs; ++q) {
            if (q == self_dir || !present[q]) continue;
            const index_t nb = c + geo_.d[q];
            const int ax = axis_of[q];
            // min/max order makes T bit-identical from both sides of the connection
            const double kc = perm_[c - c0_], kn = perm_[nb - c0_];
            const double lo = std::min(kc, kn), hi = std::max(kc, kn);
            const double t = geometric_factor[ax] * anisotropy[ax] * (2.0 * lo * hi / (lo + hi));
            // path (lower cell, axis): the same block C from both cells of the connection
            const std::uint64_t key =
                hash(hash(mobility_key_, std::uint64_t(std::min(c, nb))), std::uint64_t(ax));
            double* off = buf + std::size_t(q) * bb;
            for (index_t a = 0; a < nc_; ++a) {
                double row_off = 0.0;  // R_a
                double caa = 0.0;
                for (index_t s = 0; s < nc_; ++s) {
                    const double u = unit(hash(key, std::uint64_t(a) * nc_ + s));
                    // dominant diagonal in [0.5, 1.5), couplings summing to < 0.3
                    const double cas = a == s ? 0.5 + u : 0.3 * u / double(std::max(1, nc_ - 1));
                    off[a * nc_ + s] = -t * cas;
                    if (a == s) {
                        caa = cas;
                    } else {
                        row_off += cas;
                        diag[a * nc_ + s] += t * cas;
                    }
                }
                diag[a * nc_ + a] += t * (caa + 2.0 * row_off);
            }
        }
    }

    HeptaSpec spec_;
    Geometry geo_;
    index_t nc_;
    std::uint64_t uniform_key_;  // stream keys (see stream_key)
    std::uint64_t mobility_key_;
    index_t c0_ = 0;            // first cell of perm_ and acc_
    std::vector<double> perm_;  // k_x per cell (reservoir, channelized)
    std::vector<double> acc_;   // pore volume / dt per cell (reservoir, channelized)
};

std::string lower(std::string s)
{
    for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

}  // namespace

// ---- public API --------------------------------------------------------------------------

HeptaModel parse_model(const std::string& name)
{
    const std::string n = lower(name);
    if (n == "uniform") return HeptaModel::uniform;
    if (n == "reservoir") return HeptaModel::reservoir;
    if (n == "channelized") return HeptaModel::channelized;
    HEPTANE_THROW(InputError, "unknown coefficient model '"
                                  << name << "' (choose uniform, reservoir or channelized)");
}

const char* to_string(HeptaModel m)
{
    switch (m) {
        case HeptaModel::uniform:
            return "uniform";
        case HeptaModel::reservoir:
            return "reservoir";
        case HeptaModel::channelized:
            return "channelized";
    }
    return "?";
}

void validate(const HeptaSpec& s)
{
    HEPTANE_ENSURE(s.J >= 1 && s.H >= 1 && s.I >= 1 && s.Nc >= 1, InputError,
                   "hepta grid " << s.J << "x" << s.H << "x" << s.I << " with Nc=" << s.Nc
                                 << ": every size must be >= 1");
    // N = J*H*I*Nc < 2^31, checked factor by factor so the product cannot overflow
    const offset_t limit = std::numeric_limits<index_t>::max();
    offset_t n = 1;
    for (offset_t f : {offset_t(s.J), offset_t(s.H), offset_t(s.I), offset_t(s.Nc)}) {
        n *= f;
        HEPTANE_ENSURE(n <= limit, InputError,
                       "hepta grid " << s.J << "x" << s.H << "x" << s.I << " with Nc=" << s.Nc
                                     << " has more than 2^31-1 rows");
    }
    HEPTANE_ENSURE(std::isfinite(s.difficulty) && s.difficulty >= 0, InputError,
                   "difficulty must be finite and >= 0, got " << s.difficulty);
    if (s.banded)
        HEPTANE_ENSURE(s.J >= 2 && (s.H >= 2 || s.I == 1), InputError,
                       "the banded variant needs J >= 2, and H >= 2 when I > 1, so that its "
                       "offsets 1, J, J*H are distinct; got "
                           << s.J << "x" << s.H << "x" << s.I << " (use the grid variant)");
}

std::string describe(const HeptaSpec& s)
{
    std::ostringstream o;
    o << (s.banded ? "banded" : "grid") << " GH " << s.J << "x" << s.H << "x" << s.I
      << ", Nc=" << s.Nc << ", " << to_string(s.model);
    if (s.model == HeptaModel::reservoir || s.model == HeptaModel::channelized)
        o << " (difficulty " << s.difficulty << ")";
    o << ", seed " << s.seed;
    return o.str();
}

PermeabilityField channelized_permeability(index_t J, index_t H, index_t I, std::uint64_t seed)
{
    HeptaSpec spec;
    spec.J = J;
    spec.H = H;
    spec.I = I;
    spec.banded = false;
    validate(spec);
    const index_t G = index_t(spec.cells());
    PermeabilityField out;
    out.kx.resize(std::size_t(G));
    const ChannelizedField field(J, H, I, seed, 0, I);
    field.fill(0, G, out.kx.data(), nullptr);
    out.ky = out.kx;
    out.kz.resize(out.kx.size());
    for (std::size_t c = 0; c < out.kz.size(); ++c) out.kz[c] = channelized_kz_ratio * out.kx[c];
    return out;
}

std::vector<index_t> hepta_block_offsets(const HeptaSpec& spec)
{
    validate(spec);
    const Geometry g(spec);
    std::vector<index_t> out;
    for (int q = 0; q < num_dirs; ++q)
        if (g.active[q]) out.push_back(g.d[q]);
    return out;
}

offset_t hepta_nnz(const HeptaSpec& s)
{
    validate(s);
    const offset_t J = s.J, H = s.H, I = s.I, G = s.cells(), b2 = offset_t(s.Nc) * s.Nc;
    // banded: sum of the diagonal lengths G + 2(G-1) + 2(G-J) + 2(G-JH) (valid specs give
    // G - J >= 0 and G - JH >= 0; an empty diagonal contributes 0).
    // grid: G self blocks plus two per interior face: 2[(J-1)HI + J(H-1)I + JH(I-1)].
    if (s.banded) return b2 * (7 * G - 2 - 2 * J - 2 * J * H);
    return b2 * (7 * G - 2 * (H * I + J * I + J * H));
}

/// body(c, present, blocks) for the cells c in [c0, c1), in parallel when there are enough of
/// them: the filler's block row of c (its present neighbours and their Nc x Nc blocks, as
/// HeptaFiller::block_row writes them) in a per-thread buffer.
template <class Body>
void for_each_block_row(const HeptaFiller& filler, index_t c0, index_t c1, Body&& body)
{
#pragma omp parallel if (c1 - c0 >= parallel_min_cells)
    {
        std::vector<double> buf(filler.buffer_size());
        std::array<bool, num_dirs> present{};
#pragma omp for schedule(static)
        for (index_t c = c0; c < c1; ++c) {
            filler.block_row(c, present, buf.data());
            body(c, static_cast<const std::array<bool, num_dirs>&>(present),
                 static_cast<const double*>(buf.data()));
        }
    }
}

template <class T>
Coo<T> generate_hepta_coo(const HeptaSpec& spec)
{
    validate(spec);
    const HeptaFiller filler(spec);
    const Geometry& g = filler.geometry();
    const index_t G = g.G, nc = spec.Nc;
    const offset_t bb = offset_t(nc) * nc;
    // 1. start of each block row: prefix sum of (present blocks) * Nc^2
    std::vector<offset_t> start(std::size_t(G) + 1, 0);
#pragma omp parallel for schedule(static) if (G >= parallel_min_cells)
    for (index_t c = 0; c < G; ++c) {
        int p = 0;
        for (int q = 0; q < num_dirs; ++q) p += g.present(c, q);
        start[c + 1] = p * bb;
    }
    for (index_t c = 0; c < G; ++c) start[c + 1] += start[c];
    const offset_t nnz = start[G];
    std::vector<index_t> row(nnz), col(nnz);
    std::vector<T> val(nnz);
    // 2. fill: row (c, a) holds its P present blocks' rows in ascending block offset, which
    //    is ascending column order, so the output is canonical without sorting.
    for_each_block_row(filler, 0, G, [&](index_t c, const auto& present, const double* buf) {
        const offset_t p = (start[c + 1] - start[c]) / bb;
        for (index_t a = 0; a < nc; ++a) {
            offset_t k = start[c] + offset_t(a) * p * nc;
            const index_t r = c * nc + a;
            for (int q = 0; q < num_dirs; ++q) {
                if (!present[q]) continue;
                const index_t col0 = (c + g.d[q]) * nc;
                const double* blk = buf + (std::size_t(q) * nc + a) * nc;
                for (index_t s = 0; s < nc; ++s, ++k) {
                    row[k] = r;
                    col[k] = col0 + s;
                    val[k] = static_cast<T>(blk[s]);
                }
            }
        }
    });
    Coo<T> out;
    out.rows = out.cols = G * nc;
    out.row = Array<index_t>(std::move(row));
    out.col = Array<index_t>(std::move(col));
    out.val = Array<T>(std::move(val));
    return out;
}

namespace {
/// The blocks of one cell (for_each_block_row's `present` and `buf`) into BDIA data with N =
/// `un` rows: data[(slot*Nc + s)*N + cell*Nc + a] = block(q)[a][s], `cell` the local cell.
template <class Present, class T>
void write_cell_blocks(const Present& present, const double* buf,
                       const std::array<int, num_dirs>& slot, index_t nc, std::size_t un,
                       index_t cell, T* data)
{
    for (int q = 0; q < num_dirs; ++q) {
        if (!present[q]) continue;
        for (index_t s = 0; s < nc; ++s) {
            T* diag = data + (std::size_t(slot[q]) * nc + s) * un + std::size_t(cell) * nc;
            for (index_t a = 0; a < nc; ++a)
                diag[a] = static_cast<T>(buf[(std::size_t(q) * nc + a) * nc + s]);
        }
    }
}
}  // namespace

template <class T>
Bdia<T> generate_hepta_bdia(const HeptaSpec& spec)
{
    const std::vector<index_t> offsets = hepta_block_offsets(spec);  // validates
    const HeptaFiller filler(spec);
    const Geometry& g = filler.geometry();
    const index_t G = g.G, nc = spec.Nc, n = G * nc;
    Bdia<T> out = bdia_zeros<T>(n, n, nc, offsets);
    // slot of direction q among the stored block offsets (-1: not stored)
    std::array<int, num_dirs> slot{};
    for (int q = 0, k = 0; q < num_dirs; ++q) slot[q] = g.active[q] ? k++ : -1;
    const std::size_t un = std::size_t(n);
    T* data = out.data.data();
    // values: data[(slot*Nc + s)*N + c*Nc + a] = block(c, c + d_q)[a][s]; each cell owns its
    // rows, so the writes of different threads never overlap.
    for_each_block_row(filler, 0, G, [&](index_t c, const auto& present, const double* buf) {
        write_cell_blocks(present, buf, slot, nc, un, c, data);
    });
    // pattern: bit k*N + r is set iff row r's cell has the neighbour of block diagonal
    // k / Nc. In the banded variant that is exactly "column inside the matrix", which
    // bdia_zeros has already marked; the grid variant clears the slots across box faces.
    if (spec.banded) return out;
    std::vector<int> dir_of_slot;
    for (int q = 0; q < num_dirs; ++q)
        if (slot[q] >= 0) dir_of_slot.push_back(q);
    // bit k*N + r: block diagonal k / Nc of row r
    assign_bits(
        out.pattern.data(), std::uint64_t(out.slots()),
        [&](std::uint64_t bit) {
            const index_t r = index_t(bit % un);
            return g.present(r / nc, dir_of_slot[bit / un / std::uint64_t(nc)]);
        },
        parallel_min_cells);
    return out;
}

namespace {
/// x_true of global rows [r0, r1) (hepta.hpp), into x[0 .. r1 - r0).
template <class T>
void fill_x_true(const HeptaSpec& spec, index_t r0, index_t r1, T* x)
{
    const index_t J = spec.J, H = spec.H, I = spec.I, nc = spec.Nc;
    const std::uint64_t x_key = stream_key(spec.seed, stream_x_true);
#pragma omp parallel for schedule(static) if (r1 - r0 >= parallel_min_rows)
    for (index_t r = r0; r < r1; ++r) {
        const index_t c = r / nc, a = r % nc;
        const index_t j = c % J, h = (c / J) % H, i = c / (J * H);
        const double u = (j + 0.5) / J, v = (h + 0.5) / H, w = (i + 0.5) / I;
        const double noise = unit(hash(x_key, std::uint64_t(r))) - 0.5;
        x[r - r0] = static_cast<T>(1.0 + 0.5 * 16.0 * u * (1.0 - u) * v * (1.0 - v) + 0.25 * w +
                                   0.1 * double(a) / double(nc) + 0.02 * noise);
    }
}

/// Rows [r0, r1) checked against the spec: 0 <= r0 <= r1 <= N, both multiples of Nc.
void check_row_range(const HeptaSpec& spec, index_t r0, index_t r1, const char* who)
{
    const offset_t n = spec.rows();
    HEPTANE_ENSURE(r0 >= 0 && r0 <= r1 && r1 <= n, InputError,
                   who << ": rows [" << r0 << ", " << r1 << ") are not inside [0, " << n << ") of "
                       << describe(spec));
    HEPTANE_ENSURE(r0 % spec.Nc == 0 && r1 % spec.Nc == 0, InputError,
                   who << ": rows [" << r0 << ", " << r1 << ") do not start and end on a cell "
                       << "(multiples of Nc = " << spec.Nc << ")");
}
}  // namespace

template <class T>
std::vector<T> hepta_x_true(const HeptaSpec& spec)
{
    validate(spec);
    std::vector<T> x(std::size_t(spec.rows()));
    fill_x_true(spec, 0, index_t(spec.rows()), x.data());
    return x;
}

template <class T>
Bdia<T> generate_hepta_bdia_rows(const HeptaSpec& spec, index_t row_begin, index_t row_end)
{
    const std::vector<index_t> offsets = hepta_block_offsets(spec);  // validates
    check_row_range(spec, row_begin, row_end, "generate_hepta_bdia_rows");
    const index_t nc = spec.Nc, c0 = row_begin / nc, c1 = row_end / nc, n = row_end - row_begin;
    const HeptaFiller filler(spec, c0, c1);
    const Geometry& g = filler.geometry();
    std::array<int, num_dirs> slot{};
    std::vector<int> dir_of_slot;
    for (int q = 0, k = 0; q < num_dirs; ++q) {
        slot[q] = g.active[q] ? k++ : -1;
        if (g.active[q]) dir_of_slot.push_back(q);
    }
    Bdia<T> out;
    out.rows = out.cols = n;
    out.block_size = nc;
    out.block_offsets = offsets;
    const std::size_t un = std::size_t(n);
    const std::size_t slots = std::size_t(offsets.size()) * nc * un;
    out.data = Array<T>(cpu_executor(), slots);
    T* data = out.data.data();  // zero-initialised host array
    for_each_block_row(filler, c0, c1, [&](index_t c, const auto& present, const double* buf) {
        write_cell_blocks(present, buf, slot, nc, un, c - c0, data);
    });
    // pattern: a slot is stored iff its neighbour is present and its column is a local one
    // (couplings to other processes' rows keep their values in `data`, outside the pattern)
    out.pattern = make_bitset(slots, false);
    assign_bits(
        out.pattern.data(), slots,
        [&](std::uint64_t bit) {
            const index_t r = index_t(bit % un);
            const int q = dir_of_slot[bit / un / std::uint64_t(nc)];
            const offset_t col = offset_t(r - r % nc) + offset_t(g.d[q]) * nc;
            return col >= 0 && col < n && g.present(c0 + r / nc, q);
        },
        parallel_min_cells);
    return out;
}

template <class T>
LinearSystem<T> make_rhs_rows(const HeptaSpec& spec, const Bdia<T>& local, index_t row_begin)
{
    validate(spec);
    const index_t n = local.rows, nc = spec.Nc, row_end = row_begin + n;
    check_row_range(spec, row_begin, row_end, "make_rhs_rows");
    HEPTANE_ENSURE(local.exec()->is_cpu(), NotSupported, "make_rhs_rows needs a host matrix");
    HEPTANE_ENSURE(local.block_size == nc && local.block_offsets == hepta_block_offsets(spec),
                   DimensionMismatch,
                   "make_rhs_rows: the matrix is not a row block of " << describe(spec));
    const Geometry g(spec);
    std::vector<int> dir_of_slot;
    for (int q = 0; q < num_dirs; ++q)
        if (g.active[q]) dir_of_slot.push_back(q);
    // x_true on the rows the block reaches: [row_begin - lo, row_end + hi) within [0, N)
    const index_t N = index_t(spec.rows());
    const offset_t reach_lo = offset_t(-local.block_offsets.front()) * nc;
    const offset_t reach_hi = offset_t(local.block_offsets.back()) * nc + nc;
    const index_t x0 = index_t(std::max<offset_t>(0, offset_t(row_begin) - reach_lo));
    const index_t x1 = index_t(std::min<offset_t>(N, offset_t(row_end) + reach_hi));
    std::vector<T> xr(std::size_t(x1 - x0));
    fill_x_true(spec, x0, x1, xr.data());
    LinearSystem<T> sys;
    sys.x_true.assign(xr.begin() + (row_begin - x0), xr.begin() + (row_end - x0));
    sys.b.assign(std::size_t(n), T(0));
    const index_t nd = local.num_diagonals();
    const T* data = local.data.data();
#pragma omp parallel for schedule(static) if (n >= parallel_min_rows)
    for (index_t r = 0; r < n; ++r) {
        // the same sum, in the same (ascending column) order, as make_rhs on the whole matrix
        const index_t gr = row_begin + r;
        double sum = 0.0;
        for (index_t k = 0; k < nd; ++k) {
            const int q = dir_of_slot[k / nc];
            if (!g.present(gr / nc, q)) continue;
            const index_t col = gr - gr % nc + local.offset(k);
            sum += double(data[std::size_t(k) * std::size_t(n) + std::size_t(r)]) *
                   double(xr[std::size_t(col - x0)]);
        }
        sys.b[r] = static_cast<T>(sum);
    }
    return sys;
}

namespace {
/// x_true of the spec and b = 0 of its size, after checking that the matrix is N x N and on
/// the host (make_rhs's common start).
template <class T>
LinearSystem<T> rhs_for(const HeptaSpec& spec, index_t rows, index_t cols, bool on_host)
{
    const index_t n = index_t(spec.rows());
    HEPTANE_ENSURE(rows == n && cols == n, DimensionMismatch,
                   "make_rhs: matrix is " << rows << " x " << cols << ", spec " << describe(spec)
                                          << " has N = " << n);
    HEPTANE_ENSURE(on_host, NotSupported, "make_rhs needs a host matrix");
    LinearSystem<T> sys{hepta_x_true<T>(spec), {}};
    sys.b.assign(std::size_t(n), T(0));
    return sys;
}
}  // namespace

template <class T>
LinearSystem<T> make_rhs(const HeptaSpec& spec, const Coo<T>& a)
{
    LinearSystem<T> sys = rhs_for<T>(spec, a.rows, a.cols, a.exec()->is_cpu());
    const index_t n = index_t(spec.rows());
    const offset_t nnz = a.nnz();
    const index_t* ri = a.row.data();
    const index_t* ci = a.col.data();
    const T* v = a.val.data();
    // rows must be grouped (canonical COO) for the per-row loop below
    bool sorted = true;
#pragma omp parallel for reduction(&& : sorted) if (nnz >= parallel_min_rows)
    for (offset_t k = 1; k < nnz; ++k) sorted = sorted && ri[k - 1] <= ri[k];
    HEPTANE_ENSURE(sorted, InputError, "make_rhs: COO rows are not sorted (not canonical)");
    const std::vector<T>& x = sys.x_true;
#pragma omp parallel for schedule(static) if (n >= parallel_min_rows)
    for (index_t r = 0; r < n; ++r) {
        // b_r = sum_k v_k x_{col_k} over row r's entries, in ascending column order
        offset_t k = std::lower_bound(ri, ri + nnz, r) - ri;
        double sum = 0.0;
        for (; k < nnz && ri[k] == r; ++k) sum += double(v[k]) * double(x[ci[k]]);
        sys.b[r] = static_cast<T>(sum);
    }
    return sys;
}

template <class T>
LinearSystem<T> make_rhs(const HeptaSpec& spec, const Bdia<T>& a)
{
    LinearSystem<T> sys = rhs_for<T>(spec, a.rows, a.cols, a.exec()->is_cpu());
    const index_t n = index_t(spec.rows());
    const index_t nd = a.num_diagonals(), nc = a.block_size;
    const std::uint64_t* pat = a.pattern.data();
    const T* data = a.data.data();
    const std::vector<T>& x = sys.x_true;
#pragma omp parallel for schedule(static) if (n >= parallel_min_rows)
    for (index_t r = 0; r < n; ++r) {
        // b_r = sum over stored slots k of data[k*N + r] * x[r - r%Nc + offset(k)]; offsets
        // ascend with k, so the order is ascending column as in the COO overload.
        double sum = 0.0;
        for (index_t k = 0; k < nd; ++k) {
            const std::size_t slot = std::size_t(k) * std::size_t(n) + std::size_t(r);
            if (!test_bit(pat, slot)) continue;
            const index_t col = r - r % nc + a.offset(k);
            sum += double(data[slot]) * double(x[col]);
        }
        sys.b[r] = static_cast<T>(sum);
    }
    return sys;
}

#define HEPTANE_INSTANTIATE(T)                                                        \
    template Coo<T> generate_hepta_coo<T>(const HeptaSpec&);                          \
    template Bdia<T> generate_hepta_bdia<T>(const HeptaSpec&);                        \
    template std::vector<T> hepta_x_true<T>(const HeptaSpec&);                        \
    template LinearSystem<T> make_rhs<T>(const HeptaSpec&, const Coo<T>&);            \
    template LinearSystem<T> make_rhs<T>(const HeptaSpec&, const Bdia<T>&);           \
    template Bdia<T> generate_hepta_bdia_rows<T>(const HeptaSpec&, index_t, index_t); \
    template LinearSystem<T> make_rhs_rows<T>(const HeptaSpec&, const Bdia<T>&, index_t);
HEPTANE_INSTANTIATE(double)
HEPTANE_INSTANTIATE(float)
#undef HEPTANE_INSTANTIATE

}  // namespace heptane
