// Reductions inside a warp through register shuffles: the building block of
// row-wise reductions over mma accumulators (the lanes of one accumulator row are
// 4 consecutive lanes) and of warp-level T.reduce. Under TL_EMULATE the shuffles
// are the twins in device/emu/cuda_emu.h, which need every thread of the block to
// make the same calls.
#pragma once

namespace tl {

struct SumOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return a + b;
  }
};
struct MaxOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return a < b ? b : a;
  }
};
struct MinOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return b < a ? b : a;
  }
};

// Op-reduces v over each group of Width consecutive lanes (groups start at lanes
// that are multiples of Width) and returns the result to every lane of the group.
// All 32 lanes of the warp must call it.
template <class Op, int Width, class T>
TL_DEVICE T warp_allreduce(T v) {
  static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0,
                "warp_allreduce: Width must be a power of two in [1, 32]");
#pragma unroll
  for (int mask = Width / 2; mask > 0; mask /= 2) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, mask));
  return v;
}

}  // namespace tl
