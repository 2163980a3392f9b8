"""C++/CUDA text of the decoders that `get_lop3_intrin_group` and `get_mxfp_intrin_group`
hand to kernels (`T.import_source(group["c_source"])`).

Every source returned starts with PRELUDE, the primitives the decoders are written in,
behind an include guard so that several groups imported into one module define them
once. Each primitive has two bodies: inline PTX when the file is compiled for a real
GPU (`__CUDA_ARCH__` defined, NVRTC), and plain C++ otherwise (the cpu target, and the
CUDA emulator, which compiles host C++ with TL_EMULATE). The decoders themselves are
one text on both paths, so the two give the same bits as long as the primitives do:
the C++ half-precision operations below compute in double (where sums and products of
two halves are exact, or close enough that one final rounding to half is the correct
rounding) and round to nearest-even once, as the f16x2 instructions do.

The group sources after the prelude are guarded by their own macro too, so importing
two groups, or one twice under different texts, never defines a function twice."""

PRELUDE = r"""
#ifndef TL_QUANTIZE_PRELUDE_
#define TL_QUANTIZE_PRELUDE_
#if defined(__CUDACC__) && !defined(TL_EMULATE)
#define TLQ_FN static __device__ __forceinline__
#else
#define TLQ_FN static inline
#endif

namespace tlq {

// ---- raw loads and stores of packed words ----
// On the GPU a word is one access where the element type is aligned for it, else
// assembled from narrower ones (registers of an int8 array need not be 4-aligned);
// here memcpy, which takes any address.
template <class T>
TLQ_FN uint32_t load_u16(const T* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (alignof(T) >= 2) {
    return *reinterpret_cast<const uint16_t*>(p);
  } else {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(p);
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8);
  }
#else
  uint16_t w;
  __builtin_memcpy(&w, (const void*)p, 2);
  return w;
#endif
}
template <class T>
TLQ_FN uint32_t load_u32(const T* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (alignof(T) >= 4) {
    return *reinterpret_cast<const uint32_t*>(p);
  } else if constexpr (alignof(T) >= 2) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    return (uint32_t)h[0] | ((uint32_t)h[1] << 16);
  } else {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(p);
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
  }
#else
  uint32_t w;
  __builtin_memcpy(&w, (const void*)p, 4);
  return w;
#endif
}
template <class T>
TLQ_FN uint32_t load_u8(const T* p) {
  return *reinterpret_cast<const uint8_t*>(p);
}
// bytes 4k .. 4k + 3 from p
template <class T>
TLQ_FN uint32_t load_word(const T* p, int k) {
  if constexpr (sizeof(T) <= 4 && 4 % sizeof(T) == 0) {
    return load_u32(p + k * (int)(4 / sizeof(T)));
  } else {
    return load_u32(reinterpret_cast<const uint8_t*>(p) + 4 * k);
  }
}
// element number `k` of a 16-bit output
template <class T>
TLQ_FN void store_u16(T* p, int k, uint32_t h) {
  static_assert(sizeof(T) == 2, "tilelang.quantize: the output elements must be 16-bit");
#if defined(__CUDA_ARCH__)
  reinterpret_cast<uint16_t*>(p)[k] = (uint16_t)h;
#else
  uint16_t v = (uint16_t)h;
  __builtin_memcpy((char*)(void*)p + 2 * k, &v, 2);
#endif
}
// word number `k` (4 bytes each) of the output
template <class T>
TLQ_FN void store_u32(T* p, int k, uint32_t w) {
#if defined(__CUDA_ARCH__)
  if constexpr (alignof(T) >= 4) {
    reinterpret_cast<uint32_t*>(p)[k] = w;
  } else if constexpr (alignof(T) >= 2) {
    uint16_t* h = reinterpret_cast<uint16_t*>(p) + 2 * k;
    h[0] = (uint16_t)w;
    h[1] = (uint16_t)(w >> 16);
  } else {
    uint8_t* b = reinterpret_cast<uint8_t*>(p) + 4 * k;
    b[0] = (uint8_t)w;
    b[1] = (uint8_t)(w >> 8);
    b[2] = (uint8_t)(w >> 16);
    b[3] = (uint8_t)(w >> 24);
  }
#else
  __builtin_memcpy((char*)(void*)p + 4 * k, &w, 4);
#endif
}
// a right shift that yields 0 for 32 and more (PTX shr clamps the same way)
TLQ_FN uint32_t shr(uint32_t w, int n) { return n < 32 ? w >> n : 0u; }
TLQ_FN uint32_t splat16(uint32_t h) { return (h & 0xffffu) | (h << 16); }
// four bytes minus `k` each, without borrows between bytes (every byte of w below 0x80)
TLQ_FN uint32_t bytes_minus(uint32_t w, uint32_t k) {
  return ((w | 0x80808080u) - k * 0x01010101u) ^ 0x80808080u;
}

// ---- primitives: (a & b) | c, the f16x2 operations, a byte swap ----
#if defined(__CUDA_ARCH__)
TLQ_FN uint32_t and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
TLQ_FN uint32_t h2_add(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLQ_FN uint32_t h2_sub(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLQ_FN uint32_t h2_fma(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
TLQ_FN uint32_t swap_bytes(uint32_t w) {
  uint32_t d;
  asm("prmt.b32 %0, %1, 0, 0x0123;" : "=r"(d) : "r"(w));
  return d;
}
template <class T>
TLQ_FN uint32_t half_bits(const T& v) {  // a 16-bit T is taken as IEEE half bits
  if constexpr (sizeof(T) == 2) {
    return load_u16(&v);
  } else {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"((float)v));
    return h;
  }
}
#else
TLQ_FN uint32_t and_or(uint32_t a, uint32_t b, uint32_t c) { return (a & b) | c; }
// IEEE half <-> double; every half is exact in double
TLQ_FN double h_to_d(uint32_t h) {
  const uint64_t sign = (uint64_t)(h & 0x8000u) << 48;
  const uint32_t ex = (h >> 10) & 31u, man = h & 1023u;
  if (ex == 0) {
    const double v = (double)man * 5.9604644775390625e-08;  // man * 2^-24
    return sign ? -v : v;
  }
  uint64_t bits = sign | ((uint64_t)man << 42);
  bits |= ex == 31 ? 0x7ff0000000000000ull : (uint64_t)(ex + 1008) << 52;
  double d;
  __builtin_memcpy(&d, &bits, 8);
  return d;
}
// round to nearest, ties to even; NaN gives 0x7fff as the GPU does
TLQ_FN uint32_t d_to_h(double d) {
  uint64_t bits;
  __builtin_memcpy(&bits, &d, 8);
  const uint32_t sign = (uint32_t)(bits >> 48) & 0x8000u;
  const uint64_t mag = bits & 0x7fffffffffffffffull;
  if (mag > 0x7ff0000000000000ull) return 0x7fffu;
  const int e = (int)(mag >> 52) - 1023;  // the binade of |d|
  if (e >= 16) return sign | 0x7c00u;      // 2^16 and up (and infinity)
  if (e < -26) return sign;                // below a quarter of the smallest subnormal
  const uint64_t sig = (mag & 0xfffffffffffffull) | (1ull << 52);
  // count units of the result's last place: 2^(e-10) for normals, 2^-24 below 2^-14
  const int drop = e >= -14 ? 42 : 28 - e;
  uint64_t q = sig >> drop;
  const uint64_t rest = sig & ((1ull << drop) - 1), half_unit = 1ull << (drop - 1);
  if (rest > half_unit || (rest == half_unit && (q & 1))) ++q;
  // a normal's q carries the implicit 1024; adding the exponent above it lets a
  // round-up carry into the next binade (and 65520 and up into infinity)
  const uint32_t h = e >= -14 ? (uint32_t)(((e + 14) << 10) + q) : (uint32_t)q;
  return sign | h;
}
TLQ_FN uint32_t h2_join(uint32_t lo, uint32_t hi) { return (lo & 0xffffu) | (hi << 16); }
TLQ_FN uint32_t h2_add(uint32_t a, uint32_t b) {
  return h2_join(d_to_h(h_to_d(a & 0xffffu) + h_to_d(b & 0xffffu)),
                 d_to_h(h_to_d(a >> 16) + h_to_d(b >> 16)));
}
TLQ_FN uint32_t h2_sub(uint32_t a, uint32_t b) {
  return h2_join(d_to_h(h_to_d(a & 0xffffu) - h_to_d(b & 0xffffu)),
                 d_to_h(h_to_d(a >> 16) - h_to_d(b >> 16)));
}
TLQ_FN uint32_t h2_fma(uint32_t a, uint32_t b, uint32_t c) {
  // the product of two halves is exact in double; adding c rounds at most once more,
  // and only where that rounding cannot move the value across a half-precision tie
  return h2_join(d_to_h(h_to_d(a & 0xffffu) * h_to_d(b & 0xffffu) + h_to_d(c & 0xffffu)),
                 d_to_h(h_to_d(a >> 16) * h_to_d(b >> 16) + h_to_d(c >> 16)));
}
TLQ_FN uint32_t swap_bytes(uint32_t w) {
  return (w >> 24) | ((w >> 8) & 0xff00u) | ((w << 8) & 0xff0000u) | (w << 24);
}
template <class T>
TLQ_FN uint32_t half_bits(const T& v) {  // a 16-bit T is taken as IEEE half bits
  if constexpr (sizeof(T) == 2) {
    return load_u16(&v);
  } else {
    return d_to_h((double)(float)v);
  }
}
#endif

// ---- FP4 (E2M1: sign, two exponent bits, one mantissa bit) to bfloat16 ----
// The bfloat16 of a nibble laid out as bfloat16 bits scaled down by 2^126: sign at
// bit 15, the exponent's two bits at 8..7, the mantissa bit at 6 (all other bits 0).
// Multiplying by 2^126 is exact, so the result is the FP4 value itself.
#if defined(__CUDA_ARCH__)
TLQ_FN uint32_t fp4_pair_to_bf16(uint32_t placed) {
  uint32_t d;  // times 2^126, plus -0 so that a zero keeps its sign
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(placed), "r"(0x7e807e80u), "r"(0x80008000u));
  return d;
}
#else
TLQ_FN uint32_t fp4_placed_to_bf16(uint32_t v) {
  const uint32_t sign = v & 0x8000u, ex = (v >> 7) & 3u, man = (v >> 6) & 1u;
  if (ex == 0) return man ? sign | 0x3f00u : sign;  // +-0.5 or +-0
  return sign | ((ex + 126u) << 7) | (man << 6);
}
TLQ_FN uint32_t fp4_pair_to_bf16(uint32_t placed) {
  return fp4_placed_to_bf16(placed & 0xffffu) | (fp4_placed_to_bf16(placed >> 16) << 16);
}
#endif
// a nibble (bit 3 sign, bits 2..1 exponent, bit 0 mantissa) placed as above
TLQ_FN uint32_t fp4_place(uint32_t nib) {
  return ((nib & 8u) << 12) | ((nib & 6u) << 6) | ((nib & 1u) << 6);
}

// ---- the integer-to-half decoders ----
// Fields are turned into halves by OR-ing them into the mantissa of 1024.0 (0x6400):
// each step makes two halves, 1024 + field, in the two 16-bit lanes of a word.
enum { kNoScale = 0, kScale, kZerosOriginal, kZerosRescale, kZerosRescaleAfter, kZerosQuantized };

// The word whose fields step i shifts out: for 4 bits the 32-bit word itself (step i
// reads fields i and 4 + i); for 2 bits the two bytes moved to bits 0..7 and 16..23;
// for 1 bit the byte's two nibbles moved to bits 0..3 and 16..19.
template <int Bits, class T>
TLQ_FN uint32_t spread_fields(const T* src) {
  if constexpr (Bits == 4) {
    return load_u32(src);
  } else if constexpr (Bits == 2) {
    const uint32_t v = load_u16(src);
    return (v & 0xffu) | ((v & 0xff00u) << 8);
  } else {
    const uint32_t v = load_u8(src);
    return (v & 0x0fu) | ((v & 0xf0u) << 12);
  }
}

// n outputs (n / 2 steps). The first n / 4 steps use scale_lo / zeros_lo, the rest
// scale_hi / zeros_hi (the "_offset" decoders; the others pass the same value twice).
// The zeros words arrive ready for the mode: the half itself (original, rescale
// after), its negation for the fused rescale, or -(1024 + zero) for quantized zeros.
template <int Bits, bool Signed, int Mode, class T1, class T2>
TLQ_FN void ints_to_f16(const T1* src, T2* dst, int n, uint32_t scale_lo, uint32_t scale_hi,
                        uint32_t zeros_lo, uint32_t zeros_hi) {
  constexpr uint32_t mask = Bits == 4 ? 0x000f000fu : Bits == 2 ? 0x00030003u : 0x00010001u;
  // what the signed decoders take off: 8 for 4 bits, 2 for 2 bits; 1 bit maps to +-1
  constexpr uint32_t bias = !Signed || Bits == 1 ? 0x64006400u
                            : Bits == 4          ? 0x64086408u
                                                 : 0x64026402u;
  const uint32_t w = spread_fields<Bits>(src);
  for (int i = 0; i < n / 2; ++i) {
    const bool lo = i < n / 4;
    const uint32_t s = lo ? scale_lo : scale_hi, z = lo ? zeros_lo : zeros_hi;
    uint32_t h = and_or(shr(w, Bits * i), mask, 0x64006400u);
    if constexpr (Mode == kZerosQuantized) {
      h = h2_add(h, z);
    } else {
      h = h2_sub(h, bias);
      if constexpr (Signed && Bits == 1) {
        h = h2_add(h, h);
        h = h2_add(h, 0xbc00bc00u);  // 2x - 1
      }
      if constexpr (Mode == kZerosOriginal) h = h2_sub(h, z);
    }
    if constexpr (Mode == kZerosRescale) {
      h = h2_fma(h, s, z);
    } else if constexpr (Mode != kNoScale) {
      h = h2_fma(h, s, 0u);
    }
    if constexpr (Mode == kZerosRescaleAfter) h = h2_sub(h, z);
    store_u32(dst, i, h);
  }
}

// -(1024 + zero) in both lanes, from the zero's low 16 bits as they are stored
TLQ_FN uint32_t quantized_zero(int zero16) {
  const uint32_t lane = (uint32_t)(0xe400 | zero16);
  return (lane << 16) | lane;
}
template <class T>
TLQ_FN int raw_i16(const T* p) {
  return (int)(int16_t)load_u16(p);
}

// ---- the integer-to-int8 / int4 decoders (bytes in, bytes out) ----
// n int8 outputs from n 4-bit fields in two words: output word i holds, in its four
// bytes, the low (i = 0) or high (i = 1) nibbles of the first word's bytes; words 2
// and 3 the same from the second word. Signed takes 7 off each byte.
template <bool Signed, class T1, class T2>
TLQ_FN void i4_to_i8(const T1* src, T2* dst, int n) {
  const uint32_t w0 = load_word(src, 0), w1 = load_word(src, 1);
  for (int i = 0; i < n / 8; ++i) {
    uint32_t a = and_or(shr(w0, 4 * i), 0x0f0f0f0fu, 0u);
    uint32_t b = and_or(shr(w1, 4 * i), 0x0f0f0f0fu, 0u);
    if constexpr (Signed) {
      a = bytes_minus(a, 7u);
      b = bytes_minus(b, 7u);
    }
    store_u32(dst, i, a);
    store_u32(dst, i + 2, b);
  }
}
// n int8 outputs from a word of 2-bit fields: output word i gets field i of each byte.
// Signed takes 2 off each byte.
template <bool Signed, class T1, class T2>
TLQ_FN void i2_to_i8(const T1* src, T2* dst, int n) {
  const uint32_t w = load_u32(src);
  for (int i = 0; i < n / 4; ++i) {
    uint32_t a = and_or(shr(w, 2 * i), 0x03030303u, 0u);
    if constexpr (Signed) a = bytes_minus(a, 2u);
    store_u32(dst, i, a);
  }
}
// n int8 outputs from two bytes of bits: output word i gets bit i of the low nibble
// of byte 0, byte 1, then bit i of the high nibble of byte 0, byte 1. Signed maps a
// bit b to 2b - 1.
template <bool Signed, class T1, class T2>
TLQ_FN void i1_to_i8(const T1* src, T2* dst, int n) {
  const uint32_t v = load_u16(src);
  const uint32_t w = (v & 0x0f0fu) | ((v & 0xf0f0u) << 12);
  for (int i = 0; i < n / 4; ++i) {
    uint32_t a = and_or(shr(w, i), 0x01010101u, 0u);
    if constexpr (Signed) a = bytes_minus(a + a, 1u);
    store_u32(dst, i, a);
  }
}
// n int4 outputs (n / 8 words) from 2-bit fields: output word i keeps bits 0..1 of
// every nibble of input word i / 2 shifted right by 0 or 2 bits. Signed and unsigned
// are the same (as upstream's).
template <class T1, class T2>
TLQ_FN void i2_to_i4(const T1* src, T2* dst, int n) {
  for (int i = 0; i < n / 8; ++i) {
    const uint32_t w = load_word(src, i / 2);
    store_u32(dst, i, and_or(shr(w, 2 * (i % 2)), 0x33333333u, 0u));
  }
}

}  // namespace tlq
#endif  // TL_QUANTIZE_PRELUDE_
"""


def guarded(key, body):
    """PRELUDE, then `body` defined once per module however often it is imported."""
    macro = "TL_QUANTIZE_" + key.upper()
    return f"{PRELUDE}\n#ifndef {macro}\n#define {macro}\n{body.strip()}\n#endif  // {macro}\n"
