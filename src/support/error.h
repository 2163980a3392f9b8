// Two kinds of failure, kept apart on purpose: a UserError is the kernel author's
// mistake and names their source line and the fix (an EnvironmentError, one kind of
// it, is what the machine lacks); an internal check failing is a bug in tilelang and
// says so.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tl {

// A position in the user's kernel source. `file` points at an interned string
// (see intern_file) so spans are cheap to copy and compare.
struct SourceSpan {
  const char* file = nullptr;
  int line = 0;

  bool defined() const { return file != nullptr; }
  std::string str() const;  // "path/kernel.py:12" or "" when undefined
};

// Returns a stable pointer for `path`; equal paths give equal pointers.
const char* intern_file(const std::string& path);

// The source line `span` names, shown under its location as compilers show it:
//     --> path/kernel.py:12:9
//      |
//   12 |         T.copy(A, B)
//      |
// (the column is the line's first character that is not a space); empty when the span
// is undefined or its file cannot be read or has no such line. A UserError shows it
// under the message's first line.
std::string source_snippet(const SourceSpan& span);

// A note to append to an error's message about another place in the source (where a
// buffer was allocated ...): "\nnote: <text>" and that place's snippet.
std::string note_at(const SourceSpan& span, const std::string& text);

class UserError : public std::runtime_error {
 public:
  UserError(SourceSpan span, const std::string& message);
  const SourceSpan& span() const { return span_; }
  const std::string& bare_message() const { return bare_; }

 private:
  SourceSpan span_;
  std::string bare_;
};

// A T.assume over the kernel's scalar arguments and symbolic sizes that a call's
// arguments break (Python: tilelang.AssumptionError, a TileLangError and a RuntimeError).
class AssumptionError : public UserError {
 public:
  using UserError::UserError;
};

// What the machine lacks for a compile or a launch, as opposed to a mistake in the kernel
// or the call: no host C++ compiler for the cpu target, no NVRTC (or one too old for the
// arch) for cuda, no CUDA driver, no device headers (DeviceDirError, tl/device_dir.h), no
// writable temporary directory. The message names what is missing and how to provide it.
// It is a UserError with no source line, so code that catches UserError catches it as
// before; a handler of EnvironmentError placed first tells the two apart.
class EnvironmentError : public UserError {
 public:
  explicit EnvironmentError(const std::string& message) : UserError({}, message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message);
};

[[noreturn]] void throw_user_error(SourceSpan span, const std::string& message);
[[noreturn]] void throw_environment_error(const std::string& message);
[[noreturn]] void throw_internal_error(const char* file, int line, const std::string& message);

// Concatenates anything streamable: str_cat("expected ", n, " got ", m).
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace tl

// A check of an invariant the compiler itself maintains. Failing it is a tilelang bug.
#define TL_ICHECK(cond, ...)                                                                             \
  do {                                                                                                   \
    if (!(cond))                                                                                         \
      ::tl::throw_internal_error(__FILE__, __LINE__,                                                     \
                                 ::tl::str_cat("check failed: " #cond ". " __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

#define TL_UNREACHABLE(msg) ::tl::throw_internal_error(__FILE__, __LINE__, msg)
