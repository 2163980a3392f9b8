// The one header generated CUDA kernels include. Self-contained on purpose: no
// toolkit headers (cuda_fp16.h and friends cost seconds of NVRTC time per
// kernel), only fixed-width integers, our own half/bfloat16/fp8 types built on PTX
// conversions, and the helpers the code generator names.
#pragma once

#if defined(TL_EMULATE)
#include <stdint.h>
#elif defined(__CUDACC_RTC__)  // NVRTC has no host headers
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#else
#include <stdint.h>
#endif

// The short unsigned names TileLang's CUDA header provides, which hand-written device
// code in TileLang programs (T.import_source / prelude strings, e.g. upstream's fp4
// dequantize examples) uses. Typedefs (a repeated identical typedef is legal where a
// system header already has them), not macros, so the names stay usable as words.
typedef unsigned int uint;
typedef unsigned char uchar;
typedef unsigned short ushort;

#define TL_DEVICE __device__ __forceinline__

#define TL_MINIFLOAT_FN TL_DEVICE
#include "../common/minifloat.h"  // the fp8 / e8m0 conversions, shared with the cpu target
#define TL_INT_DIV_FN TL_DEVICE
#include "../common/int_div.h"  // floordiv, floormod, truncdiv, truncmod: defined for every divisor
#define TL_WIDE_FN TL_DEVICE
#include "../common/wide_access.h"  // T.ldg* / T.stg* / T.lds* / T.sts*: 4- to 32-byte accesses
#define TL_RNG_FN TL_DEVICE
#include "../common/mrg32k3a_rng.h"  // T.rng_init: cuRAND's generators (both include philox_rng.h)
#include "../common/xorwow_rng.h"
#ifdef TL_EMULATE
#include "../common/ieee_rounding.h"  // directed rounding computed in software
#endif

#ifndef TL_SMEM  // a shared-memory element; the emulation records the access
#define TL_SMEM(buf, off, write, where) (buf)[off]
#endif
#ifndef TL_SMEM_PACKED  // the base of a packed shared buffer, for its element `off`: the same
#define TL_SMEM_PACKED(buf, off, write, where) (buf)
#endif

#ifndef TL_DYNAMIC_SHARED  // the emulation gives each block its own array
#define TL_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

namespace tl {

#ifndef TL_EMULATE  // the emulation brings tl::bit_cast from float_bits.h
template <class To, class From>
TL_DEVICE To bit_cast(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of equal size");
  union {
    From f;
    To t;
  } u;
  u.f = v;
  return u.t;
}
#endif

// float64 and 64-bit integers narrowed to float with round-to-odd (minifloat.h): the
// 16- and 8-bit types below round that float once more, which together is one
// rounding of the wide value (as numpy / ml_dtypes do). 32-bit integers go through
// float64, which holds them exactly.
TL_DEVICE float odd_float(double d) {
  return bit_cast<float>(float_bits_odd_of_double_bits(bit_cast<uint64_t>(d)));
}
TL_DEVICE float odd_float(int64_t v) {
  return bit_cast<float>(float_bits_odd_of_i64(v));
}
TL_DEVICE float odd_float(uint64_t v) {
  return bit_cast<float>(float_bits_odd_of_u64(v));
}

// The constructors from the wider types, shared by the structs below (every
// integer type by name: int64_t is long on one compiler and long long on another).
#define TL_WIDE_CONSTRUCTORS(Name)                                  \
  TL_DEVICE Name(double f) : Name(odd_float(f)) {}                  \
  TL_DEVICE Name(int v) : Name(odd_float(double(v))) {}             \
  TL_DEVICE Name(unsigned v) : Name(odd_float(double(v))) {}        \
  TL_DEVICE Name(long v) : Name(odd_float(int64_t(v))) {}           \
  TL_DEVICE Name(unsigned long v) : Name(odd_float(uint64_t(v))) {} \
  TL_DEVICE Name(long long v) : Name(odd_float(int64_t(v))) {}      \
  TL_DEVICE Name(unsigned long long v) : Name(odd_float(uint64_t(v))) {}

struct half_t {
  uint16_t bits;
  half_t() = default;
#ifdef TL_EMULATE
  TL_DEVICE half_t(float f) : bits(float_to_half_bits(f)) {}
  TL_DEVICE operator float() const {
    return half_bits_to_float(bits);
  }
#else
  TL_DEVICE half_t(float f) {
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
  }
  TL_DEVICE operator float() const {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
  }
#endif
  TL_WIDE_CONSTRUCTORS(half_t)
};

struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  TL_DEVICE bfloat16_t(float f) {
#if defined(TL_EMULATE)
    bits = float_to_bf16_bits(f);
#elif __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(f));
#else
    uint32_t x = __float_as_uint(f);
    bits = (x & 0x7fffffffu) > 0x7f800000u ? uint16_t((x >> 16) | 0x40u)
                                           : uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
  }
  TL_WIDE_CONSTRUCTORS(bfloat16_t)
  TL_DEVICE operator float() const {
    return __uint_as_float(uint32_t(bits) << 16);
  }
};

