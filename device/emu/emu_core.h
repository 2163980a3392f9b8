// What the CUDA and Metal emulators share: the argument slot of the per-block
// entry, the per-OS-thread state of the running block, failure reporting through
// the CPU runtime's device-assert protocol, the shared-memory race detector and the
// register exchange of warp collectives. Each thread of a block is a fiber
// (device/cpu/threads.h). No <math.h> here: the Metal shims overload the math
// functions in namespace metal and must not meet libstdc++'s global overloads.
#pragma once

#include <stdio.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "../cpu/float_bits.h"
#include "../cpu/threads.h"

#define TL_EMULATE 1

// How the emulator is built. By default (a test compiling a kernel against these
// headers alone) every function is inline here. The runtime instead compiles the
// parts that do not depend on the kernel (barriers, mbarriers, TMA, cp.async,
// wgmma and mma twins, the race detector's bookkeeping) once per host compiler,
// flag set and header version into an object that it links into each kernel
// (src/driver/cpu/prelude_entry.cpp): both are built with
// -DTL_EMU_RUNTIME_SPLIT, the object alone with -DTL_EMU_RUNTIME_IMPL too. A
// kernel's translation unit then sees only the declarations of those functions
// (TL_EMU_FN), and the runtime precompiles the rest with g++: an emulated kernel
// compiles in under a second instead of about 3.5 s (docs/design/foundation.md).
#if defined(TL_EMU_RUNTIME_SPLIT)
#define TL_EMU_FN
#else
#define TL_EMU_FN inline
#endif
#if !defined(TL_EMU_RUNTIME_SPLIT) || defined(TL_EMU_RUNTIME_IMPL)
#define TL_EMU_DEFINITIONS 1
#else
#define TL_EMU_DEFINITIONS 0
#endif

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

// ---- failures: a failed T.device_assert, a shared-memory race or (Metal) a
// divergent barrier. The first one of a launch is kept; the CPU runtime reads it
// after the launch through tl_debug_take_assert (the cpu target's device-assert
// protocol) and raises it.
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
TL_EMU_FN void record_failure(const std::string& message);

// ---- race detector: every shared-memory element access (TL_SMEM) is checked
// against the last write and read of that byte address by another thread since
// both passed the same number of barriers. Metal's simdgroup_barrier orders the
// 32 lanes of one simdgroup only: two lanes of a simdgroup in the same block epoch
// are ordered when a simdgroup barrier of theirs lies between the accesses.
struct Access {
  int thread = -1;
  int epoch = -1;
  int simd_epoch = 0;           // simdgroup barriers the thread had passed
  const char* where = nullptr;  // "buffer|file:line"
};
// Two threads writing the same element in one epoch is a race only when the values
// differ: every thread storing the same value (a tile each thread loads whole) is how
// GPU kernels are written, and the hardware keeps that value. Such a write is held
// here until it has landed, then compared with what the first writer left.
struct SameValueCheck {
  uintptr_t address;
  size_t bytes;
  unsigned char before[16];  // what the other thread had written
  std::string message;       // the race, should the values differ
  unsigned char nibble = 0;  // a packed element's bits in its byte (0: all `bytes`)
};
// A thread that wrote an element and reads it back in the same epoch reads what it
// wrote, whenever the other writes land, when every write of that epoch stored the
// same value (the same-value checks report any other): 8 threads storing one flag,
// each then branching on it, as DeepSeek v3.2's sparse_mla_fwd_pipelined producer
// does. Its read races with no write of the epoch, before or after it. `co_writers` keeps, for
// elements written by more than one thread in an epoch only, (element, thread) ->
// the epoch of that thread's write.
struct RaceTable {
  std::unordered_map<uintptr_t, Access> writes, reads;
  std::vector<SameValueCheck> pending;
  std::map<std::pair<uintptr_t, int>, int> co_writers;
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
  // Packed sub-byte elements (float4_e2m1fn, int4), keyed by element: 2 * byte address
  // + half. Their same-value checks wait in `races.pending`.
  RaceTable packed_races;
  std::vector<AsyncCopies> async_copies;  // by thread rank
  std::vector<int> simd_epochs;           // by thread rank: simdgroup barriers passed
  int vote = 0;                           // __syncthreads_count's tally (cuda_emu.h)
};

