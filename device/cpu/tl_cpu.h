// The one header generated CPU kernels include: number types, the math and
// integer helpers the code generator names, and the tile GEMM. It depends on the
// C++ standard library only, so a kernel compiles in a fraction of a second.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "atomic.h"
#include "debug.h"
#include "grid_sync.h"
#include "threads.h"
#include "types.h"
#include "warp.h"

#define TL_INT_DIV_FN inline
#include "../common/ieee_rounding.h"  // T.ieee_* with rounding modes other than to-nearest
#include "../common/int_div.h"        // floordiv, floormod, truncdiv, truncmod: defined for every divisor
#define TL_WIDE_FN inline
#include "../common/wide_access.h"  // T.ldg* / T.stg* / T.lds* / T.sts*: 4- to 32-byte accesses
namespace tl {
// The float types of T.max / T.min (float_minmax.h): the built-in ones and tl's.
template <class T, class = void>
struct is_float_number : std::is_floating_point<T> {};
template <class T>
struct is_float_number<T, std::void_t<decltype(T::kIsTlFloat)>> : std::true_type {};
}  // namespace tl
#define TL_MINMAX_FN inline
#include "../common/float_minmax.h"  // T.max / T.min with the GPU's NaN and signed-zero rules
#define TL_FMA16_FN inline
#include "../common/fma16.h"  // float16 / bfloat16 fma rounded once
#define TL_RNG_FN inline
#include "../common/mrg32k3a_rng.h"  // T.rng_init: cuRAND's generators (both include philox_rng.h)
#include "../common/xorwow_rng.h"

