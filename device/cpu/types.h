// Low-precision float types for generated CPU code: storage-only structs that
// convert to and from float with round-to-nearest-even, as the GPU does. Arithmetic
// happens in float and rounds back on store, matching GPU results per operation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tl {

template <class To, class From>
inline To bit_cast(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of equal size");
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {                                  // half subnormal or zero
    float a = bit_cast<float>(abs);
    // Scale so that one half-subnormal ulp (2^-24) is 1, round to nearest even.
    float scaled = a * 16777216.0f;
    return uint16_t(sign | uint32_t(std::nearbyint(scaled)));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (abs >> 13));
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b) {
  return bit_cast<float>(uint32_t(b) << 16);
}

// Minifloats (fp8, fp4, e8m0), parameterised by their encoding rules.
//   E, M: exponent and mantissa bits; Bias: exponent bias;
//   Kind: 0 IEEE-like (inf and NaN at max exponent), 1 "fn" (no inf; NaN is all ones),
//         2 "fnuz" (no inf, no -0; NaN is 0x80), 3 e8m0 (exponent only, unsigned).
template <int E, int M, int Bias, int Kind>
struct MiniFloatCodec {
  static constexpr int kBits = 1 + E + M - (Kind == 3 ? 1 : 0);
  static constexpr uint8_t nan_bits() {
    return Kind == 2 ? 0x80 : Kind == 3 ? 0xff : uint8_t((1u << (E + M)) - 1);  // sign cleared
  }
  static double max_finite() {
    if (Kind == 3) return std::ldexp(1.0, 254 - Bias);
    int max_exp = (1 << E) - 1 - (Kind == 0 ? 1 : 0);
    double mant = Kind == 1 ? 2.0 - 2.0 * std::ldexp(1.0, -M) : 2.0 - std::ldexp(1.0, -M);
    if (Kind == 1 && M == 0) mant = 1.0;
    return std::ldexp(mant, max_exp - Bias);
  }
  static uint8_t encode(float f) {
    if (std::isnan(f)) return nan_bits();
    if (Kind == 3) {  // e8m0: round to the nearest power of two
      if (f <= 0) return nan_bits();
      int e = int(std::nearbyint(std::log2(double(f))));
      e = e + Bias;
      if (e < 0) e = 0;
      if (e > 254) e = 254;
      return uint8_t(e);
    }
    bool neg = std::signbit(f);
    double x = std::fabs(double(f));
    uint8_t sign = neg ? uint8_t(1u << (E + M)) : 0;
    if (std::isinf(f)) return Kind == 0 ? uint8_t(sign | (((1u << E) - 1) << M)) : nan_bits() | (Kind == 1 ? sign : 0);
    int min_normal_exp = 1 - Bias;
    int e;
    std::frexp(x, &e);
    e -= 1;  // x in [2^e, 2^(e+1))
    if (e < min_normal_exp) e = min_normal_exp;
    double quantum = std::ldexp(1.0, e - M);
    double q = std::nearbyint(x / quantum) * quantum;
    if (q > max_finite()) {
      if (Kind == 0) return uint8_t(sign | (((1u << E) - 1) << M));
      return Kind == 1 ? uint8_t(sign | nan_bits()) : nan_bits();
    }
    if (q == 0) return Kind == 2 ? 0 : sign;
    int qe;
    std::frexp(q, &qe);
    qe -= 1;
    uint32_t bits;
    if (qe < min_normal_exp) {
      bits = uint32_t(q / std::ldexp(1.0, min_normal_exp - M));
    } else {
      uint32_t mant = uint32_t(std::ldexp(q, -qe) * (1u << M)) - (1u << M);
      bits = (uint32_t(qe + Bias) << M) | mant;
    }
    return uint8_t(sign | bits);
  }
  static float decode(uint8_t b) {
    if (Kind == 3) return b == 0xff ? NAN : float(std::ldexp(1.0, int(b) - Bias));
    uint32_t sign = (b >> (E + M)) & 1u;
    uint32_t exp = (b >> M) & ((1u << E) - 1);
    uint32_t mant = b & ((1u << M) - 1);
    if (Kind == 2 && b == 0x80) return NAN;
    if (Kind == 1 && exp == (1u << E) - 1 && mant == (1u << M) - 1) return NAN;
    if (Kind == 0 && exp == (1u << E) - 1) return mant ? NAN : (sign ? -INFINITY : INFINITY);
    double v =
        exp == 0 ? std::ldexp(double(mant), 1 - Bias - M) : std::ldexp(1.0 + double(mant) / (1u << M), int(exp) - Bias);
    return float(sign ? -v : v);
  }
};

#define TL_DEFINE_FLOAT_STRUCT(Name, Storage, to_bits, from_bits)                      \
  struct Name {                                                                        \
    Storage bits;                                                                      \
    Name() = default;                                                                  \
    Name(float f) : bits(to_bits(f)) {}                                                \
    Name(double f) : bits(to_bits(float(f))) {}                                        \
    Name(int v) : bits(to_bits(float(v))) {}                                           \
    Name(int64_t v) : bits(to_bits(float(v))) {}                                       \
    Name(unsigned v) : bits(to_bits(float(v))) {}                                      \
    template <class T, class = decltype(float(std::declval<T>().bits), T::kIsTlFloat)> \
    explicit Name(const T& o) : bits(to_bits(float(o))) {}                             \
    static constexpr bool kIsTlFloat = true;                                           \
    operator float() const { return from_bits(bits); }                                 \
    static Name from_raw(Storage b) {                                                  \
      Name n;                                                                          \
      n.bits = b;                                                                      \
      return n;                                                                        \
    }                                                                                  \
  };

TL_DEFINE_FLOAT_STRUCT(half_t, uint16_t, float_to_half_bits, half_bits_to_float)
TL_DEFINE_FLOAT_STRUCT(bfloat16_t, uint16_t, float_to_bf16_bits, bf16_bits_to_float)
using E4M3FN = MiniFloatCodec<4, 3, 7, 1>;
using E5M2 = MiniFloatCodec<5, 2, 15, 0>;
using E4M3FNUZ = MiniFloatCodec<4, 3, 8, 2>;
using E5M2FNUZ = MiniFloatCodec<5, 2, 16, 2>;
using E8M0 = MiniFloatCodec<8, 0, 127, 3>;
TL_DEFINE_FLOAT_STRUCT(float8_e4m3fn_t, uint8_t, E4M3FN::encode, E4M3FN::decode)
TL_DEFINE_FLOAT_STRUCT(float8_e5m2_t, uint8_t, E5M2::encode, E5M2::decode)
TL_DEFINE_FLOAT_STRUCT(float8_e4m3fnuz_t, uint8_t, E4M3FNUZ::encode, E4M3FNUZ::decode)
TL_DEFINE_FLOAT_STRUCT(float8_e5m2fnuz_t, uint8_t, E5M2FNUZ::encode, E5M2FNUZ::decode)
TL_DEFINE_FLOAT_STRUCT(float8_e8m0fnu_t, uint8_t, E8M0::encode, E8M0::decode)
#undef TL_DEFINE_FLOAT_STRUCT

}  // namespace tl
