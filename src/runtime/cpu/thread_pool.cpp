// A launch publishes a ticket (its epoch and a block counter) and the caller
// claims blocks from it like any worker. The launch waits only for blocks that
// were claimed, so one whose blocks the caller ran alone waits for nobody, however
// busy the machine is; a worker that wakes after the blocks ran out, or into a
// later launch, claims nothing and sleeps again. Threads sleep on futexes, not
// condition variables: glibc's pthread_cond_signal may wait for waiters woken
// earlier to get a CPU (its group switch), which would bring back the very wait
// for unscheduled workers this pool avoids.
#include "runtime/cpu/thread_pool.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>

#include "support/error.h"

namespace tl {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");

// Sleeps while word == expected; returns at once when it differs (or spuriously).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>& word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

// How long a launch polls for its last blocks before it sleeps (sleeping and
// being woken costs about as much).
constexpr std::chrono::nanoseconds kSpinTime = std::chrono::microseconds(10);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The block field of a ticket while its launch is being set up: nothing to claim.
constexpr uint32_t kClosed = UINT32_MAX;
// Blocks per launch; larger grids run as several launches.
constexpr int64_t kMaxBlocks = int64_t(UINT32_MAX) - 1;

uint64_t make_ticket(uint32_t epoch, uint32_t block) {
  return uint64_t(epoch) << 32 | block;
}
uint32_t epoch_of(uint64_t ticket) {
  return uint32_t(ticket >> 32);
}
uint32_t block_of(uint64_t ticket) {
  return uint32_t(ticket);
}

// Set while this thread runs a block: a launch from inside a block runs inline,
// since waiting for the pool there could wait for this very thread.
thread_local bool t_in_block = false;

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  wake_seq_.fetch_add(1, std::memory_order_release);
  futex_wake(wake_seq_, INT_MAX);
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || t_in_block) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> lock(launch_mu_);
  fn_ = &fn;
  for (int64_t offset = 0; offset < n; offset += kMaxBlocks) launch(offset, uint32_t(std::min(n - offset, kMaxBlocks)));
}

void ThreadPool::launch(int64_t offset, uint32_t n) {
  // Close the last epoch before n_ changes: a late worker that reads the new n_
  // (acquire) then fails its compare-and-swap on the old epoch.
  uint32_t epoch = epoch_of(ticket_.load(std::memory_order_relaxed)) + 1;
  ticket_.store(make_ticket(epoch, kClosed), std::memory_order_relaxed);
  n_.store(n, std::memory_order_release);
  offset_ = offset;
  finished_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  ticket_.store(make_ticket(epoch, 0), std::memory_order_release);
  // Wake no more workers than there are blocks besides the one the caller takes.
  wake_seq_.fetch_add(1, std::memory_order_release);
  futex_wake(wake_seq_, int(std::min<int64_t>(n - 1, int64_t(workers_.size()))));

  uint32_t size = 0;  // n, as run_blocks saw it
  uint32_t mine = run_blocks(&size);
  // acq_rel/acquire on finished_: every block's writes happen before the return.
  uint32_t done = finished_.fetch_add(mine, std::memory_order_acq_rel) + mine;
  // Blocks still running elsewhere are often short: spin a little before sleeping.
  if (done != n) {
    auto until = std::chrono::steady_clock::now() + kSpinTime;
    while (done != n && std::chrono::steady_clock::now() < until) {
      cpu_relax();
      done = finished_.load(std::memory_order_acquire);
    }
  }
  while (done != n) {
    futex_wait(finished_, done);
    done = finished_.load(std::memory_order_acquire);
  }
  if (error_) std::rethrow_exception(error_);
}

// Claims and runs blocks of the open launch until it has none left. Returns how
// many this thread claimed, and the launch's size in *n. After a failure the
// unclaimed rest is claimed at once and skipped, as a GPU stops a kernel; blocks
// running on other threads finish.
uint32_t ThreadPool::run_blocks(uint32_t* n) {
  uint64_t ticket = ticket_.load(std::memory_order_acquire);
  uint32_t epoch = epoch_of(ticket);
  uint32_t size = *n = n_.load(std::memory_order_acquire);
  uint32_t claimed = 0;
  bool outer = t_in_block;
  t_in_block = true;
  while (epoch_of(ticket) == epoch && block_of(ticket) < size) {
    if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_relaxed)) continue;
    // Holding a block keeps the launch, and with it fn_ and offset_, in place.
    ++claimed;
    try {
      (*fn_)(offset_ + block_of(ticket));
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(error_mu_);
        if (!error_) error_ = std::current_exception();
      }
      uint64_t rest = ticket_.load(std::memory_order_relaxed);
      while (epoch_of(rest) == epoch && block_of(rest) < size) {
        if (ticket_.compare_exchange_weak(rest, make_ticket(epoch, size), std::memory_order_relaxed)) {
          claimed += size - block_of(rest);
          break;
        }
      }
      break;
    }
    ++ticket;  // a guess at the next ticket; a failed exchange reloads it
  }
  t_in_block = outer;
  return claimed;
}

void ThreadPool::work() {
  for (;;) {
    uint32_t seen = wake_seq_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    uint32_t n = 0;
    uint32_t claimed = run_blocks(&n);
    // A worker that claimed nothing leaves no trace: the launch never waited for it.
    if (claimed && finished_.fetch_add(claimed, std::memory_order_acq_rel) + claimed == n) futex_wake(finished_, 1);
    futex_wait(wake_seq_, seen);
  }
}

int cpu_threads_from_env(const char* value, int hardware_threads) {
  if (!value || !*value) return hardware_threads > 1 ? hardware_threads : 1;
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || errno == ERANGE || n < 1 || n > 4096)
    throw_user_error({}, str_cat("TILELANG_CPU_THREADS must be an integer from 1 to 4096 (the threads that run ",
                                 "CPU kernel blocks, the caller included), got '", value, "'"));
  return int(n);
}

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  // Never destroyed: kernels may still run during static teardown.
  static ThreadPool* pool = new ThreadPool(
      cpu_threads_from_env(std::getenv("TILELANG_CPU_THREADS"), int(std::thread::hardware_concurrency())));
  pool->run(n, fn);
}

}  // namespace tl
