// The device side of warp-specialized kernels (src/transform/warp_specialize.cpp):
// register reallocation between the warpgroups (the producer warpgroup, which only
// issues TMA copies, lowers its per-thread register limit and the consumer warpgroups
// raise theirs from the block's pool: setmaxnreg, sm_90a; every warp of a warpgroup
// executes the same call; under TL_EMULATE and on other archs, where the kernel is
// never warp-specialized, these do nothing), the warp-uniform rank the warpgroups
// branch on, and the consumers' arrivals that release a tile version.
#pragma once

#include "cluster.cuh"  // the releases of multicast tile versions

namespace tl {

#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE) && defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(TL_NO_SETMAXNREG)
#define TL_HAS_SETMAXNREG 1
#endif

template <int Regs>
TL_DEVICE void setmaxnreg_dec() {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg takes a multiple of 8 in [24, 256]");
#ifdef TL_HAS_SETMAXNREG
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

template <int Regs>
TL_DEVICE void setmaxnreg_inc() {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg takes a multiple of 8 in [24, 256]");
#ifdef TL_HAS_SETMAXNREG
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

// The block rank of lane 0 of the calling warp (`rank` is the caller's block rank),
// as a value nvcc knows to be the same in every lane: it comes from lane 0 by a
// shuffle. The warp-specialized kernel branches on it between its warpgroups, so
// the branch is warp-uniform to the compiler and the code under it runs its loop
// counters, stage indices, barrier addresses and wgmma descriptors on the uniform
// datapath (80 -> 50 instructions per k step of the skinny GEMM's consumer, most of
// them uniform). All 32 lanes of the warp must call it together.
// -DTL_NO_WARP_UNIFORM_HINT (compile_flags) drops the hint, for A/B measurements.
TL_DEVICE int warp_leader_rank(int rank) {
#if defined(TL_EMULATE) || defined(TL_NO_WARP_UNIFORM_HINT)
  return rank & ~31;  // the same value, without the hint (the emulator needs none)
#else
  return __shfl_sync(0xffffffffu, rank & ~31, 0);
#endif
}

// A warp's arrival on an mbarrier whose count is in warps: the warp's lanes first
// meet (their reads of the guarded data are done), then lane 0 arrives for them.
// One arrival per warp rather than per thread keeps the barrier's traffic low.
template <int Dep = 0>
TL_DEVICE void mbarrier_arrive_warp(uint64_t* bar) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) mbarrier_arrive<Dep>(bar);
}

// The consumers' release of a tile version that only wgmmas read, once per warpgroup
// (the count of the version's empty mbarrier is release_arrivals): the wgmma wait
// before it completed the warpgroup's wgmmas, one asynchronous operation of its four
// warps, so one thread arrives for all of them, as CUTLASS's pipelines do; with a
// cluster, threads 0 .. Ctas - 1 of the warpgroup arrive on blocks 0 .. Ctas - 1. The
// emulator runs each thread's share of a wgmma at that thread's own wait, so there (and
// with -DTL_RELEASE_PER_WARP, for A/B runs) each warp releases, as
// mbarrier_arrive_warp(_cluster) do.
#if defined(TL_EMULATE) || defined(TL_RELEASE_PER_WARP)
template <int Consumers, int Ctas>
TL_DEVICE constexpr int release_arrivals() {
  return Consumers / 32 * Ctas;
}
template <int Ctas>
TL_DEVICE void mbarrier_arrive_warpgroup(uint64_t* bar) {
  if constexpr (Ctas == 1)
    mbarrier_arrive_warp(bar);  // the block's own mbarrier
  else
    mbarrier_arrive_warp_cluster<Ctas>(bar);
}
#else
template <int Consumers, int Ctas>
TL_DEVICE constexpr int release_arrivals() {
  return Consumers / 128 * Ctas;
}
template <int Ctas>
TL_DEVICE void mbarrier_arrive_warpgroup(uint64_t* bar) {
  const int t = int(threadIdx.x % 128);
  if (t < Ctas) {
    if constexpr (Ctas == 1)
      mbarrier_arrive(bar);
    else
      mbarrier_arrive_cluster<Ctas>(bar, t);
  }
}
#endif

}  // namespace tl
