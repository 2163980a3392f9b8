// Host-side shims that let the exact CUDA source of a kernel compile as C++ and
// run on the CPU (TILELANG_EMULATE=1, target "cuda -emulate"). Force-included
// before the kernel source: CUDA's qualifiers become plain C++, each thread of a
// block is a fiber (device/cpu/threads.h), __syncthreads() is the fibers' barrier,
// and every block gets its own dynamic shared-memory array.
#pragma once

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "float_bits.h"
#include "threads.h"

#define TL_EMULATE 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__

namespace tl::emu {

struct dim3 {
  unsigned x, y, z;
};

// One argument slot, laid out as the runtime's KernelArg.
union Arg {
  void* ptr;
  int64_t i;
  double f;
};

// Per OS thread: the block it is running (its fibers all share it).
struct BlockState {
  dim3 block{0, 0, 0};
  dim3 block_dim{1, 1, 1};
  std::vector<unsigned char> shared;
};

inline BlockState& block_state() {
  static thread_local BlockState s;
  return s;
}

// threadIdx of the running fiber, from its rank in the block.
inline dim3 thread_idx() {
  FiberScheduler* s = current_scheduler();
  if (!s) return {0, 0, 0};
  unsigned t = unsigned(s->current);
  const dim3& d = block_state().block_dim;
  return {t % d.x, (t / d.x) % d.y, t / (d.x * d.y)};
}

// Runs `kernel` (a call of the __global__ function) for one block.
template <class F>
inline void run_block(int64_t bx, int64_t by, int64_t bz, int nx, int ny, int nz, int64_t shared_bytes, F&& kernel) {
  BlockState& st = block_state();
  st.block = {unsigned(bx), unsigned(by), unsigned(bz)};
  st.block_dim = {unsigned(nx), unsigned(ny), unsigned(nz)};
  st.shared.assign(size_t(shared_bytes) + 16, 0);
  run_threads(nx, ny, nz, [&](int, int, int) { kernel(); });
}

}  // namespace tl::emu

#define threadIdx (::tl::emu::thread_idx())
#define blockIdx (::tl::emu::block_state().block)
#define blockDim (::tl::emu::block_state().block_dim)
#define TL_DYNAMIC_SHARED(name) unsigned char* name = ::tl::emu::block_state().shared.data()

inline void __syncthreads() {
  tl::sync_threads();
}
// A warp barrier, emulated by the (stronger) block barrier.
inline void __syncwarp(unsigned = 0xffffffffu) {
  tl::sync_threads();
}

inline float __int_as_float(int x) {
  return tl::bit_cast<float>(x);
}
inline float __uint_as_float(unsigned x) {
  return tl::bit_cast<float>(x);
}
inline unsigned __float_as_uint(float x) {
  return tl::bit_cast<unsigned>(x);
}
inline double __longlong_as_double(long long x) {
  return tl::bit_cast<double>(x);
}
inline float rsqrtf(float x) {
  return 1.0f / sqrtf(x);
}
inline double rsqrt(double x) {
  return 1.0 / sqrt(x);
}
// A trapped kernel ends the process in the emulation (the CPU runtime's recoverable
// device-assert path belongs to the cpu target).
[[noreturn]] inline void __trap() {
  fflush(stdout);
  abort();
}
