// T.gemm_sp on the sparse tensor cores of sm_80+: C += op(A) * op(B) where A is a
// 2:4 structured-sparse tile given as its kept values A_sparse and its metadata E
// (the format of tilelang.utils.sparse.compress: one 4-bit code per 4 elements of
// K, row-major, the first group in the lowest bits of each element of E; code bits
// [1:0] the position of the group's first kept value, [3:2] the second's).
//
// Each warp runs mma.sp.sync.aligned.m16n8k32.row.col.f32.{f16,bf16} (sparsity
// selector 0; for 8-bit operands m16n8k64, below) on its tile of C, the accumulator layout of tl::gemm_ss
// (gemm_sm80.cuh). Per m16n8k32 step and lane (g = lane / 4, q = lane % 4):
//   A: the 16 x 16 block of kept values (16 rows of M x 32 elements of K) is the
//      A fragment of the dense m16n8k16, loaded from the swizzled A_sparse tile by
//      one ldmatrix.x4 (.trans when A_sparse is stored [K / 2][M]);
//   B: 32 x 8 per n8 tile, four registers: those of two dense m16n8k16 B fragments,
//      K 0-15 then K 16-31;
//   E: one register: bits [15:0] the 4 codes of row g of the m16 tile for K
//      16 * (q % 2) .. + 15 of the step, bits [31:16] the same for row g + 8. Lanes
//      q = 0, 1 are the pair the selector names; lanes 2, 3 load the same words.
// A zero code (what a zero-filled tail of E holds, whose A values are zeros too)
// is read as positions 0 and 1, a valid code with the same (zero) product.
// Under TL_EMULATE the instruction is replaced by its twin in device/emu/mma_emu.h.
#pragma once

#include "gemm_sm80.cuh"

#ifdef TL_EMULATE
#define TL_SP_UNROLL
#else
#define TL_SP_UNROLL _Pragma("unroll")
#endif

namespace tl {
namespace mma {

// D += A * B for one 16 x 8 x 32 tile with 2:4 sparse A: a[4] kept values, b[4],
// e the metadata, Selector the lane pair of each group of four that supplies it.
template <bool Bf16, int Selector = 0>
TL_DEVICE void mma_sp_m16n8k32(float* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e) {
  static_assert(Selector == 0 || Selector == 1, "mma.sp m16n8k32 f16/bf16 takes sparsity selector 0 or 1");
#ifdef TL_EMULATE
  emu::mma_sp_m16n8k32_f32(*reinterpret_cast<float(*)[4]>(d), a, b, e, Selector, Bf16);
#else
#define TL_MMA_SP(type)                                                                                          \
  asm volatile("mma.sp.sync.aligned.m16n8k32.row.col.f32." type "." type                                         \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, %13;\n"      \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                  \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e), \
                 "n"(Selector))
  if constexpr (Bf16)
    TL_MMA_SP("bf16");
  else
    TL_MMA_SP("f16");
#undef TL_MMA_SP
#endif
}

// D += A * B for one 16 x 64 x 64 tile with 2:4 sparse 8-bit A (sparsity selector 0,
// the only one this shape takes): a[4] the 16 x 32 kept values as the dense m16n8k32's
// A, b[4] the two dense m16n8k32 B fragments of K 0-31 and 32-63, e the metadata of
// row g + 8 * (q % 2), K 32 * (q / 2) .. + 31 (8 codes). s8 x s8 or u8 x u8 into s32.
template <bool Unsigned>
TL_DEVICE void mma_sp_m16n8k64_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e) {
#ifdef TL_EMULATE
  emu::mma_sp_m16n8k64_s32(d, a, b, e, Unsigned);
#else
#define TL_MMA_SP_S8(type)                                                                                  \
  asm volatile("mma.sp.sync.aligned.m16n8k64.row.col.s32." type "." type                                    \
               ".s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n" \
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                                             \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e))
  if constexpr (Unsigned)
    TL_MMA_SP_S8("u8");
  else
    TL_MMA_SP_S8("s8");
#undef TL_MMA_SP_S8
#endif
}

// The same for fp8 operands (e4m3 or e5m2, each operand its own) into f32: sm_89 and later.
template <bool AE5m2, bool BE5m2>
TL_DEVICE void mma_sp_m16n8k64_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e) {
#if defined(TL_EMULATE)
  emu::mma_sp_m16n8k64_f8(d, a, b, e, AE5m2, BE5m2);
#elif __CUDA_ARCH__ >= 890
#define TL_MMA_SP_F8(atype, btype)                                                                          \
  asm volatile("mma.sp.sync.aligned.m16n8k64.row.col.f32." atype "." btype                                  \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                             \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e))
  if constexpr (!AE5m2 && !BE5m2)
    TL_MMA_SP_F8("e4m3", "e4m3");
  else if constexpr (!AE5m2)
    TL_MMA_SP_F8("e4m3", "e5m2");
  else if constexpr (!BE5m2)
    TL_MMA_SP_F8("e5m2", "e4m3");
  else
    TL_MMA_SP_F8("e5m2", "e5m2");
