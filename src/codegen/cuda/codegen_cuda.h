// CUDA C++ generation: one `extern "C" __global__` kernel per T.Kernel block of a
// PrimFunc, all in one translation unit compiled by NVRTC against
// device/cuda/tl_cuda.cuh.
#pragma once

#include "ir/ir.h"
#include "runtime/signature.h"

namespace tl {

// What the runtime needs to launch one of the source's kernels.
struct CudaLaunchInfo {
  std::string entry_name;
  int64_t shared_bytes = 0;  // dynamic shared memory the launch must provide
  // The TMA maps the kernel takes after its arguments, in parameter order.
  std::vector<TmaMapSpec> tma_maps;
  // The block the kernel is launched with: the lowering may add threads to the
  // T.Kernel's (a warp-specialized pipeline's producer warpgroup).
  std::vector<int64_t> threads;
};

struct CudaSource {
  std::string code;
  std::vector<CudaLaunchInfo> launches;  // one per kernel, in launch order
};

// `kernels`: the lowered parts of one function (split_kernels), in launch order.
CudaSource codegen_cuda(const std::vector<PrimFunc>& kernels, const KernelSignature& sig);

}  // namespace tl
