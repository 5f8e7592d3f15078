// The PET generator (generators/pet.hpp): sizes, Siddon's intersection lengths against an
// independent clipping of each line to the image box, determinism (repeat runs, thread
// counts, pinned sampler values), the streamed files against the in-memory system, the
// phantom and the Poisson counts.
#include <boost/test/unit_test.hpp>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "core/error.hpp"
#include "generators/matrix_market.hpp"
#include "generators/pet.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

namespace {

PetSpec spec_2d(index_t detectors, index_t image)
{
    PetSpec s;
    s.detectors = detectors;
    s.image = image;
    return s;
}

PetSpec spec_3d()
{
    PetSpec s;
    s.rings = 4;
    s.detectors = 48;
    s.image = 16;
    s.slices = 8;
    return s;
}

/// Length of the segment p1-p2 inside the box [lo, hi] (Liang–Barsky clipping in long
/// double, written apart from the generator's own clipping).
long double clipped_length(const PetLor& l, const long double lo[3], const long double hi[3])
{
    long double t0 = 0, t1 = 1, len2 = 0;
    for (int a = 0; a < 3; ++a) {
        const long double p = l.p1[a], d = (long double)l.p2[a] - l.p1[a];
        len2 += d * d;
        if (d == 0) {
            if (p <= lo[a] || p >= hi[a]) return 0;
            continue;
        }
        long double ta = (lo[a] - p) / d, tb = (hi[a] - p) / d;
        if (ta > tb) std::swap(ta, tb);
        t0 = std::max(t0, ta);
        t1 = std::min(t1, tb);
    }
    return t1 > t0 ? (t1 - t0) * std::sqrt(len2) : 0;
}

template <class T>
bool same_coo(const Coo<T>& a, const Coo<T>& b)
{
    return a.rows == b.rows && a.cols == b.cols && a.row.host() == b.row.host() &&
           a.col.host() == b.col.host() && a.val.host() == b.val.host();
}

}  // namespace

BOOST_AUTO_TEST_CASE(pet_sizes_match_the_geometry)
{
    // 2-D: a pair (a, b) is kept when its chord passes within n/2 of the centre, i.e.
    // R |cos(π (b − a) / D)| < n/2 with R = (n/2)/fov: |cos| < fov.
    const PetSpec s = spec_2d(64, 32);
    long long pairs = 0;
    for (int a = 0; a < s.detectors; ++a)
        for (int b = a + 1; b < s.detectors; ++b)
            pairs += std::abs(std::cos(M_PI * (b - a) / s.detectors)) < s.fov ? 1 : 0;
    BOOST_TEST(pet_rows(s) == pairs);
    BOOST_TEST(pet_cols(s) == 32 * 32);
    const Coo<double> a = pet_system_matrix(s);
    BOOST_TEST(a.rows == pairs);
    BOOST_TEST(a.cols == 32 * 32);
    BOOST_TEST(is_canonical(a));
    // 3-D: every ordered ring pair; with a ring-difference limit fewer
    PetSpec t = spec_3d();
    BOOST_TEST(pet_rows(t) == 16 * index_t(pet_detector_pairs(t).size()));
    t.max_ring_difference = 1;
    BOOST_TEST(pet_ring_pairs(t).size() == 4u + 2u * 3u);
    BOOST_TEST(pet_cols(t) == 16 * 16 * 8);
}

BOOST_AUTO_TEST_CASE(pet_rows_are_unequal_and_nonnegative)
{
    const Coo<double> a = pet_system_matrix(spec_2d(96, 40));
    const auto len = row_lengths(a);
    const auto [mn, mx] = std::minmax_element(len.begin(), len.end());
    BOOST_TEST_MESSAGE("row lengths " << *mn << " .. " << *mx);
    BOOST_TEST(*mx >= 3 * std::max<offset_t>(*mn, 1));  // very unequal rows
    for (double v : a.val.host()) BOOST_TEST_REQUIRE((v > 0 && v <= std::sqrt(2.0) + 1e-12));
}

