// T.sync_grid() on the cpu target: every thread of the block arrives (its fibers), the
// last one to arrive meets the other blocks (grid_rendezvous.h), and then all go on.
// A round in which no fiber of the block arrives anywhere, passes a barrier or
// finishes while some wait here is a deadlock (a T.sync_grid() that only some threads
// reach), reported as a failed assertion, as the named barriers do (warp.h).
#pragma once

#include <cstdio>

#include "debug.h"
#include "grid_rendezvous.h"
#include "threads.h"

namespace tl {

inline void sync_grid() {
  FiberScheduler* s = current_scheduler();
  if (!s) {  // one executor runs the block: it alone meets the other blocks
    if (const char* why = grid::arrive_and_wait()) device_assert_fail(why);
    return;
  }
  const uint64_t generation = s->grid_generation;
  ++s->events;
  if (++s->grid_arrived == int(s->contexts.size())) {
    s->grid_arrived = 0;
    // The other fibers of the block are parked at this barrier: blocking their OS
    // thread holds none of them up.
    if (const char* why = grid::arrive_and_wait()) device_assert_fail(why);
    ++s->grid_generation;
    return;
  }
  uint64_t seen = s->events;
  while (s->grid_generation == generation) {
    swapcontext(&s->contexts[s->current], &s->main);
    if (s->grid_generation != generation) break;
    if (s->events == seen) {
      char text[240];
      std::snprintf(text, sizeof text,
                    "T.sync_grid(): only %d of the block's %d threads reached the grid barrier and no other can; "
                    "every thread of every block must call it (not inside a branch that only some take)",
                    s->grid_arrived, int(s->contexts.size()));
      device_assert_fail(text);
      // Release the waiters: the block ends, and its end breaks the other blocks' wait.
      s->grid_arrived = 0;
      ++s->grid_generation;
      break;
    }
    seen = s->events;
  }
}

}  // namespace tl
