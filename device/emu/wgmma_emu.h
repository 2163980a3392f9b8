// Emulated twins of the sm_90a warpgroup MMA instructions for the CUDA emulator
// (device/cuda/gemm_sm90.cuh includes it under TL_EMULATE): wgmma.mma_async with A
// and B from shared-memory matrix descriptors (m64nNk16 f16/bf16, m64nNk8 tf32 and
// m64nNk32 e4m3/e5m2 into f32, m64nNk16 f16 into f16, m64nNk32 s8/u8 into s32) or
// f16/bf16 A from
// registers, wgmma.mma_async.sp (m64nNk32 f16/bf16 into f32, 2:4 sparse A from a
// descriptor), wgmma.fence, commit_group and wait_group, and the shared-window
// address a descriptor holds.
//
// Operand values are decoded exactly (fp8 through device/common/minifloat.h, bit for
// bit as ml_dtypes); a tf32 operand is the top 19 bits of the float in shared
// memory (the low 13 mantissa bits ignored: truncation toward zero), as the tensor
// cores read it. Float products are exact in float and are summed in k order; the
// GPU adds with its own internal precision, so its float results differ in the
// last bits. Integer products and sums are exact (s32, wrapping).
//
// The twins read operands the way the hardware does: the descriptor is decoded
// (start address, leading and stride byte offsets, swizzle mode), the canonical
// K-major or MN-major layout of the PTX ISA gives each element's address, and the
// swizzle is applied to the absolute shared-window address (16-byte chunk bits
// 4.. XOR address bits 7..). A wrong descriptor, a tile laid out otherwise, or a
// tile that does not start on a whole swizzle pattern therefore gives wrong
// products in emulation, as on the GPU.
//
// As on the GPU the operation is asynchronous: it is queued when issued and runs
// when a wait_group covers its commit group, so a missing wait leaves the
// accumulators unchanged in emulation. Each thread computes its own accumulators
// (warp w of the warpgroup: rows 16w + lane / 4 + {0, 8}, columns 8i + 2 (lane % 4)
// + {0, 1}); only A from registers needs the other lanes, through
// exchange_in_warp (cuda_emu.h), so every thread of the block must reach each
// register-A call (the gemms guarantee it: all warpgroups run the same steps).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace tl::emu {

// The instructions (gemm_sm90.cuh); defined below, or in the runtime object
// (emu_core.h, TL_EMU_FN).
TL_EMU_FN uint32_t wgmma_shared_offset(const void* p);
TL_EMU_FN void wgmma_ss(float* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                        WgmmaType type_b, bool trans_a, bool trans_b);
TL_EMU_FN void wgmma_ss(int32_t* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                        WgmmaType type_b, bool trans_a, bool trans_b);
TL_EMU_FN void wgmma_ss(half_t* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                        WgmmaType type_b, bool trans_a, bool trans_b);
TL_EMU_FN void wgmma_rs(float* d, int n, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d, WgmmaType type,
                        bool trans_b);
TL_EMU_FN void wgmma_rs(half_t* d, int n, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d, WgmmaType type,
                        bool trans_b);
TL_EMU_FN void wgmma_sp_ss(float* d, int n, uint64_t desc_a, uint64_t desc_b, uint32_t e, int selector, bool scale_d,
                           WgmmaType type, bool trans_a, bool trans_b);
TL_EMU_FN void wgmma_sp_rs(float* d, int n, const uint32_t (&a)[4], uint64_t desc_b, uint32_t e, int selector,
                           bool scale_d, WgmmaType type, bool trans_b);
TL_EMU_FN void wgmma_commit();
TL_EMU_FN void wgmma_wait(int n);

#if TL_EMU_DEFINITIONS
// The byte offset of p in the block's shared memory: what __cvta_generic_to_shared
// gives on the GPU, where the dynamic shared array starts the window.
TL_EMU_FN uint32_t wgmma_shared_offset(const void* p) {
  const BlockState& st = block_state();
  const unsigned char* c = static_cast<const unsigned char*>(p);
  if (c < st.shared.data() || c >= st.shared.data() + st.shared.size()) {
    record_failure("wgmma: an operand tile is not in the block's dynamic shared memory");
    return 0;
  }
  return uint32_t(c - st.shared.data());
}