BOOST_AUTO_TEST_CASE(pet_intersection_lengths_sum_to_the_chord_inside_the_image)
{
    for (const PetSpec& s : {spec_2d(64, 32), spec_2d(50, 17), spec_3d()}) {
        const long double lo[3] = {-0.5L * s.image, -0.5L * s.image, -0.5L * s.slices};
        const long double hi[3] = {-lo[0], -lo[1], -lo[2]};
        const index_t rows = pet_rows(s);
        int checked = 0;
        for (index_t r = 0; r < rows; r += std::max<index_t>(1, rows / 97)) {
            std::vector<index_t> cols;
            std::vector<double> vals;
            pet_row(s, r, cols, vals);
            const long double chord = clipped_length(pet_lor(s, r), lo, hi);
            const double sum = std::accumulate(vals.begin(), vals.end(), 0.0);
            BOOST_TEST(std::abs(sum - double(chord)) <= 1e-11 * std::max(1.0, double(chord)),
                       describe(s)
                           << " row " << r << ": sum " << sum << " chord " << double(chord));
            for (std::size_t k = 1; k < cols.size(); ++k) BOOST_TEST_REQUIRE(cols[k - 1] < cols[k]);
            ++checked;
        }
        BOOST_TEST(checked > 50);
    }
}

BOOST_AUTO_TEST_CASE(pet_line_through_the_centre_crosses_one_voxel_row)
{
    // detectors 0 and D/2 lie on the x axis: the LOR is y = 0, a grid line for even n; the
    // midpoints fall in voxel row n/2, one unit of length per voxel
    PetSpec s = spec_2d(64, 32);
    const auto pairs = pet_detector_pairs(s);
    index_t row = -1;
    for (std::size_t p = 0; p < pairs.size(); ++p)
        if (pairs[p] == std::make_pair(index_t(0), index_t(32))) row = index_t(p);
    BOOST_TEST_REQUIRE(row >= 0);
    std::vector<index_t> cols;
    std::vector<double> vals;
    pet_row(s, row, cols, vals);
    BOOST_TEST_REQUIRE(cols.size() == 32u);
    for (int k = 0; k < 32; ++k) {
        BOOST_TEST(cols[k] == k + 32 * 16);
        BOOST_TEST(std::abs(vals[k] - 1.0) <= 1e-12);
    }
}

BOOST_AUTO_TEST_CASE(pet_system_is_deterministic_across_runs_and_threads)
{
    for (const PetSpec& s : {spec_2d(64, 32), spec_3d()}) {
        const PetSystem a = make_pet_system(s);
        const int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        const PetSystem b = make_pet_system(s);
        omp_set_num_threads(threads);
        BOOST_TEST(same_coo(a.a, b.a));
        BOOST_TEST(a.counts == b.counts);
        BOOST_TEST(a.phantom == b.phantom);
        BOOST_TEST(a.scale == b.scale);
        PetSpec other = s;
        other.seed = 2;
        BOOST_TEST(make_pet_system(other).counts != a.counts);  // the seed matters
    }
}

BOOST_AUTO_TEST_CASE(pet_poisson_sampler_is_pinned_and_has_the_right_moments)
{
    // Values pinned at the first run: the sampler is a pure function of (mean, seed, stream),
    // built from IEEE arithmetic only, so these hold on every machine.
    BOOST_TEST(pet_poisson(0.0, 1, 0) == 0u);
    const std::uint64_t pinned[4] = {pet_poisson(0.5, 1, 7), pet_poisson(5.0, 1, 7),
                                     pet_poisson(50.0, 1, 7), pet_poisson(5000.0, 1, 7)};
    BOOST_TEST_MESSAGE("pinned " << pinned[0] << " " << pinned[1] << " " << pinned[2] << " "
                                 << pinned[3]);
    BOOST_TEST(pinned[0] == 0u);
    BOOST_TEST(pinned[1] == 5u);
    BOOST_TEST(pinned[2] == 49u);
    BOOST_TEST(pinned[3] == 5099u);
    for (double mean : {0.3, 4.0, 60.0, 700.0}) {
        const int n = 20000;
        double s = 0, s2 = 0;
        for (int i = 0; i < n; ++i) {
            const double v = double(pet_poisson(mean, 42, std::uint64_t(i)));
            s += v;
            s2 += v * v;
        }
        const double m = s / n, var = s2 / n - m * m;
        // the sample mean is within 5 standard errors, the variance within 10 %
        BOOST_TEST(std::abs(m - mean) <= 5 * std::sqrt(mean / n), "mean " << m << " for " << mean);
        BOOST_TEST(std::abs(var - mean) <= 0.1 * mean, "variance " << var << " for " << mean);
    }
}

