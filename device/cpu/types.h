// Low-precision float types for generated CPU code: storage-only structs that
// convert to and from float with round-to-nearest-even, as the GPU does. Arithmetic
// happens in float and rounds back on store, matching GPU results per operation.
// The fp8 / e8m0 conversions are device/common/minifloat.h, shared with CUDA.
#pragma once

#include <cstdint>
#include <utility>

#include "float_bits.h"

#ifndef TL_MINIFLOAT_FN
#define TL_MINIFLOAT_FN inline
#endif
#include "../common/minifloat.h"

namespace tl {

// float64 and integers convert with one rounding: float16 from float64 as numpy does
// (double_to_half_bits), bfloat16 and the minifloats through a float rounded to odd
// (minifloat.h), as ml_dtypes does. Integers of up to 32 bits are exact in float64.
inline float odd_float(double d) {
  return bit_cast<float>(float_bits_odd_of_double_bits(bit_cast<uint64_t>(d)));
}
inline float odd_float(int64_t v) {
  return bit_cast<float>(float_bits_odd_of_i64(v));
}
inline float odd_float(uint64_t v) {
  return bit_cast<float>(float_bits_odd_of_u64(v));
}

struct HalfCodec {
  static uint16_t encode(float f) { return float_to_half_bits(f); }
  static uint16_t encode(double d) { return double_to_half_bits(d); }
  template <class Int>
  static uint16_t encode_int(Int v) {  // |v| >= 65520 is inf whichever way it rounds
    return double_to_half_bits(double(v));
  }
  static float decode(uint16_t b) { return half_bits_to_float(b); }
};
struct BFloat16Codec {
  static uint16_t encode(float f) { return float_to_bf16_bits(f); }
  static uint16_t encode(double d) { return float_to_bf16_bits(odd_float(d)); }
  template <class Int>
  static uint16_t encode_int(Int v) {
    return float_to_bf16_bits(odd_float(v));
  }
  static float decode(uint16_t b) { return bf16_bits_to_float(b); }
};
template <class Bits>  // a codec of device/common/minifloat.h
struct MiniFloat {
  static uint8_t encode(float f) { return Bits::from_float_bits(bit_cast<uint32_t>(f)); }
  static uint8_t encode(double d) { return encode(odd_float(d)); }
  template <class Int>
  static uint8_t encode_int(Int v) {
    return encode(odd_float(v));
  }
  static float decode(uint8_t b) { return bit_cast<float>(Bits::to_float_bits(b)); }
};

#define TL_DEFINE_FLOAT_STRUCT(Name, Storage, Codec)                                   \
  struct Name {                                                                        \
    Storage bits;                                                                      \
    Name() = default;                                                                  \
    Name(float f) : bits(Codec::encode(f)) {}                                          \
    Name(double f) : bits(Codec::encode(f)) {}                                         \
    Name(int v) : bits(Codec::encode_int(int64_t(v))) {}                               \
    Name(unsigned v) : bits(Codec::encode_int(int64_t(v))) {}                          \
    Name(long v) : bits(Codec::encode_int(int64_t(v))) {}                              \
    Name(unsigned long v) : bits(Codec::encode_int(uint64_t(v))) {}                    \
    Name(long long v) : bits(Codec::encode_int(int64_t(v))) {}                         \
    Name(unsigned long long v) : bits(Codec::encode_int(uint64_t(v))) {}               \
    template <class T, class = decltype(float(std::declval<T>().bits), T::kIsTlFloat)> \
    explicit Name(const T& o) : bits(Codec::encode(float(o))) {}                       \
    static constexpr bool kIsTlFloat = true;                                           \
    operator float() const { return Codec::decode(bits); }                             \
    static Name from_raw(Storage b) {                                                  \
      Name n;                                                                          \
      n.bits = b;                                                                      \
      return n;                                                                        \
    }                                                                                  \
    static Name from_bits(Storage b) { return from_raw(b); }                           \
  };

TL_DEFINE_FLOAT_STRUCT(half_t, uint16_t, HalfCodec)
TL_DEFINE_FLOAT_STRUCT(bfloat16_t, uint16_t, BFloat16Codec)
TL_DEFINE_FLOAT_STRUCT(float8_e4m3fn_t, uint8_t, MiniFloat<E4M3FN>)
TL_DEFINE_FLOAT_STRUCT(float8_e5m2_t, uint8_t, MiniFloat<E5M2>)
TL_DEFINE_FLOAT_STRUCT(float8_e4m3fnuz_t, uint8_t, MiniFloat<E4M3FNUZ>)
TL_DEFINE_FLOAT_STRUCT(float8_e5m2fnuz_t, uint8_t, MiniFloat<E5M2FNUZ>)
TL_DEFINE_FLOAT_STRUCT(float8_e8m0fnu_t, uint8_t, MiniFloat<E8M0>)
TL_DEFINE_FLOAT_STRUCT(float4_e2m1fn_t, uint8_t, MiniFloat<E2M1>)  // saturating, as on the GPU
#undef TL_DEFINE_FLOAT_STRUCT

// `*byte = (*byte & ~clear) | set` for bits no other thread changes, atomically
// against the other bits of the byte: blocks run on several OS threads
// (device/common/sub_byte.h).
inline void atomic_nibble_update(uint8_t* byte, uint8_t clear, uint8_t set) {
  __atomic_fetch_and(byte, uint8_t(~clear), __ATOMIC_RELAXED);
  __atomic_fetch_or(byte, set, __ATOMIC_RELAXED);
}

}  // namespace tl

#ifndef TL_SUB_BYTE_FN
#define TL_SUB_BYTE_FN inline
#endif
#include "../common/sub_byte.h"  // int4 and packed element access
