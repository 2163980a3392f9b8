// IEEE add, sub, mul, div, reciprocal, sqrt and fma of float and double with a rounding
// mode other than to-nearest, and the correctly rounded reciprocal square root of float (T.ieee_add(x, y, "rz") and
// friends), bit for bit as CUDA's __fadd_rz / __dmul_ru ... compute them, for the cpu target and the CUDA emulator (the
// GPU runs the intrinsics themselves). No FPU mode switching: each operation is computed rounded to nearest, c = RN(e),
// and the sign of the error e - c is found exactly (float operands: in double, where products are exact; double
// operands: TwoSum, or an fma remainder of operands scaled to [0.5, 1)). Since e lies
// within one ulp of c, the directed result is c or its neighbour on the side of e.
// Host compilers only (the cpu target, the emulator): the GPU has the intrinsics.
#pragma once

#include <cmath>

namespace tl::ieee {

enum Mode { kRN, kRZ, kRU, kRD };

inline int sign_of(double v) {
  return (v > 0) - (v < 0);
}
inline float next_toward(float c, float to) {
  return std::nextafter(c, to);
}
inline double next_toward(double c, double to) {
  return std::nextafter(c, to);
}

// The result of rounding e with `mode`, given c = RN(e) and s = sign(e - c).
template <Mode M, class F>
inline F directed(F c, int s) {
  if (M == kRN || s == 0 || c != c) return c;
  if (M == kRU) return s > 0 ? next_toward(c, F(INFINITY)) : c;
  if (M == kRD) return s < 0 ? next_toward(c, F(-INFINITY)) : c;
  if ((c > 0 && s < 0) || (c < 0 && s > 0)) return next_toward(c, F(0));  // kRZ: toward zero
  return c;
}

// An exact zero sum a + b: +0 unless both are -0, and -0 whenever rounding down with
// either operand -0 or nonzero (IEEE 754's rule for x + (-x)).
template <Mode M, class F>
inline F zero_sum(F a, F b) {
  if (M == kRD) return (a == 0 && b == 0 && !std::signbit(a) && !std::signbit(b)) ? F(0) : F(-0.0);
  return (std::signbit(a) && std::signbit(b)) ? F(-0.0) : F(0);
}

// ---- float: e = hi + lo exactly in double (lo = 0 for products)
template <Mode M>
inline float round_float(double hi, double lo, bool exact_zero_rule, double a, double b) {
  float c = float(hi);
  if (hi != hi) return c;
  if (hi == 0 && lo == 0) return exact_zero_rule ? float(zero_sum<M>(a, b)) : c;
  if (std::isinf(c)) return std::isinf(hi) ? c : directed<M>(c, -sign_of(c));  // overflow of a finite e
  return directed<M>(c, sign_of((hi - double(c)) + lo));
}

// TwoSum: hi = RN(a + b) and the exact error lo, a + b == hi + lo.
inline void two_sum(double a, double b, double& hi, double& lo) {
  hi = a + b;
  double bb = hi - a;
  lo = (a - (hi - bb)) + (b - bb);
  if (std::isinf(hi)) lo = 0;
}

template <Mode M>
inline float add(float x, float y) {
  double hi, lo;
  two_sum(x, y, hi, lo);
  return round_float<M>(hi, lo, true, x, y);
}
template <Mode M>
inline float mul(float x, float y) {
  return round_float<M>(double(x) * double(y), 0, false, 0, 0);  // 48 bits: exact
}
template <Mode M>
inline float fma(float x, float y, float z) {
  double p = double(x) * double(y), hi, lo;
  two_sum(p, z, hi, lo);
  return round_float<M>(hi, lo, true, p, z);
}
template <Mode M>
inline float div(float x, float y) {
  if (x == 0 || y == 0 || std::isinf(x) || std::isinf(y) || x != x || y != y) return x / y;
  double q = double(x) / double(y);
  float c = float(q);
  if (std::isinf(c)) return directed<M>(c, -sign_of(c));
  // e - c = (x - c * y) / y; c * y has 48 bits, so the fma's remainder has e's sign.
  return directed<M>(c, sign_of(std::fma(-double(c), double(y), double(x))) * sign_of(y));
}
template <Mode M>
inline float sqrt(float x) {
  if (!(x > 0) || std::isinf(x)) return std::sqrt(x);
  float c = float(std::sqrt(double(x)));
  return directed<M>(c, sign_of(std::fma(-double(c), double(c), double(x))));
}

// ---- double
template <Mode M>
inline double add(double x, double y) {
  double hi, lo;
  two_sum(x, y, hi, lo);
  if (hi != hi) return hi;
  if (std::isinf(hi)) return std::isinf(x) || std::isinf(y) ? hi : directed<M>(hi, -sign_of(hi));
  if (hi == 0 && lo == 0) return zero_sum<M>(x, y);
  return directed<M>(hi, sign_of(lo));
}
template <Mode M>
inline double mul(double x, double y) {
  double p = x * y;
  if (p != p || x == 0 || y == 0 || std::isinf(x) || std::isinf(y)) return p;
  if (std::isinf(p)) return directed<M>(p, -sign_of(p));
  // sign(x * y - p), on mantissas in [0.5, 1) so that nothing under- or overflows.
  int ex, ey;
  double mx = std::frexp(x, &ex), my = std::frexp(y, &ey);
  return directed<M>(p, sign_of(std::fma(mx, my, -std::ldexp(p, -(ex + ey)))));
}
template <Mode M>
inline double div(double x, double y) {
  double q = x / y;
  if (q != q || x == 0 || y == 0 || std::isinf(x) || std::isinf(y)) return q;
  if (std::isinf(q)) return directed<M>(q, -sign_of(q));
  if (q == 0) return directed<M>(q, sign_of(x) * sign_of(y));
  // sign(x - q * y) * sign(y), on mantissas: x - q y = 2^ex (mx - mq my 2^(eq + ey - ex)).
  int ex, ey, eq;
  double mx = std::frexp(x, &ex), my = std::frexp(y, &ey), mq = std::frexp(q, &eq);
  return directed<M>(q, sign_of(std::fma(-std::ldexp(mq, eq + ey - ex), my, mx)) * sign_of(y));
}
template <Mode M>
inline double sqrt(double x) {
  if (!(x > 0) || std::isinf(x)) return std::sqrt(x);
  double r = std::sqrt(x);
  // sign(x - r^2) on x scaled by an even power of two: x = m 2^(2k), r = t 2^k.
  int e;
  std::frexp(x, &e);
  int k = e / 2;
  double m = std::ldexp(x, -2 * k), t = std::ldexp(r, -k);
  return directed<M>(r, sign_of(std::fma(-t, t, m)));
}

// The sign of the exact sum of v[0] + ... + v[n-1] (finite, no partial sum overflowing):
// Shewchuk's growing expansion, whose components do not overlap and grow in magnitude,
// so the last nonzero one has the sum's sign.
inline int sign_of_sum(const double* v, int n) {
  double e[4];
  int m = 0;
  for (int i = 0; i < n; ++i) {
    double q = v[i];
    for (int j = 0; j < m; ++j) {
      double hi, lo;
      two_sum(q, e[j], hi, lo);
      e[j] = lo;
      q = hi;
    }
    e[m++] = q;
  }
  for (int j = m - 1; j >= 0; --j)
    if (e[j] != 0) return sign_of(e[j]);
  return 0;
}

// x * y + z of doubles, rounded once with M. c = RN(e) by the host's fma; the sign of
// e - c from the exact product ph + pl of the mantissas (scaled to [0.25, 1), so nothing
// under- or overflows) and z and c scaled by the same power of two. A term more than 900
// binades below the larger of the product and z only decides a tie: it lies far below
// c's rounding error.
template <Mode M>
inline double fma(double x, double y, double z) {
  double c = std::fma(x, y, z);
  if (c != c || std::isinf(x) || std::isinf(y) || std::isinf(z)) return c;
  if (x == 0 || y == 0) {  // an exact signed-zero product: z, or the zero-sum rule
    double p = std::signbit(x) != std::signbit(y) ? -0.0 : 0.0;
    return z == 0 ? zero_sum<M>(p, z) : z;
  }
  if (std::isinf(c)) return directed<M>(c, -sign_of(c));  // a finite e overflowed
  int ex, ey, ez = 0;
  double mx = std::frexp(x, &ex), my = std::frexp(y, &ey);
  double ph = mx * my, pl = std::fma(mx, my, -ph);  // mx * my exactly
  int s = ex + ey, t = s;
  if (z != 0) {
    std::frexp(z, &ez);
    t = ez > s ? ez : s;
  }
  int product_sign = sign_of(x) * sign_of(y);
  if (z != 0 && s < t - 900) return directed<M>(c, product_sign);  // c == z; e - c is the product
  bool z_far = z != 0 && ez < s - 900;
  double terms[4] = {std::ldexp(ph, s - t), std::ldexp(pl, s - t), -std::ldexp(c, -t), z_far ? 0.0 : std::ldexp(z, -t)};
  int e_sign = sign_of_sum(terms, 4);
  if (e_sign == 0 && z_far) e_sign = sign_of(z);
  if (e_sign == 0 && c == 0) return zero_sum<M>(product_sign < 0 ? -1.0 : 1.0, z);  // e is 0
  return directed<M>(c, e_sign);
}

// 1 / sqrt(x) of a float rounded to nearest (CUDA's __frsqrt_rn): the double estimate
// rounded to float is the answer or its neighbour; the midpoints m on either side decide
// exactly (1 / sqrt(x) > m exactly when m^2 x < 1; m^2 has 50 bits, and m^2 x - 1 is
// an exact hi - 1 + lo). No midpoint is hit: 1 / m^2 is no float.
inline float rsqrt_rn(float x) {
  if (!(x > 0) || std::isinf(x)) return 1.0f / std::sqrt(x);
  float c = float(1.0 / std::sqrt(double(x)));
  auto below = [x](double m) {  // sign(m^2 x - 1)
    double m2 = m * m, hi = m2 * double(x), lo = std::fma(m2, double(x), -hi);
    return sign_of((hi - 1.0) + lo);
  };
  float up = std::nextafter(c, INFINITY), down = std::nextafter(c, 0.0f);
  if (below((double(c) + double(up)) / 2) < 0) return up;  // the exact value lies above
  if (below((double(c) + double(down)) / 2) > 0) return down;
  return c;
}

}  // namespace tl::ieee