struct WgmmaDesc {
  uint32_t start, lbo, sbo;
  int swizzle;  // bytes of one swizzled row: 128, 64, 32; 0 for the interleaved mode
  int base_offset;
};

// PTX ISA "Matrix Descriptor Format": bits 0-13 start address >> 4, 16-29 leading
// byte offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset, 62-63 swizzle
// mode (0 none, 1 128B, 2 64B, 3 32B).
inline WgmmaDesc decode_wgmma_desc(uint64_t d) {
  static const int widths[4] = {0, 128, 64, 32};
  return {uint32_t(d & 0x3fff) << 4, uint32_t((d >> 16) & 0x3fff) << 4, uint32_t((d >> 32) & 0x3fff) << 4,
          widths[d >> 62], int((d >> 49) & 7)};
}

// Shared-window byte address of element (mn, k) of a swizzled operand. K-major:
// rows of 8 consecutive mn at `swizzle` bytes apart, groups of 8 rows SBO apart, k
// along the row. MN-major: rows of `swizzle` bytes along mn for 8 consecutive k,
// groups of 8 k SBO apart, the next `swizzle` bytes of mn LBO apart.
inline uint32_t wgmma_element_address(const WgmmaDesc& d, bool k_major, int mn, int k, int elem_bytes) {
  const uint32_t sw = uint32_t(d.swizzle);
  uint32_t a;
  if (k_major) {
    a = d.start + uint32_t(mn / 8) * d.sbo + uint32_t(mn % 8) * sw + uint32_t(k * elem_bytes);
  } else {
    const uint32_t mb = uint32_t(mn * elem_bytes);
    a = d.start + mb / sw * d.lbo + uint32_t(k / 8) * d.sbo + uint32_t(k % 8) * sw + mb % sw;
  }
  return a ^ (((a >> 7) & (sw / 16 - 1)) << 4);
}

inline int wgmma_type_bytes(WgmmaType t) {
  switch (t) {
    case WgmmaType::F16:
    case WgmmaType::Bf16:
      return 2;
    case WgmmaType::Tf32:
      return 4;
    case WgmmaType::E4m3:
    case WgmmaType::E5m2:
    case WgmmaType::S8:
    case WgmmaType::U8:
      return 1;
  }
  return 1;
}

inline bool wgmma_is_integer(WgmmaType t) {
  return t == WgmmaType::S8 || t == WgmmaType::U8;
}

inline const char* wgmma_type_name(WgmmaType t) {
  switch (t) {
    case WgmmaType::F16:
      return "f16";
    case WgmmaType::Bf16:
      return "bf16";
    case WgmmaType::Tf32:
      return "tf32";
    case WgmmaType::E4m3:
      return "e4m3";
    case WgmmaType::E5m2:
      return "e5m2";
    case WgmmaType::S8:
      return "s8";
    case WgmmaType::U8:
      return "u8";
  }
  return "?";
}

// The K of one instruction: 32 bytes of the operand type.
inline int wgmma_inst_k(WgmmaType t) {
  return 32 / wgmma_type_bytes(t);
}

// One operand element (wgmma_type_bytes(t) bytes at p) as the value the tensor
// cores multiply: exact for every type, tf32 truncated to its top 19 bits.
template <class V>
inline V wgmma_value(const unsigned char* p, WgmmaType t) {
  uint16_t h;
  uint32_t w;
  switch (t) {
    case WgmmaType::F16:
      memcpy(&h, p, 2);
      return V(tl::half_bits_to_float(h));
    case WgmmaType::Bf16:
      memcpy(&h, p, 2);
      return V(tl::bit_cast<float>(uint32_t(h) << 16));
    case WgmmaType::Tf32:
      memcpy(&w, p, 4);
      return V(tl::bit_cast<float>(w & 0xffffe000u));
    case WgmmaType::E4m3:
      return V(tl::bit_cast<float>(tl::E4M3FN::to_float_bits(*p)));
    case WgmmaType::E5m2:
      return V(tl::bit_cast<float>(tl::E5M2::to_float_bits(*p)));
    case WgmmaType::S8:
      return V(int8_t(*p));
    case WgmmaType::U8:
      return V(*p);
  }
  return V(0);
}

