// PETSc binary files: what MatView/VecView write to a binary viewer, and what PETSc-based
// simulators dump with `-ksp_view_mat binary -ksp_view_rhs binary` (both into one file,
// "binaryoutput", the matrix first). A file is a sequence of objects, each big-endian:
//   matrix: PetscInt MAT_FILE_CLASSID (1211216), rows, cols, nnz; PetscInt nnz of each row
//           [rows]; PetscInt column of each entry, 0-based, row by row [nnz]; PetscScalar [nnz]
//   vector: PetscInt VEC_FILE_CLASSID (1211214), n; PetscScalar [n]
// PetscInt is 4 bytes, or 8 in a PETSc configured --with-64-bit-indices (the class id tells
// which); PetscScalar is a real double here (the default build). The reader emits canonical
// COO (docs/design.md §2); every problem is an IoError (cannot open/read) or an InputError
// naming the file, the object and the byte offset; nothing partial is returned.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/coo/coo.hpp"

namespace heptane {

inline constexpr long long petsc_mat_classid = 1211216;
inline constexpr long long petsc_vec_classid = 1211214;

/// What a PETSc binary file holds, in file order.
struct PetscBinaryContents {
    std::optional<Coo<double>> matrix;         ///< the first matrix
    std::vector<std::vector<double>> vectors;  ///< every vector
    int index_bytes = 4;                       ///< PetscInt of the file: 4 or 8
    int objects = 0;                           ///< matrices + vectors read
};

/// True when the file starts with a PETSc matrix or vector class id (4- or 8-byte PetscInt).
/// False for anything else, also for a file that cannot be read (the reader then says why).
bool is_petsc_binary(const std::string& path);

/// The nonzero count a file whose first object is a matrix announces in its header (-1
/// otherwise), without reading the entries.
long long petsc_binary_announced_nnz(const std::string& path);

/// Read every object of the file. Sparse (AIJ) matrices only: a dense one (nnz < 0) is an
/// InputError, as is a second matrix, a row length or column out of range, row lengths that
/// do not add up to nnz, bytes past the last object that are not a whole object (e.g. a file
/// of a single-precision or complex PETSc), and a truncated file. Repeated entries are summed.
PetscBinaryContents read_petsc_binary(const std::string& path);

/// read_petsc_binary() on bytes in memory; `name` stands for the file in messages (the fuzz
/// target's entry).
PetscBinaryContents read_petsc_binary_buffer(std::string_view data, const std::string& name);

/// The file's matrix (InputError if it holds none).
Coo<double> read_petsc_binary_matrix(const std::string& path);
/// The file's first vector (InputError if it holds none).
std::vector<double> read_petsc_binary_vector(const std::string& path);

/// Write `a` (if given) and then each vector, as PETSc's MatView/VecView to a binary viewer
/// would: a PETSc with PetscInt of `index_bytes` (4 or 8) loads it with MatLoad/VecLoad. The
/// matrix is written row by row, columns ascending (a host copy is made and sorted when `a`
/// is not canonical). Through PATH.tmp, renamed on success. Throws IoError when the file
/// cannot be written, InputError when index_bytes is 4 and a size or nnz exceeds 2^31 - 1.
void write_petsc_binary(const std::string& path, const Coo<double>* a,
                        const std::vector<const std::vector<double>*>& vectors,
                        int index_bytes = 4);

}  // namespace heptane
