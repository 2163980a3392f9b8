// T.atomic_* for generated CUDA code (and its CPU emulation). Adds use the
// hardware's own atomic add where the type has one (32/64-bit integers, float,
// double; half from sm_70, bfloat16 from sm_90), and AtomicAddx2 / AtomicAddx4
// (TileLang's names) add 2 or 4 neighbours with one vector reduction (float x2/x4
// and bfloat16 x2 on sm_90, half x2 from sm_70). Everything else is a compare-and-swap loop on the 32- or
// 64-bit word that holds the element, so one template serves int, float, double,
// half, bfloat16 and fp8 alike. `Order` is TileLang's memory-order number: the
// atomic itself is relaxed, with fences before and after it as the order needs
// (atomic_detail::fence_before / fence_after).
#pragma once

namespace tl {
namespace atomic_detail {

// The type arithmetic on T runs in: T for integers, double for double, float for
// the rest (float and the low-precision floats).
template <class T>
struct acc {
  using type = float;
};
template <>
struct acc<double> {
  using type = double;
};
#define TL_ACC_IS_SELF(T) \
  template <>             \
  struct acc<T> {         \
    using type = T;       \
  };
TL_ACC_IS_SELF(int8_t)
TL_ACC_IS_SELF(int16_t)
TL_ACC_IS_SELF(int32_t)
TL_ACC_IS_SELF(int64_t)
TL_ACC_IS_SELF(uint8_t)
TL_ACC_IS_SELF(uint16_t)
TL_ACC_IS_SELF(uint32_t)
TL_ACC_IS_SELF(uint64_t)
#undef TL_ACC_IS_SELF

TL_DEVICE unsigned cas32(unsigned* p, unsigned expected, unsigned desired) {
#ifdef TL_EMULATE
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;  // the value seen: equal to `expected` exactly when the swap happened
#else
  return atomicCAS(p, expected, desired);
#endif
}

TL_DEVICE unsigned long long cas64(unsigned long long* p, unsigned long long expected, unsigned long long desired) {
#ifdef TL_EMULATE
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
#else
  return atomicCAS(p, expected, desired);
#endif
}

// The fences around a relaxed atomic that give it TileLang's memory order `order`
// (0 relaxed, 1 consume, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst), as C++ maps
// orders onto fences: release and stronger order the thread's earlier accesses before
// the atomic (a fence before it), consume, acquire and stronger its later accesses
// after it (a fence after it). The emulator's atomics are sequentially consistent.
TL_DEVICE void fence_before(int order) {
#ifndef TL_EMULATE
  if (order >= 3) __threadfence();
#endif
}
TL_DEVICE void fence_after(int order) {
#ifndef TL_EMULATE
  if (order == 1 || order == 2 || order >= 4) __threadfence();
#endif
}

// Replaces *addr by f(*addr) atomically; returns the previous value.
template <class T, class F>
TL_DEVICE T update(T* addr, F f) {
  if constexpr (sizeof(T) == 8) {
    auto* p = reinterpret_cast<unsigned long long*>(addr);
    unsigned long long seen = *reinterpret_cast<volatile unsigned long long*>(p);
    for (;;) {
      T old = bit_cast<T>(seen);
      unsigned long long prev = cas64(p, seen, bit_cast<unsigned long long>(T(f(old))));
      if (prev == seen) return old;
      seen = prev;
    }
  } else {
    // 1-, 2- and 4-byte elements: swap the aligned 32-bit word around them.
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    auto* word = reinterpret_cast<unsigned*>(a & ~uintptr_t(3));
    unsigned shift = unsigned(a & 3) * 8;
    unsigned mask = sizeof(T) == 4 ? 0xffffffffu : ((1u << (8 * sizeof(T))) - 1u) << shift;
    unsigned seen = *reinterpret_cast<volatile unsigned*>(word);
    for (;;) {
      T old;
      unsigned field = (seen & mask) >> shift;
      if constexpr (sizeof(T) == 4) old = bit_cast<T>(field);
      if constexpr (sizeof(T) == 2) old = bit_cast<T>((unsigned short)field);
      if constexpr (sizeof(T) == 1) old = bit_cast<T>((unsigned char)field);
      T next = T(f(old));
      unsigned nb;
      if constexpr (sizeof(T) == 4) nb = bit_cast<unsigned>(next);
      if constexpr (sizeof(T) == 2) nb = bit_cast<unsigned short>(next);
      if constexpr (sizeof(T) == 1) nb = bit_cast<unsigned char>(next);
      unsigned desired = (seen & ~mask) | ((nb << shift) & mask);
      unsigned prev = cas32(word, seen, desired);
      if (prev == seen) return old;
      seen = prev;
    }
  }
}

// *addr += value, relaxed; returns the previous value.
template <class T, class V>
TL_DEVICE T add_relaxed(T* addr, V value) {
  using A = typename acc<T>::type;
  A v = A(T(value));
#if !defined(TL_EMULATE) && defined(__CUDA_ARCH__)
  if constexpr (is_same<T, float>::value || is_same<T, double>::value || is_same<T, int>::value ||
                is_same<T, unsigned>::value || is_same<T, unsigned long long>::value) {
    return atomicAdd(addr, T(v));
  } else if constexpr (is_same<T, int64_t>::value) {
    // Two's complement: the unsigned add wraps exactly as the signed one.
    return T(atomicAdd(reinterpret_cast<unsigned long long*>(addr), (unsigned long long)(v)));
  }
#if __CUDA_ARCH__ >= 700
  if constexpr (is_same<T, half_t>::value) {
    T in(v), old;
    asm volatile("atom.add.noftz.f16 %0, [%1], %2;" : "=h"(old.bits) : "l"(addr), "h"(in.bits) : "memory");
    return old;
  }
#endif
#if __CUDA_ARCH__ >= 900
  if constexpr (is_same<T, bfloat16_t>::value) {
    T in(v), old;
    asm volatile("atom.add.noftz.bf16 %0, [%1], %2;" : "=h"(old.bits) : "l"(addr), "h"(in.bits) : "memory");
    return old;
  }
#endif
#endif
  return update(addr, [&](T old) { return T(A(old) + v); });
}

}  // namespace atomic_detail

template <int Order = 0, class T, class V>
TL_DEVICE T atomic_add(T* addr, V value) {
  atomic_detail::fence_before(Order);
  T old = atomic_detail::add_relaxed(addr, value);
  atomic_detail::fence_after(Order);
  return old;
}

namespace atomic_detail {

// addr[i] += values[i] for i < N, each element atomically (the N adds are not one
// atomic unit), with the fences of memory order `order`. addr must be global memory
// aligned to N elements.
template <int N, class T>
TL_DEVICE void add_vec(T* addr, const T* values, int order) {
#if !defined(TL_EMULATE) && defined(__CUDA_ARCH__)
  const unsigned long long g = (unsigned long long)__cvta_generic_to_global(addr);
#if __CUDA_ARCH__ >= 900
  if constexpr (is_same<T, float>::value && N == 2) {
    fence_before(order);
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(g), "f"(values[0]), "f"(values[1]) : "memory");
    fence_after(order);
    return;
  } else if constexpr (is_same<T, float>::value && N == 4) {
    fence_before(order);
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(g), "f"(values[0]), "f"(values[1]),
                 "f"(values[2]), "f"(values[3])
                 : "memory");
    fence_after(order);
    return;
  } else if constexpr (is_same<T, bfloat16_t>::value && N == 2) {
    fence_before(order);
    unsigned pair = unsigned(values[0].bits) | (unsigned(values[1].bits) << 16);
    asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(g), "r"(pair) : "memory");
    fence_after(order);
    return;
  }
