// PET-like emission tomography systems for MLEM, OSEM and LSQR (docs/design.md §3): a ring scanner
// around a voxel image, the system matrix A (rows: lines of response, LORs; columns: voxels;
// a_ij = length of LOR i inside voxel j, by Siddon's algorithm), a Shepp–Logan-like phantom f
// and Poisson counts g ~ Poisson(A f). A is rectangular, very sparse (a row crosses O(n)
// voxels of n² or n²·nz) and its rows are very unequal (a LOR through the centre crosses many
// more voxels than one near the edge of the field of view).
//
// Geometry, in voxel units (a voxel is a unit cube), image centred on the scanner axis:
//   * image: n x n voxels in a slice (x fastest, then y), nz slices along the axis (z);
//     column j = ix + n·(iy + n·iz); the box is [−n/2, n/2]² x [−nz/2, nz/2];
//   * ring: `detectors` point detectors on a circle of radius R = (n/2) / fov, detector d at
//     angle 2π d / detectors; `rings` rings at z_k = −nz/2 + (k + ½)·nz/rings (spread evenly
//     over the image's axial extent);
//   * LORs: detector pairs (a < b within a ring, transaxially) whose line passes within n/2 of
//     the axis (through the circle inscribed in the image: the transaxial field of view),
//     between ring r1 (detector a) and ring r2 (detector b) for every ordered ring pair with
//     |r1 − r2| ≤ max_ring_difference. Row = ring_pair·P + p, with the ring pairs in order
//     (r1, r2) ascending and the P transaxial pairs in order (a, b) ascending.
//   2-D: rings = 1 and slices = 1 (a single ring in the plane of a single slice).
//
// Phantom: the modified Shepp–Logan head (Toft's intensities 1, −0.8, −0.2, −0.2, 0.1 x 6) in
// 2-D, and ellipsoids with Kak & Slaney's axial extents in 3-D, sampled at voxel centres,
// negative rounding clamped to 0; scaled ("activity") so that the mean expected count per
// LOR is `counts_per_lor`: E[g] = A·f exactly for the f the generator returns.
//
// Determinism: everything is a pure function of the spec. Detector positions and ellipse
// rotations use heptane's own sine and cosine, the Poisson sampler its own exponential and a
// counter-based generator (splitmix64 of (seed, row)), and sums run in fixed row blocks, all
// from IEEE +, −, ×, ÷ and sqrt only; so the same spec gives bit-identical files on every
// machine and with any number of OpenMP threads (std::*_distribution and libm's sin, cos,
// exp are avoided: their results are implementation-defined).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "formats/coo/coo.hpp"
#include "formats/outofcore/outofcore.hpp"

