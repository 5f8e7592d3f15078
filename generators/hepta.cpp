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
        if (spec.model != HeptaModel::reservoir) return;
        const index_t G = geo_.G;
        const index_t jh = spec.J * spec.H;
        if (cell_hi < 0) cell_hi = G;
        c0_ = std::max<index_t>(0, cell_lo - jh);
        const index_t c1 = std::min<index_t>(G, cell_hi + jh);
        const double d = spec.difficulty;
        const double sigma_layer = 0.5 + 1.5 * d;
        const double sigma_cell = 0.25 + 0.5 * d;
        const double acc_scale = accumulation_ref * det_exp(-3.0 * d * ln10);  // 10^(-3d)
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
    std::vector<double> perm_;  // k_x per cell (reservoir)
    std::vector<double> acc_;   // pore volume / dt per cell (reservoir)
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
    HEPTANE_THROW(InputError,
                  "unknown coefficient model '" << name << "' (choose uniform or reservoir)");
}

const char* to_string(HeptaModel m)
{
    switch (m) {
        case HeptaModel::uniform:
            return "uniform";
        case HeptaModel::reservoir:
            return "reservoir";
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
    if (s.model == HeptaModel::reservoir) o << " (difficulty " << s.difficulty << ")";
    o << ", seed " << s.seed;
    return o.str();
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
#pragma omp parallel if (G >= parallel_min_cells)
    {
        std::vector<double> buf(filler.buffer_size());
        std::array<bool, num_dirs> present{};
#pragma omp for schedule(static)
        for (index_t c = 0; c < G; ++c) {
            filler.block_row(c, present, buf.data());
            const offset_t p = (start[c + 1] - start[c]) / bb;
            for (index_t a = 0; a < nc; ++a) {
                offset_t k = start[c] + offset_t(a) * p * nc;
                const index_t r = c * nc + a;
                for (int q = 0; q < num_dirs; ++q) {
                    if (!present[q]) continue;
                    const index_t col0 = (c + g.d[q]) * nc;
                    const double* blk = buf.data() + (std::size_t(q) * nc + a) * nc;
                    for (index_t s = 0; s < nc; ++s, ++k) {
                        row[k] = r;
                        col[k] = col0 + s;
                        val[k] = static_cast<T>(blk[s]);
                    }
                }
            }
        }
    }
    Coo<T> out;
    out.rows = out.cols = G * nc;
    out.row = Array<index_t>(std::move(row));
    out.col = Array<index_t>(std::move(col));
    out.val = Array<T>(std::move(val));
    return out;
}

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
#pragma omp parallel if (G >= parallel_min_cells)
    {
        std::vector<double> buf(filler.buffer_size());
        std::array<bool, num_dirs> present{};
#pragma omp for schedule(static)
        for (index_t c = 0; c < G; ++c) {
            filler.block_row(c, present, buf.data());
            for (int q = 0; q < num_dirs; ++q) {
                if (!present[q]) continue;
                for (index_t s = 0; s < nc; ++s) {
                    T* diag = data + (std::size_t(slot[q]) * nc + s) * un + std::size_t(c) * nc;
                    for (index_t a = 0; a < nc; ++a)
                        diag[a] = static_cast<T>(buf[(std::size_t(q) * nc + a) * nc + s]);
                }
            }
        }
    }
    // pattern: bit k*N + r is set iff row r's cell has the neighbour of block diagonal
    // k / Nc. In the banded variant that is exactly "column inside the matrix", which
    // bdia_zeros has already marked; the grid variant clears the slots across box faces.
    if (spec.banded) return out;
    std::vector<int> dir_of_slot;
    for (int q = 0; q < num_dirs; ++q)
        if (slot[q] >= 0) dir_of_slot.push_back(q);
    const std::uint64_t bits = std::uint64_t(out.slots());
    const std::int64_t words = std::int64_t(out.pattern.size());
    std::uint64_t* pat = out.pattern.data();
    // threads own whole 64-bit words, so plain stores are safe
#pragma omp parallel for schedule(static) if (words >= parallel_min_cells)
    for (std::int64_t w = 0; w < words; ++w) {
        std::uint64_t word = 0;
        const std::uint64_t b0 = std::uint64_t(w) * 64;
        const std::uint64_t b1 = std::min(bits, b0 + 64);
        for (std::uint64_t bit = b0; bit < b1; ++bit) {
            const std::uint64_t k = bit / un;
            const index_t r = index_t(bit % un);
            if (g.present(r / nc, dir_of_slot[k / std::uint64_t(nc)]))
                word |= std::uint64_t{1} << (bit - b0);
        }
        pat[w] = word;
    }
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
#pragma omp parallel if (c1 - c0 >= parallel_min_cells)
    {
        std::vector<double> buf(filler.buffer_size());
        std::array<bool, num_dirs> present{};
#pragma omp for schedule(static)
        for (index_t c = c0; c < c1; ++c) {
            filler.block_row(c, present, buf.data());
            for (int q = 0; q < num_dirs; ++q) {
                if (!present[q]) continue;
                for (index_t s = 0; s < nc; ++s) {
                    T* diag =
                        data + (std::size_t(slot[q]) * nc + s) * un + std::size_t(c - c0) * nc;
                    for (index_t a = 0; a < nc; ++a)
                        diag[a] = static_cast<T>(buf[(std::size_t(q) * nc + a) * nc + s]);
                }
            }
        }
    }
    // pattern: a slot is stored iff its neighbour is present and its column is a local one
    // (couplings to other processes' rows keep their values in `data`, outside the pattern)
    out.pattern = make_bitset(slots, false);
    const std::int64_t words = std::int64_t(out.pattern.size());
    std::uint64_t* pat = out.pattern.data();
#pragma omp parallel for schedule(static) if (words >= parallel_min_cells)
    for (std::int64_t w = 0; w < words; ++w) {
        std::uint64_t word = 0;
        const std::uint64_t b0 = std::uint64_t(w) * 64;
        const std::uint64_t b1 = std::min<std::uint64_t>(slots, b0 + 64);
        for (std::uint64_t bit = b0; bit < b1; ++bit) {
            const std::uint64_t k = bit / un;
            const index_t r = index_t(bit % un);
            const int q = dir_of_slot[k / std::uint64_t(nc)];
            const offset_t col = offset_t(r - r % nc) + offset_t(g.d[q]) * nc;
            if (col < 0 || col >= n) continue;
            if (g.present(c0 + r / nc, q)) word |= std::uint64_t{1} << (bit - b0);
        }
        pat[w] = word;
    }
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

template <class T>
LinearSystem<T> make_rhs(const HeptaSpec& spec, const Coo<T>& a)
{
    LinearSystem<T> sys{hepta_x_true<T>(spec), {}};
    const index_t n = index_t(spec.rows());
    HEPTANE_ENSURE(a.rows == n && a.cols == n, DimensionMismatch,
                   "make_rhs: matrix is " << a.rows << " x " << a.cols << ", spec "
                                          << describe(spec) << " has N = " << n);
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "make_rhs needs a host matrix");
    const offset_t nnz = a.nnz();
    const index_t* ri = a.row.data();
    const index_t* ci = a.col.data();
    const T* v = a.val.data();
    // rows must be grouped (canonical COO) for the per-row loop below
    bool sorted = true;
#pragma omp parallel for reduction(&& : sorted) if (nnz >= parallel_min_rows)
    for (offset_t k = 1; k < nnz; ++k) sorted = sorted && ri[k - 1] <= ri[k];
    HEPTANE_ENSURE(sorted, InputError, "make_rhs: COO rows are not sorted (not canonical)");
    sys.b.assign(n, T(0));
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
    LinearSystem<T> sys{hepta_x_true<T>(spec), {}};
    const index_t n = index_t(spec.rows());
    HEPTANE_ENSURE(a.rows == n && a.cols == n, DimensionMismatch,
                   "make_rhs: matrix is " << a.rows << " x " << a.cols << ", spec "
                                          << describe(spec) << " has N = " << n);
    HEPTANE_ENSURE(a.exec()->is_cpu(), NotSupported, "make_rhs needs a host matrix");
    const index_t nd = a.num_diagonals(), nc = a.block_size;
    const std::uint64_t* pat = a.pattern.data();
    const T* data = a.data.data();
    const std::vector<T>& x = sys.x_true;
    sys.b.assign(n, T(0));
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
