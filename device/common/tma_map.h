// The CUDA emulator's own encoding of a TMA tensor map. On the GPU a tensor map is
// the driver's opaque 128 bytes (cuTensorMapEncodeTiled); an emulated launch gets
// these 128 bytes instead, written by the host (src/runtime/cuda/tma.cpp) and read
// by the emulated copies (device/emu/tma_emu.h), so the one layout lives here. Plain
// C++ with fixed-width integers only; the includer provides uint8_t..uint64_t.
#pragma once

namespace tl {

// "TLTM": tells an emulator map from a driver map (or from zeros) passed by mistake.
constexpr uint32_t kEmuTensorMapMagic = 0x4d544c54u;

// Dimension 0 is the innermost (contiguous) one, as in cuTensorMapEncodeTiled.
struct EmuTensorMap {
  uint32_t magic;
  uint8_t rank;           // 1..5
  uint8_t elem_bytes;     // 1, 2, 4 or 8
  uint8_t swizzle_bytes;  // 0 (none), 32, 64 or 128
  uint8_t nan_fill;       // 1: out-of-bounds float elements read as NaN, else 0
  uint64_t base;          // address of element (0, ..., 0)
  uint64_t dims[5];
  uint64_t strides[5];  // bytes; strides[0] is elem_bytes
  uint16_t box[5];      // elements traversed per dimension, 1..256
  uint8_t elem_strides[5];
  uint8_t dtype;  // the CUtensorMapDataType code (tells the kind of NaN to fill)
};
static_assert(sizeof(EmuTensorMap) <= 128, "the emulator's tensor map must fit in a CUtensorMap");

// Elements of the box along dimension d in shared memory: dimension 0 is dense
// (the hardware ignores its element stride), the others take every
// elem_strides[d]-th element, ceil(box / stride) of them.
inline constexpr uint32_t emu_box_extent(const EmuTensorMap& m, int d) {
  return d == 0 ? m.box[0] : (uint32_t(m.box[d]) + m.elem_strides[d] - 1) / m.elem_strides[d];
}

}  // namespace tl
