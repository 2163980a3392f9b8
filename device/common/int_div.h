// Integer division and remainder with a result for every operand pair, one copy shared
// by the CPU header (device/cpu/tl_cpu.h) and the CUDA header (device/cuda/tl_cuda.cuh),
// so that the cpu target, the CUDA emulator and the GPU agree. C leaves x / 0 and
// INT_MIN / -1 undefined, and on x86 they trap (SIGFPE kills the process); TileLang's
// kernels instead define
//
//   x // 0 == 0 and x % 0 == x       (so x == (x // y) * y + x % y holds for every y)
//   MIN // -1 == MIN and MIN % -1 == 0 (the quotient wraps, as the other arithmetic does)
//
// A divisor the compiler sees is a constant other than 0 and -1 folds both checks
// away. No headers: the includer defines TL_INT_DIV_FN, the functions' qualifier
// (`inline` on the host, `__device__ __forceinline__` on the GPU).
#pragma once

#ifndef TL_INT_DIV_FN
#error "define TL_INT_DIV_FN (the function qualifier) before including int_div.h"
#endif

namespace tl {

// -a with two's-complement wrap-around (no signed overflow for the minimum value).
template <class T>
TL_INT_DIV_FN T wrapping_neg(T a) {
  return T(0ull - (unsigned long long)a);
}
template <class T>
TL_INT_DIV_FN bool is_minus_one(T b) {
  return T(-1) < T(0) && b == T(-1);  // false for every unsigned T
}

// C's `/` and `%` (rounding toward zero).
template <class T>
TL_INT_DIV_FN T truncdiv(T a, T b) {
  if (b == T(0)) return T(0);
  if (is_minus_one(b)) return wrapping_neg(a);
  return T(a / b);
}
template <class T>
TL_INT_DIV_FN T truncmod(T a, T b) {
  if (b == T(0)) return a;
  if (is_minus_one(b)) return T(0);
  return T(a % b);
}

// Python's `//` and `%` (rounding toward negative infinity; the remainder has b's sign).
template <class T>
TL_INT_DIV_FN T floordiv(T a, T b) {
  if (b == T(0)) return T(0);
  if (is_minus_one(b)) return wrapping_neg(a);
  T q = T(a / b);
  return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
}
template <class T>
TL_INT_DIV_FN T floormod(T a, T b) {
  if (b == T(0)) return a;
  if (is_minus_one(b)) return T(0);
  T r = T(a % b);
  return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
}

}  // namespace tl
