// The disk cache's guarantees against other users (docs/design/reliability.md):
// private modes whatever the umask, no shared fallback, untrusted roots refused,
// staging never through a link, entries bound to their key by an HMAC.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cache/kernel_cache.h"
#include "cache/private_dir.h"
#include "support/logging.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Collects the warnings logged while it lives.
class Warnings {
 public:
  Warnings() {
    set_log_sink([this](LogLevel level, const std::string& m) {
      if (level >= LogLevel::Warning) messages.push_back(m);
    });
  }
  ~Warnings() { set_log_sink(nullptr); }
  std::vector<std::string> messages;
};

class PrivateCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("tl-private-cache-test-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_);
    fs::permissions(base_, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(base_); }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
  static std::optional<std::string> publish(const DiskCache& c, const std::string& key, const std::string& text) {
    return c.publish(key, [&](const std::string& dir) {
      write(fs::path(dir) / "kernel.cpp", text);
      write(fs::path(dir) / "kernel.so", text + " binary");
    });
  }

  fs::path base_;
};

TEST_F(PrivateCacheTest, EverythingIsCreatedPrivateWhateverTheUmask) {
  mode_t old = umask(0);
  fs::path root = base_ / "made" / "by" / "the-cache";
  std::string staging;
  {
    DiskCache cache(root.string());
    ASSERT_TRUE(cache.publish("k1", [&](const std::string& dir) {
      staging = dir;
      write(fs::path(dir) / "kernel.cpp", "source");  // the umask's mode: 0666
    }));
  }
  umask(old);
  for (const fs::path& d : {base_ / "made", base_ / "made" / "by", root, root / "kernels", root / "kernels" / "k1"})
    EXPECT_EQ(mode_of(d), 0700u) << d;
  for (const fs::path& f :
       {root / "hmac.key", root / "kernels" / "k1" / "kernel.cpp", root / "kernels" / "k1" / "manifest.txt"})
    EXPECT_EQ(mode_of(f), 0600u) << f;
  // The staging directory had an unpredictable name (mkdtemp's six characters).
  EXPECT_EQ(fs::path(staging).parent_path(), root / "kernels");
  EXPECT_EQ(fs::path(staging).filename().string().rfind(".staging-k1-", 0), 0u) << staging;
  EXPECT_EQ(fs::path(staging).filename().string().size(), std::string(".staging-k1-XXXXXX").size());
}

TEST_F(PrivateCacheTest, NoHomeMeansAPrivateTemporaryDirectorySaidOnce) {
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* var : {"TILELANG_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    const char* v = std::getenv(var);
    saved[var] = v ? std::optional<std::string>(v) : std::nullopt;
    unsetenv(var);
  }
  Warnings warnings;
  std::string first = default_cache_dir(), second = default_cache_dir();
  for (const auto& [var, value] : saved)
    if (value) setenv(var.c_str(), value->c_str(), 1);
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, private_fallback_dir());
  EXPECT_EQ(fs::path(first).filename().string().rfind("tilelang-cpp-cache-", 0), 0u) << first;
  EXPECT_NE(first, "/tmp/tilelang-cpp-cache");  // never a shared, predictable path
  EXPECT_EQ(mode_of(first), 0700u);
  EXPECT_EQ(untrusted_dir_reason(first), "");
  ASSERT_LE(warnings.messages.size(), 1u);  // once per process: an earlier test may have said it
  if (!warnings.messages.empty()) {
    EXPECT_NE(warnings.messages[0].find("neither TILELANG_CACHE_DIR, XDG_CACHE_HOME nor HOME is set"),
              std::string::npos);
    EXPECT_NE(warnings.messages[0].find(first), std::string::npos);
  }
}

// `root` is refused with one warning that names it and `why`; the private directory
// serves instead and nothing is written into `root`.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void expect_refused(const fs::path& root, const std::string& why) {
  const std::vector<std::string> before = listing(root);
  Warnings warnings;
  DiskCache cache(root.string());
  DiskCache again(root.string());
  EXPECT_EQ(cache.root(), private_fallback_dir());
  EXPECT_EQ(again.root(), private_fallback_dir());
  ASSERT_EQ(warnings.messages.size(), 1u);
  const std::string& m = warnings.messages[0];
  EXPECT_NE(m.find("the kernel cache directory " + root.string() + " is not used: " + why), std::string::npos) << m;
  EXPECT_NE(m.find(private_fallback_dir()), std::string::npos) << m;
  ASSERT_TRUE(cache.publish("refused-root-" + root.filename().string(),
                            [](const std::string& dir) { std::ofstream(fs::path(dir) / "kernel.so") << "x"; }));
  EXPECT_EQ(listing(root), before);
}

