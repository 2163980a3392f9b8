// A CUDA kernel: a cubin built by NVRTC for the exact arch, loaded into the
// device's primary context at its first call (so compiling needs no GPU).
#pragma once

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
  void launch(const std::vector<KernelArg>& slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  void* function_for(int device_id) const;

  std::vector<char> cubin_;
  std::string entry_;
  int64_t shared_bytes_;
  int64_t threads_[3] = {1, 1, 1};
  mutable std::mutex mu_;
  mutable std::vector<void*> functions_;  // per device ordinal
};

}  // namespace tl
