// The sources that ir/attr_keys.def and ir/device_calls.def name as producers and
// consumers, read by their tests: a name as those tables spell it, to its file.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tl::test {

inline std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "lower_fragments" -> src/transform/lower_fragments.cpp; "pipeline_loops/emit" ->
// src/transform/pipeline_loops/emit.cpp; "codegen_cuda" ->
// src/codegen/cuda/codegen_cuda.cpp; "ops/gemm" -> src/ops/gemm.cpp (driver/ and
// builder/ and ir/ likewise);
// "language/loops.py" -> python/tilelang/language/loops.py.
inline std::string source_of(const std::string& name) {
  std::string root = TL_SOURCE_DIR;
  if (name.find(".py") != std::string::npos) return read(root + "/python/tilelang/" + name);
  for (const char* dir : {"ops/", "driver/", "builder/", "ir/"})
    if (name.rfind(dir, 0) == 0) return read(root + "/src/" + name + ".cpp");
  if (name.rfind("codegen_", 0) == 0) {
    std::string family = name.substr(8);
    std::string text = read(root + "/src/codegen/" + family + "/" + name + ".cpp");
    if (text.empty()) text = read(root + "/src/codegen/c_family/" + name + ".cpp");
    return text;
  }
  return read(root + "/src/transform/" + name + ".cpp");
}

inline std::vector<std::string> names(const char* list) {
  std::vector<std::string> out;
  std::stringstream s(list);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b));
  }
  return out;
}

}  // namespace tl::test
