// Staging, atomic publication and authentication of cache entries.
#include "cache/kernel_cache.h"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

#include "cache/memory_cache.h"
#include "cache/private_dir.h"
#include "support/error.h"
#include "support/logging.h"
#include "support/sha256.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return std::to_string(getpid()) + "-" + std::to_string(rd()) + "-" + std::to_string(counter++);
}

constexpr const char* kManifest = "manifest.txt";
constexpr const char* kManifestHeader = "tilelang-cache-entry 2";
constexpr const char* kSecretFile = "hmac.key";
constexpr size_t kSecretBytes = 32;

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

void warn_once(const std::string& what, const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(what).second) return;
  }
  log(LogLevel::Warning, message);
}

std::string bad_key_file_reason(const fs::path& path) {
  return "its key file " + path.string() + " is not a private " + std::to_string(kSecretBytes) +
         "-byte file of the current user";
}

// root/hmac.key: 32 random bytes, private to the user. Made in a private temporary
// file and linked to its name, so that processes racing to make it agree on the
// first one; an existing one is read without following links and must be a regular
// file of the user, readable by no one else, of the right size. Sets `*why` and
// returns nullopt when the root cannot be trusted; returns "" when no secret can be
// made (a read-only root without one: every lookup misses).
std::optional<std::string> read_or_make_secret(const fs::path& root, std::string* why) {
  const fs::path path = root / kSecretFile;
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
      std::optional<std::string> secret = read_regular_file(path.string(), /*private_only=*/true);
      if (secret && secret->size() == kSecretBytes) return secret;
      *why = bad_key_file_reason(path);
      return std::nullopt;
    }
    unsigned char bytes[kSecretBytes];
    if (getentropy(bytes, sizeof(bytes)) != 0) return std::string();
    std::string secret(reinterpret_cast<const char*>(bytes), sizeof(bytes));
    const fs::path tmp = root / (".hmac.key-" + unique_suffix());
    if (!write_private_file(tmp.string(), secret)) return std::string();  // read-only
    int linked = link(tmp.c_str(), path.c_str());
    unlink(tmp.c_str());
    if (linked == 0) return secret;
    if (errno != EEXIST) return std::string();
    // Another process made it first: read theirs.
  }
  return std::string();
}

// The root and secret a DiskCache of `requested` uses: checked on every
// construction (a few system calls; compile() constructs one on a memory-cache miss
// only), so that a root or key file changed meanwhile is refused from then on.
struct ResolvedRoot {
  std::string root, secret;
};

ResolvedRoot resolve_root(const std::string& requested) {
  ResolvedRoot r{requested, ""};
  if (requested.empty()) return r;
  struct stat st {};
  std::string error;
  if (lstat(requested.c_str(), &st) != 0 && errno == ENOENT && !make_private_dirs(requested, &error)) {
    log(LogLevel::Debug, "kernel cache directory: " + error);
    return r;  // not writable: publish() says so
  }
  std::string why = untrusted_dir_reason(requested);
  if (why.empty()) {
    std::optional<std::string> secret = read_or_make_secret(requested, &why);
    if (secret) r.secret = *secret;
  }
  if (!why.empty()) {
    const std::string& fallback = private_fallback_dir();
    warn_once("untrusted " + requested, "the kernel cache directory " + requested + " is not used: " + why +
                                            "; this process caches kernels in the private directory " +
                                            (fallback.empty() ? std::string("(none could be made)") : fallback) +
                                            " instead");
    if (fallback.empty() || fallback == requested) return ResolvedRoot{};
    return resolve_root(fallback);
  }
  // A kernels/ directory an older version made with the umask's mode becomes private.
  const fs::path kernels = fs::path(requested) / "kernels";
  if (lstat(kernels.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077))
    chmod(kernels.c_str(), 0700);
  return r;
}

