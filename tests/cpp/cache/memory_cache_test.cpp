// MemoryCache: count and byte bounds, least-recently-used eviction, and an evicted
// value living on exactly as long as its other users hold it.
#include "cache/memory_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tl {
namespace {

struct Loaded {
  explicit Loaded(int id) : id(id) {}
  int id;
};

TEST(MemoryCache, EvictsLeastRecentlyUsedPastTheCount) {
  MemoryCache<Loaded> cache;
  MemoryCacheBounds bounds{3, int64_t(1) << 30};
  for (int i = 0; i < 3; ++i) cache.insert("k" + std::to_string(i), std::make_shared<Loaded>(i), 10, bounds);
  ASSERT_TRUE(cache.find("k0"));  // k0 is now the most recently used: k1 goes first
  cache.insert("k3", std::make_shared<Loaded>(3), 10, bounds);
  EXPECT_EQ(cache.size(), 3);
  EXPECT_EQ(cache.bytes(), 30);
  EXPECT_FALSE(cache.find("k1"));
  EXPECT_EQ(cache.find("k0")->id, 0);
  EXPECT_EQ(cache.find("k3")->id, 3);
  EXPECT_EQ(cache.find("k2")->id, 2);
}

TEST(MemoryCache, EvictsPastTheBytesButKeepsTheNewest) {
  MemoryCache<Loaded> cache;
  MemoryCacheBounds bounds{100, 250};
  for (int i = 0; i < 5; ++i) cache.insert("k" + std::to_string(i), std::make_shared<Loaded>(i), 100, bounds);
  EXPECT_EQ(cache.size(), 2);
  EXPECT_EQ(cache.bytes(), 200);
  EXPECT_TRUE(cache.find("k4") && cache.find("k3") && !cache.find("k2"));
  cache.insert("huge", std::make_shared<Loaded>(9), 1000, bounds);  // alone past the bound: kept, alone
  EXPECT_EQ(cache.size(), 1);
  EXPECT_EQ(cache.find("huge")->id, 9);
}

TEST(MemoryCache, AnEvictedValueLivesWhileItsUsersHoldIt) {
  MemoryCache<Loaded> cache;
  MemoryCacheBounds bounds{1, int64_t(1) << 30};
  std::shared_ptr<Loaded> held = std::make_shared<Loaded>(1);
  std::weak_ptr<Loaded> dropped_by_all;
  {
    auto other = std::make_shared<Loaded>(2);
    dropped_by_all = other;
    cache.insert("held", held, 1, bounds);
    cache.insert("other", other, 1, bounds);  // evicts "held"
  }
  cache.insert("third", std::make_shared<Loaded>(3), 1, bounds);  // evicts "other"
  EXPECT_TRUE(dropped_by_all.expired());                          // unloaded: no user left
  EXPECT_EQ(held.use_count(), 1);                                 // the cache let it go ...
  EXPECT_EQ(held->id, 1);                                         // ... its user still has it
}

TEST(MemoryCache, BoundsReadFromTheEnvironment) {
  unsetenv("TILELANG_MEMORY_CACHE_MAX_KERNELS");
  unsetenv("TILELANG_MEMORY_CACHE_MAX_SIZE");
  MemoryCacheBounds b = memory_cache_bounds();
  EXPECT_EQ(b.max_entries, 1024);
  EXPECT_EQ(b.max_bytes, int64_t(1) << 30);
  setenv("TILELANG_MEMORY_CACHE_MAX_KERNELS", "16", 1);
  setenv("TILELANG_MEMORY_CACHE_MAX_SIZE", "256M", 1);
  b = memory_cache_bounds();
  EXPECT_EQ(b.max_entries, 16);
  EXPECT_EQ(b.max_bytes, int64_t(256) << 20);
  setenv("TILELANG_MEMORY_CACHE_MAX_KERNELS", "0", 1);
  EXPECT_EQ(memory_cache_bounds().max_entries, 1024);  // not positive: the default, with a warning
  unsetenv("TILELANG_MEMORY_CACHE_MAX_KERNELS");
  unsetenv("TILELANG_MEMORY_CACHE_MAX_SIZE");
}

}  // namespace
}  // namespace tl
