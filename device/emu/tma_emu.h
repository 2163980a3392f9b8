// Emulated twins of Hopper's TMA copies and shared-memory mbarriers for the CUDA
// emulator (device/cuda/tma.cuh includes it under TL_EMULATE), and of the barriers
// whose waits share their deadlock check: __syncthreads, named barriers, the cluster
// barrier and T.sync_grid's grid barrier.
//
// Tensor maps are the emulator's encoding (device/common/tma_map.h, written by
// tl::encode_tensor_map with emulate=true). A copy moves its box element by element
// as the hardware defines it: out-of-bounds elements read as zeros (NaN with the
// NaN fill) and are never written; the shared side is dense, dimension 0 innermost,
// every element at shared-window offset swizzle(tile + linear offset), the 16-byte
// chunk bits 4.. XOR bits 7.. as on the GPU, so a tile that does not start on a
// whole swizzle pattern reads back permuted, as it would there.
//
// An mbarrier keeps its state in its own 64-bit word (our layout, below): expected
// arrivals, pending arrivals, tx-count and phase parity. A load subtracts its bytes
// from the tx-count when issued and lands when the phase completes, the latest
// moment the GPU may land it, so a reader that does not wait for the phase sees
// stale data. A wait on an incomplete phase yields the fiber; when every running
// thread of the block waits and no barrier changed since each one last looked,
// nothing can complete any more: the deadlock is reported as a failure and the
// block's threads are abandoned instead of spinning forever.
//
// A store reads its tile at issue (the earliest moment) and writes global memory as
// late as the GPU may (at a tma_store_wait<N, false> that covers it, or when the thread
// returns); the wait that covers it checks that nobody wrote the tile in between
// (on the GPU the store could have read the new values). The race detector sees a
// store's reads of the tile; landed loads and mbarrier waits are invisible to it.
#pragma once

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "../common/tma_map.h"
#include "../cpu/grid_rendezvous.h"

namespace tl::emu {

// ---- what device/cuda/*.cuh call (the twins of the PTX instructions); defined
// below, or in the runtime object (emu_core.h, TL_EMU_FN).
TL_EMU_FN void mbarrier_init(uint64_t* bar, uint32_t count);
TL_EMU_FN void mbarrier_inval(uint64_t* bar);
TL_EMU_FN void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes);
TL_EMU_FN void mbarrier_arrive(uint64_t* bar, uint32_t tx_bytes);  // arrive.expect_tx when tx_bytes != 0
TL_EMU_FN void mbarrier_wait(uint64_t* bar, uint32_t parity);
// __syncthreads; `line` is the generated source line of the call (0: a barrier of a
// device helper, which any call site may meet).
TL_EMU_FN void block_barrier(int line);
TL_EMU_FN void thread_exited();  // the running thread returned from the kernel
TL_EMU_FN void named_barrier_sync(int id, int count);
TL_EMU_FN void named_barrier_arrive(int id, int count);
TL_EMU_FN void sync_grid();  // T.sync_grid (device/cuda/grid_sync.cuh)
TL_EMU_FN void tma_load(void* smem_dst, const void* map, uint64_t* bar, const int32_t* coords, int rank);
TL_EMU_FN void bulk_load(void* smem_dst, const void* src, uint32_t bytes, uint64_t* bar);
TL_EMU_FN void tma_store(const void* map, const void* smem_src, const int32_t* coords, int rank, bool add);
TL_EMU_FN void tma_store_commit();
TL_EMU_FN void tma_store_wait(int n, bool complete);
TL_EMU_FN void mbarrier_arrive_remote(uint64_t* bar, int cta);
TL_EMU_FN void store_remote(void* dst, int cta, const void* value, size_t bytes);
TL_EMU_FN void tma_load_multicast(void* smem_dst, const void* map, uint64_t* bar, uint16_t mask, const int32_t* coords,
                                  int rank);
TL_EMU_FN void cluster_arrive();
TL_EMU_FN void cluster_wait();

#if TL_EMU_DEFINITIONS

// ---- the mbarrier word: bits 0-19 expected arrivals, 20-39 pending arrivals,
// 40-61 tx-count (two's complement), 62 phase parity, 63 initialized. Zero (fresh
// shared memory) is an uninitialized barrier.
struct Mbarrier {
  uint32_t expected = 0, pending = 0;
  int64_t tx = 0;  // wide enough that a bad byte count cannot overflow before the range check
  uint32_t parity = 0;
  bool initialized = false;
};
constexpr int64_t kMaxTxCount = (1 << 20) - 1;    // the PTX ISA's tx-count range is +-(2^20 - 1)
constexpr uint32_t kMaxArrivals = (1 << 20) - 1;  // and an arrival count is in [1, 2^20 - 1]

inline Mbarrier unpack_mbarrier(uint64_t w) {
  Mbarrier m;
  m.expected = uint32_t(w & 0xfffff);
  m.pending = uint32_t((w >> 20) & 0xfffff);
  const uint32_t tx = uint32_t((w >> 40) & 0x3fffff);
  m.tx = tx & 0x200000 ? int64_t(tx) - 0x400000 : int64_t(tx);
  m.parity = uint32_t((w >> 62) & 1);
  m.initialized = (w >> 63) != 0;
  return m;
}
inline uint64_t pack_mbarrier(const Mbarrier& m) {
  return uint64_t(m.expected) | uint64_t(m.pending) << 20 | (uint64_t(m.tx) & 0x3fffff) << 40 |
         uint64_t(m.parity) << 62 | uint64_t(m.initialized) << 63;
}

struct PendingLoad {
  EmuTensorMap map;
  unsigned char* dst;
  int32_t coords[5];
};
struct IssuedStore {
  EmuTensorMap map;
  const unsigned char* src;
  int32_t coords[5];
  std::vector<unsigned char> tile;  // the box as the store read it, in linear order
  bool add = false;                 // a reduce-add
};
// A thread's stores write global memory as late as the GPU may: when a
// tma_store_wait<N, false> covers them, or when the thread returns. A tensor read back
// after only a tma_store_wait (which waits for the tile's read) then shows the old
// values in the emulator, as it may on the GPU.
struct StoreGroups {
  std::vector<IssuedStore> open;                    // issued since the last commit
  std::vector<std::vector<IssuedStore>> committed;  // oldest group first
  std::vector<IssuedStore> read;                    // tiles read, writes not yet landed (oldest first)
};

