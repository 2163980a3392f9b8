// Asynchronous global -> shared copies (cp.async, sm_80+), the loads of the
// multi-stage pipelines: a thread issues copies, closes them into a group with
// cp_async_commit(), and cp_async_wait<N>() blocks until at most its N newest
// groups are still in flight. The copies are visible to the issuing thread after
// the wait, and to the other threads after a barrier that follows it.
// Under TL_EMULATE the twins in device/emu/copy_async_emu.h keep the same groups
// and land each copy at the wait that covers it, so a missing wait reads stale
// data in emulation as it may on the GPU. sm_75 has no cp.async: there a copy is a
// load and a store when it is issued (done before any wait could ask for it), and
// commit and wait have nothing to do. The compiler's pipelines use no cp.async
// there; these keep hand-written T.ptx_cp_async programs running.
#pragma once

#include "smem_addr.cuh"

#ifdef TL_EMULATE
#include "../emu/copy_async_emu.h"
#endif

namespace tl {

// Copies Bytes (4, 8 or 16, both addresses aligned to it) from global to shared
// memory. With pred false the destination is zero-filled and gmem_src is never
// dereferenced (it may point out of bounds).
template <int Bytes>
TL_DEVICE void cp_async(void* smem_dst, const void* gmem_src, bool pred) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp_async copies 4, 8 or 16 bytes");
#ifdef TL_EMULATE
  emu::cp_async(smem_dst, gmem_src, Bytes, pred);
#elif __CUDA_ARCH__ < 800
  struct alignas(Bytes) Chunk {
    unsigned char b[Bytes];
  };
  Chunk v{};
  if (pred) v = *static_cast<const Chunk*>(gmem_src);
  *static_cast<Chunk*>(smem_dst) = v;
#else
  const SmemAddr dst = smem_addr(smem_dst);
  const int src_bytes = pred ? Bytes : 0;  // a smaller source size zero-fills the rest
  if constexpr (Bytes == 16) {
    // .cg: bypass L1, the tile is read once from shared memory.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem_src), "n"(Bytes), "r"(src_bytes)
                 : "memory");
  }
#endif
}

// Closes the copies this thread issued since the last commit into one group.
TL_DEVICE void cp_async_commit() {
#ifdef TL_EMULATE
  emu::cp_async_commit();
#elif __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most the N most recently committed groups of this thread are in
// flight (copies not yet committed are not waited for).
template <int N>
TL_DEVICE void cp_async_wait() {
  static_assert(N >= 0, "cp_async_wait<N>: N counts groups left in flight, N >= 0");
#ifdef TL_EMULATE
  emu::cp_async_wait(N);
#elif __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// T.ptx_cp_async's copies, under TileLang's names.
template <int Bytes>
TL_DEVICE void cp_async_gs(void* smem_dst, const void* gmem_src) {
  cp_async<Bytes>(smem_dst, gmem_src, true);
}
template <int Bytes>
TL_DEVICE void cp_async_gs_conditional(void* smem_dst, const void* gmem_src, bool pred) {
  cp_async<Bytes>(smem_dst, gmem_src, pred);
}

// Commits and waits for every copy this thread issued.
TL_DEVICE void cp_async_wait_all() {
  cp_async_commit();
  cp_async_wait<0>();
}

}  // namespace tl
