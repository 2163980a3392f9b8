// T.print and T.device_assert for CPU kernels. Printed lines carry the block and
// thread index and are written whole and flushed (blocks run in parallel on OS
// threads, and tests read stdout). A failed assertion is recorded here, not
// aborted on: the runtime reads the record after the launch (tl_debug_take_assert)
// and raises it in Python, because abort() would kill the host process.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "threads.h"
#include "types.h"

namespace tl {
namespace debug {

// One lock for all printing of this kernel library, so lines never interleave. A
// pthread mutex: <mutex> would add about a third of a second to every kernel's compile.
static pthread_mutex_t g_print_mutex = PTHREAD_MUTEX_INITIALIZER;
struct PrintLock {
  PrintLock() { pthread_mutex_lock(&g_print_mutex); }
  ~PrintLock() { pthread_mutex_unlock(&g_print_mutex); }
  PrintLock(const PrintLock&) = delete;
  PrintLock& operator=(const PrintLock&) = delete;
};
// The block this OS thread runs (set by the runtime through tl_debug_begin_block).
static thread_local int64_t g_block[3];

struct AssertRecord {
  std::atomic<int> state{0};  // 0 none, 1 being written, 2 recorded
  char message[1024];
  int64_t block[3];
};
static AssertRecord g_assert;

// The linear thread id under per-thread execution (fibers); 0 when one executor
// runs the whole block, which then stands for thread 0.
inline int64_t linear_thread_id() {
  FiberScheduler* s = current_scheduler();
  return s ? s->current : 0;
}

inline int prefix(char* buf, size_t n, int64_t bx, int64_t by, int64_t bz, int64_t nx, int64_t ny) {
  int64_t t = linear_thread_id();
  return std::snprintf(buf, n, "[block (%lld, %lld, %lld), thread (%lld, %lld, %lld)]", (long long)bx, (long long)by,
                       (long long)bz, (long long)(t % nx), (long long)(t / nx % ny), (long long)(t / (nx * ny)));
}

// Shortest "%.*g" text that reads back as the same value of the value's own type.
template <class T>
inline void format_float(char* buf, size_t n, T v, int max_digits) {
  float f = float(v);
  if (std::isnan(f)) {
    std::snprintf(buf, n, "nan");
    return;
  }
  for (int digits = 1; digits < max_digits; ++digits) {
    std::snprintf(buf, n, "%.*g", digits, double(f));
    if (T(std::strtof(buf, nullptr)).bits == v.bits) return;
  }
  std::snprintf(buf, n, "%.*g", max_digits, double(f));
}
inline void format_float(char* buf, size_t n, float v, int) {
  if (std::isnan(v)) {
    std::snprintf(buf, n, "nan");
    return;
  }
  for (int digits = 1; digits < 9; ++digits) {
    std::snprintf(buf, n, "%.*g", digits, double(v));
    if (std::strtof(buf, nullptr) == v) return;
  }
  std::snprintf(buf, n, "%.9g", double(v));
}
inline void format_float(char* buf, size_t n, double v, int) {
  if (std::isnan(v)) {
    std::snprintf(buf, n, "nan");
    return;
  }
  for (int digits = 1; digits < 17; ++digits) {
    std::snprintf(buf, n, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) return;
  }
  std::snprintf(buf, n, "%.17g", v);
}

template <class T>
inline void format_value(char* buf, size_t n, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    std::snprintf(buf, n, "%s", v ? "True" : "False");
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    std::snprintf(buf, n, "%lld", (long long)v);
  } else if constexpr (std::is_integral_v<T>) {
    std::snprintf(buf, n, "%llu", (unsigned long long)v);
  } else {
    format_float(buf, n, v, 9);
  }
}

// Whether this executor prints the buffer now being printed (only thread 0 does).
static thread_local bool g_buffer_printing = false;

}  // namespace debug

