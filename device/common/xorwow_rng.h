// T.rng_init(..., generator="curandStateXORWOW_t"): Marsaglia's xorwow (a 160-bit
// xorshift plus a Weyl counter) with cuRAND's seeding, subsequences (2^67 numbers each)
// and conversions, so a kernel draws what curand_init + curand / curand_uniform /
// curand_normal give for that generator.
//
// Skipping e steps ahead: the xorshift part is linear over GF(2) with the primitive
// characteristic polynomial P of degree 160 below, so its e-th power is r(M) with
// r = x^e mod P; applying r(M) to the state is 160 plain steps whose states are XORed
// where r has a one. cuRAND multiplies by precomputed 160x160 bit matrices instead; the
// state reached is the same. The Weyl counter advances by 362437 per skipped number
// (subsequence skips move it by multiples of 2^32, i.e. not at all).
//
// State words (the 16-word per-thread array): [0..4] the xorshift words, [5] the Weyl
// counter; the Box-Muller words as in philox_rng.h.
#pragma once

#include "philox_rng.h"

namespace tl {
namespace xorwow {

constexpr uint32_t kWeyl = 362437u;

struct Poly {
  uint32_t w[5];
};

// P(x) = x^160 + these terms (bit i of word w is the coefficient of x^(32w + i)), found
// by Berlekamp-Massey from the generator's output. (Function-local constants: a
// namespace-scope array would not be visible to device code.)
TL_RNG_FN Poly low_terms_of_p() {
  return Poly{{0x00060001u, 0x08610030u, 0x00062121u, 0x0f3c0035u, 0x00000f0eu}};
}
// x^(2^67) mod P: the polynomial of one subsequence.
TL_RNG_FN Poly subsequence_poly() {
  return Poly{{0x26294934u, 0x77bbc248u, 0x1a87dad0u, 0x930052d4u, 0x947e6dd2u}};
}

// a * x mod P.
TL_RNG_FN void mul_x(Poly& a) {
  uint32_t carry = a.w[4] >> 31;
  for (int i = 4; i > 0; --i) a.w[i] = (a.w[i] << 1) | (a.w[i - 1] >> 31);
  a.w[0] <<= 1;
  if (carry) {
    Poly p = low_terms_of_p();
    for (int i = 0; i < 5; ++i) a.w[i] ^= p.w[i];
  }
}

// a * b mod P (shift and add, b's bits from the top).
TL_RNG_FN Poly mul_mod(const Poly& a, const Poly& b) {
  Poly r = {{0, 0, 0, 0, 0}};
  for (int bit = 159; bit >= 0; --bit) {
    mul_x(r);
    if ((b.w[bit >> 5] >> (bit & 31)) & 1)
      for (int i = 0; i < 5; ++i) r.w[i] ^= a.w[i];
  }
  return r;
}

// base^e mod P.
TL_RNG_FN Poly pow_mod(Poly base, uint64_t e) {
  Poly r = {{1, 0, 0, 0, 0}};
  for (; e; e >>= 1) {
    if (e & 1) r = mul_mod(r, base);
    if (e > 1) base = mul_mod(base, base);
  }
  return r;
}

TL_RNG_FN void step(uint32_t* v) {
  uint32_t t = v[0] ^ (v[0] >> 2);
  v[0] = v[1];
  v[1] = v[2];
  v[2] = v[3];
  v[3] = v[4];
  v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

// v = r(M) v.
TL_RNG_FN void apply(uint32_t* v, const Poly& r) {
  uint32_t acc[5] = {0, 0, 0, 0, 0};
  uint32_t w[5] = {v[0], v[1], v[2], v[3], v[4]};
  for (int bit = 0; bit < 160; ++bit) {
    if ((r.w[bit >> 5] >> (bit & 31)) & 1)
      for (int i = 0; i < 5; ++i) acc[i] ^= w[i];
    step(w);
  }
  for (int i = 0; i < 5; ++i) v[i] = acc[i];
}

TL_RNG_FN void init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  for (int i = 0; i < rng::kStateWords; ++i) s[i] = 0;
  uint32_t s0 = (uint32_t)seed ^ 0xaad26b49u, s1 = (uint32_t)(seed >> 32) ^ 0xf7dcefddu;
  uint32_t t0 = 1099087573u * s0, t1 = 2591861531u * s1;
  s[5] = 6615241u + t1 + t0;
  s[0] = 123456789u + t0;
  s[1] = 362436069u ^ t0;
  s[2] = 521288629u + t1;
  s[3] = 88675123u ^ t1;
  s[4] = 5783321u + t0;
  Poly x = {{2, 0, 0, 0, 0}};
  Poly r = mul_mod(pow_mod(subsequence_poly(), subsequence), pow_mod(x, offset));
  apply(s, r);
  s[5] += kWeyl * (uint32_t)offset;
}

TL_RNG_FN uint32_t next_u32(uint32_t* s) {
  step(s);
  s[5] += kWeyl;
  return s[4] + s[5];
}

struct Draw {
  TL_RNG_FN uint32_t operator()(uint32_t* s) const { return next_u32(s); }
};

}  // namespace xorwow

TL_RNG_FN void xorwow_init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  xorwow::init(s, seed, subsequence, offset);
}
TL_RNG_FN uint32_t xorwow_rand(uint32_t* s) {
  return xorwow::next_u32(s);
}
TL_RNG_FN float xorwow_uniform_f32(uint32_t* s) {
  return rng::uniform_f32_of<xorwow::Draw>(s);
}
// XORWOW's double uniform takes 53 bits of two draws (cuRAND's choice for this generator).
TL_RNG_FN double xorwow_uniform_f64(uint32_t* s) {
  uint32_t x = xorwow::next_u32(s);
  uint32_t y = xorwow::next_u32(s);
  uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
  return z * rng::kInv2Pow53D + (rng::kInv2Pow53D / 2.0);
}
TL_RNG_FN float xorwow_normal_f32(uint32_t* s) {
  return rng::normal_f32_of<xorwow::Draw>(s);
}
TL_RNG_FN double xorwow_normal_f64(uint32_t* s) {
  return rng::normal_f64_of<xorwow::Draw>(s);
}

}  // namespace tl
