// SHA-256 from the system's OpenSSL libcrypto, loaded at run time so that the
// package builds without OpenSSL headers. Used for cache keys and checksums.
#pragma once

#include <optional>
#include <string>

namespace tl {

// Hex digest, or nullopt when libcrypto cannot be loaded on this machine.
std::optional<std::string> sha256_hex(const std::string& data);

}  // namespace tl
