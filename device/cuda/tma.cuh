// Hopper's tensor memory accelerator (TMA) and the shared-memory mbarriers its
// loads complete on (sm_90). A tensor map, encoded on the host
// (src/runtime/cuda/tma.cpp, cuTensorMapEncodeTiled), describes a global tensor and
// the box one copy moves; kernels take it as a `const __grid_constant__
// tl::TensorMap` parameter. One thread issues a copy of a whole box:
//   tma_load:  global -> shared, out-of-bounds elements filled with zeros, the
//              bytes counted on an mbarrier (complete_tx); threads wait for the
//              barrier's phase with mbarrier_wait(bar, parity).
//   tma_store: shared -> global, out-of-bounds elements dropped, tracked in bulk
//              groups (tma_store_arrive, then tma_store_wait<N> for the tiles' reads
//              or tma_store_wait<N, false> for the writes; TileLang's names).
//   tma_store_add: as tma_store, adding to the global elements (T.atomic_add;
//              TileLang's name, cp.reduce.async.bulk.tensor .add).
// The shared side of a box is dense (dimension 0 innermost), its 16-byte chunks
// permuted by the map's swizzle mode: chunk bits 4.. of the shared-window address
// XOR address bits 7.. (1, 2 or 3 bits for the 32, 64 and 128-byte modes), the
// pattern of device/cuda/swizzle.cuh and of the wgmma descriptors.
//
// Under TL_EMULATE the twins in device/emu/tma_emu.h do the copies from the
// emulator's own map encoding (device/common/tma_map.h) and model the mbarriers.
#pragma once

#include "smem_addr.cuh"

#ifdef TL_EMULATE
#include "../emu/tma_emu.h"
#endif

namespace tl {

// Layout-compatible with CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};

#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE) && __CUDA_ARCH__ < 900
#define TL_TMA_ARCH_OK false
#else
#define TL_TMA_ARCH_OK true
#endif

// Every helper is a template (Dep, when it needs no other parameter) so that this
// header compiles for any arch and only a use of TMA on an older one stops here.
template <int Dependent>
struct TmaArchCheck {
  static_assert(TL_TMA_ARCH_OK && Dependent >= 0,
                "TMA and mbarrier transactions need sm_90 or later; compile for arch sm_90 or sm_90a "
                "(target \"cuda -arch=sm_90a\")");
  static constexpr bool ok = true;
};

// ---- mbarriers: a 64-bit object in shared memory with an expected arrival count,
// the arrivals still pending in the current phase, a transaction (byte) count and
// the phase parity. A phase completes when its pending arrivals and tx-count both
// reach zero; the barrier then flips parity and expects `count` arrivals again.

template <int Dep = 0>
TL_DEVICE void mbarrier_init(uint64_t* bar, uint32_t count) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::mbarrier_init(bar, count);
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#endif
}

// Makes the initialized barriers visible to the async proxy (the TMA unit); the
// initializing thread runs it before the barrier that publishes them.
template <int Dep = 0>
TL_DEVICE void fence_mbarrier_init() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifndef TL_EMULATE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// Orders this thread's ordinary shared-memory accesses before later async-proxy
// accesses (a tma_store reading the tile, a tma_load overwriting it).
template <int Dep = 0>
TL_DEVICE void fence_proxy_async() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifndef TL_EMULATE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

template <int Dep = 0>
TL_DEVICE void mbarrier_arrive(uint64_t* bar) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::mbarrier_arrive(bar, 0);
#else
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n" : "=l"(state) : "r"(smem_addr(bar)) : "memory");
  (void)state;
#endif
}

// Raises the tx-count of the current phase by `bytes` (the bytes the copies that
// complete on it will bring), then arrives.
template <int Dep = 0>
TL_DEVICE void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::mbarrier_arrive(bar, bytes);
#else
  uint64_t state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
               : "=l"(state)
               : "r"(smem_addr(bar)), "r"(bytes)
               : "memory");
  (void)state;
#endif
}

// Raises the tx-count without arriving (a second copy on a phase already expected).
template <int Dep = 0>
TL_DEVICE void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::mbarrier_expect_tx(bar, bytes);
#else
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#endif
}

// T.tma_copy of one contiguous run (a row longer than a TMA box; no tensor map):
// `bytes` bytes from global `src` into shared `dst`, their arrival completing on
// `bar`, whose tx-count the caller raised by `bytes` first (mbarrier_expect_tx). One
// cp.async.bulk when both addresses and the size are 16-byte multiples; otherwise the
// calling thread copies the bytes itself, fences them for the async proxy (a wgmma
// may read the tile next) and completes them on the barrier.
template <int Dep = 0>
TL_DEVICE void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::bulk_load(dst, src, bytes, bar);
#else
  if (((reinterpret_cast<uintptr_t>(src) | smem_addr(dst) | bytes) & 15) == 0) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
  } else {
    for (uint32_t i = 0; i < bytes; ++i) static_cast<char*>(dst)[i] = static_cast<const char*>(src)[i];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
  }
