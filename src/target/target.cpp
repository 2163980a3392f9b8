// Parsing of target strings as TileLang users write them.
#include "target/target.h"

#include <cctype>
#include <set>
#include <sstream>

#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

#include "runtime/cuda/cuda_api.h"
#include "support/error.h"

namespace tl {
namespace {

// The dict form {"kind": "metal", "keys": ["metal4"], "arch": "sm_90"} as the
// equivalent target string. Values are strings, lists of strings, or true/false.
std::string dict_to_string(const std::string& text) {
  size_t i = 0;
  auto fail = [&](const std::string& why) -> std::string {
    throw_user_error({}, str_cat("cannot read the target dict '", text, "': ", why,
                                 "; write e.g. {\"kind\": \"metal\", \"keys\": [\"metal4\"]}"));
  };
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  auto expect = [&](char c) {
    skip();
    if (i >= text.size() || text[i] != c) fail(str_cat("expected '", std::string(1, c), "' at offset ", i));
    ++i;
  };
  auto string = [&] {
    skip();
    if (i >= text.size() || (text[i] != '"' && text[i] != '\'')) fail(str_cat("expected a string at offset ", i));
    char quote = text[i++];
    size_t end = text.find(quote, i);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = text.substr(i, end - i);
    i = end + 1;
    return out;
  };
  auto word = [&] {
    skip();
    size_t start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '-'))
      ++i;
    if (start == i) fail(str_cat("expected a value at offset ", start));
    return text.substr(start, i - start);
  };
  std::string kind, options;
  expect('{');
  skip();
  while (i < text.size() && text[i] != '}') {
    std::string key = string();
    expect(':');
    skip();
    std::string value;
    if (i < text.size() && text[i] == '[') {
      ++i;
      skip();
      while (i < text.size() && text[i] != ']') {
        // Appended in two steps, not value += "," + string(): GCC 12 gives a false -Wrestrict
        // warning on that (GCC bug 105651).
        if (!value.empty()) value += ',';
        value += string();
        skip();
        if (i < text.size() && text[i] == ',') ++i;
        skip();
      }
      expect(']');
    } else if (i < text.size() && (text[i] == '"' || text[i] == '\'')) {
      value = string();
    } else {
      value = word();
    }
    if (key == "kind") {
      kind = value;
    } else if (value == "true" || value == "True") {
      options += " -" + key;
    } else if (value != "false" && value != "False" && !value.empty()) {
      options += " -" + key + "=" + value;
    }
    skip();
    if (i < text.size() && text[i] == ',') ++i;
    skip();
  }
  expect('}');
  if (kind.empty()) fail("it has no \"kind\"");
  return kind + options;
}

// The options of TVM's target strings that TileLang code passes (TVM rejects any
// other): accepted and, except -arch, -keys and -emulate, without effect on our code.
bool is_known_option(const std::string& key) {
  static const std::set<std::string> known = {"arch",
                                              "keys",
                                              "emulate",
                                              "mcpu",
                                              "mtriple",
                                              "mattr",
                                              "mabi",
                                              "mfloat-abi",
                                              "libs",
                                              "device",
                                              "model",
                                              "tag",
                                              "host",
                                              "from_device",
                                              "max_num_threads",
                                              "thread_warp_size",
                                              "max_threads_per_block",
                                              "max_shared_memory_per_block",
                                              "registers_per_block",
                                              "l2_cache_size_bytes",
                                              "max_function_args",
                                              "num-cores",
                                              "opt-level",
                                              "fast-math",
                                              "system-lib",
                                              "runtime",
                                              "link-params",
                                              "jit",
                                              "vector-width"};
  return known.count(key) > 0;
}

// "sm_80", "sm_90a", "sm_100f": a compute capability of two or three digits and an
// optional feature suffix. The number is returned, or -1 when `arch` is not of that form.
int parse_sm_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return -1;
  size_t i = 3;
  int v = 0;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) v = v * 10 + (arch[i++] - '0');
  size_t digits = i - 3;
  if (digits < 2 || digits > 3) return -1;
  if (i < arch.size() && (arch[i] == 'a' || arch[i] == 'f')) ++i;
  return i == arch.size() ? v : -1;
}

