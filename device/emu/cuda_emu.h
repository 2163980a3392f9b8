// Host-side shims that let the exact CUDA source of a kernel compile as C++ and
// run on the CPU (TILELANG_EMULATE=1, target "cuda -emulate"). Force-included
// before the kernel source: CUDA's qualifiers become plain C++, each thread of a
// block is a fiber (device/cpu/threads.h), __syncthreads() is the fibers' barrier,
// and every block gets its own dynamic shared-memory array. The parts the Metal
// emulator shares (block state, failures, race detector) are in emu_core.h.
#pragma once

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../cpu/warp_lanes.h"
#include "emu_core.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__
#define __grid_constant__      // a tensor map parameter (device/cuda/tma.cuh) is a plain const value
#define __cluster_dims__(...)  // the emulation entry runs each cluster's blocks together (run_cluster)

namespace tl::emu {

// The arguments of a kernel given as CUDA source (T.CUDASourceCodeKernel), as a GPU
// launch hands them over: a tensor is an untyped address (any pointer parameter takes
// it), a float scalar travels as a double in 8 bytes. A GPU reads only 4 of those bytes
// for a `float` parameter, so only a `double` one may take it, here as there.
struct SourcePointer {
  void* p;
  template <class T>
  operator T*() const {
    return static_cast<T*>(p);
  }
};
struct SourceDouble {
  double v;
  template <class T>
  operator T() const {
    static_assert(sizeof(T) == sizeof(double) && T(0.5) == 0.5,
                  "T.CUDASourceCodeKernel: a float scalar parameter reaches the kernel as a double; declare "
                  "that parameter of the CUDA source `double`");
    return v;
  }
};

// The block barrier and the count of returned threads it needs (device/emu/tma_emu.h).
TL_EMU_FN void block_barrier(int line);  // line: see tma_emu.h
TL_EMU_FN void thread_exited();

// threadIdx of the running fiber, from its rank in the block.
inline dim3 thread_idx() {
  unsigned t = unsigned(thread_rank());
  const dim3& d = block_state().block_dim;
  return {t % d.x, (t / d.x) % d.y, t / (d.x * d.y)};
}

// Runs `kernel` (a call of the __global__ function) for one block.
template <class F>
inline void run_block(int64_t bx, int64_t by, int64_t bz, int nx, int ny, int nz, int64_t shared_bytes, F&& kernel) {
  begin_block(bx, by, bz, nx, ny, nz, shared_bytes);
  run_threads(nx, ny, nz, [&](int, int, int) {
    kernel();
    thread_exited();
  });
}

// Runs `kernel` for the thread block cluster of cx*cy*cz blocks whose first block is
// (bx, by, bz): all its blocks' threads are fibers of one scheduler, so that the
// blocks run together, as on the GPU, and reach each other's shared memory (TMA
// multicasts, remote mbarrier arrivals) and meet at the cluster barrier.
template <class F>
inline void run_cluster(int64_t bx, int64_t by, int64_t bz, int cx, int cy, int cz, int nx, int ny, int nz,
                        int64_t shared_bytes, F&& kernel) {
  const int per_block = nx * ny * nz, blocks = cx * cy * cz;
  if (per_block % 32 != 0) {
    begin_block(bx, by, bz, nx, ny, nz, shared_bytes);
    record_failure("a thread block cluster needs blocks of whole warps (a multiple of 32 threads); this one has " +
                   std::to_string(per_block));
    return;
  }
  ClusterState& c = cluster_state();
  c.ctas.resize(size_t(blocks));
  for (int r = 0; r < blocks; ++r)
    init_block(c.ctas[size_t(r)], bx + r % cx, by + (r / cx) % cy, bz + r / (cx * cy), nx, ny, nz, shared_bytes);
  c.threads = per_block;
  c.active = true;
  run_threads(per_block * blocks, 1, 1, [&](int, int, int) {
    kernel();
    thread_exited();
  });
  c.active = false;
}

}  // namespace tl::emu

#define threadIdx (::tl::emu::thread_idx())
#define blockIdx (::tl::emu::block_state().block)
#define blockDim (::tl::emu::block_state().block_dim)
#define TL_DYNAMIC_SHARED(name) unsigned char* name = ::tl::emu::block_state().shared.data()

// __builtin_LINE() as a default argument is the caller's line: the barrier's site.
inline void __syncthreads(int line = __builtin_LINE()) {
  tl::emu::block_barrier(line);
}
// CUDA's __nanosleep (sm_70+, a kernel's own call_extern): a hint to back off for
// about `ns` nanoseconds; the fibers run one at a time, so it returns at once.
inline void __nanosleep(unsigned /*ns*/) {}
// A warp barrier, emulated by the (stronger) block barrier.
inline void __syncwarp(unsigned = 0xffffffffu) {
  tl::sync_threads();
}

