// Parsing of target strings as TileLang users write them.
#include "target/target.h"

#include <sstream>

#include "runtime/cuda/cuda_api.h"
#include "support/error.h"

namespace tl {

Target Target::parse(const std::string& s) {
  std::istringstream is(s);
  std::string word;
  is >> word;
  Target t;
  if (word == "cpu" || word == "c" || word == "llvm") {
    t.kind = TargetKind::CPU;
  } else if (word == "cuda") {
    t.kind = TargetKind::CUDA;
    // Without -arch: the present GPU's arch, or sm_80 (the oldest we support) when
    // compiling on a machine without one.
    t.arch = present_gpu_arch();
    if (t.arch.empty()) t.arch = "sm_80";
  } else if (word == "metal") {
    t.kind = TargetKind::Metal;
  } else {
    throw_user_error({}, str_cat("unknown target '", s,
                                 "'; expected \"auto\", \"cpu\", \"cuda\", "
                                 "\"cuda -arch=sm_90a\" or \"metal\""));
  }
  while (is >> word) {
    if (word.rfind("-arch=", 0) == 0) {
      t.arch = word.substr(6);
    } else if (word.rfind("-keys=", 0) == 0) {
      std::string keys = word.substr(6);
      size_t pos = 0;
      while (pos <= keys.size()) {
        size_t comma = keys.find(',', pos);
        if (comma == std::string::npos) comma = keys.size();
        if (comma > pos) t.keys.insert(keys.substr(pos, comma - pos));
        pos = comma + 1;
      }
    } else if (word == "-emulate") {
      t.emulated = true;
    } else if (word.rfind("-", 0) == 0) {
      // Other TVM-style options (-mcpu=..., -thread_warp_size=...) do not change our code.
    } else {
      throw_user_error({}, str_cat("cannot read target option '", word, "' in '", s, "'"));
    }
  }
  return t;
}

std::string Target::str() const {
  std::string s = kind == TargetKind::CPU ? "cpu" : kind == TargetKind::CUDA ? "cuda" : "metal";
  if (!arch.empty()) s += " -arch=" + arch;
  if (!keys.empty()) {
    s += " -keys=";
    bool first = true;
    for (const std::string& k : keys) {
      s += (first ? "" : ",") + k;
      first = false;
    }
  }
  if (emulated) s += " -emulate";
  return s;
}

}  // namespace tl