namespace tl {

// T.ptx_cp_async / T.ptx_commit_group / T.ptx_wait_group: a copy lands when it is
// issued, so there is nothing to group or wait for.
template <int Bytes>
inline void cp_async_gs(void* dst, const void* src) {
  __builtin_memcpy(dst, src, Bytes);
}
template <int Bytes>
inline void cp_async_gs_conditional(void* dst, const void* src, bool pred) {
  if (pred)
    __builtin_memcpy(dst, src, Bytes);
  else
    __builtin_memset(dst, 0, Bytes);
}
inline void cp_async_commit() {}
// T.tma_store_arrive / T.tma_store_wait: the cpu target's stores are done when issued.
inline void tma_store_arrive() {}
template <int N, bool Read = true>
inline void tma_store_wait() {}
template <int N>
inline void cp_async_wait() {}

// Elements of a tensor made of an address read in the kernel (T.make_tensor of an
// element of a T.Tensor(..., T.ptr) table): `like` only names the element type.
template <class T>
inline T load_at(int64_t addr, int64_t i, T like) {
  (void)like;
  return reinterpret_cast<const T*>(static_cast<uintptr_t>(addr))[i];
}
template <class T>
inline void store_at(int64_t addr, int64_t i, T value) {
  reinterpret_cast<T*>(static_cast<uintptr_t>(addr))[i] = value;
}

// T.use_swizzle's marker: blocks run in any order on the cpu, nothing to remap.
inline void use_swizzle(int, int) {}
// T.disable_warp_group_reg_alloc's marker: a hint for sm_90a only.
inline void no_setmaxnreg() {}
// T.annotate_producer_reg_dealloc / annotate_consumer_reg_alloc's marker: sm_90a only.
inline void setmaxnreg_hint(int, int) {}
// T.annotate_min_blocks_per_sm's marker: an occupancy hint of CUDA kernels.
inline void min_blocks_per_sm(int) {}

// One argument slot of a kernel call: a tensor's data pointer or a scalar.
union Arg {
  void* ptr;
  int64_t i;
  double f;
};

// Float math in the argument's precision (float or double).
#define TL_UNARY_MATH(name, expr) \
  inline float name(float x) {    \
    return expr;                  \
  }                               \
  inline double name(double x) {  \
    return expr;                  \
  }
TL_UNARY_MATH(exp, std::exp(x))
TL_UNARY_MATH(exp2, std::exp2(x))
TL_UNARY_MATH(exp10, std::pow(decltype(x)(10), x))
TL_UNARY_MATH(log, std::log(x))
TL_UNARY_MATH(log2, std::log2(x))
TL_UNARY_MATH(log10, std::log10(x))
TL_UNARY_MATH(log1p, std::log1p(x))
TL_UNARY_MATH(sqrt, std::sqrt(x))
TL_UNARY_MATH(rsqrt, decltype(x)(1) / std::sqrt(x))
TL_UNARY_MATH(floor, std::floor(x))
TL_UNARY_MATH(ceil, std::ceil(x))
TL_UNARY_MATH(RoundTiesAwayFromZero, std::round(x))  // T.round(x, "ties-away-from-zero"), as CUDA's roundf
TL_UNARY_MATH(fabs, std::fabs(x))                    // T.abs of float and double
TL_UNARY_MATH(trunc, std::trunc(x))
TL_UNARY_MATH(nearbyint, std::nearbyint(x))
TL_UNARY_MATH(sigmoid, decltype(x)(1) / (decltype(x)(1) + std::exp(-x)))
TL_UNARY_MATH(tanh, std::tanh(x))
TL_UNARY_MATH(sin, std::sin(x))
TL_UNARY_MATH(cos, std::cos(x))
TL_UNARY_MATH(tan, std::tan(x))
TL_UNARY_MATH(sinh, std::sinh(x))
TL_UNARY_MATH(cosh, std::cosh(x))
TL_UNARY_MATH(erf, std::erf(x))
TL_UNARY_MATH(asin, std::asin(x))
TL_UNARY_MATH(acos, std::acos(x))
TL_UNARY_MATH(atan, std::atan(x))
TL_UNARY_MATH(asinh, std::asinh(x))
TL_UNARY_MATH(acosh, std::acosh(x))
TL_UNARY_MATH(atanh, std::atanh(x))
// TileLang's fast-math names (T.__exp ... T.fast_rcp): the GPU's approximations have no
// cheaper CPU counterpart worth their error, so the cpu target computes the precise
// functions.
TL_UNARY_MATH(fast_exp, exp(x))
TL_UNARY_MATH(fast_exp10, exp10(x))
TL_UNARY_MATH(fast_log, log(x))
TL_UNARY_MATH(fast_log2, log2(x))
TL_UNARY_MATH(fast_log10, log10(x))
TL_UNARY_MATH(fast_sin, sin(x))
TL_UNARY_MATH(fast_cos, cos(x))
TL_UNARY_MATH(fast_tan, tan(x))
TL_UNARY_MATH(fast_rcp, decltype(x)(1) / x)
#undef TL_UNARY_MATH
inline float pow(float a, float b) {
  return std::pow(a, b);
}
inline double pow(double a, double b) {
  return std::pow(a, b);
}
inline float atan2(float a, float b) {
  return std::atan2(a, b);
}
inline double atan2(double a, double b) {
  return std::atan2(a, b);
}
inline float fma(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline double fma(double a, double b, double c) {
  return std::fma(a, b, c);
}
// float16 / bfloat16: rounded once, as the GPU's fma.rn.f16 / fma.rn.bf16 (fma16.h); a
// NaN result is the canonical one.
template <class T, class = std::enable_if_t<std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>>>
inline T fma(T a, T b, T c) {
  return fma16(a, b, c);
}
inline float fmod(float a, float b) {
  return std::fmod(a, b);
}
inline double fmod(double a, double b) {
  return std::fmod(a, b);
}
template <class T>
inline T abs(T x) {
  return x < 0 ? -x : x;
}
inline float abs(float x) {
  return std::fabs(x);
}
inline double abs(double x) {
  return std::fabs(x);
}
inline bool isnan(float x) {
  return std::isnan(x);
}
inline bool isinf(float x) {
  return std::isinf(x);
}
inline bool isfinite(float x) {
  return std::isfinite(x);
}
inline bool isnan(double x) {
  return std::isnan(x);
}
inline bool isinf(double x) {
  return std::isinf(x);
}
inline bool isfinite(double x) {
  return std::isfinite(x);
}

// Accumulator-precision copy of one operand element.
template <class Acc, class T>
inline Acc widen(const T& v) {
  return Acc(float(v));
}
template <>
inline float widen<float, float>(const float& v) {
  return v;
}
template <>
inline double widen<double, double>(const double& v) {
  return v;
}

template <class T>
struct AccumOf {
  using type = float;
};
template <>
struct AccumOf<double> {
  using type = double;
};
template <>
struct AccumOf<int32_t> {
  using type = int32_t;
};
template <>
struct AccumOf<int64_t> {
  using type = int64_t;
};

// C[M][N] (+)= op(A) @ op(B) for one tile. lda/ldb/ldc are row strides in elements.
// Operands are widened into contiguous tiles first so that the inner loop is a
// unit-stride multiply-add the compiler vectorizes.
template <int M, int N, int K, bool TransA, bool TransB, bool Clear, class TA, class TB, class TC>
inline void gemm_tile(const TA* a, int64_t lda, const TB* b, int64_t ldb, TC* c, int64_t ldc) {
  using Acc = typename AccumOf<TC>::type;
  alignas(64) Acc at[M * K];
  alignas(64) Acc bt[K * N];
  alignas(64) Acc ct[M * N];
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) at[i * K + k] = widen<Acc>(TransA ? a[k * lda + i] : a[i * lda + k]);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) bt[k * N + j] = widen<Acc>(TransB ? b[j * ldb + k] : b[k * ldb + j]);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) ct[i * N + j] = Clear ? Acc(0) : widen<Acc>(c[i * ldc + j]);
  for (int i = 0; i < M; ++i) {
    Acc* crow = ct + i * N;
    for (int k = 0; k < K; ++k) {
      Acc av = at[i * K + k];
      const Acc* brow = bt + k * N;
      for (int j = 0; j < N; ++j) crow[j] += av * brow[j];
    }
  }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) c[i * ldc + j] = TC(ct[i * N + j]);
}

// T.ieee_add / sub / mul / fdiv / frcp / fsqrt / fmaf with rounding_mode "rz", "ru" or
// "rd": tl::ieee_<op>_<mode> for float and double (fma: float only).
TL_IEEE_SOFTWARE(inline)

}  // namespace tl

// T.__ldg(x[i]) prints `__ldg(&(x[i]))` on every target; the cpu has no read-only cache.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
