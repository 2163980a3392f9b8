// A CPU kernel: a shared library loaded with dlopen whose block function the
// thread pool calls once per block.
#pragma once

#include "runtime/kernel.h"

namespace tl {

class CpuKernel : public Kernel {
 public:
  // Loads `library_path` and finds `entry`; throws when either fails.
  CpuKernel(KernelSignature sig, Target target, std::string source, const std::string& library_path,
            const std::string& entry);
  ~CpuKernel() override;

 protected:
  void launch(const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  using BlockFn = void (*)(const KernelArg*, int64_t, int64_t, int64_t);
  void* handle_ = nullptr;
  BlockFn fn_ = nullptr;
  // T.device_assert support exported by device/cpu/debug.h (absent: not checked).
  using BeginBlockFn = int (*)(int64_t, int64_t, int64_t);
  using TakeAssertFn = int (*)(char*, int64_t, int64_t*);
  BeginBlockFn begin_block_ = nullptr;
  TakeAssertFn take_assert_ = nullptr;
};

}  // namespace tl
