// Logging from the C++ core. Messages go to a sink that the Python package points
// at its `tilelang` logger; with no sink, warnings and errors go to stderr.
#pragma once

#include <functional>
#include <string>

namespace tl {

enum class LogLevel { Debug = 10, Info = 20, Warning = 30, Error = 40 };

using LogSink = std::function<void(LogLevel, const std::string&)>;
void set_log_sink(LogSink sink);
void log(LogLevel level, const std::string& message);

}  // namespace tl