// The race detector's epochs (FiberScheduler::barriers) across a barrier: each
// thread that passes it leaves with one more than the largest epoch any thread had
// when it arrived. Threads that passed different barriers (a T.ws region's named
// barrier) thus never share an epoch with a thread whose accesses a later common
// barrier orders, and threads that share an epoch passed no common barrier since.
struct EpochMerge {
  int in = 0, out = 0;
  void arrive(int epoch) { in = epoch > in ? epoch : in; }
  void release() { out = in + 1, in = 0; }
};

constexpr uint64_t kNotWaiting = ~uint64_t(0);
constexpr uint32_t kClusterBarrier = 16;  // waiting_parity of a wait at the cluster barrier (named ids are 1-15)
constexpr uint32_t kBlockBarrier = 0;     // ... of a wait at __syncthreads
constexpr uint32_t kGridBarrier = 17;     // ... of a wait at T.sync_grid

// Per OS thread, reset for each block (or cluster: run_cluster) it runs; the
// per-thread parts are by fiber, so that a cluster's blocks share one deadlock check.
struct TmaBlock {
  uint64_t serial = ~uint64_t(0);
  uint64_t events = 0;  // counts every change of any barrier of the block
  bool deadlocked = false;
  std::vector<uint64_t> waiting_since;  // by rank: `events` when the thread last found its phase incomplete
  std::vector<const uint64_t*> waiting_on;
  std::vector<uint32_t> waiting_parity;
  std::unordered_map<const void*, std::vector<PendingLoad>> loads;  // by barrier
  std::vector<StoreGroups> stores;                                  // by rank
  // The cluster barrier (cluster_arrive / cluster_wait): its generation, and the one
  // each fiber last arrived for (kNotWaiting: none yet).
  uint64_t cluster_generation = 0;
  std::vector<uint64_t> cluster_arrived;
  std::vector<char> cluster_pending;  // arrived and not yet waited
  EpochMerge cluster_epochs;
  // __syncthreads of each block of the cluster (by rank): arrivals of the current
  // generation, and the threads that have returned (they count as arrived).
  int sync_arrived[16] = {}, exited[16] = {};
  uint64_t sync_generation[16] = {};
  EpochMerge sync_epochs[16];
  // The source line of the current generation's first __syncthreads arrival and its
  // thread: a thread arriving from another line is a divergent barrier.
  int sync_line[16] = {}, sync_line_thread[16] = {};
  // T.sync_grid: the block's threads arrived in its current generation (a block
  // meets the other blocks when all have; clusters are refused).
  int grid_arrived = 0;
  uint64_t grid_generation = 0;
  EpochMerge grid_epochs;
  // By mbarrier: the race detector's epochs of its current phase's arrivals. A wait
  // that sees the phase complete lifts the waiter above them.
  std::unordered_map<const void*, EpochMerge> mbar_epochs;
  // By mbarrier: the phases completed since its init. A wait that finds its phase
  // incomplete is released once that phase completes, even if arrivals complete the
  // next phase too before the waiter runs again (a polling thread on the GPU sees the
  // flip in between; the round-robin scheduler may not).
  std::unordered_map<const void*, uint64_t> mbar_completed;
  // By mbarrier and rank: the phase (its count of completions then) of the thread's
  // last arrival, kNotWaiting for none. A thread that waits for the parity of the phase
  // it arrived in waits for that phase: released once it completed, however many
  // phases other blocks' arrivals completed before the thread first polls (on the GPU
  // it polls right after its arrival; here the threads of other blocks may run first).
  std::unordered_map<const void*, std::vector<uint64_t>> mbar_arrived;
};

inline TmaBlock& tma_block() {
  static thread_local TmaBlock b;
  if (b.serial != fiber_serial()) {
    const size_t n = size_t(fiber_count());
    b.serial = fiber_serial();
    b.cluster_generation = 0;
    b.cluster_arrived.assign(n, kNotWaiting);
    b.cluster_pending.assign(n, 0);
    b.cluster_epochs = {};
    b.events = 0;
    b.deadlocked = false;
    for (int i = 0; i < 16; ++i)
      b.sync_arrived[i] = b.exited[i] = 0, b.sync_generation[i] = 0, b.sync_epochs[i] = {}, b.sync_line[i] = 0;
    b.grid_arrived = 0;
    b.grid_generation = 0;
    b.grid_epochs = {};
    b.mbar_epochs.clear();
    b.mbar_completed.clear();
    b.mbar_arrived.clear();
    b.waiting_since.assign(n, kNotWaiting);
    b.waiting_on.assign(n, nullptr);
    b.waiting_parity.assign(n, 0);
    b.loads.clear();
    b.stores.assign(n, StoreGroups{});
  }
  return b;
}

// The block whose shared memory holds [p, p + bytes): the running one, or in a
// cluster any of its blocks; nullptr when none does.
inline BlockState* shared_owner(const void* p, size_t bytes) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  auto holds = [&](BlockState& st) {
    return c >= st.shared.data() && c + bytes <= st.shared.data() + st.shared.size();
  };
  ClusterState& cl = cluster_state();
  if (!cl.active) return holds(block_state()) ? &block_state() : nullptr;
  for (BlockState& st : cl.ctas)
    if (holds(st)) return &st;
  return nullptr;
}

// The byte offset of [p, p + bytes) in its block's shared memory, or -1 when it is
// not inside one.
inline int64_t shared_window_offset(const void* p, size_t bytes) {
  BlockState* st = shared_owner(p, bytes);
  return st ? int64_t(static_cast<const unsigned char*>(p) - st->shared.data()) : -1;
}

inline std::string str_of(int64_t v) {
  return std::to_string(v);
}

