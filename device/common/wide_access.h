// T.ldg32 ... T.ldg256, T.stg32 ... T.stg256, T.lds32 ... T.lds128, T.sts32 ... T.sts128:
// one 4- to 32-byte access of global or shared memory, moved as 32-bit words. A value
// wider than a word travels through a per-thread array of words (`out` for loads) or as
// one argument per word (stores), so that the IR needs no vector types. One copy shared
// by the cpu header and the CUDA header (GPU and emulator). No headers: the includer
// defines TL_WIDE_FN (the function qualifier) and uint32_t.
//
// On the GPU each access is one instruction of its width (the address must be aligned
// to it, as CUDA's vector loads require); on the host it is a byte copy, which any
// alignment allows. A false predicate skips the access: a load then gives zeros.
#pragma once

#ifndef TL_WIDE_FN
#error "define TL_WIDE_FN (the function qualifier) before including wide_access.h"
#endif

namespace tl {
namespace wide {

#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE)
template <int Words>
TL_WIDE_FN void load(uint32_t* out, const void* src) {
  static_assert(Words == 1 || Words == 2 || Words == 4 || Words == 8, "a wide access moves 1, 2, 4 or 8 words");
  if constexpr (Words == 1) {
    out[0] = *static_cast<const uint32_t*>(src);
  } else if constexpr (Words == 2) {
    uint2 v = *static_cast<const uint2*>(src);
    out[0] = v.x;
    out[1] = v.y;
  } else {
    const uint4* p = static_cast<const uint4*>(src);
    for (int h = 0; h < Words / 4; ++h) {
      uint4 v = p[h];
      out[4 * h] = v.x;
      out[4 * h + 1] = v.y;
      out[4 * h + 2] = v.z;
      out[4 * h + 3] = v.w;
    }
  }
}
template <int Words>
TL_WIDE_FN void store(void* dst, const uint32_t* in) {
  static_assert(Words == 1 || Words == 2 || Words == 4 || Words == 8, "a wide access moves 1, 2, 4 or 8 words");
  if constexpr (Words == 1) {
    *static_cast<uint32_t*>(dst) = in[0];
  } else if constexpr (Words == 2) {
    *static_cast<uint2*>(dst) = make_uint2(in[0], in[1]);
  } else {
    uint4* p = static_cast<uint4*>(dst);
    for (int h = 0; h < Words / 4; ++h) p[h] = make_uint4(in[4 * h], in[4 * h + 1], in[4 * h + 2], in[4 * h + 3]);
  }
}
#else
template <int Words>
TL_WIDE_FN void load(uint32_t* out, const void* src) {
  __builtin_memcpy(out, src, 4 * Words);
}
template <int Words>
TL_WIDE_FN void store(void* dst, const uint32_t* in) {
  __builtin_memcpy(dst, in, 4 * Words);
}
#endif

template <int Words>
TL_WIDE_FN void load_if(uint32_t* out, const void* src, bool pred) {
  if (pred) {
    load<Words>(out, src);
    return;
  }
  for (int i = 0; i < Words; ++i) out[i] = 0;
}

}  // namespace wide

// The calls the frontend emits (TileLang's names). A 32-bit load returns its word.
TL_WIDE_FN uint32_t load_global_32(const void* src) {
  uint32_t w;
  wide::load<1>(&w, src);
  return w;
}
TL_WIDE_FN uint32_t load_global_32_conditional(const void* src, bool pred) {
  uint32_t w;
  wide::load_if<1>(&w, src, pred);
  return w;
}
TL_WIDE_FN uint32_t load_shared_32(const void* src) {
  return load_global_32(src);
}
TL_WIDE_FN void load_global_64(uint32_t* out, const void* src) {
  wide::load<2>(out, src);
}
TL_WIDE_FN void load_global_128(uint32_t* out, const void* src) {
  wide::load<4>(out, src);
}
TL_WIDE_FN void load_global_256(uint32_t* out, const void* src) {
  wide::load<8>(out, src);
}
TL_WIDE_FN void load_global_64_conditional(uint32_t* out, const void* src, bool pred) {
  wide::load_if<2>(out, src, pred);
}
TL_WIDE_FN void load_global_128_conditional(uint32_t* out, const void* src, bool pred) {
  wide::load_if<4>(out, src, pred);
}
TL_WIDE_FN void load_global_256_conditional(uint32_t* out, const void* src, bool pred) {
  wide::load_if<8>(out, src, pred);
}
TL_WIDE_FN void load_shared_64(uint32_t* out, const void* src) {
  wide::load<2>(out, src);
}
TL_WIDE_FN void load_shared_128(uint32_t* out, const void* src) {
  wide::load<4>(out, src);
}

TL_WIDE_FN void store_global_32(void* dst, uint32_t a) {
  wide::store<1>(dst, &a);
}
TL_WIDE_FN void store_global_64(void* dst, uint32_t a, uint32_t b) {
  uint32_t w[2] = {a, b};
  wide::store<2>(dst, w);
}
TL_WIDE_FN void store_global_128(void* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  uint32_t w[4] = {a, b, c, d};
  wide::store<4>(dst, w);
}
TL_WIDE_FN void store_global_256(void* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e, uint32_t f,
                                 uint32_t g, uint32_t h) {
  uint32_t w[8] = {a, b, c, d, e, f, g, h};
  wide::store<8>(dst, w);
}
TL_WIDE_FN void store_global_32_conditional(void* dst, uint32_t a, bool pred) {
  if (pred) store_global_32(dst, a);
}
TL_WIDE_FN void store_global_64_conditional(void* dst, uint32_t a, uint32_t b, bool pred) {
  if (pred) store_global_64(dst, a, b);
}
TL_WIDE_FN void store_global_128_conditional(void* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d, bool pred) {
  if (pred) store_global_128(dst, a, b, c, d);
}
TL_WIDE_FN void store_global_256_conditional(void* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e,
                                             uint32_t f, uint32_t g, uint32_t h, bool pred) {
  if (pred) store_global_256(dst, a, b, c, d, e, f, g, h);
}
TL_WIDE_FN void store_shared_32(void* dst, uint32_t a) {
  store_global_32(dst, a);
}
TL_WIDE_FN void store_shared_64(void* dst, uint32_t a, uint32_t b) {
  store_global_64(dst, a, b);
}
TL_WIDE_FN void store_shared_128(void* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  store_global_128(dst, a, b, c, d);
}

}  // namespace tl
