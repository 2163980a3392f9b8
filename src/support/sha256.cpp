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

}  // namespace

std::optional<std::string> sha256_hex(const std::string& data) {
  static Sha256Fn fn = load_sha256();
  if (!fn) return std::nullopt;
  unsigned char md[32];
  fn(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : md) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

}  // namespace tl
