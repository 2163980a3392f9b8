// A fixed pool of worker threads that runs the blocks of a CPU kernel in
// parallel. TILELANG_CPU_THREADS sets the size of the process-wide pool
// (default: the hardware threads); the calling thread counts as one of them.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tl {

class ThreadPool {
 public:
  // `threads` counts the calling thread: a pool of 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Calls fn(i) for i in [0, n) and returns when every call has finished; their
  // writes are then visible to the caller. The caller runs blocks too, and waits
  // only for workers that took one, never for workers that have yet to wake up.
  // The first exception thrown by fn is rethrown here once the blocks already
  // started have finished; blocks not yet started are skipped. A call from inside
  // fn runs inline; calls from several threads take turns.
  void run(int64_t n, const std::function<void(int64_t)>& fn);

  int size() const { return int(workers_.size()) + 1; }

 private:
  void launch(int64_t offset, uint32_t n);
  uint32_t run_blocks(uint32_t* n);
  void work();

  std::vector<std::thread> workers_;
  std::mutex launch_mu_;  // one launch at a time
  // The launch in progress: its epoch (high half) and next unclaimed block (low
  // half). Workers claim blocks by compare-and-swap within the epoch they saw
  // (epochs wrap after 2^32 launches; a worker would have to sleep through all).
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> n_{0};         // blocks in this launch
  std::atomic<uint32_t> finished_{0};  // claimed blocks done (or skipped); a futex word
  std::atomic<uint32_t> wake_seq_{0};  // bumped per launch; the futex word workers sleep on
  std::atomic<bool> stop_{false};
  // Read only by threads holding a claimed block, which keeps them stable.
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t offset_ = 0;
  std::mutex error_mu_;
  std::exception_ptr error_;  // the first exception a block threw
};

// The pool size TILELANG_CPU_THREADS asks for; `value` is the variable's text
// (null or empty: unset, the hardware threads). Throws a UserError for anything
// but an integer from 1 to 4096.
int cpu_threads_from_env(const char* value, int hardware_threads);

// Runs fn(i) for i in [0, n) on the process-wide pool (see ThreadPool::run).
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace tl