#endif
}

// Blocks until the phase of parity `parity` has completed, that is while the
// barrier's current parity is still `parity`. Waiters alternate parity 0, 1, 0, ...
// one per phase; a wait for parity 1 on a fresh barrier returns at once.
template <int Dep = 0>
TL_DEVICE void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::mbarrier_wait(bar, parity);
#else
  const SmemAddr addr = smem_addr(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// Ends the barrier's life so that its shared memory can be reused for other data.
template <int Dep = 0>
TL_DEVICE void mbarrier_inval(uint64_t* bar) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::mbarrier_inval(bar);
#else
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
#endif
}

// ---- tensor copies. Coordinates are element indices of the box's first element,
// dimension 0 first; they may be negative or run past the tensor's end.

// Loads the box at `coords` into smem_dst (128-byte aligned; 1024 for the 128-byte
// swizzle pattern to start at the tile) and completes its bytes on `bar`, whose
// phase must expect them (mbarrier_arrive_expect_tx).
template <int Rank, class... Coords>
TL_DEVICE void tma_load(void* smem_dst, const TensorMap* map, uint64_t* bar, Coords... coords) {
  static_assert(TmaArchCheck<Rank>::ok);
  static_assert(Rank >= 1 && Rank <= 5, "tma_load: a tensor map has rank 1 to 5");
  static_assert(sizeof...(Coords) == Rank, "tma_load<Rank>: give one coordinate per dimension");
  const int32_t c[5] = {int32_t(coords)...};
#ifdef TL_EMULATE
  emu::tma_load(smem_dst, map, bar, c, Rank);
#else
  const SmemAddr dst = smem_addr(smem_dst), mbar = smem_addr(bar);
  const uint64_t desc = reinterpret_cast<uint64_t>(map);
  if constexpr (Rank == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];\n" ::"r"(
            dst),
        "l"(desc), "r"(mbar), "r"(c[0])
        : "memory");
  if constexpr (Rank == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
        "[%2];\n" ::"r"(dst),
        "l"(desc), "r"(mbar), "r"(c[0]), "r"(c[1])
        : "memory");
  if constexpr (Rank == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
        "[%2];\n" ::"r"(dst),
        "l"(desc), "r"(mbar), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  if constexpr (Rank == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
        "%6}], [%2];\n" ::"r"(dst),
        "l"(desc), "r"(mbar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  if constexpr (Rank == 5)
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
        "%6, %7}], [%2];\n" ::"r"(dst),
        "l"(desc), "r"(mbar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
        : "memory");
#endif
}

// The five ranks of one shared -> global bulk tensor instruction: HEAD and TAIL go
// around the rank ("cp.async.bulk.tensor" ... ".bulk_group").
#define TL_TMA_SHARED_TO_GLOBAL(HEAD, TAIL)                                                                          \
  if constexpr (Rank == 1)                                                                                           \
    asm volatile(HEAD ".1d.global.shared::cta" TAIL " [%0, {%2}], [%1];\n" ::"l"(desc), "r"(src), "r"(c[0])          \
                 : "memory");                                                                                        \
  if constexpr (Rank == 2)                                                                                           \
    asm volatile(HEAD ".2d.global.shared::cta" TAIL " [%0, {%2, %3}], [%1];\n" ::"l"(desc), "r"(src), "r"(c[0]),     \
                 "r"(c[1])                                                                                           \
                 : "memory");                                                                                        \
  if constexpr (Rank == 3)                                                                                           \
    asm volatile(HEAD ".3d.global.shared::cta" TAIL " [%0, {%2, %3, %4}], [%1];\n" ::"l"(desc), "r"(src), "r"(c[0]), \
                 "r"(c[1]), "r"(c[2])                                                                                \
                 : "memory");                                                                                        \
  if constexpr (Rank == 4)                                                                                           \
    asm volatile(HEAD ".4d.global.shared::cta" TAIL " [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(desc), "r"(src),        \
                 "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])                                                          \
                 : "memory");                                                                                        \
  if constexpr (Rank == 5)                                                                                           \
    asm volatile(HEAD ".5d.global.shared::cta" TAIL " [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(desc), "r"(src),    \
                 "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])                                               \
                 : "memory");

