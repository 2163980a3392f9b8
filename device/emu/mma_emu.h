// Emulated twins of the mma.sync instructions for the CUDA emulator
// (device/cuda/gemm_mma.cuh and gemm_sm80.cuh include it under TL_EMULATE):
// m16n8k16 f16/bf16 -> f32 and f16 -> f16, m16n8k8 tf32 -> f32, m16n8k32 s8/u8 -> s32 and
// m16n8k32 e4m3/e5m2 -> f32 (A and B formats chosen independently), with the
// fp8 -> f16x2 conversion sm_90 runs that one through, and the 2:4 sparse
// mma.sp m16n8k32 f16/bf16 -> f32 and m16n8k64 s8/u8 -> s32, e4m3/e5m2 -> f32
// (gemm_sp_sm80.cuh; their layouts are described at mma_sp_m16n8k32_f32 and
// mma_sp_m16n8k64 below). The
// lanes of a warp are fibers of one block: each publishes its fragment registers
// (exchange_in_warp in cuda_emu.h), and each lane computes its own four D elements
// by locating every A and B element it needs through the PTX ISA fragment layout,
// read backwards. With P elements per 32-bit
// register (2 for 16-bit types, 1 for tf32, 4 for 8-bit) and H = 4 * P (half the
// k extent of one instruction):
//   A(r, k) is in lane (r % 8) * 4 + (k % H) / P, register r / 8 + 2 * (k / H), part k % P
//   B(k, n) is in lane n * 4 + (k % H) / P, register k / H, part k % P
//   D element i of lane l is (l / 4 + 8 * (i / 2), 2 * (l % 4) + i % 2)
// A layout error in the register gathering of the gemms therefore shows up as a
// wrong product in emulation, as it would on the GPU. Every thread of the block
// must reach each call (the gemms guarantee it: all warps run the same steps).
// The fp8 codecs (tl::E4M3FN, tl::E5M2) come from device/common/minifloat.h, which
// tl_cuda.cuh includes before the gemm headers.
#pragma once

#include <cstdint>

namespace tl::emu {

// The instructions (gemm_mma.cuh, gemm_sm80.cuh); defined below, or in the runtime
// object (emu_core.h, TL_EMU_FN).
TL_EMU_FN void mma_m16n8k16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], bool bf16);
TL_EMU_FN void mma_m16n8k16_f16(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2]);
TL_EMU_FN void mma_m16n8k8_tf32(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]);
TL_EMU_FN void mma_m16n8k32_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[2], bool is_unsigned);
TL_EMU_FN void mma_m16n8k32_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2], bool a_e5m2, bool b_e5m2);
TL_EMU_FN void mma_sp_m16n8k32_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e,
                                   int selector, bool bf16);
TL_EMU_FN void mma_sp_m16n8k64_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e,
                                   bool is_unsigned);
TL_EMU_FN void mma_sp_m16n8k64_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e, bool a_e5m2,
                                  bool b_e5m2);

// One e4m3fn or e5m2 value, exactly (minifloat.h, bit for bit as ml_dtypes).
inline float fp8_value(uint8_t bits, bool e5m2) {
  return tl::bit_cast<float>(e5m2 ? tl::E5M2::to_float_bits(bits) : tl::E4M3FN::to_float_bits(bits));
}

// cvt.rn.f16x2.{e4m3,e5m2}x2: the low byte into the low half; exact.
inline uint32_t f8x2_to_f16x2(uint16_t v, bool e5m2) {
  return uint32_t(tl::float_to_half_bits(fp8_value(uint8_t(v), e5m2))) |
         uint32_t(tl::float_to_half_bits(fp8_value(uint8_t(v >> 8), e5m2))) << 16;
}

// cvt.rna.tf32.f32: round to the nearest tf32 (10 mantissa bits), ties away from zero.
inline uint32_t float_to_tf32_bits(float x) {
  uint32_t u = tl::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return u;  // inf and NaN stay
  return (u + 0x1000u) & 0xffffe000u;
}