// Per OS thread: the blocks of the thread block cluster it runs (run_cluster), all
// fibers of one scheduler, block r owning fibers [r * threads, (r + 1) * threads).
struct ClusterState {
  bool active = false;
  int threads = 0;  // per block
  std::vector<BlockState> ctas;
};
inline ClusterState& cluster_state() {
  static thread_local ClusterState c;
  return c;
}

// The running fiber's index in its scheduler (all the blocks of a cluster) and the
// scheduler's: per-thread emulator state is kept by fiber, keyed by the scheduler.
inline int fiber_index() {
  FiberScheduler* s = current_scheduler();
  return s ? s->current : 0;
}
inline int fiber_count() {
  FiberScheduler* s = current_scheduler();
  return s ? int(s->contexts.size()) : 1;
}
inline uint64_t fiber_serial() {
  FiberScheduler* s = current_scheduler();
  return s ? s->serial : 0;
}

// The running block's rank in its cluster (0 without one).
inline int cta_rank() {
  const ClusterState& c = cluster_state();
  return c.active ? fiber_index() / c.threads : 0;
}

inline BlockState& block_state() {
  static thread_local BlockState s;
  ClusterState& c = cluster_state();
  return c.active ? c.ctas[size_t(cta_rank())] : s;
}

// Resets `st` for block (bx, by, bz) of nx*ny*nz threads.
TL_EMU_FN void init_block(BlockState& st, int64_t bx, int64_t by, int64_t bz, int nx, int ny, int nz,
                          int64_t shared_bytes);
#if TL_EMU_DEFINITIONS
TL_EMU_FN void init_block(BlockState& st, int64_t bx, int64_t by, int64_t bz, int nx, int ny, int nz,
                          int64_t shared_bytes) {
  st.block = {unsigned(bx), unsigned(by), unsigned(bz)};
  st.block_dim = {unsigned(nx), unsigned(ny), unsigned(nz)};
  st.shared.assign(size_t(shared_bytes) + 16, 0);
  st.races.writes.clear();
  st.races.reads.clear();
  st.races.pending.clear();
  st.races.co_writers.clear();
  st.packed_races.writes.clear();
  st.packed_races.reads.clear();
  st.packed_races.co_writers.clear();
  st.async_copies.assign(size_t(nx) * ny * nz, AsyncCopies{});
  st.simd_epochs.assign(size_t(nx) * ny * nz, 0);
}
#endif

// Resets this OS thread's block state for block (bx, by, bz) of nx*ny*nz threads.
inline void begin_block(int64_t bx, int64_t by, int64_t bz, int nx, int ny, int nz, int64_t shared_bytes) {
  init_block(block_state(), bx, by, bz, nx, ny, nz, shared_bytes);
}

// The running fiber's rank in its block (threadIdx.x + blockDim.x * (y + blockDim.y * z)).
inline int thread_rank() {
  const ClusterState& c = cluster_state();
  return c.active ? fiber_index() % c.threads : fiber_index();
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
  // By fiber: the blocks of a cluster share the buffers (their warps do not overlap).
  const size_t rank = size_t(fiber_index()), threads = size_t(fiber_count());
  if (b.block != fiber_serial()) {  // the first call of a block (before any thread publishes)
    b.block = fiber_serial();
    b.parity.assign(threads, 0);
    for (std::vector<Word>& w : b.words) w.assign(threads * Count, Word());
  }
  Word* words = b.words[b.parity[rank]].data();
  b.parity[rank] ^= 1;
  for (int i = 0; i < Count; ++i) words[rank * Count + i] = mine[i];
  lockstep();
  return words + rank / 32 * 32 * Count;
}