// Warp shuffles, for 32- and 64-bit values as CUDA's overloads. Each thread
// publishes its value (exchange_in_warp) and reads its source lane's, so EVERY
// thread of the block must make the same sequence of shuffle calls (as
// tl::warp_allreduce does); `mask` is not checked. Lanes outside the block read
// their own value.
namespace tl::emu {

// v of lane src_lane(own lane) of the calling warp; a negative source keeps v.
template <class T, class SrcLane>
inline T shuffle(T v, SrcLane src_lane) {
  static_assert((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable<T>::value,
                "warp shuffles move 32- or 64-bit values");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  const uint64_t* warp = exchange_in_warp<uint64_t, 1, 0>(&bits);
  const int rank = thread_rank(), lane = rank % 32, src = src_lane(lane);
  T out = v;
  if (src >= 0 && rank - lane + src < block_threads()) memcpy(&out, &warp[src], sizeof(T));
  return out;
}

}  // namespace tl::emu

template <class T>
inline T __shfl_sync(unsigned, T v, int src_lane, int width = 32) {
  return tl::emu::shuffle(v, [&](int lane) { return (lane & ~(width - 1)) + (src_lane & (width - 1)); });
}
// Lanes of a later group of `width` are out of reach: the caller keeps its value.
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = 32) {
  return tl::emu::shuffle(v, [&](int lane) {
    int src = lane ^ lane_mask;
    return src >= (lane / width + 1) * width || src > 31 ? -1 : src;
  });
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  return tl::emu::shuffle(v, [&](int lane) { return lane % width + int(delta) >= width ? -1 : lane + int(delta); });
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  return tl::emu::shuffle(v, [&](int lane) { return lane % width < int(delta) ? -1 : lane - int(delta); });
}

// Votes, through the fibers' lane exchange that the cpu target's warp helpers use
// too (device/cpu/warp_lanes.h). As on the GPU, every lane making the call votes,
// whatever the mask; a lane outside its mask is undefined behaviour there and an
// error here, since every thread of the block must reach each warp-level call.
namespace tl::emu {
inline void check_warp_mask(const char* call, unsigned mask) {
  if (tl::lanes::in_mask(mask)) return;
  char text[512];
  tl::lanes::describe_mask_error(text, sizeof text, call, mask);
  record_failure(text);
}
}  // namespace tl::emu

inline unsigned __ballot_sync(unsigned mask, int pred) {
  tl::emu::check_warp_mask("__ballot_sync", mask);
  return tl::lanes::ballot(pred != 0);
}
inline int __any_sync(unsigned mask, int pred) {
  tl::emu::check_warp_mask("__any_sync", mask);
  return tl::lanes::any(pred != 0) ? 1 : 0;
}
inline int __all_sync(unsigned mask, int pred) {
  tl::emu::check_warp_mask("__all_sync", mask);
  return tl::lanes::all(pred != 0) ? 1 : 0;
}
// __syncthreads_count / _and / _or: block barriers that tally a predicate. The first
// barrier lets every thread read the previous tally before thread 0 resets it.
namespace tl::emu {
inline int block_vote(int pred) {
  BlockState& b = block_state();
  block_barrier(0);
  if (thread_rank() == 0) b.vote = 0;
  block_barrier(0);
  b.vote += pred != 0;
  block_barrier(0);
  return b.vote;
}
}  // namespace tl::emu
inline int __syncthreads_count(int pred) {
  return tl::emu::block_vote(pred);
}
inline int __syncthreads_and(int pred) {
  return tl::emu::block_vote(pred) == tl::emu::block_threads();
}
inline int __syncthreads_or(int pred) {
  return tl::emu::block_vote(pred) != 0;
}

// __match_any_sync / __match_all_sync over the lanes that exist, as the votes.
template <class T>
inline unsigned __match_any_sync(unsigned mask, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "matches compare 32- or 64-bit values");
  tl::emu::check_warp_mask("__match_any_sync", mask);
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  return tl::lanes::match_any(bits, mask);
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T v, int* pred) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "matches compare 32- or 64-bit values");
  tl::emu::check_warp_mask("__match_all_sync", mask);
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  return tl::lanes::match_all(bits, mask, pred);
}
inline int __ffs(int x) {
  return tl::lanes::find_first_set(uint32_t(x));
}
inline int __ffsll(long long x) {
  return tl::lanes::find_first_set(uint64_t(x));
}
inline unsigned __fns(unsigned mask, unsigned base, int offset) {
  return tl::lanes::find_nth_set(mask, base, offset);
}

// Every thread reaches each warp-level call, so the lanes that exist are active.
inline unsigned __activemask() {
  return tl::lanes::present();
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

// __expf, __logf, __sinf ... and rcp.approx: the fast-math intrinsics, last, as macros
// (see the header).
#include "fast_math_emu.h"
