// The warp-level helpers of the language (T.shfl_*, T.ballot, T.any_sync, T.all_sync,
// T.activemask, T.sync_warp) on the cpu target, under the names and signatures of
// their CUDA versions (device/cuda/warp.cuh), so the frontend emits one call for both.
// Lanes are fibers; the exchange is warp_lanes.h's.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "debug.h"
#include "warp_lanes.h"

namespace tl {

namespace detail {
// Moves a value of up to 8 bytes through one 64-bit word.
template <class T, class Source>
inline T shuffle_value(T v, Source source) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "warp shuffles move scalars of up to 64 bits");
  uint64_t word = 0;
  std::memcpy(&word, &v, sizeof(T));
  word = lanes::shuffle(word, source);
  T out;
  std::memcpy(&out, &word, sizeof(T));
  return out;
}
}  // namespace detail

// A lane outside `mask` makes the call: reported after the launch, as a failed
// T.device_assert is (device/cpu/debug.h).
inline void check_warp_mask(const char* call, uint32_t mask) {
  if (lanes::in_mask(mask)) return;
  char text[512];
  lanes::describe_mask_error(text, sizeof text, call, mask);
  device_assert_fail(text);
}

template <class T>
inline T shfl_sync(uint32_t mask, T v, int src_lane, int width = 32) {
  check_warp_mask("T.shfl_sync", mask);
  return detail::shuffle_value(v, [&](int lane) { return lanes::source_idx(lane, src_lane, width); });
}
template <class T>
inline T shfl_xor_sync(uint32_t mask, T v, int lane_mask, int width = 32) {
  check_warp_mask("T.shfl_xor", mask);
  return detail::shuffle_value(v, [&](int lane) { return lanes::source_xor(lane, lane_mask, width); });
}
template <class T>
inline T shfl_down_sync(uint32_t mask, T v, int delta, int width = 32) {
  check_warp_mask("T.shfl_down", mask);
  return detail::shuffle_value(v, [&](int lane) { return lanes::source_down(lane, delta, width); });
}
template <class T>
inline T shfl_up_sync(uint32_t mask, T v, int delta, int width = 32) {
  check_warp_mask("T.shfl_up", mask);
  return detail::shuffle_value(v, [&](int lane) { return lanes::source_up(lane, delta, width); });
}

inline uint64_t ballot_sync(uint32_t mask, bool pred) {
  check_warp_mask("T.ballot_sync", mask);
  return lanes::ballot(pred);
}
inline uint64_t ballot(bool pred) {
  return lanes::ballot(pred);
}
inline int32_t any_sync(uint32_t mask, bool pred) {
  check_warp_mask("T.any_sync", mask);
  return lanes::any(pred) ? 1 : 0;
}
inline int32_t all_sync(uint32_t mask, bool pred) {
  check_warp_mask("T.all_sync", mask);
  return lanes::all(pred) ? 1 : 0;
}
inline uint64_t activemask() {
  return lanes::present();
}
// T.__ffs / T.__fns / T.match_any_sync / T.match_all_sync.
inline int32_t find_first_set(uint64_t x) {
  return lanes::find_first_set(x);
}
inline uint32_t find_nth_set(uint32_t mask, uint32_t base, int32_t offset) {
  return lanes::find_nth_set(mask, base, offset);
}
template <class T>
inline uint64_t match_bits(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "matches compare 32- or 64-bit values");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
inline uint32_t match_any_sync(uint32_t mask, T v) {
  check_warp_mask("T.match_any_sync", mask);
  return lanes::match_any(match_bits(v), mask);
}
template <class T>
inline uint32_t match_all_sync(uint32_t mask, T v) {
  check_warp_mask("T.match_all_sync", mask);
  return lanes::match_all(match_bits(v), mask, nullptr);
}
// Lanes of a warp meet here, so shared-memory writes before it are seen after it.
inline void sync_warp(uint32_t mask = 0xffffffffu) {
  check_warp_mask("T.sync_warp", mask);
  lanes::lockstep();
}

// T.syncthreads_count / _and / _or: block barriers that tally a predicate over the
// block's `threads`. The first barrier lets every fiber read the previous tally
// before fiber 0 resets it. One executor stands for every thread (they vote alike).
inline int32_t block_vote(bool pred, int threads) {
  FiberScheduler* s = current_scheduler();
  if (!s) return pred ? threads : 0;
  sync_threads();
  if (s->current == 0) s->vote = 0;
  sync_threads();
  s->vote += pred ? 1 : 0;
  sync_threads();
  return s->vote;
}
inline int32_t syncthreads_count(bool pred, int threads) {
  return block_vote(pred, threads);
}
inline int32_t syncthreads_and(bool pred, int threads) {
  return block_vote(pred, threads) == threads ? 1 : 0;
}
inline int32_t syncthreads_or(bool pred, int threads) {
  return block_vote(pred, threads) != 0 ? 1 : 0;
}

// T.pdl_trigger / T.pdl_sync: grids run one after another here, so nothing to do.
inline void pdl_trigger() {}
inline void pdl_sync() {}

// T.named_barrier_arrive(id, count): one arrival at barrier `id` without waiting; the
// fibers waiting there (named_barrier_sync) go on once `count` have arrived.
inline void named_barrier_arrive(int id, int count) {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  if (id < 1 || id > 15 || count < 1 || count > int(s->contexts.size())) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "T.named_barrier_arrive(%d, %d): the id must be in [1, 15] and the count in [1, %d], the block's "
                  "threads",
                  id, count, int(s->contexts.size()));
    device_assert_fail(text);
    return;
  }
  ++s->events;
  if (++s->named_arrived[id] >= count) {
    s->named_arrived[id] = 0;
    ++s->named_generation[id];
  }
}

// T.sync_threads(id, count): barrier `id` (1-15) of `count` threads, a part of the
// block (TileLang's named barrier, bar.sync on the GPU). A fiber arrives, then yields
// round after round until `count` fibers have arrived at this id; a round in which no
// fiber arrives anywhere, passes a block barrier or finishes is a deadlock (the count
// is more than the threads that reach the barrier), reported as a failed assertion.
inline void named_barrier_sync(int id, int count) {
  FiberScheduler* s = current_scheduler();
  if (!s) return;  // one executor runs the block: nothing to wait for
  if (id < 1 || id > 15 || count < 1 || count > int(s->contexts.size())) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "T.sync_threads(%d, %d): the id must be in [1, 15] and the count in [1, %d], the block's threads", id,
                  count, int(s->contexts.size()));
    device_assert_fail(text);
    return;
  }
  const uint64_t generation = s->named_generation[id];
  ++s->events;
  if (++s->named_arrived[id] >= count) {
    s->named_arrived[id] = 0;
    ++s->named_generation[id];
  }
  uint64_t seen = s->events;
  while (s->named_generation[id] == generation) {
    swapcontext(&s->contexts[s->current], &s->main);
    if (s->named_generation[id] != generation) break;
    if (s->events == seen) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "T.sync_threads(%d, %d): only %d thread(s) reached the barrier and no other can; the count "
                    "must be the number of threads that take it",
                    id, count, s->named_arrived[id]);
      device_assert_fail(text);
      s->named_arrived[id] = 0;
      ++s->named_generation[id];  // release the waiters so the block ends
      break;
    }
    seen = s->events;
  }
}

}  // namespace tl