BOOST_AUTO_TEST_CASE(pet_phantom_and_counts)
{
    const PetSpec s = spec_2d(64, 32);
    const PetSystem sys = make_pet_system(s);
    const std::vector<double> ph = pet_phantom(s);
    BOOST_TEST(*std::min_element(ph.begin(), ph.end()) >= 0.0);
    BOOST_TEST(std::abs(*std::max_element(ph.begin(), ph.end()) - 1.0) <= 1e-12);  // the skull
    for (std::size_t j = 0; j < ph.size(); ++j)
        BOOST_TEST_REQUIRE(sys.phantom[j] == sys.scale * ph[j]);
    // E[g] = A f, with mean counts_per_lor over the rows
    std::vector<double> af(std::size_t(sys.a.rows), 0.0);
    for (offset_t k = 0; k < sys.a.nnz(); ++k)
        af[std::size_t(sys.a.row[k])] += sys.a.val[k] * sys.phantom[std::size_t(sys.a.col[k])];
    BOOST_TEST(test::rel_max_diff(af, sys.expected) <= 1e-12);
    const double mean_e =
        std::accumulate(sys.expected.begin(), sys.expected.end(), 0.0) / sys.a.rows;
    BOOST_TEST(std::abs(mean_e - s.counts_per_lor) <= 1e-9 * s.counts_per_lor);
    const double total = std::accumulate(sys.counts.begin(), sys.counts.end(), 0.0);
    const double expected_total = s.counts_per_lor * sys.a.rows;
    BOOST_TEST(std::abs(total - expected_total) <= 5 * std::sqrt(expected_total));
    for (double g : sys.counts) BOOST_TEST_REQUIRE((g >= 0 && g == std::floor(g)));
}

BOOST_AUTO_TEST_CASE(pet_streamed_files_hold_the_in_memory_system)
{
    const auto dir =
        std::filesystem::temp_directory_path() / ("heptane_test_pet_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (const PetSpec& s : {spec_2d(64, 32), spec_3d()}) {
        const std::string fa = (dir / "A.mtx").string(), fg = (dir / "g.mtx").string(),
                          ff = (dir / "f.mtx").string();
        const PetFileInfo info = write_pet_system(s, fa, fg, ff);
        const PetSystem sys = make_pet_system(s);
        BOOST_TEST(info.nnz == sys.a.nnz());
        BOOST_TEST(info.scale == sys.scale);
        BOOST_TEST(info.total_counts == std::accumulate(sys.counts.begin(), sys.counts.end(), 0.0));
        BOOST_TEST(same_coo(read_matrix_market<double>(fa), sys.a));
        BOOST_TEST(read_matrix_market_vector<double>(fg) == sys.counts);
        BOOST_TEST(read_matrix_market_vector<double>(ff) == sys.phantom);
        BOOST_TEST(!std::filesystem::exists(fa + ".tmp"));
    }
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(pet_rejects_bad_specs)
{
    PetSpec s = spec_2d(64, 32);
    s.fov = 0.75;  // the image corners would leave the ring
    BOOST_CHECK_THROW(validate(s), InputError);
    s = spec_2d(3, 32);
    BOOST_CHECK_THROW(validate(s), InputError);
    s = spec_2d(64, 0);
    BOOST_CHECK_THROW(validate(s), InputError);
    s = spec_2d(64, 32);
    s.counts_per_lor = 0;
    BOOST_CHECK_THROW(make_pet_system(s), InputError);
    BOOST_CHECK_THROW(write_pet_system(spec_2d(64, 32), "/nonexistent-dir/A.mtx", "", ""), IoError);
}
