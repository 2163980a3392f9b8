// T.gemm on tensor cores, first step (issue 4): A, B and the fp32 accumulator C
// live in shared memory (no layout inference yet). tl::gemm_mma is a block-wide
// operation: every thread of the block calls it, between two barriers. Warps
// split C into WarpsM x WarpsN tiles (chosen by the compiler from the gemm's
// policy); each warp walks its tile in chunks of at most 64 x 64 accumulators
// held in registers, gathers the operand fragments of
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} from shared memory with
// 16-bit loads (ldmatrix and swizzled layouts come with layout inference), and
// writes the chunk back to C.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"), with g = lane / 4 and t = lane % 4; each .b32 register holds two
// 16-bit elements, the lower-indexed one in the low half:
//   A (16 x 16, row): reg j = rows g + 8 * (j % 2), cols 2t + 8 * (j / 2) + {0, 1}
//   B (16 x 8, col):  reg j = rows (k) 2t + 8 * j + {0, 1}, col (n) g
//   C/D (16 x 8 f32): elem i = row g + 8 * (i / 2), col 2t + i % 2
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
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// The largest of {cap, cap / 2, ..., 1} that divides n.
TL_DEVICE constexpr int chunk(int n, int cap) {
  while (n % cap != 0) cap /= 2;
  return cap;
}

}  // namespace mma

// C (M x N, fp32) = [C +] op(A) (M x K) * op(B) (K x N); all three in shared memory,
// row-major with the given leading dimensions. Called by all WarpsM * WarpsN * 32
// threads of the block.
template <int M, int N, int K, bool TransA, bool TransB, bool Clear, int WarpsM, int WarpsN, class TA, class TB>
TL_DEVICE void gemm_mma(const TA* A, int64_t lda, const TB* B, int64_t ldb, float* C, int64_t ldc) {
  static_assert(sizeof(TA) == 2 && sizeof(TB) == 2, "gemm_mma takes 16-bit operands");
  static_assert(mma::Operand<TA>::bf16 == mma::Operand<TB>::bf16, "gemm_mma operands must have one dtype");
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
      float acc[kChunkM][kChunkN][4];
      TL_MMA_UNROLL for (int i = 0; i < kChunkM; ++i) {
        TL_MMA_UNROLL for (int j = 0; j < kChunkN; ++j) {
          TL_MMA_UNROLL for (int e = 0; e < 4; ++e) {
            const int r = row0 + (cm + i) * 16 + g + 8 * (e / 2), c = col0 + (cn + j) * 8 + 2 * t + e % 2;
            acc[i][j][e] = Clear ? 0.0f : C[r * ldc + c];
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
          TL_MMA_UNROLL for (int j = 0; j < kChunkN; ++j) mma::mma_m16n8k16<kBf16>(acc[i][j], a[i], b[j]);
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

}  // namespace tl

#undef TL_MMA_UNROLL
