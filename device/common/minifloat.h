// Float <-> minifloat (the fp8 formats, e8m0 and fp4 e2m1) conversions at the bit level, one
// copy shared by the CPU types (device/cpu/types.h) and the CUDA header
// (device/cuda/tl_cuda.cuh), so that both targets round every value the same way:
// bit for bit as ml_dtypes does, NaN signs included (from_float_bits), or, for the
// CUDA target's e4m3fn and e5m2, saturating as the GPU's cvt.rn.satfinite does
// (from_float_bits_satfinite). Integer arithmetic only, no
// headers and no libm, so that it compiles as host C++, under NVRTC and in the CUDA
// emulation alike. The includer defines uint8_t, uint32_t, int64_t and uint64_t, and
// TL_MINIFLOAT_FN, the functions' qualifier (`inline` on the host,
// `__device__ __forceinline__` on the GPU).
//
// float64 and 64-bit integers reach the 16- and 8-bit formats with one rounding, as
// ml_dtypes (0.7 on) and numpy do: they narrow to float with round-to-odd first
// (truncate, then set the last bit if anything was cut off), after which float's
// round-to-nearest-even to a format of at most 11 significant bits is the same as
// rounding the wide value directly (float keeps 24 bits, two more than enough).
#pragma once

#ifndef TL_MINIFLOAT_FN
#error "define TL_MINIFLOAT_FN (the function qualifier) before including minifloat.h"
#endif

namespace tl {

// float64 (as its bits) -> float (as its bits), rounded to odd. NaN keeps its sign and
// top payload bits (quieted), as a C++ conversion does; a finite value past float's
// range becomes the largest float, which every narrower format overflows from.
TL_MINIFLOAT_FN uint32_t float_bits_odd_of_double_bits(uint64_t x) {
  const uint32_t sign = uint32_t(x >> 32) & 0x80000000u;
  const uint64_t abs = x & 0x7fffffffffffffffull;
  if (abs > 0x7ff0000000000000ull) return sign | 0x7fc00000u | uint32_t(abs >> 29 & 0x3fffffu);
  if (abs == 0x7ff0000000000000ull) return sign | 0x7f800000u;
  const int exp = int(abs >> 52) - 1023;  // unbiased; -1023 for zero and subnormals
  const uint64_t mant = abs & 0xfffffffffffffull;
  if (exp > 127) return sign | 0x7f7fffffu;
  if (exp >= -126) {  // a normal float: keep 23 of the 52 mantissa bits
    const uint32_t sticky = (mant & 0x1fffffffull) != 0;
    return sign | (uint32_t(exp + 127) << 23) | uint32_t(mant >> 29) | sticky;
  }
  if (exp == -1023) return sign | uint32_t(mant != 0);  // far below float's smallest
  // A float subnormal: the number of 2^-149 quanta in (2^52 + mant) * 2^(exp - 52).
  const uint64_t sig = mant | (1ull << 52);
  const int shift = -97 - exp;  // 30 .. 925
  if (shift > 63) return sign | 1u;
  return sign | uint32_t(sig >> shift) | uint32_t((sig & ((1ull << shift) - 1)) != 0);
}

// A 64-bit integer's magnitude `u` with sign bit `sign` -> float bits, rounded to odd.
TL_MINIFLOAT_FN uint32_t float_bits_odd_of_u64(uint64_t u, uint32_t sign = 0) {
  if (u < (1ull << 24)) {  // exact
    if (u == 0) return sign;
    int top = 23;
    while (!(u >> top)) --top;
    return sign | (uint32_t(top + 127) << 23) | (uint32_t(u << (23 - top)) & 0x7fffffu);
  }
  int top = 63;
  while (!(u >> top)) --top;
  const int shift = top - 23;
  const uint32_t sticky = (u & ((1ull << shift) - 1)) != 0;
  return sign | (uint32_t(top + 127) << 23) | (uint32_t(u >> shift) & 0x7fffffu) | sticky;
}

TL_MINIFLOAT_FN uint32_t float_bits_odd_of_i64(int64_t v) {
  return float_bits_odd_of_u64(v < 0 ? 0 - uint64_t(v) : uint64_t(v), v < 0 ? 0x80000000u : 0);
}

// What a format does with its top codes.
enum class MiniFloatKind {
  Ieee,                // inf and NaNs at the largest exponent (e5m2)
  FiniteNan,           // "fn": no inf; all ones is NaN, one per sign (e4m3fn)
  FiniteNanNoNegZero,  // "fnuz": no inf, no -0; 0x80 is the one NaN
  ExponentOnly,        // e8m0: an unsigned power of two; 0xff is NaN
};

// E exponent bits, M mantissa bits, exponent bias Bias. Floats convert with
// round-to-nearest-even (e8m0: half up, its subnormal-float range included); a value
// past the largest finite one becomes inf (Ieee) or NaN (the others), as in ml_dtypes:
// there is no saturation. from_float_bits_satfinite is the saturating variant.
template <int E, int M, int Bias, MiniFloatKind Kind>
struct MiniFloatCodec {
  static constexpr bool kExpOnly = Kind == MiniFloatKind::ExponentOnly;
  static_assert(E + M + (kExpOnly ? 0 : 1) == 8, "8-bit formats only");
  static_assert(M >= 1 || kExpOnly, "only e8m0 has no mantissa");
  static constexpr uint32_t kSign = kExpOnly ? 0 : 1u << (E + M);
  static constexpr uint32_t kExpAllOnes = ((1u << E) - 1) << M;
  static constexpr uint32_t kMantAllOnes = (1u << M) - 1;
  static constexpr int kMinNormalExp = 1 - Bias;
  // Largest finite magnitude, as bits.
  static constexpr uint32_t kMaxFinite = Kind == MiniFloatKind::Ieee        ? kExpAllOnes - 1
                                         : Kind == MiniFloatKind::FiniteNan ? kExpAllOnes + kMantAllOnes - 1
                                                                            : kExpAllOnes + kMantAllOnes;
  // The largest finite magnitude as float bits (a normal float for every format here).
  static constexpr uint32_t kMaxFiniteFloat =
      kExpOnly ? 0x7f000000u : (((kMaxFinite >> M) + 127 - Bias) << 23) | ((kMaxFinite & kMantAllOnes) << (23 - M));