// Reads the barrier, reporting a barrier outside shared memory or not initialized.
inline bool read_mbarrier(const uint64_t* bar, const char* what, Mbarrier* m) {
  const int64_t off = shared_window_offset(bar, 8);
  if (off < 0 || off % 8 != 0) {
    record_failure(std::string(what) + ": the mbarrier is not an 8-byte aligned word of the block's shared memory");
    return false;
  }
  *m = unpack_mbarrier(*bar);
  if (!m->initialized) {
    record_failure(std::string(what) + ": the mbarrier at shared offset " + str_of(off) +
                   " is used before mbarrier_init (or after mbarrier_inval)");
    return false;
  }
  return true;
}

inline bool tx_in_range(int64_t tx, const uint64_t* bar, const char* what) {
  if (tx >= -kMaxTxCount && tx <= kMaxTxCount) return true;
  record_failure(std::string(what) + ": the tx-count of the mbarrier at shared offset " +
                 str_of(shared_window_offset(bar, 8)) + " leaves its range of +-(2^20 - 1) bytes (" + str_of(tx) + ")");
  return false;
}

// ---- box traversal

inline uint32_t tma_swizzle(uint32_t offset, int swizzle_bytes) {
  if (swizzle_bytes == 0) return offset;
  const uint32_t mask = uint32_t(swizzle_bytes / 16 - 1);
  return offset ^ (((offset >> 7) & mask) << 4);
}

// The bytes a copy moves (the tx-count of a load).
inline uint32_t box_bytes(const EmuTensorMap& m) {
  uint32_t n = m.elem_bytes;
  for (int d = 0; d < m.rank; ++d) n *= emu_box_extent(m, d);
  return n;
}

// The shared-memory pitch of the box's rows: a row narrower than the swizzle span
// still takes a whole span (the H200 leaves the rest alone), so the rows stay on the
// swizzle pattern's 16-byte chunks.
inline uint32_t row_pitch(const EmuTensorMap& m) {
  const uint32_t row = m.box[0] * m.elem_bytes;
  return row < m.swizzle_bytes ? m.swizzle_bytes : row;
}

// The shared-memory bytes the box spans: its rows at row_pitch.
inline uint32_t box_footprint(const EmuTensorMap& m) {
  return box_bytes(m) / (m.box[0] * m.elem_bytes) * row_pitch(m);
}

// The shared offset, before the swizzle, of the box's element `i` (linear order)
// in a tile at offset `tile`.
inline uint32_t box_offset(const EmuTensorMap& m, uint32_t tile, uint32_t i) {
  return tile + i / m.box[0] * row_pitch(m) + i % m.box[0] * m.elem_bytes;
}

// Coordinates the H200 refuses (an illegal instruction that ends the context): an
// innermost coordinate that is not a whole number of 16-byte units, for every copy,
// and a negative coordinate in any dimension, for stores. Measured on the H200
// (2026-12-01); cuTensorMapEncodeTiled cannot see coordinates, so the emulator
// reports them.
inline bool check_coords(const EmuTensorMap& m, const int32_t* c, bool store, const char* what) {
  if (int64_t(c[0]) * m.elem_bytes % 16 != 0) {
    record_failure(std::string(what) + ": the innermost coordinate " + str_of(c[0]) + " (" +
                   str_of(int64_t(c[0]) * m.elem_bytes) + " bytes of " + str_of(int(m.elem_bytes)) +
                   "-byte elements) is not a multiple of 16 bytes; the GPU stops such a copy with an illegal "
                   "instruction");
    return false;
  }
  for (int d = 0; store && d < m.rank; ++d)
    if (c[d] < 0) {
      record_failure(std::string(what) + ": coordinate " + str_of(d) + " is negative (" + str_of(c[d]) +
                     "); a store's box must start inside the tensor (the GPU stops with an illegal instruction), "
                     "though it may run past the end");
      return false;
    }
  return true;
}

// f(linear element index, global address or nullptr when out of bounds) for each
// element of the box at `c`, in shared-memory (linear) order.
template <class F>
inline void for_each_box_element(const EmuTensorMap& m, const int32_t* c, F&& f) {
  uint32_t n[5] = {1, 1, 1, 1, 1};
  for (int d = 0; d < m.rank; ++d) n[d] = emu_box_extent(m, d);
  uint32_t linear = 0;
  for (uint32_t i4 = 0; i4 < n[4]; ++i4)
    for (uint32_t i3 = 0; i3 < n[3]; ++i3)
      for (uint32_t i2 = 0; i2 < n[2]; ++i2)
        for (uint32_t i1 = 0; i1 < n[1]; ++i1)
          for (uint32_t i0 = 0; i0 < n[0]; ++i0, ++linear) {
            const uint32_t idx[5] = {i0, i1, i2, i3, i4};
            bool inside = true;
            uint64_t addr = m.base;
            for (int d = 0; d < m.rank; ++d) {
              const int64_t g = int64_t(c[d]) + int64_t(idx[d]) * (d == 0 ? 1 : m.elem_strides[d]);
              inside = inside && g >= 0 && uint64_t(g) < m.dims[d];
              addr += uint64_t(g) * m.strides[d];
            }
            f(linear, inside ? reinterpret_cast<unsigned char*>(uintptr_t(addr)) : nullptr);
          }
}

// The fill of an out-of-bounds element: zeros, or a quiet NaN of the map's float type.
inline void oob_fill(unsigned char* dst, const EmuTensorMap& m) {
  memset(dst, 0, m.elem_bytes);
  if (!m.nan_fill) return;
  const uint64_t nan = m.elem_bytes == 2 ? 0x7fffu : m.elem_bytes == 4 ? 0x7fffffffu : 0x7fffffffffffffffull;
  memcpy(dst, &nan, m.elem_bytes);  // little-endian: the low bytes
}

inline void land_load(const PendingLoad& p) {
  unsigned char* shared = shared_owner(p.dst, 0)->shared.data();  // a multicast lands in another block
  const uint32_t tile = uint32_t(p.dst - shared);
  for_each_box_element(p.map, p.coords, [&](uint32_t i, const unsigned char* g) {
    unsigned char* s = shared + tma_swizzle(box_offset(p.map, tile, i), p.map.swizzle_bytes);
    if (g)
      memcpy(s, g, p.map.elem_bytes);
    else
      oob_fill(s, p.map);
  });
}

