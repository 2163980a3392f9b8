// x * y + z of float16 / bfloat16 values rounded once, as the GPU's fma.rn.f16 /
// fma.rn.bf16 (CUDA's __hfma) compute it, for the code that computes it in software:
// the cpu target, the CUDA emulator and bfloat16 before sm_80. The product of two such
// values is exact in float64 (at most 2 x 11 significant bits), and TwoSum gives the
// sum's rounding error exactly; fma16_odd returns the sum rounded to odd in float64
// (RN, then the last bit set toward the error when the error is not zero), from which
// one conversion to float16 or bfloat16 with round-to-nearest-even is the single
// rounding of the exact x * y + z (53 bits are at least two more than 11).
//
// No headers: the includer defines TL_FMA16_FN (the functions' qualifier), uint64_t,
// tl::bit_cast and tl::canonical_nan (float_minmax.h), and 16-bit types that take a
// float64 with one rounding (device/cuda/tl_cuda.cuh, device/cpu/types.h).
#pragma once

#ifndef TL_FMA16_FN
#error "define TL_FMA16_FN (the function qualifier) before including fma16.h"
#endif

namespace tl {

TL_FMA16_FN double fma16_odd(double x, double y, double z) {
  const double p = x * y;  // exact
  const double hi = p + z;
  if (hi - hi != 0) return hi;  // inf or NaN (an inf operand, or inf - inf)
  const double bb = hi - p;
  const double lo = (p - (hi - bb)) + (z - bb);  // hi + lo == p + z exactly
  uint64_t u = bit_cast<uint64_t>(hi);
  // hi == 0 only when the sum is exactly 0 (then lo == 0), so a nonzero lo has a nonzero
  // hi to move one unit toward it.
  if (lo != 0 && (u & 1u) == 0) u = (hi > 0) == (lo > 0) ? u + 1 : u - 1;
  return bit_cast<double>(u);
}

// a * b + c of T (half_t or bfloat16_t) rounded once; a NaN result is the canonical one.
template <class T>
TL_FMA16_FN T fma16(T a, T b, T c) {
  const double r = fma16_odd(float(a), float(b), float(c));
  return r != r ? canonical_nan(T()) : T(r);
}

}  // namespace tl
