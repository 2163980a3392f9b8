// Loading and launching CPU kernels.
#include "runtime/cpu/cpu_kernel.h"

#include <dlfcn.h>

#include "runtime/cpu/thread_pool.h"

namespace tl {

CpuKernel::CpuKernel(KernelSignature sig, Target target, std::string source, const std::string& library_path,
                     const std::string& entry)
    : Kernel(std::move(sig), std::move(target), std::move(source), "") {
  handle_ = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw std::runtime_error("cannot load kernel library " + library_path + ": " + dlerror());
  fn_ = reinterpret_cast<BlockFn>(dlsym(handle_, entry.c_str()));
  if (!fn_) {
    dlclose(handle_);
    handle_ = nullptr;
    throw std::runtime_error("kernel library " + library_path + " has no symbol " + entry);
  }
}

CpuKernel::~CpuKernel() {
  if (handle_) dlclose(handle_);
}

void CpuKernel::launch(const std::vector<KernelArg>& slots, const std::array<int64_t, 3>& grid) const {
  const KernelArg* args = slots.data();
  BlockFn fn = fn_;
  int64_t gx = grid[0], gy = grid[1];
  parallel_for(grid[0] * grid[1] * grid[2], [=](int64_t i) { fn(args, i % gx, (i / gx) % gy, i / (gx * gy)); });
}

}  // namespace tl