// Decodes the map of a copy, reporting one that the emulator did not encode.
inline bool decode_map(const void* map, int rank, const char* what, EmuTensorMap* m) {
  memcpy(m, map, sizeof(EmuTensorMap));
  if (m->magic != kEmuTensorMapMagic) {
    record_failure(std::string(what) +
                   ": the tensor map was not encoded for the emulator; build it with "
                   "tl::encode_tensor_map(..., emulate=true)");
    return false;
  }
  if (m->rank != rank) {
    record_failure(std::string(what) + "<" + str_of(rank) + ">: the tensor map has rank " + str_of(m->rank));
    return false;
  }
  return true;
}

// Checks the shared side of a copy: inside the block's shared memory, 128-byte aligned.
inline bool check_tile(const void* tile, const EmuTensorMap& m, const char* what) {
  const int64_t off = shared_window_offset(tile, box_footprint(m));
  if (off < 0) {
    record_failure(std::string(what) + ": the " + str_of(box_footprint(m)) +
                   "-byte box does not fit in the block's shared memory at that address");
    return false;
  }
  if (off % 128 != 0) {
    record_failure(std::string(what) + ": the shared tile must be 128-byte aligned; its offset is " + str_of(off));
    return false;
  }
  return true;
}

// ---- mbarrier operations

// Completes the phase when no arrival and no byte is pending: lands its loads,
// flips the parity and expects the arrivals again.
inline void complete_phase_if_done(uint64_t* bar) {
  Mbarrier m = unpack_mbarrier(*bar);
  if (m.pending != 0 || m.tx != 0) return;
  TmaBlock& b = tma_block();
  auto it = b.loads.find(bar);
  if (it != b.loads.end()) {
    for (const PendingLoad& p : it->second) land_load(p);
    b.loads.erase(it);
  }
  m.parity ^= 1;
  m.pending = m.expected;
  *bar = pack_mbarrier(m);
  ++b.events;
  ++b.mbar_completed[bar];
  if (auto e = b.mbar_epochs.find(bar); e != b.mbar_epochs.end()) e->second.release();
}

TL_EMU_FN void mbarrier_init(uint64_t* bar, uint32_t count) {
  const int64_t off = shared_window_offset(bar, 8);
  if (off < 0 || off % 8 != 0) {
    record_failure("mbarrier_init: the mbarrier is not an 8-byte aligned word of the block's shared memory");
    return;
  }
  if (count < 1 || count > kMaxArrivals) {
    record_failure("mbarrier_init: the arrival count must be in [1, 2^20 - 1]; got " + str_of(count));
    return;
  }
  TmaBlock& b = tma_block();
  b.loads.erase(bar);
  b.mbar_epochs.erase(bar);
  b.mbar_completed.erase(bar);
  b.mbar_arrived.erase(bar);
  Mbarrier m;
  m.expected = m.pending = count;
  m.initialized = true;
  *bar = pack_mbarrier(m);
  ++b.events;
}

TL_EMU_FN void mbarrier_inval(uint64_t* bar) {
  Mbarrier m;
  if (!read_mbarrier(bar, "mbarrier_inval", &m)) return;
  TmaBlock& b = tma_block();
  if (b.loads.count(bar)) {
    record_failure("mbarrier_inval: TMA loads still complete on the mbarrier at shared offset " +
                   str_of(shared_window_offset(bar, 8)));
    return;
  }
  *bar = 0;
  ++b.events;
}

TL_EMU_FN void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
  Mbarrier m;
  if (!read_mbarrier(bar, "mbarrier_expect_tx", &m)) return;
  m.tx += bytes;
  if (!tx_in_range(m.tx, bar, "mbarrier_expect_tx")) return;
  *bar = pack_mbarrier(m);
  ++tma_block().events;
  complete_phase_if_done(bar);
}

// An arrival, after raising the tx-count by tx_bytes (arrive.expect_tx).
TL_EMU_FN void mbarrier_arrive(uint64_t* bar, uint32_t tx_bytes) {
  const char* what = tx_bytes ? "mbarrier_arrive_expect_tx" : "mbarrier_arrive";
  Mbarrier m;
  if (!read_mbarrier(bar, what, &m)) return;
  m.tx += tx_bytes;
  if (!tx_in_range(m.tx, bar, what)) return;
  if (m.pending == 0) {
    record_failure(std::string(what) + ": the current phase of the mbarrier at shared offset " +
                   str_of(shared_window_offset(bar, 8)) + " already has all " + str_of(m.expected) +
                   " arrivals it was initialized with");
    return;
  }
  --m.pending;
  *bar = pack_mbarrier(m);
  TmaBlock& b = tma_block();
  ++b.events;
  if (FiberScheduler* s = current_scheduler()) {
    std::vector<uint64_t>& arrived = b.mbar_arrived[bar];
    if (arrived.empty()) arrived.assign(b.waiting_since.size(), kNotWaiting);
    arrived[size_t(fiber_index())] = b.mbar_completed[bar];
    b.mbar_epochs[bar].arrive(s->barriers[size_t(fiber_index())]);
  }
  complete_phase_if_done(bar);
}

// ---- waiting

inline void yield_fiber() {
  FiberScheduler* s = current_scheduler();
  if (s) swapcontext(&s->contexts[s->current], &s->main);
}

// Ends the calling fiber for good: the scheduler never resumes a done fiber.
inline void abandon_fiber() {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  s->done[s->current] = 1;
  swapcontext(&s->contexts[s->current], &s->main);
}

// True when every running thread waits and nothing changed since each one looked.
inline bool block_deadlocked(const TmaBlock& b) {
  FiberScheduler* s = current_scheduler();
  if (!s) return true;  // one thread alone: nobody else can arrive
  for (size_t j = 0; j < b.waiting_since.size(); ++j)
    if (!s->done[j] && b.waiting_since[j] != b.events) return false;
  return true;
}

// "0-31, 64" from ascending ranks.
inline std::string rank_ranges(const std::vector<int>& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + str_of(r[i]) + (j > i ? "-" + str_of(r[j]) : "");
    i = j + 1;
  }
  return out;
}

