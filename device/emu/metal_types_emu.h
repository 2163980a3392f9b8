// The scalar and vector types of the Metal Shading Language and its math library,
// as host C++ for the Metal emulator (included by metal_emu.h): half and bfloat as
// 16-bit structs with round-to-nearest-even conversions and arithmetic in float,
// vectors with MSL's sizes and alignments, as_type, select and the metal::,
// metal::fast:: and metal::precise:: math functions. Transcendentals use the
// host's libm at float precision (half and bfloat round the float result), so fast
// math on the GPU may differ in the last bits.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../cpu/float_bits.h"

// MSL's unsigned shorthands (glibc already declares uint, ushort and ulong the same way).
using uchar = unsigned char;
using ushort = unsigned short;
using uint = unsigned int;
using ulong = unsigned long;

namespace metal {

// ---- half and bfloat: storage only, arithmetic through float.
template <int Kind>  // 0: half (IEEE binary16), 1: bfloat
struct Float16 {
  uint16_t bits;

  Float16() = default;
  template <class T>
  requires std::is_arithmetic_v<T> Float16(T v) : bits(encode(v)) {}
  template <int Other>
  requires(Other != Kind) explicit Float16(Float16<Other> v) : bits(encode(float(v))) {}

  operator float() const { return Kind == 0 ? tl::half_bits_to_float(bits) : tl::bf16_bits_to_float(bits); }

  static Float16 from_bits(uint16_t b) {
    Float16 v;
    v.bits = b;
    return v;
  }

  template <class T>
  Float16& operator+=(T o) {
    return *this = Float16(*this + o);
  }
  template <class T>
  Float16& operator-=(T o) {
    return *this = Float16(*this - o);
  }
  template <class T>
  Float16& operator*=(T o) {
    return *this = Float16(*this * o);
  }
  template <class T>
  Float16& operator/=(T o) {
    return *this = Float16(*this / o);
  }

