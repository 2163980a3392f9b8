// A CUDA kernel: a cubin built by NVRTC for the exact arch, loaded into the
// device's primary context at its first call (so compiling needs no GPU).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/kernel.h"

namespace tl {

class CudaKernel : public Kernel {
 public:
  CudaKernel(KernelSignature sig, Target target, std::string source, std::vector<char> cubin, std::string entry,
             int64_t shared_bytes);

  const std::vector<char>& cubin() const { return cubin_; }

 protected:
  void launch(const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  void* function_for(int device_id) const;
  void* load_function(int device_id) const;

  std::vector<char> cubin_;
  std::string entry_;
  int64_t shared_bytes_;
  unsigned threads_[3] = {1, 1, 1};
  // The loaded function per device ordinal: read without a lock on every launch
  // (set once, under mu_, by the first call on that device).
  static constexpr int kMaxDevices = 64;
  mutable std::atomic<void*> functions_[kMaxDevices];
  mutable std::mutex mu_;
};

}  // namespace tl
