// The plugin's PcEngine (engine.hpp): heptane's preconditioners as ordinary PETSc PCs
// (hamg, hcpr and the others under PETSc's own KSPs): setup from the borrowed CSR, refresh,
// apply on the PC's vectors.
#include "plugin/engine_impl.hpp"

#include "plugin/device_pool.hpp"
#include "plugin/pinned_upload.hpp"

namespace heptane::plugin
{

using namespace detail;

// ---- PcEngine ----------------------------------------------------------------------------------

struct PcEngine::Impl {
  std::shared_ptr<const Executor>         exec;
  std::shared_ptr<Preconditioner<double>> pc;
  Csr<double>                             csr;  // the host CSR of the last setup or refresh
  Array<double>                           r, z; // on a GPU: the vectors of the apply
  PcType                                  type = PcType::none;
  PcTimings                               timings;
};

PcEngine::PcEngine() : impl_(std::make_unique<Impl>()) { }
PcEngine::~PcEngine() = default;

void PcEngine::build(PcType type, const CsrView &a, index_t nc, const std::string &device, const PcOptions &opts)
{
  const auto t0 = clock_type::now();
  Impl      &p  = *impl_;
  p.pc.reset(); // free the old one (device memory) first
  HEPTANE_ENSURE(nc >= 1 && a.rows % nc == 0, InputError, "block size " << nc << " does not divide the " << a.rows << " rows");
  const auto exec = shared_executor(resolve_device(device));
  copy_view(a, p.csr);
  p.pc   = make_preconditioner<double>(type, p.csr, nc, exec, opts);
  p.exec = exec;
  p.type = type;
  if (!exec->is_cpu() && (p.r.size() != std::size_t(a.rows) || p.r.exec() != exec)) {
    p.r = Array<double>(exec, std::size_t(a.rows));
    p.z = Array<double>(exec, std::size_t(a.rows));
  }
  exec->synchronize();
  p.timings.last_setup_ms = ms_since(t0);
  ++p.timings.builds;
}

void PcEngine::refresh(const CsrView &a)
{
  const auto t0 = clock_type::now();
  Impl      &p  = *impl_;
  HEPTANE_ENSURE(p.pc, InputError, "values-only preconditioner refresh before the first setup");
  HEPTANE_ENSURE(a.rows == p.pc->rows(), InputError, "values-only preconditioner refresh: " << a.rows << " rows, the setup had " << p.pc->rows());
  copy_view(a, p.csr); // the pattern compared: another one is the preconditioner's InputError
  p.pc->update_values(p.csr);
  p.exec->synchronize();
  p.timings.last_setup_ms = ms_since(t0);
  ++p.timings.refreshes;
}

void PcEngine::apply(const double *r, double *z)
{
  const auto t0 = clock_type::now();
  Impl      &p  = *impl_;
  HEPTANE_ENSURE(p.pc, InputError, "preconditioner applied before its setup");
  if (p.exec->is_cpu()) {
    p.pc->apply(r, z);
  } else {
    const std::size_t bytes = p.r.bytes();
    copy_bytes(*cpu_executor(), r, *p.exec, p.r.data(), bytes);
    p.pc->apply(p.r.data(), p.z.data());
    copy_bytes(*p.exec, p.z.data(), *cpu_executor(), z, bytes);
  }
  p.exec->synchronize();
  p.timings.apply_ms += ms_since(t0);
  ++p.timings.applies;
}

bool PcEngine::on_device(const double *r, const double *z) const
{
  const Impl &p = *impl_;
  return p.pc && p.exec && p.exec->is_cuda() && r != z && is_device_memory_of(*p.exec, r) && is_device_memory_of(*p.exec, z);
}

void PcEngine::apply_device(const double *r, double *z)
{
  const auto t0 = clock_type::now();
  Impl      &p  = *impl_;
  HEPTANE_ENSURE(on_device(r, z), InputError, "apply_device: r and z must be two arrays in the memory of the preconditioner's GPU");
  synchronize_device(*p.exec); // r written by the caller's stream
  p.pc->apply(r, z);
  p.exec->synchronize();
  p.timings.apply_ms += ms_since(t0);
  ++p.timings.applies;
  ++p.timings.device_applies;
}

bool PcEngine::built() const noexcept
{
  return impl_->pc != nullptr;
}
index_t PcEngine::rows() const noexcept
{
  return impl_->pc ? impl_->pc->rows() : 0;
}
PcType PcEngine::type() const noexcept
{
  return impl_->type;
}
index_t PcEngine::block_size() const noexcept
{
  return impl_->pc ? impl_->pc->block_size() : 0;
}
std::string PcEngine::describe() const
{
  return impl_->pc ? impl_->pc->describe() : std::string("(not set up)");
}
std::string PcEngine::hierarchy() const
{
  return amg_table(impl_->pc);
}
std::shared_ptr<const Executor> PcEngine::executor() const
{
  return impl_->exec;
}
const PcTimings &PcEngine::timings() const noexcept
{
  return impl_->timings;
}

} // namespace heptane::plugin
