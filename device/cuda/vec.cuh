// Vector moves between memory and registers for the copies that
// src/transform/lower_fragments.cpp generates. The memory side is moved in the
// widest aligned units (up to 16 bytes) that the run's size allows; the compiler
// only asks for a width when the address is a multiple of it. Registers are
// converted element by element, so a fragment may differ in dtype from the tensor it
// is copied to or from; float runs into float16 / bfloat16 / float8_e4m3fn /
// float8_e5m2 convert two elements per cvt (tl::cast_pair).
#pragma once

namespace tl {
namespace vec {

template <int Bytes>
struct Unit;
template <>
struct alignas(16) Unit<16> {
  uint32_t w[4];
};
template <>
struct alignas(8) Unit<8> {
  uint32_t w[2];
};
template <>
struct Unit<4> {
  uint32_t w;
};
template <>
struct Unit<2> {
  uint16_t w;
};
template <>
struct Unit<1> {
  uint8_t w;
};

constexpr int unit_bytes(int bytes) {
  return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
}

template <class D, class S>
TL_DEVICE D convert(const S& x) {
  if constexpr (is_same<D, S>::value) {
    return x;
  } else {
    return D(x);
  }
}

// out[i] = D(in[i]) for i < N, in pairs where one cvt converts two values: through the
// named pair conversion Cvt where the code generator gives one (below), else the pairs
// tl::cast_pair converts.
template <int N, class Cvt = void, class D, class S>
TL_DEVICE void convert_run(D* out, const S* in) {
  if constexpr (!is_same<Cvt, void>::value) {
    static_assert(N % 2 == 0, "a pair conversion converts runs of an even length");
#pragma unroll
    for (int i = 0; i < N; i += 2) Cvt::pair(out + i, in + i);
  } else if constexpr (N % 2 == 0 && is_same<S, float>::value && has_cast_pair<D>::value) {
#pragma unroll
    for (int i = 0; i < N; i += 2) cast_pair(out + i, in[i], in[i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = convert<D>(in[i]);
  }
}

template <int N, class T>
struct PackSize {
  static constexpr int kBytes = N * int(sizeof(T)), kUnit = unit_bytes(kBytes), kUnits = kBytes / kUnit;
};

// N elements of T over raw storage in units of U bytes (a union: reading the
// elements after writing the units is the type pun both nvcc and g++ define).
template <int N, class T>
union Pack {
  Unit<PackSize<N, T>::kUnit> u[PackSize<N, T>::kUnits];
  T e[N];
  TL_DEVICE Pack() {}
  TL_DEVICE void load(const T* p) {
#ifdef TL_EMULATE  // host compilers: memcpy keeps strict aliasing intact
    __builtin_memcpy(u, p, sizeof(u));
    return;
#endif
    using U = Unit<PackSize<N, T>::kUnit>;
    const U* src = reinterpret_cast<const U*>(p);
#pragma unroll
    for (int i = 0; i < PackSize<N, T>::kUnits; ++i) u[i] = src[i];
  }
  TL_DEVICE void store(T* p) const {
#ifdef TL_EMULATE
    __builtin_memcpy(p, u, sizeof(u));
    return;
#endif
    using U = Unit<PackSize<N, T>::kUnit>;
    U* dst = reinterpret_cast<U*>(p);
#pragma unroll
    for (int i = 0; i < PackSize<N, T>::kUnits; ++i) dst[i] = u[i];
  }
};

}  // namespace vec

// Pair conversions: out[0..1] = D(in[0..1]), one cvt for both where the arch has one
// (tl::cast_pair's: float into float16 / bfloat16 / float8_e4m3fn / float8_e5m2), else
// element by element; the same bits either way. The code generator names the one a
// cast uses (`tl::store_vec<8, tl::__float22half2_rn>`, `tl::convert_pair<
// tl::__half22float2>(&dst[k], &src[k])`) by the name CUDA's headers or TileLang's give
// the conversion of that pair of types; each is a tag with a `pair` function, not
// CUDA's intrinsic of a float2 value.
template <class D, class S>
TL_DEVICE void convert_two(D* out, const S* in) {
  if constexpr (is_same<S, float>::value && has_cast_pair<D>::value && sizeof(D) == 2) {
    cast_pair(out, in[0], in[1]);  // 16-bit registers and vector packs are 4-byte aligned
  } else if constexpr (is_same<S, float>::value && has_cast_pair<D>::value) {
    vec::Pack<2, D> p;  // an 8-bit register array may not be 2-byte aligned
    cast_pair(p.e, in[0], in[1]);
    out[0] = p.e[0];
    out[1] = p.e[1];
  } else {
    out[0] = vec::convert<D>(in[0]);
    out[1] = vec::convert<D>(in[1]);
  }
}
#define TL_PAIR_CONVERSION(Name)                      \
  struct Name {                                       \
    template <class D, class S>                       \
    static TL_DEVICE void pair(D* out, const S* in) { \
      convert_two(out, in);                           \
    }                                                 \
  };
TL_PAIR_CONVERSION(__float22half2_rn)             // float -> float16
TL_PAIR_CONVERSION(__half22float2)                // float16 -> float
TL_PAIR_CONVERSION(__float22bfloat162_rn)         // float -> bfloat16
TL_PAIR_CONVERSION(__bfloat1622float2)            // bfloat16 -> float
TL_PAIR_CONVERSION(__nv_cvt_float2_to_fp8x2)      // float -> float8_e4m3fn / e5m2
TL_PAIR_CONVERSION(__tl_cvt_fp8x2_to_float2)      // float8_e4m3fn / e5m2 -> float
TL_PAIR_CONVERSION(__tl_cvt_fp8x2_to_half2)       // float8_e4m3fn / e5m2 -> float16
TL_PAIR_CONVERSION(__tl_cvt_half2_to_fp8x2)       // float16 -> float8_e4m3fn / e5m2
TL_PAIR_CONVERSION(__tl_cvt_e8m0x2_to_bfloat162)  // float8_e8m0fnu -> bfloat16
TL_PAIR_CONVERSION(__tl_cvt_bfloat162_to_e8m0x2)  // bfloat16 -> float8_e8m0fnu
TL_PAIR_CONVERSION(__tl_cvt_float2_to_e8m0x2)     // float -> float8_e8m0fnu
TL_PAIR_CONVERSION(__tl_cvt_double2_to_e8m0x2)    // double -> float8_e8m0fnu
#undef TL_PAIR_CONVERSION

// T.cast of a fragment's registers two at a time: dst[0..1] = D(src[0..1]).
template <class Cvt, class D, class S>
TL_DEVICE void convert_pair(D* dst, const S* src) {
  Cvt::pair(dst, src);
}

// registers <- memory: N elements, one vector read.
template <int N, class Cvt = void, class D, class S>
TL_DEVICE void load_vec(D* regs, const S* mem) {
  vec::Pack<N, S> p;
  p.load(mem);
  if constexpr (is_same<D, S>::value) {
#pragma unroll
    for (int i = 0; i < N; ++i) regs[i] = p.e[i];
  } else {
    vec::Pack<N, D> q;  // aligned for the pairs; the fragment may not be
    vec::convert_run<N, Cvt>(q.e, p.e);
#pragma unroll
    for (int i = 0; i < N; ++i) regs[i] = q.e[i];
  }
}

// memory <- registers: N elements, one vector write.
template <int N, class Cvt = void, class D, class S>
TL_DEVICE void store_vec(D* mem, const S* regs) {
  vec::Pack<N, D> p;
  vec::convert_run<N, Cvt>(p.e, regs);
  p.store(mem);
}

// memory <- one value: N copies of v, one vector write (a T.vectorized fill).
template <int N, class D, class V>
TL_DEVICE void fill_vec(D* mem, const V& v) {
  vec::Pack<N, D> p;
#pragma unroll
  for (int i = 0; i < N; ++i) p.e[i] = static_cast<D>(v);
  p.store(mem);
}

}  // namespace tl

namespace tl {

// memory <- memory: N elements, one vector read and one vector write.
template <int N, class Cvt = void, class D, class S>
TL_DEVICE void copy_vec(D* dst, const S* src) {
  vec::Pack<N, S> in;
  in.load(src);
  if constexpr (is_same<D, S>::value) {
    in.store(dst);
  } else {
    vec::Pack<N, D> out;
    vec::convert_run<N, Cvt>(out.e, in.e);
    out.store(dst);
  }
}

}  // namespace tl
