// Atomics for generated CPU code. Thread blocks run on parallel OS threads, so
// T.atomic_* must be real atomics: integers use the GCC/Clang __atomic builtins,
// floating types (float, double, half, bfloat16, fp8) update their bit pattern in a
// compare-and-swap loop. `Order` is a __ATOMIC_* constant (0 relaxed ... 5 seq_cst),
// numbered as TileLang numbers its memory orders.
#pragma once

#include <cstdint>
#include <type_traits>

#include "types.h"

namespace tl {
namespace atomic_detail {

template <int Bytes>
struct UIntOf;
template <>
struct UIntOf<1> {
  using type = uint8_t;
};
template <>
struct UIntOf<2> {
  using type = uint16_t;
};
template <>
struct UIntOf<4> {
  using type = uint32_t;
};
template <>
struct UIntOf<8> {
  using type = uint64_t;
};

// A failure order the builtins accept for a given success order.
constexpr int failure_order(int order) {
  if (order == __ATOMIC_SEQ_CST) return __ATOMIC_SEQ_CST;
  if (order == __ATOMIC_ACQUIRE || order == __ATOMIC_ACQ_REL) return __ATOMIC_ACQUIRE;
  return __ATOMIC_RELAXED;
}

// Replaces *addr by f(*addr) atomically and returns the previous value.
template <int Order, class T, class F>
inline T update(T* addr, F f) {
  using Bits = typename UIntOf<sizeof(T)>::type;
  Bits* p = reinterpret_cast<Bits*>(addr);
  Bits expected = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T old = bit_cast<T>(expected);
    Bits desired = bit_cast<Bits>(T(f(old)));
    if (__atomic_compare_exchange_n(p, &expected, desired, /*weak=*/true, Order, failure_order(Order))) return old;
  }
}

template <class T>
constexpr bool is_native = std::is_integral<T>::value;

}  // namespace atomic_detail

template <int Order = __ATOMIC_RELAXED, class T, class V>
inline T atomic_add(T* addr, V value) {
  T v = T(value);
  if constexpr (atomic_detail::is_native<T>) {
    return __atomic_fetch_add(addr, v, Order);
  } else {
    using Acc = std::conditional_t<std::is_same<T, double>::value, double, float>;
    return atomic_detail::update<Order>(addr, [&](T old) { return T(Acc(old) + Acc(v)); });
  }
}

template <int Order = __ATOMIC_RELAXED, class T, class V>
inline T atomic_max(T* addr, V value) {
  T v = T(value);
  using Cmp = std::conditional_t<atomic_detail::is_native<T>, T,
                                 std::conditional_t<std::is_same<T, double>::value, double, float>>;
  return atomic_detail::update<Order>(addr, [&](T old) { return Cmp(old) < Cmp(v) ? v : old; });
}

template <int Order = __ATOMIC_RELAXED, class T, class V>
inline T atomic_min(T* addr, V value) {
  T v = T(value);
  using Cmp = std::conditional_t<atomic_detail::is_native<T>, T,
                                 std::conditional_t<std::is_same<T, double>::value, double, float>>;
  return atomic_detail::update<Order>(addr, [&](T old) { return Cmp(v) < Cmp(old) ? v : old; });
}

// Bitwise read-modify-writes of integers (T.atomic_or, and the bitwise reducers).
template <int Order = __ATOMIC_RELAXED, class T, class V>
inline T atomic_and(T* addr, V value) {
  static_assert(std::is_integral<T>::value, "bitwise atomics need an integer element");
  return __atomic_fetch_and(addr, T(value), Order);
}

template <int Order = __ATOMIC_RELAXED, class T, class V>
inline T atomic_or(T* addr, V value) {
  static_assert(std::is_integral<T>::value, "bitwise atomics need an integer element");
  return __atomic_fetch_or(addr, T(value), Order);
}

template <int Order = __ATOMIC_RELAXED, class T, class V>
inline T atomic_xor(T* addr, V value) {
  static_assert(std::is_integral<T>::value, "bitwise atomics need an integer element");
  return __atomic_fetch_xor(addr, T(value), Order);
}

// T.atomic_addx2 / x4 with return_prev=True: addr[i] += values[i] for each i, each
// element atomically (relaxed for TileLang's order 0, sequentially consistent for any
// other: never weaker than asked), and prev[i] is addr[i] before its add.
template <int N, class T>
inline void atomic_add_run_prev(T* addr, const T* values, T* prev, int order) {
  for (int i = 0; i < N; ++i)
    prev[i] = order == 0 ? atomic_add<__ATOMIC_RELAXED>(addr + i, values[i])
                         : atomic_add<__ATOMIC_SEQ_CST>(addr + i, values[i]);
}
template <class T>
inline void AtomicAddx2Ret(T* addr, const T* values, T* prev, int order = 0) {
  atomic_add_run_prev<2>(addr, values, prev, order);
}
template <class T>
inline void AtomicAddx4Ret(T* addr, const T* values, T* prev, int order = 0) {
  atomic_add_run_prev<4>(addr, values, prev, order);
}

template <int Order = __ATOMIC_SEQ_CST, class T>
inline T atomic_load(const T* addr) {
  using Bits = typename atomic_detail::UIntOf<sizeof(T)>::type;
  return bit_cast<T>(__atomic_load_n(reinterpret_cast<const Bits*>(addr), Order));
}

template <int Order = __ATOMIC_SEQ_CST, class T, class V>
inline void atomic_store(T* addr, V value) {
  using Bits = typename atomic_detail::UIntOf<sizeof(T)>::type;
  __atomic_store_n(reinterpret_cast<Bits*>(addr), bit_cast<Bits>(T(value)), Order);
}

}  // namespace tl
