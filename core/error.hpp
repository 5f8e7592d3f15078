// Typed errors. Misuse (wrong sizes, bad files, missing devices) throws one of these;
// numerical trouble inside a solver is a Status, never an exception (docs/design.md §2).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace heptane {

/// Base of every heptane error. what() is the user-facing message; where() is the
/// source location (file:line) that raised it.
class Error : public std::runtime_error {
public:
    Error(const std::string& msg, const char* file, int line)
        : std::runtime_error(msg), where_(std::string(file) + ":" + std::to_string(line))
    {
    }
    const std::string& where() const noexcept { return where_; }

private:
    std::string where_;
};

/// Bad input data: a malformed file, an out-of-range index, a matrix a format cannot hold.
class InputError : public Error {
    using Error::Error;
};
/// A preconditioner's setup met a matrix it cannot factor or invert: a zero pivot, a zero
/// diagonal entry, a singular diagonal block or coarsest level. An InputError (the values are
/// at fault, not the call); a caller that treats a failed solve as a signal (a PETSc host's
/// KSP_DIVERGED_PC_FAILED, on which a simulator cuts its time step) can tell it from the rest.
class SingularError : public InputError {
    using InputError::InputError;
};
/// Operands whose sizes do not fit together.
class DimensionMismatch : public Error {
    using Error::Error;
};
/// A valid request this build or this format cannot serve (e.g. CUDA in a CPU-only build).
class NotSupported : public Error {
    using Error::Error;
};
/// A failed CUDA, cuBLAS, cuSPARSE, NCCL or MPI call.
class DeviceError : public Error {
    using Error::Error;
};
/// A file that cannot be opened, read or written.
class IoError : public Error {
    using Error::Error;
};

}  // namespace heptane

/// Throw `Type` with a message built from stream insertions: HEPTANE_THROW(InputError, "n=" << n).
#define HEPTANE_THROW(Type, stream_expr)                               \
    do {                                                               \
        std::ostringstream heptane_msg_;                               \
        heptane_msg_ << stream_expr;                                   \
        throw ::heptane::Type(heptane_msg_.str(), __FILE__, __LINE__); \
    } while (0)

/// Throw `Type` unless `cond` holds.
#define HEPTANE_ENSURE(cond, Type, stream_expr)        \
    do {                                               \
        if (!(cond)) HEPTANE_THROW(Type, stream_expr); \
    } while (0)
