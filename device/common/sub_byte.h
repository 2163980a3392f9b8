// Elements narrower than a byte (int4, float4_e2m1fn), one copy shared by the CPU
// header (device/cpu/tl_cpu.h) and the CUDA header (device/cuda/tl_cuda.cuh). Memory
// holds them packed, two a byte, element 2k in the low nibble of byte k and 2k + 1 in
// the high one (TileLang's and torch's float4_e2m1fn_x2 order). A value in a variable
// is a one-byte struct whose low 4 bits are the element's code.
//
// Two threads may store the two elements of one byte at the same time (neighbouring
// elements of a T.Parallel loop, of two blocks' tiles): a store into memory others
// may touch clears and sets its own nibble with two atomic bit operations, which
// leave the other nibble alone whatever the order (store_packed_shared). Registers
// are private to their thread and take a plain read-modify-write (store_packed).
//
// No headers: the includer defines TL_SUB_BYTE_FN (the functions' qualifier),
// uint8_t and int64_t, and tl::atomic_nibble_update(uint8_t* byte, uint8_t clear,
// uint8_t set), the target's atomic `*byte = (*byte & ~clear) | set` for bits that
// no other thread changes.
#pragma once

#ifndef TL_SUB_BYTE_FN
#error "define TL_SUB_BYTE_FN (the function qualifier) before including sub_byte.h"
#endif

namespace tl {

// int4: two's complement in 4 bits. Any integer or float converts by wrapping its
// integer part to 4 bits, as a C cast to a narrower integer does.
struct int4_t {
  uint8_t bits;
  int4_t() = default;
  template <class T>
  TL_SUB_BYTE_FN int4_t(T v) : bits(uint8_t((long long)v & 0xf)) {}
  TL_SUB_BYTE_FN operator int() const { return int(bits & 7u) - int(bits & 8u); }
  static TL_SUB_BYTE_FN int4_t from_bits(uint8_t b) {
    int4_t r;
    r.bits = uint8_t(b & 0xfu);
    return r;
  }
};

// Element `i` of the packed array at `base`.
template <class T>
TL_SUB_BYTE_FN T load_packed(const uint8_t* base, int64_t i) {
  return T::from_bits(uint8_t((base[i >> 1] >> ((i & 1) << 2)) & 0xfu));
}

// Stores element `i` of a thread's own packed registers.
template <class T>
TL_SUB_BYTE_FN void store_packed(uint8_t* base, int64_t i, T v) {
  const int shift = int(i & 1) << 2;
  uint8_t& byte = base[i >> 1];
  byte = uint8_t((byte & ~(0xfu << shift)) | ((v.bits & 0xfu) << shift));
}

// Stores element `i` of packed memory that other threads may write next to it.
template <class T>
TL_SUB_BYTE_FN void store_packed_shared(uint8_t* base, int64_t i, T v) {
  const int shift = int(i & 1) << 2;
  atomic_nibble_update(base + (i >> 1), uint8_t(0xfu << shift), uint8_t((v.bits & 0xfu) << shift));
}

}  // namespace tl