  static TL_MINIFLOAT_FN uint8_t nan_of(uint32_t sign) {
    if (Kind == MiniFloatKind::Ieee) return uint8_t(sign | kExpAllOnes | ((1u << M) >> 1));  // quiet NaN
    if (Kind == MiniFloatKind::FiniteNan) return uint8_t(sign | kExpAllOnes | kMantAllOnes);
    return Kind == MiniFloatKind::FiniteNanNoNegZero ? uint8_t(0x80) : uint8_t(0xff);
  }
  // Too large to represent: an inf input, or rounding past the largest finite value.
  static TL_MINIFLOAT_FN uint8_t overflow_of(uint32_t sign) {
    return Kind == MiniFloatKind::Ieee ? uint8_t(sign | kExpAllOnes) : nan_of(sign);
  }

  // float (as its bits) -> code.
  static TL_MINIFLOAT_FN uint8_t from_float_bits(uint32_t x) {
    uint32_t abs = x & 0x7fffffffu;
    if (kExpOnly) {  // positive powers of two; rounds half up on the float's mantissa
      if ((x >> 31) || abs == 0 || abs >= 0x7f800000u) return 0xff;
      // Float subnormals: 2^-127 is code 0, and from 1.5 * 2^-127 on (half up, as for
      // normal floats) code 1; anything smaller is nearest to 2^-127, the least code.
      if (abs < 0x800000u) return abs >= 0x600000u ? 1 : 0;
      uint32_t r = (abs + 0x400000u) >> 23;
      return r > 254 ? uint8_t(0xff) : uint8_t(r);
    }
    uint32_t sign = (x >> 31) ? kSign : 0;
    if (abs > 0x7f800000u) return nan_of(sign);
    if (abs == 0x7f800000u) return overflow_of(sign);
    int exp = int(abs >> 23);  // biased; 0 for float subnormals
    uint32_t bits;
    if (exp - 127 < kMinNormalExp) {
      // Subnormal (or zero) in the target: the number of quanta of 2^(kMinNormalExp - M),
      // rounded to nearest even. |x| = sig * 2^(max(exp, 1) - 150); a result of 2^M is
      // the smallest normal, encoded alike.
      uint32_t sig = exp ? (abs & 0x7fffffu) | 0x800000u : abs;
      int shift = 150 + kMinNormalExp - M - (exp ? exp : 1);  // > 23 - M here
      bits = shift > 31 ? 0 : round_shift(sig, shift);
    } else {
      bits = round_shift(abs, 23 - M) - (uint32_t(127 - Bias) << M);  // rebias the exponent
    }
    if (bits > kMaxFinite) return overflow_of(sign);
    if (bits == 0 && Kind == MiniFloatKind::FiniteNanNoNegZero) return 0;
    return uint8_t(sign | bits);
  }