TEST_F(PrivateCacheTest, RootWritableByOthersIsNotUsed) {
  fs::create_directory(base_ / "open");
  chmod((base_ / "open").c_str(), 0777);
  expect_refused(base_ / "open", "it is writable by its group or by others (mode 0777)");
  fs::create_directory(base_ / "group");
  chmod((base_ / "group").c_str(), 0770);
  expect_refused(base_ / "group", "it is writable by its group or by others (mode 0770)");
}

TEST_F(PrivateCacheTest, RootThatIsASymbolicLinkIsNotUsed) {
  fs::create_directory(base_ / "target");
  fs::create_directory_symlink(base_ / "target", base_ / "link");
  expect_refused(base_ / "link", "it is a symbolic link");
  EXPECT_TRUE(fs::is_empty(base_ / "target"));
}

TEST_F(PrivateCacheTest, RootOfAnotherUserIsNotUsed) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  fs::create_directory(base_ / "foreign");
  ASSERT_EQ(chown((base_ / "foreign").c_str(), 12345, 12345), 0);
  expect_refused(base_ / "foreign", "it belongs to uid 12345, not to the current user (uid 0)");
}

TEST_F(PrivateCacheTest, KeyFileThatOthersCanReadOrIsALinkIsNotUsed) {
  fs::path root = base_ / "leaky";
  { DiskCache made(root.string()); }
  chmod((root / "hmac.key").c_str(), 0644);
  expect_refused(root, "its key file " + (root / "hmac.key").string() + " is not a private 32-byte file");
  fs::path linked = base_ / "linked";
  fs::create_directory(linked);
  chmod(linked.c_str(), 0700);
  write(base_ / "elsewhere.key", std::string(32, 'k'));
  chmod((base_ / "elsewhere.key").c_str(), 0600);
  fs::create_symlink(base_ / "elsewhere.key", linked / "hmac.key");
  expect_refused(linked, "its key file " + (linked / "hmac.key").string() + " is not a private 32-byte file");
}

TEST_F(PrivateCacheTest, KernelsDirectoryThatIsALinkIsNeverWrittenThrough) {
  fs::path root = base_ / "root";
  { DiskCache made(root.string()); }
  fs::create_directory(base_ / "elsewhere");
  fs::create_directory_symlink(base_ / "elsewhere", root / "kernels");
  Warnings warnings;
  DiskCache cache(root.string());
  EXPECT_FALSE(publish(cache, "k1", "source"));
  EXPECT_FALSE(cache.lookup("k1"));
  EXPECT_TRUE(fs::is_empty(base_ / "elsewhere"));
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find("kernels is not a private directory: it is a symbolic link"), std::string::npos)
      << warnings.messages[0];
}

TEST_F(PrivateCacheTest, EntriesAreBoundToTheirKey) {
  fs::path root = base_ / "cache", kernels = root / "kernels";
  DiskCache cache(root.string());
  ASSERT_TRUE(publish(cache, "k1", "source one"));
  ASSERT_TRUE(publish(cache, "k2", "source two"));
  // k1's entry copied over k2's: sound files, another key's manifest.
  fs::remove_all(kernels / "k2");
  fs::copy(kernels / "k1", kernels / "k2");
  EXPECT_TRUE(cache.lookup("k1"));
  EXPECT_FALSE(cache.lookup("k2"));
  EXPECT_FALSE(fs::exists(kernels / "k2"));  // moved aside, to be rebuilt

  // A file swapped between two entries (each file passes its own entry's check).
  ASSERT_TRUE(publish(cache, "k2", "source two"));
  fs::copy_file(kernels / "k1" / "kernel.so", kernels / "k2" / "kernel.so", fs::copy_options::overwrite_existing);
  EXPECT_FALSE(cache.lookup("k2"));

  // An entry of another cache (another secret), whole, under the same key.
  DiskCache other((base_ / "other").string());
  ASSERT_TRUE(publish(other, "k3", "source three"));
  fs::copy(base_ / "other" / "kernels" / "k3", kernels / "k3");
  EXPECT_FALSE(cache.lookup("k3"));

  // A file added beside the listed ones, a file replaced by a link to a sound copy.
  ASSERT_TRUE(publish(cache, "k4", "source four"));
  write(kernels / "k4" / "meta.txt", "entry planted\n");
  EXPECT_FALSE(cache.lookup("k4"));
  ASSERT_TRUE(publish(cache, "k5", "source five"));
  fs::copy_file(kernels / "k5" / "kernel.so", base_ / "kernel.so");
  fs::remove(kernels / "k5" / "kernel.so");
  fs::create_symlink(base_ / "kernel.so", kernels / "k5" / "kernel.so");
  EXPECT_FALSE(cache.lookup("k5"));

  // A manifest whose last line (its own HMAC) was edited.
  ASSERT_TRUE(publish(cache, "k6", "source six"));
  std::ifstream in(kernels / "k6" / "manifest.txt");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  in.close();
  text[text.size() - 2] = text[text.size() - 2] == '0' ? '1' : '0';
  fs::remove(kernels / "k6" / "manifest.txt");
  write(kernels / "k6" / "manifest.txt", text);
  EXPECT_FALSE(cache.lookup("k6"));
  EXPECT_TRUE(cache.lookup("k1"));
}

