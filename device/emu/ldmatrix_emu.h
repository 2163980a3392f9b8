// Emulated twin of ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16 for the
// CUDA emulator (device/cuda/gemm_sm80.cuh includes it under TL_EMULATE). As on
// the GPU, lanes 8i..8i+7 supply the addresses of rows 0..7 of matrix i (a row is
// 16 bytes: eight 16-bit elements); each lane publishes its address
// (exchange_in_warp in cuda_emu.h) and gathers its registers through the PTX
// fragment layout: register i of lane l holds elements (l / 4, 2 * (l % 4) + {0, 1})
// of matrix i, the lower column in the low half; with .trans, the same elements of
// the transposed matrix. A wrong address computed by the gemm therefore gives a
// wrong product here, as on the GPU. Every thread of the block must reach each call.
#pragma once

#include <cstdint>
#include <cstring>

namespace tl::emu {

// Gathers the calling lane's `num` registers (ldmatrix below).
TL_EMU_FN void ldmatrix_lane(uint32_t* regs, int num, bool trans, uintptr_t row_addr);

#if TL_EMU_DEFINITIONS
TL_EMU_FN void ldmatrix_lane(uint32_t* regs, int num, bool trans, uintptr_t row_addr) {
  const int rank = thread_rank(), threads = block_threads(), lane = rank % 32, warp0 = rank - lane;
  // The row this lane supplies is read now (a write to it by another thread since
  // the last barrier is a race, whichever lane gathers the elements).
  if (lane < 8 * num)
    for (int e = 0; e < 8; ++e) note_shared(reinterpret_cast<const uint16_t*>(row_addr) + e, false, "|ldmatrix");
  const uintptr_t* rows = exchange_in_warp<uintptr_t, 1, 1>(&row_addr);
  auto element = [&](int matrix, int row, int col) -> uint32_t {
    const int src = 8 * matrix + row;
    if (warp0 + src >= threads) {
      record_failure("ldmatrix: lane " + std::to_string(src) + " that supplies a row address is outside the " +
                     std::to_string(threads) + "-thread block; ldmatrix needs whole warps");
      return 0;
    }
    uint16_t v;
    memcpy(&v, reinterpret_cast<const void*>(rows[src] + 2 * size_t(col)), 2);
    return v;
  };
  const int r = lane / 4, c = 2 * (lane % 4);
  for (int m = 0; m < num; ++m)
    regs[m] = trans ? element(m, c, r) | element(m, c + 1, r) << 16 : element(m, r, c) | element(m, r, c + 1) << 16;
}
#endif  // TL_EMU_DEFINITIONS

template <int Num, bool Trans>
inline void ldmatrix(uint32_t (&regs)[Num], uintptr_t row_addr) {
  ldmatrix_lane(regs, Num, Trans, row_addr);
}

}  // namespace tl::emu
