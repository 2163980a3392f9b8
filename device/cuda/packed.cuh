// Packed pairs: two values of one float type computed by one instruction (add.rn.f16x2,
// fma.rn.bf16x2, max.f16x2 ...). The code generator calls them for the T.Ramp pairs of
// T.add2, T.sub2, T.mul2, T.max2, T.min2, T.abs2, T.fma2 (pass pair_lane_stores), for the element
// loops of T.Parallel that it vectorizes (two lanes of a float16 / bfloat16 add, sub,
// mul, max or min per instruction), for serial reductions' paired folds and for the
// register reductions' max / min folds (max2_nan, abs_max2 ...: acc = op(acc, x)), as
//   tl::add2<tl::__half2>(&out[0], &a[0], &b[0]);   // out[0..1] = a[0..1] + b[0..1]
// The template argument names the pair type (CUDA's names: __half2, __nv_bfloat162,
// float2; declared here because this header includes no toolkit header); the operands
// are two consecutive elements each, with no alignment asked of them.
//
// Every lane is rounded once, as the instructions do: add / sub / mul through float
// (exact for 16-bit operands: float's 24 bits are at least twice theirs plus two), so
// the emulation gives the GPU's bits; fma2 (T.fma2) rounds each lane's a * b + c once,
// as tl::fma of the 16-bit types does.
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

// name<P>(out, a, b): out = a op b lane by lane, by the instruction pair of TL_PAIR_ASM2.
#define TL_PAIR_FN(name, f16_arch, f16, bf16, k, lanes) \
  template <class P, class T>                           \
  TL_DEVICE void name(T* out, const T* a, const T* b) { \
    pair_detail::check_pair<P, T>();                    \
    TL_PAIR_ASM2(f16_arch, f16, bf16, k, lanes)         \
  }
TL_PAIR_FN(add2, 530, "add.rn.f16x2 %0, %1, %2;", "fma.rn.bf16x2 %0, %1, %3, %2;", 0x3f803f80u,
           T(float(a[i]) + float(b[i])))
TL_PAIR_FN(sub2, 530, "sub.rn.f16x2 %0, %1, %2;", "fma.rn.bf16x2 %0, %2, %3, %1;", 0xbf80bf80u,
           T(float(a[i]) - float(b[i])))
TL_PAIR_FN(mul2, 530, "mul.rn.f16x2 %0, %1, %2;", "fma.rn.bf16x2 %0, %1, %2, %3;", 0x80008000u,
           T(float(a[i]) * float(b[i])))
TL_PAIR_FN(max2, 800, "max.f16x2 %0, %1, %2;", "max.bf16x2 %0, %1, %2;", 0u, tl::max(a[i], b[i]))
TL_PAIR_FN(min2, 800, "min.f16x2 %0, %1, %2;", "min.bf16x2 %0, %1, %2;", 0u, tl::min(a[i], b[i]))
// The NaN-propagating forms (max.NaN / min.NaN: any NaN operand gives the canonical NaN),
// T.reduce_max / reduce_min's nan_propagate=True.
TL_PAIR_FN(max2_nan, 800, "max.NaN.f16x2 %0, %1, %2;", "max.NaN.bf16x2 %0, %1, %2;", 0u, tl::max_nan(a[i], b[i]))
TL_PAIR_FN(min2_nan, 800, "min.NaN.f16x2 %0, %1, %2;", "min.NaN.bf16x2 %0, %1, %2;", 0u, tl::min_nan(a[i], b[i]))
#undef TL_PAIR_FN
#undef TL_PAIR_ASM2

template <class P, class T>
TL_DEVICE void abs2(T* out, const T* a) {
  pair_detail::check_pair<P, T>();
  TL_PAIR_LANES(pair_detail::abs_bits(a[i]))
}

// out = a * b + c, each lane rounded once: fma.rn.f16x2 (sm_53), fma.rn.bf16x2 (sm_80),
// float lane by lane (fmaf); the emulation and older GPUs take tl::fma's software rounding
// of the 16-bit types (device/common/fma16.h), the same bits.
template <class P, class T>
TL_DEVICE void fma2(T* out, const T* a, const T* b, const T* c) {
  pair_detail::check_pair<P, T>();
#if defined(TL_EMULATE)
  TL_PAIR_LANES(tl::fma(a[i], b[i], c[i]))
#else
  if constexpr ((is_same<T, half_t>::value && __CUDA_ARCH__ >= 530) ||
                (is_same<T, bfloat16_t>::value && __CUDA_ARCH__ >= 800)) {
    uint32_t r, x = pair_detail::bits2(a), y = pair_detail::bits2(b), z = pair_detail::bits2(c);
    if constexpr (is_same<T, half_t>::value)
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    else
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    pair_detail::put2(out, r);
  } else {
    TL_PAIR_LANES(tl::fma(a[i], b[i], c[i]))
  }
#endif
}
#undef TL_PAIR_LANES

// out = max(a, |b|) lane by lane (T.reduce_absmax's folds): b's sign bits cleared, then
// max2 / max2_nan.
template <class P, class T>
TL_DEVICE void abs_max2(T* out, const T* a, const T* b) {
  T m[2] = {pair_detail::abs_bits(b[0]), pair_detail::abs_bits(b[1])};
  max2<P>(out, a, m);
}
template <class P, class T>
TL_DEVICE void abs_max2_nan(T* out, const T* a, const T* b) {
  T m[2] = {pair_detail::abs_bits(b[0]), pair_detail::abs_bits(b[1])};
  max2_nan<P>(out, a, m);
}

}  // namespace tl