 private:
  template <class T>
  static uint16_t encode(T v) {
    if constexpr (Kind == 0) {
      if constexpr (std::is_same_v<T, float>) return tl::float_to_half_bits(v);
      return tl::double_to_half_bits(double(v));  // one rounding, as numpy
    } else {
      return tl::float_to_bf16_bits(float(v));
    }
  }
};
using half = Float16<0>;
using bfloat = Float16<1>;

template <class T>
inline constexpr bool is_float16 = false;
template <int K>
inline constexpr bool is_float16<Float16<K>> = true;
template <class T>
inline constexpr bool is_scalar = std::is_arithmetic_v<T> || is_float16<T>;

// The type of `a op b` with a 16-bit float operand, as MSL's usual conversions:
// the same 16-bit type or an integer keeps it; float or double wins; half with
// bfloat goes to float.
template <class A, class B>
struct Float16Result {
  using type = std::conditional_t<
      std::is_same_v<A, B>, A,
      std::conditional_t<std::is_integral_v<A> || std::is_same_v<A, bool>, B,
                         std::conditional_t<std::is_integral_v<B>, A,
                                            std::conditional_t<std::is_same_v<A, double> || std::is_same_v<B, double>,
                                                               double, float>>>>;
};
template <class A, class B>
concept Float16Operands = (is_float16<A> || is_float16<B>)&&is_scalar<A>&& is_scalar<B>;

template <class To, class From>
inline To widen(From v) {
  if constexpr (is_float16<From>)
    return To(float(v));
  else
    return To(v);
}

#define TL_MSL_F16_ARITH(op)                                                \
  template <class A, class B>                                               \
  requires Float16Operands<A, B>                                            \
  inline typename Float16Result<A, B>::type operator op(A a, B b) {         \
    using R = typename Float16Result<A, B>::type;                           \
    using W = std::conditional_t<std::is_same_v<R, double>, double, float>; \
    return R(widen<W>(a) op widen<W>(b));                                   \
  }
#define TL_MSL_F16_COMPARE(op)                                              \
  template <class A, class B>                                               \
  requires Float16Operands<A, B>                                            \
  inline bool operator op(A a, B b) {                                       \
    using R = typename Float16Result<A, B>::type;                           \
    using W = std::conditional_t<std::is_same_v<R, double>, double, float>; \
    return widen<W>(a) op widen<W>(b);                                      \
  }
TL_MSL_F16_ARITH(+)
TL_MSL_F16_ARITH(-)
TL_MSL_F16_ARITH(*)
TL_MSL_F16_ARITH(/)
TL_MSL_F16_COMPARE(==)
TL_MSL_F16_COMPARE(!=)
TL_MSL_F16_COMPARE(<)
TL_MSL_F16_COMPARE(<=)
TL_MSL_F16_COMPARE(>)
TL_MSL_F16_COMPARE(>=)
#undef TL_MSL_F16_ARITH
#undef TL_MSL_F16_COMPARE

template <int K>
inline Float16<K> operator-(Float16<K> v) {
  return Float16<K>::from_bits(uint16_t(v.bits ^ 0x8000u));  // exact, NaN and zero included
}
template <int K>
inline Float16<K> operator+(Float16<K> v) {
  return v;
}

// ---- vectors: vec<T, N> with MSL's layout (2 elements aligned to their size, 3
// and 4 elements to four times the element), members x, y, z, w and operator[].
template <class T, int N>
struct VecStorage;
template <class T>
struct alignas(2 * sizeof(T)) VecStorage<T, 2> {
  T x, y;
};
template <class T>
struct alignas(4 * sizeof(T)) VecStorage<T, 3> {
  T x, y, z;
};
template <class T>
struct alignas(4 * sizeof(T)) VecStorage<T, 4> {
  T x, y, z, w;
};

template <class T, int N>
struct vec;

template <class T>
inline constexpr int components = 1;
template <class T, int N>
inline constexpr int components<vec<T, N>> = N;

template <class T, int N>
struct vec : VecStorage<T, N> {
  static_assert(N >= 2 && N <= 4, "MSL vectors have 2, 3 or 4 elements");
  using value_type = T;

  vec() = default;
  template <class S>
  requires is_scalar<S> vec(S s) {  // a scalar fills every element
    for (int i = 0; i < N; ++i) (*this)[i] = T(s);
  }
  template <class... A>
  requires(sizeof...(A) >= 2 && (components<A> + ...) == N)
      vec(const A&... parts) {  // scalars and vectors, flattened in order: float4(a.xy, z, w)
    int i = 0;
    (put(i, parts), ...);
  }
  template <class U>
  requires(!std::is_same_v<U, T>) explicit vec(const vec<U, N>& o) {
    for (int i = 0; i < N; ++i) (*this)[i] = T(o[i]);
  }

  T& operator[](int i) { return (&this->x)[i]; }
  const T& operator[](int i) const { return (&this->x)[i]; }

 private:
  template <class S>
  void put(int& i, const S& s) {
    if constexpr (components<S> == 1) {
      (*this)[i++] = T(s);
    } else {
      for (int k = 0; k < components<S>; ++k) (*this)[i++] = T(s[k]);
    }
  }
};

template <class T>
inline constexpr bool is_vec = false;
template <class T, int N>
inline constexpr bool is_vec<vec<T, N>> = true;

#define TL_MSL_VEC_ARITH(op)                                             \
  template <class T, int N>                                              \
  inline vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) { \
    vec<T, N> r;                                                         \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] op b[i]);                  \
    return r;                                                            \
  }                                                                      \
  template <class T, int N, class S>                                     \
  requires is_scalar<S>                                                  \
  inline vec<T, N> operator op(const vec<T, N>& a, S s) {                \
    vec<T, N> r;                                                         \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] op T(s));                  \
    return r;                                                            \
  }                                                                      \
  template <class T, int N, class S>                                     \
  requires is_scalar<S>                                                  \
  inline vec<T, N> operator op(S s, const vec<T, N>& a) {                \
    vec<T, N> r;                                                         \
    for (int i = 0; i < N; ++i) r[i] = T(T(s) op a[i]);                  \
    return r;                                                            \
  }                                                                      \
  template <class T, int N, class O>                                     \
  inline vec<T, N>& operator op##=(vec<T, N>& a, const O& o) {           \
    return a = a op o;                                                   \
  }
