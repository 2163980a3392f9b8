// Packed pairs: two values of one float type computed by one instruction (add.rn.f16x2,
// fma.rn.bf16x2, max.f16x2 ...). The code generator calls them for T.add2 ... T.abs2
// and for the element loops of T.Parallel that it vectorizes (two lanes of a float16 /
// bfloat16 add, sub, mul, mul + add, max or min per instruction), as
//   tl::add2<tl::__half2>(&out[0], &a[0], &b[0]);   // out[0..1] = a[0..1] + b[0..1]
// The template argument names the pair type (CUDA's names: __half2, __nv_bfloat162,
// float2; declared here because this header includes no toolkit header); the operands
// are two consecutive elements each, with no alignment asked of them.
//
// Every lane is rounded once, as the instructions do: add / sub / mul through float
// (exact for 16-bit operands: float's 24 bits are at least twice theirs plus two), fma
// exactly (tl::pair_detail::fma_once), so the emulation gives the GPU's bits.
#pragma once

namespace tl {

template <class T>
struct alignas(2 * sizeof(T)) pair_of {
  T x, y;
};
using __half2 = pair_of<half_t>;
using __nv_bfloat162 = pair_of<bfloat16_t>;
using float2 = pair_of<float>;

namespace pair_detail {

template <class P, class T>
TL_DEVICE void check_pair() {
  static_assert(is_same<P, pair_of<T>>::value, "the pair type's element is not the operands' element type");
  static_assert(is_same<T, half_t>::value || is_same<T, bfloat16_t>::value || is_same<T, float>::value,
                "packed pairs are float16, bfloat16 or float32");
}

#if defined(TL_EMULATE)
inline double next_toward(double s, double err) {
  return __builtin_nextafter(s, err > 0 ? __builtin_inf() : -__builtin_inf());
}
#else
TL_DEVICE double next_toward(double s, double err) {
  return ::nextafter(s,
                     err > 0 ? __longlong_as_double(0x7ff0000000000000LL) : __longlong_as_double(0xfff0000000000000LL));
}
#endif

// a * b + c rounded once to T (float16 / bfloat16). The product is exact in double;
// the sum s = RN(x) and its error e (TwoSum) give x's round-to-odd double (s, or its
// neighbour toward x when s's last bit is even and x is not s), from which T's
// conversion (round-to-odd float, then nearest even) rounds once: round-to-odd keeps
// the sticky bit that a second rounding needs.
template <class T>
TL_DEVICE T fma_once(T a, T b, T c) {
  double p = double(float(a)) * double(float(b)), q = double(float(c));
  double s = p + q;
  if (!(s - s == 0)) return T(float(p) + float(q));  // inf or NaN: as float does
  double bb = s - p, err = (p - (s - bb)) + (q - bb);
  if (err != 0 && !(bit_cast<uint64_t>(s) & 1u)) s = next_toward(s, err);
  return T(s);
}

template <class T>
TL_DEVICE T abs_bits(T v) {
  if constexpr (is_same<T, float>::value) {
    return bit_cast<float>(bit_cast<uint32_t>(v) & 0x7fffffffu);
  } else {
    v.bits &= 0x7fff;
    return v;
  }
}

#if !defined(TL_EMULATE)
TL_DEVICE uint32_t bits2(const half_t* p) {
  return uint32_t(p[0].bits) | (uint32_t(p[1].bits) << 16);
}
TL_DEVICE uint32_t bits2(const bfloat16_t* p) {
  return uint32_t(p[0].bits) | (uint32_t(p[1].bits) << 16);
}
template <class T>
TL_DEVICE void put2(T* out, uint32_t w) {
  out[0].bits = uint16_t(w & 0xffffu);
  out[1].bits = uint16_t(w >> 16);
}
#endif

}  // namespace pair_detail

// One lane by the scalar rule, for the emulation, sm_75's bfloat16 and float32 pairs.
#define TL_PAIR_LANES(expr)     \
  for (int i = 0; i < 2; ++i) { \
    out[i] = expr;              \
  }

// The 16-bit instruction for both lanes, or the lanes one by one. max / min f16x2 are
// sm_80 instructions, bf16x2 add / sub / mul sm_90 ones: sm_80 runs these as
// fma.rn.bf16x2 with 1, -1 or -0, which rounds the same sum, difference or product once.
#if defined(TL_EMULATE)
#define TL_PAIR_ASM2(f16_arch, f16, bf16, k, lanes) TL_PAIR_LANES(lanes)
#else
#define TL_PAIR_ASM2(f16_arch, f16, bf16, k, lanes)                              \
  if constexpr (is_same<T, float>::value) {                                      \
    TL_PAIR_LANES(lanes)                                                         \
  } else if constexpr (is_same<T, half_t>::value && __CUDA_ARCH__ >= f16_arch) { \
    uint32_t r, x = pair_detail::bits2(a), y = pair_detail::bits2(b);            \
    asm(f16 : "=r"(r) : "r"(x), "r"(y));                                         \
    pair_detail::put2(out, r);                                                   \
  } else if constexpr (is_same<T, bfloat16_t>::value && __CUDA_ARCH__ >= 800) {  \
    uint32_t r, x = pair_detail::bits2(a), y = pair_detail::bits2(b);            \
    asm(bf16 : "=r"(r) : "r"(x), "r"(y), "r"(k));                                \
    pair_detail::put2(out, r);                                                   \
  } else {                                                                       \
    TL_PAIR_LANES(lanes)                                                         \
  }
#endif

template <class P, class T>
TL_DEVICE void add2(T* out, const T* a, const T* b) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_ASM2(530, "add.rn.f16x2 %0, %1, %2;", "fma.rn.bf16x2 %0, %1, %3, %2;", 0x3f803f80u,
               T(float(a[i]) + float(b[i])))
}
template <class P, class T>
TL_DEVICE void sub2(T* out, const T* a, const T* b) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_ASM2(530, "sub.rn.f16x2 %0, %1, %2;", "fma.rn.bf16x2 %0, %2, %3, %1;", 0xbf80bf80u,
               T(float(a[i]) - float(b[i])))
}
template <class P, class T>
TL_DEVICE void mul2(T* out, const T* a, const T* b) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_ASM2(530, "mul.rn.f16x2 %0, %1, %2;", "fma.rn.bf16x2 %0, %1, %2, %3;", 0x80008000u,
               T(float(a[i]) * float(b[i])))
}
template <class P, class T>
TL_DEVICE void max2(T* out, const T* a, const T* b) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_ASM2(800, "max.f16x2 %0, %1, %2;", "max.bf16x2 %0, %1, %2;", 0u, tl::max(a[i], b[i]))
}
template <class P, class T>
TL_DEVICE void min2(T* out, const T* a, const T* b) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_ASM2(800, "min.f16x2 %0, %1, %2;", "min.bf16x2 %0, %1, %2;", 0u, tl::min(a[i], b[i]))
}
#undef TL_PAIR_ASM2

// out = a * b + c, each lane rounded once.
template <class P, class T>
TL_DEVICE void fma2(T* out, const T* a, const T* b, const T* c) {
  pair_detail::check_pair<P, T>();
#if !defined(TL_EMULATE)
  if constexpr (is_same<T, half_t>::value || (is_same<T, bfloat16_t>::value && __CUDA_ARCH__ >= 800)) {
    uint32_t r, x = pair_detail::bits2(a), y = pair_detail::bits2(b), z = pair_detail::bits2(c);
    if constexpr (is_same<T, half_t>::value) {
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    } else {
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    }
    pair_detail::put2(out, r);
    return;
  }
#endif
  if constexpr (is_same<T, float>::value) {
#if defined(TL_EMULATE)
    TL_PAIR_LANES(__builtin_fmaf(a[i], b[i], c[i]))
#else
    TL_PAIR_LANES(fmaf(a[i], b[i], c[i]))
#endif
  } else {
    TL_PAIR_LANES(pair_detail::fma_once(a[i], b[i], c[i]))
  }
}

template <class P, class T>
TL_DEVICE void abs2(T* out, const T* a) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_LANES(pair_detail::abs_bits(a[i]))
}
#undef TL_PAIR_LANES

}  // namespace tl
