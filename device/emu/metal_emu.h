// Host-side shims that let the exact Metal Shading Language source of a kernel
// compile as C++20 and run on the CPU (the Metal emulator; the contract with the
// code generator is docs/design/metal.md). Force-included before the source that
// msl_to_emulated_cpp (src/driver/metal_emu_source.h) produced: MSL's address
// spaces and `kernel` become nothing, [[...]] attributes are ignored, the threads of
// a threadgroup are fibers (device/cpu/threads.h), threadgroup_barrier waits for all
// live threads of the threadgroup and simdgroup_barrier and the simd_* collectives
// for the active lanes of one 32-lane simdgroup. A barrier reached at different
// places by different threads is reported as a failure (emu_core.h), not a hang.
// Types and math: metal_types_emu.h; simdgroup matrices and cooperative tensors:
// metal_matrix_emu.h.
#pragma once

#include <algorithm>
#include <cstdio>
#if !__has_builtin(__builtin_COLUMN)
#include <source_location>
#endif

#include "../cpu/atomic.h"
#include "emu_core.h"
#include "metal_types_emu.h"

namespace tl::emu {

#if __has_builtin(__builtin_COLUMN)
#define TL_MSL_COLUMN() __builtin_COLUMN()
#else  // g++: the column through std::source_location, which follows the same rules
#define TL_MSL_COLUMN() int(std::source_location::current().column())
#endif

// Where a barrier or collective was called from: threads meet only at the same
// call site. The shims take `Site at = TL_MSL_SITE(name)` as their last parameter;
// the constructor's own defaults are what give the caller's line (a braced
// initialiser in the default argument would give the shim's line with g++ 12).
struct Site {
  const char* what;
  const char* file;
  int line;
  int column;
  explicit Site(const char* what_, const char* file_ = __builtin_FILE(), int line_ = __builtin_LINE(),
                int column_ = TL_MSL_COLUMN())
      : what(what_), file(file_), line(line_), column(column_) {}
};
#define TL_MSL_SITE(what) ::tl::emu::Site(what)

inline bool same_site(const Site& a, const Site& b) {
  return a.line == b.line && a.column == b.column && std::strcmp(a.file, b.file) == 0;
}
inline std::string site_text(const Site& s) {
  return std::string(s.what) + " at line " + std::to_string(s.line);
}

constexpr int kSimdWidth = 32;

// The synchronisation state of the threadgroup this OS thread runs. A thread is
// running, waiting at a threadgroup barrier, waiting at a simdgroup barrier or
// collective (having published its payload), or finished. Waiters are fibers
// that yield until released; releases happen when the last thread needed
// arrives or finishes:
// - a threadgroup barrier, when every live thread of the threadgroup waits at one;
// - a simdgroup collective, when every live lane of the simdgroup waits (at a
//   threadgroup barrier or a collective): the lanes at the lowest waiting lane's
//   call site take part (MSL's active lanes), and their payloads are copied to
//   the simdgroup's snapshot, which each of them reads after it resumes.
struct GroupSync {
  enum State : uint8_t { kRunning, kAtBarrier, kAtCollective, kFinished };
  int threads = 0, live = 0, at_barrier = 0;
  std::vector<State> state;
  std::vector<Site> site;
  std::vector<std::vector<unsigned char>> payload;  // by thread: what it published
  std::vector<int> sg_live, sg_waiting, sg_collective;
  std::vector<std::vector<unsigned char>> snapshot;  // by simdgroup: 32 payload slots
  std::vector<uint32_t> snapshot_lanes;              // by simdgroup: the lanes that took part
  uint64_t progress = 0;
  bool abandoned = false;

