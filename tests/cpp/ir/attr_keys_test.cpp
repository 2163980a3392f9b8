// ir/attr_keys.def is true: every key is distinct, and every file it names as a
// producer or consumer of a key spells that key's constant (or, for the frontend's
// Python files, the key itself).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/attrs.h"
#include "source_files.h"

namespace tl {
namespace {

using test::names;
using test::source_of;

TEST(AttrKeys, KeysAreDistinct) {
  std::set<std::string> seen;
  for (const AttrKeyInfo& k : attr_keys()) EXPECT_TRUE(seen.insert(k.key).second) << k.key;
}

TEST(AttrKeys, ProducersAndConsumersUseTheKey) {
  for (const AttrKeyInfo& k : attr_keys()) {
    for (const char* list : {k.producer, k.consumers}) {
      if (std::string(list).rfind("(", 0) == 0) continue;  // "(IR dumps only)"
      for (const std::string& file : names(list)) {
        std::string text = source_of(file);
        ASSERT_FALSE(text.empty()) << k.ident << ": no source for '" << file << "'";
        bool python = file.find(".py") != std::string::npos;
        EXPECT_NE(text.find(python ? k.key : k.ident), std::string::npos)
            << file << " is named for " << k.ident << " (" << k.key << ") but does not use it";
      }
    }
  }
}

}  // namespace
}  // namespace tl
