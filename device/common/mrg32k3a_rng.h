// T.rng_init(..., generator="curandStateMRG32k3a_t"): L'Ecuyer's MRG32k3a combined
// multiple recursive generator with cuRAND's seeding, subsequences (2^76 numbers each)
// and output conversions, so a kernel draws what curand_init + curand / curand_uniform
// / curand_normal give for that generator. It shares philox_rng.h's state layout, bit
// helpers and qualifier TL_RNG_FN.
//
// State words (the same 16-word per-thread array): [0..2] the first component's last
// three values, [3..5] the second's; the Box-Muller words as in philox_rng.h.
// Skipping ahead multiplies by a power of each component's 3x3 transition matrix,
// computed by squaring at init (cuRAND reads precomputed powers; the result is the same).
#pragma once

#include "philox_rng.h"

namespace tl {
namespace mrg {

constexpr uint32_t kM1 = 4294967087u, kM2 = 4294944443u;
constexpr uint32_t kA12 = 1403580u, kA13n = 810728u, kA21 = 527612u, kA23n = 1370589u;
constexpr double kNorm = 2.3283065498378288e-10;  // 1 / (m1 + 1)
constexpr double kBitsNorm = 1.000000048662;      // cuRAND's scale of an output to 32 bits
constexpr int kS1 = 0, kS2 = 3;

struct Mat3 {
  uint32_t a[3][3];
};

TL_RNG_FN uint32_t mul_mod(uint32_t x, uint32_t y, uint32_t m) {
  return (uint32_t)((uint64_t)x * y % m);
}

TL_RNG_FN Mat3 mat_mul(const Mat3& x, const Mat3& y, uint32_t m) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      uint64_t acc = 0;
      for (int k = 0; k < 3; ++k) acc = (acc + mul_mod(x.a[i][k], y.a[k][j], m)) % m;
      r.a[i][j] = (uint32_t)acc;
    }
  return r;
}

TL_RNG_FN Mat3 transition(int component) {
  Mat3 t = {{{0, 1, 0}, {0, 0, 1}, {0, 0, 0}}};
  if (component == 0) {
    t.a[2][0] = kM1 - kA13n;
    t.a[2][1] = kA12;
  } else {
    t.a[2][0] = kM2 - kA23n;
    t.a[2][2] = kA21;
  }
  return t;
}

// s = A^(2^shift * n) s for one component.
TL_RNG_FN void skip(uint32_t* s, int component, int shift, uint64_t n) {
  if (n == 0) return;
  uint32_t m = component == 0 ? kM1 : kM2;
  Mat3 p = transition(component);
  for (int i = 0; i < shift; ++i) p = mat_mul(p, p, m);
  Mat3 r = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
  for (; n; n >>= 1) {
    if (n & 1) r = mat_mul(r, p, m);
    if (n > 1) p = mat_mul(p, p, m);
  }
  uint32_t v[3] = {s[0], s[1], s[2]};
  for (int i = 0; i < 3; ++i) {
    uint64_t acc = 0;
    for (int k = 0; k < 3; ++k) acc = (acc + mul_mod(r.a[i][k], v[k], m)) % m;
    s[i] = (uint32_t)acc;
  }
}

TL_RNG_FN void init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  for (int i = 0; i < rng::kStateWords; ++i) s[i] = 0;
  for (int i = 0; i < 3; ++i) s[kS1 + i] = s[kS2 + i] = 12345u;
  if (seed != 0) {
    uint32_t x1 = (uint32_t)seed ^ 0x55555555u, x2 = (uint32_t)(seed >> 32) ^ 0xAAAAAAAAu;
    s[kS1] = mul_mod(x1, s[kS1], kM1);
    s[kS1 + 1] = mul_mod(x2, s[kS1 + 1], kM1);
    s[kS1 + 2] = mul_mod(x1, s[kS1 + 2], kM1);
    s[kS2] = mul_mod(x2, s[kS2], kM2);
    s[kS2 + 1] = mul_mod(x1, s[kS2 + 1], kM2);
    s[kS2 + 2] = mul_mod(x2, s[kS2 + 2], kM2);
  }
  subsequence &= (1ull << 51) - 1;  // cuRAND's subsequences: 0 to 2^51 - 1
  for (int c = 0; c < 2; ++c) {
    skip(s + (c ? kS2 : kS1), c, 76, subsequence);
    skip(s + (c ? kS2 : kS1), c, 0, offset);
  }
}

