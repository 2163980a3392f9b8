// Host-side encoding of TMA tensor maps (device/cuda/tma.cuh): the parameters of
// cuTensorMapEncodeTiled, checked here with errors that name the argument, then
// encoded by the driver for a GPU launch or in the emulator's own layout
// (device/common/tma_map.h) for an emulated one.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/dtype.h"

namespace tl {

// The driver's enum values (CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill).
enum class TmaSwizzle : uint8_t { None = 0, B32 = 1, B64 = 2, B128 = 3 };
enum class TmaL2Promotion : uint8_t { None = 0, B64 = 1, B128 = 2, B256 = 3 };
enum class TmaOobFill : uint8_t { Zero = 0, NanRequestZeroFma = 1 };

// A tiled tensor map; dimension 0 is the innermost (contiguous) one. The
// interleave is always none.
struct TensorMapParams {
  DataType dtype;
  uint64_t base = 0;                   // address of element (0, ..., 0): device memory, or host memory when emulated
  std::vector<uint64_t> dims;          // elements per dimension, rank 1..5
  std::vector<uint64_t> strides;       // bytes between consecutive indices of dimensions 1.. (rank - 1 entries)
  std::vector<uint32_t> box;           // elements one copy traverses per dimension
  std::vector<uint32_t> elem_strides;  // traversal step per dimension (1..8); empty: all 1
  TmaSwizzle swizzle = TmaSwizzle::None;
  TmaL2Promotion l2_promotion = TmaL2Promotion::None;
  TmaOobFill oob_fill = TmaOobFill::Zero;
};

// The 128 bytes of a CUtensorMap.
using TensorMapBytes = std::array<uint8_t, 128>;

// Validates `p` (a UserError naming the argument otherwise) and encodes it: with
// the driver's cuTensorMapEncodeTiled, or, when `emulate`, as the CUDA emulator's
// map, which needs no driver.
TensorMapBytes encode_tensor_map(const TensorMapParams& p, bool emulate);

// The swizzle mode / L2 promotion of a span in bytes (0, 32, 64, 128 / 0, 64, 128,
// 256); a UserError for any other value.
TmaSwizzle tma_swizzle_of_bytes(int bytes);
TmaL2Promotion tma_l2_promotion_of_bytes(int bytes);

}  // namespace tl
