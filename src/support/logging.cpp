// The log sink: one global function, guarded so that threads can log.
#include "support/logging.h"

#include <cstdio>
#include <mutex>

namespace tl {
namespace {
std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& sink() {
  static LogSink s;
  return s;
}
}  // namespace

void set_log_sink(LogSink s) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  sink() = std::move(s);
}

void log(LogLevel level, const std::string& message) {
  LogSink s;
  {
    std::lock_guard<std::mutex> lock(sink_mutex());
    s = sink();
  }
  if (s) {
    s(level, message);
    return;
  }
  if (level >= LogLevel::Warning) std::fprintf(stderr, "[tilelang] %s\n", message.c_str());
}

}  // namespace tl