#if TL_EMU_DEFINITIONS
// A code naming one position twice, for which the ISA leaves mma.sp undefined.
inline void report_sp_code(int row, int chunk, int pos, int code) {
  record_failure("mma.sp: the metadata of row " + std::to_string(row) + ", K elements " + std::to_string(4 * chunk) +
                 "-" + std::to_string(4 * chunk + 3) + " names position " + std::to_string(pos) + " twice (code " +
                 std::to_string(code) + "), for which the PTX ISA leaves the result undefined");
}

// D += A * B for the calling lane; `value_a(reg, part)` decodes one element of A,
// `value_b` one of B.
template <int PerReg, class Acc, class ValueA, class ValueB>
inline void mma_m16n8(Acc* d, const uint32_t (&a)[4], const uint32_t (&b)[2], ValueA value_a, ValueB value_b) {
  constexpr int kHalf = 4 * PerReg, kK = 2 * kHalf;
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  const uint32_t* warp = exchange_in_warp<uint32_t, 6, 2>(mine);  // six registers per lane
  const int lane = thread_rank() % 32, g = lane / 4, q = lane % 4;
  // This lane's D elements need A rows g, g + 8 and B columns 2q, 2q + 1.
  Acc rows[2][kK], cols[2][kK];
  for (int k = 0; k < kK; ++k) {
    const int part = k % PerReg, in_half = (k % kHalf) / PerReg, half = k / kHalf;
    for (int h = 0; h < 2; ++h) {
      rows[h][k] = value_a(warp[(g * 4 + in_half) * 6 + h + 2 * half], part);        // A(g + 8h, k)
      cols[h][k] = value_b(warp[((2 * q + h) * 4 + in_half) * 6 + 4 + half], part);  // B(k, 2q + h)
    }
  }
  for (int i = 0; i < 4; ++i) {
    Acc sum = d[i];
    for (int k = 0; k < kK; ++k) sum += rows[i / 2][k] * cols[i % 2][k];
    d[i] = sum;
  }
}

template <int PerReg, class Acc, class Value>
inline void mma_m16n8(Acc* d, const uint32_t (&a)[4], const uint32_t (&b)[2], Value value) {
  mma_m16n8<PerReg>(d, a, b, value, value);
}

TL_EMU_FN void mma_m16n8k16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], bool bf16) {
  mma_m16n8<2>(d, a, b, [bf16](uint32_t reg, int half) {
    uint16_t bits = uint16_t(reg >> (16 * half));
    return bf16 ? tl::bit_cast<float>(uint32_t(bits) << 16) : tl::half_bits_to_float(bits);
  });
}

// f16 accumulators (d[j]: elements 2j, 2j + 1, the lower in the low half): the
// incoming accumulator and the instruction's 16 exact products are summed in float,
// and the sum is rounded to f16 (nearest even) once per instruction, as the tensor
// cores do (docs/design/cuda_lowering.md, "f16 accumulators"); an f16 overflow
// gives inf, as on the GPU.
TL_EMU_FN void mma_m16n8k16_f16(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  float f[4];
  for (int i = 0; i < 4; ++i) f[i] = tl::half_bits_to_float(uint16_t(d[i / 2] >> (16 * (i % 2))));
  mma_m16n8k16_f32(f, a, b, false);
  for (int j = 0; j < 2; ++j)
    d[j] = uint32_t(tl::float_to_half_bits(f[2 * j])) | uint32_t(tl::float_to_half_bits(f[2 * j + 1])) << 16;
}

// The tensor cores read the top 19 bits of a tf32 operand and ignore the rest.
TL_EMU_FN void mma_m16n8k8_tf32(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  mma_m16n8<1>(d, a, b, [](uint32_t reg, int) { return tl::bit_cast<float>(reg & 0xffffe000u); });
}

TL_EMU_FN void mma_m16n8k32_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[2], bool is_unsigned) {
  mma_m16n8<4>(d, a, b, [is_unsigned](uint32_t reg, int byte) {
    uint32_t bits = (reg >> (8 * byte)) & 0xffu;
    return is_unsigned ? int32_t(bits) : int32_t(int8_t(uint8_t(bits)));
  });
}