inline void report_deadlock(const TmaBlock& b) {
  FiberScheduler* s = current_scheduler();
  std::vector<std::pair<const uint64_t*, uint32_t>> keys;  // distinct (barrier, parity), first-seen order
  std::vector<std::vector<int>> ranks;
  for (size_t j = 0; j < b.waiting_since.size(); ++j) {
    if (s && s->done[j]) continue;
    if (!s && int(j) != fiber_index()) continue;
    std::pair<const uint64_t*, uint32_t> k{b.waiting_on[j], b.waiting_parity[j]};
    size_t i = 0;
    while (i < keys.size() && keys[i] != k) ++i;
    if (i == keys.size()) {
      keys.push_back(k);
      ranks.emplace_back();
    }
    ranks[i].push_back(int(j));
  }
  bool at_grid_barrier = false;
  for (const auto& k : keys) at_grid_barrier = at_grid_barrier || (!k.first && k.second == kGridBarrier);
  std::string msg = at_grid_barrier ? "T.sync_grid(): deadlock: every running thread of the block waits at a barrier "
                                      "that can no longer complete:"
                                    : "mbarrier deadlock: every running thread of the block waits for an mbarrier "
                                      "phase that can no longer complete:";
  for (size_t i = 0; i < keys.size() && i < 4; ++i) {
    const auto& [bar, what] = keys[i];  // no mbarrier: the parity slot says which barrier
    std::string where;
    if (bar) {
      const Mbarrier m = unpack_mbarrier(*bar);
      where = "for parity " + str_of(what) + " of the mbarrier at shared offset " +
              str_of(shared_window_offset(bar, 8)) + " (its phase still expects " + str_of(m.pending) + " of " +
              str_of(m.expected) + " arrivals and " + str_of(m.tx) + " transaction bytes)";
    } else if (what == kClusterBarrier) {
      where = "at the cluster barrier (T.cluster_wait)";
    } else if (what == kBlockBarrier) {
      where = "at __syncthreads (the block barrier)";
    } else if (what == kGridBarrier) {
      where = "at T.sync_grid (the grid barrier)";
    } else {
      where = "at named barrier " + str_of(what) + " (a T.ws region's block barrier)";
    }
    msg += (i ? ";" : "") + std::string(" thread") + (ranks[i].size() > 1 ? "s " : " ") + rank_ranges(ranks[i]) +
           " wait " + where;
  }
  bool at_block_barrier = false;
  for (const auto& k : keys) at_block_barrier = at_block_barrier || (!k.first && k.second == kBlockBarrier);
  if (at_grid_barrier)
    msg +=
        ". T.sync_grid() completes when every thread of every block has called it: one inside a branch that only "
        "some threads take (or after some threads returned) never does";
  else if (at_block_barrier && keys.size() > 1)
    msg +=
        ". Some threads wait at the block barrier while the others wait elsewhere: a block barrier that only "
        "some threads reach (a T.sync_threads() inside a branch on the thread index) never completes; use "
        "T.sync_threads(id, count) of the branch's threads, or an mbarrier";
  else
    msg +=
        ". Check the count given to mbarrier_init, the bytes given to mbarrier_arrive_expect_tx against the boxes "
        "loaded, and the parity each wait alternates";
  record_failure(msg);
}

// One round of a wait that cannot end yet: notes what fiber `f` waits for (an
// mbarrier and its parity, or nullptr and a named barrier's id or kClusterBarrier),
// reports the deadlock when every running thread waits and nothing changed since
// each looked (then the fiber is abandoned), and yields. False when there is no
// scheduler to yield to: the caller gives up.
inline bool wait_one_round(TmaBlock& b, size_t f, const uint64_t* on, uint32_t what) {
  if (b.deadlocked) abandon_fiber();
  b.waiting_since[f] = b.events;
  b.waiting_on[f] = on;
  b.waiting_parity[f] = what;
  if (block_deadlocked(b)) {
    report_deadlock(b);
    b.deadlocked = true;
    if (!current_scheduler()) return false;
    abandon_fiber();
  }
  yield_fiber();
  return true;
}

TL_EMU_FN void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  TmaBlock& b = tma_block();
  const size_t rank = size_t(fiber_index());
  uint64_t released_at = 0;  // the completion count that ends this wait; 0 until it first waits
  for (;;) {
    Mbarrier m;
    if (!read_mbarrier(bar, "mbarrier_wait", &m)) return;
    auto c = b.mbar_completed.find(bar);
    const uint64_t completed = c == b.mbar_completed.end() ? 0 : c->second;
    if (m.parity != (parity & 1) || (released_at && completed >= released_at)) {
      b.waiting_since[rank] = kNotWaiting;
      FiberScheduler* s = current_scheduler();
      auto e = b.mbar_epochs.find(bar);
      if (s && e != b.mbar_epochs.end() && e->second.out > s->barriers[rank]) s->barriers[rank] = e->second.out;
      return;
    }
    if (!released_at) {
      released_at = completed + 1;
      auto a = b.mbar_arrived.find(bar);
      const uint64_t phase = a == b.mbar_arrived.end() ? kNotWaiting : a->second[rank];
      if (phase != kNotWaiting && phase < completed && (phase & 1) == (parity & 1)) released_at = phase + 1;
      continue;
    }
    if (!wait_one_round(b, rank, bar, parity & 1)) return;
  }
}

// ---- the block barrier (__syncthreads): every thread of the block that has not
// returned arrives before any passes. The round-robin scheduler alone would let a
// thread through after one round while others still spin in another wait (a named
// barrier of a T.ws region, an mbarrier), so the arrivals are counted.