TEST(CacheSize, ReadFromTheEnvironment) {
  const char* saved = std::getenv("TILELANG_CACHE_MAX_SIZE");
  std::string keep = saved ? saved : "";
  unsetenv("TILELANG_CACHE_MAX_SIZE");
  EXPECT_EQ(max_cache_bytes(), int64_t(10) << 30);
  setenv("TILELANG_CACHE_MAX_SIZE", "500M", 1);
  EXPECT_EQ(max_cache_bytes(), int64_t(500) << 20);
  setenv("TILELANG_CACHE_MAX_SIZE", "1.5GiB", 1);
  EXPECT_EQ(max_cache_bytes(), int64_t(3) << 29);
  setenv("TILELANG_CACHE_MAX_SIZE", "4096", 1);
  EXPECT_EQ(max_cache_bytes(), 4096);
  setenv("TILELANG_CACHE_MAX_SIZE", "0", 1);
  EXPECT_EQ(max_cache_bytes(), 0);
  setenv("TILELANG_CACHE_MAX_SIZE", "inf", 1);
  EXPECT_EQ(max_cache_bytes(), int64_t(10) << 30);
  {
    Warnings warnings;
    setenv("TILELANG_CACHE_MAX_SIZE", "lots", 1);
    EXPECT_EQ(max_cache_bytes(), int64_t(10) << 30);
    ASSERT_EQ(warnings.messages.size(), 1u);
    EXPECT_EQ(warnings.messages[0],
              "TILELANG_CACHE_MAX_SIZE=lots is not a size (write e.g. 500M or 20G, or 0 for no cap); using 10G");
  }
  if (saved)
    setenv("TILELANG_CACHE_MAX_SIZE", keep.c_str(), 1);
  else
    unsetenv("TILELANG_CACHE_MAX_SIZE");
}

TEST_F(PrivateCacheTest, PublishingPastTheCapPrunesLeastRecentlyUsed) {
  const char* saved = std::getenv("TILELANG_CACHE_MAX_SIZE");
  std::string keep = saved ? saved : "";
  fs::path root = base_ / "capped";
  DiskCache cache(root.string());
  ASSERT_TRUE(publish(cache, "k0", std::string(1000, 'x')));
  const int64_t per_entry = cache.stats().bytes;
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(root / "kernels" / "k0", now - std::chrono::minutes(200));
  setenv("TILELANG_CACHE_MAX_SIZE", std::to_string(per_entry * 5 + per_entry / 2).c_str(), 1);
  for (int i = 1; i < 12; ++i) {
    ASSERT_TRUE(publish(cache, "k" + std::to_string(i), std::string(1000, 'a' + i)));
    fs::last_write_time(root / "kernels" / ("k" + std::to_string(i)), now - std::chrono::minutes(100 - i));
    if (i == 3) ASSERT_TRUE(cache.lookup("k1"));  // k1 used since: kept longer than k2
  }
  if (saved)
    setenv("TILELANG_CACHE_MAX_SIZE", keep.c_str(), 1);
  else
    unsetenv("TILELANG_CACHE_MAX_SIZE");
  EXPECT_LE(cache.stats().bytes, per_entry * 5 + per_entry / 2);
  EXPECT_GE(cache.stats().entries, 3);
  EXPECT_TRUE(fs::exists(root / "kernels" / "k11"));  // the newest stays
  EXPECT_FALSE(fs::exists(root / "kernels" / "k0"));
  EXPECT_FALSE(fs::exists(root / "kernels" / "k2"));
}

}  // namespace
}  // namespace tl