#endif
#if __CUDA_ARCH__ >= 700
  if constexpr (is_same<T, half_t>::value && N == 2) {
    fence_before(order);
    unsigned pair = unsigned(values[0].bits) | (unsigned(values[1].bits) << 16);
    asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(g), "r"(pair) : "memory");
    fence_after(order);
    return;
  }
#endif
  (void)g;
#endif
  // 16-bit quads as two pairs (the pair is the widest 16-bit reduction).
  if constexpr ((is_same<T, half_t>::value || is_same<T, bfloat16_t>::value) && N == 4) {
    add_vec<2>(addr, values, order);
    add_vec<2>(addr + 2, values + 2, order);
    return;
  }
  for (int i = 0; i < N; ++i) {
    fence_before(order);
    add_relaxed(addr + i, values[i]);
    fence_after(order);
  }
}

// A 16-bit pair's `atom` (the instruction `insn`) returning the previous pair into prev.
#define TL_ATOM_PAIR_PREV(insn)                                                     \
  fence_before(order);                                                              \
  unsigned pair = unsigned(values[0].bits) | (unsigned(values[1].bits) << 16), old; \
  asm volatile(insn " %0, [%1], %2;" : "=r"(old) : "l"(g), "r"(pair) : "memory");   \
  fence_after(order);                                                               \
  prev[0].bits = (unsigned short)(old & 0xffffu);                                   \
  prev[1].bits = (unsigned short)(old >> 16);                                       \
  return;
