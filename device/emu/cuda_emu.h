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
#include <mutex>
#include <string>
#include <unordered_map>
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

// ---- failures: a failed T.device_assert or a shared-memory race. The first one
// of a launch is kept; the CPU runtime reads it after the launch through
// tl_debug_take_assert (the cpu target's device-assert protocol) and raises it.
struct Failure {
  std::mutex mu;
  bool set = false;
  std::string message;
  int64_t block[3] = {0, 0, 0};
};
inline Failure& failure() {
  static Failure f;
  return f;
}
inline void record_failure(const std::string& message);

// ---- race detector: every shared-memory element access (TL_SMEM) is checked
// against the last write and read of that byte address by another thread since
// both passed the same number of barriers.
struct Access {
  int thread = -1;
  int epoch = -1;
  const char* where = nullptr;  // "buffer|file:line"
};
struct RaceTable {
  std::unordered_map<uintptr_t, Access> writes, reads;
};

inline std::string describe(const char* where) {
  std::string w(where);
  size_t bar = w.find('|');
  return bar == std::string::npos ? w : w.substr(bar + 1);
}

// Per OS thread: the block it is running (its fibers all share it).
struct BlockState {
  dim3 block{0, 0, 0};
  dim3 block_dim{1, 1, 1};
  std::vector<unsigned char> shared;
  RaceTable races;
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
  st.races.writes.clear();
  st.races.reads.clear();
  run_threads(nx, ny, nz, [&](int, int, int) { kernel(); });
}

inline void record_failure(const std::string& message) {
  Failure& f = failure();
  std::lock_guard<std::mutex> lock(f.mu);
  if (f.set) return;
  f.set = true;
  f.message = message;
  const dim3& b = block_state().block;
  f.block[0] = b.x;
  f.block[1] = b.y;
  f.block[2] = b.z;
}

template <class T>
inline T* note_shared(T* p, bool write, const char* where) {
  FiberScheduler* s = current_scheduler();
  if (!s) return p;
  int tid = s->current, epoch = s->barriers[tid];
  RaceTable& t = block_state().races;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto conflict = [&](const Access& other, const char* what_other, const char* what_this) {
    if (other.thread < 0 || other.thread == tid || other.epoch != epoch) return;
    std::string name(where, strchr(where, '|') ? strchr(where, '|') - where : strlen(where));
    record_failure("shared-memory race on buffer '" + name + "': thread " + std::to_string(other.thread) + " " +
                   what_other + " it at " + describe(other.where) + " and thread " + std::to_string(tid) + " " +
                   what_this + " it at " + describe(where) +
                   " with no barrier between them; add T.sync_threads() between the two");
  };
  if (write) {
    conflict(t.writes[a], "writes", "writes");
    conflict(t.reads[a], "reads", "writes");
    t.writes[a] = {tid, epoch, where};
  } else {
    conflict(t.writes[a], "writes", "reads");
    t.reads[a] = {tid, epoch, where};
  }
  return p;
}

}  // namespace tl::emu

#define threadIdx (::tl::emu::thread_idx())
#define blockIdx (::tl::emu::block_state().block)
#define blockDim (::tl::emu::block_state().block_dim)
#define TL_SMEM(buf, off, write, where) (*::tl::emu::note_shared(&(buf)[off], (write) != 0, where))
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

// The cpu runtime's protocol (see device/cpu/debug.h): skip blocks once a failure
// is recorded, and hand the failure over after the launch.
extern "C" __attribute__((used, visibility("default"))) int tl_debug_begin_block(int64_t, int64_t, int64_t) {
  tl::emu::Failure& f = tl::emu::failure();
  std::lock_guard<std::mutex> lock(f.mu);
  return f.set ? 1 : 0;
}
extern "C" __attribute__((used, visibility("default"))) int tl_debug_take_assert(char* message, int64_t capacity,
                                                                                 int64_t* block) {
  tl::emu::Failure& f = tl::emu::failure();
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.set) return 0;
  snprintf(message, size_t(capacity), "%s", f.message.c_str());
  for (int i = 0; i < 3; ++i) block[i] = f.block[i];
  f.set = false;
  return 1;
}