  void reset(int n);  // for a threadgroup of n threads
};
inline GroupSync& group_sync() {
  static thread_local GroupSync g;
  return g;
}

// Unwinds a fiber of a threadgroup given up after a reported failure.
struct Abandon {};

// Defined below, or in the runtime object (emu_core.h, TL_EMU_FN).
TL_EMU_FN void threadgroup_wait(const Site& at);
TL_EMU_FN void finish_thread(GroupSync& g, int me);
struct Exchanged {
  const unsigned char* base;  // slot l: lane l's payload
  uint32_t lanes;
};
TL_EMU_FN Exchanged simd_exchange_bytes(const void* mine, size_t bytes, const Site& at);

#if TL_EMU_DEFINITIONS
TL_EMU_FN void GroupSync::reset(int n) {
  threads = live = n;
  at_barrier = 0;
  state.assign(n, kRunning);
  site.assign(n, Site(""));
  payload.resize(n);
  const int groups = (n + kSimdWidth - 1) / kSimdWidth;
  sg_live.assign(groups, 0);
  for (int g = 0; g < groups; ++g) sg_live[g] = std::min(kSimdWidth, n - g * kSimdWidth);
  sg_waiting.assign(groups, 0);
  sg_collective.assign(groups, 0);
  snapshot.resize(groups);
  snapshot_lanes.assign(groups, 0);
  abandoned = false;
}

inline void release_collective(GroupSync& g, int sg) {
  if (g.sg_collective[sg] == 0 || g.sg_waiting[sg] != g.sg_live[sg]) return;
  const int base = sg * kSimdWidth, end = std::min(base + kSimdWidth, g.threads);
  int first = base;
  while (g.state[first] != GroupSync::kAtCollective) ++first;
  const Site at = g.site[first];
  const size_t bytes = g.payload[first].size();
  std::vector<unsigned char>& snap = g.snapshot[sg];
  if (snap.size() < bytes * kSimdWidth) snap.resize(bytes * kSimdWidth);
  uint32_t lanes = 0;
  for (int r = first; r < end; ++r) {
    if (g.state[r] != GroupSync::kAtCollective || !same_site(g.site[r], at)) continue;
    if (bytes) std::memcpy(snap.data() + size_t(r - base) * bytes, g.payload[r].data(), bytes);
    lanes |= 1u << (r - base);
    g.state[r] = GroupSync::kRunning;
    --g.sg_waiting[sg];
    --g.sg_collective[sg];
  }
  g.snapshot_lanes[sg] = lanes;
  ++g.progress;
}

inline void release_barrier(GroupSync& g) {
  if (g.live == 0 || g.at_barrier != g.live) return;
  int first = 0;
  while (g.state[first] != GroupSync::kAtBarrier) ++first;
  for (int r = first + 1; r < g.threads; ++r) {
    if (g.state[r] != GroupSync::kAtBarrier || same_site(g.site[r], g.site[first])) continue;
    record_failure("threadgroup divergence: thread " + std::to_string(first) + " waits at " + site_text(g.site[first]) +
                   " and thread " + std::to_string(r) + " at " + site_text(g.site[r]) +
                   "; every thread must reach the same threadgroup_barrier");
    g.abandoned = true;
    return;
  }
  FiberScheduler* s = current_scheduler();
  for (int r = first; r < g.threads; ++r) {
    if (g.state[r] != GroupSync::kAtBarrier) continue;
    g.state[r] = GroupSync::kRunning;
    --g.sg_waiting[r / kSimdWidth];
    ++s->barriers[r];  // the race detector's epoch
  }
  g.at_barrier = 0;
  ++g.progress;
}

// Yields until this thread is released. The round-robin scheduler resumes every
// other live fiber between two resumes of this one, so a round without progress
// means nothing can release anybody: reported, never a hang.
inline void wait_for_release(GroupSync& g, FiberScheduler* s, int me) {
  for (;;) {
    if (g.abandoned) throw Abandon{};
    if (g.state[me] == GroupSync::kRunning) return;
    const uint64_t seen = g.progress;
    swapcontext(&s->contexts[me], &s->main);
    if (!g.abandoned && g.state[me] != GroupSync::kRunning && g.progress == seen) {
      record_failure("threadgroup deadlock: thread " + std::to_string(me) + " waits at " + site_text(g.site[me]) +
                     " and no other thread can release it");
      g.abandoned = true;
    }
  }
}

// threadgroup_barrier: all live threads of the threadgroup.
TL_EMU_FN void threadgroup_wait(const Site& at) {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  GroupSync& g = group_sync();
  const int me = s->current, sg = me / kSimdWidth;
  g.state[me] = GroupSync::kAtBarrier;
  g.site[me] = at;
  ++g.at_barrier;
  ++g.sg_waiting[sg];
  ++g.progress;
  release_collective(g, sg);  // lanes of this simdgroup may be waiting at a collective without this one
  release_barrier(g);
  wait_for_release(g, s, me);
}

TL_EMU_FN Exchanged simd_exchange_bytes(const void* mine, size_t bytes, const Site& at) {
  FiberScheduler* s = current_scheduler();
  if (!s) {  // outside a threadgroup run: one lane
    static thread_local std::vector<unsigned char> alone;
    alone.resize(bytes);
    std::memcpy(alone.data(), mine, bytes);
    return {alone.data(), 1u};
  }
  GroupSync& g = group_sync();
  const int me = s->current, sg = me / kSimdWidth;
  g.payload[me].resize(bytes);
  std::memcpy(g.payload[me].data(), mine, bytes);
  g.state[me] = GroupSync::kAtCollective;
  g.site[me] = at;
  ++g.sg_waiting[sg];
  ++g.sg_collective[sg];
  ++g.progress;
  release_collective(g, sg);
  wait_for_release(g, s, me);
  return {g.snapshot[sg].data(), g.snapshot_lanes[sg]};
}

TL_EMU_FN void finish_thread(GroupSync& g, int me) {
  const int sg = me / kSimdWidth;
  g.state[me] = GroupSync::kFinished;
  --g.live;
  --g.sg_live[sg];
  ++g.progress;
  if (g.abandoned) return;
  release_collective(g, sg);
  release_barrier(g);
}
#endif  // TL_EMU_DEFINITIONS

// A simdgroup collective: publishes `mine`, waits for the active lanes of this
// simdgroup at this call site, and returns their payloads (slot l: lane l) and lanes.
template <class T>
struct LaneValues {
  const unsigned char* base;
  uint32_t lanes;
  bool active(int lane) const { return (lanes >> lane) & 1u; }
  T operator[](int lane) const {
    T v;
    std::memcpy(static_cast<void*>(&v), base + size_t(lane) * sizeof(T), sizeof(T));
    return v;
  }
};

template <class T>
inline LaneValues<T> simd_exchange(const T& mine, const Site& at) {
  static_assert(std::is_trivially_copyable_v<T>, "simdgroup collectives move trivially copyable values");
  const Exchanged e = simd_exchange_bytes(&mine, sizeof(T), at);
  return {e.base, e.lanes};
}

inline int simd_lane() {
  return thread_rank() % kSimdWidth;
}
// The lanes the calling thread's simdgroup has (32 unless the threadgroup's size is
// not a multiple of 32).
inline int simd_size() {
  const int rank = thread_rank(), base = rank - rank % kSimdWidth;
  return std::min(kSimdWidth, block_threads() - base);
}
// MSL's [[thread_index_in_simdgroup]], for entries that pass it to the kernel.
inline uint thread_index_in_simdgroup() {
  return uint(simd_lane());
}

// Runs one threadgroup: kernel(uint3 group, uint3 thread, uint simdgroup) for each of
// its nx*ny*nz threads, as fibers on the calling OS thread (docs/design/metal.md).
template <class F>
inline void run_threadgroup(int64_t bx, int64_t by, int64_t bz, int nx, int ny, int nz, F&& kernel) {
  begin_block(bx, by, bz, nx, ny, nz, 0);
  GroupSync& g = group_sync();
  g.reset(nx * ny * nz);
  const metal::uint3 group{uint(bx), uint(by), uint(bz)};
  run_threads(nx, ny, nz, [&](int tx, int ty, int tz) {
    const int me = current_scheduler()->current;
    try {
      kernel(group, metal::uint3{uint(tx), uint(ty), uint(tz)}, uint(me / kSimdWidth));
    } catch (const Abandon&) {
    }
    check_same_values();
    finish_thread(g, me);
  });
}

// printf arguments: 16-bit floats print as double, as float does.
template <class T>
inline auto printf_arg(const T& v) {
  if constexpr (metal::is_float16<T> || std::is_same_v<T, float>)
    return double(float(v));
  else
    return v;
}

}  // namespace tl::emu

