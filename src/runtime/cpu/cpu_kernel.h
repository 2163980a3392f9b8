// A CPU kernel: a shared library loaded with dlopen whose block functions (one
// per T.Kernel block) the thread pool calls once per block.
#pragma once

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
  void* handle_ = nullptr;
  std::vector<BlockFn> fns_;  // per launch
  // T.device_assert support exported by device/cpu/debug.h (absent: not checked).
  using BeginBlockFn = int (*)(int64_t, int64_t, int64_t);
  using TakeAssertFn = int (*)(char*, int64_t, int64_t*);
  BeginBlockFn begin_block_ = nullptr;
  TakeAssertFn take_assert_ = nullptr;
};

}  // namespace tl