TL_EMU_FN void block_barrier(int line) {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  TmaBlock& b = tma_block();
  const int cta = cta_rank();
  const size_t rank = size_t(fiber_index());
  if (b.deadlocked) abandon_fiber();
  // On the GPU a block barrier that only some threads reach, the others waiting at
  // another one, is undefined (it hangs or lets both groups through); report it.
  if (line && b.sync_line[cta] && b.sync_line[cta] != line) {
    const int block_size = block_threads();
    record_failure("divergent __syncthreads(): thread " + std::to_string(b.sync_line_thread[cta] % block_size) +
                   " waits at the barrier of line " + std::to_string(b.sync_line[cta]) + " and thread " +
                   std::to_string(int(rank) % block_size) + " at the one of line " + std::to_string(line) +
                   " of the kernel source (kernel.get_kernel_source()); every thread of a block must reach the same "
                   "T.sync_threads() / __syncthreads(): move it out of the branch on the thread index, or use "
                   "T.sync_threads(id, count) of the branch's threads");
    b.deadlocked = true;
    abandon_fiber();
  }
  if (line && !b.sync_line[cta]) {
    b.sync_line[cta] = line;
    b.sync_line_thread[cta] = int(rank);
  }
  const uint64_t gen = b.sync_generation[cta];
  ++b.events;
  ++b.sync_arrived[cta];
  b.sync_epochs[cta].arrive(s->barriers[rank]);
  for (;;) {
    if (b.sync_generation[cta] == gen && b.sync_arrived[cta] + b.exited[cta] >= block_threads()) {
      b.sync_arrived[cta] = 0;
      b.sync_line[cta] = 0;
      ++b.sync_generation[cta];
      b.sync_epochs[cta].release();
    }
    if (b.sync_generation[cta] != gen) break;
    if (!wait_one_round(b, rank, nullptr, kBlockBarrier)) return;
  }
  b.waiting_since[rank] = kNotWaiting;
  s->barriers[rank] = b.sync_epochs[cta].out;
}

inline void land_all_stores();

// The running thread has returned from the kernel: the block barrier stops waiting for it.
TL_EMU_FN void thread_exited() {
  if (!current_scheduler()) return;
  land_all_stores();  // the GPU finishes a returned thread's stores
  check_same_values();
  TmaBlock& b = tma_block();
  ++b.exited[cta_rank()];
  ++b.events;
}

// ---- the grid barrier (T.sync_grid): every thread of the block arrives (a returned
// thread does not count: every thread must call it, as cooperative groups require,
// and a barrier some never reach is a reported deadlock), and the last one meets the
// other blocks, each on its OS thread (device/cpu/grid_rendezvous.h), while its
// block's other fibers are parked here. It orders shared memory as __syncthreads does.

TL_EMU_FN void sync_grid() {
  FiberScheduler* s = current_scheduler();
  if (!s) {
    if (const char* why = grid::arrive_and_wait()) record_failure(why);
    return;
  }
  TmaBlock& b = tma_block();
  const size_t rank = size_t(fiber_index());
  const uint64_t gen = b.grid_generation;
  ++b.events;
  b.grid_epochs.arrive(s->barriers[rank]);
  if (++b.grid_arrived == block_threads()) {
    b.grid_arrived = 0;
    if (const char* why = grid::arrive_and_wait()) record_failure(why);
    ++b.grid_generation;
    b.grid_epochs.release();
  }
  while (b.grid_generation == gen)
    if (!wait_one_round(b, rank, nullptr, kGridBarrier)) return;
  b.waiting_since[rank] = kNotWaiting;
  s->barriers[rank] = b.grid_epochs.out;
}

// ---- named barriers (bar.sync id, count): a T.ws region's block barrier

struct NamedBarriers {
  uint64_t serial = ~uint64_t(0);
  int arrived[16], expected[16];
  uint64_t generation[16];
  EpochMerge epochs[16];
};

// The named barriers of the calling fiber's block, checked for (id, count); nullptr
// (after recording the failure) when the call is invalid.
TL_EMU_FN NamedBarriers* named_barriers(int id, int count, const char* what) {
  // By rank in the cluster (at most 16 blocks), reset by the first call of each run of
  // a block or cluster. A fixed array: the waiters below hold a reference across their
  // yields, which a growing vector would invalidate.
  static thread_local NamedBarriers by_block[16];
  NamedBarriers& n = by_block[cta_rank()];
  if (n.serial != fiber_serial()) {
    n.serial = fiber_serial();
    for (int i = 0; i < 16; ++i) n.arrived[i] = n.expected[i] = 0, n.generation[i] = 0, n.epochs[i] = {};
  }
  if (id < 1 || id > 15 || count < 32 || count % 32 != 0 || count > block_threads()) {
    record_failure(std::string(what) + ": id must be in [1, 15] and count a multiple of 32 up to the block's " +
                   str_of(block_threads()) + " threads; got id " + str_of(id) + ", count " + str_of(count));
    return nullptr;
  }
  if (n.arrived[id] == 0) n.expected[id] = count;
  if (n.expected[id] != count) {
    record_failure(std::string(what) + ": barrier " + str_of(id) + " is used with " + str_of(count) + " and " +
                   str_of(n.expected[id]) + " threads at once");
    return nullptr;
  }
  return &n;
}

// One arrival at barrier `id`: the fiber's writes so far join what the barrier
// releases; the last arrival completes the phase. Returns the phase arrived at.
TL_EMU_FN uint64_t named_barrier_arrival(NamedBarriers& n, int id, int count) {
  TmaBlock& b = tma_block();
  FiberScheduler* s = current_scheduler();
  const uint64_t gen = n.generation[id];
  ++b.events;
  if (s) n.epochs[id].arrive(s->barriers[size_t(fiber_index())]);
  if (++n.arrived[id] == count) {
    n.arrived[id] = 0;
    ++n.generation[id];
    n.epochs[id].release();
  }
  return gen;
}

TL_EMU_FN void named_barrier_sync(int id, int count) {
  NamedBarriers* n = named_barriers(id, count, "named_barrier_sync");
  if (!n) return;
  TmaBlock& b = tma_block();
  FiberScheduler* s = current_scheduler();
  const size_t rank = size_t(fiber_index());
  const uint64_t gen = named_barrier_arrival(*n, id, count);
  while (n->generation[id] == gen) {
    if (!wait_one_round(b, rank, nullptr, uint32_t(id))) return;
  }
  b.waiting_since[rank] = kNotWaiting;
  if (s) s->barriers[rank] = n->epochs[id].out;
}

// bar.arrive: counts toward the phase without waiting for it (a producer signalling
// the threads that wait on the barrier with named_barrier_sync).
TL_EMU_FN void named_barrier_arrive(int id, int count) {
  if (NamedBarriers* n = named_barriers(id, count, "named_barrier_arrive")) named_barrier_arrival(*n, id, count);
}