// The authentication of one file: bound to the entry's key and the file's name.
std::optional<std::string> file_mac(const std::string& secret, const std::string& key, const std::string& name,
                                    const std::string& data) {
  return hmac_sha256_hex(secret, key + '\0' + name + '\0' + data);
}

bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos && name != kManifest;
}

// "12M" -> 12582912; nullopt when it is not a size.
std::optional<int64_t> parse_bytes(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b' || unit.back() == 'i')) unit.pop_back();
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(char(std::toupper(unsigned(unit[0])))) != std::string::npos)
    scale = double(int64_t(1) << (10 * (units.find(char(std::toupper(unsigned(unit[0])))) + 1)));
  else if (!unit.empty())
    return std::nullopt;
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return int64_t(value * scale);
}

}  // namespace

std::string cache_dir_problem(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return str_cat("it cannot be resolved (", ec.message(), ")");
  struct stat st {};
  if (lstat(p.c_str(), &st) != 0) {
    if (errno != ENOENT) return str_cat("it cannot be examined (", std::strerror(errno), ")");
    fs::path parent = p.parent_path();
    while (!parent.empty() && parent != parent.root_path() && lstat(parent.c_str(), &st) != 0)
      parent = parent.parent_path();
    if (access(parent.c_str(), W_OK | X_OK) != 0)
      return str_cat("it does not exist and cannot be created in ", parent.string(), " (", std::strerror(errno), ")");
    return "";
  }
  if (std::string why = untrusted_dir_reason(p.string()); !why.empty()) return why;
  const fs::path key = p / kSecretFile;
  if (lstat(key.c_str(), &st) == 0) {
    std::optional<std::string> secret = read_regular_file(key.string(), /*private_only=*/true);
    if (!secret || secret->size() != kSecretBytes) return bad_key_file_reason(key);
  }
  const fs::path kernels = p / "kernels";
  if (lstat(kernels.c_str(), &st) == 0 && !untrusted_dir_reason(kernels.string()).empty())
    return kernels.string() + " is not a private directory: " + untrusted_dir_reason(kernels.string());
  if (access(p.c_str(), W_OK | X_OK) != 0) return str_cat("it is not writable (", std::strerror(errno), ")");
  return "";
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("TILELANG_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tilelang-cpp";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tilelang-cpp";
  const std::string& fallback = private_fallback_dir();
  warn_once("no home",
            "neither TILELANG_CACHE_DIR, XDG_CACHE_HOME nor HOME is set: this process caches kernels in "
            "the private directory " +
                (fallback.empty() ? std::string("(none could be made)") : fallback) + ", removed when it exits");
  return fallback;
}

int64_t max_cache_bytes() {
  constexpr int64_t kDefault = int64_t(10) << 30;
  const char* v = std::getenv("TILELANG_CACHE_MAX_SIZE");
  if (!v || !*v) return kDefault;
  std::optional<int64_t> bytes = parse_bytes(v);
  if (bytes) return *bytes;
  warn_once(std::string("max size ") + v, std::string("TILELANG_CACHE_MAX_SIZE=") + v +
                                              " is not a size (write e.g. 500M or 20G, or 0 for no cap); using 10G");
  return kDefault;
}

MemoryCacheBounds memory_cache_bounds() {
  MemoryCacheBounds b;
  auto read = [](const char* var, int64_t* out, const char* fallback) {
    const char* v = std::getenv(var);
    if (!v || !*v) return;
    std::optional<int64_t> n = parse_bytes(v);
    if (n && *n > 0) {
      *out = *n;
      return;
    }
    warn_once(std::string(var) + v, str_cat(var, "=", v, " is not a positive number; using ", fallback));
  };
  read("TILELANG_MEMORY_CACHE_MAX_KERNELS", &b.max_entries, "1024");
  read("TILELANG_MEMORY_CACHE_MAX_SIZE", &b.max_bytes, "1G");
  return b;
}

DiskCache::DiskCache(const std::string& root) {
  ResolvedRoot r = resolve_root(root);
  root_ = std::move(r.root);
  secret_ = std::move(r.secret);
}

// The manifest of an entry of `key` whose files are in `dir` (every regular file
// there): a header, the key, a line "file <hmac> <size> <name>" per file in name
// order, and a last line "mac <hmac>" of all the lines before it. Empty when a file
// cannot be read or is not a regular file.
std::string DiskCache::manifest(const std::string& dir, const std::string& key) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name != kManifest) names.push_back(name);
  }
  if (ec || names.empty()) return "";
  std::sort(names.begin(), names.end());
  std::ostringstream out;
  out << kManifestHeader << "\nkey " << key << "\n";
  for (const std::string& name : names) {
    if (!plain_name(name)) return "";
    std::optional<std::string> data = read_regular_file((fs::path(dir) / name).string());
    if (!data) return "";
    std::optional<std::string> mac = file_mac(secret_, key, name, *data);
    if (!mac) return "";
    out << "file " << *mac << " " << data->size() << " " << name << "\n";
  }
  std::optional<std::string> mac = hmac_sha256_hex(secret_, out.str());
  if (!mac) return "";
  out << "mac " << *mac << "\n";
  return out.str();
}