#define TL_MSL_VEC_COMPARE(op)                                              \
  template <class T, int N>                                                 \
  inline vec<bool, N> operator op(const vec<T, N>& a, const vec<T, N>& b) { \
    vec<bool, N> r;                                                         \
    for (int i = 0; i < N; ++i) r[i] = a[i] op b[i];                        \
    return r;                                                               \
  }                                                                         \
  template <class T, int N, class S>                                        \
  requires is_scalar<S>                                                     \
  inline vec<bool, N> operator op(const vec<T, N>& a, S s) {                \
    vec<bool, N> r;                                                         \
    for (int i = 0; i < N; ++i) r[i] = a[i] op T(s);                        \
    return r;                                                               \
  }
TL_MSL_VEC_ARITH(+)
TL_MSL_VEC_ARITH(-)
TL_MSL_VEC_ARITH(*)
TL_MSL_VEC_ARITH(/)
TL_MSL_VEC_ARITH(%)
TL_MSL_VEC_ARITH(&)
TL_MSL_VEC_ARITH(|)
TL_MSL_VEC_ARITH(^)
TL_MSL_VEC_ARITH(<<)
TL_MSL_VEC_ARITH(>>)
TL_MSL_VEC_COMPARE(==)
TL_MSL_VEC_COMPARE(!=)
TL_MSL_VEC_COMPARE(<)
TL_MSL_VEC_COMPARE(<=)
TL_MSL_VEC_COMPARE(>)
TL_MSL_VEC_COMPARE(>=)
#undef TL_MSL_VEC_ARITH
#undef TL_MSL_VEC_COMPARE

template <class T, int N>
inline vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = T(-a[i]);
  return r;
}
template <class T, int N>
inline vec<T, N> operator~(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = T(~a[i]);
  return r;
}
template <class T, int N>
inline vec<bool, N> operator!(const vec<T, N>& a) {
  vec<bool, N> r;
  for (int i = 0; i < N; ++i) r[i] = !a[i];
  return r;
}

#define TL_MSL_VECTORS(T) \
  using T##2 = vec<T, 2>; \
  using T##3 = vec<T, 3>; \
  using T##4 = vec<T, 4>;
TL_MSL_VECTORS(half)
TL_MSL_VECTORS(bfloat)
TL_MSL_VECTORS(float)
TL_MSL_VECTORS(bool)
TL_MSL_VECTORS(char)
TL_MSL_VECTORS(uchar)
TL_MSL_VECTORS(short)
TL_MSL_VECTORS(ushort)
TL_MSL_VECTORS(int)
TL_MSL_VECTORS(uint)
TL_MSL_VECTORS(long)
TL_MSL_VECTORS(ulong)
#undef TL_MSL_VECTORS

static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "16-bit floats are 2 bytes");
static_assert(sizeof(half3) == 8 && alignof(half4) == 8 && sizeof(float3) == 16 && alignof(uint4) == 16,
              "MSL vector sizes and alignments");

template <class T, size_t N>
struct array {
  T elems[N];
  T& operator[](size_t i) { return elems[i]; }
  const T& operator[](size_t i) const { return elems[i]; }
  static constexpr size_t size() { return N; }
};

// ---- as_type and select.
template <class To, class From>
inline To as_type(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of equal size");
  To out;
  std::memcpy(static_cast<void*>(&out), &v, sizeof(To));
  return out;
}

