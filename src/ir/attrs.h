// The keys lowered IR carries between passes and to the code generators, from the one
// list in attr_keys.def: each is a `constexpr const char*` here (kBlockOpAttr ...),
// and attr_keys() describes them (value, producer, consumers, meaning). Passes and
// code generators include this header for a key, not the header of the pass that
// writes it.
#pragma once

#include <vector>

namespace tl {

#define TL_ATTR(ident, key, value, producer, consumers, meaning) inline constexpr const char* ident = key;
#include "ir/attr_keys.def"
#undef TL_ATTR

// Values of kGemmSpAttr.
inline constexpr int kGemmSpDecoded = 1;
inline constexpr int kGemmSpCompressed = 2;

struct AttrKeyInfo {
  const char* ident;
  const char* key;
  const char* value;
  const char* producer;   // files that write it, comma-separated
  const char* consumers;  // files that read it, comma-separated
  const char* meaning;
};

inline const std::vector<AttrKeyInfo>& attr_keys() {
  static const std::vector<AttrKeyInfo> keys = {
#define TL_ATTR(ident, key, value, producer, consumers, meaning) {#ident, key, value, producer, consumers, meaning},
#include "ir/attr_keys.def"
#undef TL_ATTR
  };
  return keys;
}

}  // namespace tl
