// Register reallocation between the warpgroups of a warp-specialized kernel
// (src/transform/warp_specialize.cpp): the producer warpgroup, which only issues
// TMA copies, lowers its per-thread register limit and the consumer warpgroups
// raise theirs from the block's pool (setmaxnreg, sm_90a). Every warp of a
// warpgroup executes the same call. Under TL_EMULATE (and on other archs, where
// the kernel is never warp-specialized) these do nothing.
#pragma once

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

// A warp's arrival on an mbarrier whose count is in warps: the warp's lanes first
// meet (their reads of the guarded data are done), then lane 0 arrives for them.
// One arrival per warp rather than per thread keeps the barrier's traffic low.
template <int Dep = 0>
TL_DEVICE void mbarrier_arrive_warp(uint64_t* bar) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) mbarrier_arrive<Dep>(bar);
}

}  // namespace tl
