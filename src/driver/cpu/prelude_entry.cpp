// The prelude entries of the disk cache: built on a miss (the precompiled header and
// the emulators' object side by side), hard-linked into a kernel's build directory
// for its compile, checked once per process.
#include "driver/cpu/prelude_entry.h"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "cache/kernel_cache.h"
#include "driver/compile_flags.h"
#include "driver/cpu/host_compiler.h"
#include "runtime/artifact.h"
#include "support/error.h"
#include "support/logging.h"
#include "support/sha256.h"

namespace tl {
namespace fs = std::filesystem;
namespace {

// The prelude entries this process has checked, by cache root and key: they are not
// checked again (a 50 MB precompiled header costs 0.1 s to hash), unless one went
// away or failed to build a kernel.
std::mutex checked_entries_mu;
std::unordered_map<std::string, std::string> checked_entries;

// The prelude entry for `flags` and `prelude`, built on a miss: `prelude.h`, with g++
// `prelude.h.gch` (the prelude precompiled) and with `object` `runtime.o` (the
// emulators' shims compiled with TL_EMU_RUNTIME_IMPL). A kernel force-includes the
// prelude (and links the object): an emulated kernel compiles in about a fifth of the
// time it takes against the headers alone, a cpu-target one in about half. The
// entry's directory; nothing without a disk cache, or when it would hold nothing a
// kernel can use (no object, and a compiler that gets no precompiled header).
std::optional<std::string> prelude_entry(const CompileOptions& opt, const std::string& identity,
                                         const std::vector<std::string>& flags, const std::string& prelude,
                                         bool object) {
  const bool gcc = host_compiler_is_gcc();
  if (!opt.use_cache || (!object && !gcc)) return std::nullopt;
  std::ostringstream key;
  key << identity << (object ? "emulator runtime" : "precompiled prelude") << "\nhost compiler: " << host_compiler_id()
      << "\n";
  for (const std::string& f : flags) key << "flag " << f << "\n";
  key << prelude;
  std::optional<std::string> hash = sha256_hex(key.str());
  if (!hash) return std::nullopt;
  DiskCache disk(opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir);
  const std::string memo = disk.root() + "|" + *hash;
  const char* const product = object ? "runtime.o" : "prelude.h.gch";
  {
    std::lock_guard<std::mutex> lock(checked_entries_mu);
    auto it = checked_entries.find(memo);
    std::error_code ec;
    if (it != checked_entries.end() && fs::exists(fs::path(it->second) / product, ec)) {
      // Used again: the disk cache's least-recently-used pruning must see it so.
      fs::last_write_time(it->second, fs::file_time_type::clock::now(), ec);
      return it->second;
    }
  }
  std::optional<std::string> dir = disk.lookup(*hash);
  if (!dir)
    dir = disk.publish(*hash, [&](const std::string& staging) {
      const fs::path header = fs::path(staging) / "prelude.h", source = fs::path(staging) / "runtime.cpp";
      write_build_file(header, prelude);
      // g++ falls back to the header when a precompiled one does not match the flags;
      // clang would stop with an error instead, so it gets none. The two compiles run
      // side by side (5.4 and 2.2 s for the CUDA emulator on the CI machine's 2 cores).
      std::exception_ptr header_error;
      std::thread header_compile;
      if (gcc) {
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
      if (object) {
        try {
          write_build_file(source, prelude);
          std::vector<std::string> object_flags = flags;
          object_flags.push_back("-DTL_EMU_RUNTIME_IMPL");
          compile_object(source.string(), (fs::path(staging) / "runtime.o").string(), object_flags);
        } catch (...) {
          object_error = std::current_exception();
        }
      }
      if (header_compile.joinable()) header_compile.join();
      if (object_error) std::rethrow_exception(object_error);
      if (header_error) std::rethrow_exception(header_error);
    });
  if (dir) {
    std::lock_guard<std::mutex> lock(checked_entries_mu);
    checked_entries[memo] = *dir;
  }
  return dir;
}

// prelude_entry, or nothing, with a warning, when building the entry failed (a flag
// the precompiled header refuses, a full disk): the kernel is then compiled against
// the headers alone, and a compiler error is the kernel's own.
std::optional<std::string> entry_or_warn(const CompileOptions& opt, const std::string& identity,
                                         const std::vector<std::string>& flags, const std::string& prelude,
                                         bool object) {
  try {
    return prelude_entry(opt, identity, flags, prelude, object);
  } catch (const std::exception& e) {
    log(LogLevel::Warning, std::string("building the host compiler's prelude entry failed; compiling against the "
                                       "headers alone: ") +
                               e.what());
    return std::nullopt;
  }
}

// Compiles dir/`source` into dir/kernel.so with `flags`, force-including the prelude
// of `entry` (and linking its object, with `object`). The entry's files are linked
// into the kernel's directory for the compile (a concurrent prune may remove the
// entry) and removed after it. Empty when it built, else the compiler's message:
// the caller then compiles without the entry (fallback_compile).
std::string compile_with_entry(const std::string& entry, const std::string& dir, const std::string& source,
                               std::vector<std::string> flags, bool object) {
  const fs::path rt(entry), d(dir);
  std::error_code ec, ignored;
  std::vector<const char*> names{"prelude.h", "prelude.h.gch"};
  if (object) names.push_back("runtime.o");
  for (const char* name : names) {
    fs::create_hard_link(rt / name, d / name, ec);
    if (ec && std::string(name) == "prelude.h.gch") {
      ec.clear();  // none (clang): the header is read
      continue;
    }
    if (ec) fs::copy_file(rt / name, d / name, fs::copy_options::overwrite_existing, ec);
    if (ec) break;
  }
  std::string failure = ec ? "its files could not be linked into " + dir + ": " + ec.message() : "";
  if (!ec) {
    flags.insert(flags.end(), {"-include", (d / "prelude.h").string()});
    std::vector<std::string> objects;
    if (object) objects.push_back((d / "runtime.o").string());
    try {
      compile_shared_library((d / source).string(), (d / "kernel.so").string(), flags, objects);
    } catch (const InternalError& e) {
      failure = e.what();
    }
  }
  for (const char* name : {"prelude.h", "prelude.h.gch", "runtime.o"}) fs::remove(d / name, ignored);
  return failure;
}

// After a compile with `entry` failed with `failure`: compiles without the entry.
// When that fails too, the kernel's own source is at fault and its error alone is
// raised; when it builds, the entry was, and it is named in a warning and checked
// again on its next use.
void fallback_compile(const std::string& entry, const std::string& failure, const std::string& dir,
                      const std::string& source, const std::vector<std::string>& flags) {
  compile_shared_library((fs::path(dir) / source).string(), (fs::path(dir) / "kernel.so").string(), flags);
  log(LogLevel::Warning,
      "the prelude entry " + entry + " failed to build a kernel, which built without it: " + failure);
  std::lock_guard<std::mutex> lock(checked_entries_mu);
  for (auto it = checked_entries.begin(); it != checked_entries.end();)
    it = it->second == entry ? checked_entries.erase(it) : std::next(it);
}

// The user's compile_flags in the host compiler's terms (driver/compile_flags.h),
// checked with the compiler; what was dropped goes to the debug log.
std::vector<std::string> host_flags(const CompileOptions& opt) {
  TranslatedFlags t = translate_compile_flags(opt.compile_flags, FlagCompiler::Host, opt.target);
  verify_compile_flags(t, FlagCompiler::Host, opt.target);
  return t.flags;
}

// The emulator's flags and the user's (host_flags); with `split`, for the runtime split.
std::vector<std::string> emulator_flags(const std::vector<std::string>& user, const EmulatorBuild& b, bool split) {
  std::vector<std::string> flags = b.flags;
  flags.insert(flags.end(), user.begin(), user.end());
  if (split) flags.push_back("-DTL_EMU_RUNTIME_SPLIT");
  return flags;
}

std::string emulator_prelude(const EmulatorBuild& b) {
  return "#include \"" + b.header + "\"\n" + b.more;
}

const char* const kCpuPrelude = "#include \"tl_cpu.h\"\n";

}  // namespace

void prepare_emulated(const CompileOptions& opt, const std::string& identity, const EmulatorBuild& build) {
  entry_or_warn(opt, identity, emulator_flags(host_flags(opt), build, true), emulator_prelude(build), true);
}

void prepare_cpu(const CompileOptions& opt, const std::string& identity) {
  entry_or_warn(opt, identity, host_flags(opt), kCpuPrelude, false);
}

void compile_emulated(const CompileOptions& opt, const std::string& identity, const std::string& dir,
                      const std::string& source, const EmulatorBuild& build) {
  const std::vector<std::string> user = host_flags(opt);
  std::vector<std::string> split = emulator_flags(user, build, true);
  std::vector<std::string> flags = emulator_flags(user, build, false);
  flags.insert(flags.end(), {"-include", build.header});
  if (std::optional<std::string> entry = entry_or_warn(opt, identity, split, emulator_prelude(build), true)) {
    std::string failure = compile_with_entry(*entry, dir, source, split, true);
    if (!failure.empty()) fallback_compile(*entry, failure, dir, source, flags);
    return;
  }
  compile_shared_library((fs::path(dir) / source).string(), (fs::path(dir) / "kernel.so").string(), flags);
}

void compile_cpu(const CompileOptions& opt, const std::string& identity, const std::string& dir,
                 const std::string& source) {
  const std::vector<std::string> flags = host_flags(opt);
  if (std::optional<std::string> entry = entry_or_warn(opt, identity, flags, kCpuPrelude, false)) {
    std::string failure = compile_with_entry(*entry, dir, source, flags, false);
    if (!failure.empty()) fallback_compile(*entry, failure, dir, source, flags);
    return;
  }
  compile_shared_library((fs::path(dir) / source).string(), (fs::path(dir) / "kernel.so").string(), flags);
}

}  // namespace tl
