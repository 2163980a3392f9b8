// Loads libcrypto's one-shot SHA256() once; see sha256.h for why it is dynamic.
#include "support/sha256.h"

#include <dlfcn.h>

namespace tl {
namespace {

using Sha256Fn = unsigned char* (*)(const unsigned char*, size_t, unsigned char*);

Sha256Fn load_sha256() {
  const char* names[] = {"libcrypto.so.3", "libcrypto.so", "libcrypto.3.dylib", "libcrypto.dylib", "libcrypto.so.1.1"};
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      if (void* f = dlsym(h, "SHA256")) return reinterpret_cast<Sha256Fn>(f);
    }
  }
  return nullptr;
}

std::string to_hex(const std::string& bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

}  // namespace

std::optional<std::string> sha256_raw(const std::string& data) {
  static Sha256Fn fn = load_sha256();
  if (!fn) return std::nullopt;
  unsigned char md[32];
  fn(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return std::string(reinterpret_cast<const char*>(md), sizeof(md));
}

std::optional<std::string> sha256_hex(const std::string& data) {
  std::optional<std::string> raw = sha256_raw(data);
  if (!raw) return std::nullopt;
  return to_hex(*raw);
}

// H((K0 ^ opad) || H((K0 ^ ipad) || data)), K0 the key padded to the 64-byte block
// (a longer key hashed first).
std::optional<std::string> hmac_sha256_hex(const std::string& key, const std::string& data) {
  constexpr size_t kBlock = 64;
  std::string k0 = key;
  if (k0.size() > kBlock) {
    std::optional<std::string> hashed = sha256_raw(k0);
    if (!hashed) return std::nullopt;
    k0 = *hashed;
  }
  k0.resize(kBlock, '\0');
  std::string inner(kBlock, '\0'), outer(kBlock, '\0');
  for (size_t i = 0; i < kBlock; ++i) {
    inner[i] = char(k0[i] ^ 0x36);
    outer[i] = char(k0[i] ^ 0x5c);
  }
  std::optional<std::string> inner_digest = sha256_raw(inner + data);
  if (!inner_digest) return std::nullopt;
  std::optional<std::string> digest = sha256_raw(outer + *inner_digest);
  if (!digest) return std::nullopt;
  return to_hex(*digest);
}

}  // namespace tl
