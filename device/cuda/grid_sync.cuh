// T.sync_grid(): a barrier of every thread of every block of the launch. The runtime
// launches a kernel that calls it cooperatively (cuLaunchCooperativeKernel), which
// guarantees every block resident at once, so blocks may wait for each other. Our own
// barrier on one counter word rather than cooperative_groups' grid.sync(): NVRTC
// has no cooperative_groups.h of its own, and the toolkit's pulls in libcu++.
//
// Under TL_EMULATE the twin in device/emu/tma_emu.h runs it (each block on an OS
// thread of its own; device/cpu/grid_rendezvous.h).
#pragma once

#ifdef TL_EMULATE
#include "../emu/tma_emu.h"
#endif

namespace tl {

#ifndef TL_EMULATE
// The arrival counter of this module's grid barrier, zero when the module loads.
// Per barrier the blocks add 0x80000000 in all (block 0 adds 0x80000000 - (n - 1),
// the n - 1 others 1 each), so bit 31 flips exactly when the last block arrives and
// bits 0-30 come back to where they were: the next barrier, and the next launch, start
// from a consistent word without a reset. Launches of one module that could overlap
// (on other streams) would share the word; the runtime orders them (cuda_kernel.cpp).
static __device__ unsigned int tl_grid_arrivals;
#endif

TL_DEVICE void sync_grid() {
#ifdef TL_EMULATE
  emu::sync_grid();
#else
  // Memory order: the first __syncthreads orders every write of the block before
  // thread 0's arrival, a release at GPU scope (cumulative: it publishes what the
  // barrier made thread 0 observe). Its acquire load that sees bit 31 flip reads the
  // last arrival of a chain of read-modify-writes that holds every block's release,
  // so every block's writes happen before it; the second __syncthreads hands that on
  // to the rest of the block.
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    const bool first = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
    const unsigned add = first ? 0x80000000u - (blocks - 1) : 1u;
    unsigned before, now;
    asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(before) : "l"(&tl_grid_arrivals), "r"(add) : "memory");
    for (;;) {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(&tl_grid_arrivals) : "memory");
      if ((now ^ before) & 0x80000000u) break;
      asm volatile("nanosleep.u32 32;");
    }
  }
  __syncthreads();
#endif
}

}  // namespace tl