// tl::ieee_<op>_<mode> for float and double, computed by the
// templates above, and tl::ieee_frsqrt_rn of float; QUAL is the definition's qualifier (`inline` on the cpu target,
// TL_DEVICE in the CUDA emulation). Expanded inside namespace tl.
#define TL_IEEE_SOFTWARE_MODE(QUAL, mode, M)                   \
  QUAL float ieee_add_##mode(float x, float y) {               \
    return ieee::add<M>(x, y);                                 \
  }                                                            \
  QUAL double ieee_add_##mode(double x, double y) {            \
    return ieee::add<M>(x, y);                                 \
  }                                                            \
  QUAL float ieee_sub_##mode(float x, float y) {               \
    return ieee::add<M>(x, -y);                                \
  }                                                            \
  QUAL double ieee_sub_##mode(double x, double y) {            \
    return ieee::add<M>(x, -y);                                \
  }                                                            \
  QUAL float ieee_mul_##mode(float x, float y) {               \
    return ieee::mul<M>(x, y);                                 \
  }                                                            \
  QUAL double ieee_mul_##mode(double x, double y) {            \
    return ieee::mul<M>(x, y);                                 \
  }                                                            \
  QUAL float ieee_fdiv_##mode(float x, float y) {              \
    return ieee::div<M>(x, y);                                 \
  }                                                            \
  QUAL double ieee_fdiv_##mode(double x, double y) {           \
    return ieee::div<M>(x, y);                                 \
  }                                                            \
  QUAL float ieee_frcp_##mode(float x) {                       \
    return ieee::div<M>(float(1), x);                          \
  }                                                            \
  QUAL double ieee_frcp_##mode(double x) {                     \
    return ieee::div<M>(double(1), x);                         \
  }                                                            \
  QUAL float ieee_fsqrt_##mode(float x) {                      \
    return ieee::sqrt<M>(x);                                   \
  }                                                            \
  QUAL double ieee_fsqrt_##mode(double x) {                    \
    return ieee::sqrt<M>(x);                                   \
  }                                                            \
  QUAL float ieee_fmaf_##mode(float x, float y, float z) {     \
    return ieee::fma<M>(x, y, z);                              \
  }                                                            \
  QUAL double ieee_fmaf_##mode(double x, double y, double z) { \
    return ieee::fma<M>(x, y, z);                              \
  }
#define TL_IEEE_SOFTWARE(QUAL)               \
  TL_IEEE_SOFTWARE_MODE(QUAL, rz, ieee::kRZ) \
  TL_IEEE_SOFTWARE_MODE(QUAL, ru, ieee::kRU) \
  TL_IEEE_SOFTWARE_MODE(QUAL, rd, ieee::kRD) \
  QUAL float ieee_frsqrt_rn(float x) {       \
    return ieee::rsqrt_rn(x);                \
  }
