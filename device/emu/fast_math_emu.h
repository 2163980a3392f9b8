// CUDA's fast-math intrinsics (__expf, __exp10f, __logf, __log2f, __log10f, __sinf,
// __cosf, __tanf) and the rcp.approx behind tl::fast_rcp, for the emulation: the
// kernels TileLang's T.__exp ... call (TileLang's CUDA code calls the same intrinsics).
//
// The GPU computes each from one or two special-function-unit instructions; NVRTC
// (CUDA 13) compiles them to:
//
//   __expf(x)   = ex2.approx(x * log2(e))      __exp10f(x) = ex2.approx(x * log2(10))
//   __log2f(x)  = lg2.approx(x)                __logf(x)   = lg2.approx(x) * ln(2)
//   __log10f(x) = lg2.approx(x) * log10(2)     __sinf / __cosf = sin / cos.approx
//   __tanf(x)   = div.approx(__sinf(x), __cosf(x)), i.e. __sinf(x) * (1 / __cosf(x))
//   tl::fast_rcp(x) = rcp.approx.ftz(x)        (TileLang's inline PTX)
//
// with the constants rounded to float and float multiplies rounded to nearest. Here the
// same steps run with each approximate instruction replaced by the exact function
// rounded once to float (rcp.approx.ftz also flushes a subnormal operand or result to a
// zero of its sign). So the emulation keeps what makes the intrinsics differ from expf
// ... (the rounding of x * log2(e) before the exponential, which costs large arguments
// digits; the products after the logarithm; no argument reduction but the
// instruction's); the GPU's instructions differ from the exact functions by at most
// their own error (ex2, lg2: about 2 ulp; sin, cos: 2^-20.9 absolute in [-pi, pi], more
// outside, where the emulation stays accurate). CUDA's stated bounds for the intrinsics
// (its programming guide) hold for both: __expf 2 + floor(|1.173 x|) ulp, __exp10f
// 2 + floor(|2.97 x|) ulp, __logf / __log2f / __log10f 2^-21.41 / 2^-22 / 2^-24 absolute
// in [0.5, 2] and 3 / 2 / 3 ulp elsewhere, __sinf / __cosf 2^-21.41 / 2^-21.19
// absolute in [-pi, pi].
//
// The generated code names the intrinsics as CUDA does; glibc's <math.h> declares its
// own __expf ... (the precise functions' internal names), so the emulation's are macros,
// defined after every host header is in.
#pragma once

#include <math.h>

namespace tl::emu {

// The exact function rounded once to float.
inline float ex2_approx(float x) {
  return float(exp2(double(x)));
}
inline float lg2_approx(float x) {
  return float(log2(double(x)));
}
inline float sin_approx(float x) {
  return float(sin(double(x)));
}
inline float cos_approx(float x) {
  return float(cos(double(x)));
}
// rcp.approx.ftz: a subnormal operand or result is a zero of its sign.
inline float flush_subnormal(float x) {
  return x != 0.0f && fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}
inline float rcp_approx(float x) {
  return flush_subnormal(float(1.0 / double(flush_subnormal(x))));
}
// div.approx: a * (1 / b), each rounded.
inline float div_approx(float a, float b) {
  return a * float(1.0 / double(b));
}

inline float fast_expf(float x) {
  return ex2_approx(x * 1.44269504f);  // log2(e) rounded to float (0x3fb8aa3b), as CUDA's
}
inline float fast_exp10f(float x) {
  return ex2_approx(x * 3.32192802f);  // log2(10) (0x40549a78)
}
inline float fast_logf(float x) {
  return lg2_approx(x) * 0.693147182f;  // ln(2) (0x3f317218)
}
inline float fast_log2f(float x) {
  return lg2_approx(x);
}
inline float fast_log10f(float x) {
  return lg2_approx(x) * 0.301029995f;  // log10(2) (0x3e9a209b)
}
inline float fast_sinf(float x) {
  return sin_approx(x);
}
inline float fast_cosf(float x) {
  return cos_approx(x);
}
inline float fast_tanf(float x) {
  return div_approx(sin_approx(x), cos_approx(x));
}

}  // namespace tl::emu

#define __expf(x) ::tl::emu::fast_expf(x)
#define __exp10f(x) ::tl::emu::fast_exp10f(x)
#define __logf(x) ::tl::emu::fast_logf(x)
#define __log2f(x) ::tl::emu::fast_log2f(x)
#define __log10f(x) ::tl::emu::fast_log10f(x)
#define __sinf(x) ::tl::emu::fast_sinf(x)
#define __cosf(x) ::tl::emu::fast_cosf(x)
#define __tanf(x) ::tl::emu::fast_tanf(x)