  // float (as its bits) -> code as PTX's cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 gives it
  // (CUDA's __NV_SATFINITE conversions, which TileLang's fp8 types use): round to
  // nearest even, but a finite value or an inf beyond the largest finite magnitude
  // becomes that magnitude with its sign, and every NaN the one NaN 0x7f (sign and
  // payload dropped, as the hardware and CUDA's software fallback do). Rounding is
  // monotone and the largest finite value is exact, so clamping |x| to it first and
  // then rounding is the same as rounding and then saturating. -0 stays -0.
  static TL_MINIFLOAT_FN uint8_t from_float_bits_satfinite(uint32_t x) {
    static_assert(Kind == MiniFloatKind::Ieee || Kind == MiniFloatKind::FiniteNan,
                  "cvt.rn.satfinite exists for e4m3 and e5m2 only");
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint8_t(kExpAllOnes | kMantAllOnes);
    return from_float_bits((x & 0x80000000u) | (abs < kMaxFiniteFloat ? abs : kMaxFiniteFloat));
  }

  // float (as its bits) -> e8m0 code as CUDA's __nv_cvt_float_to_e8m0(x, __NV_SATFINITE,
  // cudaRoundPosInf) gives it (TileLang's e8m0 type is CUDA's __nv_fp8_e8m0, whose
  // constructors convert so; sm_90 and earlier run it in software, sm_100 as
  // cvt.rp.satfinite.ue8m0x2): the sign is dropped and |x| rounds up to a power of two.
  // Zero and anything up to 2^-127 give code 0 (2^-127), a finite value or an inf
  // beyond 2^127 gives code 254 (2^127), a NaN code 255.
  static TL_MINIFLOAT_FN uint8_t from_float_bits_ceil_satfinite(uint32_t x) {
    static_assert(kExpOnly, "the round-up conversion is e8m0's");
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return 0xff;
    if (abs > 0x7f000000u) return 254;
    if (abs <= 0x400000u) return 0;
    const uint32_t exp = abs >> 23;  // 0 for float subnormals above 2^-127: code 1
    return uint8_t(exp == 0 ? 1 : exp + ((abs & 0x7fffffu) != 0));
  }

  // code -> float (as its bits); exact.
  static TL_MINIFLOAT_FN uint32_t to_float_bits(uint8_t b) {
    if (kExpOnly) return b == 0xff ? 0x7fc00000u : b == 0 ? 0x400000u : uint32_t(b) << 23;
    uint32_t sign = (b & kSign) ? 0x80000000u : 0;
    uint32_t exp = (b >> M) & ((1u << E) - 1);
    uint32_t mant = b & kMantAllOnes;
    bool is_nan = Kind == MiniFloatKind::FiniteNanNoNegZero ? b == 0x80
                  : Kind == MiniFloatKind::FiniteNan        ? (b & ~kSign) == (kExpAllOnes | kMantAllOnes)
                                                            : exp == (1u << E) - 1 && mant != 0;
    if (is_nan) return sign | 0x7fc00000u;
    if (Kind == MiniFloatKind::Ieee && exp == (1u << E) - 1) return sign | 0x7f800000u;
    if (exp != 0) return sign | ((exp + 127 - Bias) << 23) | (mant << (23 - M));
    if (mant == 0) return sign;
    // Subnormal: mant * 2^(kMinNormalExp - M), a normal float. Shift the leading one
    // up to the implicit bit's place (at most M - 1 steps).
    uint32_t float_exp = uint32_t(127 + kMinNormalExp);
    while (!(mant & (1u << M))) {
      mant <<= 1;
      --float_exp;
    }
    return sign | (float_exp << 23) | ((mant & kMantAllOnes) << (23 - M));
  }