// As add_vec, and prev[i] is addr[i] before its add: `atom` where add_vec has `red`
// (float x2 / x4 and bfloat16 x2 on sm_90, half x2 from sm_70), 16-bit quads as two
// pairs, else each element alone.
template <int N, class T>
TL_DEVICE void add_vec_prev(T* addr, const T* values, T* prev, int order) {
#if !defined(TL_EMULATE) && defined(__CUDA_ARCH__)
  const unsigned long long g = (unsigned long long)__cvta_generic_to_global(addr);
#if __CUDA_ARCH__ >= 900
  if constexpr (is_same<T, float>::value && N == 2) {
    fence_before(order);
    asm volatile("atom.global.v2.f32.add {%0, %1}, [%2], {%3, %4};"
                 : "=f"(prev[0]), "=f"(prev[1])
                 : "l"(g), "f"(values[0]), "f"(values[1])
                 : "memory");
    fence_after(order);
    return;
  } else if constexpr (is_same<T, float>::value && N == 4) {
    fence_before(order);
    asm volatile("atom.global.v4.f32.add {%0, %1, %2, %3}, [%4], {%5, %6, %7, %8};"
                 : "=f"(prev[0]), "=f"(prev[1]), "=f"(prev[2]), "=f"(prev[3])
                 : "l"(g), "f"(values[0]), "f"(values[1]), "f"(values[2]), "f"(values[3])
                 : "memory");
    fence_after(order);
    return;
  } else if constexpr (is_same<T, bfloat16_t>::value && N == 2) {
    TL_ATOM_PAIR_PREV("atom.global.add.noftz.bf16x2")
  }
#endif
#if __CUDA_ARCH__ >= 700
  if constexpr (is_same<T, half_t>::value && N == 2) {
    TL_ATOM_PAIR_PREV("atom.global.add.noftz.f16x2")
  }
#endif
  (void)g;
#endif
  if constexpr ((is_same<T, half_t>::value || is_same<T, bfloat16_t>::value) && N == 4) {
    add_vec_prev<2>(addr, values, prev, order);
    add_vec_prev<2>(addr + 2, values + 2, prev + 2, order);
    return;
  }
  for (int i = 0; i < N; ++i) {
    fence_before(order);
    prev[i] = add_relaxed(addr + i, values[i]);
    fence_after(order);
  }
}
#undef TL_ATOM_PAIR_PREV

// The values of a run converted to the destination's dtype (a float16 fragment added
// into a float32 tensor), then added as above where addr is aligned to the run (the
// lowering proves it, or it is a run the user named with T.atomic_addx2 / x4, which
// may start anywhere: each element alone then).
template <int N, class T, class S>
TL_DEVICE void add_run(T* addr, const S* values, int order) {
  T v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = T(values[i]);
  if ((reinterpret_cast<uintptr_t>(addr) & uintptr_t(N * sizeof(T) - 1)) == 0) {
    add_vec<N>(addr, v, order);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) add_vec<1>(addr + i, v + i, order);
  }
}

// As add_run (the run's own dtype), with the previous values into prev.
template <int N, class T>
TL_DEVICE void add_run_prev(T* addr, const T* values, T* prev, int order) {
  if ((reinterpret_cast<uintptr_t>(addr) & uintptr_t(N * sizeof(T) - 1)) == 0) {
    add_vec_prev<N>(addr, values, prev, order);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) add_vec_prev<1>(addr + i, values + i, prev + i, order);
  }
}

}  // namespace atomic_detail

// T.atomic_add of runs of 2 or 4 consecutive elements, by TileLang's names: addr[i] +=
// values[i] for each i, each element atomically, with the fences of TileLang's memory
// order number `order` (0 relaxed .. 5 seq_cst); one vector reduction where the GPU
// has one (float x2 / x4 and bfloat16 x2 on sm_90, half x2 from sm_70; 16-bit quads as
// two pairs). values may be of another dtype (converted) and in any memory.
template <class T, class S>
TL_DEVICE void AtomicAddx2(T* addr, const S* values, int order = 0) {
  atomic_detail::add_run<2>(addr, values, order);
}
template <class T, class S>
TL_DEVICE void AtomicAddx4(T* addr, const S* values, int order = 0) {
  atomic_detail::add_run<4>(addr, values, order);
}
// T.atomic_addx2 / x4 with return_prev=True: the same adds, and prev[i] is addr[i]
// before its add (one `atom` where the GPU has the vector form, as above for `red`).
template <class T>
TL_DEVICE void AtomicAddx2Ret(T* addr, const T* values, T* prev, int order = 0) {
  atomic_detail::add_run_prev<2>(addr, values, prev, order);
}
template <class T>
TL_DEVICE void AtomicAddx4Ret(T* addr, const T* values, T* prev, int order = 0) {
  atomic_detail::add_run_prev<4>(addr, values, prev, order);
}

