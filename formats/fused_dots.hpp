// The fused product-and-dots of Operator::apply_fused_dots for the operators that wrap a
// format (formats/matrix.cpp, the PETSc plugin's own): BDIA-GH on a CUDA executor has a fused
// kernel (kernels::spmv_dots, formats/bdia/bdia_dots.cuh); every other format, the CPU and
// the thesis BDIA kernel do not (0: the caller applies and reduces separately).
#pragma once

#include <cstddef>
#include <type_traits>

#include "core/executor.hpp"
#include "formats/bdia/bdia.hpp"
#include "formats/bdia/bdia_cuda.hpp"

namespace heptane {

template <class M>
struct is_bdia : std::false_type {
};
template <class T>
struct is_bdia<Bdia<T>> : std::true_type {
};

/// Operator::fused_dots_capacity for matrix `m` of format M on `exec` with `kernel`.
template <class M>
std::size_t fused_dots_capacity(const Executor& exec, const M& m, kernels::BdiaKernel kernel,
                                int count)
{
    if constexpr (is_bdia<M>::value) {
#ifdef HEPTANE_HAVE_CUDA
        if (exec.is_cuda() && kernel != kernels::BdiaKernel::thesis)
            return kernels::spmv_dots_capacity(m.rows, count);
#endif
    }
    (void)exec, (void)m, (void)kernel, (void)count;
    return 0;
}

/// Operator::apply_fused_dots for matrix `m` of format M on `exec` with `kernel`.
template <class M, class VT>
index_t apply_fused_dots(const Executor& exec, const M& m, kernels::BdiaKernel kernel, const VT* x,
                         VT* y, const VT* w, int count, double* partials, std::size_t capacity,
                         const DotsFinish* finish)
{
    if constexpr (is_bdia<M>::value) {
#ifdef HEPTANE_HAVE_CUDA
        if (exec.is_cuda() && kernel != kernels::BdiaKernel::thesis)
            return kernels::spmv_dots(static_cast<const CudaExecutor&>(exec), m, x, y, w, count,
                                      partials, capacity, finish);
#endif
    }
    (void)exec, (void)m, (void)kernel, (void)x, (void)y, (void)w, (void)count, (void)partials,
        (void)capacity, (void)finish;
    return 0;
}

/// Operator::forms_step_inputs for matrix `m` of format M on `exec` with `kernel`: the fused
/// BDIA-GH kernels (spmv_step_dots) on a CUDA executor.
template <class M>
bool forms_step_inputs(const Executor& exec, const M& m, kernels::BdiaKernel kernel)
{
    if constexpr (is_bdia<M>::value) {
#ifdef HEPTANE_HAVE_CUDA
        return exec.is_cuda() && kernel != kernels::BdiaKernel::thesis &&
               kernels::spmv_dots_fuses(m);
#endif
    }
    (void)exec, (void)m, (void)kernel;
    return false;
}

/// Operator::apply_step_dots for matrix `m` of format M on `exec` with `kernel`.
template <class M, class VT>
index_t apply_step_dots(const Executor& exec, const M& m, kernels::BdiaKernel kernel,
                        const StepInput<VT>& input, VT* y, const VT* w, int count, double* partials,
                        std::size_t capacity, const DotsFinish* finish)
{
    HEPTANE_ENSURE(forms_step_inputs(exec, m, kernel), NotSupported,
                   "this matrix's product does not form a BiCGStab step's input itself (only "
                   "BDIA-GH on a GPU does)");
    if constexpr (is_bdia<M>::value) {
#ifdef HEPTANE_HAVE_CUDA
        return kernels::spmv_step_dots(static_cast<const CudaExecutor&>(exec), m, input, y, w,
                                       count, partials, capacity, finish);
#endif
    }
    (void)input, (void)y, (void)w, (void)count, (void)partials, (void)capacity, (void)finish;
    return 0;
}

}  // namespace heptane
