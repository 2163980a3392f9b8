// Per-launch TMA maps: the tensor argument's geometry read innermost first, encoded
// by runtime/cuda/tma.cpp, remembered for the next calls with the same tensor.
#include "runtime/tma_launch.h"

#include <cstring>

#include "runtime/cuda/tma.h"

namespace tl {

TmaLaunchMaps::TmaLaunchMaps(const KernelSignature& sig, std::vector<TmaMapSpec> specs, bool emulate)
    : sig_(sig), specs_(std::move(specs)), emulate_(emulate), cache_(specs_.size()) {
  for (const TmaMapSpec& m : specs_) {
    bool ok = m.param >= 0 && m.param < int(sig.params.size()) && sig.params[m.param].is_tensor() &&
              sig.params[m.param].buffer->dtype == m.dtype && sig.params[m.param].buffer.ndim() == m.rank();
    if (!ok)
      throw_user_error({}, str_cat("kernel '", sig.name, "': the TMA map record '", m.str(),
                                   "' does not match the kernel's parameters; the kernel's files are damaged, "
                                   "compile it again"));
  }
}

void TmaLaunchMaps::encode(const ArgValue* args, TensorMapSlot* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t m = 0; m < specs_.size(); ++m) {
    const TensorArg& t = args[specs_[m].param].tensor;
    Key key;
    key.data = t.data;
    key.ndim = t.ndim;
    int64_t compact = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      key.shape[d] = t.shape[d];
      key.strides[d] = t.strides ? t.strides[d] : compact;
      compact *= t.shape[d];
    }
    Cache& c = cache_[m];
    size_t hit = kWays;
    for (size_t i = 0; i < c.used && hit == kWays; ++i)
      if (c.keys[i] == key) hit = i;
    if (hit == kWays) {
      hit = c.next;
      encode_one(m, key, c.maps[hit]);
      c.keys[hit] = key;
      c.used = std::max(c.used, hit + 1);
      c.next = (c.next + 1) % kWays;
    }
    std::memcpy(out[m].bytes, c.maps[hit].bytes, sizeof out[m].bytes);
  }
}

void TmaLaunchMaps::encode_one(size_t m, const Key& key, TensorMapSlot& out) const {
  const TmaMapSpec& spec = specs_[m];
  std::memset(out.bytes, 0, sizeof out.bytes);
  const int rank = key.ndim;
  for (int d = 0; d < rank; ++d)
    if (key.shape[d] == 0) return;  // an empty tensor: no copy can touch it, and TMA cannot describe it
  TensorMapParams p;
  p.dtype = spec.dtype;
  p.base = uint64_t(uintptr_t(key.data));
  const uint64_t elem = uint64_t(spec.dtype.bytes());
  uint64_t inner_bytes = elem;  // a compact stride for a size-1 dim, whose stride DLPack leaves free
  for (int d = rank - 1; d >= 0; --d) {
    int i = rank - 1 - d;  // innermost first
    p.dims.push_back(uint64_t(key.shape[d]));
    p.box.push_back(uint32_t(spec.box[i]));
    if (i > 0) p.strides.push_back(key.shape[d] == 1 ? (inner_bytes + 15) / 16 * 16 : uint64_t(key.strides[d]) * elem);
    inner_bytes = uint64_t(key.shape[d]) * (i == 0 ? elem : p.strides.back());
  }
  p.swizzle = tma_swizzle_of_bytes(spec.swizzle_bytes);
  p.l2_promotion = TmaL2Promotion::B128;
  try {
    TensorMapBytes bytes = encode_tensor_map(p, emulate_);
    std::memcpy(out.bytes, bytes.data(), bytes.size());
  } catch (const UserError& e) {
    const Param& param = sig_.params[spec.param];
    throw_user_error({}, str_cat("kernel '", sig_.name, "': argument '", param.name, "' (parameter ", spec.param,
                                 ") is loaded with TMA, which cannot describe this tensor: ", e.bare_message(),
                                 ". Pass a tensor whose data pointer and strides are multiples of 16 bytes, or "
                                 "compile with pass_configs={\"tl.disable_tma_lower\": True} to copy with cp.async"));
  }
}

}  // namespace tl
