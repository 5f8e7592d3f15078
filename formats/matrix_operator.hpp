// FormatOperator<M, MT, VT>: a matrix of any registered format on an executor as a
// MatrixOperator (formats/matrix.hpp), with the values-only refresh every format shares.
// make_matrix_operator (formats/matrix.cpp) makes them; the PETSc plugin makes its own from
// PETSc's arrays (plugin/engine.cpp) and refreshes them in place.
//
// update_values: the slot map (entry k of the canonical CSR/COO the operator was built from
// -> a slot of one of the format's value arrays) is made once, at the first call, by building
// the format again on the host from the same pattern with values k + 1 in the layout of the
// stored matrix (FormatTraits::layout) and reading back where each value landed; every call
// then copies the new values through it (kernels::copy_values: one upload and one kernel per
// value array on a GPU). Any format the registry builds and reads back exactly gets it, with
// no code of its own.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/operator.hpp"
#include "formats/fused_dots.hpp"
#include "formats/matrix.hpp"
#include "formats/registry.hpp"
#include "formats/spmv.hpp"
#include "formats/values_kernels.hpp"

namespace heptane {

/// A^T x uses the stored CSR transpose when there is one (TransposeMode::stored), otherwise
/// the format's own transpose kernel.
template <class M, class MT, class VT>
class FormatOperator final : public MatrixOperator<VT> {
public:
    static constexpr Format kFormat = format_of<M, MT>();
    using Traits = FormatTraits<kFormat>;

    /// `entries`: the stored entries of the matrix it was built from (-1: count them when
    /// update_values first needs them).
    FormatOperator(M a, index_t rows, index_t cols, std::unique_ptr<Csr<MT>> at,
                   std::shared_ptr<const Executor> exec, FormatOptions opt, std::string desc,
                   offset_t entries = -1)
        : a_(std::move(a)),
          at_(std::move(at)),
          rows_(rows),
          cols_(cols),
          exec_(std::move(exec)),
          opt_(std::move(opt)),
          desc_(std::move(desc)),
          entries_(entries)
    {
    }
    /// Square, no stored transpose, default kernels (the plugin's stores).
    FormatOperator(M a, index_t n, std::shared_ptr<const Executor> exec, std::string desc)
        : FormatOperator(std::move(a), n, n, nullptr, std::move(exec), FormatOptions{},
                         std::move(desc))
    {
    }
    using Operator<VT>::apply;
    index_t rows() const override { return rows_; }
    index_t cols() const override { return cols_; }
    std::shared_ptr<const Executor> executor() const override { return exec_; }
    void apply(VT alpha, const VT* x, VT beta, VT* y) const override
    {
        run(a_, Op::normal, alpha, x, beta, y);
    }
    void apply_transpose(VT alpha, const VT* x, VT beta, VT* y) const override
    {
        if (at_)
            run(*at_, Op::normal, alpha, x, beta, y);
        else
            run(a_, Op::transpose, alpha, x, beta, y);
    }
    std::string describe() const override { return desc_; }
    /// Every CUDA format kernel is launch-only, except CSR's (the vector kernel measures the
    /// longest row once, with a host wait, and the merge kernel allocates per call).
    bool graph_safe() const override
    {
        return exec_->is_cuda() && !std::is_same_v<M, Csr<MT>> && !at_;
    }
    index_t apply_fused_dots(const VT* x, VT* y, const VT* w, int count, double* partials,
                             std::size_t capacity,
                             const DotsFinish* finish = nullptr) const override
    {
        return heptane::apply_fused_dots(*exec_, a_, opt_.bdia_kernel, x, y, w, count, partials,
                                         capacity, finish);
    }
    std::size_t fused_dots_capacity(int count) const override
    {
        return heptane::fused_dots_capacity(*exec_, a_, opt_.bdia_kernel, count);
    }
    bool forms_step_inputs() const override
    {
        return heptane::forms_step_inputs(*exec_, a_, opt_.bdia_kernel);
    }
    index_t apply_step_dots(const StepInput<VT>& input, VT* y, const VT* w, int count,
                            double* partials, std::size_t capacity,
                            const DotsFinish* finish = nullptr) const override
    {
        return heptane::apply_step_dots(*exec_, a_, opt_.bdia_kernel, input, y, w, count, partials,
                                        capacity, finish);
    }

    Format format() const override { return kFormat; }
    void update_values(const double* values, offset_t count) override
    {
        prepare(count);
        const double* src = values;
        if (!exec_->is_cpu()) {
            if (staged_.size() != std::size_t(count))
                staged_ = Array<double>(exec_, std::size_t(count));
            copy_bytes(*cpu_executor(), values, *exec_, staged_.data(), staged_.bytes());
            src = staged_.data();
        }
        scatter(src);
    }
    void update_values_device(const double* values, offset_t count) override
    {
        prepare(count);
        scatter(values);
    }

