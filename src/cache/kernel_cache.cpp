// Staging, atomic publication and validation of cache entries.
#include "cache/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support/error.h"
#include "support/logging.h"
#include "support/sha256.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

std::string read_file(const fs::path& p, bool* ok) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    *ok = false;
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return std::to_string(getpid()) + "-" + std::to_string(rd()) + "-" + std::to_string(counter++);
}

constexpr const char* kManifest = "manifest.txt";

}  // namespace

std::string default_cache_dir() {
  if (const char* d = std::getenv("TILELANG_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tilelang-cpp";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tilelang-cpp";
  return "/tmp/tilelang-cpp-cache";
}

DiskCache::DiskCache(std::string root) : root_(std::move(root)) {}

// A manifest line per file: "<sha256> <size> <name>". Every file must match.
bool DiskCache::valid(const std::string& dir) const {
  bool ok = true;
  std::string manifest = read_file(fs::path(dir) / kManifest, &ok);
  if (!ok || manifest.empty()) return false;
  std::istringstream lines(manifest);
  std::string digest, name;
  size_t size = 0;
  int files = 0;
  while (lines >> digest >> size >> name) {
    std::string data = read_file(fs::path(dir) / name, &ok);
    if (!ok || data.size() != size) return false;
    auto h = sha256_hex(data);
    if (!h || *h != digest) return false;
    ++files;
  }
  return files > 0;
}

std::optional<std::string> DiskCache::lookup(const std::string& key) const {
  fs::path dir = fs::path(root_) / "kernels" / key;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::nullopt;
  if (valid(dir.string())) return dir.string();
  // Damaged or partial: move it aside so that a rebuild can publish (best effort).
  fs::path trash = fs::path(root_) / "kernels" / (".trash-" + key + "-" + unique_suffix());
  fs::rename(dir, trash, ec);
  if (!ec) fs::remove_all(trash, ec);
  log(LogLevel::Debug, "cache entry " + key + " was damaged; rebuilding it");
  return std::nullopt;
}

std::optional<std::string> DiskCache::publish(const std::string& key,
                                              const std::function<void(const std::string&)>& fill) const {
  fs::path kernels = fs::path(root_) / "kernels";
  fs::path staging = kernels / (".staging-" + key + "-" + unique_suffix());
  std::error_code ec;
  fs::create_directories(staging, ec);
  if (ec) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      log(LogLevel::Warning, "kernel cache directory " + root_ + " is not writable (" + ec.message() +
                                 "); kernels are compiled without the disk cache");
    return std::nullopt;
  }
  fill(staging.string());
  // Manifest last: an entry without a complete manifest is never valid.
  std::ostringstream manifest;
  for (const auto& entry : fs::directory_iterator(staging)) {
    bool ok = true;
    std::string data = read_file(entry.path(), &ok);
    auto h = sha256_hex(data);
    if (!ok || !h) {
      fs::remove_all(staging, ec);
      return std::nullopt;
    }
    manifest << *h << " " << data.size() << " " << entry.path().filename().string() << "\n";
  }
  {
    std::ofstream out(staging / kManifest, std::ios::binary);
    out << manifest.str();
  }
  fs::path dir = kernels / key;
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::rename(staging, dir, ec);
    if (!ec) return dir.string();
    // Someone published first: use theirs when it is whole.
    if (valid(dir.string())) {
      fs::remove_all(staging, ec);
      return dir.string();
    }
    fs::path trash = kernels / (".trash-" + key + "-" + unique_suffix());
    fs::rename(dir, trash, ec);
    fs::remove_all(trash, ec);
  }
  fs::remove_all(staging, ec);
  return std::nullopt;
}

}  // namespace tl