// tma_store (Add = false) and tma_store_add (Add = true): one thread's copy of the
// box at `coords` from smem_src (laid out as tma_load leaves it).
template <bool Add, int Rank, class... Coords>
TL_DEVICE void tma_shared_to_global(const TensorMap* map, const void* smem_src, Coords... coords) {
  static_assert(TmaArchCheck<Rank>::ok);
  static_assert(Rank >= 1 && Rank <= 5, "tma_store / tma_store_add: a tensor map has rank 1 to 5");
  static_assert(sizeof...(Coords) == Rank, "tma_store / tma_store_add<Rank>: give one coordinate per dimension");
  const int32_t c[5] = {int32_t(coords)...};
#ifdef TL_EMULATE
  emu::tma_store(map, smem_src, c, Rank, Add);
#else
  const SmemAddr src = smem_addr(smem_src);
  const uint64_t desc = reinterpret_cast<uint64_t>(map);
  if constexpr (Add) {
    TL_TMA_SHARED_TO_GLOBAL("cp.reduce.async.bulk.tensor", ".add.tile.bulk_group")
  } else {
    TL_TMA_SHARED_TO_GLOBAL("cp.async.bulk.tensor", ".bulk_group")
  }
#endif
}

// Stores the box; the elements outside the tensor are not written. The writing
// threads run fence_proxy_async() and a barrier first; the issuing thread closes its
// stores into a group with tma_store_arrive() and, before the tile is written again,
// waits with tma_store_wait<N>().
template <int Rank, class... Coords>
TL_DEVICE void tma_store(const TensorMap* map, const void* smem_src, Coords... coords) {
  tma_shared_to_global<false, Rank>(map, smem_src, coords...);
}

// As tma_store, but each element of the box is added to the tensor's element
// (atomically, in L2) instead of replacing it; the map's dtype is the element type
// (float32, int32 or uint32 here). Ordered and waited for as tma_store.
template <int Rank, class... Coords>
TL_DEVICE void tma_store_add(const TensorMap* map, const void* smem_src, Coords... coords) {
  tma_shared_to_global<true, Rank>(map, smem_src, coords...);
}
#undef TL_TMA_SHARED_TO_GLOBAL

// Closes the stores this thread issued since the last one into one bulk group
// (cp.async.bulk.commit_group).
template <int Dep = 0>
TL_DEVICE void tma_store_arrive() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::tma_store_commit();
#else
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most the N newest bulk groups of this thread are in flight.
// Read (cp.async.bulk.wait_group.read): the older groups have read their shared
// tiles, which may be written again. !Read (cp.async.bulk.wait_group): their writes
// to global memory are done and visible to this thread too, for a tensor the kernel
// reads back after storing it; a barrier then publishes the writes to others.
template <int N, bool Read = true>
TL_DEVICE void tma_store_wait() {
  static_assert(TmaArchCheck<N>::ok);
  static_assert(N >= 0, "tma_store_wait<N>: N counts groups left in flight, N >= 0");
#ifdef TL_EMULATE
  emu::tma_store_wait(N, !Read);
#else
  if constexpr (Read)
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
  else
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Fetches the tensor map into the TMA unit's cache ahead of its first copy.
template <int Dep = 0>
TL_DEVICE void prefetch_tensormap(const TensorMap* map) {
  static_assert(TmaArchCheck<Dep>::ok);
#ifndef TL_EMULATE
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#else
  (void)map;
#endif
}

// A barrier of the `count` threads (whole warps) that call it with the same `id`
// (1-15; 0 is __syncthreads'): the block barrier of a warp-specialized region
// (T.ws), which the block's other threads never reach. Shared-memory writes before
// it are visible after it to the threads that took part.
template <int Dep = 0>
TL_DEVICE void named_barrier_sync(int id, int count) {
#ifdef TL_EMULATE
  emu::named_barrier_sync(id, count);
#else
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#endif
}

// T.named_barrier_arrive(id, count): counts toward barrier `id`'s `count` threads
// without waiting (bar.arrive): threads that only signal the ones waiting with
// named_barrier_sync. Writes before it are visible to the waiters after their sync.
template <int Dep = 0>
TL_DEVICE void named_barrier_arrive(int id, int count) {
#ifdef TL_EMULATE
  emu::named_barrier_arrive(id, count);
#else
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#endif
}

// TileLang's names, which the CUDA code generator prints: bar.sync of `count` threads
// (0: the whole block) on barrier `id`, and bar.arrive.
TL_DEVICE void __sync_thread_partial(int id = 0, int count = 0) {
  if (count == 0) count = int(blockDim.x * blockDim.y * blockDim.z);
#ifdef TL_EMULATE
  emu::named_barrier_sync(id, count);
#else
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#endif
}
TL_DEVICE void __named_barrier_arrive(int id, int count) {
  named_barrier_arrive(id, count);
}

}  // namespace tl