// The next combined value, in [1, m1].
TL_RNG_FN uint32_t next(uint32_t* s) {
  uint32_t* a = s + kS1;
  uint32_t* b = s + kS2;
  uint32_t p1 = (uint32_t)(((uint64_t)kA12 * a[1] + (uint64_t)kA13n * (kM1 - a[0])) % kM1);
  a[0] = a[1];
  a[1] = a[2];
  a[2] = p1;
  uint32_t p2 = (uint32_t)(((uint64_t)kA21 * b[2] + (uint64_t)kA23n * (kM2 - b[0])) % kM2);
  b[0] = b[1];
  b[1] = b[2];
  b[2] = p2;
  return p1 > p2 ? p1 - p2 : p1 - p2 + kM1;
}

TL_RNG_FN uint32_t next_u32(uint32_t* s) {
  return (uint32_t)((double)next(s) * kBitsNorm);
}
TL_RNG_FN float uniform_f32(uint32_t* s) {
  return (float)(next(s) * kNorm);
}
TL_RNG_FN double uniform_f64(uint32_t* s) {
  return next(s) * kNorm;
}

TL_RNG_FN float normal_f32(uint32_t* s) {
  if (s[rng::kHasF]) {
    s[rng::kHasF] = 0;
    return rng::f32_from_bits(s[rng::kExtraF]);
  }
  float x = uniform_f32(s);
  float y = uniform_f32(s) * 6.2831855f;
  float r = sqrtf(-2.0f * logf(x));
  float sn, cs;
#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE)
  __sincosf(y, &sn, &cs);
#else
  sn = sinf(y);
  cs = cosf(y);
#endif
  s[rng::kExtraF] = rng::bits_from_f32(cs * r);
  s[rng::kHasF] = 1;
  return sn * r;
}

TL_RNG_FN double normal_f64(uint32_t* s) {
  if (s[rng::kHasD]) {
    s[rng::kHasD] = 0;
    return rng::f64_from_bits(s[rng::kExtraD], s[rng::kExtraD + 1]);
  }
  double x = uniform_f64(s);
  double y = uniform_f64(s) * 2.0;
  double r = sqrt(-2.0 * log(x));
  double sn, cs;
#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE)
  sincospi(y, &sn, &cs);
#else
  sn = sin(y * 3.1415926535897932);
  cs = cos(y * 3.1415926535897932);
#endif
  uint64_t b = rng::bits_from_f64(cs * r);
  s[rng::kExtraD] = (uint32_t)b;
  s[rng::kExtraD + 1] = (uint32_t)(b >> 32);
  s[rng::kHasD] = 1;
  return sn * r;
}

}  // namespace mrg

TL_RNG_FN void mrg32k3a_init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  mrg::init(s, seed, subsequence, offset);
}
TL_RNG_FN uint32_t mrg32k3a_rand(uint32_t* s) {
  return mrg::next_u32(s);
}
TL_RNG_FN float mrg32k3a_uniform_f32(uint32_t* s) {
  return mrg::uniform_f32(s);
}
TL_RNG_FN double mrg32k3a_uniform_f64(uint32_t* s) {
  return mrg::uniform_f64(s);
}
TL_RNG_FN float mrg32k3a_normal_f32(uint32_t* s) {
  return mrg::normal_f32(s);
}
TL_RNG_FN double mrg32k3a_normal_f64(uint32_t* s) {
  return mrg::normal_f64(s);
}

}  // namespace tl