namespace metal {

// ---- barriers.
enum mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
inline mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}

// The memory flags do not matter: fibers of one OS thread see each other's writes.
inline void threadgroup_barrier(mem_flags = mem_none, tl::emu::Site at = TL_MSL_SITE("threadgroup_barrier")) {
  tl::emu::threadgroup_wait(at);
}
inline void simdgroup_barrier(mem_flags = mem_none, tl::emu::Site at = TL_MSL_SITE("simdgroup_barrier")) {
  tl::emu::simd_exchange(char(0), at);
  // The race detector's simdgroup epoch (emu_core.h).
  std::vector<int>& epochs = tl::emu::block_state().simd_epochs;
  if (size_t(tl::emu::thread_rank()) < epochs.size()) ++epochs[size_t(tl::emu::thread_rank())];
}

// ---- simdgroup collectives over the active lanes (those at the same call site).
template <class T>
struct Wide {
  using type = T;
};
template <int K>
struct Wide<Float16<K>> {
  using type = float;
};
template <int K, int N>
struct Wide<vec<Float16<K>, N>> {
  using type = vec<float, N>;
};

// Folds the active lanes' values in lane order (16-bit floats in float, rounded once).
template <class T, class Op>
inline T simd_fold(const T& x, const tl::emu::Site& at, Op op, bool before_me_only = false, bool inclusive = true) {
  using W = typename Wide<T>::type;
  auto lanes = tl::emu::simd_exchange(x, at);
  const int me = tl::emu::simd_lane();
  const int end = before_me_only ? (inclusive ? me + 1 : me) : tl::emu::kSimdWidth;
  bool any = false;
  W acc{};
  for (int l = 0; l < end; ++l) {
    if (!lanes.active(l)) continue;
    acc = any ? W(op(acc, W(lanes[l]))) : W(lanes[l]);
    any = true;
  }
  return any ? T(acc) : T(0);
}

