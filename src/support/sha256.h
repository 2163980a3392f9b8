// SHA-256 from the system's OpenSSL libcrypto, loaded at run time so that the
// package builds without OpenSSL headers. Used for cache keys and checksums, and
// HMAC-SHA256 (RFC 2104) over it for the disk cache's per-user authentication.
#pragma once

#include <optional>
#include <string>

namespace tl {

// Hex digest, or nullopt when libcrypto cannot be loaded on this machine.
std::optional<std::string> sha256_hex(const std::string& data);

// The 32 raw bytes of the digest, or nullopt as above.
std::optional<std::string> sha256_raw(const std::string& data);

// HMAC-SHA256 of `data` under `key` (any length), as hex; nullopt as above.
std::optional<std::string> hmac_sha256_hex(const std::string& key, const std::string& data);

}  // namespace tl
