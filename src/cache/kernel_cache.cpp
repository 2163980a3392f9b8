// Staging, atomic publication and validation of cache entries.
#include "cache/kernel_cache.h"

#include <unistd.h>

#include <algorithm>
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

// Moves `dir` to a trash name and deletes it; false when another process got there first.
bool discard(const fs::path& kernels, const fs::path& dir, const std::string& key) {
  std::error_code ec;
  fs::path trash = kernels / (".trash-" + key + "-" + unique_suffix());
  fs::rename(dir, trash, ec);
  if (ec) return false;
  fs::remove_all(trash, ec);
  return true;
}

int64_t dir_bytes(const fs::path& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) total += int64_t(it->file_size(size_ec));
  }
  return total;
}

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
  if (valid(dir.string())) {
    fs::last_write_time(dir, fs::file_time_type::clock::now(), ec);  // best effort (read-only caches)
    return dir.string();
  }
  // Damaged or partial: move it aside so that a rebuild can publish (best effort).
  discard(fs::path(root_) / "kernels", dir, key);
  log(LogLevel::Debug, "cache entry " + key + " was damaged; rebuilding it");
  return std::nullopt;
}

std::string DiskCache::published_dir(const std::string& dir) {
  fs::path p(dir);
  std::string name = p.filename().string();
  const std::string prefix = ".staging-";
  size_t dash = name.find('-', prefix.size());
  if (name.rfind(prefix, 0) != 0 || dash == std::string::npos) return dir;
  return (p.parent_path() / name.substr(prefix.size(), dash - prefix.size())).string();
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
  try {
    fill(staging.string());
  } catch (...) {  // a failed build (bad kernel, compiler error) leaves nothing behind
    fs::remove_all(staging, ec);
    throw;
  }
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
    discard(kernels, dir, key);
  }
  fs::remove_all(staging, ec);
  return std::nullopt;
}

namespace {

struct EntryInfo {
  fs::path dir;
  std::string key;
  fs::file_time_type used;
  int64_t bytes;
};

std::vector<EntryInfo> list_entries(const fs::path& kernels) {
  std::vector<EntryInfo> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(kernels, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code e2;
    if (name.empty() || name[0] == '.' || !it->is_directory(e2)) continue;
    auto used = fs::last_write_time(it->path(), e2);
    if (e2) continue;  // vanished meanwhile
    out.push_back({it->path(), name, used, dir_bytes(it->path())});
  }
  return out;
}

}  // namespace

CacheStats DiskCache::stats() const {
  CacheStats s;
  for (const EntryInfo& e : list_entries(fs::path(root_) / "kernels")) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

int64_t DiskCache::prune(int64_t max_bytes) const {
  fs::path kernels = fs::path(root_) / "kernels";
  std::vector<EntryInfo> entries = list_entries(kernels);
  std::sort(entries.begin(), entries.end(),
            [](const EntryInfo& a, const EntryInfo& b) { return a.used != b.used ? a.used < b.used : a.key < b.key; });
  int64_t total = 0;
  for (const EntryInfo& e : entries) total += e.bytes;
  int64_t removed = 0;
  for (const EntryInfo& e : entries) {
    if (total <= max_bytes) break;
    if (discard(kernels, e.dir, e.key)) ++removed;
    total -= e.bytes;
  }
  // Leftovers: trash of any age (its owner deletes it right after the rename) and
  // staging dirs of writers that died an hour or more ago.
  auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  std::error_code ec;
  for (auto it = fs::directory_iterator(kernels, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code e2;
    bool stale_staging = name.rfind(".staging-", 0) == 0 && fs::last_write_time(it->path(), e2) < cutoff && !e2;
    if (name.rfind(".trash-", 0) == 0 || stale_staging) fs::remove_all(it->path(), e2);
  }
  return removed;
}

}  // namespace tl
