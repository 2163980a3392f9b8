// The in-memory layer of the kernel cache: key -> loaded kernel, bounded in count
// and bytes, least recently used evicted first. An evicted kernel is only dropped
// by the cache: it is unloaded (dlclose, cuModuleUnload) when the last user's
// shared_ptr goes, so a process compiling many distinct kernels keeps a bounded
// number of libraries and modules mapped.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace tl {

struct MemoryCacheBounds {
  int64_t max_entries = 1024;
  int64_t max_bytes = int64_t(1) << 30;
};

// TILELANG_MEMORY_CACHE_MAX_KERNELS (default 1024) and TILELANG_MEMORY_CACHE_MAX_SIZE
// (bytes or a size such as 256M; default 1G), read on each call. A value that is
// not a positive number is warned about once and the default used.
MemoryCacheBounds memory_cache_bounds();

template <class Value>
class MemoryCache {
 public:
  // The value of `key`, now the most recently used; null when absent.
  std::shared_ptr<Value> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->value;
  }

  // Adds `value` as the most recently used (a key present already keeps its value),
  // then evicts least recently used entries past `bounds`; the newest always stays.
  void insert(const std::string& key, std::shared_ptr<Value> value, int64_t bytes, const MemoryCacheBounds& bounds) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(key)) return;
    order_.push_front(Entry{key, std::move(value), bytes});
    index_[key] = order_.begin();
    bytes_ += bytes;
    while (order_.size() > 1 && (int64_t(order_.size()) > bounds.max_entries || bytes_ > bounds.max_bytes)) {
      bytes_ -= order_.back().bytes;
      index_.erase(order_.back().key);
      order_.pop_back();
    }
  }

  int64_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return int64_t(order_.size());
  }
  int64_t bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<Value> value;
    int64_t bytes;
  };
  mutable std::mutex mu_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  int64_t bytes_ = 0;
};

}  // namespace tl
