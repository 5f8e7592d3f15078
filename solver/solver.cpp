#include "solver/solver.hpp"

#include <cstdio>

namespace heptane {

const char* to_string(FusedInputs f) noexcept
{
    switch (f) {
        case FusedInputs::none:
            return "none";
        case FusedInputs::s:
            return "s";
        case FusedInputs::p_and_s:
            return "p_and_s";
        case FusedInputs::automatic:
            return "automatic";
    }
    return "?";
}

const char* to_string(Reason r) noexcept
{
    switch (r) {
        case Reason::iterating:
            return "iterating";
        case Reason::converged_rtol:
            return "converged_rtol";
        case Reason::converged_atol:
            return "converged_atol";
        case Reason::diverged_max_it:
            return "diverged_max_it";
        case Reason::diverged_dtol:
            return "diverged_dtol";
        case Reason::diverged_nan:
            return "diverged_nan";
        case Reason::breakdown_rho:
            return "breakdown_rho";
        case Reason::breakdown_omega:
            return "breakdown_omega";
        case Reason::breakdown_rv:
            return "breakdown_rv";
        case Reason::diverged_indefinite:
            return "diverged_indefinite";
        case Reason::stagnation:
            return "stagnation";
        case Reason::diverged_true_residual:
            return "diverged_true_residual";
        case Reason::converged_by_caller:
            return "converged_by_caller";
        case Reason::diverged_by_caller:
            return "diverged_by_caller";
    }
    return "unknown";
}

std::string Status::summary() const
{
    char buf[256];
    int len =
        std::snprintf(buf, sizeof buf, "%s in %d iteration%s: |r|/|b| = %.3e", to_string(reason),
                      iterations, iterations == 1 ? "" : "s", relative_residual);
    if (true_relative_residual >= 0 && len > 0 && std::size_t(len) < sizeof buf)
        std::snprintf(buf + len, sizeof buf - std::size_t(len), " (true %.3e)",
                      true_relative_residual);
    return buf;
}

}  // namespace heptane