// The manifest names `key`, its own HMAC matches, it lists every file of the
// directory and each file matches its HMAC. Files are read without following links.
bool DiskCache::valid(const std::string& dir, const std::string& key) const {
  if (secret_.empty()) return false;
  std::optional<std::string> text = read_regular_file((fs::path(dir) / kManifest).string());
  if (!text) return false;
  size_t mac_at = text->rfind("mac ");
  if (mac_at == std::string::npos || (mac_at > 0 && (*text)[mac_at - 1] != '\n')) return false;
  std::string body = text->substr(0, mac_at);
  std::optional<std::string> expected = hmac_sha256_hex(secret_, body);
  if (!expected || text->substr(mac_at) != "mac " + *expected + "\n") return false;
  std::istringstream lines(body);
  std::string line;
  if (!std::getline(lines, line) || line != kManifestHeader) return false;
  if (!std::getline(lines, line) || line != "key " + key) return false;
  size_t files = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string tag, mac, name;
    size_t size = 0;
    if (!(words >> tag >> mac >> size >> name) || tag != "file" || !plain_name(name)) return false;
    std::optional<std::string> data = read_regular_file((fs::path(dir) / name).string());
    if (!data || data->size() != size) return false;
    std::optional<std::string> actual = file_mac(secret_, key, name, *data);
    if (!actual || *actual != mac) return false;
    ++files;
  }
  // Nothing beside the listed files and the manifest.
  size_t present = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) ++present;
  return !ec && files > 0 && present == files + 1;
}

std::optional<std::string> DiskCache::lookup(const std::string& key) const {
  if (root_.empty() || !plain_name(key)) return std::nullopt;
  fs::path dir = fs::path(root_) / "kernels" / key;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return std::nullopt;
  if (S_ISDIR(st.st_mode) && valid(dir.string(), key)) {
    std::error_code ec;
    fs::last_write_time(dir, fs::file_time_type::clock::now(), ec);  // best effort (read-only caches)
    return dir.string();
  }
  // Damaged, partial or not this key's: move it aside so that a rebuild can publish
  // (best effort).
  discard(fs::path(root_) / "kernels", dir, key);
  log(LogLevel::Debug, "cache entry " + key + " failed its check; rebuilding it");
  return std::nullopt;
}

