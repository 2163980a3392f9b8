// Error types and the file-name interning behind SourceSpan.
#include "support/error.h"

#include <mutex>
#include <unordered_set>

namespace tl {

const char* intern_file(const std::string& path) {
  static std::mutex mu;
  static std::unordered_set<std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  return names.insert(path).first->c_str();
}

std::string SourceSpan::str() const {
  if (!defined()) return "";
  return str_cat(file, ":", line);
}

static std::string with_span(const SourceSpan& span, const std::string& message) {
  if (!span.defined()) return message;
  return span.str() + ": " + message;
}

UserError::UserError(SourceSpan span, const std::string& message)
    : std::runtime_error(with_span(span, message)), span_(span), bare_(message) {}

InternalError::InternalError(const std::string& message)
    : std::logic_error("internal compiler error (a bug in tilelang, please report it): " + message) {}

void throw_user_error(SourceSpan span, const std::string& message) {
  throw UserError(span, message);
}

void throw_environment_error(const std::string& message) {
  throw EnvironmentError(message);
}

// The source file as the repository names it ("src/ir/op.cpp"), whatever path the
// build machine compiled it from: a bug report needs the file, not the build tree.
static std::string repository_path(const char* file) {
  std::string f(file);
  size_t at = f.rfind("/src/");
  if (at != std::string::npos) return f.substr(at + 1);
  while (f.rfind("../", 0) == 0) f.erase(0, 3);
  return f;
}

void throw_internal_error(const char* file, int line, const std::string& message) {
  throw InternalError(str_cat(message, " [", repository_path(file), ":", line, "]"));
}

}  // namespace tl
