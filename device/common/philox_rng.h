// T.rng_init / T.rng_rand / T.rng_rand_float: the Philox4x32-10 counter-based
// generator with cuRAND's state machine, so that a kernel draws the numbers a
// TileLang kernel draws through curand (same seed, subsequence and offset give the
// same sequence). One copy shared by the cpu header and the CUDA header (GPU and
// emulator). No headers: the includer defines TL_RNG_FN (the function qualifier)
// and provides uint32_t / uint64_t and the float math (logf, sqrtf, sinf ...).
//
// The state lives in a per-thread array of 16 uint32 words that the frontend
// allocates (a local buffer), so no pass needs to know its type:
//   [0..3] counter, [4..5] key, [6..9] the current block of four outputs,
//   [10] index of the next output in that block, [11] / [12] whether a float / double
//   normal is waiting, [13] that float's bits, [14..15] that double's bits.
#pragma once

#ifndef TL_RNG_FN
#error "define TL_RNG_FN (the function qualifier) before including philox_rng.h"
#endif

namespace tl {
namespace rng {

enum : int { kCtr = 0, kKey = 4, kOut = 6, kIdx = 10, kHasF = 11, kHasD = 12, kExtraF = 13, kExtraD = 14 };
constexpr int kStateWords = 16;

TL_RNG_FN void philox_round(uint32_t c[4], uint32_t k0, uint32_t k1) {
  uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
  uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

// The ten rounds of Philox4x32 over the state's counter and key into its output block.
TL_RNG_FN void philox_block(uint32_t* s) {
  uint32_t c[4] = {s[kCtr], s[kCtr + 1], s[kCtr + 2], s[kCtr + 3]};
  uint32_t k0 = s[kKey], k1 = s[kKey + 1];
  for (int r = 0; r < 10; ++r) {
    philox_round(c, k0, k1);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) s[kOut + i] = c[i];
}

// counter += n (128-bit), n < 2^64.
TL_RNG_FN void counter_add(uint32_t* s, uint64_t n) {
  uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);
  s[kCtr] += lo;
  if (s[kCtr] < lo) ++hi;
  s[kCtr + 1] += hi;
  if (hi <= s[kCtr + 1]) return;
  if (++s[kCtr + 2]) return;
  ++s[kCtr + 3];
}

// counter's upper 64 bits += n: one subsequence is 2^64 blocks of four outputs.
TL_RNG_FN void counter_add_high(uint32_t* s, uint64_t n) {
  uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);
  s[kCtr + 2] += lo;
  if (s[kCtr + 2] < lo) ++hi;
  s[kCtr + 3] += hi;
}

TL_RNG_FN void init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  for (int i = 0; i < kStateWords; ++i) s[i] = 0;
  s[kKey] = (uint32_t)seed;
  s[kKey + 1] = (uint32_t)(seed >> 32);
  counter_add_high(s, subsequence);
  // Skip `offset` outputs: whole blocks through the counter, the rest through the index.
  s[kIdx] = (uint32_t)(offset & 3);
  counter_add(s, offset / 4);
  philox_block(s);
}

TL_RNG_FN uint32_t next_u32(uint32_t* s) {
  uint32_t r = s[kOut + s[kIdx]];
  if (++s[kIdx] == 4) {
    s[kIdx] = 0;
    counter_add(s, 1);
    philox_block(s);
  }
  return r;
}

TL_RNG_FN float f32_from_bits(uint32_t b) {
  union {
    uint32_t u;
    float f;
  } v;
  v.u = b;
  return v.f;
}
TL_RNG_FN uint32_t bits_from_f32(float f) {
  union {
    float f;
    uint32_t u;
  } v;
  v.f = f;
  return v.u;
}
TL_RNG_FN double f64_from_bits(uint32_t lo, uint32_t hi) {
  union {
    uint64_t u;
    double d;
  } v;
  v.u = ((uint64_t)hi << 32) | lo;
  return v.d;
}
TL_RNG_FN uint64_t bits_from_f64(double d) {
  union {
    double d;
    uint64_t u;
  } v;
  v.d = d;
  return v.u;
}

