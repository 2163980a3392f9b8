// Low-precision float types for generated CPU code: storage-only structs that
// convert to and from float with round-to-nearest-even, as the GPU does. Arithmetic
// happens in float and rounds back on store, matching GPU results per operation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "float_bits.h"

namespace tl {

// Minifloats (fp8, e8m0), parameterised by their encoding rules. Conversions
// match ml_dtypes bit for bit, NaN signs included.
//   E, M: exponent and mantissa bits; Bias: exponent bias;
//   Kind: 0 IEEE-like (inf and NaN at max exponent), 1 "fn" (no inf; NaN is all ones),
//         2 "fnuz" (no inf, no -0; NaN is 0x80), 3 e8m0 (exponent only, unsigned).
template <int E, int M, int Bias, int Kind>
struct MiniFloatCodec {
  static_assert(M >= 1 || Kind == 3, "only e8m0 has no mantissa");
  static constexpr uint32_t kSign = 1u << (E + M);
  static constexpr uint32_t kExpAllOnes = ((1u << E) - 1) << M;
  static constexpr uint32_t kMantAllOnes = (1u << M) - 1;
  // Largest finite magnitude, as bits.
  static constexpr uint32_t kMaxFinite = Kind == 0   ? kExpAllOnes - (1u << M) + kMantAllOnes
                                         : Kind == 1 ? kExpAllOnes + kMantAllOnes - 1
                                                     : kExpAllOnes + kMantAllOnes;
  static constexpr uint8_t nan_of(uint32_t sign) {
    return Kind == 0   ? uint8_t(sign | kExpAllOnes | (1u << (M - 1)))  // quiet NaN
           : Kind == 1 ? uint8_t(sign | kExpAllOnes | kMantAllOnes)
           : Kind == 2 ? uint8_t(0x80)
                       : uint8_t(0xff);
  }
  // Too large to represent (inf input or rounding past the largest finite value).
  static constexpr uint8_t overflow_of(uint32_t sign) { return Kind == 0 ? uint8_t(sign | kExpAllOnes) : nan_of(sign); }

  static uint8_t encode(float f) {
    uint32_t x = bit_cast<uint32_t>(f);
    uint32_t abs = x & 0x7fffffffu;
    if (Kind == 3) {  // positive powers of two; rounds half up on the float's mantissa
      if ((x >> 31) || abs == 0 || abs >= 0x7f800000u) return 0xff;
      if (abs < 0x800000u) return abs > 0x400000u ? 1 : 0;  // float subnormals: 2^-127 is code 0
      uint32_t r = (abs + 0x400000u) >> 23;
      return r > 254 ? uint8_t(0xff) : uint8_t(r);
    }
    uint32_t sign = (x >> 31) ? kSign : 0;
    if (abs > 0x7f800000u) return nan_of(sign);
    if (abs == 0x7f800000u) return overflow_of(sign);
    constexpr int kMinNormalExp = 1 - Bias;
    uint32_t bits;
    if (int(abs >> 23) - 127 < kMinNormalExp) {
      // Subnormal (or zero) in the target: count quanta of 2^(kMinNormalExp - M),
      // rounding to nearest even. A result of 2^M is the smallest normal, encoded alike.
      float scaled = bit_cast<float>(abs) * std::ldexp(1.0f, M - kMinNormalExp);
      bits = uint32_t(std::nearbyint(scaled));
    } else {
      constexpr int kShift = 23 - M;  // round the mantissa to M bits, nearest even
      uint32_t r = (abs + ((1u << (kShift - 1)) - 1) + ((abs >> kShift) & 1u)) >> kShift;
      bits = r - (uint32_t(127 - Bias) << M);  // rebias the exponent
    }
    if (bits > kMaxFinite) return overflow_of(sign);
    if (bits == 0 && Kind == 2) return 0;  // no negative zero
    return uint8_t(sign | bits);
  }

