// Float <-> minifloat (the fp8 formats and e8m0) conversions at the bit level, one
// copy shared by the CPU types (device/cpu/types.h) and the CUDA header
// (device/cuda/tl_cuda.cuh), so that both targets round every value the same way:
// bit for bit as ml_dtypes does, NaN signs included. Integer arithmetic only, no
// headers and no libm, so that it compiles as host C++, under NVRTC and in the CUDA
// emulation alike. The includer defines uint8_t and uint32_t, and TL_MINIFLOAT_FN,
// the functions' qualifier (`inline` on the host, `__device__ __forceinline__` on
// the GPU).
#pragma once

#ifndef TL_MINIFLOAT_FN
#error "define TL_MINIFLOAT_FN (the function qualifier) before including minifloat.h"
#endif

namespace tl {

// What a format does with its top codes.
enum class MiniFloatKind {
  Ieee,                // inf and NaNs at the largest exponent (e5m2)
  FiniteNan,           // "fn": no inf; all ones is NaN, one per sign (e4m3fn)
  FiniteNanNoNegZero,  // "fnuz": no inf, no -0; 0x80 is the one NaN
  ExponentOnly,        // e8m0: an unsigned power of two; 0xff is NaN
};

// E exponent bits, M mantissa bits, exponent bias Bias. Floats convert with
// round-to-nearest-even (e8m0: half up); a value past the largest finite one becomes
// inf (Ieee) or NaN (the others), as in ml_dtypes: there is no saturation.
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
      if (abs < 0x800000u) return abs > 0x400000u ? 1 : 0;  // float subnormals: 2^-127 is code 0
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

using E4M3FN = MiniFloatCodec<4, 3, 7, MiniFloatKind::FiniteNan>;
using E5M2 = MiniFloatCodec<5, 2, 15, MiniFloatKind::Ieee>;
using E4M3FNUZ = MiniFloatCodec<4, 3, 8, MiniFloatKind::FiniteNanNoNegZero>;
using E5M2FNUZ = MiniFloatCodec<5, 2, 16, MiniFloatKind::FiniteNanNoNegZero>;
using E8M0 = MiniFloatCodec<8, 0, 127, MiniFloatKind::ExponentOnly>;

}  // namespace tl
