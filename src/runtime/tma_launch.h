// The TMA tensor maps of a launch: a kernel whose signature lists maps
// (TmaMapSpec) gets them encoded from its tensor arguments at every call, since a
// map holds the tensor's address, shape and strides. Encoding goes through the
// driver (or the emulator's layout), so the bytes are kept per (data pointer,
// shape, strides) and a call with the same tensors as a recent one only copies
// 128 bytes per map.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/kernel.h"

namespace tl {

// One map as a kernel argument: the layout of tl::TensorMap / CUtensorMap.
struct alignas(64) TensorMapSlot {
  uint8_t bytes[128];
};

class TmaLaunchMaps {
 public:
  // The maps `specs` of one launch of `sig` (a LaunchSpec's); `emulate`: maps in
  // the CUDA emulator's encoding, no driver needed.
  TmaLaunchMaps(const KernelSignature& sig, std::vector<TmaMapSpec> specs, bool emulate);

  size_t size() const { return specs_.size(); }
  // Encodes map m for the arguments of this call into out[m]. A tensor TMA cannot
  // describe (a base or stride that is not a multiple of 16 bytes) is a UserError
  // naming the argument and the way back to cp.async (tl.disable_tma_lower).
  void encode(const ArgValue* args, TensorMapSlot* out) const;

 private:
  struct Key {
    const void* data = nullptr;
    int ndim = 0;
    std::array<int64_t, 5> shape{}, strides{};
    bool operator==(const Key& o) const {
      return data == o.data && ndim == o.ndim && shape == o.shape && strides == o.strides;
    }
  };
  static constexpr size_t kWays = 4;  // recent tensors remembered per map
  struct Cache {
    std::array<Key, kWays> keys;
    std::array<TensorMapSlot, kWays> maps;
    size_t used = 0, next = 0;
  };

  void encode_one(size_t m, const Key& key, TensorMapSlot& out) const;

  const KernelSignature& sig_;
  std::vector<TmaMapSpec> specs_;
  bool emulate_;
  mutable std::mutex mu_;
  mutable std::vector<Cache> cache_;
};

}  // namespace tl