  static float decode(uint8_t b) {
    if (Kind == 3) return b == 0xff ? NAN : float(std::ldexp(1.0, int(b) - Bias));
    bool neg = (b & kSign) != 0;
    uint32_t exp = (b >> M) & ((1u << E) - 1);
    uint32_t mant = b & kMantAllOnes;
    bool is_nan = Kind == 2   ? b == 0x80
                  : Kind == 1 ? (b & ~kSign) == (kExpAllOnes | kMantAllOnes)
                              : exp == (1u << E) - 1 && mant != 0;
    if (is_nan) return neg ? -NAN : NAN;
    if (Kind == 0 && exp == (1u << E) - 1) return neg ? -INFINITY : INFINITY;
    double v =
        exp == 0 ? std::ldexp(double(mant), 1 - Bias - M) : std::ldexp(1.0 + double(mant) / (1u << M), int(exp) - Bias);
    return float(neg ? -v : v);
  }
};

// float16 converts float64 with one rounding (numpy); bfloat16 and the minifloats
// round float64 to float first, as ml_dtypes does.
struct HalfCodec {
  static uint16_t encode(float f) { return float_to_half_bits(f); }
  static uint16_t encode(double d) { return double_to_half_bits(d); }
  static float decode(uint16_t b) { return half_bits_to_float(b); }
};
struct BFloat16Codec {
  static uint16_t encode(float f) { return float_to_bf16_bits(f); }
  static uint16_t encode(double d) { return float_to_bf16_bits(float(d)); }
  static float decode(uint16_t b) { return bf16_bits_to_float(b); }
};
template <class Codec>
struct ViaFloat : Codec {
  using Codec::encode;
  static auto encode(double d) { return Codec::encode(float(d)); }
};

#define TL_DEFINE_FLOAT_STRUCT(Name, Storage, Codec)                                   \
  struct Name {                                                                        \
    Storage bits;                                                                      \
    Name() = default;                                                                  \
    Name(float f) : bits(Codec::encode(f)) {}                                          \
    Name(double f) : bits(Codec::encode(f)) {}                                         \
    Name(int v) : bits(Codec::encode(float(v))) {}                                     \
    Name(int64_t v) : bits(Codec::encode(float(v))) {}                                 \
    Name(unsigned v) : bits(Codec::encode(float(v))) {}                                \
    template <class T, class = decltype(float(std::declval<T>().bits), T::kIsTlFloat)> \
    explicit Name(const T& o) : bits(Codec::encode(float(o))) {}                       \
    static constexpr bool kIsTlFloat = true;                                           \
    operator float() const { return Codec::decode(bits); }                             \
    static Name from_raw(Storage b) {                                                  \
      Name n;                                                                          \
      n.bits = b;                                                                      \
      return n;                                                                        \
    }                                                                                  \
  };

using E4M3FN = MiniFloatCodec<4, 3, 7, 1>;
using E5M2 = MiniFloatCodec<5, 2, 15, 0>;
using E4M3FNUZ = MiniFloatCodec<4, 3, 8, 2>;
using E5M2FNUZ = MiniFloatCodec<5, 2, 16, 2>;
using E8M0 = MiniFloatCodec<8, 0, 127, 3>;
TL_DEFINE_FLOAT_STRUCT(half_t, uint16_t, HalfCodec)
TL_DEFINE_FLOAT_STRUCT(bfloat16_t, uint16_t, BFloat16Codec)
TL_DEFINE_FLOAT_STRUCT(float8_e4m3fn_t, uint8_t, ViaFloat<E4M3FN>)
TL_DEFINE_FLOAT_STRUCT(float8_e5m2_t, uint8_t, ViaFloat<E5M2>)
TL_DEFINE_FLOAT_STRUCT(float8_e4m3fnuz_t, uint8_t, ViaFloat<E4M3FNUZ>)
TL_DEFINE_FLOAT_STRUCT(float8_e5m2fnuz_t, uint8_t, ViaFloat<E5M2FNUZ>)
TL_DEFINE_FLOAT_STRUCT(float8_e8m0fnu_t, uint8_t, ViaFloat<E8M0>)
#undef TL_DEFINE_FLOAT_STRUCT

}  // namespace tl
