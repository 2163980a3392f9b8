// The emulators' runtime entries of the disk cache: built on a miss (the object and
// the precompiled header side by side), hard-linked into a kernel's build directory
// for its compile, checked once per process.
#include "runtime/cpu/emulator_runtime.h"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "cache/kernel_cache.h"
#include "runtime/cpu/host_compiler.h"
#include "support/error.h"
#include "support/logging.h"
#include "support/sha256.h"

namespace tl {
namespace fs = std::filesystem;
namespace {

// The runtime entries this process has checked, by cache root and key: they are not
// checked again (the 50 MB precompiled header costs 0.1 s to hash), unless one went
// away or failed to build a kernel.
std::mutex checked_runtimes_mu;
std::unordered_map<std::string, std::string> checked_runtimes;

// The runtime entry for `flags` and `prelude`, built on a miss: `prelude.h` (the
// shims' header, and `more`), `runtime.o` (the parts of the shims that do not depend
// on the kernel) and, with g++, `prelude.h.gch` (the prelude precompiled). An
// emulated kernel includes the prelude and links the object: its compile takes about
// a fifth of the time it takes against the headers alone. The entry's directory;
// nothing without a disk cache.
std::optional<std::string> emulator_runtime(const CompileOptions& opt, const std::string& identity,
                                            const std::vector<std::string>& flags, const std::string& prelude) {
  if (!opt.use_cache) return std::nullopt;
  std::ostringstream key;
  key << identity << "emulator runtime\nhost compiler: " << host_compiler_id() << "\n";
  for (const std::string& f : flags) key << "flag " << f << "\n";
  key << prelude;
  std::optional<std::string> hash = sha256_hex(key.str());
  if (!hash) return std::nullopt;
  DiskCache disk(opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir);
  const std::string memo = disk.root() + "|" + *hash;
  {
    std::lock_guard<std::mutex> lock(checked_runtimes_mu);
    auto it = checked_runtimes.find(memo);
    std::error_code ec;
    if (it != checked_runtimes.end() && fs::exists(fs::path(it->second) / "runtime.o", ec)) return it->second;
  }
  std::optional<std::string> dir = disk.lookup(*hash);
  if (!dir)
    dir = disk.publish(*hash, [&](const std::string& staging) {
      const fs::path header = fs::path(staging) / "prelude.h", source = fs::path(staging) / "runtime.cpp";
      std::ofstream(header, std::ios::binary) << prelude;
      std::ofstream(source, std::ios::binary) << prelude;
      // g++ falls back to the header when a precompiled one does not match the flags;
      // clang would stop with an error instead, so it gets none. The two compiles run
      // side by side (5.4 and 2.2 s on the CI machine's 2 cores).
      std::exception_ptr header_error;
      std::thread header_compile;
      if (host_compiler_is_gcc()) {
        header_compile = std::thread([&] {
          try {
            std::vector<std::string> header_flags = flags;
            header_flags.insert(header_flags.end(), {"-x", "c++-header"});
            compile_object(header.string(), header.string() + ".gch", header_flags);
          } catch (...) {
            header_error = std::current_exception();
          }
        });
      }
      std::exception_ptr object_error;
      try {
        std::vector<std::string> object_flags = flags;
        object_flags.push_back("-DTL_EMU_RUNTIME_IMPL");
        compile_object(source.string(), (fs::path(staging) / "runtime.o").string(), object_flags);
      } catch (...) {
        object_error = std::current_exception();
      }
      if (header_compile.joinable()) header_compile.join();
      if (object_error) std::rethrow_exception(object_error);
      if (header_error) std::rethrow_exception(header_error);
    });
  if (dir) {
    std::lock_guard<std::mutex> lock(checked_runtimes_mu);
    checked_runtimes[memo] = *dir;
  }
  return dir;
}

}  // namespace

void compile_emulated(const CompileOptions& opt, const std::string& identity, const std::string& dir,
                      const std::string& source, std::vector<std::string> flags, const std::string& header,
                      const std::string& more) {
  for (const std::string& fl : opt.compile_flags) flags.push_back(fl);
  const fs::path d(dir);
  const std::string src = (d / source).string(), lib = (d / "kernel.so").string();
  std::vector<std::string> split = flags;
  split.push_back("-DTL_EMU_RUNTIME_SPLIT");
  if (std::optional<std::string> runtime =
          emulator_runtime(opt, identity, split, "#include \"" + header + "\"\n" + more)) {
    // The entry's files are linked into the kernel's directory for the compile (a
    // concurrent prune may remove the entry), and removed after it.
    const fs::path rt(*runtime);
    std::error_code ec, ignored;
    for (const char* name : {"prelude.h", "runtime.o"}) {
      fs::create_hard_link(rt / name, d / name, ec);
      if (ec) fs::copy_file(rt / name, d / name, fs::copy_options::overwrite_existing, ec);
      if (ec) break;
    }
    bool built = false;
    if (!ec) {
      fs::create_hard_link(rt / "prelude.h.gch", d / "prelude.h.gch", ignored);  // none: the header is read
      split.insert(split.end(), {"-include", (d / "prelude.h").string()});
      try {
        compile_shared_library(src, lib, split, {(d / "runtime.o").string()});
        built = true;
      } catch (const InternalError& e) {
        log(LogLevel::Warning, std::string("the emulator's runtime entry ") + *runtime +
                                   " failed to build a kernel; building it without: " + e.what());
        std::lock_guard<std::mutex> lock(checked_runtimes_mu);
        for (auto it = checked_runtimes.begin(); it != checked_runtimes.end();)
          it = it->second == *runtime ? checked_runtimes.erase(it) : std::next(it);
      }
    }
    for (const char* name : {"prelude.h", "prelude.h.gch", "runtime.o"}) fs::remove(d / name, ignored);
    if (built) return;
  }
  flags.insert(flags.end(), {"-include", header});
  compile_shared_library(src, lib, flags);
}

}  // namespace tl
