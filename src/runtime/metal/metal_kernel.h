// A Metal kernel as the core holds it: the generated MSL and the signature. It has
// no binary: on macOS the "torch" execution backend compiles the source with
// torch.mps.compile_shader and launches it (python/tilelang/jit/metal_torch.py);
// the core cannot launch it itself.
#pragma once

#include "runtime/kernel.h"

namespace tl {

class MetalKernel : public Kernel {
 public:
  MetalKernel(KernelSignature sig, Target target, std::string source, std::string kernel_name);
  const std::string& kernel_name() const { return kernel_name_; }

 protected:
  void launch(size_t index, const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  std::string kernel_name_;
};

}  // namespace tl