#undef TL_MMA_SP_F8
#elif defined(__CUDA_ARCH__)
  static_assert(AE5m2 && !AE5m2,
                "tl::gemm_sp_ss: fp8 operands need mma.sp m16n8k64 e4m3/e5m2, which sm_89 and later have");
#endif
}

// Zero codes (4-bit groups) of a metadata word read as 0b0100: positions 0 and 1.
TL_DEVICE uint32_t sp_fix_zero_codes(uint32_t e) {
  const uint32_t any = e | (e >> 1) | (e >> 2) | (e >> 3);
  return e | ((~any & 0x11111111u) << 2);
}

}  // namespace mma

namespace sm80 {

// The 16 bits of codes of row `row`, 4-element groups grp .. grp + 3 (grp a multiple
// of 4), from the metadata tile E: [rows][groups / per] ([groups / per][rows] when
// TransE), `per` = codes per element (2, 4 or 8).
template <int Rows, int Groups, bool TransE, class TE>
TL_DEVICE uint32_t sp_codes16(const TE* E, int row, int grp) {
  constexpr int kPer = int(sizeof(TE)) * 2, kCols = Groups / kPer;
  auto word = [&](int col) {
    const TE v = TransE ? E[col * Rows + row] : E[row * kCols + col];
    return uint32_t(v) & (sizeof(TE) == 4 ? 0xffffffffu : ((1u << (8 * sizeof(TE))) - 1u));
  };
  if constexpr (kPer == 2) return word(grp / 2) | (word(grp / 2 + 1) << 8);
  return (word(grp / kPer) >> (4 * (grp % kPer))) & 0xffffu;
}

}  // namespace sm80

namespace sm80 {

// The sparse instruction of an operand pair: 16-bit types take m16n8k32 (16 kept
// values a row), 8-bit ones m16n8k64 (32 kept values a row).
template <class TA, class TB, class Acc>
TL_DEVICE void mma_sp_tile(Acc* d, const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e) {
  constexpr MmaKind ka = MmaOf<TA>::kKind, kb = MmaOf<TB>::kKind;
  if constexpr (ka == MmaKind::F16 || ka == MmaKind::Bf16)
    mma::mma_sp_m16n8k32<ka == MmaKind::Bf16>(d, a, b, e);
  else if constexpr (ka == MmaKind::S8 || ka == MmaKind::U8)
    mma::mma_sp_m16n8k64_s32<ka == MmaKind::U8>(d, a, b, e);
  else
    mma::mma_sp_m16n8k64_f8<ka == MmaKind::E5m2, kb == MmaKind::E5m2>(d, a, b, e);
}

}  // namespace sm80

// acc += op(A) * op(B) for the block's M x N x K tile (K the dense extent), A 2:4
// sparse: A_sparse is [M][K / 2] ([K / 2][M] when TransA) and B [K][N] ([N][K]
// when TransB), both swizzled in shared memory as tl::gemm_ss's operands; E is the
// plain (unswizzled) metadata tile [M][K / per] ([K / per][M] when TransE), per the
// 4-element groups one element of E describes. Called by all WarpsM * WarpsN * 32
// threads of the block with the same arguments; acc as for tl::gemm_ss.
// Operands: half_t or bfloat16_t (both the same) into float, on mma.sp m16n8k32;
// int8_t or uint8_t (both the same) into int32_t, and float8_e4m3fn_t /
// float8_e5m2_t (any mix, sm_89+) into float, on mma.sp m16n8k64, whose metadata
// register holds 8 codes of one row (row g + 8 * (q % 2), K 32 * (q / 2) .. + 31 of
// the step): every lane loads its own.
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransA, bool TransB, bool TransE, class TA, class TE,
          class TB, class TC>