// select(a, b, c): b where c holds, else a.
template <class T>
requires is_scalar<T>
inline T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, bool c) {
  return c ? b : a;
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
  return r;
}

inline bool all(bool b) {
  return b;
}
inline bool any(bool b) {
  return b;
}
template <int N>
inline bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i)
    if (!v[i]) return false;
  return true;
}
template <int N>
inline bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i)
    if (v[i]) return true;
  return false;
}

// ---- math. Each function exists for float, half and bfloat (computed in float,
// rounded once) and element-wise for their vectors.
template <class T>
using same_t = std::type_identity_t<T>;

#define TL_MSL_UNARY(name, expr)                   \
  inline float name(float x) {                     \
    return expr;                                   \
  }                                                \
  inline half name(half x) {                       \
    return half(name(float(x)));                   \
  }                                                \
  inline bfloat name(bfloat x) {                   \
    return bfloat(name(float(x)));                 \
  }                                                \
  template <class T, int N>                        \
  inline vec<T, N> name(const vec<T, N>& v) {      \
    vec<T, N> r;                                   \
    for (int i = 0; i < N; ++i) r[i] = name(v[i]); \
    return r;                                      \
  }
#define TL_MSL_BINARY(name, expr)                                 \
  inline float name(float x, float y) {                           \
    return expr;                                                  \
  }                                                               \
  inline half name(half x, half y) {                              \
    return half(name(float(x), float(y)));                        \
  }                                                               \
  inline bfloat name(bfloat x, bfloat y) {                        \
    return bfloat(name(float(x), float(y)));                      \
  }                                                               \
  template <class T, int N>                                       \
  inline vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) { \
    vec<T, N> r;                                                  \
    for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]);          \
    return r;                                                     \
  }                                                               \
  template <class T, int N>                                       \
  inline vec<T, N> name(const vec<T, N>& a, same_t<T> b) {        \
    vec<T, N> r;                                                  \
    for (int i = 0; i < N; ++i) r[i] = name(a[i], b);             \
    return r;                                                     \
  }

TL_MSL_UNARY(exp, std::exp(x))
TL_MSL_UNARY(exp2, std::exp2(x))
TL_MSL_UNARY(exp10, std::pow(10.0f, x))
TL_MSL_UNARY(log, std::log(x))
TL_MSL_UNARY(log2, std::log2(x))
TL_MSL_UNARY(log10, std::log10(x))
TL_MSL_UNARY(sqrt, std::sqrt(x))
TL_MSL_UNARY(rsqrt, 1.0f / std::sqrt(x))
TL_MSL_UNARY(sin, std::sin(x))
TL_MSL_UNARY(cos, std::cos(x))
TL_MSL_UNARY(tan, std::tan(x))
TL_MSL_UNARY(asin, std::asin(x))
TL_MSL_UNARY(acos, std::acos(x))
TL_MSL_UNARY(atan, std::atan(x))
TL_MSL_UNARY(sinh, std::sinh(x))
TL_MSL_UNARY(cosh, std::cosh(x))
TL_MSL_UNARY(tanh, std::tanh(x))
TL_MSL_UNARY(asinh, std::asinh(x))
TL_MSL_UNARY(acosh, std::acosh(x))
TL_MSL_UNARY(atanh, std::atanh(x))
TL_MSL_UNARY(erf, std::erf(x))
TL_MSL_UNARY(fabs, std::fabs(x))
TL_MSL_UNARY(abs, std::fabs(x))
TL_MSL_UNARY(floor, std::floor(x))
TL_MSL_UNARY(ceil, std::ceil(x))
TL_MSL_UNARY(round, std::round(x))
TL_MSL_UNARY(rint, std::nearbyint(x))
TL_MSL_UNARY(trunc, std::trunc(x))
TL_MSL_UNARY(fract, std::fmin(x - std::floor(x), 0x1.fffffep-1f))
TL_MSL_UNARY(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? x : 0.0f)
TL_MSL_UNARY(saturate, std::fmin(std::fmax(x, 0.0f), 1.0f))
TL_MSL_BINARY(pow, std::pow(x, y))
TL_MSL_BINARY(powr, std::pow(x, y))
TL_MSL_BINARY(fmax, std::fmax(x, y))
TL_MSL_BINARY(fmin, std::fmin(x, y))
TL_MSL_BINARY(max, std::fmax(x, y))
TL_MSL_BINARY(min, std::fmin(x, y))
TL_MSL_BINARY(fmod, std::fmod(x, y))
TL_MSL_BINARY(atan2, std::atan2(x, y))
TL_MSL_BINARY(copysign, std::copysign(x, y))
TL_MSL_BINARY(fdim, std::fdim(x, y))
TL_MSL_BINARY(step, y < x ? 0.0f : 1.0f)  // step(edge, x)
TL_MSL_BINARY(divide, x / y)
#undef TL_MSL_UNARY
#undef TL_MSL_BINARY

