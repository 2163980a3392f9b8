// The GPU's rules for the maximum and minimum of two floats, for the code that computes
// them in software: the cpu target, the CUDA emulator, and on the GPU the types without
// an instruction of their own (float64's NaN-propagating form, fp8). One copy, so that
// every target gives the bits the GPU gives. PTX `max` / `min` (CUDA's fmaxf, fminf,
// __hmax, __hmin; T.max, T.min and TileLang's reductions) follow IEEE 754-2019
// maximumNumber / minimumNumber:
//
//   a NaN operand gives the other operand; two NaNs give the canonical NaN;
//   -0 orders below +0, so max(-0, +0) == +0 and min(-0, +0) == -0.
//
// PTX `max.NaN` / `min.NaN` (__hmax_nan, __hmin_nan; the reductions' nan_propagate=True)
// give the canonical NaN when either operand is NaN, and otherwise the same.
//
// The canonical NaN is the type's positive NaN with every payload bit set (0x7fffffff for
// float32, 0x7fff for float16 and bfloat16); an 8-bit float gets the float one converted,
// as TileLang's CUDA code computes their maximum in float.
//
// tl::max / min / max_nan / min_nan are what generated code calls for T.max / T.min and
// the reductions (max_nan / min_nan: nan_propagate=True): these rules for the float types,
// a comparison for the integers. A target with an instruction for a type specializes them.
//
// No headers: the includer defines TL_MINMAX_FN (the functions' qualifier) and includes
// this after its number types (tl::half_t and tl::bfloat16_t with a public `bits`
// member), tl::bit_cast and tl::is_float_number<T>::value (true for the float types).
#pragma once

#ifndef TL_MINMAX_FN
#error "define TL_MINMAX_FN (the function qualifier) before including float_minmax.h"
#endif

namespace tl {

TL_MINMAX_FN float canonical_nan(float) {
  return bit_cast<float>(0x7fffffffu);
}
TL_MINMAX_FN double canonical_nan(double) {
  return bit_cast<double>(0x7fffffffffffffffull);
}
TL_MINMAX_FN half_t canonical_nan(half_t) {
  half_t h;
  h.bits = 0x7fff;
  return h;
}
TL_MINMAX_FN bfloat16_t canonical_nan(bfloat16_t) {
  bfloat16_t h;
  h.bits = 0x7fff;
  return h;
}
template <class T>
TL_MINMAX_FN T canonical_nan(T) {
  return T(canonical_nan(0.0f));
}

// The value of an operand for comparing: float64 as it is, every narrower float as
// float (exact).
TL_MINMAX_FN double compared(double x) {
  return x;
}
template <class T>
TL_MINMAX_FN float compared(T x) {
  return float(x);
}
TL_MINMAX_FN bool negative_zero_or_below(double x) {
  return bit_cast<unsigned long long>(x) >> 63;
}
TL_MINMAX_FN bool negative_zero_or_below(float x) {
  return bit_cast<unsigned>(x) >> 31;
}

template <class T>
TL_MINMAX_FN T max_number(T a, T b) {
  auto x = compared(a), y = compared(b);
  if (x != x) return y != y ? canonical_nan(a) : b;
  if (y != y) return a;
  if (x == y) return negative_zero_or_below(x) ? b : a;  // +0 above -0
  return x < y ? b : a;
}
template <class T>
TL_MINMAX_FN T min_number(T a, T b) {
  auto x = compared(a), y = compared(b);
  if (x != x) return y != y ? canonical_nan(a) : b;
  if (y != y) return a;
  if (x == y) return negative_zero_or_below(x) ? a : b;  // -0 below +0
  return y < x ? b : a;
}
template <class T>
TL_MINMAX_FN T max_propagating_nan(T a, T b) {
  auto x = compared(a), y = compared(b);
  return x != x || y != y ? canonical_nan(a) : max_number(a, b);
}
template <class T>
TL_MINMAX_FN T min_propagating_nan(T a, T b) {
  auto x = compared(a), y = compared(b);
  return x != x || y != y ? canonical_nan(a) : min_number(a, b);
}

template <class T>
TL_MINMAX_FN T max(T a, T b) {
  if constexpr (is_float_number<T>::value)
    return max_number(a, b);
  else
    return a < b ? b : a;
}
template <class T>
TL_MINMAX_FN T min(T a, T b) {
  if constexpr (is_float_number<T>::value)
    return min_number(a, b);
  else
    return b < a ? b : a;
}
template <class T>
TL_MINMAX_FN T max_nan(T a, T b) {
  if constexpr (is_float_number<T>::value)
    return max_propagating_nan(a, b);
  else
    return a < b ? b : a;
}
template <class T>
TL_MINMAX_FN T min_nan(T a, T b) {
  if constexpr (is_float_number<T>::value)
    return min_propagating_nan(a, b);
  else
    return b < a ? b : a;
}

}  // namespace tl
