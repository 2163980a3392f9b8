// The memory cache's bound with real kernels: 20,000 distinct kernel libraries
// loaded one after another through a MemoryCache<Kernel> bounded to 16 keep at most
// 16 of them mapped. Without the unloading (dlclose when the last user of an evicted
// kernel goes) they would take about 100,000 memory mappings, past Linux's default
// limit of 65,530 (vm.max_map_count), and the loader would start failing.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cache/memory_cache.h"
#include "driver/cpu/host_compiler.h"
#include "runtime/artifact.h"
#include "runtime/cpu/cpu_kernel.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

// The distinct files under `dir` that this process has mapped.
size_t libraries_mapped_from(const std::string& dir) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> files;
  for (std::string line; std::getline(maps, line);) {
    size_t at = line.find(dir);
    if (at == std::string::npos) continue;
    std::string file = line.substr(at);
    if (size_t deleted = file.find(" (deleted)"); deleted != std::string::npos) file.resize(deleted);
    files.insert(file);
  }
  return files.size();
}

TEST(MemoryCacheUnload, TwentyThousandKernelsKeepABoundedNumberOfLibrariesMapped) {
  // In memory (/dev/shm) where there is one: 20,000 files made and removed on a busy
  // disk's journal took 43 s instead of 3.5 s.
  std::error_code ec;
  const fs::path tmp = fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm")
                                                                                         : fs::temp_directory_path();
  std::string made = (tmp / "tl-unload-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(made.data()), nullptr);
  const fs::path base = made;
  struct RemovedAtExit {  // also when an assertion or a failed load ends the test early
    fs::path dir;
    ~RemovedAtExit() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } removed{base};
  // One kernel library (a cpu kernel's entry, doing nothing), copied into a directory
  // of its own for each kernel: distinct files are distinct libraries to the loader.
  KernelSignature sig;
  sig.name = "k";
  sig.launches.push_back(LaunchSpec{{int_imm(1)}, {1}, {}, {}, {}});
  const std::vector<std::string> entries = cpu_entries(sig);
  ASSERT_EQ(entries, std::vector<std::string>{"tl_block_k"});
  write_build_file(base / "k.cpp", "extern \"C\" void tl_block_k(const void*, long, long, long) {}\n");
  compile_shared_library((base / "k.cpp").string(), (base / "k.so").string(), {});
  const std::string library = read_text(base / "k.so");
  ASSERT_FALSE(library.empty());

  constexpr int kKernels = 20000;
  constexpr int64_t kBound = 16;
  MemoryCache<Kernel> cache;
  const MemoryCacheBounds bounds{kBound, int64_t(1) << 30};
  const std::string copies = (base / "copies").string() + "/";
  fs::create_directories(copies);
  size_t most = 0;
  std::shared_ptr<Kernel> held;  // a user holds the first kernel throughout
  for (int i = 0; i < kKernels; ++i) {
    const fs::path dir = copies + std::to_string(i);
    fs::create_directory(dir);
    write_build_file(dir / "kernel.so", library);
    auto k = std::make_shared<CpuKernel>(sig, Target::parse("cpu"), "", (dir / "kernel.so").string(), entries);
    if (i == 0) held = k;
    cache.insert("kernel " + std::to_string(i), std::move(k), int64_t(library.size()), bounds);
    fs::remove_all(dir);  // a mapped file stays mapped, shown as "(deleted)"
    if (i % 500 == 0 || i == kKernels - 1) most = std::max(most, libraries_mapped_from(copies));
  }
  EXPECT_EQ(cache.size(), kBound);
  // The cache's 16 and the one a user holds, never more.
  EXPECT_LE(most, size_t(kBound) + 1);
  EXPECT_EQ(libraries_mapped_from(copies), size_t(kBound) + 1);
  EXPECT_EQ(held.use_count(), 1);
  held.reset();
  EXPECT_EQ(libraries_mapped_from(copies), size_t(kBound));
}

}  // namespace
}  // namespace tl
