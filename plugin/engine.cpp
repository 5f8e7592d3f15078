// The heptane side of the PETSc plugin, the matrix: operators built from borrowed CSR with a
// values-only refresh (see engine.hpp; the preconditioner and the solve: engine_krylov.cpp,
// PETSc PCs: engine_pc.cpp, several ranks: engine_dist.cpp).
#include "plugin/engine.hpp"
#include "plugin/engine_impl.hpp"
#include "plugin/big_alloc.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

#include "formats/bdia/bdia_slots.hpp"
#include "formats/detect/detect.hpp"
#include "formats/matrix_operator.hpp"
#include "plugin/device_pool.hpp"
#include "solver/vector/vector_ops.hpp"

namespace heptane::plugin
{

using namespace detail;

namespace
{

// Whether a fold with point Jacobi may mark Â's diagonal as the identity (MatrixEngine::
// right_scaled); HEPTANE_UNIT_DIAGONAL=0 in the environment keeps it as computed and read, for
// comparisons (read once).
bool unit_diagonal_allowed()
{
  static const bool on = [] {
    const char *e = std::getenv("HEPTANE_UNIT_DIAGONAL");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

// The distinct block offsets (block column - block row) of the pattern, ascending.
std::vector<index_t> pattern_block_offsets(const CsrView &a, index_t nc)
{
  std::vector<char> seen(2 * std::size_t(a.rows / nc) + 1, 0);
  const index_t     shift = a.rows / nc;
  for (index_t r = 0; r < a.rows; ++r)
    for (offset_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) seen[std::size_t(a.col_idx[k] / nc - r / nc + shift)] = 1;
  std::vector<index_t> d;
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) d.push_back(index_t(i) - shift);
  return d;
}

// Values in MT to the matrix's value array on exec (staging through the host on a device).
template <class MT>
void put_values(Array<MT> &dst, std::vector<MT> &staging)
{
  if (dst.on_host()) return; // written in place
  copy_bytes(*cpu_executor(), staging.data(), *dst.exec(), dst.data(), dst.bytes());
}

// "; the last upload: …" for a store's -ksp_view line: where the time of its last upload went
std::string upload_note(const PinnedUpload &up)
{
  const PinnedUpload::Stats &u = up.stats();
  std::ostringstream         o;
  if (u.bytes <= 0) return o.str();
  o << "; the last upload: " << u.bytes / 1e6 << " MB";
  if (u.registered_bytes > 0) {
    o << ", read by the copy engine straight from PETSc's array (registered with CUDA once per matrix and nonzero state";
    if (u.register_ms > 0) o << ": " << u.register_ms << " ms this time";
    if (u.register_background_ms > 0) o << ": on a background thread since the solve before, " << u.register_background_ms << " ms, of which this refresh waited " << u.register_wait_ms << " ms";
    o << "; no host copy";
    if (u.bytes > u.registered_bytes) o << " but of its partial first and last pages, " << u.bytes - u.registered_bytes << " bytes, through the pinned buffers";
    o << ")";
  } else {
    o << ", host copies into the pinned buffers " << u.host_copy_ms << " ms (" << u.threads << " threads, " << u.team << "; " << u.page_faults << " minor page faults and " << u.context_switches << " involuntary context switches in the process meanwhile";
    if (!u.sched.empty()) o << "; HEPTANE_UPLOAD_SCHEDSTAT: " << u.sched << " (the snapshots took " << u.sched_probe_ms << " ms more)";
    o << "), waits for the copy engine " << u.wait_ms << " ms";
  }
  if (u.register_ms > 0 && u.registered_bytes <= 0) o << " (CUDA did not register PETSc's array: copied through the pinned buffers)";
  return o.str();
}

// The InputError for CSR entry k (row r, column c) that lies on none of the block offsets.
[[noreturn]] void throw_off_offsets(const CsrView &a, index_t nc, const std::vector<index_t> &offsets, offset_t k, const std::string &where)
{
  const index_t r = index_t(std::upper_bound(a.row_ptr, a.row_ptr + a.rows + 1, index_t(k)) - a.row_ptr) - 1;
  const index_t c = a.col_idx[k];
  HEPTANE_THROW(InputError, "entry (" << r << ", " << c << ") lies on block offset " << c / nc - r / nc << ", not one of the block offsets " << offsets_text(offsets) << " " << where);
}

// slot[k] = (q*Nc + s)*rows + r for CSR entry k in row r, column c = (r/Nc + d_q)*Nc + s
// (BdiaStore; kernels::bdia_slots_from_csr on the host). InputError for the first entry that
// lies on none of the block offsets (ascending, distinct).
std::vector<offset_t> bdia_slot_map(const CsrView &a, index_t nc, const std::vector<index_t> &offsets, const std::string &where)
{
  const index_t n = a.rows, shift = n / nc;
  for (index_t d : offsets) HEPTANE_ENSURE(d >= -shift && d <= shift, InputError, "block offset " << d << " outside the matrix (" << shift << " block rows)");
  std::vector<offset_t> slot(std::size_t(a.nnz()));
  const offset_t        bad = kernels::bdia_slots_from_csr(*cpu_executor(), n, nc, a.row_ptr, a.col_idx, offsets.data(), index_t(offsets.size()), slot.data());
  if (bad >= 0) throw_off_offsets(a, nc, offsets, bad, where);
  return slot;
}

// bdia_zeros on exec without its host value array: the values allocated and zeroed on the
// device, the stored-slot pattern bdia_zeros's (every slot whose column lies inside the
// matrix: one contiguous range of bits per element diagonal). `offsets`: ascending, checked.
template <class MT>
Bdia<MT> bdia_zeros_on(index_t n, index_t nc, std::vector<index_t> offsets, const std::shared_ptr<const Executor> &exec)
{
  const std::size_t          slots = offsets.size() * std::size_t(nc) * std::size_t(n);
  const Array<std::uint64_t> bits  = bdia_zeros_pattern(n, n, nc, offsets);
  Bdia<MT>                   m;
  m.rows = m.cols = n;
  m.block_size    = nc;
  m.block_offsets = std::move(offsets);
  m.pattern       = bits.to(exec);
  m.data          = Array<MT>(exec, slots);
  zero_device_bytes(*exec, m.data.data(), m.data.bytes());
  return m;
}

// BDIA-GH built straight from CSR through the slot map (bdia_slot_map); a refresh scatters
// the new values through it (kernels::scatter_values). On the CPU from PETSc's array. On a
// GPU the values go up as they are (PinnedUpload) into a device copy of the CSR values, which
// a kernel scatters through the slot map kept on the device (32-bit where the slots fit) and
// which the preconditioner's numeric part reads as well (device_values); the BDIA values are
// allocated and zeroed on the device.
template <class MT, class VT>
struct BdiaStore final : TypedStore<VT> {
  using OpT = FormatOperator<Bdia<MT>, MT, VT>;
  BdiaStore(const CsrView &a, index_t nc, std::vector<index_t> offsets, const std::shared_ptr<const Executor> &exec, const std::string &where) : nnz_(a.nnz())
  {
    const index_t n = a.rows;
    check_offsets(n, nc, offsets);
    Bdia<MT> m;
    if (exec->is_cpu() || index_t(offsets.size()) > kernels::bdia_slots_max_offsets) {
      std::vector<offset_t> slot = bdia_slot_map(a, nc, offsets, where);
      if (exec->is_cpu()) {
        m     = bdia_zeros<MT>(n, n, nc, std::move(offsets));
        slot_ = std::move(slot);
        make_plan(a, index_t(m.block_offsets.size()) * nc);
        host_scatter(a.values, m.data.data());
      } else {
        m       = bdia_zeros_on<MT>(n, nc, std::move(offsets), exec);
        upload_ = shared_pinned_upload(exec);
        values_ = Array<double>(exec, std::size_t(nnz_));
        slot64_ = Array<std::int64_t>(exec, slot.size());
        upload_->upload(slot.data(), slot64_.data(), slot64_.bytes());
        scatter_device(a, m.data.data());
      }
    } else {
      // On a GPU the pattern goes up (row pointers and columns, through the pinned buffers)
      // and the slot map is computed there: no host pass over the entries, no host map.
      m = on_device(
        n, nc, std::move(offsets), exec,
        [&] {
          upload_->upload(a.row_ptr, ptr_.data(), ptr_.bytes());
          upload_->upload(a.col_idx, col_.data(), col_.bytes());
        },
        [&](offset_t bad, const std::vector<index_t> &offs) { throw_off_offsets(a, nc, offs, bad, where); }, [&](MT *dst) { scatter_device(a, dst); });
    }
    finish(std::move(m), n, nc, a.values, exec);
  }
  // From a block CSR matrix (PETSc's BAIJ) on a GPU: its block pattern and its values go up as
  // they are and are expanded there (kernels::block_pattern_to_csr, block_values_to_csr) into
  // the scalar CSR pattern and values the other constructor uploads: no host pass over the
  // entries. The refreshes are the other constructor's; refresh_permuted with the block size
  // needs no map. Only on a GPU with at most bdia_slots_max_offsets block offsets (the caller
  // checks: MatrixEngine::build_blocks).
  BdiaStore(const BlockCsrView &b, index_t nc, std::vector<index_t> offsets, const std::shared_ptr<const Executor> &exec, const std::string &where) : nnz_(b.nnz())
  {
    const index_t n = b.rows();
    check_offsets(n, nc, offsets);
    const index_t bs = b.block_size;
    if (exec->is_cpu()) { // Nc = bs (the caller checks): every block straight into its slots
      Bdia<MT> m = bdia_zeros<MT>(n, n, nc, std::move(offsets));
      put_blocks(b, m.block_offsets, m.data.data(), where);
      finish(std::move(m), n, nc, nullptr, exec);
      if constexpr (keeps_fp64) put_blocks(b, own_->matrix().block_offsets, own64_->matrix().data.data(), where);
      return;
    }
    Bdia<MT> m = on_device(
      n, nc, std::move(offsets), exec,
      [&] {
        Array<index_t> bptr(exec, std::size_t(b.block_rows) + 1), bcol(exec, std::size_t(b.block_ptr[b.block_rows]));
        upload_->upload(b.block_ptr, bptr.data(), bptr.bytes());
        upload_->upload(b.block_col, bcol.data(), bcol.bytes());
        dispatch_executor(*exec, [&](const auto &e) { kernels::block_pattern_to_csr(e, b.block_rows, bs, bptr.data(), bcol.data(), ptr_.data(), col_.data()); });
        exec->synchronize(); // bptr and bcol go out of scope
      },
      [&](offset_t bad, const std::vector<index_t> &offs) { // name the entry from the pattern made on the device
        const std::vector<index_t> ptr = ptr_.to_vector(), col = col_.to_vector();
        CsrView                    v;
        v.rows    = n;
        v.row_ptr = ptr.data();
        v.col_idx = col.data();
        throw_off_offsets(v, nc, offs, bad, where);
      },
      [&](MT *dst) {
        pvalues_ = Array<double>(exec, std::size_t(nnz_));
        upload_->reset_stats();
        upload_->upload(b.values, pvalues_.data(), pvalues_.bytes());
        const double *pv = pvalues_.data();
        double       *v  = values_.data();
        dispatch_executor(*exec, [&](const auto &e) {
          kernels::block_values_to_csr(e, n, bs, ptr_.data(), pv, v);
          scatter_slots(e, v, dst);
        });
      });
    finish(std::move(m), n, nc, nullptr, exec);
  }
  // CPU, Nc = bs: every block of b straight into its slots of dst (block offsets `offs`);
  // InputError naming the first entry of a block that lies on none of them
  template <class T>
  static void put_blocks(const BlockCsrView &b, const std::vector<index_t> &offs, T *dst, const std::string &where)
  {
    const index_t  bs = b.block_size;
    const offset_t k  = kernels::bdia_values_from_blocks(*cpu_executor(), b.block_rows, bs, b.block_ptr, b.block_col, b.values, offs.data(), index_t(offs.size()), dst);
    if (k < 0) return;
    const index_t ib = index_t(std::upper_bound(b.block_ptr, b.block_ptr + b.block_rows + 1, index_t(k)) - b.block_ptr) - 1;
    HEPTANE_THROW(InputError, "entry (" << ib * bs << ", " << b.block_col[k] * bs << ") lies on block offset " << b.block_col[k] - ib << ", not one of the block offsets " << offsets_text(offs) << " " << where);
  }
  // sorted, distinct; BDIA stores D·Nc·N slots: far more than the entries means the matrix is
  // not block-diagonal (e.g. -heptane_format bdiagh on an unstructured matrix)
  void check_offsets(index_t n, index_t nc, std::vector<index_t> &offsets) const
  {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
    const double slots = double(offsets.size()) * nc * n;
    HEPTANE_ENSURE(slots <= 4.0 * double(nnz_) + double(n), InputError,
                   "BDIA-GH would store " << slots << " values for " << nnz_ << " entries (" << offsets.size() << " block offsets, Nc = " << nc
                                          << "): the matrix is not block-diagonal; use another "
                                             "format (csr)");
  }
  // the device path of both constructors: the scalar pattern into ptr_/col_ (pattern()), the
  // slot map from it there (off(k, offsets) for an entry on none of the offsets), the values
  // into values_ and the BDIA slots (values(dst))
  template <class Pattern, class Off, class Values>
  Bdia<MT> on_device(index_t n, index_t nc, std::vector<index_t> offsets, const std::shared_ptr<const Executor> &exec, Pattern pattern, Off off, Values values)
  {
    const auto    t1 = clock_type::now();
    const index_t nq = index_t(offsets.size());
    upload_          = shared_pinned_upload(exec);
    ptr_             = Array<index_t>(exec, std::size_t(n) + 1); // kept: the preconditioner's symbolic part reads them (device_pattern)
    col_             = Array<index_t>(exec, std::size_t(nnz_));
    pattern();
    offset_t bad = -1;
    dispatch_executor(*exec, [&](const auto &e) {
      if (double(nq) * nc * n < 2147483648.0) { // 32-bit slots: half the map's traffic per refresh
        slot32_ = Array<std::int32_t>(exec, std::size_t(nnz_));
        bad     = kernels::bdia_slots_from_csr(e, n, nc, ptr_.data(), col_.data(), offsets.data(), nq, slot32_.data());
      } else {
        slot64_ = Array<std::int64_t>(exec, std::size_t(nnz_));
        bad     = kernels::bdia_slots_from_csr(e, n, nc, ptr_.data(), col_.data(), offsets.data(), nq, slot64_.data());
      }
    });
    if (bad >= 0) off(bad, offsets);
    slot_ms_      = ms_since(t1);
    const auto t2 = clock_type::now();
    Bdia<MT>   m  = bdia_zeros_on<MT>(n, nc, std::move(offsets), exec);
    values_       = Array<double>(exec, std::size_t(nnz_));
    values(m.data.data());
    exec->synchronize();
    values_ms_ = ms_since(t2);
    return m;
  }
  // the operator (and in mixed precision the fp64 matrix beside it) from m; host_values: the
  // CSR values on the host where the operator is there
  void finish(Bdia<MT> m, index_t n, index_t nc, const double *host_values, const std::shared_ptr<const Executor> &exec)
  {
    std::ostringstream d;
    d << "bdiagh " << n << 'x' << n << " Nc=" << nc << " D=" << m.num_block_diagonals() << ' ' << precision_name<MT, VT>() << " on " << exec->name();
    own_      = std::make_shared<OpT>(std::move(m), n, exec, d.str());
    this->op_ = own_;
    if constexpr (keeps_fp64) { // mixed: the fp64 matrix beside, for the refinement's residuals
      const Bdia<MT> &m32 = own_->matrix();
      Bdia<double>    m64 = m32.exec()->is_cpu() ? bdia_zeros<double>(n, n, nc, m32.block_offsets) : bdia_zeros_on<double>(n, nc, m32.block_offsets, exec);
      own64_              = std::make_shared<Op64>(std::move(m64), n, exec, "bdiagh fp64 (the refinement's residuals)");
      if (host_values || !own64_->matrix().data.on_host()) scatter_fp64(host_values); // else the block constructor fills it
    }
  }
  void refresh(const CsrView &a) override
  {
    HEPTANE_ENSURE(a.nnz() == nnz_, InputError, "values-only refresh: " << a.nnz() << " entries, the pattern had " << nnz_);
    Array<MT> &data = own_->matrix().data;
    device_refresh_ = false;
    if (data.on_host() && slot_.empty()) { // built from blocks: the map at its first CSR refresh
      slot_ = bdia_slot_map(a, own_->matrix().block_size, own_->matrix().block_offsets, "(values-only refresh)");
      make_plan(a, index_t(own_->matrix().block_offsets.size()) * own_->matrix().block_size);
    }
    if (data.on_host()) host_scatter(a.values, data.data());
    else scatter_device(a, data.data());
    if constexpr (keeps_fp64) scatter_fp64(a.values);
  }
  // GPU: the CSR values on this device already (PETSc's aijcusparse): copied into values_ (the
  // copy the preconditioner's numeric part reads) and scattered there; no host copy, no upload
  bool refresh_device(const double *values) override
  {
    Array<MT> &data = own_->matrix().data;
    if (data.on_host() || values_.empty() || !copy_device_bytes(*values_.exec(), values_.data(), values, values_.bytes())) return false;
    dispatch_executor(*values_.exec(), [&](const auto &e) {
      scatter_slots(e, values_.data(), data.data());
      if constexpr (keeps_fp64) scatter_slots(e, values_.data(), own64_->matrix().data.data());
    });
    device_refresh_ = true;
    return true;
  }
  // CPU: the slot map composed with pos once (slot of the entry whose value is values[j]),
  // then one scatter over the values in their own order: the traffic of refresh()
  bool refresh_permuted(const double *values, const index_t *pos, index_t block_size) override
  {
    Array<MT> &data = own_->matrix().data;
    if (!data.on_host()) return refresh_permuted_device(values, pos, block_size, data.data());
    if (slot_.size() != std::size_t(nnz_) || !pos) return false;
    if (pos != permuted_from_) { // 32-bit where the slots fit: half the map's traffic
      const std::int64_t n = std::int64_t(slot_.size());
      if (data.size() < std::size_t(std::numeric_limits<std::int32_t>::max())) {
        BigVector<offset_t>().swap(permuted_);
        permuted32_.resize(slot_.size());
#pragma omp parallel for schedule(static) if (n > (1 << 16))
        for (std::int64_t e = 0; e < n; ++e) permuted32_[std::size_t(pos[e])] = std::int32_t(slot_[std::size_t(e)]);
      } else {
        BigVector<std::int32_t>().swap(permuted32_);
        permuted_.resize(slot_.size());
#pragma omp parallel for schedule(static) if (n > (1 << 16))
        for (std::int64_t e = 0; e < n; ++e) permuted_[std::size_t(pos[e])] = slot_[std::size_t(e)];
      }
      permuted_from_ = pos;
    }
    const auto scatter = [&](auto *dst) {
      if (permuted32_.empty()) kernels::scatter_values(*cpu_executor(), nnz_, permuted_.data(), values, dst);
      else kernels::scatter_values(*cpu_executor(), nnz_, permuted32_.data(), values, dst);
    };
    scatter(data.data());
    if constexpr (keeps_fp64) scatter(own64_->matrix().data.data());
    return true;
  }
  // CPU, bs = Nc: BAIJ's blocks straight into the BDIA-GH slots (bdia_values_from_blocks):
  // no map to read or to compose, the offset found once per block
  bool refresh_blocks(const BlockCsrView &b) override
  {
    Array<MT>  &data = own_->matrix().data;
    const auto &mat  = own_->matrix();
    if (!data.on_host() || b.block_size != mat.block_size || b.nnz() != nnz_ || b.rows() != mat.rows || !b.block_ptr || !b.block_col || !b.values) return false;
    put_blocks(b, mat.block_offsets, data.data(), "(values-only refresh: the pattern is not the build's)");
    if constexpr (keeps_fp64) put_blocks(b, mat.block_offsets, own64_->matrix().data.data(), "(values-only refresh: the pattern is not the build's)");
    return true;
  }
  // GPU: the values go up in their own order (PinnedUpload) into pvalues_, a kernel puts them
  // into CSR order in values_ (the CSR values the preconditioner's numeric part reads), then
  // the usual scatter into the BDIA slots. A block CSR array (block_size > 0) over the pattern
  // kept on the device (ptr_): by block_values_to_csr's formula, no map; otherwise through the
  // inverse of pos, made and uploaded once (nnz 32-bit positions of device memory more). Costs
  // nnz doubles of device memory more; where they cannot be had, false (the caller gathers on
  // the host as before).
  bool refresh_permuted_device(const double *values, const index_t *pos, index_t block_size, MT *dst)
  {
    if (values_.empty()) return false;
    device_refresh_     = false;
    const auto &exec    = values_.exec();
    const bool  formula = block_size > 0 && !ptr_.empty() && (ptr_.size() - 1) % std::size_t(block_size) == 0;
    if (!formula && !pos) return false;
    if (formula ? pvalues_.empty() || !inv_.empty() : pos != permuted_from_) {
      try {
        if (formula) inv_ = Array<std::int32_t>();
        else {
          BigVector<std::int32_t> inv(static_cast<std::size_t>(nnz_));
          const std::int64_t      n = std::int64_t(nnz_);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
          for (std::int64_t e = 0; e < n; ++e) inv[std::size_t(pos[e])] = std::int32_t(e);
          inv_ = Array<std::int32_t>(exec, inv.size());
          upload_->upload(inv.data(), inv_.data(), inv_.bytes());
        }
        if (pvalues_.empty()) pvalues_ = Array<double>(exec, std::size_t(nnz_));
      } catch (const std::exception &) { // no room on the device: gather on the host instead
        inv_           = Array<std::int32_t>();
        pvalues_       = Array<double>();
        permuted_from_ = nullptr;
        return false;
      }
      permuted_from_ = formula ? nullptr : pos;
    }
    upload_->reset_stats();
    if (!upload_->upload_registered(values, pvalues_.data(), pvalues_.bytes(), this->values_key, this->register_after)) upload_->upload(values, pvalues_.data(), pvalues_.bytes());
    const double *pv = pvalues_.data();
    double       *v  = values_.data();
    dispatch_executor(*exec, [&](const auto &e) {
      if (formula) kernels::block_values_to_csr(e, index_t(ptr_.size() - 1), block_size, ptr_.data(), pv, v);
      else kernels::scatter_values(e, nnz_, inv_.data(), pv, v);
      scatter_slots(e, v, dst);
      if constexpr (keeps_fp64) scatter_slots(e, v, own64_->matrix().data.data());
    });
    return true;
  }
  std::shared_ptr<const Operator<double>> op_fp64() const override
  {
    return own64_;
  }
  const Bdia<double> *host_bdia() const override
  {
    if (!own_ || !own_->executor()->is_cpu()) return nullptr;
    if constexpr (std::is_same_v<MT, double>) return &own_->matrix();
    else if constexpr (keeps_fp64) return own64_ && own64_->matrix().data.on_host() ? &own64_->matrix() : nullptr;
    else return nullptr;
  }
  std::string note() const override
  {
    const std::string what = "values scattered through the CSR->BDIA slot map (" + std::to_string(nnz_) + " entries)";
    if (values_.empty() && !plan_.runs.empty())
      return "values copied row by row: " + std::to_string(plan_.full_entries()) + " of " + std::to_string(nnz_) + " entries in rows that hold every slot of the block offsets (no map read), the others through the CSR->BDIA slot map";
    if (values_.empty()) return what;
    std::ostringstream o;
    if (device_refresh_) {
      o << what << " on the device, after a device-to-device copy of the caller's CSR values, which were on this GPU already (PETSc's aijcusparse): no host copy, no upload";
      return o.str();
    }
    o << what << " on the device, after " << (upload_->stats().registered_bytes > 0 ? "an upload of the CSR values" : "a pinned, chunked upload of the CSR values");
    if (slot_ms_ > 0) o << "; at the first build the pattern went up and the slot map was computed on the device in " << slot_ms_ << " ms, the values went up and were scattered in " << values_ms_ << " ms";
    o << upload_note(*upload_);
    return o.str();
  }
  std::shared_ptr<const Operator<VT>> right_scaled(const VT *binv, index_t b, const std::shared_ptr<const Operator<VT>> &reuse) const override
  {
    const Bdia<MT> &a = own_->matrix();
    if (b < 1 || a.block_size % b != 0) return nullptr;
    // Nc = 1 (point Jacobi): a_ii (1/a_ii) is 1 to an ulp, so the main diagonal is written as
    // exactly 1 and the product adds x there instead of reading it (8 bytes a row fewer)
    const bool unit = b == 1 && a.block_size == 1 && a.main_block_diagonal() >= 0 && unit_diagonal_allowed();
    // the tuned CUDA product skips the reads for 7 block diagonals, offset 0 in the middle
    const bool skips = unit && own_->executor()->is_cuda() && a.num_block_diagonals() == 7 && a.main_block_diagonal() == 3;
    auto       out   = std::dynamic_pointer_cast<const OpT>(reuse);
    if (!out || out->matrix().data.size() != a.data.size() || out->matrix().block_offsets != a.block_offsets || out->executor() != own_->executor()) {
      Bdia<MT> m;
      m.rows          = a.rows;
      m.cols          = a.cols;
      m.block_size    = a.block_size;
      m.block_offsets = a.block_offsets;
      m.data          = Array<MT>(a.data.exec(), a.data.size());
      out             = std::make_shared<OpT>(std::move(m), a.rows, own_->executor(),
                                  own_->describe() + ", right-scaled by the block-Jacobi inverse" +
                                    (!unit   ? ""
                                                 : skips ? " (its diagonal exactly 1, added by the product without reading it)"
                                                         : " (its diagonal exactly 1)"));
    }
    // the operator is ours (made here): writable
    Bdia<MT> &dst = const_cast<OpT &>(*out).matrix();
    dispatch_executor(*own_->executor(), [&](const auto &e) { kernels::bdia_right_scale(e, a, b, binv, dst, unit); });
    return out;
  }
  const double *device_values() const override
  {
    return values_.empty() ? nullptr : values_.data();
  }
  CsrPatternView device_pattern() const override
  {
    CsrPatternView p;
    if (ptr_.empty()) return p;
    p.rows        = index_t(ptr_.size() - 1);
    p.row_ptr32   = ptr_.data();
    p.col_idx     = col_.data();
    p.on_executor = true;
    return p;
  }
  // mixed: the same values into the fp64 matrix (on a GPU from the device copy just uploaded;
  // on the CPU from host_values)
  void scatter_fp64(const double *host_values)
  {
    double *dst = own64_->matrix().data.data();
    if (own64_->matrix().data.on_host()) {
      host_scatter(host_values, dst);
      return;
    }
    dispatch_executor(*values_.exec(), [&](const auto &e) { scatter_slots(e, values_.data(), dst); });
  }
  // CPU: the copy plan of the pattern a (runs of full rows copied without the map) where most
  // entries are in such rows; else none, and the host copies go through the slot map
  void make_plan(const CsrView &a, index_t width)
  {
    plan_ = kernels::bdia_csr_copy_plan(a.rows, width, a.row_ptr, slot_.data());
    if (2 * plan_.full_entries() < nnz_) plan_ = kernels::BdiaCsrCopyPlan();
  }
  // CPU: the CSR values (the pattern's order) into the BDIA slots dst
  template <class T>
  void host_scatter(const double *values, T *dst) const
  {
    if (!plan_.runs.empty()) kernels::bdia_values_from_csr(*cpu_executor(), plan_, values, dst);
    else kernels::scatter_values(*cpu_executor(), nnz_, slot_.data(), values, dst);
  }
  // the CSR values v (device) through the slot map into the BDIA slots dst
  template <class E, class T>
  void scatter_slots(const E &e, const double *v, T *dst) const
  {
    if (slot32_.empty()) kernels::scatter_values(e, nnz_, slot64_.data(), v, dst);
    else kernels::scatter_values(e, nnz_, slot32_.data(), v, dst);
  }
  bool mark_values(const void *values, std::size_t bytes, std::uint64_t key) override
  {
    return upload_ && !values_.empty() && bytes == values_.bytes() && upload_->mark(values, bytes, key);
  }
  // PETSc's values up into values_, then scattered on the device into dst
  void scatter_device(const CsrView &a, MT *dst)
  {
    upload_->reset_stats();
    if (!upload_->upload_registered(a.values, values_.data(), values_.bytes(), this->values_key, this->register_after)) upload_->upload(a.values, values_.data(), values_.bytes());
    dispatch_executor(*values_.exec(), [&](const auto &e) { scatter_slots(e, values_.data(), dst); });
  }

  static constexpr bool keeps_fp64 = !std::is_same_v<MT, double> && std::is_same_v<VT, double>;
  using Op64                       = FormatOperator<Bdia<double>, double, double>;
  std::shared_ptr<OpT>          own_;   // the operator, writable (TypedStore::op_ is the same object)
  std::shared_ptr<Op64>         own64_; // mixed: the fp64 matrix (op_fp64)
  offset_t                      nnz_ = 0;
  std::vector<offset_t>         slot_;                    // CPU: the slot map
  kernels::BdiaCsrCopyPlan      plan_;                    // CPU: the copy by runs of full rows (make_plan), or none
  BigVector<offset_t>           permuted_;                // CPU: slot_ through refresh_permuted's pos
  BigVector<std::int32_t>       permuted32_;              //   (one of the two: 32-bit where slots fit)
  const index_t                *permuted_from_ = nullptr; // that pos
  Array<std::int32_t>           inv_;                     // GPU: pos's inverse (refresh_permuted)
  Array<double>                 pvalues_;                 // GPU: the values in pos's order
  Array<std::int32_t>           slot32_;                  // GPU: the slot map (one of the two)
  Array<std::int64_t>           slot64_;                  //
  Array<double>                 values_;                  // GPU: the CSR values of the last build/refresh
  Array<index_t>                ptr_, col_;               // GPU (slot map made there): the CSR pattern
  std::shared_ptr<PinnedUpload> upload_;                  // GPU (the executor's, device_pool.hpp)
  double                        slot_ms_        = 0;      // GPU, first build: pattern up + slot map
  double                        values_ms_      = 0;      // GPU, first build: values up + scatter
  bool                          device_refresh_ = false;  // GPU: the last refresh copied the values on the device (refresh_device)
};

// CSR: the pattern is PETSc's, the values are copied in order (on a GPU, fp64: straight from
// PETSc's array through PinnedUpload, and the device values are the CSR values the
// preconditioner's numeric part reads; fp32: converted on the host, then uploaded).
template <class MT, class VT>
struct CsrStore final : TypedStore<VT> {
  using OpT = FormatOperator<Csr<MT>, MT, VT>;
  CsrStore(const CsrView &a, const std::shared_ptr<const Executor> &exec)
  {
    Csr<MT> m;
    m.rows = m.cols = a.rows;
    std::vector<offset_t> ptr(std::size_t(a.rows) + 1);
    for (index_t r = 0; r <= a.rows; ++r) ptr[std::size_t(r)] = a.row_ptr[r];
    m.row_ptr = Array<offset_t>(std::move(ptr));
    m.col_idx = Array<index_t>(std::vector<index_t>(a.col_idx, a.col_idx + a.nnz()));
    if (exec->is_cpu()) {
      m.values = Array<MT>(std::vector<MT>(std::size_t(a.nnz())));
      copy_in(a, m.values.host().data());
    } else {
      m.row_ptr = m.row_ptr.to(exec);
      m.col_idx = m.col_idx.to(exec);
      m.values  = Array<MT>(exec, std::size_t(a.nnz()));
      put(a, m.values);
    }
    std::ostringstream d;
    d << "csr " << a.rows << 'x' << a.rows << " nnz=" << a.nnz() << ' ' << precision_name<MT, VT>() << " on " << exec->name();
    own_      = std::make_shared<OpT>(std::move(m), a.rows, exec, d.str());
    this->op_ = own_;
  }
  void refresh(const CsrView &a) override
  {
    Array<MT> &v = own_->matrix().values;
    HEPTANE_ENSURE(std::size_t(a.nnz()) == v.size(), InputError, "values-only refresh: " << a.nnz() << " entries, the pattern had " << v.size());
    if (v.on_host()) copy_in(a, v.host().data());
    else put(a, v);
  }
  std::string    note() const override { return upload_ ? "CSR values uploaded in place" + upload_note(*upload_) : "CSR values copied in place"; }
  CsrPatternView device_pattern() const override
  {
    CsrPatternView p;
    const Csr<MT> &m = own_->matrix();
    if (m.row_ptr.on_host()) return p;
    p.rows        = m.rows;
    p.row_ptr64   = m.row_ptr.data();
    p.col_idx     = m.col_idx.data();
    p.on_executor = true;
    return p;
  }
  const double *device_values() const override
  {
    if constexpr (std::is_same_v<MT, double>) {
      const Array<MT> &v = own_->matrix().values;
      return v.on_host() ? nullptr : v.data();
    }
    return nullptr;
  }
  bool mark_values(const void *values, std::size_t bytes, std::uint64_t key) override { return upload_ && bytes == own_->matrix().values.bytes() && upload_->mark(values, bytes, key); }
  // the values into v on the device
  void put(const CsrView &a, Array<MT> &v)
  {
    if constexpr (std::is_same_v<MT, double>) {
      if (!upload_) upload_ = shared_pinned_upload(v.exec());
      upload_->reset_stats();
      if (!upload_->upload_registered(a.values, v.data(), v.bytes(), this->values_key, this->register_after)) upload_->upload(a.values, v.data(), v.bytes());
    } else {
      staging_.resize(v.size());
      copy_in(a, staging_.data());
      put_values(v, staging_);
    }
  }
  static void copy_in(const CsrView &a, MT *dst)
  {
    const offset_t nnz = a.nnz();
    if constexpr (std::is_same_v<MT, double>) {
      std::memcpy(dst, a.values, sizeof(double) * std::size_t(nnz));
    } else {
#pragma omp parallel for schedule(static) if (nnz > 65536)
      for (offset_t k = 0; k < nnz; ++k) dst[k] = MT(a.values[k]);
    }
  }
  std::shared_ptr<OpT>          own_; // the operator, writable (TypedStore::op_ is the same object)
  std::vector<MT>               staging_;
  std::shared_ptr<PinnedUpload> upload_; // GPU, fp64 (the executor's, device_pool.hpp)
};

// The CPU, fp64: PETSc's BAIJ arrays themselves as the operator (BlockCsrView: block columns
// ascending, each block column-major), borrowed, not copied. A new pattern copies nothing, and
// a values-only refresh only takes the arrays PETSc hands over then: the product reads the
// values where the host assembled them, as PETSc's own MatMult does. The block column index
// costs 4 bytes a block (12.5 % of the values' bytes at bs = 2, 5.6 % at bs = 3) against
// BDIA-GH, which stores none but needs the copy (MatrixEngine::build_blocks decides by
// borrow_min_block_size).
class BorrowedBlocksOperator final : public Operator<double> {
public:
  BorrowedBlocksOperator(const BlockCsrView &b, std::shared_ptr<const Executor> exec) : b_(b), blocks_(b.block_ptr[b.block_rows]), exec_(std::move(exec)) { }
  void                            set(const BlockCsrView &b) noexcept { b_ = b; }
  const BlockCsrView             &view() const noexcept { return b_; }
  index_t                         rows() const override { return b_.rows(); }
  index_t                         cols() const override { return b_.rows(); }
  std::shared_ptr<const Executor> executor() const override { return exec_; }
  std::string                     describe() const override
  {
    std::ostringstream d;
    d << "PETSc's BAIJ blocks in place " << b_.rows() << 'x' << b_.rows() << " bs=" << b_.block_size << " blocks=" << blocks_ << " fp64 on " << exec_->name(); // not read from PETSc's arrays, which may be gone by now
    return d.str();
  }
  void apply(double alpha, const double *x, double beta, double *y) const override
  {
    switch (b_.block_size) {
    case 1:
      return run<1>(alpha, x, beta, y);
    case 2:
      return run<2>(alpha, x, beta, y);
    case 3:
      return run<3>(alpha, x, beta, y);
    case 4:
      return run<4>(alpha, x, beta, y);
    case 5:
      return run<5>(alpha, x, beta, y);
    case 6:
      return run<6>(alpha, x, beta, y);
    case 7:
      return run<7>(alpha, x, beta, y);
    case 8:
      return run<8>(alpha, x, beta, y);
    default:
      return run<0>(alpha, x, beta, y);
    }
  }
  void apply_transpose(double, const double *, double, double *) const override { HEPTANE_THROW(NotSupported, "the transpose of PETSc's BAIJ blocks in place (heptane's KSPs apply A only)"); }

private:
  // one block row a thread's iteration; B = the block size known at compile time (0: any)
  template <int B>
  void run(double alpha, const double *x, double beta, double *y) const
  {
    const index_t  bs  = B > 0 ? B : b_.block_size;
    const index_t  nb  = b_.block_rows;
    const index_t *ptr = b_.block_ptr, *col = b_.block_col;
    const double  *val = b_.values;
#pragma omp parallel for schedule(static) if (nb > 2048)
    for (index_t ib = 0; ib < nb; ++ib) {
      double *yb = y + std::size_t(ib) * std::size_t(bs);
      if constexpr (B > 0) {
        double acc[B] = {};
        for (index_t k = ptr[ib]; k < ptr[ib + 1]; ++k) {
          const double *v  = val + std::size_t(k) * (B * B);
          const double *xb = x + std::size_t(col[k]) * B;
          for (int c = 0; c < B; ++c)
            for (int r = 0; r < B; ++r) acc[r] += v[c * B + r] * xb[c];
        }
        for (int r = 0; r < B; ++r) yb[r] = beta == 0.0 ? alpha * acc[r] : alpha * acc[r] + beta * yb[r];
      } else {
        for (index_t r = 0; r < bs; ++r) {
          double s = 0;
          for (index_t k = ptr[ib]; k < ptr[ib + 1]; ++k) {
            const double *v  = val + std::size_t(k) * std::size_t(bs * bs);
            const double *xb = x + std::size_t(col[k]) * std::size_t(bs);
            for (index_t c = 0; c < bs; ++c) s += v[c * bs + r] * xb[c];
          }
          yb[r] = beta == 0.0 ? alpha * s : alpha * s + beta * yb[r];
        }
      }
    }
  }
  BlockCsrView                    b_;
  index_t                         blocks_; // b_'s blocks at the build
  std::shared_ptr<const Executor> exec_;
};

// The store of a BorrowedBlocksOperator: a values-only refresh takes the block CSR view PETSc
// gives now (same block size, block rows and blocks; the caller's nonzero state says the
// pattern is the build's) and copies nothing. A scalar CSR cannot be borrowed as blocks, so
// refresh(CsrView) is refused (the KSP rebuilds instead: it never asks, since its refresh of a
// BAIJ matrix on the CPU takes refresh_blocks).
struct BorrowedBlocksStore final : TypedStore<double> {
  BorrowedBlocksStore(const BlockCsrView &b, const std::shared_ptr<const Executor> &exec) : own_(std::make_shared<BorrowedBlocksOperator>(b, exec)) { this->op_ = own_; }
  void refresh(const CsrView &) override { HEPTANE_THROW(NotSupported, "a values-only refresh from scalar CSR of an operator that borrows PETSc's BAIJ blocks (refresh from the blocks, or build again)"); }
  bool refresh_blocks(const BlockCsrView &b) override
  {
    const BlockCsrView &o = own_->view();
    if (b.block_size != o.block_size || b.block_rows != o.block_rows || b.nnz() != o.nnz() || !b.block_ptr || !b.block_col || !b.values) return false;
    own_->set(b);
    return true;
  }
  std::string                             note() const override { return "nothing copied: the operator reads PETSc's BAIJ array in place (a refresh takes PETSc's arrays as they are now)"; }
  std::shared_ptr<BorrowedBlocksOperator> own_;
};

// Any other format: built once from COO by make_matrix_operator, with the block size and the
// block offsets already known (no detection); a refresh copies the new values through the
// operator's slot map (MatrixOperator::update_values, formats/matrix_operator.hpp), in place.
template <class MT, class VT>
struct FormatStore final : TypedStore<VT> {
  FormatStore(const CsrView &a, Format f, const FormatOptions &opt, const std::shared_ptr<const Executor> &exec) : own_(make_matrix_operator<MT, VT>(a, f, exec, opt)) { this->op_ = own_; }
  void                                refresh(const CsrView &a) override { own_->update_values(a.values, a.nnz()); }
  std::string                         note() const override { return std::string(to_string(own_->format())) + " built once from COO (block size and offsets kept); values copied in place through its slot map (made at the first refresh)"; }
  std::shared_ptr<MatrixOperator<VT>> own_;
};

template <class MT, class VT>
std::unique_ptr<StoreBase> make_store(const CsrView &a, Format f, index_t nc, const std::vector<index_t> &offsets, const std::shared_ptr<const Executor> &exec, const std::string &where)
{
  switch (f) {
  case Format::bdia:
    return std::make_unique<BdiaStore<MT, VT>>(a, nc, offsets, exec, where);
  case Format::csr:
    return std::make_unique<CsrStore<MT, VT>>(a, exec);
  default: {
    FormatOptions opt;
    opt.block_size = nc;
    return std::make_unique<FormatStore<MT, VT>>(a, f, opt, exec);
  }
  }
}

} // namespace

// ---- MatrixEngine ------------------------------------------------------------------------------

// What a build leaves in the engine (build, build_blocks), after the store is made.
static void record_build(MatrixEngine::Impl &m, const MatrixConfig &cfg, const std::string &device, const std::shared_ptr<const Executor> &exec, Format f, index_t n, offset_t nnz, index_t nc, std::vector<index_t> offsets, const std::array<index_t, 3> &grid, std::string note, double detect_ms, clock_type::time_point t0)
{
  exec->synchronize();
  m.cfg                    = cfg;
  m.device                 = device;
  m.exec                   = exec;
  m.format                 = f;
  m.rows                   = n;
  m.nnz                    = nnz;
  m.nc                     = nc;
  m.offsets                = std::move(offsets);
  m.grid                   = grid;
  m.note                   = std::move(note);
  m.distributed            = false;
  m.row_begin              = 0;
  m.global_rows            = n;
  m.ranks                  = 1;
  m.timings.last_detect_ms = detect_ms;
  m.timings.last_build_ms  = ms_since(t0);
  ++m.timings.builds;
}

MatrixEngine::MatrixEngine() : impl_(std::make_unique<Impl>()) { }
MatrixEngine::~MatrixEngine() = default;

static void build_csr(MatrixEngine::Impl &m, const CsrView &a, const GridHint &hint, const MatrixConfig &cfg, bool use_grid, const std::string &prefix, clock_type::time_point t0)
{
  m.store.reset(); // free the old operator (device memory) before building the new one
  m.csr_values              = nullptr;
  const index_t          n  = a.rows;
  index_t                nc = 1;
  std::vector<index_t>   offsets;
  std::array<index_t, 3> grid{0, 0, 0};
  std::string            detected_format;
  std::ostringstream     note;
  double                 detect_ms = 0;

  note << prefix;
  if (use_grid) {
    // The grid is given (a DMDA or -heptane_grid): no detection.
    nc                   = hint.block_size > 0 ? hint.block_size : 1;
    grid                 = hint.grid;
    const offset_t cells = offset_t(grid[0]) * grid[1] * grid[2];
    HEPTANE_ENSURE(cells * nc == offset_t(n), InputError, "the grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " with Nc = " << nc << " (" << hint.source << ") has " << cells * nc << " unknowns, the matrix " << n << " rows");
    offsets         = hint.star_stencil ? star_offsets(grid) : pattern_block_offsets(a, nc);
    detected_format = "bdiagh";
    note << "grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " Nc=" << nc << " from " << hint.source << " (" << (hint.star_stencil ? "star stencil" : "offsets from the pattern") << ", no detection)";
  } else {
    const auto      td = clock_type::now();
    const Structure s  = detect_structure(a); // on PETSc's arrays, no copy
    detect_ms          = ms_since(td);
    nc                 = s.block_size;
    if (hint.block_size > 0 && hint.block_size != nc) {
      HEPTANE_ENSURE(n % hint.block_size == 0, InputError, "block size " << hint.block_size << " (" << hint.source << ") does not divide the " << n << " rows");
      nc      = hint.block_size;
      offsets = pattern_block_offsets(a, nc);
    } else {
      offsets = s.block_offsets;
    }
    if (s.grid_dims > 0) grid = s.grid;
    detected_format = to_string(s.format);
    note << "detected: Nc=" << nc << " D=" << offsets.size();
    if (s.grid_dims > 0) note << " grid " << s.grid[0] << "x" << s.grid[1] << "x" << s.grid[2];
    note << "; " << s.format_reason;
  }

  const Format f = cfg.format == "auto" ? parse_format(detected_format) : parse_format(cfg.format);
  if (f == Format::bdia || f == Format::bsr) HEPTANE_ENSURE(n % nc == 0, InputError, "block size " << nc << " does not divide the " << n << " rows");
  // the process's executor of the device (CUDA stream and handles; device_pool.hpp), kept for
  // the life of the engine unless the device changes
  const std::string  device = resolve_device(cfg.device, a.nnz(), cpu_executor()->threads(), &m.device_why);
  const auto         exec   = m.exec && device == m.device ? m.exec : shared_executor(device);
  std::ostringstream where;
  where << "(" << (use_grid ? hint.source : std::string("detected")) << ")";
  switch (cfg.precision) {
  case Precision::double_:
    m.store = make_store<double, double>(a, f, nc, offsets, exec, where.str());
    break;
  case Precision::single:
    m.store = make_store<float, float>(a, f, nc, offsets, exec, where.str());
    break;
  case Precision::mixed:
    m.store = make_store<float, double>(a, f, nc, offsets, exec, where.str());
    break;
  }
  record_build(m, cfg, device, exec, f, n, a.nnz(), nc, std::move(offsets), grid, note.str(), detect_ms, t0);
  m.csr_values = a.values;
}

// A DMDA's star stencil that the pattern leaves (an entry off its block offsets: a well's
// long-range coupling, say) is no grid for the operator: with -heptane_format auto the structure
// is then detected as for a matrix without one. A grid the user named (-heptane_grid) or
// -heptane_format bdiagh stays strict: the slot map's error names the entry.
void MatrixEngine::build(const CsrView &a, const GridHint &hint, const MatrixConfig &cfg)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  if (!(hint.has_grid() && hint.star_stencil && hint.source == "DMDA" && cfg.format == "auto")) {
    build_csr(m, a, hint, cfg, hint.has_grid(), std::string(), t0);
    return;
  }
  std::string off;
  try {
    build_csr(m, a, hint, cfg, true, std::string(), t0);
    return;
  } catch (const InputError &e) {
    off = e.what();
    if (off.find("not one of the block offsets") == std::string::npos) throw;
  }
  std::ostringstream prefix;
  prefix << "the DMDA's " << hint.grid[0] << "x" << hint.grid[1] << "x" << hint.grid[2] << " star stencil does not hold the pattern (" << off.substr(0, off.find(", not one of")) << "), so the structure was detected: ";
  build_csr(m, a, hint, cfg, false, prefix.str(), t0);
}

// A grid (DMDA or -heptane_grid) with its star stencil, BDIA-GH: the operator straight from the
// block CSR arrays (BdiaStore's block constructor), expanded on a GPU, or on the CPU (Nc = the
// block size) each block put into its slots; else false and nothing changed (the caller builds
// from a host CsrView).
bool MatrixEngine::build_blocks(const BlockCsrView &b, const GridHint &hint, const MatrixConfig &cfg, bool allow_cpu, bool allow_gpu)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  if (b.block_size < 1 || b.block_rows < 1) return false;
  m.csr_values                      = nullptr;
  const index_t                n    = b.rows();
  const index_t                nc   = hint.block_size > 0 ? hint.block_size : 1;
  const std::array<index_t, 3> grid = hint.grid;
  if (hint.has_grid() && (offset_t(grid[0]) * grid[1] * grid[2] * nc != offset_t(n) || n % nc != 0)) return false; // build() says what is wrong
  // the CPU, fp64, format auto: PETSc's arrays themselves as the operator (no copy at all),
  // with or without a grid
  const bool        borrow = allow_cpu && cfg.precision == Precision::double_ && cfg.format == "auto" && b.block_size >= borrow_min_block_size;
  std::string       why;
  const std::string device = resolve_device(cfg.device, b.nnz(), cpu_executor()->threads(), &why);
  if (borrow && device == "cpu") {
    m.store.reset();
    m.device_why    = why;
    const auto exec = m.exec && device == m.device ? m.exec : shared_executor(device);
    m.store         = std::make_unique<BorrowedBlocksStore>(b, exec);
    std::ostringstream note;
    if (hint.has_grid()) note << "grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " Nc=" << nc << " from " << hint.source << "; ";
    note << "block CSR with bs = " << b.block_size << " read in place on the host as the operator (PETSc's BAIJ arrays: no copy, no detection)";
    record_build(m, cfg, device, exec, Format::bsr, n, b.nnz(), b.block_size, hint.has_grid() && hint.star_stencil ? star_offsets(grid) : std::vector<index_t>{}, hint.has_grid() ? grid : std::array<index_t, 3>{0, 0, 0}, note.str(), 0, t0);
    return true;
  }
  if (!hint.has_grid() || !hint.star_stencil) return false;
  if (cfg.format != "auto" && parse_format(cfg.format) != Format::bdia) return false;
  std::vector<index_t> offsets = star_offsets(grid);
  if (index_t(offsets.size()) > kernels::bdia_slots_max_offsets) return false;
  if (device == "cpu" ? !allow_cpu || nc != b.block_size : !allow_gpu) return false; // the CPU reads the blocks straight into the slots: Nc = bs only
  m.store.reset();                                                                   // free the old operator (device memory) before building the new one
  m.device_why            = why;
  const auto        exec  = m.exec && device == m.device ? m.exec : shared_executor(device);
  const std::string where = "(" + hint.source + ")";
  try {
    switch (cfg.precision) {
    case Precision::double_:
      m.store = std::make_unique<BdiaStore<double, double>>(b, nc, offsets, exec, where);
      break;
    case Precision::single:
      m.store = std::make_unique<BdiaStore<float, float>>(b, nc, offsets, exec, where);
      break;
    case Precision::mixed:
      m.store = std::make_unique<BdiaStore<float, double>>(b, nc, offsets, exec, where);
      break;
    }
  } catch (const InputError &e) {
    // a block off the DMDA's star stencil (a well's long-range coupling): as build() does for
    // the scalar CSR, -heptane_format auto detects the structure instead -- the caller builds
    // from the scalar CSR, whose build says so; a grid the user named stays strict
    if (!(hint.source == "DMDA" && cfg.format == "auto") || std::string(e.what()).find("not one of the block offsets") == std::string::npos) throw;
    m.store.reset();
    return false;
  }
  std::ostringstream note;
  note << "grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " Nc=" << nc << " from " << hint.source << " (star stencil, no detection; block CSR with bs = " << b.block_size << (device == "cpu" ? " read block by block into the BDIA-GH slots on the host)" : " expanded on the device)");
  record_build(m, cfg, device, exec, Format::bdia, n, b.nnz(), nc, std::move(offsets), grid, note.str(), 0, t0);
  return true;
}

