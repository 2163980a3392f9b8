// Emulated twin of mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32 for the
// CUDA emulator (device/cuda/gemm_mma.cuh includes it under TL_EMULATE). The
// lanes of a warp are fibers of one block: each publishes its fragment registers
// in a per-block scratch area, a barrier lets the others read them, and each lane
// computes its own four D elements by locating every A and B element it needs
// through the PTX ISA fragment layout, read backwards:
//   A(r, k) is in lane (r % 8) * 4 + (k % 8) / 2, register r / 8 + 2 * (k / 8), half k % 2
//   B(k, n) is in lane n * 4 + (k % 8) / 2, register k / 8, half k % 2
//   D element i of lane l is (l / 4 + 8 * (i / 2), 2 * (l % 4) + i % 2)
// A layout error in the register gathering of gemm_mma.cuh therefore shows up as a
// wrong product in emulation, as it would on the GPU. Every thread of the block
// must reach each call (gemm_mma guarantees it: all warps run the same steps).
#pragma once

#include <cstdint>
#include <vector>

namespace tl::emu {

// Six registers (a0..a3, b0, b1) per thread of the running block.
inline std::vector<uint32_t>& mma_scratch() {
  static thread_local std::vector<uint32_t> regs;
  return regs;
}

inline float mma_operand(uint32_t reg, int half, bool bf16) {
  uint16_t bits = uint16_t(reg >> (16 * half));
  return bf16 ? tl::bit_cast<float>(uint32_t(bits) << 16) : tl::half_bits_to_float(bits);
}

inline void mma_m16n8k16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], bool bf16) {
  const dim3 t = thread_idx();
  const dim3& dims = block_state().block_dim;
  const unsigned rank = t.x + dims.x * (t.y + dims.y * t.z);
  const size_t threads = size_t(dims.x) * dims.y * dims.z;
  std::vector<uint32_t>& regs = mma_scratch();
  if (regs.size() < threads * 6) regs.resize(threads * 6);  // before the barrier: nobody reads yet
  for (int j = 0; j < 4; ++j) regs[rank * 6 + j] = a[j];
  for (int j = 0; j < 2; ++j) regs[rank * 6 + 4 + j] = b[j];
  tl::sync_threads();
  const unsigned warp0 = rank / 32 * 32, lane = rank % 32;
  auto A = [&](int r, int k) {
    unsigned owner = warp0 + unsigned((r % 8) * 4 + (k % 8) / 2);
    return mma_operand(regs[owner * 6 + r / 8 + 2 * (k / 8)], k % 2, bf16);
  };
  auto B = [&](int k, int n) {
    unsigned owner = warp0 + unsigned(n * 4 + (k % 8) / 2);
    return mma_operand(regs[owner * 6 + 4 + k / 8], k % 2, bf16);
  };
  float out[4];
  for (int i = 0; i < 4; ++i) {
    int row = int(lane / 4) + 8 * (i / 2), col = int(2 * (lane % 4)) + i % 2;
    float sum = d[i];
    for (int k = 0; k < 16; ++k) sum += A(row, k) * B(k, col);
    out[i] = sum;
  }
  tl::sync_threads();  // every lane has read the scratch before the next call overwrites it
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

}  // namespace tl::emu
