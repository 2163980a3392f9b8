// A CPU kernel: a shared library loaded with dlopen whose block functions (one
// per T.Kernel block) the thread pool calls once per block, or, for a block that
// calls T.sync_grid, an OS thread of its own per block, all at once.
#pragma once

#include <functional>
#include <mutex>

#include "runtime/kernel.h"

namespace tl {

class CpuKernel : public Kernel {
 public:
  // Loads `library_path` and finds `entries` (one per launch of `sig`); throws
  // when any is missing.
  CpuKernel(KernelSignature sig, Target target, std::string source, const std::string& library_path,
            const std::vector<std::string>& entries);
  ~CpuKernel() override;

 protected:
  void launch(size_t index, const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  using BlockFn = void (*)(const KernelArg*, int64_t, int64_t, int64_t);
  // Refuses a cooperative launch larger than the OS threads and fibers it may start.
  void check_cooperative_grid(size_t index, const std::array<int64_t, 3>& grid) const;
  // Runs block(i) for i in [0, n) each on an OS thread of its own, all at once.
  void run_cooperative(int64_t n, const std::function<void(int64_t)>& block) const;
  void* handle_ = nullptr;
  std::vector<BlockFn> fns_;  // per launch
  // T.device_assert support exported by device/cpu/debug.h (absent: not checked).
  using BeginBlockFn = int (*)(int64_t, int64_t, int64_t);
  using TakeAssertFn = int (*)(char*, int64_t, int64_t*);
  BeginBlockFn begin_block_ = nullptr;
  TakeAssertFn take_assert_ = nullptr;
  // The grid barrier's side of a cooperative launch (device/cpu/grid_rendezvous.h).
  using GridBeginFn = void (*)(int64_t);
  using GridEventFn = void (*)();
  GridBeginFn grid_begin_ = nullptr;
  GridEventFn grid_block_exit_ = nullptr, grid_end_ = nullptr;
  mutable std::mutex cooperative_mu_;  // the library has one grid barrier: one launch at a time
};

}  // namespace tl
