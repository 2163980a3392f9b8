// C++ operators on Expr, so that builder code reads like the arithmetic it builds:
// `by * BM + i < M` instead of lt(add(mul(by, int_imm(BM)), i), int_imm(M)). Each
// operator is the typed constructor of ir/op.h (dtype promotion, constant folding,
// the division-by-zero check), and C++ numbers on either side become constants of the
// other operand's dtype (an integer constant next to a float expression becomes a float;
// a fractional constant next to an integer expression is a float32 constant).
//
// The operators follow C, as the IR's own operators do: `/` and `%` truncate for
// integers (use floordiv / floormod for Python's `//` and `%`); `&&`, `||` and `!`
// build logical expressions (both sides are built, nothing short-circuits); `==` and
// `!=` build comparisons, so Expr handles are compared with `same_as`, never `==`.
//
// Included by the public header (tl/tl.h); the compiler's passes use the named
// constructors.
#pragma once

#include <type_traits>

#include "ir/op.h"

namespace tl {
namespace expr_ops_detail {

template <typename T>
using IfNumber = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int>;

// `v` as a constant of `like`'s dtype; an integer beside an integer expression keeps
// every bit (no round trip through double).
template <typename T>
Expr constant_like(const Expr& like, T v) {
  if constexpr (std::is_integral_v<T>) {
    if (like.dtype().is_integer()) return int_imm(static_cast<int64_t>(v), like.dtype());
  } else {
    // 0.5 beside an integer expression is a float32 constant, and promotion decides.
    if (!like.dtype().is_float()) return float_imm(static_cast<double>(v));
  }
  return make_const(like.dtype(), static_cast<double>(v));
}

// The binary operators op.h has no named constructor for.
inline Expr truncmod(Expr a, Expr b) {
  return binary(BinaryOp::Mod, std::move(a), std::move(b));
}
inline Expr bit_and(Expr a, Expr b) {
  return binary(BinaryOp::BitAnd, std::move(a), std::move(b));
}
inline Expr bit_or(Expr a, Expr b) {
  return binary(BinaryOp::BitOr, std::move(a), std::move(b));
}
inline Expr bit_xor(Expr a, Expr b) {
  return binary(BinaryOp::BitXor, std::move(a), std::move(b));
}
inline Expr shift_left(Expr a, Expr b) {
  return binary(BinaryOp::Shl, std::move(a), std::move(b));
}
inline Expr shift_right(Expr a, Expr b) {
  return binary(BinaryOp::Shr, std::move(a), std::move(b));
}

}  // namespace expr_ops_detail

#define TL_EXPR_BINARY_OPERATOR(op, fn)                   \
  inline Expr operator op(const Expr& a, const Expr& b) { \
    return fn(a, b);                                      \
  }                                                       \
  template <typename T, expr_ops_detail::IfNumber<T> = 0> \
  Expr operator op(const Expr& a, T b) {                  \
    return fn(a, expr_ops_detail::constant_like(a, b));   \
  }                                                       \
  template <typename T, expr_ops_detail::IfNumber<T> = 0> \
  Expr operator op(T a, const Expr& b) {                  \
    return fn(expr_ops_detail::constant_like(b, a), b);   \
  }

TL_EXPR_BINARY_OPERATOR(+, add)
TL_EXPR_BINARY_OPERATOR(-, sub)
TL_EXPR_BINARY_OPERATOR(*, mul)
TL_EXPR_BINARY_OPERATOR(/, div)
TL_EXPR_BINARY_OPERATOR(%, expr_ops_detail::truncmod)
TL_EXPR_BINARY_OPERATOR(==, eq)
TL_EXPR_BINARY_OPERATOR(!=, ne)
TL_EXPR_BINARY_OPERATOR(<, lt)
TL_EXPR_BINARY_OPERATOR(<=, le)
TL_EXPR_BINARY_OPERATOR(>, gt)
TL_EXPR_BINARY_OPERATOR(>=, ge)
TL_EXPR_BINARY_OPERATOR(&, expr_ops_detail::bit_and)
TL_EXPR_BINARY_OPERATOR(|, expr_ops_detail::bit_or)
TL_EXPR_BINARY_OPERATOR(^, expr_ops_detail::bit_xor)
TL_EXPR_BINARY_OPERATOR(<<, expr_ops_detail::shift_left)
TL_EXPR_BINARY_OPERATOR(>>, expr_ops_detail::shift_right)

#undef TL_EXPR_BINARY_OPERATOR

inline Expr operator&&(const Expr& a, const Expr& b) {
  return logical_and(a, b);
}
inline Expr operator||(const Expr& a, const Expr& b) {
  return logical_or(a, b);
}
inline Expr operator&&(const Expr& a, bool b) {
  return logical_and(a, bool_imm(b));
}
inline Expr operator&&(bool a, const Expr& b) {
  return logical_and(bool_imm(a), b);
}
inline Expr operator||(const Expr& a, bool b) {
  return logical_or(a, bool_imm(b));
}
inline Expr operator||(bool a, const Expr& b) {
  return logical_or(bool_imm(a), b);
}
inline Expr operator!(const Expr& a) {
  return logical_not(a);
}
inline Expr operator-(const Expr& a) {
  return neg(a);
}
inline Expr operator~(const Expr& a) {
  return bit_not(a);
}

}  // namespace tl
