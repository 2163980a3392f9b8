// Runs the host compiler as a child process (posix_spawn) and waits for it with a
// timeout (TILELANG_COMPILE_TIMEOUT_SECONDS, default 300).
#include "driver/cpu/host_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "cache/kernel_cache.h"
#include "driver/device_dir.h"
#include "driver/program_source.h"
#include "support/error.h"

extern char** environ;

namespace tl {
namespace fs = std::filesystem;
namespace {

std::string compiler_path() {
  for (const char* var : {"TILELANG_CXX", "CXX"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return "c++";
}

// TILELANG_COMPILE_TIMEOUT_SECONDS, 300 when unset; anything but a whole number of
// seconds from 1 to a day is refused rather than read as 0 (atoi's answer to "abc").
int compile_timeout_seconds() {
  const char* v = std::getenv("TILELANG_COMPILE_TIMEOUT_SECONDS");
  if (!v || !*v) return 300;
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || errno == ERANGE || n < 1 || n > 86400)
    throw_user_error({}, str_cat("TILELANG_COMPILE_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 86400, "
                                 "got '",
                                 v, "'"));
  return int(n);
}

std::vector<std::string> base_flags() {
  return {"-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-w"};
}

// Runs argv, captures stdout+stderr into `output`; returns the exit status or -1 on timeout.
int run(const std::vector<std::string>& argv, std::string& output, int timeout_s) {
  char tmpl[] = "/tmp/tilelang-cc-XXXXXX";
  int fd = mkstemp(tmpl);
  TL_ICHECK(fd >= 0, "cannot create a temporary file for compiler output");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    close(fd);
    unlink(tmpl);
    throw_environment_error(str_cat("cannot run the host C++ compiler '", argv[0],
                                    "' (needed by the cpu target); install g++ or clang++, or set TILELANG_CXX"));
  }
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  close(fd);
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  output = ss.str();
  unlink(tmpl);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// What `<compiler> --version` prints, asked once per process.
const std::string& compiler_version_text() {
  static const std::string text = [] {
    std::string out;
    run({compiler_path(), "--version"}, out, 30);
    return out;
  }();
  return text;
}

}  // namespace

const std::string& host_compiler_id() {
  static const std::string id = [] {
    const std::string& out = compiler_version_text();
    std::string first = out.substr(0, out.find('\n'));
    std::string flags;
    for (const std::string& f : base_flags()) flags += " " + f;
    // -march=native binds the library to this CPU model.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, model;
    while (std::getline(cpuinfo, line))
      if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) model += line;
    return compiler_path() + " | " + first + " |" + flags + " | " + std::to_string(std::hash<std::string>()(model));
  }();
  return id;
}

namespace {

// Runs the host compiler on `source_path` with the base flags and `extra_flags`,
// writing `output_path`; `tail` (-c, or the objects to link) follows the source.
void run_host_compiler(const std::string& source_path, const std::string& output_path,
                       const std::vector<std::string>& extra_flags, const std::vector<std::string>& tail) {
  std::vector<std::string> argv{compiler_path()};
  for (const std::string& f : base_flags()) argv.push_back(f);
  for (const std::string& f : extra_flags) argv.push_back(f);
  argv.push_back("-I" + device_include_dir() + "/cpu");
  // With -g, debug info names the cache entry's final directory, not the staging one.
  std::string dir = fs::path(source_path).parent_path().string(), final_dir = DiskCache::published_dir(dir);
  if (final_dir != dir) argv.push_back("-fdebug-prefix-map=" + dir + "=" + final_dir);
  argv.push_back(source_path);
  for (const std::string& t : tail) argv.push_back(t);
  argv.push_back("-o");
  argv.push_back(output_path);
  int timeout = compile_timeout_seconds();
  std::string output;
  int rc = run(argv, output, timeout);
  if (rc == -1)
    throw_user_error({}, str_cat("compiling ", source_path, " took longer than ", timeout,
                                 " s (TILELANG_COMPILE_TIMEOUT_SECONDS) and was stopped"));
  if (rc == 0) return;
  // The compiler's failures that are the machine's, not the generated code's: the
  // user can fix them, so they are user errors that say what happened and where.
  for (const char* cause : {"No space left on device", "Disk quota exceeded", "Read-only file system",
                            "Permission denied", "Cannot allocate memory", "File too large"}) {
    if (output.find(cause) == std::string::npos) continue;
    // "File too large" (EFBIG): a file passed the process's size limit (ulimit -f).
    const bool size_limit = std::string_view(cause) == "File too large";
    throw_user_error({}, str_cat("the host compiler could not build the kernel in ", dir, ": ", cause,
                                 size_limit ? "; raise the file size limit (ulimit -f)," : "",
                                 size_limit ? " free space there" : "; free space there",
                                 " or point TILELANG_CACHE_DIR (the cache) and TMPDIR (the "
                                 "compiler's scratch files) at a writable directory. The compiler said:\n",
                                 output));
  }
  // A statement of inline PTX the CUDA emulator does not run (driver/cuda/inline_ptx.h
  // turns it into a `#pragma GCC error` that names it).
  if (output.find("error: inline PTX at line ") != std::string::npos) {
    std::string why;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
      if (size_t at = line.find("error: inline PTX at line "); at != std::string::npos) {
        why += '\n';
        why.append(line, at + 7, std::string::npos);
      }
    throw_user_error({}, str_cat("the kernel's inline PTX does not run in the CUDA emulator:", why));
  }
  std::ifstream source(source_path);
  std::stringstream code;
  code << source.rdbuf();
  if (is_program_source(code.str()))
    throw_user_error({}, str_cat("the CUDA source of T.CUDASourceCodeKernel failed to compile (the kernel takes "
                                 "the prim_func's parameters in order, then its dynamic dimensions):\n",
                                 output));
  throw_internal_error(__FILE__, __LINE__, str_cat("generated code failed to compile:\n", output));
}

}  // namespace

bool host_compiler_is_gcc() {
  const std::string& out = compiler_version_text();
  return out.find("Free Software Foundation") != std::string::npos && out.find("clang") == std::string::npos;
}

void compile_shared_library(const std::string& source_path, const std::string& library_path,
                            const std::vector<std::string>& extra_flags, const std::vector<std::string>& objects) {
  std::vector<std::string> tail;
  if (!objects.empty()) {
    tail = {"-x", "none"};  // a -x language among the flags would apply to the objects too
    tail.insert(tail.end(), objects.begin(), objects.end());
  }
  run_host_compiler(source_path, library_path, extra_flags, tail);
}

void compile_object(const std::string& source_path, const std::string& object_path,
                    const std::vector<std::string>& extra_flags) {
  run_host_compiler(source_path, object_path, extra_flags, {"-c"});
}

std::optional<std::string> host_compiler_rejects(const std::vector<std::string>& flags) {
  std::vector<std::string> argv{compiler_path(), "-std=c++17", "-fPIC"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-fsyntax-only", "-x", "c++", "/dev/null"});
  std::string output;
  int rc = run(argv, output, 60);
  if (rc == 0) return std::nullopt;
  return output.empty() ? str_cat(argv[0], " exited with status ", rc) : output;
}

}  // namespace tl