namespace
{
// f() with the store's values_key and register_after set (PinnedUpload::upload_registered reads
// them during the refresh), the key cleared after, also when f throws
template <class F>
auto with_values_key(StoreBase &s, std::uint64_t key, int after, F &&f)
{
  struct Clear {
    StoreBase &s;
    ~Clear() { s.values_key = 0; }
  } clear{s};
  s.values_key     = key;
  s.register_after = after;
  return f();
}
} // namespace

void MatrixEngine::refresh_values(const CsrView &a, std::uint64_t values_key, int register_after)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  HEPTANE_ENSURE(m.store, InputError, "values-only refresh before the first build");
  HEPTANE_ENSURE(a.rows == m.rows && a.nnz() == m.nnz, InputError, "values-only refresh: the matrix is " << a.rows << " rows / " << a.nnz() << " entries, the pattern had " << m.rows << " / " << m.nnz);
  with_values_key(*m.store, values_key, register_after, [&] { m.store->refresh(a); });
  m.exec->synchronize(); // a registered array is read by the copy engine: done before the caller may change it
  m.csr_values              = a.values;
  m.timings.last_refresh_ms = ms_since(t0);
  ++m.timings.refreshes;
}

bool MatrixEngine::mark_values(const double *values, offset_t nnz, std::uint64_t values_key)
{
  const Impl &m = *impl_;
  return m.store && !m.distributed && values && m.store->mark_values(values, sizeof(double) * std::size_t(nnz), values_key);
}

