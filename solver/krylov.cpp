#include "solver/krylov.hpp"

#include <cstdlib>

#include "core/error.hpp"
#include "solver/krylov_driver.hpp"

namespace heptane {

SolverType parse_solver(const std::string& name)
{
    if (name == "bicgstab" || name == "bcgs") return SolverType::bicgstab;
    if (name == "cg") return SolverType::cg;
    if (name == "gmres" || name == "fgmres") return SolverType::gmres;
    HEPTANE_THROW(InputError, "unknown solver '" << name << "' (choices: bicgstab, cg, gmres)");
}

namespace detail {

int hot_l2_vectors()
{
    static const int k = [] {
        const char* e = std::getenv("HEPTANE_L2");
        if (!e || e[0] < '0' || e[0] > '4' || e[1] != '\0') return 0;
        return e[0] - '0';
    }();
    return k;
}

L2Window::L2Window(const Executor& exec, const void* base, std::size_t bytes)
{
    if (!exec.is_cuda() || bytes == 0) return;
    const auto& cuda = static_cast<const CudaExecutor&>(exec);
    if (cuda.persist_l2(base, bytes) > 0) cuda_ = &cuda;
}

L2Window::~L2Window()
{
    if (cuda_) cuda_->release_l2();
}

}  // namespace detail

const char* to_string(SolverType s) noexcept
{
    switch (s) {
        case SolverType::bicgstab:
            return "bicgstab";
        case SolverType::cg:
            return "cg";
        case SolverType::gmres:
            return "gmres";
    }
    return "?";
}

template <class VT>
std::unique_ptr<Solver<VT>> make_solver(SolverType type, const SolverOptions& options,
                                        const SolverExtras& extras)
{
    switch (type) {
        case SolverType::bicgstab:
            return std::make_unique<Bicgstab<VT>>(options, extras.bicgstab_impl);
        case SolverType::cg:
            return std::make_unique<Cg<VT>>(options);
        case SolverType::gmres:
            return std::make_unique<Gmres<VT>>(options, extras.restart);
    }
    HEPTANE_THROW(InputError, "make_solver: unknown solver type " << int(type));
}

template std::unique_ptr<Solver<double>> make_solver<double>(SolverType, const SolverOptions&,
                                                             const SolverExtras&);
template std::unique_ptr<Solver<float>> make_solver<float>(SolverType, const SolverOptions&,
                                                           const SolverExtras&);

}  // namespace heptane
