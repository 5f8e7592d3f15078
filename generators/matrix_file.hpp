// Matrix and vector files in every format heptane reads and writes: Matrix Market (text) and
// PETSc binary (what PETSc-based simulators dump with -ksp_view_mat binary). Readers tell the
// format from the file's first bytes; writers from the name: PATH ending in ".petsc" is
// written as PETSc binary, anything else as Matrix Market. The CLI reads and writes every
// matrix and vector through these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "formats/coo/coo.hpp"

namespace heptane {

enum class FileFormat { matrix_market, petsc_binary };

/// The format of an existing file by its contents (PETSc binary when it starts with a PETSc
/// class id, Matrix Market otherwise: that reader then says what is wrong).
FileFormat file_format_of(const std::string& path);
/// The format a writer uses for PATH: petsc_binary for a name ending in ".petsc".
FileFormat file_format_for_writing(const std::string& path);
const char* to_string(FileFormat f) noexcept;

/// A matrix and, from a PETSc binary file that holds one after it (-ksp_view_mat binary
/// -ksp_view_rhs binary write both into one file), its right-hand side.
struct MatrixFile {
    Coo<double> a;
    std::optional<std::vector<double>> rhs;
    FileFormat format = FileFormat::matrix_market;
};
/// Read a matrix (canonical COO) from a Matrix Market or PETSc binary file.
MatrixFile read_matrix_file(const std::string& path);
/// Read a vector from a Matrix Market or PETSc binary file (its first vector).
std::vector<double> read_vector_file(const std::string& path);
/// The entry count a matrix file announces in its header, without reading the entries
/// (-1 when it cannot be told).
long long announced_entries(const std::string& path);

/// Write a matrix: PETSc binary (32-bit PetscInt, or 64-bit when `petsc_int64`) or Matrix
/// Market with `comment` (the binary format has no room for one), through PATH.tmp.
void write_matrix_file(const std::string& path, const Coo<double>& a, const std::string& comment,
                       bool petsc_int64 = false);
/// Write a vector the same way.
void write_vector_file(const std::string& path, const std::vector<double>& x,
                       const std::string& comment, bool petsc_int64 = false);

}  // namespace heptane