inline float fma(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline half fma(half a, half b, half c) {
  return half(std::fma(float(a), float(b), float(c)));
}
inline bfloat fma(bfloat a, bfloat b, bfloat c) {
  return bfloat(std::fma(float(a), float(b), float(c)));
}
template <class T>
requires is_scalar<T>
inline T clamp(T x, same_t<T> lo, same_t<T> hi) {
  return min(max(x, lo), hi);
}
template <class T, int N>
inline vec<T, N> clamp(const vec<T, N>& x, const vec<T, N>& lo, const vec<T, N>& hi) {
  return min(max(x, lo), hi);
}
template <class T, int N>
inline vec<T, N> clamp(const vec<T, N>& x, same_t<T> lo, same_t<T> hi) {
  return min(max(x, lo), hi);
}
template <class T>
requires is_scalar<T>
inline T mix(T x, same_t<T> y, same_t<T> a) {
  return T(x + (y - x) * a);
}
template <class T, int N>
inline T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = T(0);
  for (int i = 0; i < N; ++i) s = T(s + a[i] * b[i]);
  return s;
}

// Integer min, max, abs, clamp and bit counts.
template <class T>
requires std::is_integral_v<T>
inline T max(T a, T b) {
  return a < b ? b : a;
}
template <class T>
requires std::is_integral_v<T>
inline T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
requires std::is_integral_v<T>
inline T abs(T a) {
  return a < 0 ? T(-a) : a;
}
template <class T>
requires std::is_integral_v<T>
inline T popcount(T v) {
  return T(__builtin_popcountll(static_cast<unsigned long long>(static_cast<std::make_unsigned_t<T>>(v))));
}
template <class T>
requires std::is_integral_v<T>
inline T clz(T v) {
  using U = std::make_unsigned_t<T>;
  return v == 0 ? T(8 * sizeof(T)) : T(__builtin_clzll(static_cast<U>(v)) - 8 * (sizeof(long long) - sizeof(T)));
}
template <class T>
requires std::is_integral_v<T>
inline T ctz(T v) {
  return v == 0 ? T(8 * sizeof(T)) : T(__builtin_ctzll(static_cast<unsigned long long>(v)));
}

#define TL_MSL_PREDICATE(name, expr)               \
  inline bool name(float x) {                      \
    return expr;                                   \
  }                                                \
  inline bool name(half x) {                       \
    return name(float(x));                         \
  }                                                \
  inline bool name(bfloat x) {                     \
    return name(float(x));                         \
  }                                                \
  template <class T, int N>                        \
  inline vec<bool, N> name(const vec<T, N>& v) {   \
    vec<bool, N> r;                                \
    for (int i = 0; i < N; ++i) r[i] = name(v[i]); \
    return r;                                      \
  }
