// compile(): cache lookup, and on a miss lowering, codegen and the device
// compiler. Only this file and pipeline.cpp know which backend serves a target.
#include "tl/compile.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "cache/kernel_cache.h"
#include "codegen/cpu/codegen_cpu.h"
#include "ir/printer.h"
#include "runtime/cpu/cpu_kernel.h"
#include "runtime/cpu/host_compiler.h"
#include "runtime/device_dir.h"
#include "support/logging.h"
#include "support/sha256.h"
#include "transform/pipeline.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string entry_name(const PrimFunc& f) {
  std::string s;
  for (char c : f->name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "tl_block_" + s;
}

std::shared_ptr<Kernel> build_cpu(const PrimFunc& f, const CompileOptions& opt, const KernelSignature& sig,
                                  const std::string& key) {
  auto build_into = [&](const std::string& dir) {
    CpuSource src = codegen_cpu(lower(f, opt.target, opt.pass_configs), sig);
    std::ofstream(fs::path(dir) / "kernel.cpp", std::ios::binary) << src.code;
    compile_shared_library((fs::path(dir) / "kernel.cpp").string(), (fs::path(dir) / "kernel.so").string(),
                           opt.compile_flags);
  };
  auto load = [&](const std::string& dir) {
    return std::make_shared<CpuKernel>(sig, opt.target, read_text(fs::path(dir) / "kernel.cpp"),
                                       (fs::path(dir) / "kernel.so").string(), entry_name(f));
  };
  std::optional<std::string> hash = sha256_hex(key);
  if (opt.use_cache && hash) {
    DiskCache disk(opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir);
    if (auto dir = disk.lookup(*hash)) {
      try {
        return load(*dir);
      } catch (const std::runtime_error& e) {
        log(LogLevel::Debug, std::string("cache entry failed to load, rebuilding: ") + e.what());
      }
    }
    if (auto dir = disk.publish(*hash, build_into)) return load(*dir);
  }
  // No disk cache: build in a private temporary directory.
  fs::path tmp = fs::temp_directory_path() /
                 ("tilelang-build-" + std::to_string(std::hash<std::string>()(key)) + "-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  build_into(tmp.string());
  auto k = load(tmp.string());
  std::error_code ec;
  fs::remove_all(tmp, ec);  // the loaded library stays mapped
  return k;
}

}  // namespace

std::string cache_key_material(const PrimFunc& f, const CompileOptions& opt) {
  std::ostringstream os;
  os << "tilelang-cpp " << TL_VERSION << " built " << __DATE__ << " " << __TIME__ << "\n";
  os << "target: " << opt.target.str() << "\n";
  if (opt.target.kind == TargetKind::CPU) os << "host compiler: " << host_compiler_id() << "\n";
  for (const auto& [k, v] : opt.pass_configs) os << "pass_config " << k << "=" << to_string(v) << "\n";
  for (const std::string& flag : opt.compile_flags) os << "flag " << flag << "\n";
  os << "device headers sha256: " << sha256_hex(device_headers_digest_input()).value_or("?") << "\n";
  os << to_string(f);
  return os.str();
}

std::string generate_source(const PrimFunc& f, const Target& target) {
  KernelSignature sig = KernelSignature::from(f);
  if (target.kind != TargetKind::CPU)
    throw_user_error({}, str_cat("the ", target.str(), " target is not supported yet; use target=\"cpu\""));
  return codegen_cpu(lower(f, target), sig).code;
}

std::shared_ptr<Kernel> compile(const PrimFunc& f, const CompileOptions& opt) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<Kernel>> memory;
  KernelSignature sig = KernelSignature::from(f);
  if (opt.target.kind != TargetKind::CPU)
    throw_user_error({}, str_cat("the ", opt.target.str(), " target is not supported yet; use target=\"cpu\""));
  std::string key = cache_key_material(f, opt);
  if (opt.use_cache) {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memory.find(key); it != memory.end()) return it->second;
  }
  log(LogLevel::Debug, "compiling kernel '" + f->name + "' for " + opt.target.str());
  std::shared_ptr<Kernel> k = build_cpu(f, opt, sig, key);
  if (opt.use_cache) {
    std::lock_guard<std::mutex> lock(mu);
    memory.emplace(key, k);
  }
  return k;
}

}  // namespace tl
