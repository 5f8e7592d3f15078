// PET-like systems: ring geometry, Siddon's ray tracing, the Shepp–Logan-like phantom, the
// Poisson counts, and the streaming Matrix Market writer (generators/pet.hpp).
#include "generators/pet.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include <omp.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "generators/matrix_market.hpp"

namespace heptane {

namespace {

constexpr double half_pi = 1.57079632679489661923;
constexpr index_t block_rows = 4096;  // fixed row blocks: sums independent of the threads
constexpr double min_segment = 1e-9;  // voxel units; shorter pieces come from grid corners

// ---- deterministic elementary functions (IEEE +, -, *, /, sqrt, floor, ldexp only) -------

/// sin x and cos x for 0 <= x <= π/4, Taylor series to x^19 / x^18 (error below 1e-17).
void sincos_small(double x, double& s, double& c)
{
    const double x2 = x * x;
    double ts = x, tc = 1.0;
    s = x;
    c = 1.0;
    for (int k = 1; k <= 9; ++k) {
        ts *= -x2 / double((2 * k) * (2 * k + 1));
        tc *= -x2 / double((2 * k - 1) * (2 * k));
        s += ts;
        c += tc;
    }
}

/// sin and cos of the angle 2π·num/den (a fraction of a full turn), reduced exactly in
/// integers to [0, π/4].
void sincos_turn(long long num, long long den, double& s, double& c)
{
    num %= den;
    if (num < 0) num += den;
    const long long q = (4 * num) / den;      // quadrant
    const long long rem = 4 * num - q * den;  // angle in the quadrant: (π/2)·rem/den
    double ss, cc;
    if (2 * rem <= den)
        sincos_small(half_pi * (double(rem) / double(den)), ss, cc);
    else
        sincos_small(half_pi * (double(den - rem) / double(den)), cc, ss);  // sin φ = cos(π/2−φ)
    switch (q) {
        case 0:
            s = ss;
            c = cc;
            break;
        case 1:
            s = cc;
            c = -ss;
            break;
        case 2:
            s = -ss;
            c = -cc;
            break;
        default:
            s = -cc;
            c = ss;
            break;
    }
}

/// e^x for x <= 0: x = k ln 2 + r, |r| <= ln2/2, Taylor series of e^r to r^17, times 2^k.
double exp_nonpositive(double x)
{
    if (x < -745.0) return 0.0;
    const double ln2_hi = 6.93147180369123816490e-01;  // fdlibm's split of ln 2: k·ln2_hi exact
    const double ln2_lo = 1.90821492927058770002e-10;
    const double inv_ln2 = 1.44269504088896338700e+00;
    const double k = std::floor(x * inv_ln2 + 0.5);
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    double t = 1.0, e = 1.0;
    for (int i = 1; i <= 17; ++i) {
        t *= r / i;
        e += t;
    }
    return std::ldexp(e, static_cast<int>(k));
}

std::uint64_t splitmix64(std::uint64_t& state)
{
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 53 random bits.
double uniform01(std::uint64_t& state)
{
    return double(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

// ---- geometry ----------------------------------------------------------------------------

struct Geometry {
    index_t n = 0, nz = 0;
    double lo[3] = {0, 0, 0};  // lower corner of the image box
    index_t cells[3] = {0, 0, 0};
    std::vector<double> det_x, det_y;  // detector positions in a ring
    std::vector<double> ring_z;
    std::vector<std::pair<index_t, index_t>> pairs;       // transaxial (a, b), a < b
    std::vector<std::pair<index_t, index_t>> ring_pairs;  // (r1, r2)
};

Geometry make_geometry(const PetSpec& spec, bool with_pairs = true)
{
    Geometry g;
    g.n = spec.image;
    g.nz = spec.slices;
    g.lo[0] = g.lo[1] = -0.5 * g.n;
    g.lo[2] = -0.5 * g.nz;
    g.cells[0] = g.cells[1] = g.n;
    g.cells[2] = g.nz;
    const double radius = 0.5 * g.n / spec.fov;
    g.det_x.resize(spec.detectors);
    g.det_y.resize(spec.detectors);
    for (index_t d = 0; d < spec.detectors; ++d) {
        double s, c;
        sincos_turn(d, spec.detectors, s, c);
        g.det_x[d] = radius * c;
        g.det_y[d] = radius * s;
    }
    g.ring_z.resize(spec.rings);
    for (index_t k = 0; k < spec.rings; ++k)
        g.ring_z[k] = -0.5 * g.nz + (k + 0.5) * (double(g.nz) / spec.rings);
    if (!with_pairs) return g;
    // transaxial field of view: the line passes within n/2 of the axis
    const double h = 0.5 * g.n;
    for (index_t a = 0; a < spec.detectors; ++a)
        for (index_t b = a + 1; b < spec.detectors; ++b) {
            const double dx = g.det_x[b] - g.det_x[a], dy = g.det_y[b] - g.det_y[a];
            const double cross = std::abs(g.det_x[a] * g.det_y[b] - g.det_x[b] * g.det_y[a]);
            if (cross < h * std::sqrt(dx * dx + dy * dy)) g.pairs.emplace_back(a, b);
        }
    for (index_t r1 = 0; r1 < spec.rings; ++r1)
        for (index_t r2 = 0; r2 < spec.rings; ++r2)
            if (spec.max_ring_difference < 0 || std::abs(r1 - r2) <= spec.max_ring_difference)
                g.ring_pairs.emplace_back(r1, r2);
    return g;
}

PetLor lor_of(const Geometry& g, index_t row)
{
    const std::size_t P = g.pairs.size();
    const auto& rp = g.ring_pairs[std::size_t(row) / P];
    const auto& p = g.pairs[std::size_t(row) % P];
    return PetLor{{g.det_x[p.first], g.det_y[p.first], g.ring_z[rp.first]},
                  {g.det_x[p.second], g.det_y[p.second], g.ring_z[rp.second]}};
}

/// Per-thread scratch of the ray tracer.
struct Tracer {
    std::vector<double> alpha;
    std::vector<std::pair<index_t, double>> seg;
    std::vector<index_t> cols;
    std::vector<double> vals;
};

/// Siddon (1985): the line p1 + α (p2 − p1), α in [0, 1], clipped to the image box; the
/// crossings of the voxel planes split it into segments, each inside one voxel (found from
/// its midpoint) with length Δα·|p2 − p1|. Result in t.cols (ascending) and t.vals.
void siddon(const Geometry& g, const PetLor& l, Tracer& t)
{
    t.cols.clear();
    t.vals.clear();
    double d[3];
    double amin = 0.0, amax = 1.0;
    for (int a = 0; a < 3; ++a) {
        d[a] = l.p2[a] - l.p1[a];
        const double lo = g.lo[a], hi = g.lo[a] + g.cells[a];
        if (d[a] != 0.0) {
            const double a0 = (lo - l.p1[a]) / d[a], a1 = (hi - l.p1[a]) / d[a];
            amin = std::max(amin, std::min(a0, a1));
            amax = std::min(amax, std::max(a0, a1));
        } else if (!(l.p1[a] > lo && l.p1[a] < hi)) {
            return;  // parallel to this axis' planes and outside (or on) the box
        }
    }
    if (!(amax > amin)) return;
    t.alpha.clear();
    t.alpha.push_back(amin);
    t.alpha.push_back(amax);
    for (int a = 0; a < 3; ++a) {
        if (d[a] == 0.0) continue;
        for (index_t i = 1; i < g.cells[a]; ++i) {  // interior planes
            const double ai = (g.lo[a] + i - l.p1[a]) / d[a];
            if (ai > amin && ai < amax) t.alpha.push_back(ai);
        }
    }
    std::sort(t.alpha.begin(), t.alpha.end());
    const double length = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    t.seg.clear();
    for (std::size_t k = 0; k + 1 < t.alpha.size(); ++k) {
        const double len = (t.alpha[k + 1] - t.alpha[k]) * length;
        if (!(len >= min_segment)) continue;
        const double mid = 0.5 * (t.alpha[k] + t.alpha[k + 1]);
        index_t idx[3];
        for (int a = 0; a < 3; ++a) {
            const double v = std::floor(l.p1[a] + mid * d[a] - g.lo[a]);
            idx[a] = static_cast<index_t>(std::min<double>(std::max(v, 0.0), g.cells[a] - 1));
        }
        t.seg.emplace_back(idx[0] + g.n * (idx[1] + g.n * idx[2]), len);
    }
    std::sort(t.seg.begin(), t.seg.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& s : t.seg) {
        if (!t.cols.empty() && t.cols.back() == s.first)
            t.vals.back() += s.second;  // rounding split one voxel's piece
        else {
            t.cols.push_back(s.first);
            t.vals.push_back(s.second);
        }
    }
}

// ---- phantom -----------------------------------------------------------------------------

struct Ellipsoid {
    double value, a, b, c, x0, y0, z0;
    int phi_twentieths;  // rotation in the x-y plane: ±18° = ±1/20 turn
};
// The modified Shepp–Logan head (Toft's intensities), axial extents after Kak & Slaney.
const Ellipsoid shepp_logan[] = {
    {1.0, .69, .92, .90, 0, 0, 0, 0},      {-.8, .6624, .874, .88, 0, -.0184, 0, 0},
    {-.2, .11, .31, .22, .22, 0, 0, -1},   {-.2, .16, .41, .28, -.22, 0, 0, 1},
    {.1, .21, .25, .41, 0, .35, -.15, 0},  {.1, .046, .046, .05, 0, .1, .25, 0},
    {.1, .046, .046, .05, 0, -.1, .25, 0}, {.1, .046, .023, .05, -.08, -.605, 0, 0},
    {.1, .023, .023, .02, 0, -.606, 0, 0}, {.1, .023, .046, .02, .06, -.605, 0, 0},
};

// ---- rows in blocks ------------------------------------------------------------------------

/// Σ_j a_ij·ph_j of the current row (sequential: deterministic).
double row_dot(const Tracer& t, const std::vector<double>& ph)
{
    double s = 0;
    for (std::size_t k = 0; k < t.cols.size(); ++k) s += t.vals[k] * ph[std::size_t(t.cols[k])];
    return s;
}

index_t num_blocks(index_t rows)
{
    return (rows + block_rows - 1) / block_rows;
}

/// The fixed blocks of rows [b0, b1), in parallel (one block to a thread at a time, so
/// per-block sums need no atomics and keep row order): block(blk, each_row), where
/// each_row(row) calls row(r, t) for every row r of the block after tracing r's line of
/// response into the thread's tracer t.
template <class Block>
void for_each_block(const Geometry& g, index_t rows, index_t b0, index_t b1, Block&& block)
{
#pragma omp parallel
    {
        Tracer t;
#pragma omp for schedule(dynamic, 1)
        for (index_t blk = b0; blk < b1; ++blk) {
            const index_t r1 = std::min<index_t>(rows, (blk + 1) * block_rows);
            block(blk, [&](auto&& row) {
                for (index_t r = blk * block_rows; r < r1; ++r) {
                    siddon(g, lor_of(g, r), t);
                    row(r, static_cast<const Tracer&>(t));
                }
            });
        }
    }
}

/// First pass: entries and Σ A·ph per fixed block of rows.
void count_blocks(const Geometry& g, index_t rows, const std::vector<double>& ph,
                  std::vector<offset_t>& nnz, std::vector<double>& dot)
{
    const index_t nb = num_blocks(rows);
    nnz.assign(std::size_t(nb), 0);
    dot.assign(std::size_t(nb), 0.0);
    for_each_block(g, rows, 0, nb, [&](index_t blk, auto&& each_row) {
        offset_t cnt = 0;
        double s = 0;
        each_row([&](index_t, const Tracer& t) {
            cnt += offset_t(t.cols.size());
            s += row_dot(t, ph);
        });
        nnz[std::size_t(blk)] = cnt;
        dot[std::size_t(blk)] = s;
    });
}

double activity_scale(const PetSpec& spec, index_t rows, const std::vector<double>& block_dot)
{
    double total = 0;
    for (double v : block_dot) total += v;  // in block order
    HEPTANE_ENSURE(total > 0, InputError,
                   "PET: no line of response sees the phantom (" << describe(spec) << ")");
    return spec.counts_per_lor * double(rows) / total;
}

// ---- files (written through AtomicFile, core/atomic_file.hpp) --------------------------------

template <class T>
void append_number(std::string& out, T v)
{
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

}  // namespace

// ---- public ----------------------------------------------------------------------------------

void validate(const PetSpec& spec)
{
    HEPTANE_ENSURE(spec.rings >= 1 && spec.image >= 1 && spec.slices >= 1, InputError,
                   "PET: rings (" << spec.rings << "), image (" << spec.image << ") and slices ("
                                  << spec.slices << ") must be >= 1");
    HEPTANE_ENSURE(spec.detectors >= 4, InputError,
                   "PET: detectors (" << spec.detectors << ") must be >= 4");
    HEPTANE_ENSURE(
        spec.fov > 0 && spec.fov < 0.70710678118654752, InputError,
        "PET: fov (" << spec.fov
                     << ") must lie in (0, 1/sqrt(2)): the image must fit inside the ring");
    HEPTANE_ENSURE(spec.counts_per_lor > 0 && std::isfinite(spec.counts_per_lor), InputError,
                   "PET: counts_per_lor (" << spec.counts_per_lor << ") must be > 0");
    const long long voxels = (long long)spec.image * spec.image * spec.slices;
    HEPTANE_ENSURE(voxels < (1LL << 31), InputError,
                   "PET: " << voxels << " voxels; at most 2^31 - 1");
    const long long pairs_max = (long long)spec.detectors * (spec.detectors - 1) / 2;
    long long ring_pairs = 0;
    for (long long r1 = 0; r1 < spec.rings; ++r1)
        for (long long r2 = 0; r2 < spec.rings; ++r2)
            if (spec.max_ring_difference < 0 || std::llabs(r1 - r2) <= spec.max_ring_difference)
                ++ring_pairs;
    HEPTANE_ENSURE(
        pairs_max * ring_pairs < (1LL << 31), InputError,
        "PET: up to " << pairs_max * ring_pairs << " lines of response; at most 2^31 - 1");
}

std::vector<std::pair<index_t, index_t>> pet_detector_pairs(const PetSpec& spec)
{
    validate(spec);
    return make_geometry(spec).pairs;
}

std::vector<std::pair<index_t, index_t>> pet_ring_pairs(const PetSpec& spec)
{
    validate(spec);
    return make_geometry(spec).ring_pairs;
}

index_t pet_rows(const PetSpec& spec)
{
    const Geometry g = make_geometry(spec);
    return index_t(g.pairs.size() * g.ring_pairs.size());
}

index_t pet_cols(const PetSpec& spec)
{
    return spec.image * spec.image * spec.slices;
}

std::string describe(const PetSpec& spec)
{
    std::ostringstream o;
    const bool two_d = spec.rings == 1 && spec.slices == 1;
    o << "PET " << (two_d ? "2-D ring" : "3-D scanner") << ": " << spec.detectors << " detectors";
    if (!two_d) o << " x " << spec.rings << " rings";
    o << ", " << spec.image << 'x' << spec.image;
    if (spec.slices > 1) o << 'x' << spec.slices;
    o << " image, fov " << spec.fov;
    if (spec.max_ring_difference >= 0 && !two_d)
        o << ", max ring difference " << spec.max_ring_difference;
    o << ", " << spec.counts_per_lor << " counts/LOR, seed " << spec.seed;
    return o.str();
}

PetLor pet_lor(const PetSpec& spec, index_t row)
{
    validate(spec);
    const Geometry g = make_geometry(spec);
    HEPTANE_ENSURE(row >= 0 && std::size_t(row) < g.pairs.size() * g.ring_pairs.size(), InputError,
                   "PET: row " << row << " out of range");
    return lor_of(g, row);
}

void pet_row(const PetSpec& spec, index_t row, std::vector<index_t>& cols,
             std::vector<double>& vals)
{
    validate(spec);
    const Geometry g = make_geometry(spec);
    HEPTANE_ENSURE(row >= 0 && std::size_t(row) < g.pairs.size() * g.ring_pairs.size(), InputError,
                   "PET: row " << row << " out of range");
    Tracer t;
    siddon(g, lor_of(g, row), t);
    cols = t.cols;
    vals = t.vals;
}

std::vector<double> pet_phantom(const PetSpec& spec)
{
    validate(spec);
    const index_t n = spec.image, nz = spec.slices;
    const bool three_d = nz > 1;
    double rot_s[3], rot_c[3];  // rotations −18°, 0°, +18°
    for (int k = -1; k <= 1; ++k) sincos_turn(k, 20, rot_s[k + 1], rot_c[k + 1]);
    std::vector<double> ph(std::size_t(n) * n * nz, 0.0);
#pragma omp parallel for schedule(static)
    for (index_t iz = 0; iz < nz; ++iz)
        for (index_t iy = 0; iy < n; ++iy)
            for (index_t ix = 0; ix < n; ++ix) {
                const double x = (ix + 0.5 - 0.5 * n) / (0.5 * n);
                const double y = (iy + 0.5 - 0.5 * n) / (0.5 * n);
                const double z = three_d ? (iz + 0.5 - 0.5 * nz) / (0.5 * nz) : 0.0;
                double v = 0;
                for (const Ellipsoid& e : shepp_logan) {
                    const double s = rot_s[e.phi_twentieths + 1], c = rot_c[e.phi_twentieths + 1];
                    const double dx = x - e.x0, dy = y - e.y0;
                    const double xr = (dx * c + dy * s) / e.a, yr = (-dx * s + dy * c) / e.b;
                    double q = xr * xr + yr * yr;
                    if (three_d) {
                        const double zr = (z - e.z0) / e.c;
                        q += zr * zr;
                    }
                    if (q <= 1.0) v += e.value;
                }
                ph[std::size_t(ix) + std::size_t(n) * (iy + std::size_t(n) * iz)] =
                    v > 1e-12 ? v : 0.0;  // 1 − 0.8 − 0.2 rounds to −6e-17: that is 0
            }
    return ph;
}

std::uint64_t pet_poisson(double mean, std::uint64_t seed, std::uint64_t stream)
{
    if (!(mean > 0)) return 0;
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL ^ (stream + 0x632be59bd9b4e019ULL);
    splitmix64(state);
    const double pieces = std::ceil(mean / 200.0);
    const double lam = mean / pieces;
    const double p0 = exp_nonpositive(-lam);
    std::uint64_t total = 0;
    const auto npieces = static_cast<std::uint64_t>(pieces);
    for (std::uint64_t piece = 0; piece < npieces; ++piece) {
        // inversion: smallest k with u < F(k), F the Poisson(lam) distribution function
        const double u = uniform01(state);
        std::uint64_t k = 0;
        double p = p0, cdf = p0;
        while (u >= cdf && p > 0) {
            ++k;
            p *= lam / double(k);
            cdf += p;
        }
        total += k;
    }
    return total;
}

Coo<double> pet_system_matrix(const PetSpec& spec)
{
    return make_pet_system(spec).a;
}

namespace {
/// The activity f = scale * ph, E[g] = scale * raw (raw_i = row i . ph) and g ~ Poisson(E[g])
/// of make_pet_system and make_pet_ooc_system.
void scaled_images(const PetSpec& spec, double scale, const std::vector<double>& ph,
                   const std::vector<double>& raw, std::vector<double>& phantom,
                   std::vector<double>& expected, std::vector<double>& counts)
{
    phantom.resize(ph.size());
    for (std::size_t j = 0; j < ph.size(); ++j) phantom[j] = scale * ph[j];
    const index_t rows = static_cast<index_t>(raw.size());
    expected.resize(raw.size());
    counts.resize(raw.size());
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < rows; ++r) {
        const double e = scale * raw[std::size_t(r)];
        expected[std::size_t(r)] = e;
        counts[std::size_t(r)] = double(pet_poisson(e, spec.seed, std::uint64_t(r)));
    }
}
}  // namespace

PetSystem make_pet_system(const PetSpec& spec)
{
    validate(spec);
    const Geometry g = make_geometry(spec);
    const index_t rows = index_t(g.pairs.size() * g.ring_pairs.size());
    const index_t cols = pet_cols(spec);
    HEPTANE_ENSURE(rows > 0, InputError, "PET: no line of response in the field of view");
    PetSystem sys;
    const std::vector<double> ph = pet_phantom(spec);
    const index_t nb = num_blocks(rows);
    std::vector<std::vector<index_t>> brow(nb), bcol(nb);
    std::vector<std::vector<double>> bval(nb);
    std::vector<double> raw(std::size_t(rows), 0.0), bdot(std::size_t(nb), 0.0);
    for_each_block(g, rows, 0, nb, [&](index_t blk, auto&& each_row) {
        double s = 0;
        each_row([&](index_t r, const Tracer& t) {
            for (std::size_t k = 0; k < t.cols.size(); ++k) {
                brow[blk].push_back(r);
                bcol[blk].push_back(t.cols[k]);
                bval[blk].push_back(t.vals[k]);
            }
            raw[std::size_t(r)] = row_dot(t, ph);
            s += raw[std::size_t(r)];
        });
        bdot[std::size_t(blk)] = s;
    });
    sys.scale = activity_scale(spec, rows, bdot);
    std::size_t nnz = 0;
    for (const auto& b : bval) nnz += b.size();
    std::vector<index_t> row, col;
    std::vector<double> val;
    row.reserve(nnz);
    col.reserve(nnz);
    val.reserve(nnz);
    for (index_t blk = 0; blk < nb; ++blk) {
        row.insert(row.end(), brow[blk].begin(), brow[blk].end());
        col.insert(col.end(), bcol[blk].begin(), bcol[blk].end());
        val.insert(val.end(), bval[blk].begin(), bval[blk].end());
        std::vector<index_t>().swap(brow[blk]);
        std::vector<index_t>().swap(bcol[blk]);
        std::vector<double>().swap(bval[blk]);
    }
    sys.a = Coo<double>{rows, cols, Array<index_t>(std::move(row)), Array<index_t>(std::move(col)),
                        Array<double>(std::move(val))};
    scaled_images(spec, sys.scale, ph, raw, sys.phantom, sys.expected, sys.counts);
    return sys;
}

namespace {
template <class MT, class MakeBuilder>
PetOocSystem<MT> pet_ooc_system(const PetSpec& spec, MakeBuilder&& make_builder,
                                const std::function<void(index_t, index_t)>& progress)
{
    validate(spec);
    const Geometry g = make_geometry(spec);
    const index_t rows = index_t(g.pairs.size() * g.ring_pairs.size());
    const index_t cols = pet_cols(spec);
    HEPTANE_ENSURE(rows > 0, InputError, "PET: no line of response in the field of view");
    PetOocSystem<MT> sys;
    const std::vector<double> ph = pet_phantom(spec);
    const index_t nb = num_blocks(rows);
    std::vector<double> raw(std::size_t(rows), 0.0), bdot(std::size_t(nb), 0.0);
    std::unique_ptr<OocBuilder<MT>> bp = make_builder(cols);
    OocBuilder<MT>& builder = *bp;
    const index_t batch = std::max(1, 8 * omp_get_max_threads());
    std::vector<std::vector<index_t>> blen(batch), bcol(batch);
    std::vector<std::vector<double>> bval(batch);
    for (index_t b0 = 0; b0 < nb; b0 += batch) {
        const index_t b1 = std::min(nb, b0 + batch);
        for_each_block(g, rows, b0, b1, [&](index_t blk, auto&& each_row) {
            auto& len = blen[blk - b0];
            auto& col = bcol[blk - b0];
            auto& val = bval[blk - b0];
            len.clear();
            col.clear();
            val.clear();
            double s = 0;
            each_row([&](index_t r, const Tracer& t) {
                len.push_back(index_t(t.cols.size()));
                col.insert(col.end(), t.cols.begin(), t.cols.end());
                val.insert(val.end(), t.vals.begin(), t.vals.end());
                raw[std::size_t(r)] = row_dot(t, ph);
                s += raw[std::size_t(r)];
            });
            bdot[std::size_t(blk)] = s;
        });
        for (index_t blk = b0; blk < b1; ++blk) {
            std::size_t k = 0;
            for (index_t n : blen[blk - b0]) {
                builder.append_row(bcol[blk - b0].data() + k, bval[blk - b0].data() + k, n);
                k += std::size_t(n);
            }
        }
        if (progress) progress(std::min<index_t>(rows, b1 * block_rows), rows);
    }
    sys.a = builder.finish();
    sys.scale = activity_scale(spec, rows, bdot);
    scaled_images(spec, sys.scale, ph, raw, sys.phantom, sys.expected, sys.counts);
    return sys;
}
}  // namespace

template <class MT>
PetOocSystem<MT> make_pet_ooc_system(const PetSpec& spec, std::size_t chunk_bytes, bool pinned,
                                     const std::function<void(index_t, index_t)>& progress)
{
    return pet_ooc_system<MT>(
        spec,
        [&](index_t cols) { return std::make_unique<OocBuilder<MT>>(cols, chunk_bytes, pinned); },
        progress);
}
template <class MT>
PetOocSystem<MT> write_pet_ooc_system(const PetSpec& spec, std::size_t chunk_bytes,
                                      const std::string& file,
                                      const std::function<void(index_t, index_t)>& progress)
{
    return pet_ooc_system<MT>(
        spec,
        [&](index_t cols) { return std::make_unique<OocBuilder<MT>>(cols, chunk_bytes, file); },
        progress);
}
template PetOocSystem<double> make_pet_ooc_system<double>(
    const PetSpec&, std::size_t, bool, const std::function<void(index_t, index_t)>&);
template PetOocSystem<float> make_pet_ooc_system<float>(
    const PetSpec&, std::size_t, bool, const std::function<void(index_t, index_t)>&);
template PetOocSystem<double> write_pet_ooc_system<double>(
    const PetSpec&, std::size_t, const std::string&, const std::function<void(index_t, index_t)>&);
template PetOocSystem<float> write_pet_ooc_system<float>(
    const PetSpec&, std::size_t, const std::string&, const std::function<void(index_t, index_t)>&);

PetFileInfo write_pet_system(const PetSpec& spec, const std::string& matrix_path,
                             const std::string& counts_path, const std::string& phantom_path)
{
    validate(spec);
    const Geometry g = make_geometry(spec);
    const index_t rows = index_t(g.pairs.size() * g.ring_pairs.size());
    const index_t cols = pet_cols(spec);
    HEPTANE_ENSURE(rows > 0, InputError, "PET: no line of response in the field of view");
    const std::vector<double> ph = pet_phantom(spec);

    // pass 1: entries (for the header) and Σ A·ph (for the scale), per fixed block
    std::vector<offset_t> bnnz;
    std::vector<double> bdot;
    count_blocks(g, rows, ph, bnnz, bdot);
    PetFileInfo info;
    info.rows = rows;
    info.cols = cols;
    for (offset_t c : bnnz) info.nnz += c;
    info.scale = activity_scale(spec, rows, bdot);

    const std::string comment = "% heptane pet: " + describe(spec) + "\n";
    AtomicFile fa(matrix_path);
    std::string head = "%%MatrixMarket matrix coordinate real general\n" + comment +
                       "% rows: lines of response; columns: voxels (x fastest, then y, then z); "
                       "values: intersection lengths in voxel units\n";
    head +=
        std::to_string(rows) + " " + std::to_string(cols) + " " + std::to_string(info.nnz) + "\n";
    fa.write(head);
    std::unique_ptr<AtomicFile> fg;
    if (!counts_path.empty()) {
        fg = std::make_unique<AtomicFile>(counts_path);
        fg->write("%%MatrixMarket matrix array real general\n" + comment +
                  "% Poisson counts g ~ Poisson(A f)\n" + std::to_string(rows) + " 1\n");
    }

    // pass 2: regenerate the rows a batch of blocks at a time (two per thread), format them in
    // parallel, write them in order; the text of one batch is all A that is ever in memory
    const index_t nb = num_blocks(rows);
    const index_t batch = 2 * std::max(1, omp_get_max_threads());
    std::vector<std::string> text_a(static_cast<std::size_t>(batch));
    std::vector<std::string> text_g(static_cast<std::size_t>(batch));
    std::vector<std::uint64_t> sum_g(static_cast<std::size_t>(batch), 0);
    std::uint64_t total_g = 0;
    for (index_t b0 = 0; b0 < nb; b0 += batch) {
        const index_t b1 = std::min(nb, b0 + batch);
        for_each_block(g, rows, b0, b1, [&](index_t blk, auto&& each_row) {
            std::string& sa = text_a[std::size_t(blk - b0)];
            std::string& sg = text_g[std::size_t(blk - b0)];
            sa.clear();
            sg.clear();
            std::uint64_t cnt = 0;
            each_row([&](index_t r, const Tracer& t) {
                for (std::size_t k = 0; k < t.cols.size(); ++k) {
                    append_number(sa, r + 1);
                    sa.push_back(' ');
                    append_number(sa, t.cols[k] + 1);
                    sa.push_back(' ');
                    append_number(sa, t.vals[k]);
                    sa.push_back('\n');
                }
                if (fg) {
                    const double e = info.scale * row_dot(t, ph);
                    const std::uint64_t gi = pet_poisson(e, spec.seed, std::uint64_t(r));
                    cnt += gi;
                    append_number(sg, gi);
                    sg.push_back('\n');
                }
            });
            sum_g[std::size_t(blk - b0)] = cnt;
        });
        for (index_t blk = b0; blk < b1; ++blk) {
            fa.write(text_a[std::size_t(blk - b0)]);
            if (fg) fg->write(text_g[std::size_t(blk - b0)]);
            total_g += sum_g[std::size_t(blk - b0)];
        }
    }
    fa.commit();
    if (fg) fg->commit();
    info.total_counts = double(total_g);
    if (!phantom_path.empty()) {
        std::vector<double> f(ph.size());
        for (std::size_t j = 0; j < ph.size(); ++j) f[j] = info.scale * ph[j];
        write_matrix_market_vector(
            phantom_path, f,
            "heptane pet: " + describe(spec) + "\nactivity f (scaled phantom), E[g] = A f");
    }
    return info;
}

}  // namespace heptane
