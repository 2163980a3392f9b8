// Bit-level conversions between float and the 16-bit float formats, with
// round-to-nearest-even as the GPU's cvt.rn does. Pure functions of the C++
// standard library only, shared by the CPU types (types.h) and by the emulation
// of CUDA's conversions (device/emu).
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

// float -> float16, round to nearest even. NaN keeps its sign and the top payload
// bits (a payload that would vanish becomes 1), as numpy does.
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    uint32_t payload = (abs & 0x7fffffu) >> 13;
    return uint16_t(sign | 0x7c00u | (payload ? payload : 1u));
  }
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf (or is inf)
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

// double -> float16 with a single rounding (numpy's float64 -> float16). Rounding
// to float first with round-to-odd keeps enough bits that the second rounding is
// exact: float carries 24 bits, more than the 11 + 2 that half needs.
inline uint16_t double_to_half_bits(double d) {
  if (std::isnan(d)) {
    uint64_t x = bit_cast<uint64_t>(d);
    uint32_t payload = uint32_t((x >> 42) & 0x3ffu);
    return uint16_t(uint32_t(x >> 48 & 0x8000u) | 0x7c00u | (payload ? payload : 1u));
  }
  if (std::fabs(d) >= 65520.0) return float_to_half_bits(float(d));  // inf either way
  float f = float(d);
  if (double(f) != d) {
    if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // truncate
    f = bit_cast<float>(bit_cast<uint32_t>(f) | 1u);                       // sticky bit
  }
  return float_to_half_bits(f);
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

// float -> bfloat16, round to nearest even; NaN becomes the quiet NaN of its sign
// (ml_dtypes' behaviour).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t(((x >> 16) & 0x8000u) | 0x7fc0u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b) {
  return bit_cast<float>(uint32_t(b) << 16);
}

}  // namespace tl
