// Owner-only creation and checks of directories and files (see private_dir.h).
#include "cache/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "support/error.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0%03o", unsigned(mode & 0777));
  return buf;
}

// Creates the single directory `p` (its parent exists) private, or accepts it when
// it is already there; checks what it created through a descriptor opened without
// following links.
bool make_one_private_dir(const fs::path& p, std::string* error) {
  struct stat st {};
  if (lstat(p.c_str(), &st) == 0) return true;  // there already: the caller checks the root itself
  if (mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = str_cat("cannot create ", p.string(), ": ", std::strerror(errno));
    return false;
  }
  int fd = open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = str_cat("cannot open ", p.string(), " (a link where a new directory should be?): ", std::strerror(errno));
    return false;
  }
  bool ok = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
  if (ok && (st.st_mode & 0777) != 0700) ok = fchmod(fd, 0700) == 0;
  close(fd);
  if (!ok) *error = str_cat(p.string(), " is not a private directory of the current user after creating it");
  return ok;
}

}  // namespace

std::string untrusted_dir_reason(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return str_cat("it cannot be examined (", std::strerror(errno), ")");
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != geteuid())
    return str_cat("it belongs to uid ", st.st_uid, ", not to the current user (uid ", geteuid(), ")");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return str_cat("it is writable by its group or by others (mode ", mode_text(st.st_mode), ")");
  return "";
}

bool make_private_dirs(const std::string& path, std::string* error) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) {
    *error = str_cat("cannot resolve ", path, ": ", ec.message());
    return false;
  }
  fs::path prefix;
  for (const fs::path& part : absolute.lexically_normal()) {
    prefix /= part;
    if (part == prefix.root_path() || part.empty()) continue;
    if (!make_one_private_dir(prefix, error)) return false;
  }
  return true;
}

std::optional<std::string> make_temp_dir(const std::string& parent, const std::string& prefix, std::string* error) {
  std::string pattern = (fs::path(parent) / (prefix + "XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    *error = str_cat("cannot create a directory ", pattern, ": ", std::strerror(errno));
    return std::nullopt;
  }
  return std::string(buf.data());  // mkdtemp's mode is 0700 whatever the umask
}

const std::string& private_fallback_dir() {
  // Never destroyed: the exit handler below reads it after static destructors may run.
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string parent = tmp && *tmp ? tmp : "/tmp";
    std::string error;
    std::optional<std::string> made = make_temp_dir(parent, "tilelang-cpp-cache-", &error);
    if (!made && parent != "/tmp") made = make_temp_dir("/tmp", "tilelang-cpp-cache-", &error);
    static const pid_t creator = getpid();
    auto* d = new std::string(made.value_or(""));
    if (!d->empty())
      std::atexit([] {
        if (getpid() != creator) return;  // a forked child leaves its parent's directory alone
        std::error_code ec;
        fs::remove_all(*dir, ec);
      });
    return d;
  }();
  return *dir;
}

void make_tree_private(const std::string& dir) {
  std::error_code ec;
  chmod(dir.c_str(), 0700);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e2;
    fs::file_status s = it->symlink_status(e2);
    if (e2 || fs::is_symlink(s)) continue;  // never followed; validation refuses links
    chmod(it->path().c_str(), fs::is_directory(s) ? 0700 : 0600);
  }
}

bool write_private_file(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = fchmod(fd, 0600) == 0;
  for (size_t done = 0; ok && done < data.size();) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += size_t(n);
  }
  ok = close(fd) == 0 && ok;
  if (!ok) unlink(path.c_str());
  return ok;
}

std::optional<std::string> read_regular_file(const std::string& path, bool private_only) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok && private_only) ok = st.st_uid == geteuid() && (st.st_mode & 077) == 0;
  std::string data;
  if (ok) data.reserve(size_t(st.st_size));
  char buf[1 << 16];
  while (ok) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    data.append(buf, size_t(n));
  }
  close(fd);
  if (!ok) return std::nullopt;
  return data;
}

}  // namespace tl