bool MatrixEngine::refresh_values_blocks(const BlockCsrView &b)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  HEPTANE_ENSURE(m.store, InputError, "values-only refresh before the first build");
  m.csr_values = nullptr;
  HEPTANE_ENSURE(b.nnz() == m.nnz, InputError, "values-only refresh: " << b.nnz() << " entries, the pattern had " << m.nnz);
  if (m.distributed || !m.store->refresh_blocks(b)) return false;
  m.timings.last_refresh_ms = ms_since(t0);
  ++m.timings.refreshes;
  return true;
}

bool MatrixEngine::refresh_values_device(const double *values, offset_t nnz)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  HEPTANE_ENSURE(m.store, InputError, "values-only refresh before the first build");
  m.csr_values = nullptr;
  HEPTANE_ENSURE(nnz == m.nnz, InputError, "values-only refresh: " << nnz << " entries, the pattern had " << m.nnz);
  if (m.distributed || !m.store->refresh_device(values)) return false;
  m.exec->synchronize();
  m.timings.last_refresh_ms = ms_since(t0);
  ++m.timings.refreshes;
  return true;
}

bool MatrixEngine::refresh_values_blocks(const DistBlocksView &b)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  HEPTANE_ENSURE(m.store, InputError, "values-only refresh before the first build");
  m.csr_values = nullptr;
  if (!m.distributed || !m.store->refresh_dist_blocks(b)) return false;
  m.timings.last_refresh_ms = ms_since(t0);
  ++m.timings.refreshes;
  return true;
}

