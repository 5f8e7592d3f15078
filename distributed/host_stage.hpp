// A rank's vector on its way between its executor and the host's double-precision work, and
// an axpby on whichever executor holds it (internal to heptane_distributed: the coarse
// correction and the AMG/CPR over the ranks run their coarse work on the host whatever the
// executor).
#pragma once

#include <vector>

#include "core/executor.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::dist {

/// out (host, double) = src (n values on exec); `stage` holds a GPU's values on the way.
template <class VT>
inline void to_host(const Executor& exec, const VT* src, index_t n, std::vector<VT>& stage,
                    std::vector<double>& out)
{
    out.resize(std::size_t(n));
    if (exec.is_cpu()) {
        for (index_t i = 0; i < n; ++i) out[std::size_t(i)] = double(src[i]);
        return;
    }
    stage.resize(std::size_t(n));
    copy_bytes(exec, src, *cpu_executor(), stage.data(), std::size_t(n) * sizeof(VT));
    for (index_t i = 0; i < n; ++i) out[std::size_t(i)] = double(stage[std::size_t(i)]);
}

/// dst (on exec) = in; `stage` holds them on the way to a GPU.
template <class VT>
inline void from_host(const std::vector<double>& in, std::vector<VT>& stage, const Executor& exec,
                      VT* dst)
{
    const std::size_t n = in.size();
    if (exec.is_cpu()) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = VT(in[i]);
        return;
    }
    stage.resize(n);
    for (std::size_t i = 0; i < n; ++i) stage[i] = VT(in[i]);
    copy_bytes(*cpu_executor(), stage.data(), exec, dst, n * sizeof(VT));
}

/// y = a x + b y on the executor's memory (the vector kernel of whichever executor it is).
template <class VT>
inline void axpby_on(const Executor& exec, index_t n, VT a, const VT* x, VT b, VT* y)
{
    dispatch_executor(exec, [&](const auto& e) { kernels::axpby(e, n, a, x, b, y); });
}

}  // namespace heptane::dist