// fp8 and e8m0: one byte converted through float by device/common/minifloat.h.
// float8_e4m3fn and float8_e5m2 saturate as CUDA's own conversions do (PTX
// cvt.rn.satfinite, __NV_SATFINITE; TileLang's fp8 types are built on them): a finite
// value or an inf beyond the largest finite magnitude becomes +-448 / +-57344, every
// NaN 0x7f. sm_89 and later run the cvt; sm_80 to sm_87 (no fp8 cvt) and the
// emulation compute the same bits in software. float8_e8m0fnu rounds up and
// saturates, as CUDA's __nv_fp8_e8m0 (TileLang's e8m0 type) does. The fnuz types keep
// ml_dtypes' rule, as on the cpu target (TileLang's CUDA code has no fnuz types; see
// docs/design/tilelang_compat.md).
template <class Bits>
TL_DEVICE uint8_t minifloat_from_float(float f) {
  return Bits::from_float_bits(bit_cast<uint32_t>(f));
}
template <>
TL_DEVICE uint8_t minifloat_from_float<E4M3FN>(float f) {
#if !defined(TL_EMULATE) && __CUDA_ARCH__ >= 890
  uint16_t pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));  // f in the low byte
  return uint8_t(pair & 0xffu);
#else
  return E4M3FN::from_float_bits_satfinite(bit_cast<uint32_t>(f));
#endif
}
template <>
TL_DEVICE uint8_t minifloat_from_float<E5M2>(float f) {
#if !defined(TL_EMULATE) && __CUDA_ARCH__ >= 890
  uint16_t pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  return uint8_t(pair & 0xffu);
#else
  return E5M2::from_float_bits_satfinite(bit_cast<uint32_t>(f));
#endif
}

template <>
TL_DEVICE uint8_t minifloat_from_float<E8M0>(float f) {
  return E8M0::from_float_bits_ceil_satfinite(bit_cast<uint32_t>(f));
}

template <class Bits>
struct minifloat_t {
  uint8_t bits;
  minifloat_t() = default;
  TL_DEVICE minifloat_t(float f) : bits(minifloat_from_float<Bits>(f)) {}
  TL_WIDE_CONSTRUCTORS(minifloat_t)
  TL_DEVICE operator float() const { return bit_cast<float>(Bits::to_float_bits(bits)); }
  // A value given by its bits: the code generator writes float8_e5m2's infinities so,
  // since the (saturating) conversion from float would give +-57344.
  static TL_DEVICE minifloat_t from_bits(uint8_t b) {
    minifloat_t r;
    r.bits = b;
    return r;
  }
};
using float8_e4m3fn_t = minifloat_t<E4M3FN>;
using float8_e5m2_t = minifloat_t<E5M2>;
using float8_e4m3fnuz_t = minifloat_t<E4M3FNUZ>;
using float8_e5m2fnuz_t = minifloat_t<E5M2FNUZ>;
using float8_e8m0fnu_t = minifloat_t<E8M0>;
// fp4 converts in software on every arch here (cvt.rn.satfinite.e2m1x2 is sm_100's),
// to the same bits as that instruction gives (minifloat.h).
using float4_e2m1fn_t = minifloat_t<E2M1>;
#undef TL_WIDE_CONSTRUCTORS