template <int Order = 0, class T, class V>
TL_DEVICE T atomic_max(T* addr, V value) {
  using A = typename atomic_detail::acc<T>::type;
  A v = A(T(value));
  atomic_detail::fence_before(Order);
  T prev = atomic_detail::update(addr, [&](T old) { return A(old) < v ? T(v) : old; });
  atomic_detail::fence_after(Order);
  return prev;
}

template <int Order = 0, class T, class V>
TL_DEVICE T atomic_min(T* addr, V value) {
  using A = typename atomic_detail::acc<T>::type;
  A v = A(T(value));
  atomic_detail::fence_before(Order);
  T prev = atomic_detail::update(addr, [&](T old) { return v < A(old) ? T(v) : old; });
  atomic_detail::fence_after(Order);
  return prev;
}

// Bitwise read-modify-writes of integers (T.atomic_or, and the bitwise reducers).
#define TL_ATOMIC_BITWISE(name, op)                                           \
  template <int Order = 0, class T, class V>                                  \
  TL_DEVICE T name(T* addr, V value) {                                        \
    T v = T(value);                                                           \
    atomic_detail::fence_before(Order);                                       \
    T prev = atomic_detail::update(addr, [&](T old) { return T(old op v); }); \
    atomic_detail::fence_after(Order);                                        \
    return prev;                                                              \
  }
TL_ATOMIC_BITWISE(atomic_and, &)
TL_ATOMIC_BITWISE(atomic_or, |)
TL_ATOMIC_BITWISE(atomic_xor, ^)
#undef TL_ATOMIC_BITWISE

// An acquire load is followed by the fence (a wait on a flag, then reads of what its
// setter wrote); a release store is preceded by it.
template <int Order = 5, class T>
TL_DEVICE T atomic_load(const T* addr) {
  atomic_detail::fence_before(Order);
  T v = *reinterpret_cast<const volatile T*>(addr);
  atomic_detail::fence_after(Order);
  return v;
}

template <int Order = 5, class T, class V>
TL_DEVICE void atomic_store(T* addr, V value) {
  T v = T(value);
  atomic_detail::fence_before(Order);
  atomic_detail::update(addr, [&](T) { return v; });
  atomic_detail::fence_after(Order);
}

// The element atomics by TileLang's names, as the CUDA code generator prints the calls
// of tl::atomic_<op><order> (T.atomic_add ...): Atomic<Op>(addr, value, order) where the
// previous value is not used, Atomic<Op>Ret(addr, value, order) returning it,
// AtomicLoad(addr, order) and AtomicStore(addr, value, order); `order` is TileLang's
// memory-order number (0 relaxed .. 5 seq_cst), a constant at every call.
namespace atomic_detail {
template <int O>
struct order_c {
  static constexpr int value = O;
};
template <class F>
TL_DEVICE auto by_order(int order, F f) -> decltype(f(order_c<0>())) {
  switch (order) {
    case 1:
      return f(order_c<1>());
    case 2:
      return f(order_c<2>());
    case 3:
      return f(order_c<3>());
    case 4:
      return f(order_c<4>());
    case 5:
      return f(order_c<5>());
    default:
      return f(order_c<0>());
  }
}
}  // namespace atomic_detail

#define TL_ATOMIC_NAMED(Name, fn)                                                                       \
  template <class T, class V>                                                                           \
  TL_DEVICE T Name##Ret(T* addr, V value, int order = 0) {                                              \
    return atomic_detail::by_order(order, [&](auto o) { return fn<decltype(o)::value>(addr, value); }); \
  }                                                                                                     \
  template <class T, class V>                                                                           \
  TL_DEVICE void Name(T* addr, V value, int order = 0) {                                                \
    atomic_detail::by_order(order, [&](auto o) { (void)fn<decltype(o)::value>(addr, value); });         \
  }
TL_ATOMIC_NAMED(AtomicAdd, atomic_add)
TL_ATOMIC_NAMED(AtomicMax, atomic_max)
TL_ATOMIC_NAMED(AtomicMin, atomic_min)
TL_ATOMIC_NAMED(AtomicAnd, atomic_and)
TL_ATOMIC_NAMED(AtomicOr, atomic_or)
TL_ATOMIC_NAMED(AtomicXor, atomic_xor)
#undef TL_ATOMIC_NAMED

template <class T>
TL_DEVICE T AtomicLoad(const T* addr, int order = 5) {
  return atomic_detail::by_order(order, [&](auto o) { return atomic_load<decltype(o)::value>(addr); });
}
template <class T, class V>
TL_DEVICE void AtomicStore(T* addr, V value, int order = 5) {
  atomic_detail::by_order(order, [&](auto o) { atomic_store<decltype(o)::value>(addr, value); });
}

}  // namespace tl