    /// The matrix, in the executor's memory (writable: the caller keeps the pattern).
    M& matrix() noexcept { return a_; }
    const M& matrix() const noexcept { return a_; }

private:
    template <class Matrix>
    void run(const Matrix& m, Op op, VT alpha, const VT* x, VT beta, VT* y) const
    {
#ifdef HEPTANE_HAVE_CUDA
        // The CUDA CSR and BDIA kernels take the kernel choice of the options.
        if (exec_->is_cuda()) {
            const auto& cuda = static_cast<const CudaExecutor&>(*exec_);
            if constexpr (std::is_same_v<Matrix, Csr<MT>>) {
                kernels::spmv(cuda, m, op, alpha, x, beta, y, opt_.csr_kernel);
                return;
            } else if constexpr (std::is_same_v<Matrix, Bdia<MT>>) {
                kernels::spmv(cuda, m, op, alpha, x, beta, y, opt_.bdia_kernel);
                return;
            }
        }
#endif
        heptane::spmv(*exec_, m, op, alpha, x, beta, y);
    }

    // The slot map (once) and the checks of a refresh.
    void prepare(offset_t count)
    {
        HEPTANE_ENSURE(!at_, NotSupported,
                       "a values-only refresh of an operator with a stored transpose: build "
                       "the operator again (the transpose would keep the old values)");
        if (!slots_made_) make_slots();
        HEPTANE_ENSURE(count == entries_, DimensionMismatch,
                       "values-only refresh with " << count << " values; the pattern has "
                                                   << entries_ << " entries");
    }

    void make_slots()
    {
        // the pattern, in canonical order, from a host copy of the stored matrix
        const M host = a_.exec()->is_cpu() ? M{} : a_.to(cpu_executor());
        const M& h = a_.exec()->is_cpu() ? a_ : host;
        Coo<double> index;
        if constexpr (std::is_same_v<M, Coo<MT>>) {
            index = Coo<double>{h.rows, h.cols, h.row, h.col, Array<double>{}};
        } else {
            Coo<MT> p = to_coo(h);
            index =
                Coo<double>{p.rows, p.cols, std::move(p.row), std::move(p.col), Array<double>{}};
        }
        const offset_t n = offset_t(index.row.size());
        HEPTANE_ENSURE(entries_ < 0 || entries_ == n, InputError,
                       "the stored matrix has " << n << " entries, " << entries_ << " expected");
        entries_ = n;
        std::vector<double> k1(static_cast<std::size_t>(n));
        for (offset_t k = 0; k < n; ++k) k1[std::size_t(k)] = double(k + 1);
        index.val = Array<double>(std::move(k1));
        // the format again, in the stored matrix's layout, holding k + 1 at entry k's slot
        FormatOptions o = opt_;
        Traits::layout(h, o);
        auto built = Traits::build(index, o);
        const auto got = Traits::value_arrays(built);
        const auto want = Traits::value_arrays(a_);
        HEPTANE_ENSURE(got.size() == want.size(), InputError, "values-only refresh: layout");
        offset_t total = 0;
        for (std::size_t q = 0; q < got.size(); ++q) {
            HEPTANE_ENSURE(got[q]->size() == want[q]->size(), InputError,
                           "values-only refresh: the " << Traits::info.name
                                                       << " layout could not be made again");
            std::vector<offset_t> from, to;
            const std::vector<double>& v = got[q]->host();
            for (std::size_t i = 0; i < v.size(); ++i)
                if (v[i] != 0.0) {
                    from.push_back(offset_t(v[i]) - 1);
                    to.push_back(offset_t(i));
                }
            total += offset_t(from.size());
            from_.push_back(Array<offset_t>(std::move(from)).to(exec_));
            to_.push_back(Array<offset_t>(std::move(to)).to(exec_));
        }
        HEPTANE_ENSURE(total == n, InputError,
                       "values-only refresh: " << total << " of " << n << " entries found in the "
                                               << Traits::info.name << " layout");
        slots_made_ = true;
    }

    void scatter(const double* src)
    {
        const auto arrays = Traits::value_arrays(a_);
        for (std::size_t q = 0; q < arrays.size(); ++q) {
            const offset_t n = offset_t(from_[q].size());
            MT* dst = arrays[q]->data();
            if (exec_->is_cpu()) {
                kernels::copy_values(static_cast<const CpuExecutor&>(*exec_), n, from_[q].data(),
                                     to_[q].data(), src, dst);
            } else {
#ifdef HEPTANE_HAVE_CUDA
                kernels::copy_values(static_cast<const CudaExecutor&>(*exec_), n, from_[q].data(),
                                     to_[q].data(), src, dst);
#else
                HEPTANE_THROW(NotSupported, "a CUDA refresh in a build without CUDA");
#endif
            }
        }
    }

    M a_;
    std::unique_ptr<Csr<MT>> at_;
    index_t rows_, cols_;
    std::shared_ptr<const Executor> exec_;
    FormatOptions opt_;
    std::string desc_;
    offset_t entries_ = -1;
    bool slots_made_ = false;
    std::vector<Array<offset_t>> from_, to_;  // per value array: entry -> slot
    Array<double> staged_;                    // a GPU: the uploaded values
};

}  // namespace heptane
