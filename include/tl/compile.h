// compile(): from a PrimFunc to a loaded, callable Kernel, through the kernel
// cache (memory, then disk, then lowering + codegen + device compiler).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/kernel.h"
#include "target/target.h"
#include "tl/device_dir.h"
#include "tl/runtime.h"

namespace tl {

struct CompileOptions {
  Target target;
  Attrs pass_configs;
  std::vector<std::string> compile_flags;
  bool use_cache = true;  // memory and disk
  std::string cache_dir;  // empty: default_cache_dir()
  // CUDA targets (emulated too): rewrites the generated source before it is compiled
  // (tilelang.engine.callback's CUDA post-processor). The result's hash joins the
  // cache key, so a different rewrite never loads another's binary.
  std::function<std::string(const std::string&)> cuda_postproc;
};

std::shared_ptr<Kernel> compile(const PrimFunc& f, const CompileOptions& options = {});

// Builds the disk-cache entry that kernels of `options` (target, compile flags, cache)
// compile against, if it is missing: the cpu target's precompiled header or the
// emulators' runtime (src/driver/cpu/prelude_entry.h); nothing for other targets or
// with the cache off. The autotuner calls it before timing its compiles.
void prepare_host_compiler(const CompileOptions& options);

// Generated source without compiling (for inspection, tests and tilelang.lower).
std::string generate_source(const PrimFunc& f, const Target& target, const Attrs& pass_configs = {});

// The text the cache key hashes: everything that changes the binary.
std::string cache_key_material(const PrimFunc& f, const CompileOptions& options);

// Number of real builds (codegen + device compiler) in this process; cache hits
// do not count.
int64_t compile_count();

// Number of kernels the in-memory cache holds now (at most
// TILELANG_MEMORY_CACHE_MAX_KERNELS; see cache/memory_cache.h).
int64_t memory_cache_size();

}  // namespace tl
