// T.gemm on tensor cores, fast path for sm_80+: operands come from swizzled
// shared-memory tiles (swizzle.cuh) through ldmatrix, the accumulator stays in
// registers across calls, and every thread of the block calls tl::gemm_ss (or
// tl::gemm_rs, A already in registers) once per K tile of a cp.async pipeline.
//
// Warps split the M x N tile into WarpsM x WarpsN warp tiles of (M / WarpsM) x
// (N / WarpsN). The accumulator is the thread's array of MT * NT * 4 values, with
// MT = M / WarpsM / 16 and NT = N / WarpsN / 8 (docs/design/cuda_layouts.md):
//   acc[(mt * NT + nt) * 4 + e] = C[wm * M / WarpsM + mt * 16 + g + 8 * (e / 2)]
//                                  [wn * N / WarpsN + nt * 8 + 2 * q + e % 2]
// where warp = rank / 32, wm = warp / WarpsN, wn = warp % WarpsN, g = lane / 4 and
// q = lane % 4: the C/D fragment of mma.sync, tile after tile. The compiler indexes
// the accumulator with constants only, so it lives in registers. Its type is float
// (int32_t for 8-bit integers), or half_t for half_t operands: the f16-accumulator
// mma (.f16.f16.f16.f16), whose C/D registers pack elements e = 0, 1 and e = 2, 3
// of a tile as f16x2 pairs, so the same indices hold the same elements.
//
// One mma k-step reads 32 bytes of K for every type (16 fp16/bf16, 8 tf32, 32
// int8 or fp8 elements), so the A operand of one m16 tile is a 16-row x 32-byte
// block of four 8 x 16-byte matrices, which one ldmatrix.x4 loads; the B operands
// of two n8 tiles likewise. When the tile stores K along its rows (A [M][K],
// B [N][K]), plain ldmatrix yields the mma fragments for every type; when it
// stores M or N along its rows, ldmatrix.trans does for 16-bit types, and
// tf32/int8/fp8 fall back to element loads (slower, correct). tf32 operands are
// rounded to nearest (cvt.rna). fp8 operands (float8_e4m3fn_t, float8_e5m2_t; A
// and B may differ) accumulate into float with the m16n8k32 e4m3/e5m2 mma of
// sm_89 and later (on sm_90 through f16, see mma_m16n8k32_f8_via_f16); compiling
// them for an older GPU stops at a static_assert.
// Under TL_EMULATE ldmatrix and mma.sync are replaced by their twins
// (device/emu/ldmatrix_emu.h, mma_emu.h), which move the same data.
#pragma once

#include "gemm_mma.cuh"
#include "smem_addr.cuh"
#include "swizzle.cuh"

#ifdef TL_EMULATE
#include "../emu/ldmatrix_emu.h"
#define TL_SM80_UNROLL
#else
#define TL_SM80_UNROLL _Pragma("unroll")
#endif

namespace tl {

// Loads Num (1, 2, 4) 8x8 matrices of 16-bit elements; lanes 8i..8i+7 supply the
// shared addresses of the rows of matrix i, register i receives matrix i.
template <int Num, bool Trans>
TL_DEVICE void ldmatrix(uint32_t (&r)[Num], SmemAddr row_addr) {
  static_assert(Num == 1 || Num == 2 || Num == 4, "ldmatrix loads 1, 2 or 4 matrices");
#ifdef TL_EMULATE
  emu::ldmatrix<Num, Trans>(r, row_addr);
#else
  if constexpr (Num == 1 && Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(row_addr));
  } else if constexpr (Num == 1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(row_addr));
  } else if constexpr (Num == 2 && Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(row_addr));
  } else if constexpr (Num == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(row_addr));
  } else if constexpr (Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row_addr));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row_addr));
  }
#endif
}

namespace mma {

// cvt.rna.tf32.f32: the tf32 operand nearest to x, as 32 bits.
TL_DEVICE uint32_t to_tf32(uint32_t float_bits) {
#ifdef TL_EMULATE
  return emu::float_to_tf32_bits(tl::bit_cast<float>(float_bits));
#else
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(float_bits)));
  return r;
