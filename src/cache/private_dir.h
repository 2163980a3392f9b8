// Directories and files that only the current user can write: the disk cache's
// root, its entries and the build directories (docs/design/reliability.md, "Cache
// and build directories"). Everything here is created with exclusive, owner-only
// modes whatever the umask, and never through a symbolic link.
#pragma once

#include <optional>
#include <string>

namespace tl {

// Why `dir` may not hold code this process loads, or "" when it may: it must be a
// directory (not a symbolic link) owned by the current user and writable by no
// one else.
std::string untrusted_dir_reason(const std::string& dir);

// Creates `path` and its missing parents with mode 0700, checking with lstat that
// each directory it creates is a directory of the current user and not a link
// (parents that exist are left as they are). False with `*error` set on failure.
bool make_private_dirs(const std::string& path, std::string* error);

// A new directory parent/<prefix>XXXXXX made by mkdtemp (an unpredictable name,
// created exclusively, mode 0700); nullopt with `*error` set on failure.
std::optional<std::string> make_temp_dir(const std::string& parent, const std::string& prefix, std::string* error);

// This process's private cache directory under $TMPDIR (or /tmp), made once by
// mkdtemp and removed when the process that made it exits; empty when even that
// failed.
const std::string& private_fallback_dir();

// Gives the files under `dir` mode 0600 and its directories 0700, without
// following links (the umask of the process that wrote them does not matter).
void make_tree_private(const std::string& dir);

// Writes `data` to the new file `path` (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600).
bool write_private_file(const std::string& path, const std::string& data);

// The contents of the regular file `path`, opened without following a link;
// nullopt when it is missing, a link or not a regular file. With `private_only`,
// the file must also belong to the current user and be readable by no one else.
std::optional<std::string> read_regular_file(const std::string& path, bool private_only = false);

}  // namespace tl