bool MatrixEngine::refresh_values_permuted(const double *values, const index_t *pos, offset_t nnz, index_t block_size, std::uint64_t values_key, int register_after)
{
  const auto t0 = clock_type::now();
  Impl      &m  = *impl_;
  HEPTANE_ENSURE(m.store, InputError, "values-only refresh before the first build");
  m.csr_values = nullptr;
  HEPTANE_ENSURE(nnz == m.nnz, InputError, "values-only refresh: " << nnz << " entries, the pattern had " << m.nnz);
  if (m.distributed || !with_values_key(*m.store, values_key, register_after, [&] { return m.store->refresh_permuted(values, pos, block_size); })) return false;
  m.exec->synchronize(); // a registered array is read by the copy engine: done before the caller may change it
  m.timings.last_refresh_ms = ms_since(t0);
  ++m.timings.refreshes;
  return true;
}

#ifndef HEPTANE_PLUGIN_DISTRIBUTED
SymmetryCheck check_symmetry_ranks(MPI_Comm, const CsrView &, const CsrView &, const index_t *, index_t, double)
{
  HEPTANE_THROW(NotSupported, "this build of the plugin has no distributed library: no symmetry check over the ranks");
}
void MatrixEngine::build_distributed(const CsrView &, index_t, MPI_Comm, const GridHint &, const MatrixConfig &)
{
  HEPTANE_THROW(NotSupported, "this build of the plugin has no distributed operator (heptane_distributed was not built: configure with MPI and HEPTANE_WITH_MPI=ON); run on one MPI rank");
}
bool MatrixEngine::build_distributed_blocks(const DistBlocksView &, index_t, MPI_Comm, const GridHint &, const MatrixConfig &)
{
  return false; // build_distributed says why
}
namespace detail
{
template <class VT>
std::unique_ptr<GlobalCoarse<VT>> make_global_coarse(MPI_Comm, std::shared_ptr<const Operator<VT>>, std::shared_ptr<const Operator<VT>>, const CsrView &, const CsrView &, const index_t *, index_t, const GlobalCoarseOptions &)
{
  HEPTANE_THROW(NotSupported, "this build of the plugin has no distributed library: no global coarse correction");
}
template std::unique_ptr<GlobalCoarse<double>> make_global_coarse<double>(MPI_Comm, std::shared_ptr<const Operator<double>>, std::shared_ptr<const Operator<double>>, const CsrView &, const CsrView &, const index_t *, index_t, const GlobalCoarseOptions &);
template std::unique_ptr<GlobalCoarse<float>> make_global_coarse<float>(MPI_Comm, std::shared_ptr<const Operator<float>>, std::shared_ptr<const Operator<float>>, const CsrView &, const CsrView &, const index_t *, index_t, const GlobalCoarseOptions &);
} // namespace detail
#endif