#endif
}

// D += A * B, 16 x 8 x 8, tf32 operands, f32 accumulators (C/D layout as m16n8k16).
TL_DEVICE void mma_m16n8k8_tf32(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef TL_EMULATE
  emu::mma_m16n8k8_tf32(d, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// D += A * B, 16 x 8 x 32, signed or unsigned 8-bit operands, s32 accumulators.
template <bool Unsigned>
TL_DEVICE void mma_m16n8k32_s32(int32_t* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef TL_EMULATE
  emu::mma_m16n8k32_s32(d, a, b, Unsigned);
#else
  if constexpr (Unsigned) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// Two fp8 values (bits 0-15 of x, the low byte first) as the f16x2 of the same
// values, the low one in the low half; exact, f16 holds every e4m3 and e5m2 value.
template <bool E5m2>
TL_DEVICE uint32_t f8x2_to_f16x2(uint32_t x) {
#ifdef TL_EMULATE
  return emu::f8x2_to_f16x2(uint16_t(x), E5m2);
#else
  uint32_t r;
  if constexpr (E5m2)
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;\n" : "=r"(r) : "h"(uint16_t(x)));
  else
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(uint16_t(x)));
  return r;
#endif
}

// mma_m16n8k32_f8 as two f16 m16n8k16: the sm_90 form. Hopper's tensor cores take
// fp8 only through wgmma, and ptxas lowers the fp8 mma.sync to this same sequence
// anyway, but converting here keeps it from holding converted copies of every
// fragment (a 64 x 64 warp tile then fits in registers). An fp8 register holds
// k = 4q .. 4q + 3 (+ 16 in the second half); its low and high byte pairs fill the
// f16 k slots 2q, 2q + 1 and 8 + 2q, 9 + 2q. A and B permute k alike, so the
// products and their sum are those of the fp8 instruction.
template <bool AE5m2, bool BE5m2>
TL_DEVICE void mma_m16n8k32_f8_via_f16(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  TL_SM80_UNROLL for (int h = 0; h < 2; ++h) {
    const uint32_t fa[4] = {f8x2_to_f16x2<AE5m2>(a[2 * h]), f8x2_to_f16x2<AE5m2>(a[2 * h + 1]),
                            f8x2_to_f16x2<AE5m2>(a[2 * h] >> 16), f8x2_to_f16x2<AE5m2>(a[2 * h + 1] >> 16)};
    const uint32_t fb[2] = {f8x2_to_f16x2<BE5m2>(b[h]), f8x2_to_f16x2<BE5m2>(b[h] >> 16)};
    mma_m16n8k16<false>(*reinterpret_cast<float(*)[4]>(d), fa, fb);
  }
}

// D += A * B, 16 x 8 x 32, fp8 operands (e4m3 or e5m2, each operand its own),
// f32 accumulators; sm_89 and later (through f16 on sm_90, see above). Fragments
// as the 8-bit integer m16n8k32.
template <bool AE5m2, bool BE5m2>
TL_DEVICE void mma_m16n8k32_f8(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(TL_EMULATE)
  emu::mma_m16n8k32_f8(d, a, b, AE5m2, BE5m2);
#elif __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1000
  mma_m16n8k32_f8_via_f16<AE5m2, BE5m2>(d, a, b);
#elif __CUDA_ARCH__ >= 890
#define TL_MMA_F8(atype, btype)                                                         \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." atype "." btype                 \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
  if constexpr (!AE5m2 && !BE5m2)
    TL_MMA_F8("e4m3", "e4m3");
  else if constexpr (!AE5m2)
    TL_MMA_F8("e4m3", "e5m2");
  else if constexpr (!BE5m2)
    TL_MMA_F8("e5m2", "e4m3");
  else
    TL_MMA_F8("e5m2", "e5m2");
#undef TL_MMA_F8
#elif defined(__CUDA_ARCH__)
  static_assert(AE5m2 && !AE5m2,
                "tl::gemm_ss: fp8 operands (float8_e4m3fn_t / float8_e5m2_t) need mma.sync m16n8k32 e4m3/e5m2, "
                "which sm_89 and later have: compile for sm_89+ or use half_t / bfloat16_t operands");
#endif
}

}  // namespace mma

namespace sm80 {

template <class A, class B>
using SameType = tl::is_same<A, B>;

// The PTX operand type of a storage type, its accumulator type and K per mma.sync.
enum class MmaKind { None, F16, Bf16, Tf32, S8, U8, E4m3, E5m2 };
template <MmaKind Kind, class Acc_, int Step>
struct MmaInfo {
  static constexpr MmaKind kKind = Kind;
  static constexpr bool kSupported = Kind != MmaKind::None;
  static constexpr bool kFp8 = Kind == MmaKind::E4m3 || Kind == MmaKind::E5m2;
  using Acc = Acc_;
  static constexpr int kStep = Step;
};
template <class T>
struct MmaOf : MmaInfo<MmaKind::None, float, 1> {};
template <>
struct MmaOf<half_t> : MmaInfo<MmaKind::F16, float, 16> {};
template <>
struct MmaOf<bfloat16_t> : MmaInfo<MmaKind::Bf16, float, 16> {};
template <>
struct MmaOf<float> : MmaInfo<MmaKind::Tf32, float, 8> {};
template <>
struct MmaOf<int8_t> : MmaInfo<MmaKind::S8, int32_t, 32> {};
template <>
struct MmaOf<uint8_t> : MmaInfo<MmaKind::U8, int32_t, 32> {};
template <>
struct MmaOf<float8_e4m3fn_t> : MmaInfo<MmaKind::E4m3, float, 32> {};
template <>
struct MmaOf<float8_e5m2_t> : MmaInfo<MmaKind::E5m2, float, 32> {};

// Whether Acc accumulates products of TA x TB: MmaOf's type, or half_t for half_t
// operands (mma.sync's f16-accumulator form; there is none for bf16 or the others).
template <class TA, class TB, class Acc>
constexpr bool kAccumulates = SameType<Acc, typename MmaOf<TA>::Acc>::value ||
                              (SameType<Acc, half_t>::value && SameType<TA, half_t>::value &&
                               SameType<TB, half_t>::value);

template <class TA, class TB, class Acc>
TL_DEVICE void mma_tile(Acc* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  constexpr MmaKind ka = MmaOf<TA>::kKind, kb = MmaOf<TB>::kKind;
  if constexpr (ka == MmaKind::F16 || ka == MmaKind::Bf16)
    mma::mma_m16n8k16_acc<ka == MmaKind::Bf16>(d, a, b);
  else if constexpr (ka == MmaKind::Tf32)
    mma::mma_m16n8k8_tf32(d, a, b);
  else if constexpr (ka == MmaKind::S8 || ka == MmaKind::U8)
    mma::mma_m16n8k32_s32<ka == MmaKind::U8>(d, a, b);
  else
    mma::mma_m16n8k32_f8<ka == MmaKind::E5m2, kb == MmaKind::E5m2>(d, a, b);
}

TL_DEVICE int thread_rank() {
  return int(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

// One lane's view of a swizzled operand tile (stored row length Cols) for the loads
// of 16-row (or 8-row) x 32-byte operand blocks. "mn" is the operand's M (A) or N
// (B) dim, "k" its K dim; KMajor tiles store mn along rows ([M][K] / [N][K]).
// Register j of a block holds matrix j, which covers mn half and k half
//   A (MnFirst):  (j % 2, j / 2)   -> the m16 tile's a0..a3
//   B:            (j / 2, j % 2)   -> b0, b1 of n8 tile 0, then of n8 tile 1
// and, inside a matrix, lane (g, q) holds mn = g and the k elements of part q.
template <int Cols, class T, bool KMajor, bool MnFirst>
struct SmemOperand {
  static constexpr int kElem = int(sizeof(T)), kVec = 16 / kElem;
  static constexpr int kStep = 32 / kElem, kPerReg = 4 / kElem;  // k per mma, k per register
  static constexpr bool kLdmatrix = KMajor || kElem == 2;        // else element loads
  static_assert(!kLdmatrix || (Cols * kElem) % 16 == 0,
                "gemm operand tile rows must be whole 16-byte chunks for ldmatrix");

  const T* tile;
  SmemAddr row_addr;  // the row this lane supplies to ldmatrix, in block (0, 0)
  int chunk, row_xor;
  int g, q;

  TL_DEVICE SmemOperand(const T* tile_, int lane) : tile(tile_), g(lane / 4), q(lane % 4) {
    const int m = lane / 8 % 4, r = lane % 8;
    const int mn_half = MnFirst ? m % 2 : m / 2, k_half = MnFirst ? m / 2 : m % 2;
    const int row = r + 8 * (KMajor ? mn_half : k_half);
    chunk = KMajor ? k_half : mn_half;
    row_xor = swizzle_xor<Cols, kElem>(r);  // all blocks start at multiples of 8 rows
    row_addr = smem_addr(tile_) + SmemAddr(row * Cols * kElem);
  }

  // Registers of the block at (mn0, k0); Num = 4: 16 mn x kStep, Num = 2: 8 mn x kStep.
  template <int Num>
  TL_DEVICE void load(uint32_t (&r)[Num], int mn0, int k0) const {
    if constexpr (kLdmatrix) {
      const int row0 = KMajor ? mn0 : k0, col0 = KMajor ? k0 : mn0;
      ldmatrix<Num, !KMajor>(r, row_addr + SmemAddr(row0 * Cols * kElem + (((col0 / kVec + chunk) ^ row_xor) * 16)));
    } else {
      TL_SM80_UNROLL for (int j = 0; j < Num; ++j) {
        const int mn_half = MnFirst ? j % 2 : j / 2, k_half = MnFirst ? j / 2 : j % 2;
        const int mn = mn0 + 8 * mn_half + g, k = k0 + (kStep / 2) * k_half + kPerReg * q;
        uint32_t bits = 0;
        TL_SM80_UNROLL for (int p = 0; p < kPerReg; ++p) bits |= element(mn, k + p) << (8 * kElem * p);
        r[j] = bits;
      }
    }
    if constexpr (SameType<T, float>::value) {
      TL_SM80_UNROLL for (int j = 0; j < Num; ++j) r[j] = mma::to_tf32(r[j]);
    }
  }

  TL_DEVICE uint32_t element(int mn, int k) const {
    const int off = KMajor ? swizzle_offset<Cols, kElem>(mn, k) : swizzle_offset<Cols, kElem>(k, mn);
    if constexpr (kElem == 1) return reinterpret_cast<const uint8_t*>(tile)[off];
    if constexpr (kElem == 2) return reinterpret_cast<const uint16_t*>(tile)[off];
    return reinterpret_cast<const uint32_t*>(tile)[off];
  }
};

// The B fragments of one k-step for all NT n8 tiles: x4 loads for pairs, x2 for an odd last tile.
template <int NT, class Operand>
TL_DEVICE void load_b(uint32_t (&b)[NT][2], const Operand& op, int n0, int k0) {
  TL_SM80_UNROLL for (int j = 0; j < NT / 2; ++j) {
    uint32_t r[4];
    op.template load<4>(r, n0 + 16 * j, k0);
    b[2 * j][0] = r[0];
    b[2 * j][1] = r[1];
    b[2 * j + 1][0] = r[2];
    b[2 * j + 1][1] = r[3];
  }
  if constexpr (NT % 2 == 1) op.template load<2>(b[NT - 1], n0 + 16 * (NT / 2), k0);
}

template <int MT, int NT, class TA, class TB, class Acc>
TL_DEVICE void mma_all(Acc* acc, const uint32_t (&a)[MT][4], const uint32_t (&b)[NT][2]) {
  TL_SM80_UNROLL for (int mt = 0; mt < MT; ++mt) {
    TL_SM80_UNROLL for (int nt = 0; nt < NT; ++nt) mma_tile<TA, TB>(acc + (mt * NT + nt) * 4, a[mt], b[nt]);
  }
}

template <int M, int N, int K, int WarpsM, int WarpsN, class TA, class TB, class TC>
TL_DEVICE void check_gemm_shape() {
  static_assert(MmaOf<TA>::kSupported && MmaOf<TB>::kSupported,
                "tl::gemm_ss/gemm_rs: element type must be half_t, bfloat16_t, float (tf32), int8_t, uint8_t, "
                "float8_e4m3fn_t or float8_e5m2_t");
  static_assert(SameType<TA, TB>::value || (MmaOf<TA>::kFp8 && MmaOf<TB>::kFp8),
                "tl::gemm_ss/gemm_rs: A and B must have the same element type (or both be fp8: e4m3fn / e5m2)");
  static_assert(kAccumulates<TA, TB, TC>,
                "tl::gemm_ss/gemm_rs: the accumulator must be float, or half_t for half_t operands (int32_t for "
                "int8_t / uint8_t operands); mma.sync has no bfloat16 accumulator");
  static_assert(M % (16 * WarpsM) == 0, "tl::gemm_ss/gemm_rs: M must be a multiple of 16 * WarpsM");
  static_assert(N % (8 * WarpsN) == 0, "tl::gemm_ss/gemm_rs: N must be a multiple of 8 * WarpsN");
  static_assert(K % MmaOf<TA>::kStep == 0,
                "tl::gemm_ss/gemm_rs: K must be a multiple of 32 bytes of the element type (16 fp16/bf16, 8 tf32, "
                "32 int8/fp8)");
}

}  // namespace sm80

// acc += op(A) * op(B) for the block's M x N x K tile; A is [M][K] ([K][M] when
// TransA), B is [K][N] ([N][K] when TransB), both swizzled in shared memory.
// Called by all WarpsM * WarpsN * 32 threads of the block, with the same arguments.
// LdA / LdB and ka0 / kb0: an operand that is a slice of a larger tile
// (T.gemm(A_s[:, k0:k0 + K], ...), B_s[:, 512:576]): LdA (LdB) is the tile's row
// length, A (B) points at the slice's first M (N) row or column in it, which starts
// a swizzle pattern (8 rows; 128 bytes of a row), and the gemm reads its K columns
// (rows when K runs along them) from ka0 (kb0) on, a multiple of one mma's K (32
// bytes) that may vary at run time.
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransA, bool TransB, int LdA = TransA ? M : K,
          int LdB = TransB ? K : N, class TA, class TB, class TC>
TL_DEVICE void gemm_ss(const TA* A, const TB* B, TC* acc, int ka0 = 0, int kb0 = 0) {
  sm80::check_gemm_shape<M, N, K, WarpsM, WarpsN, TA, TB, TC>();
  static_assert(LdA >= (TransA ? M : K) && LdB >= (TransB ? K : N), "tl::gemm_ss: an operand tile is too narrow");
  constexpr int kStep = sm80::MmaOf<TA>::kStep, kSteps = K / kStep;
  constexpr int MT = M / WarpsM / 16, NT = N / WarpsN / 8;
  const int rank = sm80::thread_rank(), warp = rank / 32 % (WarpsM * WarpsN), lane = rank % 32;
  const int m0 = warp / WarpsN * (M / WarpsM), n0 = warp % WarpsN * (N / WarpsN);
  const sm80::SmemOperand<LdA, TA, !TransA, true> a_op(A, lane);
  const sm80::SmemOperand<LdB, TB, TransB, false> b_op(B, lane);
  // Two sets of fragments: the loads of k-step s + 1 are issued before the mmas of s.
  uint32_t a[2][MT][4], b[2][NT][2];
  TL_SM80_UNROLL for (int mt = 0; mt < MT; ++mt) a_op.template load<4>(a[0][mt], m0 + 16 * mt, ka0);
  sm80::load_b(b[0], b_op, n0, kb0);
  TL_SM80_UNROLL for (int s = 0; s < kSteps; ++s) {
    if (s + 1 < kSteps) {
      TL_SM80_UNROLL for (int mt = 0; mt < MT; ++mt)
          a_op.template load<4>(a[(s + 1) % 2][mt], m0 + 16 * mt, ka0 + (s + 1) * kStep);
      sm80::load_b(b[(s + 1) % 2], b_op, n0, kb0 + (s + 1) * kStep);
    }
    sm80::mma_all<MT, NT, TA, TB>(acc, a[s % 2], b[s % 2]);
  }
}

// acc += A * op(B) with A in registers: a_regs is the thread's fragment of the
// M x K matrix A in the accumulator layout above for warps (WarpsM, 1), i.e. K / 8
// n8 tiles per m16 tile: a_regs[(mt * (K / 8) + kt) * 4 + e]. A 16-bit fragment of
// mma k-step s is tiles 2s and 2s + 1: a0 = tile 2s elements 0, 1; a1 = its 2, 3;
// a2, a3 the same of tile 2s + 1. B is swizzled in shared memory as for gemm_ss
// (LdB and kb0: B a slice of a larger tile, as there).
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransB, int LdB = TransB ? K : N, class TA, class TB,
          class TC>
TL_DEVICE void gemm_rs(const TA* a_regs, const TB* B, TC* acc, int kb0 = 0) {
  sm80::check_gemm_shape<M, N, K, WarpsM, WarpsN, TA, TB, TC>();
  static_assert(LdB >= (TransB ? K : N), "tl::gemm_rs: the B tile is too narrow");
  static_assert(WarpsN == 1, "tl::gemm_rs: A in registers needs WarpsN == 1 (each warp owns whole rows of A)");
  static_assert(sizeof(TA) == 2, "tl::gemm_rs: A in registers must be half_t or bfloat16_t");
  constexpr int kSteps = K / 16, KT = K / 8, MT = M / WarpsM / 16, NT = N / 8;
  const int rank = sm80::thread_rank(), lane = rank % 32;
  const sm80::SmemOperand<LdB, TB, TransB, false> b_op(B, lane);
  uint32_t b[2][NT][2];
  sm80::load_b(b[0], b_op, 0, kb0);
  TL_SM80_UNROLL for (int s = 0; s < kSteps; ++s) {
    if (s + 1 < kSteps) sm80::load_b(b[(s + 1) % 2], b_op, 0, kb0 + (s + 1) * 16);
    uint32_t a[MT][4];
    TL_SM80_UNROLL for (int mt = 0; mt < MT; ++mt) {
      const TA* t0 = a_regs + (mt * KT + 2 * s) * 4;  // n8 tile 2s; tile 2s + 1 follows
      a[mt][0] = load_pair(t0 + 0);
      a[mt][1] = load_pair(t0 + 2);
      a[mt][2] = load_pair(t0 + 4);
      a[mt][3] = load_pair(t0 + 6);
    }
    sm80::mma_all<MT, NT, TA, TB>(acc, a, b[s % 2]);
  }
}

// tilelang.intrinsics' ldmatrix_a / ldmatrix_b: Num (1, 2, 4) 8 x 8 matrices of
// 16-byte rows into the lane's fragment registers, through the instruction. `row` is
// the address of the row this lane hands over (lanes 8i..8i+7: the rows of matrix
// i); register j lands in elements [j * P, (j + 1) * P) of `dst`, P = 4 / sizeof(T),
// the lower-indexed element from the lower bits, as tl::mma_sync_frag reads them.
// Every lane of the warp must make the call.
template <int Num, bool Trans, class T>
TL_DEVICE void ldmatrix_frag(T* dst, const T* row) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "tl::ldmatrix_frag moves 8- or 16-bit elements");
  static_assert(!Trans || sizeof(T) == 2, "tl::ldmatrix_frag: ldmatrix.trans moves 16-bit elements");
  uint32_t r[Num];
  ldmatrix<Num, Trans>(r, smem_addr(row));
  constexpr int kPer = 4 / int(sizeof(T));
  TL_SM80_UNROLL for (int j = 0; j < Num; ++j) {
    TL_SM80_UNROLL for (int p = 0; p < kPer; ++p)
        mma::set_raw_bits(dst[j * kPer + p], r[j] >> (8 * int(sizeof(T)) * p));
  }
}

}  // namespace tl

#undef TL_SM80_UNROLL
