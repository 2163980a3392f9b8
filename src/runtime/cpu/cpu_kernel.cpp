// Loading and launching CPU kernels.
#include "runtime/cpu/cpu_kernel.h"

#include <dlfcn.h>

#include "runtime/cpu/thread_pool.h"

namespace tl {

CpuKernel::CpuKernel(KernelSignature sig, Target target, std::string source, const std::string& library_path,
                     const std::vector<std::string>& entries)
    : Kernel(std::move(sig), std::move(target), std::move(source), "") {
  if (entries.size() != signature().launches.size())
    throw std::runtime_error(str_cat("kernel library ", library_path, ": ", entries.size(), " entries for ",
                                     signature().launches.size(), " launches"));
  handle_ = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw std::runtime_error("cannot load kernel library " + library_path + ": " + dlerror());
  for (const std::string& entry : entries) {
    auto fn = reinterpret_cast<BlockFn>(dlsym(handle_, entry.c_str()));
    if (!fn) {
      dlclose(handle_);
      handle_ = nullptr;
      throw std::runtime_error("kernel library " + library_path + " has no symbol " + entry);
    }
    fns_.push_back(fn);
  }
  begin_block_ = reinterpret_cast<BeginBlockFn>(dlsym(handle_, "tl_debug_begin_block"));
  take_assert_ = reinterpret_cast<TakeAssertFn>(dlsym(handle_, "tl_debug_take_assert"));
}

CpuKernel::~CpuKernel() {
  if (handle_) dlclose(handle_);
}

void CpuKernel::launch(size_t index, const KernelArg* args, size_t, const std::array<int64_t, 3>& grid, int,
                       void*) const {
  BlockFn fn = fns_[index];
  int64_t gx = grid[0], gy = grid[1];
  if (!begin_block_ || !take_assert_) {
    parallel_for(grid[0] * grid[1] * grid[2], [=](int64_t i) { fn(args, i % gx, (i / gx) % gy, i / (gx * gy)); });
    return;
  }
  // A failed T.device_assert is recorded by the kernel; blocks not yet started are
  // skipped and the failure is raised here, as the GPU would stop the kernel.
  BeginBlockFn begin = begin_block_;
  char message[1024];
  int64_t block[3];
  try {
    parallel_for(grid[0] * grid[1] * grid[2], [=](int64_t i) {
      int64_t bx = i % gx, by = (i / gx) % gy, bz = i / (gx * gy);
      if (!begin(bx, by, bz)) fn(args, bx, by, bz);
    });
  } catch (...) {
    take_assert_(message, sizeof message, block);  // an exception ends the launch; so does its assertion record
    throw;
  }
  if (!take_assert_(message, sizeof message, block)) return;
  // The emulators report shared-memory races and threadgroup divergence through the same channel.
  std::string text(message);
  if (text.rfind("shared-memory race", 0) == 0 || text.rfind("threadgroup ", 0) == 0 ||
      text.rfind("warp-level call", 0) == 0)
    throw_user_error({}, str_cat("kernel '", signature().name, "': ", message, " (block (", block[0], ", ", block[1],
                                 ", ", block[2], "))"));
  throw_user_error({}, str_cat("device assertion failed in kernel '", signature().name, "': ", message, " (block (",
                               block[0], ", ", block[1], ", ", block[2], "))"));
}

}  // namespace tl
