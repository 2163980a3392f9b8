// DiskCache: staging + atomic publication, lookup validation, damaged entries,
// racing writers, LRU pruning and stats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/kernel_cache.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tl-disk-cache-test-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::optional<std::string> publish(const DiskCache& c, const std::string& key, const std::string& text) {
    return c.publish(key, [&](const std::string& dir) {
      write(fs::path(dir) / "kernel.cpp", text);
      write(fs::path(dir) / "kernel.so", text + " binary");
    });
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(root_ / "kernels")) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path root_;
};

TEST_F(DiskCacheTest, PublishThenLookup) {
  DiskCache cache(root_.string());
  EXPECT_FALSE(cache.lookup("k1"));
  auto dir = publish(cache, "k1", "source one");
  ASSERT_TRUE(dir);
  EXPECT_EQ(*dir, (root_ / "kernels" / "k1").string());
  auto hit = cache.lookup("k1");
  ASSERT_TRUE(hit);
  EXPECT_EQ(read(fs::path(*hit) / "kernel.cpp"), "source one");
  EXPECT_TRUE(fs::exists(fs::path(*hit) / "manifest.txt"));
  EXPECT_EQ(names(), std::vector<std::string>{"k1"});  // no staging dir left
}

TEST_F(DiskCacheTest, DamagedEntryIsAMissAndMovedAside) {
  DiskCache cache(root_.string());
  ASSERT_TRUE(publish(cache, "k1", "source one"));
  fs::resize_file(root_ / "kernels" / "k1" / "kernel.so", 3);
  EXPECT_FALSE(cache.lookup("k1"));
  EXPECT_TRUE(names().empty());
  // A changed byte of the same size is caught by the checksum.
  ASSERT_TRUE(publish(cache, "k2", "source two"));
  write(root_ / "kernels" / "k2" / "kernel.cpp", "source tw0");
  EXPECT_FALSE(cache.lookup("k2"));
  // A missing manifest, too.
  ASSERT_TRUE(publish(cache, "k3", "source three"));
  fs::remove(root_ / "kernels" / "k3" / "manifest.txt");
  EXPECT_FALSE(cache.lookup("k3"));
  ASSERT_TRUE(publish(cache, "k3", "source three"));
  EXPECT_TRUE(cache.lookup("k3"));
}

TEST_F(DiskCacheTest, FirstWriterWinsAndLaterWritersUseItsEntry) {
  DiskCache cache(root_.string());
  std::vector<std::thread> threads;
  std::vector<std::optional<std::string>> dirs(8);
  for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { dirs[i] = publish(cache, "same", "identical source"); });
  for (auto& t : threads) t.join();
  for (const auto& d : dirs) {
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, (root_ / "kernels" / "same").string());
  }
  EXPECT_EQ(names(), std::vector<std::string>{"same"});
  EXPECT_TRUE(cache.lookup("same"));
}

TEST_F(DiskCacheTest, UnwritableRootIsNotAnError) {
  fs::create_directories(root_);
  write(root_ / "kernels", "a file where the kernels directory should be");
  DiskCache cache(root_.string());
  EXPECT_FALSE(publish(cache, "k1", "x"));
  EXPECT_FALSE(cache.lookup("k1"));
}

TEST_F(DiskCacheTest, StatsAndLeastRecentlyUsedPruning) {
  DiskCache cache(root_.string());
  for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(publish(cache, k, std::string(100, *k)));
  CacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 3);
  int64_t per_entry = s.bytes / 3;
  EXPECT_GT(per_entry, 200);
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(root_ / "kernels" / "a", now - std::chrono::hours(3));
  fs::last_write_time(root_ / "kernels" / "b", now - std::chrono::hours(2));
  fs::last_write_time(root_ / "kernels" / "c", now - std::chrono::hours(1));
  ASSERT_TRUE(cache.lookup("a"));  // a hit makes 'a' the most recently used
  fs::create_directories(root_ / "kernels" / ".trash-x-1");
  EXPECT_EQ(cache.prune(per_entry * 2), 1);
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "c"}));  // 'b' went, and the stale trash
  EXPECT_EQ(cache.clear(), 2);
  EXPECT_TRUE(names().empty());
  EXPECT_TRUE(fs::is_directory(root_ / "kernels"));
  EXPECT_EQ(cache.stats().entries, 0);
}

}  // namespace
}  // namespace tl
