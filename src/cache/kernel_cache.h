// The disk layer of the kernel cache (DESIGN §6): one directory per key, written
// in a staging directory and published by an atomic rename, with a manifest that
// binds every file to the key by an HMAC under a per-user secret. A missing,
// partial, damaged or foreign entry is a miss, never a crash; a cache directory
// that others could write is not used (docs/design/reliability.md).
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
  // `root` is the cache directory; entries live under root/kernels/<key>/, the
  // secret under root/hmac.key. A root that is missing is created (mode 0700); one
  // that is a link, belongs to another user, is writable by group or others, or
  // holds a key file that is not private is not used: a warning names it and why,
  // and this process's private directory (private_fallback_dir) is used instead.
  explicit DiskCache(const std::string& root);

  // Path of the entry directory when it exists, its manifest names `key` and every
  // file matches its HMAC; nullopt otherwise (a damaged or foreign entry is moved
  // aside). A hit sets the entry's modification time to now, which is what
  // prune() orders by.
  std::optional<std::string> lookup(const std::string& key) const;

  // Removes the entry of `key` (one that passed lookup but failed to load).
  void remove(const std::string& key) const;

  // Builds an entry with `fill(staging_dir)` (which writes its files there) and
  // publishes it; when `fill` throws, the staging directory goes and the exception
  // propagates. Returns the published directory. If another process published
  // the same key first, its entry is used. Returns nullopt (and warns once) when
  // the directory is not writable. The staging directory is made by mkdtemp, its
  // files are made private (0600) before they are authenticated, and a publication
  // that takes the cache past max_cache_bytes() prunes it.
  std::optional<std::string> publish(const std::string& key,
                                     const std::function<void(const std::string& staging_dir)>& fill) const;

  // The directory in use: the one given, or the private one that replaced it.
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
  int64_t prune(int64_t max_bytes) const { return prune_except(max_bytes, ""); }
  // Removes every entry (prune to zero bytes).
  int64_t clear() const { return prune(0); }

 private:
  bool valid(const std::string& dir, const std::string& key) const;
  std::string manifest(const std::string& dir, const std::string& key) const;
  // prune(), sparing the entry of `keep` (one just published, about to be loaded).
  int64_t prune_except(int64_t max_bytes, const std::string& keep) const;
  void prune_if_over_cap(int64_t published_bytes, const std::string& key) const;
  std::string root_;
  std::string secret_;  // empty: no entry can be checked or written
};

// Why DiskCache(dir) would not keep its entries in `dir` (the checks above: a link,
// another user's directory, one others can write, a key file or kernels/ directory
// that is not private, or one it cannot write or create), or "" when it would. Creates
// and changes nothing: `python -m tilelang doctor` asks it.
std::string cache_dir_problem(const std::string& dir);

// TILELANG_CACHE_DIR, else $XDG_CACHE_HOME/tilelang-cpp, else ~/.cache/tilelang-cpp;
// with none of them set, this process's private directory (private_fallback_dir),
// said once in a warning.
std::string default_cache_dir();

// TILELANG_CACHE_MAX_SIZE (bytes, or a size such as 500M or 20G; 0 for no cap),
// default 10 GiB: the disk cache prunes its least recently used entries, prelude
// entries included, when a publication takes it past this size.
int64_t max_cache_bytes();

}  // namespace tl