namespace heptane {

struct PetSpec {
    index_t rings = 1;       ///< detector rings (1: a 2-D scanner)
    index_t detectors = 64;  ///< detectors per ring
    index_t image = 32;      ///< n: the image is n x n voxels per slice
    index_t slices = 1;      ///< nz: slices (1 with rings = 1: 2-D)
    /// Image half-width n/2 over the ring radius; < 1/√2 so that the image fits inside the
    /// ring. The transaxial field of view is the circle of radius n/2.
    double fov = 0.6;
    /// 3-D: the largest |r1 − r2| of a ring pair (−1: all ring pairs).
    index_t max_ring_difference = -1;
    /// Mean of E[g_i] over the rows: the phantom is scaled to give it.
    double counts_per_lor = 20.0;
    std::uint64_t seed = 1;
};

/// Throws InputError unless rings, image, slices ≥ 1, detectors ≥ 4, 0 < fov < 1/√2,
/// counts_per_lor > 0, the LOR count and the voxel count are < 2^31, and some LOR exists.
void validate(const PetSpec& spec);

/// "PET 2-D ring: 64 detectors, 32x32 image, fov 0.6: 1234 LORs x 1024 voxels".
std::string describe(const PetSpec& spec);

/// Transaxial detector pairs (a < b) inside the field of view, in row order: P pairs.
std::vector<std::pair<index_t, index_t>> pet_detector_pairs(const PetSpec& spec);
/// Ordered ring pairs (r1, r2) with |r1 − r2| ≤ max_ring_difference, in row order.
std::vector<std::pair<index_t, index_t>> pet_ring_pairs(const PetSpec& spec);
/// Rows (LORs) = ring pairs x detector pairs; columns (voxels) = n·n·nz.
index_t pet_rows(const PetSpec& spec);
index_t pet_cols(const PetSpec& spec);

/// The end points of LOR `row` (the two detectors), in voxel units.
struct PetLor {
    double p1[3];
    double p2[3];
};
PetLor pet_lor(const PetSpec& spec, index_t row);

/// Siddon's algorithm for one LOR: the voxels it crosses, ascending, with the length of the
/// line inside each (segments shorter than 1e-9 voxel, from a line through a grid corner,
/// are dropped). cols and vals are overwritten.
void pet_row(const PetSpec& spec, index_t row, std::vector<index_t>& cols,
             std::vector<double>& vals);

/// The system matrix in memory (canonical COO).
Coo<double> pet_system_matrix(const PetSpec& spec);

/// The Shepp–Logan-like phantom (unscaled intensities, ≥ 0), n·n·nz voxels.
std::vector<double> pet_phantom(const PetSpec& spec);

/// A Poisson(mean) sample from heptane's own generator: splitmix64 of (seed, stream), then
/// inversion of the cumulative distribution in pieces of mean ≤ 200 (a Poisson sum of them).
/// Deterministic on every machine; mean ≥ 0 (0 gives 0).
std::uint64_t pet_poisson(double mean, std::uint64_t seed, std::uint64_t stream);

/// Everything of one spec in memory.
struct PetSystem {
    Coo<double> a;                 ///< the system matrix
    std::vector<double> phantom;   ///< activity f (scaled phantom): E[g] = A f
    std::vector<double> expected;  ///< A f
    std::vector<double> counts;    ///< g ~ Poisson(A f), integers stored as double
    double scale = 0;              ///< activity / unscaled phantom intensity
};
PetSystem make_pet_system(const PetSpec& spec);

/// The same system with A straight into out-of-core chunks (formats/outofcore), for systems
/// larger than the device or the host's COO: rows generated in parallel (fixed blocks of
/// 4096 rows, batches of two blocks per thread), then appended in order, so that memory is
/// the chunks plus one batch. phantom, expected, counts and scale are bit for bit those of
/// make_pet_system; the chunks hold its A (values rounded to MT). `progress(rows done, rows)`
/// after every batch, when set.
template <class MT>
struct PetOocSystem {
    OocMatrix<MT> a;
    std::vector<double> phantom, expected, counts;
    double scale = 0;
};
template <class MT>
PetOocSystem<MT> make_pet_ooc_system(const PetSpec& spec, std::size_t chunk_bytes, bool pinned,
                                     const std::function<void(index_t, index_t)>& progress = {});
/// The same with A written to the chunk file `file` as it is generated (memory: a chunk and a
/// batch; the file appears only when complete); the returned a reads its blocks from it.
template <class MT>
PetOocSystem<MT> write_pet_ooc_system(const PetSpec& spec, std::size_t chunk_bytes,
                                      const std::string& file,
                                      const std::function<void(index_t, index_t)>& progress = {});

/// What write_pet_system wrote.
struct PetFileInfo {
    index_t rows = 0, cols = 0;
    offset_t nnz = 0;
    double scale = 0;         ///< activity scale of the phantom
    double total_counts = 0;  ///< Σ g
};

/// Stream the system to Matrix Market files without holding A: a first pass counts the
/// entries (for the header) and Σ A·phantom (for the scale), a second regenerates the rows
/// block by block and writes A (coordinate real general, 1-based, values in the shortest form
/// that reads back to the same double) and, unless `counts_path` is empty, g (array, n x 1,
/// integers). Unless empty, `phantom_path` gets the activity f (array). Memory: O(voxels +
/// the text of two blocks of 4096 rows per thread). Every file is written to PATH.tmp and
/// renamed, so a failed write leaves no partial file. Read back, the files hold exactly
/// make_pet_system's a, counts and phantom. Throws InputError (spec) or IoError (files).
PetFileInfo write_pet_system(const PetSpec& spec, const std::string& matrix_path,
                             const std::string& counts_path, const std::string& phantom_path);

}  // namespace heptane
