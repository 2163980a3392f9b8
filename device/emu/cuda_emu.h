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
#include <deque>
#include <mutex>
#include <string>
#include <type_traits>
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

// cp.async copies one thread has issued and not yet waited for (device/emu/copy_async_emu.h).
struct AsyncCopy {
  unsigned char* dst;
  const unsigned char* src;  // nullptr: zero-fill
  int bytes;
};
struct AsyncCopies {
  std::vector<AsyncCopy> open;                   // issued since the last commit
  std::deque<std::vector<AsyncCopy>> committed;  // oldest group first
};

// Per OS thread: the block it is running (its fibers all share it).
struct BlockState {
  dim3 block{0, 0, 0};
  dim3 block_dim{1, 1, 1};
  std::vector<unsigned char> shared;
  RaceTable races;
  std::vector<AsyncCopies> async_copies;  // by thread rank
  uint64_t serial = 0;                    // counts the blocks this OS thread has run
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

// The running fiber's rank in its block (threadIdx.x + blockDim.x * (y + blockDim.y * z)).
inline int thread_rank() {
  FiberScheduler* s = current_scheduler();
  return s ? s->current : 0;
}
inline int block_threads() {
  const dim3& d = block_state().block_dim;
  return int(d.x * d.y * d.z);
}

// A rendezvous of all threads of the block that the race detector does not count
// as a barrier. The twins of warp-collective instructions (shuffles, ldmatrix,
// mma) exchange registers through per-block scratch around it; on the GPU those
// synchronize one warp at most, so shared-memory accesses on either side of them
// must stay unordered between threads for the race detector, as they are on the
// GPU. Every thread of the block must reach it (the fibers' round-robin scheduler
// resumes each live fiber once per round).
inline void lockstep() {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  swapcontext(&s->contexts[s->current], &s->main);
}

// Register exchange between the lanes of each warp, for the twins of
// warp-collective instructions: every thread of the block publishes Count words,
// one lockstep, then reads any lane of its warp (the result points at lane 0's
// words). Calls of one Kind alternate between two buffers, so one lockstep per call
// is enough: the next call that reuses a buffer comes after the following call's
// lockstep, which no thread passes before all have read this call's words.
template <class Word, int Count, int Kind>
inline const Word* exchange_in_warp(const Word* mine) {
  struct Buffers {
    uint64_t block = ~uint64_t(0);
    std::vector<Word> words[2];
    std::vector<unsigned char> parity;  // by rank: the buffer of the thread's next call
  };
  static thread_local Buffers b;
  const size_t rank = size_t(thread_rank()), threads = size_t(block_threads());
  if (b.block != block_state().serial) {  // the first call of a block (before any thread publishes)
    b.block = block_state().serial;
    b.parity.assign(threads, 0);
    for (std::vector<Word>& w : b.words) w.assign(threads * Count, Word());
  }
  Word* words = b.words[b.parity[rank]].data();
  b.parity[rank] ^= 1;
  for (int i = 0; i < Count; ++i) words[rank * Count + i] = mine[i];
  lockstep();
  return words + rank / 32 * 32 * Count;
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
  st.async_copies.assign(size_t(nx) * ny * nz, AsyncCopies{});
  ++st.serial;
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
    auto name_of = [](const char* w) { return std::string(w, strchr(w, '|') ? strchr(w, '|') - w : strlen(w)); };
    // Accesses by device helpers (cp.async, ldmatrix) carry no buffer name: take the other's.
    std::string name = name_of(where);
    if (name.empty()) name = name_of(other.where);
    std::string buffer = name.empty() ? "a shared buffer" : "buffer '" + name + "'";
    record_failure("shared-memory race on " + buffer + ": thread " + std::to_string(other.thread) + " " + what_other +
                   " it at " + describe(other.where) + " and thread " + std::to_string(tid) + " " + what_this +
                   " it at " + describe(where) + " with no barrier between them; add T.sync_threads() between the two");
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