#if TL_EMU_DEFINITIONS
TL_EMU_FN void record_failure(const std::string& message) {
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
#endif

// Decides the writes held for a same-value check (they have all landed by now: a
// thread's store completes before its next shared access, barrier or exit).
TL_EMU_FN void check_same_values();
#if TL_EMU_DEFINITIONS
TL_EMU_FN void check_same_values() {
  RaceTable& t = block_state().races;
  for (const SameValueCheck& c : t.pending) {
    const void* now = reinterpret_cast<const void*>(c.address);
    bool same = c.nibble ? ((*static_cast<const unsigned char*>(now) ^ c.before[0]) & c.nibble) == 0
                         : std::memcmp(now, c.before, c.bytes) == 0;
    if (!same) record_failure(c.message);
  }
  t.pending.clear();
}
#endif

// Checks an access of `bytes` by the running thread to the shared byte address `a`
// (see RaceTable) and records it. `nibble` (packed elements): the access is to those
// bits of the byte at `a` only, and is keyed by `key` in BlockState::packed_races.
TL_EMU_FN void note_shared_access(uintptr_t a, size_t bytes, bool write, const char* where, unsigned char nibble = 0,
                                  uintptr_t key = 0);
#if TL_EMU_DEFINITIONS
TL_EMU_FN void note_shared_access(uintptr_t a, size_t bytes, bool write, const char* where, unsigned char nibble,
                                  uintptr_t key) {
  FiberScheduler* s = current_scheduler();
  int tid = s->current, epoch = s->barriers[tid];
  BlockState& st = block_state();
  int simd_epoch = size_t(tid) < st.simd_epochs.size() ? st.simd_epochs[size_t(tid)] : 0;
  if (!st.races.pending.empty()) check_same_values();
  RaceTable& t = nibble ? st.packed_races : st.races;
  const uintptr_t at = nibble ? key : a;
  // The race message, or "" when `other` and this access are ordered.
  auto race = [&](const Access& other, const char* what_other, const char* what_this) -> std::string {
    if (other.thread < 0 || other.thread == tid || other.epoch != epoch) return "";
    if (other.thread / 32 == tid / 32 && other.simd_epoch != simd_epoch) return "";
    auto name_of = [](const char* w) { return std::string(w, strchr(w, '|') ? strchr(w, '|') - w : strlen(w)); };
    // Accesses by device helpers (cp.async, ldmatrix) carry no buffer name: take the other's.
    std::string name = name_of(where);
    if (name.empty()) name = name_of(other.where);
    std::string buffer = name.empty() ? "a shared buffer" : "buffer '" + name + "'";
    return "shared-memory race on " + buffer + ": thread " + std::to_string(other.thread) + " " + what_other +
           " it at " + describe(other.where) + " and thread " + std::to_string(tid) + " " + what_this + " it at " +
           describe(where) + " with no barrier between them; add T.sync_threads() between the two";
  };
  // Whether `thread` is one of several that wrote this element in this epoch (RaceTable).
  auto co_wrote = [&](int thread) {
    auto own = t.co_writers.find({at, thread});
    return own != t.co_writers.end() && own->second == epoch;
  };
  if (write) {
    const Access& before = t.writes[at];
    std::string both = race(before, "writes", "writes");
    if (!both.empty() && bytes <= sizeof(SameValueCheck::before)) {
      SameValueCheck c{a, bytes, {}, std::move(both), nibble};
      std::memcpy(c.before, reinterpret_cast<const void*>(a), bytes);
      st.races.pending.push_back(std::move(c));
      t.co_writers[{at, before.thread}] = epoch;
      t.co_writers[{at, tid}] = epoch;
    } else if (!both.empty()) {
      record_failure(both);
    }
    const Access& reader = t.reads[at];
    if (std::string m = race(reader, "reads", "writes"); !m.empty() && !co_wrote(reader.thread)) record_failure(m);
    t.writes[at] = {tid, epoch, simd_epoch, where};
  } else {
    if (std::string m = race(t.writes[at], "writes", "reads"); !m.empty() && !co_wrote(tid)) record_failure(m);
    t.reads[at] = {tid, epoch, simd_epoch, where};
  }
}
#endif

template <class T>
inline T* note_shared(T* p, bool write, const char* where) {
  if (current_scheduler()) note_shared_access(reinterpret_cast<uintptr_t>(p), sizeof(T), write, where);
  return p;
}

}  // namespace tl::emu

#define TL_SMEM(buf, off, write, where) (*::tl::emu::note_shared(&(buf)[off], (write) != 0, where))

namespace tl::emu {
// Element `i` of a packed shared buffer (two a byte): checked as its own nibble.
inline unsigned char* note_shared_packed(unsigned char* base, int64_t i, bool write, const char* where) {
  if (current_scheduler()) {
    uintptr_t byte = reinterpret_cast<uintptr_t>(base + (i >> 1));
    note_shared_access(byte, 1, write, where, (i & 1) ? 0xf0 : 0x0f, 2 * byte + uintptr_t(i & 1));
  }
  return base;
}
}  // namespace tl::emu

#define TL_SMEM_PACKED(buf, off, write, where) (::tl::emu::note_shared_packed((buf), (off), (write) != 0, where))

// The cpu runtime's protocol (see device/cpu/debug.h): skip blocks once a failure
// is recorded, and hand the failure over after the launch.
#if TL_EMU_DEFINITIONS
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
#endif