// The K-step elements of `count` rows (mn_of(i)) of a descriptor operand, read
// from shared memory now (and recorded for the race detector); false (with a
// recorded failure) on a descriptor tilelang never emits or one that reads past
// the block's shared memory.
template <class V, class MnOf>
inline bool wgmma_read_operand(V* out, uint64_t desc, bool k_major, int count, MnOf mn_of, int k_extent, WgmmaType type,
                               const char* which) {
  const WgmmaDesc d = decode_wgmma_desc(desc);
  if (d.swizzle == 0 || d.base_offset != 0) {
    record_failure(std::string("wgmma: the ") + which +
                   " descriptor uses the interleaved mode or a base offset, which tilelang never emits");
    return false;
  }
  BlockState& st = block_state();
  const int bytes = wgmma_type_bytes(type);
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < k_extent; ++k) {
      const uint32_t a = wgmma_element_address(d, k_major, mn_of(i), k, bytes);
      if (size_t(a) + size_t(bytes) > st.shared.size()) {
        record_failure(std::string("wgmma: the ") + which + " descriptor reads shared byte " + std::to_string(a) +
                       ", past the block's " + std::to_string(st.shared.size()) + " bytes");
        return false;
      }
      out[i * k_extent + k] = wgmma_value<V>(note_shared(st.shared.data() + a, false, "|wgmma"), type);
    }
  }
  return true;
}

// Per thread of the block: the queued operations and their commit groups.
struct WgmmaQueue {
  std::vector<std::function<void()>> open;
  std::deque<std::vector<std::function<void()>>> committed;
};

inline WgmmaQueue& wgmma_queue() {
  struct Queues {
    uint64_t block = ~uint64_t(0);
    std::vector<WgmmaQueue> by_rank;
  };
  static thread_local Queues q;
  if (q.block != fiber_serial()) {
    q.block = fiber_serial();
    q.by_rank.assign(size_t(fiber_count()), WgmmaQueue{});
  }
  return q.by_rank[size_t(fiber_index())];
}

// The type operand values are decoded into for an accumulator type: the
// accumulator's own, float for f16 accumulators (their sums run in float).
template <class Acc>
struct WgmmaValueOf {
  using type = Acc;
};
template <>
struct WgmmaValueOf<half_t> {
  using type = float;
};

// The calling thread's accumulator coordinates in an m64nN tile.
struct WgmmaLane {
  int warp, g, q;  // warp in the warpgroup, lane / 4, lane % 4
  WgmmaLane() {
    const int r = thread_rank() % 128, lane = r % 32;
    warp = r / 32, g = lane / 4, q = lane % 4;
  }
  int row(int h) const { return 16 * warp + g + 8 * h; }        // h: e / 2
  int col(int c) const { return 8 * (c / 2) + 2 * q + c % 2; }  // c: 2 * (n8 tile) + e % 2
};

inline bool check_warpgroups(int n) {
  if (block_threads() % 128 != 0) {
    record_failure("wgmma: the block has " + std::to_string(block_threads()) +
                   " threads; wgmma needs whole warpgroups (a multiple of 128)");
    return false;
  }
  if (n % 8 != 0 || n < 8 || n > 256) {
    record_failure("wgmma: N = " + std::to_string(n) + " is not a multiple of 8 in 8..256");
    return false;
  }
  return true;
}

// D (+)= A * B for the calling thread's N / 2 accumulators, from its two A rows
// (a[h * kk + k]) and its N / 4 B columns (b[c * kk + k]), k in k order: float
// sums, or s32 ones that wrap as the hardware's (without .satfinite) do.
inline void wgmma_accumulate(float* d, int n, int kk, bool scale_d, const float* a, const float* b) {
  for (int i = 0; i < n / 8; ++i)
    for (int e = 0; e < 4; ++e) {
      float sum = scale_d ? d[4 * i + e] : 0.0f;
      const float *ra = a + (e / 2) * kk, *cb = b + (2 * i + e % 2) * kk;
      for (int k = 0; k < kk; ++k) sum += ra[k] * cb[k];
      d[4 * i + e] = sum;
    }
}
inline void wgmma_accumulate(int32_t* d, int n, int kk, bool scale_d, const int32_t* a, const int32_t* b) {
  for (int i = 0; i < n / 8; ++i)
    for (int e = 0; e < 4; ++e) {
      uint32_t sum = scale_d ? uint32_t(d[4 * i + e]) : 0u;
      const int32_t *ra = a + (e / 2) * kk, *cb = b + (2 * i + e % 2) * kk;
      for (int k = 0; k < kk; ++k) sum += uint32_t(ra[k] * cb[k]);
      d[4 * i + e] = int32_t(sum);
    }
}

