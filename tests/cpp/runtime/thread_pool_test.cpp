// ThreadPool: every block runs once and its writes are visible after the launch;
// a launch never waits for a worker that took no block (workers frozen by a
// signal stand for threads the OS has not scheduled); exceptions, nested and
// concurrent launches; TILELANG_CPU_THREADS parsing.
#include "runtime/cpu/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "support/error.h"

namespace tl {
namespace {

// Runs one block on every thread of the pool at once (each block waits until all
// have started, so no thread can take two) and returns the threads' handles.
std::vector<pthread_t> pool_threads(ThreadPool& pool) {
  int n = pool.size();
  std::atomic<int> started{0};
  std::vector<pthread_t> threads(n);
  pool.run(n, [&](int64_t i) {
    threads[i] = pthread_self();
    started.fetch_add(1);
    while (started.load() < n) std::this_thread::yield();
  });
  return threads;
}

TEST(ThreadPool, EveryBlockRunsOnceAndItsWritesAreVisible) {
  ThreadPool pool(4);
  std::mt19937_64 rng(7);
  for (int64_t n : {0, 1, 2, 3, 4, 5, 17, 1000, 4099}) {
    std::vector<int64_t> input(n), out(n, -1);
    for (auto& x : input) x = int64_t(rng() % 1000003);
    std::vector<std::atomic<int>> runs(n);
    pool.run(n, [&](int64_t i) {
      out[i] = input[i] * 3 + 1;  // a plain store: the launch must publish it
      runs[i].fetch_add(1, std::memory_order_relaxed);
    });
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(runs[i].load(), 1) << "block " << i << " of " << n;
      ASSERT_EQ(out[i], input[i] * 3 + 1) << "block " << i << " of " << n;
    }
  }
}

TEST(ThreadPool, AllThreadsTakePartInAWideLaunch) {
  ThreadPool pool(4);
  auto threads = pool_threads(pool);
  std::set<pthread_t> distinct(threads.begin(), threads.end());
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_EQ(threads.size(), 4u);
}

// A frozen thread sits in this handler until the test writes one byte per thread.
int g_thaw_pipe[2];
std::atomic<int> g_frozen{0};
void freeze_handler(int) {
  g_frozen.fetch_add(1);
  char c;
  while (read(g_thaw_pipe[0], &c, 1) != 1) {
  }
  g_frozen.fetch_sub(1);
}

TEST(ThreadPool, LaunchDoesNotWaitForWorkersThatNeverWake) {
  ThreadPool pool(5);
  auto threads = pool_threads(pool);
  ASSERT_EQ(pipe(g_thaw_pipe), 0);
  struct sigaction action = {}, old = {};
  action.sa_handler = freeze_handler;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  pthread_t caller = pthread_self();  // ran one block of pool_threads: not a worker
  int frozen = 0;
  for (pthread_t t : threads) {
    if (pthread_equal(t, caller)) continue;
    ASSERT_EQ(pthread_kill(t, SIGUSR1), 0);
    ++frozen;
  }
  ASSERT_EQ(frozen, 4);
  while (g_frozen.load() < frozen) std::this_thread::yield();

  // Every worker is asleep and cannot wake: the caller runs all blocks and returns.
  // (Launched from another thread so that a pool that waits for the frozen workers
  // fails here instead of hanging: they are thawed after a deadline either way.)
  std::atomic<bool> returned{false};
  bool correct = true;
  std::thread launcher([&] {
    std::mt19937 rng(3);
    for (int launch = 0; launch < 20; ++launch) {
      int64_t n = 2 + int64_t(rng() % 300);
      std::vector<float> in(n), out(n, 0.0f);
      for (auto& x : in) x = float(rng() % 1000) / 7.0f;
      pool.run(n, [&](int64_t i) { out[i] = in[i] * in[i]; });
      for (int64_t i = 0; i < n; ++i) correct = correct && out[i] == in[i] * in[i];
    }
    returned.store(true);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!returned.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bool returned_while_frozen = returned.load();

  // Thawed workers find those launches used up and go back to sleep; the pool
  // keeps working with every thread.
  for (int i = 0; i < frozen; ++i) ASSERT_EQ(write(g_thaw_pipe[1], "x", 1), 1);
  launcher.join();
  while (g_frozen.load() > 0) std::this_thread::yield();
  sigaction(SIGUSR1, &old, nullptr);
  close(g_thaw_pipe[0]);
  close(g_thaw_pipe[1]);
  EXPECT_TRUE(returned_while_frozen) << "a launch waited for workers that never woke";
  EXPECT_TRUE(correct);
  auto again = pool_threads(pool);
  EXPECT_EQ(std::set<pthread_t>(again.begin(), again.end()).size(), 5u);
}

TEST(ThreadPool, FirstExceptionIsRethrownAndLaterBlocksAreSkipped) {
  ThreadPool pool(4);
  for (int round = 0; round < 10; ++round) {
    std::atomic<int64_t> ran{0};
    try {
      pool.run(1000, [&](int64_t i) {
        ran.fetch_add(1);
        if (i == 0) throw std::runtime_error("block 0 failed");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
      FAIL() << "expected the block's exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "block 0 failed");
    }
    // Blocks other threads had begun finish; the rest of the grid is skipped
    // (running it would take some 250 ms on 4 threads).
    EXPECT_LT(ran.load(), 100);
  }
  // Thrown on worker threads (every thread holds one block when they all throw).
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> started{0};
    EXPECT_THROW(pool.run(4,
                          [&](int64_t i) {
                            started.fetch_add(1);
                            while (started.load() < 4) std::this_thread::yield();
                            throw std::out_of_range("block " + std::to_string(i));
                          }),
                 std::out_of_range);
  }
  std::vector<int> out(64, 0);
  pool.run(64, [&](int64_t i) { out[i] = int(i) + 1; });
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], i + 1);
}

TEST(ThreadPool, LaunchFromInsideABlockRunsInline) {
  ThreadPool pool(3);
  std::vector<std::vector<int64_t>> out(8, std::vector<int64_t>(16, 0));
  pool.run(8, [&](int64_t i) { pool.run(16, [&](int64_t j) { out[i][j] = i * 100 + j; }); });
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 16; ++j) EXPECT_EQ(out[i][j], i * 100 + j);
}

TEST(ThreadPool, ConcurrentLaunchesFromSeveralThreads) {
  ThreadPool pool(3);
  auto client = [&pool](int seed) {
    std::mt19937 rng(seed);
    for (int launch = 0; launch < 300; ++launch) {
      int64_t n = 1 + int64_t(rng() % 40);
      std::vector<int64_t> out(n, 0);
      int64_t base = int64_t(rng() % 1000);
      pool.run(n, [&](int64_t i) { out[i] = base + i * i; });
      for (int64_t i = 0; i < n; ++i)
        if (out[i] != base + i * i) return false;
    }
    return true;
  };
  std::vector<std::future<bool>> clients;
  for (int seed = 0; seed < 4; ++seed) clients.push_back(std::async(std::launch::async, client, seed));
  for (auto& c : clients) EXPECT_TRUE(c.get());
}

TEST(ThreadPool, CpuThreadsFromEnv) {
  EXPECT_EQ(cpu_threads_from_env(nullptr, 16), 16);
  EXPECT_EQ(cpu_threads_from_env("", 8), 8);
  EXPECT_EQ(cpu_threads_from_env(nullptr, 0), 1);  // hardware_concurrency() may not know
  EXPECT_EQ(cpu_threads_from_env("3", 16), 3);
  for (const char* bad : {"0", "-2", "four", "4x", "99999"}) {
    try {
      cpu_threads_from_env(bad, 16);
      FAIL() << "accepted TILELANG_CPU_THREADS=" << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("TILELANG_CPU_THREADS must be an integer from 1 to 4096"),
                std::string::npos);
      EXPECT_NE(std::string(e.what()).find(std::string("got '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tl
