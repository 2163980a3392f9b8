// The disk layer of the kernel cache (DESIGN §6): one directory per key, written
// in a staging directory and published by an atomic rename, with a manifest of
// checksums. A missing, partial or damaged entry is a miss, never a crash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace tl {

// File name -> contents, as stored in one entry.
using CacheFiles = std::map<std::string, std::string>;

struct CacheStats {
  int64_t entries = 0;
  int64_t bytes = 0;  // all files of all published entries
};

class DiskCache {
 public:
  // `root` is the cache directory; entries live under root/kernels/<key>/.
  explicit DiskCache(std::string root);

  // Path of the entry directory when it exists and every file matches its
  // checksum; nullopt otherwise (a damaged entry is moved aside). A hit sets the
  // entry's modification time to now, which is what prune() orders by.
  std::optional<std::string> lookup(const std::string& key) const;

  // Builds an entry with `fill(staging_dir)` (which writes its files there) and
  // publishes it; when `fill` throws, the staging directory goes and the exception
  // propagates. Returns the published directory. If another process published
  // the same key first, its entry is used. Returns nullopt (and warns once) when
  // the directory is not writable.
  std::optional<std::string> publish(const std::string& key,
                                     const std::function<void(const std::string& staging_dir)>& fill) const;

  const std::string& root() const { return root_; }

  // The directory a staging directory of publish() becomes (root/kernels/<key>);
  // `dir` itself when it is not one. Debug info names this path, so that a debugger
  // finds the sources of a kernel built in staging.
  static std::string published_dir(const std::string& dir);

  CacheStats stats() const;
  // Removes least-recently-used entries until the entries total at most
  // `max_bytes`; returns how many were removed. Entries are renamed to a trash
  // name before deletion, so a concurrent reader sees a whole entry or none.
  // Leftovers of crashed writers (staging dirs older than an hour) go too; the
  // root and kernels/ directories are never removed.
  int64_t prune(int64_t max_bytes) const;
  // Removes every entry (prune to zero bytes).
  int64_t clear() const { return prune(0); }

 private:
  bool valid(const std::string& dir) const;
  std::string root_;
};

// TILELANG_CACHE_DIR, else $XDG_CACHE_HOME/tilelang-cpp, else ~/.cache/tilelang-cpp.
std::string default_cache_dir();

}  // namespace tl