// ---- copies

TL_EMU_FN void tma_load(void* smem_dst, const void* map, uint64_t* bar, const int32_t* coords, int rank) {
  PendingLoad p;
  if (!decode_map(map, rank, "tma_load", &p.map) || !check_tile(smem_dst, p.map, "tma_load") ||
      !check_coords(p.map, coords, false, "tma_load"))
    return;
  Mbarrier m;
  if (!read_mbarrier(bar, "tma_load", &m)) return;
  p.dst = static_cast<unsigned char*>(smem_dst);
  memcpy(p.coords, coords, sizeof(p.coords));
  m.tx -= box_bytes(p.map);  // complete_tx: the bytes count when issued, the data lands with the phase
  if (!tx_in_range(m.tx, bar, "tma_load")) return;
  tma_block().loads[bar].push_back(p);
  *bar = pack_mbarrier(m);
  ++tma_block().events;
  complete_phase_if_done(bar);
}

// tl::bulk_load: the bytes land at once and complete on the barrier (its tx-count
// raised by them before).
TL_EMU_FN void bulk_load(void* smem_dst, const void* src, uint32_t bytes, uint64_t* bar) {
  const int64_t off = shared_window_offset(smem_dst, bytes);
  if (off < 0) {
    record_failure("bulk_load: the destination is not " + str_of(bytes) + " bytes of the block's shared memory");
    return;
  }
  Mbarrier m;
  if (!read_mbarrier(bar, "bulk_load", &m)) return;
  memcpy(smem_dst, src, bytes);
  m.tx -= bytes;
  if (!tx_in_range(m.tx, bar, "bulk_load")) return;
  *bar = pack_mbarrier(m);
  ++tma_block().events;
  complete_phase_if_done(bar);
}

// The box of a store's tile in linear order, read through the swizzle.
inline std::vector<unsigned char> gather_tile(const EmuTensorMap& m, const unsigned char* src, bool note) {
  const uint32_t tile = uint32_t(shared_window_offset(src, 0));
  const unsigned char* shared = block_state().shared.data();
  std::vector<unsigned char> out(box_bytes(m));
  for (uint32_t i = 0; i * m.elem_bytes < out.size(); ++i) {
    const unsigned char* s = shared + tma_swizzle(box_offset(m, tile, i), m.swizzle_bytes);
    if (note) note_shared(s, false, "|tl::tma_store");
    memcpy(&out[i * m.elem_bytes], s, m.elem_bytes);
  }
  return out;
}

// CUtensorMapDataType codes of the dtypes tma_store_add sums (those the tensor form
// of cp.reduce.async.bulk adds).
constexpr uint8_t kMapUint32 = 2, kMapInt32 = 3, kMapUint64 = 4, kMapFloat16 = 6, kMapFloat32 = 7, kMapBFloat16 = 9;

inline bool addable(const EmuTensorMap& m) {
  switch (m.dtype) {
    case kMapFloat32:
    case kMapInt32:
    case kMapUint32:
      return m.elem_bytes == 4;
    case kMapUint64:
      return m.elem_bytes == 8;
    case kMapFloat16:
    case kMapBFloat16:
      return m.elem_bytes == 2;
    default:
      return false;
  }
}