// `*byte = (*byte & ~clear) | set` for bits no other thread changes, atomically
// against the other bits of the byte (device/common/sub_byte.h): the GPU's atomics
// take 32-bit words, the emulation's host atomics bytes.
TL_DEVICE void atomic_nibble_update(uint8_t* byte, uint8_t clear, uint8_t set) {
#ifdef TL_EMULATE
  __atomic_fetch_and(byte, uint8_t(~clear), __ATOMIC_RELAXED);
  __atomic_fetch_or(byte, set, __ATOMIC_RELAXED);
#else
  const uintptr_t a = reinterpret_cast<uintptr_t>(byte);
  unsigned* word = reinterpret_cast<unsigned*>(a & ~uintptr_t(3));
  const int shift = int(a & 3) << 3;
  atomicAnd(word, ~(unsigned(clear) << shift));
  atomicOr(word, unsigned(set) << shift);
#endif
}

// std::is_same without <type_traits> (NVRTC has no host headers).
template <class A, class B>
struct is_same {
  static constexpr bool value = false;
};
template <class A>
struct is_same<A, A> {
  static constexpr bool value = true;
};

// Two float values converted with one cvt. Register fragments of 16-bit values in
// pairs: T.copy of a float32 fragment into a float16 / bfloat16 one writes two values
// with one cvt (dst[0] = a, dst[1] = b), and the register gemms read A two values at a
// time, so that each 32-bit register holds a pair. As 16-bit scalars, ptxas gives
// every value a register of its own: a 64 x 128 tile of P per warpgroup then takes 64
// registers per thread instead of 32. Fragments are 4-byte aligned (the code generator
// declares them so). The vector moves of vec.cuh convert their float runs the same way
// into float16 / bfloat16 / float8_e4m3fn / float8_e5m2 (cvt.rn.satfinite.e4m3x2 /
// e5m2x2 on sm_89 and later): one cvt per pair instead of one per value plus a byte
// permute, the same bits. dst is aligned to the pair's size.
template <class T>
struct has_cast_pair {
  static constexpr bool value = is_same<T, half_t>::value || is_same<T, bfloat16_t>::value ||
                                is_same<T, float8_e4m3fn_t>::value || is_same<T, float8_e5m2_t>::value;
};

// The code generator names the pair conversion (`tl::cast_pair<tl::__float22half2_rn>`,
// device/cuda/vec.cuh); `Cvt` only names it.
template <class Cvt = void, class T>
TL_DEVICE void cast_pair(T* dst, float a, float b) {
  static_assert(has_cast_pair<T>::value,
                "tl::cast_pair: the destination is half_t, bfloat16_t, float8_e4m3fn_t or float8_e5m2_t");
#if defined(TL_EMULATE) || __CUDA_ARCH__ < 800
  dst[0] = T(a);
  dst[1] = T(b);
#else
  if constexpr (sizeof(T) == 2) {
    uint32_t w;
    if constexpr (is_same<T, half_t>::value) {
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));  // a in the low half
    } else {
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));
    }
    *reinterpret_cast<uint32_t*>(dst) = w;
  } else {
#if __CUDA_ARCH__ >= 890
    uint16_t w;
    if constexpr (is_same<T, float8_e4m3fn_t>::value) {
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(w) : "f"(b), "f"(a));  // a in the low byte
    } else {
      asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(w) : "f"(b), "f"(a));
    }
    *reinterpret_cast<uint16_t*>(dst) = w;
#else
    dst[0] = T(a);
    dst[1] = T(b);
#endif
  }
#endif
}

// The bits of p[0] (low half) and p[1] (high half) of a 16-bit fragment, p 4-byte aligned.
template <class T>
TL_DEVICE uint32_t load_pair(const T* p) {
  static_assert(sizeof(T) == 2, "tl::load_pair reads two 16-bit values");
#if defined(TL_EMULATE)
  return uint32_t(p[0].bits) | (uint32_t(p[1].bits) << 16);
#else
  return *reinterpret_cast<const uint32_t*>(p);
#endif
}

// Elements of a tensor made of an address read in the kernel (T.make_tensor of an
// element of a T.Tensor(..., T.ptr) table): `like` only names the element type.
template <class T>
TL_DEVICE T load_at(int64_t addr, int64_t i, T like) {
  (void)like;
  return reinterpret_cast<const T*>(static_cast<uintptr_t>(addr))[i];
}
template <class T>
TL_DEVICE void store_at(int64_t addr, int64_t i, T value) {
  reinterpret_cast<T*>(static_cast<uintptr_t>(addr))[i] = value;
}