// f16 accumulators: each instruction adds its kk exact products to the incoming
// value in float and rounds the sum to f16 (nearest even) once, as the tensor cores
// do (docs/design/cuda_lowering.md, "f16 accumulators").
inline void wgmma_accumulate(half_t* d, int n, int kk, bool scale_d, const float* a, const float* b) {
  for (int i = 0; i < n / 8; ++i)
    for (int e = 0; e < 4; ++e) {
      float sum = scale_d ? tl::half_bits_to_float(d[4 * i + e].bits) : 0.0f;
      const float *ra = a + (e / 2) * kk, *cb = b + (2 * i + e % 2) * kk;
      for (int k = 0; k < kk; ++k) sum += ra[k] * cb[k];
      d[4 * i + e].bits = tl::float_to_half_bits(sum);
    }
}

// Whether an instruction takes operands of types a, b into accumulators of Acc (the
// device header's static_asserts make it so; checked here too).
template <class Acc>
inline bool check_wgmma_types(WgmmaType a, WgmmaType b) {
  if (std::is_same<Acc, half_t>::value) {
    if (a == WgmmaType::F16 && b == WgmmaType::F16) return true;
    record_failure(std::string("wgmma: operand types ") + wgmma_type_name(a) + " / " + wgmma_type_name(b) +
                   " into f16 accumulators; tilelang emits f16 accumulators only for f16 operands");
    return false;
  }
  const bool integer = wgmma_is_integer(a);
  const bool fp8 = (a == WgmmaType::E4m3 || a == WgmmaType::E5m2) && (b == WgmmaType::E4m3 || b == WgmmaType::E5m2);
  if ((a != b && !fp8) || integer != std::is_same<Acc, int32_t>::value) {
    record_failure(std::string("wgmma: operand types ") + wgmma_type_name(a) + " / " + wgmma_type_name(b) +
                   " have no instruction with this accumulator type");
    return false;
  }
  return true;
}

// wgmma.mma_async.sync.aligned.m64nNkK.{f32,s32}.atype.btype d, a-desc, b-desc,
// scale-d (, 1, 1 (, trans-a, trans-b)). trans = 0: K-major (A [M][K], B [N][K]);
// 1: M- / N-major (16-bit types only).
template <class Acc>
inline void queue_wgmma_ss(Acc* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                           WgmmaType type_b, bool trans_a, bool trans_b) {
  if (!check_warpgroups(n) || !check_wgmma_types<Acc>(type_a, type_b)) return;
  if ((trans_a || trans_b) && wgmma_type_bytes(type_a) != 2) {
    record_failure("wgmma: a transposed (M- / N-major) operand of a type other than f16 / bf16");
    return;
  }
  const int kk = wgmma_inst_k(type_a);
  wgmma_queue().open.push_back([=] {
    const WgmmaLane l;
    using V = typename WgmmaValueOf<Acc>::type;
    std::vector<V> a(size_t(2 * kk)), b(size_t(n / 4 * kk));
    if (!wgmma_read_operand(
            a.data(), desc_a, !trans_a, 2, [&](int h) { return l.row(h); }, kk, type_a, "A"))
      return;
    if (!wgmma_read_operand(
            b.data(), desc_b, !trans_b, n / 4, [&](int c) { return l.col(c); }, kk, type_b, "B"))
      return;
    wgmma_accumulate(d, n, kk, scale_d, a.data(), b.data());
  });
}

TL_EMU_FN void wgmma_ss(float* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                        WgmmaType type_b, bool trans_a, bool trans_b) {
  queue_wgmma_ss(d, n, desc_a, desc_b, scale_d, type_a, type_b, trans_a, trans_b);
}
TL_EMU_FN void wgmma_ss(int32_t* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                        WgmmaType type_b, bool trans_a, bool trans_b) {
  queue_wgmma_ss(d, n, desc_a, desc_b, scale_d, type_a, type_b, trans_a, trans_b);
}
TL_EMU_FN void wgmma_ss(half_t* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, WgmmaType type_a,
                        WgmmaType type_b, bool trans_a, bool trans_b) {
  queue_wgmma_ss(d, n, desc_a, desc_b, scale_d, type_a, type_b, trans_a, trans_b);
}