TL_MSL_PREDICATE(isnan, std::isnan(x))
TL_MSL_PREDICATE(isinf, std::isinf(x))
TL_MSL_PREDICATE(isfinite, std::isfinite(x))
TL_MSL_PREDICATE(signbit, std::signbit(x))
#undef TL_MSL_PREDICATE

// metal::fast:: and metal::precise:: name the same functions (the emulator has one precision).
#define TL_MSL_FAST_PRECISE(name) \
  namespace fast {                \
  using ::metal::name;            \
  }                               \
  namespace precise {             \
  using ::metal::name;            \
  }
TL_MSL_FAST_PRECISE(exp)
TL_MSL_FAST_PRECISE(exp2)
TL_MSL_FAST_PRECISE(exp10)
TL_MSL_FAST_PRECISE(log)
TL_MSL_FAST_PRECISE(log2)
TL_MSL_FAST_PRECISE(log10)
TL_MSL_FAST_PRECISE(sqrt)
TL_MSL_FAST_PRECISE(rsqrt)
TL_MSL_FAST_PRECISE(sin)
TL_MSL_FAST_PRECISE(cos)
TL_MSL_FAST_PRECISE(tan)
TL_MSL_FAST_PRECISE(asin)
TL_MSL_FAST_PRECISE(acos)
TL_MSL_FAST_PRECISE(atan)
TL_MSL_FAST_PRECISE(sinh)
TL_MSL_FAST_PRECISE(cosh)
TL_MSL_FAST_PRECISE(tanh)
TL_MSL_FAST_PRECISE(asinh)
TL_MSL_FAST_PRECISE(acosh)
TL_MSL_FAST_PRECISE(atanh)
TL_MSL_FAST_PRECISE(fabs)
TL_MSL_FAST_PRECISE(abs)
TL_MSL_FAST_PRECISE(floor)
TL_MSL_FAST_PRECISE(ceil)
TL_MSL_FAST_PRECISE(round)
TL_MSL_FAST_PRECISE(rint)
TL_MSL_FAST_PRECISE(trunc)
TL_MSL_FAST_PRECISE(fract)
TL_MSL_FAST_PRECISE(sign)
TL_MSL_FAST_PRECISE(saturate)
TL_MSL_FAST_PRECISE(pow)
TL_MSL_FAST_PRECISE(powr)
TL_MSL_FAST_PRECISE(fmax)
TL_MSL_FAST_PRECISE(fmin)
TL_MSL_FAST_PRECISE(max)
TL_MSL_FAST_PRECISE(min)
TL_MSL_FAST_PRECISE(fmod)
TL_MSL_FAST_PRECISE(atan2)
TL_MSL_FAST_PRECISE(copysign)
TL_MSL_FAST_PRECISE(fdim)
TL_MSL_FAST_PRECISE(step)
TL_MSL_FAST_PRECISE(divide)
TL_MSL_FAST_PRECISE(fma)
TL_MSL_FAST_PRECISE(clamp)
TL_MSL_FAST_PRECISE(mix)
TL_MSL_FAST_PRECISE(isnan)
TL_MSL_FAST_PRECISE(isinf)
#undef TL_MSL_FAST_PRECISE

}  // namespace metal

// The `h` suffix of half literals (1.000000e+00h). Suffixes without an underscore
// are reserved for the standard library; compilers accept them with a warning.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wliteral-suffix"
#pragma GCC diagnostic ignored "-Wuser-defined-literals"
inline metal::half operator""h(long double v) {
  return metal::half(double(v));
}
inline metal::half operator""h(unsigned long long v) {
  return metal::half(double(v));
}
#pragma GCC diagnostic pop

#define HALF_MAX (::metal::half::from_bits(0x7bffu))
#define HALF_MIN (::metal::half::from_bits(0x0400u))
#define HALF_EPSILON (::metal::half::from_bits(0x1400u))
#define MAXHALF HALF_MAX