// T.use_swizzle's marker: the code generator remaps blockIdx at kernel entry.
TL_DEVICE void use_swizzle(int, int) {}
// T.disable_warp_group_reg_alloc's marker: warp_specialize leaves out setmaxnreg.
TL_DEVICE void no_setmaxnreg() {}
// T.annotate_producer_reg_dealloc / annotate_consumer_reg_alloc's marker (which 0 /
// 1): warp_specialize takes the count for its setmaxnreg.dec / .inc.
TL_DEVICE void setmaxnreg_hint(int, int) {}
// T.annotate_min_blocks_per_sm's marker: the code generator puts it in __launch_bounds__.
TL_DEVICE void min_blocks_per_sm(int) {}

TL_DEVICE float infinity_f32() {
  return __int_as_float(0x7f800000);
}
TL_DEVICE double infinity_f64() {
  return __longlong_as_double(0x7ff0000000000000ll);
}
TL_DEVICE float nan_f32() {
  return __int_as_float(0x7fc00000);
}
TL_DEVICE double nan_f64() {
  return __longlong_as_double(0x7ff8000000000000ll);
}

// T.max / T.min and the reductions' folds follow PTX max / min, as TileLang's CUDA code
// (fmaxf, __hmax): a NaN operand gives the other operand, two NaNs the canonical NaN,
// -0 orders below +0. max_nan / min_nan are the reductions' nan_propagate=True forms
// (max.NaN / min.NaN: any NaN operand gives NaN). The GPU computes float, float64,
// float16 and bfloat16 with one instruction each; the emulation, the fp8 types and
// float64's NaN-propagating form compute the same bits in software (float_minmax.h),
// whose tl::max / min / max_nan / min_nan this header specializes for those
// instructions. The float types of T.max / T.min:
template <class T>
struct is_float_number {
  static constexpr bool value = false;
};
template <>
struct is_float_number<float> {
  static constexpr bool value = true;
};
template <>
struct is_float_number<double> {
  static constexpr bool value = true;
};
template <>
struct is_float_number<half_t> {
  static constexpr bool value = true;
};
template <>
struct is_float_number<bfloat16_t> {
  static constexpr bool value = true;
};
template <class Bits>
struct is_float_number<minifloat_t<Bits>> {
  static constexpr bool value = true;
};
}  // namespace tl
#define TL_MINMAX_FN TL_DEVICE
#include "../common/float_minmax.h"
#define TL_FMA16_FN TL_DEVICE
#include "../common/fma16.h"  // float16 / bfloat16 fma rounded once, in software
namespace tl {

// The instructions (max.NaN and the 16-bit forms are sm_80's; sm_75 keeps the software
// rules of float_minmax.h, the same bits).
#if !defined(TL_EMULATE) && __CUDA_ARCH__ >= 800
template <>
TL_DEVICE float max<float>(float a, float b) {
  return fmaxf(a, b);
}
template <>
TL_DEVICE float min<float>(float a, float b) {
  return fminf(a, b);
}
template <>
TL_DEVICE double max<double>(double a, double b) {
  return fmax(a, b);
}
template <>
TL_DEVICE double min<double>(double a, double b) {
  return fmin(a, b);
}
template <>
TL_DEVICE float max_nan<float>(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <>
TL_DEVICE float min_nan<float>(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// The 16-bit forms on their bits (sm_80 and later), without the round trip through float.
#define TL_HALF_MINMAX(fn, T, insn)                                     \
  template <>                                                           \
  TL_DEVICE T fn<T>(T a, T b) {                                         \
    T r;                                                                \
    asm(insn " %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits)); \
    return r;                                                           \
  }
TL_HALF_MINMAX(max, half_t, "max.f16")
TL_HALF_MINMAX(min, half_t, "min.f16")
TL_HALF_MINMAX(max_nan, half_t, "max.NaN.f16")
TL_HALF_MINMAX(min_nan, half_t, "min.NaN.f16")
TL_HALF_MINMAX(max, bfloat16_t, "max.bf16")
TL_HALF_MINMAX(min, bfloat16_t, "min.bf16")
TL_HALF_MINMAX(max_nan, bfloat16_t, "max.NaN.bf16")
TL_HALF_MINMAX(min_nan, bfloat16_t, "min.NaN.bf16")
#undef TL_HALF_MINMAX
#endif

// Float math in the argument's precision; the code generator passes float or double.
#define TL_UNARY_MATH(name, f32, f64) \
  TL_DEVICE float name(float x) {     \
    return f32;                       \
  }                                   \
  TL_DEVICE double name(double x) {   \
    return f64;                       \
  }
TL_UNARY_MATH(exp, expf(x), ::exp(x))
TL_UNARY_MATH(exp2, exp2f(x), ::exp2(x))
TL_UNARY_MATH(exp10, exp10f(x), ::exp10(x))
TL_UNARY_MATH(log, logf(x), ::log(x))
TL_UNARY_MATH(log2, log2f(x), ::log2(x))
TL_UNARY_MATH(log10, log10f(x), ::log10(x))
TL_UNARY_MATH(log1p, log1pf(x), ::log1p(x))
TL_UNARY_MATH(sqrt, sqrtf(x), ::sqrt(x))
TL_UNARY_MATH(rsqrt, rsqrtf(x), ::rsqrt(x))
TL_UNARY_MATH(floor, floorf(x), ::floor(x))
TL_UNARY_MATH(ceil, ceilf(x), ::ceil(x))
TL_UNARY_MATH(RoundTiesAwayFromZero, roundf(x), ::round(x))  // T.round(x, "ties-away-from-zero")
TL_UNARY_MATH(fabs, fabsf(x), ::fabs(x))                     // T.abs of float and double
TL_UNARY_MATH(trunc, truncf(x), ::trunc(x))
TL_UNARY_MATH(nearbyint, nearbyintf(x), ::nearbyint(x))
TL_UNARY_MATH(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + ::exp(-x)))
TL_UNARY_MATH(tanh, tanhf(x), ::tanh(x))
TL_UNARY_MATH(sin, sinf(x), ::sin(x))
TL_UNARY_MATH(cos, cosf(x), ::cos(x))
TL_UNARY_MATH(tan, tanf(x), ::tan(x))
TL_UNARY_MATH(sinh, sinhf(x), ::sinh(x))
TL_UNARY_MATH(cosh, coshf(x), ::cosh(x))
TL_UNARY_MATH(erf, erff(x), ::erf(x))
TL_UNARY_MATH(asin, asinf(x), ::asin(x))
TL_UNARY_MATH(acos, acosf(x), ::acos(x))
TL_UNARY_MATH(atan, atanf(x), ::atan(x))
TL_UNARY_MATH(asinh, asinhf(x), ::asinh(x))
TL_UNARY_MATH(acosh, acoshf(x), ::acosh(x))
TL_UNARY_MATH(atanh, atanhf(x), ::atanh(x))
#undef TL_UNARY_MATH
// T.__exp, __exp10, __log, __log2, __log10, __sin, __cos, __tan, TileLang's fast-math
// names, as TileLang's CUDA code computes them: float calls CUDA's intrinsics (__expf
// ...) by name; float16 and bfloat16 call these, which round the float intrinsic's result
// (CUDA's hexp ... for __half do the same with a correction of some ties); __tan of a
// 16-bit value and T.tan of one are tanf rounded, as TileLang's htan. float64 computes
// the precise functions. The emulation's intrinsics are device/emu/fast_math_emu.h.
#define TL_HALF_FAST_MATH(name, f32)        \
  TL_DEVICE half_t name(half_t x) {         \
    return half_t(f32(float(x)));           \
  }                                         \
  TL_DEVICE bfloat16_t name(bfloat16_t x) { \
    return bfloat16_t(f32(float(x)));       \
  }
TL_HALF_FAST_MATH(hexp, __expf)
TL_HALF_FAST_MATH(hexp10, __exp10f)
TL_HALF_FAST_MATH(hlog, __logf)
TL_HALF_FAST_MATH(hlog2, __log2f)
TL_HALF_FAST_MATH(hlog10, __log10f)
TL_HALF_FAST_MATH(hsin, __sinf)
TL_HALF_FAST_MATH(hcos, __cosf)
TL_HALF_FAST_MATH(htan, tanf)
#undef TL_HALF_FAST_MATH

// T.fast_rcp: rcp.approx.ftz.f32 (TileLang's tl::fast_rcp); float64 divides.
TL_DEVICE float fast_rcp(float x) {
#ifdef TL_EMULATE
  return emu::rcp_approx(x);
#else
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#endif
}
TL_DEVICE double fast_rcp(double x) {
  return 1.0 / x;
}

TL_DEVICE float pow(float a, float b) {
  return powf(a, b);
}
TL_DEVICE double pow(double a, double b) {
  return ::pow(a, b);
}
TL_DEVICE float atan2(float a, float b) {
  return atan2f(a, b);
}
TL_DEVICE double atan2(double a, double b) {
  return ::atan2(a, b);
}
TL_DEVICE float fma(float a, float b, float c) {
  return fmaf(a, b, c);
}
TL_DEVICE double fma(double a, double b, double c) {
  return ::fma(a, b, c);
}
// float16 / bfloat16 rounded once: fma.rn.f16 (sm_53) and fma.rn.bf16 (sm_80), and the
// same bits in software for the emulation and older GPUs (fma16.h; a NaN result is the
// canonical one).
#if defined(TL_EMULATE)
#define TL_FMA16(T, arch, insn)    \
  TL_DEVICE T fma(T a, T b, T c) { \
    return fma16(a, b, c);         \
  }
#else
#define TL_FMA16(T, arch, insn)                                                            \
  TL_DEVICE T fma(T a, T b, T c) {                                                         \
    if constexpr (__CUDA_ARCH__ < arch) {                                                  \
      return fma16(a, b, c);                                                               \
    } else {                                                                               \
      T r;                                                                                 \
      asm(insn " %0, %1, %2, %3;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits), "h"(c.bits)); \
      return r;                                                                            \
    }                                                                                      \
  }
#endif
TL_FMA16(half_t, 530, "fma.rn.f16")
TL_FMA16(bfloat16_t, 800, "fma.rn.bf16")
#undef TL_FMA16
TL_DEVICE float fmod(float a, float b) {
  return fmodf(a, b);
}
TL_DEVICE double fmod(double a, double b) {
  return ::fmod(a, b);
}
template <class T>
TL_DEVICE T abs(T x) {
  return x < 0 ? -x : x;
}
TL_DEVICE float abs(float x) {
  return fabsf(x);
}
TL_DEVICE double abs(double x) {
  return fabs(x);
}
// T.isnan / isinf / isfinite in the operand's precision: float's test stays in float
// (a conversion to double would cost a float64 instruction on the GPU).
TL_DEVICE bool isnan(float x) {
  return x != x;
}
TL_DEVICE bool isinf(float x) {
  return x == infinity_f32() || x == -infinity_f32();
}
TL_DEVICE bool isfinite(float x) {
  return !isnan(x) && !isinf(x);
}
TL_DEVICE bool isnan(double x) {
  return x != x;
}
TL_DEVICE bool isinf(double x) {
  return x == infinity_f64() || x == -infinity_f64();
}
TL_DEVICE bool isfinite(double x) {
  return !isnan(x) && !isinf(x);
}

// T.ieee_add / sub / mul / fdiv / frcp / fsqrt / fmaf with rounding_mode "rz", "ru" or
// "rd": tl::ieee_<op>_<mode> for float and double; T.ieee_frsqrt: tl::ieee_frsqrt_rn.
#ifdef TL_EMULATE
TL_IEEE_SOFTWARE(TL_DEVICE)
#else
// CUDA's intrinsics of each mode: __fadd_rz, __dadd_rz, ...
#define TL_IEEE_CUDA_MODE(mode)                                     \
  TL_DEVICE float ieee_add_##mode(float x, float y) {               \
    return __fadd_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE double ieee_add_##mode(double x, double y) {            \
    return __dadd_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE float ieee_sub_##mode(float x, float y) {               \
    return __fsub_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE double ieee_sub_##mode(double x, double y) {            \
    return __dsub_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE float ieee_mul_##mode(float x, float y) {               \
    return __fmul_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE double ieee_mul_##mode(double x, double y) {            \
    return __dmul_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE float ieee_fdiv_##mode(float x, float y) {              \
    return __fdiv_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE double ieee_fdiv_##mode(double x, double y) {           \
    return __ddiv_##mode(x, y);                                     \
  }                                                                 \
  TL_DEVICE float ieee_frcp_##mode(float x) {                       \
    return __frcp_##mode(x);                                        \
  }                                                                 \
  TL_DEVICE double ieee_frcp_##mode(double x) {                     \
    return __drcp_##mode(x);                                        \
  }                                                                 \
  TL_DEVICE float ieee_fsqrt_##mode(float x) {                      \
    return __fsqrt_##mode(x);                                       \
  }                                                                 \
  TL_DEVICE double ieee_fsqrt_##mode(double x) {                    \
    return __dsqrt_##mode(x);                                       \
  }                                                                 \
  TL_DEVICE float ieee_fmaf_##mode(float x, float y, float z) {     \
    return __fmaf_##mode(x, y, z);                                  \
  }                                                                 \
  TL_DEVICE double ieee_fmaf_##mode(double x, double y, double z) { \
    return __fma_##mode(x, y, z);                                   \
  }