constexpr float kInv2Pow32 = 2.3283064e-10f;  // 2^-32 as cuRAND rounds it
constexpr double kInv2Pow32D = 2.3283064365386963e-10;
constexpr double kInv2Pow53D = 1.1102230246251565e-16;

// cuRAND's conversions of 32-bit draws, shared by the generators whose raw output is a
// 32-bit word (Philox, XORWOW): `Draw` is a functor type, `Draw()(s)` the next word.

// Uniform in (0, 1]: the midpoint of the 2^-32-wide bin of a 32-bit draw.
template <class Draw>
TL_RNG_FN float uniform_f32_of(uint32_t* s) {
  return Draw()(s) * kInv2Pow32 + (kInv2Pow32 / 2.0f);
}

// Box-Muller on two draws; the second value waits in the state for the next call.
template <class Draw>
TL_RNG_FN float normal_f32_of(uint32_t* s) {
  if (s[kHasF]) {
    s[kHasF] = 0;
    return f32_from_bits(s[kExtraF]);
  }
  uint32_t x = Draw()(s);
  uint32_t y = Draw()(s);
  float u = x * kInv2Pow32 + (kInv2Pow32 / 2.0f);
  float v = y * (kInv2Pow32 * 6.2831855f) + (kInv2Pow32 * 6.2831855f / 2.0f);
  float r = sqrtf(-2.0f * logf(u));
  float sn, cs;
#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE)
  __sincosf(v, &sn, &cs);  // cuRAND's device code uses the fast intrinsic
#else
  sn = sinf(v);
  cs = cosf(v);
#endif
  s[kExtraF] = bits_from_f32(cs * r);
  s[kHasF] = 1;
  return sn * r;
}

// Box-Muller on 53-bit uniforms made of four draws.
template <class Draw>
TL_RNG_FN double normal_f64_of(uint32_t* s) {
  if (s[kHasD]) {
    s[kHasD] = 0;
    return f64_from_bits(s[kExtraD], s[kExtraD + 1]);
  }
  uint32_t x[4];
  for (int i = 0; i < 4; ++i) x[i] = Draw()(s);
  uint64_t zx = (uint64_t)x[0] ^ ((uint64_t)x[1] << 21);
  uint64_t zy = (uint64_t)x[2] ^ ((uint64_t)x[3] << 21);
  double u = zx * kInv2Pow53D + (kInv2Pow53D / 2.0);
  double v = zy * (kInv2Pow53D * 2.0) + kInv2Pow53D;
  double r = sqrt(-2.0 * log(u));
  double sn, cs;
#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE)
  sincospi(v, &sn, &cs);
#else
  sn = sin(v * 3.1415926535897932);
  cs = cos(v * 3.1415926535897932);
#endif
  uint64_t b = bits_from_f64(cs * r);
  s[kExtraD] = (uint32_t)b;
  s[kExtraD + 1] = (uint32_t)(b >> 32);
  s[kHasD] = 1;
  return sn * r;
}

struct PhiloxDraw {
  TL_RNG_FN uint32_t operator()(uint32_t* s) const { return next_u32(s); }
};

}  // namespace rng

// The calls the frontend emits; `s` is the kernel's per-thread state array.
TL_RNG_FN void philox_init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  rng::init(s, seed, subsequence, offset);
}
TL_RNG_FN uint32_t philox_rand(uint32_t* s) {
  return rng::next_u32(s);
}
TL_RNG_FN float philox_uniform_f32(uint32_t* s) {
  return rng::uniform_f32_of<rng::PhiloxDraw>(s);
}
// Philox's double uniform takes one 32-bit draw (cuRAND's choice for this generator).
TL_RNG_FN double philox_uniform_f64(uint32_t* s) {
  return rng::next_u32(s) * rng::kInv2Pow32D + rng::kInv2Pow32D;
}
TL_RNG_FN float philox_normal_f32(uint32_t* s) {
  return rng::normal_f32_of<rng::PhiloxDraw>(s);
}
TL_RNG_FN double philox_normal_f64(uint32_t* s) {
  return rng::normal_f64_of<rng::PhiloxDraw>(s);
}

}  // namespace tl
