// ir/attr_keys.def is true: every key is distinct, and every file it names as a
// producer or consumer of a key spells that key's constant (or, for the frontend's
// Python files, the key itself).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "ir/attrs.h"

namespace tl {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "lower_fragments" -> src/transform/lower_fragments.cpp; "pipeline_loops/emit" ->
// src/transform/pipeline_loops/emit.cpp; "codegen_cuda" ->
// src/codegen/cuda/codegen_cuda.cpp; "ops/gemm" -> src/ops/gemm.cpp;
// "language/loops.py" -> python/tilelang/language/loops.py.
std::string source_of(const std::string& name) {
  std::string root = TL_SOURCE_DIR;
  if (name.find(".py") != std::string::npos) return read(root + "/python/tilelang/" + name);
  if (name.rfind("ops/", 0) == 0) return read(root + "/src/" + name + ".cpp");
  if (name.rfind("codegen_", 0) == 0) {
    std::string family = name.substr(8);
    std::string text = read(root + "/src/codegen/" + family + "/" + name + ".cpp");
    if (text.empty()) text = read(root + "/src/codegen/c_family/" + name + ".cpp");
    return text;
  }
  return read(root + "/src/transform/" + name + ".cpp");
}

std::vector<std::string> names(const char* list) {
  std::vector<std::string> out;
  std::stringstream s(list);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b));
  }
  return out;
}

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