void DiskCache::remove(const std::string& key) const {
  if (root_.empty() || !plain_name(key)) return;
  discard(fs::path(root_) / "kernels", fs::path(root_) / "kernels" / key, key);
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
  std::string error = root_.empty() ? "no cache directory could be made" : "";
  struct stat st {};
  if (error.empty() && lstat(root_.c_str(), &st) != 0) error = "it does not exist and could not be created";
  if (error.empty() && secret_.empty())
    error = "its key file " + (fs::path(root_) / kSecretFile).string() + " could not be made";
  if (error.empty() && mkdir(kernels.c_str(), 0700) != 0 && errno != EEXIST)
    error = str_cat("cannot create ", kernels.string(), ": ", std::strerror(errno));
  if (error.empty() && !untrusted_dir_reason(kernels.string()).empty())
    error = kernels.string() + " is not a private directory: " + untrusted_dir_reason(kernels.string());
  std::optional<std::string> staging_dir;
  if (error.empty() && plain_name(key)) staging_dir = make_temp_dir(kernels.string(), ".staging-" + key + "-", &error);
  if (!staging_dir) {
    warn_once("unwritable " + root_, "kernel cache directory " + root_ + " is not writable (" + error +
                                         "); kernels are compiled without the disk cache");
    return std::nullopt;
  }
  const fs::path staging = *staging_dir;
  std::error_code ec;
  try {
    fill(staging.string());
  } catch (...) {  // a failed build (bad kernel, compiler error) leaves nothing behind
    fs::remove_all(staging, ec);
    throw;
  }
  // Private before authenticated; the manifest last: an entry without a complete
  // manifest is never valid.
  make_tree_private(staging.string());
  std::string text = manifest(staging.string(), key);
  if (text.empty() || !write_private_file((staging / kManifest).string(), text)) {
    fs::remove_all(staging, ec);
    return std::nullopt;
  }
  const int64_t bytes = dir_bytes(staging);
  fs::path dir = kernels / key;
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::rename(staging, dir, ec);
    if (!ec) {
      prune_if_over_cap(bytes, key);
      return dir.string();
    }
    // Someone published first: use theirs when it is whole.
    if (valid(dir.string(), key)) {
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
  if (root_.empty()) return s;
  for (const EntryInfo& e : list_entries(fs::path(root_) / "kernels")) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

int64_t DiskCache::prune_except(int64_t max_bytes, const std::string& keep) const {
  if (root_.empty()) return 0;
  fs::path kernels = fs::path(root_) / "kernels";
  std::vector<EntryInfo> entries = list_entries(kernels);
  std::sort(entries.begin(), entries.end(),
            [](const EntryInfo& a, const EntryInfo& b) { return a.used != b.used ? a.used < b.used : a.key < b.key; });
  int64_t total = 0;
  for (const EntryInfo& e : entries) total += e.bytes;
  int64_t removed = 0;
  for (const EntryInfo& e : entries) {
    if (total <= max_bytes) break;
    if (e.key == keep) continue;
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

// The size of the cache is walked at this process's first publication and every
// 64th after it; in between, the bytes it publishes are added to the last walk's
// total (other processes' entries show at the next walk). Over the cap, the cache
// is pruned to nine tenths of it, so that pruning is not needed at every publication.
void DiskCache::prune_if_over_cap(int64_t published_bytes, const std::string& key) const {
  const int64_t cap = max_cache_bytes();
  if (cap <= 0) return;
  struct Estimate {
    int64_t bytes = -1;
    int publications = 0;
  };
  static std::mutex mu;
  static std::unordered_map<std::string, Estimate> estimates;
  bool walk = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    Estimate& e = estimates[root_];
    e.bytes = e.bytes < 0 ? -1 : e.bytes + published_bytes;
    walk = e.bytes < 0 || ++e.publications % 64 == 0 || e.bytes > cap;
  }
  if (!walk) return;
  int64_t total = stats().bytes;
  if (total > cap) {
    int64_t removed = prune_except(cap - cap / 10, key);
    log(LogLevel::Debug, str_cat("kernel cache ", root_, " held ", total, " bytes, over its cap of ", cap, " (",
                                 "TILELANG_CACHE_MAX_SIZE); removed ", removed, " least recently used entries"));
    total = stats().bytes;
  }
  std::lock_guard<std::mutex> lock(mu);
  estimates[root_].bytes = total;
}

}  // namespace tl
