// Exact int64 helpers shared by the interval analysis and the simplifier: floor
// division with the IR's semantics and overflow-checked arithmetic, so that a
// rewrite is skipped instead of silently wrapping.
#pragma once

#include <cstdint>
#include <numeric>
#include <optional>

namespace tl::arith_detail {

// Division rounding toward negative infinity; b != 0 and not (INT64_MIN, -1).
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
// The remainder of floor_div: it has the sign of b.
inline int64_t floor_mod(int64_t a, int64_t b) {
  return a - floor_div(a, b) * b;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// gcd of magnitudes; gcd(0, x) == |x|. Callers keep values above INT64_MIN.
inline int64_t gcd_abs(int64_t a, int64_t b) {
  return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b);
}

}  // namespace tl::arith_detail