#define TL_MSL_FOLD(name, expr)                                                 \
  template <class T>                                                            \
  inline T name(T x, tl::emu::Site at = TL_MSL_SITE(#name)) {                   \
    return simd_fold(x, at, [](const auto& a, const auto& b) { return expr; }); \
  }
TL_MSL_FOLD(simd_sum, a + b)
TL_MSL_FOLD(simd_product, a* b)
TL_MSL_FOLD(simd_max, max(a, b))
TL_MSL_FOLD(simd_min, min(a, b))
TL_MSL_FOLD(simd_and, a& b)
TL_MSL_FOLD(simd_or, a | b)
TL_MSL_FOLD(simd_xor, a ^ b)
#undef TL_MSL_FOLD
template <class T>
inline T simd_prod(T x, tl::emu::Site at = TL_MSL_SITE("simd_prod")) {
  return simd_product(x, at);
}
template <class T>
inline T simd_prefix_inclusive_sum(T x, tl::emu::Site at = TL_MSL_SITE("simd_prefix_inclusive_sum")) {
  return simd_fold(
      x, at, [](const auto& a, const auto& b) { return a + b; }, true, true);
}
template <class T>
inline T simd_prefix_exclusive_sum(T x, tl::emu::Site at = TL_MSL_SITE("simd_prefix_exclusive_sum")) {
  return simd_fold(
      x, at, [](const auto& a, const auto& b) { return a + b; }, true, false);
}

// x of lane src(own lane); an inactive or out-of-range source keeps x.
template <class T, class Source>
inline T simd_take(const T& x, const tl::emu::Site& at, Source src) {
  auto lanes = tl::emu::simd_exchange(x, at);
  const int from = src(tl::emu::simd_lane());
  return from >= 0 && from < tl::emu::kSimdWidth && lanes.active(from) ? lanes[from] : x;
}
template <class T>
inline T simd_shuffle(T x, ushort lane, tl::emu::Site at = TL_MSL_SITE("simd_shuffle")) {
  return simd_take(x, at, [&](int) { return int(lane); });
}
template <class T>
inline T simd_broadcast(T x, ushort lane, tl::emu::Site at = TL_MSL_SITE("simd_broadcast")) {
  return simd_take(x, at, [&](int) { return int(lane); });
}
template <class T>
inline T simd_shuffle_xor(T x, ushort mask, tl::emu::Site at = TL_MSL_SITE("simd_shuffle_xor")) {
  return simd_take(x, at, [&](int l) { return l ^ int(mask); });
}
// Lanes whose source lies past the simdgroup keep their value (MSL).
template <class T>
inline T simd_shuffle_down(T x, ushort delta, tl::emu::Site at = TL_MSL_SITE("simd_shuffle_down")) {
  return simd_take(x, at, [&](int l) { return l + int(delta); });
}
template <class T>
inline T simd_shuffle_up(T x, ushort delta, tl::emu::Site at = TL_MSL_SITE("simd_shuffle_up")) {
  return simd_take(x, at, [&](int l) { return l - int(delta); });
}
template <class T>
inline T simd_shuffle_rotate_down(T x, ushort delta, tl::emu::Site at = TL_MSL_SITE("simd_shuffle_rotate_down")) {
  return simd_take(x, at, [&](int l) { return (l + int(delta)) % tl::emu::kSimdWidth; });
}
template <class T>
inline T simd_shuffle_rotate_up(T x, ushort delta, tl::emu::Site at = TL_MSL_SITE("simd_shuffle_rotate_up")) {
  return simd_take(x, at, [&](int l) { return ((l - int(delta)) % 32 + 32) % tl::emu::kSimdWidth; });
}
template <class T>
inline T simd_broadcast_first(T x, tl::emu::Site at = TL_MSL_SITE("simd_broadcast_first")) {
  auto lanes = tl::emu::simd_exchange(x, at);
  return lanes[__builtin_ctz(lanes.lanes)];
}

// Votes: the active lanes' predicates as a 64-bit mask (MSL's simd_vote).
struct simd_vote {
  using vote_t = ulong;
  vote_t v = 0;
  explicit simd_vote(vote_t bits = 0) : v(bits) {}
  explicit operator vote_t() const { return v; }
  bool all() const { return v == active; }
  bool any() const { return v != 0; }
  vote_t active = 0;
};
inline simd_vote simd_ballot(bool pred, tl::emu::Site at = TL_MSL_SITE("simd_ballot")) {
  auto lanes = tl::emu::simd_exchange(pred, at);
  simd_vote vote;
  for (int l = 0; l < tl::emu::kSimdWidth; ++l)
    if (lanes.active(l) && lanes[l]) vote.v |= ulong(1) << l;
  vote.active = lanes.lanes;
  return vote;
}
inline simd_vote simd_active_threads_mask(tl::emu::Site at = TL_MSL_SITE("simd_active_threads_mask")) {
  return simd_ballot(true, at);
}
inline bool simd_all(bool pred, tl::emu::Site at = TL_MSL_SITE("simd_all")) {
  return simd_ballot(pred, at).all();
}
inline bool simd_any(bool pred, tl::emu::Site at = TL_MSL_SITE("simd_any")) {
  return simd_ballot(pred, at).any();
}
inline bool simd_is_first(tl::emu::Site at = TL_MSL_SITE("simd_is_first")) {
  auto lanes = tl::emu::simd_exchange(true, at);
  return __builtin_ctz(lanes.lanes) == tl::emu::simd_lane();
}

// ---- atomics: atomic<T> is T's storage, so `device atomic_int*` may point into an
// int buffer. Blocks run on parallel OS threads: these are real atomics
// (device/cpu/atomic.h), sequentially consistent whatever order is named.
template <class T>
struct atomic {
  T value;
};
using atomic_int = atomic<int>;
using atomic_uint = atomic<uint>;
using atomic_bool = atomic<bool>;
using atomic_ulong = atomic<ulong>;
using atomic_long = atomic<long>;
using atomic_float = atomic<float>;

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };

