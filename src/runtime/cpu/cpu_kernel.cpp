// Loading and launching CPU kernels (the cpu target and the emulators).
#include "runtime/cpu/cpu_kernel.h"

#include <dlfcn.h>

#include <system_error>
#include <thread>

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
  grid_begin_ = reinterpret_cast<GridBeginFn>(dlsym(handle_, "tl_grid_begin"));
  grid_block_exit_ = reinterpret_cast<GridEventFn>(dlsym(handle_, "tl_grid_block_exit"));
  grid_end_ = reinterpret_cast<GridEventFn>(dlsym(handle_, "tl_grid_end"));
}

CpuKernel::~CpuKernel() {
  if (handle_) dlclose(handle_);
}

// A cooperative launch starts an OS thread per block (and a fiber per thread of a
// block that reads thread indices): the limits keep that within what a host runs
// well, and far from the kernel's limit on memory mappings (one per fiber stack).
constexpr int64_t kMaxCooperativeBlocks = 1024;
constexpr int64_t kMaxCooperativeThreads = 65536;

void CpuKernel::check_cooperative_grid(size_t index, const std::array<int64_t, 3>& grid) const {
  const LaunchSpec& spec = signature().launches[index];
  int64_t threads = 1;
  for (int64_t t : spec.threads) threads *= t;
  const int64_t blocks = grid[0] * grid[1] * grid[2];
  const int64_t most = std::min(kMaxCooperativeBlocks, std::max<int64_t>(1, kMaxCooperativeThreads / threads));
  if (blocks <= most) return;
  throw_user_error(
      spec.span, str_cat("kernel '", signature().name, "' calls T.sync_grid(), so the target '", target().str(),
                         "' runs each of its blocks on an OS thread of its own, all at once; its grid (", grid[0], ", ",
                         grid[1], ", ", grid[2], ") has ", blocks, " blocks of ", threads, " threads, more than the ",
                         most, " it runs at once (", kMaxCooperativeBlocks, " blocks and ", kMaxCooperativeThreads,
                         " threads in all); launch at most ", most,
                         " blocks and let each loop over its share of the work (a persistent kernel)"));
}

void CpuKernel::run_cooperative(int64_t n, const std::function<void(int64_t)>& block) const {
  if (!grid_begin_ || !grid_block_exit_ || !grid_end_)
    throw_internal_error(__FILE__, __LINE__,
                         str_cat("kernel '", signature().name,
                                 "' calls T.sync_grid() but its library exports no tl_grid_begin (device/cpu/"
                                 "grid_rendezvous.h); a bug in the compiler"));
  std::lock_guard<std::mutex> lock(cooperative_mu_);
  grid_begin_(n);
  std::mutex error_mu;
  std::exception_ptr error;
  auto run = [&](int64_t i) {
    try {
      block(i);
    } catch (...) {
      std::lock_guard<std::mutex> guard(error_mu);
      if (!error) error = std::current_exception();
    }
    grid_block_exit_();  // the blocks still waiting at a grid barrier then know it cannot complete
  };
  std::vector<std::thread> threads;
  threads.reserve(size_t(n));
  std::string failure;
  for (int64_t i = 0; i < n && failure.empty(); ++i) {
    try {
      threads.emplace_back(run, i);
    } catch (const std::system_error& e) {
      failure = str_cat("kernel '", signature().name, "': its cooperative launch (T.sync_grid) could start only ", i,
                        " of the ", n, " OS threads it needs, one per block (", e.what(), "); launch fewer blocks");
      for (int64_t j = i; j < n; ++j) grid_block_exit_();  // blocks that never run
    }
  }
  for (std::thread& t : threads) t.join();
  grid_end_();
  if (!failure.empty()) throw_user_error({}, failure);
  if (error) std::rethrow_exception(error);
}

void CpuKernel::launch(size_t index, const KernelArg* slots, size_t, const std::array<int64_t, 3>& grid, int,
                       void*) const {
  BlockFn fn = fns_[index];
  int64_t gx = grid[0], gy = grid[1];
  const int64_t n = grid[0] * grid[1] * grid[2];
  const bool cooperative = signature().launches[index].cooperative;
  if (cooperative) check_cooperative_grid(index, grid);
  auto run = [&](const std::function<void(int64_t)>& block) {
    cooperative ? run_cooperative(n, block) : parallel_for(n, block);
  };
  if (!begin_block_ || !take_assert_) {
    run([=](int64_t i) { fn(slots, i % gx, (i / gx) % gy, i / (gx * gy)); });
    return;
  }
  // A failed T.device_assert is recorded by the kernel; blocks not yet started are
  // skipped and the failure is raised here, as the GPU would stop the kernel.
  BeginBlockFn begin = begin_block_;
  char message[1024];
  int64_t block[3];
  try {
    run([=](int64_t i) {
      int64_t bx = i % gx, by = (i / gx) % gy, bz = i / (gx * gy);
      if (!begin(bx, by, bz)) fn(slots, bx, by, bz);
    });
  } catch (...) {
    take_assert_(message, sizeof message, block);  // an exception ends the launch; so does its assertion record
    throw;
  }
  if (!take_assert_(message, sizeof message, block)) return;
  // The emulators report shared-memory races and divergent barriers through the same channel,
  // at the T.Kernel's line: the lines they name are the generated source's.
  std::string text(message);
  if (text.rfind("shared-memory race", 0) == 0 || text.rfind("threadgroup ", 0) == 0 ||
      text.rfind("divergent __syncthreads", 0) == 0 || text.rfind("warp-level call", 0) == 0 ||
      text.rfind("T.sync_grid", 0) == 0)
    throw_user_error(signature().launches[index].span,
                     str_cat("kernel '", signature().name, "': ", message, " (block (", block[0], ", ", block[1], ", ",
                             block[2], "))"));
  throw_user_error({}, str_cat("device assertion failed in kernel '", signature().name, "': ", message, " (block (",
                               block[0], ", ", block[1], ", ", block[2], "))"));
}

}  // namespace tl
