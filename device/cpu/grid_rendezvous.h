// The meeting of the blocks at T.sync_grid() on the CPU (the cpu target and the CUDA
// emulator). A cooperative launch runs every block on an OS thread of its own, all at
// once (src/runtime/cpu/cpu_kernel.cpp); a block whose threads have all reached the
// grid barrier blocks its OS thread here until every block has. A block that returns
// while others wait makes the barrier impossible: it is then broken, every waiter and
// every later arrival passes at once with the reason, which the caller reports as a
// failed assertion (a GPU would hang).
#pragma once

#include <pthread.h>

#include <cstdint>
#include <cstdio>

namespace tl::grid {

struct Rendezvous {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  int64_t blocks = 0;  // of the running cooperative launch; 0: none runs
  int64_t arrived = 0, exited = 0;
  uint64_t generation = 0;
  bool broken = false;
  char why[320] = {};
};

// One per kernel library: the runtime runs one cooperative launch of a kernel at a time.
inline Rendezvous& rendezvous() {
  static Rendezvous r;
  return r;
}

// With r.mu held: breaks the barrier when the blocks that returned leave none to
// complete it.
inline void check_broken(Rendezvous& r) {
  if (r.broken || r.exited == 0 || r.arrived == 0 || r.arrived + r.exited < r.blocks) return;
  std::snprintf(r.why, sizeof r.why,
                "T.sync_grid(): %lld of the grid's %lld blocks returned without reaching the grid barrier that "
                "the other %lld wait at; every thread of every block must call T.sync_grid() the same number of "
                "times",
                (long long)r.exited, (long long)r.blocks, (long long)r.arrived);
  r.broken = true;
  pthread_cond_broadcast(&r.cv);
}

// Blocks the calling OS thread (one block, all of whose threads have arrived) until
// every block of the launch has arrived. Returns nullptr, or why the barrier can
// never complete. The mutex orders memory: whatever a block wrote before arriving is
// visible to every block after it passes.
inline const char* arrive_and_wait() {
  Rendezvous& r = rendezvous();
  pthread_mutex_lock(&r.mu);
  const char* failure = nullptr;
  if (r.blocks == 0) {
    failure =
        "T.sync_grid() outside a cooperative launch: this kernel library was launched by a runtime that does not "
        "know the kernel calls it; compile the kernel again";
  } else if (!r.broken) {
    const uint64_t generation = r.generation;
    if (++r.arrived == r.blocks) {
      r.arrived = 0;
      ++r.generation;
      pthread_cond_broadcast(&r.cv);
    } else {
      check_broken(r);
      while (r.generation == generation && !r.broken) pthread_cond_wait(&r.cv, &r.mu);
    }
  }
  if (r.broken) failure = r.why;
  pthread_mutex_unlock(&r.mu);
  return failure;
}

}  // namespace tl::grid

// The runtime's side (src/runtime/cpu/cpu_kernel.cpp): before the blocks of a
// cooperative launch start, after each block returns (or is skipped), and after all.
extern "C" __attribute__((weak, used, visibility("default"))) void tl_grid_begin(int64_t blocks) {
  tl::grid::Rendezvous& r = tl::grid::rendezvous();
  pthread_mutex_lock(&r.mu);
  r.blocks = blocks;
  r.arrived = r.exited = 0;
  r.broken = false;
  pthread_mutex_unlock(&r.mu);
}
extern "C" __attribute__((weak, used, visibility("default"))) void tl_grid_block_exit() {
  tl::grid::Rendezvous& r = tl::grid::rendezvous();
  pthread_mutex_lock(&r.mu);
  ++r.exited;
  tl::grid::check_broken(r);
  pthread_mutex_unlock(&r.mu);
}
extern "C" __attribute__((weak, used, visibility("default"))) void tl_grid_end() {
  tl::grid::Rendezvous& r = tl::grid::rendezvous();
  pthread_mutex_lock(&r.mu);
  r.blocks = 0;
  pthread_mutex_unlock(&r.mu);
}