// Every product of two fp8 values is exact in float; the sums here are float
// additions in k order. The GPU adds with its own internal precision (sm_89's fp8
// mma, or the f16 mmas sm_90 runs it as), so its results differ in the last bits;
// the tests allow 2^-9 of sum |a * b| + |c|.
TL_EMU_FN void mma_m16n8k32_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2], bool a_e5m2, bool b_e5m2) {
  auto decoder = [](bool e5m2) {
    return [e5m2](uint32_t reg, int byte) { return fp8_value(uint8_t(reg >> (8 * byte)), e5m2); };
  };
  mma_m16n8<4>(d, a, b, decoder(a_e5m2), decoder(b_e5m2));
}

// mma.sp.sync.aligned.m16n8k32.row.col.f32.{f16,bf16}.{f16,bf16}.f32 d, a, b, c, e, f
// (PTX ISA, "Matrix multiply-accumulate operation using mma.sp instruction with
// sparse matrix A"). A is 16 x 32 with 2 of every 4 consecutive elements of a row
// kept: its fragment a[4] holds the 16 x 16 kept values laid out as the A of the
// dense m16n8k16 (reg j: row g + 8 * (j % 2), kept columns 2q + 8 * (j / 2) + {0, 1},
// g = lane / 4, q = lane % 4), kept column 2c + s being the s-th kept value of the
// row's chunk c (K elements 4c .. 4c + 3). B (32 x 8) is b[4]: reg j holds rows
// 2q + 8j + {0, 1} of column g. The metadata: in each group of four lanes, the pair
// 2f, 2f + 1 (f the sparsity selector, 0 or 1) supplies it; lane 2f + h of group g
// holds, in bits [15:0], the codes of chunks 4h .. 4h + 3 of row g and in bits
// [31:16] those of row g + 8, chunk 4h + i in bits [4i + 3 : 4i]; a chunk's code
// gives the position (0-3) of its first kept value in bits [1:0] and of the second
// in bits [3:2]. Only the kept values are multiplied (the B rows at the positions
// the codes name), 16 products per element, summed in float in K order. A code
// naming one position twice (0b0000, 0b0101, 0b1010, 0b1111), for which the ISA
// leaves the result undefined, is reported as a failure of the launch.
TL_EMU_FN void mma_sp_m16n8k32_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e,
                                   int selector, bool bf16) {
  const uint32_t mine[9] = {a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], e};
  const uint32_t* warp = exchange_in_warp<uint32_t, 9, 3>(mine);
  const int lane = thread_rank() % 32, g = lane / 4, q = lane % 4;
  auto value = [bf16](uint32_t reg, int half) {
    uint16_t bits = uint16_t(reg >> (16 * half));
    return bf16 ? tl::bit_cast<float>(uint32_t(bits) << 16) : tl::half_bits_to_float(bits);
  };
  auto b_at = [&](int k, int n) { return value(warp[((n * 4) + (k % 8) / 2) * 9 + 4 + k / 8], k % 2); };
  for (int i = 0; i < 4; ++i) {
    const int h = i / 2, row = g + 8 * h, col = 2 * q + i % 2;
    float sum = d[i];
    for (int c = 0; c < 8; ++c) {  // the row's 4-element chunks, in K order
      const uint32_t meta = warp[(g * 4 + 2 * selector + c / 4) * 9 + 8];
      const int code = int(meta >> (16 * h + 4 * (c % 4))) & 15;
      const int pos[2] = {code & 3, code >> 2};
      if (pos[0] == pos[1]) {
        report_sp_code(row, c, pos[0], code);
        continue;
      }
      for (int s = 0; s < 2; ++s) {
        const int kept = 2 * c + s;  // A's kept column
        const float av = value(warp[(g * 4 + (kept % 8) / 2) * 9 + h + 2 * (kept / 8)], kept % 2);
        sum += av * b_at(4 * c + pos[s], col);
      }
    }
    d[i] = sum;
  }
}

