// Resolution of the device header directory; see include/tl/device_dir.h. An
// installed library finds the headers relative to its own file, so a prefix can be
// copied or moved as a whole; only code running from its build tree falls back to
// the source tree.
#include "driver/device_dir.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "support/error.h"

// TL_DEVICE_DIR_FROM_LIBDIR (the installed device headers relative to the installed
// library, e.g. "../share/tilelang_cpp/device") comes from CMakeLists.txt, for this
// file only.

namespace tl {
namespace fs = std::filesystem;
namespace {

std::mutex mu;
std::string chosen;  // empty until resolved or set

bool holds_device_headers(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "cpu" / "tl_cpu.h", ec);
}

// The folder of the file this code was loaded from: libtilelang_cpp.so, or the
// program or extension the static library is linked into.
std::optional<fs::path> own_file_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&holds_device_headers), &info) || !info.dli_fname || !*info.dli_fname)
    return std::nullopt;
  std::error_code ec;
  fs::path file = fs::canonical(info.dli_fname, ec);  // through symlinks, to the installed file
  if (ec) return std::nullopt;
  return file.parent_path();
}

// A CMake build tree holds, beside the libraries, tests and extension it builds, a
// file naming the source tree's device/ folder: what runs from the build tree uses
// those headers. An installed copy has no such file and so depends on nothing of the
// machine it was built on (no path of it is compiled in).
constexpr const char* kBuildTreeFile = "tilelang_source_device_dir.txt";

std::optional<fs::path> build_tree_device_dir(const fs::path& own_dir) {
  std::ifstream in(own_dir / kBuildTreeFile);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) return std::nullopt;
  return fs::path(line);
}

std::string resolve() {
  if (const char* env = std::getenv("TILELANG_DEVICE_DIR"); env && *env) {
    if (holds_device_headers(env)) return env;
    throw DeviceDirError(str_cat("TILELANG_DEVICE_DIR=", env,
                                 " does not hold the tilelang device headers (no cpu/tl_cpu.h there); "
                                 "set it to the device/ directory of tilelang-cpp, e.g. "
                                 "<prefix>/share/tilelang_cpp/device"));
  }
  std::vector<fs::path> searched;
  std::optional<fs::path> own_dir = own_file_dir();
  if (own_dir) {
    searched.push_back((*own_dir / TL_DEVICE_DIR_FROM_LIBDIR).lexically_normal());
    if (std::optional<fs::path> source = build_tree_device_dir(*own_dir)) searched.push_back(*source);
  }
  for (const fs::path& dir : searched)
    if (holds_device_headers(dir)) return dir.string();
  std::string where;
  for (const fs::path& dir : searched) where += (where.empty() ? "" : ", ") + dir.string();
  throw DeviceDirError(str_cat("tilelang device headers not found (looked for cpu/tl_cpu.h in ", where,
                               "); set TILELANG_DEVICE_DIR to the device/ directory of tilelang-cpp, e.g. "
                               "<prefix>/share/tilelang_cpp/device"));
}

}  // namespace

const std::string& device_include_dir() {
  std::lock_guard<std::mutex> lock(mu);
  if (chosen.empty()) chosen = resolve();  // a failure is not remembered: the next call searches again
  return chosen;
}

void set_device_include_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu);
  if (const char* env = std::getenv("TILELANG_DEVICE_DIR"); env && *env) return;  // the environment wins
  if (!holds_device_headers(dir))
    throw DeviceDirError(
        str_cat("set_device_include_dir: ", dir, " does not hold the tilelang device headers (no cpu/tl_cpu.h there)"));
  chosen = dir;
}

const std::string& device_headers_digest_input() {
  static std::string all = [] {
    std::vector<fs::path> files;
    std::error_code ec;
    const std::string& root = device_include_dir();
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it); it.increment(ec))
      if (it->is_regular_file()) files.push_back(it->path());
    std::sort(files.begin(), files.end());
    std::string s;
    for (const fs::path& p : files) {
      std::ifstream in(p, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      s += fs::relative(p, root, ec).string() + "\n" + ss.str() + "\n";
    }
    return s;
  }();
  return all;
}

}  // namespace tl