bool MatrixEngine::built() const noexcept
{
  return impl_->store != nullptr;
}
bool MatrixEngine::distributed() const noexcept
{
  return impl_->distributed;
}
int MatrixEngine::ranks() const noexcept
{
  return impl_->ranks;
}
index_t MatrixEngine::row_begin() const noexcept
{
  return impl_->row_begin;
}
index_t MatrixEngine::global_rows() const noexcept
{
  return impl_->global_rows;
}
const MatrixConfig &MatrixEngine::config() const noexcept
{
  return impl_->cfg;
}
Precision MatrixEngine::precision() const noexcept
{
  return impl_->cfg.precision;
}
std::shared_ptr<const Executor> MatrixEngine::executor() const
{
  return impl_->exec;
}
std::shared_ptr<const Operator<double>> MatrixEngine::operator_double() const
{
  return impl_->store ? impl_->store->op_double() : nullptr;
}
std::shared_ptr<const Operator<float>> MatrixEngine::operator_single() const
{
  return impl_->store ? impl_->store->op_single() : nullptr;
}
std::shared_ptr<const Operator<double>> MatrixEngine::operator_fp64() const
{
  return impl_->store ? impl_->store->op_fp64() : nullptr;
}
index_t MatrixEngine::rows() const noexcept
{
  return impl_->rows;
}
offset_t MatrixEngine::nnz() const noexcept
{
  return impl_->nnz;
}
index_t MatrixEngine::block_size() const noexcept
{
  return impl_->nc;
}
const std::vector<index_t> &MatrixEngine::block_offsets() const noexcept
{
  return impl_->offsets;
}
std::array<index_t, 3> MatrixEngine::grid() const noexcept
{
  return impl_->grid;
}
Format MatrixEngine::format() const noexcept
{
  return impl_->format;
}
std::string MatrixEngine::describe() const
{
  if (!impl_->store) return "(not built)";
  const auto d = operator_double();
  return d ? d->describe() : operator_single()->describe();
}
const std::string &MatrixEngine::structure_note() const noexcept
{
  return impl_->note;
}
const std::string &MatrixEngine::device_choice() const noexcept
{
  return impl_->device_why;
}
std::string MatrixEngine::refresh_note() const
{
  return impl_->store ? impl_->store->note() : std::string();
}
const Bdia<double> *MatrixEngine::host_bdia(const double *values) const
{
  const Impl &m = *impl_;
  if (!m.store || m.distributed || !values || values != m.csr_values) return nullptr;
  return m.store->host_bdia();
}
const double *MatrixEngine::csr_values_on_device() const noexcept
{
  return impl_->store ? impl_->store->device_values() : nullptr;
}
CsrPatternView MatrixEngine::csr_pattern_on_device() const
{
  return impl_->store ? impl_->store->device_pattern() : CsrPatternView{};
}
namespace
{
template <class VT>
std::shared_ptr<const Operator<VT>> right_scaled_of(const MatrixEngine::Impl &m, const VT *binv, index_t b, const std::shared_ptr<const Operator<VT>> &reuse)
{
  const auto *t = m.distributed ? nullptr : dynamic_cast<const detail::TypedStore<VT> *>(m.store.get());
  return t && binv ? t->right_scaled(binv, b, reuse) : nullptr;
}
} // namespace
std::shared_ptr<const Operator<double>> MatrixEngine::right_scaled(const double *binv, index_t b, const std::shared_ptr<const Operator<double>> &reuse) const
{
  return right_scaled_of(*impl_, binv, b, reuse);
}
std::shared_ptr<const Operator<float>> MatrixEngine::right_scaled(const float *binv, index_t b, const std::shared_ptr<const Operator<float>> &reuse) const
{
  return right_scaled_of(*impl_, binv, b, reuse);
}
const MatrixTimings &MatrixEngine::timings() const noexcept
{
  return impl_->timings;
}

} // namespace heptane::plugin