TL_IEEE_CUDA_MODE(rz)
TL_IEEE_CUDA_MODE(ru)
TL_IEEE_CUDA_MODE(rd)
#undef TL_IEEE_CUDA_MODE
TL_DEVICE float ieee_frsqrt_rn(float x) {  // T.ieee_frsqrt: correctly rounded
  return __frsqrt_rn(x);
}
#endif

#ifndef TL_EMULATE  // the emulation's barrier is the fibers' (device/cpu/threads.h)
TL_DEVICE void sync_threads() {
  __syncthreads();
}
#endif

}  // namespace tl

// T.__ldg(x[i]) prints `__ldg(&(x[i]))`. CUDA declares __ldg for its own scalar and
// vector types; the package's 8- and 16-bit number types load as the unsigned integer
// of their size. The emulation loads plainly.
#ifdef TL_EMULATE
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
#else
template <class T>
TL_DEVICE T __ldg(const T* p) {
  if constexpr (sizeof(T) == 2) return tl::bit_cast<T>(__ldg(reinterpret_cast<const unsigned short*>(p)));
  if constexpr (sizeof(T) == 1) return tl::bit_cast<T>(__ldg(reinterpret_cast<const unsigned char*>(p)));
  return *p;
}
#endif

// The 16-bit max / min by the names of CUDA's half intrinsics, which TileLang's CUDA
// code calls (this header declares no __half; these take the package's types).
#define TL_HALF_INTRINSIC(name, fn)                                   \
  TL_DEVICE tl::half_t name(tl::half_t a, tl::half_t b) {             \
    return tl::fn(a, b);                                              \
  }                                                                   \
  TL_DEVICE tl::bfloat16_t name(tl::bfloat16_t a, tl::bfloat16_t b) { \
    return tl::fn(a, b);                                              \
  }
