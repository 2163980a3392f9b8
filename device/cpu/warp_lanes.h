// The 32 lanes of a warp when each thread of a block is a fiber (threads.h): the
// register exchange and the lane rules behind warp shuffles and votes, shared by the
// cpu target's warp helpers (warp.h) and the CUDA emulator's twins of the vote
// intrinsics (device/emu/cuda_emu.h). Every thread of the block must make the same
// sequence of collective calls, as on the GPU with the full mask.
#pragma once

#include <cstdint>
#include <cstdio>

#include "threads.h"

namespace tl::lanes {

constexpr int kWarpSize = 32;

// The calling fiber's rank in its block; 0 when one executor runs the whole block.
inline int rank() {
  FiberScheduler* s = current_scheduler();
  return s ? s->current : 0;
}

inline int block_size() {
  FiberScheduler* s = current_scheduler();
  return s ? int(s->contexts.size()) : 1;
}

// Bit l set for each lane l of the caller's warp that exists: a block whose size is
// not a multiple of 32 ends with a partial warp. Without fibers, one executor stands
// for every thread of the block (all of them compute the same values), so every lane.
inline uint32_t present() {
  if (!current_scheduler()) return 0xffffffffu;
  int lanes = block_size() - (rank() - rank() % kWarpSize);
  return lanes >= kWarpSize ? 0xffffffffu : (1u << lanes) - 1u;
}

// A rendezvous of all fibers of the block. It is no barrier for the emulator's race
// detector: warp collectives order nothing between warps on the GPU.
inline void lockstep() {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  ++s->events;  // progress, for the named barriers' deadlock check
  swapcontext(&s->contexts[s->current], &s->main);
}

// Every fiber publishes Count words, one lockstep, then may read any lane of its
// warp (the result points at lane 0's words). Calls of one <Word, Count, Kind>
// alternate between two buffers, so one lockstep per call suffices: a buffer is
// written again only after the next call's lockstep, which no fiber passes before
// all have read this call's words.
template <class Word, int Count, int Kind>
inline const Word* exchange(const Word* mine) {
  struct Buffers {
    uint64_t block = 0;
    Slots<Word> words[2];
    Slots<unsigned char> parity;  // by rank: the buffer of the fiber's next call
  };
  static thread_local Buffers b;
  FiberScheduler* s = current_scheduler();
  if (!s) return mine;
  const size_t r = size_t(s->current), threads = s->contexts.size();
  if (b.block != s->serial) {  // the block's first call (made before any fiber publishes)
    b.block = s->serial;
    b.parity.assign(threads, 0);
    for (Slots<Word>& w : b.words) w.assign(threads * Count, Word());
  }
  Word* words = b.words[b.parity[r]].data();
  b.parity[r] ^= 1;
  for (int i = 0; i < Count; ++i) words[r * Count + i] = mine[i];
  lockstep();
  return words + r / kWarpSize * kWarpSize * Count;
}

// The lane whose value each shuffle reads, as CUDA defines it for groups of `width`
// lanes; -1 keeps the caller's own value.
inline int source_idx(int lane, int src_lane, int width) {
  return (lane & ~(width - 1)) + (src_lane & (width - 1));
}
inline int source_xor(int lane, int lane_mask, int width) {
  int src = lane ^ lane_mask;  // a later group of `width` lanes is out of reach
  return src >= (lane / width + 1) * width || src >= kWarpSize ? -1 : src;
}
inline int source_down(int lane, int delta, int width) {
  return lane % width + delta >= width ? -1 : lane + delta;
}
inline int source_up(int lane, int delta, int width) {
  return lane % width < delta ? -1 : lane - delta;
}

// `v` of lane source(own lane) of the caller's warp; a lane that is not present
// (past the end of the block) or a negative source keeps `v`.
template <class Word, class Source>
inline Word shuffle(Word v, Source source) {
  static_assert(sizeof(Word) == 4 || sizeof(Word) == 8, "shuffles move 32- or 64-bit words");
  if (!current_scheduler()) return v;  // one executor: every lane holds v
  const Word* warp = exchange<Word, 1, 0>(&v);
  const int src = source(rank() % kWarpSize);
  return src >= 0 && (present() >> src & 1u) ? warp[src] : v;
}

// Whether the calling lane may make a warp-level call with `mask`. On the GPU a lane
// outside the mask must not make the call (undefined); here every thread of the
// block makes every call, so a valid mask holds every lane (or every lane present).
inline bool in_mask(uint32_t mask) {
  return !current_scheduler() || (mask >> (rank() % kWarpSize) & 1u);
}

// The error for a call by a lane outside its mask, written into buf.
inline void describe_mask_error(char* buf, size_t size, const char* call, uint32_t mask) {
  snprintf(buf, size,
           "warp-level call %s by thread %d (lane %d of warp %d) with mask 0x%08x, which leaves that lane out: "
           "undefined on the GPU, where only the lanes of the mask may make the call; every thread reaches each "
           "warp-level call here, so pass the full mask 0xFFFFFFFF",
           call, rank(), rank() % kWarpSize, rank() / kWarpSize, mask);
}

// The lanes whose `pred` is true. As on the GPU, every lane that makes the call
// votes (here: every lane present), whatever the mask.
inline uint32_t ballot(bool pred) {
  if (!current_scheduler()) return pred ? 0xffffffffu : 0u;  // one executor: every lane votes alike
  const uint32_t mine = pred ? 1u : 0u;
  const uint32_t* warp = exchange<uint32_t, 1, 1>(&mine);
  uint32_t bits = 0;
  for (int l = 0; l < kWarpSize; ++l)
    if (warp[l]) bits |= 1u << l;
  return bits & present();
}

inline bool any(bool pred) {
  return ballot(pred) != 0;
}
inline bool all(bool pred) {
  return ballot(pred) == present();
}

// __match_any_sync: the lanes of `mask` (that exist) whose 32- or 64-bit value has
// the caller's bits. One executor stands for every lane, all holding the same value.
inline uint32_t match_any(uint64_t mine, uint32_t mask) {
  if (!current_scheduler()) return mask;
  const uint64_t* warp = exchange<uint64_t, 1, 2>(&mine);
  uint32_t bits = 0;
  for (int l = 0; l < kWarpSize; ++l)
    if (warp[l] == mine) bits |= 1u << l;
  return bits & mask & present();
}
// __match_all_sync: `mask` when every lane of it (that exists) has the caller's
// value, else 0; `pred` says which.
inline uint32_t match_all(uint64_t mine, uint32_t mask, int* pred) {
  const uint32_t lanes = mask & present();
  const bool same = (match_any(mine, mask) & lanes) == lanes;
  if (pred) *pred = same ? 1 : 0;
  return same ? mask : 0u;
}

// __ffs / __ffsll: the 1-based position of the lowest set bit, 0 for none.
inline int32_t find_first_set(uint64_t x) {
  return x == 0 ? 0 : __builtin_ctzll(x) + 1;
}
// __fns (PTX fns.b32): the position of the offset-th set bit of `mask` counting from
// bit `base` towards the top (offset > 0) or the bottom (offset < 0); offset 0 asks
// whether bit `base` itself is set. 0xffffffff when there is none.
inline uint32_t find_nth_set(uint32_t mask, uint32_t base, int32_t offset) {
  if (base > 31) return 0xffffffffu;
  if (offset == 0) return (mask >> base & 1u) ? base : 0xffffffffu;
  int count = offset > 0 ? offset - 1 : -offset - 1;
  const int step = offset > 0 ? 1 : -1;
  for (int pos = int(base); pos >= 0 && pos < 32; pos += step)
    if (mask >> pos & 1u) {
      if (count == 0) return uint32_t(pos);
      --count;
    }
  return 0xffffffffu;
}

}  // namespace tl::lanes