TL_DEVICE void gemm_sp_ss(const TA* A, const TE* E, const TB* B, TC* acc) {
  constexpr bool k16bit = sizeof(TA) == 2;
  static_assert((k16bit && sm80::SameType<TA, TB>::value &&
                 (sm80::SameType<TA, half_t>::value || sm80::SameType<TA, bfloat16_t>::value)) ||
                    (sm80::SameType<TA, TB>::value &&
                     (sm80::SameType<TA, int8_t>::value || sm80::SameType<TA, uint8_t>::value)) ||
                    (sm80::MmaOf<TA>::kFp8 && sm80::MmaOf<TB>::kFp8),
                "tl::gemm_sp_ss: A and B must both be half_t, both bfloat16_t, both int8_t, both uint8_t, or fp8 "
                "(float8_e4m3fn_t / float8_e5m2_t)");
  static_assert(sm80::SameType<TC, typename sm80::MmaOf<TA>::Acc>::value,
                "tl::gemm_sp_ss: the accumulator must be float (int32_t for int8_t / uint8_t operands)");
  static_assert(sizeof(TE) == 1 || sizeof(TE) == 2 || sizeof(TE) == 4, "tl::gemm_sp_ss: E must be 8, 16 or 32 bit");
  // Kept values of a row per instruction (32 bytes), and the dense K it covers.
  constexpr int kKept = 32 / int(sizeof(TA)), kDense = 2 * kKept;
  static_assert(M % (16 * WarpsM) == 0, "tl::gemm_sp_ss: M must be a multiple of 16 * WarpsM");
  static_assert(N % (8 * WarpsN) == 0, "tl::gemm_sp_ss: N must be a multiple of 8 * WarpsN");
  static_assert(K % kDense == 0 && K % (8 * int(sizeof(TE))) == 0,
                "tl::gemm_sp_ss: K must be a multiple of 32 (64 for 8-bit operands) and of the elements one E "
                "element describes");
  constexpr int kSteps = K / kDense, MT = M / WarpsM / 16, NT = N / WarpsN / 8, kGroups = K / 4;
  const int rank = sm80::thread_rank(), warp = rank / 32 % (WarpsM * WarpsN), lane = rank % 32;
  const int g = lane / 4, q = lane % 4;
  const int m0 = warp / WarpsN * (M / WarpsM), n0 = warp % WarpsN * (N / WarpsN);
  const sm80::SmemOperand<TransA ? M : K / 2, TA, !TransA, true> a_op(A, lane);
  const sm80::SmemOperand<TransB ? K : N, TB, TransB, false> b_op(B, lane);
  // Two sets of fragments: the loads of k-step s + 1 are issued before the mmas of s.
  uint32_t a[2][MT][4], b[2][NT][4], e[2][MT];
  auto load = [&](int buf, int s) {
    TL_SP_UNROLL for (int mt = 0; mt < MT; ++mt) {
      a_op.template load<4>(a[buf][mt], m0 + 16 * mt, kKept * s);
      uint32_t codes;
      if constexpr (k16bit) {  // rows g and g + 8, K 16 (q % 2) .. + 15
        const int row = m0 + 16 * mt + g, grp = 8 * s + 4 * (q % 2);
        codes = sm80::sp_codes16<M, kGroups, TransE>(E, row, grp) |
                (sm80::sp_codes16<M, kGroups, TransE>(E, row + 8, grp) << 16);
      } else {  // row g + 8 (q % 2), K 32 (q / 2) .. + 31
        const int row = m0 + 16 * mt + g + 8 * (q % 2), grp = 16 * s + 8 * (q / 2);
        codes = sm80::sp_codes16<M, kGroups, TransE>(E, row, grp) |
                (sm80::sp_codes16<M, kGroups, TransE>(E, row, grp + 4) << 16);
      }
      e[buf][mt] = mma::sp_fix_zero_codes(codes);
    }
    uint32_t lo[NT][2], hi[NT][2];
    sm80::load_b(lo, b_op, n0, kDense * s);
    sm80::load_b(hi, b_op, n0, kDense * s + kKept);
    TL_SP_UNROLL for (int nt = 0; nt < NT; ++nt) {
      b[buf][nt][0] = lo[nt][0];
      b[buf][nt][1] = lo[nt][1];
      b[buf][nt][2] = hi[nt][0];
      b[buf][nt][3] = hi[nt][1];
    }
  };
  load(0, 0);
  TL_SP_UNROLL for (int s = 0; s < kSteps; ++s) {
    if (s + 1 < kSteps) load((s + 1) % 2, s + 1);
    TL_SP_UNROLL for (int mt = 0; mt < MT; ++mt) {
      TL_SP_UNROLL for (int nt = 0; nt < NT; ++nt)
          sm80::mma_sp_tile<TA, TB>(acc + (mt * NT + nt) * 4, a[s % 2][mt], b[s % 2][nt], e[s % 2][mt]);
    }
  }
}

}  // namespace tl

#undef TL_SP_UNROLL