// *g += *v for an addable map's dtype, atomically (blocks run on several host threads
// and may add to the same element, as the hardware's reductions in L2 may): integers
// wrap around; float16 and bfloat16 round the exact sum once to nearest even (the
// double sum of two float16 values is exact), subnormals kept (.noftz).
template <class T, class Bits>
inline void add_as(unsigned char* g, const unsigned char* v) {
  static_assert(sizeof(T) == sizeof(Bits), "add_as: one word per element");
  Bits* word = reinterpret_cast<Bits*>(g);  // TMA elements are aligned to their size
  T b;
  memcpy(&b, v, sizeof(T));
  Bits old = __atomic_load_n(word, __ATOMIC_RELAXED);
  for (;;) {
    T a;
    memcpy(&a, &old, sizeof(T));
    T sum;
    if constexpr (sizeof(T) == 2) {
      sum = T(double(float(a)) + double(float(b)));
    } else {
      sum = T(a + b);
    }
    Bits next;
    memcpy(&next, &sum, sizeof(T));
    if (__atomic_compare_exchange_n(word, &old, next, /*weak=*/true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}
inline void add_element(const EmuTensorMap& m, unsigned char* g, const unsigned char* v) {
  switch (m.dtype) {
    case kMapFloat32:
      return add_as<float, uint32_t>(g, v);
    case kMapUint64:
      return add_as<uint64_t, uint64_t>(g, v);
    case kMapFloat16:
      return add_as<::tl::half_t, uint16_t>(g, v);
    case kMapBFloat16:
      return add_as<::tl::bfloat16_t, uint16_t>(g, v);
    default:
      return add_as<uint32_t, uint32_t>(g, v);
  }
}

// tma_store (add = false) and tma_store_add (add = true).
TL_EMU_FN void tma_store(const void* map, const void* smem_src, const int32_t* coords, int rank, bool add) {
  const char* what = add ? "tma_store_add" : "tma_store";
  IssuedStore st;
  if (!decode_map(map, rank, what, &st.map) || !check_tile(smem_src, st.map, what) ||
      !check_coords(st.map, coords, true, what))
    return;
  if (add && !addable(st.map)) {
    record_failure(std::string(what) + ": the tensor map's dtype (code " + str_of(st.map.dtype) +
                   ") is not float32, float16, bfloat16, int32, uint32 or uint64");
    return;
  }
  st.src = static_cast<const unsigned char*>(smem_src);
  memcpy(st.coords, coords, sizeof(st.coords));
  st.add = add;
  st.tile = gather_tile(st.map, st.src, true);
  tma_block().stores[size_t(fiber_index())].open.push_back(std::move(st));
}

// Writes (or adds) a store's tile to global memory.
inline void land(const IssuedStore& st) {
  for_each_box_element(st.map, st.coords, [&](uint32_t i, unsigned char* g) {
    if (!g) return;
    if (st.add)
      add_element(st.map, g, &st.tile[i * st.map.elem_bytes]);
    else
      memcpy(g, &st.tile[i * st.map.elem_bytes], st.map.elem_bytes);
  });
}

// Lands every store the running thread issued and has not landed yet, in issue order.
inline void land_all_stores() {
  StoreGroups& q = tma_block().stores[size_t(fiber_index())];
  for (const IssuedStore& st : q.read) land(st);
  for (const auto& group : q.committed)
    for (const IssuedStore& st : group) land(st);
  for (const IssuedStore& st : q.open) land(st);
  q = StoreGroups{};
}

TL_EMU_FN void tma_store_commit() {
  StoreGroups& q = tma_block().stores[size_t(fiber_index())];
  q.committed.push_back(std::move(q.open));
  q.open.clear();
}

// tma_store_wait<N> (complete = false: the tiles are read) and tma_store_wait<N, false>
// (complete: the writes are done: the retired groups, and every earlier group, land now).
TL_EMU_FN void tma_store_wait(int n, bool complete) {
  StoreGroups& q = tma_block().stores[size_t(fiber_index())];
  while (q.committed.size() > size_t(n)) {
    for (IssuedStore& st : q.committed.front()) {
      if (gather_tile(st.map, st.src, false) != st.tile)
        record_failure("tma_store: the shared tile at offset " + str_of(shared_window_offset(st.src, 0)) +
                       " was written before the tma_store_wait that covers its store (thread " + str_of(thread_rank()) +
                       "); on the GPU the store may read the new values");
      q.read.push_back(std::move(st));
    }
    q.committed.erase(q.committed.begin());
  }
  if (complete) {
    for (const IssuedStore& st : q.read) land(st);
    q.read.clear();
  }
}

// ---- thread block clusters (run_cluster)

// The address of `p` (in the running block's shared memory) in block `cta` of the
// cluster, as mapa gives it; nullptr after a report when there is no such block.
inline unsigned char* remote_address(const void* p, int cta, const char* what) {
  const int64_t off = shared_window_offset(p, 1);
  ClusterState& c = cluster_state();
  const int blocks = c.active ? int(c.ctas.size()) : 1;
  if (off < 0 || shared_owner(p, 1) != &block_state()) {
    record_failure(std::string(what) + ": the address is not in the calling block's shared memory");
    return nullptr;
  }
  if (cta < 0 || cta >= blocks) {
    record_failure(std::string(what) + ": block " + str_of(cta) + " is outside the cluster of " + str_of(blocks) +
                   " block(s)");
    return nullptr;
  }
  return (c.active ? c.ctas[size_t(cta)] : block_state()).shared.data() + off;
}

TL_EMU_FN void mbarrier_arrive_remote(uint64_t* bar, int cta) {
  if (unsigned char* p = remote_address(bar, cta, "mbarrier_arrive_cluster"))
    mbarrier_arrive(reinterpret_cast<uint64_t*>(p), 0);
}

// tl::store_cluster: `bytes` bytes at `dst`'s offset in block `cta`'s shared memory.
TL_EMU_FN void store_remote(void* dst, int cta, const void* value, size_t bytes) {
  if (unsigned char* p = remote_address(dst, cta, "store_cluster")) memcpy(p, value, bytes);
}

// A tma_load into every block of `mask`: each gets the box at the same offset, and
// its bytes on its own mbarrier at the same offset.
TL_EMU_FN void tma_load_multicast(void* smem_dst, const void* map, uint64_t* bar, uint16_t mask, const int32_t* coords,
                                  int rank) {
  EmuTensorMap m;
  if (!decode_map(map, rank, "tma_load_multicast", &m) || !check_tile(smem_dst, m, "tma_load_multicast")) return;
  if (mask == 0) {
    record_failure("tma_load_multicast: the block mask is empty");
    return;
  }
  for (int cta = 0; cta < 16; ++cta) {
    if (!(mask >> cta & 1)) continue;
    unsigned char* dst = remote_address(smem_dst, cta, "tma_load_multicast");
    unsigned char* b = remote_address(bar, cta, "tma_load_multicast");
    if (!dst || !b) return;
    tma_load(dst, map, reinterpret_cast<uint64_t*>(b), coords, rank);
  }
}

// The cluster barrier: an arrival counts for the current generation, which ends
// when every fiber of the cluster that has not exited arrived.
TL_EMU_FN void cluster_arrive() {
  TmaBlock& b = tma_block();
  const size_t f = size_t(fiber_index());
  if (b.cluster_pending[f]) {
    record_failure("cluster_arrive: thread " + str_of(thread_rank()) + " of block " + str_of(cta_rank()) +
                   " of the cluster arrives twice before its cluster_wait");
    return;
  }
  b.cluster_pending[f] = 1;
  b.cluster_arrived[f] = b.cluster_generation;
  ++b.events;
  if (FiberScheduler* s = current_scheduler()) b.cluster_epochs.arrive(s->barriers[f]);
}

TL_EMU_FN void cluster_wait() {
  TmaBlock& b = tma_block();
  FiberScheduler* s = current_scheduler();
  const size_t f = size_t(fiber_index());
  const uint64_t gen = b.cluster_arrived[f];
  if (!b.cluster_pending[f]) {
    record_failure("cluster_wait: thread " + str_of(thread_rank()) + " of block " + str_of(cta_rank()) +
                   " of the cluster waits without a cluster_arrive before it");
    return;
  }
  b.cluster_pending[f] = 0;
  while (b.cluster_generation == gen) {
    bool all = true;
    for (size_t j = 0; j < b.cluster_arrived.size() && all; ++j) all = (s && s->done[j]) || b.cluster_arrived[j] == gen;
    if (all) {
      ++b.cluster_generation;
      ++b.events;
      b.cluster_epochs.release();
      break;
    }
    if (!wait_one_round(b, f, nullptr, kClusterBarrier)) return;
  }
  b.waiting_since[f] = kNotWaiting;
  if (s && b.cluster_epochs.out > s->barriers[f]) s->barriers[f] = b.cluster_epochs.out;
}

#endif  // TL_EMU_DEFINITIONS

}  // namespace tl::emu
