// T.gemm on tensor cores with every operand in shared memory: the gemms that
// lower_fragments leaves to the block (A, B and an accumulator C of fp32, or f16 for
// f16 operands, that stayed in shared memory); register accumulators take
// tl::gemm_ss / gemm_rs (gemm_sm80.cuh) instead. tl::gemm_mma is a block-wide
// operation: every thread of the block calls it, between two barriers. Warps
// split C into WarpsM x WarpsN tiles (chosen by the compiler from the gemm's
// policy); each warp walks its tile in chunks of at most 64 x 64 accumulators
// held in registers, gathers the operand fragments of
// mma.sync.aligned.m16n8k16.row.col.{f32.f16,f32.bf16,f16.f16} from shared memory with
// 16-bit loads (ldmatrix and swizzled tiles are gemm_sm80.cuh's), and
// writes the chunk back to C.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"), with g = lane / 4 and t = lane % 4; each .b32 register holds two
// 16-bit elements, the lower-indexed one in the low half:
//   A (16 x 16, row): reg j = rows g + 8 * (j % 2), cols 2t + 8 * (j / 2) + {0, 1}
//   B (16 x 8, col):  reg j = rows (k) 2t + 8 * j + {0, 1}, col (n) g
//   C/D (16 x 8 f32): elem i = row g + 8 * (i / 2), col 2t + i % 2
//   C/D (16 x 8 f16): the same elements, reg j holding elements 2j (low half) and 2j + 1
// Under TL_EMULATE the instruction is replaced by its twin in device/emu/mma_emu.h,
// which computes D from the same registers through this layout, read backwards.
#pragma once

#ifdef TL_EMULATE
#include "../emu/mma_emu.h"
#define TL_MMA_UNROLL
#else
#define TL_MMA_UNROLL _Pragma("unroll")
#endif