// The thread's two rows (row h at [h * 16 ..]) of the 16 K values a warp holds in the
// m64k16 register fragment of mma.m16n8k16 (reg j: row g + 8 (j % 2), k 2q + 8 (j / 2)
// + {0, 1}); f16 / bf16.
inline std::vector<float> wgmma_register_rows(const uint32_t (&a)[4], WgmmaType type) {
  const uint32_t* warp = exchange_in_warp<uint32_t, 4, 3>(a);
  const WgmmaLane l;
  std::vector<float> rows(2 * 16);
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 16; ++k) {
      const uint32_t reg = warp[(l.g * 4 + (k % 8) / 2) * 4 + h + 2 * (k / 8)];
      const uint16_t bits = uint16_t(reg >> (16 * (k % 2)));
      rows[size_t(h * 16 + k)] = wgmma_value<float>(reinterpret_cast<const unsigned char*>(&bits), type);
    }
  return rows;
}

// The same with f16 / bf16 A from registers: a[4] holds the m64k16 fragment of
// mma.m16n8k16 for rows 16w.. of warp w (reg j: row g + 8 (j % 2), k 2q + 8 (j / 2)
// + {0, 1}).
template <class Acc>
inline void queue_wgmma_rs(Acc* d, int n, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d, WgmmaType type,
                           bool trans_b) {
  if (!check_warpgroups(n)) return;
  if (type != WgmmaType::F16 && type != WgmmaType::Bf16) {
    record_failure("wgmma: A from registers must be f16 or bf16");
    return;
  }
  if (!check_wgmma_types<Acc>(type, type)) return;
  const std::vector<float> rows = wgmma_register_rows(a, type);
  const WgmmaLane l;
  wgmma_queue().open.push_back([=] {
    std::vector<float> b(size_t(n / 4) * 16);
    if (!wgmma_read_operand(
            b.data(), desc_b, !trans_b, n / 4, [&](int c) { return l.col(c); }, 16, type, "B"))
      return;
    wgmma_accumulate(d, n, 16, scale_d, rows.data(), b.data());
  });
}

TL_EMU_FN void wgmma_rs(float* d, int n, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d, WgmmaType type,
                        bool trans_b) {
  queue_wgmma_rs(d, n, a, desc_b, scale_d, type, trans_b);
}
TL_EMU_FN void wgmma_rs(half_t* d, int n, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d, WgmmaType type,
                        bool trans_b) {
  queue_wgmma_rs(d, n, a, desc_b, scale_d, type, trans_b);
}

