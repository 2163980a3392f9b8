// See metal_kernel.h.
#include "runtime/metal/metal_kernel.h"

#include "support/error.h"

namespace tl {

MetalKernel::MetalKernel(KernelSignature sig, Target target, std::string source, std::string kernel_name)
    : Kernel(std::move(sig), std::move(target), std::move(source), ""), kernel_name_(std::move(kernel_name)) {}

void MetalKernel::launch(size_t, const KernelArg*, size_t, const std::array<int64_t, 3>&, int, void*) const {
  throw_user_error({}, str_cat("the metal kernel '", signature().name,
                               "' runs through the \"torch\" execution backend (torch.mps on macOS), not the core "
                               "runtime; compile it with execution_backend=\"torch\" (the default for metal), or "
                               "with target=\"metal -emulate\" to run it on the CPU"));
}

}  // namespace tl