 private:
  // v / 2^shift rounded to nearest even; 1 <= shift <= 31 and v < 2^31.
  static TL_MINIFLOAT_FN uint32_t round_shift(uint32_t v, int shift) {
    return (v + ((1u << (shift - 1)) - 1) + ((v >> shift) & 1u)) >> shift;
  }
};

// float4_e2m1fn: 1 sign, 2 exponent (bias 1) and 1 mantissa bit, codes 0..7 being
// 0, 0.5, 1, 1.5, 2, 3, 4, 6 and code | 8 their negatives. The format has no inf and
// no NaN; every target converts as CUDA's __nv_cvt_float_to_fp4(x, __NV_E2M1,
// cudaRoundNearest) and PTX's cvt.rn.satfinite.e2m1x2 do (TileLang's fp4 type is built
// on them): round to nearest even, a magnitude past 6 (inf included) saturates to 6
// with its sign, and a NaN becomes +6. (ml_dtypes differs only there: it gives 0.)
// A code lives in the low 4 bits of a byte; the high bits are ignored on reading.
struct E2M1 {
  static TL_MINIFLOAT_FN uint8_t from_float_bits(uint32_t x) {
    const uint32_t abs = x & 0x7fffffffu, sign = (x >> 31) ? 8u : 0u;
    if (abs > 0x7f800000u) return 7;                    // NaN: +6
    if (abs >= 0x40c00000u) return uint8_t(sign | 7u);  // 6 and beyond, inf included
    const uint32_t exp = abs >> 23;
    uint32_t code;
    if (exp < 127) {
      // Below 1: the number of halves, rounded to nearest even (2 is 1.0, encoded alike).
      // |x| = sig * 2^(exp - 150), so halves = sig / 2^(149 - exp); float subnormals are 0.
      const int shift = 149 - int(exp);
      code = exp == 0 || shift > 31 ? 0u : round_shift((abs & 0x7fffffu) | 0x800000u, shift);
    } else {
      // [1, 6): keep one mantissa bit and rebias the exponent (127 -> 1).
      code = round_shift(abs, 22) - (126u << 1);
    }
    return uint8_t(sign | code);
  }
  static TL_MINIFLOAT_FN uint32_t to_float_bits(uint8_t b) {
    const uint32_t sign = (b & 8u) ? 0x80000000u : 0u, mag = b & 7u;
    if (mag == 0) return sign;
    if (mag == 1) return sign | 0x3f000000u;  // 0.5
    return sign | (((mag >> 1) + 126u) << 23) | ((mag & 1u) << 22);
  }

 private:
  // v / 2^shift rounded to nearest even; 1 <= shift <= 31 and v < 2^31.
  static TL_MINIFLOAT_FN uint32_t round_shift(uint32_t v, int shift) {
    return (v + ((1u << (shift - 1)) - 1) + ((v >> shift) & 1u)) >> shift;
  }
};

using E4M3FN = MiniFloatCodec<4, 3, 7, MiniFloatKind::FiniteNan>;
using E5M2 = MiniFloatCodec<5, 2, 15, MiniFloatKind::Ieee>;
using E4M3FNUZ = MiniFloatCodec<4, 3, 8, MiniFloatKind::FiniteNanNoNegZero>;
using E5M2FNUZ = MiniFloatCodec<5, 2, 16, MiniFloatKind::FiniteNanNoNegZero>;
using E8M0 = MiniFloatCodec<8, 0, 127, MiniFloatKind::ExponentOnly>;

}  // namespace tl
