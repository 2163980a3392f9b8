// Per-thread execution of a thread block on the CPU, for kernels that read
// thread indices: each thread of the block is a fiber (ucontext), and
// tl::sync_threads() is a barrier between rounds of a round-robin scheduler. A
// round resumes every live fiber once and each runs until its next barrier or its
// end, so no fiber passes a barrier before all others have reached it.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace tl {

// A growable array of trivially copyable values: the part of std::vector the fibers
// use. Every cpu kernel includes this header, and <vector> alone would add about a
// fifth of a second to each kernel's compile.
template <class T>
struct Slots {
  T* items = nullptr;
  size_t count = 0, capacity = 0;

  Slots() = default;
  Slots(const Slots&) = delete;
  Slots& operator=(const Slots&) = delete;
  ~Slots() { std::free(items); }

  size_t size() const { return count; }
  T* data() { return items; }
  T& operator[](size_t i) { return items[i]; }
  const T& operator[](size_t i) const { return items[i]; }
  void reserve(size_t n) {
    if (n <= capacity) return;
    void* p = std::realloc(items, n * sizeof(T));
    if (!p) std::abort();
    items = static_cast<T*>(p);
    capacity = n;
  }
  // Grows or shrinks to n; new items are zero bytes.
  void resize(size_t n) {
    reserve(n);
    if (n > count) std::memset(static_cast<void*>(items + count), 0, (n - count) * sizeof(T));
    count = n;
  }
  void assign(size_t n, const T& value) {
    reserve(n);
    for (size_t i = 0; i < n; ++i) items[i] = value;
    count = n;
  }
  void push_back(const T& value) {
    if (count == capacity) reserve(capacity ? 2 * capacity : 8);
    items[count++] = value;
  }
};

struct FiberScheduler {
  ucontext_t main;
  Slots<ucontext_t> contexts;
  Slots<char> done;
  Slots<int> barriers;  // barriers each fiber has passed (the emulator's race detector reads it)
  // Named barriers (T.sync_threads(id, count), device/cpu/warp.h): fibers arrived in
  // the current generation of each id. `events` counts arrivals, barriers and fibers
  // finished, so a round without any is a deadlock.
  int named_arrived[16] = {};
  uint64_t named_generation[16] = {};
  // The grid barrier (T.sync_grid, device/cpu/grid_sync.h): fibers arrived in its
  // current generation.
  int grid_arrived = 0;
  uint64_t grid_generation = 0;
  uint64_t events = 0;
  int vote = 0;  // the tally of T.syncthreads_count (warp.h)
  int current = 0;
  uint64_t serial = 0;  // distinct for each block an OS thread runs (warp_lanes.h resets its buffers on it)
  void* body = nullptr;
  void (*invoke)(void* body, int tid) = nullptr;
};

inline FiberScheduler*& current_scheduler() {
  static thread_local FiberScheduler* s = nullptr;
  return s;
}

// A number for each block this OS thread runs (not per run_threads instantiation).
inline uint64_t next_block_serial() {
  static thread_local uint64_t blocks_run = 0;
  return ++blocks_run;
}

// Fiber stacks, reused across blocks by each OS worker thread. They are reserved
// with MAP_NORESERVE: only the pages a thread touches cost memory. They go with their
// thread (a cooperative launch runs its blocks on threads of their own).
inline char* fiber_stack(int i, size_t size) {
  struct Stacks {
    Slots<char*> stacks;
    size_t size = 0;
    ~Stacks() {
      for (size_t j = 0; j < stacks.size(); ++j) munmap(stacks[j], size);
    }
  };
  static thread_local Stacks mine;
  mine.size = size;
  while (int(mine.stacks.size()) <= i) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) std::abort();
    mine.stacks.push_back(static_cast<char*>(p));
  }
  return mine.stacks[i];
}

inline void fiber_entry() {
  FiberScheduler* s = current_scheduler();
  int tid = s->current;
  s->invoke(s->body, tid);
  s->done[tid] = 1;
  ++s->events;
}

// The barrier. Outside per-thread execution (one executor per block) it is a no-op.
inline void sync_threads() {
  FiberScheduler* s = current_scheduler();
  if (!s) return;
  ++s->barriers[s->current];
  ++s->events;
  swapcontext(&s->contexts[s->current], &s->main);
}

// Runs body(tx, ty, tz) for every thread of an nx*ny*nz block.
template <class F>
inline void run_threads(int nx, int ny, int nz, F&& body) {
  constexpr size_t kStack = 1 << 20;
  int n = nx * ny * nz;
  FiberScheduler s;
  s.serial = next_block_serial();
  s.contexts.resize(n);
  s.done.assign(n, 0);
  s.barriers.assign(n, 0);
  struct Shape {
    F* f;
    int nx, ny;
  } shape{&body, nx, ny};
  s.body = &shape;
  s.invoke = [](void* p, int tid) {
    Shape* sh = static_cast<Shape*>(p);
    (*sh->f)(tid % sh->nx, (tid / sh->nx) % sh->ny, tid / (sh->nx * sh->ny));
  };
  for (int i = 0; i < n; ++i) {
    getcontext(&s.contexts[i]);
    s.contexts[i].uc_stack.ss_sp = fiber_stack(i, kStack);
    s.contexts[i].uc_stack.ss_size = kStack;
    s.contexts[i].uc_link = &s.main;
    makecontext(&s.contexts[i], fiber_entry, 0);
  }
  FiberScheduler* outer = current_scheduler();
  current_scheduler() = &s;
  for (bool live = true; live;) {
    live = false;
    for (int i = 0; i < n; ++i) {
      if (s.done[i]) continue;
      s.current = i;
      swapcontext(&s.main, &s.contexts[i]);
      live = true;
    }
  }
  current_scheduler() = outer;
}

}  // namespace tl