template <class T>
inline T* atomic_storage(volatile atomic<T>* obj) {
  return const_cast<T*>(&obj->value);
}

template <class T, class V>
inline void atomic_store_explicit(volatile atomic<T>* obj, V desired, memory_order = memory_order_relaxed) {
  tl::atomic_store<__ATOMIC_SEQ_CST>(atomic_storage(obj), T(desired));
}
template <class T>
inline T atomic_load_explicit(volatile atomic<T>* obj, memory_order = memory_order_relaxed) {
  return tl::atomic_load<__ATOMIC_SEQ_CST>(atomic_storage(obj));
}
template <class T>
inline T atomic_load_explicit(const volatile atomic<T>* obj, memory_order = memory_order_relaxed) {
  return tl::atomic_load<__ATOMIC_SEQ_CST>(const_cast<const T*>(&obj->value));
}
template <class T, class V>
inline T atomic_exchange_explicit(volatile atomic<T>* obj, V desired, memory_order = memory_order_relaxed) {
  T v = T(desired);
  return tl::atomic_detail::update<__ATOMIC_SEQ_CST>(atomic_storage(obj), [&](T) { return v; });
}
// Strong (never fails spuriously), which the weak form allows.
template <class T, class V>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* obj, T* expected, V desired,
                                                  memory_order = memory_order_relaxed,
                                                  memory_order = memory_order_relaxed) {
  using Bits = typename tl::atomic_detail::UIntOf<sizeof(T)>::type;
  Bits want = tl::bit_cast<Bits>(*expected), next = tl::bit_cast<Bits>(T(desired));
  const bool ok = __atomic_compare_exchange_n(reinterpret_cast<Bits*>(atomic_storage(obj)), &want, next, false,
                                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  if (!ok) *expected = tl::bit_cast<T>(want);
  return ok;
}
template <class T, class V>
inline bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* obj, T* expected, V desired,
                                                    memory_order s = memory_order_relaxed,
                                                    memory_order f = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(obj, expected, desired, s, f);
}
template <class T, class V>
inline T atomic_fetch_add_explicit(volatile atomic<T>* obj, V v, memory_order = memory_order_relaxed) {
  return tl::atomic_add<__ATOMIC_SEQ_CST>(atomic_storage(obj), T(v));
}
template <class T, class V>
inline T atomic_fetch_sub_explicit(volatile atomic<T>* obj, V v, memory_order = memory_order_relaxed) {
  return tl::atomic_add<__ATOMIC_SEQ_CST>(atomic_storage(obj), T(-T(v)));
}
template <class T, class V>
inline T atomic_fetch_max_explicit(volatile atomic<T>* obj, V v, memory_order = memory_order_relaxed) {
  return tl::atomic_max<__ATOMIC_SEQ_CST>(atomic_storage(obj), T(v));
}
template <class T, class V>
inline T atomic_fetch_min_explicit(volatile atomic<T>* obj, V v, memory_order = memory_order_relaxed) {
  return tl::atomic_min<__ATOMIC_SEQ_CST>(atomic_storage(obj), T(v));
}
#define TL_MSL_ATOMIC_BITS(name, expr)                                                                       \
  template <class T, class V>                                                                                \
  inline T name(volatile atomic<T>* obj, V v, memory_order = memory_order_relaxed) {                         \
    static_assert(std::is_integral_v<T>, #name " needs an integer atomic");                                  \
    T operand = T(v);                                                                                        \
    return tl::atomic_detail::update<__ATOMIC_SEQ_CST>(atomic_storage(obj), [&](T old) { return T(expr); }); \
  }
TL_MSL_ATOMIC_BITS(atomic_fetch_and_explicit, old& operand)
TL_MSL_ATOMIC_BITS(atomic_fetch_or_explicit, old | operand)
TL_MSL_ATOMIC_BITS(atomic_fetch_xor_explicit, old ^ operand)
#undef TL_MSL_ATOMIC_BITS
inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope_device) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

// ---- printing: printf passes through (16-bit floats print as double), and
// Metal 3.2's os_log prints the same way, one line per call.
template <class... A>
inline int printf(const char* format, const A&... args) {
  const int n = std::printf(format, tl::emu::printf_arg(args)...);
  std::fflush(stdout);
  return n;
}
struct os_log {
  template <class... A>
  void log(const char* format, const A&... args) const {
    metal::printf(format, args...);
    std::printf("\n");
    std::fflush(stdout);
  }
  template <class... A>
  void log_info(const char* format, const A&... args) const {
    log(format, args...);
  }
  template <class... A>
  void log_debug(const char* format, const A&... args) const {
    log(format, args...);
  }
  template <class... A>
  void log_error(const char* format, const A&... args) const {
    log(format, args...);
  }
  template <class... A>
  void log_fault(const char* format, const A&... args) const {
    log(format, args...);
  }
};
inline const os_log os_log_default{};

}  // namespace metal

#include "metal_matrix_emu.h"

// MSL's address spaces and function qualifier. Defined last: the standard headers
// above use these words themselves (std::thread).
#define kernel
#define device
#define constant
#define thread
#define threadgroup
