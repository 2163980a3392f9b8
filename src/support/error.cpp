// Error types and the file-name interning behind SourceSpan.
#include "support/error.h"

#include <fstream>
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

std::string source_snippet(const SourceSpan& span) {
  if (!span.defined() || span.line < 1) return "";
  std::ifstream in(span.file);
  std::string text;
  int read = 0;
  while (read < span.line && std::getline(in, text)) ++read;
  if (read != span.line) return "";
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) text.pop_back();
  size_t col = text.find_first_not_of(" \t");
  if (col == std::string::npos) return "";
  std::string number = std::to_string(span.line);
  std::string pad(number.size(), ' ');
  return str_cat(pad, "--> ", span.file, ":", span.line, ":", col + 1, "\n", pad, " |\n", number, " | ", text, "\n",
                 pad, " |");
}

std::string note_at(const SourceSpan& span, const std::string& text) {
  std::string snippet = source_snippet(span);
  if (!snippet.empty()) return str_cat("\nnote: ", text, "\n", snippet);
  return span.defined() ? str_cat("\nnote: ", text, " (", span.str(), ")") : std::string();
}

// "path:line: <first line of message>", the line's snippet, then the message's other
// lines (its notes).
static std::string with_span(const SourceSpan& span, const std::string& message) {
  if (!span.defined()) return message;
  std::string snippet = source_snippet(span);
  if (snippet.empty()) return span.str() + ": " + message;
  size_t end = message.find('\n');
  if (end == std::string::npos) return str_cat(span.str(), ": ", message, "\n", snippet);
  return str_cat(span.str(), ": ", message.substr(0, end), "\n", snippet, message.substr(end));
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
