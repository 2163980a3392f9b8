// A fixed pool of worker threads that runs the blocks of a CPU kernel in
// parallel. TILELANG_CPU_THREADS sets its size (default: the hardware threads).
#pragma once

#include <cstdint>
#include <functional>

namespace tl {

// Calls fn(i) for i in [0, n) across the pool and returns when all are done.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace tl