TL_HALF_INTRINSIC(__hmax, max)
TL_HALF_INTRINSIC(__hmin, min)
TL_HALF_INTRINSIC(__hmax_nan, max_nan)
TL_HALF_INTRINSIC(__hmin_nan, min_nan)
#undef TL_HALF_INTRINSIC

#define TL_SUB_BYTE_FN TL_DEVICE
#include "../common/sub_byte.h"  // int4 and packed element access (atomic_nibble_update above)

#include "atomic.cuh"
#include "debug.cuh"
#include "gemm_mma.cuh"
#include "packed.cuh"  // tl::add2 ... tl::abs2: two float16 / bfloat16 / float values per instruction
#include "vec.cuh"

// The sm_80+ fast path: cp.async pipelines, ldmatrix + mma gemms, warp reductions.
#include "cluster.cuh"  // sm_90: thread block clusters, TMA multicast
#include "copy_async.cuh"
#include "gemm_sm80.cuh"
#include "gemm_sm90.cuh"     // sm_90a: wgmma gemms
#include "gemm_sp_sm80.cuh"  // T.gemm_sp: mma.sp m16n8k32
#include "grid_sync.cuh"     // T.sync_grid: the grid barrier of a cooperative launch
#include "tma.cuh"           // sm_90: TMA copies and mbarriers
#include "warp.cuh"
#include "warp_specialize.cuh"  // sm_90a: setmaxnreg
#if defined(TL_EMULATE)
#include "../emu/ptx_emu.h"  // inline PTX statements, translated into C++ by the driver
#endif