namespace tl {
namespace mma {

template <class T>
struct Operand;  // which PTX operand type a 16-bit storage type is
template <>
struct Operand<half_t> {
  static constexpr bool bf16 = false;
};
template <>
struct Operand<bfloat16_t> {
  static constexpr bool bf16 = true;
};

template <class A, class B>
constexpr bool same_type = false;
template <class A>
constexpr bool same_type<A, A> = true;

TL_DEVICE uint32_t pack(uint16_t lo, uint16_t hi) {
  return uint32_t(lo) | (uint32_t(hi) << 16);
}

// Element (row, col) of op(X), where X is stored row-major with leading dimension ld.
template <bool Trans, class T>
TL_DEVICE uint16_t at(const T* x, int64_t ld, int row, int col) {
  return Trans ? x[col * ld + row].bits : x[row * ld + col].bits;
}

// D += A * B for one 16 x 8 x 16 tile, per lane: a[4], b[2], d[4] as laid out above.
template <bool Bf16>
TL_DEVICE void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef TL_EMULATE
  emu::mma_m16n8k16_f32(d, a, b, Bf16);
#else
  if constexpr (Bf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    // sm_75: two m16n8k8, K 0-7 (a0, a1, b0) then K 8-15 (a2, a3, b1), whose fragments
    // are those halves of the m16n8k16 ones.
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
  }
#endif
}

// D += A * B, 16 x 8 x 16, f16 operands and f16 accumulators: d[0] holds C/D
// elements 0 (low half) and 1, d[1] elements 2 and 3, at the positions of the f32
// form. The tensor cores add the instruction's 16 products to the accumulator in
// a wider format and round to f16 once (the emulator's twin does the same; see
// docs/design/cuda_lowering.md, "f16 accumulators").
TL_DEVICE void mma_m16n8k16_f16acc(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef TL_EMULATE
  emu::mma_m16n8k16_f16(d, a, b);
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
               : "+r"(d[0]), "+r"(d[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// The same on the four half_t accumulators of one tile (4-byte aligned, as the
// compiler's 16-bit register arrays are), in C/D element order.
TL_DEVICE void mma_m16n8k16_f16acc(half_t* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef TL_EMULATE
  uint32_t r[2] = {load_pair(d), load_pair(d + 2)};
  mma_m16n8k16_f16acc(r, a, b);
  for (int i = 0; i < 4; ++i) d[i].bits = uint16_t(r[i / 2] >> (16 * (i % 2)));
#else
  mma_m16n8k16_f16acc(*reinterpret_cast<uint32_t(*)[2]>(d), a, b);
#endif
}

// One m16n8k16 on an f32 or (f16 operands only) f16 accumulator tile.
template <bool Bf16>
TL_DEVICE void mma_m16n8k16_acc(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  mma_m16n8k16<Bf16>(*reinterpret_cast<float(*)[4]>(d), a, b);
}
template <bool Bf16>
TL_DEVICE void mma_m16n8k16_acc(half_t* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(!Bf16, "mma.sync has no bf16 x bf16 -> f16 form: bfloat16 operands accumulate in float");
  mma_m16n8k16_f16acc(d, a, b);
}

// The largest of {cap, cap / 2, ..., 1} that divides n.
TL_DEVICE constexpr int chunk(int n, int cap) {
  while (n % cap != 0) cap /= 2;
  return cap;
}

}  // namespace mma

// C (M x N, fp32, or f16 for half_t operands) = [C +] op(A) (M x K) * op(B) (K x N);
// all three in shared memory, row-major with the given leading dimensions. Called
// by all WarpsM * WarpsN * 32 threads of the block.
template <int M, int N, int K, bool TransA, bool TransB, bool Clear, int WarpsM, int WarpsN, class TA, class TB,
          class TC>
TL_DEVICE void gemm_mma(const TA* A, int64_t lda, const TB* B, int64_t ldb, TC* C, int64_t ldc) {
  static_assert(sizeof(TA) == 2 && sizeof(TB) == 2, "gemm_mma takes 16-bit operands");
  static_assert(mma::Operand<TA>::bf16 == mma::Operand<TB>::bf16, "gemm_mma operands must have one dtype");
  static_assert(mma::same_type<TC, float> || (mma::same_type<TC, half_t> && !mma::Operand<TA>::bf16),
                "gemm_mma accumulates in float, or in half_t for half_t operands");
  static_assert(M % (16 * WarpsM) == 0 && N % (8 * WarpsN) == 0 && K % 16 == 0,
                "gemm_mma tile does not split into 16 x 8 x 16 mma tiles over the warps");
  constexpr bool kBf16 = mma::Operand<TA>::bf16;
  constexpr int kTilesM = M / WarpsM / 16, kTilesN = N / WarpsN / 8;  // mma tiles per warp
  constexpr int kChunkM = mma::chunk(kTilesM, 4), kChunkN = mma::chunk(kTilesN, 8);
  const int rank = int(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int warp = rank / 32 % (WarpsM * WarpsN), lane = rank % 32;  // (a T.ws region: modulo its warps)
  const int g = lane / 4, t = lane % 4;
  const int row0 = (warp / WarpsN) * (M / WarpsM), col0 = (warp % WarpsN) * (N / WarpsN);
  for (int cm = 0; cm < kTilesM; cm += kChunkM) {
    for (int cn = 0; cn < kTilesN; cn += kChunkN) {
      alignas(4) TC acc[kChunkM][kChunkN][4];
      TL_MMA_UNROLL for (int i = 0; i < kChunkM; ++i) {
        TL_MMA_UNROLL for (int j = 0; j < kChunkN; ++j) {
          TL_MMA_UNROLL for (int e = 0; e < 4; ++e) {
            const int r = row0 + (cm + i) * 16 + g + 8 * (e / 2), c = col0 + (cn + j) * 8 + 2 * t + e % 2;
            acc[i][j][e] = Clear ? TC(0.0f) : C[r * ldc + c];
          }
        }
      }
      for (int k0 = 0; k0 < K; k0 += 16) {
        uint32_t a[kChunkM][4], b[kChunkN][2];
        TL_MMA_UNROLL for (int i = 0; i < kChunkM; ++i) {
          TL_MMA_UNROLL for (int j = 0; j < 4; ++j) {
            const int r = row0 + (cm + i) * 16 + g + 8 * (j % 2), k = k0 + 2 * t + 8 * (j / 2);
            a[i][j] = mma::pack(mma::at<TransA>(A, lda, r, k), mma::at<TransA>(A, lda, r, k + 1));
          }
        }
        TL_MMA_UNROLL for (int j = 0; j < kChunkN; ++j) {
          TL_MMA_UNROLL for (int h = 0; h < 2; ++h) {
            const int k = k0 + 2 * t + 8 * h, n = col0 + (cn + j) * 8 + g;
            b[j][h] = mma::pack(mma::at<TransB>(B, ldb, k, n), mma::at<TransB>(B, ldb, k + 1, n));
          }
        }
        TL_MMA_UNROLL for (int i = 0; i < kChunkM; ++i) {
          TL_MMA_UNROLL for (int j = 0; j < kChunkN; ++j) mma::mma_m16n8k16_acc<kBf16>(acc[i][j], a[i], b[j]);
        }
      }
      TL_MMA_UNROLL for (int i = 0; i < kChunkM; ++i) {
        TL_MMA_UNROLL for (int j = 0; j < kChunkN; ++j) {
          TL_MMA_UNROLL for (int e = 0; e < 4; ++e) {
            const int r = row0 + (cm + i) * 16 + g + 8 * (e / 2), c = col0 + (cn + j) * 8 + 2 * t + e % 2;
            C[r * ldc + c] = acc[i][j][e];
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// tilelang.intrinsics (TensorCoreIntrinEmitter.mma): one m16n8 mma.sync on the
// fragment registers of the calling lane, handed over as the addresses of their
// elements in the kernel's local arrays (T.alloc_local), in PTX register order: A
// holds 4 registers' worth of elements, B 2, C the 4 accumulators (f32 or s32) or
// the 4 halves of an f16 accumulator. K is 16 for 16-bit operands and 32 for 8-bit
// ones. The emitter indexes the arrays with constants, so after inlining they stay
// in registers; the packing below reads whole elements (no alignment assumed).
// Every lane of the warp must make the call, as with the instruction.
#define TL_MMA_SYNC_FRAG 1  // the emitter's kernels check for it (not cpu, not Metal)
namespace mma {

// Defined in gemm_sm80.cuh, which tl_cuda.cuh includes after this header.
template <bool Unsigned>
TL_DEVICE void mma_m16n8k32_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[2]);
template <bool AE5m2, bool BE5m2>
TL_DEVICE void mma_m16n8k32_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]);

template <class T>
TL_DEVICE uint32_t raw_bits(const T& v) {
  return v.bits;  // half_t, bfloat16_t, the fp8 types
}
TL_DEVICE uint32_t raw_bits(int8_t v) {
  return uint8_t(v);
}
TL_DEVICE uint32_t raw_bits(uint8_t v) {
  return v;
}
// The inverse: element v from the low bits of b.
template <class T>
TL_DEVICE void set_raw_bits(T& v, uint32_t b) {
  v.bits = decltype(v.bits)(b);
}
TL_DEVICE void set_raw_bits(int8_t& v, uint32_t b) {
  v = int8_t(uint8_t(b));
}
TL_DEVICE void set_raw_bits(uint8_t& v, uint32_t b) {
  v = uint8_t(b);
}

// `N` registers of packed elements, the lower-indexed element in the lower bits.
template <int N, class T>
TL_DEVICE void pack_regs(uint32_t (&r)[N], const T* x) {
  constexpr int kPer = 4 / int(sizeof(T));
  TL_MMA_UNROLL for (int i = 0; i < N; ++i) {
    uint32_t v = 0;
    TL_MMA_UNROLL for (int p = 0; p < kPer; ++p) v |= raw_bits(x[i * kPer + p]) << (8 * int(sizeof(T)) * p);
    r[i] = v;
  }
}

}  // namespace mma

template <class TA, class TB, class TC>
TL_DEVICE void mma_sync_frag(TC* c, const TA* a, const TB* b) {
  static_assert(sizeof(TA) == sizeof(TB), "tl::mma_sync_frag: A and B must have the same element size");
  uint32_t ra[4], rb[2];
  mma::pack_regs(ra, a);
  mma::pack_regs(rb, b);
  if constexpr (sizeof(TA) == 2 && mma::same_type<TC, float>) {
    static_assert(mma::same_type<TA, TB>, "tl::mma_sync_frag: A and B must both be half_t or both bfloat16_t");
    float d[4] = {c[0], c[1], c[2], c[3]};
    mma::mma_m16n8k16<mma::Operand<TA>::bf16>(d, ra, rb);
    TL_MMA_UNROLL for (int i = 0; i < 4; ++i) c[i] = d[i];
  } else if constexpr (sizeof(TA) == 2 && mma::same_type<TC, half_t>) {
    static_assert(mma::same_type<TA, half_t> && mma::same_type<TB, half_t>,
                  "tl::mma_sync_frag: f16 accumulators need half_t operands");
    uint32_t d[2];
    mma::pack_regs(d, c);
    mma::mma_m16n8k16_f16acc(d, ra, rb);
    TL_MMA_UNROLL for (int i = 0; i < 4; ++i) c[i].bits = uint16_t(d[i / 2] >> (16 * (i % 2)));
  } else if constexpr (sizeof(TA) == 1 && mma::same_type<TC, int32_t>) {
    static_assert(mma::same_type<TA, TB>, "tl::mma_sync_frag: A and B must both be int8_t or both uint8_t");
    mma::mma_m16n8k32_s32<mma::same_type<TA, uint8_t>>(c, ra, rb);
  } else if constexpr (sizeof(TA) == 1 && mma::same_type<TC, float>) {
    mma::mma_m16n8k32_f8<mma::same_type<TA, float8_e5m2_t>, mma::same_type<TB, float8_e5m2_t>>(c, ra, rb);
  } else {
    static_assert(sizeof(TC) == 0, "tl::mma_sync_frag: unsupported operand / accumulator types");
  }
}

}  // namespace tl

#undef TL_MMA_UNROLL
