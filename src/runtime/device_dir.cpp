// Resolution of the device header directory; see device_dir.h.
#include "runtime/device_dir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace tl {
namespace {
std::mutex mu;
std::string& dir_storage() {
  static std::string d = [] {
    if (const char* e = std::getenv("TILELANG_DEVICE_DIR"); e && *e) return std::string(e);
    return std::string(TL_SOURCE_DEVICE_DIR);
  }();
  return d;
}
}  // namespace

const std::string& device_include_dir() {
  std::lock_guard<std::mutex> lock(mu);
  return dir_storage();
}

void set_device_include_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu);
  if (std::getenv("TILELANG_DEVICE_DIR")) return;  // the environment wins
  dir_storage() = dir;
}

const std::string& device_headers_digest_input() {
  static std::string all = [] {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(device_include_dir(), ec); !ec && it != fs::end(it);
         it.increment(ec))
      if (it->is_regular_file()) files.push_back(it->path());
    std::sort(files.begin(), files.end());
    std::string s;
    for (const fs::path& p : files) {
      std::ifstream in(p, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      s += fs::relative(p, device_include_dir(), ec).string() + "\n" + ss.str() + "\n";
    }
    return s;
  }();
  return all;
}

}  // namespace tl