// mma.sp.sync.aligned.m16n8k64.row.col.{s32.s8.s8.s32, s32.u8.u8.s32, f32.e4m3/e5m2
// x e4m3/e5m2.f32} d, a, b, c, e, 0 (PTX ISA, "Matrix fragments for multiply-accumulate
// operation with sparse matrix A", m16n8k64 with 8-bit types). A is 16 x 64, 2 of
// every 4 consecutive elements of a row kept; a[4] holds the 16 x 32 kept values laid
// out as the A of the dense 8-bit m16n8k32 (reg j: row g + 8 * (j % 2), kept columns
// 4q + 16 * (j / 2) + {0 .. 3}, the lowest byte first), kept column 2c + s being the
// s-th kept value of chunk c (K elements 4c .. 4c + 3). B (64 x 8) is b[4]: reg j
// holds rows 16j + 4q + {0 .. 3} of column g, the two dense m16n8k32 B fragments of
// K 0-31 and 32-63. The metadata: the sparsity selector is 0 and every lane supplies
// 32 bits: lane (g, q) the 8 codes of row g + 8 * (q % 2), chunks 8 * (q / 2) .. + 7,
// chunk 8 * (q / 2) + i in bits [4i + 3 : 4i], a code as for m16n8k32. 32 products
// per element, in K order: exact in int32 (wrapping as the instruction without
// .satfinite does); for fp8 each product is exact in float and the sums are float
// additions in K order (the GPU adds with its own internal precision).
template <class Acc, class ValueA, class ValueB>
inline void mma_sp_m16n8k64(Acc* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e, ValueA value_a,
                            ValueB value_b) {
  const uint32_t mine[9] = {a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], e};
  const uint32_t* warp = exchange_in_warp<uint32_t, 9, 3>(mine);
  const int lane = thread_rank() % 32, g = lane / 4, q = lane % 4;
  auto a_at = [&](int row, int kept) {
    return value_a(warp[((row % 8) * 4 + (kept % 16) / 4) * 9 + row / 8 + 2 * (kept / 16)], kept % 4);
  };
  auto b_at = [&](int k, int n) { return value_b(warp[(n * 4 + (k % 16) / 4) * 9 + 4 + k / 16], k % 4); };
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * q + i % 2;
    Acc sum = d[i];
    for (int c = 0; c < 16; ++c) {
      const uint32_t meta = warp[(g * 4 + row / 8 + 2 * (c / 8)) * 9 + 8];
      const int code = int(meta >> (4 * (c % 8))) & 15;
      const int pos[2] = {code & 3, code >> 2};
      if (pos[0] == pos[1]) {
        report_sp_code(row, c, pos[0], code);
        continue;
      }
      for (int s = 0; s < 2; ++s) sum += a_at(row, 2 * c + s) * b_at(4 * c + pos[s], col);
    }
    d[i] = sum;
  }
}

TL_EMU_FN void mma_sp_m16n8k64_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e,
                                   bool is_unsigned) {
  auto value = [is_unsigned](uint32_t reg, int byte) {
    uint32_t bits = (reg >> (8 * byte)) & 0xffu;
    return is_unsigned ? int32_t(bits) : int32_t(int8_t(uint8_t(bits)));
  };
  // Sums wrap modulo 2^32 as the instruction's do (no .satfinite), without C++'s
  // signed-overflow undefined behaviour.
  uint32_t acc[4] = {uint32_t(d[0]), uint32_t(d[1]), uint32_t(d[2]), uint32_t(d[3])};
  auto wide = [value](uint32_t reg, int byte) { return uint32_t(value(reg, byte)); };
  mma_sp_m16n8k64(acc, a, b, e, wide, wide);
  for (int i = 0; i < 4; ++i) d[i] = int32_t(acc[i]);
}

TL_EMU_FN void mma_sp_m16n8k64_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e, bool a_e5m2,
                                  bool b_e5m2) {
  auto decoder = [](bool e5m2) {
    return [e5m2](uint32_t reg, int byte) { return fp8_value(uint8_t(reg >> (8 * byte)), e5m2); };
  };
  mma_sp_m16n8k64(d, a, b, e, decoder(a_e5m2), decoder(b_e5m2));
}

#endif  // TL_EMU_DEFINITIONS

}  // namespace tl::emu
