// Workers sleep on a condition variable between launches; a launch publishes a
// job and an atomic counter, and each worker (and the caller) takes indices from
// the counter until it runs out.
#include "runtime/cpu/thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace tl {
namespace {

class ThreadPool {
 public:
  ThreadPool() {
    int n = int(std::thread::hardware_concurrency());
    if (const char* e = std::getenv("TILELANG_CPU_THREADS")) n = std::atoi(e);
    if (n < 1) n = 1;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void run(int64_t n, const std::function<void(int64_t)>& fn) {
    if (workers_.empty() || n == 1) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    std::lock_guard<std::mutex> launch(launch_mu_);  // one launch at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      active_ = int(workers_.size());
      ++generation_;
    }
    cv_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return active_ == 0; });
    fn_ = nullptr;
  }

 private:
  void drain() {
    for (int64_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*fn_)(i);
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, launch_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

ThreadPool& pool() {
  static ThreadPool* p = new ThreadPool();  // never destroyed: workers may outlive static teardown
  return *p;
}

}  // namespace

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  pool().run(n, fn);
}

}  // namespace tl