void check_cuda_arch(const std::string& arch, const std::string& text) {
  int v = parse_sm_arch(arch);
  if (v < 0)
    throw_user_error({},
                     str_cat("invalid CUDA arch '", arch, "' in target '", text,
                             "'; expected sm_ and the compute capability, such as sm_80, sm_89, sm_90a or sm_100a"));
  if (v < kMinSmVersion)
    throw_user_error({}, str_cat("CUDA arch ", arch, " in target '", text, "' is not supported: the oldest is sm_",
                                 kMinSmVersion, " (ldmatrix and tensor-core mma.sync for float16)"));
}

}  // namespace

bool metal4_supported(const std::string& macos_version, const std::string& chip) {
  int major = std::atoi(macos_version.c_str());
  size_t m = chip.find("Apple M");
  if (major < 26 || m == std::string::npos) return false;
  return std::atoi(chip.c_str() + m + 7) >= 5;
}

std::set<std::string> detect_metal_keys() {
#ifdef __APPLE__
  auto read = [](const char* name) {
    char buf[256] = {};
    size_t len = sizeof buf - 1;
    return sysctlbyname(name, buf, &len, nullptr, 0) == 0 ? std::string(buf) : std::string();
  };
  static const bool metal4 = metal4_supported(read("kern.osproductversion"), read("machdep.cpu.brand_string"));
  if (metal4) return {"metal4"};
#endif
  return {};
}

Target Target::parse(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\n");
  if (first != std::string::npos && text[first] == '{') return parse(dict_to_string(text));
  const std::string& s = text;
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
    // The code runs on this very GPU, so a Hopper gets its arch-specific
    // instructions (wgmma, setmaxnreg) too.
    if (t.arch == "sm_90") t.arch = "sm_90a";
  } else if (word == "metal") {
    t.kind = TargetKind::Metal;
  } else {
    throw_user_error({}, str_cat("unknown target '", s,
                                 "'; expected \"auto\", \"cpu\", \"cuda\", "
                                 "\"cuda -arch=sm_90a\", \"metal\" or \"metal -keys=metal4\""));
  }
  bool keys_given = false;
  while (is >> word) {
    if (word.rfind('-', 0) == 0 && !is_known_option(word.substr(1, word.find('=') - 1)))
      throw_user_error({}, str_cat("unknown target option '", word, "' in '", s,
                                   "'; tilelang knows -arch=, -keys=, -emulate and TVM's target options "
                                   "(-mcpu=, -max_num_threads=, -thread_warp_size= ...)"));
    if (word.rfind("-arch=", 0) == 0) {
      t.arch = word.substr(6);
    } else if (word.rfind("-keys=", 0) == 0) {
      keys_given = true;
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
    } else if (word.rfind('-', 0) == 0) {
      // Other TVM-style options (-mcpu=..., -thread_warp_size=...) do not change our code.
    } else {
      throw_user_error({}, str_cat("cannot read target option '", word, "' in '", s, "'"));
    }
  }
  if (t.kind == TargetKind::CUDA) check_cuda_arch(t.arch, s);
  // "metal" alone: Metal 4 where this Mac has it (an explicit -keys= is kept as given).
  if (t.kind == TargetKind::Metal && !keys_given) t.keys = detect_metal_keys();
  return t;
}

std::optional<std::string> launch_limit_violation(const Target& t, const std::array<int64_t, 3>& grid,
                                                  const std::vector<int64_t>& threads) {
  const char* axis = "xyz";
  for (int d = 0; d < 3; ++d) {
    int64_t g = grid[d];
    if (g == -1) continue;
    if (g < 0) return str_cat("its grid has ", g, " blocks along ", axis[d], "; a grid extent cannot be negative");
    if (t.max_grid_dim(d) && g > t.max_grid_dim(d))
      return str_cat("its grid has ", g, " blocks along ", axis[d], "; the target '", t.str(), "' launches at most ",
                     t.max_grid_dim(d), " (gridDim.", axis[d], "); use fewer, larger blocks or another grid dimension");
    int64_t th = d < int(threads.size()) ? threads[d] : 1;
    if (t.max_grid_threads() && g * th > t.max_grid_threads())
      return str_cat("its grid has ", g, " blocks of ", th, " threads along ", axis[d], "; the target '", t.str(),
                     "' runs at most ", t.max_grid_threads(), " threads of a grid along one dimension");
  }
  for (size_t d = 0; d < threads.size() && d < 3; ++d)
    if (t.max_block_dim(int(d)) && threads[d] > t.max_block_dim(int(d)))
      return str_cat("its blocks have ", threads[d], " threads along ", axis[d], "; the target '", t.str(),
                     "' allows at most ", t.max_block_dim(int(d)), " (blockDim.", axis[d], ")");
  return std::nullopt;
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