// wgmma.mma_async.sp.sync.aligned.m64nNk32.f32.{f16,bf16}.{f16,bf16} d, a-desc,
// b-desc, e, selector, scale-d, 1, 1, trans-a, trans-b (PTX ISA, "Asynchronous
// Warpgroup Level Multiply-and-Accumulate Operation using wgmma.mma_async.sp").
// A is 64 x 32 with 2 of every 4 consecutive elements of a row kept; the
// descriptor describes the 64 x 16 kept values (kept column 2c + s the s-th kept
// value of chunk c, K elements 4c .. 4c + 3), B is 32 x N. The metadata is mma.sp
// m16n8k32's for each warp's 16 rows: in each group of four lanes the pair 2f,
// 2f + 1 (f the selector) supplies it; lane 2f + h of group g holds in bits [15:0]
// the codes of chunks 4h .. 4h + 3 of row 16 w + g and in bits [31:16] those of row
// 16 w + g + 8, chunk 4h + i in bits [4i + 3 : 4i], a code's bits [1:0] and [3:2]
// the positions of the first and the second kept value. Only the kept values are
// multiplied, 16 products per element in K order, summed in float. A code naming
// one position twice, which the ISA leaves undefined, fails the launch.
// The sparse instruction for A read by `read_a` (its 2 rows of 16 kept values, row h
// at [h * 16 ..], in the queued operation) and B from a descriptor.
inline void queue_wgmma_sp(float* d, int n, uint32_t e, int selector, bool scale_d, WgmmaType type,
                           std::function<bool(std::vector<float>&)> read_a, uint64_t desc_b, bool trans_b) {
  if (!check_warpgroups(n)) return;
  if (type != WgmmaType::F16 && type != WgmmaType::Bf16) {
    record_failure("wgmma.sp: tilelang emits the sparse wgmma for f16 / bf16 operands only");
    return;
  }
  if (selector != 0 && selector != 1) {
    record_failure("wgmma.sp: the sparsity selector of f16 / bf16 is 0 or 1, not " + std::to_string(selector));
    return;
  }
  const uint32_t* warp = exchange_in_warp<uint32_t, 1, 4>(&e);
  const WgmmaLane l;
  // The metadata codes of the thread's two rows, chunk c of row half h at [h * 8 + c].
  std::vector<int> codes(16);
  for (int h = 0; h < 2; ++h)
    for (int c = 0; c < 8; ++c)
      codes[size_t(h * 8 + c)] = int(warp[l.g * 4 + 2 * selector + c / 4] >> (16 * h + 4 * (c % 4))) & 15;
  wgmma_queue().open.push_back([=] {
    std::vector<float> a(2 * 16), b(size_t(n / 4) * 32);
    if (!read_a(a)) return;
    if (!wgmma_read_operand(
            b.data(), desc_b, !trans_b, n / 4, [&](int c) { return l.col(c); }, 32, type, "B"))
      return;
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < 8; ++c) {
        const int code = codes[size_t(h * 8 + c)];
        if ((code & 3) == (code >> 2)) {
          record_failure("wgmma.sp: the metadata of row " + std::to_string(l.row(h)) + " of the m64 tile, K elements " +
                         std::to_string(4 * c) + "-" + std::to_string(4 * c + 3) + " names position " +
                         std::to_string(code & 3) + " twice (code " + std::to_string(code) +
                         "), for which the PTX ISA leaves the result undefined");
          return;
        }
      }
    for (int i = 0; i < n / 8; ++i)
      for (int el = 0; el < 4; ++el) {
        const int h = el / 2, col = 2 * i + el % 2;
        float sum = scale_d ? d[4 * i + el] : 0.0f;
        for (int c = 0; c < 8; ++c) {
          const int code = codes[size_t(h * 8 + c)], pos[2] = {code & 3, code >> 2};
          for (int s = 0; s < 2; ++s) sum += a[size_t(h * 16 + 2 * c + s)] * b[size_t(col * 32 + 4 * c + pos[s])];
        }
        d[4 * i + el] = sum;
      }
  });
}

TL_EMU_FN void wgmma_sp_ss(float* d, int n, uint64_t desc_a, uint64_t desc_b, uint32_t e, int selector, bool scale_d,
                           WgmmaType type, bool trans_a, bool trans_b) {
  const WgmmaLane l;
  auto read_a = [=](std::vector<float>& a) {
    return wgmma_read_operand(
        a.data(), desc_a, !trans_a, 2, [&](int h) { return l.row(h); }, 16, type, "A");
  };
  queue_wgmma_sp(d, n, e, selector, scale_d, type, read_a, desc_b, trans_b);
}

// The same with the kept values of A from registers: a[4] the m64k16 fragment of
// wgmma_rs (reg j: row g + 8 (j % 2), kept columns 2q + 8 (j / 2) + {0, 1}).
TL_EMU_FN void wgmma_sp_rs(float* d, int n, const uint32_t (&a)[4], uint64_t desc_b, uint32_t e, int selector,
                           bool scale_d, WgmmaType type, bool trans_b) {
  if (type != WgmmaType::F16 && type != WgmmaType::Bf16) {
    record_failure("wgmma.sp: tilelang emits the sparse wgmma for f16 / bf16 operands only");
    return;
  }
  const std::vector<float> rows = wgmma_register_rows(a, type);
  auto read_a = [rows](std::vector<float>& out) {
    out = rows;
    return true;
  };
  queue_wgmma_sp(d, n, e, selector, scale_d, type, read_a, desc_b, trans_b);
}

TL_EMU_FN void wgmma_commit() {
  WgmmaQueue& q = wgmma_queue();
  q.committed.push_back(std::move(q.open));
  q.open.clear();
}

// Runs every committed group but the n newest.
TL_EMU_FN void wgmma_wait(int n) {
  WgmmaQueue& q = wgmma_queue();
  while (q.committed.size() > size_t(n)) {
    for (const std::function<void()>& op : q.committed.front()) op();
    q.committed.pop_front();
  }
}

#endif  // TL_EMU_DEFINITIONS

}  // namespace tl::emu