// T.print(expr): one line per executing thread.
template <class T>
inline void debug_print_value(const char* msg, int64_t bx, int64_t by, int64_t bz, int64_t nx, int64_t ny, T value) {
  char head[160], text[64];
  debug::prefix(head, sizeof head, bx, by, bz, nx, ny);
  debug::format_value(text, sizeof text, value);
  debug::PrintLock lock;
  std::printf("%s %s: %s\n", head, msg, text);
  std::fflush(stdout);
}

// T.print(msg=...) without a value.
inline void debug_print_msg(const char* msg, int64_t bx, int64_t by, int64_t bz, int64_t nx, int64_t ny) {
  char head[160];
  debug::prefix(head, sizeof head, bx, by, bz, nx, ny);
  debug::PrintLock lock;
  std::printf("%s %s\n", head, msg);
  std::fflush(stdout);
}

// T.print(buffer): begin, then per row a row header and its elements, then end.
// Thread 0 alone prints; the lock is held from begin to end so the tile stays whole.
inline void debug_print_buffer_begin(const char* header, int64_t bx, int64_t by, int64_t bz, int64_t nx, int64_t ny) {
  debug::g_buffer_printing = debug::linear_thread_id() == 0;
  if (!debug::g_buffer_printing) return;
  pthread_mutex_lock(&debug::g_print_mutex);
  char head[160];
  debug::prefix(head, sizeof head, bx, by, bz, nx, ny);
  std::printf("%s %s", head, header);
}
// One row: "  name[i, j, last] =", `last` the text of the last dimension's range.
template <class... Index>
inline void debug_print_buffer_row(const char* name, const char* last, Index... index) {
  if (!debug::g_buffer_printing) return;
  std::printf("\n  %s[", name);
  ((std::printf("%lld, ", (long long)index)), ...);
  std::printf("%s] =", last);
}
template <class T>
inline void debug_print_buffer_elem(T value) {
  if (!debug::g_buffer_printing) return;
  char text[64];
  debug::format_value(text, sizeof text, value);
  std::printf(" %s", text);
}
inline void debug_print_buffer_end() {
  if (!debug::g_buffer_printing) return;
  std::printf("\n");
  std::fflush(stdout);
  debug::g_buffer_printing = false;
  pthread_mutex_unlock(&debug::g_print_mutex);
}

// The Print intrinsic's form: a message and one value as double.
inline void print_value(const char* msg, int64_t bx, int64_t by, int64_t bz, double v) {
  debug_print_value(msg, bx, by, bz, 1, 1, v);
}

// A failed T.device_assert: the first failure of a launch is kept; the block goes on
// (a GPU would stop the kernel; later blocks are skipped by the runtime).
inline void device_assert_fail(const char* msg) {
  int expected = 0;
  if (!debug::g_assert.state.compare_exchange_strong(expected, 1)) return;
  std::snprintf(debug::g_assert.message, sizeof debug::g_assert.message, "%s", msg);
  for (int i = 0; i < 3; ++i) debug::g_assert.block[i] = debug::g_block[i];
  debug::g_assert.state.store(2, std::memory_order_release);
}

}  // namespace tl

// Called by the runtime before each block: records the block index and returns
// nonzero when an assertion already failed in this launch (the block is skipped).
extern "C" __attribute__((weak, used, visibility("default"))) int tl_debug_begin_block(int64_t bx, int64_t by,
                                                                                       int64_t bz) {
  tl::debug::g_block[0] = bx;
  tl::debug::g_block[1] = by;
  tl::debug::g_block[2] = bz;
  return tl::debug::g_assert.state.load(std::memory_order_acquire) != 0;
}

// Called by the runtime after a launch: copies out and clears the recorded failure.
// Returns 1 when there was one.
extern "C" __attribute__((weak, used, visibility("default"))) int tl_debug_take_assert(char* message, int64_t capacity,
                                                                                       int64_t* block) {
  if (tl::debug::g_assert.state.load(std::memory_order_acquire) != 2) return 0;
  std::snprintf(message, size_t(capacity), "%s", tl::debug::g_assert.message);
  for (int i = 0; i < 3; ++i) block[i] = tl::debug::g_assert.block[i];
  tl::debug::g_assert.state.store(0, std::memory_order_release);
  return 1;
}
